/*
 * bench/eta.c - the error of the queue's estimated start times
 * (lib/job/eta.h, GET /v1/jobs/{job}/eta) on a replayed trace (`make bench`).
 *
 * The trace: one tenant's jobs (a quota of 16 devices and 4 running jobs)
 * arriving at random, 47 minutes apart on average (the quota about 80%
 * busy), each asking 1, 2, 4 or 8 devices and a time limit of 1 to 8
 * hours, and actually running 10% to 100% of it. Replay: admission as the scheduler does it within
 * a quota (the queue in order, a job holding the ones behind it), event by event, with the true run
 * times; that gives each job's true start. At each job's submission, both estimates are taken from
 * what is known then: eta     lib/job/eta.h as the API runs it: running jobs end at their pace so
 * far (their progress is known, their speed steady), queued ones run their limit times the median
 * share of it among the jobs already finished; anchor  the same replay with every job running its
 * whole limit (what a scheduler that knows only time limits would say). Reported: the mean and
 * median absolute error of each, in minutes, over the jobs that had to wait, and eta's error as a
 * fraction of the anchor's. Deterministic (a fixed seed): the same figures every run.
 *
 *   build/bench/eta [JOBS] [SEED]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eta.h"

#define MAX_DEVICES 16
#define MAX_RUNNING 4

typedef struct job {
	double submit, limit, duration; /* seconds */
	int devices;
	double start, end; /* the replay's truth */
	double eta, naive; /* estimates at submission */
} job;

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

/* The true replay: starts and ends of every job, in submission order. */
static void replay(job *jobs, int n)
{
	int next = 0; /* the head of the queue */
	double t = 0;
	for (;;) {
		/* start what fits at t, in order */
		int used = 0, running = 0;
		for (int i = 0; i < next; i++)
			if (jobs[i].end > t) {
				used += jobs[i].devices;
				running++;
			}
		while (next < n && jobs[next].submit <= t &&
		       used + jobs[next].devices <= MAX_DEVICES && running < MAX_RUNNING) {
			jobs[next].start = t;
			jobs[next].end = t + jobs[next].duration;
			used += jobs[next].devices;
			running++;
			next++;
		}
		if (next == n)
			return;
		/* the next event: an end, or the head's submission */
		double e = jobs[next].submit > t ? jobs[next].submit : INFINITY;
		for (int i = 0; i < next; i++)
			if (jobs[i].end > t && jobs[i].end < e)
				e = jobs[i].end;
		t = e;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Both estimates for job k at its submission. */
static void estimate(job *jobs, int k)
{
	double now = jobs[k].submit;
	eta_running run[MAX_RUNNING], naive_run[MAX_RUNNING];
	eta_queued *q = calloc((size_t)k + 1, sizeof(*q)), *nq = calloc((size_t)k + 1, sizeof(*nq));
	double *shares = calloc((size_t)k + 1, sizeof(double));
	size_t nr = 0, nqueue = 0, nshares = 0;
	for (int i = 0; i < k; i++) {
		if (jobs[i].end <= now)
			shares[nshares++] = jobs[i].duration / jobs[i].limit;
		else if (jobs[i].start <= now) {
			/* steady pace: progress is elapsed / duration of 1000 steps */
			int steps = 1000,
			    done = (int)floor(steps * (now - jobs[i].start) / jobs[i].duration);
			run[nr] = (eta_running){
			    eta_running_end(jobs[i].start, now, done, steps, jobs[i].limit),
			    jobs[i].devices};
			naive_run[nr++] =
			    (eta_running){jobs[i].start + jobs[i].limit, jobs[i].devices};
		}
	}
	qsort(shares, nshares, sizeof(double), cmp_double);
	double ratio = nshares ? (nshares % 2 ? shares[nshares / 2]
	                                      : (shares[nshares / 2 - 1] + shares[nshares / 2]) / 2)
	                       : 1.0;
	for (int i = 0; i <= k; i++)
		if (jobs[i].start > now || i == k) {
			q[nqueue] = (eta_queued){.devices = jobs[i].devices,
			                         .gpu = true,
			                         .duration = jobs[i].limit * ratio};
			nq[nqueue++] = (eta_queued){
			    .devices = jobs[i].devices, .gpu = true, .duration = jobs[i].limit};
		}
	eta_input in = {.now = now,
	                .limits = {MAX_DEVICES, MAX_RUNNING, INT32_MAX},
	                .running = run,
	                .n_running = nr,
	                .queue = q,
	                .n_queue = nqueue};
	jobs[k].eta = eta_start(&in);
	in.running = naive_run;
	in.queue = nq;
	jobs[k].naive = eta_start(&in);
	free(q);
	free(nq);
	free(shares);
}

static void errors(const job *jobs, int n, int which, double *mean, double *med, int *count)
{
	double *e = calloc((size_t)n, sizeof(double));
	int m = 0;
	double sum = 0;
	for (int i = 0; i < n; i++) {
		if (jobs[i].start <= jobs[i].submit)
			continue; /* it did not wait: every estimate says now */
		double est = which ? jobs[i].naive : jobs[i].eta;
		e[m] = fabs(est - jobs[i].start) / 60;
		sum += e[m++];
	}
	qsort(e, (size_t)m, sizeof(double), cmp_double);
	*mean = m ? sum / m : 0;
	*med = m ? (m % 2 ? e[m / 2] : (e[m / 2 - 1] + e[m / 2]) / 2) : 0;
	*count = m;
	free(e);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 400;
	if (argc > 2)
		rng = strtoull(argv[2], NULL, 10) | 1;
	if (n < 1)
		return 2;
	job *jobs = calloc((size_t)n, sizeof(*jobs));
	static const int sizes[] = {1, 2, 4, 8};
	double t = 0;
	for (int i = 0; i < n; i++) {
		t += -log(1 - uniform()) * 2820; /* Poisson arrivals */
		jobs[i].submit = t;
		jobs[i].devices = sizes[(int)(uniform() * 4) % 4];
		jobs[i].limit = 3600 * (1 + floor(uniform() * 8));
		jobs[i].duration = jobs[i].limit * (0.1 + 0.9 * uniform());
	}
	replay(jobs, n);
	for (int i = 0; i < n; i++)
		estimate(jobs, i);
	double em, emed, nm, nmed;
	int waited, w2;
	errors(jobs, n, 0, &em, &emed, &waited);
	errors(jobs, n, 1, &nm, &nmed, &w2);
	printf("queue ETA on a replayed trace: %d jobs, %d waited (quota %d devices, %d running)\n",
	       n, waited, MAX_DEVICES, MAX_RUNNING);
	printf("  eta     mean |error| %7.1f min, median %7.1f min\n", em, emed);
	printf("  anchor  mean |error| %7.1f min, median %7.1f min (time limits only)\n", nm, nmed);
	printf("  eta / anchor: %.2f (mean), %.2f (median)\n", nm > 0 ? em / nm : 0,
	       nmed > 0 ? emed / nmed : 0);
	free(jobs);
	return 0;
}
