/*
 * leader.h - one scheduler leads: the holder of a PostgreSQL advisory
 * lock on its own connection.
 *
 * The lock lives as long as the leader's database session, so a leader
 * that dies or loses its connection gives it up at once, and a follower
 * blocked in leader_wait() takes over. The leader checks it still holds
 * the lock before every Slurm submission (leader_holds); a dispatch it
 * prepared is protected by its lease beyond that (dispatch.h).
 */
#ifndef TY_SCHED_LEADER_H
#define TY_SCHED_LEADER_H

#include <stdbool.h>

#include "scheduler.h"

/* The advisory lock's key: "tyschedu" in ASCII, as a bigint. */
#define LEADER_LOCK_KEY 8392866251372061813

/*
 * Connect and take the lock, polling every poll_ms until it is ours or
 * *stop becomes true. RET 0 leading, 1 stopped, -1 when the database
 * cannot be reached (after logging; the caller retries).
 */
int leader_wait(sched *s, int poll_ms);

/* RET: whether s->db is alive and holds the lock. */
bool leader_holds(sched *s);

/* Give the lock up and close the connection. */
void leader_release(sched *s);

#endif
