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

#endif
