/*
 * ratelimit.c - token buckets keyed by API token id.
 */
#include "ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bucket {
	char key[40];
	double tokens;
	double last; /* time of the last refill */
} bucket;

struct ratelimit {
	pthread_mutex_t lock;
	double rps, burst;
	bucket slots[RATELIMIT_SLOTS];
};

ratelimit *ratelimit_new(double rps, double burst)
{
	ratelimit *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return NULL;
	pthread_mutex_init(&rl->lock, NULL);
	rl->rps = rps;
	rl->burst = burst;
	return rl;
}

void ratelimit_free(ratelimit *rl)
{
	if (!rl)
		return;
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}

static unsigned hash_key(const char *s)
{
	unsigned h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Linear probe over 8 slots; take the key's slot or the stalest one. */
static bucket *find_bucket(ratelimit *rl, const char *key, double now)
{
	unsigned h = hash_key(key);
	bucket *victim = NULL;
	for (unsigned i = 0; i < 8; i++) {
		bucket *b = &rl->slots[(h + i) % RATELIMIT_SLOTS];
		if (strcmp(b->key, key) == 0)
			return b;
		if (!victim || b->last < victim->last)
			victim = b;
	}
	snprintf(victim->key, sizeof(victim->key), "%s", key);
	victim->tokens = rl->burst;
	victim->last = now;
	return victim;
}

bool ratelimit_take(ratelimit *rl, const char *key, double now_s, int *retry_after_s)
{
	pthread_mutex_lock(&rl->lock);
	bucket *b = find_bucket(rl, key, now_s);
	b->tokens = fmin(rl->burst, b->tokens + (now_s - b->last) * rl->rps);
	b->last = now_s;
	bool ok = b->tokens >= 1.0;
	if (ok)
		b->tokens -= 1.0;
	else
		*retry_after_s = (int)ceil((1.0 - b->tokens) / rl->rps);
	pthread_mutex_unlock(&rl->lock);
	if (!ok && *retry_after_s < 1)
		*retry_after_s = 1;
	return ok;
}
