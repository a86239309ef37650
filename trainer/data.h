/*
 * data.h - the training data loader: token shards, the shuffled sequence
 * order, the data-parallel split, and a prefetch thread.
 *
 * Shards are llm.c's format (byte by byte in worker/README.md): a header of
 * 256 little-endian int32 (magic 20240520, version 1, token count, then
 * zeros) followed by count little-endian uint16 tokens. The shards a data
 * path names beneath the data root (lib/data/datapath.h: relative, no "..", a
 * pattern only in the last component, no symbolic link followed), sorted
 * by name (strcmp), form one token stream. A path that is not allowed or
 * leads out of the root is the data error.
 *
 * Sequence k is the T+1 tokens starting at k*T of the stream (inputs the
 * first T, targets the last T); there are floor((tokens - 1) / T) of them.
 * Each epoch visits the sequences in a permutation drawn from (seed, epoch)
 * with splitmix64 and Fisher-Yates (data_permutation), the same on every
 * rank and machine; without shuffle the order is 0, 1, 2, ...
 *
 * Data parallel: a micro-step of the dp group consumes dp_size*B positions
 * of the order from the cursor; rank r takes [cursor + r*B, cursor +
 * (r+1)*B) and everyone's cursor advances by dp_size*B. An epoch ends when
 * it cannot fill a whole optimizer step (dp_size*B*accum_steps positions);
 * the rest of that epoch is skipped and the next epoch's order begins. So
 * runs with the same dp_size*B*accum_steps see the same sequences in every
 * optimizer step: 1 rank with accumulation 2a equals 2 ranks with a.
 *
 * Errors: functions return 0 or a negative err_code (lib/base/error.h):
 *   -ERR_TRAINING_DATA_INVALID the "data error": the input is malformed or does
 *                              not fit the run (the trainer's data_error exit)
 *   -ERR_STORAGE_IO            a data file could not be opened or read
 *   -ERR_INVALID_ARGUMENT      a bad argument
 *   -ERR_INTERNAL              out of memory
 *
 * Threads: a loader is used by one thread; with prefetch it runs one
 * background thread of its own that reads the next batch while the caller
 * computes. The batches are identical with and without prefetch.
 */
#ifndef TY_DATA_H
#define TY_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datapath.h"
#include "error.h"
#include "tokshard.h"

/* The shard format is lib/data/tokshard.h's. */
#define DATA_SHARD_MAGIC        TOKSHARD_MAGIC
#define DATA_SHARD_VERSION      TOKSHARD_VERSION
#define DATA_SHARD_HEADER_INTS  TOKSHARD_HEADER_INTS
#define DATA_SHARD_HEADER_BYTES TOKSHARD_HEADER_BYTES
#define DATA_SHARD_MAX_TOKENS   TOKSHARD_MAX_TOKENS
#define DATA_VOCAB_MAX          65536 /* tokens are uint16 */

typedef struct data_config {
	const char *root;         /* the data root directory; NULL or "": the current one */
	const char *pattern;      /* data path of the shard files beneath root (datapath.h) */
	datapath_resolve resolve; /* DATAPATH_RESOLVE_AUTO but in tests */
	int vocab_size;           /* every token must be < vocab_size (<= DATA_VOCAB_MAX) */
	int B, T;                 /* micro-batch per rank, sequence length */
	int dp_rank, dp_size;
	int accum_steps; /* micro-steps per optimizer step; 0 means 1 */
	uint64_t seed;   /* of the shuffle */
	bool shuffle;    /* false: sequences in stream order (evaluation) */
	bool prefetch;   /* read the next batch on a background thread */
	bool skip_scan;  /* do not check every token at open; they are still
	                  * checked as they are read */
} data_config;

/*
 * Where the group is in the data, the same on every rank: a POD to store
 * in a checkpoint. cursor counts the positions of the epoch's order that
 * are consumed; sequences is the data's sequence count when the position
 * was taken (0: not checked by data_seek).
 */
typedef struct data_position {
	uint64_t epoch;
	uint64_t cursor;
	uint64_t sequences;
} data_position;

typedef struct data_loader data_loader;

/*
 * Match the shards beneath the root, validate every header and size (and,
 * unless skip_scan, every token), and start the prefetch thread. The data
 * must hold at least one optimizer step (dp_size*B*accum_steps sequences).
 * RET: 0; -ERR_TRAINING_DATA_INVALID for no match, a path that is not
 * allowed, a symbolic link or a way out of the root, a bad magic, version or
 * size, a token >= vocab_size, or too little data; -ERR_STORAGE_IO,
 * -ERR_INVALID_ARGUMENT, -ERR_INTERNAL. err names the file.
 * OUT *out: the loader at epoch 0, cursor 0; caller frees with data_close.
 */
int data_open(const data_config *cfg, data_loader **out, char *err, size_t errlen);

/* For evaluation: one rank, no shuffle, no prefetch, accum_steps 1. */
int data_open_eval(const char *root, const char *pattern, int vocab_size, int B, int T,
                   data_loader **out, char *err, size_t errlen);

/*
 * Fill inputs[B*T] and targets[B*T] (row-major [B, T]) with this rank's
 * part of the next micro-step, and advance. On failure (-ERR_STORAGE_IO,
 * or -ERR_TRAINING_DATA_INVALID for a bad token) data_error() says why and
 * the position does not move.
 */
int data_next(data_loader *d, int32_t *inputs, int32_t *targets);

/* The message of the last failure of data_next or data_seek ("" if none). */
const char *data_error(const data_loader *d);

/* The position of the batch data_next returns next. */
data_position data_tell(const data_loader *d);

/*
 * Continue from p (from data_tell, possibly of a run with another dp_size).
 * RET: 0; -ERR_TRAINING_DATA_INVALID when p.sequences is set and differs
 * from this data.
 */
int data_seek(data_loader *d, data_position p);

/* Seconds data_next spent waiting for (or, without prefetch, reading) data, in all. */
double data_wait_seconds(const data_loader *d);

uint64_t data_num_tokens(const data_loader *d);
uint64_t data_num_sequences(const data_loader *d);
/* Whole optimizer steps of the group in one epoch. */
uint64_t data_steps_per_epoch(const data_loader *d);

/* Stop the prefetch thread, close the files, free d. d may be NULL. */
void data_close(data_loader *d);

/* ---- building blocks, also used by tests and the tokenizer ---------- */

/* floor((tokens - 1) / T), 0 when tokens <= T. */
uint64_t data_sequence_count(uint64_t tokens, int T);

/*
 * perm[0..n) = the order of epoch under seed: Fisher-Yates over 0..n-1 from
 * i = n-1 down to 1, swapping i with a uniform j in [0, i] drawn by
 * rejection from splitmix64 started at seed ^ mix64(epoch).
 */
void data_permutation(uint64_t seed, uint64_t epoch, uint32_t *perm, uint32_t n);

/* Encode the 1024-byte header of a shard holding ntokens tokens. */
void data_shard_header(unsigned char out[DATA_SHARD_HEADER_BYTES], uint32_t ntokens);

/*
 * A shard written in pieces to "<path>.tmp.<pid>" and renamed onto path by
 * data_shard_finish after fsync; nothing is visible under path before.
 */
typedef struct data_shard_writer data_shard_writer;
int data_shard_create(const char *path, data_shard_writer **out, char *err, size_t errlen);
/* Append n tokens; the shard may hold at most DATA_SHARD_MAX_TOKENS. */
int data_shard_append(data_shard_writer *w, const uint16_t *tokens, size_t n, char *err,
                      size_t errlen);
/* Tokens appended so far. */
size_t data_shard_tokens(const data_shard_writer *w);
/* Write the header, sync, rename. Frees w, also on failure (the temp file goes). */
int data_shard_finish(data_shard_writer *w, char *err, size_t errlen);
/* Drop the shard: the temp file goes. Frees w; w may be NULL. */
void data_shard_discard(data_shard_writer *w);

/* Write tokens[0..n) as one shard at path (atomically, as above). */
int data_write_shard(const char *path, const uint16_t *tokens, size_t n, char *err, size_t errlen);

#endif
