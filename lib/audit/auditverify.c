/*
 * auditverify.c - see auditverify.h.
 */
#include "auditverify.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"

#define RECORD_PREFIX "{\"seq\":"

static int fail(auditverify *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(auditverify *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->problem, sizeof(v->problem), fmt, ap);
	va_end(ap);
	v->failed = true;
	return -1;
}

void auditverify_init(auditverify *v, const unsigned char pub[AUDIT_KEY_LEN],
                      const auditlog_head *previous)
{
	memset(v, 0, sizeof(*v));
	memcpy(v->pub, pub, AUDIT_KEY_LEN);
	if (previous) {
		v->have_previous = true;
		v->previous = *previous;
	}
}

int auditverify_head_parse(const char *text, size_t len, auditlog_head *h, char *err, size_t errlen)
{
	memset(h, 0, sizeof(*h));
	json_error_t je;
	json_t *j = json_loadb(text, len, 0, &je);
	const char *type = json_string_value(json_object_get(j, "type"));
	const char *root = json_string_value(json_object_get(j, "root"));
	const char *at = json_string_value(json_object_get(j, "signed_at"));
	const char *sig = json_string_value(json_object_get(j, "signature"));
	const char *key = json_string_value(json_object_get(j, "key_id"));
	json_t *size = json_object_get(j, "size");
	bool ok = type && strcmp(type, "head") == 0 && root && at && sig && key &&
	          json_is_integer(size) && json_integer_value(size) >= 0 &&
	          strlen(at) < sizeof(h->at) && strlen(key) < sizeof(h->key_id) &&
	          hex_decode(root, strlen(root), h->root, MERKLE_HASH_LEN) &&
	          hex_decode(sig, strlen(sig), h->signature, AUDIT_SIG_LEN);
	if (ok) {
		h->size = json_integer_value(size);
		snprintf(h->at, sizeof(h->at), "%s", at);
		snprintf(h->key_id, sizeof(h->key_id), "%s", key);
	} else {
		snprintf(err, errlen, "not a tree head: %s",
		         j ? "a member is missing or malformed" : je.text);
	}
	json_decref(j);
	return ok ? 0 : -1;
}

bool auditverify_head_signed(const auditlog_head *h, const unsigned char pub[AUDIT_KEY_LEN])
{
	char msg[AUDIT_HEAD_MSG_MAX];
	int n = auditlog_head_message(h, msg, sizeof(msg));
	return n > 0 && auditsign_verify(pub, msg, (size_t)n, h->signature);
}

/* The sequence number a record line starts with. RET 0, or -1 when it is no record. */
static int record_seq(const char *line, size_t len, int64_t *seq)
{
	size_t p = sizeof(RECORD_PREFIX) - 1;
	if (len <= p || memcmp(line, RECORD_PREFIX, p) != 0)
		return -1;
	int64_t s = 0;
	size_t digits = 0;
	for (; p < len && line[p] >= '0' && line[p] <= '9' && digits < 18; p++, digits++)
		s = s * 10 + (line[p] - '0');
	if (digits == 0 || p >= len || line[p] != ',')
		return -1;
	*seq = s;
	return 0;
}

static int check_head(auditverify *v, const char *line, size_t len)
{
	auditlog_head h;
	char err[256];
	if (auditverify_head_parse(line, len, &h, err, sizeof(err)) < 0)
		return fail(v, "line after record seq %lld: %s", (long long)v->f.size - 1, err);
	if (!auditverify_head_signed(&h, v->pub))
		return fail(v,
		            "the head of size %lld is not signed by this key (forged or altered)",
		            (long long)h.size);
	if ((uint64_t)h.size != v->f.size)
		return fail(v, "the head of size %lld stands after record seq %lld: out of place",
		            (long long)h.size, (long long)v->f.size - 1);
	merkle_hash root;
	merkle_frontier_root(&v->f, root);
	if (memcmp(root, h.root, MERKLE_HASH_LEN) != 0)
		return fail(
		    v,
		    "the records from seq %lld to seq %lld do not give the root the head of "
		    "size %lld signs: one of them was altered",
		    (long long)v->good, (long long)h.size - 1, (long long)h.size);
	v->good = h.size;
	v->heads++;
	return 0;
}

static int start(auditverify *v, const char *line, size_t len)
{
	char err[256];
	if (auditverify_head_parse(line, len, &v->head, err, sizeof(err)) < 0)
		return fail(v, "the export does not start with its tree head: %s", err);
	if (!auditverify_head_signed(&v->head, v->pub))
		return fail(v, "the export's head (size %lld) is not signed by this key: forged",
		            (long long)v->head.size);
	if (v->have_previous && !auditverify_head_signed(&v->previous, v->pub))
		return fail(v, "the head seen before (size %lld) is not signed by this key",
		            (long long)v->previous.size);
	if (v->have_previous && v->head.size < v->previous.size)
		return fail(v,
		            "rolled back: the export's head has size %lld, a head seen before has "
		            "size %lld",
		            (long long)v->head.size, (long long)v->previous.size);
	v->started = true;
	return 0;
}

int auditverify_line(auditverify *v, const char *line, size_t len)
{
	if (v->failed)
		return -1;
	if (!v->started)
		return start(v, line, len);
	int64_t seq;
	if (record_seq(line, len, &seq) < 0)
		return check_head(v, line, len);
	int64_t want = (int64_t)v->f.size;
	if (seq > want)
		return fail(v, "records seq %lld to seq %lld are missing before record seq %lld",
		            (long long)want, (long long)seq - 1, (long long)seq);
	if (seq < want)
		return fail(v, "record seq %lld stands after record seq %lld: repeated or moved",
		            (long long)seq, (long long)want - 1);
	if (seq >= v->head.size)
		return fail(v, "record seq %lld lies beyond the export's head (size %lld)",
		            (long long)seq, (long long)v->head.size);
	merkle_hash leaf;
	merkle_leaf_hash(line, len, leaf);
	merkle_frontier_append(&v->f, leaf, NULL, NULL);
	if (v->have_previous && v->f.size == (uint64_t)v->previous.size) {
		merkle_hash root;
		merkle_frontier_root(&v->f, root);
		if (memcmp(root, v->previous.root, MERKLE_HASH_LEN) != 0)
			return fail(
			    v,
			    "rewritten: the first %lld records do not give the root of the head "
			    "seen before",
			    (long long)v->previous.size);
	}
	return 0;
}

int auditverify_end(auditverify *v)
{
	if (v->failed)
		return -1;
	if (!v->started)
		return fail(v, "the export is empty: no tree head");
	if (v->f.size < (uint64_t)v->head.size)
		return fail(v, "truncated: %lld records, the export's head counts %lld",
		            (long long)v->f.size, (long long)v->head.size);
	merkle_hash root;
	merkle_frontier_root(&v->f, root);
	if (memcmp(root, v->head.root, MERKLE_HASH_LEN) != 0)
		return fail(
		    v,
		    "the records from seq %lld to seq %lld do not give the root the export's "
		    "head signs: one of them was altered",
		    (long long)v->good, (long long)v->head.size - 1);
	return 0;
}
