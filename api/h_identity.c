/*
 * h_identity.c - the Unix user a tenant's attempts run as
 * (docs/identity.md): shown to the tenant, and recorded by a platform
 * admin for a tenant that has none yet (a mapping to a user of the
 * directory service, instead of one from the pool). A tenant's user is
 * for good: its files are that user's.
 */
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "handlers.h"
#include "identity.h"
#include "server.h"
#include "tenant_dirs.h"

#define IDENTITY_SQL                                                                               \
	"SELECT row_to_json(x) FROM (SELECT i.uid, i.gid, i.source, " CLOCK_SQL_RFC3339(           \
	    "i.assigned_at") " AS assigned_at FROM tenant_identities i WHERE i.tenant_id = $1) x"

/* The row of the scope's tenant, with its user's name on this host. RET 0 answered. */
static int reply_identity(api_req *rq, int status)
{
	const char *p[] = {rq->scope.tenant_id};
	json_t *out = NULL;
	int rc = api_query_json(rq, IDENTITY_SQL, 1, p, &out);
	if (rc)
		return api_fail_db(rq, rc);
	if (!out)
		return api_fail(rq, ERR_IDENTITY_NOT_FOUND,
		                "the tenant has no Unix user yet: it gets one from the pool on its "
		                "first need, or a platform admin records one");
	tenant_identity id = {.uid = (uid_t)json_integer_value(json_object_get(out, "uid")),
	                      .gid = (gid_t)json_integer_value(json_object_get(out, "gid"))};
	char why[256];
	bool usable = identity_usable(&id, why, sizeof(why)) == 0;
	json_object_set_new(out, "user", usable ? json_string(id.user) : json_null());
	json_object_set_new(out, "usable", json_boolean(usable));
	return api_reply(rq, status, out);
}

int h_identity_get(api_req *rq)
{
	int rc = api_db(rq);
	return rc ? api_fail_db(rq, rc) : reply_identity(rq, 200);
}

/* The user named in the body, checked on this host. RET 0 with *id, or answered (< 0). */
static int identity_body(api_req *rq, tenant_identity *id)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return -1;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"user", NULL};
	jsonx_only_fields(in, "", fields, &v);
	const char *user = NULL;
	char why[256] = "";
	if (jsonx_get_str(in, "", "user", true, 32, &user, &v) > 0) {
		struct passwd pw, *found = NULL;
		char buf[4096];
		memset(id, 0, sizeof(*id));
		if (getpwnam_r(user, &pw, buf, sizeof(buf), &found) != 0 || !found)
			verrs_add(&v, "/user", ERR_F_INVALID_VALUE,
			          "no Unix user \"%s\" on this host", user);
		else {
			id->uid = pw.pw_uid;
			id->gid = pw.pw_gid;
			if (identity_usable(id, why, sizeof(why)) < 0)
				verrs_add(&v, "/user", ERR_F_INVALID_VALUE, "%s", why);
		}
	}
	json_decref(in);
	if (verrs_count(&v))
		return api_fail_validation(rq, &v), -1;
	verrs_release(&v);
	return 0;
}

/*
 * PUT /v1/tenants/{tenant}/identity {"user": NAME}: the tenant's attempts
 * run as NAME (its uid and primary group on this host, which must be the
 * same on every node). The same user again is a no-op; another one, or a
 * user another tenant has, is a conflict.
 */
int h_identity_put(api_req *rq)
{
	tenant_identity id;
	if (identity_body(rq, &id) < 0)
		return 0;
	char u[16], g[16];
	snprintf(u, sizeof(u), "%u", (unsigned)id.uid);
	snprintf(g, sizeof(g), "%u", (unsigned)id.gid);
	const char *p[] = {rq->scope.tenant_id, u, g};
	PGresult *r = NULL;
	int rc = api_db(rq);
	if (rc == 0 && (rc = db_begin(rq->db)) == 0)
		rc = db_query(rq->db, &r,
		              "SELECT (SELECT uid FROM tenant_identities WHERE tenant_id = $1),"
		              " EXISTS (SELECT 1 FROM tenant_identities WHERE uid = $2::int"
		              " AND tenant_id <> $1)",
		              2, p);
	bool same = false;
	if (rc == 0 && !PQgetisnull(r, 0, 0)) {
		same = strcmp(PQgetvalue(r, 0, 0), u) == 0;
		if (!same)
			rc = -ERR_IDENTITY_EXISTS;
	} else if (rc == 0 && strcmp(PQgetvalue(r, 0, 1), "t") == 0)
		rc = -ERR_IDENTITY_TAKEN;
	PQclear(r);
	if (rc == 0 && !same)
		rc = db_query(rq->db, NULL,
		              "INSERT INTO tenant_identities (tenant_id, uid, gid, source)"
		              " VALUES ($1, $2::int, $3::int, 'admin')",
		              3, p);
	char res[96];
	snprintf(res, sizeof(res), "tenant/%s", rq->scope.tenant_name);
	if (same) {
		if (rc == 0)
			rc = db_commit(rq->db);
	} else
		rc = api_audit_commit(rq, rc, 200, res,
		                      json_pack("{s:i, s:i, s:s, s:s}", "uid", (int)id.uid, "gid",
		                                (int)id.gid, "user", id.user, "source", "admin"));
	if (rc == -ERR_IDENTITY_EXISTS)
		return api_fail(
		    rq, rc,
		    "the tenant already runs as another Unix user; a tenant's user is for "
		    "good");
	if (rc == -ERR_IDENTITY_TAKEN)
		return api_fail(rq, rc, "the Unix user \"%s\" is another tenant's", id.user);
	if (rc)
		return api_fail_db(rq, rc);
	/* its directories, its user's, now (the scheduler makes them too before it dispatches) */
	char why[1024];
	tenant_identity made;
	tenant_dirs_prepare(rq, rq->scope.tenant_id, &made, why, sizeof(why));
	return reply_identity(rq, 200);
}
