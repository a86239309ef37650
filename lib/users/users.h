/*
 * users.h - users and API tokens in the database, shared by the API and
 * `yardctl bootstrap` and `token issue`, so all create them the same way.
 *
 * Every function runs inside the caller's transaction (or autocommit) and
 * uses parameterised SQL only.
 */
#ifndef TY_STORE_H
#define TY_STORE_H

#include <libpq-fe.h>

#include "authz.h"
#include "token.h"

#define UUID_STR_LEN 36

typedef struct store_token {
	char id[UUID_STR_LEN + 1];
	char secret[TOKEN_SECRET_LEN + 1]; /* shown once; caller cleanses it */
	char expires_at[40];               /* ISO 8601, UTC */
} store_token;

/*
 * Create a user; platform is ROLE_NONE, ROLE_ADMIN or ROLE_PLATFORM_AUDITOR.
 * OUT: id. RET 0; -ERR_USER_EXISTS; -ERR_DB_UNAVAILABLE; -ERR_INTERNAL.
 */
int store_user_create(PGconn *c, const char *name, const char *email, role platform,
                      const char *granted_by, char id[UUID_STR_LEN + 1]);

/*
 * Room for one more token of user_id: lock the user's row (FOR UPDATE, until
 * the caller's transaction ends), then count the user's live tokens
 * (neither expired nor revoked). Concurrent creations for one user thus
 * count one after another, each seeing the tokens the ones before it made.
 * Call in a transaction, before store_token_create().
 * RET 0; -ERR_TOKEN_LIMIT_REACHED when max_live are live already;
 * -ERR_USER_NOT_FOUND; -ERR_*.
 */
int store_token_room(PGconn *c, const char *user_id, int max_live);

/*
 * Create a token for user_id valid for ttl_days. parent_id: the id of the
 * token it is made with, or NULL (the first admin's). A token with a parent
 * expires no later than it and is revoked with it (migrations/0012, which
 * cuts t->expires_at to the parent's). OUT: *t. RET 0 or -ERR_*.
 */
int store_token_create(PGconn *c, const char *user_id, const char *parent_id, const char *name,
                       int ttl_days, store_token *t);

/*
 * The first platform admin: in one transaction under an advisory lock,
 * refuse when any admin exists (-ERR_ADMIN_EXISTS), else create user name
 * (or reuse it), bind it as admin, create a token and audit the act.
 */
int store_bootstrap_admin(PGconn *c, const char *name, int ttl_days, store_token *t);

/*
 * The operator's way back in (yardctl token issue): a token with no parent
 * for an existing platform admin, made on the database directly, for when
 * every token descending from the bootstrap token has expired or been
 * revoked. user is a name or an id. In one transaction: the user's row
 * locked, a user who is not a platform admin refused, the live tokens
 * counted against max_live (store_token_room), the token made for
 * ttl_days, and a token.issue record whose actor is the operator (detail:
 * the user, os_user and the database role). OUT: *t, name (the user's
 * name). RET 0; -ERR_USER_NOT_FOUND; -ERR_NOT_PLATFORM_ADMIN;
 * -ERR_TOKEN_LIMIT_REACHED; -ERR_*.
 */
int store_token_issue(PGconn *c, const char *user, int ttl_days, int max_live, const char *os_user,
                      store_token *t, char name[64]);

#endif
