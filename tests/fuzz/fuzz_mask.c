/*
 * fuzz_mask.c - libFuzzer target for the masker (lib/data/mask.h) with the
 * built-in patterns and one custom pattern. The input is fed whole and
 * again cut in two where its first byte says; invariants: both ways give
 * the same output and counts, or fail alike; the output holds no '@' of an
 * address the email pattern would find again (masking its own output
 * changes nothing); counts never exceed what the text could hold.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "mask.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct buf {
	char *p;
	size_t n, cap;
} buf;

static int emit(void *arg, const void *b, size_t n)
{
	buf *o = arg;
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2 + 64;
		o->p = realloc(o->p, o->cap);
		assert(o->p);
	}
	memcpy(o->p + o->n, b, n);
	o->n += n;
	return 0;
}

static mask_policy *policy;

/* Mask data[0..size) fed in two pieces cut at cut. OUT *o, counts. RET the masker's code. */
static int run(const uint8_t *data, size_t size, size_t cut, buf *o, uint64_t *counts)
{
	static const uint8_t none[1];
	if (!data)
		data = none; /* nothing may come as NULL */
	masker *m;
	char err[256];
	assert(masker_new(policy, &m) == 0);
	int rc = masker_feed(m, data, cut, emit, o, err, sizeof(err));
	if (rc == 0)
		rc = masker_feed(m, data + cut, size - cut, emit, o, err, sizeof(err));
	if (rc == 0)
		rc = masker_finish(m, emit, o, err, sizeof(err));
	memcpy(counts, masker_counts(m), mask_policy_count(policy) * sizeof(uint64_t));
	masker_free(m);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	if (!policy) {
		mask_custom c[] = {{"ticket", "TKT-[0-9]{3,8}"}};
		char err[256];
		assert(mask_policy_new(c, 1, &policy, err, sizeof(err)) == 0);
	}
	size_t np = mask_policy_count(policy);
	uint64_t c1[16], c2[16], c3[16];
	buf a = {0}, b = {0}, again = {0};
	int r1 = run(data, size, 0, &a, c1);
	int r2 = run(data, size, size ? data[0] % (size + 1) : 0, &b, c2);
	assert(r1 == r2);
	if (r1 == 0) {
		assert(a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0));
		assert(memcmp(c1, c2, np * sizeof(uint64_t)) == 0);
		uint64_t total = 0;
		for (size_t i = 0; i < np; i++)
			total += c1[i];
		assert(total <= size / 2 + 1);
		/* what was masked stays masked: masking it again finds nothing */
		int r3 = run((const uint8_t *)a.p, a.n, 0, &again, c3);
		assert(r3 == 0);
		for (size_t i = 0; i < np; i++)
			assert(c3[i] == 0);
	} else {
		assert(r1 == -ERR_TEXT_UNMASKABLE || r1 == -ERR_INTERNAL);
	}
	free(a.p);
	free(b.p);
	free(again.p);
	return 0;
}
