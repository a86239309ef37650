/*
 * dataset.h - datasets on disk: names and references, where a version's
 * sealed shards live, writing a version and unsealing it again
 * (docs/datasets.md).
 *
 * Layout under the storage root (storage.h's rules: 0700, owned by the
 * tenant's Unix user, walked without following links):
 *   <root>/tenants/<tenant>/datasets/<dataset>/<version>/shard_NNNNNN.bin
 *   <root>/tenants/<grantee>/granted/<dataset>/<version>/shard_NNNNNN.bin
 * The second is a copy of another tenant's version, as sealed, that a
 * grant lets the grantee's attempts read (dataset_stage): a tenant's
 * attempts can open nothing of another tenant's tree.
 * with the dataset's and the version's ids (UUIDs). A version being
 * written lives in "<version>.partial" and is renamed to "<version>" when
 * its last shard is synced, before the database registers it; a crash in
 * between leaves a directory no row names, never a row without its shards.
 *
 * Each shard is an object sealed by crypt.h under the dataset's data key,
 * with the dataset's id where a job's objects carry the job's, and the
 * name "<version>/shard_NNNNNN.bin": a shard moved to another name,
 * version, dataset or tenant fails authentication. Its plaintext is the
 * shard's tokens, little-endian uint16, without the header (tokshard.h),
 * which the worker writes back when it unseals the version. The version's
 * sha256 is SHA-256 over the plaintext of its shards in order.
 */
#ifndef TY_DATASET_H
#define TY_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypt.h"
#include "storage.h"
#include "tokshard.h"

#define DATASET_NAME_MAX   63 /* [a-z0-9][a-z0-9._-]{0,62} */
#define DATASET_TENANT_MAX 63 /* a tenant's name */
#define DATASET_REF_MAX    (DATASET_TENANT_MAX + 1 + DATASET_NAME_MAX + 12)

/* RET: true for a dataset name: 1-63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit.
 */
bool dataset_name_valid(const char *s);

/*
 * A dataset reference as a job names it: "name" (the newest version when
 * the job is submitted) or "name@N" (version N >= 1), each optionally
 * after "tenant/" for a dataset another tenant granted (a tenant's name).
 * OUT owner ("" for the job's own tenant), name, *version (0 for the
 * newest). RET 0, or -1 with why set.
 */
int dataset_ref_parse(const char *ref, char owner[DATASET_TENANT_MAX + 1],
                      char name[DATASET_NAME_MAX + 1], int *version, char *why, size_t whylen);

/* OUT buf: "<root>/tenants/<tenant>/datasets/<dataset>/<version>". RET 0 or
 * -ERR_STORAGE_PATH_INVALID. */
int dataset_version_dir(const char *root, const char *tenant_id, const char *dataset_id,
                        const char *version_id, char *buf, size_t n);

/* OUT buf: "<root>/tenants/<grantee>/granted/<dataset>/<version>". RET as dataset_version_dir(). */
int dataset_granted_dir(const char *root, const char *grantee_id, const char *dataset_id,
                        const char *version_id, char *buf, size_t n);

/* OUT buf: the object name of shard index of the version, "<version>/shard_NNNNNN.bin". */
int dataset_shard_name(const char *version_id, int index, char *buf, size_t n);

/* What a version holds, as the writer counted it. */
typedef struct dataset_summary {
	int shards;
	uint64_t tokens;
	unsigned max_token; /* the largest token id */
	unsigned char sha256[32];
	uint64_t sealed_bytes; /* the shards' bytes on disk, sealed */
} dataset_summary;

typedef struct dataset_writer dataset_writer;

/*
 * Start writing version version_id of the dataset ctx names (ctx's job id
 * is the dataset's id; the key is the dataset's data key). Creates the
 * dataset's directories and "<version>.partial", each directory and shard
 * owned as owners says (the API hands them to the tenant's user). A shard
 * is closed and a new one begun every shard_tokens tokens
 * (1..TOKSHARD_MAX_TOKENS), and at each dataset_writer_next_shard().
 * RET 0 or a negative storage or crypt code, err set. OUT *out (also on failure: free it).
 */
int dataset_writer_open(const char *root, const storage_owners *owners, const crypt_object_ctx *ctx,
                        const char *version_id, size_t shard_tokens, dataset_writer **out,
                        char *err, size_t errlen);

/* Append n tokens. RET 0 or a negative code (storage, crypt). */
int dataset_writer_tokens(dataset_writer *w, const uint16_t *tokens, size_t n, char *err,
                          size_t errlen);

/* Append n bytes of text, each byte one token (the trainer's byte-level tokenizer). */
int dataset_writer_text(dataset_writer *w, const void *bytes, size_t n, char *err, size_t errlen);

/*
 * The bytes the version would take on disk if it ended now: the sealed
 * shards closed so far, and the current one as it will be once closed
 * (its tokens' bytes, a header and a tag per chunk: docs/storage.md).
 */
uint64_t dataset_writer_sealed_bytes(const dataset_writer *w);

/* End the current shard, if it holds any token; the next token starts another. */
int dataset_writer_next_shard(dataset_writer *w, char *err, size_t errlen);

/*
 * Close the last shard, sync, and rename "<version>.partial" to
 * "<version>". RET 0; -ERR_DATASET_EMPTY for a version without a token;
 * a storage or crypt code. OUT *sum.
 */
int dataset_writer_finish(dataset_writer *w, dataset_summary *sum, char *err, size_t errlen);

/*
 * Free w. When it did not finish, or finished but keep is false (the
 * version was never registered), its directory and shards are removed.
 */
void dataset_writer_free(dataset_writer *w, bool keep);

/*
 * Parses a stream of token shards (tokshard.h) laid end to end, as an
 * upload carries them, into a writer: one stored shard per shard given.
 */
typedef struct dataset_shard_parser {
	unsigned char header[TOKSHARD_HEADER_BYTES];
	size_t have;         /* header bytes gathered, or token bytes of the current shard */
	uint64_t left;       /* token bytes still due in the current shard */
	bool in_tokens;      /* past the current header */
	unsigned char carry; /* the first byte of a token split between feeds */
	bool has_carry;
	int shards;
} dataset_shard_parser;

/* RET 0, -ERR_DATASET_NOT_SHARDS (err says which shard and why), or the writer's code. */
int dataset_shards_feed(dataset_shard_parser *p, dataset_writer *w, const void *buf, size_t n,
                        char *err, size_t errlen);
/* RET 0, or -ERR_DATASET_NOT_SHARDS when the stream ended inside a shard. */
int dataset_shards_end(const dataset_shard_parser *p, char *err, size_t errlen);

/*
 * Remove what crashes left in the dataset's directory: "<version>.partial"
 * directories (an upload cut off by a crash of the API) and "<version>"
 * directories no row names (a crash between the rename and the commit),
 * each only when it was last changed more than older_than seconds ago, so
 * an upload under way is never touched. registered(arg, id) says whether
 * version id is in the database. OUT *removed (may be NULL). RET 0, or
 * -ERR_STORAGE_PATH_INVALID; a dataset without a directory is fine.
 */
int dataset_sweep(const char *root, const char *tenant_id, const char *dataset_id,
                  bool (*registered)(void *arg, const char *version_id), void *arg,
                  double older_than, int *removed);

/*
 * Unseal the version's shards shards into out_dir (an existing private
 * directory) as token shard files "shard_NNNNNN.bin", each written to a
 * temporary name and renamed when whole, and check the whole against
 * sha256. RET 0; -ERR_DATA_AUTH_FAILED (a shard failed authentication, or
 * the hash differs); -ERR_STORAGE_IO. OUT *tokens (may be NULL).
 */
int dataset_unseal(const char *root, const crypt_object_ctx *ctx, const char *version_id,
                   int shards, const unsigned char sha256[32], const char *out_dir,
                   uint64_t *tokens, char *err, size_t errlen);
/* The same from the sealed shards in dir (a version's, or its copy under granted/). */
int dataset_unseal_dir(const char *dir, const crypt_object_ctx *ctx, const char *version_id,
                       int shards, const unsigned char sha256[32], const char *out_dir,
                       uint64_t *tokens, char *err, size_t errlen);

/*
 * Copy version version_id of dataset dataset_id of tenant owner_id, as it
 * is sealed, to the grantee's dataset_granted_dir(), owned as owners says
 * (the grantee's user): the platform does it when a grant lets the
 * grantee's attempt read the version. The shards stay sealed under the
 * owner's dataset key, which the attempt gets only while the grant is in
 * force. The copy is made in a directory of its own and renamed whole; a
 * copy already there is kept. RET 0 or a negative storage code, err set.
 */
int dataset_stage(const char *root, const char *owner_id, const char *dataset_id,
                  const char *version_id, int shards, const char *grantee_id,
                  const storage_owners *owners, char *err, size_t errlen);

#endif
