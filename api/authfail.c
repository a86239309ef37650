/*
 * authfail.c - failed authentications counted per client address into
 * windows, one audit record a closed window (authfail.h).
 */
#include "authfail.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "clock.h"
#include "log.h"

typedef struct slot {
	bool used;
	double closes;    /* monotonic time its window closes */
	authfail_batch b; /* what the open window counted (b.count 0: nothing yet) */
} slot;

struct authfail {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool stopping;
	db_pool *pool;
	double interval;
	prom_family *written;
	slot slots[AUTHFAIL_SLOTS];
	slot other; /* one window for every key that found no slot */
};

static unsigned hash_str(unsigned h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u; /* FNV-1a */
	return h;
}

static bool slot_is(const slot *s, const authfail_event *e)
{
	return strcmp(s->b.addr, e->addr) == 0 &&
	       strcmp(s->b.user_id, e->user_id ? e->user_id : "") == 0;
}

/* e's slot, a free one made e's (*fresh), or the shared one. Under af->lock. */
static slot *slot_find(authfail *af, const authfail_event *e, bool *fresh)
{
	unsigned h = hash_str(hash_str(2166136261u, e->addr), e->user_id);
	slot *free_slot = NULL;
	*fresh = false;
	for (unsigned i = 0; i < 8; i++) {
		slot *s = &af->slots[(h + i) % AUTHFAIL_SLOTS];
		if (s->used && slot_is(s, e))
			return s;
		if (!s->used && !free_slot)
			free_slot = s;
	}
	slot *s = free_slot;
	if (!s) {
		s = &af->other;
		if (s->used)
			return s;
	}
	memset(s, 0, sizeof(*s));
	s->used = true;
	*fresh = true;
	if (s == &af->other) {
		snprintf(s->b.addr, sizeof(s->b.addr), "(other addresses)");
	} else {
		snprintf(s->b.addr, sizeof(s->b.addr), "%s", e->addr);
		snprintf(s->b.user_id, sizeof(s->b.user_id), "%s", e->user_id ? e->user_id : "");
		snprintf(s->b.user_name, sizeof(s->b.user_name), "%s",
		         e->user_name ? e->user_name : "");
	}
	return s;
}

/* Add e to the batch b. */
static void batch_count(authfail_batch *b, const authfail_event *e, double epoch)
{
	if (b->count++ == 0)
		b->first = epoch;
	b->last = epoch;
	snprintf(b->request_id, sizeof(b->request_id), "%s", e->request_id ? e->request_id : "");
	int i;
	for (i = 0; i < AUTHFAIL_ROUTES && b->routes[i] && b->routes[i] != e->rt; i++)
		;
	if (i == AUTHFAIL_ROUTES) {
		b->other_routes++;
	} else {
		b->routes[i] = e->rt;
		b->route_n[i]++;
	}
	for (i = 0; i < AUTHFAIL_CODES && b->code_n[i] && b->codes[i] != e->code; i++)
		;
	if (i < AUTHFAIL_CODES) {
		b->codes[i] = e->code;
		b->code_n[i]++;
	}
}

/* Empty s's batch for its next window, keeping its key. */
static void batch_reset(slot *s)
{
	authfail_batch *b = &s->b;
	b->count = 0;
	b->other_routes = 0;
	memset(b->routes, 0, sizeof(b->routes));
	memset(b->route_n, 0, sizeof(b->route_n));
	memset(b->codes, 0, sizeof(b->codes));
	memset(b->code_n, 0, sizeof(b->code_n));
}

bool authfail_note(authfail *af, const authfail_event *e, double now_s, authfail_batch *due,
                   bool *has_due)
{
	bool fresh, first = false;
	double epoch = clock_epoch_s();
	*has_due = false;
	pthread_mutex_lock(&af->lock);
	slot *s = slot_find(af, e, &fresh);
	if (!fresh && now_s >= s->closes) {
		/* the window closed before the writer came by */
		if (s->b.count > 0) {
			*due = s->b;
			*has_due = true;
			batch_reset(s);
			batch_count(&s->b, e, epoch);
		} else {
			first = true;
		}
		s->closes = now_s + af->interval;
	} else if (fresh) {
		first = true;
		s->closes = now_s + af->interval;
	} else {
		batch_count(&s->b, e, epoch);
	}
	pthread_mutex_unlock(&af->lock);
	return first;
}

int authfail_write(authfail *af, PGconn *c, const authfail_batch *b)
{
	char first[32], last[32], resource[80];
	clock_rfc3339(b->first, first);
	clock_rfc3339(b->last, last);
	json_t *routes = json_object(), *codes = json_object();
	for (int i = 0; i < AUTHFAIL_ROUTES && b->routes[i]; i++) {
		char name[256];
		snprintf(name, sizeof(name), "%s %s", b->routes[i]->method, b->routes[i]->pattern);
		json_object_set_new(routes, name, json_integer(b->route_n[i]));
	}
	if (b->other_routes)
		json_object_set_new(routes, "(other routes)", json_integer(b->other_routes));
	for (int i = 0; i < AUTHFAIL_CODES && b->code_n[i]; i++)
		json_object_set_new(codes, err_info(b->codes[i])->code, json_integer(b->code_n[i]));
	json_t *d =
	    json_pack("{s:s, s:I, s:s, s:s, s:i, s:o, s:o}", "reason", "failed authentications",
	              "count", (json_int_t)b->count, "first", first, "last", last, "interval_s",
	              (int)af->interval, "routes", routes, "codes", codes);
	snprintf(resource, sizeof(resource), "client/%s", b->addr);
	audit_record a = {
	    .actor_id = b->user_id[0] ? b->user_id : NULL,
	    .actor_name = b->user_name,
	    .action = "authz.deny",
	    .resource = resource,
	    .outcome = "denied",
	    .status = 401,
	    .request_id = b->request_id,
	    .client_addr = b->addr,
	    .detail = d,
	};
	int rc = d ? audit_write(c, &a) : -ERR_INTERNAL;
	json_decref(d);
	if (rc == 0 && af->written) {
		const char *const outcome[] = {"denied"};
		prom_add(af->written, outcome, 1);
	}
	if (rc)
		log_printf(
		    LOG_ERROR,
		    "could not write the audit record of %ld failed authentication%s from %s",
		    b->count, b->count == 1 ? "" : "s", b->addr);
	return rc;
}

/* Write batches[0..n) on a pooled connection. */
static void write_all(authfail *af, const authfail_batch *batches, size_t n)
{
	if (n == 0)
		return;
	PGconn *c;
	if (db_acquire(af->pool, &c) < 0) {
		for (size_t i = 0; i < n; i++)
			log_printf(
			    LOG_ERROR,
			    "could not write the audit record of %ld failed authentication%s "
			    "from %s: the database is unavailable",
			    batches[i].count, batches[i].count == 1 ? "" : "s", batches[i].addr);
		return;
	}
	for (size_t i = 0; i < n; i++)
		authfail_write(af, c, &batches[i]);
	db_release(af->pool, c);
}

/*
 * Take the batches of the windows closed by now (all of them when all),
 * opening the next window of those that counted something and ending the
 * others. OUT: out[0..*n). RET: whether more are waiting (out was full).
 */
static bool take_closed(authfail *af, double now, bool all, authfail_batch *out, size_t cap,
                        size_t *n)
{
	*n = 0;
	for (size_t i = 0; i <= AUTHFAIL_SLOTS; i++) {
		slot *s = i < AUTHFAIL_SLOTS ? &af->slots[i] : &af->other;
		if (!s->used || (!all && now < s->closes))
			continue;
		if (s->b.count == 0) {
			s->used = false;
			continue;
		}
		if (*n == cap)
			return true;
		out[(*n)++] = s->b;
		batch_reset(s);
		s->closes = now + af->interval;
	}
	return false;
}

#define WRITE_BATCH 32

static void *writer_main(void *arg)
{
	authfail *af = arg;
	authfail_batch *out = malloc(WRITE_BATCH * sizeof(*out));
	pthread_mutex_lock(&af->lock);
	while (!af->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&af->wake, &af->lock, &until);
		if (af->stopping || !out)
			continue;
		bool more = true;
		while (more && !af->stopping) {
			size_t n;
			more = take_closed(af, clock_mono_s(), false, out, WRITE_BATCH, &n);
			pthread_mutex_unlock(&af->lock);
			write_all(af, out, n);
			pthread_mutex_lock(&af->lock);
		}
	}
	pthread_mutex_unlock(&af->lock);
	free(out);
	return NULL;
}

authfail *authfail_start(db_pool *pool, int interval_s, prom_family *written)
{
	authfail *af = calloc(1, sizeof(*af));
	if (!af) {
		log_printf(LOG_ERROR,
		           "could not start counting failed authentications: out of memory");
		return NULL;
	}
	af->pool = pool;
	af->interval = interval_s;
	af->written = written;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&af->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&af->lock, NULL);
	int rc = pthread_create(&af->thread, NULL, writer_main, af);
	if (rc) {
		log_printf(LOG_ERROR, "could not start the writer of failed authentications: %s",
		           strerror(rc));
		pthread_cond_destroy(&af->wake);
		pthread_mutex_destroy(&af->lock);
		free(af);
		return NULL;
	}
	return af;
}

void authfail_stop(authfail *af)
{
	if (!af)
		return;
	pthread_mutex_lock(&af->lock);
	af->stopping = true;
	pthread_cond_signal(&af->wake);
	pthread_mutex_unlock(&af->lock);
	pthread_join(af->thread, NULL);
	authfail_batch *out = malloc(WRITE_BATCH * sizeof(*out));
	bool more = out != NULL;
	while (more) {
		size_t n;
		more = take_closed(af, clock_mono_s(), true, out, WRITE_BATCH, &n);
		write_all(af, out, n);
	}
	free(out);
	pthread_cond_destroy(&af->wake);
	pthread_mutex_destroy(&af->lock);
	free(af);
}

void authfail_addr_key(const char *addr, char out[64])
{
	struct in6_addr a6;
	if (!addr || !*addr) {
		snprintf(out, 64, "unknown");
		return;
	}
	if (strchr(addr, ':') && inet_pton(AF_INET6, addr, &a6) == 1) {
		char text[INET6_ADDRSTRLEN];
		memset(a6.s6_addr + 8, 0, 8);
		inet_ntop(AF_INET6, &a6, text, sizeof(text));
		snprintf(out, 64, "%s/64", text);
		return;
	}
	snprintf(out, 64, "%.63s", addr);
}
