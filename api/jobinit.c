/*
 * jobinit.c - a job that starts from a checkpoint (jobinit.h): resolved at
 * submission; for each attempt, the source job's data key (a recorded
 * read) and the checkpoint's files as they are stored, still sealed.
 */
#include "jobinit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grants.h"
#include "handlers.h"
#include "jobdata.h"
#include "keys.h"
#include "log.h"
#include "server.h"
#include "storage.h"
#include "tenantfs.h"

int jobinit_resolve(api_req *rq, const jobspec *js, const json_t *spec, job_init *out, verrs *v)
{
	memset(out, 0, sizeof(*out));
	if (!js->training.init_from[0])
		return 0;
	char *model = json_dumps(json_object_get(spec, "model"), JSON_COMPACT);
	if (!model)
		return -ERR_INTERNAL;
	const char *p[] = {js->training.init_from, rq->scope.tenant_id, model};
	PGresult *r;
	int rc =
	    db_query(rq->db, &r,
	             "SELECT c.job_id, c.step, c.classification, j.state IN ('succeeded', 'failed',"
	             " 'cancelled'), j.spec->'model' = $3::jsonb, j.tenant_id = $2,"
	             " (SELECT g.id FROM checkpoint_grants g WHERE g.checkpoint_id = c.id"
	             " AND g.tenant_id = $2 AND " GRANT_IN_FORCE
	             " ORDER BY g.download DESC, g.expires_at DESC LIMIT 1)"
	             " FROM checkpoints c JOIN jobs j ON j.id = c.job_id WHERE c.id = $1",
	             3, p);
	free(model);
	if (rc)
		return rc;
	static const char *const ptr = "/training/init_from";
	bool found =
	    PQntuples(r) == 1 && (strcmp(PQgetvalue(r, 0, 5), "t") == 0 || !PQgetisnull(r, 0, 6));
	if (!found)
		verrs_add(v, ptr, ERR_F_UNKNOWN_CHECKPOINT,
		          "no checkpoint %s of this tenant, nor one granted to it and in force",
		          js->training.init_from);
	else if (strcmp(PQgetvalue(r, 0, 3), "t") != 0)
		verrs_add(
		    v, ptr, ERR_F_INVALID_VALUE,
		    "the checkpoint's job has not ended: its checkpoints may still be replaced "
		    "or pruned");
	else if (strcmp(PQgetvalue(r, 0, 4), "t") != 0)
		verrs_add(v, ptr, ERR_F_INIT_MODEL_MISMATCH,
		          "the checkpoint was trained for another model than this job's");
	else {
		snprintf(out->checkpoint_id, sizeof(out->checkpoint_id), "%s",
		         js->training.init_from);
		snprintf(out->source_job_id, sizeof(out->source_job_id), "%s", PQgetvalue(r, 0, 0));
		snprintf(out->step, sizeof(out->step), "%s", PQgetvalue(r, 0, 1));
		snprintf(out->classification, sizeof(out->classification), "%s",
		         PQgetvalue(r, 0, 2));
		snprintf(out->grant_id, sizeof(out->grant_id), "%s", PQgetvalue(r, 0, 6));
	}
	PQclear(r);
	return 0;
}

void jobinit_insert(api_req *rq, const char *job_id, const job_init *in)
{
	if (!in->checkpoint_id[0])
		return;
	const char *p[] = {job_id,   in->checkpoint_id, in->source_job_id,
	                   in->step, in->grant_id,      in->classification};
	/*
	 * The grant taken is the one in force that lets the most leave (with
	 * download first: jobinit_resolve), so held_for does not depend on
	 * which of two grants the database returns first.
	 * held_for: the source's own holds, and its owner when this tenant
	 * takes it through a grant that does not let it leave (restricted, or
	 * without download): what the job trains inherits both (migration 0013)
	 */
	db_query(rq->db, NULL,
	         "INSERT INTO job_init (job_id, checkpoint_id, source_job_id, step, grant_id,"
	         " classification, held_for) VALUES ($1, $2, $3, $4::int, nullif($5, '')::uuid, $6,"
	         " ARRAY(SELECT DISTINCT h FROM (SELECT unnest(c.held_for) FROM checkpoints c"
	         " WHERE c.id = $2 UNION ALL SELECT sj.tenant_id FROM checkpoints c"
	         " JOIN jobs sj ON sj.id = c.job_id JOIN checkpoint_grants g"
	         " ON g.id = nullif($5, '')::uuid WHERE c.id = $2"
	         " AND (c.classification = 'restricted' OR NOT g.download)) x (h)"
	         " WHERE h <> (SELECT tenant_id FROM jobs WHERE id = $1) ORDER BY h))",
	         6, p);
}

/* The checkpoint the attempt's job starts from, where it is kept. */
typedef struct init_source {
	char checkpoint_id[37], tenant_id[37], job_id[37], tenant_name[64];
	int step;
} init_source;

/*
 * The scope's job's checkpoint to start from, if the job's tenant may
 * still read it: its own, or under a grant in force now. file: one of its
 * files to find too, or NULL. RET 0, -ERR_CHECKPOINT_NOT_FOUND (no such
 * checkpoint kept, or no such file), -ERR_GRANT_NOT_IN_FORCE, or -ERR_*.
 */
static int source_find(api_req *rq, const char *file, init_source *out)
{
	const char *p[] = {rq->scope.job_id, file ? file : ""};
	PGresult *r;
	int rc = db_query(
	    rq->db, &r,
	    "SELECT c.id, sj.tenant_id, c.job_id, c.step, ot.name, sj.tenant_id = j.tenant_id"
	    " OR EXISTS (SELECT 1 FROM checkpoint_grants g WHERE g.checkpoint_id = c.id"
	    " AND g.tenant_id = j.tenant_id AND " GRANT_IN_FORCE "),"
	    " $2 = '' OR $2 = '" STORAGE_MANIFEST_NAME "' OR EXISTS (SELECT 1 FROM"
	    " jsonb_array_elements(c.shards) s WHERE s->>'name' = $2)"
	    " FROM job_init ji JOIN jobs j ON j.id = ji.job_id"
	    " JOIN checkpoints c ON c.id = ji.checkpoint_id JOIN jobs sj ON sj.id = c.job_id"
	    " JOIN tenants ot ON ot.id = sj.tenant_id WHERE ji.job_id = $1",
	    2, p);
	if (rc == 0 && (PQntuples(r) != 1 || strcmp(PQgetvalue(r, 0, 6), "t") != 0))
		rc = -ERR_CHECKPOINT_NOT_FOUND;
	if (rc == 0 && strcmp(PQgetvalue(r, 0, 5), "t") != 0)
		rc = -ERR_GRANT_NOT_IN_FORCE;
	if (rc == 0) {
		snprintf(out->checkpoint_id, sizeof(out->checkpoint_id), "%s", PQgetvalue(r, 0, 0));
		snprintf(out->tenant_id, sizeof(out->tenant_id), "%s", PQgetvalue(r, 0, 1));
		snprintf(out->job_id, sizeof(out->job_id), "%s", PQgetvalue(r, 0, 2));
		out->step = atoi(PQgetvalue(r, 0, 3));
		snprintf(out->tenant_name, sizeof(out->tenant_name), "%s", PQgetvalue(r, 0, 4));
	}
	PQclear(r);
	return rc;
}

static int source_failed(api_req *rq, int rc)
{
	if (rc == -ERR_CHECKPOINT_NOT_FOUND)
		return api_fail(
		    rq, rc,
		    "the job starts from no checkpoint that is still kept, or it has no "
		    "such file");
	if (rc == -ERR_GRANT_NOT_IN_FORCE)
		return api_fail(rq, rc,
		                "the checkpoint is another tenant's, and no grant to this job's "
		                "tenant is in force: it was revoked or has expired");
	if (rc == -ERR_KEYS_UNAVAILABLE)
		return api_fail(rq, rc, "the checkpoint's keys were destroyed");
	if (rc == -ERR_KEY_UNWRAP_FAILED)
		return api_fail(rq, rc,
		                "a stored key did not unwrap: wrong master key, or altered rows");
	return api_fail_db(rq, rc);
}

/*
 * POST /internal/v1/attempts/{attempt}/init/key: the data key of the job
 * the checkpoint to start from belongs to. Each answer is a recorded read
 * (checkpoint.read) that names the owner, whose data-access report lists it.
 */
int h_attempt_init_key(api_req *rq)
{
	if (!rq->srv->has_master)
		return api_fail(rq, ERR_KEYS_UNAVAILABLE,
		                "no master key is configured on this server");
	init_source src;
	crypt_object_ctx ring = {0};
	int kv = 0;
	int rc = api_db(rq);
	if (rc == 0 && (rc = db_begin(rq->db)) == 0 && (rc = source_find(rq, NULL, &src)) == 0)
		rc = keys_job_data_key_existing(rq->db, &rq->srv->master, src.tenant_id, src.job_id,
		                                &ring, &kv);
	if (rc)
		return source_failed(rq, rc);
	char res[64];
	snprintf(res, sizeof(res), "checkpoint/%s", src.checkpoint_id);
	rc = api_audit_commit(rq, 0, 200, res,
	                      json_pack("{s:i, s:s, s:s, s:s, s:i, s:s, s:s}", "tenant_key_version",
	                                kv, "attempt_id", rq->scope.attempt_id, "job_id",
	                                rq->scope.job_id, "source_job_id", src.job_id, "step",
	                                src.step, "checkpoint_tenant_id", src.tenant_id,
	                                "checkpoint_tenant", src.tenant_name));
	json_t *out = rc ? NULL
	                 : json_pack("{s:s, s:s, s:s, s:i, s:i}", "checkpoint_id",
	                             src.checkpoint_id, "tenant_id", src.tenant_id, "job_id",
	                             src.job_id, "step", src.step, "tenant_key_version", kv);
	if (rc == 0 && (out == NULL || jobdata_keys_set(out, &ring) != 0))
		rc = -ERR_INTERNAL;
	crypt_object_ctx_clear(&ring);
	if (rc) {
		json_decref(out);
		return api_fail_db(rq, rc);
	}
	return api_reply(rq, 200, out);
}

typedef struct sealed_file {
	int fd;
} sealed_file;

static ssize_t sealed_read(void *arg, char *buf, size_t max)
{
	sealed_file *f = arg;
	ssize_t n;
	do
		n = read(f->fd, buf, max);
	while (n < 0 && errno == EINTR);
	return n < 0 ? API_STREAM_ABORT : n == 0 ? API_STREAM_END : n;
}

static void sealed_free(void *arg)
{
	sealed_file *f = arg;
	if (f && f->fd >= 0)
		close(f->fd);
	free(f);
}

/*
 * GET /internal/v1/attempts/{attempt}/init/files/{file}: one file of the
 * checkpoint to start from, as stored: sealed for its own job, which only
 * the key of .../init/key opens (the trainer checks every seal). The
 * attempt never reads another tenant's storage itself.
 */
int h_attempt_init_file(api_req *rq)
{
	const char *name = route_param(&rq->params, "file");
	if (!name || (strcmp(name, STORAGE_MANIFEST_NAME) != 0 && !storage_shard_name_valid(name)))
		return source_failed(rq, -ERR_CHECKPOINT_NOT_FOUND);
	init_source src;
	int rc = api_db(rq);
	if (rc == 0)
		rc = source_find(rq, name, &src);
	if (rc)
		return source_failed(rq, rc);
	char obj[STORAGE_NAME_MAX + 1], rel[STORAGE_NAME_MAX + 1], err[512];
	snprintf(obj, sizeof(obj), "step_%08d/%s", src.step, name);
	if (storage_object_rel(src.job_id, STORAGE_CHECKPOINTS, obj, rel, sizeof(rel)) < 0)
		return source_failed(rq, -ERR_CHECKPOINT_NOT_FOUND);
	sealed_file *f = calloc(1, sizeof(*f));
	if (!f)
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	f->fd = tenantfs_open_file(rq->cfg->storage_root, src.tenant_id, rel, err, sizeof(err));
	struct stat st;
	if (f->fd < 0 || fstat(f->fd, &st) < 0) {
		int e = errno;
		rc = f->fd < 0 ? f->fd : -ERR_STORAGE_IO;
		sealed_free(f);
		return api_fail_storage(rq, rc, e, ERR_CHECKPOINT_NOT_FOUND, "checkpoint", name,
		                        err);
	}
	rq->status = 200;
	rq->stream = (api_stream){.read = sealed_read,
	                          .free = sealed_free,
	                          .ctx = f,
	                          .content_type = "application/octet-stream",
	                          .size = (long long)st.st_size};
	return 0;
}
