/*
 * cycle.c - one scheduling cycle (see scheduler.h), and the admission
 * half of it: what admit_cycle() needs, loaded from the database and
 * Slurm, and what it decided, written back.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit.h"
#include "alerts.h"
#include "clock.h"
#include "db.h"
#include "dispatch.h"
#include "jobstate.h"
#include "log.h"
#include "scheduler.h"

void sched_job_trouble(sched *s, const char *job_id, const char *fmt, ...)
{
	char what[200], why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_printf(LOG_ERROR, "job %s: %s; trying again next cycle", job_id, what);
	if (sched_db_lost(s))
		return;
	snprintf(why, sizeof(why), "scheduler: %s; trying again", what);
	jobstate_note(s->db, job_id, why, JOB_STATE_ANY);
}

bool sched_db_lost(const sched *s)
{
	return !s->db || PQstatus(s->db) != CONNECTION_OK;
}

void sched_crash_point(const sched *s, const char *point)
{
	if (s->crash_at && strcmp(s->crash_at, point) == 0) {
		log_printf(LOG_WARN, "crash point %s: killing myself", point);
		kill(getpid(), SIGKILL);
	}
}

/*
 * The tenants with admissible queued jobs, with their quotas, what they
 * run now, their decayed usage and this month's GPU-hours. Usage counts
 * device-hours of every attempt that ran, each weighed by 2^(-age /
 * half-life), age since its end; attempts older than ten half-lives count
 * for nothing and are not read.
 */
#define TENANTS_SQL                                                                                \
	"WITH q AS (SELECT t.id AS tenant_id FROM tenants t WHERE EXISTS (SELECT 1 FROM jobs j"    \
	"   WHERE j.tenant_id = t.id AND j.state = 'queued'"                                       \
	"   AND coalesce(j.not_before, '-infinity') <= now())),"                                   \
	" u AS (SELECT j.tenant_id, a.devices,"                                                    \
	"   a.started_at AS s, coalesce(a.ended_at, now()) AS e"                                   \
	"   FROM job_attempts a JOIN jobs j ON j.id = a.job_id"                                    \
	"   WHERE a.created_at > now() - 10 * $1::double precision * interval '1 hour'"            \
	"   AND a.started_at IS NOT NULL AND j.tenant_id IN (SELECT tenant_id FROM q))"            \
	" SELECT t.id, t.name, k.weight,"                                                          \
	" (SELECT coalesce(sum(u.devices * extract(epoch FROM u.e - u.s) / 3600"                   \
	"   * power(0.5, extract(epoch FROM now() - u.e) / 3600 / $1::double precision)), 0)"      \
	"   FROM u WHERE u.tenant_id = t.id), " QUOTA_SQL_COLUMNS                                  \
	" FROM q JOIN tenants t ON t.id = q.tenant_id" QUOTA_SQL_JOIN("t.id") " ORDER BY t.id"

/*
 * The head of each of those tenants' queues, in admission order; with each,
 * its priority and whether it is preemptible, and the preemptions made for
 * it since its last attempt: how many, and how many of those still run
 * (preempt.h).
 */
#define HEADS_SQL                                                                                  \
	"SELECT h.tenant_id, h.id, h.n, h.rpn, h.gpn, h.state_reason, h.waited,"                   \
	" h.priority, h.preemptible, p.made, p.open FROM"                                          \
	" unnest($1::uuid[]) AS t(id) CROSS JOIN LATERAL"                                          \
	" (SELECT j.tenant_id, j.id, j.state_reason, j.priority, j.preemptible,"                   \
	"   extract(epoch FROM now() - j.created_at) AS waited,"                                   \
	"   coalesce(j.next_nodes, (j.spec->'resources'->>'nodes')::int) AS n,"                    \
	"   (j.spec->'resources'->>'ranks_per_node')::int AS rpn,"                                 \
	"   (j.spec->'resources'->>'gpus_per_node')::int AS gpn"                                   \
	"   FROM jobs j WHERE j.tenant_id = t.id AND j.state = 'queued'"                           \
	"   AND coalesce(j.not_before, '-infinity') <= now()"                                      \
	"   ORDER BY j.priority DESC, j.created_at, j.id LIMIT $2) h"                              \
	" CROSS JOIN LATERAL (SELECT count(*) AS made,"                                            \
	"   count(*) FILTER (WHERE x.ended_at IS NULL) AS open FROM preemptions x"                 \
	"   WHERE x.beneficiary_job_id = h.id AND x.asked_at > coalesce((SELECT max(a.created_at)" \
	"   FROM job_attempts a WHERE a.job_id = h.id), '-infinity')) p"

typedef struct cycle_load {
	admit_tenant *tenants;
	int n_tenants;
	admit_job *jobs;
	char (*job_reason)[256]; /* each job's state_reason now */
	double *job_waited;      /* seconds since each job's submission */
	int n_jobs;
} cycle_load;

static void load_free(cycle_load *l)
{
	free(l->tenants);
	free(l->jobs);
	free(l->job_reason);
	free(l->job_waited);
	memset(l, 0, sizeof(*l));
}

static int load_tenants(sched *s, cycle_load *l)
{
	char hl[32];
	snprintf(hl, sizeof(hl), "%.6f", s->halflife_h);
	const char *p[] = {hl};
	PGresult *r;
	if (db_query(s->db, &r, TENANTS_SQL, 1, p)) {
		PQclear(r);
		return -1;
	}
	int n = PQntuples(r);
	l->tenants = calloc(n ? (size_t)n : 1, sizeof(*l->tenants));
	if (!l->tenants) {
		PQclear(r);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		admit_tenant *t = &l->tenants[i];
		snprintf(t->id, sizeof(t->id), "%s", PQgetvalue(r, i, 0));
		snprintf(t->name, sizeof(t->name), "%s", PQgetvalue(r, i, 1));
		t->weight = atof(PQgetvalue(r, i, 2));
		t->usage_hours = atof(PQgetvalue(r, i, 3));
		quota_from_row(r, i, 4, &t->limits, &t->use);
	}
	l->n_tenants = n;
	PQclear(r);
	return 0;
}

static admit_tenant *tenant_by_id(cycle_load *l, const char *id)
{
	for (int i = 0; i < l->n_tenants; i++)
		if (strcmp(l->tenants[i].id, id) == 0)
			return &l->tenants[i];
	return NULL;
}

static int load_heads(sched *s, cycle_load *l)
{
	size_t cap = (size_t)l->n_tenants * 38 + 3;
	char *ids = malloc(cap), limit[16];
	if (!ids)
		return -1;
	size_t k = 0;
	ids[k++] = '{';
	for (int i = 0; i < l->n_tenants; i++)
		k += (size_t)snprintf(ids + k, cap - k, "%s%s", i ? "," : "", l->tenants[i].id);
	snprintf(ids + k, cap - k, "}");
	snprintf(limit, sizeof(limit), "%d", SCHED_HEAD_JOBS);
	const char *p[] = {ids, limit};
	PGresult *r;
	int rc = db_query(s->db, &r, HEADS_SQL, 2, p);
	free(ids);
	if (rc) {
		PQclear(r);
		return -1;
	}
	int n = PQntuples(r);
	l->jobs = calloc(n ? (size_t)n : 1, sizeof(*l->jobs));
	l->job_reason = calloc(n ? (size_t)n : 1, sizeof(*l->job_reason));
	l->job_waited = calloc(n ? (size_t)n : 1, sizeof(*l->job_waited));
	if (!l->jobs || !l->job_reason || !l->job_waited) {
		PQclear(r);
		return -1;
	}
	/* rows come grouped by tenant, in queue order: each tenant's slice of jobs */
	for (int i = 0; i < n; i++) {
		admit_job *j = &l->jobs[i];
		snprintf(j->id, sizeof(j->id), "%s", PQgetvalue(r, i, 1));
		j->nodes = atoi(PQgetvalue(r, i, 2));
		j->cpus_per_node = atoi(PQgetvalue(r, i, 3));
		j->gpus_per_node = atoi(PQgetvalue(r, i, 4));
		j->devices =
		    j->nodes * (j->gpus_per_node > 0 ? j->gpus_per_node : j->cpus_per_node);
		snprintf(l->job_reason[i], sizeof(l->job_reason[0]), "%s", PQgetvalue(r, i, 5));
		l->job_waited[i] = atof(PQgetvalue(r, i, 6));
		j->priority = atoi(PQgetvalue(r, i, 7));
		j->no_preempt = PQgetvalue(r, i, 8)[0] != 't';
		j->favoured = atoi(PQgetvalue(r, i, 9)) > 0;
		j->waiting_on = atoi(PQgetvalue(r, i, 10));
		admit_tenant *t = tenant_by_id(l, PQgetvalue(r, i, 0));
		if (t && !t->jobs)
			t->jobs = j;
		if (t)
			t->n_jobs++;
	}
	l->n_jobs = n;
	PQclear(r);
	return 0;
}

/*
 * The room admission may hand out: what Slurm's nodes have free, less
 * what the jobs we submitted and Slurm still holds pending will take;
 * and the devices the cluster still lends (TRAINYARD_LEND_LIMIT less what
 * the tenants borrowed).
 */
static int cluster_load(sched *s, admit_cluster *c)
{
	char err[SL_ERR_MAX];
	if (sl_cluster_room(c, err) < 0) {
		log_printf(LOG_WARN, "%s", err);
		return -1;
	}
	PGresult *r;
	if (db_query(s->db, &r,
	             "SELECT a.nodes, (j.spec->'resources'->>'ranks_per_node')::int,"
	             " (j.spec->'resources'->>'gpus_per_node')::int"
	             " FROM job_attempts a JOIN jobs j ON j.id = a.job_id"
	             " WHERE a.followed AND a.started_at IS NULL",
	             0, NULL)) {
		PQclear(r);
		return -1;
	}
	for (int i = 0; i < PQntuples(r); i++) {
		admit_job j = {.nodes = atoi(PQgetvalue(r, i, 0)),
		               .cpus_per_node = atoi(PQgetvalue(r, i, 1)),
		               .gpus_per_node = atoi(PQgetvalue(r, i, 2))};
		admit_cluster_take(c, &j);
	}
	PQclear(r);
	c->lend_left = -1;
	if (s->cfg->lend_limit < 0)
		return 0;
	if (db_query(s->db, &r, "SELECT coalesce(sum(borrowed), 0) FROM job_devices_held", 0,
	             NULL)) {
		PQclear(r);
		return -1;
	}
	long lent = strtol(PQgetvalue(r, 0, 0), NULL, 10);
	c->lend_left = lent >= s->cfg->lend_limit ? 0 : (int)(s->cfg->lend_limit - lent);
	PQclear(r);
	return 0;
}

/* The fair-share picture and each waiting head job's reason, for GET /v1/jobs/{job}. */
static int write_picture(sched *s, const cycle_load *l)
{
	int rc = db_begin(s->db);
	if (rc == 0)
		rc = db_query(s->db, NULL, "DELETE FROM scheduler_tenants", 0, NULL);
	for (int i = 0; rc == 0 && i < l->n_tenants; i++) {
		const admit_tenant *t = &l->tenants[i];
		char usage[32], weight[32], rank[16];
		snprintf(usage, sizeof(usage), "%.6f", t->usage_hours);
		snprintf(weight, sizeof(weight), "%.6f", t->weight);
		snprintf(rank, sizeof(rank), "%d", t->rank);
		const char *p[] = {t->id, usage, weight, rank, t->reason};
		rc = db_query(s->db, NULL,
		              "INSERT INTO scheduler_tenants (tenant_id, usage_hours, weight, rank,"
		              " reason) VALUES ($1, $2, $3, $4, $5)",
		              5, p);
	}
	for (int i = 0; rc == 0 && i < l->n_jobs; i++) {
		const admit_job *j = &l->jobs[i];
		if (j->admitted || !j->reason[0] || strcmp(j->reason, l->job_reason[i]) == 0)
			continue;
		rc = jobstate_note(s->db, j->id, j->reason, JOB_QUEUED);
	}
	if (rc == 0)
		rc = db_commit(s->db);
	if (rc)
		db_rollback(s->db);
	return rc ? -1 : 0;
}

/* What admission made of each tenant, and each admitted job's wait, into the metrics. */
static void count_admission(sched *s, const cycle_load *l)
{
	sched_telemetry *tm = &s->tm;
	prom_reset(tm->rank);
	prom_reset(tm->usage);
	for (int i = 0; i < l->n_tenants; i++) {
		const admit_tenant *t = &l->tenants[i];
		if (t->rank > 0)
			sched_gauge(tm->rank, t->name, t->rank);
		sched_gauge(tm->usage, t->name, t->usage_hours * 3600);
		for (int k = 0; k < t->n_jobs; k++) {
			const admit_job *j = &t->jobs[k];
			if (!j->admitted)
				continue;
			const char *const v[] = {t->name};
			sched_count(tm->admitted, t->name, 1);
			prom_observe(tm->queue_wait, v, l->job_waited[j - l->jobs]);
		}
	}
}

/*
 * Every tenant's devices in use and device quota into the gauges, and the
 * alert for a GPU-hour budget nearly spent: each cycle, whether or not the
 * tenant has work waiting, so that a gauge never outlives its jobs.
 */
static int count_quotas(sched *s)
{
	sched_telemetry *tm = &s->tm;
	PGresult *r;
	if (db_query(s->db, &r,
	             "SELECT t.id, t.name, " QUOTA_SQL_COLUMNS
	             " FROM tenants t" QUOTA_SQL_JOIN("t.id"),
	             0, NULL)) {
		PQclear(r);
		return -1;
	}
	prom_reset(tm->devices);
	prom_reset(tm->quota);
	for (int i = 0; i < PQntuples(r); i++) {
		const char *name = PQgetvalue(r, i, 1);
		quota_limits q;
		quota_use u;
		quota_from_row(r, i, 2, &q, &u);
		sched_gauge(tm->devices, name, (double)u.devices);
		sched_gauge(tm->quota, name, (double)q.max_gpus);
		if (q.gpu_hours_per_month > 0 && u.month_gpu_hours >= 0.9 * q.gpu_hours_per_month)
			sched_alert_tenant(s, PQgetvalue(r, i, 0), "quota_nearly_spent",
			                   json_pack("{s:f, s:I}", "device_hours",
			                             u.month_gpu_hours, "gpu_hours_per_month",
			                             (json_int_t)q.gpu_hours_per_month),
			                   "1 day");
	}
	PQclear(r);
	return 0;
}

/* The cluster's nodes as Slurm showed them, for the API's check at submission. */
static int write_cluster(sched *s, const admit_cluster *c)
{
	int rc = db_begin(s->db);
	if (rc == 0)
		rc = db_query(s->db, NULL, "DELETE FROM scheduler_cluster", 0, NULL);
	for (int i = 0; rc == 0 && i < c->n_nodes; i++) {
		char cpus[16], gpus[16];
		snprintf(cpus, sizeof(cpus), "%d", c->cpus[i]);
		snprintf(gpus, sizeof(gpus), "%d", c->gpus[i]);
		const char *p[] = {c->name[i], cpus, gpus, c->up[i] ? "t" : "f"};
		rc = db_query(s->db, NULL,
		              "INSERT INTO scheduler_cluster (node, cpus, gpus, up)"
		              " VALUES ($1, $2::int, $3::int, $4::boolean)",
		              4, p);
	}
	if (rc == 0)
		rc = db_commit(s->db);
	if (rc)
		db_rollback(s->db);
	return rc ? -1 : 0;
}

int admit_and_dispatch(sched *s)
{
	cycle_load l = {0};
	admit_cluster cluster;
	int rc = -1, submitted = 0;
	if (count_quotas(s) < 0 || cluster_load(s, &cluster) < 0 ||
	    write_cluster(s, &cluster) < 0 || load_tenants(s, &l) < 0 || load_heads(s, &l) < 0)
		goto out;
	if (l.n_tenants == 0) {
		rc = db_query(s->db, NULL, "DELETE FROM scheduler_tenants", 0, NULL) ? -1 : 0;
		goto out;
	}
	/* a tenant whose jobs cannot run as its own Unix user is held (identity.c) */
	for (int i = 0; i < l.n_tenants; i++) {
		admit_tenant *t = &l.tenants[i];
		if (sched_tenant_ready(s, t->id, t->name, t->hold, sizeof(t->hold)) < 0)
			goto out;
	}
	admit_job **order = calloc((size_t)s->max_admit, sizeof(*order));
	char(*ids)[37] = calloc((size_t)s->max_admit, sizeof(*ids));
	int *borrowed = calloc((size_t)s->max_admit, sizeof(*borrowed));
	if (!order || !ids || !borrowed) {
		free(order);
		free(ids);
		free(borrowed);
		goto out;
	}
	int n = admit_cycle(l.tenants, l.n_tenants, &cluster, order, s->max_admit);
	for (int i = 0; i < n; i++) {
		memcpy(ids[i], order[i]->id, sizeof(ids[i]));
		borrowed[i] = order[i]->borrowed;
	}
	free(order);
	s->stats.admitted += n;
	count_admission(s, &l);
	/* the jobs left waiting for room may take it from others (preempt.h) */
	rc = preempt_for_waiting(s, l.tenants, l.n_tenants, &cluster);
	if (rc == 0)
		rc = write_picture(s, &l);
	if (rc == 0 && n > 0) {
		submitted = dispatch_jobs(s, ids, borrowed, n);
		sched_count(s->tm.dispatched, "submitted", submitted > 0 ? submitted : 0);
		sched_count(s->tm.dispatched, "not_submitted", n - (submitted > 0 ? submitted : 0));
	}
	free(ids);
	free(borrowed);
	if (submitted < 0)
		rc = -1;
out:
	load_free(&l);
	return rc < 0 ? -1 : submitted;
}

static int cycle(sched *s)
{
	char err[SL_ERR_MAX];
	free(s->sj);
	s->sj = NULL;
	s->n_sj = 0;
	s->stats.cycles++;
	/* Slurm first: nothing is submitted before what Slurm holds is known */
	if (sl_our_jobs(&s->sj, &s->n_sj, err) < 0) {
		log_printf(LOG_WARN, "%s; this cycle does nothing", err);
		return -1;
	}
	if (s->node_grace_s <= 0)
		s->node_grace_s = sl_node_timeout_s(err);
	if (accounts_sync(s) < 0)
		log_printf(LOG_WARN, "some tenants' Slurm accounts are not in step");
	if (reconcile(s) < 0)
		return -1;
	sched_alert_stalls(s);
	return admit_and_dispatch(s) < 0 ? -1 : 0;
}

int sched_cycle(sched *s)
{
	double t0 = clock_mono_s();
	int rc = cycle(s);
	sched_count(s->tm.cycles, rc < 0 ? "failed" : "ok", 1);
	prom_observe(s->tm.cycle_s, NULL, clock_mono_s() - t0);
	return rc;
}
