/*
 * sched.c - the scheduler's benchmarks, the driver of bench/sched.
 *
 *   sched dispatch TEMPLATE TENANT JOBS ROUNDS
 *     Dispatch throughput, queued -> submitted. Each round inserts JOBS
 *     queued jobs of TENANT (copies of job TEMPLATE's spec) and hands
 *     them to dispatch_jobs(): prepare, submit, record, as a cycle does.
 *     Beside it, in the same round, a plain loop submits JOBS batch jobs
 *     of the same shape (script, environment, comment, nodes, account)
 *     with sl_submit_batch() and nothing else. The two alternate which
 *     goes first; after each, every Slurm job is cancelled and the
 *     database rows deleted. Prints jobs/s of each round, the medians and
 *     their ratio, then where dispatch_jobs() spent its time per job.
 *
 *   sched cycle TEMPLATE TENANTS SMALL LARGE CYCLES
 *     Scheduling cycle time at two queue depths. SMALL, then LARGE,
 *     queued jobs spread evenly over the comma-separated TENANTS (whose
 *     quotas must admit nothing), inserted with generate_series, vacuumed
 *     and analysed; then CYCLES timed sched_cycle() calls at each depth after
 *     two untimed ones. Prints the medians, their ratio, and each
 *     statement's time per cycle at both depths. The queued jobs are
 *     deleted at the end.
 *
 * The per-call times come from the link: the Makefile links this program
 * with --wrap for db_query, db_begin, db_commit, fsync and the libslurm
 * calls of scheduler/slurm.c, so that every such call the scheduler's code
 * makes passes through a timer here first. A statement's time includes
 * its round trip to PostgreSQL, a Slurm call's its RPCs to slurmctld.
 *
 * Settings come from the environment as for trainyard-scheduler
 * (TRAINYARD_DB, TRAINYARD_URL, TRAINYARD_SCHED_SPOOL,
 * TRAINYARD_SCHED_WORKER_BIN, SLURM_CONF); the tenants must exist.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "config.h"
#include "db.h"
#include "dispatch.h"
#include "log.h"
#include "scheduler.h"
#include "slurm.h"

#define DISPATCH_TARGET 0.8 /* dispatch_jobs() jobs/s over plain submissions */
#define CYCLE_TARGET    2.0 /* cycle time at LARGE over the time at SMALL */
#define ROUNDS_MAX      15
#define CYCLES_MAX      200
#define PROF_STMTS      96

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "sched: %s\n", what);
	exit(1);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double s[CYCLES_MAX];
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), by_value);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* ---- the timers the link puts in front of the scheduler's calls ---------- */

typedef struct prof_row {
	const char *key; /* the SQL text (its address), or a name */
	long calls;
	double s;
} prof_row;

typedef struct prof {
	prof_row row[PROF_STMTS];
	int n;
} prof;

/* Where the calls are counted now; NULL: nowhere. */
static prof *prof_now;

static void prof_add(const char *key, double s)
{
	prof *p = prof_now;
	if (!p)
		return;
	for (int i = 0; i < p->n; i++)
		if (p->row[i].key == key) {
			p->row[i].calls++;
			p->row[i].s += s;
			return;
		}
	if (p->n < PROF_STMTS)
		p->row[p->n++] = (prof_row){key, 1, s};
}

static const prof_row *prof_find(const prof *p, const char *key)
{
	for (int i = 0; i < p->n; i++)
		if (p->row[i].key == key)
			return &p->row[i];
	return NULL;
}

static double prof_total(const prof *p)
{
	double s = 0;
	for (int i = 0; i < p->n; i++)
		s += p->row[i].s;
	return s;
}

static const char K_BEGIN[] = "BEGIN (db_begin)";
static const char K_COMMIT[] = "COMMIT (db_commit)";
static const char K_FSYNC[] = "fsync (credential files)";
static const char K_SUBMIT[] = "slurm_submit_batch_job (sl_submit_batch)";
static const char K_JOBS[] = "slurm_load_jobs (sl_our_jobs)";
static const char K_NODES[] = "slurm_load_node (sl_cluster_room)";

int __real_db_query(PGconn *c, PGresult **res, const char *sql, int n, const char *const *params);
int __wrap_db_query(PGconn *c, PGresult **res, const char *sql, int n, const char *const *params);
int __real_db_begin(PGconn *c);
int __wrap_db_begin(PGconn *c);
int __real_db_commit(PGconn *c);
int __wrap_db_commit(PGconn *c);
int __real_fsync(int fd);
int __wrap_fsync(int fd);
int __real_sl_submit_batch(const sl_submit *s, uint32_t *job_id, char err[SL_ERR_MAX]);
int __wrap_sl_submit_batch(const sl_submit *s, uint32_t *job_id, char err[SL_ERR_MAX]);
int __real_sl_our_jobs(sl_job **jobs, int *n, char err[SL_ERR_MAX]);
int __wrap_sl_our_jobs(sl_job **jobs, int *n, char err[SL_ERR_MAX]);
int __real_sl_cluster_room(admit_cluster *c, char err[SL_ERR_MAX]);
int __wrap_sl_cluster_room(admit_cluster *c, char err[SL_ERR_MAX]);

int __wrap_db_query(PGconn *c, PGresult **res, const char *sql, int n, const char *const *params)
{
	double t = now();
	int rc = __real_db_query(c, res, sql, n, params);
	prof_add(sql, now() - t);
	return rc;
}

int __wrap_db_begin(PGconn *c)
{
	double t = now();
	int rc = __real_db_begin(c);
	prof_add(K_BEGIN, now() - t);
	return rc;
}

int __wrap_db_commit(PGconn *c)
{
	double t = now();
	int rc = __real_db_commit(c);
	prof_add(K_COMMIT, now() - t);
	return rc;
}

int __wrap_fsync(int fd)
{
	double t = now();
	int rc = __real_fsync(fd);
	prof_add(K_FSYNC, now() - t);
	return rc;
}

int __wrap_sl_submit_batch(const sl_submit *s, uint32_t *job_id, char err[SL_ERR_MAX])
{
	double t = now();
	int rc = __real_sl_submit_batch(s, job_id, err);
	prof_add(K_SUBMIT, now() - t);
	return rc;
}

int __wrap_sl_our_jobs(sl_job **jobs, int *n, char err[SL_ERR_MAX])
{
	double t = now();
	int rc = __real_sl_our_jobs(jobs, n, err);
	prof_add(K_JOBS, now() - t);
	return rc;
}

int __wrap_sl_cluster_room(admit_cluster *c, char err[SL_ERR_MAX])
{
	double t = now();
	int rc = __real_sl_cluster_room(c, err);
	prof_add(K_NODES, now() - t);
	return rc;
}

/* A row's label: a name as it is, SQL with its spaces folded, cut to fit. */
static void prof_label(const char *key, char *out, size_t n)
{
	size_t k = 0;
	bool space = false;
	for (const char *p = key; *p && k + 4 < n; p++) {
		if (*p == ' ' || *p == '\n' || *p == '\t') {
			space = k > 0;
			continue;
		}
		if (space)
			out[k++] = ' ';
		space = false;
		out[k++] = *p == '|' ? '/' : *p;
	}
	if (k + 4 >= n && k >= 3)
		memcpy(out + k - 3, "...", 3);
	out[k] = '\0';
}

/* ---- setup ----------------------------------------------------------------- */

/* The scheduler's state as trainyard-scheduler sets it up, and its database. */
static void bench_sched_init(sched *s, const ty_config *cfg)
{
	char err[512];
	if (sched_setup(s, cfg) < 0)
		die("the scheduler could not be set up (TRAINYARD_SCHED_WORKER_BIN, the spool)");
	s->max_admit = 100000;
	s->sync_accounts = true;
	s->db = db_connect(cfg->db, err, sizeof(err));
	if (!s->db)
		die(err);
}

static PGresult *query(sched *s, const char *sql, int n, const char *const *p)
{
	PGresult *r;
	if (db_query(s->db, &r, sql, n, p)) {
		fprintf(stderr, "sched: %s\n", r ? PQresultErrorMessage(r) : "query failed");
		exit(1);
	}
	return r;
}

static void exec1(sched *s, const char *sql, int n, const char *const *p)
{
	PQclear(query(s, sql, n, p));
}

/*
 * Every tenant's Slurm account (sacctmgr), and each named tenant's Unix
 * user, its association and directories (sched_tenant_ready), before
 * anything is submitted.
 */
static void accounts_ready(sched *s, const char *const *tenants, int n)
{
	if (accounts_sync(s) < 0)
		die("the Slurm accounts could not be synced (sacctmgr)");
	for (int i = 0; i < n; i++) {
		char why[ADMIT_REASON_MAX];
		const char *p[] = {tenants[i]};
		PGresult *r = query(s, "SELECT id FROM tenants WHERE name = $1", 1, p);
		if (PQntuples(r) != 1 ||
		    sched_tenant_ready(s, PQgetvalue(r, 0, 0), tenants[i], why, sizeof(why)) != 0)
			die(PQntuples(r) != 1 ? "a tenant is not there" : why);
		PQclear(r);
	}
}

/* COUNT copies of the template, queued in TENANT. OUT: ids (when not NULL). */
static int jobs_insert(sched *s, const char *tmpl, const char *tenant, int count, char (*ids)[37])
{
	char n[16];
	snprintf(n, sizeof(n), "%d", count);
	const char *p[] = {tmpl, tenant, n};
	PGresult *r = query(s,
	                    "INSERT INTO jobs (tenant_id, name, spec, devices)"
	                    " SELECT t.id, 'bench-' || g, j.spec, j.devices"
	                    " FROM jobs j, tenants t, generate_series(1, $3::int) g"
	                    " WHERE j.id = $1 AND t.name = $2 RETURNING id",
	                    3, p);
	int got = PQntuples(r);
	for (int i = 0; ids && i < got; i++)
		snprintf(ids[i], sizeof(ids[i]), "%s", PQgetvalue(r, i, 0));
	PQclear(r);
	if (got != count)
		die("could not insert the queued jobs (is the template job there?)");
	return got;
}

/* ---- dispatch ---------------------------------------------------------------- */

/* Cancel every Slurm job of TENANT's attempts, drop their files, delete the jobs but TMPL. */
static void dispatch_undo(sched *s, const char *tmpl, const char *tenant)
{
	char err[SL_ERR_MAX], path[PATH_MAX];
	const char *p[] = {tenant, tmpl};
	PGresult *r = query(s,
	                    "SELECT a.id, coalesce(a.slurm_job_id, 0), t.id FROM job_attempts a"
	                    " JOIN jobs j ON j.id = a.job_id JOIN tenants t ON t.id = j.tenant_id"
	                    " WHERE t.name = $1",
	                    1, p);
	for (int i = 0; i < PQntuples(r); i++) {
		uint32_t id = (uint32_t)strtoul(PQgetvalue(r, i, 1), NULL, 10);
		if (id && sl_cancel(id, err) < 0)
			fprintf(stderr, "sched: %s\n", err);
		batch_credential_path(s, PQgetvalue(r, i, 2), PQgetvalue(r, i, 0), path,
		                      sizeof(path));
		unlink(path);
	}
	PQclear(r);
	exec1(s,
	      "DELETE FROM jobs WHERE tenant_id = (SELECT id FROM tenants WHERE name = $1)"
	      " AND id <> $2",
	      2, p);
}

/* One round of dispatch_jobs(), its calls counted into *into. RET: seconds. */
static double dispatch_round(sched *s, const char *tmpl, const char *tenant, int n, prof *into)
{
	char(*ids)[37] = calloc((size_t)n, sizeof(*ids));
	if (!ids)
		die("out of memory");
	jobs_insert(s, tmpl, tenant, n, ids);
	prof_now = into;
	double t = now();
	int got = dispatch_jobs(s, ids, n);
	t = now() - t;
	prof_now = NULL;
	if (got != n) {
		fprintf(stderr, "sched: dispatch_jobs submitted %d of %d\n", got, n);
		exit(1);
	}
	free(ids);
	dispatch_undo(s, tmpl, tenant);
	return t;
}

/* The template's layout, as dispatch reads it for an attempt. */
static void item_from_template(sched *s, const char *tmpl, const char *tenant, dispatch_item *it)
{
	const char *p[] = {tmpl};
	PGresult *r =
	    query(s,
	          "SELECT (spec->'resources'->>'nodes')::int,"
	          " (spec->'resources'->>'ranks_per_node')::int,"
	          " (spec->'resources'->>'gpus_per_node')::int,"
	          " (spec->'resources'->>'time_limit_minutes')::int,"
	          " coalesce(spec->'resources'->>'partition', '') FROM jobs WHERE id = $1",
	          1, p);
	if (PQntuples(r) != 1)
		die("the template job is not there");
	memset(it, 0, sizeof(*it));
	it->nodes = atoi(PQgetvalue(r, 0, 0));
	it->ranks_per_node = atoi(PQgetvalue(r, 0, 1));
	it->gpus_per_node = atoi(PQgetvalue(r, 0, 2));
	it->time_limit_minutes = atoi(PQgetvalue(r, 0, 3));
	snprintf(it->partition, sizeof(it->partition), "%s", PQgetvalue(r, 0, 4));
	snprintf(it->tenant, sizeof(it->tenant), "%s", tenant);
	it->number = 1;
	PQclear(r);
	/* the tenant's Unix user, as a dispatch reads it (docs/identity.md) */
	const char *q[] = {tenant};
	r = query(s,
	          "SELECT t.id, coalesce(i.uid, 0), coalesce(i.gid, 0) FROM tenants t"
	          " LEFT JOIN tenant_identities i ON i.tenant_id = t.id WHERE t.name = $1",
	          1, q);
	if (PQntuples(r) != 1)
		die("the tenant is not there");
	snprintf(it->tenant_id, sizeof(it->tenant_id), "%s", PQgetvalue(r, 0, 0));
	it->uid = (uid_t)strtoul(PQgetvalue(r, 0, 1), NULL, 10);
	it->gid = (gid_t)strtoul(PQgetvalue(r, 0, 2), NULL, 10);
	PQclear(r);
}

static void env_put(char *env, size_t n, const char *name, const char *value)
{
	snprintf(env, n, "%s=%s", name, value);
}

/*
 * N plain submissions of the shape batch_submit() gives an attempt: its
 * script, name, comment, account, output file, the same eight variables,
 * nodes, tasks, GPUs, time limit and warning. RET: seconds.
 */
static double plain_round(sched *s, const dispatch_item *shape, int n, prof *into)
{
	uint32_t *ids = calloc((size_t)n, sizeof(*ids));
	char err[SL_ERR_MAX];
	if (!ids)
		die("out of memory");
	prof_now = into;
	double t = now();
	for (int i = 0; i < n; i++) {
		dispatch_item it = *shape;
		char script[4096], cred[PATH_MAX], out[PATH_MAX], comment[96], name[48],
		    account[80], hb[16], home[PATH_MAX / 2];
		static char env_s[8][PATH_MAX + 64];
		snprintf(it.job_id, sizeof(it.job_id), "00000000-0000-4000-8000-%012d", i);
		snprintf(it.attempt_id, sizeof(it.attempt_id), "00000000-0000-4000-9000-%012d", i);
		if (batch_script(s, &it, script, sizeof(script)) < 0)
			die("could not write the batch script");
		batch_credential_path(s, it.tenant_id, it.attempt_id, cred, sizeof(cred));
		batch_tenant_spool(s, it.tenant_id, home, sizeof(home));
		snprintf(out, sizeof(out), "%s/%s-%d.out", home, it.job_id, it.number);
		snprintf(comment, sizeof(comment), SL_COMMENT_PREFIX "%s attempt=%d", it.job_id,
		         it.number);
		snprintf(name, sizeof(name), "ty-%s", it.job_id);
		sched_account_name(it.tenant, account);
		snprintf(hb, sizeof(hb), "%d", s->cfg->heartbeat_s);
		const char *path = getenv("PATH");
		env_put(env_s[0], sizeof(env_s[0]), "PATH", path ? path : "/usr/bin:/bin");
		env_put(env_s[1], sizeof(env_s[1]), "LANG", "C.UTF-8");
		env_put(env_s[2], sizeof(env_s[2]), "HOME", home);
		env_put(env_s[3], sizeof(env_s[3]), "TRAINYARD_URL", s->cfg->url);
		env_put(env_s[4], sizeof(env_s[4]), "TRAINYARD_ATTEMPT", it.attempt_id);
		env_put(env_s[5], sizeof(env_s[5]), "TRAINYARD_ATTEMPT_TOKEN_FILE", cred);
		env_put(env_s[6], sizeof(env_s[6]), "TRAINYARD_STORAGE_ROOT", s->storage_root);
		env_put(env_s[7], sizeof(env_s[7]), "TRAINYARD_HEARTBEAT_S", hb);
		char *env[] = {env_s[0], env_s[1], env_s[2], env_s[3], env_s[4],
		               env_s[5], env_s[6], env_s[7], NULL};
		int warn = it.time_limit_minutes * 6;
		sl_submit sub = {
		    .name = name,
		    .comment = comment,
		    .account = account,
		    .partition = it.partition,
		    .script = script,
		    .work_dir = home,
		    .std_out = out,
		    .env = env,
		    .nodes = it.nodes,
		    .tasks_per_node = it.ranks_per_node,
		    .gpus_per_node = it.gpus_per_node,
		    .time_limit_minutes = it.time_limit_minutes,
		    .warn_seconds = warn < BATCH_WARN_SECONDS ? warn : BATCH_WARN_SECONDS,
		    .uid = it.uid,
		    .gid = it.gid,
		};
		if (sl_submit_batch(&sub, &ids[i], err) < 0) {
			fprintf(stderr, "sched: %s\n", err);
			exit(1);
		}
	}
	t = now() - t;
	prof_now = NULL;
	for (int i = 0; i < n; i++)
		if (sl_cancel(ids[i], err) < 0)
			fprintf(stderr, "sched: %s\n", err);
	free(ids);
	return t;
}

/* Slurm settles (accounting of the cancelled jobs) before the next timed loop. */
static void settle(void)
{
	struct timespec ts = {0, 500000000L};
	nanosleep(&ts, NULL);
}

static void print_rates(const char *what, const double *rate, int rounds, double med)
{
	printf("| %-40s |", what);
	for (int r = 0; r < rounds; r++)
		printf(" %7.0f |", rate[r]);
	printf(" %7.0f |", med);
}

static void dispatch_profile(const prof *p, int jobs, double total_s)
{
	char label[80];
	printf("\nWhere dispatch_jobs() spends its time, per job (all rounds, %.1f ms a job):\n\n",
	       total_s * 1e3 / jobs);
	printf("| call | calls a job | ms a job | share |\n|---|---|---|---|\n");
	double counted = 0;
	for (int i = 0; i < p->n; i++) {
		const prof_row *r = &p->row[i];
		prof_label(r->key, label, sizeof(label));
		printf("| %-78s | %5.2f | %6.3f | %4.1f%% |\n", label, (double)r->calls / jobs,
		       r->s * 1e3 / jobs, 100 * r->s / total_s);
		counted += r->s;
	}
	printf("| %-78s |     - | %6.3f | %4.1f%% |\n",
	       "the rest (in this process: JSON, hashing, files, libslurm's packing)",
	       (total_s - counted) * 1e3 / jobs, 100 * (total_s - counted) / total_s);
}

static int cmd_dispatch(sched *s, const char *tmpl, const char *tenant, int n, int rounds)
{
	dispatch_item shape;
	double d_rate[ROUNDS_MAX], p_rate[ROUNDS_MAX], d_total = 0;
	prof d_prof = {0}, p_prof = {0};
	accounts_ready(s, &tenant, 1);
	item_from_template(s, tmpl, tenant, &shape);
	/* one untimed submission each way: connections, prepared statements, caches */
	dispatch_round(s, tmpl, tenant, 1, NULL);
	plain_round(s, &shape, 1, NULL);
	for (int r = 0; r < rounds; r++) {
		double d, p;
		if (r % 2 == 0) {
			settle();
			d = dispatch_round(s, tmpl, tenant, n, &d_prof);
			settle();
			p = plain_round(s, &shape, n, &p_prof);
		} else {
			settle();
			p = plain_round(s, &shape, n, &p_prof);
			settle();
			d = dispatch_round(s, tmpl, tenant, n, &d_prof);
		}
		d_rate[r] = n / d;
		p_rate[r] = n / p;
		d_total += d;
	}
	double dm = median(d_rate, rounds), pm = median(p_rate, rounds);
	printf("Dispatch, queued -> submitted: %d jobs a round, %d rounds, batches of %d\n\n", n,
	       rounds, s->batch);
	printf("| path |");
	for (int r = 0; r < rounds; r++)
		printf(" round %d |", r + 1);
	printf(" median jobs/s | ratio | target |\n|---|");
	for (int r = 0; r < rounds + 3; r++)
		printf("---|");
	printf("\n");
	print_rates("sl_submit_batch alone", p_rate, rounds, pm);
	printf("     - |      - |\n");
	print_rates("dispatch_jobs: prepare, submit, record", d_rate, rounds, dm);
	printf("  %4.2f |   %4.1f |\n", dm / pm, DISPATCH_TARGET);
	double ratio[ROUNDS_MAX];
	for (int r = 0; r < rounds; r++)
		ratio[r] = d_rate[r] / p_rate[r];
	printf("| %-40s |", "ratio in each round");
	for (int r = 0; r < rounds; r++)
		printf(" %7.2f |", ratio[r]);
	printf(" %7.2f |     - |      - |\n", median(ratio, rounds));
	const prof_row *sub = prof_find(&p_prof, K_SUBMIT);
	if (sub)
		printf("\nsl_submit_batch alone: %.3f ms a job inside libslurm's call.\n",
		       sub->s * 1e3 / sub->calls);
	dispatch_profile(&d_prof, n * rounds, d_total);
	return 0;
}

/* ---- cycle ------------------------------------------------------------------- */

/* CYCLES timed sched_cycle() calls after two untimed ones. OUT: *p. RET: the median in s. */
static double cycles_time(sched *s, int cycles, double *t, prof *p)
{
	for (int i = 0; i < 2; i++)
		if (sched_cycle(s) < 0)
			die("a scheduling cycle failed");
	for (int i = 0; i < cycles; i++) {
		prof_now = p;
		double t0 = now();
		int rc = sched_cycle(s);
		t[i] = now() - t0;
		prof_now = NULL;
		if (rc < 0)
			die("a scheduling cycle failed");
	}
	return median(t, cycles);
}

/*
 * Spread COUNT more queued jobs over the tenants. A queue that deep grows
 * over hours, not in one statement: VACUUM, ANALYZE and a checkpoint now
 * leave autovacuum and the checkpointer nothing to do while cycles are
 * timed, as in the steady state.
 */
static void queue_fill(sched *s, const char *tmpl, char **tenants, int n_tenants, int count)
{
	for (int i = 0; i < n_tenants; i++) {
		int k = count / n_tenants + (i < count % n_tenants);
		if (k > 0)
			jobs_insert(s, tmpl, tenants[i], k, NULL);
	}
	exec1(s, "VACUUM ANALYZE jobs", 0, NULL);
	exec1(s, "CHECKPOINT", 0, NULL);
}

static void queued_count_check(sched *s, int want)
{
	PGresult *r = query(s, "SELECT count(*) FROM jobs WHERE state = 'queued'", 0, NULL);
	int got = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (got != want) {
		fprintf(stderr, "sched: %d queued jobs, expected %d\n", got, want);
		exit(1);
	}
}

static int cmd_cycle(sched *s, const char *tmpl, char *tenant_list, int small, int large,
                     int cycles)
{
	char *tenants[16], *save = NULL;
	int nt = 0;
	for (char *t = strtok_r(tenant_list, ",", &save); t && nt < 16;
	     t = strtok_r(NULL, ",", &save))
		tenants[nt++] = t;
	if (nt == 0 || small < 1 || large < small)
		die("cycle: bad arguments");
	double ts[CYCLES_MAX], tl[CYCLES_MAX];
	prof ps = {0}, pl = {0};
	accounts_ready(s, (const char *const *)tenants, nt);
	queue_fill(s, tmpl, tenants, nt, small);
	queued_count_check(s, small);
	double ms = cycles_time(s, cycles, ts, &ps);
	long admitted = s->stats.admitted;
	queue_fill(s, tmpl, tenants, nt, large - small);
	queued_count_check(s, large);
	double ml = cycles_time(s, cycles, tl, &pl);
	if (s->stats.admitted != 0 || admitted != 0 || s->stats.submitted != 0)
		die("a cycle admitted jobs: the tenants' quotas must admit nothing");
	/* the queue goes again: what runs after this starts from the same tables */
	for (int i = 0; i < nt; i++) {
		const char *p[] = {tenants[i]};
		exec1(s,
		      "DELETE FROM jobs WHERE tenant_id = (SELECT id FROM tenants WHERE name = $1)",
		      1, p);
	}
	exec1(s, "VACUUM ANALYZE jobs", 0, NULL);
	printf("Scheduling cycle (sched_cycle), %d tenants, %d cycles each, nothing admitted; "
	       "Slurm knows %d of our jobs\n\n",
	       nt, cycles, s->n_sj);
	printf("| queued jobs | median ms | min ms | max ms | ratio | target |\n"
	       "|---|---|---|---|---|---|\n");
	double mins = ts[0], maxs = ts[0], minl = tl[0], maxl = tl[0];
	for (int i = 1; i < cycles; i++) {
		mins = ts[i] < mins ? ts[i] : mins;
		maxs = ts[i] > maxs ? ts[i] : maxs;
		minl = tl[i] < minl ? tl[i] : minl;
		maxl = tl[i] > maxl ? tl[i] : maxl;
	}
	printf("| %11d | %9.2f | %6.2f | %6.2f |     - |      - |\n", small, ms * 1e3, mins * 1e3,
	       maxs * 1e3);
	printf("| %11d | %9.2f | %6.2f | %6.2f | %5.2f | %6.1f |\n", large, ml * 1e3, minl * 1e3,
	       maxl * 1e3, ml / ms, CYCLE_TARGET);
	char label[80];
	printf("\nEach call's time per cycle (mean of the timed cycles):\n\n");
	printf("| call | calls a cycle | ms at %d | ms at %d |\n|---|---|---|---|\n", small, large);
	/* every call seen at either depth, in the order the cycle makes them */
	prof all = pl;
	for (int i = 0; i < ps.n; i++)
		if (!prof_find(&all, ps.row[i].key) && all.n < PROF_STMTS)
			all.row[all.n++] = ps.row[i];
	for (int i = 0; i < all.n; i++) {
		const prof_row *a = prof_find(&ps, all.row[i].key),
		               *b = prof_find(&pl, all.row[i].key);
		prof_label(all.row[i].key, label, sizeof(label));
		printf("| %-78s | %4.1f | %7.3f | %7.3f |\n", label,
		       (double)all.row[i].calls / cycles, a ? a->s * 1e3 / cycles : 0,
		       b ? b->s * 1e3 / cycles : 0);
	}
	double sum_s = 0, sum_l = 0;
	for (int i = 0; i < cycles; i++) {
		sum_s += ts[i];
		sum_l += tl[i];
	}
	printf("| %-78s |    - | %7.3f | %7.3f |\n", "the rest, in this process",
	       (sum_s - prof_total(&ps)) * 1e3 / cycles, (sum_l - prof_total(&pl)) * 1e3 / cycles);
	printf("| %-78s |    - | %7.3f | %7.3f |\n", "the whole cycle (mean)", sum_s * 1e3 / cycles,
	       sum_l * 1e3 / cycles);
	return 0;
}

int main(int argc, char **argv)
{
	ty_config cfg;
	char err[256];
	if (argc < 2)
		goto usage;
	if (config_load(&cfg, err, sizeof(err)) < 0)
		die(err);
	log_set_level(LOG_WARN);
	static sched s;
	bench_sched_init(&s, &cfg);
	sl_init();
	int rc;
	if (strcmp(argv[1], "dispatch") == 0 && argc == 6) {
		int n = atoi(argv[4]), rounds = atoi(argv[5]);
		if (n < 1 || rounds < 1 || rounds > ROUNDS_MAX)
			die("dispatch: JOBS at least 1, ROUNDS 1 to 15");
		rc = cmd_dispatch(&s, argv[2], argv[3], n, rounds);
	} else if (strcmp(argv[1], "cycle") == 0 && argc == 7) {
		int cycles = atoi(argv[6]);
		if (cycles < 1 || cycles > CYCLES_MAX)
			die("cycle: CYCLES 1 to 200");
		rc = cmd_cycle(&s, argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), cycles);
	} else {
		goto usage;
	}
	free(s.sj);
	db_close(s.db);
	sl_fini();
	return rc ? 1 : 0;
usage:
	fprintf(stderr, "usage: sched dispatch TEMPLATE TENANT JOBS ROUNDS\n"
	                "       sched cycle TEMPLATE TENANTS SMALL LARGE CYCLES\n");
	return 2;
}
