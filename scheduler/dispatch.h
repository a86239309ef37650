/*
 * dispatch.h - handing admitted jobs to Slurm so that a crash at any
 * point loses none and runs none twice.
 *
 *   1. prepare (one transaction for a batch of up to 64): the jobs go
 *      queued -> dispatching (jobstate_transition_many), each under a lease
 *      (dispatch_owner, dispatch_lease_until), with its next attempt row
 *      (a fresh credential's hash, followed = true, no Slurm id); then each
 *      credential goes to a 0600 file in the spool.
 *   2. submit: libslurm, with "trainyard job=<id> attempt=<n>" as comment.
 *      Only while this scheduler still leads (checked once a batch) and
 *      less than half of the lease has passed.
 *   3. record (one transaction): the Slurm ids into the attempts, the jobs
 *      dispatching -> scheduled. The lease is left to run out.
 * While batch k is in step 2, a thread runs step 1 of batch k+1 on the
 * database connection; step 3 of batch k follows. Each batch keeps the
 * order 1, 2, 3.
 *
 * A crash after 1 leaves a dispatching job whose attempt has no Slurm id
 * (if the crash came after 2, its worker may run and make it running
 * meanwhile: the API lets the first report of a followed attempt do so).
 * Once its lease has run out, whichever scheduler leads lists Slurm's jobs
 * again and looks for the attempt's comment: found, it records that id
 * (step 3); not found, it renews the credential and the lease and submits
 * (steps 2 and 3). Slurm keeps ended jobs for MinJobAge (deploy/slurm: an
 * hour), far longer than a lease. The lease is what keeps a leader that
 * lost its lock in the middle of step 2 from racing its successor.
 */
#ifndef TY_SCHED_DISPATCH_H
#define TY_SCHED_DISPATCH_H

#include "scheduler.h"

#define DISPATCH_OVERRIDES_MAX 4

typedef struct dispatch_item {
	char job_id[37], attempt_id[37], tenant[64], tenant_id[37];
	uid_t uid; /* the tenant's Unix user (docs/identity.md); 0 when it has none */
	gid_t gid;
	int number, nodes, ranks_per_node, gpus_per_node, time_limit_minutes;
	char partition[65];
	char overrides[DISPATCH_OVERRIDES_MAX][64];
	int n_overrides;
	uint32_t slurm_id;
	int result; /* 0 submitted, 1 Slurm unreachable, -1 Slurm refused, 2 not tried */
	char err[SL_ERR_MAX];
} dispatch_item;

/*
 * Steps 1-3 for the admitted jobs ids[0..n-1], in batches; each new
 * attempt records borrowed[i] of its devices as borrowed (quota.h;
 * borrowed may be NULL: none).
 * RET: the jobs submitted, or -1 when the database failed.
 */
int dispatch_jobs(sched *s, char (*ids)[37], const int *borrowed, int n);

/*
 * Finish dispatches whose lease ran out (see above). RET the number, or -1
 * when the database failed or Slurm's job list could not be had (logged).
 */
int dispatch_recover(sched *s);

#endif
