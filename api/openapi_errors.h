/*
 * openapi_errors.h - the error answers the server itself gives around a
 * route's handler, decided by the route's row: the body checks every
 * request passes (400, 413, 415), authentication and rate limits (401,
 * 429, not on public routes), the database (503, not on routes answered
 * from memory) and the unexpected (500). api/openapi.json lists them on
 * every operation: `make openapi` writes them in (tools/openapi_sync.c)
 * and tests/unit/test_openapi.c fails when one is missing.
 */
#ifndef TY_OPENAPI_ERRORS_H
#define TY_OPENAPI_ERRORS_H

#include <stddef.h>

#include "router.h"

#define OPENAPI_ERRORS_MAX 8

typedef struct openapi_error {
	const char *status;   /* "413" */
	const char *response; /* its answer in components/responses: "BodyTooLarge" */
} openapi_error;

/* OUT: out[0..n), the server's error answers on r. RET: n. */
size_t openapi_route_errors(const route *r, openapi_error out[OPENAPI_ERRORS_MAX]);

#endif
