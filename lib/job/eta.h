/*
 * eta.h - when a queued job should start: a replay of admission within its
 * tenant's quota, from the running jobs' expected ends and the jobs queued
 * ahead of it.
 *
 * Admission takes a tenant's queue in order (priority, then submission):
 * a job starts once its tenant's quota has room for it (quota_fits_now,
 * quota.h: running-job slots, devices, this month's GPU-hours) and its
 * back-off (not_before) has passed; a job that does not fit holds the
 * ones behind it, unless it could never fit the quota: admission passes
 * it (scheduler/admit.h, "Backfill"), and so does the replay. The replay walks time from
 * now through the running jobs' expected ends, starting the queued jobs in
 * order as room appears and adding their own expected ends. What it cannot
 * see: the cluster's free nodes and other tenants' turns in fair share,
 * which can only delay the start, so the estimate is the earliest start
 * the tenant's own jobs allow (a job that would borrow is taken to find
 * idle devices; one waiting for its lent devices to return says so in
 * its reason). The month's GPU-hours are taken as they
 * are now: a GPU job of a tenant whose budget is spent has no estimate.
 */
#ifndef TY_ETA_H
#define TY_ETA_H

#include <stddef.h>

#include "quota.h"

typedef struct eta_running {
	double ends; /* expected end, seconds since the epoch */
	int devices;
	int borrowed; /* of them, borrowed (quota.h) */
} eta_running;

typedef struct eta_queued {
	int devices;
	bool gpu;
	double duration;   /* expected run time, seconds */
	double not_before; /* 0: none */
} eta_queued;

typedef struct eta_input {
	double now;
	quota_limits limits;    /* the tenant's */
	double month_gpu_hours; /* its GPU-hours this month (quota_use) */
	const eta_running *running;
	size_t n_running;
	const eta_queued *queue; /* in admission order; the job asked about is the last */
	size_t n_queue;
} eta_input;

/*
 * RET: the estimated start of queue[n_queue - 1], seconds since the epoch,
 * or -1 when it cannot start within the quota as it stands (it could never
 * fit, or a GPU job's month budget is spent).
 */
double eta_start(const eta_input *in);

/*
 * A running job's expected end: from its start, its steps done of steps,
 * and its time limit (seconds). Without progress, start + limit; else
 * the pace so far carried to the last step, never past the limit.
 */
double eta_running_end(double started, double now, int steps_done, int steps, double limit_s);

#endif
