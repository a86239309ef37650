/*
 * ratelimit.c - token buckets by class and key (API token ids, user ids,
 * client addresses).
 */
#include "ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bucket {
	char key[48];
	double tokens;
	double last; /* time of the last refill */
} bucket;

typedef struct bucket_class {
	ratelimit_rate rate;
	bucket slots[RATELIMIT_SLOTS];
} bucket_class;

struct ratelimit {
	pthread_mutex_t lock;
	int share; /* this process holds 1/share of each rate (peers.h) */
	size_t n;
	bucket_class *classes;
};

ratelimit *ratelimit_new(size_t n, const ratelimit_rate *rates)
{
	if (n == 0 || n > RATELIMIT_CLASSES_MAX)
		return NULL;
	ratelimit *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return NULL;
	rl->classes = calloc(n, sizeof(*rl->classes));
	if (!rl->classes) {
		free(rl);
		return NULL;
	}
	pthread_mutex_init(&rl->lock, NULL);
	rl->n = n;
	rl->share = 1;
	for (size_t i = 0; i < n; i++)
		rl->classes[i].rate = rates[i];
	return rl;
}

void ratelimit_free(ratelimit *rl)
{
	if (!rl)
		return;
	pthread_mutex_destroy(&rl->lock);
	free(rl->classes);
	free(rl);
}

void ratelimit_share(ratelimit *rl, int n)
{
	pthread_mutex_lock(&rl->lock);
	rl->share = n < 1 ? 1 : n;
	pthread_mutex_unlock(&rl->lock);
}

/* A class's rate as this process holds it: its share, a bucket of at least one. */
static ratelimit_rate held(const ratelimit *rl, const bucket_class *c)
{
	ratelimit_rate r = {c->rate.rps / rl->share, c->rate.burst / rl->share};
	if (r.burst < 1.0)
		r.burst = 1.0;
	return r;
}

static unsigned hash_key(const char *s)
{
	unsigned h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Linear probe over 8 slots; take the key's slot or the stalest one. */
static bucket *find_bucket(bucket_class *c, const char *key, double now, double burst)
{
	unsigned h = hash_key(key);
	bucket *victim = NULL;
	for (unsigned i = 0; i < 8; i++) {
		bucket *b = &c->slots[(h + i) % RATELIMIT_SLOTS];
		if (strcmp(b->key, key) == 0)
			return b;
		if (!victim || b->last < victim->last)
			victim = b;
	}
	snprintf(victim->key, sizeof(victim->key), "%s", key);
	victim->tokens = burst;
	victim->last = now;
	return victim;
}

/* The key's slot, or NULL when no slot holds it. */
static bucket *lookup_bucket(bucket_class *c, const char *key)
{
	unsigned h = hash_key(key);
	for (unsigned i = 0; i < 8; i++) {
		bucket *b = &c->slots[(h + i) % RATELIMIT_SLOTS];
		if (strcmp(b->key, key) == 0)
			return b;
	}
	return NULL;
}

int ratelimit_take(ratelimit *rl, const char *const *keys, double now_s, int *retry_after_s)
{
	bucket *b[RATELIMIT_CLASSES_MAX] = {0};
	int refused = RATELIMIT_ALLOWED;
	double wait = 0;
	pthread_mutex_lock(&rl->lock);
	for (size_t i = 0; i < rl->n; i++) {
		if (!keys[i])
			continue;
		bucket_class *c = &rl->classes[i];
		ratelimit_rate rate = held(rl, c);
		b[i] = find_bucket(c, keys[i], now_s, rate.burst);
		b[i]->tokens = fmin(rate.burst, b[i]->tokens + (now_s - b[i]->last) * rate.rps);
		b[i]->last = now_s;
		if (b[i]->tokens < 1.0) {
			if (refused == RATELIMIT_ALLOWED)
				refused = (int)i;
			wait = fmax(wait, (1.0 - b[i]->tokens) / rate.rps);
		}
	}
	for (size_t i = 0; refused == RATELIMIT_ALLOWED && i < rl->n; i++)
		if (b[i])
			b[i]->tokens -= 1.0;
	pthread_mutex_unlock(&rl->lock);
	if (refused != RATELIMIT_ALLOWED) {
		*retry_after_s = (int)ceil(wait);
		if (*retry_after_s < 1)
			*retry_after_s = 1;
	}
	return refused;
}

void ratelimit_give(ratelimit *rl, const char *const *keys)
{
	pthread_mutex_lock(&rl->lock);
	for (size_t i = 0; i < rl->n; i++) {
		if (!keys[i])
			continue;
		bucket_class *c = &rl->classes[i];
		bucket *b = lookup_bucket(c, keys[i]);
		if (b)
			b->tokens = fmin(held(rl, c).burst, b->tokens + 1.0);
	}
	pthread_mutex_unlock(&rl->lock);
}
