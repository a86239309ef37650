/*
 * router.h - match a method and path against the route table.
 *
 * Patterns are literal segments and {name} placeholders, e.g.
 * "/v1/tenants/{tenant}/jobs". A placeholder matches one non-empty segment
 * of at most ROUTE_PARAM_MAX bytes; captured values are percent-decoded and
 * must be well-formed UTF-8 without control characters, NUL or '/'. The route table itself is in
 * routes.c.
 */
#ifndef TY_ROUTER_H
#define TY_ROUTER_H

#include <stddef.h>

#include "authz.h"

#define ROUTE_PARAMS    4
#define ROUTE_PARAM_MAX 128

struct api_req;
typedef int (*route_handler)(struct api_req *rq);

typedef struct route {
	const char *method;  /* "GET" (HEAD too), "POST", "PUT", "DELETE" */
	const char *pattern; /* "/v1/jobs/{job}" */
	perm permission;     /* checked before the handler runs */
	scope scope;         /* what the permission is checked against */
	const char *action;  /* audit action for mutations, NULL for reads */
	int flags;           /* ROUTE_PUBLIC: no token needed */
	route_handler handler;
} route;

#define ROUTE_PUBLIC 1
/* A POST that only computes an answer from its body: it changes nothing, so it is no
 * mutation, has no audit action, and is not audited (POST /v1/plan). */
#define ROUTE_COMPUTE 2
/* A job-scoped read whose answer is the job's document (api/jobdoc.h): the
 * statement that authenticates the caller also reads it, so the request is
 * one round trip to the database (GET /v1/jobs/{job}). */
#define ROUTE_JOB_DOC 4
/* The body is not gathered: the handler runs when the headers are in and
 * takes the body as it arrives (api.h, api_upload); any Content-Type. */
#define ROUTE_UPLOAD 8
/* Answered from memory (no database, no file, no token): the request
 * never waits, so it runs on its connection's polling thread instead of
 * being handed to a worker (workers.h). Public routes only. */
#define ROUTE_MEMORY 16

typedef struct route_params {
	int n;
	const char *names[ROUTE_PARAMS]; /* point into the pattern's text (not terminated) */
	size_t name_len[ROUTE_PARAMS];
	char values[ROUTE_PARAMS][ROUTE_PARAM_MAX + 1];
} route_params;

typedef enum route_match {
	ROUTE_FOUND = 0,
	ROUTE_NO_PATH,    /* nothing matches the path: 404 */
	ROUTE_BAD_METHOD, /* the path matches with other methods: 405 */
	ROUTE_BAD_PATH,   /* a placeholder value is malformed (too long, bad escape): 404 */
} route_match;

/*
 * Find the route for method and path (no query string) in table[0..n).
 * OUT: *found and *params on ROUTE_FOUND. RET: a route_match.
 */
route_match router_match(const route *table, size_t n, const char *method, const char *path,
                         const route **found, route_params *params);

/*
 * The methods path answers, as a 405's Allow header lists them ("GET,
 * HEAD, POST"); HEAD wherever GET is. OUT: out (size bytes, terminated).
 * RET: its length (0: the path matches no route).
 */
size_t router_allow(const route *table, size_t n, const char *path, char *out, size_t size);

/* RET: the value of placeholder name, or NULL. */
const char *route_param(const route_params *p, const char *name);

/* The route table (routes.c). OUT: *n. */
const route *routes_table(size_t *n);

#endif
