/*
 * db.c - connection pool and query helpers over libpq.
 */
#include "db.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

struct db_pool {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	char *conninfo;
	int size, wait_ms, retry_ms;
	PGconn **idle; /* stack of idle connections (NULL slots: not yet opened) */
	int n_idle;    /* entries of idle[] in use, open or NULL */
	struct timespec down_until; /* fail fast until then after a failed connect */
};

static void ts_add_ms(struct timespec *t, int ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

db_pool *db_pool_new(const char *conninfo, int size, int wait_ms, int retry_ms)
{
	db_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->conninfo = strdup(conninfo);
	p->idle = calloc((size_t)size, sizeof(PGconn *));
	if (!p->conninfo || !p->idle) {
		free(p->conninfo);
		free(p->idle);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->freed, &ca);
	pthread_condattr_destroy(&ca);
	p->size = size;
	p->n_idle = size; /* every slot starts idle and unopened */
	p->wait_ms = wait_ms;
	p->retry_ms = retry_ms;
	return p;
}

void db_pool_free(db_pool *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_idle; i++)
		if (p->idle[i])
			PQfinish(p->idle[i]);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->freed);
	free(p->idle);
	free(p->conninfo);
	free(p);
}

/* RET: true when an idle connection still looks usable (server did not hang up). */
static bool conn_alive(PGconn *c)
{
	if (PQstatus(c) != CONNECTION_OK)
		return false;
	if (PQconsumeInput(c) == 0)
		return false;
	return PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) == PQTRANS_IDLE;
}

PGconn *db_connect(const char *conninfo, char *err, size_t errlen)
{
	PGconn *c = PQconnectdb(conninfo);
	if (PQstatus(c) != CONNECTION_OK) {
		const char *m = PQerrorMessage(c);
		size_t n = strcspn(m, "\n");
		snprintf(err, errlen, "could not connect to the database: %.*s", (int)n, m);
		PQfinish(c);
		return NULL;
	}
	return c;
}

int db_acquire(db_pool *p, PGconn **out)
{
	struct timespec now, deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	ts_add_ms(&deadline, p->wait_ms);

	pthread_mutex_lock(&p->lock);
	while (p->n_idle == 0) {
		if (pthread_cond_timedwait(&p->freed, &p->lock, &deadline) == ETIMEDOUT &&
		    p->n_idle == 0) {
			pthread_mutex_unlock(&p->lock);
			log_printf(LOG_WARN, "no database connection free within %d ms", p->wait_ms);
			return -ERR_DB_UNAVAILABLE;
		}
	}
	PGconn *c = p->idle[--p->n_idle];
	pthread_mutex_unlock(&p->lock);

	if (c && conn_alive(c)) {
		*out = c;
		return 0;
	}
	if (c)
		PQfinish(c);

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&p->lock);
	bool down = ts_before(&now, &p->down_until);
	pthread_mutex_unlock(&p->lock);
	if (!down) {
		char err[256];
		c = db_connect(p->conninfo, err, sizeof(err));
		if (c) {
			*out = c;
			return 0;
		}
		log_printf(LOG_WARN, "%s", err);
		pthread_mutex_lock(&p->lock);
		p->down_until = now;
		ts_add_ms(&p->down_until, p->retry_ms);
		pthread_mutex_unlock(&p->lock);
	}
	/* hand the empty slot back so a later request can try again */
	db_release(p, NULL);
	return -ERR_DB_UNAVAILABLE;
}

void db_release(db_pool *p, PGconn *c)
{
	if (c && (PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE)) {
		PQfinish(c);
		c = NULL;
	}
	pthread_mutex_lock(&p->lock);
	p->idle[p->n_idle++] = c;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->lock);
}

int db_query(PGconn *c, PGresult **res, const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	int rc = 0;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		if (PQstatus(c) != CONNECTION_OK) {
			rc = -ERR_DB_UNAVAILABLE;
		} else {
			const char *state = db_sqlstate(r);
			rc = strcmp(state, SQLSTATE_UNIQUE_VIOLATION) == 0 ? -ERR_CONFLICT
									  : -ERR_INTERNAL;
			/* constraint violations are answers, not server faults */
			if (strncmp(state, "23", 2) != 0) {
				const char *m = PQresultErrorMessage(r);
				log_printf(LOG_ERROR, "query failed (%s): %.*s", state,
					   (int)strcspn(m, "\n"), m);
			}
		}
	}
	if (res)
		*res = r;
	else
		PQclear(r);
	return rc;
}

const char *db_sqlstate(const PGresult *res)
{
	const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	return s ? s : "";
}

int db_begin(PGconn *c) { return db_query(c, NULL, "BEGIN", 0, NULL); }

int db_commit(PGconn *c) { return db_query(c, NULL, "COMMIT", 0, NULL); }

void db_rollback(PGconn *c)
{
	if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
		PQclear(PQexec(c, "ROLLBACK"));
}

const char *db_get(const PGresult *res, int r, const char *col)
{
	int f = PQfnumber(res, col);
	if (f < 0 || r >= PQntuples(res) || PQgetisnull(res, r, f))
		return NULL;
	return PQgetvalue(res, r, f);
}
