/*
 * h_tenants.c - tenants and their quotas.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "handlers.h"
#include "jobspec.h"
#include "log.h"
#include "server.h"
#include "tenant_dirs.h"

/* A new tenant's quota until an admin sets one (also in README.md). */
static const char *const default_quota[] = {"8", "4", "1000", "1099511627776", "1"};

#define TENANT_COLS "id, name, display_name, " CLOCK_SQL_RFC3339("created_at") " AS created_at"
#define QUOTA_COLS                                                                                 \
	"tenant_id, max_gpus, max_running_jobs, gpu_hours_per_month, max_storage_bytes, "          \
	"weight, borrow_gpus, priority_classes, " CLOCK_SQL_RFC3339("updated_at") " AS updated_at"

int h_tenant_create(api_req *rq)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"name", "display_name", NULL};
	jsonx_only_fields(in, "", fields, &v);
	const char *name = NULL, *display = "";
	if (jsonx_get_str(in, "", "name", true, 63, &name, &v) > 0 && !jsonx_is_name(name))
		verrs_add(
		    &v, "/name", ERR_F_INVALID_VALUE,
		    "name must be 2-63 characters of a-z, 0-9 and '-', starting with a letter");
	jsonx_get_str(in, "", "display_name", false, 200, &display, &v);
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);

	json_t *t = NULL;
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		goto db_fail;
	const char *p[] = {name, display};
	rc = api_query_json(rq,
	                    "WITH t AS (INSERT INTO tenants (name, display_name) VALUES ($1, $2)"
	                    " RETURNING *) SELECT row_to_json(x) FROM (SELECT " TENANT_COLS
	                    " FROM t) x",
	                    2, p, &t);
	if (rc)
		goto db_fail;
	const char *tid = json_string_value(json_object_get(t, "id"));
	snprintf(rq->scope.tenant_id, sizeof(rq->scope.tenant_id), "%s", tid);
	snprintf(rq->scope.tenant_name, sizeof(rq->scope.tenant_name), "%s", name);
	const char *q[] = {tid,
	                   default_quota[0],
	                   default_quota[1],
	                   default_quota[2],
	                   default_quota[3],
	                   default_quota[4]};
	rc = db_query(rq->db, NULL,
	              "INSERT INTO quotas (tenant_id, max_gpus, max_running_jobs,"
	              " gpu_hours_per_month, max_storage_bytes, weight)"
	              " VALUES ($1, $2, $3, $4, $5, $6)",
	              6, q);
	char res[96], why[512];
	snprintf(res, sizeof(res), "tenant/%s", name);
	/* its Unix user from the pool, in the same transaction (docs/identity.md) */
	tenant_identity id;
	int has = rc ? 1 : identity_ensure(rq->db, rq->cfg, tid, &id, why, sizeof(why));
	if (has < 0)
		rc = has;
	if (rc || (rc = api_audit(rq, 201, res, NULL)) || (rc = db_commit(rq->db)))
		goto db_fail;
	/* and its directories, its user's; the scheduler makes them too before it dispatches */
	if (has == 1)
		log_printf(LOG_WARN, "tenant %s: %s", name, why);
	else
		tenant_dirs_prepare(rq, tid, &id, why, sizeof(why));
	json_decref(in);
	return api_reply(rq, 201, t);
db_fail:
	json_decref(t);
	json_decref(in);
	if (rc == -ERR_CONFLICT)
		return api_fail(rq, ERR_TENANT_EXISTS, "a tenant with this name already exists");
	return api_fail_db(rq, rc);
}

int h_tenant_list(api_req *rq)
{
	json_t *items;
	int rc;
	authz_subject s = {rq->who.platform, ROLE_NONE, false, false};
	if (authz_decide(&s, PERM_TENANT_LIST_ALL, SCOPE_PLATFORM) == AUTHZ_ALLOW) {
		rc = api_query_json(
		    rq,
		    "SELECT coalesce(json_agg(x ORDER BY x.name), '[]') FROM (SELECT " TENANT_COLS
		    " FROM tenants) x",
		    0, NULL, &items);
	} else {
		const char *p[] = {rq->who.user_id};
		rc = api_query_json(
		    rq,
		    "SELECT coalesce(json_agg(x ORDER BY x.name), '[]') FROM (SELECT "
		    "t.id, t.name, t.display_name, " CLOCK_SQL_RFC3339(
		        "t.created_at") " AS created_at"
		                        " FROM tenants t JOIN role_bindings b ON b.tenant_id = t.id"
		                        " WHERE b.user_id = $1) x",
		    1, p, &items);
	}
	return api_reply_items(rq, rc, items, NULL);
}

int h_tenant_get(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id};
	return api_reply_row(
	    rq, "SELECT row_to_json(x) FROM (SELECT " TENANT_COLS " FROM tenants WHERE id = $1) x",
	    1, p, ERR_TENANT_NOT_FOUND);
}

int h_quota_get(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id};
	return api_reply_row(rq,
	                     "SELECT row_to_json(x) FROM (SELECT " QUOTA_COLS
	                     " FROM quotas WHERE tenant_id = $1) x",
	                     1, p, ERR_TENANT_NOT_FOUND);
}

/*
 * A quota's priority_classes: an array of distinct class names, at most
 * 32. RET: its PostgreSQL array literal (free() it), or NULL with a row in v.
 */
static char *class_list(const json_t *a, verrs *v)
{
	size_t n = json_array_size(a);
	if (!json_is_array(a) || n > 32) {
		verrs_add(v, "/priority_classes",
		          json_is_array(a) ? ERR_F_OUT_OF_RANGE : ERR_F_WRONG_TYPE,
		          "priority_classes is an array of at most 32 class names");
		return NULL;
	}
	const char *names[32];
	for (size_t i = 0; i < n; i++) {
		names[i] = json_string_value(json_array_get(a, i));
		bool dup = false;
		for (size_t k = 0; names[i] && k < i; k++)
			dup = dup || strcmp(names[k], names[i]) == 0;
		if (!names[i] || !jsonx_is_name(names[i]) || strlen(names[i]) > JOBSPEC_CLASS_MAX ||
		    dup) {
			verrs_add(v, "/priority_classes", ERR_F_INVALID_VALUE,
			          "priority_classes holds distinct class names (a-z, 0-9 and '-', "
			          "at most %d characters)",
			          JOBSPEC_CLASS_MAX);
			return NULL;
		}
	}
	char *lit = db_array_literal(names, (int)n);
	if (!lit)
		verrs_add(v, "/priority_classes", ERR_F_INVALID_VALUE, "out of memory");
	return lit;
}

int h_quota_put(api_req *rq)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {
	    "max_gpus",    "max_running_jobs", "gpu_hours_per_month", "max_storage_bytes",
	    "borrow_gpus", "weight",           "priority_classes",    NULL};
	jsonx_only_fields(in, "", fields, &v);
	int64_t ints[5];
	char text[6][32];
	const char *p[8] = {rq->scope.tenant_id};
	int given = 0;
	static const int64_t max[5] = {1000000, 100000, INT64_C(1000000000000),
	                               INT64_C(9223372036854775807), 1000000};
	for (int i = 0; i < 5; i++) {
		int r = jsonx_get_int(in, "", fields[i], false, 0, max[i], &ints[i], &v);
		p[1 + i] = r > 0 ? text[i] : NULL;
		if (r > 0) {
			snprintf(text[i], sizeof(text[i]), "%lld", (long long)ints[i]);
			given++;
		}
	}
	char *classes = NULL;
	const json_t *pc = json_object_get(in, "priority_classes");
	if (pc && !json_is_null(pc)) {
		classes = class_list(pc, &v);
		given++;
	}
	p[7] = classes;
	double weight;
	int r = jsonx_get_num(in, "", "weight", false, 1e-6, 1e6, &weight, &v);
	p[6] = r > 0 ? text[5] : NULL;
	if (r > 0) {
		snprintf(text[5], sizeof(text[5]), "%.17g", weight);
		given++;
	}
	if (!verrs_count(&v) && given == 0)
		verrs_add(&v, "", ERR_F_REQUIRED, "give at least one quota field");
	if (verrs_count(&v)) {
		free(classes);
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	json_t *q = NULL;
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		goto fail;
	/* every class named must exist: the row lock keeps it until the commit */
	PGresult *known = NULL;
	if (classes) {
		const char *pk[] = {classes};
		rc = db_query(rq->db, &known,
		              "SELECT u.n FROM unnest($1::text[]) u(n) WHERE NOT EXISTS"
		              " (SELECT 1 FROM priority_classes c WHERE c.name = u.n FOR SHARE)",
		              1, pk);
		if (rc == 0 && PQntuples(known) > 0) {
			verrs_init(&v);
			verrs_add(&v, "/priority_classes", ERR_F_PRIORITY_CLASS,
			          "no priority class named %s", PQgetvalue(known, 0, 0));
			PQclear(known);
			db_rollback(rq->db);
			free(classes);
			json_decref(in);
			return api_fail_validation(rq, &v);
		}
		PQclear(known);
		if (rc)
			goto fail;
	}
	rc = api_query_json(rq,
	                    "WITH q AS (UPDATE quotas SET"
	                    " max_gpus = coalesce($2::int, max_gpus),"
	                    " max_running_jobs = coalesce($3::int, max_running_jobs),"
	                    " gpu_hours_per_month = coalesce($4::bigint, gpu_hours_per_month),"
	                    " max_storage_bytes = coalesce($5::bigint, max_storage_bytes),"
	                    " borrow_gpus = coalesce($6::int, borrow_gpus),"
	                    " weight = coalesce($7::float8, weight),"
	                    " priority_classes = coalesce($8::text[], priority_classes),"
	                    " updated_at = now()"
	                    " WHERE tenant_id = $1 RETURNING *)"
	                    " SELECT row_to_json(x) FROM (SELECT " QUOTA_COLS " FROM q) x",
	                    8, p, &q);
	char res[96];
	snprintf(res, sizeof(res), "tenant/%s/quota", rq->scope.tenant_name);
	if (rc || (rc = api_audit(rq, 200, res, in)) || (rc = db_commit(rq->db)))
		goto fail;
	free(classes);
	json_decref(in);
	return api_reply(rq, 200, q);
fail:
	free(classes);
	json_decref(q);
	json_decref(in);
	return api_fail_db(rq, rc);
}
