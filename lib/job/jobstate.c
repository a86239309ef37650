/*
 * jobstate.c - job state names, the transition table, and the one function
 * that moves a job.
 */
#include "jobstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "error.h"

static const char *const names[JOB_STATE__COUNT] = {
    [JOB_QUEUED] = "queued",   [JOB_DISPATCHING] = "dispatching", [JOB_SCHEDULED] = "scheduled",
    [JOB_RUNNING] = "running", [JOB_CANCELLING] = "cancelling",   [JOB_SUCCEEDED] = "succeeded",
    [JOB_FAILED] = "failed",   [JOB_CANCELLED] = "cancelled",     [JOB_PREEMPTING] = "preempting",
};

/* job_state_phrase(): the auxiliary verb, then the rest. */
static const char *const phrases[JOB_STATE__COUNT][2] = {
    [JOB_QUEUED] = {"is", "queued"},
    [JOB_DISPATCHING] = {"is", "being dispatched"},
    [JOB_SCHEDULED] = {"is", "scheduled"},
    [JOB_RUNNING] = {"is", "running"},
    [JOB_PREEMPTING] = {"is", "being preempted"},
    [JOB_CANCELLING] = {"is", "cancelling"},
    [JOB_SUCCEEDED] = {"has", "succeeded"},
    [JOB_FAILED] = {"has", "failed"},
    [JOB_CANCELLED] = {"has", "been cancelled"},
};

#define S(x) (1u << JOB_##x)
/* allowed[from] is the set of states a job in `from` may move to. */
static const unsigned allowed[JOB_STATE__COUNT] = {
    [JOB_QUEUED] = S(DISPATCHING) | S(CANCELLED) | S(FAILED),
    [JOB_DISPATCHING] = S(SCHEDULED) | S(QUEUED) | S(CANCELLING) | S(FAILED),
    [JOB_SCHEDULED] = S(RUNNING) | S(QUEUED) | S(CANCELLING) | S(FAILED) | S(SUCCEEDED),
    [JOB_RUNNING] = S(SUCCEEDED) | S(FAILED) | S(QUEUED) | S(CANCELLING) | S(PREEMPTING),
    [JOB_PREEMPTING] = S(QUEUED) | S(SUCCEEDED) | S(FAILED) | S(CANCELLING),
    [JOB_CANCELLING] = S(CANCELLED) | S(SUCCEEDED) | S(FAILED),
    [JOB_SUCCEEDED] = 0,
    [JOB_FAILED] = 0,
    [JOB_CANCELLED] = 0,
};

const char *job_state_name(job_state s)
{
	return ((int)s >= 0 && s < JOB_STATE__COUNT) ? names[s] : "unknown";
}

int job_state_parse(const char *s)
{
	for (int i = 0; i < JOB_STATE__COUNT; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

const char *job_state_phrase(job_state s, const char *adverb, char *buf, size_t len)
{
	bool known = (int)s >= 0 && s < JOB_STATE__COUNT;
	const char *verb = known ? phrases[s][0] : "is",
	           *rest = known ? phrases[s][1] : "in an unknown state";
	if (adverb && *adverb)
		snprintf(buf, len, "%s %s %s", verb, adverb, rest);
	else
		snprintf(buf, len, "%s %s", verb, rest);
	return buf;
}

bool job_state_final(job_state s)
{
	return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
}

bool job_transition_allowed(job_state from, job_state to)
{
	if ((int)from < 0 || from >= JOB_STATE__COUNT || (int)to < 0 || to >= JOB_STATE__COUNT)
		return false;
	return (allowed[from] >> to) & 1u;
}

int jobstate_transition(PGconn *c, const char *job_id, job_state to, const char *reason,
                        const char *actor_id, const json_t *detail, job_state *from)
{
	PGresult *r;
	const char *p1[] = {job_id};
	int rc = db_query(c, &r, "SELECT state FROM jobs WHERE id = $1 FOR UPDATE", 1, p1);
	if (rc) {
		PQclear(r);
		return rc;
	}
	if (PQntuples(r) == 0) {
		PQclear(r);
		return -ERR_JOB_NOT_FOUND;
	}
	int cur = job_state_parse(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (from)
		*from = (job_state)cur;
	if (cur < 0 || !job_transition_allowed((job_state)cur, to))
		return -ERR_JOB_STATE_CONFLICT;

	const char *final = job_state_final(to) ? "t" : "f";
	const char *p2[] = {job_id, names[to], reason ? reason : "", final};
	rc = db_query(c, NULL,
	              "UPDATE jobs SET state = $2, state_reason = $3, updated_at = now(),"
	              " started_at = CASE WHEN $2 = 'running' THEN coalesce(started_at, now())"
	              "   ELSE started_at END,"
	              " finished_at = CASE WHEN $4::boolean THEN now() ELSE NULL END"
	              " WHERE id = $1",
	              4, p2);
	if (rc)
		return rc;
	char *d = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
	const char *p3[] = {job_id,   names[cur],  names[to], reason ? reason : "",
	                    actor_id, d ? d : "{}"};
	rc = db_query(
	    c, NULL,
	    "INSERT INTO job_events (job_id, from_state, to_state, reason, actor_id, detail)"
	    " VALUES ($1, $2, $3, $4, $5, $6::jsonb)",
	    6, p3);
	free(d);
	return rc;
}

int jobstate_transition_many(PGconn *c, const char *const *ids, const char *const *reasons, int n,
                             job_state from, job_state to, const char *lease_owner, int lease_s,
                             bool *moved)
{
	if (!job_transition_allowed(from, to))
		return -ERR_JOB_STATE_CONFLICT;
	if (moved)
		memset(moved, 0, sizeof(*moved) * (size_t)(n > 0 ? n : 0));
	if (n <= 0)
		return 0;
	char *id_arr = db_array_literal(ids, n), *why_arr = db_array_literal(reasons, n);
	char lease[16];
	snprintf(lease, sizeof(lease), "%d", lease_s);
	int rc = id_arr && why_arr ? 0 : -ERR_INTERNAL;
	PGresult *r = NULL;
	if (rc == 0) {
		const char *p[] = {
		    id_arr,      why_arr, names[from], names[to], job_state_final(to) ? "t" : "f",
		    lease_owner, lease};
		rc = db_query(
		    c, &r,
		    "WITH v AS (SELECT * FROM unnest($1::uuid[], $2::text[])"
		    "   WITH ORDINALITY AS v(id, reason, ord)),"
		    " u AS (UPDATE jobs j SET state = $4, state_reason = v.reason,"
		    "   updated_at = now(),"
		    "   started_at = CASE WHEN $4 = 'running'"
		    "     THEN coalesce(j.started_at, now()) ELSE j.started_at END,"
		    "   finished_at = CASE WHEN $5::boolean THEN now() ELSE NULL END,"
		    "   attempts = j.attempts + CASE WHEN $6::text IS NULL THEN 0 ELSE 1 END,"
		    "   dispatch_owner = coalesce($6, j.dispatch_owner),"
		    "   dispatch_lease_until = CASE WHEN $6::text IS NULL"
		    "     THEN j.dispatch_lease_until"
		    "     ELSE now() + $7::int * interval '1 second' END,"
		    "   not_before = CASE WHEN $6::text IS NULL THEN j.not_before END"
		    "   FROM v WHERE j.id = v.id AND j.state = $3"
		    "   RETURNING j.id, v.reason, v.ord),"
		    " e AS (INSERT INTO job_events (job_id, from_state, to_state, reason)"
		    "   SELECT id, $3, $4, reason FROM u ORDER BY ord)"
		    " SELECT ord FROM u",
		    7, p);
	}
	free(id_arr);
	free(why_arr);
	if (rc) {
		PQclear(r);
		return rc;
	}
	int k = PQntuples(r);
	for (int i = 0; moved && i < k; i++) {
		long ord = strtol(PQgetvalue(r, i, 0), NULL, 10);
		if (ord >= 1 && ord <= n)
			moved[ord - 1] = true;
	}
	PQclear(r);
	return k;
}

int jobstate_record_created(PGconn *c, const char *job_id, const char *actor_id)
{
	const char *p[] = {job_id, actor_id};
	return db_query(c, NULL,
	                "INSERT INTO job_events (job_id, from_state, to_state, reason, actor_id)"
	                " VALUES ($1, NULL, 'queued', 'submitted', $2)",
	                2, p);
}

int jobstate_note(PGconn *c, const char *job_id, const char *reason, int in)
{
	const char *p[] = {job_id, reason ? reason : "",
	                   in == JOB_STATE_ANY ? NULL : job_state_name((job_state)in)};
	return db_query(c, NULL,
	                "UPDATE jobs SET state_reason = $2 WHERE id = $1 AND state_reason <> $2"
	                " AND ($3::text IS NULL OR state = $3)",
	                3, p);
}

int jobstate_attempts_add(PGconn *c, const char *job_id, int delta)
{
	char d[16];
	snprintf(d, sizeof(d), "%d", delta);
	const char *p[] = {job_id, d};
	return db_query(c, NULL,
	                "UPDATE jobs SET attempts = attempts + $2::int, updated_at = now()"
	                " WHERE id = $1",
	                2, p);
}
