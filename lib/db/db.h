/*
 * db.h - PostgreSQL access: a fixed pool of connections and query helpers.
 *
 * Every statement is parameterised (PQexecParams); no SQL is ever built
 * from request data. While the database is down, db_acquire() answers
 * -ERR_DB_UNAVAILABLE at once (after one failed connect it waits retry_ms
 * before trying again), and the pool reconnects by itself when it returns.
 *
 * Ownership: a connection from db_acquire() belongs to the caller until
 * db_release(). Results from db_query() belong to the caller (PQclear).
 */
#ifndef TY_DB_H
#define TY_DB_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "error.h"

typedef struct db_pool db_pool;

/* RET: a pool of size lazily opened connections, or NULL on allocation failure. */
db_pool *db_pool_new(const char *conninfo, int size, int wait_ms, int retry_ms);
void db_pool_free(db_pool *p);

/* OUT: *out, a healthy connection. RET 0 or -ERR_DB_UNAVAILABLE. */
int db_acquire(db_pool *p, PGconn **out);

/* Give c back; a connection that failed (or is in a transaction) is closed. */
void db_release(db_pool *p, PGconn *c);

/*
 * Open one connection (the pool opens its own with it too), with TCP
 * keepalives and tcp_user_timeout set so that a server that vanished is
 * noticed within about 11 s (the connection string may set its own).
 * RET NULL with a message in err.
 */
PGconn *db_connect(const char *conninfo, char *err, size_t errlen);

/* Close a connection opened by db_connect() or the pool. NULL is fine. */
void db_close(PGconn *c);

/*
 * Run sql with n text parameters (NULL entries are SQL NULL). sql must be
 * a string literal (or otherwise never change or be freed): its address
 * names the statement each connection prepares once and then reuses.
 * OUT: *res (may be NULL when the caller needs no rows; else caller PQclears).
 * RET: 0; -ERR_DB_UNAVAILABLE when the connection broke; -ERR_CONFLICT for
 * a unique violation; -ERR_INTERNAL for any other failure (the SQLSTATE is
 * in *res, see db_sqlstate).
 */
int db_query(PGconn *c, PGresult **res, const char *sql, int n, const char *const *params);

/*
 * A pipeline: the statements db_query() is given between db_pipeline_begin()
 * and db_pipeline_end() go to the server together, in one round trip, and
 * run as one implicit transaction: all of them commit, or none does. Inside
 * a pipeline db_query() only sends: it answers 0 (or why it could not send)
 * and *res NULL, and the results come at db_pipeline_end(). At most
 * DB_PIPELINE_MAX statements, no BEGIN or COMMIT (db_begin) inside; c must
 * be outside a transaction.
 * RET (begin): 0; -ERR_DB_UNAVAILABLE; -ERR_INTERNAL.
 */
#define DB_PIPELINE_MAX 16
int db_pipeline_begin(PGconn *c);

/*
 * Send the pipeline, wait for it to commit and leave pipeline mode.
 * OUT: *last (may be NULL), the last statement's result when all went well
 * (caller PQclears), else NULL. RET: 0, or the first failure as db_query()
 * answers it (-ERR_CONFLICT for a unique violation...).
 */
int db_pipeline_end(PGconn *c, PGresult **last);

/* RET: the SQLSTATE of a failed result ("23505" unique violation...), or "". */
const char *db_sqlstate(const PGresult *res);

int db_begin(PGconn *c);
int db_commit(PGconn *c);
/* Roll back if a transaction is open; never fails loudly. */
void db_rollback(PGconn *c);

/*
 * items[0..n-1] as one PostgreSQL array literal ({"a","b"}), each element
 * quoted, for a parameter such as $1::uuid[] or $2::text[] (with unnest()
 * one statement serves a whole batch). RET: a malloc()ed string, or NULL
 * when memory ran out.
 */
char *db_array_literal(const char *const *items, int n);

/* Value of row r, column name col, or NULL when SQL NULL. */
const char *db_get(const PGresult *res, int r, const char *col);

#define SQLSTATE_UNIQUE_VIOLATION "23505"
#define SQLSTATE_FOREIGN_KEY      "23503"
#define SQLSTATE_CHECK            "23514"

#endif
