/*
 * auditlog.c - see auditlog.h.
 */
#include "auditlog.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "db.h"
#include "error.h"
#include "hex.h"
#include "log.h"

/* ---- the entry ------------------------------------------------------- */

typedef struct buf {
	char *p;
	size_t len, cap;
	bool failed;
} buf;

static void put(buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 512;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void puts_(buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* A JSON value's text (jansson's escaping), NULL as null. */
static void put_json(buf *b, json_t *v, size_t flags)
{
	char *t = v ? json_dumps(v, flags | JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	if (v && !t)
		b->failed = true;
	puts_(b, t ? t : "null");
	free(t);
	json_decref(v);
}

/* ,"key": and a string member of the row (NULL as null). */
static void member_str(buf *b, const PGresult *r, int row, const char *key)
{
	char head[48];
	snprintf(head, sizeof(head), ",\"%s\":", key);
	puts_(b, head);
	const char *v = db_get(r, row, key);
	put_json(b, v ? json_string(v) : NULL, 0);
}

int auditlog_encode(const PGresult *r, int row, int64_t seq, char **out, size_t *len)
{
	buf b = {0};
	char num[64];
	snprintf(num, sizeof(num), "{\"seq\":%lld,\"id\":%s", (long long)seq, db_get(r, row, "id"));
	puts_(&b, num);
	static const char *const before_status[] = {"at",         "actor_id",  "actor_name",
	                                            "actor_role", "tenant_id", "action",
	                                            "resource",   "outcome",   NULL};
	for (int i = 0; before_status[i]; i++)
		member_str(&b, r, row, before_status[i]);
	snprintf(num, sizeof(num), ",\"status\":%s", db_get(r, row, "status"));
	puts_(&b, num);
	member_str(&b, r, row, "request_id");
	member_str(&b, r, row, "client_addr");
	json_error_t je;
	const char *d = db_get(r, row, "detail");
	json_t *detail = d ? json_loads(d, JSON_DECODE_ANY, &je) : json_object();
	if (!detail)
		b.failed = true;
	puts_(&b, ",\"detail\":");
	put_json(&b, detail, JSON_SORT_KEYS);
	puts_(&b, "}");
	if (b.failed) {
		free(b.p);
		return -1;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

/* ---- the stored tree ------------------------------------------------- */

int auditlog_subtree(void *ctx, int level, uint64_t idx, merkle_hash out)
{
	PGconn *c = ctx;
	char l[8], i[24];
	snprintf(l, sizeof(l), "%d", level);
	snprintf(i, sizeof(i), "%llu", (unsigned long long)idx);
	const char *p[] = {l, i};
	PGresult *r;
	int rc =
	    level == 0
	        ? db_query(c, &r, "SELECT encode(hash, 'hex') FROM audit_leaves WHERE seq = $1", 1,
	                   p + 1)
	        : db_query(c, &r,
	                   "SELECT encode(hash, 'hex') FROM audit_nodes"
	                   " WHERE level = $1::smallint AND idx = $2",
	                   2, p);
	bool ok =
	    rc == 0 && PQntuples(r) == 1 &&
	    hex_decode(PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0), out, MERKLE_HASH_LEN);
	PQclear(r);
	return ok ? 0 : -1;
}

int auditlog_size(PGconn *c, int64_t *size)
{
	PGresult *r;
	int rc = db_query(c, &r, "SELECT coalesce(max(seq) + 1, 0) FROM audit_leaves", 0, NULL);
	if (rc == 0)
		*size = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}

/* ---- heads ----------------------------------------------------------- */

static int head_from_row(const PGresult *r, int row, auditlog_head *h)
{
	memset(h, 0, sizeof(*h));
	h->size = strtoll(db_get(r, row, "size"), NULL, 10);
	const char *root = db_get(r, row, "root"), *sig = db_get(r, row, "signature");
	snprintf(h->at, sizeof(h->at), "%s", db_get(r, row, "signed_at"));
	snprintf(h->key_id, sizeof(h->key_id), "%s", db_get(r, row, "key_id"));
	return hex_decode(root, strlen(root), h->root, MERKLE_HASH_LEN) &&
	               hex_decode(sig, strlen(sig), h->signature, AUDIT_SIG_LEN)
	           ? 0
	           : -ERR_INTERNAL;
}

#define HEAD_COLS                                                                                  \
	"size, encode(root, 'hex') AS root,"                                                       \
	" " CLOCK_SQL_RFC3339("signed_at") " AS signed_at,"                                        \
	                                   " encode(signature, 'hex') AS signature, key_id"

int auditlog_head_latest(PGconn *c, auditlog_head *h, bool *found)
{
	PGresult *r;
	int rc = db_query(c, &r, "SELECT " HEAD_COLS " FROM audit_heads ORDER BY size DESC LIMIT 1",
	                  0, NULL);
	*found = rc == 0 && PQntuples(r) == 1;
	if (*found)
		rc = head_from_row(r, 0, h);
	PQclear(r);
	return rc;
}

int auditlog_head_message(const auditlog_head *h, char *b, size_t n)
{
	return auditsign_head_message(h->size, h->root, h->at, b, n);
}

/* Sign and store the head of size with root. RET 0 or -ERR_*. */
static int head_sign(PGconn *c, const audit_signer *s, int64_t size, const merkle_hash root,
                     auditlog_head *h)
{
	memset(h, 0, sizeof(*h));
	h->size = size;
	memcpy(h->root, root, MERKLE_HASH_LEN);
	clock_rfc3339(clock_epoch_s(), h->at);
	snprintf(h->key_id, sizeof(h->key_id), "%s", s->key_id);
	char msg[AUDIT_HEAD_MSG_MAX];
	int n = auditlog_head_message(h, msg, sizeof(msg));
	if (n < 0 || auditsign_sign(s, msg, (size_t)n, h->signature) < 0)
		return -ERR_INTERNAL;
	char sz[24], root_hex[2 * MERKLE_HASH_LEN + 1], sig_hex[2 * AUDIT_SIG_LEN + 1];
	snprintf(sz, sizeof(sz), "%lld", (long long)size);
	hex_encode(root, MERKLE_HASH_LEN, root_hex);
	hex_encode(h->signature, AUDIT_SIG_LEN, sig_hex);
	const char *p[] = {sz, root_hex, h->at, sig_hex, h->key_id};
	return db_query(c, NULL,
	                "INSERT INTO audit_heads (size, root, signed_at, signature, key_id)"
	                " VALUES ($1, decode($2, 'hex'), $3::timestamptz, decode($4, 'hex'), $5)",
	                5, p);
}

/* ---- the sequencer --------------------------------------------------- */

/* What one batch adds: the leaves and the subtrees they complete. */
typedef struct batch {
	char **seq, **id, **entry, **hash;
	int n;
	char **lvl, **idx, **node;
	int n_nodes, cap_nodes;
	bool failed;
} batch;

static char *fmt_i64(long long v)
{
	char t[24];
	snprintf(t, sizeof(t), "%lld", v);
	return strdup(t);
}

static char *fmt_hash(const merkle_hash h)
{
	char *t = malloc(2 * MERKLE_HASH_LEN + 1);
	if (t)
		hex_encode(h, MERKLE_HASH_LEN, t);
	return t;
}

static void on_node(void *ctx, int level, uint64_t idx, const merkle_hash hash)
{
	batch *b = ctx;
	if (b->n_nodes == b->cap_nodes) {
		int cap = b->cap_nodes ? 2 * b->cap_nodes : 64;
		char **l = realloc(b->lvl, (size_t)cap * sizeof(char *));
		char **i = l ? realloc(b->idx, (size_t)cap * sizeof(char *)) : NULL;
		char **h = i ? realloc(b->node, (size_t)cap * sizeof(char *)) : NULL;
		if (l)
			b->lvl = l;
		if (i)
			b->idx = i;
		if (!h) {
			b->failed = true;
			return;
		}
		b->node = h;
		b->cap_nodes = cap;
	}
	b->lvl[b->n_nodes] = fmt_i64(level);
	b->idx[b->n_nodes] = fmt_i64((long long)idx);
	b->node[b->n_nodes] = fmt_hash(hash);
	if (!b->lvl[b->n_nodes] || !b->idx[b->n_nodes] || !b->node[b->n_nodes])
		b->failed = true;
	b->n_nodes++;
}

static void batch_free(batch *b)
{
	char **cols[] = {b->seq, b->id, b->entry, b->hash};
	for (size_t k = 0; k < 4; k++) {
		for (int i = 0; cols[k] && i < b->n; i++)
			free(cols[k][i]);
		free(cols[k]);
	}
	char **nodes[] = {b->lvl, b->idx, b->node};
	for (size_t k = 0; k < 3; k++) {
		for (int i = 0; nodes[k] && i < b->n_nodes; i++)
			free(nodes[k][i]);
		free(nodes[k]);
	}
}

/* Arrays as literals, then one statement. RET as db_query. */
static int insert_arrays(PGconn *c, const char *sql, char **const *cols, int ncols, int n)
{
	char *lit[4] = {NULL};
	int rc = 0;
	for (int k = 0; k < ncols && rc == 0; k++)
		if (!(lit[k] = db_array_literal((const char *const *)cols[k], n)))
			rc = -ERR_INTERNAL;
	if (rc == 0)
		rc = db_query(c, NULL, sql, ncols, (const char *const *)lit);
	for (int k = 0; k < ncols; k++)
		free(lit[k]);
	return rc;
}

/* Append the queued records of r to frontier f as leaves from seq. */
static int add_leaves(const PGresult *r, merkle_frontier *f, batch *b)
{
	int n = PQntuples(r);
	b->seq = calloc((size_t)n + 1, sizeof(char *));
	b->id = calloc((size_t)n + 1, sizeof(char *));
	b->entry = calloc((size_t)n + 1, sizeof(char *));
	b->hash = calloc((size_t)n + 1, sizeof(char *));
	if (!b->seq || !b->id || !b->entry || !b->hash)
		return -ERR_INTERNAL;
	for (int i = 0; i < n; i++) {
		int64_t seq = (int64_t)f->size;
		size_t len;
		if (auditlog_encode(r, i, seq, &b->entry[i], &len) < 0) {
			log_printf(LOG_ERROR, "audit record %s could not be encoded",
			           db_get(r, i, "id"));
			return -ERR_INTERNAL;
		}
		merkle_hash leaf;
		merkle_leaf_hash(b->entry[i], len, leaf);
		b->seq[i] = fmt_i64(seq);
		b->id[i] = strdup(db_get(r, i, "id"));
		b->hash[i] = fmt_hash(leaf);
		b->n = i + 1;
		if (!b->seq[i] || !b->id[i] || !b->hash[i])
			return -ERR_INTERNAL;
		merkle_frontier_append(f, leaf, on_node, b);
		if (b->failed)
			return -ERR_INTERNAL;
	}
	return 0;
}

/* Whether a head is due for size, after the newest one. */
static bool head_due(PGconn *c, const auditlog_policy *p, int64_t size, bool *err)
{
	auditlog_head last;
	bool found;
	*err = auditlog_head_latest(c, &last, &found) != 0;
	if (*err || size == 0)
		return false;
	if (!found)
		return true;
	if (size <= last.size)
		return false;
	if (size - last.size >= p->head_records)
		return true;
	char sz[24];
	snprintf(sz, sizeof(sz), "%d", p->head_seconds);
	const char *q[] = {last.at, sz};
	PGresult *r;
	bool due = db_query(c, &r, "SELECT $1::timestamptz + $2::int * interval '1 s' <= now()", 2,
	                    q) == 0 &&
	           strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return due;
}

int auditlog_step(PGconn *c, const audit_signer *signer, const auditlog_policy *p, bool force,
                  auditlog_step_result *out)
{
	memset(out, 0, sizeof(*out));
	int64_t size = 0;
	merkle_frontier f;
	batch b = {0};
	PGresult *r = NULL;
	char limit[16];
	snprintf(limit, sizeof(limit), "%d", AUDITLOG_BATCH);
	const char *lp[] = {limit};
	int rc = db_begin(c);
	if (rc == 0)
		rc = db_query(c, NULL, "SELECT pg_advisory_xact_lock(" AUDITLOG_LOCK ")", 0, NULL);
	if (rc == 0)
		rc = auditlog_size(c, &size);
	if (rc == 0 && merkle_frontier_load(&f, auditlog_subtree, c, (uint64_t)size) < 0)
		rc = -ERR_INTERNAL;
	if (rc == 0)
		/*
		 * Each queued record looked up by its id: the queue is short while
		 * the log is long, and a plan that scans the log (a hash join,
		 * which a queue estimated long invites) costs more with every record.
		 * OFFSET 0 keeps the lookup a per-row subquery.
		 */
		rc = db_query(c, &r,
		              "SELECT " AUDITLOG_COLS " FROM (SELECT id FROM audit_pending"
		              " ORDER BY id LIMIT $1) p CROSS JOIN LATERAL (SELECT * FROM audit_log"
		              " WHERE id = p.id OFFSET 0) a ORDER BY p.id",
		              1, lp);
	if (rc == 0)
		rc = add_leaves(r, &f, &b);
	if (rc == 0 && b.n > 0) {
		char **leaves[] = {b.seq, b.id, b.entry, b.hash};
		rc =
		    insert_arrays(c,
		                  "INSERT INTO audit_leaves (seq, id, entry, hash)"
		                  " SELECT s, i, e, decode(h, 'hex')"
		                  " FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[])"
		                  " AS u(s, i, e, h)",
		                  leaves, 4, b.n);
		char **ids[] = {b.id};
		if (rc == 0)
			rc = insert_arrays(c,
			                   "DELETE FROM audit_pending WHERE id = ANY($1::bigint[])",
			                   ids, 1, b.n);
	}
	if (rc == 0 && b.n_nodes > 0) {
		char **nodes[] = {b.lvl, b.idx, b.node};
		rc = insert_arrays(
		    c,
		    "INSERT INTO audit_nodes (level, idx, hash)"
		    " SELECT l, i, decode(h, 'hex')"
		    " FROM unnest($1::smallint[], $2::bigint[], $3::text[]) AS u(l, i, h)",
		    nodes, 3, b.n_nodes);
	}
	out->added = b.n;
	out->size = (int64_t)f.size;
	out->more = r && PQntuples(r) == AUDITLOG_BATCH;
	bool err = false;
	/* due heads are signed while a backlog drains too: at the end of its batches */
	if (rc == 0 && signer && (force ? out->size > 0 : head_due(c, p, out->size, &err))) {
		auditlog_head last;
		bool found = false;
		if (force && auditlog_head_latest(c, &last, &found) == 0 && found &&
		    last.size == out->size) {
			out->head = last; /* the newest head already covers it */
		} else {
			merkle_hash root;
			merkle_frontier_root(&f, root);
			rc = head_sign(c, signer, out->size, root, &out->head);
			out->signed_now = rc == 0;
		}
	}
	if (err && rc == 0)
		rc = -ERR_INTERNAL;
	if (rc == 0)
		rc = db_commit(c);
	else
		db_rollback(c);
	if (rc) {
		out->signed_now = false;
		out->added = 0;
	}
	PQclear(r);
	batch_free(&b);
	return rc;
}
