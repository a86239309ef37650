/*
 * test_merkle.c - the audit log's Merkle tree against RFC 6962: roots and
 * proofs of Certificate Transparency's eight test leaves, written out by
 * hand (computed with Python's hashlib from the RFC's definitions); then,
 * for every tree of up to 70 leaves, every inclusion and consistency
 * proof the library makes is checked by its verifier, and fails once any
 * hash, the index or the tree it is held against is off; the frontier's root and the subtrees
 * it emits are the same tree.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "hex.h"
#include "merkle.h"
#include "unit.h"

static const char *const ct_roots[8] = {
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

/* A tree held in memory: every leaf's hash; subtrees hashed on demand. */
#define LEAVES_MAX 80
static merkle_hash leaf[LEAVES_MAX];
static int gets; /* subtree reads, to see a proof reads few */

static void ct_leaves(void)
{
	static const unsigned char d[] = {0x00, 0x10, 0x20, 0x21, 0x30, 0x31, 0x40, 0x41, 0x42,
	                                  0x43, 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,
	                                  0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
	                                  0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f};
	static const size_t at[] = {0, 0, 1, 2, 4, 6, 10, 18, 34}; /* leaf i is d[at[i], at[i+1]) */
	for (int i = 0; i < 8; i++)
		merkle_leaf_hash(d + at[i], at[i + 1] - at[i], leaf[i]);
}

static int get_sub(void *ctx, int level, uint64_t idx, merkle_hash out)
{
	(void)ctx;
	gets++;
	uint64_t a = idx << level, n = UINT64_C(1) << level;
	if (a + n > LEAVES_MAX)
		return -1;
	if (level == 0) {
		memcpy(out, leaf[a], MERKLE_HASH_LEN);
		return 0;
	}
	merkle_hash l, r;
	get_sub(NULL, level - 1, idx * 2, l);
	get_sub(NULL, level - 1, idx * 2 + 1, r);
	merkle_node_hash(l, r, out);
	return 0;
}

static void hex_is(const merkle_hash h, const char *want)
{
	char got[2 * MERKLE_HASH_LEN + 1];
	hex_encode(h, MERKLE_HASH_LEN, got);
	ck_assert_str_eq(got, want);
}

START_TEST(ct_vectors)
{
	ct_leaves();
	for (uint64_t n = 1; n <= 8; n++) {
		merkle_hash root;
		ck_assert_int_eq(merkle_root(get_sub, NULL, n, root), 0);
		hex_is(root, ct_roots[n - 1]);
	}
	merkle_hash empty;
	merkle_empty_root(empty);
	hex_is(empty, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	merkle_hash path[2 * MERKLE_DEPTH_MAX];
	int len;
	ck_assert_int_eq(merkle_inclusion_proof(get_sub, NULL, 5, 8, path, &len), 0);
	ck_assert_int_eq(len, 3);
	hex_is(path[0], "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b");
	hex_is(path[1], "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0");
	hex_is(path[2], "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7");
	ck_assert_int_eq(merkle_consistency_proof(get_sub, NULL, 3, 7, path, &len), 0);
	ck_assert_int_eq(len, 4);
	hex_is(path[0], "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7");
	hex_is(path[1], "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7");
	hex_is(path[2], "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125");
	hex_is(path[3], "837dbb152e9b079010717e84e865da4ebc0fa198a806d59d31bf15accef22d0e");
	ck_assert_int_eq(merkle_consistency_proof(get_sub, NULL, 2, 5, path, &len), 0);
	ck_assert_int_eq(len, 2);
	hex_is(path[0], "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e");
	hex_is(path[1], "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b");
}
END_TEST

static void many_leaves(void)
{
	for (int i = 0; i < LEAVES_MAX; i++) {
		unsigned char d[4] = {(unsigned char)i, (unsigned char)(i * 7), 0xa5, 0x5a};
		merkle_leaf_hash(d, (size_t)(i % 4 + 1), leaf[i]);
	}
}

START_TEST(every_inclusion_proof_checks)
{
	many_leaves();
	for (uint64_t n = 1; n <= 70; n++) {
		merkle_hash root, path[2 * MERKLE_DEPTH_MAX];
		merkle_root(get_sub, NULL, n, root);
		for (uint64_t m = 0; m < n; m++) {
			int len;
			ck_assert_int_eq(merkle_inclusion_proof(get_sub, NULL, m, n, path, &len),
			                 0);
			ck_assert(merkle_inclusion_verify(leaf[m], m, n, path, len, root));
			ck_assert(!merkle_inclusion_verify(leaf[(m + 1) % n == m ? 0 : (m + 1) % n],
			                                   m, n, path, len, root) ||
			          n == 1);
			if (n > 1)
				ck_assert(!merkle_inclusion_verify(leaf[m], (m + 1) % n, n, path,
				                                   len, root));
			merkle_hash bigger; /* the same path does not prove it in the next tree */
			merkle_root(get_sub, NULL, n + 1, bigger);
			ck_assert(!merkle_inclusion_verify(leaf[m], m, n + 1, path, len, bigger));
			for (int i = 0; i < len; i++) {
				path[i][i % MERKLE_HASH_LEN] ^= 1;
				ck_assert(!merkle_inclusion_verify(leaf[m], m, n, path, len, root));
				path[i][i % MERKLE_HASH_LEN] ^= 1;
			}
		}
		int len;
		ck_assert_int_eq(merkle_inclusion_proof(get_sub, NULL, n, n, path, &len), -1);
	}
}
END_TEST

START_TEST(every_consistency_proof_checks)
{
	many_leaves();
	merkle_hash roots[71];
	for (uint64_t n = 1; n <= 70; n++)
		merkle_root(get_sub, NULL, n, roots[n]);
	for (uint64_t n = 1; n <= 70; n++)
		for (uint64_t m = 1; m <= n; m++) {
			merkle_hash path[2 * MERKLE_DEPTH_MAX];
			int len;
			ck_assert_int_eq(merkle_consistency_proof(get_sub, NULL, m, n, path, &len),
			                 0);
			ck_assert_msg(
			    merkle_consistency_verify(m, n, roots[m], roots[n], path, len),
			    "%d of %d", (int)m, (int)n);
			if (m < n) {
				ck_assert(!merkle_consistency_verify(m, n, roots[n], roots[n], path,
				                                     len));
				ck_assert(!merkle_consistency_verify(m, n, roots[m], roots[n - 1],
				                                     path, len) ||
				          m == n - 1);
				path[len - 1][3] ^= 0x10;
				ck_assert(!merkle_consistency_verify(m, n, roots[m], roots[n], path,
				                                     len));
			}
		}
	merkle_hash path[2 * MERKLE_DEPTH_MAX];
	int len;
	ck_assert_int_eq(merkle_consistency_proof(get_sub, NULL, 0, 5, path, &len), -1);
	ck_assert_int_eq(merkle_consistency_proof(get_sub, NULL, 6, 5, path, &len), -1);
}
END_TEST

/* Subtrees the frontier emitted, by level and index. */
static merkle_hash emitted[8][LEAVES_MAX];
static bool emitted_at[8][LEAVES_MAX];

static void on_emit(void *ctx, int level, uint64_t idx, const merkle_hash hash)
{
	(void)ctx;
	ck_assert(level >= 1 && level < 8 && idx < LEAVES_MAX);
	ck_assert_msg(!emitted_at[level][idx], "subtree %d/%d emitted twice", level, (int)idx);
	memcpy(emitted[level][idx], hash, MERKLE_HASH_LEN);
	emitted_at[level][idx] = true;
}

START_TEST(frontier_grows_the_same_tree)
{
	many_leaves();
	memset(emitted_at, 0, sizeof(emitted_at));
	merkle_frontier f;
	ck_assert_int_eq(merkle_frontier_load(&f, get_sub, NULL, 0), 0);
	for (uint64_t n = 1; n <= 70; n++) {
		merkle_frontier_append(&f, leaf[n - 1], on_emit, NULL);
		merkle_hash want, got;
		merkle_root(get_sub, NULL, n, want);
		merkle_frontier_root(&f, got);
		ck_assert_int_eq(memcmp(want, got, MERKLE_HASH_LEN), 0);
		/* loaded afresh from the store, the frontier is the same */
		merkle_frontier g;
		ck_assert_int_eq(merkle_frontier_load(&g, get_sub, NULL, n), 0);
		merkle_frontier_root(&g, got);
		ck_assert_int_eq(memcmp(want, got, MERKLE_HASH_LEN), 0);
	}
	/* every complete subtree of 70 leaves was emitted once, with its hash */
	for (int l = 1; l < 8; l++)
		for (uint64_t i = 0; (i + 1) << l <= 70; i++) {
			merkle_hash want;
			get_sub(NULL, l, i, want);
			ck_assert_msg(emitted_at[l][i], "subtree %d/%d never emitted", l, (int)i);
			ck_assert_int_eq(memcmp(emitted[l][i], want, MERKLE_HASH_LEN), 0);
		}
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("merkle");
	TCase *tc = tcase_create("rfc6962");
	tcase_add_test(tc, ct_vectors);
	tcase_add_test(tc, every_inclusion_proof_checks);
	tcase_add_test(tc, every_consistency_proof_checks);
	tcase_add_test(tc, frontier_grows_the_same_tree);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
