/*
 * mask.c - masking personal data out of raw text (see mask.h).
 *
 * Every pattern is a PCRE2 regex compiled without UTF, so any byte
 * sequence is a valid subject. Two checks are C code, reached from the
 * regex through a callout at the end of a candidate match: the Luhn check
 * of a card number and the digit count of a phone number. A callout that
 * refuses makes PCRE2 backtrack, so a shorter candidate (a card number
 * followed by a CVV, say) is still tried.
 *
 * The regexes bound themselves on the left with a lookbehind, so that a
 * long run of letters or digits is scanned from its first byte only and a
 * line is matched in time about linear in its length.
 */
#include "mask.h"
#include "error.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MASK_PATTERNS_MAX (MASK_BUILTIN_MAX + MASK_CUSTOM_MAX)

/* The limits of every match, and the JIT stack of a masker. */
#define MATCH_LIMIT     10000000u
#define DEPTH_LIMIT     250000u
#define HEAP_LIMIT_KIB  (64u * 1024)
#define JIT_STACK_START (32u * 1024)
#define JIT_STACK_MAX   (8u * 1024 * 1024)

/* The callout numbers of the built-in patterns' C checks. */
enum { CHECK_LUHN = 1, CHECK_PHONE = 2 };

/* ---- the built-in patterns ------------------------------------------ */

#define HEX4  "[0-9A-Fa-f]{1,4}"
#define OCTET "(?:25[0-5]|2[0-4][0-9]|[01]?[0-9]?[0-9])"
#define DOTV4 "(?:" OCTET "\\.){3}" OCTET

/*
 * email: a local part that starts a run of its characters, '@', a domain
 * of letters, digits, dots and dashes that starts with a letter or digit
 * and ends in a dot and a label of two or more letters, not followed by a
 * letter, digit or dash.
 */
static const char re_email[] = "(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+"
                               "@[A-Za-z0-9][A-Za-z0-9.-]*\\.[A-Za-z]{2,}(?![A-Za-z0-9-])";

/*
 * card: 13 to 19 digits in one run, or in groups split by a single space
 * or dash: four digits, then two to four groups of three to six
 * ("4111 1111 1111 1111", "3782-822463-10005"). Not touching a letter or
 * digit on either side, nor after a '+' (a phone number's). Then the C
 * check: 13 to 19 digits in all that pass the Luhn check.
 */
static const char re_card[] = "(?<![0-9A-Za-z+])(?:[0-9]{13,19}|[0-9]{4}(?:[ -][0-9]{3,6}){2,4})"
                              "(?![0-9A-Za-z])(?C1)";

/*
 * ipv6: with a dotted IPv4 tail first (six groups, or a "::" with up to
 * five), then eight groups, then every "::" form with up to seven groups
 * (a and b groups on either side, a + b <= 7), "::" alone excepted. Not
 * preceded by a letter, digit, '_', '.' or a group's "h:"; not followed by
 * a letter, digit or '_', nor by ':' or '.' and one of those.
 */
static const char re_ipv6[] =
    "(?<![0-9A-Za-z_.])(?<![0-9A-Fa-f]:)(?:"
    "(?:" HEX4 ":){6}" DOTV4 "|(?:" HEX4 ":){1,5}:" DOTV4 "|(?:" HEX4 ":){1,4}:" HEX4 ":" DOTV4
    "|(?:" HEX4 ":){1,3}(?::" HEX4 "){1,2}:" DOTV4 "|(?:" HEX4 ":){1,2}(?::" HEX4 "){1,3}:" DOTV4
    "|" HEX4 ":(?::" HEX4 "){1,4}:" DOTV4 "|::(?:" HEX4 ":){0,5}" DOTV4 "|(?:" HEX4 ":){7}" HEX4
    "|(?:" HEX4 ":){1,7}:|(?:" HEX4 ":){1,6}:" HEX4 "|(?:" HEX4 ":){1,5}(?::" HEX4 "){1,2}"
    "|(?:" HEX4 ":){1,4}(?::" HEX4 "){1,3}|(?:" HEX4 ":){1,3}(?::" HEX4 "){1,4}"
    "|(?:" HEX4 ":){1,2}(?::" HEX4 "){1,5}|" HEX4 ":(?::" HEX4 "){1,6}|:(?::" HEX4 "){1,7}"
    ")(?![0-9A-Za-z_]|[:.][0-9A-Za-z_:])";

/* ipv4: four octets, not preceded by a digit or '.', not followed by a digit or ".digit". */
static const char re_ipv4[] = "(?<![0-9.])" DOTV4 "(?![0-9]|\\.[0-9])";

/*
 * phone: '+', a digit 1-9 and six to fourteen more digits or "(digits)",
 * each after an optional space, dot or dash, not followed by a digit; or a
 * national number, optionally after a "1 " trunk prefix: "(area) 555-0123"
 * or three groups of 2-5, 3-4 and 4 digits split by one kind of separator,
 * neither next to more digits (even across a separator). Then 7 to 15
 * digits in all.
 */
static const char re_phone[] =
    "(?:(?<![0-9A-Za-z_+])\\+[1-9](?:[ .-]?(?:[0-9]|\\([0-9]{1,4}\\))){6,14}(?![0-9])"
    "|(?<![0-9A-Za-z_])(?<![0-9][ .-])(?:1[ .-])?"
    "(?:\\([0-9]{1,5}\\)[ .-]?[0-9]{3,4}[ .-][0-9]{4}|[0-9]{2,5}([ .-])[0-9]{3,4}\\1[0-9]{4})"
    "(?![0-9]|[ .-][0-9]))(?C2)";

static const struct builtin {
	const char *name, *placeholder, *regex;
} builtins[MASK_BUILTIN_MAX] = {
    {"email", "[EMAIL]", re_email}, {"card", "[CARD]", re_card},    {"ipv6", "[IPV6]", re_ipv6},
    {"ipv4", "[IPV4]", re_ipv4},    {"phone", "[PHONE]", re_phone},
};

/* ---- the C checks ----------------------------------------------------- */

/* RET: whether the digits of s[0..n) (other bytes skipped) pass the Luhn check. */
static bool luhn_valid(const unsigned char *s, size_t n)
{
	unsigned sum = 0;
	bool twice = false;
	for (size_t i = n; i-- > 0;) {
		if (s[i] < '0' || s[i] > '9')
			continue;
		unsigned d = s[i] - '0';
		if (twice && (d *= 2) > 9)
			d -= 9;
		sum += d;
		twice = !twice;
	}
	return sum % 10 == 0;
}

static size_t count_digits(const unsigned char *s, size_t n)
{
	size_t d = 0;
	for (size_t i = 0; i < n; i++)
		d += s[i] >= '0' && s[i] <= '9';
	return d;
}

/* The callout of the built-in patterns. RET 0 to accept the candidate, 1 to backtrack. */
static int builtin_check(pcre2_callout_block *cb, void *data)
{
	(void)data;
	const unsigned char *s = cb->subject + cb->start_match;
	size_t n = cb->current_position - cb->start_match;
	size_t d = count_digits(s, n);
	if (cb->callout_number == CHECK_LUHN)
		return d >= 13 && d <= 19 && luhn_valid(s, n) ? 0 : 1;
	if (cb->callout_number == CHECK_PHONE)
		return d >= 7 && d <= 15 ? 0 : 1;
	return 0;
}

/* ---- the policy ------------------------------------------------------- */

typedef struct mask_pattern {
	char name[MASK_NAME_MAX + 1];
	char placeholder[MASK_NAME_MAX + 3];
	size_t placeholder_len;
	char *regex; /* a custom pattern's source; NULL for a built-in one */
	pcre2_code *code;
} mask_pattern;

struct mask_policy {
	size_t n;
	mask_pattern pat[MASK_PATTERNS_MAX];
};

static bool name_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > MASK_NAME_MAX || s[0] < 'a' || s[0] > 'z')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* A match context under the limits; with the built-in checks when builtin. NULL: no memory. */
static pcre2_match_context *match_context_new(bool builtin)
{
	pcre2_match_context *c = pcre2_match_context_create(NULL);
	if (!c)
		return NULL;
	pcre2_set_match_limit(c, MATCH_LIMIT);
	pcre2_set_depth_limit(c, DEPTH_LIMIT);
	pcre2_set_heap_limit(c, HEAP_LIMIT_KIB);
	if (builtin)
		pcre2_set_callout(c, builtin_check, NULL);
	return c;
}

/*
 * Compile regex into pt. A custom one (pt->regex set) must not match the
 * empty string, which is tried with md under mc.
 * RET 0; -ERR_F_INVALID_VALUE for a custom regex; -ERR_INTERNAL.
 */
static int pattern_compile(mask_pattern *pt, const char *regex, pcre2_match_data *md,
                           pcre2_match_context *mc, char *err, size_t errlen)
{
	bool custom = pt->regex != NULL;
	int code;
	PCRE2_SIZE off;
	pt->code = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, PCRE2_NEVER_UTF, &code,
	                         &off, NULL);
	if (!pt->code) {
		char msg[256];
		pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, sizeof(msg));
		err_printf(err, errlen,
		           "mask pattern \"%s\": the regex does not compile: %s at offset %zu",
		           pt->name, msg, (size_t)off);
		return custom && code != PCRE2_ERROR_HEAP_FAILED ? -ERR_F_INVALID_VALUE
		                                                 : -ERR_INTERNAL;
	}
	/* The interpreter otherwise; partial matching finds where a long line may be cut. */
	(void)pcre2_jit_compile(pt->code, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD);
	if (!custom)
		return 0;
	int rc = pcre2_match(pt->code, (PCRE2_SPTR) "", 0, 0, 0, md, mc);
	if (rc >= 0) {
		err_printf(err, errlen, "mask pattern \"%s\": the regex matches the empty string",
		           pt->name);
		return -ERR_F_INVALID_VALUE;
	}
	if (rc != PCRE2_ERROR_NOMATCH) {
		char msg[256];
		pcre2_get_error_message(rc, (PCRE2_UCHAR *)msg, sizeof(msg));
		err_printf(err, errlen, "mask pattern \"%s\": the regex could not be tried: %s",
		           pt->name, msg);
		return rc == PCRE2_ERROR_NOMEMORY ? -ERR_INTERNAL : -ERR_F_INVALID_VALUE;
	}
	return 0;
}

/* Check custom pattern i against the policy so far. RET 0 or -ERR_F_INVALID_VALUE. */
static int custom_check(const mask_policy *p, const mask_custom *c, size_t i, char *err,
                        size_t errlen)
{
	if (!c->name || !name_valid(c->name)) {
		err_printf(err, errlen,
		           "mask pattern %zu: a name is 1 to %d of a-z, 0-9 and '_', starting with "
		           "a letter",
		           i, MASK_NAME_MAX);
		return -ERR_F_INVALID_VALUE;
	}
	for (size_t k = 0; k < p->n; k++)
		if (strcmp(p->pat[k].name, c->name) == 0) {
			err_printf(err, errlen, "mask pattern \"%s\": %s", c->name,
			           k < MASK_BUILTIN_MAX ? "the name is a built-in pattern's"
			                                : "the name is given twice");
			return -ERR_F_INVALID_VALUE;
		}
	if (!c->regex || c->regex[0] == '\0') {
		err_printf(err, errlen, "mask pattern \"%s\": the regex is missing", c->name);
		return -ERR_F_INVALID_VALUE;
	}
	if (strlen(c->regex) > MASK_REGEX_MAX) {
		err_printf(err, errlen, "mask pattern \"%s\": the regex is longer than %d bytes",
		           c->name, MASK_REGEX_MAX);
		return -ERR_F_INVALID_VALUE;
	}
	return 0;
}

/* Add built-in pattern b, or custom pattern c (b NULL), to p. RET as pattern_compile. */
static int policy_add(mask_policy *p, const struct builtin *b, const mask_custom *c,
                      pcre2_match_data *md, pcre2_match_context *mc, char *err, size_t errlen)
{
	mask_pattern *pt = &p->pat[p->n];
	const char *regex = b ? b->regex : c->regex;
	if (b) {
		snprintf(pt->name, sizeof(pt->name), "%s", b->name);
		snprintf(pt->placeholder, sizeof(pt->placeholder), "%s", b->placeholder);
	} else {
		snprintf(pt->name, sizeof(pt->name), "%s", c->name);
		size_t n = strlen(c->name);
		pt->placeholder[0] = '[';
		for (size_t i = 0; i < n; i++)
			pt->placeholder[i + 1] =
			    (char)(c->name[i] >= 'a' && c->name[i] <= 'z' ? c->name[i] - 'a' + 'A'
			                                                  : c->name[i]);
		pt->placeholder[n + 1] = ']';
		pt->placeholder[n + 2] = '\0';
		if (!(pt->regex = strdup(c->regex))) {
			err_printf(err, errlen, "out of memory");
			return -ERR_INTERNAL;
		}
	}
	pt->placeholder_len = strlen(pt->placeholder);
	p->n++; /* mask_policy_free then releases what was set */
	return pattern_compile(pt, regex, md, mc, err, errlen);
}

int mask_policy_new(const mask_custom *custom, size_t n, mask_policy **out, char *err,
                    size_t errlen)
{
	*out = NULL;
	if (n > MASK_CUSTOM_MAX) {
		err_printf(err, errlen, "at most %d custom mask patterns are allowed",
		           MASK_CUSTOM_MAX);
		return -ERR_F_INVALID_VALUE;
	}
	if (n > 0 && !custom) {
		err_printf(err, errlen, "%zu custom mask patterns are counted but none is given",
		           n);
		return -ERR_F_INVALID_VALUE;
	}
	mask_policy *p = calloc(1, sizeof(*p));
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	pcre2_match_context *mc = match_context_new(false);
	int rc = 0;
	if (!p || !md || !mc) {
		err_printf(err, errlen, "out of memory");
		rc = -ERR_INTERNAL;
	}
	for (size_t i = 0; rc == 0 && i < MASK_BUILTIN_MAX; i++)
		rc = policy_add(p, &builtins[i], NULL, md, mc, err, errlen);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if ((rc = custom_check(p, &custom[i], i, err, errlen)) == 0)
			rc = policy_add(p, NULL, &custom[i], md, mc, err, errlen);
	pcre2_match_data_free(md);
	pcre2_match_context_free(mc);
	if (rc) {
		mask_policy_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void mask_policy_free(mask_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		pcre2_code_free(p->pat[i].code);
		free(p->pat[i].regex);
	}
	free(p);
}

size_t mask_policy_count(const mask_policy *p)
{
	return p->n;
}

const char *mask_policy_name(const mask_policy *p, size_t i)
{
	return i < p->n ? p->pat[i].name : NULL;
}

const char *mask_policy_placeholder(const mask_policy *p, size_t i)
{
	return i < p->n ? p->pat[i].placeholder : NULL;
}

json_t *mask_policy_json(const mask_policy *p)
{
	json_t *builtin = json_array(), *custom = json_array();
	bool ok = builtin && custom;
	for (size_t i = 0; ok && i < p->n; i++) {
		const mask_pattern *pt = &p->pat[i];
		if (!pt->regex)
			ok = json_array_append_new(builtin, json_string(pt->name)) == 0;
		else
			ok = json_array_append_new(custom, json_pack("{s:s, s:s}", "name", pt->name,
			                                             "regex", pt->regex)) == 0;
	}
	/* NULL too when a custom regex is not UTF-8, which JSON cannot carry. */
	json_t *o =
	    ok ? json_pack("{s:i, s:o, s:o}", "version", 1, "builtin", builtin, "custom", custom)
	       : NULL;
	if (!ok) {
		json_decref(builtin);
		json_decref(custom);
	}
	return o;
}

/* ---- the masker ------------------------------------------------------- */

typedef struct mask_buf {
	char *p;
	size_t len, cap;
} mask_buf;

struct masker {
	const mask_policy *policy;
	pcre2_match_data *md;
	pcre2_match_context *builtin_mc, *custom_mc;
	pcre2_jit_stack *jit;
	uint64_t counts[MASK_PATTERNS_MAX];
	mask_buf line;    /* the pending part of a line, without '\n'; room for one byte more */
	mask_buf work[2]; /* the patterns' outputs, in turn */
	unsigned char *spanned; /* for a cut: bit i set when a match spans line.p[i - 1..i] */
	int failed;             /* the first failure's code, returned from then on */
	bool emit_failed;       /* it came from emit, whose message is the caller's */
};

int masker_new(const mask_policy *p, masker **out)
{
	masker *m = calloc(1, sizeof(*m));
	*out = NULL;
	if (!m)
		return -ERR_INTERNAL;
	m->policy = p;
	m->md = pcre2_match_data_create(1, NULL);
	m->builtin_mc = match_context_new(true);
	m->custom_mc = match_context_new(false);
	if (!m->md || !m->builtin_mc || !m->custom_mc) {
		masker_free(m);
		return -ERR_INTERNAL;
	}
	/* Without JIT support there is no stack to make, and none is needed. */
	if ((m->jit = pcre2_jit_stack_create(JIT_STACK_START, JIT_STACK_MAX, NULL))) {
		pcre2_jit_stack_assign(m->builtin_mc, NULL, m->jit);
		pcre2_jit_stack_assign(m->custom_mc, NULL, m->jit);
	}
	*out = m;
	return 0;
}

void masker_free(masker *m)
{
	if (!m)
		return;
	pcre2_match_data_free(m->md);
	pcre2_match_context_free(m->builtin_mc);
	pcre2_match_context_free(m->custom_mc);
	pcre2_jit_stack_free(m->jit);
	free(m->line.p);
	free(m->work[0].p);
	free(m->work[1].p);
	free(m->spanned);
	free(m);
}

const uint64_t *masker_counts(const masker *m)
{
	return m->counts;
}

json_t *masker_counts_json(const masker *m)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < m->policy->n; i++)
		if (json_object_set_new(o, m->policy->pat[i].name,
		                        json_integer((json_int_t)m->counts[i])) != 0) {
			json_decref(o);
			o = NULL;
		}
	return o;
}

/* Make room for want bytes in b. RET 0, or -1 when out of memory. */
static int buf_reserve(mask_buf *b, size_t want)
{
	if (want <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

static int buf_add(mask_buf *b, const void *s, size_t n)
{
	if (n == 0)
		return 0;
	if (b->len + n < b->len || buf_reserve(b, b->len + n) < 0)
		return -1;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* Record the masker's first failure rc. RET rc. */
static int masker_fail(masker *m, int rc, bool by_emit)
{
	m->failed = rc;
	m->emit_failed = by_emit;
	return rc;
}

static int out_of_memory(masker *m, char *err, size_t errlen)
{
	err_printf(err, errlen, "out of memory while masking the text");
	return masker_fail(m, -ERR_INTERNAL, false);
}

/* Pattern pt failed with PCRE2's rc (a limit reached, no memory). RET the failure (recorded). */
static int match_failed(masker *m, const mask_pattern *pt, int rc, char *err, size_t errlen)
{
	char msg[256];
	pcre2_get_error_message(rc, (PCRE2_UCHAR *)msg, sizeof(msg));
	err_printf(err, errlen, "could not apply mask pattern \"%s\" to a line: %s", pt->name, msg);
	return masker_fail(m, rc == PCRE2_ERROR_NOMEMORY ? -ERR_INTERNAL : -ERR_TEXT_UNMASKABLE,
	                   false);
}

/* Rounds of the patterns over a line before a line that still matches fails the text. */
#define MASK_ROUNDS 8

/*
 * Replace every non-empty match of pattern k in in[0..n) by its placeholder,
 * into out (emptied first) when there is at least one.
 * OUT: *hits, the replacements. RET 0, or a failure (recorded).
 */
static int pattern_apply(masker *m, size_t k, const char *in, size_t n, mask_buf *out,
                         uint64_t *hits, char *err, size_t errlen)
{
	const mask_pattern *pt = &m->policy->pat[k];
	pcre2_match_context *mc = pt->regex ? m->custom_mc : m->builtin_mc;
	size_t pos = 0, copied = 0;
	out->len = 0;
	*hits = 0;
	while (pos < n) {
		int rc = pcre2_match(pt->code, (PCRE2_SPTR)in, n, pos, PCRE2_NOTEMPTY, m->md, mc);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return match_failed(m, pt, rc, err, errlen);
		const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
		if (ov[1] <= ov[0]) { /* only a \K trick gets here */
			pos++;
			continue;
		}
		if (buf_add(out, in + copied, ov[0] - copied) < 0 ||
		    buf_add(out, pt->placeholder, pt->placeholder_len) < 0)
			return out_of_memory(m, err, errlen);
		++*hits;
		copied = pos = ov[1];
	}
	if (*hits && buf_add(out, in + copied, n - copied) < 0)
		return out_of_memory(m, err, errlen);
	return 0;
}

/*
 * Mask s[0..n) through every pattern and emit it, followed by '\n' when
 * newline (s[n] is then that '\n'). RET 0, or a failure (recorded).
 */
static int mask_piece(masker *m, const char *s, size_t n, bool newline, mask_emit_fn emit,
                      void *arg, char *err, size_t errlen)
{
	const char *cur = s;
	size_t len = n;
	mask_buf *held = NULL; /* the work buffer cur is in, if any */
	/*
	 * Rounds of every pattern until a round finds nothing: a match's end
	 * can hide the start of the next (the look-behind that keeps a pattern
	 * from starting mid-run sees the previous match), and a later
	 * pattern's placeholder can end a run that hid an earlier one's match.
	 */
	for (int round = 0;; round++) {
		if (round == MASK_ROUNDS) {
			err_printf(err, errlen,
			           "the mask patterns still match a line after %d rounds",
			           MASK_ROUNDS);
			return masker_fail(m, -ERR_TEXT_UNMASKABLE, false);
		}
		uint64_t found = 0;
		for (size_t k = 0; k < m->policy->n; k++) {
			mask_buf *out = held == &m->work[0] ? &m->work[1] : &m->work[0];
			uint64_t hits;
			int rc = pattern_apply(m, k, cur, len, out, &hits, err, errlen);
			if (rc)
				return rc;
			if (hits) {
				m->counts[k] += hits;
				found += hits;
				held = out;
				cur = out->p;
				len = out->len;
			}
		}
		if (!found)
			break;
	}
	if (newline) {
		if (held) {
			if (buf_add(held, "\n", 1) < 0)
				return out_of_memory(m, err, errlen);
			cur = held->p;
		}
		len++;
	}
	if (len == 0)
		return 0;
	int rc = emit(arg, cur, len);
	return rc < 0 ? masker_fail(m, rc, true) : 0;
}

/*
 * Scan pending line s[0..n) with pattern pt for a cut: set the bits of
 * m->spanned inside each match, and lower *limit to the start of a possible
 * match that runs to the end of s (PCRE2's hard partial match: more text
 * might complete it). RET 0, or a failure (recorded).
 */
static int cut_scan(masker *m, const mask_pattern *pt, const char *s, size_t n, size_t *limit,
                    char *err, size_t errlen)
{
	pcre2_match_context *mc = pt->regex ? m->custom_mc : m->builtin_mc;
	size_t pos = 0;
	while (pos < *limit) {
		int rc = pcre2_match(pt->code, (PCRE2_SPTR)s, n, pos,
		                     PCRE2_NOTEMPTY | PCRE2_PARTIAL_HARD, m->md, mc);
		if (rc == PCRE2_ERROR_NOMATCH)
			return 0;
		const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
		if (rc == PCRE2_ERROR_PARTIAL) {
			if (ov[0] < *limit)
				*limit = ov[0];
			return 0;
		}
		if (rc < 0)
			return match_failed(m, pt, rc, err, errlen);
		if (ov[1] <= ov[0]) {
			pos++;
			continue;
		}
		for (size_t i = ov[0] + 1; i < ov[1]; i++)
			m->spanned[i / 8] |= (unsigned char)(1u << (i % 8));
		pos = ov[1];
	}
	return 0;
}

/*
 * The pending line is MASK_LINE_MAX bytes and goes on: mask and emit it up
 * to and with the last space or tab after which it may be cut, and keep the
 * rest, which the next part starts with. A cut may not fall inside a match
 * of any pattern, nor after the start of a possible match that the end of
 * the pending bytes leaves open: such a match is kept whole for the next
 * part, found there, and masked once. RET 0 or a failure.
 */
static int line_cut(masker *m, mask_emit_fn emit, void *arg, char *err, size_t errlen)
{
	const char *s = m->line.p;
	size_t n = m->line.len, limit = n, bytes = n / 8 + 1;
	if (!m->spanned && !(m->spanned = malloc(MASK_LINE_MAX / 8 + 1)))
		return out_of_memory(m, err, errlen);
	memset(m->spanned, 0, bytes);
	for (size_t k = 0; k < m->policy->n; k++) {
		int rc = cut_scan(m, &m->policy->pat[k], s, n, &limit, err, errlen);
		if (rc)
			return rc;
	}
	size_t i = limit;
	while (i > 0 &&
	       ((s[i - 1] != ' ' && s[i - 1] != '\t') || (m->spanned[i / 8] & (1u << (i % 8)))))
		i--;
	if (i == 0) {
		if (!memchr(s, ' ', n) && !memchr(s, '\t', n))
			err_printf(
			    err, errlen,
			    "a line has more than %u bytes without a space or tab: it cannot "
			    "be cut for masking without risk of cutting through an address",
			    MASK_LINE_MAX);
		else
			err_printf(
			    err, errlen,
			    "a line has more than %u bytes without a space or tab outside a "
			    "possible match of the mask patterns: it cannot be cut for masking",
			    MASK_LINE_MAX);
		return masker_fail(m, -ERR_TEXT_UNMASKABLE, false);
	}
	int rc = mask_piece(m, s, i, false, emit, arg, err, errlen);
	if (rc)
		return rc;
	memmove(m->line.p, m->line.p + i, n - i);
	m->line.len -= i;
	return 0;
}

/* Add s[0..n), which has no '\n', to the pending line, cutting it where it grows too long. */
static int line_append(masker *m, const char *s, size_t n, mask_emit_fn emit, void *arg, char *err,
                       size_t errlen)
{
	while (n > 0) {
		if (m->line.len == MASK_LINE_MAX) {
			int rc = line_cut(m, emit, arg, err, errlen);
			if (rc)
				return rc;
		}
		size_t c = MASK_LINE_MAX - m->line.len;
		if (c > n)
			c = n;
		if (buf_reserve(&m->line, m->line.len + c + 1) < 0)
			return out_of_memory(m, err, errlen);
		memcpy(m->line.p + m->line.len, s, c);
		m->line.len += c;
		s += c;
		n -= c;
	}
	return 0;
}

/* A call after a failure. RET the first failure's code. */
static int masker_failed_before(const masker *m, char *err, size_t errlen)
{
	if (!m->emit_failed)
		err_printf(err, errlen, "masking the text failed before");
	return m->failed;
}

int masker_feed(masker *m, const void *buf, size_t n, mask_emit_fn emit, void *arg, char *err,
                size_t errlen)
{
	if (m->failed)
		return masker_failed_before(m, err, errlen);
	const char *s = buf;
	while (n > 0) {
		const char *nl = memchr(s, '\n', n);
		size_t take = nl ? (size_t)(nl - s) : n;
		int rc;
		if (nl && m->line.len == 0 && take <= MASK_LINE_MAX) {
			rc = mask_piece(m, s, take, true, emit, arg, err, errlen);
		} else {
			rc = line_append(m, s, take, emit, arg, err, errlen);
			if (rc == 0 && nl) {
				if (buf_reserve(&m->line, m->line.len + 1) < 0)
					return out_of_memory(m, err, errlen);
				m->line.p[m->line.len] = '\n';
				rc = mask_piece(m, m->line.p, m->line.len, true, emit, arg, err,
				                errlen);
				m->line.len = 0;
			}
		}
		if (rc)
			return rc;
		take += nl ? 1 : 0;
		s += take;
		n -= take;
	}
	return 0;
}

int masker_finish(masker *m, mask_emit_fn emit, void *arg, char *err, size_t errlen)
{
	if (m->failed)
		return masker_failed_before(m, err, errlen);
	if (m->line.len == 0)
		return 0;
	int rc = mask_piece(m, m->line.p, m->line.len, false, emit, arg, err, errlen);
	m->line.len = 0;
	return rc;
}
