/*
 * report_slots.c - counts of the reports and audit exports streaming, of
 * the server and per tenant (report_slots.h). A key with a count has an
 * entry, and every entry holds at least one of the server's slots, so the
 * table needs no more entries than the server has slots.
 */
#include "report_slots.h"
#include "peers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

typedef struct holder {
	char key[REPORT_SLOTS_KEY_MAX];
	int n; /* 0: a free entry */
} holder;

struct report_slots {
	pthread_mutex_t lock;
	int total, per_tenant, used;
	int share;    /* this process holds 1/share of each cap (peers.h) */
	holder *keys; /* total entries */
};

report_slots *report_slots_new(int total, int per_tenant)
{
	report_slots *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (!(s->keys = calloc((size_t)total, sizeof(holder)))) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->total = total;
	s->per_tenant = per_tenant;
	s->share = 1;
	return s;
}

void report_slots_free(report_slots *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->keys);
	free(s);
}

void report_slots_share(report_slots *s, int n)
{
	pthread_mutex_lock(&s->lock);
	s->share = n < 1 ? 1 : n;
	pthread_mutex_unlock(&s->lock);
}

/* key's entry, or with add a free one for it; NULL when there is none. */
static holder *holder_find(report_slots *s, const char *key, bool add)
{
	holder *spare = NULL;
	for (int i = 0; i < s->total; i++) {
		if (s->keys[i].n > 0 && strcmp(s->keys[i].key, key) == 0)
			return &s->keys[i];
		if (!spare && s->keys[i].n == 0)
			spare = &s->keys[i];
	}
	if (add && spare)
		snprintf(spare->key, sizeof(spare->key), "%s", key);
	return add ? spare : NULL;
}

int report_slot_take(api_req *rq, const char *key, report_slot *slot)
{
	report_slots *s = rq->srv->reports;
	bool tenant_full = false, taken = false;
	pthread_mutex_lock(&s->lock);
	holder *h = holder_find(s, key, true);
	if (h && h->n >= peers_cap(s->per_tenant, s->share))
		tenant_full = true;
	else if (h && s->used < peers_cap(s->total, s->share)) {
		h->n++;
		s->used++;
		taken = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (taken) {
		slot->from = s;
		snprintf(slot->key, sizeof(slot->key), "%s", key);
		return 0;
	}
	slot->key[0] = '\0';
	snprintf(rq->retry_after, sizeof(rq->retry_after), "%s", REPORT_SLOTS_RETRY_S);
	if (tenant_full)
		api_fail(rq, ERR_RATE_LIMITED,
		         "%d reports or audit exports of %s are being streamed already",
		         s->per_tenant,
		         strcmp(key, REPORT_SLOTS_PLATFORM) == 0 ? "the platform" : "this tenant");
	else
		api_fail(rq, ERR_RATE_LIMITED,
		         "%d reports and audit exports are being streamed already", s->total);
	return -1;
}

void report_slot_give(report_slot *slot)
{
	if (!slot || !slot->key[0])
		return;
	report_slots *s = slot->from;
	pthread_mutex_lock(&s->lock);
	holder *h = holder_find(s, slot->key, false);
	if (h)
		h->n--;
	if (s->used > 0)
		s->used--;
	pthread_mutex_unlock(&s->lock);
	slot->key[0] = '\0';
}
