/*
 * leader.c - leadership as a lease with a fencing number (leader.h).
 */
#include "leader.h"
#include "stopsig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "db.h"
#include "log.h"

/* The lease in milliseconds, and the leader's margin against clock drift. */
static long long ttl_ms(const sched *s)
{
	return s->cfg->sched_leader_ttl_s * 1000LL;
}

static long long margin_ms(const sched *s)
{
	return ttl_ms(s) / 20;
}

/* A session for leading: writes are fenced by the epoch set in take(). */
static int session_setup(sched *s)
{
	char ms[24];
	snprintf(ms, sizeof(ms), "%lld", ttl_ms(s) / 2);
	const char *p[] = {ms};
	return db_query(s->db, NULL,
	                "SELECT set_config('idle_in_transaction_session_timeout', $1, false)", 1,
	                p);
}

/* RET 1 when the lease is ours now, 0 when another scheduler holds it, -1 on failure. */
static int take(sched *s)
{
	char ttl[24];
	snprintf(ttl, sizeof(ttl), "%lld", ttl_ms(s));
	const char *p[] = {s->owner, ttl};
	long long sent = clock_mono_ms();
	PGresult *r;
	int rc = db_query(s->db, &r,
	                  "UPDATE scheduler_lease SET holder = $1, epoch = epoch + 1,"
	                  " deadline = clock_timestamp() + $2::bigint * interval '1 millisecond',"
	                  " taken_at = clock_timestamp(), backend_pid = pg_backend_pid(),"
	                  " backend_start = (SELECT backend_start FROM pg_stat_activity"
	                  "                  WHERE pid = pg_backend_pid())"
	                  " WHERE deadline < clock_timestamp() OR holder = $1"
	                  " OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a"
	                  "                WHERE a.pid = scheduler_lease.backend_pid"
	                  "                AND a.backend_start = scheduler_lease.backend_start)"
	                  " RETURNING epoch",
	                  2, p);
	int got = rc == 0 && PQntuples(r) == 1;
	if (got)
		snprintf(s->epoch, sizeof(s->epoch), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if (rc)
		return -1;
	if (!got)
		return 0;
	const char *e[] = {s->epoch};
	if (db_query(s->db, NULL, "SELECT set_config('trainyard.scheduler_epoch', $1, false)", 1,
	             e))
		return -1;
	s->lease_renewed_ms = sent;
	s->lease_until_ms = sent + ttl_ms(s) - margin_ms(s);
	return 1;
}

/* Log who holds the lease while this scheduler follows. */
static void say_follows(sched *s)
{
	PGresult *r;
	if (db_query(s->db, &r,
	             "SELECT holder, epoch, " CLOCK_SQL_RFC3339("deadline") " FROM scheduler_lease",
	             0, NULL) == 0 &&
	    PQntuples(r) == 1)
		log_printf(LOG_INFO,
		           "scheduler %s follows: another scheduler leads (%s, epoch %s, until %s)",
		           s->owner, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2));
	PQclear(r);
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
			if (session_setup(s)) {
				db_close(s->db);
				s->db = NULL;
				return -1;
			}
		}
		int got = take(s);
		if (got < 0) {
			db_close(s->db);
			s->db = NULL;
			return -1;
		}
		if (got) {
			log_printf(LOG_INFO, "scheduler %s leads (epoch %s)", s->owner, s->epoch);
			return 0;
		}
		if (!said)
			say_follows(s);
		said = true;
		sched_sleep_ms(poll_ms);
	}
	return 1;
}

/* RET 1 renewed, 0 the lease is another's now, -1 the database failed. */
static int renew(sched *s)
{
	char ttl[24];
	snprintf(ttl, sizeof(ttl), "%lld", ttl_ms(s));
	const char *p[] = {s->owner, s->epoch, ttl};
	long long sent = clock_mono_ms();
	PGresult *r;
	int rc =
	    db_query(s->db, &r,
	             "UPDATE scheduler_lease"
	             " SET deadline = clock_timestamp() + $3::bigint * interval '1 millisecond'"
	             " WHERE holder = $1 AND epoch = $2::bigint RETURNING epoch",
	             3, p);
	int rows = rc == 0 ? PQntuples(r) : 0;
	PQclear(r);
	if (rc)
		return -1;
	if (rows == 0)
		return 0;
	s->lease_renewed_ms = sent;
	s->lease_until_ms = sent + ttl_ms(s) - margin_ms(s);
	return 1;
}

bool leader_valid(const sched *s)
{
	return s->epoch[0] && clock_mono_ms() < s->lease_until_ms;
}

bool leader_holds(sched *s)
{
	if (!s->db || PQstatus(s->db) != CONNECTION_OK || !s->epoch[0])
		return false;
	if (clock_mono_ms() - s->lease_renewed_ms < ttl_ms(s) / 3)
		return leader_valid(s);
	bool was_valid = leader_valid(s);
	int r = renew(s);
	if (r == 0) {
		log_printf(LOG_WARN, "scheduler %s: its lease (epoch %s) was taken over", s->owner,
		           s->epoch);
		s->epoch[0] = '\0';
		return false;
	}
	if (r < 0)
		return false;
	if (!was_valid)
		log_printf(LOG_WARN,
		           "scheduler %s: renewed its lease (epoch %s) after it ran out here",
		           s->owner, s->epoch);
	return true;
}

void leader_sleep_ms(sched *s, int ms)
{
	long long end = clock_mono_ms() + ms;
	for (;;) {
		long long now = clock_mono_ms(), left = end - now;
		if (left <= 0 || stopsig_count())
			return;
		long long due = s->lease_renewed_ms + ttl_ms(s) / 3 - now;
		if (due <= 0) {
			if (!leader_holds(s))
				return;
			continue;
		}
		sched_sleep_ms((int)(left < due ? left : due));
	}
}

void leader_release(sched *s)
{
	if (s->db && s->epoch[0] && PQstatus(s->db) == CONNECTION_OK) {
		const char *p[] = {s->owner, s->epoch};
		db_query(s->db, NULL,
		         "UPDATE scheduler_lease SET deadline = '-infinity'"
		         " WHERE holder = $1 AND epoch = $2::bigint",
		         2, p);
	}
	s->epoch[0] = '\0';
	db_close(s->db);
	s->db = NULL;
}
