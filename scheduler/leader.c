/*
 * leader.c - leadership through a session-level advisory lock.
 */
#include "leader.h"
#include "stopsig.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "log.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

/* RET 1 when the lock is ours now, 0 when another session holds it, -1 on failure. */
static int try_lock(sched *s)
{
	PGresult *r;
	int rc =
	    db_query(s->db, &r, "SELECT pg_try_advisory_lock(" STR(LEADER_LOCK_KEY) ")", 0, NULL);
	int got = rc == 0 && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return rc ? -1 : got;
}

int leader_wait(sched *s, int poll_ms)
{
	char err[512];
	bool said = false;
	while (stopsig_count() == 0) {
		if (!s->db) {
			s->db = db_connect(s->cfg->db, err, sizeof(err));
			if (!s->db) {
				log_printf(LOG_ERROR, "%s", err);
				return -1;
			}
		}
		int got = try_lock(s);
		if (got < 0) {
			db_close(s->db);
			s->db = NULL;
			return -1;
		}
		if (got) {
			log_printf(LOG_INFO, "scheduler %s leads", s->owner);
			return 0;
		}
		if (!said)
			log_printf(LOG_INFO, "scheduler %s follows: another scheduler leads",
			           s->owner);
		said = true;
		sched_sleep_ms(poll_ms);
	}
	return 1;
}

bool leader_holds(sched *s)
{
	if (!s->db || PQstatus(s->db) != CONNECTION_OK)
		return false;
	PGresult *r;
	int rc = db_query(s->db, &r, "SELECT 1", 0, NULL);
	PQclear(r);
	return rc == 0;
}

void leader_release(sched *s)
{
	if (s->db) {
		PGresult *r;
		db_query(s->db, &r, "SELECT pg_advisory_unlock(" STR(LEADER_LOCK_KEY) ")", 0, NULL);
		PQclear(r);
	}
	db_close(s->db);
	s->db = NULL;
}
