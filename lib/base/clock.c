/*
 * clock.c - see clock.h.
 */
#include "clock.h"

#include <math.h>
#include <stdio.h>
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

char *clock_rfc3339(double t, char out[CLOCK_RFC3339_SIZE])
{
	long long ms = (long long)floor(t * 1000.0);
	time_t sec = (time_t)(ms / 1000 - (ms % 1000 < 0));
	int frac = (int)(ms - (long long)sec * 1000);
	struct tm tm;
	if (!gmtime_r(&sec, &tm)) {
		snprintf(out, CLOCK_RFC3339_SIZE, "1970-01-01T00:00:00.000Z");
		return out;
	}
	size_t n = strftime(out, CLOCK_RFC3339_SIZE, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, CLOCK_RFC3339_SIZE - n, ".%03dZ", frac);
	return out;
}
