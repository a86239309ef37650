/*
 * admit.h - which queued jobs a scheduling cycle admits, and why the
 * others wait.
 *
 * Pure logic over what the cycle loaded: no database, no Slurm. Tenants
 * take turns by weighted fair share (decayed usage divided by weight,
 * smallest first); within a tenant, jobs go by priority, then submit time.
 * A job is admitted when
 *   - its tenant's running devices plus the job's fit max_gpus,
 *   - its tenant runs fewer than max_running_jobs jobs,
 *   - its tenant's GPU-hours this month are below gpu_hours_per_month,
 *   - the cluster has the job's nodes free (cpus and gpus per node).
 * A tenant held for another reason (hold: it has no Unix user to run as,
 * docs/identity.md) admits nothing, and its first job says why.
 * A tenant whose next job fails one of these admits nothing more this
 * cycle (its order is kept: a small job never passes a big one of the same
 * tenant). Other tenants may still use what is free.
 *
 * Every admission charges its tenant devices x ADMIT_CHARGE_HOURS of usage
 * up front, so one cycle with free room interleaves tenants instead of
 * handing everything to the one that was behind.
 */
#ifndef TY_SCHED_ADMIT_H
#define TY_SCHED_ADMIT_H

#include <stdbool.h>

#define ADMIT_REASON_MAX   200
#define ADMIT_CHARGE_HOURS 1.0
#define ADMIT_MAX_NODES    256

typedef struct admit_job {
	char id[37];
	int devices; /* GPUs, or CPU ranks for a CPU job */
	int nodes, cpus_per_node, gpus_per_node;
	bool admitted;
	char reason[ADMIT_REASON_MAX]; /* why it waits; "" when admitted or not reached */
} admit_job;

typedef struct admit_tenant {
	char id[37];
	char name[64];
	int max_gpus, max_running_jobs;
	double budget_hours, month_hours; /* gpu_hours_per_month, and spent this month */
	double weight, usage_hours;       /* decayed usage */
	int running_devices, running_jobs;
	admit_job *jobs; /* the head of its queue, in order */
	int n_jobs;
	char hold[ADMIT_REASON_MAX]; /* why none of its jobs may start now; "" when none */
	/* out */
	int rank;                      /* 1-based fair-share position at the cycle's start */
	char reason[ADMIT_REASON_MAX]; /* why its next job waits; "" when nothing waits */
	/* cycle state */
	int next;
	bool blocked;
	double charged;
} admit_tenant;

/* Free room on each up node of the cluster. */
typedef struct admit_cluster {
	int n_nodes;
	int free_cpus[ADMIT_MAX_NODES];
	int free_gpus[ADMIT_MAX_NODES];
} admit_cluster;

/* The fair-share key: usage over weight; smaller goes first. */
double admit_share_key(const admit_tenant *t);

/*
 * First fit of j's nodes (nodes x cpus_per_node, gpus_per_node) on the
 * free room; takes the room when it fits. The cycle also takes the room of
 * jobs Slurm holds pending for us, before admitting more.
 * RET: whether it fits.
 */
bool admit_cluster_take(admit_cluster *c, const admit_job *j);

/*
 * Decide one cycle. Sets each tenant's rank and reason and each job's
 * admitted flag and reason, and takes the admitted jobs' room from *cluster.
 * OUT: order[0..RET-1] the admitted jobs in admission order (cap at most).
 * RET: the number admitted.
 */
int admit_cycle(admit_tenant *tenants, int n, admit_cluster *cluster, admit_job **order, int cap);

#endif
