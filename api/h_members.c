/*
 * h_members.c - role bindings of users in a tenant.
 *
 * Granting, changing or revoking a role needs member.write and every
 * permission of the role given and of the role taken away
 * (authz_can_grant), and a tenant never loses its last owner.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "handlers.h"
#include "server.h"

#define MEMBER_SQL                                                                                 \
	"SELECT u.id AS user_id, u.name AS user, b.role, " CLOCK_SQL_RFC3339(                      \
	    "b.created_at") " AS created_at"                                                       \
	                    " FROM role_bindings b JOIN users u ON u.id = b.user_id WHERE "        \
	                    "b.tenant_id = $1"

int h_member_list(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id};
	json_t *items;
	int rc = api_query_json(
	    rq, "SELECT coalesce(json_agg(x ORDER BY x.user), '[]') FROM (" MEMBER_SQL ") x", 1, p,
	    &items);
	return api_reply_items(rq, rc, items, NULL);
}

/*
 * In the open transaction: lock the tenant's bindings, find the path's
 * user and its current role. RET 0 (OUT: uid, *current), or answered (<0).
 */
static int member_lookup(api_req *rq, char uid[37], role *current)
{
	const char *name = route_param(&rq->params, "user");
	const char *p[] = {rq->scope.tenant_id, name};
	PGresult *r;
	int rc = db_query(rq->db, NULL,
	                  "SELECT 1 FROM role_bindings WHERE tenant_id = $1 FOR UPDATE", 1, p);
	if (rc)
		return api_fail_db(rq, rc), -1;
	rc = db_query(rq->db, &r,
	              jsonx_is_uuid(name)
	                  ? "SELECT u.id, b.role FROM users u LEFT JOIN role_bindings b"
	                    " ON b.user_id = u.id AND b.tenant_id = $1 WHERE u.id = $2::uuid"
	                  : "SELECT u.id, b.role FROM users u LEFT JOIN role_bindings b"
	                    " ON b.user_id = u.id AND b.tenant_id = $1 WHERE u.name = $2",
	              2, p);
	if (rc) {
		PQclear(r);
		return api_fail_db(rq, rc), -1;
	}
	if (PQntuples(r) == 0) {
		PQclear(r);
		return api_fail(rq, ERR_USER_NOT_FOUND, "%s", err_info(ERR_USER_NOT_FOUND)->doc),
		       -1;
	}
	snprintf(uid, 37, "%s", db_get(r, 0, "id"));
	const char *cur = db_get(r, 0, "role");
	*current = cur ? role_parse_tenant(cur) : ROLE_NONE;
	PQclear(r);
	return 0;
}

/* RET 1 when the tenant has another owner than uid, 0 if not, <0 on error. */
static int other_owner_exists(api_req *rq, const char *uid)
{
	const char *p[] = {rq->scope.tenant_id, uid};
	PGresult *r;
	int rc = db_query(rq->db, &r,
	                  "SELECT 1 FROM role_bindings WHERE tenant_id = $1 AND role = 'owner'"
	                  " AND user_id <> $2",
	                  2, p);
	int n = rc ? rc : PQntuples(r) > 0;
	PQclear(r);
	return n;
}

/* Common checks of a change from current to next (ROLE_NONE: revoke). RET 0 or answered. */
static int member_change_allowed(api_req *rq, const char *uid, role current, role next)
{
	authz_subject s = {rq->who.platform, rq->scope.tenant_role, false, false};
	if ((next != ROLE_NONE && !authz_can_grant(&s, next)) ||
	    (current != ROLE_NONE && !authz_can_grant(&s, current)))
		return api_fail(rq, ERR_GRANT_NOT_ALLOWED,
		                "changing a %s role needs every permission it holds",
		                role_name(next != ROLE_NONE && !authz_can_grant(&s, next)
		                              ? next
		                              : current)),
		       -1;
	if (current == ROLE_OWNER && next != ROLE_OWNER) {
		int rc = other_owner_exists(rq, uid);
		if (rc < 0)
			return api_fail_db(rq, rc), -1;
		if (rc == 0)
			return api_fail(rq, ERR_LAST_OWNER,
			                "the tenant must keep at least one owner"),
			       -1;
	}
	return 0;
}

int h_member_put(api_req *rq)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"role", NULL};
	jsonx_only_fields(in, "", fields, &v);
	const char *rname = NULL;
	role next = ROLE_NONE;
	if (jsonx_get_str(in, "", "role", true, 32, &rname, &v) > 0 &&
	    (next = role_parse_tenant(rname)) == ROLE_NONE)
		verrs_add(&v, "/role", ERR_F_INVALID_VALUE,
		          "role must be owner, editor, viewer or auditor");
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	json_decref(in);

	char uid[37];
	role current;
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		return api_fail_db(rq, rc);
	if (member_lookup(rq, uid, &current) < 0 ||
	    member_change_allowed(rq, uid, current, next) < 0)
		return 0;
	const char *p[] = {uid, rq->scope.tenant_id, role_name(next), rq->who.user_id};
	json_t *m = NULL;
	rc = api_query_json(
	    rq,
	    "WITH b AS (INSERT INTO role_bindings (user_id, tenant_id, role, granted_by)"
	    " VALUES ($1, $2, $3, $4) ON CONFLICT (user_id, tenant_id)"
	    " WHERE tenant_id IS NOT NULL DO UPDATE SET role = EXCLUDED.role,"
	    " granted_by = EXCLUDED.granted_by RETURNING *)"
	    " SELECT row_to_json(x) FROM (SELECT b.user_id, u.name AS user, "
	    "b.role, " CLOCK_SQL_RFC3339(
	        "b.created_at") " AS created_at FROM b JOIN users u ON u.id = b.user_id) x",
	    4, p, &m);
	char res[160];
	snprintf(res, sizeof(res), "tenant/%s/member/%s", rq->scope.tenant_name, uid);
	json_t *d = json_pack("{s:s, s:s, s:s}", "user_id", uid, "from", role_name(current), "to",
	                      role_name(next));
	if (rc || (rc = api_audit(rq, 200, res, d)) || (rc = db_commit(rq->db))) {
		json_decref(d);
		json_decref(m);
		return api_fail_db(rq, rc);
	}
	json_decref(d);
	return api_reply(rq, 200, m);
}

int h_member_delete(api_req *rq)
{
	char uid[37];
	role current;
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		return api_fail_db(rq, rc);
	if (member_lookup(rq, uid, &current) < 0)
		return 0;
	if (current == ROLE_NONE)
		return api_fail(rq, ERR_MEMBER_NOT_FOUND, "%s",
		                err_info(ERR_MEMBER_NOT_FOUND)->doc);
	if (member_change_allowed(rq, uid, current, ROLE_NONE) < 0)
		return 0;
	const char *p[] = {uid, rq->scope.tenant_id};
	rc = db_query(rq->db, NULL,
	              "DELETE FROM role_bindings WHERE user_id = $1 AND tenant_id = $2", 2, p);
	char res[160];
	snprintf(res, sizeof(res), "tenant/%s/member/%s", rq->scope.tenant_name, uid);
	json_t *d = json_pack("{s:s, s:s}", "user_id", uid, "from", role_name(current));
	if (rc || (rc = api_audit(rq, 204, res, d)) || (rc = db_commit(rq->db))) {
		json_decref(d);
		return api_fail_db(rq, rc);
	}
	json_decref(d);
	return api_reply(rq, 204, NULL);
}
