/*
 * dispatch.c - prepare, submit, record (see dispatch.h).
 */
#include "dispatch.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attemptstate.h"
#include "batch.h"
#include "clock.h"
#include "db.h"
#include "failure.h"
#include "hex.h"
#include "jobstate.h"
#include "leader.h"
#include "log.h"
#include "storage.h"
#include "tenantfs.h"
#include "token.h"

#define DISPATCH_BATCH_MAX   64
#define DISPATCH_FIRST_BATCH 8

/* The columns an item is made of, after the attempt row is written. */
#define ITEM_COLUMNS                                                                               \
	"a.id, a.number, a.job_id, t.name, a.nodes,"                                               \
	" (j.spec->'resources'->>'ranks_per_node')::int,"                                          \
	" (j.spec->'resources'->>'gpus_per_node')::int,"                                           \
	" (j.spec->'resources'->>'time_limit_minutes')::int,"                                      \
	" coalesce(j.spec->'resources'->>'partition', ''), (a.config->'overrides')::text,"         \
	" t.id, coalesce(ti.uid, 0), coalesce(ti.gid, 0)"
/* Columns after ITEM_COLUMNS start here. */
#define ITEM_NCOLS 13

static void item_fill(dispatch_item *it, const PGresult *r, int row)
{
	memset(it, 0, sizeof(*it));
	snprintf(it->attempt_id, sizeof(it->attempt_id), "%s", PQgetvalue(r, row, 0));
	it->number = atoi(PQgetvalue(r, row, 1));
	snprintf(it->job_id, sizeof(it->job_id), "%s", PQgetvalue(r, row, 2));
	snprintf(it->tenant, sizeof(it->tenant), "%s", PQgetvalue(r, row, 3));
	it->nodes = atoi(PQgetvalue(r, row, 4));
	it->ranks_per_node = atoi(PQgetvalue(r, row, 5));
	it->gpus_per_node = atoi(PQgetvalue(r, row, 6));
	it->time_limit_minutes = atoi(PQgetvalue(r, row, 7));
	snprintf(it->partition, sizeof(it->partition), "%s", PQgetvalue(r, row, 8));
	json_t *o = json_loads(PQgetvalue(r, row, 9), 0, NULL);
	size_t i;
	json_t *v;
	json_array_foreach (o, i, v) {
		if (it->n_overrides < DISPATCH_OVERRIDES_MAX && json_is_string(v))
			snprintf(it->overrides[it->n_overrides++], sizeof(it->overrides[0]), "%s",
			         json_string_value(v));
	}
	json_decref(o);
	snprintf(it->tenant_id, sizeof(it->tenant_id), "%s", PQgetvalue(r, row, 10));
	it->uid = (uid_t)strtoul(PQgetvalue(r, row, 11), NULL, 10);
	it->gid = (gid_t)strtoul(PQgetvalue(r, row, 12), NULL, 10);
	it->result = 2;
}

/* A new attempt credential: the secret, and its hash in hex. RET 0 or -1. */
static int credential_new(char secret[ATTEMPT_SECRET_LEN + 1], char hex[2 * TOKEN_HASH_LEN + 1])
{
	unsigned char hash[TOKEN_HASH_LEN];
	if (attempt_credential_generate(secret) < 0)
		return -1;
	token_hash(secret, hash);
	hex_encode(hash, sizeof(hash), hex);
	return 0;
}

/*
 * The secret into the attempt's 0600 spool file, in the tenant's directory
 * of the spool, given to the tenant's user before a byte is written: the
 * attempt alone may read it. The tenant's user owns that directory, so the
 * file is created afresh (O_EXCL) and no link is followed. Not synced: the
 * database is what must survive a crash. A file a crash of the machine
 * took away leaves its worker without a credential; the attempt fails,
 * and the scheduler retries it with a new one. RET 0 or -1 (logged).
 */
static int credential_write(const sched *s, const dispatch_item *it, const char *secret)
{
	char name[STORAGE_UUID_LEN + 16], err[512] = "the tenant has no Unix user";
	snprintf(name, sizeof(name), "%s.credential", it->attempt_id);
	tenant_tree t = {.fd = -1};
	int fd = -1, rc = -1;
	if (it->uid && tenant_tree_open(&t, s->spool, it->tenant_id, err, sizeof(err)) == 0) {
		unlinkat(t.fd, name, 0); /* a renewed credential replaces the one before */
		fd = tenant_tree_openat(&t, name, O_WRONLY | O_CREAT | O_EXCL, 0600, TENANTFS_FILE,
		                        err, sizeof(err));
	}
	if (fd >= 0 && fchown(fd, it->uid, it->gid) == 0) {
		size_t n = strlen(secret);
		rc = write(fd, secret, n) == (ssize_t)n ? 0 : -1;
	}
	if (fd >= 0 && rc < 0)
		snprintf(err, sizeof(err), "%s", strerror(errno));
	if (fd >= 0 && close(fd) < 0)
		rc = -1;
	if (rc < 0) {
		log_printf(LOG_ERROR, "could not write the credential file of attempt %s: %s",
		           it->attempt_id, err);
		if (fd >= 0)
			unlinkat(t.fd, name, 0);
	}
	tenant_tree_release(&t);
	return rc;
}

static void credential_remove(const sched *s, const dispatch_item *it)
{
	char name[STORAGE_UUID_LEN + 16], err[256];
	snprintf(name, sizeof(name), "%s.credential", it->attempt_id);
	tenant_tree t;
	if (tenant_tree_open(&t, s->spool, it->tenant_id, err, sizeof(err)) == 0)
		unlinkat(t.fd, name, 0);
	tenant_tree_release(&t);
}

/*
 * Step 1 for a batch, inside the open transaction: the jobs still queued
 * go to dispatching under their lease, each counting its next attempt (one
 * statement, jobstate_transition_many), then one statement writes their
 * attempt rows with their credentials' hashes; then the credential files.
 * OUT: items[0..RET-1].
 * RET: the jobs prepared (jobs no longer queued are left out), or -ERR_*.
 */
static int prepare_batch(sched *s, char (*ids)[37], const int *borrowed, int n,
                         dispatch_item *items)
{
	const char *id[DISPATCH_BATCH_MAX] = {0}, *why[DISPATCH_BATCH_MAX] = {0},
	           *hash[DISPATCH_BATCH_MAX] = {0};
	bool moved[DISPATCH_BATCH_MAX];
	char secrets[DISPATCH_BATCH_MAX][ATTEMPT_SECRET_LEN + 1];
	char hexes[DISPATCH_BATCH_MAX][2 * TOKEN_HASH_LEN + 1];
	char lent[DISPATCH_BATCH_MAX][16];
	const char *lent_p[DISPATCH_BATCH_MAX] = {0};
	for (int i = 0; i < n; i++) {
		id[i] = ids[i];
		why[i] = "admitted";
	}
	int rc = jobstate_transition_many(s->db, id, why, n, JOB_QUEUED, JOB_DISPATCHING, s->owner,
	                                  s->lease_s, moved);
	if (rc <= 0)
		return rc;
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (!moved[i])
			continue;
		if (credential_new(secrets[k], hexes[k]) < 0)
			return -ERR_INTERNAL;
		id[k] = ids[i];
		hash[k] = hexes[k];
		snprintf(lent[k], sizeof(lent[k]), "%d", borrowed ? borrowed[i] : 0);
		lent_p[k] = lent[k];
		k++;
	}
	char *id_arr = db_array_literal(id, k), *hash_arr = db_array_literal(hash, k),
	     *lent_arr = db_array_literal(lent_p, k);
	char margin[16];
	snprintf(margin, sizeof(margin), "%d", SCHED_CREDENTIAL_MARGIN_MINUTES);
	const char *p[] = {id_arr, hash_arr, margin, lent_arr};
	PGresult *r = NULL;
	rc = id_arr && hash_arr && lent_arr ? 0 : -ERR_INTERNAL;
	/* the jobs' new attempt numbers come from the move just made */
	if (rc == 0)
		rc = db_query(
		    s->db, &r,
		    "WITH v AS (SELECT * FROM unnest($1::uuid[], $2::text[], $4::int[])"
		    "   WITH ORDINALITY AS v(id, cred, lent, ord)),"
		    " n AS (SELECT j.id, j.tenant_id, j.attempts, j.spec, j.next_overrides,"
		    "   v.cred, v.lent, v.ord, (j.spec->'resources'->>'ranks_per_node')::int AS "
		    "rpn,"
		    "   coalesce(j.next_nodes, (j.spec->'resources'->>'nodes')::int) AS nodes"
		    "   FROM jobs j JOIN v ON v.id = j.id),"
		    " a AS (INSERT INTO job_attempts (job_id, number, credential, expires_at,"
		    "   nodes, devices, borrowed_devices, config, followed)"
		    "   SELECT id, attempts, decode(cred, 'hex'), now() + interval '1 minute'"
		    "   * ((spec->'resources'->>'time_limit_minutes')::int + $3::int),"
		    "   nodes, nodes * rpn, least(lent, nodes * rpn), jsonb_build_object('nodes', "
		    "nodes,"
		    "   'ranks_per_node', rpn,"
		    "   'gpus_per_node', (spec->'resources'->>'gpus_per_node')::int,"
		    "   'overrides', next_overrides), true FROM n RETURNING *)"
		    " SELECT a.id, a.number, a.job_id, t.name, a.nodes, n.rpn,"
		    " (n.spec->'resources'->>'gpus_per_node')::int,"
		    " (n.spec->'resources'->>'time_limit_minutes')::int,"
		    " coalesce(n.spec->'resources'->>'partition', ''),"
		    " (a.config->'overrides')::text, t.id, coalesce(ti.uid, 0), coalesce(ti.gid, "
		    "0),"
		    " n.ord FROM a JOIN n ON n.id = a.job_id JOIN tenants t ON t.id = n.tenant_id"
		    " LEFT JOIN tenant_identities ti ON ti.tenant_id = t.id ORDER BY n.ord",
		    4, p);
	free(id_arr);
	free(hash_arr);
	free(lent_arr);
	if (rc == 0 && PQntuples(r) != k)
		rc = -ERR_INTERNAL;
	for (int i = 0; rc == 0 && i < k; i++) {
		item_fill(&items[i], r, i);
		int ord = atoi(PQgetvalue(r, i, ITEM_NCOLS));
		if (ord < 1 || ord > k || credential_write(s, &items[i], secrets[ord - 1]) < 0)
			rc = -ERR_INTERNAL;
	}
	PQclear(r);
	for (int i = 0; i < k; i++)
		OPENSSL_cleanse(secrets[i], sizeof(secrets[i]));
	return rc ? rc : k;
}

/* Step 2 for one item; sets its result. */
static void submit_one(sched *s, dispatch_item *it, double leased_at)
{
	/* a lease about to run out is left to recovery rather than raced, and
	 * a scheduler whose leadership ran out submits nothing */
	if (clock_mono_s() - leased_at > s->lease_s / 2.0 || !leader_valid(s)) {
		it->result = 2;
		return;
	}
	sched_crash_point(s, "before_submit");
	char err[SL_ERR_MAX];
	if (batch_submit(s, it, err) == 0) {
		it->result = 0;
	} else {
		int e = slurm_get_errno();
		/* the controller could not be reached: try again later */
		it->result = (e >= 1000 && e < 1100) || (e >= 1800 && e < 1900) ? 1 : -1;
		snprintf(it->err, sizeof(it->err), "%s", err);
		log_printf(LOG_WARN, "job %s attempt %d: %s", it->job_id, it->number, err);
	}
	sched_crash_point(s, "after_submit");
}

/*
 * The end of a dispatch that did not reach Slurm, inside the open
 * transaction: to (queued or failed) with msg, or cancelled when the job
 * was cancelled meanwhile.
 */
static int dispatch_undone(sched *s, const dispatch_item *it, job_state to, const char *msg)
{
	PGresult *r;
	const char *p[] = {it->job_id};
	int rc = db_query(s->db, &r, "SELECT state FROM jobs WHERE id = $1 FOR UPDATE", 1, p);
	bool cancelling = rc == 0 && PQntuples(r) == 1 &&
	                  strcmp(PQgetvalue(r, 0, 0), job_state_name(JOB_CANCELLING)) == 0;
	PQclear(r);
	if (rc)
		return rc;
	if (cancelling)
		return jobstate_transition(s->db, it->job_id, JOB_CANCELLED, "cancelled", NULL,
		                           NULL, NULL);
	return jobstate_transition(s->db, it->job_id, to, msg, NULL, NULL, NULL);
}

/* Step 3 for one item, inside the open transaction. RET 0 or -ERR_*. */
static int record_one(sched *s, dispatch_item *it, bool cancelling)
{
	const char *p[] = {it->job_id, it->attempt_id};
	char sid[16], msg[SL_ERR_MAX + 64], backoff[16];
	int rc;
	if (it->result == 2)
		return 0; /* not tried: its lease runs out and recovery takes it */
	if (it->result == 0) {
		snprintf(sid, sizeof(sid), "%u", it->slurm_id);
		const char *q[] = {it->attempt_id, sid};
		snprintf(msg, sizeof(msg), "submitted to Slurm as job %u", it->slurm_id);
		rc = db_query(s->db, NULL,
		              "UPDATE job_attempts SET slurm_job_id = $2 WHERE id = $1", 2, q);
		if (rc == 0) {
			rc = jobstate_transition(s->db, it->job_id, JOB_SCHEDULED, msg, NULL, NULL,
			                         NULL);
			if (rc == -ERR_JOB_STATE_CONFLICT)
				rc = 0; /* cancelled meanwhile: reconciliation ends the Slurm job */
		}
	} else if (it->result == 1 && !cancelling) {
		snprintf(backoff, sizeof(backoff), "%d", s->backoff_s);
		snprintf(msg, sizeof(msg), "Slurm unreachable, back in the queue: %s", it->err);
		const char *q[] = {it->job_id, it->attempt_id, backoff};
		rc = db_query(s->db, NULL, "DELETE FROM job_attempts WHERE id = $2", 2, q);
		if (rc == 0)
			rc = jobstate_attempts_add(s->db, it->job_id, -1);
		if (rc == 0)
			rc = db_query(
			    s->db, NULL,
			    "UPDATE jobs SET not_before = now() + $3::int * interval '1 second'"
			    " WHERE id = $1",
			    3, q);
		if (rc == 0)
			rc = dispatch_undone(s, it, JOB_QUEUED, msg);
		credential_remove(s, it);
	} else {
		/* refused by Slurm, or cancelled before it got there */
		snprintf(msg, sizeof(msg), "Slurm refused the job: %s", it->err);
		attempt_ending e = {.outcome = cancelling ? "cancelled" : "failed",
		                    .failure_class =
		                        cancelling ? "" : failure_name(FAILURE_SUBMIT_REJECTED),
		                    .unfollow = true};
		rc = attemptstate_end(s->db, it->attempt_id, &e, NULL);
		if (rc == 0)
			rc = cancelling ? jobstate_transition(s->db, it->job_id, JOB_CANCELLED,
			                                      "cancelled", NULL, NULL, NULL)
			                : dispatch_undone(s, it, JOB_FAILED, msg);
		credential_remove(s, it);
	}
	if (rc == 0)
		rc = db_query(s->db, NULL,
		              "UPDATE jobs SET dispatch_owner = '', dispatch_lease_until = NULL"
		              " WHERE id = $1",
		              1, p);
	return rc;
}

/*
 * Step 3 for the submitted items of a batch, inside the open transaction:
 * their Slurm ids, dispatching -> scheduled (jobs cancelled meanwhile stay
 * cancelling: reconciliation ends their Slurm job). Two statements for
 * the whole batch. RET 0 or -ERR_*.
 */
static int record_submitted(sched *s, const dispatch_item *items, int n)
{
	const char *job[DISPATCH_BATCH_MAX], *att[DISPATCH_BATCH_MAX], *sid[DISPATCH_BATCH_MAX],
	    *why[DISPATCH_BATCH_MAX];
	char sids[DISPATCH_BATCH_MAX][16], whys[DISPATCH_BATCH_MAX][48];
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (items[i].result != 0)
			continue;
		snprintf(sids[k], sizeof(sids[k]), "%u", items[i].slurm_id);
		snprintf(whys[k], sizeof(whys[k]), "submitted to Slurm as job %u",
		         items[i].slurm_id);
		job[k] = items[i].job_id;
		att[k] = items[i].attempt_id;
		sid[k] = sids[k];
		why[k] = whys[k];
		k++;
	}
	if (k == 0)
		return 0;
	char *job_arr = db_array_literal(job, k), *att_arr = db_array_literal(att, k),
	     *sid_arr = db_array_literal(sid, k);
	int rc = job_arr && att_arr && sid_arr ? 0 : -ERR_INTERNAL;
	const char *p[] = {att_arr, sid_arr};
	if (rc == 0)
		rc = db_query(
		    s->db, NULL,
		    "UPDATE job_attempts a SET slurm_job_id = v.sid"
		    " FROM unnest($1::uuid[], $2::bigint[]) AS v(id, sid) WHERE a.id = v.id",
		    2, p);
	if (rc == 0) {
		int moved = jobstate_transition_many(s->db, job, why, k, JOB_DISPATCHING,
		                                     JOB_SCHEDULED, NULL, 0, NULL);
		rc = moved < 0 ? moved : 0;
	}
	/*
	 * The lease is left to expire: recovery only looks at attempts without
	 * a Slurm id, and dispatch_owner keeps telling who dispatched the job.
	 */
	free(job_arr);
	free(att_arr);
	free(sid_arr);
	return rc;
}

/* Step 2 for prepared items. RET the number submitted. */
static int submit_items(sched *s, dispatch_item *items, int n, double leased_at)
{
	int submitted = 0;
	for (int i = 0; i < n; i++) {
		submit_one(s, &items[i], leased_at);
		submitted += items[i].result == 0;
	}
	s->stats.submitted += submitted;
	return submitted;
}

/* Step 3 for one item in a transaction of its own. RET 0 or -1 (noted on the job). */
static int record_alone(sched *s, dispatch_item *it)
{
	int rc = db_begin(s->db);
	if (rc == 0)
		rc = it->result == 0 ? record_submitted(s, it, 1) : record_one(s, it, false);
	if (rc == 0)
		rc = db_commit(s->db);
	if (rc == 0)
		return 0;
	db_rollback(s->db);
	if (it->result == 0)
		sched_job_trouble(s, it->job_id,
		                  "Slurm job %u of attempt %d could not be recorded; recovery will "
		                  "find it by its comment",
		                  it->slurm_id, it->number);
	else
		sched_job_trouble(s, it->job_id,
		                  "the failed submission of attempt %d could not "
		                  "be recorded",
		                  it->number);
	return -1;
}

/*
 * Step 3 for items that went through step 2: one transaction for the
 * batch; when that fails, one for each item, so that one job's trouble
 * leaves the others recorded. RET 0, or -1 when the database is lost.
 */
static int record_items(sched *s, dispatch_item *items, int n)
{
	int rc = db_begin(s->db);
	if (rc == 0)
		rc = record_submitted(s, items, n);
	for (int i = 0; rc == 0 && i < n; i++)
		if (items[i].result != 0)
			rc = record_one(s, &items[i], false);
	if (rc == 0)
		rc = db_commit(s->db);
	if (rc) {
		db_rollback(s->db);
		if (sched_db_lost(s)) {
			log_printf(LOG_ERROR,
			           "recording %d submissions failed; recovery will find them", n);
			return -1;
		}
		log_printf(LOG_WARN, "recording %d submissions together failed; one by one", n);
		for (int i = 0; i < n && !sched_db_lost(s); i++)
			if (items[i].result != 2)
				record_alone(s, &items[i]);
		if (sched_db_lost(s))
			return -1;
	}
	sched_crash_point(s, "after_record");
	return 0;
}

/* One batch from its prepare to its record. */
typedef struct batch_run {
	sched *s;
	char (*ids)[37];
	const int *borrowed;
	int n, k, rc;
	double leased_at;
	dispatch_item items[DISPATCH_BATCH_MAX];
} batch_run;

/* Step 1 for b, committed. RET 0, or -1 (nothing of it is left). */
static int prepare_commit(batch_run *b)
{
	sched *s = b->s;
	int rc = db_begin(s->db);
	b->k = rc == 0 ? prepare_batch(s, b->ids, b->borrowed, b->n, b->items) : rc;
	b->leased_at = clock_mono_s();
	rc = b->k < 0 ? b->k : db_commit(s->db);
	if (rc) {
		db_rollback(s->db);
		for (int i = 0; i < (b->k > 0 ? b->k : 0); i++)
			credential_remove(s, &b->items[i]);
		log_printf(LOG_ERROR, "preparing %d dispatches failed", b->n);
		b->k = 0;
		return b->rc = -1;
	}
	sched_crash_point(s, "after_prepare");
	return b->rc = 0;
}

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

/* The database's part of one pipeline step: record one batch, prepare another. */
typedef struct db_step {
	batch_run *record, *prepare; /* either may be NULL */
	int rc;
} db_step;

static void *db_step_run(void *arg)
{
	db_step *st = arg;
	st->rc = 0;
	if (st->record && record_items(st->record->s, st->record->items, st->record->k) < 0)
		st->rc = -1;
	if (st->rc == 0 && st->prepare && prepare_commit(st->prepare) < 0)
		st->rc = -1;
	return NULL;
}

/*
 * Batches in a pipeline: while batch k is submitted (libslurm, no
 * database), a thread records batch k-1 and prepares batch k+1 on the
 * database connection. The connection is used by one thread at a time,
 * and every batch keeps the order prepare, submit, record of dispatch.h.
 */
int dispatch_jobs(sched *s, char (*ids)[37], const int *borrowed, int n)
{
	static batch_run runs[3];
	batch_run *prev = NULL, *cur = &runs[0];
	int batch = min_int(s->batch, DISPATCH_BATCH_MAX), off = 0, total = 0, turn = 0;
	if (n <= 0)
		return 0;
	cur->s = s;
	cur->ids = ids;
	cur->borrowed = borrowed;
	/* a small first batch: the first submissions start sooner, and the
	 * pipeline's thread has its next batch ready by the time they end */
	cur->n = min_int(min_int(batch, DISPATCH_FIRST_BATCH), n);
	off = cur->n;
	if (prepare_commit(cur) < 0)
		return -1;
	while (cur) {
		/* leadership once a batch; the lease guards each submission */
		if (!leader_holds(s))
			return total; /* the new leader's recovery takes the rest */
		batch_run *next = NULL;
		if (off < n) {
			next = &runs[++turn % 3];
			next->s = s;
			next->ids = ids + off;
			next->borrowed = borrowed ? borrowed + off : NULL;
			next->n = min_int(batch, n - off);
			off += next->n;
		}
		db_step st = {prev, next, 0};
		pthread_t t;
		bool threaded = (prev || next) && pthread_create(&t, NULL, db_step_run, &st) == 0;
		total += submit_items(s, cur->items, cur->k, cur->leased_at);
		if (threaded)
			pthread_join(t, NULL);
		else
			db_step_run(&st);
		if (st.rc < 0)
			return -1;
		prev = cur;
		cur = next;
	}
	return record_items(s, prev->items, prev->k) < 0 ? -1 : total;
}

/* ---- recovery ---------------------------------------------------------- */

/* The Slurm job of an attempt, by the comment that names it; 0 when none. */
static uint32_t slurm_id_of(const sched *s, const char *job_id, int number)
{
	for (int i = 0; i < s->n_sj; i++)
		if (s->sj[i].attempt == number && strcmp(s->sj[i].job_id, job_id) == 0)
			return s->sj[i].id;
	return 0;
}

/*
 * An unrecorded dispatch whose lease ran out, not in Slurm: renew its
 * lease and credential (inside the open transaction). RET 0, 1 when the
 * job moved on meanwhile, or -ERR_*.
 */
static int renew_one(sched *s, dispatch_item *it)
{
	char lease[16], hex[2 * TOKEN_HASH_LEN + 1];
	snprintf(lease, sizeof(lease), "%d", s->lease_s);
	const char *p[] = {it->job_id, s->owner, lease};
	PGresult *r;
	int rc = db_query(s->db, &r,
	                  "UPDATE jobs SET dispatch_owner = $2,"
	                  " dispatch_lease_until = now() + $3::int * interval '1 second'"
	                  " WHERE id = $1 AND state = 'dispatching'"
	                  " AND dispatch_lease_until < now() RETURNING id",
	                  3, p);
	int rows = rc == 0 ? PQntuples(r) : 0;
	PQclear(r);
	if (rc || rows == 0)
		return rc ? rc : 1;
	char secret[ATTEMPT_SECRET_LEN + 1];
	int w = credential_new(secret, hex) == 0 ? credential_write(s, it, secret) : -1;
	OPENSSL_cleanse(secret, sizeof(secret));
	if (w < 0)
		return -ERR_INTERNAL;
	const char *q[] = {it->attempt_id, hex};
	return db_query(s->db, NULL,
	                "UPDATE job_attempts SET credential = decode($2, 'hex') WHERE id = $1", 2,
	                q);
}

/*
 * Recovery of one item, in a transaction of its own: in Slurm already,
 * record it; cancelled or ended meanwhile, drop it; started (its worker
 * ran before the record) but not in Slurm, it is lost: that is
 * reconcile's to end and retry; else renew it for a new submission
 * (*renew). RET 0 or -1 (noted on the job).
 */
static int recover_one(sched *s, dispatch_item *it, job_state st, bool started, bool *renew)
{
	bool cancelling = st == JOB_CANCELLING, ended = job_state_final(st);
	*renew = false;
	it->slurm_id = slurm_id_of(s, it->job_id, it->number);
	if (!it->slurm_id && started && !ended) {
		log_printf(LOG_WARN,
		           "job %s attempt %d: its worker ran, but Slurm holds no job of it",
		           it->job_id, it->number);
		return reconcile_attempt_lost(s, it->attempt_id);
	}
	int rc = db_begin(s->db);
	if (rc == 0 && it->slurm_id) {
		it->result = 0;
		rc = record_one(s, it, cancelling);
		log_printf(LOG_INFO, "job %s attempt %d: found in Slurm as %u after a lost lease",
		           it->job_id, it->number, it->slurm_id);
	} else if (rc == 0 && ended) {
		/* cancelled (or failed) before anything reached Slurm */
		attempt_ending e = {.outcome = "failed", .keep_outcome = true, .unfollow = true};
		rc = attemptstate_end(s->db, it->attempt_id, &e, NULL);
		credential_remove(s, it);
	} else if (rc == 0 && cancelling) {
		it->result = -1;
		rc = record_one(s, it, true);
	} else if (rc == 0) {
		int r2 = renew_one(s, it);
		*renew = r2 == 0;
		rc = r2 < 0 ? r2 : 0;
	}
	if (rc == 0)
		rc = db_commit(s->db);
	if (rc == 0)
		return 0;
	db_rollback(s->db);
	*renew = false;
	sched_job_trouble(s, it->job_id, "the dispatch of attempt %d could not be recovered",
	                  it->number);
	return -1;
}

int dispatch_recover(sched *s)
{
	PGresult *r;
	int rc = db_query(s->db, &r,
	                  "SELECT " ITEM_COLUMNS ", j.state, a.state <> 'starting' FROM jobs j"
	                  " JOIN job_attempts a ON a.job_id = j.id AND a.number = j.attempts"
	                  " JOIN tenants t ON t.id = j.tenant_id"
	                  " LEFT JOIN tenant_identities ti ON ti.tenant_id = t.id"
	                  " WHERE a.followed"
	                  " AND a.slurm_job_id IS NULL"
	                  " AND coalesce(j.dispatch_lease_until, '-infinity') < now()"
	                  " ORDER BY j.dispatch_lease_until NULLS FIRST LIMIT 64",
	                  0, NULL);
	if (rc) {
		PQclear(r);
		return -1;
	}
	int n = PQntuples(r), k = 0, failed = 0;
	dispatch_item items[64];
	job_state state[64];
	bool started[64];
	for (int i = 0; i < n; i++) {
		item_fill(&items[i], r, i);
		int st = job_state_parse(PQgetvalue(r, i, ITEM_NCOLS));
		state[i] = st < 0 ? JOB_FAILED : (job_state)st;
		started[i] = PQgetvalue(r, i, ITEM_NCOLS + 1)[0] == 't';
	}
	PQclear(r);
	if (n == 0)
		return 0;
	/*
	 * Slurm's list again, newer than every lease that ran out: a
	 * submission the lease allowed happened before it was taken.
	 */
	char err[SL_ERR_MAX];
	sl_job *fresh;
	int n_fresh;
	if (sl_our_jobs(&fresh, &n_fresh, err) < 0) {
		log_printf(LOG_WARN, "%s; dispatch recovery waits", err);
		return -1;
	}
	free(s->sj);
	s->sj = fresh;
	s->n_sj = n_fresh;
	/* each job on its own: one that fails is noted on it and blocks no other */
	dispatch_item renew[64];
	double leased_at = clock_mono_s(); /* no later than any lease renewed below */
	for (int i = 0; i < n && !sched_db_lost(s); i++) {
		bool again;
		if (recover_one(s, &items[i], state[i], started[i], &again) < 0)
			failed++;
		else if (again)
			renew[k++] = items[i];
	}
	s->stats.recovered += n - failed - k;
	if (k > 0) {
		log_printf(LOG_INFO,
		           "%d dispatches lost their lease before Slurm had them; submitting", k);
		s->stats.recovered += k;
		submit_items(s, renew, k, leased_at);
		if (record_items(s, renew, k) < 0)
			return -1;
	}
	return sched_db_lost(s) ? -1 : n - failed;
}
