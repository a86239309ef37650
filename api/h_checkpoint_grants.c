/*
 * h_checkpoint_grants.c - another tenant's leave to start jobs from a
 * checkpoint and, when the grant says so, to download it
 * (docs/datasets.md, "Sharing checkpoints"): made by the checkpoint's
 * tenant owner with an expiry, in force at once for public and internal
 * checkpoints and once a platform admin approves it for confidential and
 * restricted ones, revocable; the checkpoints granted to a tenant; and
 * their download by the grantee. Every change is audited.
 *
 * Only checkpoints of ended jobs are granted: a running job's checkpoints
 * are still replaced (a step written again) and pruned (checkpoint.keep).
 * A checkpoint trained on restricted data is never downloaded by another
 * tenant: its grants allow starting from it only.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "grants.h"
#include "handlers.h"
#include "server.h"

#define GRANT_COLS                                                                                 \
	"g.id, g.checkpoint_id, j.name AS job, c.step, gt.name AS tenant, gt.id AS tenant_id,"     \
	" c.classification, g.download, " GRANT_STATE_COLS
#define GRANT_JOINS                                                                                \
	" JOIN checkpoints c ON c.id = g.checkpoint_id JOIN jobs j ON j.id = c.job_id"             \
	" JOIN tenants gt ON gt.id = g.tenant_id"
/* The grants table, or (after a change in a WITH g AS (...)) the changed rows */
#define GRANT_FROM     " FROM checkpoint_grants g" GRANT_JOINS
#define GRANT_FROM_CTE " FROM g" GRANT_JOINS

/* The jobs whose checkpoints no longer change. */
#define JOB_ENDED "j.state IN ('succeeded', 'failed', 'cancelled')"

/*
 * The scope's checkpoint, which must be of an ended job. OUT cls: its
 * classification. RET 0 or -ERR_*.
 */
static int checkpoint_find(api_req *rq, char cls[16])
{
	const char *p[] = {rq->scope.checkpoint_id};
	PGresult *r;
	int rc = db_query(rq->db, &r,
	                  "SELECT c.classification, " JOB_ENDED ", " CHECKPOINT_HELD
	                  " FROM checkpoints c"
	                  " JOIN jobs j ON j.id = c.job_id WHERE c.id = $1",
	                  1, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_CHECKPOINT_NOT_FOUND;
	if (rc == 0) {
		snprintf(cls, 16, "%s", PQgetvalue(r, 0, 0));
		if (strcmp(PQgetvalue(r, 0, 1), "t") != 0)
			rc = -ERR_CHECKPOINT_NOT_FINAL;
		else if (strcmp(PQgetvalue(r, 0, 2), "t") == 0)
			rc = -ERR_UPSTREAM_TERMS;
	}
	PQclear(r);
	return rc;
}

/* Answer a failure of the grant routes. */
static int grant_failed(api_req *rq, int rc)
{
	if (rc == -ERR_CHECKPOINT_NOT_FOUND)
		return api_fail(rq, rc, "no such checkpoint");
	if (rc == -ERR_CHECKPOINT_NOT_FINAL)
		return api_fail(rq, rc,
		                "the checkpoint's job has not ended: its checkpoints may still be "
		                "replaced or pruned");
	if (rc == -ERR_GRANT_NOT_FOUND)
		return api_fail(rq, rc, "no such grant of this checkpoint");
	if (rc == -ERR_UPSTREAM_TERMS)
		return api_fail(rq, rc,
		                "the checkpoint was trained from another tenant's checkpoint or "
		                "dataset whose grant does not let it leave: it cannot be granted");
	if (rc == -ERR_GRANT_STATE_CONFLICT)
		return api_fail(rq, rc, "the grant is not pending: approved, revoked or expired");
	return api_fail_db(rq, rc);
}

/* "checkpoint/{id}/grants/{grant}": the resource of a grant's audit record */
static void grant_resource(api_req *rq, const char *gid, char *res, size_t n)
{
	snprintf(res, n, "checkpoint/%s/grants/%s", rq->scope.checkpoint_id, gid ? gid : "");
}

int h_checkpoint_grant_create(api_req *rq)
{
	json_t *in, *out = NULL;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const own[] = {"download", NULL};
	const char *tenant = NULL, *expires = NULL;
	grant_body_check(in, own, &tenant, &expires, &v);
	const json_t *dl = json_object_get(in, "download");
	if (dl && !json_is_boolean(dl))
		verrs_add(&v, "/download", ERR_F_WRONG_TYPE, "download is true or false");
	bool download = json_is_true(dl);
	char cls[16] = "";
	int rc = api_db(rq);
	if (rc == 0 && (rc = db_begin(rq->db)) == 0)
		rc = checkpoint_find(rq, cls);
	if (rc == 0 && download && strcmp(cls, "restricted") == 0)
		verrs_add(&v, "/download", ERR_F_INVALID_VALUE,
		          "the checkpoint was trained on restricted data: another tenant may start "
		          "jobs from it, never download it");
	if (rc == 0 && verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	bool approved = grant_approved_at_once(cls, rq->who.platform == ROLE_ADMIN);
	const char *p[] = {rq->scope.checkpoint_id, download ? "t" : "f",
	                   rq->who.user_id,         expires,
	                   approved ? "t" : "f",    tenant,
	                   rq->scope.tenant_id};
	if (rc == 0)
		rc = api_query_json(
		    rq,
		    "WITH g AS (INSERT INTO checkpoint_grants (checkpoint_id, tenant_id, download,"
		    " granted_by, expires_at, approved_by, approved_at) SELECT $1, t.id, "
		    "$2::boolean,"
		    " $3, $4::timestamptz, CASE WHEN $5::boolean THEN $3::uuid END,"
		    " CASE WHEN $5::boolean THEN clock_timestamp() END"
		    " FROM tenants t WHERE t.name = $6 AND t.id <> $7 RETURNING *)"
		    " SELECT row_to_json(x) FROM (SELECT " GRANT_COLS GRANT_FROM_CTE ") x",
		    7, p, &out);
	if (rc == 0 && !out)
		return grant_no_grantee(rq, in, tenant);
	char res[160];
	grant_resource(rq, json_string_value(json_object_get(out, "id")), res, sizeof(res));
	rc = api_audit_commit(
	    rq, rc, 201, res,
	    json_pack("{s:s?, s:s?, s:s?, s:b, s:b}", "grantee", tenant, "grantee_tenant_id",
	              json_string_value(json_object_get(out, "tenant_id")), "expires_at", expires,
	              "approved", approved, "download", download));
	json_decref(in);
	if (rc) {
		json_decref(out);
		return grant_failed(rq, rc);
	}
	return api_reply(rq, 201, out);
}

int h_checkpoint_grant_list(api_req *rq)
{
	const char *p[] = {rq->scope.checkpoint_id};
	json_t *items = NULL;
	int rc = api_query_json(rq,
	                        "SELECT coalesce(json_agg(x ORDER BY x.created_at), '[]') FROM"
	                        " (SELECT " GRANT_COLS GRANT_FROM " WHERE g.checkpoint_id = $1) x",
	                        1, p, &items);
	if (rc)
		return grant_failed(rq, rc);
	return api_reply_items(rq, 0, items, NULL);
}

static const grant_sql checkpoint_grant_sql = {
    "SELECT approved_at IS NULL AND revoked_at IS NULL AND expires_at > clock_timestamp(),"
    " revoked_at IS NULL FROM checkpoint_grants WHERE id = $1 AND checkpoint_id = $2 FOR UPDATE",
    "WITH g AS (UPDATE checkpoint_grants SET approved_by = $3, approved_at = clock_timestamp()"
    " WHERE id = $1 AND checkpoint_id = $2 RETURNING *) SELECT row_to_json(x) FROM "
    "(SELECT " GRANT_COLS GRANT_FROM_CTE ") x",
    "WITH g AS (UPDATE checkpoint_grants SET revoked_by = $3, revoked_at = clock_timestamp()"
    " WHERE id = $1 AND checkpoint_id = $2 RETURNING *) SELECT row_to_json(x) FROM "
    "(SELECT " GRANT_COLS GRANT_FROM_CTE ") x",
};

/* Approve (approve true) or revoke grant {grant} of the checkpoint. */
static int grant_change_checkpoint(api_req *rq, bool approve)
{
	char res[160];
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	grant_resource(rq, route_param(&rq->params, "grant"), res, sizeof(res));
	return grant_change(rq, &checkpoint_grant_sql, rc, rq->scope.checkpoint_id, approve, res,
	                    grant_failed);
}

int h_checkpoint_grant_approve(api_req *rq)
{
	return grant_change_checkpoint(rq, true);
}

int h_checkpoint_grant_revoke(api_req *rq)
{
	return grant_change_checkpoint(rq, false);
}

/* GET /v1/tenants/{tenant}/shared-checkpoints: the checkpoints granted to the tenant, in force. */
int h_shared_checkpoints(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id};
	json_t *items;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(x ORDER BY x.owner, x.job, x.step), '[]') FROM"
	    " (SELECT c.id AS checkpoint_id, ot.name AS owner, j.name AS job, c.step,"
	    " c.classification, bool_or(g.download) AS download,"
	    " " CLOCK_SQL_RFC3339(
	        "max(g.expires_at)") " AS expires_at FROM checkpoint_grants g"
	                             " JOIN checkpoints c ON c.id = g.checkpoint_id JOIN jobs j "
	                             "ON j.id = c.job_id"
	                             " JOIN tenants ot ON ot.id = j.tenant_id WHERE g.tenant_id "
	                             "= $1 AND " GRANT_IN_FORCE
	                             " GROUP BY c.id, ot.name, j.name) x",
	    1, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}
