/*
 * attemptstate.h - the states of a job's attempt, and the one place that
 * changes them.
 *
 * The states match the job_attempts_state_check constraint of
 * migrations/0002 (an integration test compares them):
 *
 *   starting -> running    the runtime's first report (a heartbeat)
 *   starting | running -> ended    finished, lost, refused or cancelled
 *
 * An ended attempt stays ended: ending it again only adds what is known
 * of its end (the scheduler's record of a Slurm job the runtime already
 * finished), never another state. Every change runs inside the caller's
 * open transaction, beside the job's own (jobstate.h).
 */
#ifndef TY_ATTEMPTSTATE_H
#define TY_ATTEMPTSTATE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum attempt_state {
	ATTEMPT_STARTING = 0,
	ATTEMPT_RUNNING,
	ATTEMPT_ENDED,
	ATTEMPT_STATE__COUNT
} attempt_state;

const char *attempt_state_name(attempt_state s);
/* RET: the state named s, or -1. */
int attempt_state_parse(const char *s);
bool attempt_transition_allowed(attempt_state from, attempt_state to);

/*
 * A report of the attempt's runtime: its heartbeat, and from starting the
 * move to running.
 * OUT: *from, the state it was in; job_state, the state of its job now
 * (at most 15 characters); *followed, whether the scheduler follows it.
 * RET 0; -ERR_ATTEMPT_ENDED when it has ended or does not exist;
 * -ERR_DB_UNAVAILABLE / -ERR_INTERNAL.
 */
int attemptstate_report(PGconn *c, const char *attempt_id, attempt_state *from, char job_state[16],
                        bool *followed);

/* How an attempt ends. */
typedef struct attempt_ending {
	const char *outcome;       /* "succeeded", "failed" or "cancelled" */
	bool keep_outcome;         /* an outcome recorded before (the runtime's) stays */
	const char *failure_class; /* NULL: the recorded one stays */
	/* failure_class only for a followed attempt that failed with none recorded yet
	 * (the runtime's report: a hang the scheduler recorded first stays a hang) */
	bool class_if_unset;
	bool unfollow;   /* the scheduler lets it go */
	int64_t ended_s; /* when, in seconds since the epoch; 0: now. A recorded end stays */
} attempt_ending;

/*
 * End attempt_id (or add to its end, when it has ended already).
 * OUT: *followed (may be NULL), whether the scheduler still follows it.
 * RET 0; -ERR_ATTEMPT_ENDED when there is no such attempt;
 * -ERR_DB_UNAVAILABLE / -ERR_INTERNAL.
 */
int attemptstate_end(PGconn *c, const char *attempt_id, const attempt_ending *e, bool *followed);

#endif
