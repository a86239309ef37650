/*
 * admit.h - which queued jobs a scheduling cycle admits, and why the
 * others wait.
 *
 * Pure logic over what the cycle loaded: no database, no Slurm. Priority
 * and fair share combine in one order: the tenant whose next job has the
 * highest priority (its class's value) goes first, and among equal
 * priorities the tenant with the smallest fair-share key (decayed usage
 * divided by weight). A job that preemptions were made for goes before
 * all (it takes the room they free). Within a tenant, jobs go by
 * priority, then submit time. A job is admitted when its tenant's quota
 * has room for it now (quota_fits_now, lib/job/quota.h: running jobs,
 * guaranteed and borrowed devices, GPU-hours), the devices it would
 * borrow are within what the cluster still lends (TRAINYARD_LEND_LIMIT),
 * and the cluster has the job's nodes free (cpus and gpus per node).
 * A job that waits for the cluster's room says so (ADMIT_WAIT_CLUSTER):
 * the preemption planner (preempt.h) looks at those.
 * A tenant held for another reason (hold: it has no Unix user to run as,
 * docs/identity.md) admits nothing, and its first job says why.
 *
 * Backfill. A tenant's queue is taken in order: a job that does not fit now
 * holds the jobs behind it (a small job never passes a big one of the same
 * tenant), and its tenant admits nothing more this cycle. Other tenants may
 * still use what is free. The one exception: a job that cannot fit as
 * things are, however long it waits - its tenant's quota was lowered below
 * it (quota_ever_fits), or the cluster's up nodes could not hold it even
 * all empty - keeps its place and its reason, and the jobs behind it go on.
 * It holds its tenant's queue again once the quota or the nodes come back.
 *
 * Every admission charges its tenant devices x ADMIT_CHARGE_HOURS of usage
 * up front, so one cycle with free room interleaves tenants instead of
 * handing everything to the one that was behind.
 */
#ifndef TY_SCHED_ADMIT_H
#define TY_SCHED_ADMIT_H

#include <stdbool.h>

#include "jobspec.h"
#include "quota.h"

#define ADMIT_REASON_MAX   200
#define ADMIT_CHARGE_HOURS 1.0
#define ADMIT_MAX_NODES    JOBSPEC_MAX_NODES

/* Why a job that was reached is not admitted. */
typedef enum admit_wait {
	ADMIT_WAIT_NONE = 0, /* admitted, or not reached */
	ADMIT_WAIT_QUOTA,    /* its tenant's quota, now or ever */
	ADMIT_WAIT_LENDING,  /* the cluster lends no more (TRAINYARD_LEND_LIMIT) */
	ADMIT_WAIT_CLUSTER,  /* no free nodes for it now */
	ADMIT_WAIT_NEVER,    /* the cluster's up nodes could never hold it */
} admit_wait;

typedef struct admit_job {
	char id[37];
	int devices; /* GPUs, or CPU ranks for a CPU job */
	int nodes, cpus_per_node, gpus_per_node;
	int priority;    /* its class's value (jobs.priority) */
	bool no_preempt; /* it declared itself not preemptible */
	bool favoured;   /* preemptions were made for it: it goes first */
	int waiting_on;  /* of those, the ones whose victims still run */
	/* out */
	bool admitted;
	admit_wait wait;
	int borrowed;                  /* devices of it borrowed: when admitted, or would be */
	char reason[ADMIT_REASON_MAX]; /* why it waits; "" when admitted or not reached */
} admit_job;

typedef struct admit_tenant {
	char id[37];
	char name[64];
	quota_limits limits;
	quota_use use;              /* grows with each job admitted this cycle */
	double weight, usage_hours; /* decayed usage */
	admit_job *jobs;            /* the head of its queue, in order */
	int n_jobs;
	char hold[ADMIT_REASON_MAX]; /* why none of its jobs may start now; "" when none */
	/* out */
	int rank;                      /* 1-based fair-share position at the cycle's start */
	char reason[ADMIT_REASON_MAX]; /* why its next job waits; "" when nothing waits */
	/* cycle state */
	int next;
	bool blocked;
	double charged;
} admit_tenant;

/*
 * The cluster's nodes: what each holds in all, whether it is up, and what
 * is free on it (nothing on a node that is not up).
 */
#define ADMIT_NODE_NAME 64
typedef struct admit_cluster {
	int n_nodes;
	char name[ADMIT_MAX_NODES][ADMIT_NODE_NAME];
	bool up[ADMIT_MAX_NODES];
	int cpus[ADMIT_MAX_NODES], gpus[ADMIT_MAX_NODES];
	int free_cpus[ADMIT_MAX_NODES];
	int free_gpus[ADMIT_MAX_NODES];
	int lend_left; /* devices the tenants may still borrow together; -1: no limit */
} admit_cluster;

/* What job j asks of its tenant's quota. */
quota_ask admit_ask(const admit_job *j);

/* The fair-share key: usage over weight; smaller goes first. */
double admit_share_key(const admit_tenant *t);

/* Whether tenant a's next job goes before tenant b's (the order above). */
bool admit_goes_before(const admit_tenant *a, const admit_tenant *b);

/*
 * First fit of j's nodes (nodes x cpus_per_node, gpus_per_node) on the
 * free room; takes the room when it fits. The cycle also takes the room of
 * jobs Slurm holds pending for us, before admitting more.
 * RET: whether it fits.
 */
bool admit_cluster_take(admit_cluster *c, const admit_job *j);

/* Whether j's nodes would fit the up nodes if all of them were empty. */
bool admit_cluster_could_hold(const admit_cluster *c, const admit_job *j);

/*
 * Decide one cycle. Sets each tenant's rank and reason and each job's
 * admitted flag and reason, and takes the admitted jobs' room from *cluster.
 * OUT: order[0..RET-1] the admitted jobs in admission order (cap at most).
 * RET: the number admitted.
 */
int admit_cycle(admit_tenant *tenants, int n, admit_cluster *cluster, admit_job **order, int cap);

#endif
