/*
 * h_datasets.c - the dataset registry (docs/datasets.md): a tenant's
 * datasets and their versions, a platform admin's masking exemption, and
 * an attempt's read of a dataset version its job was pinned to. Uploading
 * a version is h_dataset_upload.c's.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "dataset.h"
#include "grants.h"
#include "handlers.h"
#include "jobdata.h"
#include "keys.h"
#include "mask.h"
#include "server.h"
#include "tenant_dirs.h"

const char *const api_classifications[] = {"public", "internal", "confidential", "restricted",
                                           NULL};

#define DATASET_COLS                                                                               \
	"d.id, d.name, d.description, d.classification, d.mask_patterns,"                          \
	" d.exempt_reason IS NOT NULL AS masking_exempt, d.exempt_reason,"                         \
	" " CLOCK_SQL_RFC3339("d.exempt_at") " AS exempt_at, " CLOCK_SQL_RFC3339(                  \
	    "d.created_at") " AS created_at,"                                                      \
	                    " (SELECT max(version) FROM dataset_versions WHERE dataset_id = "      \
	                    "d.id) AS latest_version"
#define VERSION_COLS                                                                               \
	"v.id, v.version, v.format, v.shards, v.tokens, v.max_token, v.bytes,"                     \
	" encode(v.sha256, 'hex') AS sha256, v.masking, v.unmasked,"                               \
	" " CLOCK_SQL_RFC3339("v.created_at") " AS created_at"

/* The custom masking patterns of a dataset body, checked by compiling them. */
static void read_patterns(const json_t *in, verrs *v)
{
	const json_t *a = json_object_get(in, "mask_patterns");
	if (!a)
		return;
	if (!json_is_array(a) || json_array_size(a) > MASK_CUSTOM_MAX) {
		verrs_add(v, "/mask_patterns", ERR_F_WRONG_TYPE,
		          "mask_patterns is an array of at most %d {\"name\", \"regex\"} objects",
		          MASK_CUSTOM_MAX);
		return;
	}
	mask_custom c[MASK_CUSTOM_MAX];
	size_t n = 0, i;
	const json_t *e;
	json_array_foreach (a, i, e) {
		static const char *const fields[] = {"name", "regex", NULL};
		char base[48];
		snprintf(base, sizeof(base), "/mask_patterns/%zu", i);
		const char *name = NULL, *regex = NULL;
		if (!json_is_object(e)) {
			verrs_add(v, base, ERR_F_WRONG_TYPE,
			          "a pattern is a {\"name\", \"regex\"} object");
			continue;
		}
		jsonx_only_fields(e, base, fields, v);
		if (jsonx_get_str(e, base, "name", true, MASK_NAME_MAX, &name, v) > 0 &&
		    jsonx_get_str(e, base, "regex", true, MASK_REGEX_MAX, &regex, v) > 0)
			c[n++] = (mask_custom){name, regex};
	}
	if (verrs_count(v) || n == 0)
		return;
	mask_policy *p = NULL;
	char err[512];
	if (mask_policy_new(c, n, &p, err, sizeof(err)) < 0)
		verrs_add(v, "/mask_patterns", ERR_F_INVALID_VALUE, "%s", err);
	mask_policy_free(p);
}

int h_dataset_create(api_req *rq)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"name", "description", "classification",
	                                     "mask_patterns", NULL};
	jsonx_only_fields(in, "", fields, &v);
	const char *name = NULL, *desc = "", *cls = NULL;
	if (jsonx_get_str(in, "", "name", true, DATASET_NAME_MAX, &name, &v) > 0 &&
	    !dataset_name_valid(name))
		verrs_add(&v, "/name", ERR_F_INVALID_VALUE,
		          "name must be 1-63 of a-z, 0-9, '.', '_' and '-', starting with a letter "
		          "or digit");
	jsonx_get_str(in, "", "description", false, 1000, &desc, &v);
	if (jsonx_get_str(in, "", "classification", true, 16, &cls, &v) > 0 &&
	    jsonx_enum_index(cls, api_classifications) < 0)
		verrs_add(&v, "/classification", ERR_F_INVALID_VALUE,
		          "classification is public, internal, confidential or restricted");
	read_patterns(in, &v);
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	json_t *pat = json_object_get(in, "mask_patterns");
	char *pats = json_dumps(pat ? pat : json_array(), JSON_COMPACT | JSON_ENCODE_ANY);
	json_t *out = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	const char *p[] = {rq->scope.tenant_id, name, desc, cls, pats, rq->who.user_id};
	if (rc == 0)
		rc =
		    api_query_json(rq,
		                   "WITH d AS (INSERT INTO datasets (tenant_id, name, description,"
		                   " classification, mask_patterns, created_by)"
		                   " VALUES ($1, $2, $3, $4, $5::jsonb, $6) RETURNING *)"
		                   " SELECT row_to_json(x) FROM (SELECT " DATASET_COLS " FROM d) x",
		                   6, p, &out);
	free(pats);
	char res[128];
	snprintf(res, sizeof(res), "dataset/%s", name);
	rc = api_audit_commit(rq, rc, 201, res, json_pack("{s:s}", "classification", cls));
	json_decref(in);
	if (rc) {
		json_decref(out);
		if (rc == -ERR_CONFLICT)
			return api_fail(rq, ERR_DATASET_EXISTS,
			                "the tenant already has a dataset of that name");
		return api_fail_db(rq, rc);
	}
	return api_reply(rq, 201, out);
}

int h_dataset_list(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id};
	json_t *items;
	int rc =
	    api_query_json(rq,
	                   "SELECT coalesce(json_agg(x ORDER BY x.name), '[]') FROM"
	                   " (SELECT " DATASET_COLS " FROM datasets d WHERE d.tenant_id = $1) x",
	                   1, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}

int h_dataset_get(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id, route_param(&rq->params, "dataset")};
	return api_reply_row(rq,
	                     "SELECT row_to_json(x) FROM (SELECT " DATASET_COLS ","
	                     " (SELECT coalesce(json_agg(y ORDER BY y.version), '[]') FROM"
	                     " (SELECT " VERSION_COLS " FROM dataset_versions v"
	                     " WHERE v.dataset_id = d.id) y) AS versions"
	                     " FROM datasets d WHERE d.tenant_id = $1 AND d.name = $2) x",
	                     2, p, ERR_DATASET_NOT_FOUND);
}

int h_dataset_exempt(api_req *rq)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"reason", NULL};
	jsonx_only_fields(in, "", fields, &v);
	const char *reason = NULL;
	if (jsonx_get_str(in, "", "reason", true, 1000, &reason, &v) > 0 && reason[0] == '\0')
		verrs_add(&v, "/reason", ERR_F_INVALID_VALUE,
		          "reason says why, in 1 to 1000 bytes");
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	const char *name = route_param(&rq->params, "dataset");
	const char *p[] = {rq->scope.tenant_id, name, reason, rq->who.user_id};
	json_t *out = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	if (rc == 0)
		rc = api_query_json(
		    rq,
		    "WITH d AS (UPDATE datasets SET exempt_reason = $3, exempt_by = $4,"
		    " exempt_at = clock_timestamp() WHERE tenant_id = $1 AND name = $2"
		    " RETURNING *) SELECT row_to_json(x) FROM (SELECT " DATASET_COLS " FROM d) x",
		    4, p, &out);
	if (rc == 0 && !out)
		rc = -ERR_DATASET_NOT_FOUND;
	char res[128];
	snprintf(res, sizeof(res), "dataset/%s", name);
	rc = api_audit_commit(rq, rc, 200, res, json_pack("{s:s}", "reason", reason));
	json_decref(in);
	if (rc) {
		json_decref(out);
		if (rc == -ERR_DATASET_NOT_FOUND)
			return api_fail(rq, rc, "no dataset \"%s\" in this tenant", name);
		return api_fail_db(rq, rc);
	}
	return api_reply(rq, 200, out);
}

/*
 * POST /internal/v1/attempts/{attempt}/datasets/{version}/key: the data key
 * of a dataset version the attempt's job was pinned to, with what the
 * worker needs to unseal it. Each answer is a recorded read of the data.
 */
int h_attempt_dataset_key(api_req *rq)
{
	if (!rq->srv->has_master)
		return api_fail(rq, ERR_KEYS_UNAVAILABLE,
		                "no master key is configured on this server");
	const char *ver = route_param(&rq->params, "version");
	if (!jsonx_is_uuid(ver))
		return api_fail(rq, ERR_DATASET_NOT_FOUND, "no such dataset version for this job");
	const char *p[] = {rq->scope.job_id, ver};
	PGresult *r = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	if (rc == 0)
		rc = db_query(
		    rq->db, &r,
		    "SELECT d.id, d.tenant_id, d.name, d.classification, v.version, v.shards,"
		    " v.tokens, encode(v.sha256, 'hex'), jd.role, d.tenant_id = j.tenant_id"
		    " OR EXISTS (SELECT 1 FROM dataset_grants g WHERE g.dataset_id = d.id"
		    " AND g.tenant_id = j.tenant_id AND " GRANT_IN_FORCE "),"
		    " ot.name FROM job_datasets jd JOIN jobs j ON j.id = jd.job_id"
		    " JOIN dataset_versions v ON v.id = jd.version_id"
		    " JOIN datasets d ON d.id = v.dataset_id JOIN tenants ot ON ot.id = d.tenant_id"
		    " WHERE jd.job_id = $1 AND jd.version_id = $2 LIMIT 1",
		    2, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_DATASET_NOT_FOUND;
	/* another tenant's dataset: only under a grant in force when the attempt asks */
	if (rc == 0 && strcmp(PQgetvalue(r, 0, 9), "t") != 0)
		rc = -ERR_GRANT_NOT_IN_FORCE;
	crypt_object_ctx ring = {0};
	int kv = 0;
	json_t *out = NULL;
	if (rc == 0) {
		const char *ds = PQgetvalue(r, 0, 0), *tenant = PQgetvalue(r, 0, 1);
		rc = keys_dataset_key_existing(rq->db, &rq->srv->master, tenant, ds, &ring, &kv);
		char res[160];
		snprintf(res, sizeof(res), "dataset/%s@%s", PQgetvalue(r, 0, 2),
		         PQgetvalue(r, 0, 4));
		json_t *d =
		    json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s}", "tenant_key_version", kv,
		              "attempt_id", rq->scope.attempt_id, "job_id", rq->scope.job_id,
		              "version_id", ver, "role", PQgetvalue(r, 0, 8), "dataset_tenant_id",
		              tenant, "dataset_tenant", PQgetvalue(r, 0, 10));
		/* another tenant's version: copied to the grantee's tree for its attempts */
		if (rc == 0 && strcmp(tenant, rq->scope.tenant_id) != 0)
			rc = tenant_dirs_stage(rq, tenant, ds, ver, atoi(PQgetvalue(r, 0, 5)));
		if (rc == 0)
			rc = api_audit(rq, 200, res, d);
		json_decref(d);
		if (rc == 0)
			rc = db_commit(rq->db);
		if (rc == 0) {
			out =
			    json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:s, s:i}", "dataset_id",
			              ds, "tenant_id", tenant, "name", PQgetvalue(r, 0, 2),
			              "version_id", ver, "version", atoi(PQgetvalue(r, 0, 4)),
			              "shards", atoi(PQgetvalue(r, 0, 5)), "tokens",
			              (json_int_t)strtoll(PQgetvalue(r, 0, 6), NULL, 10), "sha256",
			              PQgetvalue(r, 0, 7), "tenant_key_version", kv);
			if (out == NULL || jobdata_keys_set(out, &ring) != 0) {
				json_decref(out);
				out = NULL;
				rc = -ERR_INTERNAL;
			}
		}
		crypt_object_ctx_clear(&ring);
	}
	PQclear(r);
	if (rc == -ERR_DATASET_NOT_FOUND)
		return api_fail(rq, rc, "no such dataset version for this job");
	if (rc == -ERR_KEYS_UNAVAILABLE)
		return api_fail(rq, rc, "the dataset's keys were destroyed");
	if (rc == -ERR_GRANT_NOT_IN_FORCE)
		return api_fail(
		    rq, rc,
		    "the dataset is another tenant's, and no grant to this job's tenant is "
		    "in force: it was revoked or has expired");
	if (rc)
		return api_fail_db(rq, rc);
	return api_reply(rq, 200, out);
}

/*
 * GET /v1/tenants/{tenant}/datasets/{dataset}/derived[?version=N&limit=N]:
 * the checkpoints trained on the dataset (or one version of it), directly
 * or through any chain of jobs started from such checkpoints, the newest
 * first, its grantees' included (docs/datasets.md, lineage).
 */
int h_dataset_derived(api_req *rq)
{
	const char *ver = api_query(rq, "version"), *lim = api_query(rq, "limit");
	char v[16] = "0", l[16];
	long n = 100;
	if (ver) {
		char *end;
		long x = strtol(ver, &end, 10);
		if (*end || x < 1 || x > 100000000)
			return api_fail(rq, ERR_BAD_REQUEST, "version is a whole number from 1");
		snprintf(v, sizeof(v), "%ld", x);
	}
	if (lim) {
		char *end;
		n = strtol(lim, &end, 10);
		if (*end || n < 1 || n > rq->cfg->page_max)
			return api_fail(rq, ERR_BAD_REQUEST, "limit must be 1 to %d",
			                rq->cfg->page_max);
	}
	snprintf(l, sizeof(l), "%ld", n);
	const char *p[] = {rq->scope.tenant_id, route_param(&rq->params, "dataset"), v, l};
	json_t *items = NULL;
	/*
	 * dj: the jobs pinned to the dataset (role train or val), then, round
	 * after round, the jobs that started from a checkpoint of one of them
	 * (role init_from). Jobs start only from ended jobs' checkpoints, so
	 * the chains have no cycle; UNION ends the recursion all the same.
	 */
	int rc = api_query_json(
	    rq,
	    "WITH RECURSIVE d AS (SELECT id FROM datasets WHERE tenant_id = $1 AND name = $2),"
	    " dj (job_id, version, role) AS (SELECT jd.job_id, v.version, jd.role FROM d"
	    " JOIN dataset_versions v ON v.dataset_id = d.id"
	    " JOIN job_datasets jd ON jd.version_id = v.id"
	    " WHERE $3::int = 0 OR v.version = $3::int"
	    " UNION SELECT ji.job_id, dj.version, 'init_from' FROM dj"
	    " JOIN job_init ji ON ji.source_job_id = dj.job_id),"
	    " jobs1 AS (SELECT DISTINCT ON (job_id) * FROM dj"
	    " ORDER BY job_id, role = 'init_from', version DESC)"
	    " SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM d) THEN NULL ELSE (SELECT"
	    " coalesce(json_agg(x ORDER BY x.created_at DESC, x.checkpoint_id), '[]') FROM"
	    " (SELECT c.id AS checkpoint_id, jt.name AS tenant, j.id AS job_id, j.name AS job,"
	    " c.step, c.classification, dj.version, dj.role, " CLOCK_SQL_RFC3339(
	        "c.created_at") " AS created_at FROM jobs1 dj JOIN jobs j ON j.id = dj.job_id"
	                        " JOIN tenants jt ON jt.id = j.tenant_id"
	                        " JOIN checkpoints c ON c.job_id = j.id"
	                        " ORDER BY c.created_at DESC, c.id LIMIT $4::int) x) END",
	    4, p, &items);
	if (rc)
		return api_fail_db(rq, rc);
	if (!items || json_is_null(items)) {
		json_decref(items);
		return api_fail(rq, ERR_DATASET_NOT_FOUND, "no dataset \"%s\" in this tenant",
		                p[1]);
	}
	return api_reply_items(rq, 0, items, NULL);
}
