/*
 * quota.c - the quota rule and its loader (quota.h).
 */
#include "quota.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static quota_verdict say(quota_verdict v, char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static quota_verdict say(quota_verdict v, char *why, size_t n, const char *fmt, ...)
{
	if (why && n) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return v;
}

quota_verdict quota_fits_now(const quota_limits *l, const quota_use *u, const quota_ask *a,
                             char *why, size_t n)
{
	if (u->running_jobs >= l->max_running_jobs)
		return say(QUOTA_RUNNING_JOBS, why, n,
		           "quota: max_running_jobs (%lld running of %lld)",
		           (long long)u->running_jobs, (long long)l->max_running_jobs);
	int64_t borrow = quota_borrow(l, u, a);
	if (borrow > 0 && a->no_preempt)
		return say(
		    QUOTA_NO_PREEMPT, why, n,
		    "quota: not preemptible, so only within max_gpus (%lld guaranteed in use "
		    "+ %lld asked > %lld)",
		    (long long)(u->devices - u->borrowed), (long long)a->devices,
		    (long long)l->max_gpus);
	if (u->borrowed + borrow > l->borrow_gpus)
		return say(QUOTA_DEVICES, why, n,
		           "quota: max_gpus %lld + borrow_gpus %lld (%lld in use + %lld asked)",
		           (long long)l->max_gpus, (long long)l->borrow_gpus, (long long)u->devices,
		           (long long)a->devices);
	if (a->gpu && u->month_gpu_hours >= (double)l->gpu_hours_per_month)
		return say(QUOTA_GPU_HOURS, why, n,
		           "quota: gpu_hours_per_month spent (%.1f of %lld)", u->month_gpu_hours,
		           (long long)l->gpu_hours_per_month);
	if (why && n)
		why[0] = '\0';
	return QUOTA_FITS;
}

int quota_never_fits(const quota_limits *l, const quota_ask *a, quota_report_fn report, void *arg)
{
	char why[256];
	int n = 0;
	if (l->max_running_jobs <= 0) {
		snprintf(why, sizeof(why),
		         "the tenant's max_running_jobs is %lld, so none of its jobs can run",
		         (long long)l->max_running_jobs);
		n++;
		if (report)
			report(arg, QUOTA_RUNNING_JOBS, why);
	}
	if (a->no_preempt && a->devices > l->max_gpus) {
		snprintf(why, sizeof(why),
		         "the job needs %lld devices and is not preemptible, but the tenant's "
		         "max_gpus (guaranteed) is %lld",
		         (long long)a->devices, (long long)l->max_gpus);
		n++;
		if (report)
			report(arg, QUOTA_NO_PREEMPT, why);
	} else if (a->devices > l->max_gpus + l->borrow_gpus) {
		snprintf(why, sizeof(why),
		         "the job needs %lld devices but the tenant's max_gpus is %lld and its "
		         "borrow_gpus %lld",
		         (long long)a->devices, (long long)l->max_gpus, (long long)l->borrow_gpus);
		n++;
		if (report)
			report(arg, QUOTA_DEVICES, why);
	}
	int64_t gph = l->gpu_hours_per_month;
	int64_t device_minutes = a->devices * a->limit_minutes;
	if (a->gpu && (gph < 0 || (gph <= INT64_MAX / 60 && device_minutes > gph * 60))) {
		snprintf(
		    why, sizeof(why),
		    "the job may use %.1f GPU-hours (devices x time_limit_minutes / 60) but the "
		    "tenant's gpu_hours_per_month is %lld",
		    (double)device_minutes / 60, (long long)gph);
		n++;
		if (report)
			report(arg, QUOTA_GPU_HOURS, why);
	}
	return n;
}

typedef struct first_report {
	quota_verdict v;
	char *why;
	size_t n;
} first_report;

static void keep_first(void *arg, quota_verdict v, const char *why)
{
	first_report *f = arg;
	if (f->v != QUOTA_FITS)
		return;
	f->v = v;
	if (f->why && f->n)
		snprintf(f->why, f->n, "%s", why);
}

quota_verdict quota_ever_fits(const quota_limits *l, const quota_ask *a, char *why, size_t n)
{
	first_report f = {QUOTA_FITS, why, n};
	if (why && n)
		why[0] = '\0';
	quota_never_fits(l, a, keep_first, &f);
	return f.v;
}

bool quota_cluster_could_hold(const int *cpus, const int *gpus, const bool *up, int n, int nodes,
                              int cpus_per_node, int gpus_per_node)
{
	int fit = 0;
	for (int i = 0; i < n; i++)
		if ((!up || up[i]) && cpus[i] >= cpus_per_node && gpus[i] >= gpus_per_node)
			fit++;
	return fit >= nodes;
}

int64_t quota_borrow(const quota_limits *l, const quota_use *u, const quota_ask *a)
{
	int64_t guaranteed_free = l->max_gpus - (u->devices - u->borrowed);
	if (guaranteed_free < 0)
		guaranteed_free = 0;
	return a->devices > guaranteed_free ? a->devices - guaranteed_free : 0;
}

void quota_take(quota_use *u, const quota_ask *a, int64_t borrowed)
{
	u->devices += a->devices;
	u->borrowed += borrowed;
	u->running_jobs++;
}

void quota_from_row(const PGresult *r, int i, int col, quota_limits *l, quota_use *u)
{
	l->max_gpus = strtoll(PQgetvalue(r, i, col), NULL, 10);
	l->max_running_jobs = strtoll(PQgetvalue(r, i, col + 1), NULL, 10);
	l->gpu_hours_per_month = strtoll(PQgetvalue(r, i, col + 2), NULL, 10);
	l->borrow_gpus = strtoll(PQgetvalue(r, i, col + 3), NULL, 10);
	if (u) {
		u->devices = strtoll(PQgetvalue(r, i, col + 4), NULL, 10);
		u->running_jobs = strtoll(PQgetvalue(r, i, col + 5), NULL, 10);
		u->month_gpu_hours = strtod(PQgetvalue(r, i, col + 6), NULL);
		u->borrowed = strtoll(PQgetvalue(r, i, col + 7), NULL, 10);
	}
}
