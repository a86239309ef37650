/*
 * quota.h - a tenant's quota, once: its limits, what its jobs use of them,
 * and the one rule that says whether a job fits. Submission
 * (jobspec_parse), admission (scheduler/admit.c), the queue ETA (eta.c),
 * the usage route and both metrics all go through here.
 *
 * The rule. A job asks for devices (GPUs, or CPU ranks for a CPU job),
 * one running-job slot and, for a GPU job, GPU-hours. Devices come in two
 * parts: max_gpus are guaranteed to the tenant, and up to borrow_gpus more
 * may be borrowed while other tenants leave theirs idle (admission lends
 * only what the cluster has free; a borrowed job is the first a reclaim
 * preempts, scheduler/preempt.h). A job's devices are guaranteed as far as
 * the guaranteed devices its tenant's jobs hold leave room under max_gpus,
 * and borrowed beyond (quota_borrow); each attempt records its borrowed
 * devices when admitted. It fits now when
 *   - its tenant runs fewer than max_running_jobs jobs,
 *   - its borrowed devices plus those its tenant's jobs borrowed are at
 *     most borrow_gpus, and none when it is not preemptible (a job may
 *     refuse preemption only within its guarantee),
 *   - it is a CPU job, or its tenant's GPU-hours this month are below
 *     gpu_hours_per_month (CPU jobs are never charged GPU-hours).
 * It can ever fit (checked at submission: a job that cannot is refused with
 * quota_never_fits) when max_running_jobs is at least 1, its devices are
 * at most max_gpus + borrow_gpus (max_gpus when it is not preemptible),
 * and, for a GPU job, devices x its time limit are within
 * gpu_hours_per_month.
 *
 * What a tenant uses is defined once, in SQL (migrations/0018_quota_use.sql):
 * the view job_devices_held (each job in a state that holds devices,
 * job_holds_devices(), with the devices of its current attempt, or of the
 * job before its first) and the function tenant_quota_use(tenant), which
 * sums it (devices and the borrowed part) and adds this month's GPU-hours
 * of the tenant's attempts (migrations/0028_preemption.sql adds borrowing).
 * QUOTA_SQL_COLUMNS selects the limits and the use side by side, and
 * quota_from_row() reads them: the one loader.
 */
#ifndef TY_QUOTA_H
#define TY_QUOTA_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct quota_limits {
	int64_t max_gpus; /* guaranteed devices: GPUs, or CPU ranks for CPU jobs */
	int64_t max_running_jobs;
	int64_t gpu_hours_per_month; /* charged for GPU jobs only */
	int64_t borrow_gpus;         /* devices it may borrow beyond max_gpus */
} quota_limits;

typedef struct quota_use {
	int64_t devices;        /* held by the tenant's jobs (job_devices_held) */
	int64_t running_jobs;   /* its jobs that hold devices */
	double month_gpu_hours; /* GPU device-hours of its attempts this calendar month (UTC) */
	int64_t borrowed;       /* of devices, those its jobs' attempts borrowed */
} quota_use;

typedef struct quota_ask {
	int64_t devices;
	bool gpu;              /* a GPU job: charged GPU-hours */
	int64_t limit_minutes; /* its time limit, for the never-fits check; 0: unknown */
	bool no_preempt;       /* the job declared itself not preemptible */
} quota_ask;

typedef enum quota_verdict {
	QUOTA_FITS = 0,
	QUOTA_RUNNING_JOBS,
	QUOTA_DEVICES,
	QUOTA_GPU_HOURS,
	QUOTA_NO_PREEMPT, /* it would borrow, and is not preemptible */
} quota_verdict;

/*
 * Whether a (on top of what the tenant uses, u) fits the limits now; when
 * it does not, why says which limit and by how much (why may be NULL).
 */
quota_verdict quota_fits_now(const quota_limits *l, const quota_use *u, const quota_ask *a,
                             char *why, size_t n);

/* Whether a could ever fit, on a tenant that runs nothing; why as above (the first limit). */
quota_verdict quota_ever_fits(const quota_limits *l, const quota_ask *a, char *why, size_t n);

/*
 * Every limit a could never fit, each told to report (when not NULL) with
 * its verdict and why, in the order of quota.h's rule. RET: how many.
 */
typedef void (*quota_report_fn)(void *arg, quota_verdict v, const char *why);
int quota_never_fits(const quota_limits *l, const quota_ask *a, quota_report_fn report, void *arg);

/*
 * Whether nodes nodes of cpus_per_node cpus and gpus_per_node gpus could be
 * placed on n nodes holding cpus[i] and gpus[i] in all, if all were empty
 * (only those with up[i] true, when up is not NULL). A job for which this
 * is false can never start on that cluster: the API refuses it at
 * submission, and admission lets the jobs behind it pass (admit.h).
 */
bool quota_cluster_could_hold(const int *cpus, const int *gpus, const bool *up, int n, int nodes,
                              int cpus_per_node, int gpus_per_node);

/* How many of a's devices would be borrowed, on top of u. */
int64_t quota_borrow(const quota_limits *l, const quota_use *u, const quota_ask *a);

/* Count a as started: its devices (borrowed of them as borrowed) and slot join u. */
void quota_take(quota_use *u, const quota_ask *a, int64_t borrowed);

/*
 * The limits and use of the tenant whose id is the SQL expression tenant,
 * with the quotas row k joined: eight columns in the order quota_from_row()
 * reads. FROM must join "quotas k" and the lateral "tenant_quota_use(...) u"
 * (QUOTA_SQL_JOIN). QUOTA_SQL_LIMITS alone (the first four; quota_from_row
 * with use NULL) needs only "quotas k", and reads nothing of the jobs.
 */
#define QUOTA_SQL_LIMITS "k.max_gpus, k.max_running_jobs, k.gpu_hours_per_month, k.borrow_gpus"
#define QUOTA_SQL_COLUMNS                                                                          \
	QUOTA_SQL_LIMITS ", u.devices, u.running_jobs, u.month_gpu_hours, u.borrowed"
#define QUOTA_SQL_JOIN(tenant)                                                                     \
	" JOIN quotas k ON k.tenant_id = " tenant " CROSS JOIN LATERAL tenant_quota_use(" tenant   \
	") u"

/* Read the QUOTA_SQL_COLUMNS that start at column col of row i (use may be NULL). */
void quota_from_row(const PGresult *r, int i, int col, quota_limits *l, quota_use *u);

#endif
