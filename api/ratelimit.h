/*
 * ratelimit.h - per-token token buckets, in memory, thread-safe.
 *
 * Each API token id gets a bucket of `burst` requests refilled at `rps`
 * per second. The table holds at most RATELIMIT_SLOTS tokens; when it is
 * full the least recently used bucket is reused (it then starts full,
 * which can only make a limit more lenient, never block a caller wrongly).
 */
#ifndef TY_RATELIMIT_H
#define TY_RATELIMIT_H

#include <stdbool.h>

#define RATELIMIT_SLOTS 4096

typedef struct ratelimit ratelimit;

ratelimit *ratelimit_new(double rps, double burst);
void ratelimit_free(ratelimit *rl);

/*
 * Take one request for key at time now_s (seconds, monotonic).
 * RET: true when allowed; else false with *retry_after_s set (>= 1).
 */
bool ratelimit_take(ratelimit *rl, const char *key, double now_s, int *retry_after_s);

#endif
