/*
 * http.h - the one place yardctl talks HTTP, and how answers become exit
 * statuses.
 *
 * http_call() sends one request with the bearer token, JSON headers and
 * fixed timeouts (connect 5 s, total 30 s), never follows redirects, caps
 * the answer at HTTP_BODY_MAX, and on any failure prints the reason on
 * stderr (the server's problem+json, or the transport error) before
 * returning the exit status. The token is never printed or logged. A
 * 401 to a request sent without a token says to set TRAINYARD_TOKEN or
 * pass --token instead of the server's detail.
 *
 * An upload (http_upload()) streams its body from a file and has no total
 * timeout, only the connect timeout and a stall limit: it fails when less
 * than HTTP_STALL_BPS bytes/s move for HTTP_STALL_S seconds.
 */
#ifndef YARDCTL_HTTP_H
#define YARDCTL_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "error.h"

#define HTTP_BODY_MAX          (16u << 20)
#define HTTP_CONNECT_TIMEOUT_S 5L
#define HTTP_TIMEOUT_S         30L
#define HTTP_STALL_BPS         1L
#define HTTP_STALL_S           60L

typedef struct http_request {
	const char *method;          /* "GET", "POST", "PUT", "DELETE" */
	const char *path;            /* escaped path and query, e.g. from URL_PATH() */
	const char *body;            /* request body, or NULL for none */
	size_t body_len;             /* bytes of body */
	const char *idempotency_key; /* Idempotency-Key header, or NULL */
	FILE *upload_from;           /* or a body streamed from here (see httpc.h), or NULL */
	long long upload_size;       /* its bytes; -1: unknown, sent chunked */
	const char *content_type;    /* of the body; NULL: application/json */
} http_request;

/*
 * Send req to ctx->url. OUT: *resp, the parsed JSON answer of a 2xx
 * (caller json_decref()s; NULL for an empty answer such as 204).
 * RET: CLI_OK, or the exit status after printing why on stderr.
 */
int http_call(const cli_ctx *ctx, const http_request *req, json_t **resp);

/*
 * GET path and copy a 2xx answer to out as it arrives (no total timeout:
 * the server decides when it ends, e.g. a followed log). A failure is
 * reported as by http_call(). OUT: *empty (may be NULL), whether a 2xx
 * answer came with no byte at all. RET: CLI_OK or the exit status.
 */
int http_stream(const cli_ctx *ctx, const char *path, FILE *out, bool *empty);

/*
 * POST path with the body read from `from` as it is sent (size bytes, or
 * -1 when unknown: chunked) as content_type. A file that cannot be read,
 * or ends short of size, fails with CLI_USAGE after saying so; anything
 * else as http_call(). OUT: *resp. RET: CLI_OK or the exit status.
 */
int http_upload(const cli_ctx *ctx, const char *path, const char *content_type, FILE *from,
                long long size, json_t **resp);

/* http_call() with body encoded from a JSON value (borrowed; may be NULL). */
int http_json(const cli_ctx *ctx, const char *method, const char *path, const json_t *body,
              json_t **resp);

/* RET: the exit status for an HTTP status (0: no answer at all). */
int http_exit_status(long status);

/* RET: the exit status for a trainyard error code (its HTTP status decides). */
int http_exit_from_err(err_code e);

#endif
