/*
 * auth.c - who is calling, on what, and may they.
 */
#include "auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "audit.h"
#include "authfail.h"
#include "clock.h"
#include "hex.h"
#include "jobdoc.h"
#include "log.h"
#include "ratelimit.h"
#include "readcache.h"
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

/*
 * One round trip answers both "who is calling" and "what does the route
 * touch": the token's row joined with the scope's row (tenant, job, user
 * or token, by name or id) and the caller's role there. $1 is the token's
 * hash, $2 the path's placeholder value.
 */
#define AUTH_COLS                                                                                  \
	"SELECT t.id AS token_id, t.user_id, u.name AS user_name,"                                 \
	" encode(t.hash, 'hex') AS hash, t.revoked_at IS NOT NULL AS revoked,"                     \
	" t.expires_at <= now() AS expired,"                                                       \
	" (t.last_used_at IS NULL OR t.last_used_at < now() - interval '60 s') AS stale,"          \
	" (SELECT role FROM role_bindings pb WHERE pb.user_id = t.user_id"                         \
	"   AND pb.tenant_id IS NULL) AS platform_role"
#define AUTH_FROM  " FROM api_tokens t JOIN users u ON u.id = t.user_id"
#define AUTH_WHERE " WHERE t.hash = decode($1, 'hex')"
#define TENANT_SCOPE(cond)                                                                         \
	AUTH_COLS                                                                                  \
	", s.*" AUTH_FROM                                                                          \
	" LEFT JOIN LATERAL (SELECT tn.id AS s_tenant_id, tn.name AS s_tenant_name,"               \
	" b.role AS s_role FROM tenants tn LEFT JOIN role_bindings b ON b.tenant_id = tn.id"       \
	" AND b.user_id = t.user_id WHERE " cond ") s ON true" AUTH_WHERE

static const char sql_platform[] = AUTH_COLS AUTH_FROM AUTH_WHERE " AND $2::text IS NULL";
static const char sql_tenant_id[] = TENANT_SCOPE("tn.id = $2::uuid");
static const char sql_tenant_name[] = TENANT_SCOPE("tn.name = $2");
/* The job's scope; doc: more columns from the job row j and its tenant jt. */
#define JOB_SCOPE(doc)                                                                             \
	AUTH_COLS ", s.*" AUTH_FROM " LEFT JOIN LATERAL (SELECT j.id AS s_job_id,"                 \
	          " jt.id AS s_tenant_id, jt.name AS s_tenant_name, b.role AS s_role" doc          \
	          " FROM jobs j JOIN tenants jt ON jt.id = j.tenant_id LEFT JOIN role_bindings b"  \
	          " ON b.tenant_id = jt.id AND b.user_id = t.user_id WHERE j.id = $2::uuid) s"     \
	          " ON true" AUTH_WHERE
static const char sql_job[] = JOB_SCOPE("");
/* ROUTE_JOB_DOC: the job's document too, read in the same statement, and
 * the token's expiry for the read cache */
static const char sql_job_doc[] =
    JOB_SCOPE(", " JOB_DOC " AS s_doc,"
              " extract(epoch FROM t.expires_at)::float8 AS s_expires");
static const char sql_user_id[] =
    AUTH_COLS ", s.*" AUTH_FROM " LEFT JOIN LATERAL (SELECT su.id AS s_user_id FROM users su"
              " WHERE su.id = $2::uuid) s ON true" AUTH_WHERE;
static const char sql_user_name[] =
    AUTH_COLS ", s.*" AUTH_FROM " LEFT JOIN LATERAL (SELECT su.id AS s_user_id FROM users su"
              " WHERE su.name = $2) s ON true" AUTH_WHERE;
static const char sql_checkpoint[] =
    AUTH_COLS ", s.*" AUTH_FROM " LEFT JOIN LATERAL (SELECT c.id AS s_checkpoint_id,"
              " j.id AS s_job_id, tn.id AS s_tenant_id, tn.name AS s_tenant_name,"
              " b.role AS s_role FROM checkpoints c JOIN jobs j ON j.id = c.job_id"
              " JOIN tenants tn ON tn.id = j.tenant_id LEFT JOIN role_bindings b"
              " ON b.tenant_id = tn.id AND b.user_id = t.user_id WHERE c.id = $2::uuid) s"
              " ON true" AUTH_WHERE;
static const char sql_token[] = AUTH_COLS
    ", s.*" AUTH_FROM " LEFT JOIN LATERAL (SELECT st.id AS s_token_id,"
    " st.user_id AS s_user_id FROM api_tokens st WHERE st.id = $2::uuid) s ON true" AUTH_WHERE;

/*
 * Pick the statement for the route's scope. OUT: *value, the placeholder
 * value passed as $2 (NULL for platform routes), *missing, the code a
 * missing resource answers. RET the SQL, or NULL when the value cannot
 * name anything (a job id that is not a UUID): then only the token is read.
 */
static const char *scope_sql(api_req *rq, const char **value, err_code *missing)
{
	*value = NULL;
	switch (rq->rt->scope) {
	case SCOPE_TENANT:
		*missing = ERR_TENANT_NOT_FOUND;
		*value = route_param(&rq->params, "tenant");
		return jsonx_is_uuid(*value) ? sql_tenant_id : sql_tenant_name;
	case SCOPE_JOB:
		*missing = ERR_JOB_NOT_FOUND;
		*value = route_param(&rq->params, "job");
		if (!jsonx_is_uuid(*value))
			return NULL;
		return rq->rt->flags & ROUTE_JOB_DOC ? sql_job_doc : sql_job;
	case SCOPE_USER:
		*missing = ERR_USER_NOT_FOUND;
		*value = route_param(&rq->params, "user");
		return jsonx_is_uuid(*value) ? sql_user_id : sql_user_name;
	case SCOPE_TOKEN:
		*missing = ERR_TOKEN_NOT_FOUND;
		*value = route_param(&rq->params, "token_id");
		return jsonx_is_uuid(*value) ? sql_token : NULL;
	case SCOPE_CHECKPOINT:
		*missing = ERR_CHECKPOINT_NOT_FOUND;
		*value = route_param(&rq->params, "checkpoint");
		return jsonx_is_uuid(*value) ? sql_checkpoint : NULL;
	default:
		*missing = ERR_NOT_FOUND;
		return sql_platform;
	}
}

static void copy_col(char *dst, size_t n, const PGresult *r, const char *col)
{
	const char *v = db_get(r, 0, col);
	snprintf(dst, n, "%s", v ? v : "");
}

/* Fill rq->scope from the row. RET true when the scope's resource exists. */
static bool scope_from_row(api_req *rq, const PGresult *r)
{
	api_scope *sc = &rq->scope;
	copy_col(sc->tenant_id, sizeof(sc->tenant_id), r, "s_tenant_id");
	copy_col(sc->tenant_name, sizeof(sc->tenant_name), r, "s_tenant_name");
	copy_col(sc->job_id, sizeof(sc->job_id), r, "s_job_id");
	copy_col(sc->user_id, sizeof(sc->user_id), r, "s_user_id");
	copy_col(sc->token_id, sizeof(sc->token_id), r, "s_token_id");
	copy_col(sc->checkpoint_id, sizeof(sc->checkpoint_id), r, "s_checkpoint_id");
	const char *rname = db_get(r, 0, "s_role");
	sc->tenant_role = rname ? role_parse_tenant(rname) : ROLE_NONE;
	sc->self = sc->user_id[0] && strcmp(sc->user_id, rq->who.user_id) == 0;
	switch (rq->rt->scope) {
	case SCOPE_TENANT:
		return sc->tenant_id[0] != '\0';
	case SCOPE_JOB:
		return sc->job_id[0] != '\0';
	case SCOPE_USER:
		return sc->user_id[0] != '\0';
	case SCOPE_TOKEN:
		return sc->token_id[0] != '\0';
	case SCOPE_CHECKPOINT:
		return sc->checkpoint_id[0] != '\0';
	default:
		return true;
	}
}

/*
 * ROUTE_JOB_DOC: keep the job's document from the row as the answer's body
 * (rq->raw_owned); the handler sends it once the caller may read it. When
 * memory runs out the handler reads the document itself.
 */
static void job_doc_take(api_req *rq, const PGresult *r)
{
	int f = PQfnumber(r, "s_doc");
	if (f < 0 || PQgetisnull(r, 0, f))
		return;
	size_t len = (size_t)PQgetlength(r, 0, f);
	rq->raw_owned = malloc(len + 1);
	if (!rq->raw_owned)
		return;
	memcpy(rq->raw_owned, PQgetvalue(r, 0, f), len + 1);
	rq->raw_len = len;
}

/*
 * A job's answer read with the token (ROUTE_JOB_DOC), to keep in the read
 * cache once the caller may read it: the cache's generation before the
 * statement, the token's hash and its expiry.
 */
typedef struct doc_read {
	bool keep;
	uint64_t gen;
	char token_hash[2 * TOKEN_HASH_LEN + 1];
	double token_expires;
} doc_read;

/* ROUTE_JOB_DOC: the answer from the read cache. RET true on a hit. */
static bool job_doc_cached(api_req *rq, const char *hex, const char *job_id)
{
	char *doc;
	size_t len;
	if (!readcache_get(rq->srv->reads, hex, job_id, &rq->who, &rq->scope, &doc, &len))
		return false;
	rq->raw_owned = doc;
	rq->raw_len = len;
	rq->cached = true;
	return true;
}

/*
 * Authenticate and resolve the scope in one statement, or, for a job's
 * answer, from the read cache.
 * OUT: *found, whether the scope's resource exists; *dr, what to keep of a
 * job's answer read from the database. RET 0, or -1 answered.
 */
static int authenticate(api_req *rq, bool *found, err_code *missing, doc_read *dr)
{
	if (rq->cached) { /* auth_cached() found the answer */
		*found = true;
		return 0;
	}
	const char *h = api_header(rq, "Authorization");
	if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
		api_fail(rq, ERR_UNAUTHENTICATED, "send Authorization: Bearer <token>");
		return -1;
	}
	const char *secret = h + 7;
	if (attempt_credential_well_formed(secret)) {
		api_fail(rq, ERR_UNAUTHENTICATED,
		         "an attempt credential is only valid on its attempt's routes");
		return -1;
	}
	if (!token_well_formed(secret)) {
		api_fail(rq, ERR_UNAUTHENTICATED, "the token is not valid");
		return -1;
	}
	unsigned char hash[TOKEN_HASH_LEN];
	char hex[2 * TOKEN_HASH_LEN + 1];
	token_hash(secret, hash);
	hex_encode(hash, sizeof(hash), hex);
	const char *value;
	const char *sql = scope_sql(rq, &value, missing);
	bool nameable = sql != NULL;
	if (sql == sql_job_doc) {
		if (job_doc_cached(rq, hex, value)) {
			*found = true;
			return 0;
		}
		dr->gen = readcache_gen(rq->srv->reads);
	}
	const char *p[] = {hex, nameable ? value : NULL};
	PGresult *r;
	int rc = auth_query(rq, &r, nameable ? sql : sql_platform, 2, p);
	if (rc)
		return fail_db(rq, r, rc);
	if (PQntuples(r) == 0 || strlen(db_get(r, 0, "hash")) != 2 * TOKEN_HASH_LEN ||
	    !token_equal_ct(db_get(r, 0, "hash"), hex, 2 * TOKEN_HASH_LEN)) {
		PQclear(r);
		api_fail(rq, ERR_UNAUTHENTICATED, "the token is not valid");
		return -1;
	}
	/* a revoked or expired token still names its user in the record of the denial */
	copy_col(rq->who.user_id, sizeof(rq->who.user_id), r, "user_id");
	copy_col(rq->who.user_name, sizeof(rq->who.user_name), r, "user_name");
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
	copy_col(w->token_id, sizeof(w->token_id), r, "token_id");
	copy_col(w->user_id, sizeof(w->user_id), r, "user_id");
	copy_col(w->user_name, sizeof(w->user_name), r, "user_name");
	const char *pr = db_get(r, 0, "platform_role");
	w->platform = pr ? role_parse_platform(pr) : ROLE_NONE;
	*found = nameable && scope_from_row(rq, r);
	if (*found && (rq->rt->flags & ROUTE_JOB_DOC)) {
		job_doc_take(rq, r);
		const char *exp = db_get(r, 0, "s_expires");
		dr->keep = rq->raw_owned && exp;
		dr->token_expires = exp ? strtod(exp, NULL) : 0;
		memcpy(dr->token_hash, hex, sizeof(dr->token_hash));
	}
	bool stale = strcmp(db_get(r, 0, "stale"), "t") == 0;
	PQclear(r);
	if (stale) {
		const char *q[] = {w->token_id};
		db_query(rq->db, NULL, "UPDATE api_tokens SET last_used_at = now() WHERE id = $1",
		         1, q);
	}
	return 0;
}

/*
 * The worker runtime of a job attempt: its credential's row, live or not,
 * and whether it is the attempt the path names. $1 the credential's hash,
 * $2 the path's attempt id. A credential is over when its attempt ended,
 * when it expired, or when its job is in a final state (job_state_final():
 * succeeded, failed, cancelled), whatever the attempt's row still says.
 */
static const char sql_attempt[] =
    "SELECT a.id, a.job_id, j.tenant_id, tn.name AS tenant_name,"
    " encode(a.credential, 'hex') AS hash, a.state = 'ended' OR a.expires_at <= now() AS over,"
    " j.state IN ('succeeded', 'failed', 'cancelled') AS job_over, j.state AS job_state,"
    " a.id = $2::uuid AS mine FROM job_attempts a JOIN jobs j ON j.id = a.job_id"
    " JOIN tenants tn ON tn.id = j.tenant_id WHERE a.credential = decode($1, 'hex')";

static int authenticate_attempt(api_req *rq, bool *mine)
{
	const char *h = api_header(rq, "Authorization");
	const char *secret = h && strncasecmp(h, "Bearer ", 7) == 0 ? h + 7 : NULL;
	if (!secret || !attempt_credential_well_formed(secret)) {
		api_fail(rq, ERR_UNAUTHENTICATED,
		         "send Authorization: Bearer <attempt credential>: this route is the "
		         "worker runtime's");
		return -1;
	}
	unsigned char hash[TOKEN_HASH_LEN];
	char hex[2 * TOKEN_HASH_LEN + 1];
	token_hash(secret, hash);
	hex_encode(hash, sizeof(hash), hex);
	const char *attempt = route_param(&rq->params, "attempt");
	const char *p[] = {hex, jsonx_is_uuid(attempt) ? attempt : NULL};
	PGresult *r;
	int rc = auth_query(rq, &r, sql_attempt, 2, p);
	if (rc)
		return fail_db(rq, r, rc);
	if (PQntuples(r) == 0 || !token_equal_ct(db_get(r, 0, "hash"), hex, 2 * TOKEN_HASH_LEN)) {
		PQclear(r);
		api_fail(rq, ERR_UNAUTHENTICATED, "the attempt credential is not valid");
		return -1;
	}
	if (strcmp(db_get(r, 0, "over"), "t") == 0) {
		PQclear(r);
		api_fail(rq, ERR_ATTEMPT_ENDED, "the attempt has ended or its credential expired");
		return -1;
	}
	if (strcmp(db_get(r, 0, "job_over"), "t") == 0) {
		api_fail(rq, ERR_ATTEMPT_ENDED, "the attempt's job has ended (%s)",
		         db_get(r, 0, "job_state"));
		PQclear(r);
		return -1;
	}
	api_principal *w = &rq->who;
	w->authenticated = true;
	copy_col(w->attempt_id, sizeof(w->attempt_id), r, "id");
	snprintf(w->user_name, sizeof(w->user_name), "attempt %s", w->attempt_id);
	snprintf(w->token_id, sizeof(w->token_id), "%s", w->attempt_id); /* rate-limit key */
	w->platform = ROLE_NONE;
	const char *m = db_get(r, 0, "mine");
	*mine = m && strcmp(m, "t") == 0;
	if (*mine) {
		api_scope *sc = &rq->scope;
		copy_col(sc->attempt_id, sizeof(sc->attempt_id), r, "id");
		copy_col(sc->job_id, sizeof(sc->job_id), r, "job_id");
		copy_col(sc->tenant_id, sizeof(sc->tenant_id), r, "tenant_id");
		copy_col(sc->tenant_name, sizeof(sc->tenant_name), r, "tenant_name");
	}
	PQclear(r);
	return 0;
}

static int rate_limit(api_req *rq)
{
	int retry;
	/* the token's bucket, and its user's over all of the user's tokens (server.c) */
	const char *keys[] = {rq->who.token_id, rq->who.user_id[0] ? rq->who.user_id : NULL, NULL};
	int full = ratelimit_take(rq->srv->rl, keys, clock_mono_s(), &retry);
	if (full == RATELIMIT_ALLOWED)
		return 0;
	snprintf(rq->retry_after, sizeof(rq->retry_after), "%d", retry);
	api_fail(rq, ERR_RATE_LIMITED, "rate limit of %d requests/s per %s exceeded",
	         full ? rq->cfg->rate_user_rps : rq->cfg->rate_rps, full ? "user" : "token");
	return -1;
}

/*
 * Before any token is looked up: take one request from the bucket of the
 * client's address (class 2, server.c), which only failed authentications
 * keep (address_give() returns the others). RET 0, or -1 answered 429.
 */
static int address_take(api_req *rq, const char *addr)
{
	int retry;
	const char *keys[] = {NULL, NULL, addr};
	if (ratelimit_take(rq->srv->rl, keys, clock_mono_s(), &retry) == RATELIMIT_ALLOWED)
		return 0;
	snprintf(rq->retry_after, sizeof(rq->retry_after), "%d", retry);
	api_fail(rq, ERR_RATE_LIMITED,
	         "rate limit of %d failed authentications/s per client address exceeded",
	         rq->cfg->rate_anon_rps);
	return -1;
}

static void address_give(api_req *rq, const char *addr)
{
	const char *keys[] = {NULL, NULL, addr};
	ratelimit_give(rq->srv->rl, keys);
}

/*
 * Record a denial in its own statement: the request changes nothing else.
 * count: the failed authentications the record stands for (authfail.h),
 * or 0 for a refusal of an authenticated caller.
 */
static void audit_denial(api_req *rq, const char *why, int count)
{
	if (api_db(rq) < 0)
		return;
	json_t *d =
	    json_pack("{s:s, s:s, s:s, s:s}", "route", rq->rt->pattern, "method", rq->method,
	              "permission", perm_name(rq->rt->permission), "reason", why);
	if (d && count)
		json_object_set_new(d, "count", json_integer(count));
	audit_record a = api_audit_record(rq, "authz.deny", "denied", rq->status);
	a.detail = d;
	if (api_audit_write(rq, &a) < 0)
		log_printf(LOG_ERROR, "could not write the audit record of a denial");
	json_decref(d);
	rq->audited = true;
}

/*
 * Authentication failed (rq answered): a failure keeps what it took from
 * its address's bucket and is recorded at once when it opens its key's
 * window, else counted into it (authfail.h). A database outage is no
 * failure of the caller's: its request is given back, and not recorded.
 */
static void auth_failed(api_req *rq, const char *addr)
{
	if (rq->error == ERR_DB_UNAVAILABLE || rq->error == ERR_INTERNAL) {
		address_give(rq, addr);
		return;
	}
	authfail_event e = {
	    .addr = addr,
	    .user_id = rq->who.user_id[0] ? rq->who.user_id : NULL,
	    .user_name = rq->who.user_name[0] ? rq->who.user_name : NULL,
	    .rt = rq->rt,
	    .code = rq->error,
	    .request_id = rq->request_id,
	};
	authfail_batch due;
	bool has_due;
	bool first = authfail_note(rq->srv->authfail, &e, clock_mono_s(), &due, &has_due);
	if (has_due && api_db(rq) == 0)
		authfail_write(rq->srv->authfail, rq->db, &due);
	if (first)
		audit_denial(rq, err_info(rq->error)->code, 1);
	rq->audited = true;
}

/* Attempt routes: only the credential of the attempt the path names. */
static int attempt_check(api_req *rq, const char *addr)
{
	bool mine = false;
	if (authenticate_attempt(rq, &mine) < 0) {
		auth_failed(rq, addr);
		return -1;
	}
	address_give(rq, addr);
	if (rate_limit(rq) < 0)
		return -1;
	authz_subject s = {ROLE_NONE, ROLE_NONE, false, mine};
	if (authz_decide(&s, rq->rt->permission, rq->rt->scope) == AUTHZ_ALLOW)
		return 0;
	api_fail(rq, ERR_ATTEMPT_NOT_FOUND, "%s", err_info(ERR_ATTEMPT_NOT_FOUND)->doc);
	audit_denial(rq, "another attempt's credential", 0);
	return -1;
}

/* The non-attempt routes: token, scope, rate limit, decision. RET 0 or -1 answered. */
static int token_check(api_req *rq, const char *addr)
{
	bool found = false;
	err_code missing = ERR_NOT_FOUND;
	doc_read dr = {0};
	if (authenticate(rq, &found, &missing, &dr) < 0) {
		auth_failed(rq, addr);
		return -1;
	}
	address_give(rq, addr);
	if (rate_limit(rq) < 0)
		return -1;
	if (!found) {
		api_fail(rq, missing, "%s", err_info(missing)->doc);
		return -1;
	}
	authz_subject s = {rq->who.platform, rq->scope.tenant_role, rq->scope.self, false};
	authz_result d = authz_decide(&s, rq->rt->permission, rq->rt->scope);
	if (d == AUTHZ_ALLOW) {
		if (dr.keep)
			readcache_put(rq->srv->reads, dr.gen, dr.token_hash, &rq->who, &rq->scope,
			              dr.token_expires, rq->raw_owned, rq->raw_len);
		return 0;
	}
	if (d == AUTHZ_DENY_HIDDEN) {
		api_fail(rq, missing, "%s", err_info(missing)->doc);
		audit_denial(rq, "no relation to the resource", 0);
	} else {
		api_fail(rq, ERR_FORBIDDEN, "permission %s is required",
		         perm_name(rq->rt->permission));
		audit_denial(rq, "missing permission", 0);
	}
	return -1;
}

bool auth_cached(api_req *rq)
{
	if (!(rq->rt->flags & ROUTE_JOB_DOC))
		return false;
	const char *h = api_header(rq, "Authorization");
	if (!h || strncasecmp(h, "Bearer ", 7) != 0 || !token_well_formed(h + 7))
		return false;
	const char *value;
	err_code missing;
	if (scope_sql(rq, &value, &missing) != sql_job_doc)
		return false;
	unsigned char hash[TOKEN_HASH_LEN];
	char hex[2 * TOKEN_HASH_LEN + 1];
	token_hash(h + 7, hash);
	hex_encode(hash, sizeof(hash), hex);
	return job_doc_cached(rq, hex, value);
}

int auth_check(api_req *rq)
{
	char addr[64];
	authfail_addr_key(rq->client_addr, addr);
	if (address_take(rq, addr) < 0)
		return -1;
	if (rq->rt->scope == SCOPE_ATTEMPT)
		return attempt_check(rq, addr);
	if (token_check(rq, addr) == 0)
		return 0;
	/* refused: the job's document read with the token is not the answer */
	free(rq->raw_owned);
	rq->raw_owned = NULL;
	rq->raw_len = 0;
	rq->cached = false;
	return -1;
}
