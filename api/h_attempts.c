/*
 * h_attempts.c - job attempts: starting one (the dispatcher's route), and
 * the worker runtime's own routes, authenticated by the attempt credential
 * (auth.c): its job, heartbeats, metrics, checkpoints, events and the end.
 *
 * An attempt is live from its creation until it ends or its credential
 * expires (the job's time limit plus a margin). Its credential is returned
 * once, at creation, and only its SHA-256 is kept.
 */
#include <openssl/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "attemptstate.h"
#include "failure.h"
#include "handlers.h"
#include "hex.h"
#include "jobspec.h"
#include "jobstate.h"
#include "server.h"
#include "storage.h"
#include "token.h"

/* Credentials outlive the job's time limit by this much. */
#define ATTEMPT_MARGIN_MINUTES 15

/* Commit with an audit record of resource, or answer the failure. RET 0 or answered. */
static int commit_audited(api_req *rq, int status, const char *resource, json_t *detail)
{
	int rc = api_audit(rq, status, resource, detail);
	json_decref(detail);
	if (rc == 0)
		rc = db_commit(rq->db);
	if (rc)
		return api_fail_db(rq, rc), -1;
	return 0;
}

int h_attempt_create(api_req *rq)
{
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		return api_fail_db(rq, rc);
	const char *p[] = {rq->scope.job_id};
	PGresult *r;
	rc = db_query(rq->db, &r,
	              "SELECT state, attempts + 1,"
	              " coalesce((spec->'resources'->>'time_limit_minutes')::int, 60)"
	              " FROM jobs WHERE id = $1 FOR UPDATE",
	              1, p);
	if (rc) {
		PQclear(r);
		return api_fail_db(rq, rc);
	}
	int state = job_state_parse(PQgetvalue(r, 0, 0));
	char number[16], minutes[16];
	snprintf(number, sizeof(number), "%s", PQgetvalue(r, 0, 1));
	snprintf(minutes, sizeof(minutes), "%d",
	         atoi(PQgetvalue(r, 0, 2)) + ATTEMPT_MARGIN_MINUTES);
	PQclear(r);
	char phrase[64];
	if (state != JOB_QUEUED)
		return api_fail(rq, ERR_JOB_STATE_CONFLICT,
		                "an attempt starts from a queued job; this one %s",
		                job_state_phrase((job_state)state, NULL, phrase, sizeof(phrase)));
	char secret[ATTEMPT_SECRET_LEN + 1], hex[2 * TOKEN_HASH_LEN + 1];
	unsigned char hash[TOKEN_HASH_LEN];
	if (attempt_credential_generate(secret) < 0)
		return api_fail(rq, ERR_INTERNAL, "could not generate a credential");
	token_hash(secret, hash);
	hex_encode(hash, sizeof(hash), hex);
	json_t *a = NULL;
	const char *q[] = {rq->scope.job_id, number, hex, minutes};
	if ((rc = jobstate_transition(rq->db, rq->scope.job_id, JOB_DISPATCHING, "dispatched",
	                              rq->who.user_id, NULL, NULL)) ||
	    (rc = jobstate_transition(rq->db, rq->scope.job_id, JOB_SCHEDULED, "attempt started",
	                              rq->who.user_id, NULL, NULL)) ||
	    (rc = jobstate_attempts_add(rq->db, rq->scope.job_id, 1)) ||
	    (rc = api_query_json(
	         rq,
	         "WITH a AS (INSERT INTO job_attempts (job_id, number, credential, expires_at)"
	         " VALUES ($1, $2::int, decode($3, 'hex'), now() + $4::int * interval '1 minute')"
	         " RETURNING *) SELECT row_to_json(x) FROM (SELECT id, job_id, number, "
	         "state, " CLOCK_SQL_RFC3339("expires_at") " AS expires_at FROM a) x",
	         4, q, &a))) {
		OPENSSL_cleanse(secret, sizeof(secret));
		return rc == -ERR_JOB_STATE_CONFLICT
		           ? api_fail(rq, rc, "the job cannot start an attempt now")
		           : api_fail_db(rq, rc);
	}
	char res[128];
	snprintf(res, sizeof(res), "job/%s/attempt/%s", rq->scope.job_id,
	         json_string_value(json_object_get(a, "id")));
	if (commit_audited(rq, 201, res, json_pack("{s:s}", "number", number)) < 0) {
		json_decref(a);
		OPENSSL_cleanse(secret, sizeof(secret));
		return 0;
	}
	json_object_set_new(a, "credential", json_string(secret));
	OPENSSL_cleanse(secret, sizeof(secret));
	return api_reply(rq, 201, a);
}

/*
 * The classification of what job $1 trains: the most sensitive of its
 * datasets ('internal' for data paths), of the checkpoint it started from
 * (docs/datasets.md) and, for a command job, of its code bundle
 * (docs/own-code.md).
 */
#define JOB_CLASSIFICATION                                                                         \
	"(SELECT x.c FROM (SELECT d.classification FROM job_datasets jd"                           \
	" JOIN dataset_versions v ON v.id = jd.version_id JOIN datasets d ON d.id = v.dataset_id"  \
	" WHERE jd.job_id = $1 UNION ALL SELECT 'internal' WHERE NOT EXISTS (SELECT 1"             \
	" FROM job_datasets WHERE job_id = $1 AND role = 'train') UNION ALL SELECT"                \
	" classification FROM job_init WHERE job_id = $1 UNION ALL SELECT b.classification"        \
	" FROM job_code jc JOIN code_versions v ON v.id = jc.version_id"                           \
	" JOIN code_bundles b ON b.id = v.bundle_id WHERE jc.job_id = $1) x (c)"                   \
	" ORDER BY array_position(ARRAY['public', 'internal', 'confidential', 'restricted'], x.c)" \
	" DESC LIMIT 1)"

/*
 * The tenants whose terms hold what job $1 trains (migration 0013): those
 * its job_init row names, and the owners of other tenants' datasets it
 * reads; never its own tenant.
 */
#define JOB_HELD_FOR                                                                               \
	"ARRAY(SELECT DISTINCT h FROM (SELECT unnest(held_for) FROM job_init WHERE job_id = $1"    \
	" UNION ALL SELECT d.tenant_id FROM job_datasets jd JOIN dataset_versions v"               \
	" ON v.id = jd.version_id JOIN datasets d ON d.id = v.dataset_id WHERE jd.job_id = $1) x " \
	"(h)"                                                                                      \
	" WHERE h <> (SELECT tenant_id FROM jobs WHERE id = $1) ORDER BY h)"

int h_attempt_get(api_req *rq)
{
	const char *p[] = {rq->scope.attempt_id};
	return api_reply_row(
	    rq,
	    "SELECT row_to_json(x) FROM (SELECT a.id, a.job_id, j.tenant_id, a.number, "
	    "a.state, " CLOCK_SQL_RFC3339(
	        "a.expires_at") " AS expires_at, j.name AS job_name,"
	                        " j.state AS job_state, j.spec, (SELECT "
	                        "coalesce(json_agg(json_build_object("
	                        "'role', jd.role, 'version_id', jd.version_id) ORDER BY jd.role), "
	                        "'[]')"
	                        " FROM job_datasets jd WHERE jd.job_id = j.id) AS datasets,"
	                        " (SELECT json_build_object('checkpoint_id', ji.checkpoint_id, "
	                        "'step', c.step,"
	                        " 'files', (SELECT json_agg(f ORDER BY f) FROM (SELECT "
	                        "'" STORAGE_MANIFEST_NAME "' AS f UNION ALL SELECT s->>'name'"
	                        " FROM jsonb_array_elements(c.shards) s) n))"
	                        " FROM job_init ji LEFT JOIN checkpoints c ON c.id = "
	                        "ji.checkpoint_id"
	                        " WHERE ji.job_id = j.id) AS init_from"
	                        " FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE a.id = "
	                        "$1) x",
	    1, p, ERR_ATTEMPT_NOT_FOUND);
}

/*
 * Every report refreshes the heartbeat; the first one of a starting
 * attempt makes it, and its scheduled job, running. OUT: job_state (the
 * job's state now, for the runtime: "cancelling" tells it to stop).
 */
static int mark_running(api_req *rq, char now_state[16])
{
	attempt_state was;
	bool followed;
	int rc = attemptstate_report(rq->db, rq->scope.attempt_id, &was, now_state, &followed);
	bool first = rc == 0 && was == ATTEMPT_STARTING;
	/*
	 * A scheduler that died between its submission and recording it
	 * leaves the job dispatching while Slurm runs it: the worker's first
	 * report says it is scheduled, and the scheduler that finishes the
	 * dispatch finds it so.
	 */
	bool unrecorded = first && strcmp(now_state, "dispatching") == 0 && followed;
	bool start = first && (unrecorded || strcmp(now_state, "scheduled") == 0);
	if (rc != 0)
		now_state[0] = '\0';
	if (unrecorded)
		rc = jobstate_transition(rq->db, rq->scope.job_id, JOB_SCHEDULED,
		                         "running in Slurm before its submission was recorded",
		                         NULL, NULL, NULL);
	if (start && rc == 0) {
		rc = jobstate_transition(rq->db, rq->scope.job_id, JOB_RUNNING, "attempt running",
		                         NULL, NULL, NULL);
		snprintf(now_state, 16, "%s", "running");
	}
	return rc;
}

/* Open a report's transaction: its connection, the heartbeat, the job's state. RET 0 or -ERR_*. */
static int report_begin(api_req *rq, char now_state[16])
{
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	if (rc == 0)
		rc = mark_running(rq, now_state);
	return rc;
}

/* Answer a failed report. */
static int report_failed(api_req *rq, int rc)
{
	if (rc == -ERR_ATTEMPT_ENDED)
		return api_fail(rq, ERR_ATTEMPT_ENDED, "the attempt has ended");
	if (rc == -ERR_JOB_STATE_CONFLICT)
		return api_fail(rq, ERR_JOB_STATE_CONFLICT, "the job's state does not allow it");
	return api_fail_db(rq, rc);
}

static void attempt_resource(const api_req *rq, const char *what, char *out, size_t n)
{
	snprintf(out, n, "job/%s/attempt/%s%s%s", rq->scope.job_id, rq->scope.attempt_id,
	         what[0] ? "/" : "", what);
}

/* The largest log size a report may carry, as the checkpoints' bytes (2^53). */
#define LOG_BYTES_MAX ((int64_t)1 << 53)

/*
 * The storage side of a report (migrations/0014_storage_quota.sql): the
 * size of the attempt's sealed log, when the report carries one
 * (log_bytes >= 0), and what the tenant may still store, which the
 * runtime keeps its log within. OUT *left: max_storage_bytes less
 * tenant_storage_bytes(), 0 when none is left; -1 for a tenant without a
 * quota row. RET 0 or -ERR_*.
 */
static int report_storage(api_req *rq, int64_t log_bytes, int64_t *left)
{
	*left = -1;
	char lb[24];
	snprintf(lb, sizeof(lb), "%lld", (long long)log_bytes);
	const char *pa[] = {rq->scope.attempt_id, lb};
	int rc = 0;
	if (log_bytes >= 0)
		rc =
		    db_query(rq->db, NULL,
		             "UPDATE job_attempts SET log_bytes = $2::bigint WHERE id = $1", 2, pa);
	const char *pj[] = {rq->scope.job_id};
	PGresult *r = NULL;
	if (rc == 0)
		rc = db_query(
		    rq->db, &r,
		    "SELECT greatest(q.max_storage_bytes - tenant_storage_bytes(q.tenant_id),"
		    " 0) FROM quotas q JOIN jobs j ON j.tenant_id = q.tenant_id"
		    " WHERE j.id = $1",
		    1, pj);
	if (rc == 0 && PQntuples(r) == 1)
		*left = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}

/* A report's answer: the job's state, and the storage the tenant has left when known. */
static int report_reply(api_req *rq, int status, const char *now_state, int64_t left)
{
	json_t *a = json_pack("{s:s}", "job_state", now_state);
	if (a && left >= 0)
		json_object_set_new(a, "storage_left", json_integer((json_int_t)left));
	return api_reply(rq, status, a);
}

/* The checks of a report's body: they add a row for each problem. */
typedef void (*body_check)(const json_t *in, verrs *v);

/* The report's body once check found nothing wrong; NULL when the request was answered. */
static json_t *report_body(api_req *rq, body_check check);

/* The heartbeat's body, when it has one: {"log_bytes": n}. */
static void heartbeat_check(const json_t *in, verrs *v)
{
	static const char *const fields[] = {"log_bytes", NULL};
	jsonx_only_fields(in, "", fields, v);
	int64_t n = 0;
	jsonx_get_int(in, "", "log_bytes", false, 0, LOG_BYTES_MAX, &n, v);
}

/* The log size a report's body carries, or -1. */
static int64_t body_log_bytes(const json_t *in)
{
	const json_t *n = json_object_get(in, "log_bytes");
	return json_is_integer(n) ? (int64_t)json_integer_value(n) : -1;
}

int h_attempt_heartbeat(api_req *rq)
{
	int64_t log_bytes = -1, left = 0;
	if (rq->body_len > 0) {
		json_t *in = report_body(rq, heartbeat_check);
		if (!in)
			return 0;
		log_bytes = body_log_bytes(in);
		json_decref(in);
	}
	char now_state[16];
	int rc = report_begin(rq, now_state);
	if (rc == 0)
		rc = report_storage(rq, log_bytes, &left);
	if (rc)
		return report_failed(rq, rc);
	char res[160];
	attempt_resource(rq, "heartbeat", res, sizeof(res));
	if (commit_audited(rq, 200, res, NULL) < 0)
		return 0;
	return report_reply(rq, 200, now_state, left);
}

static json_t *report_body(api_req *rq, body_check check)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return NULL;
	verrs v;
	verrs_init(&v);
	check(in, &v);
	if (verrs_count(&v)) {
		json_decref(in);
		api_fail_validation(rq, &v);
		return NULL;
	}
	verrs_release(&v);
	return in;
}

/* The metrics body: {"steps": [{"step": n, ...}, ...]}, each step once. */
static void metrics_check(const json_t *in, verrs *v)
{
	static const char *const fields[] = {"steps", "log_bytes", NULL};
	jsonx_only_fields(in, "", fields, v);
	int64_t log_bytes = 0;
	jsonx_get_int(in, "", "log_bytes", false, 0, LOG_BYTES_MAX, &log_bytes, v);
	const json_t *steps = json_object_get(in, "steps");
	if (!json_is_array(steps) || json_array_size(steps) == 0) {
		verrs_add(v, "/steps", steps ? ERR_F_WRONG_TYPE : ERR_F_REQUIRED,
		          "steps must be a non-empty array of step objects");
		return;
	}
	size_t i;
	const json_t *s;
	json_array_foreach (steps, i, s) {
		char base[32];
		snprintf(base, sizeof(base), "/steps/%zu", i);
		int64_t step = 0;
		if (!json_is_object(s))
			verrs_add(v, base, ERR_F_WRONG_TYPE, "a step is an object");
		else
			jsonx_get_int(s, base, "step", true, 1, INT32_MAX, &step, v);
	}
}

/*
 * The alerts a batch of steps ($3) of job $1 raises (raise_alert(), in
 * migrations/0010_alerts.sql, quiets repeats for 15 minutes):
 *   non_finite  a step whose loss is null (the trainer's NaN or Inf);
 *   loss_spike  a loss more than 6 standard deviations above the mean of
 *               the job's 100 steps before the batch (20 at least);
 *   slow_steps  tokens/s under half the job's median (20 steps at least).
 */
#define ALERTS_FROM_STEPS_SQL                                                                      \
	"WITH new AS (SELECT (e->>'step')::int AS step, e->'loss' AS loss,"                        \
	"   (e->>'tokens_per_s')::float8 AS tps FROM jsonb_array_elements($3::jsonb) e),"          \
	" prior AS (SELECT (m.data->>'loss')::float8 AS loss FROM job_metrics m"                   \
	"   WHERE m.job_id = $1 AND m.step < (SELECT min(step) FROM new)"                          \
	"   AND jsonb_typeof(m.data->'loss') = 'number' ORDER BY m.step DESC LIMIT 100),"          \
	" stats AS (SELECT avg(loss) AS mu, stddev_samp(loss) AS sd, count(*) AS n FROM prior),"   \
	" pace AS (SELECT percentile_cont(0.5) WITHIN GROUP"                                       \
	"   (ORDER BY (m.data->>'tokens_per_s')::float8) AS med, count(*) AS n FROM job_metrics m" \
	"   WHERE m.job_id = $1 AND jsonb_typeof(m.data->'tokens_per_s') = 'number'),"             \
	" found AS ("                                                                              \
	"  SELECT 'non_finite' AS kind, jsonb_build_object('step', min(step), 'attempt_id',"       \
	"    $2::text) AS detail FROM new WHERE jsonb_typeof(loss) = 'null' HAVING count(*) > 0"   \
	"  UNION ALL SELECT 'loss_spike', jsonb_build_object('step', min(new.step),"               \
	"    'loss', max(new.loss::float8), 'mean', s.mu, 'stddev', s.sd)"                         \
	"    FROM new, stats s WHERE s.n >= 20 AND jsonb_typeof(new.loss) = 'number'"              \
	"    AND new.loss::float8 > s.mu + 6 * greatest(s.sd, 1e-6) GROUP BY s.mu, s.sd"           \
	"  UNION ALL SELECT 'slow_steps', jsonb_build_object('step', min(new.step),"               \
	"    'tokens_per_s', min(new.tps), 'median', p.med)"                                       \
	"    FROM new, pace p WHERE p.n >= 20 AND new.tps < 0.5 * p.med GROUP BY p.med)"           \
	" SELECT raise_alert(j.tenant_id, j.id, f.kind, f.detail, interval '15 minutes')"          \
	" FROM found f JOIN jobs j ON j.id = $1"

int h_attempt_metrics(api_req *rq)
{
	json_t *in = report_body(rq, metrics_check);
	if (!in)
		return 0;
	char *steps = json_dumps(json_object_get(in, "steps"), JSON_COMPACT);
	size_t n = json_array_size(json_object_get(in, "steps"));
	int64_t log_bytes = body_log_bytes(in), left = 0;
	json_decref(in);
	if (!steps)
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	const char *p[] = {rq->scope.job_id, rq->scope.attempt_id, steps};
	char now_state[16];
	int rc = report_begin(rq, now_state);
	if (rc == 0)
		rc = db_query(
		    rq->db, NULL,
		    "INSERT INTO job_metrics (job_id, attempt_id, step, data)"
		    " SELECT $1, $2, (e->>'step')::int, e"
		    " FROM jsonb_array_elements($3::jsonb) e"
		    " ON CONFLICT (job_id, attempt_id, step) DO UPDATE SET data = EXCLUDED.data",
		    3, p);
	if (rc == 0)
		rc = db_query(rq->db, NULL, ALERTS_FROM_STEPS_SQL, 3, p);
	free(steps);
	if (rc == 0)
		rc = report_storage(rq, log_bytes, &left);
	if (rc)
		return report_failed(rq, rc);
	char res[160];
	attempt_resource(rq, "metrics", res, sizeof(res));
	if (commit_audited(rq, 200, res, json_pack("{s:I}", "steps", (json_int_t)n)) < 0)
		return 0;
	return report_reply(rq, 200, now_state, left);
}

/*
 * The most bytes a checkpoint, and so each of its shards, may have: 2^53,
 * the largest count a JSON reader keeps exact. The sum of shards that each
 * pass it is checked against it too, so it never overflows an int64_t.
 */
#define CHECKPOINT_BYTES_MAX ((int64_t)1 << 53)

/*
 * A shard entry: {"name": "shard_00000_of_00002.bin", "bytes": n, "sha256": hex}.
 * The name is a file of the checkpoint's step directory by the storage
 * layout's rule (storage_shard_name_valid): never "..", "." or a path,
 * and never the manifest, which is the checkpoint's own file.
 */
static void shard_validate(const json_t *s, const char *base, verrs *v)
{
	static const char *const fields[] = {"name", "bytes", "sha256", NULL};
	if (!json_is_object(s)) {
		verrs_add(v, base, ERR_F_WRONG_TYPE, "a shard is an object");
		return;
	}
	jsonx_only_fields(s, base, fields, v);
	const char *name = NULL, *sha = NULL;
	int64_t bytes = 0;
	char ptr[64];
	if (jsonx_get_str(s, base, "name", true, STORAGE_SHARD_NAME_MAX, &name, v) > 0 &&
	    !storage_shard_name_valid(name)) {
		jsonx_pointer(ptr, sizeof(ptr), base, "name");
		verrs_add(v, ptr, ERR_F_INVALID_VALUE,
		          "a shard name is one file name of [A-Za-z0-9._-], not \".\", \"..\" "
		          "or " STORAGE_MANIFEST_NAME);
	}
	jsonx_get_int(s, base, "bytes", true, 0, CHECKPOINT_BYTES_MAX, &bytes, v);
	if (jsonx_get_str(s, base, "sha256", true, 64, &sha, v) > 0 && !hex_is_lower(sha, 64)) {
		jsonx_pointer(ptr, sizeof(ptr), base, "sha256");
		verrs_add(v, ptr, ERR_F_INVALID_VALUE, "sha256 is 64 lower-case hex digits");
	}
}

/*
 * The sum of the shards' bytes, counting only sizes within
 * 0..CHECKPOINT_BYTES_MAX (shard_validate refuses the others), and stopping
 * once past CHECKPOINT_BYTES_MAX. RET the sum, at most 2 * CHECKPOINT_BYTES_MAX.
 */
static int64_t checkpoint_bytes(const json_t *shards)
{
	int64_t sum = 0;
	size_t i;
	const json_t *s;
	json_array_foreach (shards, i, s) {
		const json_t *b = json_object_get(s, "bytes");
		if (!json_is_integer(b))
			continue;
		json_int_t n = json_integer_value(b);
		if (n < 0 || n > CHECKPOINT_BYTES_MAX)
			continue;
		sum += n;
		if (sum > CHECKPOINT_BYTES_MAX)
			break;
	}
	return sum;
}

/* {"step": s, "world": w, "shards": [w shard entries]}. */
static void checkpoint_check(const json_t *in, verrs *v)
{
	static const char *const fields[] = {"step", "world", "shards", NULL};
	jsonx_only_fields(in, "", fields, v);
	int64_t step = 0, world = 0;
	jsonx_get_int(in, "", "step", true, 1, INT32_MAX, &step, v);
	jsonx_get_int(in, "", "world", true, 1, 65536, &world, v);
	const json_t *shards = json_object_get(in, "shards");
	if (!json_is_array(shards) || (world > 0 && json_array_size(shards) != (size_t)world)) {
		verrs_add(v, "/shards", shards ? ERR_F_INVALID_VALUE : ERR_F_REQUIRED,
		          "shards must list one entry per rank of the world");
		return;
	}
	json_t *seen = json_object(); /* each shard's name once */
	size_t i;
	const json_t *s;
	json_array_foreach (shards, i, s) {
		char base[32];
		snprintf(base, sizeof(base), "/shards/%zu", i);
		shard_validate(s, base, v);
		const char *name = json_string_value(json_object_get(s, "name"));
		if (!name || !seen)
			continue;
		if (json_object_get(seen, name)) {
			char ptr[64];
			jsonx_pointer(ptr, sizeof(ptr), base, "name");
			verrs_add(v, ptr, ERR_F_INVALID_VALUE, "shard \"%s\" is listed twice",
			          name);
		}
		json_object_set_new(seen, name, json_true());
	}
	json_decref(seen);
	if (checkpoint_bytes(shards) > CHECKPOINT_BYTES_MAX)
		verrs_add(
		    v, "/shards", ERR_F_OUT_OF_RANGE,
		    "the shards' bytes add up to more than %lld, the most a checkpoint may have",
		    (long long)CHECKPOINT_BYTES_MAX);
}

/*
 * The trainer keeps the newest checkpoint.keep checkpoints on disk and
 * removes the rest before it reports a new one: their records go too, so
 * that the list holds only what can be downloaded and resumed.
 */
#define CHECKPOINT_PRUNE_SQL                                                                       \
	"DELETE FROM checkpoints c USING jobs j WHERE c.job_id = $1"                               \
	" AND j.id = c.job_id AND c.step NOT IN (SELECT step FROM checkpoints"                     \
	"   WHERE job_id = $1 ORDER BY step DESC"                                                  \
	"   LIMIT greatest(coalesce((j.spec->'checkpoint'->>'keep')::int, 1), 1))"

/*
 * After a refusal for the tenant's storage quota the runtime removes the
 * refused step's files, and the trainer has already pruned the checkpoints
 * older than the newest checkpoint.keep - 1 before it: the records of both
 * go, and the ones the trainer kept stay.
 */
#define CHECKPOINT_REFUSED_PRUNE_SQL                                                               \
	"DELETE FROM checkpoints c USING jobs j WHERE c.job_id = $1 AND j.id = c.job_id"           \
	" AND (c.step = $2::int OR (c.step < $2::int AND c.step NOT IN (SELECT step"               \
	"   FROM checkpoints WHERE job_id = $1 AND step < $2::int ORDER BY step DESC"              \
	"   LIMIT greatest(coalesce((j.spec->'checkpoint'->>'keep')::int, 1), 1) - 1)))"

/*
 * Refuse a checkpoint that would take the tenant past max_storage_bytes
 * (used: the tenant's storage with it). The refusal is recorded, with the
 * records of what is no longer on disk, and answered 409
 * storage_quota_exceeded: the runtime removes the step's files and ends
 * the attempt failed (worker/README.md). RET 0 (answered).
 */
static int checkpoint_refused(api_req *rq, const char *step, int64_t bytes, int64_t used,
                              int64_t max)
{
	db_rollback(rq->db);
	char now_state[16];
	const char *p[] = {rq->scope.job_id, step};
	int rc = report_begin(rq, now_state);
	if (rc == 0)
		rc = db_query(rq->db, NULL, CHECKPOINT_REFUSED_PRUNE_SQL, 2, p);
	if (rc)
		return report_failed(rq, rc);
	/* the refusal's record, a failure, with the records that went */
	char res[200];
	snprintf(res, sizeof(res), "job/%s/checkpoint/step/%s", rq->scope.job_id, step);
	json_t *d = json_pack("{s:s, s:s, s:I, s:I, s:I}", "code", "storage_quota_exceeded", "step",
	                      step, "bytes", (json_int_t)bytes, "storage_bytes", (json_int_t)used,
	                      "max_storage_bytes", (json_int_t)max);
	audit_record a = api_audit_record(rq, rq->rt->action, "failure", 409);
	a.resource = res;
	a.detail = d;
	rc = api_audit_write(rq, &a);
	json_decref(d);
	if (rc == 0)
		rc = db_commit(rq->db);
	if (rc)
		return api_fail_db(rq, rc);
	rq->audited = true;
	return api_fail(rq, ERR_STORAGE_QUOTA_EXCEEDED,
	                "checkpoint of step %s (%lld bytes) would bring the tenant's storage to "
	                "%lld bytes, past its quota of %lld bytes",
	                step, (long long)bytes, (long long)used, (long long)max);
}

int h_attempt_checkpoint(api_req *rq)
{
	json_t *in = report_body(rq, checkpoint_check);
	if (!in)
		return 0;
	int64_t bytes = checkpoint_bytes(json_object_get(in, "shards")); /* checked */
	char step[16], world[16], total[24];
	snprintf(step, sizeof(step), "%lld",
	         (long long)json_integer_value(json_object_get(in, "step")));
	snprintf(world, sizeof(world), "%lld",
	         (long long)json_integer_value(json_object_get(in, "world")));
	snprintf(total, sizeof(total), "%lld", (long long)bytes);
	char *shards = json_dumps(json_object_get(in, "shards"), JSON_COMPACT);
	json_decref(in);
	if (!shards)
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	char now_state[16];
	json_t *c = NULL;
	const char *pj[] = {rq->scope.job_id};
	int rc = report_begin(rq, now_state);
	/* one registration of the tenant's at a time measures its storage */
	if (rc == 0)
		rc = db_query(rq->db, NULL,
		              "SELECT 1 FROM quotas WHERE tenant_id ="
		              " (SELECT tenant_id FROM jobs WHERE id = $1) FOR UPDATE",
		              1, pj);
	if (rc == 0) {
		/* a step written again (after a fallback) replaces the earlier record */
		const char *p[] = {
		    rq->scope.job_id, rq->scope.attempt_id, step, world, total, shards};
		rc = api_query_json(
		    rq,
		    "WITH c AS (INSERT INTO checkpoints (job_id, attempt_id, step, world, bytes, "
		    "shards, classification, held_for, parent_step)"
		    " VALUES ($1, $2, $3::int, $4::int, $5::bigint, $6::jsonb, " JOB_CLASSIFICATION
		    ", " JOB_HELD_FOR ","
		    " (SELECT max(step) FROM checkpoints WHERE job_id = $1 AND step < $3::int))"
		    " ON CONFLICT (job_id, step) DO UPDATE SET attempt_id = EXCLUDED.attempt_id,"
		    " world = EXCLUDED.world, bytes = EXCLUDED.bytes, shards = EXCLUDED.shards,"
		    " classification = EXCLUDED.classification, held_for = EXCLUDED.held_for,"
		    " parent_step = EXCLUDED.parent_step,"
		    " created_at = clock_timestamp() RETURNING id, step)"
		    " SELECT row_to_json(c) FROM c",
		    6, p, &c);
	}
	if (rc == 0)
		rc = db_query(rq->db, NULL, CHECKPOINT_PRUNE_SQL, 1, pj);
	free(shards);
	/* the tenant's storage with this checkpoint, against its quota */
	PGresult *r = NULL;
	if (rc == 0)
		rc = db_query(
		    rq->db, &r,
		    "SELECT q.max_storage_bytes, tenant_storage_bytes(q.tenant_id)"
		    " FROM quotas q JOIN jobs j ON j.tenant_id = q.tenant_id WHERE j.id = $1",
		    1, pj);
	int64_t max = INT64_MAX, used = 0;
	if (rc == 0 && PQntuples(r) == 1) {
		max = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		used = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	}
	PQclear(r);
	if (rc) {
		json_decref(c);
		return report_failed(rq, rc);
	}
	if (used > max) {
		json_decref(c);
		return checkpoint_refused(rq, step, bytes, used, max);
	}
	char res[200];
	snprintf(res, sizeof(res), "job/%s/checkpoint/%s", rq->scope.job_id,
	         json_string_value(json_object_get(c, "id")));
	if (commit_audited(rq, 201, res, json_pack("{s:s}", "step", step)) < 0) {
		json_decref(c);
		return 0;
	}
	json_object_set_new(c, "storage_left", json_integer((json_int_t)(max - used)));
	return api_reply(rq, 201, c);
}

/*
 * A runtime event, kept as a job event beside the state changes:
 * {"kind": "fallback", "reason": "...", "detail": {...}}.
 */
static void event_check(const json_t *in, verrs *v)
{
	static const char *const kinds[] = {"fallback", "restart", NULL};
	static const char *const fields[] = {"kind", "reason", "detail", NULL};
	jsonx_only_fields(in, "", fields, v);
	const char *kind = NULL, *reason = NULL;
	const json_t *detail = NULL;
	if (jsonx_get_str(in, "", "kind", true, 32, &kind, v) > 0 &&
	    jsonx_enum_index(kind, kinds) < 0)
		verrs_add(v, "/kind", ERR_F_INVALID_VALUE, "kind is fallback or restart");
	jsonx_get_str(in, "", "reason", true, 200, &reason, v);
	jsonx_get_obj(in, "", "detail", false, &detail, v);
}

int h_attempt_event(api_req *rq)
{
	json_t *in = report_body(rq, event_check);
	if (!in)
		return 0;
	const char *kind = json_string_value(json_object_get(in, "kind"));
	const char *reason = json_string_value(json_object_get(in, "reason"));
	const json_t *detail = json_object_get(in, "detail");
	json_t *d = detail ? json_deep_copy(detail) : json_object();
	json_object_set_new(d, "kind", json_string(kind));
	json_object_set_new(d, "attempt_id", json_string(rq->scope.attempt_id));
	char text[256];
	snprintf(text, sizeof(text), "%s: %s", kind, reason);
	json_decref(in);
	char *dj = json_dumps(d, JSON_COMPACT);
	char now_state[16];
	int rc = report_begin(rq, now_state);
	if (rc == 0) {
		const char *p[] = {rq->scope.job_id, text, dj ? dj : "{}"};
		rc =
		    db_query(rq->db, NULL,
		             "INSERT INTO job_events (job_id, from_state, to_state, reason, detail)"
		             " SELECT id, state, state, $2, $3::jsonb FROM jobs WHERE id = $1",
		             3, p);
	}
	free(dj);
	if (rc) {
		json_decref(d);
		return report_failed(rq, rc);
	}
	char res[160];
	attempt_resource(rq, "event", res, sizeof(res));
	if (commit_audited(rq, 201, res, d) < 0)
		return 0;
	return api_reply(rq, 201, json_pack("{s:s}", "job_state", now_state));
}

/*
 * The end of an attempt: {"outcome": "succeeded" | "failed", "reason": "...",
 * "failure_class": "..."}. The attempt ends (its credential stops working)
 * and the job moves to the outcome; a job being cancelled becomes
 * cancelled instead. An attempt the scheduler follows keeps its failure on
 * the attempt (failure_class) and leaves the job where it is: the
 * scheduler decides on a retry when the attempt's Slurm job ends.
 * failure_class, only with outcome failed, is a class of lib/job/failure.def;
 * any other is refused.
 */
static void finish_check(const json_t *in, verrs *v)
{
	static const char *const outcomes[] = {"succeeded", "failed", NULL};
	static const char *const fields[] = {"outcome", "reason", "failure_class", "log_bytes",
	                                     NULL};
	jsonx_only_fields(in, "", fields, v);
	int64_t log_bytes = 0;
	jsonx_get_int(in, "", "log_bytes", false, 0, LOG_BYTES_MAX, &log_bytes, v);
	const char *outcome = NULL, *reason = NULL, *cls = NULL;
	if (jsonx_get_str(in, "", "outcome", true, 16, &outcome, v) > 0 &&
	    jsonx_enum_index(outcome, outcomes) < 0)
		verrs_add(v, "/outcome", ERR_F_INVALID_VALUE, "outcome is succeeded or failed");
	jsonx_get_str(in, "", "reason", false, 200, &reason, v);
	if (jsonx_get_str(in, "", "failure_class", false, 40, &cls, v) <= 0)
		return;
	if (failure_by_name(cls) == FAILURE_NONE)
		verrs_add(v, "/failure_class", ERR_F_INVALID_VALUE,
		          "failure_class is not a failure class (scheduler/README.md lists them)");
	else if (outcome && strcmp(outcome, "failed") != 0)
		verrs_add(v, "/failure_class", ERR_F_INVALID_VALUE,
		          "failure_class is given only with outcome failed");
}

/*
 * A followed attempt's failure class: the body's failure_class, else the
 * class its reason names, else failed (failure_of_reason).
 */
static const char *finish_class(const json_t *in, const char *reason)
{
	failure_class f = failure_by_name(json_string_value(json_object_get(in, "failure_class")));
	return failure_name(f != FAILURE_NONE ? f : failure_of_reason(reason));
}

/*
 * End the attempt with outcome oc. OUT: *followed, whether the scheduler
 * follows it (only then is failure_class, fc, kept, unless the scheduler
 * set one first: a hang it cancelled stays a hang). RET 0 or -ERR_*.
 */
static int attempt_end(api_req *rq, const char *oc, const char *fc, bool *followed)
{
	attempt_ending e = {.outcome = oc, .failure_class = fc, .class_if_unset = true};
	return attemptstate_end(rq->db, rq->scope.attempt_id, &e, followed);
}

int h_attempt_finish(api_req *rq)
{
	json_t *in = report_body(rq, finish_check);
	if (!in)
		return 0;
	const char *outcome = json_string_value(json_object_get(in, "outcome"));
	const char *reason = json_string_value(json_object_get(in, "reason"));
	if (!reason)
		reason = "";
	char oc[16], why[256];
	snprintf(oc, sizeof(oc), "%s", outcome);
	snprintf(why, sizeof(why), "%s", reason);
	const char *fc = finish_class(in, why); /* failure.def's, not the body's */
	int64_t log_bytes = body_log_bytes(in), left;
	json_decref(in);
	char now_state[16] = "";
	bool followed = false;
	int rc = report_begin(rq, now_state);
	bool cancelling = strcmp(now_state, "cancelling") == 0;
	bool failed = strcmp(oc, "failed") == 0;
	job_state to = cancelling ? JOB_CANCELLED : failed ? JOB_FAILED : JOB_SUCCEEDED;
	if (rc == 0)
		rc = report_storage(rq, log_bytes, &left);
	if (rc == 0)
		rc = attempt_end(rq, oc, fc, &followed);
	/* a followed attempt's failure is the scheduler's to act on */
	bool keep = followed && failed && !cancelling;
	if (rc == 0 && !keep)
		rc = jobstate_transition(rq->db, rq->scope.job_id, to, why[0] ? why : oc, NULL,
		                         NULL, NULL);
	if (rc)
		return report_failed(rq, rc);
	char res[160];
	attempt_resource(rq, "", res, sizeof(res));
	if (commit_audited(rq, 200, res, json_pack("{s:s, s:s}", "outcome", oc, "reason", why)) < 0)
		return 0;
	return api_reply(rq, 200,
	                 json_pack("{s:s}", "job_state", keep ? now_state : job_state_name(to)));
}
