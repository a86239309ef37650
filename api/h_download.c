/*
 * h_download.c - GET /v1/checkpoints/{checkpoint}/download?file=NAME: one
 * decrypted file of a registered checkpoint, streamed.
 *
 * NAME is "manifest.json" (the default) or one of the shard names the
 * checkpoint row lists; the file is "step_%08d/NAME" in the job's
 * checkpoint area, the name the encrypted checkpoint store binds into
 * each chunk's AAD (lib/ckpt/ckpt_store.h, ckpt.h's layout). Only authenticated
 * bytes go out: the first chunk is verified before the answer starts, so
 * a file that fails at once answers 500 data_auth_failed; a later chunk
 * that fails closes the connection mid-answer (sent chunked, the client
 * sees an incomplete body). Memory is one chunk of the object reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grants.h"
#include "handlers.h"
#include "jobdata.h"
#include "log.h"
#include "server.h"
#include "storage.h"
#include "tenantfs.h"

#define MANIFEST_NAME STORAGE_MANIFEST_NAME
#define FIRST_BYTES   4096 /* read before answering: verifies the first chunk */

typedef struct download {
	int fd;
	crypt_object_reader *r;
	char first[FIRST_BYTES];
	size_t first_len, first_off;
	char request_id[REQUEST_ID_MAX + 1];
} download;

static void download_free(void *arg)
{
	download *d = arg;
	if (!d)
		return;
	crypt_object_reader_free(d->r);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

static ssize_t download_read(void *arg, char *buf, size_t max)
{
	download *d = arg;
	if (d->first_off < d->first_len) {
		size_t n = d->first_len - d->first_off;
		if (n > max)
			n = max;
		memcpy(buf, d->first + d->first_off, n);
		d->first_off += n;
		return (ssize_t)n;
	}
	size_t got = 0;
	char err[512];
	int rc = crypt_object_reader_read(d->r, buf, max, &got, err, sizeof(err));
	if (rc < 0) {
		log_event(LOG_ERROR, "download aborted",
		          json_pack("{s:s, s:s}", "request_id", d->request_id, "reason", err));
		return API_STREAM_ABORT;
	}
	return got > 0 ? (ssize_t)got : API_STREAM_END;
}

/*
 * The checkpoint's step, when name is one of its files. OUT: *step.
 * RET 1 found, 0 no such file, or an error answered (< 0).
 */
static int checkpoint_file(api_req *rq, const char *name, int *step)
{
	const char *p[] = {rq->scope.checkpoint_id, name};
	PGresult *r;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_query(rq->db, &r,
		              "SELECT c.step, c.classification, " CHECKPOINT_HELD
		              " FROM checkpoints c JOIN jobs j ON j.id = c.job_id WHERE c.id = $1"
		              " AND ($2 = '" MANIFEST_NAME "' OR EXISTS (SELECT 1 FROM"
		              " jsonb_array_elements(c.shards) s WHERE s->>'name' = $2))",
		              2, p);
	/* another tenant's terms travel with what was trained from its data */
	if (rc == 0 && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 2), "t") == 0 &&
	    rq->who.platform != ROLE_ADMIN) {
		PQclear(r);
		api_fail(rq, ERR_UPSTREAM_TERMS,
		         "the checkpoint was trained from another tenant's checkpoint or dataset "
		         "whose grant does not let it leave: it cannot be downloaded");
		return -1;
	}
	/* weights trained on restricted data leave only by the tenant's owner or an admin */
	if (rc == 0 && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "restricted") == 0 &&
	    rq->scope.tenant_role != ROLE_OWNER && rq->who.platform != ROLE_ADMIN) {
		PQclear(r);
		api_fail(
		    rq, ERR_FORBIDDEN,
		    "the checkpoint was trained on restricted data: only the tenant's owner or "
		    "a platform admin may download it");
		return -1;
	}
	if (rc) {
		PQclear(r);
		api_fail_db(rq, rc);
		return -1;
	}
	int found = PQntuples(r) == 1;
	if (found)
		*step = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return found;
}

/* Open the file and verify its first chunk. RET 0, or an error answered (< 0). */
static int download_open(api_req *rq, download *d, const crypt_object_ctx *ctx,
                         const char *tenant_id, const char *job_id, const char *name, int step)
{
	char rel[STORAGE_NAME_MAX + 1], path[STORAGE_NAME_MAX + 1], err[512];
	int k = snprintf(rel, sizeof(rel), "step_%08d/%s", step, name);
	if (k < 0 || (size_t)k >= sizeof(rel) ||
	    storage_object_rel(job_id, STORAGE_CHECKPOINTS, rel, path, sizeof(path)) < 0)
		return api_fail(rq, ERR_CHECKPOINT_NOT_FOUND, "the checkpoint has no file \"%s\"",
		                name),
		       -1;
	d->fd = tenantfs_open_file(rq->cfg->storage_root, tenant_id, path, err, sizeof(err));
	if (d->fd < 0)
		return api_fail_storage(rq, d->fd, errno, ERR_CHECKPOINT_NOT_FOUND, "checkpoint",
		                        name, err),
		       -1;
	int rc =
	    crypt_object_reader_open(ctx, rel, crypt_fd_source, &d->fd, &d->r, err, sizeof(err));
	if (rc == 0)
		rc = crypt_object_reader_read(d->r, d->first, sizeof(d->first), &d->first_len, err,
		                              sizeof(err));
	if (rc == 0)
		return 0;
	log_event(LOG_ERROR, "checkpoint file refused",
	          json_pack("{s:s, s:s}", "request_id", rq->request_id, "reason", err));
	if (rc == -ERR_DATA_AUTH_FAILED)
		return api_fail(rq, ERR_DATA_AUTH_FAILED,
		                "the checkpoint's file \"%s\" failed authentication", name),
		       -1;
	return api_fail(rq, ERR_STORAGE_IO, "the checkpoint's file could not be read"), -1;
}

/* The name asked for: ?file=, the manifest by default. NULL when it names no file. */
static const char *file_asked(api_req *rq)
{
	const char *name = api_query(rq, "file");
	if (!name)
		name = MANIFEST_NAME;
	/* the manifest or a shard name: anything else names no file of any checkpoint */
	return strcmp(name, MANIFEST_NAME) == 0 || storage_shard_name_valid(name) ? name : NULL;
}

static int no_such_file(api_req *rq)
{
	return api_fail(rq, ERR_CHECKPOINT_NOT_FOUND,
	                "the checkpoint has no file of that name: ask for " MANIFEST_NAME
	                " or one of its shards");
}

/*
 * Stream file name of the checkpoint (step) of tenant_id's job_id,
 * decrypted, once its read is recorded with detail (taken over). RET 0.
 */
static int send_file(api_req *rq, const char *tenant_id, const char *job_id, const char *name,
                     int step, json_t *detail)
{
	crypt_object_ctx ctx;
	int version = 0;
	int rc = jobdata_ctx(rq->srv, rq->db, tenant_id, job_id, &ctx, &version);
	if (rc) {
		json_decref(detail);
		return jobdata_fail(rq, rc);
	}
	download *d = calloc(1, sizeof(*d));
	if (!d) {
		json_decref(detail);
		crypt_object_ctx_clear(&ctx);
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	}
	d->fd = -1;
	snprintf(d->request_id, sizeof(d->request_id), "%s", rq->request_id);
	rc = download_open(rq, d, &ctx, tenant_id, job_id, name, step);
	crypt_object_ctx_clear(&ctx); /* the reader keeps its derived key only */
	char res[64];
	snprintf(res, sizeof(res), "checkpoint/%s", rq->scope.checkpoint_id);
	json_object_set_new(detail, "file", json_string(name));
	json_object_set_new(detail, "step", json_integer(step));
	if (rc < 0) {
		json_decref(detail);
		download_free(d);
		return 0;
	}
	if (jobdata_audit(rq, res, detail, version) < 0) {
		download_free(d);
		return 0;
	}
	rq->status = 200;
	rq->stream = (api_stream){
	    .read = download_read,
	    .free = download_free,
	    .ctx = d,
	    .content_type =
	        strcmp(name, MANIFEST_NAME) == 0 ? "application/json" : "application/octet-stream",
	    .size = API_STREAM_SIZE_UNKNOWN,
	};
	return 0;
}

int h_checkpoint_download(api_req *rq)
{
	const char *name = file_asked(rq);
	int step = 0;
	int found = name ? checkpoint_file(rq, name, &step) : 0;
	if (found < 0)
		return 0;
	if (!found)
		return no_such_file(rq);
	return send_file(rq, rq->scope.tenant_id, rq->scope.job_id, name, step, json_object());
}

/*
 * GET /v1/tenants/{tenant}/shared-checkpoints/{checkpoint}/download: a
 * checkpoint another tenant granted this one with download, while the
 * grant is in force. Never one trained on restricted data. The record
 * names the owner (checkpoint_tenant_id), whose data-access report lists it.
 */
int h_shared_checkpoint_download(api_req *rq)
{
	const char *ckpt = route_param(&rq->params, "checkpoint"), *name = file_asked(rq);
	if (!jsonx_is_uuid(ckpt))
		return api_fail(rq, ERR_CHECKPOINT_NOT_FOUND,
		                "no checkpoint granted to this tenant");
	snprintf(rq->scope.checkpoint_id, sizeof(rq->scope.checkpoint_id), "%s", ckpt);
	const char *p[] = {ckpt, rq->scope.tenant_id, name ? name : ""};
	PGresult *r = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_query(
		    rq->db, &r,
		    "SELECT j.tenant_id, c.job_id, c.step, EXISTS (SELECT 1 FROM"
		    " jsonb_array_elements(c.shards) s WHERE s->>'name' = $3), " CHECKPOINT_HELD
		    " FROM checkpoints c JOIN jobs j ON j.id = c.job_id WHERE c.id = $1"
		    " AND c.classification <> 'restricted' AND EXISTS (SELECT 1 FROM"
		    " checkpoint_grants g WHERE g.checkpoint_id = c.id AND g.tenant_id = $2"
		    " AND g.download AND " GRANT_IN_FORCE ")",
		    3, p);
	if (rc) {
		PQclear(r);
		return api_fail_db(rq, rc);
	}
	if (PQntuples(r) != 1) {
		PQclear(r);
		return api_fail(rq, ERR_CHECKPOINT_NOT_FOUND,
		                "no checkpoint of that id is granted to this tenant for download");
	}
	if (strcmp(PQgetvalue(r, 0, 4), "t") == 0) {
		PQclear(r);
		return api_fail(
		    rq, ERR_UPSTREAM_TERMS,
		    "the checkpoint was trained from a third tenant's checkpoint or "
		    "dataset whose grant does not let it leave: it cannot be downloaded");
	}
	char tenant[37], job[37];
	snprintf(tenant, sizeof(tenant), "%s", PQgetvalue(r, 0, 0));
	snprintf(job, sizeof(job), "%s", PQgetvalue(r, 0, 1));
	int step = atoi(PQgetvalue(r, 0, 2));
	bool has =
	    name && (strcmp(name, MANIFEST_NAME) == 0 || strcmp(PQgetvalue(r, 0, 3), "t") == 0);
	PQclear(r);
	if (!has)
		return no_such_file(rq);
	return send_file(rq, tenant, job, name, step,
	                 json_pack("{s:s, s:s}", "job_id", job, "checkpoint_tenant_id", tenant));
}
