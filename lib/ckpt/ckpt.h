/*
 * ckpt.h - sharded training checkpoints over a ckpt_store (ckpt_store.h).
 *
 * Layout inside the store (the formats byte by byte: worker/README.md):
 *   step_00000020/shard_00000_of_00002.bin   one per rank, written by it
 *   step_00000020/shard_00001_of_00002.bin
 *   step_00000020/manifest.json              written LAST, by rank 0
 * A step directory is complete when its manifest exists and parses; one
 * without a manifest is an interrupted write and is never resumed from.
 *
 * Protocol for one checkpoint:
 *   every rank: ckpt_shard_begin, ckpt_put..., ckpt_shard_commit -> info
 *   gather the ckpt_shard_info of every rank on rank 0, then a barrier
 *   rank 0:     ckpt_manifest_write(infos), then ckpt_prune
 * ckpt_shard_begin on rank 0 first removes a manifest left at that step by
 * an earlier attempt, so the step is incomplete until the new manifest.
 *
 * A shard is a header (step, rank, world) and named sections of bytes; what
 * goes in is the trainer's choice (parameter, AdamW m and v slices together
 * with the global [begin, end) ranges they cover, RNG and data position,
 * loss scaler). Because sections are self-describing and the manifest keeps
 * world and the trainer's config, a later reader can reassemble the global
 * state and resume under another parallel configuration.
 *
 * Integrity: the SHA-256 of each shard file is computed while it is written
 * and recorded in the manifest; ckpt_shard_open() hashes the whole file
 * and refuses it (-ERR_CHECKPOINT_CORRUPT) before any section can be read.
 *
 * Errors: 0 or a negative err_code (error.h), with a message in err:
 *   -ERR_CHECKPOINT_CORRUPT   hash mismatch, truncated, bad magic or structure
 *   -ERR_CHECKPOINT_VERSION   a format version this build does not read
 *   -ERR_CHECKPOINT_NOT_FOUND no such checkpoint, manifest or section
 *   -ERR_INVALID_ARGUMENT     a bad argument: name, size, rank, duplicate section
 *   -ERR_INTERNAL             out of memory (or the hash could not be computed)
 * and the store's codes passed through (ckpt_store.h): -ERR_STORAGE_IO,
 * -ERR_STORAGE_PATH_INVALID, -ERR_STORAGE_FILE_NOT_FOUND (a shard that is not
 * there; a missing manifest is -ERR_CHECKPOINT_NOT_FOUND).
 */
#ifndef TY_CKPT_H
#define TY_CKPT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt_store.h"
#include "error.h"

#define CKPT_SHARD_MAGIC      "TYCKSHRD" /* 8 bytes, no terminator in the file */
#define CKPT_SHARD_VERSION    1
#define CKPT_SECTION_MAX      63 /* bytes of a section name */
#define CKPT_MANIFEST_MAGIC   "trainyard-checkpoint"
#define CKPT_MANIFEST_VERSION 1
#define CKPT_MANIFEST_NAME    STORAGE_MANIFEST_NAME
#define CKPT_MANIFEST_MAX     (16u << 20) /* bytes a manifest may have */
#define CKPT_STEP_MAX         99999999
#define CKPT_WORLD_MAX        99999

/*
 * What a committed shard is, as recorded in the manifest. Plain bytes, so
 * ranks can gather it with MPI_BYTE.
 */
typedef struct ckpt_shard_info {
	int32_t rank;
	uint64_t bytes;  /* file size */
	char name[64];   /* "shard_00001_of_00002.bin", relative to the step directory */
	char sha256[65]; /* lower-case hex of the whole file */
} ckpt_shard_info;

/* Fill buf with "step_%08d" and "shard_%05d_of_%05d.bin". */
void ckpt_step_dir(int step, char buf[32]);
void ckpt_shard_name(int rank, int world, char buf[64]);

/* ---- writing a shard ------------------------------------------------ */

typedef struct ckpt_writer ckpt_writer;

/*
 * Create the step directory (if needed) and start rank's shard of a world of
 * world ranks. 0 <= step <= CKPT_STEP_MAX, 0 <= rank < world <= CKPT_WORLD_MAX.
 * OUT *out: the writer; finish it with ckpt_shard_commit or ckpt_shard_abort.
 */
int ckpt_shard_begin(ckpt_store *s, int step, int rank, int world, ckpt_writer **out, char *err,
                     size_t errlen);

/*
 * Append section name (1..CKPT_SECTION_MAX bytes of [A-Za-z0-9._/-], unique
 * in the shard) holding n bytes of data. The first failure is kept: later
 * puts do nothing and return it, and ckpt_shard_commit reports it.
 */
int ckpt_put(ckpt_writer *w, const char *name, const void *data, size_t n);

/*
 * Write the trailer and commit the shard (atomic, durable). Frees w, also
 * on failure (then nothing is left under the shard's name).
 * OUT *info: rank, file name, size and SHA-256, for the manifest.
 */
int ckpt_shard_commit(ckpt_writer *w, ckpt_shard_info *info, char *err, size_t errlen);
/* Drop the shard being written. Frees w; w may be NULL. */
void ckpt_shard_abort(ckpt_writer *w);

/* ---- reading a shard ------------------------------------------------ */

typedef struct ckpt_reader ckpt_reader;

/*
 * Open rank's shard of the checkpoint at step written by world ranks. The
 * whole file is read and hashed first; with expected_sha256 (64 hex
 * digits; NULL to skip), a different hash is -ERR_CHECKPOINT_CORRUPT with
 * a message naming the file and both hashes. A truncated file, a bad magic
 * or a header that disagrees with (step, rank, world) is
 * -ERR_CHECKPOINT_CORRUPT too; a shard that is not there
 * -ERR_STORAGE_FILE_NOT_FOUND. Sections are then read on demand (the file is read again).
 * OUT *out: the reader; caller frees with ckpt_shard_close.
 */
int ckpt_shard_open(ckpt_store *s, int step, int rank, int world, const char *expected_sha256,
                    ckpt_reader **out, char *err, size_t errlen);
void ckpt_shard_close(ckpt_reader *r);

/* OUT *n: the byte size of section name; -ERR_CHECKPOINT_NOT_FOUND when absent. */
int ckpt_get_size(const ckpt_reader *r, const char *name, uint64_t *n);
/* Copy section name into buf; n must equal its size (else -ERR_INVALID_ARGUMENT). */
int ckpt_get(ckpt_reader *r, const char *name, void *buf, size_t n, char *err, size_t errlen);
/* Sections in file order, for tools and resharding. RET: NULL past the end. */
int ckpt_section_count(const ckpt_reader *r);
const char *ckpt_section_name(const ckpt_reader *r, int i);

/* ---- the manifest --------------------------------------------------- */

typedef struct ckpt_manifest {
	int step;
	int world;
	json_t *config;          /* owned: the object the trainer passed */
	ckpt_shard_info *shards; /* owned: [world], shards[r].rank == r */
	char created_at[32];     /* "2024-05-20T12:00:00.123Z" (clock.h) */
} ckpt_manifest;

/*
 * Write step_%08d/manifest.json (atomically) listing shards[0..n), which
 * must be exactly ranks 0..world-1 in any order. config: a JSON object
 * (borrowed; NULL writes {}). Call after every shard is committed.
 */
int ckpt_manifest_write(ckpt_store *s, int step, int world, const json_t *config,
                        const ckpt_shard_info *shards, int n, char *err, size_t errlen);

/*
 * Read and validate the manifest of step. -ERR_CHECKPOINT_NOT_FOUND when it
 * does not exist, -ERR_CHECKPOINT_CORRUPT when it does not parse or
 * validate, -ERR_CHECKPOINT_VERSION when it is of another format version.
 * OUT *out: caller releases with ckpt_manifest_release (also after failure).
 */
int ckpt_manifest_read(ckpt_store *s, int step, ckpt_manifest *out, char *err, size_t errlen);
void ckpt_manifest_release(ckpt_manifest *m);

/* ---- finding and pruning -------------------------------------------- */

typedef struct ckpt_entry {
	int step;
	bool complete; /* the manifest exists (ckpt_find_valid verifies it) */
} ckpt_entry;

/*
 * Every step directory in the store, oldest first. Other names are ignored.
 * A store that does not exist yet holds none; any other failure of the
 * store, also on whether one manifest exists, fails the list (so ckpt_prune
 * never takes a complete checkpoint for an interrupted write).
 * OUT *out, *n: caller frees *out with free().
 */
int ckpt_list(ckpt_store *s, ckpt_entry **out, int *n, char *err, size_t errlen);

/* OUT *step: the newest step whose manifest reads. -ERR_CHECKPOINT_NOT_FOUND when there is none. */
int ckpt_latest(ckpt_store *s, int *step, char *err, size_t errlen);

/*
 * Remove the checkpoint of step, whole: the manifest first, so that it is
 * never complete but partial, then its shards and its directory. A step
 * that is not there is no failure. RET 0 or the store's code (ckpt_store.h).
 */
int ckpt_step_remove(ckpt_store *s, int step, char *err, size_t errlen);

/*
 * Keep the newest keep (>= 1) complete checkpoints. Removes older complete
 * ones and every incomplete directory older than the newest complete one;
 * newer incomplete directories may be a write in progress and stay.
 * Completeness is the manifest's, not the shards' hashes: call it right
 * after a checkpoint was written (and verified, if in doubt).
 * OUT *removed (may be NULL): how many directories went.
 */
int ckpt_prune(ckpt_store *s, int keep, int *removed, char *err, size_t errlen);

/*
 * Verify every shard of m: its size and SHA-256 against the manifest.
 * part/parts split the work between processes: shards whose rank % parts
 * == part are checked (0 and 1 for all).
 */
int ckpt_verify(ckpt_store *s, const ckpt_manifest *m, int part, int parts, char *err,
                size_t errlen);

/* How ckpt_find_valid shares verification and reports refusals. */
typedef struct ckpt_find_opts {
	int part, parts; /* passed to ckpt_verify; 0, 0 means 0, 1 */
	/* RET: nonzero when ok is nonzero in every process (e.g. an allreduce
	 * of MIN); NULL when one process verifies everything. */
	int (*agree)(void *ctx, int ok);
	/* Told about each checkpoint that was refused and why. May be NULL. */
	void (*refused)(void *ctx, int step, int code, const char *why);
	void *ctx;
} ckpt_find_opts;

/*
 * Walk the complete checkpoints from the newest back and return the first
 * whose every shard verifies. opts may be NULL.
 * RET: 0 with *out filled; -ERR_CHECKPOINT_NOT_FOUND when there is no
 * complete checkpoint; -ERR_CHECKPOINT_CORRUPT when there are some but none
 * verifies (err names the newest refusal); the store's code when listing it
 * fails.
 * Any failure to read or verify a checkpoint (missing or corrupt shard,
 * store error) refuses it, so every process takes the same path.
 * OUT *out: caller releases with ckpt_manifest_release (also after failure).
 */
int ckpt_find_valid(ckpt_store *s, const ckpt_find_opts *opts, ckpt_manifest *out, char *err,
                    size_t errlen);

#endif
