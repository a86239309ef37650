/*
 * scheduler.h - the scheduler daemon's state and its cycle.
 *
 * One cycle, run by the leader only (leader.h):
 *   1. accounts_sync   tenants and quotas -> Slurm accounts (GrpTRES)
 *   2. reconcile       every followed Slurm job: pending reason, start,
 *                      heartbeats, cancels, ends -> retry or final state;
 *                      dispatches whose lease ran out are finished
 *   3. admit           fair-share admission under the quotas (admit.c)
 *   4. dispatch        admitted jobs -> Slurm, crash-safe (dispatch.c)
 * Every job state change goes through jobstate_transition().
 */
#ifndef TY_SCHED_SCHEDULER_H
#define TY_SCHED_SCHEDULER_H

#include <jansson.h>
#include <libpq-fe.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "identity.h"
#include "slurm.h"
#include "telemetry.h"

/* An attempt's credential stays valid this long past the job's time limit. */
#define SCHED_CREDENTIAL_MARGIN_MINUTES 60
/* Jobs per tenant a cycle looks at: the head of each queue. */
#define SCHED_HEAD_JOBS 16

typedef struct sched_stats {
	long cycles, admitted, submitted, recovered, ended, retried, cancelled, hung;
} sched_stats;

typedef struct sched {
	const ty_config *cfg;
	PGconn *db;
	char owner[128]; /* host:pid, written as jobs.dispatch_owner */
	/* the leadership lease while leading (leader.h): its epoch ("" when
	 * not leading), when the last renewal was sent and when it runs out,
	 * on the monotonic clock in ms */
	char epoch[24];
	long long lease_renewed_ms, lease_until_ms;
	char spool[PATH_MAX / 2]; /* short enough for every path made under it */
	char worker_bin[PATH_MAX];
	/* the scheduler's working directory; batch jobs start in their tenant's spool */
	char work_dir[PATH_MAX / 2];
	char storage_root[PATH_MAX];
	char data_root[PATH_MAX]; /* TRAINYARD_DATA_ROOT, absolute, for the batch jobs */
	int lease_s, backoff_s, batch, max_admit;
	int lost_s; /* TRAINYARD_SCHED_LOST_S: an attempt Slurm shows nothing of is lost after it */
	int node_grace_s; /* Slurm's SlurmdTimeout, read at the first cycle (retry.h) */
	double halflife_h;
	bool sync_accounts;
	/* the Slurm jobs of this cycle (sl_our_jobs), sorted by id */
	sl_job *sj;
	int n_sj;
	sched_stats stats;
	sched_telemetry tm; /* GET /metrics (telemetry.h) */
	/* test hook: TRAINYARD_SCHED_CRASH_AT=phase kills the process there */
	const char *crash_at;
} sched;

/*
 * Fill *s from the settings (relative paths made absolute; the worker, when
 * not set, beside this program) and prepare the spool. No database yet.
 * RET 0, or -1 (logged).
 */
int sched_setup(sched *s, const ty_config *cfg);

/* Sleep ms milliseconds (between cycles, between tries for the lead). */
void sched_sleep_ms(int ms);

/* One cycle. RET 0, or -1 when the database or Slurm failed (logged). */
int sched_cycle(sched *s);

int accounts_sync(sched *s);
/*
 * The tenant's Unix user id an association in the tenant's Slurm account
 * (sacctmgr add user), once. RET 0, 1 when sacctmgr failed (logged), or -1
 * when the database failed.
 */
int accounts_associate(sched *s, const char *tenant_id, const char *name,
                       const tenant_identity *id);
/*
 * Whether the tenant's jobs may be dispatched now (identity.c): it has a
 * usable Unix user (given from the pool when it had none), associated in
 * its Slurm account, and its directories in the storage root, the data
 * root and the spool are that user's. RET 0; 1 when not, with why (the
 * reason its jobs wait); -1 when the database failed.
 */
int sched_tenant_ready(sched *s, const char *tenant_id, const char *name, char *why, size_t n);
/*
 * Follow every attempt (reconcile.c), finish lost dispatches
 * (dispatch_recover), settle jobs left without a followed attempt. One
 * job's failure is noted on that job and blocks no other.
 * RET 0, or -1 when the database connection is lost.
 */
int reconcile(sched *s);
/*
 * End a followed attempt whose Slurm job is gone as lost (retry rules
 * apply). RET 0, or -1 when the database failed: the attempt could not be
 * read, or its end not recorded (then noted on the job).
 */
int reconcile_attempt_lost(sched *s, const char *attempt_id);
/* Admission and dispatch. RET the jobs submitted, or -1. */
int admit_and_dispatch(sched *s);

/*
 * Preemption (preemptions.c; the rule is preempt.h). After admission: for
 * each tenant's job left waiting for the cluster's room, in admission's
 * order, ask the victims the rule picks to checkpoint and stop, taking
 * the room they free from *room; each waiting job's reason says what it
 * waits for. RET 0, or -1 when the database failed.
 */
int preempt_for_waiting(sched *s, admit_tenant *ts, int n, admit_cluster *room);
/*
 * The grace of the attempt's open preemption is over: record it as
 * cancelled (class preempted) and cancel its Slurm job. RET 0 or -1.
 */
int preempt_cancel(sched *s, const char *attempt_id, uint32_t slurm_id);
/*
 * Inside the transaction that ends the attempt (with class klass): close
 * its open preemption, if any, with the steps done and lost, and write
 * its audit record. OUT: *detail, the preemption as the job's event tells
 * it (NULL when there was none; json_decref() it). RET 0 or -ERR_*.
 */
int preempt_close(sched *s, const char *attempt_id, const char *klass, json_t **detail);

/* The Slurm account of a tenant: "ty-" and its name. */
void sched_account_name(const char *tenant, char out[80]);

/*
 * A job the scheduler could not move: logged, and said in the job's
 * state_reason (with no detail of the database's error), so that it shows
 * why it waits. The next cycle tries again.
 */
void sched_job_trouble(sched *s, const char *job_id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* RET: whether the database connection is gone (then the cycle stops). */
bool sched_db_lost(const sched *s);

/* Dies (SIGKILL itself) when TRAINYARD_SCHED_CRASH_AT names this point. */
void sched_crash_point(const sched *s, const char *point);

#endif
