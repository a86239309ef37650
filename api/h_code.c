/*
 * h_code.c - the code bundle registry (docs/own-code.md): a tenant's
 * bundles of training code and their versions.
 *
 *   POST /v1/tenants/{tenant}/code                  register a bundle
 *   GET  /v1/tenants/{tenant}/code[/{code}]         list, or one with its versions
 *   POST /v1/tenants/{tenant}/code/{code}/versions  a version: the request
 *        body is the tar archive (Content-Type application/x-tar, or
 *        application/gzip for a compressed one), taken as it arrives
 *        (ROUTE_UPLOAD) and sealed under the bundle's key (codestore.h)
 *
 * A version is read back through its seal and checked member by member
 * (bundle.h) before it is put in place, then registered, numbered and
 * audited in one transaction; an archive that is refused, cut off or
 * past the tenant's storage quota leaves no row and no file. The quota is
 * the datasets' (tenant_storage_left): checked before the body is read,
 * as it arrives, and again under a lock at the registration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "codestore.h"
#include "dataset.h"
#include "handlers.h"
#include "hex.h"
#include "keys.h"
#include "log.h"
#include "server.h"
#include "tenant_dirs.h"

#define BUNDLE_COLS                                                                                \
	"b.id, b.name, b.description, b.classification, " CLOCK_SQL_RFC3339(                       \
	    "b.created_at") " AS created_at,"                                                      \
	                    " (SELECT max(version) FROM code_versions WHERE bundle_id = b.id)"     \
	                    " AS latest_version"
#define VERSION_COLS                                                                               \
	"v.id, v.version, v.files, v.dirs, v.symlinks, v.hardlinks, v.bytes, v.archive_bytes,"     \
	" v.sealed_bytes, encode(v.sha256, 'hex') AS sha256, " CLOCK_SQL_RFC3339(                  \
	    "v.created_at") " AS created_at"

int h_code_create(api_req *rq)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"name", "description", "classification", NULL};
	jsonx_only_fields(in, "", fields, &v);
	const char *name = NULL, *desc = "", *cls = NULL;
	/* a bundle's name follows a dataset's rule */
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
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	json_t *out = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	const char *p[] = {rq->scope.tenant_id, name, desc, cls, rq->who.user_id};
	if (rc == 0)
		rc = api_query_json(
		    rq,
		    "WITH b AS (INSERT INTO code_bundles (tenant_id, name, description,"
		    " classification, created_by) VALUES ($1, $2, $3, $4, $5)"
		    " RETURNING *)"
		    " SELECT row_to_json(x) FROM (SELECT " BUNDLE_COLS " FROM b) x",
		    5, p, &out);
	char res[128];
	snprintf(res, sizeof(res), "code/%s", name);
	rc = api_audit_commit(rq, rc, 201, res, json_pack("{s:s}", "classification", cls));
	json_decref(in);
	if (rc) {
		json_decref(out);
		if (rc == -ERR_CONFLICT)
			return api_fail(rq, ERR_CODE_EXISTS,
			                "the tenant already has a code bundle of that name");
		return api_fail_db(rq, rc);
	}
	return api_reply(rq, 201, out);
}

int h_code_list(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id};
	json_t *items;
	int rc =
	    api_query_json(rq,
	                   "SELECT coalesce(json_agg(x ORDER BY x.name), '[]') FROM"
	                   " (SELECT " BUNDLE_COLS " FROM code_bundles b WHERE b.tenant_id = $1) x",
	                   1, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}

int h_code_get(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id, route_param(&rq->params, "code")};
	return api_reply_row(rq,
	                     "SELECT row_to_json(x) FROM (SELECT " BUNDLE_COLS ","
	                     " (SELECT coalesce(json_agg(y ORDER BY y.version), '[]') FROM"
	                     " (SELECT " VERSION_COLS " FROM code_versions v"
	                     " WHERE v.bundle_id = b.id) y) AS versions"
	                     " FROM code_bundles b WHERE b.tenant_id = $1 AND b.name = $2) x",
	                     2, p, ERR_CODE_NOT_FOUND);
}

/*
 * GET .../code/{code}/versions/{version}/files[?cursor=&limit=]: a
 * version's members in path order, a page at a time (the cursor is the
 * last path, hex).
 */
int h_code_files(api_req *rq)
{
	const char *ver = route_param(&rq->params, "version"), *lim = api_query(rq, "limit");
	const char *cursor = api_query(rq, "cursor");
	char *end, after[2 * 1024 + 1] = "", limit[16];
	long n = 50, v = strtol(ver, &end, 10);
	if (*end || v < 1 || v > 2147483647L)
		return api_fail(rq, ERR_BAD_REQUEST, "the version is a number from 1");
	if (lim) {
		n = strtol(lim, &end, 10);
		if (*end || n < 1 || n > rq->cfg->page_max)
			return api_fail(rq, ERR_BAD_REQUEST, "limit must be 1 to %d",
			                rq->cfg->page_max);
	}
	if (cursor) {
		size_t len = strlen(cursor);
		if (len == 0 || len > 2 * 1024 || len % 2 ||
		    !hex_decode(cursor, len, (unsigned char *)after, len / 2))
			return api_fail(rq, ERR_BAD_REQUEST, "the cursor is not valid");
		after[len / 2] = '\0';
	}
	snprintf(limit, sizeof(limit), "%ld", n + 1);
	const char *p[] = {rq->scope.tenant_id, route_param(&rq->params, "code"), ver,
	                   cursor ? after : NULL, limit};
	PGresult *r = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_query(
		    rq->db, &r,
		    "SELECT v.id FROM code_versions v JOIN code_bundles b ON b.id = v.bundle_id"
		    " WHERE b.tenant_id = $1 AND b.name = $2 AND v.version = $3::int",
		    3, p);
	if (rc == 0 && PQntuples(r) != 1) {
		PQclear(r);
		return api_fail(rq, ERR_CODE_NOT_FOUND, "no version %s of code bundle \"%s\"", ver,
		                p[1]);
	}
	char vid[STORAGE_UUID_LEN + 1] = "";
	if (rc == 0)
		snprintf(vid, sizeof(vid), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	const char *q[] = {vid, p[3], limit};
	json_t *items = NULL;
	if (rc == 0)
		rc = api_query_json(
		    rq,
		    "SELECT coalesce(json_agg(x ORDER BY x.path COLLATE \"C\"), '[]')"
		    " FROM (SELECT path, kind, size, mode, target FROM code_files"
		    " WHERE version_id = $1 AND ($2::text IS NULL OR"
		    " path COLLATE \"C\" > $2::text COLLATE \"C\")"
		    " ORDER BY path COLLATE \"C\" LIMIT $3::int) x",
		    3, q, &items);
	if (rc)
		return api_fail_db(rq, rc);
	json_t *next = NULL;
	if (json_array_size(items) > (size_t)n) {
		json_array_remove(items, (size_t)n);
		const char *last = json_string_value(
		    json_object_get(json_array_get(items, (size_t)n - 1), "path"));
		char hex[2 * 1024 + 1];
		hex_encode((const unsigned char *)last, strlen(last), hex);
		next = json_string(hex);
	}
	return api_reply_items(rq, 0, items, next);
}

/* ---- a version, uploaded ------------------------------------------------ */

typedef struct upload {
	char bundle_id[STORAGE_UUID_LEN + 1];
	char version_id[STORAGE_UUID_LEN + 1];
	char name[DATASET_NAME_MAX + 1];
	bool key_rotated, registered;
	code_writer *w;
	json_t *members;      /* the check's members, for code_files */
	int64_t storage_left; /* what the tenant could still store when the upload began */
	char err[512];
} upload;

static void upload_release(void *ctx)
{
	upload *u = ctx;
	if (!u)
		return;
	code_writer_free(u->w, u->registered);
	json_decref(u->members);
	free(u);
}

/* Answer a failure of the writer or the check (rc < 0). RET rc. */
static int upload_failed(api_req *rq, upload *u, int rc)
{
	if (rc == -ERR_CODE_BUNDLE_INVALID || rc == -ERR_STORAGE_QUOTA_EXCEEDED)
		api_fail(rq, rc, "%s", u->err);
	else {
		log_printf(LOG_ERROR, "code upload of %s: %s", u->name, u->err);
		api_fail(rq, rc == -ERR_STORAGE_UNSAFE ? rc : ERR_STORAGE_IO,
		         "the version could not be stored");
	}
	return rc;
}

static int upload_feed(api_req *rq, const char *buf, size_t n)
{
	upload *u = rq->upload.ctx;
	int rc = code_writer_write(u->w, buf, n, u->err, sizeof(u->err));
	uint64_t sealed = code_writer_sealed_bytes(u->w);
	if (rc == 0)
		rc = tenant_storage_passed(u->storage_left, sealed, u->err, sizeof(u->err));
	return rc ? upload_failed(rq, u, rc) : 0;
}

static const char *const kinds[] = {[BUNDLE_FILE] = "file",
                                    [BUNDLE_DIR] = "dir",
                                    [BUNDLE_SYMLINK] = "symlink",
                                    [BUNDLE_HARDLINK] = "hardlink"};

/* Keep each member the check passed, for the version's list of files. */
static int note_member(void *arg, const bundle_member *m)
{
	upload *u = arg;
	json_t *e =
	    json_pack("{s:s, s:s, s:I, s:i, s:s?}", "path", m->path, "kind", kinds[m->kind], "size",
	              (json_int_t)m->size, "mode", (int)m->perm, "target", m->target);
	if (!e || json_array_append_new(u->members, e) != 0) {
		snprintf(u->err, sizeof(u->err), "out of memory for the archive's member list");
		return -ERR_INTERNAL;
	}
	return 0;
}

/* Number, register and audit the finished version, in one transaction. */
static int upload_register(api_req *rq, upload *u, const code_version_info *in, json_t **out)
{
	char sha[65], files[16], dirs[16], links[16], hard[16], bytes[24], arch[24], sealed[24];
	hex_encode(in->sha256, 32, sha);
	snprintf(files, sizeof(files), "%d", in->sum.files);
	snprintf(dirs, sizeof(dirs), "%d", in->sum.dirs);
	snprintf(links, sizeof(links), "%d", in->sum.symlinks);
	snprintf(hard, sizeof(hard), "%d", in->sum.hardlinks);
	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)in->sum.bytes);
	snprintf(arch, sizeof(arch), "%llu", (unsigned long long)in->archive_bytes);
	snprintf(sealed, sizeof(sealed), "%llu", (unsigned long long)in->sealed_bytes);
	const char *p[] = {u->version_id, u->bundle_id, files,  dirs, links,          hard,
	                   bytes,         arch,         sealed, sha,  rq->who.user_id};
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	if (rc == 0)
		rc = db_query(rq->db, NULL, "SELECT 1 FROM code_bundles WHERE id = $1 FOR UPDATE",
		              1, &p[1]);
	if (rc == 0)
		rc = tenant_storage_room(rq, in->sealed_bytes, u->err, sizeof(u->err));
	if (rc == 0)
		rc = api_query_json(
		    rq,
		    "WITH v AS (INSERT INTO code_versions (id, bundle_id, version, files, dirs,"
		    " symlinks, hardlinks, bytes, archive_bytes, sealed_bytes, sha256, created_by)"
		    " SELECT $1, $2, coalesce(max(version), 0) + 1, $3::int, $4::int, $5::int,"
		    " $6::int, $7::bigint, $8::bigint, $9::bigint, decode($10, 'hex'), $11"
		    " FROM code_versions WHERE bundle_id = $2 RETURNING *)"
		    " SELECT row_to_json(x) FROM (SELECT " VERSION_COLS " FROM v) x",
		    11, p, out);
	char *members = rc == 0 ? json_dumps(u->members, JSON_COMPACT) : NULL;
	if (rc == 0 && !members)
		rc = -ERR_INTERNAL;
	const char *m[] = {u->version_id, members};
	if (rc == 0)
		rc = db_query(
		    rq->db, NULL,
		    "INSERT INTO code_files (version_id, path, kind, size, mode, target)"
		    " SELECT $1, e->>'path', e->>'kind', (e->>'size')::bigint,"
		    " (e->>'mode')::int, e->>'target' FROM json_array_elements($2::json) e",
		    2, m);
	free(members);
	if (rc == 0) {
		char res[128];
		snprintf(res, sizeof(res), "code/%s@%lld", u->name,
		         (long long)json_integer_value(json_object_get(*out, "version")));
		json_t *d = json_pack("{s:s, s:s, s:i, s:I, s:b}", "version_id", u->version_id,
		                      "sha256", sha, "files", in->sum.files, "bytes",
		                      (json_int_t)in->sum.bytes, "key_rotated", u->key_rotated);
		rc = api_audit(rq, 201, res, d);
		json_decref(d);
	}
	if (rc == 0)
		rc = db_commit(rq->db);
	return rc;
}

static int upload_finish(api_req *rq)
{
	upload *u = rq->upload.ctx;
	code_version_info info;
	uint64_t max_bytes = (uint64_t)rq->cfg->code_unpacked_mib << 20;
	u->members = json_array();
	int rc = u->members ? code_writer_finish(u->w, max_bytes, note_member, u, &info, u->err,
	                                         sizeof(u->err))
	                    : -ERR_INTERNAL;
	if (rc)
		return upload_failed(rq, u, rc);
	json_t *out = NULL;
	if ((rc = upload_register(rq, u, &info, &out))) {
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

/* The smallest version on disk: a sealed object of one tar block and its end. */
#define VERSION_SEALED_MIN (CRYPT_HEADER_LEN + 1024 + CRYPT_TAG_LEN)

/* The bundle, the quota, its key and the writer. RET 0, or -ERR_* with a message in u->err. */
static int upload_open(api_req *rq, upload *u)
{
	const char *p[] = {rq->scope.tenant_id, route_param(&rq->params, "code")};
	PGresult *r = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_query(rq->db, &r,
		              "SELECT id FROM code_bundles WHERE tenant_id = $1 AND name = $2", 2,
		              p);
	if (rc == 0 && PQntuples(r) != 1) {
		snprintf(u->err, sizeof(u->err), "no code bundle \"%s\" in this tenant", p[1]);
		rc = -ERR_CODE_NOT_FOUND;
	}
	if (rc == 0) {
		snprintf(u->bundle_id, sizeof(u->bundle_id), "%s", PQgetvalue(r, 0, 0));
		snprintf(u->name, sizeof(u->name), "%s", p[1]);
	}
	PQclear(r);
	if (rc == 0)
		tenant_dirs_sweep(rq, "code", u->bundle_id,
		                  "SELECT id FROM code_versions WHERE bundle_id = $1");
	if (rc == 0)
		rc = tenant_storage_begin(rq, VERSION_SEALED_MIN, &u->storage_left, u->err,
		                          sizeof(u->err));
	crypt_object_ctx ring = {0};
	int kv;
	if (rc == 0 && (rc = db_begin(rq->db)) == 0 &&
	    (rc = keys_code_key(rq->db, &rq->srv->master, rq->scope.tenant_id, u->bundle_id, &ring,
	                        &kv, &u->key_rotated)) == 0)
		rc = db_commit(rq->db);
	/* the archive is the tenant's user's, for its attempts to read */
	tenant_identity id = {0};
	if (rc == 0)
		rc = tenant_dirs_prepare(rq, rq->scope.tenant_id, &id, u->err, sizeof(u->err));
	storage_owners owners = storage_owners_for(id.uid, id.gid);
	if (rc == 0)
		rc = storage_uuid_new(u->version_id);
	if (rc == 0)
		rc = code_writer_open(rq->cfg->storage_root, &owners, &ring, u->version_id, &u->w,
		                      u->err, sizeof(u->err));
	crypt_object_ctx_clear(&ring);
	return rc;
}

/* The body is a tar archive: plain or gzip. RET 0, or answered. */
static int upload_type(api_req *rq)
{
	static const char *const types[] = {"application/x-tar", "application/gzip", NULL};
	const char *ct = api_header(rq, "Content-Type");
	for (int i = 0; ct && types[i]; i++) {
		size_t n = strlen(types[i]);
		if (strncasecmp(ct, types[i], n) == 0 && (ct[n] == '\0' || ct[n] == ';'))
			return 0;
	}
	api_fail(rq, ERR_UNSUPPORTED_MEDIA,
	         "a code bundle version is sent as application/x-tar (or application/gzip)");
	return -1;
}

int h_code_version_create(api_req *rq)
{
	if (!rq->srv->has_master)
		return api_fail(rq, ERR_KEYS_UNAVAILABLE,
		                "no master key is configured on this server");
	if (upload_type(rq) < 0)
		return 0;
	upload *u = calloc(1, sizeof(*u));
	if (!u)
		return -ERR_INTERNAL;
	rq->upload.ctx = u;
	rq->upload.release = upload_release;
	int rc = upload_open(rq, u);
	if (rc == -ERR_CODE_NOT_FOUND || rc == -ERR_STORAGE_QUOTA_EXCEEDED)
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
	rq->upload.limit = (unsigned long long)rq->cfg->code_upload_mib << 20;
	return 0;
}
