/*
 * h_results.c - what a job's runs left behind, for its tenant's users:
 * per-step metrics and registered checkpoints.
 */
#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "server.h"

#define CHECKPOINT_COLS                                                                            \
	"c.id, c.job_id, c.attempt_id, c.step, c.world, c.bytes, c.shards, " TS(                   \
	    "c.created_at") " AS created_at"

/* GET /v1/jobs/{job}/metrics?after=STEP: step lines in order, a page at a time. */
int h_job_metrics(api_req *rq)
{
	const char *after = api_query(rq, "after");
	char limit[16];
	snprintf(limit, sizeof(limit), "%d", rq->cfg->page_max);
	if (after && (!*after || strspn(after, "0123456789") != strlen(after) || strlen(after) > 9))
		return api_fail(rq, ERR_BAD_REQUEST, "after must be a step number");
	const char *p[] = {rq->scope.job_id, after ? after : "0", limit};
	json_t *items;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(x ORDER BY x.step, x.at), '[]') FROM (SELECT m.step, " TS(
	        "m.at") " AS at, a.number AS attempt, m.data FROM job_metrics m"
	                " JOIN job_attempts a ON a.id = m.attempt_id WHERE m.job_id = $1"
	                " AND m.step > $2::int ORDER BY m.step, m.at LIMIT $3::int) x",
	    3, p, &items);
	if (rc)
		return api_fail_db(rq, rc);
	return api_reply(rq, 200, json_pack("{s:o}", "items", items));
}

int h_job_checkpoints(api_req *rq)
{
	const char *p[] = {rq->scope.job_id};
	json_t *items;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(x ORDER BY x.step), '[]') FROM (SELECT " CHECKPOINT_COLS
	    " FROM checkpoints c WHERE c.job_id = $1) x",
	    1, p, &items);
	if (rc)
		return api_fail_db(rq, rc);
	return api_reply(rq, 200, json_pack("{s:o, s:n}", "items", items, "next_cursor"));
}

int h_checkpoint_get(api_req *rq)
{
	const char *p[] = {rq->scope.checkpoint_id};
	return api_reply_row(rq,
	                     "SELECT row_to_json(x) FROM (SELECT " CHECKPOINT_COLS
	                     " FROM checkpoints c WHERE c.id = $1) x",
	                     1, p, ERR_CHECKPOINT_NOT_FOUND);
}
