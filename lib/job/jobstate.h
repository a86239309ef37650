/*
 * jobstate.h - the job state machine.
 *
 * The states match the jobs_state_check constraint of migrations/0001.
 * jobstate_transition() is the only code that changes jobs.state: it locks
 * the row, validates the move against the table in jobstate.c, updates the
 * job and appends a job_events row, all inside the caller's transaction.
 *
 *   queued -> dispatching -> scheduled -> running -> succeeded | failed
 *   any live state -> cancelling -> cancelled; queued -> cancelled
 *   dispatching | scheduled | running -> queued (retry or lost lease)
 *   running -> preempting -> queued (requeued to resume), or succeeded |
 *     failed | cancelling (scheduler/preempt.h)
 */
#ifndef TY_JOBSTATE_H
#define TY_JOBSTATE_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>

typedef enum job_state {
	JOB_QUEUED = 0,
	JOB_DISPATCHING,
	JOB_SCHEDULED,
	JOB_RUNNING,
	JOB_PREEMPTING,
	JOB_CANCELLING,
	JOB_SUCCEEDED,
	JOB_FAILED,
	JOB_CANCELLED,
	JOB_STATE__COUNT
} job_state;

const char *job_state_name(job_state s);
/* RET: the state named s, or -1. */
int job_state_parse(const char *s);
bool job_state_final(job_state s);

/*
 * The state s as what a sentence about the job goes on to say: "is
 * queued", "is cancelling", "has succeeded", "has been cancelled"; adverb
 * ("already", "not yet"; NULL: none) stands after the first word: "has
 * already succeeded". A state out of range reads "is in an unknown state".
 * OUT: buf (truncated to len). RET: buf.
 */
const char *job_state_phrase(job_state s, const char *adverb, char *buf, size_t len);
bool job_transition_allowed(job_state from, job_state to);

/*
 * Move job_id to state to, inside the caller's open transaction.
 * IN: reason (short text), actor_id (a user id, or NULL for the system),
 *     detail (borrowed; may be NULL).
 * OUT: *from, the state the job was in (may be NULL).
 * RET 0; -ERR_JOB_NOT_FOUND; -ERR_JOB_STATE_CONFLICT when the move is not
 * in the table; -ERR_DB_UNAVAILABLE / -ERR_INTERNAL.
 */
int jobstate_transition(PGconn *c, const char *job_id, job_state to, const char *reason,
                        const char *actor_id, const json_t *detail, job_state *from);

/*
 * The move from -> to for the jobs ids[0..n-1] in one statement, each
 * with its reason (a batch of the scheduler's). Only jobs in state from
 * move; the others (cancelled meanwhile, say) are left as they are. Each
 * move is a job_events row, as with jobstate_transition().
 * IN:  lease_owner, for the move to dispatching: each job moved starts its
 *      next attempt (attempts + 1) leased to lease_owner for lease_s
 *      seconds (dispatch_owner, dispatch_lease_until), its retry wait
 *      (not_before) over; NULL for any other move.
 * OUT: moved[i], whether ids[i] moved (moved may be NULL).
 * RET: the number moved; -ERR_JOB_STATE_CONFLICT when from -> to is not in
 * the table; -ERR_DB_UNAVAILABLE / -ERR_INTERNAL.
 */
int jobstate_transition_many(PGconn *c, const char *const *ids, const char *const *reasons, int n,
                             job_state from, job_state to, const char *lease_owner, int lease_s,
                             bool *moved);

/*
 * Say why job_id is where it is without moving it (state_reason): why a
 * queued job waits, a followed job's story in Slurm. Written only when it
 * changed and, when in is not JOB_STATE_ANY, only while the job is in state
 * in. Together with the transitions above, the only writer of state_reason.
 * RET 0 or -ERR_*.
 */
#define JOB_STATE_ANY (-1)
int jobstate_note(PGconn *c, const char *job_id, const char *reason, int in);

/*
 * Count an attempt of job_id made outside a dispatch (delta 1: one started
 * by hand), or take back one that never reached Slurm (delta -1). With
 * jobstate_transition_many's move to dispatching, the only writer of
 * jobs.attempts. RET 0 or -ERR_*.
 */
int jobstate_attempts_add(PGconn *c, const char *job_id, int delta);

/* Record the creation event (no previous state -> queued) of a new job. */
int jobstate_record_created(PGconn *c, const char *job_id, const char *actor_id);

#endif
