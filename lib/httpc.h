/*
 * httpc.h - one HTTP request over libcurl, the way yardctl and the worker
 * runtime both talk to the API: JSON in and out, a bearer token that is
 * wiped from memory once sent and never printed, no redirects, http and
 * https only, timeouts, and a cap on the answer kept.
 *
 * The caller runs curl_global_init() once before the first request.
 */
#ifndef TY_HTTPC_H
#define TY_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One request. Every pointer is borrowed. */
typedef struct httpc_request {
	const char *method;          /* "GET", "POST", "PUT", "DELETE" */
	const char *url;             /* the whole URL */
	const char *bearer;          /* the token of "Authorization: Bearer", or NULL */
	const char *idempotency_key; /* Idempotency-Key, or NULL */
	const char *body;            /* the JSON body, or NULL for none */
	size_t body_len;
	const char *agent;      /* User-Agent */
	long connect_timeout_s; /* to connect */
	long timeout_s;         /* the whole exchange; 0: none (an answer that streams) */
	size_t answer_max;      /* bytes of an answer kept; a longer one fails */
	FILE *stream_to;        /* a 2xx answer is copied there as it arrives, not kept */
} httpc_request;

/* What came back. */
typedef struct httpc_answer {
	long status; /* the HTTP status; 0: no answer */
	char *body;  /* the answer kept, NUL-terminated, or NULL (none, or streamed) */
	size_t len;
	bool streamed;   /* a 2xx answer went to stream_to */
	bool too_big;    /* the answer passed answer_max */
	char error[256]; /* when there is no answer: why (the transport's words) */
} httpc_answer;

/*
 * Send r. curl: an easy handle the caller keeps for its requests (reset
 * here), or NULL for one of this request's own.
 * OUT: *a (httpc_answer_release() it). RET 0 when the server answered,
 * whatever its status; -1 when not, with a->error.
 */
int httpc_send(void *curl, const httpc_request *r, httpc_answer *a);

/* Free the answer, overwriting it first: it may hold a secret. */
void httpc_answer_release(httpc_answer *a);

/* RET: whether s may be sent as a header's value (printable ASCII, 1..1024 bytes). */
bool httpc_header_value_ok(const char *s);

#endif
