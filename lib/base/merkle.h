/*
 * merkle.h - the Merkle tree of the audit log, as RFC 6962 defines it
 * (Certificate Transparency; RFC 9162 section 2.1): SHA-256, a leaf hashed
 * as H(0x00 || data), a node as H(0x01 || left || right), the tree of n
 * leaves split at the largest power of two below n. Inclusion and
 * consistency proofs, made and checked.
 *
 * Trees are read through a callback giving the hash of an aligned complete
 * subtree: leaves [idx << level, (idx + 1) << level). Every subtree a proof
 * of the RFC needs is one, or a right edge made of them, so a store keeps
 * those hashes alone (the audit log's audit_leaves and audit_nodes).
 */
#ifndef TY_MERKLE_H
#define TY_MERKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MERKLE_HASH_LEN  32
#define MERKLE_DEPTH_MAX 64 /* levels of a tree of up to 2^63 leaves */

typedef unsigned char merkle_hash[MERKLE_HASH_LEN];

/* H(0x00 || data). */
void merkle_leaf_hash(const void *data, size_t len, merkle_hash out);
/* H(0x01 || left || right). */
void merkle_node_hash(const merkle_hash left, const merkle_hash right, merkle_hash out);
/* The root of the empty tree, H(""). */
void merkle_empty_root(merkle_hash out);

/*
 * The hash of the aligned complete subtree (level, idx) into out.
 * RET 0, or -1 when it cannot be had: the operation then fails and passes
 * the value on. No function here returns an err_code or says why; the
 * caller of get keeps the reason (auditlog_subtree logs it).
 */
typedef int (*merkle_get_fn)(void *ctx, int level, uint64_t idx, merkle_hash out);

/* The root of leaves [0, n). RET 0, or get's failure (-1). */
int merkle_root(merkle_get_fn get, void *ctx, uint64_t n, merkle_hash out);

/*
 * The audit path of leaf m in the tree of n leaves (m < n), leaf end
 * first. OUT: path[0 .. *len). RET 0, or -1 (a bad m or n, or get's
 * failure).
 */
int merkle_inclusion_proof(merkle_get_fn get, void *ctx, uint64_t m, uint64_t n,
                           merkle_hash path[MERKLE_DEPTH_MAX], int *len);

/*
 * The proof that the tree of m leaves is a prefix of the tree of n
 * (0 < m <= n). RET 0, or -1 (a bad m or n, or get's failure).
 */
int merkle_consistency_proof(merkle_get_fn get, void *ctx, uint64_t m, uint64_t n,
                             merkle_hash path[2 * MERKLE_DEPTH_MAX], int *len);

/* RET: whether path proves leaf m, whose hash is leaf, in the tree of n leaves with root. */
bool merkle_inclusion_verify(const merkle_hash leaf, uint64_t m, uint64_t n,
                             const merkle_hash *path, int len, const merkle_hash root);

/* RET: whether path proves the tree of m leaves (root_m) a prefix of the tree of n (root_n). */
bool merkle_consistency_verify(uint64_t m, uint64_t n, const merkle_hash root_m,
                               const merkle_hash root_n, const merkle_hash *path, int len);

/*
 * The right edge of a growing tree: the roots of its complete subtrees,
 * largest first, one per set bit of its size. Appending a leaf completes
 * subtrees; each completed one is handed to emit (the store keeps it).
 */
typedef struct merkle_frontier {
	uint64_t size;
	int n;                       /* subtrees on the edge */
	int level[MERKLE_DEPTH_MAX]; /* each one's level */
	merkle_hash hash[MERKLE_DEPTH_MAX];
} merkle_frontier;

typedef void (*merkle_emit_fn)(void *ctx, int level, uint64_t idx, const merkle_hash hash);

/* The frontier of the tree of n leaves, its subtrees read with get. RET 0, or get's failure (-1).
 */
int merkle_frontier_load(merkle_frontier *f, merkle_get_fn get, void *ctx, uint64_t n);
/* Append the leaf whose hash is leaf; emit each subtree it completes, level 1 and up. */
void merkle_frontier_append(merkle_frontier *f, const merkle_hash leaf, merkle_emit_fn emit,
                            void *ctx);
/* The root of the tree the frontier is the edge of. */
void merkle_frontier_root(const merkle_frontier *f, merkle_hash out);

#endif
