/*
 * train_ckpt.h - what the trainer puts in a checkpoint shard, in
 * coordinates that do not depend on the parallel layout, so a checkpoint
 * written under one (dp, tp, pp, zero_stage) resumes under any other.
 *
 * A shard (ckpt.h) of the trainer has the sections
 *   "ranges"  runs of the whole model's flat unit-major vector (gpt.h):
 *             u64 pairs [begin, end), strictly increasing, not overlapping
 *             (empty pairs allowed and ignored);
 *   "params", "adam_m", "adam_v"  fp32: the elements of those runs, in order;
 *   "state"   JSON: step, optimizer step, loss scaler, data position, grid.
 * A rank writes the elements it owns (mp.h) of its ZeRO ranges, so across
 * the shards of a checkpoint every element of the model is there exactly
 * once. Reading, a rank asks for runs (mp_runs of its new ranges) and
 * takes them from whichever shards hold them.
 */
#ifndef TY_TRAIN_CKPT_H
#define TY_TRAIN_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt.h"
#include "mp.h"
#include "zero.h"

enum { TS_PARAMS = 0, TS_M, TS_V, TS_SECTIONS };

typedef struct train_shard {
	uint64_t *ranges; /* [2 * nruns] */
	size_t nruns;
	size_t *at;              /* [nruns]: first float of run k in the sections */
	float *sec[TS_SECTIONS]; /* params, adam_m, adam_v */
	size_t n;                /* floats in each section */
	char *state;             /* JSON text, NUL-terminated, or NULL */
} train_shard;

/*
 * Collect what one rank of a live run owns: for every local unit k, the
 * owned elements of dp_owned_range(dp, k). RET 0 or -ERR_INTERNAL (out of
 * memory).
 */
int train_shard_from_dp(train_shard *s, const mp_layout *lay, const dp_runtime *dp);

/*
 * Collect for a rank that does not run (offline resharding): the owned
 * elements of its ZeRO ranges (dp_partition over dp_size, dp_rank), taken
 * from srcs[0..nsrc). RET 0, -ERR_INTERNAL (out of memory), or
 * -ERR_CHECKPOINT_CORRUPT when the sources do not hold all of them.
 */
int train_shard_for_rank(train_shard *s, const mp_layout *lay, int dp_size, int dp_rank,
                         const train_shard *srcs, int nsrc, char *err, size_t errlen);

/* Write s (with state, NUL-terminated JSON) as shard rank of world at step. */
int train_shard_write(const train_shard *s, const char *state, ckpt_store *st, int step, int rank,
                      int world, ckpt_shard_info *info, char *err, size_t errlen);

/*
 * Read shard k of manifest m, checking its runs lie inside a model of
 * nparams floats and agree with the sections. with_state: read "state" too.
 * RET 0 or a checkpoint store code (ckpt.h).
 */
int train_shard_read(train_shard *s, ckpt_store *st, const ckpt_manifest *m, int k, size_t nparams,
                     bool with_state, char *err, size_t errlen);
void train_shard_release(train_shard *s);

/*
 * Copy from s every element of the wanted runs it holds: want[i] covers
 * global [want[i].global, +n) and goes to dst[*][want[i].local - base ..].
 * RET: elements copied (each wanted element is held by one shard).
 */
size_t train_shard_fill(const train_shard *s, const mp_run *want, size_t nwant, size_t base,
                        float *const dst[TS_SECTIONS]);

/*
 * The weights alone of the newest checkpoint in st, for a run that starts
 * from them (init-from): every shard's params runs into out[0..nparams),
 * the whole model's flat vector, checked to cover it exactly. model: the
 * job's normalized "model", which the checkpoint's must equal.
 * OUT *m: the manifest read (ckpt_manifest_release it, also on failure).
 * RET 0 or a checkpoint store code (ckpt.h): -ERR_INVALID_ARGUMENT when the
 * model differs.
 */
int train_ckpt_params(ckpt_store *st, const json_t *model, size_t nparams, float *out,
                      ckpt_manifest *m, char *err, size_t errlen);

#endif
