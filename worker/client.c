/*
 * client.c - the runtime's client for its attempt's routes (client.h), over
 * the one request helper of lib/base/httpc.h.
 */
#include "client.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"

struct rt_client {
	CURL *curl;
	char *base;    /* ".../internal/v1/attempts/<id>" */
	char *ca_file; /* TRAINYARD_CA_FILE, or NULL: the system's CAs */
	char token[RT_CLIENT_TOKEN_MAX + 1];
};

rt_client *rt_client_new(const char *base_url, const char *ca_file, const char *attempt_id,
                         const char *token, char *err, size_t errlen)
{
	if (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0) {
		snprintf(err, errlen, "the API URL must start with http:// or https://");
		return NULL;
	}
	if (!httpc_header_value_ok(token) || strchr(token, ' ') ||
	    strlen(token) > RT_CLIENT_TOKEN_MAX) {
		snprintf(err, errlen, "the attempt credential is not a valid token");
		return NULL;
	}
	rt_client *c = calloc(1, sizeof(*c));
	size_t n = strlen(base_url);
	while (n > 0 && base_url[n - 1] == '/')
		n--;
	size_t len = n + strlen("/internal/v1/attempts/") + strlen(attempt_id) + 1;
	if (!c || !(c->base = malloc(len)) || !(c->curl = curl_easy_init())) {
		snprintf(err, errlen, "out of memory");
		rt_client_free(c);
		return NULL;
	}
	snprintf(c->base, len, "%.*s/internal/v1/attempts/%s", (int)n, base_url, attempt_id);
	snprintf(c->token, sizeof(c->token), "%s", token);
	if (ca_file && ca_file[0] && !(c->ca_file = strdup(ca_file))) {
		snprintf(err, errlen, "out of memory");
		rt_client_free(c);
		return NULL;
	}
	return c;
}

void rt_client_free(rt_client *c)
{
	if (!c)
		return;
	OPENSSL_cleanse(c->token, sizeof(c->token));
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->base);
	free(c->ca_file);
	free(c);
}

void rt_answer_release(rt_answer *a)
{
	json_decref(a->body);
	a->body = NULL;
}

bool rt_answer_transient(const rt_answer *a)
{
	/* keys that were destroyed, or a server without a master key, stay so for this attempt */
	if (strcmp(a->code, "keys_unavailable") == 0)
		return false;
	return a->status == 0 || a->status >= 500 || a->status == 429;
}

/* The failure's code and message from a problem answer, or the status. */
static void answer_problem(rt_answer *a)
{
	const char *code = json_string_value(json_object_get(a->body, "code"));
	const char *msg = json_string_value(json_object_get(a->body, "detail"));
	snprintf(a->code, sizeof(a->code), "%s", code ? code : "");
	if (msg)
		snprintf(a->message, sizeof(a->message), "HTTP %ld %s: %s", a->status,
		         code ? code : "", msg);
	else
		snprintf(a->message, sizeof(a->message), "HTTP %ld", a->status);
}

/*
 * Send r to the attempt's route what (url, credential and limits filled in
 * here). OUT *a. RET 0 for a 2xx answer (with r->stream_to, all of it
 * written there), -1 for anything else.
 */
static int exchange(rt_client *c, const char *what, httpc_request *r, rt_answer *a)
{
	char url[1024];
	snprintf(url, sizeof(url), "%s%s", c->base, what);
	r->url = url;
	r->bearer = c->token;
	r->agent = "trainyard-worker";
	r->ca_file = c->ca_file;
	r->connect_timeout_s = RT_CLIENT_CONNECT_S;
	r->answer_max = RT_CLIENT_ANSWER_MAX;
	httpc_answer h;
	int rc = -1;
	if (httpc_send(c->curl, r, &h) < 0) {
		snprintf(a->message, sizeof(a->message), "could not reach the API: %s", h.error);
	} else {
		a->status = h.status;
		if (!h.streamed && h.len)
			a->body = json_loadb(h.body, h.len, 0, NULL);
		if (a->status < 200 || a->status >= 300)
			answer_problem(a);
		else if (r->stream_to && ferror(r->stream_to))
			snprintf(a->message, sizeof(a->message), "could not write what came");
		else
			rc = 0;
	}
	httpc_answer_release(&h); /* an answer may hold a data key */
	return rc;
}

int rt_client_call(rt_client *c, const char *method, const char *what, const json_t *body,
                   rt_answer *a)
{
	memset(a, 0, sizeof(*a));
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	if (body && !text) {
		snprintf(a->message, sizeof(a->message), "out of memory");
		return -1;
	}
	httpc_request r = {.method = method,
	                   .body = text,
	                   .body_len = text ? strlen(text) : 0,
	                   .timeout_s = RT_CLIENT_TIMEOUT_S};
	int rc = exchange(c, what, &r, a);
	free(text);
	return rc;
}

int rt_client_fetch(rt_client *c, const char *what, FILE *to, rt_answer *a)
{
	memset(a, 0, sizeof(*a));
	/* no time limit while bytes move: RT_CLIENT_TIMEOUT_S without any fails */
	httpc_request r = {.method = "GET",
	                   .low_speed_bps = 1,
	                   .low_speed_time_s = RT_CLIENT_TIMEOUT_S,
	                   .stream_to = to};
	return exchange(c, what, &r, a);
}
