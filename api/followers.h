/*
 * followers.h - the slots of the job logs followed at once
 * (GET /v1/jobs/{job}/logs?follow=1, h_logs.c), in memory, thread-safe.
 *
 * A follower holds one slot of the server (TRAINYARD_LOG_FOLLOWERS), one of
 * its tenant (TRAINYARD_LOG_FOLLOWERS_PER_TENANT), one of its user over all
 * of the user's tokens (TRAINYARD_LOG_FOLLOWERS_PER_USER) and one of the
 * API token it came with (TRAINYARD_LOG_FOLLOWERS_PER_TOKEN), from
 * followers_take_user() to followers_give_user(). So one tenant, one user
 * or one token that fills its own slots leaves the rest of the server's to
 * the others, and a user cannot make more room by making more tokens.
 */
#ifndef TY_FOLLOWERS_H
#define TY_FOLLOWERS_H

typedef struct followers followers;

typedef enum followers_result {
	FOLLOWERS_TAKEN,
	FOLLOWERS_SERVER_FULL, /* the server's slots are all taken */
	FOLLOWERS_TENANT_FULL, /* the tenant's */
	FOLLOWERS_TOKEN_FULL,  /* the token's */
	FOLLOWERS_USER_FULL,   /* the user's, over all of the user's tokens */
} followers_result;

/* RET: the slots (free with followers_free), or NULL when out of memory. */
followers *followers_new(int total, int per_tenant, int per_user, int per_token);
void followers_free(followers *f);

/*
 * Hold 1/n of every cap from now on (n API processes share the platform's
 * caps, peers.h): a cap of c allows peers_cap(c, n) here. Followers
 * already streaming keep their slots.
 */
void followers_share(followers *f, int n);

/*
 * Take a slot for a follower of tenant_id, of user user_id, with token_id
 * (ids of at most 36 characters). RET FOLLOWERS_TAKEN, or the narrowest
 * limit that refused it (the token's before the user's before the
 * tenant's before the server's; nothing is taken then).
 */
followers_result followers_take_user(followers *f, const char *tenant_id, const char *user_id,
                                     const char *token_id);
/* Give back the slot that followers_take_user() gave for the same ids. */
void followers_give_user(followers *f, const char *tenant_id, const char *user_id,
                         const char *token_id);

/*
 * The same without a user: the user's share is neither counted nor
 * checked. For callers that do not know the user yet; every follower of a
 * user's should come through followers_take_user().
 */
followers_result followers_take(followers *f, const char *tenant_id, const char *token_id);
void followers_give(followers *f, const char *tenant_id, const char *token_id);

#endif
