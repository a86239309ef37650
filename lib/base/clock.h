/*
 * clock.h - the time now, the two ways the programs need it: on the
 * monotonic clock for durations and deadlines, and since the epoch for
 * what is shown or stored.
 */
#ifndef TY_CLOCK_H
#define TY_CLOCK_H

/* RET: seconds on the monotonic clock (CLOCK_MONOTONIC), with the fraction. */
double clock_mono_s(void);
/* RET: whole milliseconds on the monotonic clock. */
long long clock_mono_ms(void);
/* RET: seconds since the epoch (CLOCK_REALTIME), with the fraction. */
double clock_epoch_s(void);
/* RET: whole milliseconds since the epoch. */
long long clock_epoch_ms(void);

/*
 * Every timestamp the programs show: RFC 3339 UTC with milliseconds
 * ("2026-12-02T15:04:05.123Z"), the fraction truncated. clock_rfc3339()
 * writes it in C; CLOCK_SQL_RFC3339() is the same format for a timestamptz
 * column in a query, so that both sides agree.
 */
#define CLOCK_RFC3339_SIZE 32
#define CLOCK_SQL_RFC3339(col)                                                                     \
	"to_char((" col ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
/* OUT: out, t (seconds since the epoch) as shown. RET: out. */
char *clock_rfc3339(double t, char out[CLOCK_RFC3339_SIZE]);

#endif
