/*
 * h_registry_grants.c - another tenant's leave to use an entry of a
 * tenant's registries: to read a dataset (docs/datasets.md) or to run a
 * code bundle (docs/own-code.md). Made by the entry's tenant owner with an
 * expiry, in force at once for public and internal entries and once a
 * platform admin approves it for confidential and restricted ones,
 * revocable; and the entries granted to a tenant. Every change is audited.
 *
 * Both registries keep their grants alike (migrations 0007, 0023): one
 * registry_kind below says where, and the handlers are the same.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "grants.h"
#include "handlers.h"
#include "server.h"

/* Where one registry keeps its entries, their versions and their grants. */
typedef struct registry_kind {
	const char *param; /* the route's parameter naming the entry, and the answers' key */
	const char *noun;  /* in messages */
	int not_found;     /* -ERR_* of an unknown entry */
	const char *find;  /* $1 the tenant, $2 the name: id, classification */
	const char
	    *insert; /* $1 entry, $2 grantee's name, $3 user, $4 expiry, $5 approved, $6 tenant */
	const char *list;   /* $1 the entry: its grants, oldest first */
	const char *shared; /* $1 the tenant: the entries granted to it, in force */
	grant_sql change;
	int (*failed)(api_req *rq, int rc); /* answers a failure of its routes */
} registry_kind;

/*
 * The statements of a registry whose entries are in `entries` (alias d),
 * their versions in `versions` and their grants in `grants` (alias g),
 * both pointing at the entry by `fk`; `key` names the entry in answers.
 */
/* clang-format off */
#define GRANT_COLS(key) \
	"g.id, d.name AS " key ", gt.name AS tenant, gt.id AS tenant_id, d.classification, " \
	GRANT_STATE_COLS
#define GRANT_JOINS(entries, fk) \
	" JOIN " entries " d ON d.id = g." fk " JOIN tenants gt ON gt.id = g.tenant_id"
/* a change of grant $1 of entry $2 by user $3, answered as the grant's row */
#define GRANT_CHANGE(grants, entries, fk, key, set) \
	"WITH g AS (UPDATE " grants " SET " set " WHERE id = $1 AND " fk " = $2 RETURNING *)" \
	" SELECT row_to_json(x) FROM (SELECT " GRANT_COLS(key) " FROM g" \
	GRANT_JOINS(entries, fk) ") x"
#define REGISTRY_KIND(key, noun_, err, entries, versions, grants, fk, failed_) { \
	.param = key, \
	.noun = noun_, \
	.not_found = -err, \
	.find = "SELECT id, classification FROM " entries " WHERE tenant_id = $1 AND name = $2", \
	.insert = "WITH g AS (INSERT INTO " grants " (" fk ", tenant_id, granted_by, expires_at," \
		" approved_by, approved_at) SELECT $1, t.id, $3, $4::timestamptz," \
		" CASE WHEN $5::boolean THEN $3::uuid END," \
		" CASE WHEN $5::boolean THEN clock_timestamp() END" \
		" FROM tenants t WHERE t.name = $2 AND t.id <> $6 RETURNING *)" \
		" SELECT row_to_json(x) FROM (SELECT " GRANT_COLS(key) " FROM g" \
		GRANT_JOINS(entries, fk) ") x", \
	.list = "SELECT coalesce(json_agg(x ORDER BY x.created_at), '[]') FROM (SELECT " \
		GRANT_COLS(key) " FROM " grants " g" GRANT_JOINS(entries, fk) \
		" WHERE g." fk " = $1) x", \
	.shared = "SELECT coalesce(json_agg(x ORDER BY x.owner, x.name), '[]') FROM" \
		" (SELECT ot.name AS owner, d.name, d.description, d.classification," \
		" (SELECT max(version) FROM " versions " WHERE " fk " = d.id) AS latest_version," \
		" " CLOCK_SQL_RFC3339("max(g.expires_at)") " AS expires_at FROM " grants " g" \
		" JOIN " entries " d ON d.id = g." fk " JOIN tenants ot ON ot.id = d.tenant_id" \
		" WHERE g.tenant_id = $1 AND " GRANT_IN_FORCE " GROUP BY ot.name, d.id) x", \
	.change = { \
		.lock = "SELECT approved_at IS NULL AND revoked_at IS NULL" \
			" AND expires_at > clock_timestamp(), revoked_at IS NULL FROM " grants \
			" WHERE id = $1 AND " fk " = $2 FOR UPDATE", \
		.approve = GRANT_CHANGE(grants, entries, fk, key, \
			"approved_by = $3, approved_at = clock_timestamp()"), \
		.revoke = GRANT_CHANGE(grants, entries, fk, key, \
			"revoked_by = $3, revoked_at = clock_timestamp()"), \
	}, \
	.failed = failed_, \
}
/* clang-format on */

static int dataset_failed(api_req *rq, int rc);
static int code_failed(api_req *rq, int rc);

static const registry_kind datasets =
    REGISTRY_KIND("dataset", "dataset", ERR_DATASET_NOT_FOUND, "datasets", "dataset_versions",
                  "dataset_grants", "dataset_id", dataset_failed);
static const registry_kind code =
    REGISTRY_KIND("code", "code bundle", ERR_CODE_NOT_FOUND, "code_bundles", "code_versions",
                  "code_grants", "bundle_id", code_failed);

/* The entry the route names, of the scope's tenant. OUT id, classification. RET 0 or -ERR_*. */
static int entry_find(api_req *rq, const registry_kind *k, char id[37], char cls[16])
{
	const char *p[] = {rq->scope.tenant_id, route_param(&rq->params, k->param)};
	PGresult *r;
	int rc = db_query(rq->db, &r, k->find, 2, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = k->not_found;
	if (rc == 0) {
		snprintf(id, 37, "%s", PQgetvalue(r, 0, 0));
		snprintf(cls, 16, "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return rc;
}

/* Answer a failure of the grant routes of kind k. */
static int kind_failed(api_req *rq, const registry_kind *k, int rc)
{
	if (rc == k->not_found)
		return api_fail(rq, rc, "no %s \"%s\" in this tenant", k->noun,
		                route_param(&rq->params, k->param));
	if (rc == -ERR_GRANT_NOT_FOUND)
		return api_fail(rq, rc, "no such grant of this %s", k->noun);
	if (rc == -ERR_GRANT_STATE_CONFLICT)
		return api_fail(rq, rc, "the grant is not pending: approved, revoked or expired");
	return api_fail_db(rq, rc);
}

static int dataset_failed(api_req *rq, int rc)
{
	return kind_failed(rq, &datasets, rc);
}

static int code_failed(api_req *rq, int rc)
{
	return kind_failed(rq, &code, rc);
}

/* The audit resource of grant gid of the entry: "<key>/<name>/grants/<gid>". */
static void grant_resource(api_req *rq, const registry_kind *k, const char *gid, char *res,
                           size_t n)
{
	snprintf(res, n, "%s/%s/grants/%s", k->param, route_param(&rq->params, k->param), gid);
}

static int grant_create(api_req *rq, const registry_kind *k)
{
	json_t *in, *out = NULL;
	const char *tenant = NULL, *expires = NULL;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	grant_body_check(in, NULL, &tenant, &expires, &v);
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	char id[37] = "", cls[16] = "";
	int rc = api_db(rq);
	if (rc == 0 && (rc = db_begin(rq->db)) == 0)
		rc = entry_find(rq, k, id, cls);
	/* public and internal entries are shared on their owner's word; the rest wait */
	bool approved = grant_approved_at_once(cls, rq->who.platform == ROLE_ADMIN);
	const char *p[] = {
	    id, tenant, rq->who.user_id, expires, approved ? "t" : "f", rq->scope.tenant_id};
	if (rc == 0)
		rc = api_query_json(rq, k->insert, 6, p, &out);
	if (rc == 0 && !out)
		return grant_no_grantee(rq, in, tenant);
	char res[160];
	grant_resource(rq, k, json_string_value(json_object_get(out, "id")), res, sizeof(res));
	rc = api_audit_commit(rq, rc, 201, res,
	                      json_pack("{s:s, s:s?, s:s, s:b}", "grantee", tenant,
	                                "grantee_tenant_id",
	                                json_string_value(json_object_get(out, "tenant_id")),
	                                "expires_at", expires, "approved", approved));
	json_decref(in);
	if (rc) {
		json_decref(out);
		return k->failed(rq, rc);
	}
	return api_reply(rq, 201, out);
}

static int grant_list(api_req *rq, const registry_kind *k)
{
	char id[37], cls[16];
	json_t *items = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = entry_find(rq, k, id, cls);
	const char *p[] = {id};
	if (rc == 0)
		rc = api_query_json(rq, k->list, 1, p, &items);
	if (rc)
		return k->failed(rq, rc);
	return api_reply_items(rq, 0, items, NULL);
}

/* Approve (approve true) or revoke grant {grant} of the entry. */
static int grant_decide(api_req *rq, const registry_kind *k, bool approve)
{
	char id[37] = "", cls[16], res[160];
	int rc = api_db(rq);
	if (rc == 0 && (rc = db_begin(rq->db)) == 0)
		rc = entry_find(rq, k, id, cls);
	grant_resource(rq, k, route_param(&rq->params, "grant"), res, sizeof(res));
	return grant_change(rq, &k->change, rc, id, approve, res, k->failed);
}

static int shared_list(api_req *rq, const registry_kind *k)
{
	const char *p[] = {rq->scope.tenant_id};
	json_t *items;
	int rc = api_query_json(rq, k->shared, 1, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}

int h_dataset_grant_create(api_req *rq)
{
	return grant_create(rq, &datasets);
}

int h_dataset_grant_list(api_req *rq)
{
	return grant_list(rq, &datasets);
}

int h_dataset_grant_approve(api_req *rq)
{
	return grant_decide(rq, &datasets, true);
}

int h_dataset_grant_revoke(api_req *rq)
{
	return grant_decide(rq, &datasets, false);
}

int h_shared_datasets(api_req *rq)
{
	return shared_list(rq, &datasets);
}

int h_code_grant_create(api_req *rq)
{
	return grant_create(rq, &code);
}

int h_code_grant_list(api_req *rq)
{
	return grant_list(rq, &code);
}

int h_code_grant_approve(api_req *rq)
{
	return grant_decide(rq, &code, true);
}

int h_code_grant_revoke(api_req *rq)
{
	return grant_decide(rq, &code, false);
}

int h_shared_code(api_req *rq)
{
	return shared_list(rq, &code);
}
