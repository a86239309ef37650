/*
 * merkle.c - see merkle.h. The proofs follow RFC 6962 section 2.1 (PATH
 * and PROOF) and their checks RFC 9162 sections 2.1.3.2 and 2.1.4.2.
 */
#include "merkle.h"

#include <openssl/evp.h>
#include <string.h>

static void sha256_parts(const void *a, size_t na, const void *b, size_t nb, const void *c,
                         size_t nc, merkle_hash out)
{
	/*
	 * One context per thread, kept, and the digest fetched once: a
	 * verifier hashes millions of short inputs, and EVP_sha256() would
	 * look its implementation up (under a lock) at every init.
	 */
	static _Thread_local EVP_MD_CTX *x;
	static _Thread_local EVP_MD *md;
	if (!x) {
		x = EVP_MD_CTX_new();
		md = EVP_MD_fetch(NULL, "SHA256", NULL);
	}
	unsigned int len = 0;
	if (!x || !md || EVP_DigestInit_ex(x, md, NULL) != 1 || EVP_DigestUpdate(x, a, na) != 1 ||
	    (nb && EVP_DigestUpdate(x, b, nb) != 1) || (nc && EVP_DigestUpdate(x, c, nc) != 1) ||
	    EVP_DigestFinal_ex(x, out, &len) != 1)
		memset(out, 0, MERKLE_HASH_LEN); /* never a valid hash of anything */
}

void merkle_leaf_hash(const void *data, size_t len, merkle_hash out)
{
	static const unsigned char tag = 0x00;
	sha256_parts(&tag, 1, data, len, NULL, 0, out);
}

void merkle_node_hash(const merkle_hash left, const merkle_hash right, merkle_hash out)
{
	static const unsigned char tag = 0x01;
	sha256_parts(&tag, 1, left, MERKLE_HASH_LEN, right, MERKLE_HASH_LEN, out);
}

void merkle_empty_root(merkle_hash out)
{
	sha256_parts("", 0, NULL, 0, NULL, 0, out);
}

/* The largest power of two below n (n >= 2). */
static uint64_t split(uint64_t n)
{
	uint64_t k = 1;
	while (k << 1 < n)
		k <<= 1;
	return k;
}

static bool is_pow2(uint64_t n)
{
	return n && !(n & (n - 1));
}

static int log2_of(uint64_t n)
{
	int l = 0;
	while ((UINT64_C(1) << l) < n)
		l++;
	return l;
}

/* The hash of leaves [a, b), a aligned to the largest power of two in b - a. */
static int range_hash(merkle_get_fn get, void *ctx, uint64_t a, uint64_t b, merkle_hash out)
{
	uint64_t n = b - a;
	if (is_pow2(n)) {
		int l = log2_of(n);
		return get(ctx, l, a >> l, out);
	}
	uint64_t k = split(n);
	merkle_hash left, right;
	if (range_hash(get, ctx, a, a + k, left) < 0 || range_hash(get, ctx, a + k, b, right) < 0)
		return -1;
	merkle_node_hash(left, right, out);
	return 0;
}

int merkle_root(merkle_get_fn get, void *ctx, uint64_t n, merkle_hash out)
{
	if (n == 0) {
		merkle_empty_root(out);
		return 0;
	}
	return range_hash(get, ctx, 0, n, out);
}

/* PATH(m, D[a:b]) appended to path. */
static int path_of(merkle_get_fn get, void *ctx, uint64_t m, uint64_t a, uint64_t b,
                   merkle_hash *path, int *len)
{
	uint64_t n = b - a;
	if (n <= 1)
		return 0;
	uint64_t k = split(n);
	int rc = m < k ? path_of(get, ctx, m, a, a + k, path, len)
	               : path_of(get, ctx, m - k, a + k, b, path, len);
	if (rc < 0 || *len >= MERKLE_DEPTH_MAX)
		return -1;
	rc = m < k ? range_hash(get, ctx, a + k, b, path[*len])
	           : range_hash(get, ctx, a, a + k, path[*len]);
	(*len)++;
	return rc;
}

int merkle_inclusion_proof(merkle_get_fn get, void *ctx, uint64_t m, uint64_t n,
                           merkle_hash path[MERKLE_DEPTH_MAX], int *len)
{
	*len = 0;
	if (m >= n)
		return -1;
	return path_of(get, ctx, m, 0, n, path, len);
}

/* SUBPROOF(m, D[a:b], whole) appended to path. */
static int subproof(merkle_get_fn get, void *ctx, uint64_t m, uint64_t a, uint64_t b, bool whole,
                    merkle_hash *path, int *len)
{
	uint64_t n = b - a;
	if (*len >= 2 * MERKLE_DEPTH_MAX)
		return -1;
	if (m == n) {
		if (whole)
			return 0;
		return range_hash(get, ctx, a, b, path[(*len)++]);
	}
	uint64_t k = split(n);
	int rc;
	if (m <= k) {
		rc = subproof(get, ctx, m, a, a + k, whole, path, len);
		if (rc == 0 && *len < 2 * MERKLE_DEPTH_MAX)
			rc = range_hash(get, ctx, a + k, b, path[(*len)++]);
	} else {
		rc = subproof(get, ctx, m - k, a + k, b, false, path, len);
		if (rc == 0 && *len < 2 * MERKLE_DEPTH_MAX)
			rc = range_hash(get, ctx, a, a + k, path[(*len)++]);
	}
	return *len <= 2 * MERKLE_DEPTH_MAX ? rc : -1;
}

int merkle_consistency_proof(merkle_get_fn get, void *ctx, uint64_t m, uint64_t n,
                             merkle_hash path[2 * MERKLE_DEPTH_MAX], int *len)
{
	*len = 0;
	if (m == 0 || m > n)
		return -1;
	return subproof(get, ctx, m, 0, n, true, path, len);
}

bool merkle_inclusion_verify(const merkle_hash leaf, uint64_t m, uint64_t n,
                             const merkle_hash *path, int len, const merkle_hash root)
{
	if (m >= n)
		return false;
	uint64_t fn = m, sn = n - 1;
	merkle_hash r;
	memcpy(r, leaf, MERKLE_HASH_LEN);
	for (int i = 0; i < len; i++) {
		if (sn == 0)
			return false;
		if ((fn & 1) || fn == sn) {
			merkle_node_hash(path[i], r, r);
			if (!(fn & 1))
				while (fn && !(fn & 1)) {
					fn >>= 1;
					sn >>= 1;
				}
		} else {
			merkle_node_hash(r, path[i], r);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(r, root, MERKLE_HASH_LEN) == 0;
}

bool merkle_consistency_verify(uint64_t m, uint64_t n, const merkle_hash root_m,
                               const merkle_hash root_n, const merkle_hash *path, int len)
{
	if (m == 0 || m > n)
		return false;
	if (m == n)
		return len == 0 && memcmp(root_m, root_n, MERKLE_HASH_LEN) == 0;
	if (len < 1)
		return false;
	/* a first tree that is a complete subtree of the second starts the path itself */
	merkle_hash first_path[2 * MERKLE_DEPTH_MAX + 1];
	int n_path = 0;
	if (is_pow2(m))
		memcpy(first_path[n_path++], root_m, MERKLE_HASH_LEN);
	if (len > 2 * MERKLE_DEPTH_MAX)
		return false;
	for (int i = 0; i < len; i++)
		memcpy(first_path[n_path++], path[i], MERKLE_HASH_LEN);
	uint64_t fn = m - 1, sn = n - 1;
	while (fn & 1) {
		fn >>= 1;
		sn >>= 1;
	}
	merkle_hash fr, sr;
	memcpy(fr, first_path[0], MERKLE_HASH_LEN);
	memcpy(sr, first_path[0], MERKLE_HASH_LEN);
	for (int i = 1; i < n_path; i++) {
		if (sn == 0)
			return false;
		if ((fn & 1) || fn == sn) {
			merkle_node_hash(first_path[i], fr, fr);
			merkle_node_hash(first_path[i], sr, sr);
			if (!(fn & 1))
				while (fn && !(fn & 1)) {
					fn >>= 1;
					sn >>= 1;
				}
		} else {
			merkle_node_hash(sr, first_path[i], sr);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(fr, root_m, MERKLE_HASH_LEN) == 0 &&
	       memcmp(sr, root_n, MERKLE_HASH_LEN) == 0;
}

int merkle_frontier_load(merkle_frontier *f, merkle_get_fn get, void *ctx, uint64_t n)
{
	memset(f, 0, sizeof(*f));
	uint64_t at = 0;
	for (int l = MERKLE_DEPTH_MAX - 1; l >= 0; l--) {
		if (!(n >> l & 1))
			continue;
		f->level[f->n] = l;
		if (get(ctx, l, at >> l, f->hash[f->n]) < 0)
			return -1;
		f->n++;
		at += UINT64_C(1) << l;
	}
	f->size = n;
	return 0;
}

void merkle_frontier_append(merkle_frontier *f, const merkle_hash leaf, merkle_emit_fn emit,
                            void *ctx)
{
	memcpy(f->hash[f->n], leaf, MERKLE_HASH_LEN);
	f->level[f->n] = 0;
	f->n++;
	f->size++;
	/* equal neighbours merge: the subtree they make is complete */
	while (f->n >= 2 && f->level[f->n - 1] == f->level[f->n - 2]) {
		int l = f->level[f->n - 1] + 1;
		merkle_node_hash(f->hash[f->n - 2], f->hash[f->n - 1], f->hash[f->n - 2]);
		f->level[f->n - 2] = l;
		f->n--;
		/* its index: the leaves before it, counted in subtrees of its size */
		uint64_t idx = (f->size >> l) - 1;
		if (emit)
			emit(ctx, l, idx, f->hash[f->n - 1]);
	}
}

void merkle_frontier_root(const merkle_frontier *f, merkle_hash out)
{
	if (f->n == 0) {
		merkle_empty_root(out);
		return;
	}
	merkle_hash r;
	memcpy(r, f->hash[f->n - 1], MERKLE_HASH_LEN);
	for (int i = f->n - 2; i >= 0; i--)
		merkle_node_hash(f->hash[i], r, r);
	memcpy(out, r, MERKLE_HASH_LEN);
}
