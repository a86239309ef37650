/*
 * followers.c - counts of log followers: of the server, and per tenant and
 * per token in two small tables. A key with a count has an entry; every
 * entry holds at least one of the server's slots, so neither table needs
 * more entries than the server has slots.
 */
#include "followers.h"

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
	int total, per_tenant, per_token;
	int used;
	holder *tenants, *tokens; /* total entries each */
};

followers *followers_new(int total, int per_tenant, int per_token)
{
	followers *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->tenants = calloc((size_t)total, sizeof(holder));
	f->tokens = calloc((size_t)total, sizeof(holder));
	if (!f->tenants || !f->tokens) {
		followers_free(f);
		return NULL;
	}
	pthread_mutex_init(&f->lock, NULL);
	f->total = total;
	f->per_tenant = per_tenant;
	f->per_token = per_token;
	return f;
}

void followers_free(followers *f)
{
	if (!f)
		return;
	if (f->tenants && f->tokens)
		pthread_mutex_destroy(&f->lock);
	free(f->tenants);
	free(f->tokens);
	free(f);
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

followers_result followers_take(followers *f, const char *tenant_id, const char *token_id)
{
	pthread_mutex_lock(&f->lock);
	followers_result r = FOLLOWERS_TAKEN;
	holder *token = holder_find(f, f->tokens, token_id, 1);
	holder *tenant = holder_find(f, f->tenants, tenant_id, 1);
	/* the narrowest full share is the one to name: the token's, the tenant's, the server's */
	if (token && token->n >= f->per_token)
		r = FOLLOWERS_TOKEN_FULL;
	else if (tenant && tenant->n >= f->per_tenant)
		r = FOLLOWERS_TENANT_FULL;
	else if (f->used >= f->total || !token || !tenant)
		r = FOLLOWERS_SERVER_FULL;
	if (r == FOLLOWERS_TAKEN) {
		f->used++;
		tenant->n++;
		token->n++;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

void followers_give(followers *f, const char *tenant_id, const char *token_id)
{
	pthread_mutex_lock(&f->lock);
	holder *tenant = holder_find(f, f->tenants, tenant_id, 0);
	holder *token = holder_find(f, f->tokens, token_id, 0);
	if (tenant)
		tenant->n--;
	if (token)
		token->n--;
	if (f->used > 0)
		f->used--;
	pthread_mutex_unlock(&f->lock);
}
