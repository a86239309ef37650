/*
 * leader.h - one scheduler leads: the holder of the lease in
 * scheduler_lease (migration 0026), a row with the holder, an epoch and a
 * deadline on the database's clock.
 *
 * A scheduler takes the lease when its deadline has passed, when the
 * holder's database session is gone (it died, or its connection was cut:
 * as fast as the advisory lock this replaces) or when it is its own, with
 * epoch + 1; the leader renews it every third of
 * TRAINYARD_SCHED_LEADER_TTL_S. The leader's own view of the deadline
 * runs on its monotonic clock from the moment it sent the last renewal
 * that succeeded, so it ends no later than the database's: a leader that
 * cannot renew (stopped, cut off, its connection gone) stops dispatching
 * before its lease has run out anywhere (leader_holds before each batch,
 * leader_valid before each Slurm submission). A standby polling every
 * TRAINYARD_SCHED_INTERVAL_MS takes over within the lease plus one poll
 * after the last renewal: 11 s with the defaults.
 *
 * Fencing: the session sets trainyard.scheduler_epoch to the epoch taken,
 * and the database refuses every write from a session whose epoch is no
 * longer the lease's (SQLSTATE TYF01). A leader stopped inside a
 * transaction holds the lease row's share lock; its session is ended by
 * idle_in_transaction_session_timeout, set to half the lease, so that a
 * take does not wait on it for longer.
 */
#ifndef TY_SCHED_LEADER_H
#define TY_SCHED_LEADER_H

#include <stdbool.h>

#include "scheduler.h"

/*
 * Connect and take the lease, polling every poll_ms until it is ours or
 * a stop is asked. RET 0 leading, 1 stopped, -1 when the database cannot
 * be reached (after logging; the caller retries).
 */
int leader_wait(sched *s, int poll_ms);

/*
 * Renew the lease when a third of it has passed since the last renewal.
 * RET: whether this scheduler still leads (its connection alive, its
 * lease renewed or still running by its own clock).
 */
bool leader_holds(sched *s);

/* RET: whether the lease still runs by this scheduler's clock (no database). */
bool leader_valid(const sched *s);

/* Sleep ms milliseconds while leading, renewing the lease as it falls due. */
void leader_sleep_ms(sched *s, int ms);

/* Give the lease up (a standby takes it at its next poll) and close the connection. */
void leader_release(sched *s);

#endif
