/*
 * eta.c - a queued job's estimated start (eta.h).
 */
#include "eta.h"

#include <stdlib.h>

typedef struct slot {
	double ends;
	int devices;
} slot;

static int by_end(const void *a, const void *b)
{
	double x = ((const slot *)a)->ends, y = ((const slot *)b)->ends;
	return (x > y) - (x < y);
}

double eta_start(const eta_input *in)
{
	if (in->n_queue == 0 || in->max_running < 1)
		return -1;
	size_t cap = in->n_running + in->n_queue;
	slot *run = malloc(cap * sizeof(*run));
	if (!run)
		return -1;
	size_t n = 0;
	int used = 0;
	for (size_t i = 0; i < in->n_running; i++) {
		run[n++] = (slot){in->running[i].ends, in->running[i].devices};
		used += in->running[i].devices;
	}
	double t = in->now, start = -1;
	for (size_t k = 0; k < in->n_queue; k++) {
		const eta_queued *q = &in->queue[k];
		if (q->devices > in->max_devices)
			break; /* never fits: it holds everything behind it */
		if (q->not_before > t)
			t = q->not_before;
		qsort(run, n, sizeof(*run), by_end);
		/* release what has ended by t, then wait for ends until there is room */
		size_t done = 0;
		while (done < n && (run[done].ends <= t || used + q->devices > in->max_devices ||
		                    (int)(n - done) >= in->max_running)) {
			if (run[done].ends > t)
				t = run[done].ends;
			used -= run[done].devices;
			done++;
		}
		for (size_t i = done; i < n; i++)
			run[i - done] = run[i];
		n -= done;
		start = t;
		run[n++] = (slot){t + q->duration, q->devices};
		used += q->devices;
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
