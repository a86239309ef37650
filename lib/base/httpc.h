/*
 * httpc.h - one HTTP request over libcurl, the way yardctl and the worker
 * runtime both talk to the API: JSON in and out, a bearer token that is
 * wiped from memory once sent and never printed, no redirects, http and
 * https only, timeouts, and a cap on the answer kept.
 *
 * A request body is either JSON in memory (body) or a stream read from a
 * FILE as it is sent (upload_from), so a body of any size never sits in
 * memory whole: with its size known it goes with Content-Length, without
 * it chunked. An https server's certificate and name are always verified,
 * against ca_file (TRAINYARD_CA_FILE) when given.
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
	FILE *upload_from;        /* or a body read from here as it is sent (body is then NULL) */
	long long upload_size;    /* bytes of upload_from sent; -1: unknown, sent chunked */
	const char *content_type; /* of the body; NULL: application/json */
	const char *agent;        /* User-Agent */
	const char *ca_file; /* PEM CAs to verify an https server with; NULL or "": the system's */
	long connect_timeout_s; /* to connect */
	long timeout_s;         /* the whole exchange; 0: none (a stream, an upload) */
	long low_speed_bps;     /* fail when slower than this many bytes/s ... */
	long low_speed_time_s;  /* ... for this many seconds; 0: no such limit */
	size_t answer_max;      /* bytes of an answer kept; a longer one fails */
	FILE *stream_to;        /* a 2xx answer is copied there as it arrives, not kept */
} httpc_request;

/* What came back. */
typedef struct httpc_answer {
	long status; /* the HTTP status; 0: no answer */
	char *body;  /* the answer kept, NUL-terminated, or NULL (none, or streamed) */
	size_t len;
	bool streamed;    /* a 2xx answer went to stream_to */
	bool too_big;     /* the answer passed answer_max */
	bool read_failed; /* upload_from could not be read, or ended short of upload_size */
	char error[256];  /* when there is no answer: why (the transport's words) */
} httpc_answer;

/*
 * Send r. curl: an easy handle the caller keeps for its requests (reset
 * here), or NULL for one of this request's own.
 * An upload (upload_from) is sent with "Expect: 100-continue", so a server
 * that refuses it at its headers answers before any of the body goes out;
 * it is read from upload_from's current position, at most upload_size
 * bytes, and a file that ends before upload_size fails the request
 * (read_failed) instead of sending a short body.
 * OUT: *a (httpc_answer_release() it). RET 0 when the server answered,
 * whatever its status; -1 when not, with a->error.
 */
int httpc_send(void *curl, const httpc_request *r, httpc_answer *a);

/* Free the answer, overwriting it first: it may hold a secret. */
void httpc_answer_release(httpc_answer *a);

/* RET: whether s may be sent as a header's value (printable ASCII, 1..1024 bytes). */
bool httpc_header_value_ok(const char *s);

#endif
