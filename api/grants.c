/*
 * grants.c - the checks every kind of grant shares (grants.h).
 */
#include "grants.h"

#include <string.h>
#include <time.h>

#include "api.h"
#include "report.h"
#include "server.h"

void grant_body_check(const json_t *in, const char *const *fields, const char **tenant,
                      const char **expires, verrs *v)
{
	const char *known[8] = {"tenant", "expires_at"};
	size_t n = 2;
	for (size_t i = 0; fields && fields[i] && n + 1 < sizeof(known) / sizeof(known[0]); i++)
		known[n++] = fields[i];
	known[n] = NULL;
	jsonx_only_fields(in, "", known, v);
	if (jsonx_get_str(in, "", "tenant", true, 63, tenant, v) > 0 && !jsonx_is_name(*tenant))
		verrs_add(v, "/tenant", ERR_F_INVALID_VALUE, "tenant is a tenant's name");
	double t = 0, now = (double)time(NULL);
	if (jsonx_get_str(in, "", "expires_at", true, 64, expires, v) > 0 &&
	    (report_time_parse(*expires, &t) < 0 || t <= now || t > now + GRANT_DAYS_MAX * 86400.0))
		verrs_add(v, "/expires_at", ERR_F_INVALID_VALUE,
		          "expires_at is an RFC 3339 time in the next %d days", GRANT_DAYS_MAX);
}

bool grant_approved_at_once(const char *cls, bool by_admin)
{
	return strcmp(cls, "public") == 0 || strcmp(cls, "internal") == 0 || by_admin;
}

int grant_no_grantee(api_req *rq, json_t *in, const char *tenant)
{
	verrs v;
	verrs_init(&v);
	verrs_add(&v, "/tenant", ERR_F_INVALID_VALUE, "no other tenant is named \"%s\"", tenant);
	json_decref(in);
	return api_fail_validation(rq, &v);
}

int grant_change(api_req *rq, const grant_sql *sql, int rc, const char *object_id, bool approve,
                 const char *res, int (*failed)(api_req *rq, int rc))
{
	const char *gid = route_param(&rq->params, "grant");
	const char *p[] = {gid, object_id, rq->who.user_id};
	PGresult *r = NULL;
	json_t *out = NULL;
	if (rc == 0 && !jsonx_is_uuid(gid))
		rc = -ERR_GRANT_NOT_FOUND;
	if (rc == 0)
		rc = db_query(rq->db, &r, sql->lock, 2, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_GRANT_NOT_FOUND;
	if (rc == 0 && strcmp(PQgetvalue(r, 0, approve ? 0 : 1), "t") != 0)
		rc = -ERR_GRANT_STATE_CONFLICT;
	PQclear(r);
	if (rc == 0)
		rc = api_query_json(rq, approve ? sql->approve : sql->revoke, 3, p, &out);
	rc = api_audit_commit(
	    rq, rc, approve ? 200 : 204, res,
	    json_pack("{s:s?, s:s?, s:s?}", "grantee",
	              json_string_value(json_object_get(out, "tenant")), "grantee_tenant_id",
	              json_string_value(json_object_get(out, "tenant_id")), "expires_at",
	              json_string_value(json_object_get(out, "expires_at"))));
	if (rc) {
		json_decref(out);
		return failed(rq, rc);
	}
	if (!approve) {
		json_decref(out);
		return api_reply(rq, 204, NULL);
	}
	return api_reply(rq, 200, out);
}
