/*
 * client.c - the runtime's libcurl client for its attempt's routes (client.h).
 */
#include "client.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_client {
	CURL *curl;
	char *base; /* ".../internal/v1/attempts/<id>" */
	char token[RT_CLIENT_TOKEN_MAX + 1];
};

/* The answer being received, capped at RT_CLIENT_ANSWER_MAX. */
typedef struct body_buf {
	char *buf;
	size_t len, cap;
	bool too_big;
} body_buf;

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	body_buf *b = arg;
	size_t add = size * n;
	if (b->len + add + 1 > RT_CLIENT_ANSWER_MAX) {
		b->too_big = true;
		return 0;
	}
	if (b->len + add + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + add + 1)
			cap *= 2;
		char *nb = malloc(cap);
		if (!nb)
			return 0;
		if (b->buf) {
			memcpy(nb, b->buf, b->len);
			OPENSSL_cleanse(b->buf, b->cap); /* an answer may hold the data key */
			free(b->buf);
		}
		b->buf = nb;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, data, add);
	b->len += add;
	b->buf[b->len] = '\0';
	return add;
}

static bool header_safe(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if ((unsigned char)s[n] <= 0x20 || (unsigned char)s[n] > 0x7e)
			return false;
	return n > 0;
}

rt_client *rt_client_new(const char *base_url, const char *attempt_id, const char *token, char *err,
                         size_t errlen)
{
	if (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0) {
		snprintf(err, errlen, "the API URL must start with http:// or https://");
		return NULL;
	}
	if (!header_safe(token) || strlen(token) > RT_CLIENT_TOKEN_MAX) {
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
	free(c);
}

void rt_answer_release(rt_answer *a)
{
	json_decref(a->body);
	a->body = NULL;
}

bool rt_answer_transient(const rt_answer *a)
{
	return a->status == 0 || a->status >= 500 || a->status == 429;
}

/* Overwrite every header before freeing: one of them holds the credential. */
static void headers_free(struct curl_slist *h)
{
	for (struct curl_slist *p = h; p; p = p->next)
		OPENSSL_cleanse(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

static struct curl_slist *headers_build(const rt_client *c)
{
	char auth[RT_CLIENT_TOKEN_MAX + 32];
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->token);
	struct curl_slist *h = curl_slist_append(NULL, auth);
	OPENSSL_cleanse(auth, sizeof(auth));
	struct curl_slist *n;
	if (h && (n = curl_slist_append(h, "Content-Type: application/json")))
		h = n;
	if (h && (n = curl_slist_append(h, "Accept: application/json")))
		h = n;
	if (h && (n = curl_slist_append(h, "Expect:")))
		h = n;
	return h;
}

/* The failure's code and message from a problem answer, or the status. */
static void answer_problem(rt_answer *a)
{
	const char *code = json_string_value(json_object_get(a->body, "code"));
	const char *msg = json_string_value(json_object_get(a->body, "message"));
	snprintf(a->code, sizeof(a->code), "%s", code ? code : "");
	if (msg)
		snprintf(a->message, sizeof(a->message), "HTTP %ld %s: %s", a->status,
		         code ? code : "", msg);
	else
		snprintf(a->message, sizeof(a->message), "HTTP %ld", a->status);
}

int rt_client_call(rt_client *c, const char *method, const char *what, const json_t *body,
                   rt_answer *a)
{
	memset(a, 0, sizeof(*a));
	char url[1024];
	snprintf(url, sizeof(url), "%s%s", c->base, what);
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	struct curl_slist *h = headers_build(c);
	body_buf b = {0};
	char errbuf[CURL_ERROR_SIZE] = "";
	int rc = -1;
	if ((body && !text) || !h) {
		snprintf(a->message, sizeof(a->message), "out of memory");
		goto out;
	}
	CURL *e = c->curl;
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, RT_CLIENT_CONNECT_S);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, RT_CLIENT_TIMEOUT_S);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "trainyard-worker");
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	if (strcmp(method, "POST") == 0)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, text ? text : "");
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	CURLcode res = curl_easy_perform(e);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
	if (res != CURLE_OK) {
		snprintf(a->message, sizeof(a->message), "could not reach the API: %s",
		         b.too_big ? "the answer is too large"
		         : *errbuf ? errbuf
		                   : curl_easy_strerror(res));
		goto out;
	}
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &a->status);
	if (b.len)
		a->body = json_loadb(b.buf, b.len, 0, NULL);
	if (a->status >= 200 && a->status < 300) {
		rc = 0;
	} else
		answer_problem(a);
out:
	headers_free(h);
	free(text);
	if (b.buf) {
		OPENSSL_cleanse(b.buf, b.cap);
		free(b.buf);
	}
	return rc;
}
