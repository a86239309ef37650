/*
 * h_jobs.c - job submission, listing, inspection, cancellation, events.
 *
 * Submission validates the spec against the tenant's quota, stores the
 * normalised spec, records the creation event and the audit record, and
 * honours Idempotency-Key (same key and body: the first job again; same key
 * and another body: 409), all in one transaction. A job whose layout needs
 * more memory per device than its devices have is refused (lib/job/plan.h).
 * After the token check a submission is two round trips: the quota and the
 * key in one statement, then every write and the answer in one pipeline.
 */
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "datapath.h"
#include "grants.h"
#include "handlers.h"
#include "hex.h"
#include "jobcode.h"
#include "jobinit.h"
#include "jobdoc.h"
#include "jobspec.h"
#include "jobstate.h"
#include "plan.h"
#include "server.h"
#include "storage.h"
#include "token.h"

#define JOB_GET_SQL "SELECT " JOB_DOC JOB_FROM " WHERE j.id = $1"

#define IDEMPOTENCY_KEY_MAX 255

static int job_fetch(api_req *rq, const char *id, json_t **out)
{
	const char *p[] = {id};
	return api_query_json(rq, JOB_GET_SQL, 1, p, out);
}

/*
 * What a submission needs to know first, in one statement: the tenant's
 * quota as the spec validator needs it, the cluster's nodes as the
 * scheduler last saw them, and whether key (NULL: none) was used before.
 * OUT: *q; *nodes, a JSON array of [cpus, gpus] per node (the caller
 * decrefs it; empty before any scheduler cycle); job_id, "" (a new key, or
 * none) or the first job of the key. RET 0; -ERR_IDEMPOTENCY_CONFLICT when
 * the key came with another body; -ERR_TENANT_NOT_FOUND; other -ERR_*.
 */
static int submit_context(api_req *rq, const char *key, const char *body_hex, quota_limits *q,
                          json_t **nodes, char job_id[37])
{
	const char *p[] = {rq->who.user_id, rq->scope.tenant_id, key};
	PGresult *r;
	job_id[0] = '\0';
	*nodes = NULL;
	int rc = db_query(rq->db, &r,
	                  "SELECT " QUOTA_SQL_LIMITS ", encode(i.body_hash, 'hex'), i.job_id,"
	                  " (SELECT coalesce(json_agg(json_build_array(c.cpus, c.gpus)), '[]')"
	                  " FROM scheduler_cluster c) FROM quotas k"
	                  " LEFT JOIN idempotency_keys i ON i.user_id = $1"
	                  " AND i.tenant_id = k.tenant_id AND i.key = $3 WHERE k.tenant_id = $2",
	                  3, p);
	if (rc == 0 && PQntuples(r) == 1) {
		quota_from_row(r, 0, 0, q, NULL);
		*nodes = json_loads(PQgetvalue(r, 0, 6), 0, NULL);
		if (!PQgetisnull(r, 0, 5)) {
			if (strcmp(PQgetvalue(r, 0, 4), body_hex) != 0)
				rc = -ERR_IDEMPOTENCY_CONFLICT;
			else
				snprintf(job_id, 37, "%s", PQgetvalue(r, 0, 5));
		}
	} else if (rc == 0) {
		rc = -ERR_TENANT_NOT_FOUND;
	}
	PQclear(r);
	return rc;
}

/*
 * A job the cluster could never hold, even empty, is refused
 * (cluster_never_fits); nothing is said before a scheduler has seen the
 * cluster. RET: the problems added to v.
 */
static int cluster_check(const json_t *nodes, const jobspec *js, verrs *v)
{
	size_t n = json_array_size(nodes);
	if (n == 0 || n > JOBSPEC_MAX_NODES)
		return 0;
	int cpus[JOBSPEC_MAX_NODES], gpus[JOBSPEC_MAX_NODES];
	for (size_t i = 0; i < n; i++) {
		const json_t *x = json_array_get(nodes, i);
		cpus[i] = (int)json_integer_value(json_array_get(x, 0));
		gpus[i] = (int)json_integer_value(json_array_get(x, 1));
	}
	const jobspec_resources *res = &js->resources;
	if (quota_cluster_could_hold(cpus, gpus, NULL, (int)n, res->nodes, res->ranks_per_node,
	                             res->gpus_per_node))
		return 0;
	verrs_add(v, "/resources/nodes", ERR_F_CLUSTER_NEVER_FITS,
	          "the cluster's %zu node(s) cannot hold %d node(s) with %d cpus and %d gpus", n,
	          res->nodes, res->ranks_per_node, res->gpus_per_node);
	return 1;
}

/* Memory of one of the job's devices: a GPU, or a CPU rank without GPUs. */
static double job_device_memory(const ty_config *cfg, const jobspec *js)
{
	int mib = js->resources.gpus_per_node > 0 ? cfg->gpu_memory_mib : cfg->cpu_rank_memory_mib;
	return (double)mib * 1048576.0;
}

/* The dataset versions a job names, resolved in its tenant at submission. */
typedef struct job_datasets {
	int n;
	struct {
		const char *role; /* "train" or "val" */
		char version_id[37];
	} v[2];
} job_datasets;

/* A grant in force: approved, not revoked, not expired (docs/datasets.md). */
/*
 * Resolve the spec's dataset references (data.dataset, data.val_dataset)
 * to versions of the tenant's datasets, or of another tenant's under a
 * grant in force to this one, the newest where none is named, and pin
 * them in spec ("[tenant/]name@N"). A reference that resolves to nothing,
 * or a version with token ids beyond the model's vocabulary, is a field
 * error in v. OUT *out. RET 0, or -ERR_* from the database.
 */
static int datasets_resolve(api_req *rq, const jobspec *js, json_t *spec, job_datasets *out,
                            verrs *v)
{
	static const char *const keys[2] = {"dataset", "val_dataset"}, *const roles[2] = {"train",
	                                                                                  "val"};
	const char *refs[2] = {js->data.dataset, js->data.val_dataset};
	char owners[2][DATASET_TENANT_MAX + 1] = {"", ""},
	                                    names[2][DATASET_NAME_MAX + 1] = {"", ""}, vers[2][16],
	                                    why[160];
	out->n = 0;
	if (!refs[0][0] && !refs[1][0])
		return 0;
	for (int i = 0; i < 2; i++) {
		int ver = 0;
		if (refs[i][0])
			dataset_ref_parse(refs[i], owners[i], names[i], &ver, why, sizeof(why));
		snprintf(vers[i], sizeof(vers[i]), "%d", ver);
	}
	const char *p[] = {rq->scope.tenant_id, owners[0], names[0], vers[0],
	                   owners[1],           names[1],  vers[1]};
	PGresult *r;
	int rc = db_query(
	    rq->db, &r,
	    "SELECT r.role, v.id, v.version, v.max_token FROM (VALUES ('train', $2, $3, $4::int),"
	    " ('val', $5, $6, $7::int)) r (role, owner, name, version)"
	    " JOIN datasets d ON d.name = r.name AND d.tenant_id = CASE WHEN r.owner = '' THEN $1"
	    " ELSE (SELECT id FROM tenants WHERE name = r.owner) END"
	    " JOIN LATERAL (SELECT id, version, max_token FROM dataset_versions"
	    " WHERE dataset_id = d.id AND (r.version = 0 OR version = r.version)"
	    " ORDER BY version DESC LIMIT 1) v ON true"
	    " WHERE d.tenant_id = $1 OR EXISTS (SELECT 1 FROM dataset_grants g"
	    " WHERE g.dataset_id = d.id AND g.tenant_id = $1 AND " GRANT_IN_FORCE ")",
	    7, p);
	if (rc)
		return rc;
	json_t *data = json_object_get(spec, "data");
	for (int i = 0; i < 2; i++) {
		if (!refs[i][0])
			continue;
		char ptr[32];
		snprintf(ptr, sizeof(ptr), "/data/%s", keys[i]);
		int row = -1;
		for (int k = 0; k < PQntuples(r); k++)
			if (strcmp(PQgetvalue(r, k, 0), roles[i]) == 0)
				row = k;
		if (row < 0) {
			verrs_add(
			    v, ptr, ERR_F_UNKNOWN_DATASET,
			    "no dataset \"%s\" for this tenant (its own, or granted to it and in "
			    "force), or it has no such version",
			    refs[i]);
			continue;
		}
		/* a command job's program reads the tokens; it has no vocab_size to hold them to */
		if (js->kind == JOBSPEC_KIND_TRAIN &&
		    atoi(PQgetvalue(r, row, 3)) >= js->model.vocab_size) {
			verrs_add(
			    v, ptr, ERR_F_DATASET_VOCAB,
			    "%s@%s holds token ids up to %s, beyond the model's vocab_size %d",
			    names[i], PQgetvalue(r, row, 2), PQgetvalue(r, row, 3),
			    js->model.vocab_size);
			continue;
		}
		char pinned[DATASET_REF_MAX + 1];
		snprintf(pinned, sizeof(pinned), "%s%s%s@%s", owners[i], owners[i][0] ? "/" : "",
		         names[i], PQgetvalue(r, row, 2));
		json_object_set_new(data, keys[i], json_string(pinned));
		out->v[out->n].role = roles[i];
		snprintf(out->v[out->n].version_id, 37, "%s", PQgetvalue(r, row, 1));
		out->n++;
	}
	PQclear(r);
	return 0;
}

/*
 * Data paths into the directory where running attempts' datasets are
 * unsealed are refused: a dataset is read only through a job's own pinned
 * versions, each read recorded. RET the rows added to v.
 */
static int reserved_paths(const jobspec *js, verrs *v)
{
	static const char *const why =
	    "%s is where running attempts' datasets are unsealed; name a dataset instead";
	int n = 0;
	if (datapath_reserved(js->data.train) && ++n)
		verrs_add(v, "/data/train", ERR_F_PATH_NOT_ALLOWED, why, DATAPATH_ATTEMPTS_DIR "/");
	if (datapath_reserved(js->data.val) && ++n)
		verrs_add(v, "/data/val", ERR_F_PATH_NOT_ALLOWED, why, DATAPATH_ATTEMPTS_DIR "/");
	return n;
}

/*
 * Data paths are a platform admin's: a path bypasses the registry's
 * classification, masking, grants and the audited key fetch of each
 * attempt (docs/datasets.md). Everyone else names registered datasets.
 * js->data.train and .val are the spec as submitted (datasets_resolve()
 * pins only .dataset and .val_dataset, and only in the JSON). An admin's
 * paths are held to reserved_paths(). RET the rows added to v.
 */
static int data_paths(const api_req *rq, const jobspec *js, verrs *v)
{
	static const char *const why =
	    "only a platform admin may name a data path; name a registered dataset in %s instead";
	if (rq->who.platform == ROLE_ADMIN)
		return reserved_paths(js, v);
	int n = 0;
	if (js->data.train[0] && ++n)
		verrs_add(v, "/data/train", ERR_F_DATA_PATH_ADMIN_ONLY, why, "data.dataset");
	if (js->data.val[0] && ++n)
		verrs_add(v, "/data/val", ERR_F_DATA_PATH_ADMIN_ONLY, why, "data.val_dataset");
	return n;
}

/*
 * Queue the new job's statements on the pipeline: the job, its creation
 * event, its idempotency key (key NULL: none), the audit record, and last
 * the job's document, the answer.
 */
/*
 * The job's priority class: one its tenant may use (the default, or one
 * its quota lists). OUT: *priority, the class's value (jobs.priority).
 * RET 0 (a row in v when it may not), or -ERR_*.
 */
static int priority_class_resolve(api_req *rq, const jobspec *js, int *priority, verrs *v)
{
	const char *p[] = {js->resources.priority_class, rq->scope.tenant_id,
	                   JOBSPEC_CLASS_DEFAULT};
	PGresult *r;
	int rc = db_query(rq->db, &r,
	                  "SELECT c.value FROM priority_classes c JOIN quotas k ON k.tenant_id = $2"
	                  " WHERE c.name = $1 AND ($1 = $3 OR $1 = ANY (k.priority_classes))",
	                  3, p);
	if (rc == 0 && PQntuples(r) == 1)
		*priority = atoi(PQgetvalue(r, 0, 0));
	else if (rc == 0)
		verrs_add(v, "/resources/priority_class", ERR_F_PRIORITY_CLASS,
		          "the tenant may not use the priority class %s (its quota's "
		          "priority_classes, and %s)",
		          js->resources.priority_class, JOBSPEC_CLASS_DEFAULT);
	PQclear(r);
	return rc;
}

static void job_insert(api_req *rq, const json_t *spec, const jobspec *js, const job_datasets *ds,
                       const job_init *init, const char *code_version, const char *key,
                       const char *body_hex, const char *job_id, int priority)
{
	/* 15 digits: 3e-4 is stored as 0.0003, not its 17-digit binary neighbour */
	char *text = json_dumps(spec, JSON_COMPACT | JSON_REAL_PRECISION(15));
	char devices[24], prio[16];
	snprintf(devices, sizeof(devices), "%lld", (long long)jobspec_devices(js));
	snprintf(prio, sizeof(prio), "%d", priority);
	const char *name = json_string_value(json_object_get(spec, "name"));
	const char *p[] = {job_id,
	                   rq->scope.tenant_id,
	                   rq->who.user_id,
	                   name,
	                   text,
	                   devices,
	                   js->resources.priority_class,
	                   prio,
	                   js->resources.preemptible ? "t" : "f"};
	db_query(rq->db, NULL,
	         "INSERT INTO jobs (id, tenant_id, submitter_id, name, spec, devices,"
	         " priority_class, priority, preemptible)"
	         " VALUES ($1, $2, $3, $4, $5::jsonb, $6::int, $7, $8::int, $9::boolean)",
	         9, p);
	free(text);
	jobstate_record_created(rq->db, job_id, rq->who.user_id);
	for (int i = 0; i < ds->n; i++) {
		const char *q[] = {job_id, ds->v[i].role, ds->v[i].version_id};
		db_query(rq->db, NULL,
		         "INSERT INTO job_datasets (job_id, role, version_id) VALUES ($1, $2, $3)",
		         3, q);
	}
	jobinit_insert(rq, job_id, init);
	jobcode_insert(rq, job_id, code_version);
	if (key) {
		const char *q[] = {rq->who.user_id, rq->scope.tenant_id, key, body_hex, job_id};
		db_query(rq->db, NULL,
		         "INSERT INTO idempotency_keys (user_id, tenant_id, key, body_hash, job_id)"
		         " VALUES ($1, $2, $3, decode($4, 'hex'), $5)",
		         5, q);
	}
	char res[64];
	snprintf(res, sizeof(res), "job/%s", job_id);
	api_audit(rq, 201, res, NULL);
	const char *d[] = {job_id};
	db_query(rq->db, NULL, JOB_GET_SQL, 1, d);
}

/*
 * Answer with the document in r (taken over), the last result of the
 * submission's pipeline. RET 0 answered, or -ERR_*.
 */
static int reply_doc(api_req *rq, PGresult *r)
{
	if (PQntuples(r) != 1 || PQgetisnull(r, 0, 0)) {
		PQclear(r);
		return -ERR_INTERNAL;
	}
	size_t len = (size_t)PQgetlength(r, 0, 0);
	rq->raw_owned = malloc(len + 1);
	if (!rq->raw_owned) {
		PQclear(r);
		return -ERR_INTERNAL;
	}
	memcpy(rq->raw_owned, PQgetvalue(r, 0, 0), len + 1);
	rq->raw_len = len;
	rq->status = 201;
	PQclear(r);
	return 0;
}

/*
 * One attempt of the submission: what it needs to know in one statement,
 * the validation here, then the writes and the answer in one pipeline, one
 * implicit transaction. RET 0 answered, or -ERR_*.
 */
static int submit_once(api_req *rq, const json_t *in, const char *key, const char *body_hex)
{
	char job_id[37];
	quota_limits quota;
	json_t *nodes = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = submit_context(rq, key, body_hex, &quota, &nodes, job_id);
	if (rc || job_id[0])
		json_decref(nodes);
	if (rc)
		return rc;
	if (job_id[0]) {
		json_t *job;
		if ((rc = job_fetch(rq, job_id, &job)))
			return rc;
		rq->replayed = true;
		return api_reply(rq, 201, job);
	}
	jobspec js;
	json_t *spec = NULL;
	verrs v;
	verrs_init(&v);
	job_datasets ds = {0};
	job_init init;
	memset(&init, 0, sizeof(init));
	char code_version[37] = "";
	rc = jobspec_parse(in, &quota, &js, &spec, &v);
	if (rc == 0 && cluster_check(nodes, &js, &v) > 0)
		rc = -ERR_VALIDATION_FAILED;
	json_decref(nodes);
	/* a command job's memory is its program's own: nothing for the planner to check */
	if (rc == 0 && js.kind == JOBSPEC_KIND_TRAIN &&
	    plan_check_job(&js, job_device_memory(rq->cfg, &js), &v) > 0)
		rc = -ERR_VALIDATION_FAILED;
	int priority = 0;
	if (rc == 0 && (rc = priority_class_resolve(rq, &js, &priority, &v)) == 0 &&
	    (rc = datasets_resolve(rq, &js, spec, &ds, &v)) == 0 &&
	    (rc = jobinit_resolve(rq, &js, spec, &init, &v)) == 0 &&
	    (rc = jobcode_resolve(rq, &js, spec, code_version, &v)) == 0 && verrs_count(&v))
		rc = -ERR_VALIDATION_FAILED;
	if (rc == 0 && data_paths(rq, &js, &v) > 0)
		rc = -ERR_VALIDATION_FAILED;
	if (rc == -ERR_VALIDATION_FAILED) {
		json_decref(spec);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	if (rc || (rc = storage_uuid_new(job_id)) || (rc = db_pipeline_begin(rq->db))) {
		json_decref(spec);
		return rc;
	}
	job_insert(rq, spec, &js, &ds, &init, code_version, key, body_hex, job_id, priority);
	json_decref(spec);
	PGresult *doc;
	if ((rc = db_pipeline_end(rq->db, &doc))) {
		rq->audited = false; /* nothing of it was written */
		return rc;
	}
	return reply_doc(rq, doc);
}

int h_job_submit(api_req *rq)
{
	const char *key = api_header(rq, "Idempotency-Key");
	if (key && (strlen(key) == 0 || strlen(key) > IDEMPOTENCY_KEY_MAX))
		return api_fail(rq, ERR_BAD_REQUEST, "Idempotency-Key must be 1 to %d characters",
		                IDEMPOTENCY_KEY_MAX);
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	unsigned char h[SHA256_DIGEST_LENGTH];
	char body_hex[2 * SHA256_DIGEST_LENGTH + 1];
	SHA256((const unsigned char *)rq->body, rq->body_len, h);
	hex_encode(h, sizeof(h), body_hex);

	int rc = submit_once(rq, in, key, body_hex);
	if (rc == -ERR_CONFLICT && key) /* a concurrent request with the same key won: replay it */
		rc = submit_once(rq, in, key, body_hex);
	json_decref(in);
	if (rc == -ERR_IDEMPOTENCY_CONFLICT)
		return api_fail(rq, rc, "this Idempotency-Key was used with a different body");
	return rc ? api_fail_db(rq, rc) : 0;
}

/* Cursor: hex of "<created_at with microseconds>|<id>", opaque to clients. */
static int cursor_decode(const char *c, char *ts, size_t tslen, char id[37])
{
	size_t n = strlen(c);
	char raw[128];
	if (n % 2 || n / 2 >= sizeof(raw))
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(c + 2 * i, "%2x", &v) != 1)
			return -1;
		raw[i] = (char)v;
	}
	raw[n / 2] = '\0';
	char *bar = strchr(raw, '|');
	if (!bar || (size_t)(bar - raw) >= tslen ||
	    strspn(raw, "0123456789-:.T Z+") != (size_t)(bar - raw))
		return -1;
	*bar = '\0';
	if (!jsonx_is_uuid(bar + 1))
		return -1;
	memcpy(ts, raw, (size_t)(bar - raw) + 1);
	snprintf(id, 37, "%s", bar + 1);
	return 0;
}

int h_job_list(api_req *rq)
{
	const char *state = api_query(rq, "state"), *lim = api_query(rq, "limit");
	const char *cursor = api_query(rq, "cursor");
	char ts[64] = "", cid[37] = "", limit[16];
	long n = 50;
	if (state && job_state_parse(state) < 0)
		return api_fail(rq, ERR_BAD_REQUEST, "unknown state \"%.32s\"", state);
	if (lim) {
		char *end;
		n = strtol(lim, &end, 10);
		if (*end || n < 1 || n > rq->cfg->page_max)
			return api_fail(rq, ERR_BAD_REQUEST, "limit must be 1 to %d",
			                rq->cfg->page_max);
	}
	if (cursor && cursor_decode(cursor, ts, sizeof(ts), cid) < 0)
		return api_fail(rq, ERR_BAD_REQUEST, "the cursor is not valid");
	snprintf(limit, sizeof(limit), "%ld", n + 1);
	const char *p[] = {rq->scope.tenant_id, state, cursor ? ts : NULL, cursor ? cid : NULL,
	                   limit};
	json_t *items;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(x ORDER BY x.ord), '[]') FROM (SELECT row_number() OVER "
	    "(ORDER BY j.created_at DESC, j.id DESC) AS ord, " JOB_COLS
	    ", to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS "
	    "cursor_ts" JOB_FROM " WHERE j.tenant_id = $1 AND ($2::text IS NULL OR j.state = $2)"
	    " AND ($3::text IS NULL OR (j.created_at, j.id) < (($3::text || '+00')::timestamptz, "
	    "$4::uuid))"
	    " ORDER BY j.created_at DESC, j.id DESC LIMIT $5::int) x",
	    5, p, &items);
	if (rc)
		return api_fail_db(rq, rc);
	json_t *next = json_null();
	if (json_array_size(items) > (size_t)n) {
		json_array_remove(items, (size_t)n);
		json_t *last = json_array_get(items, (size_t)n - 1);
		char raw[128], hex[257];
		snprintf(raw, sizeof(raw), "%s|%s",
		         json_string_value(json_object_get(last, "cursor_ts")),
		         json_string_value(json_object_get(last, "id")));
		hex_encode((const unsigned char *)raw, strlen(raw), hex);
		json_decref(next);
		next = json_string(hex);
	}
	size_t i;
	json_t *it;
	json_array_foreach (items, i, it) {
		json_object_del(it, "ord");
		json_object_del(it, "cursor_ts");
	}
	return api_reply_items(rq, 0, items, next);
}

int h_job_get(api_req *rq)
{
	if (rq->raw_owned) { /* read with the caller's token (ROUTE_JOB_DOC) */
		rq->status = 200;
		return 0;
	}
	const char *p[] = {rq->scope.job_id};
	return api_reply_row(rq, JOB_GET_SQL, 1, p, ERR_JOB_NOT_FOUND);
}

int h_job_cancel(api_req *rq)
{
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		return api_fail_db(rq, rc);
	const char *p[] = {rq->scope.job_id};
	PGresult *r;
	rc = db_query(rq->db, &r, "SELECT state FROM jobs WHERE id = $1 FOR UPDATE", 1, p);
	int cur = rc == 0 && PQntuples(r) ? job_state_parse(PQgetvalue(r, 0, 0)) : -1;
	PQclear(r);
	if (rc)
		return api_fail_db(rq, rc);
	char phrase[64];
	if (cur < 0 || job_state_final((job_state)cur))
		return api_fail(
		    rq, ERR_JOB_NOT_CANCELLABLE, "the job %s",
		    job_state_phrase((job_state)cur, "already", phrase, sizeof(phrase)));
	if (cur == JOB_CANCELLING) {
		db_rollback(rq->db); /* already on its way: answer as the first cancel did */
	} else {
		/* a queued job has nothing running: it ends at once; others wind down */
		job_state to = cur == JOB_QUEUED ? JOB_CANCELLED : JOB_CANCELLING;
		char res[64];
		snprintf(res, sizeof(res), "job/%s", rq->scope.job_id);
		if ((rc = jobstate_transition(rq->db, rq->scope.job_id, to, "cancelled by user",
		                              rq->who.user_id, NULL, NULL)) ||
		    (rc = api_audit(rq, 200, res, NULL)) || (rc = db_commit(rq->db)))
			return rc == -ERR_JOB_STATE_CONFLICT
			           ? api_fail(rq, rc, "the job cannot be cancelled now")
			           : api_fail_db(rq, rc);
	}
	json_t *job;
	if ((rc = job_fetch(rq, rq->scope.job_id, &job)))
		return api_fail_db(rq, rc);
	return api_reply(rq, 200, job);
}

int h_job_events(api_req *rq)
{
	const char *p[] = {rq->scope.job_id};
	json_t *items;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(x ORDER BY x.id), '[]') FROM (SELECT id, " CLOCK_SQL_RFC3339(
	        "at") " AS at, from_state, to_state, reason, actor_id, detail"
	              " FROM job_events WHERE job_id = $1) x",
	    1, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}
