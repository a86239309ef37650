/*
 * itest_api.c - the API over HTTP against a real PostgreSQL: every route
 * tried by callers of every role in the same and in another tenant,
 * token expiry and revocation, idempotency, body and JSON limits,
 * pagination, problem answers, audit records and their atomicity.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attemptstate.h"
#include "itest.h"
#include "jobstate.h"
#include "unit.h"

enum who { ADMIN, PAUDITOR, OWNER_A, EDITOR_A, VIEWER_A, AUDITOR_A, OUTSIDER, OWNER_B, N_WHO };
static const char *const who_names[N_WHO] = {"admin",    "pauditor",  "owner-a",  "editor-a",
                                             "viewer-a", "auditor-a", "outsider", "owner-b"};

static struct {
	char tenant_a[64], tenant_b[64];
	char user[N_WHO][64];
	char user_id[N_WHO][40];
	char token[N_WHO][80];
	char token_id[N_WHO][40];
	char job_a[40], job_b[40];
} fx;

static void must(long got, long want, const char *what)
{
	ck_assert_msg(got == want, "%s: status %ld, want %ld", what, got, want);
}

/* Create user i with a token, as the admin. */
static void make_user(int i, const char *platform_role)
{
	char body[256], path[256];
	snprintf(fx.user[i], sizeof(fx.user[i]), "%s", unique(who_names[i]));
	snprintf(body, sizeof(body), "{\"name\":\"%s\"%s%s%s}", fx.user[i],
	         platform_role ? ",\"platform_role\":\"" : "", platform_role ? platform_role : "",
	         platform_role ? "\"" : "");
	http_resp r;
	http_call("POST", "/v1/users", admin_token(), body, NULL, &r);
	must(r.status, 201, "create user");
	snprintf(fx.user_id[i], sizeof(fx.user_id[i]), "%s", resp_str(&r, "id"));
	http_resp_release(&r);
	snprintf(path, sizeof(path), "/v1/users/%s/tokens", fx.user[i]);
	http_call("POST", path, admin_token(), "{\"name\":\"itest\"}", NULL, &r);
	must(r.status, 201, "create token");
	snprintf(fx.token[i], sizeof(fx.token[i]), "%s", resp_str(&r, "token"));
	snprintf(fx.token_id[i], sizeof(fx.token_id[i]), "%s", resp_str(&r, "id"));
	http_resp_release(&r);
}

static void grant(const char *tenant, int i, const char *role)
{
	char path[256], body[64];
	snprintf(path, sizeof(path), "/v1/tenants/%s/members/%s", tenant, fx.user[i]);
	snprintf(body, sizeof(body), "{\"role\":\"%s\"}", role);
	must(http_status("PUT", path, admin_token(), body), 200, "grant");
}

static void submit(const char *tenant, int i, char *id_out)
{
	char path[256];
	snprintf(path, sizeof(path), "/v1/tenants/%s/jobs", tenant);
	http_resp r;
	http_call("POST", path, fx.token[i], spec_small("fixture"), NULL, &r);
	must(r.status, 201, "submit fixture job");
	snprintf(id_out, 40, "%s", resp_str(&r, "id"));
	http_resp_release(&r);
}

static void setup(void)
{
	snprintf(fx.tenant_a, sizeof(fx.tenant_a), "%s", unique("tenant-a"));
	snprintf(fx.tenant_b, sizeof(fx.tenant_b), "%s", unique("tenant-b"));
	char body[128];
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", fx.tenant_a);
	must(http_status("POST", "/v1/tenants", admin_token(), body), 201, "tenant a");
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", fx.tenant_b);
	must(http_status("POST", "/v1/tenants", admin_token(), body), 201, "tenant b");
	snprintf(fx.token[ADMIN], sizeof(fx.token[ADMIN]), "%s", admin_token());
	snprintf(fx.user[ADMIN], sizeof(fx.user[ADMIN]), "admin");
	for (int i = PAUDITOR; i < N_WHO; i++)
		make_user(i, i == PAUDITOR ? "auditor" : NULL);
	grant(fx.tenant_a, OWNER_A, "owner");
	grant(fx.tenant_a, EDITOR_A, "editor");
	grant(fx.tenant_a, VIEWER_A, "viewer");
	grant(fx.tenant_a, AUDITOR_A, "auditor");
	grant(fx.tenant_b, OWNER_B, "owner");
	dataset_small(fx.tenant_a);
	dataset_small(fx.tenant_b);
	submit(fx.tenant_a, EDITOR_A, fx.job_a);
	submit(fx.tenant_b, OWNER_B, fx.job_b);
}

/* Path templates: A, B = tenants; JA, JB = jobs; U = a user name; T = a token id. */
/* clang-format off */
static void expand(const char *tpl, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = tpl; *p && o + 80 < n; p++) {
		const char *sub = NULL;
		if (p[0] == '@' && p[1] == 'A') sub = fx.tenant_a;
		else if (p[0] == '@' && p[1] == 'B') sub = fx.tenant_b;
		else if (p[0] == '@' && p[1] == 'J' && p[2] == 'A') sub = fx.job_a, p++;
		else if (p[0] == '@' && p[1] == 'J' && p[2] == 'B') sub = fx.job_b, p++;
		else if (p[0] == '@' && p[1] == 'U') sub = fx.user[VIEWER_A];
		else if (p[0] == '@' && p[1] == 'T') sub = fx.token_id[OWNER_B];
		if (sub) {
			o += (size_t)snprintf(out + o, n - o, "%s", sub);
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
}
/* clang-format on */

/*
 * The route matrix: expected status per caller, in who order
 * (admin, platform auditor, owner A, editor A, viewer A, auditor A,
 * outsider, owner B). Reads only, and mutations that fail the check
 * before changing anything, so the rows can run in any order.
 */
/* clang-format off */
static const struct {
	const char *method, *path, *body;
	int want[N_WHO];
} matrix[] = {
	{"GET", "/v1/whoami", NULL, {200, 200, 200, 200, 200, 200, 200, 200}},
	{"GET", "/v1/tenants", NULL, {200, 200, 200, 200, 200, 200, 200, 200}},
	{"POST", "/v1/tenants", "{\"name\":\"Bad Name\"}", {422, 403, 403, 403, 403, 403, 403, 403}},
	{"GET", "/v1/tenants/@A", NULL, {200, 200, 200, 200, 200, 200, 404, 404}},
	{"GET", "/v1/tenants/@B", NULL, {200, 200, 404, 404, 404, 404, 404, 200}},
	{"GET", "/v1/tenants/@A/quota", NULL, {200, 200, 200, 200, 200, 200, 404, 404}},
	{"PUT", "/v1/tenants/@A/quota", "{\"max_gpus\":-1}", {422, 403, 403, 403, 403, 403, 404, 404}},
	{"GET", "/v1/tenants/@A/members", NULL, {200, 200, 200, 200, 200, 200, 404, 404}},
	{"PUT", "/v1/tenants/@A/members/@U", "{\"role\":\"chief\"}",
	 {422, 403, 422, 403, 403, 403, 404, 404}},
	{"DELETE", "/v1/tenants/@A/members/no-such-user", NULL, {404, 403, 404, 403, 403, 403, 404, 404}},
	{"POST", "/v1/users", "{\"name\":\"\"}", {422, 403, 403, 403, 403, 403, 403, 403}},
	{"GET", "/v1/users", NULL, {200, 200, 403, 403, 403, 403, 403, 403}},
	{"GET", "/v1/users/@U/tokens", NULL, {200, 403, 404, 404, 200, 404, 404, 404}},
	{"POST", "/v1/users/@U/tokens", "{\"expires_in_days\":0}",
	 {422, 403, 404, 404, 422, 404, 404, 404}},
	{"DELETE", "/v1/tokens/@T", NULL, {-1, 403, 404, 404, 404, 404, 404, -1}},
	{"DELETE", "/v1/tokens/00000000-0000-4000-8000-000000000000", NULL,
	 {404, 404, 404, 404, 404, 404, 404, 404}},
	{"POST", "/v1/tenants/@A/jobs", "{\"name\":\"x\"}", {422, 403, 422, 422, 403, 403, 404, 404}},
	{"GET", "/v1/tenants/@A/jobs", NULL, {200, 200, 200, 200, 200, 200, 404, 404}},
	{"GET", "/v1/tenants/@B/jobs", NULL, {200, 200, 404, 404, 404, 404, 404, 200}},
	{"GET", "/v1/jobs/@JA", NULL, {200, 200, 200, 200, 200, 200, 404, 404}},
	{"GET", "/v1/jobs/@JB", NULL, {200, 200, 404, 404, 404, 404, 404, 200}},
	{"GET", "/v1/jobs/@JA/events", NULL, {200, 200, 200, 200, 200, 200, 404, 404}},
	{"POST", "/v1/jobs/@JB/cancel", NULL, {-1, 403, 404, 404, 404, 404, 404, -1}},
	{"GET", "/v1/jobs/not-a-uuid", NULL, {404, 404, 404, 404, 404, 404, 404, 404}},
	{"GET", "/v1/nothing", NULL, {404, 404, 404, 404, 404, 404, 404, 404}},
	{"PATCH", "/v1/tenants", NULL, {405, 405, 405, 405, 405, 405, 405, 405}},
};
/* clang-format on */

START_TEST(route_matrix)
{
	char path[512];
	int rows = 0;
	for (size_t i = 0; i < sizeof(matrix) / sizeof(matrix[0]); i++) {
		expand(matrix[i].path, path, sizeof(path));
		for (int w = 0; w < N_WHO; w++) {
			if (matrix[i].want[w] < 0)
				continue;
			long got = http_status(matrix[i].method, path, fx.token[w], matrix[i].body);
			ck_assert_msg(got == matrix[i].want[w], "%s %s as %s: %ld, want %d",
			              matrix[i].method, matrix[i].path, who_names[w], got,
			              matrix[i].want[w]);
			rows++;
		}
	}
	ck_assert_int_gt(rows, 180);
	/* no token at all: every non-public route answers 401 */
	for (size_t i = 0; i < sizeof(matrix) / sizeof(matrix[0]); i++) {
		if (strstr(matrix[i].path, "nothing") || strcmp(matrix[i].method, "PATCH") == 0)
			continue;
		expand(matrix[i].path, path, sizeof(path));
		ck_assert_int_eq(http_status(matrix[i].method, path, NULL, matrix[i].body), 401);
	}
}
END_TEST

/* Another tenant's job answers exactly like a job that does not exist. */
START_TEST(other_tenant_looks_missing)
{
	char path[128];
	http_resp a, b;
	snprintf(path, sizeof(path), "/v1/jobs/%s", fx.job_b);
	http_call("GET", path, fx.token[OWNER_A], NULL, NULL, &a);
	http_call("GET", "/v1/jobs/0f0f0f0f-0000-4000-8000-000000000000", fx.token[OWNER_A], NULL,
	          NULL, &b);
	ck_assert_int_eq(a.status, 404);
	ck_assert_int_eq(b.status, 404);
	ck_assert_str_eq(resp_str(&a, "code"), resp_str(&b, "code"));
	ck_assert_str_eq(resp_str(&a, "detail"), resp_str(&b, "detail"));
	ck_assert_str_eq(resp_str(&a, "title"), resp_str(&b, "title"));
	http_resp_release(&a);
	http_resp_release(&b);
	snprintf(path, sizeof(path), "/v1/tenants/%s", fx.tenant_b);
	http_call("GET", path, fx.token[OWNER_A], NULL, NULL, &a);
	http_call("GET", "/v1/tenants/no-such-tenant", fx.token[OWNER_A], NULL, NULL, &b);
	ck_assert_str_eq(resp_str(&a, "detail"), resp_str(&b, "detail"));
	ck_assert_str_eq(resp_str(&a, "code"), "tenant_not_found");
	http_resp_release(&a);
	http_resp_release(&b);
	/* the tenant list of a member shows only its own tenants */
	http_call("GET", "/v1/tenants", fx.token[OWNER_A], NULL, NULL, &a);
	json_t *items = json_object_get(a.body, "items");
	ck_assert_uint_eq(json_array_size(items), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "name")),
	                 fx.tenant_a);
	http_resp_release(&a);
}
END_TEST

START_TEST(denials_are_audited)
{
	const char *p[] = {fx.user_id[OUTSIDER]};
	char *before = sql_value("SELECT count(*) FROM audit_log WHERE actor_id = $1"
	                         " AND outcome = 'denied'",
	                         1, p);
	char path[128];
	snprintf(path, sizeof(path), "/v1/jobs/%s", fx.job_a);
	ck_assert_int_eq(http_status("GET", path, fx.token[OUTSIDER], NULL), 404);
	ck_assert_int_eq(http_status("GET", "/v1/users", fx.token[OUTSIDER], NULL), 403);
	/* a path that decodes to bytes which are not UTF-8 names nothing: a clean 404 */
	http_resp r;
	http_call("GET", "/v1/tenants/%C3%28%FF/quota", fx.token[OUTSIDER], NULL, NULL, &r);
	ck_assert_int_eq(r.status, 404);
	ck_assert_str_eq(resp_str(&r, "code"), "not_found");
	ck_assert_str_eq(r.content_type, "application/problem+json");
	http_resp_release(&r);
	/* a name that is valid UTF-8 but no tenant's is answered after the token check */
	ck_assert_int_eq(http_status("GET", "/v1/tenants/caf%C3%A9", fx.token[OUTSIDER], NULL),
	                 404);
	char *after = sql_value("SELECT count(*) FROM audit_log WHERE actor_id = $1"
	                        " AND outcome = 'denied'",
	                        1, p);
	ck_assert_int_eq(atoi(after), atoi(before) + 2); /* the two hidden or forbidden */
	free(before);
	free(after);
	char *n = sql_value("SELECT count(*) FROM audit_log WHERE action = 'authz.deny'"
	                    " AND status = 401 AND actor_id IS NULL",
	                    0, NULL);
	ck_assert_int_gt(atoi(n), 0);
	free(n);
}
END_TEST

START_TEST(mutations_are_audited_with_request_id)
{
	char body[128], rid[64];
	snprintf(rid, sizeof(rid), "itest-%d", (int)getpid());
	char hdr[96];
	snprintf(hdr, sizeof(hdr), "X-Request-Id: %s", rid);
	const char *extra[] = {hdr, NULL};
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", unique("audited"));
	http_resp r;
	http_call("POST", "/v1/tenants", admin_token(), body, extra, &r);
	ck_assert_int_eq(r.status, 201);
	ck_assert_str_eq(r.request_id, rid);
	http_resp_release(&r);
	const char *p[] = {rid};
	char *row = sql_value("SELECT action || ' ' || outcome || ' ' || status FROM audit_log"
	                      " WHERE request_id = $1",
	                      1, p);
	ck_assert_str_eq(row, "tenant.create success 201");
	free(row);
	/* a refused mutation leaves a record too */
	snprintf(hdr, sizeof(hdr), "X-Request-Id: %s-x", rid);
	http_call("POST", "/v1/tenants", admin_token(), "{\"name\":\"Bad Name\"}", extra, &r);
	ck_assert_int_eq(r.status, 422);
	http_resp_release(&r);
	char rid2[80];
	snprintf(rid2, sizeof(rid2), "%s-x", rid);
	const char *q[] = {rid2};
	row = sql_value("SELECT outcome FROM audit_log WHERE request_id = $1", 1, q);
	ck_assert_str_eq(row, "failure");
	free(row);
	/* a request id that is not well-formed is replaced by a generated one */
	const char *bad[] = {"X-Request-Id: has space", NULL};
	http_call("GET", "/healthz", NULL, NULL, bad, &r);
	ck_assert_uint_eq(strlen(r.request_id), 24);
	http_resp_release(&r);
}
END_TEST

/* If the audit record cannot be written, the change does not happen. */
START_TEST(no_change_without_audit)
{
	ck_assert(sql_ok("ALTER TABLE audit_log ADD CONSTRAINT itest_block"
	                 " CHECK (action <> 'tenant.create') NOT VALID",
	                 0, NULL));
	char name[64], body[128];
	snprintf(name, sizeof(name), "%s", unique("unaudited"));
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", name);
	long st = http_status("POST", "/v1/tenants", admin_token(), body);
	ck_assert(sql_ok("ALTER TABLE audit_log DROP CONSTRAINT itest_block", 0, NULL));
	ck_assert_int_eq(st, 500);
	const char *p[] = {name};
	char *n = sql_value("SELECT count(*) FROM tenants WHERE name = $1", 1, p);
	ck_assert_str_eq(n, "0");
	free(n);
}
END_TEST

START_TEST(token_expiry_and_revocation)
{
	char path[256];
	http_resp r;
	snprintf(path, sizeof(path), "/v1/users/%s/tokens", fx.user[VIEWER_A]);
	http_call("POST", path, fx.token[VIEWER_A], "{\"name\":\"short\",\"expires_in_days\":1}",
	          NULL, &r);
	ck_assert_int_eq(r.status, 201);
	char tok[80], id[40];
	snprintf(tok, sizeof(tok), "%s", resp_str(&r, "token"));
	snprintf(id, sizeof(id), "%s", resp_str(&r, "id"));
	http_resp_release(&r);
	ck_assert_int_eq(http_status("GET", "/v1/whoami", tok, NULL), 200);
	/* the secret is never shown again, and last use is recorded */
	http_call("GET", path, fx.token[VIEWER_A], NULL, NULL, &r);
	char *text = json_dumps(r.body, 0);
	ck_assert_ptr_null(strstr(text, tok));
	ck_assert_ptr_null(strstr(text, "\"token\""));
	free(text);
	http_resp_release(&r);
	const char *p[] = {id};
	char *used =
	    sql_value("SELECT last_used_at IS NOT NULL FROM api_tokens WHERE id = $1", 1, p);
	ck_assert_str_eq(used, "t");
	free(used);
	char *hash = sql_value("SELECT encode(hash, 'hex') FROM api_tokens WHERE id = $1", 1, p);
	ck_assert_uint_eq(strlen(hash), 64);
	ck_assert_ptr_null(strstr(hash, tok));
	free(hash);

	ck_assert(sql_ok("UPDATE api_tokens SET expires_at = now() - interval '1 s' WHERE id = $1",
	                 1, p));
	http_call("GET", "/v1/whoami", tok, NULL, NULL, &r);
	ck_assert_int_eq(r.status, 401);
	ck_assert_str_eq(resp_str(&r, "code"), "token_expired");
	http_resp_release(&r);
	ck_assert(sql_ok(
	    "UPDATE api_tokens SET expires_at = now() + interval '1 day' WHERE id = $1", 1, p));
	ck_assert_int_eq(http_status("GET", "/v1/whoami", tok, NULL), 200);

	snprintf(path, sizeof(path), "/v1/tokens/%s", id);
	ck_assert_int_eq(http_status("DELETE", path, fx.token[VIEWER_A], NULL), 204);
	http_call("GET", "/v1/whoami", tok, NULL, NULL, &r);
	ck_assert_int_eq(r.status, 401);
	ck_assert_str_eq(resp_str(&r, "code"), "token_revoked");
	http_resp_release(&r);
	/* a token of the right shape that was never issued */
	char fake[80];
	snprintf(fake, sizeof(fake), "%s", tok);
	fake[5] = fake[5] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(http_status("GET", "/v1/whoami", fake, NULL), 401);
	ck_assert_int_eq(http_status("GET", "/v1/whoami", "garbage", NULL), 401);
}
END_TEST

/* A token of the viewer made with token `with`. OUT: secret, id. */
static void mint(const char *with, const char *body, char secret[80], char id[40])
{
	char path[256];
	snprintf(path, sizeof(path), "/v1/users/%s/tokens", fx.user[VIEWER_A]);
	http_resp r;
	http_call("POST", path, with, body, NULL, &r);
	ck_assert_int_eq(r.status, 201);
	snprintf(secret, 80, "%s", resp_str(&r, "token"));
	snprintf(id, 40, "%s", resp_str(&r, "id"));
	http_resp_release(&r);
}

/* GET /v1/whoami with token: the status, and the problem's code into code. */
static long whoami(const char *token, char code[64])
{
	http_resp r;
	http_call("GET", "/v1/whoami", token, NULL, NULL, &r);
	snprintf(code, 64, "%s", resp_str(&r, "code"));
	long st = r.status;
	http_resp_release(&r);
	return st;
}

/* Whether token id a expires no later than token id b. */
static bool expires_by(const char *a, const char *b)
{
	const char *p[] = {a, b};
	char *v = sql_value("SELECT c.expires_at <= p.expires_at FROM api_tokens c, api_tokens p"
	                    " WHERE c.id = $1 AND p.id = $2",
	                    2, p);
	bool by = strcmp(v, "t") == 0;
	free(v);
	return by;
}

/*
 * A token made with another token lives no longer than it: a child asking
 * for ten years expires with its parent, and the parent's revocation or
 * expiry ends the child and the child's children.
 */
START_TEST(token_dies_with_parent)
{
	char parent[80], parent_id[40], child[80], child_id[40], grand[80], grand_id[40];
	char code[64], path[128];
	mint(fx.token[VIEWER_A], "{\"name\":\"parent\",\"expires_in_days\":30}", parent, parent_id);
	mint(parent, "{\"name\":\"child\",\"expires_in_days\":3650}", child, child_id);
	mint(child, "{\"name\":\"grandchild\",\"expires_in_days\":3650}", grand, grand_id);
	ck_assert_msg(expires_by(child_id, parent_id), "the child outlives its parent");
	ck_assert_msg(expires_by(grand_id, child_id), "the grandchild outlives its parent");
	ck_assert_int_eq(whoami(grand, code), 200);

	snprintf(path, sizeof(path), "/v1/tokens/%s", parent_id);
	ck_assert_int_eq(http_status("DELETE", path, fx.token[VIEWER_A], NULL), 204);
	ck_assert_int_eq(whoami(parent, code), 401);
	ck_assert_int_eq(whoami(child, code), 401);
	ck_assert_str_eq(code, "token_revoked");
	ck_assert_int_eq(whoami(grand, code), 401);
	ck_assert_str_eq(code, "token_revoked");
	/* a revoked token makes no more children */
	snprintf(path, sizeof(path), "/v1/users/%s/tokens", fx.user[VIEWER_A]);
	ck_assert_int_eq(http_status("POST", path, parent, NULL), 401);

	/* the parent's expiry, however it comes, ends the child too */
	mint(fx.token[VIEWER_A], "{\"name\":\"parent2\"}", parent, parent_id);
	mint(parent, "{\"name\":\"child2\",\"expires_in_days\":3650}", child, child_id);
	ck_assert_int_eq(whoami(child, code), 200);
	const char *p[] = {parent_id};
	ck_assert(sql_ok("UPDATE api_tokens SET expires_at = now() - interval '1 s' WHERE id = $1",
	                 1, p));
	ck_assert_int_eq(whoami(child, code), 401);
	ck_assert_str_eq(code, "token_expired");
	/* the token the parents were made with lives on */
	ck_assert_int_eq(whoami(fx.token[VIEWER_A], code), 200);
}
END_TEST

static const char *idem_path(void)
{
	static char path[128];
	snprintf(path, sizeof(path), "/v1/tenants/%s/jobs", fx.tenant_a);
	return path;
}

START_TEST(idempotent_submission)
{
	char key[96];
	snprintf(key, sizeof(key), "Idempotency-Key: %s", unique("k"));
	const char *extra[] = {key, NULL};
	http_resp a, b, c;
	http_call("POST", idem_path(), fx.token[EDITOR_A], spec_small("idem"), extra, &a);
	http_call("POST", idem_path(), fx.token[EDITOR_A], spec_small("idem"), extra, &b);
	http_call("POST", idem_path(), fx.token[EDITOR_A], spec_small("other"), extra, &c);
	ck_assert_int_eq(a.status, 201);
	ck_assert_int_eq(b.status, 201);
	ck_assert(!a.replayed);
	ck_assert(b.replayed);
	ck_assert_str_eq(resp_str(&a, "id"), resp_str(&b, "id"));
	ck_assert_int_eq(c.status, 409);
	ck_assert_str_eq(resp_str(&c, "code"), "idempotency_conflict");
	const char *p[] = {resp_str(&a, "id")};
	char *n = sql_value("SELECT count(*) FROM jobs WHERE name = 'idem' AND id = $1", 1, p);
	ck_assert_str_eq(n, "1");
	free(n);
	http_resp_release(&a);
	http_resp_release(&b);
	http_resp_release(&c);
	/* the key is per caller: another member's same key is a new submission */
	http_call("POST", idem_path(), fx.token[OWNER_A], spec_small("idem"), extra, &a);
	ck_assert_int_eq(a.status, 201);
	ck_assert(!a.replayed);
	http_resp_release(&a);
}
END_TEST

static char race_key[96];
static char race_ids[8][40];

static void *race_submit(void *arg)
{
	int i = (int)(intptr_t)arg;
	const char *extra[] = {race_key, NULL};
	http_resp r;
	http_call("POST", idem_path(), fx.token[EDITOR_A], spec_small("race"), extra, &r);
	snprintf(race_ids[i], sizeof(race_ids[i]), "%s", r.status == 201 ? resp_str(&r, "id") : "");
	http_resp_release(&r);
	return NULL;
}

START_TEST(idempotency_under_concurrency)
{
	snprintf(race_key, sizeof(race_key), "Idempotency-Key: %s", unique("race"));
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, race_submit, (void *)(intptr_t)i);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 8; i++) {
		ck_assert_msg(race_ids[i][0], "request %d failed", i);
		ck_assert_str_eq(race_ids[i], race_ids[0]);
	}
	const char *key = race_key + strlen("Idempotency-Key: ");
	const char *p[] = {key};
	char *n = sql_value("SELECT count(*) FROM idempotency_keys WHERE key = $1", 1, p);
	ck_assert_str_eq(n, "1");
	free(n);
}
END_TEST

START_TEST(body_and_json_limits)
{
	http_resp r;
	const char *tok = fx.token[EDITOR_A];
	/* 1 MiB + 1 byte of JSON */
	size_t n = 1048577;
	char *big = malloc(n + 1);
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	big[n] = '\0';
	http_call("POST", idem_path(), tok, big, NULL, &r);
	ck_assert_int_eq(r.status, 413);
	ck_assert_str_eq(resp_str(&r, "code"), "body_too_large");
	http_resp_release(&r);
	free(big);

	static const struct {
		const char *body;
		int status;
		const char *code;
	} cases[] = {
	    {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	     400, "json_too_deep"},
	    {"{\"name\":\"a\",\"name\":\"b\"}", 400, "duplicate_key"},
	    {"{\"name\":", 400, "invalid_json"},
	    {"[1,2]", 400, "invalid_json"},
	    {"{\"name\":\"x\",\"tenant\":\"other\",\"state\":\"running\",\"submitter\":\"me\"}",
	     422, "validation_failed"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		http_call("POST", idem_path(), tok, cases[i].body, NULL, &r);
		ck_assert_msg(r.status == cases[i].status, "case %zu: %ld", i, r.status);
		ck_assert_str_eq(resp_str(&r, "code"), cases[i].code);
		ck_assert_str_eq(r.content_type, "application/problem+json");
		http_resp_release(&r);
	}
	/* an array longer than the cap */
	char arr[4096] = "{\"name\":\"x\",\"fault_tolerance\":{\"fallback\":[";
	for (int i = 0; i < 300; i++)
		strcat(arr, i ? ",1" : "1");
	strcat(arr, "]}}");
	http_call("POST", idem_path(), tok, arr, NULL, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(resp_str(&r, "code"), "json_too_large");
	http_resp_release(&r);
	/* no mass assignment: every forbidden field is named with a pointer */
	http_call("POST", idem_path(), tok, cases[4].body, NULL, &r);
	json_t *errs = json_object_get(r.body, "errors");
	const char *want[] = {"/tenant", "/state", "/submitter"};
	for (size_t w = 0; w < 3; w++) {
		bool seen = false;
		size_t i;
		json_t *e;
		json_array_foreach (errs, i, e) {
			if (strcmp(json_string_value(json_object_get(e, "pointer")), want[w]) ==
			        0 &&
			    strcmp(json_string_value(json_object_get(e, "code")),
			           "unknown_field") == 0)
				seen = true;
		}
		ck_assert_msg(seen, "no unknown_field row for %s", want[w]);
	}
	http_resp_release(&r);
	/* a body that is not JSON by type */
	const char *text[] = {"Content-Type: text/plain", NULL};
	http_call("POST", "/v1/tenants", admin_token(), "{}", text, &r);
	ck_assert_int_eq(r.status, 415);
	http_resp_release(&r);
}
END_TEST

START_TEST(pagination_newest_first)
{
	char tenant[64], body[128], path[512];
	snprintf(tenant, sizeof(tenant), "%s", unique("pages"));
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", tenant);
	ck_assert_int_eq(http_status("POST", "/v1/tenants", admin_token(), body), 201);
	dataset_small(tenant);
	snprintf(path, sizeof(path), "/v1/tenants/%s/jobs", tenant);
	char ids[7][40];
	for (int i = 0; i < 7; i++) {
		http_resp r;
		http_call("POST", path, admin_token(), spec_small("page"), NULL, &r);
		ck_assert_int_eq(r.status, 201);
		snprintf(ids[i], sizeof(ids[i]), "%s", resp_str(&r, "id"));
		http_resp_release(&r);
	}
	char cursor[512] = "";
	int seen = 0, pages = 0;
	do {
		char url[1024];
		snprintf(url, sizeof(url), "/v1/tenants/%s/jobs?limit=3%s%s", tenant,
		         cursor[0] ? "&cursor=" : "", cursor);
		http_resp r;
		http_call("GET", url, admin_token(), NULL, NULL, &r);
		ck_assert_int_eq(r.status, 200);
		json_t *items = json_object_get(r.body, "items");
		size_t i;
		json_t *it;
		json_array_foreach (items, i, it) {
			ck_assert_str_eq(json_string_value(json_object_get(it, "id")),
			                 ids[6 - seen]);
			ck_assert_ptr_null(json_object_get(it, "spec"));
			seen++;
		}
		const char *next = json_string_value(json_object_get(r.body, "next_cursor"));
		snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
		http_resp_release(&r);
		pages++;
	} while (cursor[0] && pages < 10);
	ck_assert_int_eq(seen, 7);
	ck_assert_int_eq(pages, 3);

	char url[1024];
	snprintf(url, sizeof(url), "/v1/tenants/%s/jobs?limit=100000", tenant);
	ck_assert_int_eq(http_status("GET", url, admin_token(), NULL), 400);
	snprintf(url, sizeof(url), "/v1/tenants/%s/jobs?cursor=zz", tenant);
	ck_assert_int_eq(http_status("GET", url, admin_token(), NULL), 400);
	snprintf(url, sizeof(url), "/v1/tenants/%s/jobs?state=bogus", tenant);
	ck_assert_int_eq(http_status("GET", url, admin_token(), NULL), 400);
	/* state filter: cancel one and list cancelled jobs */
	snprintf(url, sizeof(url), "/v1/jobs/%s/cancel", ids[3]);
	ck_assert_int_eq(http_status("POST", url, admin_token(), NULL), 200);
	snprintf(url, sizeof(url), "/v1/tenants/%s/jobs?state=cancelled", tenant);
	http_resp r;
	http_call("GET", url, admin_token(), NULL, NULL, &r);
	ck_assert_uint_eq(json_array_size(json_object_get(r.body, "items")), 1);
	http_resp_release(&r);
}
END_TEST

START_TEST(cancel_and_events)
{
	char id[40], path[128];
	submit(fx.tenant_a, EDITOR_A, id);
	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", id);
	ck_assert_int_eq(http_status("POST", path, fx.token[VIEWER_A], NULL), 403);
	http_resp r;
	http_call("POST", path, fx.token[EDITOR_A], NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(resp_str(&r, "state"), "cancelled");
	http_resp_release(&r);
	http_call("POST", path, fx.token[EDITOR_A], NULL, NULL, &r);
	ck_assert_int_eq(r.status, 409);
	ck_assert_str_eq(resp_str(&r, "code"), "job_not_cancellable");
	http_resp_release(&r);
	snprintf(path, sizeof(path), "/v1/jobs/%s/events", id);
	http_call("GET", path, fx.token[VIEWER_A], NULL, NULL, &r);
	json_t *items = json_object_get(r.body, "items");
	ck_assert_uint_eq(json_array_size(items), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "to_state")),
	                 "queued");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 1), "from_state")),
	                 "queued");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 1), "to_state")),
	                 "cancelled");
	http_resp_release(&r);
}
END_TEST

START_TEST(members_and_grants)
{
	char path[256];
	/* an owner grants and revokes; the last owner stays */
	snprintf(path, sizeof(path), "/v1/tenants/%s/members/%s", fx.tenant_a, fx.user[OUTSIDER]);
	ck_assert_int_eq(http_status("PUT", path, fx.token[EDITOR_A], "{\"role\":\"viewer\"}"),
	                 403);
	ck_assert_int_eq(http_status("PUT", path, fx.token[OWNER_A], "{\"role\":\"viewer\"}"), 200);
	char jpath[128];
	snprintf(jpath, sizeof(jpath), "/v1/jobs/%s", fx.job_a);
	ck_assert_int_eq(http_status("GET", jpath, fx.token[OUTSIDER], NULL), 200);
	ck_assert_int_eq(http_status("DELETE", path, fx.token[OWNER_A], NULL), 204);
	ck_assert_int_eq(http_status("GET", jpath, fx.token[OUTSIDER], NULL), 404);
	ck_assert_int_eq(http_status("DELETE", path, fx.token[OWNER_A], NULL), 404);
	snprintf(path, sizeof(path), "/v1/tenants/%s/members/%s", fx.tenant_a, fx.user[OWNER_A]);
	http_resp r;
	http_call("PUT", path, fx.token[OWNER_A], "{\"role\":\"viewer\"}", NULL, &r);
	ck_assert_int_eq(r.status, 409);
	ck_assert_str_eq(resp_str(&r, "code"), "last_owner");
	http_resp_release(&r);
	ck_assert_int_eq(http_status("DELETE", path, fx.token[OWNER_A], NULL), 409);
	/* {user} by id works as well as by name */
	snprintf(path, sizeof(path), "/v1/tenants/%s/members/%s", fx.tenant_a,
	         fx.user_id[OUTSIDER]);
	ck_assert_int_eq(http_status("PUT", path, fx.token[OWNER_A], "{\"role\":\"auditor\"}"),
	                 200);
	ck_assert_int_eq(http_status("DELETE", path, fx.token[OWNER_A], NULL), 204);
}
END_TEST

START_TEST(quota_round_trip_and_never_fits)
{
	char path[256];
	snprintf(path, sizeof(path), "/v1/tenants/%s/quota", fx.tenant_b);
	http_resp r;
	http_call("PUT", path, admin_token(), "{\"max_gpus\":1,\"weight\":2.5}", NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(r.body, "max_gpus")), 1);
	ck_assert(json_real_value(json_object_get(r.body, "weight")) == 2.5);
	http_resp_release(&r);
	http_call("GET", path, fx.token[OWNER_B], NULL, NULL, &r);
	ck_assert_int_eq(json_integer_value(json_object_get(r.body, "max_gpus")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(r.body, "max_running_jobs")), 4);
	http_resp_release(&r);
	/* a 2-rank job can never fit a 1-device quota: refused at submit */
	snprintf(path, sizeof(path), "/v1/tenants/%s/jobs", fx.tenant_b);
	http_call("POST", path, fx.token[OWNER_B], spec_small("too-big"), NULL, &r);
	ck_assert_int_eq(r.status, 422);
	json_t *e = json_array_get(json_object_get(r.body, "errors"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "code")), "quota_never_fits");
	http_resp_release(&r);
	snprintf(path, sizeof(path), "/v1/tenants/%s/quota", fx.tenant_b);
	ck_assert_int_eq(http_status("PUT", path, admin_token(), "{\"max_gpus\":8}"), 200);
	ck_assert_int_eq(http_status("PUT", path, admin_token(), "{\"bogus\":1}"), 422);
	ck_assert_int_eq(http_status("PUT", path, admin_token(), "{}"), 422);
}
END_TEST

/* The CHECK constraint on jobs.state and enum job_state agree. */
START_TEST(state_constraint_matches_enum)
{
	char *def = sql_value("SELECT pg_get_constraintdef(oid) FROM pg_constraint"
	                      " WHERE conname = 'jobs_state_check'",
	                      0, NULL);
	int quoted = 0;
	for (const char *p = def; *p; p++)
		quoted += *p == '\'';
	ck_assert_int_eq(quoted / 2, JOB_STATE__COUNT);
	for (int s = 0; s < JOB_STATE__COUNT; s++) {
		char q[40];
		snprintf(q, sizeof(q), "'%s'", job_state_name((job_state)s));
		ck_assert_msg(strstr(def, q), "%s missing from %s", q, def);
	}
	free(def);
	const char *p[] = {fx.job_a};
	ck_assert(!sql_ok("UPDATE jobs SET state = 'paused' WHERE id = $1", 1, p));
}
END_TEST

/*
 * job_holds_devices() (migrations/0011), which admission, the quota and the
 * metrics ask, is true exactly for the live states between queued and a
 * final state.
 */
START_TEST(holds_devices_matches_state_machine)
{
	for (int s = 0; s < JOB_STATE__COUNT; s++) {
		const char *p[] = {job_state_name((job_state)s)};
		char *v = sql_value("SELECT job_holds_devices($1)::text", 1, p);
		bool live = s != JOB_QUEUED && !job_state_final((job_state)s);
		ck_assert_msg(strcmp(v, live ? "true" : "false") == 0, "%s: %s", p[0], v);
		free(v);
	}
}
END_TEST

START_TEST(attempt_state_constraint_matches_enum)
{
	char *def = sql_value("SELECT pg_get_constraintdef(oid) FROM pg_constraint"
	                      " WHERE conname = 'job_attempts_state_check'",
	                      0, NULL);
	int quoted = 0;
	for (const char *p = def; *p; p++)
		quoted += *p == '\'';
	ck_assert_int_eq(quoted / 2, ATTEMPT_STATE__COUNT);
	for (int s = 0; s < ATTEMPT_STATE__COUNT; s++) {
		char q[40];
		snprintf(q, sizeof(q), "'%s'", attempt_state_name((attempt_state)s));
		ck_assert_msg(strstr(def, q), "%s missing from %s", q, def);
	}
	free(def);
}
END_TEST

START_TEST(meta_routes)
{
	http_resp r;
	http_call("GET", "/healthz", NULL, NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	http_resp_release(&r);
	http_call("GET", "/readyz", NULL, NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	http_resp_release(&r);
	http_call("GET", "/v1/openapi.json", NULL, NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(resp_str(&r, "openapi"), "3.1.0");
	http_resp_release(&r);
	http_call("GET", "/v1/whoami", fx.token[EDITOR_A], NULL, NULL, &r);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(r.body, "user"), "name")),
	    fx.user[EDITOR_A]);
	json_t *m = json_array_get(json_object_get(r.body, "memberships"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(m, "role")), "editor");
	ck_assert(json_is_null(json_object_get(r.body, "platform_role")));
	http_resp_release(&r);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("http");
	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, setup, NULL);
	tcase_add_test(tc, route_matrix);
	tcase_add_test(tc, other_tenant_looks_missing);
	tcase_add_test(tc, denials_are_audited);
	tcase_add_test(tc, mutations_are_audited_with_request_id);
	tcase_add_test(tc, no_change_without_audit);
	tcase_add_test(tc, token_expiry_and_revocation);
	tcase_add_test(tc, token_dies_with_parent);
	tcase_add_test(tc, idempotent_submission);
	tcase_add_test(tc, idempotency_under_concurrency);
	tcase_add_test(tc, body_and_json_limits);
	tcase_add_test(tc, pagination_newest_first);
	tcase_add_test(tc, cancel_and_events);
	tcase_add_test(tc, members_and_grants);
	tcase_add_test(tc, quota_round_trip_and_never_fits);
	tcase_add_test(tc, state_constraint_matches_enum);
	tcase_add_test(tc, holds_devices_matches_state_machine);
	tcase_add_test(tc, attempt_state_constraint_matches_enum);
	tcase_add_test(tc, meta_routes);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
