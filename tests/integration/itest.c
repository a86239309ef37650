/*
 * itest.c - shared helpers for the C integration tests.
 */
#include "itest.h"

#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct buf {
	char *data;
	size_t len;
} buf;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	buf *b = arg;
	size_t add = size * n;
	char *nd = realloc(b->data, b->len + add + 1);
	if (!nd)
		return 0;
	memcpy(nd + b->len, p, add);
	b->data = nd;
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

static void header_value(const char *line, size_t n, const char *name, char *out, size_t outlen)
{
	size_t k = strlen(name);
	if (n <= k + 1 || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return;
	const char *v = line + k + 1;
	while (*v == ' ')
		v++;
	size_t len = strcspn(v, "\r\n");
	snprintf(out, outlen, "%.*s", (int)len, v);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	http_resp *r = arg;
	size_t len = size * n;
	header_value(p, len, "X-Request-Id", r->request_id, sizeof(r->request_id));
	header_value(p, len, "Retry-After", r->retry_after, sizeof(r->retry_after));
	header_value(p, len, "Content-Type", r->content_type, sizeof(r->content_type));
	char rep[16] = "";
	header_value(p, len, "Idempotency-Replayed", rep, sizeof(rep));
	if (strcmp(rep, "true") == 0)
		r->replayed = true;
	return len;
}

void http_call(const char *method, const char *path, const char *token, const char *body,
               const char *const *extra, http_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	const char *base = getenv("TRAINYARD_URL");
	ck_assert_msg(base != NULL, "TRAINYARD_URL is not set");
	char url[2048];
	snprintf(url, sizeof(url), "%s%s", base, path);
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char auth[256];
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	bool typed = false;
	for (const char *const *e = extra; e && *e; e++) {
		h = curl_slist_append(h, *e);
		typed = typed || strncasecmp(*e, "Content-Type:", 13) == 0;
	}
	if (body && !typed)
		h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Expect:");
	buf b = {0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, resp);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	/* the stack's API serves HTTPS under its own CA (deploy/stack) */
	const char *ca = getenv("TRAINYARD_CA_FILE");
	if (ca && *ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	CURLcode rc = curl_easy_perform(c);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
		curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &resp->seconds);
	}
	if (b.data && b.len) {
		json_error_t e;
		resp->body = json_loads(b.data, 0, &e);
	}
	free(b.data);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

void http_resp_release(http_resp *r)
{
	json_decref(r->body);
	r->body = NULL;
}

long http_status(const char *method, const char *path, const char *token, const char *body)
{
	http_resp r;
	http_call(method, path, token, body, NULL, &r);
	http_resp_release(&r);
	return r.status;
}

const char *resp_str(const http_resp *r, const char *key)
{
	const char *s = json_string_value(json_object_get(r->body, key));
	return s ? s : "";
}

const char *admin_token(void)
{
	static char token[128];
	if (token[0])
		return token;
	const char *var = getenv("TRAINYARD_VAR");
	ck_assert_msg(var != NULL, "TRAINYARD_VAR is not set");
	char path[1024], lock[1100];
	snprintf(path, sizeof(path), "%s/admin.token", var);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	int lfd = open(lock, O_CREAT | O_RDWR, 0600);
	ck_assert_int_ge(lfd, 0);
	flock(lfd, LOCK_EX);
	FILE *f = fopen(path, "r");
	if (!f || !fgets(token, sizeof(token), f) || strlen(token) < 10) {
		if (f)
			fclose(f);
		FILE *p = popen("yardctl bootstrap --name admin", "r");
		ck_assert_ptr_nonnull(p);
		ck_assert_ptr_nonnull(fgets(token, sizeof(token), p));
		ck_assert_int_eq(pclose(p), 0);
		umask(077);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(token, f);
	}
	fclose(f);
	flock(lfd, LOCK_UN);
	close(lfd);
	token[strcspn(token, "\r\n")] = '\0';
	return token;
}

PGconn *db(void)
{
	static PGconn *c;
	if (c && PQstatus(c) == CONNECTION_OK)
		return c;
	if (c)
		PQfinish(c);
	const char *ci = getenv("TRAINYARD_DB");
	ck_assert_msg(ci != NULL, "TRAINYARD_DB is not set");
	c = PQconnectdb(ci);
	ck_assert_msg(PQstatus(c) == CONNECTION_OK, "could not connect: %s", PQerrorMessage(c));
	return c;
}

char *sql_value(const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(db(), sql, n, NULL, params, NULL, NULL, 0);
	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
	char *v = strdup(PQntuples(r) && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
	return v;
}

bool sql_ok(const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(db(), sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	PQclear(r);
	return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

const char *unique(const char *prefix)
{
	static char names[64][64];
	static int next;
	char *out = names[next++ % 64];
	snprintf(out, 64, "%s-%d-%d", prefix, (int)getpid(), next);
	return out;
}

const char *spec_small(const char *name)
{
	static char text[1024];
	snprintf(text, sizeof(text),
	         "{\"name\":\"%s\",\"model\":{\"preset\":\"tiny\"},"
	         "\"data\":{\"dataset\":\"small\"},"
	         "\"parallel\":{\"data_parallel\":2,\"micro_batch\":4,\"global_batch\":8},"
	         "\"resources\":{\"nodes\":2,\"gpus_per_node\":0,\"ranks_per_node\":1},"
	         "\"training\":{\"steps\":10}}",
	         name);
	return text;
}

void dataset_small(const char *tenant)
{
	char path[256];
	snprintf(path, sizeof(path), "/v1/tenants/%s/datasets", tenant);
	ck_assert_int_eq(http_status("POST", path, admin_token(),
	                             "{\"name\":\"small\",\"classification\":\"internal\"}"),
	                 201);
	snprintf(path, sizeof(path), "/v1/tenants/%s/datasets/small/versions?format=text", tenant);
	const char *text[] = {"Content-Type: text/plain", NULL};
	http_resp r;
	http_call("POST", path, admin_token(), "a few words to train on\n", text, &r);
	ck_assert_int_eq(r.status, 201);
	http_resp_release(&r);
}
