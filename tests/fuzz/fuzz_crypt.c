/*
 * fuzz_crypt.c - libFuzzer target for the encrypted object reader.
 *
 * The input's first 4 bytes choose a change, the rest is the plaintext,
 * repeated up to a few chunks. The plaintext is encrypted, the change is
 * applied to the object's bytes (none, a bit flip, a truncation, two
 * chunks swapped, or the bytes taken as an object of another name), and
 * the object is read back. Invariants checked on every input:
 *   - the reader only ever hands out a prefix of the plaintext;
 *   - it succeeds exactly when the object is unchanged, and then hands
 *     out the whole plaintext.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/membuf.h"
#include "crypt.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__,         \
			        __LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { CHANGE_NONE, CHANGE_FLIP, CHANGE_CUT, CHANGE_SWAP, CHANGE_NAME, CHANGES };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static crypt_object_ctx ctx;
	if (ctx.tenant_id[0] == '\0') {
		crypt_key k;
		memset(&k, 7, sizeof(k));
		crypt_object_ctx_init(&ctx, "tenant", "job", &k);
	}
	if (size < 4)
		return 0;
	unsigned change = data[0] % CHANGES, at = (unsigned)data[1] << 16 | data[2] << 8 | data[3];
	/* 0 to 1.5 chunks more than the input, so chunk boundaries are reached */
	size_t n = size - 4, total = (data[3] & 3) * (CRYPT_CHUNK / 2) + n;
	if (total > 3 * CRYPT_CHUNK)
		total = 3 * CRYPT_CHUNK;
	unsigned char *plain = malloc(total + 1), *out = malloc(total + 1);
	for (size_t i = 0; i < total; i++)
		plain[i] = n ? data[4 + i % n] : 0;

	membuf m = {.cap = CRYPT_HEADER_LEN + total + (total / CRYPT_CHUNK + 1) * CRYPT_TAG_LEN};
	m.p = malloc(m.cap);
	crypt_object_writer *w;
	CHECK(crypt_object_writer_open(&ctx, "obj", membuf_sink, &m, &w, NULL, 0) == 0);
	CHECK(crypt_object_writer_write(w, plain, total, NULL, 0) == 0);
	CHECK(crypt_object_writer_finish(w, NULL, 0) == 0);
	crypt_object_writer_free(w);
	CHECK(m.len == m.cap);

	bool changed = true;
	const char *name = "obj";
	size_t chunk = CRYPT_CHUNK + CRYPT_TAG_LEN, chunks = (m.len - CRYPT_HEADER_LEN) / chunk;
	if (change == CHANGE_NONE) {
		changed = false;
	} else if (change == CHANGE_FLIP) {
		m.p[at % m.len] ^= (unsigned char)(1u << (at >> 20) % 8);
	} else if (change == CHANGE_CUT) {
		m.len = at % m.len;
	} else if (change == CHANGE_SWAP && chunks >= 2) {
		unsigned char *a = m.p + CRYPT_HEADER_LEN, *b = a + chunk, *tmp = malloc(chunk);
		memcpy(tmp, a, chunk);
		memcpy(a, b, chunk);
		memcpy(b, tmp, chunk);
		free(tmp);
		changed = memcmp(a, b, chunk) != 0;
	} else if (change == CHANGE_NAME) {
		name = "obj2";
	} else {
		changed = false;
	}

	crypt_object_reader *r;
	size_t got = 0, k;
	int rc = crypt_object_reader_open(&ctx, name, membuf_source, &m, &r, NULL, 0);
	while (rc == 0) {
		size_t want = total + 1 - got;
		rc = crypt_object_reader_read(r, out + got, want, &k, NULL, 0);
		CHECK(k <= want - 1);
		got += k;
		if (rc == 0 && k < want)
			break;
	}
	crypt_object_reader_free(r);
	CHECK(got == 0 || memcmp(out, plain, got) == 0);
	CHECK((rc == 0) == !changed);
	if (rc == 0)
		CHECK(got == total);
	free(m.p);
	free(plain);
	free(out);
	return 0;
}
