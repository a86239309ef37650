/*
 * http.c - one libcurl request helper and the mapping of its outcome to
 * exit statuses.
 */
#include "http.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "sbuf.h"
#include "url.h"

int http_exit_status(long status)
{
	if (status >= 200 && status < 300)
		return CLI_OK;
	if (status == 401 || status == 403)
		return CLI_AUTH;
	if (status == 404)
		return CLI_NOT_FOUND;
	if (status >= 400 && status < 500)
		return CLI_REFUSED;
	return CLI_SERVER; /* no answer, 5xx, or nothing this client expects */
}

int http_exit_from_err(err_code e)
{
	return e == ERR_OK ? CLI_OK : http_exit_status(err_info(e)->status);
}

bool http_header_value_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if ((unsigned char)s[n] < 0x20 || (unsigned char)s[n] > 0x7e)
			return false;
	return n > 0 && n <= 1024;
}

/* The answer being received; too_big is set when it passed the cap. */
typedef struct answer {
	sbuf body;
	bool too_big;
	FILE *out;    /* http_stream: a 2xx body goes here as it arrives */
	CURL *c;      /* to read the status when the body starts */
	bool flowing; /* the status was 2xx and bytes go to out */
} answer;

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
	answer *a = userdata;
	if (a->out && !a->flowing && a->body.len == 0) {
		long status = 0;
		curl_easy_getinfo(a->c, CURLINFO_RESPONSE_CODE, &status);
		a->flowing = status >= 200 && status < 300;
	}
	if (a->flowing) {
		size_t w = fwrite(data, 1, size * n, a->out);
		fflush(a->out);
		return w;
	}
	if (sbuf_add(&a->body, data, size * n)) {
		a->too_big = true;
		return 0;
	}
	return size * n;
}

/* Overwrite every header before freeing: one of them holds the token. */
static void headers_free(struct curl_slist *h)
{
	for (struct curl_slist *p = h; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

/* Append "name: value" to *h. RET 0 or -1. */
static int header_add(struct curl_slist **h, const char *name, const char *value)
{
	sbuf line;
	sbuf_init(&line, 2048);
	int rc = sbuf_addf(&line, "%s: %s", name, value);
	struct curl_slist *n = rc ? NULL : curl_slist_append(*h, line.buf);
	sbuf_release_wipe(&line);
	if (!n)
		return -1;
	*h = n;
	return 0;
}

/* The request headers, or NULL when out of memory. Free with headers_free(). */
static struct curl_slist *headers_build(const cli_ctx *ctx, const http_request *req)
{
	struct curl_slist *h = NULL;
	int rc = header_add(&h, "Accept", "application/json");
	if (!rc)
		rc = header_add(&h, "Content-Type", "application/json");
	if (!rc && ctx->token && *ctx->token) {
		sbuf bearer;
		sbuf_init(&bearer, 2048);
		rc = sbuf_addf(&bearer, "Bearer %s", ctx->token);
		if (!rc)
			rc = header_add(&h, "Authorization", bearer.buf);
		sbuf_release_wipe(&bearer);
	}
	if (!rc && req->idempotency_key)
		rc = header_add(&h, "Idempotency-Key", req->idempotency_key);
	if (!rc) { /* no "Expect: 100-continue" round trip for large bodies */
		struct curl_slist *n = curl_slist_append(h, "Expect:");
		rc = n ? 0 : -1;
		h = n ? n : h;
	}
	if (rc) {
		headers_free(h);
		return NULL;
	}
	return h;
}

static void easy_setup(CURL *c, const char *url, const http_request *req, answer *a, char *errbuf)
{
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, HTTP_CONNECT_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, HTTP_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "yardctl");
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	if (req->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "POST") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	else if (strcmp(req->method, "POST") == 0 && !req->body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
}

/*
 * Carry out the exchange. OUT: a, *status. RET CLI_OK, or an exit
 * status after printing the transport error.
 */
static int transport(const cli_ctx *ctx, const http_request *req, answer *a, long *status)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	int rc = CLI_SERVER;
	char *url = url_join(ctx->url, req->path);
	struct curl_slist *h = headers_build(ctx, req);
	CURL *c = curl_easy_init();
	if (!url || !h || !c) {
		fprintf(stderr, "yardctl: out of memory\n");
		goto out;
	}
	easy_setup(c, url, req, a, errbuf);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	a->c = c;
	if (a->out) /* a stream lasts as long as the server sends */
		curl_easy_setopt(c, CURLOPT_TIMEOUT, 0L);
	CURLcode res = curl_easy_perform(c);
	if (res == CURLE_WRITE_ERROR && a->too_big)
		fprintf(stderr, "yardctl: the answer from %s is larger than %u bytes\n", ctx->url,
		        HTTP_BODY_MAX);
	else if (res != CURLE_OK)
		fprintf(stderr, "yardctl: could not reach %s: %s\n", ctx->url,
		        *errbuf ? errbuf : curl_easy_strerror(res));
	else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		rc = CLI_OK;
	}
out:
	curl_easy_cleanup(c);
	headers_free(h);
	free(url);
	return rc;
}

/* Turn the answer into *resp or, for a failure, a message and its status. */
static int answer_handle(const sbuf *body, long status, json_t **resp)
{
	json_error_t jerr;
	json_t *j = body->len ? json_loadb(body->buf, body->len, JSON_DECODE_ANY, &jerr) : NULL;
	int rc = http_exit_status(status);
	if (rc != CLI_OK) {
		output_problem(stderr, j, status);
		json_decref(j);
		return rc;
	}
	if (body->len && !j) {
		fprintf(stderr, "yardctl: the server's answer is not JSON: %s\n", jerr.text);
		return CLI_SERVER;
	}
	*resp = j;
	return CLI_OK;
}

int http_call(const cli_ctx *ctx, const http_request *req, json_t **resp)
{
	answer a = {.too_big = false};
	long status = 0;
	*resp = NULL;
	if (ctx->token && *ctx->token && !http_header_value_ok(ctx->token)) {
		fprintf(stderr, "yardctl: the token holds characters a header cannot carry\n");
		return CLI_USAGE;
	}
	sbuf_init(&a.body, HTTP_BODY_MAX);
	int rc = transport(ctx, req, &a, &status);
	if (rc == CLI_OK)
		rc = answer_handle(&a.body, status, resp);
	sbuf_release_wipe(&a.body); /* it may hold a new token */
	return rc;
}

int http_stream(const cli_ctx *ctx, const char *path, FILE *out)
{
	http_request req = {.method = "GET", .path = path};
	answer a = {.out = out};
	long status = 0;
	if (ctx->token && *ctx->token && !http_header_value_ok(ctx->token)) {
		fprintf(stderr, "yardctl: the token holds characters a header cannot carry\n");
		return CLI_USAGE;
	}
	sbuf_init(&a.body, HTTP_BODY_MAX);
	int rc = transport(ctx, &req, &a, &status);
	if (rc == CLI_OK && !a.flowing) {
		json_t *j = NULL;
		rc = answer_handle(&a.body, status, &j);
		json_decref(j);
	}
	sbuf_release_wipe(&a.body);
	return rc;
}

int http_json(const cli_ctx *ctx, const char *method, const char *path, const json_t *body,
              json_t **resp)
{
	http_request req = {.method = method, .path = path};
	char *text = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text) {
			fprintf(stderr, "yardctl: out of memory\n");
			*resp = NULL;
			return CLI_SERVER;
		}
		req.body = text;
		req.body_len = strlen(text);
	}
	int rc = http_call(ctx, &req, resp);
	free(text);
	return rc;
}
