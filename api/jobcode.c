/*
 * jobcode.c - the code version a command job runs (jobcode.h), and the
 * attempt's route to its key.
 */
#include "jobcode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "grants.h"
#include "handlers.h"
#include "jobdata.h"
#include "jobspec_command.h"
#include "keys.h"
#include "server.h"
#include "tenant_dirs.h"

/*
 * Whether the version holds what t runs: a regular file (or a hard link to
 * one), executable by its owner when it is run as itself; a module as
 * PATH.py or PATH/__main__.py. RET 1 yes, 0 no, or -ERR_*.
 */
static int target_present(api_req *rq, const char *version_id, const jobspec_target *t)
{
	char a[JOBSPEC_TARGET_MAX + 16], b[JOBSPEC_TARGET_MAX + 16];
	if (t->runs == JOBSPEC_RUNS_MODULE) {
		snprintf(a, sizeof(a), "%s.py", t->path);
		snprintf(b, sizeof(b), "%s/__main__.py", t->path);
	} else {
		snprintf(a, sizeof(a), "%s", t->path);
		snprintf(b, sizeof(b), "%s", t->path);
	}
	const char *p[] = {version_id, a, b, t->runs == JOBSPEC_RUNS_FILE ? "t" : "f"};
	PGresult *r;
	int rc = db_query(rq->db, &r,
	                  "SELECT count(*) FROM code_files f LEFT JOIN code_files l"
	                  " ON f.kind = 'hardlink' AND l.version_id = f.version_id"
	                  " AND l.path = f.target"
	                  " WHERE f.version_id = $1 AND f.path IN ($2, $3)"
	                  " AND coalesce(l.kind, f.kind) = 'file'"
	                  " AND (NOT $4::boolean OR coalesce(l.mode, f.mode) & 64 <> 0)",
	                  4, p);
	if (rc)
		return rc;
	int n = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return n > 0;
}

int jobcode_resolve(api_req *rq, const jobspec *js, json_t *spec, char version_id[37], verrs *v)
{
	version_id[0] = '\0';
	if (js->kind != JOBSPEC_KIND_COMMAND)
		return 0;
	char owner[DATASET_TENANT_MAX + 1], name[DATASET_NAME_MAX + 1], why[160], ver[16];
	int version = 0;
	if (dataset_ref_parse(js->command.code, owner, name, &version, why, sizeof(why)) < 0)
		return 0; /* jobspec_parse() said so */
	snprintf(ver, sizeof(ver), "%d", version);
	/* the tenant's own bundle, or another tenant's under a grant in force */
	const char *p[] = {rq->scope.tenant_id, owner, name, ver};
	PGresult *r;
	int rc = db_query(rq->db, &r,
	                  "SELECT v.id, v.version FROM code_bundles b JOIN code_versions v"
	                  " ON v.bundle_id = b.id WHERE b.tenant_id = CASE WHEN $2 = '' THEN $1"
	                  " ELSE (SELECT id FROM tenants WHERE name = $2) END AND b.name = $3"
	                  " AND ($4::int = 0 OR v.version = $4::int)"
	                  " AND (b.tenant_id = $1 OR EXISTS (SELECT 1 FROM code_grants g"
	                  " WHERE g.bundle_id = b.id AND g.tenant_id = $1 AND " GRANT_IN_FORCE "))"
	                  " ORDER BY v.version DESC LIMIT 1",
	                  4, p);
	if (rc)
		return rc;
	if (PQntuples(r) != 1) {
		PQclear(r);
		verrs_add(v, "/code", ERR_F_UNKNOWN_CODE,
		          "no code bundle \"%s\" for this tenant (its own, or granted to it and in "
		          "force), or it has no such version",
		          js->command.code);
		return 0;
	}
	char id[37], pinned[DATASET_REF_MAX + 1];
	snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
	snprintf(pinned, sizeof(pinned), "%s%s%s@%s", owner, owner[0] ? "/" : "", name,
	         PQgetvalue(r, 0, 1));
	PQclear(r);
	jobspec_target t;
	int at;
	if (jobspec_command_target(&js->command, &t, &at, why, sizeof(why)) < 0)
		return 0; /* jobspec_parse() said so */
	int there = target_present(rq, id, &t);
	if (there < 0)
		return there;
	if (!there) {
		char ptr[32];
		snprintf(ptr, sizeof(ptr), "/command/%d", t.arg);
		verrs_add(v, ptr, ERR_F_COMMAND_NOT_IN_BUNDLE,
		          t.runs == JOBSPEC_RUNS_MODULE ? "%s holds no module %.200s (as .py or "
		                                          "/__main__.py)"
		          : t.runs == JOBSPEC_RUNS_FILE ? "%s holds no executable file %.200s"
		                                        : "%s holds no file %.200s",
		          pinned, jobspec_command_arg(&js->command, t.arg));
		return 0;
	}
	json_object_set_new(spec, "code", json_string(pinned));
	memcpy(version_id, id, 37);
	return 0;
}

void jobcode_insert(api_req *rq, const char *job_id, const char *version_id)
{
	if (!version_id[0])
		return;
	const char *p[] = {job_id, version_id};
	db_query(rq->db, NULL, "INSERT INTO job_code (job_id, version_id) VALUES ($1, $2)", 2, p);
}

/*
 * POST /internal/v1/attempts/{attempt}/code/key: the data key of the code
 * bundle the attempt's job was pinned to, with what the worker needs to
 * unseal and check it. Each answer is a recorded read (code.read).
 */
int h_attempt_code_key(api_req *rq)
{
	if (!rq->srv->has_master)
		return api_fail(rq, ERR_KEYS_UNAVAILABLE,
		                "no master key is configured on this server");
	const char *p[] = {rq->scope.job_id};
	PGresult *r = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	if (rc == 0)
		rc = db_query(rq->db, &r,
		              "SELECT b.id, b.tenant_id, b.name, v.version, v.id,"
		              " encode(v.sha256, 'hex'), v.files, v.bytes, b.classification,"
		              " b.tenant_id = j.tenant_id OR EXISTS (SELECT 1 FROM code_grants g"
		              " WHERE g.bundle_id = b.id AND g.tenant_id = j.tenant_id"
		              " AND " GRANT_IN_FORCE "), ot.name"
		              " FROM job_code jc JOIN jobs j ON j.id = jc.job_id"
		              " JOIN code_versions v ON v.id = jc.version_id"
		              " JOIN code_bundles b ON b.id = v.bundle_id"
		              " JOIN tenants ot ON ot.id = b.tenant_id WHERE jc.job_id = $1",
		              1, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_CODE_NOT_FOUND;
	/* another tenant's bundle: only under a grant in force when the attempt asks */
	if (rc == 0 && strcmp(PQgetvalue(r, 0, 9), "t") != 0)
		rc = -ERR_GRANT_NOT_IN_FORCE;
	crypt_object_ctx ring = {0};
	int kv = 0;
	json_t *out = NULL;
	if (rc == 0) {
		const char *bundle = PQgetvalue(r, 0, 0), *tenant = PQgetvalue(r, 0, 1);
		rc = keys_code_key_existing(rq->db, &rq->srv->master, tenant, bundle, &ring, &kv);
		char res[160];
		snprintf(res, sizeof(res), "code/%s@%s", PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3));
		json_t *d =
		    json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s}", "tenant_key_version", kv,
		              "attempt_id", rq->scope.attempt_id, "job_id", rq->scope.job_id,
		              "version_id", PQgetvalue(r, 0, 4), "sha256", PQgetvalue(r, 0, 5),
		              "code_tenant_id", tenant, "code_tenant", PQgetvalue(r, 0, 10));
		/* another tenant's version: copied to the grantee's tree for its attempts */
		if (rc == 0 && strcmp(tenant, rq->scope.tenant_id) != 0)
			rc = tenant_dirs_stage_code(rq, tenant, bundle, PQgetvalue(r, 0, 4));
		if (rc == 0)
			rc = api_audit(rq, 200, res, d);
		json_decref(d);
		if (rc == 0)
			rc = db_commit(rq->db);
		if (rc == 0) {
			out = json_pack(
			    "{s:s, s:s, s:s, s:i, s:s, s:s, s:i, s:I, s:s, s:i}", "bundle_id",
			    bundle, "tenant_id", tenant, "name", PQgetvalue(r, 0, 2), "version",
			    atoi(PQgetvalue(r, 0, 3)), "version_id", PQgetvalue(r, 0, 4), "sha256",
			    PQgetvalue(r, 0, 5), "files", atoi(PQgetvalue(r, 0, 6)), "bytes",
			    (json_int_t)strtoll(PQgetvalue(r, 0, 7), NULL, 10), "classification",
			    PQgetvalue(r, 0, 8), "tenant_key_version", kv);
			if (out == NULL || jobdata_keys_set(out, &ring) != 0) {
				json_decref(out);
				out = NULL;
				rc = -ERR_INTERNAL;
			}
		}
		crypt_object_ctx_clear(&ring);
	}
	PQclear(r);
	if (rc == -ERR_CODE_NOT_FOUND)
		return api_fail(rq, rc, "the attempt's job runs no code bundle");
	if (rc == -ERR_KEYS_UNAVAILABLE)
		return api_fail(rq, rc, "the code bundle's keys were destroyed");
	if (rc == -ERR_GRANT_NOT_IN_FORCE)
		return api_fail(
		    rq, rc,
		    "the code bundle is another tenant's, and no grant to this job's tenant is in "
		    "force: it was revoked or has expired");
	if (rc)
		return api_fail_db(rq, rc);
	return api_reply(rq, 200, out);
}
