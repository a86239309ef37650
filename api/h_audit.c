/*
 * h_audit.c - the verifiable audit log over HTTP (lib/audit/auditlog.h,
 * docs/audit.md): the signing key, tree heads (the newest, and one on
 * demand), inclusion and consistency proofs, and the export an auditor
 * verifies offline with `yardctl audit verify`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "auditlog.h"
#include "db.h"
#include "handlers.h"
#include "hex.h"
#include "log.h"
#include "report_slots.h"
#include "server.h"

/* Leaves the export reads per query. */
#define EXPORT_PAGE 2000

static json_t *audit_head_json(const auditlog_head *h)
{
	char root[2 * MERKLE_HASH_LEN + 1], sig[2 * AUDIT_SIG_LEN + 1];
	hex_encode(h->root, MERKLE_HASH_LEN, root);
	hex_encode(h->signature, AUDIT_SIG_LEN, sig);
	return json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:s}", "type", "head", "size",
	                 (json_int_t)h->size, "root", root, "signed_at", h->at, "algorithm",
	                 "ed25519", "key_id", h->key_id, "signature", sig);
}

int h_audit_key(api_req *rq)
{
	if (!rq->srv->has_audit_key)
		return api_fail(rq, ERR_AUDIT_KEY_UNAVAILABLE, "%s",
		                err_info(ERR_AUDIT_KEY_UNAVAILABLE)->doc);
	char pub[2 * AUDIT_KEY_LEN + 1];
	hex_encode(rq->srv->audit_key.pub, AUDIT_KEY_LEN, pub);
	return api_reply(rq, 200,
	                 json_pack("{s:s, s:s, s:s}", "algorithm", "ed25519", "public_key", pub,
	                           "key_id", rq->srv->audit_key.key_id));
}

int h_audit_head(api_req *rq)
{
	int rc = api_db(rq);
	auditlog_head h;
	bool found = false;
	if (rc == 0)
		rc = auditlog_head_latest(rq->db, &h, &found);
	if (rc)
		return api_fail_db(rq, rc);
	if (!found)
		return api_fail(rq, ERR_AUDIT_HEAD_NOT_FOUND, "%s",
		                err_info(ERR_AUDIT_HEAD_NOT_FOUND)->doc);
	return api_reply(rq, 200, audit_head_json(&h));
}

int api_audit_head_now(api_req *rq, auditlog_head *h)
{
	if (!rq->srv->has_audit_key)
		return api_fail(rq, ERR_AUDIT_KEY_UNAVAILABLE, "%s",
		                err_info(ERR_AUDIT_KEY_UNAVAILABLE)->doc),
		       -1;
	auditlog_policy p = {.head_records = rq->cfg->audit_head_records,
	                     .head_seconds = rq->cfg->audit_head_s};
	auditlog_step_result r = {.more = true};
	int rc = api_db(rq);
	while (rc == 0 && r.more)
		rc = auditlog_step(rq->db, &rq->srv->audit_key, &p, false, &r);
	if (rc == 0)
		rc = auditlog_step(rq->db, &rq->srv->audit_key, &p, true, &r);
	if (rc)
		return api_fail_db(rq, rc), -1;
	if (r.size == 0)
		return api_fail(rq, ERR_AUDIT_HEAD_NOT_FOUND, "the audit log is empty"), -1;
	*h = r.head;
	return 0;
}

int h_audit_head_create(api_req *rq)
{
	auditlog_head h;
	if (api_audit_head_now(rq, &h) < 0)
		return 0;
	/* the record of this request joins the log after the head it answers */
	json_t *d = json_pack("{s:I}", "size", (json_int_t)h.size);
	int rc = db_begin(rq->db);
	if (rc == 0)
		rc = api_audit(rq, 201, "audit/head", d);
	if (rc == 0)
		rc = db_commit(rq->db);
	json_decref(d);
	if (rc)
		return api_fail_db(rq, rc);
	return api_reply(rq, 201, audit_head_json(&h));
}

/* A query argument that must be a whole number from min to max. RET 0, or -1 answered. */
static int query_i64(api_req *rq, const char *name, bool required, int64_t min, int64_t max,
                     int64_t *out)
{
	const char *v = api_query(rq, name);
	if (!v && !required)
		return 0;
	char *end = NULL;
	long long x = v ? strtoll(v, &end, 10) : 0;
	if (!v || !*v || *end || x < min || x > max)
		return api_fail(rq, ERR_AUDIT_RANGE_INVALID,
		                "%s must be a whole number from %lld to %lld", name, (long long)min,
		                (long long)max),
		       -1;
	*out = x;
	return 0;
}

static json_t *path_json(const merkle_hash *path, int len)
{
	json_t *a = json_array();
	for (int i = 0; i < len; i++) {
		char h[2 * MERKLE_HASH_LEN + 1];
		hex_encode(path[i], MERKLE_HASH_LEN, h);
		json_array_append_new(a, json_string(h));
	}
	return a;
}

int h_audit_inclusion(api_req *rq)
{
	int64_t size = 0, seq = 0, tree = 0;
	int rc = api_db(rq);
	if (rc == 0)
		rc = auditlog_size(rq->db, &size);
	if (rc)
		return api_fail_db(rq, rc);
	if (size == 0)
		return api_fail(rq, ERR_AUDIT_RANGE_INVALID, "the audit log is empty");
	tree = size;
	if (query_i64(rq, "tree_size", false, 1, size, &tree) < 0 ||
	    query_i64(rq, "seq", true, 0, tree - 1, &seq) < 0)
		return 0;
	merkle_hash path[MERKLE_DEPTH_MAX], leaf;
	int len;
	if (merkle_inclusion_proof(auditlog_subtree, rq->db, (uint64_t)seq, (uint64_t)tree, path,
	                           &len) < 0 ||
	    auditlog_subtree(rq->db, 0, (uint64_t)seq, leaf) < 0)
		return api_fail(rq, ERR_INTERNAL, "the proof could not be made");
	char leaf_hex[2 * MERKLE_HASH_LEN + 1];
	hex_encode(leaf, MERKLE_HASH_LEN, leaf_hex);
	return api_reply(rq, 200,
	                 json_pack("{s:I, s:I, s:s, s:o}", "seq", (json_int_t)seq, "tree_size",
	                           (json_int_t)tree, "leaf_hash", leaf_hex, "path",
	                           path_json(path, len)));
}

int h_audit_consistency(api_req *rq)
{
	int64_t size = 0, first = 0, second = 0;
	int rc = api_db(rq);
	if (rc == 0)
		rc = auditlog_size(rq->db, &size);
	if (rc)
		return api_fail_db(rq, rc);
	if (size == 0)
		return api_fail(rq, ERR_AUDIT_RANGE_INVALID, "the audit log is empty");
	second = size;
	if (query_i64(rq, "second", false, 1, size, &second) < 0 ||
	    query_i64(rq, "first", true, 1, second, &first) < 0)
		return 0;
	merkle_hash path[2 * MERKLE_DEPTH_MAX];
	int len;
	if (merkle_consistency_proof(auditlog_subtree, rq->db, (uint64_t)first, (uint64_t)second,
	                             path, &len) < 0)
		return api_fail(rq, ERR_INTERNAL, "the proof could not be made");
	return api_reply(rq, 200,
	                 json_pack("{s:I, s:I, s:o}", "first", (json_int_t)first, "second",
	                           (json_int_t)second, "path", path_json(path, len)));
}

/* ---- the export ------------------------------------------------------ */

/*
 * The export streams the log as one line per record (its entry, the bytes
 * its leaf hashes) in sequence order, after a first line holding the head
 * it ends at; every head signed in between follows the record that
 * completes it. It reads with a connection of its own, a page at a time,
 * and holds a slot of the platform's share of streamed reports and exports
 * (report_slots.h) until its stream is freed.
 */
typedef struct exporter {
	PGconn *c;
	int64_t next, end; /* the next leaf to read, and the head's size */
	char *out;         /* lines formatted, not yet sent */
	size_t len, sent;
	report_slot slot;
	char request_id[REQUEST_ID_MAX + 1];
} exporter;

static void exporter_free(void *ctx)
{
	exporter *x = ctx;
	db_close(x->c);
	free(x->out);
	report_slot_give(&x->slot);
	free(x);
}

static int out_add(exporter *x, const char *s, size_t n)
{
	char *nb = realloc(x->out, x->len + n + 2);
	if (!nb)
		return -1;
	x->out = nb;
	memcpy(x->out + x->len, s, n);
	x->len += n;
	x->out[x->len++] = '\n';
	return 0;
}

/* The next page of leaves into x->out, each head they complete after its last record. */
static int page(exporter *x)
{
	int64_t to = x->next + EXPORT_PAGE < x->end ? x->next + EXPORT_PAGE : x->end;
	char a[24], b[24];
	snprintf(a, sizeof(a), "%lld", (long long)x->next);
	snprintf(b, sizeof(b), "%lld", (long long)to);
	const char *p[] = {a, b};
	PGresult *leaves = NULL, *heads = NULL;
	int rc = db_query(x->c, &leaves,
	                  "SELECT seq, entry FROM audit_leaves WHERE seq >= $1 AND seq < $2"
	                  " ORDER BY seq",
	                  2, p);
	if (rc == 0)
		rc = db_query(x->c, &heads,
		              "SELECT size, encode(root, 'hex') AS root, " CLOCK_SQL_RFC3339(
		                  "signed_at") " AS signed_at,"
		                               " encode(signature, 'hex') AS signature, key_id "
		                               "FROM audit_heads"
		                               " WHERE size > $1 AND size <= $2 ORDER BY size",
		              2, p);
	int h = 0, nh = rc == 0 ? PQntuples(heads) : 0;
	for (int i = 0; rc == 0 && i < PQntuples(leaves); i++) {
		int64_t seq = strtoll(PQgetvalue(leaves, i, 0), NULL, 10);
		if (seq != x->next) { /* the log has a hole: never so, unless altered */
			log_printf(LOG_ERROR, "audit export: leaf %lld missing",
			           (long long)x->next);
			rc = -1;
			break;
		}
		rc = out_add(x, PQgetvalue(leaves, i, 1), (size_t)PQgetlength(leaves, i, 1));
		x->next++;
		for (; rc == 0 && h < nh && strtoll(PQgetvalue(heads, h, 0), NULL, 10) == x->next;
		     h++) {
			char line[512];
			int n =
			    snprintf(line, sizeof(line),
			             "{\"type\":\"head\",\"size\":%s,\"root\":\"%s\",\"signed_at\":"
			             "\"%s\",\"algorithm\":\"ed25519\",\"key_id\":\"%s\","
			             "\"signature\":\"%s\"}",
			             PQgetvalue(heads, h, 0), PQgetvalue(heads, h, 1),
			             PQgetvalue(heads, h, 2), PQgetvalue(heads, h, 4),
			             PQgetvalue(heads, h, 3));
			rc = out_add(x, line, (size_t)n);
		}
	}
	if (rc == 0 && x->next < to)
		rc = -1; /* fewer leaves than the log's size said */
	PQclear(leaves);
	PQclear(heads);
	return rc;
}

static ssize_t exporter_read(void *ctx, char *buf, size_t max)
{
	exporter *x = ctx;
	if (x->sent == x->len) {
		x->sent = x->len = 0;
		if (x->next >= x->end)
			return API_STREAM_END;
		if (page(x) < 0) {
			log_printf(LOG_ERROR, "audit export %s cut off at leaf %lld", x->request_id,
			           (long long)x->next);
			return API_STREAM_ABORT;
		}
	}
	size_t n = x->len - x->sent < max ? x->len - x->sent : max;
	memcpy(buf, x->out + x->sent, n);
	x->sent += n;
	return (ssize_t)n;
}

int h_audit_export(api_req *rq)
{
	auditlog_head h;
	report_slot slot;
	if (report_slot_take(rq, REPORT_SLOTS_PLATFORM, &slot) < 0)
		return 0;
	if (api_audit_head_now(rq, &h) < 0) {
		report_slot_give(&slot);
		return 0;
	}
	exporter *x = calloc(1, sizeof(*x));
	char err[512];
	if (!x || !(x->c = db_connect(rq->cfg->db, err, sizeof(err)))) {
		free(x);
		report_slot_give(&slot);
		return api_fail(rq, ERR_DB_UNAVAILABLE, "the export could not open its connection");
	}
	x->slot = slot; /* exporter_free gives it back */
	x->end = h.size;
	snprintf(x->request_id, sizeof(x->request_id), "%s", rq->request_id);
	json_t *first = audit_head_json(&h);
	char *line = json_dumps(first, JSON_COMPACT);
	json_decref(first);
	if (!line || out_add(x, line, strlen(line)) < 0) {
		free(line);
		exporter_free(x);
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	}
	free(line);
	rq->status = 200;
	rq->stream = (api_stream){.read = exporter_read,
	                          .free = exporter_free,
	                          .ctx = x,
	                          .content_type = "application/jsonl",
	                          .size = API_STREAM_SIZE_UNKNOWN};
	return 0;
}
