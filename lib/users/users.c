/*
 * users.c - creation of users and API tokens.
 */
#include "clock.h"
#include "users.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "db.h"
#include "error.h"
#include "hex.h"
#include "jsonx.h"

int store_user_create(PGconn *c, const char *name, const char *email, role platform,
                      const char *granted_by, char id[UUID_STR_LEN + 1])
{
	PGresult *r;
	const char *p[] = {name, email ? email : ""};
	int rc =
	    db_query(c, &r, "INSERT INTO users (name, email) VALUES ($1, $2) RETURNING id", 2, p);
	if (rc) {
		if (rc == -ERR_CONFLICT)
			rc = -ERR_USER_EXISTS;
		PQclear(r);
		return rc;
	}
	snprintf(id, UUID_STR_LEN + 1, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if (platform == ROLE_NONE)
		return 0;
	const char *q[] = {id, role_name(platform), granted_by};
	return db_query(c, NULL,
	                "INSERT INTO role_bindings (user_id, tenant_id, role, granted_by)"
	                " VALUES ($1, NULL, $2, $3)",
	                3, q);
}

int store_token_room(PGconn *c, const char *user_id, int max_live)
{
	const char *p[] = {user_id};
	PGresult *r;
	int rc = db_query(c, &r, "SELECT 1 FROM users WHERE id = $1 FOR UPDATE", 1, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_USER_NOT_FOUND;
	PQclear(r);
	if (rc)
		return rc;
	/* a statement of its own: its snapshot is taken once the lock is held */
	rc = db_query(c, &r,
	              "SELECT count(*) FROM api_tokens WHERE user_id = $1"
	              " AND revoked_at IS NULL AND expires_at > now()",
	              1, p);
	if (rc == 0 && atoll(PQgetvalue(r, 0, 0)) >= max_live)
		rc = -ERR_TOKEN_LIMIT_REACHED;
	PQclear(r);
	return rc;
}

int store_token_create(PGconn *c, const char *user_id, const char *parent_id, const char *name,
                       int ttl_days, store_token *t)
{
	unsigned char hash[TOKEN_HASH_LEN];
	char hex[2 * TOKEN_HASH_LEN + 1], days[16];
	if (token_generate(t->secret) < 0)
		return -ERR_INTERNAL;
	token_hash(t->secret, hash);
	hex_encode(hash, sizeof(hash), hex);
	snprintf(days, sizeof(days), "%d", ttl_days);
	const char *p[] = {user_id, name ? name : "", hex, days, parent_id};
	PGresult *r;
	/* the expiry is cut to the parent's by the table's trigger (0012) */
	int rc =
	    db_query(c, &r,
	             "INSERT INTO api_tokens (user_id, name, hash, expires_at, parent_id)"
	             " VALUES ($1, $2, decode($3, 'hex'), now() + make_interval(days => $4::int),"
	             " $5::uuid)"
	             " RETURNING id,"
	             " " CLOCK_SQL_RFC3339("expires_at"),
	             5, p);
	if (rc == 0) {
		snprintf(t->id, sizeof(t->id), "%s", PQgetvalue(r, 0, 0));
		snprintf(t->expires_at, sizeof(t->expires_at), "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return rc;
}

int store_bootstrap_admin(PGconn *c, const char *name, int ttl_days, store_token *t)
{
	PGresult *r = NULL;
	char id[UUID_STR_LEN + 1];
	int rc = db_begin(c);
	if (rc)
		return rc;
	/* serialise concurrent bootstraps; key is "bootstrp" as a number */
	if ((rc = db_query(c, NULL, "SELECT pg_advisory_xact_lock(7093010356958523504)", 0, NULL)))
		goto out;
	if ((rc = db_query(c, &r,
	                   "SELECT 1 FROM role_bindings WHERE tenant_id IS NULL AND role = 'admin'",
	                   0, NULL)))
		goto out;
	if (PQntuples(r) > 0) {
		rc = -ERR_ADMIN_EXISTS;
		goto out;
	}
	PQclear(r);
	const char *p[] = {name};
	if ((rc = db_query(c, &r, "SELECT id FROM users WHERE name = $1", 1, p)))
		goto out;
	if (PQntuples(r) > 0) {
		snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
		const char *q[] = {id};
		rc = db_query(
		    c, NULL,
		    "INSERT INTO role_bindings (user_id, tenant_id, role)"
		    " VALUES ($1, NULL, 'admin')"
		    " ON CONFLICT (user_id) WHERE tenant_id IS NULL DO UPDATE SET role = 'admin'",
		    1, q);
	} else {
		rc = store_user_create(c, name, "", ROLE_ADMIN, NULL, id);
	}
	if (rc || (rc = store_token_create(c, id, NULL, "bootstrap", ttl_days, t)))
		goto out;
	char resource[64];
	snprintf(resource, sizeof(resource), "user/%s", id);
	json_t *d = json_pack("{s:s}", "token_id", t->id);
	audit_record a = {.actor_id = NULL,
	                  .actor_name = "bootstrap",
	                  .action = "platform.bootstrap",
	                  .resource = resource,
	                  .outcome = "success",
	                  .status = 201,
	                  .client_addr = "local",
	                  .detail = d};
	rc = audit_write(c, &a);
	json_decref(d);
	if (rc)
		goto out;
	rc = db_commit(c);
out:
	PQclear(r);
	if (rc)
		db_rollback(c);
	return rc;
}

/* The user to issue a token to, by id or by name, its row locked. */
static const char sql_issue_by_id[] =
    "SELECT u.id, u.name, b.role = 'admin' AS admin, session_user FROM users u"
    " LEFT JOIN role_bindings b ON b.user_id = u.id AND b.tenant_id IS NULL"
    " WHERE u.id = $1::uuid FOR UPDATE OF u";
static const char sql_issue_by_name[] =
    "SELECT u.id, u.name, b.role = 'admin' AS admin, session_user FROM users u"
    " LEFT JOIN role_bindings b ON b.user_id = u.id AND b.tenant_id IS NULL"
    " WHERE u.name = $1 FOR UPDATE OF u";

int store_token_issue(PGconn *c, const char *user, int ttl_days, int max_live, const char *os_user,
                      store_token *t, char name[64])
{
	PGresult *r = NULL;
	char id[UUID_STR_LEN + 1], db_role[128];
	int rc = db_begin(c);
	if (rc)
		return rc;
	const char *p[] = {user};
	if ((rc = db_query(c, &r, jsonx_is_uuid(user) ? sql_issue_by_id : sql_issue_by_name, 1, p)))
		goto out;
	if (PQntuples(r) != 1) {
		rc = -ERR_USER_NOT_FOUND;
		goto out;
	}
	snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
	snprintf(name, 64, "%s", PQgetvalue(r, 0, 1));
	snprintf(db_role, sizeof(db_role), "%s", PQgetvalue(r, 0, 3));
	if (strcmp(PQgetvalue(r, 0, 2), "t") != 0) {
		rc = -ERR_NOT_PLATFORM_ADMIN;
		goto out;
	}
	if ((rc = store_token_room(c, id, max_live)) ||
	    (rc = store_token_create(c, id, NULL, "issued by the operator", ttl_days, t)))
		goto out;
	char resource[64];
	snprintf(resource, sizeof(resource), "token/%s", t->id);
	json_t *d =
	    json_pack("{s:s, s:s, s:s, s:s, s:s}", "user_id", id, "user", name, "os_user",
	              os_user ? os_user : "", "db_role", db_role, "expires_at", t->expires_at);
	audit_record a = {.actor_id = NULL,
	                  .actor_name = "operator",
	                  .action = "token.issue",
	                  .resource = resource,
	                  .outcome = "success",
	                  .status = 201,
	                  .client_addr = "local",
	                  .detail = d};
	rc = d ? audit_write(c, &a) : -ERR_INTERNAL;
	json_decref(d);
	if (rc)
		goto out;
	rc = db_commit(c);
out:
	PQclear(r);
	if (rc) {
		db_rollback(c);
		explicit_bzero(t->secret, sizeof(t->secret));
	}
	return rc;
}
