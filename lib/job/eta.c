/*
 * eta.c - a queued job's estimated start (eta.h).
 */
#include "eta.h"

#include <stdlib.h>

typedef struct slot {
	double ends;
	int devices, borrowed;
} slot;

static int by_end(const void *a, const void *b)
{
	double x = ((const slot *)a)->ends, y = ((const slot *)b)->ends;
	return (x > y) - (x < y);
}

double eta_start(const eta_input *in)
{
	if (in->n_queue == 0)
		return -1;
	size_t cap = in->n_running + in->n_queue;
	slot *run = malloc(cap * sizeof(*run));
	if (!run)
		return -1;
	size_t n = 0;
	quota_use use = {.month_gpu_hours = in->month_gpu_hours};
	for (size_t i = 0; i < in->n_running; i++) {
		run[n++] =
		    (slot){in->running[i].ends, in->running[i].devices, in->running[i].borrowed};
		use.devices += in->running[i].devices;
		use.borrowed += in->running[i].borrowed;
	}
	double t = in->now, start = -1;
	for (size_t k = 0; k < in->n_queue; k++) {
		const eta_queued *q = &in->queue[k];
		quota_ask ask = {.devices = q->devices, .gpu = q->gpu};
		if (quota_ever_fits(&in->limits, &ask, NULL, 0) != QUOTA_FITS)
			continue; /* it can never start, and admission lets the jobs behind it pass
			           */
		if (q->not_before > t)
			t = q->not_before;
		qsort(run, n, sizeof(*run), by_end);
		/* release what has ended by t, then wait for ends until there is room */
		size_t done = 0;
		quota_verdict v = QUOTA_FITS;
		for (;;) {
			use.running_jobs = (int64_t)(n - done);
			v = quota_fits_now(&in->limits, &use, &ask, NULL, 0);
			if (done >= n || v == QUOTA_GPU_HOURS ||
			    (run[done].ends > t && v == QUOTA_FITS))
				break;
			if (run[done].ends > t)
				t = run[done].ends;
			use.devices -= run[done].devices;
			use.borrowed -= run[done].borrowed;
			done++;
		}
		if (v != QUOTA_FITS)
			break; /* the month's GPU-hours are spent: no ends make room */
		for (size_t i = done; i < n; i++)
			run[i - done] = run[i];
		n -= done;
		start = t;
		int64_t borrow = quota_borrow(&in->limits, &use, &ask);
		run[n++] = (slot){t + q->duration, q->devices, (int)borrow};
		quota_take(&use, &ask, borrow);
		if (k + 1 == in->n_queue)
			break;
		start = -1;
	}
	free(run);
	return start;
}

double eta_running_end(double started, double now, int steps_done, int steps, double limit_s)
{
	double limit_end = started + limit_s;
	if (steps_done <= 0 || steps <= 0 || now <= started)
		return limit_end;
	double end = started + (now - started) * steps / steps_done;
	if (end < now)
		end = now;
	return end < limit_end ? end : limit_end;
}
