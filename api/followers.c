/*
 * followers.c - counts of log followers: of the server, and per tenant,
 * per user and per token in three small tables. A key with a count has an
 * entry; every entry holds at least one of the server's slots, so no table
 * needs more entries than the server has slots.
 */
#include "followers.h"
#include "peers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct holder {
	char key[40];
	int n; /* 0: a free entry */
} holder;

struct followers {
	pthread_mutex_t lock;
	int total, per_tenant, per_user, per_token;
	int share; /* this process holds 1/share of each cap (peers.h) */
	int used;
	holder *tenants, *users, *tokens; /* total entries each */
};

followers *followers_new(int total, int per_tenant, int per_user, int per_token)
{
	followers *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->tenants = calloc((size_t)total, sizeof(holder));
	f->users = calloc((size_t)total, sizeof(holder));
	f->tokens = calloc((size_t)total, sizeof(holder));
	if (!f->tenants || !f->users || !f->tokens) {
		followers_free(f);
		return NULL;
	}
	pthread_mutex_init(&f->lock, NULL);
	f->total = total;
	f->per_tenant = per_tenant;
	f->per_user = per_user;
	f->per_token = per_token;
	f->share = 1;
	return f;
}

void followers_free(followers *f)
{
	if (!f)
		return;
	if (f->tenants && f->users && f->tokens)
		pthread_mutex_destroy(&f->lock);
	free(f->tenants);
	free(f->users);
	free(f->tokens);
	free(f);
}

void followers_share(followers *f, int n)
{
	pthread_mutex_lock(&f->lock);
	f->share = n < 1 ? 1 : n;
	pthread_mutex_unlock(&f->lock);
}

/* key's entry in table, or with add a free one for it; NULL when there is none. */
static holder *holder_find(followers *f, holder *table, const char *key, int add)
{
	holder *spare = NULL;
	for (int i = 0; i < f->total; i++) {
		if (table[i].n > 0 && strcmp(table[i].key, key) == 0)
			return &table[i];
		if (!spare && table[i].n == 0)
			spare = &table[i];
	}
	if (add && spare)
		snprintf(spare->key, sizeof(spare->key), "%s", key);
	return add ? spare : NULL;
}

followers_result followers_take_user(followers *f, const char *tenant_id, const char *user_id,
                                     const char *token_id)
{
	pthread_mutex_lock(&f->lock);
	followers_result r = FOLLOWERS_TAKEN;
	holder *token = holder_find(f, f->tokens, token_id, 1);
	holder *user = user_id ? holder_find(f, f->users, user_id, 1) : NULL;
	holder *tenant = holder_find(f, f->tenants, tenant_id, 1);
	/* the narrowest full share is the one to name: the token's, the user's, the tenant's, the
	 * server's */
	if (token && token->n >= peers_cap(f->per_token, f->share))
		r = FOLLOWERS_TOKEN_FULL;
	else if (user && user->n >= peers_cap(f->per_user, f->share))
		r = FOLLOWERS_USER_FULL;
	else if (tenant && tenant->n >= peers_cap(f->per_tenant, f->share))
		r = FOLLOWERS_TENANT_FULL;
	else if (f->used >= peers_cap(f->total, f->share) || !token || !tenant ||
	         (user_id && !user))
		r = FOLLOWERS_SERVER_FULL;
	if (r == FOLLOWERS_TAKEN) {
		f->used++;
		tenant->n++;
		token->n++;
		if (user)
			user->n++;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

void followers_give_user(followers *f, const char *tenant_id, const char *user_id,
                         const char *token_id)
{
	pthread_mutex_lock(&f->lock);
	holder *tenant = holder_find(f, f->tenants, tenant_id, 0);
	holder *user = user_id ? holder_find(f, f->users, user_id, 0) : NULL;
	holder *token = holder_find(f, f->tokens, token_id, 0);
	if (tenant)
		tenant->n--;
	if (user)
		user->n--;
	if (token)
		token->n--;
	if (f->used > 0)
		f->used--;
	pthread_mutex_unlock(&f->lock);
}

followers_result followers_take(followers *f, const char *tenant_id, const char *token_id)
{
	return followers_take_user(f, tenant_id, NULL, token_id);
}

void followers_give(followers *f, const char *tenant_id, const char *token_id)
{
	followers_give_user(f, tenant_id, NULL, token_id);
}
