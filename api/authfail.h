/*
 * authfail.h - failed authentications counted per client address, so that
 * a flood of them leaves a few audit records rather than one a request.
 *
 * A failure's key is its client address (an IPv6 address by its /64) and,
 * for a revoked or expired token, the user the token names. The first
 * failure of a key is recorded at once, on its own (by the caller), and
 * opens a window of `interval_s` seconds. The failures inside the window
 * are only counted: when it closes, they make one authz.deny record with
 * their count, their routes and their codes, and the next window opens;
 * a window that closes with nothing counted ends. That record is written
 * by a thread of the module's own within a second of the close, or by the
 * key's next failure if it comes first; authfail_stop() writes whatever
 * is still counted. So a key has at most one record per interval.
 *
 * Who frees what: authfail_stop() frees what authfail_start() made; the
 * strings of an authfail_event are copied.
 */
#ifndef TY_AUTHFAIL_H
#define TY_AUTHFAIL_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "db.h"
#include "error.h"
#include "prom.h"
#include "router.h"

/* keys whose windows are open at once; more share one window, "(other addresses)" */
#define AUTHFAIL_SLOTS 1024
/* routes named in one record; the others are counted as "(other routes)" */
#define AUTHFAIL_ROUTES 8
/* distinct codes counted in one record */
#define AUTHFAIL_CODES 4

typedef struct authfail authfail;

typedef struct authfail_event {
	const char *addr;       /* the client address as a key (authfail_addr_key) */
	const char *user_id;    /* the user a revoked or expired token names, or NULL */
	const char *user_name;  /* that user's name, or NULL */
	const route *rt;        /* the route asked for (the route table's, not copied) */
	err_code code;          /* why: ERR_UNAUTHENTICATED, ERR_TOKEN_REVOKED... */
	const char *request_id; /* the request's id */
} authfail_event;

/* What a closed window counted: one record's worth. */
typedef struct authfail_batch {
	char addr[64];
	char user_id[40];
	char user_name[128];
	char request_id[72]; /* the last failure's */
	long count;
	double first, last; /* seconds since the epoch */
	const route *routes[AUTHFAIL_ROUTES];
	long route_n[AUTHFAIL_ROUTES];
	long other_routes;
	err_code codes[AUTHFAIL_CODES];
	long code_n[AUTHFAIL_CODES];
} authfail_batch;

/*
 * Start counting, with the thread that writes closed windows on connections
 * from pool; written counts each record by outcome (may be NULL).
 * RET: the counter, or NULL after logging why.
 */
authfail *authfail_start(db_pool *pool, int interval_s, prom_family *written);

/* Stop the thread, write every window's count, free af. NULL is a no-op. */
void authfail_stop(authfail *af);

/*
 * Count the failure e at monotonic time now_s (clock_mono_s()).
 * OUT: *due, a closed window of e's key still to be written (then
 * *has_due is true): the caller writes it with authfail_write().
 * RET: true when e opens a window: the caller records e at once, on its
 * own; false when it was counted into an open window.
 */
bool authfail_note(authfail *af, const authfail_event *e, double now_s, authfail_batch *due,
                   bool *has_due);

/* Write b as one authz.deny record on c (autocommit). RET 0 or -ERR_*. */
int authfail_write(authfail *af, PGconn *c, const authfail_batch *b);

/*
 * The key of a client address: an IPv4 address as it is, an IPv6 address
 * as its /64 ("2001:db8:1:2::/64"), an unknown one as "unknown".
 */
void authfail_addr_key(const char *addr, char out[64]);

#endif
