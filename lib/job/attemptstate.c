/*
 * attemptstate.c - see attemptstate.h.
 */
#include "attemptstate.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "error.h"

static const char *const names[ATTEMPT_STATE__COUNT] = {
    [ATTEMPT_STARTING] = "starting",
    [ATTEMPT_RUNNING] = "running",
    [ATTEMPT_ENDED] = "ended",
};

/* allowed[from][to] */
static const bool allowed[ATTEMPT_STATE__COUNT][ATTEMPT_STATE__COUNT] = {
    [ATTEMPT_STARTING] = {[ATTEMPT_RUNNING] = true, [ATTEMPT_ENDED] = true},
    [ATTEMPT_RUNNING] = {[ATTEMPT_ENDED] = true},
};

const char *attempt_state_name(attempt_state s)
{
	return (unsigned)s < ATTEMPT_STATE__COUNT ? names[s] : "unknown";
}

int attempt_state_parse(const char *s)
{
	for (int i = 0; s && i < ATTEMPT_STATE__COUNT; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

bool attempt_transition_allowed(attempt_state from, attempt_state to)
{
	return (unsigned)from < ATTEMPT_STATE__COUNT && (unsigned)to < ATTEMPT_STATE__COUNT &&
	       allowed[from][to];
}

int attemptstate_report(PGconn *c, const char *attempt_id, attempt_state *from, char job_state[16],
                        bool *followed)
{
	const char *p[] = {attempt_id};
	PGresult *r;
	/* $1's row locked first, so two reports of one attempt see each other's move */
	int rc =
	    db_query(c, &r,
	             "WITH old AS (SELECT state FROM job_attempts WHERE id = $1 FOR UPDATE)"
	             " UPDATE job_attempts a SET heartbeat_at = now(),"
	             " state = CASE WHEN old.state = 'starting' THEN 'running' ELSE old.state END"
	             " FROM old WHERE a.id = $1 AND old.state <> 'ended'"
	             " RETURNING old.state, (SELECT state FROM jobs WHERE id = a.job_id),"
	             " a.followed",
	             1, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_ATTEMPT_ENDED;
	if (rc == 0) {
		int s = attempt_state_parse(PQgetvalue(r, 0, 0));
		*from = s < 0 ? ATTEMPT_ENDED : (attempt_state)s;
		snprintf(job_state, 16, "%s", PQgetvalue(r, 0, 1));
		*followed = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	}
	PQclear(r);
	return rc;
}

int attemptstate_end(PGconn *c, const char *attempt_id, const attempt_ending *e, bool *followed)
{
	char ended[24];
	snprintf(ended, sizeof(ended), "%" PRId64, e->ended_s);
	const char *p[] = {attempt_id,
	                   ended,
	                   e->outcome,
	                   e->keep_outcome ? "t" : "f",
	                   e->failure_class,
	                   e->class_if_unset ? "t" : "f",
	                   e->unfollow ? "t" : "f"};
	PGresult *r;
	int rc =
	    db_query(c, &r,
	             "UPDATE job_attempts SET state = 'ended',"
	             " ended_at = coalesce(ended_at,"
	             "   CASE WHEN $2::bigint = 0 THEN now() ELSE to_timestamp($2::bigint) END),"
	             " outcome = CASE WHEN $4::boolean AND outcome <> '' THEN outcome ELSE $3 END,"
	             " failure_class = CASE WHEN $5::text IS NULL THEN failure_class"
	             "   WHEN NOT $6::boolean THEN $5"
	             "   WHEN followed AND $3 = 'failed' AND failure_class = '' THEN $5"
	             "   ELSE failure_class END,"
	             " followed = followed AND NOT $7::boolean"
	             " WHERE id = $1 RETURNING followed",
	             7, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_ATTEMPT_ENDED;
	if (rc == 0 && followed)
		*followed = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return rc;
}
