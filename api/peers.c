/*
 * peers.c - the live API processes, counted in PostgreSQL (peers.h).
 */
#include "peers.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "storage.h"

struct peers {
	db_pool *pool;
	char id[STORAGE_UUID_LEN + 1];
	char host[64], pid[16], listen[128];
	peers_notify notify;
	void *arg;
	int live; /* the last count; the thread's own */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	bool recount; /* count again now, not at the next beat */
};

int peers_cap(int cap, int live)
{
	int share = live > 1 ? cap / live : cap;
	return share < 1 ? 1 : share;
}

/* Renew this process's row and count the live ones. RET the count, or -1. */
static int beat(peers *p)
{
	PGconn *c;
	if (db_acquire(p->pool, &c) < 0)
		return -1;
	char live_ms[16];
	snprintf(live_ms, sizeof(live_ms), "%d", PEERS_LIVE_MS);
	const char *params[] = {p->id, p->host, p->pid, p->listen, live_ms};
	PGresult *r;
	/* the others live, then this one (its row is not in the statement's snapshot) */
	int rc = db_query(c, &r,
	                  "WITH me AS (INSERT INTO api_processes (id, host, pid, listen)"
	                  "            VALUES ($1, $2, $3::int, $4) ON CONFLICT (id)"
	                  "            DO UPDATE SET seen_at = clock_timestamp() RETURNING id),"
	                  " gone AS (DELETE FROM api_processes"
	                  "          WHERE seen_at < clock_timestamp() - interval '1 hour')"
	                  " SELECT count(*) + 1 FROM api_processes WHERE id <> $1"
	                  " AND seen_at > clock_timestamp() - $5::int * interval '1 millisecond'",
	                  5, params);
	int n = rc == 0 && PQntuples(r) == 1 ? atoi(PQgetvalue(r, 0, 0)) : -1;
	PQclear(r);
	db_release(p->pool, c);
	return n;
}

static void *run(void *arg)
{
	peers *p = arg;
	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		pthread_mutex_unlock(&p->lock);
		int n = beat(p);
		if (n >= 1) {
			if (n != p->live)
				log_printf(
				    LOG_INFO,
				    "%d API process%s serve the platform: each holds 1/%d of "
				    "its limits",
				    n, n == 1 ? "" : "es", n);
			p->live = n;
		}
		p->notify(p->arg, p->live);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += PEERS_BEAT_MS / 1000;
		until.tv_nsec += (long)(PEERS_BEAT_MS % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&p->lock);
		while (!p->stopping && !p->recount &&
		       pthread_cond_timedwait(&p->wake, &p->lock, &until) == 0)
			;
		p->recount = false;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

peers *peers_start(db_pool *pool, const char *listen, peers_notify notify, void *arg)
{
	peers *p = calloc(1, sizeof(*p));
	if (!p || storage_uuid_new(p->id) < 0) {
		log_printf(LOG_ERROR, "could not start counting the API processes");
		free(p);
		return NULL;
	}
	p->pool = pool;
	p->notify = notify;
	p->arg = arg;
	p->live = 1;
	gethostname(p->host, sizeof(p->host) - 1);
	snprintf(p->pid, sizeof(p->pid), "%ld", (long)getpid());
	snprintf(p->listen, sizeof(p->listen), "%s", listen);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&p->lock, NULL);
	if (pthread_create(&p->thread, NULL, run, p) != 0) {
		log_printf(LOG_ERROR, "could not start counting the API processes");
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return NULL;
	}
	return p;
}

void peers_listening(peers *p)
{
	if (!p)
		return;
	PGconn *c;
	if (db_acquire(p->pool, &c) == 0) {
		const char *params[] = {p->id, p->host, p->listen};
		db_query(c, NULL,
		         "DELETE FROM api_processes WHERE id <> $1 AND host = $2 AND listen = $3",
		         3, params);
		db_release(p->pool, c);
	}
	pthread_mutex_lock(&p->lock);
	p->recount = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

void peers_stop(peers *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	PGconn *c;
	if (db_acquire(p->pool, &c) == 0) {
		const char *params[] = {p->id};
		db_query(c, NULL, "DELETE FROM api_processes WHERE id = $1", 1, params);
		db_release(p->pool, c);
	}
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
