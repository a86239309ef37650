/*
 * followers.h - the slots of the job logs followed at once
 * (GET /v1/jobs/{job}/logs?follow=1, h_logs.c), in memory, thread-safe.
 *
 * A follower holds one slot of the server (TRAINYARD_LOG_FOLLOWERS), one of
 * its tenant (TRAINYARD_LOG_FOLLOWERS_PER_TENANT) and one of the API token
 * it came with (TRAINYARD_LOG_FOLLOWERS_PER_TOKEN), from followers_take()
 * to followers_give(). So one tenant, or one token, that fills its own
 * slots leaves the rest of the server's to the others.
 */
#ifndef TY_FOLLOWERS_H
#define TY_FOLLOWERS_H

typedef struct followers followers;

typedef enum followers_result {
	FOLLOWERS_TAKEN,
	FOLLOWERS_SERVER_FULL, /* the server's slots are all taken */
	FOLLOWERS_TENANT_FULL, /* the tenant's */
	FOLLOWERS_TOKEN_FULL,  /* the token's */
} followers_result;

/* RET: the slots (free with followers_free), or NULL when out of memory. */
followers *followers_new(int total, int per_tenant, int per_token);
void followers_free(followers *f);

/*
 * Take a slot for a follower of tenant_id with token_id (ids of at most 36
 * characters). RET FOLLOWERS_TAKEN, or the narrowest limit that refused
 * it (the token's before the tenant's before the server's; nothing is
 * taken then).
 */
followers_result followers_take(followers *f, const char *tenant_id, const char *token_id);
/* Give back the slot that followers_take() gave for the same ids. */
void followers_give(followers *f, const char *tenant_id, const char *token_id);

#endif
