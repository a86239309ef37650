/*
 * ratelimit.h - token buckets, in memory, thread-safe.
 *
 * A limiter has classes of buckets (the API's: one bucket per API token,
 * one per user over all of the user's tokens, and one per client address
 * for requests that fail authentication), each with its rate:
 * a bucket of `burst` requests refilled at `rps` per second. A request
 * takes one from its bucket in every class at once, or from none. Each
 * class holds at most RATELIMIT_SLOTS keys; when it is full the least
 * recently used bucket is reused (it then starts full, which can only make
 * a limit more lenient, never block a caller wrongly).
 */
#ifndef TY_RATELIMIT_H
#define TY_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>

#define RATELIMIT_SLOTS       4096
#define RATELIMIT_CLASSES_MAX 4
#define RATELIMIT_ALLOWED     (-1)

typedef struct ratelimit ratelimit;

typedef struct ratelimit_rate {
	double rps, burst;
} ratelimit_rate;

/* n classes (1..RATELIMIT_CLASSES_MAX), class i at rates[i]. RET: the limiter, or NULL. */
ratelimit *ratelimit_new(size_t n, const ratelimit_rate *rates);
void ratelimit_free(ratelimit *rl);

/*
 * Hold 1/n of every class's rate from now on (n API processes share the
 * platform's limits, peers.h): refilled at rps / n into a bucket of
 * burst / n, at least one request. A fuller bucket is cut down at its
 * next take.
 */
void ratelimit_share(ratelimit *rl, int n);

/*
 * Take one request at time now_s (seconds, monotonic) from the bucket of
 * keys[i] (at most 47 bytes) in each class i; a NULL key leaves its class
 * out. Nothing is taken unless every bucket has a request left.
 * RET: RATELIMIT_ALLOWED; else the first class whose bucket is empty, with
 * *retry_after_s the seconds until every bucket has one again (>= 1).
 */
int ratelimit_take(ratelimit *rl, const char *const *keys, double now_s, int *retry_after_s);

/*
 * Give back the request ratelimit_take() took from the buckets of keys (as
 * passed to it), up to each bucket's burst: the request turned out not to
 * count against them. A bucket reused for another key since is left alone.
 */
void ratelimit_give(ratelimit *rl, const char *const *keys);

#endif
