/*
 * h_dataset_upload.c - POST /v1/tenants/{tenant}/datasets/{dataset}/versions:
 * a new version of a dataset from the request body, taken as it arrives
 * (ROUTE_UPLOAD) and sealed shard by shard under the dataset's key
 * (dataset.h). Nothing is buffered whole.
 *
 *   ?format=tokens  Content-Type application/octet-stream: token shards
 *                   (tokshard.h) laid end to end, each kept as one shard
 *   ?format=text    Content-Type text/plain: raw text, masked line by
 *                   line (mask.h) unless ?mask=off, then one token per
 *                   byte (the trainer's byte-level tokenizer)
 *
 * A restricted dataset takes only masked text, unless a platform admin
 * recorded an exemption. The version is registered, numbered and audited
 * in one transaction after its last shard is synced and in place; a body
 * that is refused or cut off half-way leaves no row and no shard.
 *
 * The version counts against the tenant's max_storage_bytes with its
 * sealed size (tenant_storage_bytes(), migrations/0014_storage_quota.sql):
 * a tenant without room for the smallest version is refused before a
 * byte of the body is read, an upload is cut off as soon as its sealed
 * shards pass what was left when it began, and the registration checks
 * again under a lock on the tenant's quota, against uploads and
 * checkpoints that ended meanwhile (409 storage_quota_exceeded).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "dataset.h"
#include "handlers.h"
#include "hex.h"
#include "keys.h"
#include "log.h"
#include "mask.h"
#include "server.h"
#include "storage.h"
#include "tenant_dirs.h"

typedef struct upload {
	char dataset_id[STORAGE_UUID_LEN + 1];
	char version_id[STORAGE_UUID_LEN + 1];
	char name[DATASET_NAME_MAX + 1];
	bool text, masked, key_rotated, registered;
	dataset_writer *w;
	dataset_shard_parser shards;
	mask_policy *policy;
	masker *m;
	int64_t storage_left; /* what the tenant could still store when the upload began */
	char err[512];
} upload;

static void upload_release(void *ctx)
{
	upload *u = ctx;
	if (!u)
		return;
	if (u->w && !u->registered)
		log_printf(LOG_INFO, "dataset upload of %s not registered: its shards are removed",
		           u->name);
	dataset_writer_free(u->w, u->registered);
	masker_free(u->m);
	mask_policy_free(u->policy);
	free(u);
}

/* Answer a failure of the writer, the parser or the masker (rc < 0). RET rc. */
static int upload_failed(api_req *rq, upload *u, int rc)
{
	if (rc == -ERR_DATASET_NOT_SHARDS || rc == -ERR_DATASET_EMPTY ||
	    rc == -ERR_TEXT_UNMASKABLE || rc == -ERR_STORAGE_QUOTA_EXCEEDED)
		api_fail(rq, rc, "%s", u->err);
	else {
		log_printf(LOG_ERROR, "dataset upload of %s: %s", u->name, u->err);
		api_fail(rq, rc == -ERR_STORAGE_UNSAFE ? rc : ERR_STORAGE_IO,
		         "the version could not be stored");
	}
	return rc;
}

/* The masker's output into the writer; a writer's failure comes back through the masker. */
static int emit_text(void *arg, const void *buf, size_t n)
{
	upload *u = arg;
	return dataset_writer_text(u->w, buf, n, u->err, sizeof(u->err));
}

static int upload_feed(api_req *rq, const char *buf, size_t n)
{
	upload *u = rq->upload.ctx;
	int rc;
	if (!u->text)
		rc = dataset_shards_feed(&u->shards, u->w, buf, n, u->err, sizeof(u->err));
	else if (!u->masked)
		rc = dataset_writer_text(u->w, buf, n, u->err, sizeof(u->err));
	else
		rc = masker_feed(u->m, buf, n, emit_text, u, u->err, sizeof(u->err));
	uint64_t sealed = dataset_writer_sealed_bytes(u->w);
	if (rc == 0)
		rc = tenant_storage_passed(u->storage_left, sealed, u->err, sizeof(u->err));
	return rc ? upload_failed(rq, u, rc) : 0;
}

/* The smallest version on disk: one shard of one token, sealed (docs/storage.md). */
#define VERSION_SEALED_MIN (42 + 2 + 16)

/* Number, register and audit the finished version, in one transaction. */
static int upload_register(api_req *rq, upload *u, const dataset_summary *sum, json_t **out)
{
	char sha[65], shards[16], tokens[24], max_token[16], bytes[24], sealed[24];
	hex_encode(sum->sha256, 32, sha);
	snprintf(shards, sizeof(shards), "%d", sum->shards);
	snprintf(tokens, sizeof(tokens), "%llu", (unsigned long long)sum->tokens);
	snprintf(max_token, sizeof(max_token), "%u", sum->max_token);
	snprintf(bytes, sizeof(bytes), "%llu", rq->upload.received);
	snprintf(sealed, sizeof(sealed), "%llu", (unsigned long long)sum->sealed_bytes);
	json_t *masking = NULL;
	if (u->text && u->masked)
		masking = json_pack("{s:o, s:o}", "policy", mask_policy_json(u->policy), "counts",
		                    masker_counts_json(u->m));
	char *mtext = masking ? json_dumps(masking, JSON_COMPACT) : NULL;
	const char *p[] = {u->version_id,
	                   u->dataset_id,
	                   u->text ? "text" : "tokens",
	                   shards,
	                   tokens,
	                   max_token,
	                   bytes,
	                   sha,
	                   mtext,
	                   u->masked ? "false" : "true",
	                   rq->who.user_id,
	                   sealed};
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	if (rc == 0)
		rc = db_query(rq->db, NULL, "SELECT 1 FROM datasets WHERE id = $1 FOR UPDATE", 1,
		              &p[1]);
	if (rc == 0)
		rc = tenant_storage_room(rq, sum->sealed_bytes, u->err, sizeof(u->err));
	if (rc == 0)
		rc = api_query_json(
		    rq,
		    "WITH v AS (INSERT INTO dataset_versions (id, dataset_id, version, format,"
		    " shards, tokens, max_token, bytes, sha256, masking, unmasked, created_by,"
		    " sealed_bytes)"
		    " SELECT $1, $2, coalesce(max(version), 0) + 1, $3, $4::int, $5::bigint,"
		    " $6::int, $7::bigint, decode($8, 'hex'), $9::jsonb, $10::boolean, $11,"
		    " $12::bigint FROM dataset_versions WHERE dataset_id = $2 RETURNING *)"
		    " SELECT row_to_json(x) FROM (SELECT v.id, v.version, v.format, v.shards,"
		    " v.tokens, v.max_token, v.bytes, encode(v.sha256, 'hex') AS sha256,"
		    " v.masking, v.unmasked, v.sealed_bytes, " CLOCK_SQL_RFC3339(
		        "v.created_at") " AS created_at FROM v) x",
		    12, p, out);
	free(mtext);
	if (rc == 0) {
		char res[128];
		snprintf(res, sizeof(res), "dataset/%s@%lld", u->name,
		         (long long)json_integer_value(json_object_get(*out, "version")));
		json_t *d = json_pack(
		    "{s:s, s:s, s:i, s:I, s:s, s:b, s:b, s:O?}", "version_id", u->version_id,
		    "format", u->text ? "text" : "tokens", "shards", sum->shards, "tokens",
		    (json_int_t)sum->tokens, "sha256", sha, "unmasked", !u->masked, "key_rotated",
		    u->key_rotated, "counts", masking ? json_object_get(masking, "counts") : NULL);
		rc = api_audit(rq, 201, res, d);
		json_decref(d);
	}
	json_decref(masking);
	if (rc == 0)
		rc = db_commit(rq->db);
	return rc;
}

static int upload_finish(api_req *rq)
{
	upload *u = rq->upload.ctx;
	int rc = 0;
	if (!u->text)
		rc = dataset_shards_end(&u->shards, u->err, sizeof(u->err));
	else if (u->masked)
		rc = masker_finish(u->m, emit_text, u, u->err, sizeof(u->err));
	dataset_summary sum;
	if (rc == 0)
		rc = dataset_writer_finish(u->w, &sum, u->err, sizeof(u->err));
	if (rc)
		return upload_failed(rq, u, rc);
	json_t *out = NULL;
	if ((rc = upload_register(rq, u, &sum, &out))) {
		json_decref(out);
		if (rc == -ERR_STORAGE_QUOTA_EXCEEDED) {
			db_rollback(rq->db);
			return api_fail(rq, rc, "%s", u->err);
		}
		return api_fail_db(rq, rc);
	}
	u->registered = true;
	return api_reply(rq, 201, out);
}

/* The query's format and mask, against the Content-Type. RET 0, or answered. */
static int upload_params(api_req *rq, upload *u)
{
	const char *format = api_query(rq, "format"), *mask = api_query(rq, "mask");
	const char *ct = api_header(rq, "Content-Type");
	if (!format || (strcmp(format, "tokens") != 0 && strcmp(format, "text") != 0)) {
		api_fail(rq, ERR_UPLOAD_PARAM_INVALID, "format must be tokens or text");
		return -1;
	}
	u->text = strcmp(format, "text") == 0;
	if (mask && (!u->text || (strcmp(mask, "on") != 0 && strcmp(mask, "off") != 0))) {
		api_fail(rq, ERR_UPLOAD_PARAM_INVALID,
		         "mask is on or off, and only for format=text");
		return -1;
	}
	u->masked = u->text && !(mask && strcmp(mask, "off") == 0);
	const char *want = u->text ? "text/plain" : "application/octet-stream";
	size_t n = strlen(want);
	if (!ct || strncasecmp(ct, want, n) != 0 || (ct[n] != '\0' && ct[n] != ';')) {
		api_fail(rq, ERR_UNSUPPORTED_MEDIA, "format=%s is sent as %s", format, want);
		return -1;
	}
	return 0;
}

/* The dataset's masking policy: the built-in patterns and its own (a JSON array). */
static int upload_policy(upload *u, const char *patterns)
{
	json_t *a = json_loads(patterns, 0, NULL);
	mask_custom c[MASK_CUSTOM_MAX];
	size_t n = 0, i;
	json_t *e;
	json_array_foreach (a, i, e) {
		if (n < MASK_CUSTOM_MAX)
			c[n++] = (mask_custom){json_string_value(json_object_get(e, "name")),
			                       json_string_value(json_object_get(e, "regex"))};
	}
	int rc = mask_policy_new(c, n, &u->policy, u->err, sizeof(u->err));
	if (rc == 0)
		rc = masker_new(u->policy, &u->m);
	json_decref(a);
	return rc;
}

/*
 * Look the dataset up, apply the masking rule, fetch (or make) its key and
 * open the writer. RET 0, or -ERR_* with a message in u->err.
 */
static int upload_open(api_req *rq, upload *u)
{
	const char *p[] = {rq->scope.tenant_id, route_param(&rq->params, "dataset")};
	PGresult *r = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_query(rq->db, &r,
		              "SELECT id, classification, mask_patterns, exempt_reason IS NOT NULL"
		              " FROM datasets WHERE tenant_id = $1 AND name = $2",
		              2, p);
	if (rc == 0 && PQntuples(r) != 1) {
		snprintf(u->err, sizeof(u->err), "no dataset \"%s\" in this tenant", p[1]);
		rc = -ERR_DATASET_NOT_FOUND;
	}
	if (rc == 0) {
		snprintf(u->dataset_id, sizeof(u->dataset_id), "%s", PQgetvalue(r, 0, 0));
		snprintf(u->name, sizeof(u->name), "%s", p[1]);
		bool restricted = strcmp(PQgetvalue(r, 0, 1), "restricted") == 0;
		bool exempt = strcmp(PQgetvalue(r, 0, 3), "t") == 0;
		if (restricted && !u->masked && !exempt) {
			snprintf(u->err, sizeof(u->err),
			         "dataset \"%s\" is restricted: it takes masked text (format=text) "
			         "unless a platform admin records an exemption",
			         u->name);
			rc = -ERR_MASKING_REQUIRED;
		}
	}
	if (rc == 0 && u->masked && upload_policy(u, PQgetvalue(r, 0, 2)) < 0)
		rc = -ERR_INTERNAL;
	PQclear(r);
	if (rc == 0)
		rc = tenant_storage_begin(rq, VERSION_SEALED_MIN, &u->storage_left, u->err,
		                          sizeof(u->err));
	if (rc == 0)
		tenant_dirs_sweep(rq, "datasets", u->dataset_id,
		                  "SELECT id FROM dataset_versions WHERE dataset_id = $1");
	crypt_object_ctx ring = {0};
	int kv;
	if (rc == 0 && (rc = db_begin(rq->db)) == 0 &&
	    (rc = keys_dataset_key(rq->db, &rq->srv->master, rq->scope.tenant_id, u->dataset_id,
	                           &ring, &kv, &u->key_rotated)) == 0)
		rc = db_commit(rq->db);
	/* the shards are the tenant's user's, for its attempts to read */
	tenant_identity id = {0};
	if (rc == 0)
		rc = tenant_dirs_prepare(rq, rq->scope.tenant_id, &id, u->err, sizeof(u->err));
	storage_owners owners = storage_owners_for(id.uid, id.gid);
	if (rc == 0)
		rc = storage_uuid_new(u->version_id);
	if (rc == 0)
		rc = dataset_writer_open(rq->cfg->storage_root, &owners, &ring, u->version_id,
		                         (size_t)rq->cfg->dataset_shard_tokens, &u->w, u->err,
		                         sizeof(u->err));
	crypt_object_ctx_clear(&ring);
	return rc;
}

int h_dataset_version_create(api_req *rq)
{
	if (!rq->srv->has_master)
		return api_fail(rq, ERR_KEYS_UNAVAILABLE,
		                "no master key is configured on this server");
	upload *u = calloc(1, sizeof(*u));
	if (!u)
		return -ERR_INTERNAL;
	rq->upload.ctx = u;
	rq->upload.release = upload_release;
	if (upload_params(rq, u) < 0)
		return 0;
	int rc = upload_open(rq, u);
	if (rc == -ERR_DATASET_NOT_FOUND || rc == -ERR_MASKING_REQUIRED ||
	    rc == -ERR_STORAGE_QUOTA_EXCEEDED)
		return api_fail(rq, rc, "%s", u->err);
	if (rc == -ERR_KEYS_UNAVAILABLE)
		return api_fail(rq, rc, "the tenant's keys were destroyed");
	if (rc == -ERR_STORAGE_IO || rc == -ERR_STORAGE_UNSAFE || rc == -ERR_STORAGE_PATH_INVALID) {
		upload_failed(rq, u, rc);
		return 0;
	}
	if (rc)
		return api_fail_db(rq, rc);
	rq->upload.feed = upload_feed;
	rq->upload.finish = upload_finish;
	rq->upload.limit = (unsigned long long)rq->cfg->dataset_upload_mib << 20;
	return 0;
}
