/*
 * auth.h - authentication, rate limiting and authorisation of a request.
 *
 * auth_check() runs before every non-public handler:
 *   0. the client address's bucket of failed authentications, before any
 *      token is looked up (429 with Retry-After while it is empty); a
 *      request that authenticates gives back what it took;
 *   1. the bearer token: hash lookup, constant-time compare, revocation,
 *      expiry, last-used time (written at most once a minute per token).
 *      A failure is audited at most once per address and
 *      TRAINYARD_AUTH_FAIL_AUDIT_S: the others are counted (authfail.h);
 *   2. the per-token and per-user rate limits (429 with Retry-After);
 *   3. the route's scope: tenant, job, user or token by name or id, and
 *      the caller's role there (rq->scope);
 *   4. authz_decide() with the route's permission. A denial is audited
 *      and answered 403, or 404 exactly like a missing resource.
 * RET 0 to run the handler, or -1 when the request has been answered.
 */
#ifndef TY_AUTH_H
#define TY_AUTH_H

#include "api.h"

int auth_check(api_req *rq);

/*
 * A job's answer (ROUTE_JOB_DOC) in the read cache for rq's token, taken
 * now with the principal and scope it was read with: auth_check() then
 * reads nothing. No database, no wait. RET true on a hit.
 */
bool auth_cached(api_req *rq);

#endif
