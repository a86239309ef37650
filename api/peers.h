/*
 * peers.h - the API processes that serve one platform, counted in
 * PostgreSQL, and each one's share of the platform's limits.
 *
 * The limits the settings name (TRAINYARD_RATE_* per token, user and
 * client address; TRAINYARD_LOG_FOLLOWERS*; TRAINYARD_REPORT_STREAMS*) are
 * the platform's, whatever the number of processes behind the load
 * balancer. Each process keeps a row in api_processes (migration 0027),
 * renewed every PEERS_BEAT_MS by a thread of its own; with N processes
 * seen within PEERS_LIVE_MS, each one enforces 1/N of every limit in
 * memory: a bucket refilled at rps / N holding burst / N, a cap of
 * cap / N streams (peers_cap). So N processes together allow at most the
 * limit (a cap smaller than N still allows one stream a process), at no
 * cost per request; docs/production.md says why this and not a shared
 * bucket. A caller whose requests all reach one process is held to its
 * share: the load balancer spreads requests evenly (deploy/stack's
 * haproxy balances each request round robin).
 *
 * A process that dies is counted for PEERS_LIVE_MS more, unless its
 * successor on the same address starts first (peers_listening; the others are
 * stricter meanwhile, never more lenient); while the database is away
 * the last count holds. The one time the sum can pass the limit: for up
 * to PEERS_BEAT_MS after a process joins, the others still hold their
 * former share, and a process whose renewals stall for PEERS_LIVE_MS
 * (its database connections all busy) is left out of the others' count.
 */
#ifndef TY_PEERS_H
#define TY_PEERS_H

#include "db.h"

#define PEERS_BEAT_MS 2000
#define PEERS_LIVE_MS 6000

typedef struct peers peers;

/* Told each time the count is read, with the live processes (>= 1). */
typedef void (*peers_notify)(void *arg, int live);

/*
 * Register this process (listening on listen) and start the thread that
 * renews its row and counts the live ones, calling notify(arg, n) after
 * every count. RET the module, or NULL (logged).
 */
peers *peers_start(db_pool *pool, const char *listen, peers_notify notify, void *arg);

/*
 * This process now listens on its address (call it once bound): a row of
 * this host with the same address is a former process's, one that was
 * killed or crashed, which would otherwise be counted for PEERS_LIVE_MS
 * and halve every limit after a restart. Its row goes, and the count is
 * read again at once. Hosts told apart by their names: two hosts of one
 * platform must not share a hostname and listen address.
 */
void peers_listening(peers *p);

/* Stop the thread and delete this process's row. NULL is fine. */
void peers_stop(peers *p);

/* RET: one process's share of a cap for `live` processes: cap / live, at least 1. */
int peers_cap(int cap, int live);

#endif
