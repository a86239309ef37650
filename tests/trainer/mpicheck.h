/*
 * mpicheck.h - the assertion framework of the MPI test programs
 * (tests/trainer/mpitest_*.c, one translation unit each).
 *
 * CHECK(cond, fmt, ...) counts a check; a failure is printed by the rank
 * that saw it, to stdout and flushed at once, as
 *   FILE:LINE: F (rank R): message
 * say() prints progress on rank 0 only. check_summary() ends the run: it
 * adds up every rank's checks and failures and prints, on rank 0, check's
 * summary format
 *   P%: Checks: N, Failures: F, Errors: 0
 * which tests/run (run_check in tests/lib.sh) reads; it must stay the last
 * line a program prints.
 *
 * mix() is the programs' shared hash for deterministic test data, the
 * same on every rank.
 */
#ifndef TY_MPICHECK_H
#define TY_MPICHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "comm.h"

static int checks, failures, my_rank;

static bool check_at(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool check_at(bool ok, const char *file, int line, const char *fmt, ...)
{
	checks++;
	if (ok)
		return true;
	failures++;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stdout, "%s:%d: F (rank %d): ", file, line, my_rank);
	vfprintf(stdout, fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout); /* before the summary, which rank 0 prints after an all-reduce */
	return false;
}

#define CHECK(cond, ...) check_at((cond), __FILE__, __LINE__, __VA_ARGS__)

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	if (my_rank != 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

/*
 * The default communicator into *c and, when self is not NULL, comm_self
 * into *self; sets my_rank. RET 0, or 2 (the exit status) after printing
 * why to stderr.
 */
static int check_open(const char *prog, comm **c, comm **self)
{
	char err[256];
	*c = comm_default_new(err, sizeof(err));
	if (!*c) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	if (self && !(*self = comm_self_new(err, sizeof(err)))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		comm_free(*c);
		return 2;
	}
	my_rank = comm_rank(*c);
	return 0;
}

/* The summary over all ranks of c (a failed all-reduce counts as a failure). RET the exit status.
 */
static int check_summary(comm *c)
{
	float tally[2] = {(float)checks, (float)failures};
	if (comm_allreduce_sum(c, tally, 2))
		tally[1] += 1;
	int total = (int)tally[0], failed = (int)tally[1];
	say("%d%%: Checks: %d, Failures: %d, Errors: 0\n",
	    total ? (total - failed) * 100 / total : 0, total, failed);
	return failed ? 1 : 0;
}

#endif
