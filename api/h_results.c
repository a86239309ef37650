/*
 * h_results.c - what a job's runs left behind, for its tenant's users:
 * per-step metrics and registered checkpoints.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "handlers.h"
#include "server.h"

#define CHECKPOINT_COLS                                                                            \
	"c.id, c.job_id, c.attempt_id, c.step, c.world, c.bytes, c.shards, "                       \
	"c.classification, " CLOCK_SQL_RFC3339("c.created_at") " AS created_at"

#define METRIC_COLS "m.step, " CLOCK_SQL_RFC3339("m.at") " AS at, a.number AS attempt, m.data"

/*
 * GET /v1/jobs/{job}/metrics?after=STEP: step lines in order, a page at a
 * time. A page holds page_max steps, with every line of each: an attempt
 * that resumed from a checkpoint reports the steps after it again, and a
 * page that ended between a step's lines would lose the later ones to the
 * next page's after=STEP.
 */
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
	    "SELECT coalesce(json_agg(x ORDER BY x.step, x.at, x.attempt), '[]') FROM "
	    "(SELECT " METRIC_COLS " FROM job_metrics m JOIN job_attempts a ON a.id = m.attempt_id"
	    " WHERE m.job_id = $1 AND m.step IN (SELECT DISTINCT step FROM job_metrics"
	    "  WHERE job_id = $1 AND step > $2::int ORDER BY step LIMIT $3::int)) x",
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
	return api_reply_items(rq, rc, items, NULL);
}

int h_checkpoint_get(api_req *rq)
{
	const char *p[] = {rq->scope.checkpoint_id};
	return api_reply_row(rq,
	                     "SELECT row_to_json(x) FROM (SELECT " CHECKPOINT_COLS
	                     " FROM checkpoints c WHERE c.id = $1) x",
	                     1, p, ERR_CHECKPOINT_NOT_FOUND);
}

/*
 * GET /v1/checkpoints/{checkpoint}/lineage: what the checkpoint was trained
 * on and from. Its job's dataset versions (with their owners, hashes and
 * classifications) or data paths, the checkpoint of the same job it
 * follows (parent_step; its id while it is kept), the checkpoint of
 * another job its job started from (init_from; its own lineage goes on),
 * and for a command job the code version that wrote it (code).
 */
int h_checkpoint_lineage(api_req *rq)
{
	const char *p[] = {rq->scope.checkpoint_id};
	return api_reply_row(
	    rq,
	    "SELECT row_to_json(x) FROM (SELECT json_build_object('id', c.id, 'job_id', c.job_id,"
	    " 'step', c.step, 'classification', c.classification) AS checkpoint,"
	    " json_build_object('id', j.id, 'name', j.name, 'tenant', jt.name) AS job,"
	    " (SELECT coalesce(json_agg(json_build_object('role', jd.role, 'owner', ot.name,"
	    " 'dataset', d.name, 'version', v.version, 'version_id', v.id,"
	    " 'classification', d.classification, 'sha256', encode(v.sha256, 'hex'),"
	    " 'unmasked', v.unmasked) ORDER BY jd.role), '[]') FROM job_datasets jd"
	    " JOIN dataset_versions v ON v.id = jd.version_id JOIN datasets d ON d.id = "
	    "v.dataset_id"
	    " JOIN tenants ot ON ot.id = d.tenant_id WHERE jd.job_id = j.id) AS datasets,"
	    " (SELECT json_build_object('owner', bt.name, 'bundle', b.name, 'version', v.version,"
	    " 'version_id', v.id, 'classification', b.classification,"
	    " 'sha256', encode(v.sha256, 'hex'))"
	    " FROM job_code jc JOIN code_versions v ON v.id = jc.version_id"
	    " JOIN code_bundles b ON b.id = v.bundle_id JOIN tenants bt ON bt.id = b.tenant_id"
	    " WHERE jc.job_id = j.id) AS code,"
	    " CASE WHEN j.spec->'data'->>'train' IS NOT NULL AND NOT EXISTS (SELECT 1"
	    " FROM job_datasets jd WHERE jd.job_id = j.id AND jd.role = 'train')"
	    " THEN json_build_object('train', j.spec->'data'->>'train',"
	    " 'val', j.spec->'data'->>'val') END AS data_paths,"
	    " CASE WHEN c.parent_step IS NOT NULL THEN json_build_object('step', c.parent_step,"
	    " 'checkpoint_id', (SELECT p.id FROM checkpoints p WHERE p.job_id = c.job_id"
	    " AND p.step = c.parent_step)) END AS follows,"
	    " (SELECT json_build_object('checkpoint_id', ji.checkpoint_id, 'job_id',"
	    " ji.source_job_id, 'job', sj.name, 'tenant', st.name, 'step', ji.step,"
	    " 'classification', ji.classification) FROM job_init ji"
	    " LEFT JOIN jobs sj ON sj.id = ji.source_job_id"
	    " LEFT JOIN tenants st ON st.id = sj.tenant_id WHERE ji.job_id = j.id) AS init_from"
	    " FROM checkpoints c JOIN jobs j ON j.id = c.job_id JOIN tenants jt ON jt.id = "
	    "j.tenant_id"
	    " WHERE c.id = $1) x",
	    1, p, ERR_CHECKPOINT_NOT_FOUND);
}
