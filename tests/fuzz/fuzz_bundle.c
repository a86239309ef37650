/*
 * fuzz_bundle.c - libFuzzer target for the code bundle check
 * (lib/code/bundle.h): the input is an uploaded archive, handed over in
 * pieces whose size its first byte picks. Invariants: the check accepts or
 * refuses with code_bundle_invalid, never anything else; every member it
 * hands over has a path bundle_path_valid() accepts; an accepted bundle
 * counts the members it handed over and has at least one.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "bundle.h"
#include "error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct src {
	const uint8_t *p;
	size_t left, step;
} src;

static int source(void *arg, void *buf, size_t n, size_t *got)
{
	src *s = arg;
	size_t k = s->left < n ? s->left : n;
	if (k > s->step)
		k = s->step;
	memcpy(buf, s->p, k);
	s->p += k;
	s->left -= k;
	*got = k;
	return 0;
}

static int each(void *arg, const bundle_member *m)
{
	assert(bundle_path_valid(m->path));
	++*(int *)arg;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	src s = {data + 1, size - 1, (size_t)data[0] * 64 + 1};
	bundle_summary sum;
	char err[512];
	int members = 0;
	int rc = bundle_check(source, &s, 1 << 20, each, &members, &sum, err, sizeof(err));
	assert(rc == 0 || rc == -ERR_CODE_BUNDLE_INVALID);
	if (rc == 0)
		assert(members == sum.files + sum.dirs + sum.symlinks + sum.hardlinks &&
		       members > 0);
	return 0;
}
