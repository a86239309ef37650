/*
 * db.c - connection pool and query helpers over libpq.
 */
#include "db.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

/*
 * Prepared statements. Every SQL text handed to db_query() is a string
 * literal, so its address names it for the life of the process. Each
 * connection prepares a text the first time it runs it and executes the
 * prepared form afterwards, which saves PostgreSQL the parse and plan on
 * every request. conn_stmts records what each open connection prepared;
 * only the registry of connections is shared between threads, a
 * connection's own table is touched only by the thread holding it.
 */
#define DB_CONN_SLOTS 1024
#define DB_STMT_SLOTS 256
/* results a pipeline waits for: each statement's, and each first prepare's */
#define DB_PIPE_SLOTS (2 * DB_PIPELINE_MAX)

typedef struct conn_stmts {
	PGconn *conn;
	const char *sql[DB_STMT_SLOTS]; /* open addressing by address */
	int n;
	/* the pipeline in flight: for each result to come, the statement it
	 * prepares, or NULL for a statement's own result */
	const char *pipe[DB_PIPE_SLOTS];
	int n_pipe;
	int pipe_rc; /* the first failure while sending */
} conn_stmts;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static conn_stmts *registry[DB_CONN_SLOTS];

static size_t ptr_hash(const void *p, size_t mod)
{
	uintptr_t x = (uintptr_t)p;
	x ^= x >> 17;
	x *= 0x9E3779B97F4A7C15ull;
	return (size_t)(x >> 7) % mod;
}

/* RET: c's statement table, created on first use; NULL when full. */
static conn_stmts *stmts_for(PGconn *c)
{
	conn_stmts *found = NULL;
	pthread_mutex_lock(&registry_lock);
	size_t h = ptr_hash(c, DB_CONN_SLOTS);
	for (size_t i = 0; i < DB_CONN_SLOTS; i++) {
		conn_stmts **slot = &registry[(h + i) % DB_CONN_SLOTS];
		if (*slot && (*slot)->conn == c) {
			found = *slot;
			break;
		}
		if (!*slot) {
			found = calloc(1, sizeof(**slot));
			if (found) {
				found->conn = c;
				*slot = found;
			}
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return found;
}

/* Forget c's statements (its prepared forms die with the session). */
static void stmts_forget(PGconn *c)
{
	pthread_mutex_lock(&registry_lock);
	size_t h = ptr_hash(c, DB_CONN_SLOTS);
	for (size_t i = 0; i < DB_CONN_SLOTS; i++) {
		size_t k = (h + i) % DB_CONN_SLOTS;
		if (!registry[k])
			break;
		if (registry[k]->conn == c) {
			free(registry[k]);
			registry[k] = NULL;
			/* re-insert the rest of the probe run so lookups still find them */
			for (size_t j = (k + 1) % DB_CONN_SLOTS; registry[j];
			     j = (j + 1) % DB_CONN_SLOTS) {
				conn_stmts *e = registry[j];
				registry[j] = NULL;
				size_t m = ptr_hash(e->conn, DB_CONN_SLOTS);
				while (registry[m])
					m = (m + 1) % DB_CONN_SLOTS;
				registry[m] = e;
			}
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

void db_close(PGconn *c)
{
	if (!c)
		return;
	stmts_forget(c);
	PQfinish(c);
}

static void stmt_name(const char *sql, char name[32])
{
	snprintf(name, 32, "ty_%" PRIxPTR, (uintptr_t)sql);
}

/* RET: sql's slot in t, or the empty slot where it goes. */
static size_t stmt_slot(const conn_stmts *t, const char *sql)
{
	size_t h = ptr_hash(sql, DB_STMT_SLOTS);
	while (t->sql[h] && t->sql[h] != sql)
		h = (h + 1) % DB_STMT_SLOTS;
	return h;
}

static void stmt_remember(conn_stmts *t, const char *sql)
{
	size_t h = stmt_slot(t, sql);
	if (t->sql[h] != sql) {
		t->sql[h] = sql;
		t->n++;
	}
}

/*
 * Make sure sql is prepared on c. OUT: name. RET 1 prepared (use it),
 * 0 the table is full (run unprepared), or -1 with *fail set.
 */
static int stmt_prepare(PGconn *c, const char *sql, int n, char name[32], PGresult **fail)
{
	conn_stmts *t = stmts_for(c);
	if (!t)
		return 0;
	stmt_name(sql, name);
	if (t->sql[stmt_slot(t, sql)] == sql)
		return 1;
	if (t->n >= DB_STMT_SLOTS / 2)
		return 0;
	PGresult *r = PQprepare(c, name, sql, n, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		*fail = r;
		return -1;
	}
	PQclear(r);
	stmt_remember(t, sql);
	return 1;
}

struct db_pool {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	char *conninfo;
	int size, wait_ms, retry_ms;
	PGconn **idle;              /* stack of idle connections (NULL slots: not yet opened) */
	int n_idle;                 /* entries of idle[] in use, open or NULL */
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
		db_close(p->idle[i]);
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

/* Server notices (and a terminated session's last words) go to the JSON log. */
static void notice_to_log(void *arg, const char *message)
{
	(void)arg;
	log_printf(LOG_WARN, "database: %.*s", (int)strcspn(message, "\n"), message);
}

/*
 * How long a connection may go without hearing from the server before it
 * is given up: TCP keepalives after 5 s of silence, every 2 s, 3 unanswered
 * (about 11 s), and at most 10 s for data sent and not acknowledged
 * (tcp_user_timeout). Without them a connection to a server that vanished
 * (a partition, a host gone) waits for the kernel's defaults, about two
 * hours, and a scheduler holding its leadership on it holds it that long.
 * They come before the connection string, so that its own values win.
 */
static const char *const CONNECT_KEYS[] = {"keepalives",
                                           "keepalives_idle",
                                           "keepalives_interval",
                                           "keepalives_count",
                                           "tcp_user_timeout",
                                           "dbname",
                                           NULL};

PGconn *db_connect(const char *conninfo, char *err, size_t errlen)
{
	const char *values[] = {"1", "5", "2", "3", "10000", conninfo, NULL};
	PGconn *c = PQconnectdbParams(CONNECT_KEYS, values, 1);
	if (PQstatus(c) != CONNECTION_OK) {
		const char *m = PQerrorMessage(c);
		size_t n = strcspn(m, "\n");
		snprintf(err, errlen, "could not connect to the database: %.*s", (int)n, m);
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, notice_to_log, NULL);
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
			log_printf(LOG_WARN, "no database connection free within %d ms",
			           p->wait_ms);
			return -ERR_DB_UNAVAILABLE;
		}
	}
	PGconn *c = p->idle[--p->n_idle];
	pthread_mutex_unlock(&p->lock);

	if (c && conn_alive(c)) {
		*out = c;
		return 0;
	}
	db_close(c);

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
		db_close(c);
		c = NULL;
	}
	pthread_mutex_lock(&p->lock);
	p->idle[p->n_idle++] = c;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->lock);
}

/* RET: what a statement's result means for the caller (see db_query). */
static int result_rc(PGconn *c, const PGresult *r)
{
	ExecStatusType st = PQresultStatus(r);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return 0;
	if (PQstatus(c) != CONNECTION_OK)
		return -ERR_DB_UNAVAILABLE;
	if (st == PGRES_PIPELINE_ABORTED)
		return -ERR_INTERNAL; /* an earlier statement of the pipeline failed and said why */
	const char *state = db_sqlstate(r);
	/* constraint violations are answers, not server faults */
	if (strncmp(state, "23", 2) != 0) {
		const char *m = PQresultErrorMessage(r);
		log_printf(LOG_ERROR, "query failed (%s): %.*s", state, (int)strcspn(m, "\n"), m);
	}
	return strcmp(state, SQLSTATE_UNIQUE_VIOLATION) == 0 ? -ERR_CONFLICT : -ERR_INTERNAL;
}

/* In a pipeline: queue sql (and its prepare, the first time) without waiting. */
static int pipe_send(PGconn *c, const char *sql, int n, const char *const *params)
{
	conn_stmts *t = stmts_for(c);
	if (!t)
		return -ERR_INTERNAL;
	if (t->n_pipe + 2 > DB_PIPE_SLOTS) {
		log_printf(LOG_ERROR, "could not queue a statement: a pipeline holds at most %d",
		           DB_PIPELINE_MAX);
		t->pipe_rc = t->pipe_rc ? t->pipe_rc : -ERR_INTERNAL;
		return t->pipe_rc;
	}
	char name[32];
	stmt_name(sql, name);
	bool prepared = t->sql[stmt_slot(t, sql)] == sql;
	for (int i = 0; i < t->n_pipe && !prepared; i++)
		prepared = t->pipe[i] == sql; /* prepared earlier in this pipeline */
	if (!prepared && t->n + t->n_pipe < DB_STMT_SLOTS / 2) {
		if (!PQsendPrepare(c, name, sql, n, NULL))
			goto broken;
		t->pipe[t->n_pipe++] = sql;
		prepared = true;
	}
	if (!(prepared ? PQsendQueryPrepared(c, name, n, params, NULL, NULL, 0)
	               : PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0)))
		goto broken;
	t->pipe[t->n_pipe++] = NULL;
	return 0;
broken:
	if (!t->pipe_rc) {
		t->pipe_rc = PQstatus(c) != CONNECTION_OK ? -ERR_DB_UNAVAILABLE : -ERR_INTERNAL;
		log_printf(LOG_ERROR, "could not send a statement: %.*s",
		           (int)strcspn(PQerrorMessage(c), "\n"), PQerrorMessage(c));
	}
	return t->pipe_rc;
}

int db_query(PGconn *c, PGresult **res, const char *sql, int n, const char *const *params)
{
	if (PQpipelineStatus(c) != PQ_PIPELINE_OFF) {
		if (res)
			*res = NULL;
		return pipe_send(c, sql, n, params);
	}
	char name[32];
	PGresult *r = NULL;
	int prepared = stmt_prepare(c, sql, n, name, &r);
	if (prepared > 0)
		r = PQexecPrepared(c, name, n, params, NULL, NULL, 0);
	else if (prepared == 0)
		r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	int rc = result_rc(c, r);
	if (res)
		*res = r;
	else
		PQclear(r);
	return rc;
}

int db_pipeline_begin(PGconn *c)
{
	conn_stmts *t = stmts_for(c);
	if (!t || PQpipelineStatus(c) != PQ_PIPELINE_OFF ||
	    PQtransactionStatus(c) != PQTRANS_IDLE || !PQenterPipelineMode(c))
		return PQstatus(c) != CONNECTION_OK ? -ERR_DB_UNAVAILABLE : -ERR_INTERNAL;
	t->n_pipe = 0;
	t->pipe_rc = 0;
	return 0;
}

/* The pipeline's next result; a NULL ends each statement's results. RET NULL: none came. */
static PGresult *pipe_next(PGconn *c)
{
	PGresult *r = PQgetResult(c);
	return r ? r : PQgetResult(c);
}

int db_pipeline_end(PGconn *c, PGresult **last)
{
	if (last)
		*last = NULL;
	conn_stmts *t = stmts_for(c);
	if (!t || PQpipelineStatus(c) == PQ_PIPELINE_OFF)
		return -ERR_INTERNAL;
	int rc = t->pipe_rc;
	if (!PQpipelineSync(c) && !rc)
		rc = PQstatus(c) != CONNECTION_OK ? -ERR_DB_UNAVAILABLE : -ERR_INTERNAL;
	for (int i = 0; i < t->n_pipe; i++) {
		PGresult *r = pipe_next(c);
		if (!r) {
			rc = rc ? rc : -ERR_DB_UNAVAILABLE; /* the server went away */
			break;
		}
		if (t->pipe[i]) { /* a prepare: once it worked, the statement is known */
			if (PQresultStatus(r) == PGRES_COMMAND_OK)
				stmt_remember(t, t->pipe[i]);
			PQclear(r);
			continue;
		}
		int qrc = result_rc(c, r);
		rc = rc ? rc : qrc;
		if (last && i == t->n_pipe - 1) {
			*last = r;
		} else {
			PQclear(r);
		}
	}
	/* up to the sync: the implicit transaction's commit, or why it failed */
	PGresult *r;
	while (PQstatus(c) == CONNECTION_OK && (r = pipe_next(c)) != NULL) {
		ExecStatusType st = PQresultStatus(r);
		if (st != PGRES_PIPELINE_SYNC && !rc)
			rc = result_rc(c, r);
		PQclear(r);
		if (st == PGRES_PIPELINE_SYNC)
			break;
	}
	t->n_pipe = 0;
	t->pipe_rc = 0;
	if (!PQexitPipelineMode(c) && !rc)
		rc = PQstatus(c) != CONNECTION_OK ? -ERR_DB_UNAVAILABLE : -ERR_INTERNAL;
	if (rc && last) {
		PQclear(*last);
		*last = NULL;
	}
	return rc;
}

const char *db_sqlstate(const PGresult *res)
{
	const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	return s ? s : "";
}

/* Transaction control has nothing to plan: the simple protocol is enough. */
static int exec_simple(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0
	         : PQstatus(c) != CONNECTION_OK        ? -ERR_DB_UNAVAILABLE
	                                               : -ERR_INTERNAL;
	if (rc == -ERR_INTERNAL) {
		const char *m = PQresultErrorMessage(r);
		log_printf(LOG_ERROR, "%s failed: %.*s", sql, (int)strcspn(m, "\n"), m);
	}
	PQclear(r);
	return rc;
}

int db_begin(PGconn *c)
{
	return exec_simple(c, "BEGIN");
}

int db_commit(PGconn *c)
{
	PGresult *r = PQexec(c, "COMMIT");
	int rc = 0;
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		rc = PQstatus(c) != CONNECTION_OK ? -ERR_DB_UNAVAILABLE : -ERR_INTERNAL;
	else if (strcmp(PQcmdStatus(r), "COMMIT") != 0)
		rc = -ERR_INTERNAL; /* the transaction had failed: the server rolled it back */
	PQclear(r);
	return rc;
}

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

char *db_array_literal(const char *const *items, int n)
{
	size_t cap = 3;
	for (int i = 0; i < n; i++)
		cap += 2 * strlen(items[i]) + 3;
	char *out = malloc(cap), *w = out;
	if (!out)
		return NULL;
	*w++ = '{';
	for (int i = 0; i < n; i++) {
		if (i)
			*w++ = ',';
		*w++ = '"';
		for (const char *c = items[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				*w++ = '\\';
			*w++ = *c;
		}
		*w++ = '"';
	}
	*w++ = '}';
	*w = '\0';
	return out;
}
