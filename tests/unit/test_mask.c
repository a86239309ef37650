/*
 * test_mask.c - masking personal data in raw text: each built-in pattern
 * on what it must and must not mask (as a table of line in, line out), the
 * order of the patterns and their counts, custom patterns and the ones a
 * policy refuses, and the streaming masker: pieces of any size, lines cut
 * at the limit or refused, emit failures, match limits, the last line
 * without '\n', bytes that are not UTF-8, and the policy and counts as JSON.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "mask.h"
#include "unit.h"

enum { EMAIL, CARD, IPV6, IPV4, PHONE };

/* What a masker emitted: the bytes, and how many emit calls. */
typedef struct sink {
	char *p;
	size_t len, cap;
	int calls;
	int fail_at; /* the call (from 1) that fails with -ERR_STORAGE_IO; 0: none */
} sink;

static int sink_emit(void *arg, const void *buf, size_t n)
{
	sink *s = arg;
	if (++s->calls == s->fail_at)
		return -ERR_STORAGE_IO;
	ck_assert_uint_gt(n, 0);
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 256;
		while (cap < s->len + n + 1)
			cap *= 2;
		s->p = realloc(s->p, cap);
		ck_assert_ptr_nonnull(s->p);
		s->cap = cap;
	}
	memcpy(s->p + s->len, buf, n);
	s->len += n;
	s->p[s->len] = '\0';
	return 0;
}

static mask_policy *policy_builtin(void)
{
	mask_policy *p = NULL;
	char err[256] = "";
	ck_assert_msg(mask_policy_new(NULL, 0, &p, err, sizeof(err)) == 0, "%s", err);
	return p;
}

/*
 * Mask in[0..n) with p, fed in pieces of step bytes (0: all at once), then
 * finished. OUT: out (freed by the caller, NUL-terminated), counts[0..count).
 */
static void mask_all(const mask_policy *p, const char *in, size_t n, size_t step, sink *out,
                     uint64_t *counts)
{
	masker *m = NULL;
	char err[256] = "";
	ck_assert_int_eq(masker_new(p, &m), 0);
	memset(out, 0, sizeof(*out));
	for (size_t off = 0; off < n;) {
		size_t k = step && n - off > step ? step : n - off;
		int rc = masker_feed(m, in + off, k, sink_emit, out, err, sizeof(err));
		ck_assert_msg(rc == 0, "feed: %d %s", rc, err);
		off += k;
	}
	ck_assert_msg(masker_finish(m, sink_emit, out, err, sizeof(err)) == 0, "%s", err);
	if (counts)
		memcpy(counts, masker_counts(m), mask_policy_count(p) * sizeof(uint64_t));
	masker_free(m);
	if (!out->p)
		out->p = calloc(1, 1);
}

/* ---- the built-in patterns, as a table -------------------------------- */

typedef struct mask_case {
	const char *in, *out; /* out NULL: unchanged */
} mask_case;

static const mask_case cases[] = {
    /* email */
    {"mail john.doe+tag@example.co.uk now", "mail [EMAIL] now"},
    {"write to a@b.com.", "write to [EMAIL]."},
    {"x_y%z-w@sub-domain.example.org", "[EMAIL]"},
    {"<Jane.Roe@Example.COM>", "<[EMAIL]>"},
    {"two: a@x.io,b@y.io", "two: [EMAIL],[EMAIL]"},
    /* the end of one hides the start of the next: a second pass finds it */
    {"mail%-e@a.mail%-e@a.cemlcemlpkm", "[EMAIL][EMAIL]"},
    {"a@b.io%c@d.io%e@f.io", "[EMAIL]%c@[EMAIL]"},
    {"user@localhost", NULL},
    {"name@example.c", NULL},
    {"@example.com and a@ and a@.com", NULL},
    {"john4155550123@example.com", "[EMAIL]"},
    {"ops+1-415-555-0123@example.com", "[EMAIL]"},
    {"user@192.168.1.1", "user@[IPV4]"},
    /* card: Luhn valid numbers masked, others left */
    {"card 4111 1111 1111 1111 ok", "card [CARD] ok"},
    {"4111-1111-1111-1111", "[CARD]"},
    {"4111111111111111", "[CARD]"},
    {"mc 5500 0000 0000 0004, amex 378282246310005", "mc [CARD], amex [CARD]"},
    {"visa13 4222222222222", "visa13 [CARD]"},
    {"4111 1111 1111 1112", NULL},
    {"4111-1111-1111-1112", NULL},
    {"4111111111111112", NULL},
    {"x4111111111111111", NULL},
    {"4111111111111111y", NULL},
    {"41111111111111111111", NULL},
    {"4111--1111--1111--1111", NULL},
    {"order 12 4111111111111111", "order 12 [CARD]"},
    {"4111 1111 1111 1111 12/27", "[CARD] 12/27"},
    {"4111 1111 1111 1111 123", "[CARD] 123"},
    {"amex 3782 822463 10005.", "amex [CARD]."},
    {"4111 1111 1111 1111 003", "[CARD]"},
    {"numbers 3000000 4000000", NULL},
    {"4111 1111-1111 1111", "[CARD]"},
    /* ipv6 */
    {"2001:0db8:85a3:0000:0000:8a2e:0370:7334", "[IPV6]"},
    {"from 2001:db8::1 and fe80::1%eth0", "from [IPV6] and [IPV6]%eth0"},
    {"::1", "[IPV6]"},
    {"[::1]:8080", "[[IPV6]]:8080"},
    {"::ffff:192.0.2.1", "[IPV6]"},
    {"64:ff9b::192.0.2.33 mapped", "[IPV6] mapped"},
    {"1:2:3:4:5:6:7:8", "[IPV6]"},
    {"1:2:3:4:5:6:7:: and 1::2:3:4:5:6:7", "[IPV6] and [IPV6]"},
    {"ip:fe80::1ff:fe23:4567:890a.", "ip:[IPV6]."},
    {"fe80::1: unreachable", "[IPV6]: unreachable"},
    {"at 12:30 and 10:20:30, 2024-05-20T12:30:45Z", NULL},
    {"std::vector<int> v; a :: b", NULL},
    {"1:2:3:4:5:6:7:8:9", NULL},
    {"1:2:3:4:5:6:7:8::", NULL},
    {"deadbeef:cafe", NULL},
    /* ipv4 */
    {"host 10.0.0.1.", "host [IPV4]."},
    {"192.168.1.255 and 0.0.0.0", "[IPV4] and [IPV4]"},
    {"padded 192.168.001.010", "padded [IPV4]"},
    {"ip=10.1.2.3:8080", "ip=[IPV4]:8080"},
    {"256.1.1.1 and 1.2.3.256", NULL},
    {"1.2.3.4.5", NULL},
    {"version 1.2.3.4.5.6", NULL},
    {"version 1.2.3", NULL},
    {"10.0.0.1234", NULL},
    /* phone */
    {"call +1 415 555 0123 now", "call [PHONE] now"},
    {"+44 20 7946 0958", "[PHONE]"},
    {"+4915112345678", "[PHONE]"},
    {"+1 (415) 555-0123", "[PHONE]"},
    {"+44 (0)20 7946 0958", "[PHONE]"},
    {"(415) 555-0123", "[PHONE]"},
    {"415-555-0123 or 415.555.0123", "[PHONE] or [PHONE]"},
    {"020 7946 0958", "[PHONE]"},
    {"call 1-800-555-0199", "call [PHONE]"},
    {"2024-05-20", NULL},
    {"on 2024-05-20 12:30 UTC", NULL},
    {"20.05.2024 and 05/20/2024", NULL},
    {"4155550123", NULL},
    {"1990-2000 and 94105-1234", NULL},
    {"+12345", NULL},
    {"+1234567890123456789", NULL},
    {"123415-555-0123", NULL},
    {"1+2345678", NULL},
    /* several at once, and text with none */
    {"a@b.org 10.0.0.1 ::1 +1 415 555 0123 4111111111111111",
     "[EMAIL] [IPV4] [IPV6] [PHONE] [CARD]"},
    {"", NULL},
    {"nothing personal here, 42 apples", NULL},
};

START_TEST(builtin_table)
{
	const mask_case *c = &cases[_i];
	mask_policy *p = policy_builtin();
	sink out;
	mask_all(p, c->in, strlen(c->in), 0, &out, NULL);
	const char *want = c->out ? c->out : c->in;
	ck_assert_msg(strcmp(out.p, want) == 0, "\"%s\": got \"%s\", want \"%s\"", c->in, out.p,
	              want);
	free(out.p);
	mask_policy_free(p);
}
END_TEST

START_TEST(names_and_counts)
{
	mask_policy *p = policy_builtin();
	static const char *const names[] = {"email", "card", "ipv6", "ipv4", "phone"};
	static const char *const holders[] = {"[EMAIL]", "[CARD]", "[IPV6]", "[IPV4]", "[PHONE]"};
	ck_assert_uint_eq(mask_policy_count(p), MASK_BUILTIN_MAX);
	for (size_t i = 0; i < MASK_BUILTIN_MAX; i++) {
		ck_assert_str_eq(mask_policy_name(p, i), names[i]);
		ck_assert_str_eq(mask_policy_placeholder(p, i), holders[i]);
	}
	ck_assert_ptr_null(mask_policy_name(p, MASK_BUILTIN_MAX));
	const char *text = "a@b.io c@d.io\n"
	                   "4111 1111 1111 1111 and 4111 1111 1111 1112\n"
	                   "fe80::1 10.0.0.1 10.0.0.2 10.0.0.3\n"
	                   "+1 415 555 0123, 2024-05-20\n"
	                   "john4155550123@example.com\n";
	sink out;
	uint64_t counts[MASK_BUILTIN_MAX];
	mask_all(p, text, strlen(text), 0, &out, counts);
	ck_assert_str_eq(out.p, "[EMAIL] [EMAIL]\n"
	                        "[CARD] and 4111 1111 1111 1112\n"
	                        "[IPV6] [IPV4] [IPV4] [IPV4]\n"
	                        "[PHONE], 2024-05-20\n"
	                        "[EMAIL]\n");
	ck_assert_uint_eq(counts[EMAIL], 3);
	ck_assert_uint_eq(counts[CARD], 1);
	ck_assert_uint_eq(counts[IPV6], 1);
	ck_assert_uint_eq(counts[IPV4], 3);
	ck_assert_uint_eq(counts[PHONE], 1);
	free(out.p);

	/* Counts as JSON: every pattern, zeros included. */
	masker *m = NULL;
	ck_assert_int_eq(masker_new(p, &m), 0);
	memset(&out, 0, sizeof(out));
	ck_assert_int_eq(masker_feed(m, "x 10.0.0.1\n", 11, sink_emit, &out, NULL, 0), 0);
	json_t *j = masker_counts_json(m);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(json_object_size(j), MASK_BUILTIN_MAX);
	for (size_t i = 0; i < MASK_BUILTIN_MAX; i++) {
		json_t *v = json_object_get(j, names[i]);
		ck_assert_msg(json_is_integer(v), "%s", names[i]);
		ck_assert_int_eq(json_integer_value(v), i == IPV4 ? 1 : 0);
	}
	json_decref(j);
	masker_free(m);
	free(out.p);
	mask_policy_free(p);
}
END_TEST

START_TEST(policy_json)
{
	mask_policy *p = NULL;
	mask_custom c[] = {{"employee_id", "EMP-[0-9]{6}"}, {"ticket", "TCK#[A-Z]{3}"}};
	ck_assert_int_eq(mask_policy_new(c, 2, &p, NULL, 0), 0);
	json_t *j = mask_policy_json(p);
	ck_assert_ptr_nonnull(j);
	char *s = json_dumps(j, JSON_COMPACT);
	ck_assert_str_eq(s, "{\"version\":1,\"builtin\":[\"email\",\"card\",\"ipv6\",\"ipv4\","
	                    "\"phone\"],\"custom\":[{\"name\":\"employee_id\",\"regex\":"
	                    "\"EMP-[0-9]{6}\"},{\"name\":\"ticket\",\"regex\":\"TCK#[A-Z]{3}\"}]}");
	free(s);
	json_decref(j);
	mask_policy_free(p);

	p = policy_builtin();
	j = mask_policy_json(p);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "custom")), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "builtin")), 5);
	json_decref(j);
	mask_policy_free(p);
}
END_TEST

/* ---- custom patterns ---------------------------------------------------- */

START_TEST(custom_masked_and_counted)
{
	mask_policy *p = NULL;
	char err[256] = "";
	mask_custom c[] = {{"employee_id", "EMP-[0-9]{6}"}, {"badge2", "B[A-Z]{2}[0-9]{2}"}};
	ck_assert_msg(mask_policy_new(c, 2, &p, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(mask_policy_count(p), MASK_BUILTIN_MAX + 2);
	ck_assert_str_eq(mask_policy_name(p, 5), "employee_id");
	ck_assert_str_eq(mask_policy_name(p, 6), "badge2");
	ck_assert_str_eq(mask_policy_placeholder(p, 5), "[EMPLOYEE_ID]");
	ck_assert_str_eq(mask_policy_placeholder(p, 6), "[BADGE2]");
	const char *text = "EMP-123456 met EMP-654321 (BXY12) at a@b.io\nEMP-12345 is short\n";
	sink out;
	uint64_t counts[MASK_BUILTIN_MAX + 2];
	mask_all(p, text, strlen(text), 0, &out, counts);
	ck_assert_str_eq(out.p, "[EMPLOYEE_ID] met [EMPLOYEE_ID] ([BADGE2]) at [EMAIL]\n"
	                        "EMP-12345 is short\n");
	ck_assert_uint_eq(counts[5], 2);
	ck_assert_uint_eq(counts[6], 1);
	ck_assert_uint_eq(counts[EMAIL], 1);
	free(out.p);

	masker *m = NULL;
	ck_assert_int_eq(masker_new(p, &m), 0);
	json_t *j = masker_counts_json(m);
	ck_assert_uint_eq(json_object_size(j), MASK_BUILTIN_MAX + 2);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "employee_id")), 0);
	json_decref(j);
	masker_free(m);
	mask_policy_free(p);
}
END_TEST

/* A custom pattern that can match empty in context is never applied empty. */
START_TEST(custom_empty_in_context)
{
	mask_policy *p = NULL;
	mask_custom c[] = {{"word_start", "\\b"}, {"secret", "(?<=key=)[a-z]+"}};
	ck_assert_int_eq(mask_policy_new(c, 2, &p, NULL, 0), 0);
	const char *text = "key=abc other words\n";
	sink out;
	uint64_t counts[MASK_BUILTIN_MAX + 2];
	mask_all(p, text, strlen(text), 0, &out, counts);
	ck_assert_str_eq(out.p, "key=[SECRET] other words\n");
	ck_assert_uint_eq(counts[5], 0);
	ck_assert_uint_eq(counts[6], 1);
	free(out.p);
	mask_policy_free(p);
}
END_TEST

typedef struct bad_case {
	const char *name, *regex;
	const char *why; /* pieces of the message, '|' between */
} bad_case;

static char long_regex[MASK_REGEX_MAX + 2];
static char long_name[MASK_NAME_MAX + 2];

static const bad_case bad[] = {
    {"emp", "EMP-(", "\"emp\"|does not compile|missing closing parenthesis|offset 5"},
    {"emp", "[z-a]", "\"emp\"|does not compile|offset"},
    {"emp", "x*", "\"emp\"|empty string"},
    {"emp", "(?:abc)?|", "\"emp\"|empty string"},
    {"emp", "^", "\"emp\"|empty string"},
    {"emp", "(*UTF)caf\\x{e9}", "\"emp\"|does not compile"},
    {"emp", "", "\"emp\"|missing"},
    {"emp", NULL, "\"emp\"|missing"},
    {"email", "x", "\"email\"|built-in"},
    {"phone", "x", "\"phone\"|built-in"},
    {"Emp", "x", "mask pattern 0|name"},
    {"1emp", "x", "mask pattern 0|name"},
    {"emp-id", "x", "mask pattern 0|name"},
    {"", "x", "mask pattern 0|name"},
    {NULL, "x", "mask pattern 0|name"},
    {long_name, "x", "mask pattern 0|name"},
    {"emp", long_regex, "\"emp\"|longer than 512"},
};

static void expect_pieces(const char *msg, const char *pieces)
{
	char want[256];
	snprintf(want, sizeof(want), "%s", pieces);
	for (char *save = NULL, *w = strtok_r(want, "|", &save); w; w = strtok_r(NULL, "|", &save))
		ck_assert_msg(strstr(msg, w), "message \"%s\" lacks \"%s\"", msg, w);
}

START_TEST(custom_refused)
{
	memset(long_regex, 'a', MASK_REGEX_MAX + 1);
	memset(long_name, 'a', MASK_NAME_MAX + 1);
	const bad_case *b = &bad[_i];
	mask_custom c = {b->name, b->regex};
	mask_policy *p = (mask_policy *)1;
	char err[256] = "";
	int rc = mask_policy_new(&c, 1, &p, err, sizeof(err));
	ck_assert_msg(rc == -ERR_F_INVALID_VALUE, "%s: rc %d (%s)", b->regex, rc, err);
	ck_assert_ptr_null(p);
	expect_pieces(err, b->why);
}
END_TEST

START_TEST(custom_refused_policy)
{
	char err[256] = "";
	mask_policy *p = NULL;

	/* The longest name and regex are fine. */
	memset(long_regex, 'a', MASK_REGEX_MAX);
	long_regex[MASK_REGEX_MAX] = '\0';
	memset(long_name, 'a', MASK_NAME_MAX);
	long_name[MASK_NAME_MAX] = '\0';
	mask_custom ok = {long_name, long_regex};
	ck_assert_msg(mask_policy_new(&ok, 1, &p, err, sizeof(err)) == 0, "%s", err);
	mask_policy_free(p);

	mask_custom dup[] = {{"emp", "EMP-[0-9]+"}, {"other", "X"}, {"emp", "E[0-9]+"}};
	ck_assert_int_eq(mask_policy_new(dup, 3, &p, err, sizeof(err)), -ERR_F_INVALID_VALUE);
	ck_assert_ptr_null(p);
	expect_pieces(err, "\"emp\"|twice");

	/* Sixteen are allowed, seventeen are not. */
	mask_custom many[MASK_CUSTOM_MAX + 1];
	char names[MASK_CUSTOM_MAX + 1][16];
	for (int i = 0; i <= MASK_CUSTOM_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "p%d", i);
		many[i] = (mask_custom){names[i], "Q[0-9]+"};
	}
	ck_assert_msg(mask_policy_new(many, MASK_CUSTOM_MAX, &p, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(mask_policy_count(p), MASK_BUILTIN_MAX + MASK_CUSTOM_MAX);
	mask_policy_free(p);
	ck_assert_int_eq(mask_policy_new(many, MASK_CUSTOM_MAX + 1, &p, err, sizeof(err)),
	                 -ERR_F_INVALID_VALUE);
	ck_assert_ptr_null(p);
	expect_pieces(err, "at most 16");
}
END_TEST

/* ---- streaming ---------------------------------------------------------- */

static const char stream_text[] =
    "Dear Jane (jane.roe@example.com), your card 4111-1111-1111-1111 was used\n"
    "from 192.168.10.20 and 2001:db8::8a2e:370:7334 on 2024-05-20 12:30.\n"
    "\n"
    "Call +44 20 7946 0958 or (415) 555-0123; ref EMP-001234.\r\n"
    "bytes \xff\xfe\x80\xc3( and \x01\x02 then bob@example.org\n"
    "no newline at the end: 10.9.8.7";

static const char stream_masked[] = "Dear Jane ([EMAIL]), your card [CARD] was used\n"
                                    "from [IPV4] and [IPV6] on 2024-05-20 12:30.\n"
                                    "\n"
                                    "Call [PHONE] or [PHONE]; ref [EMP].\r\n"
                                    "bytes \xff\xfe\x80\xc3( and \x01\x02 then [EMAIL]\n"
                                    "no newline at the end: [IPV4]";

START_TEST(pieces_of_any_size)
{
	mask_policy *p = NULL;
	mask_custom c = {"emp", "EMP-[0-9]{6}"};
	ck_assert_int_eq(mask_policy_new(&c, 1, &p, NULL, 0), 0);
	size_t n = sizeof(stream_text) - 1;
	sink whole;
	uint64_t want[MASK_BUILTIN_MAX + 1], got[MASK_BUILTIN_MAX + 1];
	mask_all(p, stream_text, n, 0, &whole, want);
	ck_assert_uint_eq(whole.len, sizeof(stream_masked) - 1);
	ck_assert(memcmp(whole.p, stream_masked, whole.len) == 0);
	ck_assert_uint_eq(want[EMAIL], 2);
	ck_assert_uint_eq(want[CARD], 1);
	ck_assert_uint_eq(want[IPV6], 1);
	ck_assert_uint_eq(want[IPV4], 2);
	ck_assert_uint_eq(want[PHONE], 2);
	ck_assert_uint_eq(want[5], 1);
	static const size_t steps[] = {1, 2, 3, 7, 64};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		sink part;
		mask_all(p, stream_text, n, steps[i], &part, got);
		ck_assert_msg(part.len == whole.len && memcmp(part.p, whole.p, whole.len) == 0,
		              "step %zu: \"%s\"", steps[i], part.p);
		ck_assert(memcmp(got, want, sizeof(want)) == 0);
		free(part.p);
	}
	free(whole.p);
	mask_policy_free(p);
}
END_TEST

START_TEST(line_split_across_feeds)
{
	mask_policy *p = policy_builtin();
	masker *m = NULL;
	sink out = {0};
	char err[256] = "";
	ck_assert_int_eq(masker_new(p, &m), 0);
	ck_assert_int_eq(
	    masker_feed(m, "first line\ncontact jo", 21, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_str_eq(out.p, "first line\n"); /* the rest waits for its '\n' */
	ck_assert_int_eq(masker_feed(m, "hn.d", 4, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_int_eq(masker_feed(m, "oe@exam", 7, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_int_eq(
	    masker_feed(m, "ple.com\nlast +1 415 555 01", 26, sink_emit, &out, err, sizeof(err)),
	    0);
	ck_assert_str_eq(out.p, "first line\ncontact [EMAIL]\n");
	ck_assert_int_eq(masker_feed(m, "23", 2, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_int_eq(masker_finish(m, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_str_eq(out.p, "first line\ncontact [EMAIL]\nlast [PHONE]");
	ck_assert_int_eq(out.calls, 3);
	/* Finishing again, with nothing pending, emits nothing. */
	ck_assert_int_eq(masker_finish(m, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_int_eq(out.calls, 3);
	ck_assert_uint_eq(masker_counts(m)[EMAIL], 1);
	ck_assert_uint_eq(masker_counts(m)[PHONE], 1);
	masker_free(m);
	free(out.p);
	mask_policy_free(p);
}
END_TEST

/* A line of words longer than MASK_LINE_MAX: cut after a space, every part masked. */
START_TEST(long_line_cut)
{
	mask_policy *p = policy_builtin();
	const char word[] = "mail a.person@example.com ";
	size_t wl = sizeof(word) - 1, words = MASK_LINE_MAX / wl * 3 + 5;
	size_t n = wl * words + 1;
	char *text = malloc(n);
	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i < words; i++)
		memcpy(text + i * wl, word, wl);
	text[n - 1] = '\n';
	static const size_t steps[] = {0, 4096, 65537};
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		sink out;
		uint64_t counts[MASK_BUILTIN_MAX];
		mask_all(p, text, n, steps[s], &out, counts);
		ck_assert_uint_eq(counts[EMAIL], words);
		ck_assert_uint_eq(out.len, words * strlen("mail [EMAIL] ") + 1);
		ck_assert_int_ge(out.calls, 3);
		ck_assert_ptr_null(strstr(out.p, "@"));
		ck_assert_int_eq(out.p[out.len - 1], '\n');
		free(out.p);
	}
	free(text);
	mask_policy_free(p);
}
END_TEST

/*
 * A line longer than MASK_LINE_MAX with a card number (grouped by spaces),
 * a phone number or an e-mail address across the limit, where a cut after
 * the last space within it would split the number: each is masked once,
 * whole, and no digit of it is left.
 */
START_TEST(long_line_match_across_cut)
{
	static const struct {
		const char *item;
		size_t before; /* bytes of the item within the first MASK_LINE_MAX */
		int pattern;
		const char *placeholder;
	} across[] = {
	    {"4111 1111 1111 1111", 12, CARD, "[CARD]"},
	    {"4111 1111 1111 1111", 5, CARD, "[CARD]"},
	    {"020 7946 0958", 9, PHONE, "[PHONE]"},
	    {"a.person@example.com", 9, EMAIL, "[EMAIL]"},
	    {"a.person@example.com", 17, EMAIL, "[EMAIL]"},
	};
	mask_policy *p = policy_builtin();
	size_t cap = MASK_LINE_MAX + 64;
	char *text = malloc(cap);
	ck_assert_ptr_nonnull(text);
	for (size_t c = 0; c < sizeof(across) / sizeof(across[0]); c++) {
		size_t il = strlen(across[c].item), head = MASK_LINE_MAX - across[c].before;
		/* Words of seven letters, the last one ending right before the item. */
		for (size_t i = 0; i < head; i++)
			text[i] = (i + 1) % 8 == 0 ? ' ' : 'w';
		text[head > 0 ? head - 1 : 0] = ' ';
		memcpy(text + head, across[c].item, il);
		memcpy(text + head + il, " tail\n", 6);
		size_t n = head + il + 6;
		static const size_t steps[] = {0, 4096, 65537};
		for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			sink out;
			uint64_t counts[MASK_BUILTIN_MAX];
			mask_all(p, text, n, steps[s], &out, counts);
			ck_assert_msg(counts[across[c].pattern] == 1,
			              "\"%s\" %zu bytes before the cut: %llu matches",
			              across[c].item, across[c].before,
			              (unsigned long long)counts[across[c].pattern]);
			ck_assert_uint_eq(out.len, head + strlen(across[c].placeholder) + 6);
			ck_assert(memcmp(out.p, text, head) == 0);
			ck_assert(memcmp(out.p + head, across[c].placeholder,
			                 strlen(across[c].placeholder)) == 0);
			ck_assert_str_eq(out.p + head + strlen(across[c].placeholder), " tail\n");
			ck_assert_ptr_null(memchr(out.p, '1', out.len));
			ck_assert_ptr_null(memchr(out.p, '@', out.len));
			free(out.p);
		}
	}
	free(text);
	mask_policy_free(p);
}
END_TEST

/*
 * Card numbers and e-mail addresses over three cuts of a long line, the
 * first after a space inside a card number: each masked exactly once.
 */
START_TEST(long_line_cut_counts_once)
{
	mask_policy *p = policy_builtin();
	const char unit[] = "pay 4111 1111 1111 1111 or mail a.person@example.com now ";
	size_t ul = sizeof(unit) - 1, units = MASK_LINE_MAX / ul * 3 + 7;
	/* A first word of 39 bytes puts the first cut's last space inside a card number. */
	size_t lead = 40, n = lead + ul * units + 1;
	char *text = malloc(n);
	ck_assert_ptr_nonnull(text);
	memset(text, 'w', lead - 1);
	text[lead - 1] = ' ';
	for (size_t i = 0; i < units; i++)
		memcpy(text + lead + i * ul, unit, ul);
	text[n - 1] = '\n';
	sink out;
	uint64_t counts[MASK_BUILTIN_MAX];
	mask_all(p, text, n, 0, &out, counts);
	ck_assert_uint_eq(counts[CARD], units);
	ck_assert_uint_eq(counts[EMAIL], units);
	ck_assert_uint_eq(out.len, lead + units * strlen("pay [CARD] or mail [EMAIL] now ") + 1);
	ck_assert(memcmp(out.p, text, lead) == 0);
	ck_assert_ptr_null(memchr(out.p, '1', out.len));
	free(out.p);
	free(text);
	mask_policy_free(p);
}
END_TEST

/*
 * A line over MASK_LINE_MAX whose every space lies inside one possible
 * match of a custom pattern cannot be cut without splitting it: refused,
 * nothing of the line emitted.
 */
START_TEST(long_line_uncuttable_refused)
{
	mask_policy *p = NULL;
	char err[256] = "";
	mask_custom c = {"chain", "ab(?: ab)*"};
	ck_assert_msg(mask_policy_new(&c, 1, &p, err, sizeof(err)) == 0, "%s", err);
	size_t n = 2 * MASK_LINE_MAX + 1;
	char *text = malloc(n);
	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i + 1 < n; i++)
		text[i] = "ab "[i % 3];
	text[n - 1] = '\n';
	masker *m = NULL;
	ck_assert_int_eq(masker_new(p, &m), 0);
	sink out = {0};
	ck_assert_int_eq(masker_feed(m, "short ab ab\n", 12, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_int_eq(masker_feed(m, text, n, sink_emit, &out, err, sizeof(err)),
	                 -ERR_TEXT_UNMASKABLE);
	ck_assert_msg(strstr(err, "possible match"), "%s", err);
	ck_assert_str_eq(out.p, "short [CHAIN]\n");
	masker_free(m);
	free(out.p);
	free(text);
	mask_policy_free(p);
}
END_TEST

START_TEST(long_run_refused)
{
	mask_policy *p = policy_builtin();
	char err[256] = "";
	size_t n = 18 + MASK_LINE_MAX + 1;
	char *text = malloc(n);
	ck_assert_ptr_nonnull(text);

	/* Exactly MASK_LINE_MAX bytes without a space, then '\n': one line, fine. */
	memset(text, 'x', MASK_LINE_MAX);
	text[MASK_LINE_MAX] = '\n';
	sink out;
	mask_all(p, text, MASK_LINE_MAX + 1, 1000, &out, NULL);
	ck_assert_uint_eq(out.len, MASK_LINE_MAX + 1);
	free(out.p);

	/*
	 * One byte more is refused, fed whole or in pieces: what comes before
	 * the run's last space or tab is emitted, nothing of the run.
	 */
	static const size_t steps[] = {0, 1 << 16};
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		memcpy(text, "head\nwith a space ", 18);
		memset(text + 18, 'x', n - 18);
		masker *m = NULL;
		ck_assert_int_eq(masker_new(p, &m), 0);
		memset(&out, 0, sizeof(out));
		int rc = 0;
		size_t step = steps[s] ? steps[s] : n;
		for (size_t off = 0; rc == 0 && off < n; off += step)
			rc = masker_feed(m, text + off, n - off < step ? n - off : step, sink_emit,
			                 &out, err, sizeof(err));
		if (rc == 0)
			rc = masker_finish(m, sink_emit, &out, err, sizeof(err));
		ck_assert_int_eq(rc, -ERR_TEXT_UNMASKABLE);
		ck_assert_msg(strstr(err, "without a space or tab"), "%s", err);
		ck_assert_uint_eq(out.len, strlen("head\nwith a space "));
		/* Every later call fails too. */
		ck_assert_int_eq(masker_feed(m, "a\n", 2, sink_emit, &out, err, sizeof(err)),
		                 -ERR_TEXT_UNMASKABLE);
		ck_assert_int_eq(masker_finish(m, sink_emit, &out, err, sizeof(err)),
		                 -ERR_TEXT_UNMASKABLE);
		masker_free(m);
		free(out.p);
	}
	free(text);
	mask_policy_free(p);
}
END_TEST

START_TEST(emit_failure_passed_back)
{
	mask_policy *p = policy_builtin();
	masker *m = NULL;
	char err[256] = "the writer's own message";
	ck_assert_int_eq(masker_new(p, &m), 0);
	sink out = {.fail_at = 2};
	ck_assert_int_eq(masker_feed(m, "one\ntwo\nthree\n", 14, sink_emit, &out, err, sizeof(err)),
	                 -ERR_STORAGE_IO);
	ck_assert_str_eq(out.p, "one\n");
	ck_assert_str_eq(err, "the writer's own message");
	ck_assert_int_eq(masker_feed(m, "four\n", 5, sink_emit, &out, err, sizeof(err)),
	                 -ERR_STORAGE_IO);
	ck_assert_int_eq(masker_finish(m, sink_emit, &out, err, sizeof(err)), -ERR_STORAGE_IO);
	ck_assert_str_eq(out.p, "one\n");
	masker_free(m);
	free(out.p);

	/* In masker_finish too. */
	ck_assert_int_eq(masker_new(p, &m), 0);
	memset(&out, 0, sizeof(out));
	out.fail_at = 1;
	ck_assert_int_eq(masker_feed(m, "a@b.io", 6, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_int_eq(masker_finish(m, sink_emit, &out, err, sizeof(err)), -ERR_STORAGE_IO);
	masker_free(m);
	free(out.p);
	mask_policy_free(p);
}
END_TEST

/* A pattern at its match limit fails the text; the line is not emitted. */
START_TEST(match_limit_fails_closed)
{
	mask_policy *p = NULL;
	char err[256] = "";
	mask_custom c = {"slow", "(?:a|aa)+$"};
	ck_assert_msg(mask_policy_new(&c, 1, &p, err, sizeof(err)) == 0, "%s", err);
	masker *m = NULL;
	ck_assert_int_eq(masker_new(p, &m), 0);
	sink out = {0};
	char line[128];
	memset(line, 'a', 60);
	memcpy(line + 60, "b\n", 3);
	ck_assert_int_eq(masker_feed(m, "fine\n", 5, sink_emit, &out, err, sizeof(err)), 0);
	ck_assert_int_eq(masker_feed(m, line, 62, sink_emit, &out, err, sizeof(err)),
	                 -ERR_TEXT_UNMASKABLE);
	ck_assert_msg(strstr(err, "\"slow\"") && strstr(err, "limit"), "%s", err);
	ck_assert_str_eq(out.p, "fine\n");
	ck_assert_int_eq(masker_finish(m, sink_emit, &out, err, sizeof(err)), -ERR_TEXT_UNMASKABLE);
	masker_free(m);
	free(out.p);
	mask_policy_free(p);
}
END_TEST

/* Bytes that are not UTF-8, NUL included, pass through unchanged. */
START_TEST(any_bytes)
{
	mask_policy *p = policy_builtin();
	char text[256 + 1];
	size_t n = 0;
	for (int b = 0; b < 256; b++)
		if (b != '\n')
			text[n++] = (char)b;
	text[n++] = '\n';
	sink out;
	mask_all(p, text, n, 0, &out, NULL);
	ck_assert_uint_eq(out.len, n);
	ck_assert(memcmp(out.p, text, n) == 0);
	free(out.p);

	static const char mixed[] = "\xc3\x28 a@b.io\xa0\xff\x00 10.0.0.1\x80";
	static const char want[] = "\xc3\x28 [EMAIL]\xa0\xff\x00 [IPV4]\x80";
	mask_all(p, mixed, sizeof(mixed) - 1, 1, &out, NULL);
	ck_assert_uint_eq(out.len, sizeof(want) - 1);
	ck_assert(memcmp(out.p, want, out.len) == 0);
	free(out.p);
	mask_policy_free(p);
}
END_TEST

/* Long runs that invite backtracking mask quickly and under the limits. */
START_TEST(long_runs_within_limits)
{
	mask_policy *p = policy_builtin();
	static const struct {
		const char *head, *unit;
	} runs[] = {
	    {"", "a"},    {"", "1"},    {"", "1."},   {"", "1:"},   {"", "1-"},   {"", "1 "},
	    {"", "+1"},   {"", "a."},   {"", "a@"},   {"", "f:"},   {"", ":"},    {"", "(1)"},
	    {"", "1.1 "}, {"x@", "a."}, {"x@", "a-"}, {"x@", "ab"}, {"::", "1:"}, {"", "a@b."},
	};
	size_t n = MASK_LINE_MAX - 16;
	char *text = malloc(n + 1);
	ck_assert_ptr_nonnull(text);
	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		size_t ul = strlen(runs[r].unit), len = strlen(runs[r].head);
		memcpy(text, runs[r].head, len);
		while (len + ul <= n) {
			memcpy(text + len, runs[r].unit, ul);
			len += ul;
		}
		text[len++] = '\n';
		masker *m = NULL;
		sink out = {0};
		char err[256] = "";
		ck_assert_int_eq(masker_new(p, &m), 0);
		int rc = masker_feed(m, text, len, sink_emit, &out, err, sizeof(err));
		ck_assert_msg(rc == 0, "run of \"%s\": %s", runs[r].unit, err);
		ck_assert_uint_ge(out.len, 1);
		masker_free(m);
		free(out.p);
	}
	free(text);
	mask_policy_free(p);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("mask");
	TCase *tc = tcase_create("builtin");
	tcase_add_loop_test(tc, builtin_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, names_and_counts);
	tcase_add_test(tc, policy_json);
	suite_add_tcase(s, tc);
	tc = tcase_create("custom");
	tcase_add_test(tc, custom_masked_and_counted);
	tcase_add_test(tc, custom_empty_in_context);
	tcase_add_loop_test(tc, custom_refused, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, custom_refused_policy);
	suite_add_tcase(s, tc);
	tc = tcase_create("stream");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, pieces_of_any_size);
	tcase_add_test(tc, line_split_across_feeds);
	tcase_add_test(tc, long_line_cut);
	tcase_add_test(tc, long_line_match_across_cut);
	tcase_add_test(tc, long_line_cut_counts_once);
	tcase_add_test(tc, long_line_uncuttable_refused);
	tcase_add_test(tc, long_run_refused);
	tcase_add_test(tc, emit_failure_passed_back);
	tcase_add_test(tc, match_limit_fails_closed);
	tcase_add_test(tc, any_bytes);
	tcase_add_test(tc, long_runs_within_limits);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
