/*
 * readcache.c - the read cache of job answers and the thread that listens
 * for the changes that invalidate it (readcache.h).
 */
#include "readcache.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "db.h"
#include "jsonx.h"
#include "log.h"

typedef struct entry {
	bool used;
	char token_hash[65];
	char job_id[37];
	api_principal who;
	api_scope scope;
	double token_expires; /* seconds since the epoch */
	double stored;        /* clock_mono_s() */
	char *doc;
	size_t doc_len;
} entry;

struct readcache {
	pthread_mutex_t lock;
	entry *slots;
	uint64_t gen;
	bool live;
	int ttl_ms;
	/* the listener */
	char *conninfo;
	int retry_ms;
	pthread_t thread;
	bool has_thread;
	atomic_bool stopping;
};

static size_t slot_of(const char *token_hash, const char *job_id)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const char *p = token_hash; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (const char *p = job_id; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (size_t)(h % READCACHE_SLOTS);
}

static void entry_clear(entry *e)
{
	free(e->doc);
	memset(e, 0, sizeof(*e));
}

/* Caller holds the lock. */
static void drop_all_locked(readcache *rc)
{
	for (size_t i = 0; i < READCACHE_SLOTS; i++)
		if (rc->slots[i].used)
			entry_clear(&rc->slots[i]);
	rc->gen++;
}

uint64_t readcache_gen(readcache *rc)
{
	pthread_mutex_lock(&rc->lock);
	uint64_t g = rc->gen;
	pthread_mutex_unlock(&rc->lock);
	return g;
}

bool readcache_get(readcache *rc, const char *token_hash, const char *job_id, api_principal *who,
                   api_scope *sc, char **doc, size_t *doc_len)
{
	bool hit = false;
	pthread_mutex_lock(&rc->lock);
	entry *e = &rc->slots[slot_of(token_hash, job_id)];
	if (rc->live && e->used && strcmp(e->token_hash, token_hash) == 0 &&
	    strcmp(e->job_id, job_id) == 0) {
		if ((clock_mono_s() - e->stored) * 1e3 >= rc->ttl_ms ||
		    clock_epoch_s() >= e->token_expires) {
			entry_clear(e);
		} else if ((*doc = malloc(e->doc_len + 1)) != NULL) {
			memcpy(*doc, e->doc, e->doc_len + 1);
			*doc_len = e->doc_len;
			*who = e->who;
			*sc = e->scope;
			hit = true;
		}
	}
	pthread_mutex_unlock(&rc->lock);
	return hit;
}

void readcache_put(readcache *rc, uint64_t gen, const char *token_hash, const api_principal *who,
                   const api_scope *sc, double token_expires, const char *doc, size_t doc_len)
{
	if (doc_len > READCACHE_DOC_MAX || strlen(token_hash) >= sizeof(((entry *)0)->token_hash) ||
	    strlen(sc->job_id) >= sizeof(((entry *)0)->job_id))
		return;
	char *copy = malloc(doc_len + 1);
	if (!copy)
		return;
	memcpy(copy, doc, doc_len);
	copy[doc_len] = '\0';
	pthread_mutex_lock(&rc->lock);
	if (!rc->live || gen != rc->gen) { /* the result may predate a change */
		pthread_mutex_unlock(&rc->lock);
		free(copy);
		return;
	}
	entry *e = &rc->slots[slot_of(token_hash, sc->job_id)];
	entry_clear(e);
	e->used = true;
	strcpy(e->token_hash, token_hash);
	strcpy(e->job_id, sc->job_id);
	e->who = *who;
	e->scope = *sc;
	e->token_expires = token_expires;
	e->stored = clock_mono_s();
	e->doc = copy;
	e->doc_len = doc_len;
	pthread_mutex_unlock(&rc->lock);
}

void readcache_drop_tenant(readcache *rc, const char *tenant_id)
{
	pthread_mutex_lock(&rc->lock);
	for (size_t i = 0; i < READCACHE_SLOTS; i++) {
		entry *e = &rc->slots[i];
		if (e->used && strcmp(e->scope.tenant_id, tenant_id) == 0)
			entry_clear(e);
	}
	rc->gen++;
	pthread_mutex_unlock(&rc->lock);
}

void readcache_drop_all(readcache *rc)
{
	pthread_mutex_lock(&rc->lock);
	drop_all_locked(rc);
	pthread_mutex_unlock(&rc->lock);
}

void readcache_notified(readcache *rc, const char *payload)
{
	if (jsonx_is_uuid(payload))
		readcache_drop_tenant(rc, payload);
	else
		readcache_drop_all(rc);
}

void readcache_set_live(readcache *rc, bool live)
{
	pthread_mutex_lock(&rc->lock);
	drop_all_locked(rc);
	rc->live = live && rc->ttl_ms > 0;
	pthread_mutex_unlock(&rc->lock);
}

/* Sleep ms, or less when the cache is being freed. */
static void nap(readcache *rc, int ms)
{
	for (int slept = 0; slept < ms && !atomic_load(&rc->stopping); slept += 50)
		nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
}

/* A connection listening on the channel, or NULL (the reason logged once per outage). */
static PGconn *listen_connect(readcache *rc, bool *warned)
{
	char err[512];
	PGconn *c = db_connect(rc->conninfo, err, sizeof(err));
	if (c) {
		PGresult *r = PQexec(c, "LISTEN " READCACHE_CHANNEL);
		bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		if (!ok)
			snprintf(err, sizeof(err), "LISTEN failed: %s", PQresultErrorMessage(r));
		PQclear(r);
		if (!ok) {
			db_close(c);
			c = NULL;
		}
	}
	if (!c && !*warned) {
		log_printf(LOG_WARN, "read cache off until the database is back: %s", err);
		*warned = true;
	}
	return c;
}

/*
 * The listener: serve from memory only while the notifications flow. Any
 * failure of its connection stops serving at once; the next connection
 * drops everything before serving again.
 */
static void *listen_main(void *arg)
{
	readcache *rc = arg;
	PGconn *c = NULL;
	bool warned = false;
	while (!atomic_load(&rc->stopping)) {
		if (!c) {
			c = listen_connect(rc, &warned);
			if (!c) {
				nap(rc, rc->retry_ms);
				continue;
			}
			readcache_set_live(rc, true);
			if (warned)
				log_printf(LOG_INFO, "read cache on again");
			warned = false;
		}
		struct pollfd pfd = {.fd = PQsocket(c), .events = POLLIN};
		int n = poll(&pfd, 1, 200);
		if (n == 0)
			continue;
		if (n < 0 || !PQconsumeInput(c) || PQstatus(c) != CONNECTION_OK) {
			readcache_set_live(rc, false);
			db_close(c);
			c = NULL;
			continue;
		}
		PGnotify *note;
		while ((note = PQnotifies(c)) != NULL) {
			readcache_notified(rc, note->extra);
			PQfreemem(note);
		}
	}
	readcache_set_live(rc, false);
	db_close(c);
	return NULL;
}

readcache *readcache_new(int ttl_ms, const char *conninfo, int retry_ms)
{
	readcache *rc = calloc(1, sizeof(*rc));
	if (!rc)
		return NULL;
	rc->slots = calloc(READCACHE_SLOTS, sizeof(*rc->slots));
	rc->conninfo = conninfo ? strdup(conninfo) : NULL;
	if (!rc->slots || (conninfo && !rc->conninfo)) {
		free(rc->slots);
		free(rc->conninfo);
		free(rc);
		return NULL;
	}
	pthread_mutex_init(&rc->lock, NULL);
	rc->ttl_ms = ttl_ms;
	rc->retry_ms = retry_ms;
	atomic_init(&rc->stopping, false);
	if (ttl_ms > 0 && conninfo) {
		if (pthread_create(&rc->thread, NULL, listen_main, rc) != 0) {
			readcache_free(rc);
			return NULL;
		}
		rc->has_thread = true;
	}
	return rc;
}

void readcache_free(readcache *rc)
{
	if (!rc)
		return;
	atomic_store(&rc->stopping, true);
	if (rc->has_thread)
		pthread_join(rc->thread, NULL);
	for (size_t i = 0; i < READCACHE_SLOTS; i++)
		entry_clear(&rc->slots[i]);
	free(rc->slots);
	free(rc->conninfo);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}
