/*
 * readcache.h - answers of GET /v1/jobs/{job} kept in memory for a moment.
 *
 * Polling a job is the API's most common read. The read cache keeps, per
 * (token, job), what the one statement of such a read resolved: who the
 * token is, the job's tenant and the caller's role there, and the job's
 * document. A later read with the same token serves it from memory, with
 * no database round trip, as long as all of these hold:
 *   - it is younger than ttl_ms (TRAINYARD_READ_CACHE_MS): the queue's
 *     fields (position, fair-share rank) are never older than that;
 *   - nothing it depends on changed since: PostgreSQL notifies the API of
 *     every change of a job (by tenant), of a token's revocation or expiry,
 *     of a user, a role binding or a tenant (0005_read_cache.sql), and
 *     every change this API process makes itself drops what it touched
 *     before it answers;
 *   - the notifications are flowing: while the listening connection is
 *     down nothing is served from memory, and everything is dropped when it
 *     comes back, since notifications sent meanwhile are lost;
 *   - the token has not expired.
 * Rate limits, the authorisation decision and the request log run for
 * every read as before; only the database round trip is saved.
 *
 * Thread-safe. A fixed table of READCACHE_SLOTS entries, one per slot by
 * the key's hash (a newer entry replaces an older one in its slot).
 */
#ifndef TY_READCACHE_H
#define TY_READCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"

#define READCACHE_SLOTS   1024
#define READCACHE_DOC_MAX (16 * 1024) /* a larger document is not kept */
#define READCACHE_CHANNEL "trainyard_reads"

typedef struct readcache readcache;

/*
 * A cache whose entries live ttl_ms (0: the cache is off: nothing is kept).
 * With conninfo, a thread listens on READCACHE_CHANNEL and the cache serves
 * only while it does; without (tests), it serves once readcache_set_live().
 * RET: the cache, or NULL when memory or the thread ran out.
 */
readcache *readcache_new(int ttl_ms, const char *conninfo, int retry_ms);
void readcache_free(readcache *rc);

/*
 * The generation: it moves with every drop. Take it before the statement
 * whose result may be kept, and pass it to readcache_put().
 */
uint64_t readcache_gen(readcache *rc);

/*
 * The entry of (token_hash, job_id), when it may be served. OUT: *who,
 * *scope, *doc (malloc'ed, caller frees) and *doc_len. RET true on a hit.
 */
bool readcache_get(readcache *rc, const char *token_hash, const char *job_id, api_principal *who,
                   api_scope *sc, char **doc, size_t *doc_len);

/*
 * Keep what a read resolved, unless anything was dropped since gen (the
 * result may predate a change), the cache is not live, or the document is
 * too large. token_expires: the token's expiry, seconds since the epoch.
 */
void readcache_put(readcache *rc, uint64_t gen, const char *token_hash, const api_principal *who,
                   const api_scope *sc, double token_expires, const char *doc, size_t doc_len);

/* Drop the entries of one tenant's jobs (a change of one of its jobs). */
void readcache_drop_tenant(readcache *rc, const char *tenant_id);
/* Drop every entry (a token, user, role or tenant changed). */
void readcache_drop_all(readcache *rc);

/*
 * What a notification's payload says to drop: "*", everything; a tenant's
 * id, that tenant's entries. Anything else drops everything.
 */
void readcache_notified(readcache *rc, const char *payload);

/* Serve (live) or not; going live drops everything first. For the listener and tests. */
void readcache_set_live(readcache *rc, bool live);

#endif
