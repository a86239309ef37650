/*
 * grants.h - what a grant of a dataset or a code bundle
 * (h_registry_grants.c) and a grant of a checkpoint (h_checkpoint_grants.c)
 * have in common: another tenant's leave until an expiry, in force once
 * approved and while not revoked.
 * Tables of grants have the columns created_at, expires_at, approved_at
 * and revoked_at; "g" is the grant's alias in the SQL below.
 */
#ifndef TY_API_GRANTS_H
#define TY_API_GRANTS_H

#include <jansson.h>
#include <stdbool.h>

#include "api.h"
#include "jsonx.h"

#define GRANT_DAYS_MAX 366 /* the furthest expiry, in days from now */

/* A grant in force now. */
/*
 * Whether checkpoint c (its job j joined) is held for another tenant
 * than its own by an upstream owner's terms (migration 0013): then it
 * is not downloaded, granted or shared.
 */
#define CHECKPOINT_HELD "EXISTS (SELECT 1 FROM unnest(c.held_for) h WHERE h <> j.tenant_id)"

#define GRANT_IN_FORCE                                                                             \
	"g.approved_at IS NOT NULL AND g.revoked_at IS NULL AND g.expires_at > clock_timestamp()"

/* The grant's state and times, as the answers show them. */
#define GRANT_STATE_COLS                                                                           \
	"CASE WHEN g.revoked_at IS NOT NULL THEN 'revoked'"                                        \
	" WHEN g.expires_at <= clock_timestamp() THEN 'expired'"                                   \
	" WHEN g.approved_at IS NULL THEN 'pending' ELSE 'active' END AS state,"                   \
	" " CLOCK_SQL_RFC3339("g.created_at") " AS created_at, " CLOCK_SQL_RFC3339(                \
	    "g.expires_at") " AS expires_at,"                                                      \
	                    " " CLOCK_SQL_RFC3339("g.approved_at") " AS "                          \
	                                                           "approved_at,"                  \
	                                                           " " CLOCK_SQL_RFC3339(          \
	                                                               "g.revoked_at") " AS "      \
	                                                                               "revoked_"  \
	                                                                               "at"

/*
 * Check the fields every grant's body has: "tenant" (the grantee's name)
 * and "expires_at" (RFC 3339, within GRANT_DAYS_MAX days), besides those
 * of fields (NULL-terminated, the kind's own, may be NULL). Problems go
 * into v. OUT *tenant, *expires (borrowed from in).
 */
void grant_body_check(const json_t *in, const char *const *fields, const char **tenant,
                      const char **expires, verrs *v);

/*
 * Whether a grant of something of classification cls is in force when it
 * is made: public and internal data is shared on the owner's word, the
 * rest waits for a platform admin's approval (unless an admin grants it).
 */
bool grant_approved_at_once(const char *cls, bool by_admin);

/*
 * Answer a grant whose "tenant" names no other tenant (the insert made no
 * row): 422 at /tenant. Frees in. RET 0 (answered).
 */
int grant_no_grantee(api_req *rq, json_t *in, const char *tenant);

/* The statements of one kind of grant for grant_change(). */
typedef struct grant_sql {
	/* $1 the grant, $2 its object: (pending and in time, not revoked), locking the row */
	const char *lock;
	/* $1, $2, $3 the user: approve (revoke) the grant; its row as the answers show it */
	const char *approve, *revoke;
} grant_sql;

/*
 * Approve (approve true) or revoke grant gid of the object object_id, in
 * the transaction the caller opened, when rc (the caller's own checks) is
 * 0; record it as the route's action on resource res, commit, and answer:
 * 200 with the grant, 204 for a revocation, or failed(rq, -ERR_*) - with
 * -ERR_GRANT_NOT_FOUND, -ERR_GRANT_STATE_CONFLICT (approving a grant not
 * pending, revoking one revoked) or the caller's rc. RET 0 (answered).
 */
int grant_change(api_req *rq, const grant_sql *sql, int rc, const char *object_id, bool approve,
                 const char *res, int (*failed)(api_req *rq, int rc));

#endif
