/*
 * h_dataset_grants.c - another tenant's leave to read a dataset
 * (docs/datasets.md): made by the dataset's tenant owner with an expiry,
 * in force at once for public and internal datasets and once a platform
 * admin approves it for confidential and restricted ones, revocable; and
 * the datasets granted to a tenant. Every change is audited.
 */
#include <stdio.h>
#include <string.h>

#include "grants.h"
#include "handlers.h"
#include "server.h"

#define GRANT_COLS                                                                                 \
	"g.id, d.name AS dataset, gt.name AS tenant, gt.id AS tenant_id, "                         \
	"d.classification, " GRANT_STATE_COLS
#define GRANT_JOINS " JOIN datasets d ON d.id = g.dataset_id JOIN tenants gt ON gt.id = g.tenant_id"
/* The grants table, or (after a change in a WITH g AS (...)) the changed rows */
#define GRANT_FROM     " FROM dataset_grants g" GRANT_JOINS
#define GRANT_FROM_CTE " FROM g" GRANT_JOINS

/* The dataset {dataset} of the scope's tenant. OUT id, classification. RET 0 or -ERR_*. */
static int dataset_find(api_req *rq, char id[37], char cls[16])
{
	const char *p[] = {rq->scope.tenant_id, route_param(&rq->params, "dataset")};
	PGresult *r;
	int rc = db_query(
	    rq->db, &r,
	    "SELECT id, classification FROM datasets WHERE tenant_id = $1 AND name = $2", 2, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_DATASET_NOT_FOUND;
	if (rc == 0) {
		snprintf(id, 37, "%s", PQgetvalue(r, 0, 0));
		snprintf(cls, 16, "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return rc;
}

/* Answer a failure of the grant routes. */
static int grant_failed(api_req *rq, int rc)
{
	if (rc == -ERR_DATASET_NOT_FOUND)
		return api_fail(rq, rc, "no dataset \"%s\" in this tenant",
		                route_param(&rq->params, "dataset"));
	if (rc == -ERR_GRANT_NOT_FOUND)
		return api_fail(rq, rc, "no such grant of this dataset");
	if (rc == -ERR_GRANT_STATE_CONFLICT)
		return api_fail(rq, rc, "the grant is not pending: approved, revoked or expired");
	return api_fail_db(rq, rc);
}

/* Validate the body: the grantee tenant's name and the expiry. RET 0 or answered. */
static int grant_body(api_req *rq, json_t *in, const char **tenant, const char **expires)
{
	verrs v;
	verrs_init(&v);
	grant_body_check(in, NULL, tenant, expires, &v);
	if (verrs_count(&v)) {
		api_fail_validation(rq, &v);
		return -1;
	}
	verrs_release(&v);
	return 0;
}

int h_dataset_grant_create(api_req *rq)
{
	json_t *in, *out = NULL;
	const char *tenant = NULL, *expires = NULL;
	if (api_body_object(rq, &in) < 0)
		return 0;
	if (grant_body(rq, in, &tenant, &expires) < 0) {
		json_decref(in);
		return 0;
	}
	char ds[37] = "", cls[16] = "";
	int rc = api_db(rq);
	if (rc == 0 && (rc = db_begin(rq->db)) == 0)
		rc = dataset_find(rq, ds, cls);
	/* public and internal data is shared on the owner's word; the rest waits for an admin */
	bool approved = grant_approved_at_once(cls, rq->who.platform == ROLE_ADMIN);
	const char *p[] = {
	    ds, tenant, rq->who.user_id, expires, approved ? "t" : "f", rq->scope.tenant_id};
	if (rc == 0)
		rc = api_query_json(
		    rq,
		    "WITH g AS (INSERT INTO dataset_grants (dataset_id, tenant_id, granted_by,"
		    " expires_at, approved_by, approved_at) SELECT $1, t.id, $3, $4::timestamptz,"
		    " CASE WHEN $5::boolean THEN $3::uuid END,"
		    " CASE WHEN $5::boolean THEN clock_timestamp() END"
		    " FROM tenants t WHERE t.name = $2 AND t.id <> $6 RETURNING *)"
		    " SELECT row_to_json(x) FROM (SELECT " GRANT_COLS GRANT_FROM_CTE ") x",
		    6, p, &out);
	if (rc == 0 && !out) {
		verrs v;
		verrs_init(&v);
		verrs_add(&v, "/tenant", ERR_F_INVALID_VALUE, "no other tenant is named \"%s\"",
		          tenant);
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	char res[160];
	snprintf(res, sizeof(res), "dataset/%s/grants/%s", route_param(&rq->params, "dataset"),
	         json_string_value(json_object_get(out, "id")));
	rc = api_audit_commit(rq, rc, 201, res,
	                      json_pack("{s:s, s:s?, s:s, s:b}", "grantee", tenant,
	                                "grantee_tenant_id",
	                                json_string_value(json_object_get(out, "tenant_id")),
	                                "expires_at", expires, "approved", approved));
	json_decref(in);
	if (rc) {
		json_decref(out);
		return grant_failed(rq, rc);
	}
	return api_reply(rq, 201, out);
}

int h_dataset_grant_list(api_req *rq)
{
	char ds[37], cls[16];
	json_t *items = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = dataset_find(rq, ds, cls);
	const char *p[] = {ds};
	if (rc == 0)
		rc = api_query_json(rq,
		                    "SELECT coalesce(json_agg(x ORDER BY x.created_at), '[]') FROM"
		                    " (SELECT " GRANT_COLS GRANT_FROM " WHERE g.dataset_id = $1) x",
		                    1, p, &items);
	if (rc)
		return grant_failed(rq, rc);
	return api_reply_items(rq, 0, items, NULL);
}

static const grant_sql dataset_grant_sql = {
    "SELECT approved_at IS NULL AND revoked_at IS NULL AND expires_at > clock_timestamp(),"
    " revoked_at IS NULL FROM dataset_grants WHERE id = $1 AND dataset_id = $2 FOR UPDATE",
    "WITH g AS (UPDATE dataset_grants SET approved_by = $3, approved_at = clock_timestamp()"
    " WHERE id = $1 AND dataset_id = $2 RETURNING *) SELECT row_to_json(x) FROM (SELECT " GRANT_COLS
        GRANT_FROM_CTE ") x",
    "WITH g AS (UPDATE dataset_grants SET revoked_by = $3, revoked_at = clock_timestamp()"
    " WHERE id = $1 AND dataset_id = $2 RETURNING *) SELECT row_to_json(x) FROM (SELECT " GRANT_COLS
        GRANT_FROM_CTE ") x",
};

/* Approve (approve true) or revoke grant {grant} of the dataset. */
static int grant_change_dataset(api_req *rq, bool approve)
{
	char ds[37] = "", cls[16], res[160];
	int rc = api_db(rq);
	if (rc == 0 && (rc = db_begin(rq->db)) == 0)
		rc = dataset_find(rq, ds, cls);
	snprintf(res, sizeof(res), "dataset/%s/grants/%s", route_param(&rq->params, "dataset"),
	         route_param(&rq->params, "grant"));
	return grant_change(rq, &dataset_grant_sql, rc, ds, approve, res, grant_failed);
}

int h_dataset_grant_approve(api_req *rq)
{
	return grant_change_dataset(rq, true);
}

int h_dataset_grant_revoke(api_req *rq)
{
	return grant_change_dataset(rq, false);
}

int h_shared_datasets(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id};
	json_t *items;
	int rc =
	    api_query_json(rq,
	                   "SELECT coalesce(json_agg(x ORDER BY x.owner, x.name), '[]') FROM"
	                   " (SELECT ot.name AS owner, d.name, d.description, d.classification,"
	                   " (SELECT max(version) FROM dataset_versions WHERE dataset_id = d.id) "
	                   "AS latest_version,"
	                   " " TS("max(g.expires_at)") " AS expires_at FROM dataset_grants g"
	                                               " JOIN datasets d ON d.id = g.dataset_id "
	                                               "JOIN tenants ot ON ot.id = d.tenant_id"
	                                               " WHERE g.tenant_id = $1 AND g.approved_at "
	                                               "IS NOT NULL AND g.revoked_at IS NULL"
	                                               " AND g.expires_at > clock_timestamp() "
	                                               "GROUP BY ot.name, d.id) x",
	                   1, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}
