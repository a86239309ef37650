/*
 * auth.c - who is calling, on what, and may they.
 */
#include "auth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "audit.h"
#include "log.h"
#include "ratelimit.h"
#include "server.h"
#include "token.h"

/* Run a query on rq's connection; a connection that went stale since it
 * was pooled (database restarted) is replaced once, transparently. */
static int auth_query(api_req *rq, PGresult **r, const char *sql, int n, const char *const *p)
{
	*r = NULL;
	for (int attempt = 0;; attempt++) {
		int rc = api_db(rq);
		if (rc)
			return rc;
		rc = db_query(rq->db, r, sql, n, p);
		if (rc != -ERR_DB_UNAVAILABLE || attempt > 0)
			return rc;
		PQclear(*r);
		*r = NULL;
		db_release(rq->srv->pool, rq->db);
		rq->db = NULL;
	}
}

static int fail_db(api_req *rq, PGresult *r, int rc)
{
	PQclear(r);
	api_fail_db(rq, rc);
	return -1;
}

static int authenticate(api_req *rq)
{
	const char *h = api_header(rq, "Authorization");
	if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
		api_fail(rq, ERR_UNAUTHENTICATED, "send Authorization: Bearer <token>");
		return -1;
	}
	const char *secret = h + 7;
	if (!token_well_formed(secret)) {
		api_fail(rq, ERR_UNAUTHENTICATED, "the token is not valid");
		return -1;
	}
	unsigned char hash[TOKEN_HASH_LEN];
	char hex[2 * TOKEN_HASH_LEN + 1];
	token_hash(secret, hash);
	hex_encode(hash, sizeof(hash), hex);
	const char *p[] = {hex};
	PGresult *r;
	int rc = auth_query(rq, &r,
			    "SELECT t.id, t.user_id, u.name, encode(t.hash, 'hex') AS hash,"
			    " t.revoked_at IS NOT NULL AS revoked, t.expires_at <= now() AS expired,"
			    " (t.last_used_at IS NULL OR t.last_used_at < now() - interval '60 s')"
			    "   AS stale,"
			    " (SELECT role FROM role_bindings b WHERE b.user_id = t.user_id"
			    "   AND b.tenant_id IS NULL) AS platform_role"
			    " FROM api_tokens t JOIN users u ON u.id = t.user_id"
			    " WHERE t.hash = decode($1, 'hex')",
			    1, p);
	if (rc)
		return fail_db(rq, r, rc);
	if (PQntuples(r) == 0 || strlen(db_get(r, 0, "hash")) != 2 * TOKEN_HASH_LEN ||
	    !token_equal_ct(db_get(r, 0, "hash"), hex, 2 * TOKEN_HASH_LEN)) {
		PQclear(r);
		api_fail(rq, ERR_UNAUTHENTICATED, "the token is not valid");
		return -1;
	}
	if (strcmp(db_get(r, 0, "revoked"), "t") == 0) {
		PQclear(r);
		api_fail(rq, ERR_TOKEN_REVOKED, "the token has been revoked");
		return -1;
	}
	if (strcmp(db_get(r, 0, "expired"), "t") == 0) {
		PQclear(r);
		api_fail(rq, ERR_TOKEN_EXPIRED, "the token has expired");
		return -1;
	}
	api_principal *w = &rq->who;
	w->authenticated = true;
	snprintf(w->token_id, sizeof(w->token_id), "%s", db_get(r, 0, "id"));
	snprintf(w->user_id, sizeof(w->user_id), "%s", db_get(r, 0, "user_id"));
	snprintf(w->user_name, sizeof(w->user_name), "%s", db_get(r, 0, "name"));
	const char *pr = db_get(r, 0, "platform_role");
	w->platform = pr ? role_parse_platform(pr) : ROLE_NONE;
	bool stale = strcmp(db_get(r, 0, "stale"), "t") == 0;
	PQclear(r);
	if (stale) {
		const char *q[] = {w->token_id};
		db_query(rq->db, NULL, "UPDATE api_tokens SET last_used_at = now() WHERE id = $1", 1,
			 q);
	}
	return 0;
}

static int rate_limit(api_req *rq)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int retry;
	if (ratelimit_take(rq->srv->rl, rq->who.token_id,
			   (double)now.tv_sec + (double)now.tv_nsec / 1e9, &retry))
		return 0;
	snprintf(rq->retry_after, sizeof(rq->retry_after), "%d", retry);
	api_fail(rq, ERR_RATE_LIMITED, "rate limit of %d requests/s exceeded", rq->cfg->rate_rps);
	return -1;
}

/* Copy row 0 of r's tenant columns into the scope. */
static void scope_set_tenant(api_scope *sc, const PGresult *r)
{
	snprintf(sc->tenant_id, sizeof(sc->tenant_id), "%s", db_get(r, 0, "tenant_id"));
	snprintf(sc->tenant_name, sizeof(sc->tenant_name), "%s", db_get(r, 0, "tenant_name"));
	const char *rname = db_get(r, 0, "role");
	sc->tenant_role = rname ? role_parse_tenant(rname) : ROLE_NONE;
}

/*
 * Resolve the route's scope. RET 1 found, 0 the named resource does not
 * exist (OUT: *missing, its not-found code), -1 answered (database error).
 */
static int resolve_scope(api_req *rq, err_code *missing)
{
	api_scope *sc = &rq->scope;
	PGresult *r = NULL;
	int rc;
	const char *v;
	switch (rq->rt->scope) {
	case SCOPE_PLATFORM:
		return 1;
	case SCOPE_TENANT: {
		*missing = ERR_TENANT_NOT_FOUND;
		v = route_param(&rq->params, "tenant");
		const char *p[] = {v, rq->who.user_id};
		rc = auth_query(rq, &r,
				jsonx_is_uuid(v)
					? "SELECT t.id AS tenant_id, t.name AS tenant_name, b.role"
					  " FROM tenants t LEFT JOIN role_bindings b ON b.tenant_id = t.id"
					  " AND b.user_id = $2 WHERE t.id = $1::uuid"
					: "SELECT t.id AS tenant_id, t.name AS tenant_name, b.role"
					  " FROM tenants t LEFT JOIN role_bindings b ON b.tenant_id = t.id"
					  " AND b.user_id = $2 WHERE t.name = $1",
				2, p);
		break;
	}
	case SCOPE_JOB: {
		*missing = ERR_JOB_NOT_FOUND;
		v = route_param(&rq->params, "job");
		if (!jsonx_is_uuid(v))
			return 0;
		const char *p[] = {v, rq->who.user_id};
		rc = auth_query(rq, &r,
				"SELECT j.id AS job_id, t.id AS tenant_id, t.name AS tenant_name, b.role"
				" FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
				" LEFT JOIN role_bindings b ON b.tenant_id = t.id AND b.user_id = $2"
				" WHERE j.id = $1::uuid",
				2, p);
		break;
	}
	case SCOPE_USER: {
		*missing = ERR_USER_NOT_FOUND;
		v = route_param(&rq->params, "user");
		const char *p[] = {v};
		rc = auth_query(rq, &r,
				jsonx_is_uuid(v) ? "SELECT id AS user_id FROM users WHERE id = $1::uuid"
						 : "SELECT id AS user_id FROM users WHERE name = $1",
				1, p);
		break;
	}
	case SCOPE_TOKEN: {
		*missing = ERR_TOKEN_NOT_FOUND;
		v = route_param(&rq->params, "token_id");
		if (!jsonx_is_uuid(v))
			return 0;
		const char *p[] = {v};
		rc = auth_query(rq, &r,
				"SELECT id AS token_id, user_id FROM api_tokens WHERE id = $1::uuid", 1,
				p);
		break;
	}
	default:
		return 0;
	}
	if (rc)
		return fail_db(rq, r, rc);
	if (PQntuples(r) == 0) {
		PQclear(r);
		return 0;
	}
	if (rq->rt->scope == SCOPE_TENANT || rq->rt->scope == SCOPE_JOB)
		scope_set_tenant(sc, r);
	if (rq->rt->scope == SCOPE_JOB)
		snprintf(sc->job_id, sizeof(sc->job_id), "%s", db_get(r, 0, "job_id"));
	if (rq->rt->scope == SCOPE_TOKEN)
		snprintf(sc->token_id, sizeof(sc->token_id), "%s", db_get(r, 0, "token_id"));
	if (rq->rt->scope == SCOPE_USER || rq->rt->scope == SCOPE_TOKEN) {
		snprintf(sc->user_id, sizeof(sc->user_id), "%s", db_get(r, 0, "user_id"));
		sc->self = strcmp(sc->user_id, rq->who.user_id) == 0;
	}
	PQclear(r);
	return 1;
}

/* Record a denial in its own statement: the request changes nothing else. */
static void audit_denial(api_req *rq, const char *why)
{
	if (api_db(rq) < 0)
		return;
	json_t *d = json_pack("{s:s, s:s, s:s, s:s}", "route", rq->rt->pattern, "method",
			      rq->method, "permission", perm_name(rq->rt->permission), "reason", why);
	audit_record a = {
		.actor_id = rq->who.authenticated ? rq->who.user_id : NULL,
		.actor_name = rq->who.user_name,
		.tenant_id = rq->scope.tenant_id[0] ? rq->scope.tenant_id : NULL,
		.action = "authz.deny",
		.resource = rq->path,
		.outcome = "denied",
		.status = rq->status,
		.request_id = rq->request_id,
		.client_addr = rq->client_addr,
		.detail = d,
	};
	if (audit_write(rq->db, &a) < 0)
		log_printf(LOG_ERROR, "could not write the audit record of a denial");
	json_decref(d);
	rq->audited = true;
}

int auth_check(api_req *rq)
{
	if (authenticate(rq) < 0) {
		if (rq->error != ERR_DB_UNAVAILABLE && rq->error != ERR_INTERNAL)
			audit_denial(rq, err_info(rq->error)->code);
		return -1;
	}
	if (rate_limit(rq) < 0)
		return -1;
	err_code missing = ERR_NOT_FOUND;
	int found = resolve_scope(rq, &missing);
	if (found < 0)
		return -1;
	if (found == 0) {
		api_fail(rq, missing, "%s", err_info(missing)->doc);
		return -1;
	}
	authz_subject s = {rq->who.platform, rq->scope.tenant_role, rq->scope.self};
	authz_result d = authz_decide(&s, rq->rt->permission, rq->rt->scope);
	if (d == AUTHZ_ALLOW)
		return 0;
	if (d == AUTHZ_DENY_HIDDEN) {
		api_fail(rq, missing, "%s", err_info(missing)->doc);
		audit_denial(rq, "no relation to the resource");
	} else {
		api_fail(rq, ERR_FORBIDDEN, "permission %s is required", perm_name(rq->rt->permission));
		audit_denial(rq, "missing permission");
	}
	return -1;
}
