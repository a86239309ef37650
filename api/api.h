/*
 * api.h - the request context every handler receives, and the helpers
 * handlers share (responses, errors, audit, body parsing).
 *
 * Lifetime: one api_req per HTTP request, owned by server.c; everything a
 * handler stores in it (out, headers) is released by server.c after the
 * response is sent. rq->db is a pooled connection valid during the handler.
 */
#ifndef TY_API_H
#define TY_API_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "audit.h"
#include "authz.h"
#include "clock.h"
#include "config.h"
#include "db.h"
#include "error.h"
#include "jsonx.h"
#include "router.h"

#define REQUEST_ID_MAX 64

typedef struct api_server api_server;

typedef struct api_principal {
	bool authenticated;
	char user_id[37];   /* "" for an attempt */
	char user_name[64]; /* "attempt <id>" for an attempt */
	char token_id[37];
	char attempt_id[37]; /* set when the caller is a job attempt's worker runtime */
	role platform;
} api_principal;

/* What the route's scope resolved to, filled by auth.c before the handler. */
typedef struct api_scope {
	char tenant_id[37]; /* "" when the route has no tenant */
	char tenant_name[64];
	role tenant_role; /* caller's role there */
	char job_id[37];
	char user_id[37]; /* SCOPE_USER: the path's user; SCOPE_TOKEN: the owner */
	char token_id[37];
	char checkpoint_id[37]; /* SCOPE_CHECKPOINT */
	char attempt_id[37];    /* SCOPE_ATTEMPT */
	bool self;
} api_scope;

/*
 * A streamed answer: instead of a body, the handler leaves a reader that
 * server.c calls from libmicrohttpd's content-reader callback, one buffer
 * at a time, so memory stays constant whatever the size (api/stream_hub.c).
 * read fills buf with up to max bytes and returns how many (> 0), or one
 * of the API_STREAM_* values. It runs on a server thread and must not
 * block for long: API_STREAM_WAIT suspends the connection, without holding
 * a thread, and calls read again about API_STREAM_POLL_MS later.
 * Ownership: once read is set, the server owns ctx and calls free(ctx)
 * exactly once, after the last read or when the answer is a problem
 * instead (an error set after the stream).
 */
#define API_STREAM_END          (-1) /* the answer is complete */
#define API_STREAM_ABORT        (-2) /* close the connection: the client sees an incomplete answer */
#define API_STREAM_WAIT         (-3) /* nothing now; call again later */
#define API_STREAM_POLL_MS      200
#define API_STREAM_SIZE_UNKNOWN (-1) /* sent chunked */

typedef ssize_t (*api_stream_read_fn)(void *ctx, char *buf, size_t max);

typedef struct api_stream {
	api_stream_read_fn read; /* NULL: no stream */
	void (*free)(void *ctx);
	void *ctx;
	const char *content_type; /* static text */
	long long size;           /* bytes, or API_STREAM_SIZE_UNKNOWN */
	int idle_s;               /* the connection's idle limit while streaming; 0: the server's */
} api_stream;

/*
 * A request body taken as it arrives (a route flagged ROUTE_UPLOAD). The
 * route's handler runs when the headers are in, after authentication, and
 * either answers (a refusal: the body is never read) or fills this in;
 * the server then hands each piece of the body to feed, and calls finish
 * after the last, which answers. release runs once at the end whatever
 * happened, a connection cut off half-way included, and undoes what did
 * not complete.
 */
typedef struct api_upload {
	void *ctx;
	int (*feed)(struct api_req *rq, const char *buf, size_t n); /* <0: answered, stop */
	int (*finish)(struct api_req *rq);                          /* answers */
	void (*release)(void *ctx);
	unsigned long long limit; /* bytes the body may hold (more answers 413) */
	unsigned long long received;
} api_upload;

typedef struct api_req {
	api_server *srv;
	const ty_config *cfg;
	struct MHD_Connection *conn;
	const char *method;
	const char *path;     /* decoded by libmicrohttpd; untrusted bytes */
	char path_shown[256]; /* path as logs and audit records show it: printable ASCII */
	const route *rt;
	route_params params;
	char request_id[REQUEST_ID_MAX + 1];
	char client_addr[64];

	/* body, accumulated by server.c up to cfg->body_limit */
	char *body;
	size_t body_len;
	bool body_too_large;
	json_t *body_json; /* the body parsed, once, before the handler (NULL: none) */

	api_principal who;
	api_scope scope;
	PGconn *db;

	/* response, filled by the handler or by api_fail() */
	int status;
	json_t *out;          /* response body; NULL for 204 */
	const char *raw_type; /* the raw body's Content-Type (static); NULL: application/json */
	const char *csp;      /* the answer's Content-Security-Policy (static); NULL: the API's */
	const char *raw;      /* or a body sent as is (raw_len bytes): static, */
	size_t raw_len;
	char *raw_owned;   /* or malloc'ed and freed after sending */
	api_stream stream; /* or a streamed body (status 200-299 only) */
	api_upload upload; /* a body taken as it arrives (ROUTE_UPLOAD) */
	char retry_after[16];
	char allow[48];       /* a 405's Allow header: the methods the path answers */
	bool replayed;        /* idempotent replay of an earlier submission */
	bool cached;          /* answered from the read cache (readcache.h) */
	bool audited;         /* a mutation wrote its audit record */
	err_code error;       /* ERR_OK unless the answer is a problem */
	char detail[256];     /* problem detail */
	json_t *field_errors; /* validation rows, owned */
} api_req;

/* ---- responses ---- */

/*
 * Answer status with body (stolen). A NULL body is for 204 only: any other
 * status without one (a body that could not be built) answers 500
 * internal instead. RET 0 for the handler to return.
 */
int api_reply(api_req *rq, int status, json_t *body);

/*
 * The end of a list route: rc, the list query's code (a failure answers
 * as api_fail_db() does), else 200 with {"items": items, "next_cursor":
 * next} (next NULL: null, the last page). Takes items and next. RET 0.
 */
int api_reply_items(api_req *rq, int rc, json_t *items, json_t *next);

/*
 * Answer with the problem for e (negative or positive err_code), detail
 * formatted. RET 0 for the handler to return.
 */
int api_fail(api_req *rq, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Answer 422 validation_failed with the rows of v (taken over). RET 0. */
int api_fail_validation(api_req *rq, verrs *v);

/* Build the problem+json body of rq's error. RET a new object. */
json_t *api_problem_json(const api_req *rq);

/* ---- request input ---- */

/*
 * The body as a JSON object (parsed by the server with the configured
 * limits before the handler ran; see api_body_parse()).
 * OUT: *out (caller decrefs). RET 0, or an error already answered (<0).
 */
int api_body_object(api_req *rq, json_t **out);

/*
 * Parse a non-empty body strictly into rq->body_json, whatever the route:
 * a route that takes no body still refuses a malformed one (400).
 * RET 0, or an error already answered (<0).
 */
int api_body_parse(api_req *rq);

/* RET: query argument name, or NULL. */
const char *api_query(api_req *rq, const char *name);
/* RET: request header name, or NULL. */
const char *api_header(api_req *rq, const char *name);

/* ---- database ---- */

/*
 * Run sql (parameterised) returning one row_to_json column; on success
 * OUT: *out, the parsed row(s) or NULL when there are no rows.
 * RET 0 or -ERR_*.
 */
int api_query_json(api_req *rq, const char *sql, int n, const char *const *params, json_t **out);

/*
 * An audit record of rq: who (and the platform role acted with), the
 * tenant, the path as resource, the request id and peer; action, outcome
 * and status as given. The caller adds resource and detail as it needs.
 */
audit_record api_audit_record(const api_req *rq, const char *action, const char *outcome,
                              int status);

/* audit_write() on rq's connection, counted in the metrics. RET as audit_write. */
int api_audit_write(api_req *rq, const audit_record *a);

/*
 * Write the success audit record of rq's mutation (answered with status)
 * inside the open transaction, so both commit or neither does.
 */
int api_audit(api_req *rq, int status, const char *resource, const json_t *detail);

/*
 * The end of most mutations: when rc (the change so far) is 0, its audit
 * record and the commit. detail is taken (may be NULL). RET 0 or -ERR_*.
 */
int api_audit_commit(api_req *rq, int rc, int status, const char *resource, json_t *detail);

/*
 * Answer with the JSON text of the single row_to_json column sql returns,
 * passed through without parsing; no row answers the problem `missing`.
 * RET 0.
 */
int api_reply_row(api_req *rq, const char *sql, int n, const char *const *params, err_code missing);

/* Map a database rc to a problem: 503 for unavailability, 500 otherwise. RET 0. */
int api_fail_db(api_req *rq, int rc);

/*
 * Answer a failed open in a tenant's tree (tenantfs.h): rc its code, e the
 * errno it left, what and name the file for the client ("checkpoint",
 * "manifest.json"), why tenantfs's message (logged, never sent: it names
 * the tenant's layout). A missing file answers missing (404), a file the
 * tenant's user replaced by a link, a FIFO or any other thing 500
 * storage_unsafe, the rest 500 storage_io. RET 0.
 */
int api_fail_storage(api_req *rq, int rc, int e, err_code missing, const char *what,
                     const char *name, const char *why);

#endif
