/*
 * test_auditverify.c - the offline verifier against exports tampered with
 * in every way docs/audit.md names. An export is built here as the API
 * writes one (its head first, each record's entry, each head after the
 * record that completes it), signed with a key made for the test; each
 * tampering must fail, and the problem must name the record or head that
 * fails. Two exports of one growing log are held against each other with
 * the earlier one's head.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditverify.h"
#include "hex.h"
#include "unit.h"

#define RECORDS   40
#define HEAD_EACH 10 /* a head after every tenth record */
#define LINES_MAX (RECORDS + RECORDS / HEAD_EACH + 8)

static audit_signer signer;
static unsigned char other_priv[AUDIT_KEY_LEN];

/* An export: its lines, each malloc'ed. */
typedef struct export
{
	char *line[LINES_MAX];
	int n;
}
export;

static void add(export *e, const char *s)
{
	ck_assert_int_lt(e->n, LINES_MAX);
	e->line[e->n++] = strdup(s);
}

static void export_free(export *e)
{
	for (int i = 0; i < e->n; i++)
		free(e->line[i]);
	e->n = 0;
}

static void entry(int64_t seq, const char *action, char *out, size_t n)
{
	snprintf(out, n,
	         "{\"seq\":%lld,\"id\":%lld,\"at\":\"2026-12-04T08:00:%02d.000000Z\","
	         "\"actor_id\":null,\"actor_name\":\"alice\",\"actor_role\":\"admin\","
	         "\"tenant_id\":null,\"action\":\"%s\",\"resource\":\"/v1/tenants\","
	         "\"outcome\":\"ok\",\"status\":201,\"request_id\":\"r%lld\","
	         "\"client_addr\":\"127.0.0.1\",\"detail\":{}}",
	         (long long)seq, (long long)seq + 7, (int)(seq % 60), action, (long long)seq);
}

static void head_line(const audit_signer *s, int64_t size, const merkle_hash root, const char *at,
                      char *out, size_t n)
{
	char msg[AUDIT_HEAD_MSG_MAX], root_hex[2 * MERKLE_HASH_LEN + 1];
	char sig_hex[2 * AUDIT_SIG_LEN + 1];
	unsigned char sig[AUDIT_SIG_LEN];
	int len = auditsign_head_message(size, root, at, msg, sizeof(msg));
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(auditsign_sign(s, msg, (size_t)len, sig), 0);
	hex_encode(root, MERKLE_HASH_LEN, root_hex);
	hex_encode(sig, AUDIT_SIG_LEN, sig_hex);
	snprintf(out, n,
	         "{\"type\":\"head\",\"size\":%lld,\"root\":\"%s\",\"signed_at\":\"%s\","
	         "\"algorithm\":\"ed25519\",\"key_id\":\"%s\",\"signature\":\"%s\"}",
	         (long long)size, root_hex, at, s->key_id, sig_hex);
}

/*
 * The export of a log of `records` records, the entry of seq `changed`
 * (when >= 0) reading action "rewritten" instead.
 */
static void build(export *e, int records, int changed)
{
	char buf[1024];
	merkle_frontier f = {0};
	char *lines[LINES_MAX];
	int n = 0;
	for (int s = 0; s < records; s++) {
		entry(s, s == changed ? "rewritten" : "tenant.create", buf, sizeof(buf));
		merkle_hash leaf;
		merkle_leaf_hash(buf, strlen(buf), leaf);
		merkle_frontier_append(&f, leaf, NULL, NULL);
		lines[n++] = strdup(buf);
		if ((s + 1) % HEAD_EACH == 0 && s + 1 < records) {
			merkle_hash root;
			merkle_frontier_root(&f, root);
			head_line(&signer, s + 1, root, "2026-12-04T08:01:00.000Z", buf,
			          sizeof(buf));
			lines[n++] = strdup(buf);
		}
	}
	merkle_hash root;
	merkle_frontier_root(&f, root);
	head_line(&signer, records, root, "2026-12-04T08:02:00.000Z", buf, sizeof(buf));
	e->n = 0;
	add(e, buf);
	for (int i = 0; i < n; i++) {
		add(e, lines[i]);
		free(lines[i]);
	}
}

/* The line of record seq. */
static int record_at(const export *e, int seq)
{
	char want[32];
	snprintf(want, sizeof(want), "{\"seq\":%d,", seq);
	for (int i = 1; i < e->n; i++)
		if (strncmp(e->line[i], want, strlen(want)) == 0)
			return i;
	ck_abort_msg("no record seq %d", seq);
	return -1;
}

static void drop(export *e, int i)
{
	free(e->line[i]);
	memmove(e->line + i, e->line + i + 1, (size_t)(e->n - i - 1) * sizeof(char *));
	e->n--;
}

static void put(export *e, int i, const char *s)
{
	ck_assert_int_lt(e->n, LINES_MAX);
	memmove(e->line + i + 1, e->line + i, (size_t)(e->n - i) * sizeof(char *));
	e->line[i] = strdup(s);
	e->n++;
}

/* Verify e against the test key (and previous). RET 0, or -1 with v->problem in problem. */
static int verify(const export *e, const auditlog_head *previous, char *problem, size_t n)
{
	auditverify *v = malloc(sizeof(*v));
	ck_assert_ptr_nonnull(v);
	auditverify_init(v, signer.pub, previous);
	int rc = 0;
	for (int i = 0; i < e->n && rc == 0; i++)
		rc = auditverify_line(v, e->line[i], strlen(e->line[i]));
	if (rc == 0)
		rc = auditverify_end(v);
	snprintf(problem, n, "%s", v->problem);
	free(v);
	return rc;
}

/* e fails, and its problem holds want. */
static void fails_with(const export *e, const auditlog_head *previous, const char *want)
{
	char problem[512];
	ck_assert_int_eq(verify(e, previous, problem, sizeof(problem)), -1);
	ck_assert_msg(strstr(problem, want), "problem \"%s\" lacks \"%s\"", problem, want);
}

static void setup(void)
{
	unsigned char priv[AUDIT_KEY_LEN], pub[AUDIT_KEY_LEN];
	ck_assert_int_eq(auditsign_keygen(priv, pub), 0);
	ck_assert_int_eq(auditsign_from_private(&signer, priv), 0);
	ck_assert_int_eq(memcmp(signer.pub, pub, AUDIT_KEY_LEN), 0);
	ck_assert_int_eq(auditsign_keygen(other_priv, pub), 0);
}

static void teardown(void)
{
	auditsign_release(&signer);
}

START_TEST(untouched_export_verifies)
{
	export e = {0};
	build(&e, RECORDS, -1);
	char problem[512];
	ck_assert_int_eq(verify(&e, NULL, problem, sizeof(problem)), 0);
	/* one record, one head: the smallest log */
	export_free(&e);
	build(&e, 1, -1);
	ck_assert_int_eq(verify(&e, NULL, problem, sizeof(problem)), 0);
	export_free(&e);
}
END_TEST

START_TEST(edited_record_fails_at_its_head)
{
	export e = {0};
	build(&e, RECORDS, -1);
	int i = record_at(&e, 13);
	char *p = strstr(e.line[i], "alice");
	ck_assert_ptr_nonnull(p);
	p[0] = 'A'; /* one byte of record 13 */
	fails_with(&e, NULL, "from seq 10 to seq 19 do not give the root the head of size 20");
	/* the last window fails at the export's own head */
	export_free(&e);
	build(&e, RECORDS, -1);
	i = record_at(&e, 37);
	e.line[i][strlen(e.line[i]) - 2] = ' ';
	fails_with(&e, NULL, "from seq 30 to seq 39 do not give the root the export's head");
	export_free(&e);
}
END_TEST

START_TEST(deleted_record_is_named)
{
	export e = {0};
	build(&e, RECORDS, -1);
	drop(&e, record_at(&e, 5));
	fails_with(&e, NULL, "records seq 5 to seq 5 are missing before record seq 6");
	export_free(&e);
}
END_TEST

START_TEST(inserted_record_is_named)
{
	export e = {0};
	build(&e, RECORDS, -1);
	char buf[1024];
	entry(21, "tenant.delete", buf, sizeof(buf));
	put(&e, record_at(&e, 22), buf); /* a second seq 21 */
	fails_with(&e, NULL, "record seq 21 stands after record seq 21: repeated or moved");
	/* renumbered to fit, the inserted record still breaks the tree */
	export_free(&e);
	build(&e, RECORDS, -1);
	int at = record_at(&e, 21);
	for (int s = RECORDS - 1; s >= 21; s--) { /* shift 21..39 up by one, drop 40 */
		int i = record_at(&e, s);
		char *line = e.line[i];
		char num[16];
		snprintf(num, sizeof(num), "%d", s + 1);
		char *comma = strchr(line, ',');
		char *nl = malloc(strlen(line) + 8);
		sprintf(nl, "{\"seq\":%s%s", num, comma);
		free(line);
		e.line[i] = nl;
	}
	drop(&e, record_at(&e, RECORDS));
	entry(21, "tenant.delete", buf, sizeof(buf));
	put(&e, at, buf);
	fails_with(&e, NULL, "the head of size 30");
	export_free(&e);
}
END_TEST

START_TEST(reordered_records_are_named)
{
	export e = {0};
	build(&e, RECORDS, -1);
	int a = record_at(&e, 3), b = record_at(&e, 4);
	char *t = e.line[a];
	e.line[a] = e.line[b];
	e.line[b] = t;
	fails_with(&e, NULL, "records seq 3 to seq 3 are missing before record seq 4");
	export_free(&e);
}
END_TEST

START_TEST(truncation_is_caught)
{
	export e = {0};
	build(&e, RECORDS, -1);
	/* the last records gone, the head left */
	while (strncmp(e.line[e.n - 1], "{\"seq\":35,", 10) != 0)
		drop(&e, e.n - 1);
	fails_with(&e, NULL, "truncated: 36 records, the export's head counts 40");
	/* and the head that counted them gone too: an older head signs no less */
	export_free(&e);
	build(&e, RECORDS, -1);
	drop(&e, 0);
	fails_with(&e, NULL, "the export does not start with its tree head");
	export_free(&e);
}
END_TEST

START_TEST(forged_heads_are_caught)
{
	export e = {0};
	build(&e, RECORDS, -1);
	/* the export's head signed by another key */
	audit_signer other;
	ck_assert_int_eq(auditsign_from_private(&other, other_priv), 0);
	merkle_hash root;
	auditlog_head h;
	char err[256], buf[1024];
	ck_assert_int_eq(auditverify_head_parse(e.line[0], strlen(e.line[0]), &h, err, sizeof(err)),
	                 0);
	memcpy(root, h.root, MERKLE_HASH_LEN);
	head_line(&other, RECORDS, root, h.at, buf, sizeof(buf));
	free(e.line[0]);
	e.line[0] = strdup(buf);
	fails_with(&e, NULL, "the export's head (size 40) is not signed by this key: forged");
	/* a head in between with its size changed */
	export_free(&e);
	build(&e, RECORDS, -1);
	int i = record_at(&e, 20) - 1; /* the head of size 20 */
	char *p = strstr(e.line[i], "\"size\":20");
	ck_assert_ptr_nonnull(p);
	p[8] = '1';
	fails_with(&e, NULL, "the head of size 21 is not signed by this key");
	/* its time changed */
	export_free(&e);
	build(&e, RECORDS, -1);
	i = record_at(&e, 30) - 1;
	p = strstr(e.line[i], "08:01:00");
	ck_assert_ptr_nonnull(p);
	p[4] = '2';
	fails_with(&e, NULL, "the head of size 30 is not signed by this key");
	auditsign_release(&other);
	export_free(&e);
}
END_TEST

START_TEST(growing_log_is_consistent)
{
	/* an auditor kept the head of the log at 20 records; the log grew to 40 */
	export first = {0}, second = {0};
	build(&first, 20, -1);
	build(&second, RECORDS, -1);
	char problem[512], err[256];
	ck_assert_int_eq(verify(&first, NULL, problem, sizeof(problem)), 0);
	auditlog_head seen;
	ck_assert_int_eq(
	    auditverify_head_parse(first.line[0], strlen(first.line[0]), &seen, err, sizeof(err)),
	    0);
	ck_assert_int_eq(seen.size, 20);
	ck_assert_int_eq(verify(&second, &seen, problem, sizeof(problem)), 0);
	/* a log rolled back to 10 records, though it is a good log of its own */
	export_free(&second);
	build(&second, 10, -1);
	ck_assert_int_eq(verify(&second, NULL, problem, sizeof(problem)), 0);
	fails_with(&second, &seen,
	           "rolled back: the export's head has size 10, a head seen before "
	           "has size 20");
	/* history rewritten and every head signed anew: it holds alone, not against seen */
	export_free(&second);
	build(&second, RECORDS, 7);
	ck_assert_int_eq(verify(&second, NULL, problem, sizeof(problem)), 0);
	fails_with(&second, &seen,
	           "rewritten: the first 20 records do not give the root of the head seen before");
	/* a head seen before that this key never signed */
	export_free(&second);
	build(&second, RECORDS, -1);
	seen.signature[0] ^= 1;
	fails_with(&second, &seen, "the head seen before (size 20) is not signed by this key");
	export_free(&first);
	export_free(&second);
}
END_TEST

START_TEST(garbage_is_refused)
{
	export e = {0};
	char problem[512];
	ck_assert_int_eq(verify(&e, NULL, problem, sizeof(problem)), -1);
	ck_assert_ptr_nonnull(strstr(problem, "the export is empty"));
	add(&e, "not json");
	fails_with(&e, NULL, "does not start with its tree head");
	export_free(&e);
	build(&e, RECORDS, -1);
	put(&e, 3, "{\"type\":\"note\"}");
	fails_with(&e, NULL, "line after record seq 1: not a tree head");
	export_free(&e);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("auditverify");
	TCase *tc = tcase_create("tamper");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, untouched_export_verifies);
	tcase_add_test(tc, edited_record_fails_at_its_head);
	tcase_add_test(tc, deleted_record_is_named);
	tcase_add_test(tc, inserted_record_is_named);
	tcase_add_test(tc, reordered_records_are_named);
	tcase_add_test(tc, truncation_is_caught);
	tcase_add_test(tc, forged_heads_are_caught);
	tcase_add_test(tc, growing_log_is_consistent);
	tcase_add_test(tc, garbage_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
