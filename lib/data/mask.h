/*
 * mask.h - masking personal data out of raw text before it is tokenized:
 * e-mail addresses, card numbers, IPv6 and IPv4 addresses, phone numbers,
 * and a dataset's own patterns, each replaced by a placeholder.
 *
 * A policy (mask_policy) is the list of patterns, compiled once with PCRE2
 * and read-only afterwards, so maskers on several threads may share it. The
 * built-in patterns always come first, in this order, then the dataset's
 * own ones in the order given:
 *
 *   email  [EMAIL]  a local part, '@', a domain whose last label is 2+ letters
 *   card   [CARD]   13 to 19 digits, in one run or grouped by single spaces
 *                   or dashes (4 digits, then groups of 3 to 6), that pass
 *                   the Luhn check
 *   ipv6   [IPV6]   full, "::"-compressed and IPv4-suffixed forms
 *   ipv4   [IPV4]   four octets 0-255 (leading zeros allowed), not part of
 *                   a longer dotted run such as a version string
 *   phone  [PHONE]  "+" numbers, and national numbers with separators
 *                   ("(415) 555-0123", "415-555-0123", "020 7946 0958"),
 *                   7 to 15 digits
 *   <name> [NAME]   a custom pattern, as given, under the upper-cased name
 *
 * A masker streams one text through a policy. Text is bytes (UTF-8 or not:
 * nothing is decoded). It is masked line by line: bytes are kept until a
 * '\n', then the line (without its '\n') goes through every pattern in
 * turn, each over the previous one's output, every non-overlapping,
 * non-empty match replaced by the placeholder and counted; the round of
 * patterns runs again until one finds nothing more (adjacent matches whose
 * edges hid each other, or a run a later placeholder cut short; at most 8
 * rounds, or the text fails), so masking the output again changes
 * nothing; and the masked line is emitted with its '\n'. A line longer
 * than MASK_LINE_MAX bytes is cut, and the parts are masked separately. The
 * cut falls after the last space or tab within the limit that lies outside
 * every match of every pattern, and before the start of any possible match
 * that the limit leaves unfinished (PCRE2's hard partial match: a card
 * number, phone number or address whose rest comes after the limit); the
 * bytes after the cut start the next part, so such a match is found there
 * whole and masked once. A line with no such space or tab in MASK_LINE_MAX
 * bytes (a run without one, or one possible match as long) cannot be cut
 * without risk of cutting through an address and fails the text. Every
 * match runs under a match limit, a depth limit and a heap limit; a
 * pattern that reaches one fails the text too. A text that failed emits
 * nothing more: no line leaves unmasked.
 *
 * Memory: a masker holds at most one pending line (MASK_LINE_MAX bytes), a
 * bitmap of it for a cut, and two work buffers as large as the longest
 * masked line.
 */
#ifndef TY_MASK_H
#define TY_MASK_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define MASK_CUSTOM_MAX  16         /* custom patterns per policy */
#define MASK_NAME_MAX    32         /* a custom pattern's name: [a-z][a-z0-9_]{0,31} */
#define MASK_REGEX_MAX   512        /* bytes of a custom regex */
#define MASK_LINE_MAX    (1u << 20) /* longest line masked as one piece */
#define MASK_BUILTIN_MAX 5          /* email, card, ipv6, ipv4, phone */

typedef struct mask_policy mask_policy;

/* A custom pattern as a dataset declares it. */
typedef struct mask_custom {
	const char *name; /* [a-z][a-z0-9_]{0,31}, not a built-in pattern's name */
	const char
	    *regex; /* PCRE2 syntax, compiled without options, at most MASK_REGEX_MAX bytes */
} mask_custom;

/*
 * Compile the built-in patterns and custom[0..n) into a new policy. A custom
 * regex is compiled as given, except that it may not switch UTF mode on
 * ("(*UTF)"): the text is bytes.
 * OUT: *out, to free with mask_policy_free; NULL on failure.
 * RET: 0; -ERR_F_INVALID_VALUE with err naming the pattern for a bad custom
 * pattern: more than MASK_CUSTOM_MAX of them, a missing, malformed or
 * duplicate name, a built-in pattern's name, a regex longer than
 * MASK_REGEX_MAX, one that does not compile (PCRE2's message and offset),
 * or one that matches the empty string; -ERR_INTERNAL when out of memory.
 */
int mask_policy_new(const mask_custom *custom, size_t n, mask_policy **out, char *err,
                    size_t errlen);

/* Free p and its compiled patterns. p may be NULL. */
void mask_policy_free(mask_policy *p);

/* RET: the number of patterns, built-in ones included. */
size_t mask_policy_count(const mask_policy *p);

/* RET: pattern i's name ("email", ..., custom names), or NULL when i is out of range. */
const char *mask_policy_name(const mask_policy *p, size_t i);

/* RET: pattern i's placeholder ("[EMAIL]", ..., "[EMPLOYEE_ID]"), or NULL. */
const char *mask_policy_placeholder(const mask_policy *p, size_t i);

/*
 * The policy as recorded with a dataset version:
 *   {"version": 1, "builtin": ["email", "card", "ipv6", "ipv4", "phone"],
 *    "custom": [{"name": ..., "regex": ...}, ...]}
 * RET: a new reference (caller decrefs), or NULL when out of memory.
 */
json_t *mask_policy_json(const mask_policy *p);

typedef struct masker masker;

/* Receives masked bytes. RET 0, or a negative code the masker passes back unchanged. */
typedef int (*mask_emit_fn)(void *arg, const void *buf, size_t n);

/*
 * A masker of one text under p, which must outlive it.
 * OUT: *out, to free with masker_free. RET 0, or -ERR_INTERNAL (out of memory).
 */
int masker_new(const mask_policy *p, masker **out);

/*
 * Take the next n bytes of the text: every line they complete is masked
 * and passed to emit (one call a line, or a part of a cut line).
 * RET: 0; emit's negative code, unchanged; -ERR_TEXT_UNMASKABLE with err
 * set for MASK_LINE_MAX bytes of a line without a space or tab where it may
 * be cut (outside every match and possible match), or a pattern that
 * reached a limit; -ERR_INTERNAL when out of memory. After a failure,
 * every later call fails with the same code.
 */
int masker_feed(masker *m, const void *buf, size_t n, mask_emit_fn emit, void *arg, char *err,
                size_t errlen);

/*
 * End the text: mask and emit the last line when it has no '\n'.
 * RET: as masker_feed. The masker may then take another text (the counts go on).
 */
int masker_finish(masker *m, mask_emit_fn emit, void *arg, char *err, size_t errlen);

/* RET: the replacements so far per pattern, indexed as mask_policy_name. */
const uint64_t *masker_counts(const masker *m);

/*
 * The counts as {"email": 3, "card": 0, ...}: every pattern of the policy,
 * zeros included. RET: a new reference, or NULL when out of memory.
 */
json_t *masker_counts_json(const masker *m);

/* Free m. m may be NULL. */
void masker_free(masker *m);

#endif
