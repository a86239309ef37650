/*
 * retry.h - what a failed attempt leads to: another attempt (in which
 * configuration, after how long) or the end of the job.
 *
 * Failure classes and the next attempt each leads to are the rows of
 * lib/job/failure.def (its retry column; scheduler/README.md lists them): they
 * come from the worker runtime's report (the trainer's classes, rank_lost,
 * launch_failed), from Slurm's end state (node_failure, timeout,
 * out_of_memory, preempted, failed, cancelled) and from the scheduler
 * itself (hang: no heartbeat within the job's heartbeat_timeout_s; lost:
 * Slurm no longer knows the job).
 *
 * A preempted attempt (FAILURE_RETRY_REQUEUE) goes back to the queue at
 * once and is not a restart. Otherwise a job retries at most
 * max_restarts times; the k-th retry waits
 * base x 2^(k-1) seconds, at most RETRY_BACKOFF_MAX_S (after a lost node,
 * at least node_grace_s). An empty class is never retried. No other name
 * reaches it: the API refuses a class not in the table and maps a reason
 * that names none to failed, and the database's CHECK constraint
 * (migrations/0017_failure_class_check.sql) holds no other; one would
 * retry in the same configuration, like failed.
 */
#ifndef TY_SCHED_RETRY_H
#define TY_SCHED_RETRY_H

#include <stdbool.h>

#define RETRY_BACKOFF_MAX_S 600
#define RETRY_WHY_MAX       200

typedef struct retry_input {
	const char *failure_class;
	int attempts;        /* attempts made so far, the failed one included */
	int requeues;        /* of them, those requeued (preempted): not restarts */
	int max_restarts;    /* the spec's fault_tolerance.max_restarts */
	int nodes;           /* nodes of the failed attempt */
	int ranks_per_node;  /* the spec's */
	int min_rung_ranks;  /* ranks of the smallest rung of the job's ladder */
	bool recompute_full; /* the failed attempt already ran with full recompute */
	bool own_program; /* a command job: no recompute to add; out of memory retries the same */
	int backoff_base_s;
	/*
	 * A retry after node_failure or rank_lost waits at least this long:
	 * Slurm's SlurmdTimeout, after which slurmctld has marked a dead node
	 * down, so the smaller attempt is not placed on it.
	 */
	int node_grace_s;
} retry_input;

typedef struct retry_decision {
	bool retry;
	int nodes;               /* nodes of the next attempt */
	bool set_recompute_full; /* the next attempt adds training.recompute=full */
	int backoff_s;           /* wait before it may be admitted */
	char why[RETRY_WHY_MAX]; /* for the job's events */
} retry_decision;

retry_decision retry_decide(const retry_input *in);

/* RET: whether the class names a failure that retrying may cure. */
bool retry_class_transient(const char *failure_class);

#endif
