/*
 * clock.c - see clock.h.
 */
#include "clock.h"

#include <time.h>

static struct timespec read_clock(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts;
}

double clock_mono_s(void)
{
	struct timespec ts = read_clock(CLOCK_MONOTONIC);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long long clock_mono_ms(void)
{
	struct timespec ts = read_clock(CLOCK_MONOTONIC);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double clock_epoch_s(void)
{
	struct timespec ts = read_clock(CLOCK_REALTIME);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long long clock_epoch_ms(void)
{
	struct timespec ts = read_clock(CLOCK_REALTIME);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
