/*
 * slurm.h - the scheduler's view of Slurm, over libslurm's C API.
 *
 * This is the only file pair that includes <slurm/slurm.h>. Jobs the
 * scheduler submits carry "trainyard job=<job id> attempt=<n>" in their
 * comment and "ty-<job id>" as their name: a restarted scheduler finds
 * its submissions again by that comment, before it submits anything.
 */
#ifndef TY_SCHED_SLURM_H
#define TY_SCHED_SLURM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "admit.h"

#define SL_COMMENT_PREFIX "trainyard job="
#define SL_ERR_MAX        256

/* Our states of a Slurm job, with its end states apart. */
typedef enum sl_state {
	SL_PENDING,
	SL_RUNNING, /* running, suspended or completing */
	SL_COMPLETED,
	SL_FAILED,
	SL_TIMEOUT,
	SL_NODE_FAIL,
	SL_PREEMPTED,
	SL_CANCELLED,
	SL_OUT_OF_MEMORY,
	SL_BOOT_FAIL,
	SL_DEADLINE,
	SL_UNKNOWN,
} sl_state;

typedef struct sl_job {
	uint32_t id;
	sl_state state;
	char reason[64];   /* why it pends, in Slurm's words ("Resources") */
	char job_id[37];   /* from the comment; "" when it is not ours */
	int attempt;       /* from the comment */
	char nodes[256];   /* allocated node list */
	time_t start, end; /* 0 while unknown */
	int exit_code;     /* the batch script's status, 128 + N for signal N */
} sl_job;

typedef struct sl_submit {
	const char *name, *comment, *account, *partition; /* partition may be "" */
	const char *script, *work_dir, *std_out;
	char **env; /* NAME=value entries, NULL-terminated */
	int nodes, tasks_per_node, gpus_per_node;
	int time_limit_minutes;
	int warn_seconds; /* SIGTERM to the batch step this long before the limit */
	uid_t uid;
	gid_t gid;
} sl_submit;

bool sl_final(sl_state s);
const char *sl_state_name(sl_state s);
/* The failure class (retry.h) a final state means; NULL for completed. */
const char *sl_failure_class(sl_state s);

/* Read $SLURM_CONF once. RET 0. */
int sl_init(void);
void sl_fini(void);

/* OUT: *job_id. RET 0, or -1 with Slurm's message in err. */
int sl_submit_batch(const sl_submit *s, uint32_t *job_id, char err[SL_ERR_MAX]);

/*
 * Every job slurmctld knows that is ours (comment prefix), sorted by id.
 * OUT: *jobs (free()), *n. RET 0, or -1 with the reason in err.
 */
int sl_our_jobs(sl_job **jobs, int *n, char err[SL_ERR_MAX]);

/*
 * A Slurm job id is no identity: ids repeat after slurmctld restarts from
 * an older saved state, and wrap at MaxJobId. A job is ours only when its
 * comment names the same trainyard job and attempt.
 * RET: the job with that id in a sorted list whose comment names job_id
 * and attempt, or NULL (none has that id, or the id now belongs to
 * another job).
 */
const sl_job *sl_find(const sl_job *jobs, int n, uint32_t id, const char *job_id, int attempt);

/*
 * The attempt's Slurm job id from accounting (sacct), for a job slurmctld
 * has forgotten: among the records with that id (sacct --duplicates),
 * the one whose comment names job_id and attempt (deploy/slurm stores
 * comments: AccountingStoreFlags=job_comment). RET 0 with *out filled, 1
 * when accounting knows no such job, -1 with why in err when sacct fails.
 */
int sl_job_from_accounting(uint32_t id, const char *job_id, int attempt, sl_job *out,
                           char err[SL_ERR_MAX]);

/*
 * End a job (the TERM, KillWait, KILL sequence of scancel). RET 0, also when
 * Slurm has no such job or it is done; -1 with why in err.
 */
int sl_cancel(uint32_t id, char err[SL_ERR_MAX]);

/*
 * Every node Slurm knows (but those planned for later): its name, cpus and
 * gpus, whether it is up (not down, drained or silent), and, when it is,
 * its room: its cpus and gpus less what its running jobs hold.
 * RET 0, or -1 with the reason in err.
 */
int sl_cluster_room(admit_cluster *c, char err[SL_ERR_MAX]);

/*
 * The indexes in c of the nodes a Slurm node list names ("n[1-2],n4").
 * OUT: idx[0..RET-1] (at most max); a name c does not hold is left out.
 * RET: how many.
 */
int sl_nodes_in(const admit_cluster *c, const char *list, int *idx, int max);

/*
 * Slurm's SlurmdTimeout: how long slurmctld waits for a silent slurmd
 * before it marks the node down. RET seconds, or -1 when it cannot be read.
 */
int sl_node_timeout_s(char err[SL_ERR_MAX]);

/*
 * Run one of Slurm's command-line tools (sacct, sacctmgr) from argv
 * (NULL-terminated; no shell). OUT: its standard output in out, cut to
 * n-1 bytes (out may be NULL: discarded). RET: its exit status, or -1 when
 * it could not run or was killed.
 */
int sl_tool(const char *const *argv, char *out, size_t n);

/* Parse "trainyard job=<uuid> attempt=<n>". RET 0, or -1 when it is not ours. */
int sl_comment_parse(const char *comment, char job_id[37], int *attempt);

#endif
