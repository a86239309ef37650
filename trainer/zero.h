/*
 * zero.h - the data-parallel runtime: the model's parameters, gradients
 * and AdamW state over a comm (comm.h), with ZeRO stages 0-3.
 *
 * The runtime supplies the model's gpt_hooks (gpt.h) and owns every float
 * array of training; the model only computes. One optimizer step is
 *
 *   dp_begin_step(dp, A);
 *   for (k = 0; k < A; k++) {                  A micro-steps, each rank its own data
 *           gpt_forward(model, &hooks, x, y);
 *           gpt_backward(model, &hooks, loss_scale / (A * world));
 *   }
 *   dp_step(dp, step, lr_at(&sched, step), clip, 1 / loss_scale, &info);
 *
 * With dloss = loss_scale / (A * world) the runtime only sums gradients
 * over micro-steps and ranks; grad_unscale removes the loss scale before
 * the norm and the update.
 *
 * Sharding. The flat parameter vector is unit-major (gpt.h); a runtime of
 * dp_new_part holds the units of its layout (mp.h) in the local flat
 * vector, and "world" below is the size of its dp group. Each unit of n
 * elements is padded to world * block, block = ceil(n / world); rank r
 * owns elements [r * block, (r + 1) * block) of every unit (clipped to n:
 * the last ranks may own fewer, even none, of a small unit; dp_partition).
 * Padding is internal: it is always zero and never updated.
 *
 * Stages (P full padded parameter count, S = sum of blocks = P / world):
 *   0  params P, grads P, m and v P each. Gradients are all-reduced; every
 *      rank updates everything identically.
 *   1  params P, grads P, a gradient shard S, m and v S each. Gradients are
 *      reduce-scattered to their owners, which update their shard; the
 *      parameters are then all-gathered.
 *   2  params P, gradient shard S, m and v S, and gradient scratch for
 *      unit 0 (when the layout holds it) plus two buffers the size of the
 *      largest other unit (never a full gradient array). grads_done(u) reduce-scatters the unit's
 *      scratch into the owners' shards (summing over micro-steps); after
 *      the update the parameters are all-gathered.
 *   3  as 2, but each rank stores only its parameter shard S; params(u)
 *      all-gathers the unit into a buffer: one for unit 0 (when held), one
 *      shared by the layers and the final LayerNorm.
 *
 * Overlap. Stages 0 and 1 start a nonblocking all-reduce (reduce-scatter)
 * of a unit in grads_done during the last micro-step's backward; the last
 * backward is the micro_steps-th since dp_begin_step (counted by
 * grads_done of the layout's first unit, the last of every backward of a
 * part: unit 0 for dp_new). Stages 2 and 3 start a nonblocking reduce-scatter in
 * every backward; the layer scratch is double-buffered, and a buffer is
 * waited for before it is zeroed for the next unit. dp_step waits for all.
 * Stage 3 gathers parameters synchronously (no prefetch yet).
 *
 * Hook contract, on top of gpt.h's:
 *   params(u):  stages 0-2: a pointer into the full parameters, valid for
 *               the runtime's life; its contents change in dp_step and
 *               dp_load_done. Stage 3: unit 0's pointer is valid until the
 *               next dp_step, dp_gather_params or dp_load_done; a layer's or
 *               the final LayerNorm's until params() is asked for another
 *               unit in 1..L+1 (so "until another unit's", as gpt.h says).
 *   grads(u):   valid until grads_done(u). Stages 2 and 3 keep at most two
 *               of the units 1..L+1 open at once: grads_done(u) must come
 *               before grads(u - 2). Stages 0 and 1: after the last
 *               micro-step's grads_done(u), unit u takes no more gradients
 *               until dp_step.
 *   grads_done: required (the runtime's hooks always set it).
 * A violation latches DP_ERR_CONTRACT; a communication failure inside a
 * hook latches its COMM_ERR_*. Hooks cannot return errors, so they keep
 * returning usable (if meaningless) pointers and dp_step reports the
 * latched error. After any error the runtime's state is undefined: free it.
 *
 * Every dp_* call that communicates is collective: all ranks call it in
 * the same order with the same arguments (except data pointers).
 */
#ifndef TY_ZERO_H
#define TY_ZERO_H

#include <stdbool.h>
#include <stddef.h>

#include "comm.h"
#include "gpt.h"
#include "mp.h"
#include "optim.h"

/* Runtime errors; communication errors pass through as COMM_ERR_*. */
#define DP_ERR_ARG      (-211) /* a bad argument */
#define DP_ERR_NOMEM    (-212) /* out of memory */
#define DP_ERR_CONTRACT (-213) /* the hooks were used against the contract above */

/*
 * The train_exit (failure.h) of a COMM_ERR_* or DP_ERR_* code: out of
 * memory, a lost transport (comm_failure), else internal. The one mapping,
 * for the CPU's runtime and the GPU path alike.
 */
int dp_train_exit(int rc);

typedef struct dp_runtime dp_runtime;

/* Result of one optimizer step. */
typedef struct dp_step_info {
	float grad_norm; /* L2 norm of the unscaled gradient over the norm group, before clipping */
	float clip_scale; /* the factor the gradient was multiplied by (1: no clipping) */
	bool finite;      /* every gradient element on every rank of the norm group and the norm
	                     are finite */
	bool updated;     /* the update was applied (finite); otherwise nothing changed */
} dp_step_info;

/* [begin, end) in the (local) flat unit-major parameter vector; empty when begin == end. */
typedef struct dp_range {
	size_t begin, end;
} dp_range;

/* Bytes the runtime allocated, by role. */
typedef struct dp_mem_info {
	size_t params;       /* parameters: full padded (0-2) or the shard (3) */
	size_t param_gather; /* stage 3: the unit-0 and the shared gather buffer */
	size_t grads;        /* full padded gradient accumulators (0, 1) */
	size_t grad_shard;   /* the owned gradient shard (1-3) */
	size_t grad_scratch; /* stages 2, 3: unit-0 scratch and two layer scratch buffers */
	size_t optimizer;    /* m and v */
	size_t bookkeeping;  /* layout tables, update segments, requests */
	size_t total;        /* the sum */
} dp_mem_info;

/*
 * The groups a runtime of the model-parallel grid (mp.h) works with:
 *   dp    the data-parallel group: gradients are reduced and ZeRO shards
 *         cut over it (required);
 *   norm  the group over which the squared gradient norm and finiteness
 *         are summed: the whole world, so clipping uses the true global
 *         norm (NULL: dp). Only owned tensors (mp.h) are counted.
 *   tie   pipeline: the first and last stage's copies of unit 0, whose
 *         gradients are summed after the data-parallel reduction so both
 *         copies take the same update (NULL: none). Used only by a layout
 *         that holds unit 0; both peers have the same dp size, so the
 *         owned blocks of unit 0 match.
 * Each comm keeps its own time: the tie's all-reduce counts on tie, the
 * norm's on norm.
 */
typedef struct dp_groups {
	comm *dp, *norm, *tie;
} dp_groups;

/*
 * The runtime of one rank of the grid: its local units (lay, borrowed for
 * the call), ZeRO over g->dp. Units are named by their global ids in the
 * hooks; a unit outside the layout is a contract violation. Ranges and
 * arrays (dp_owned_range, init_params, dp_gather_params) are in the local
 * flat layout. A backward ends with grads_done of the layout's first unit
 * (gpt_backward_part's order); that is what counts backward passes.
 * Every rank of g->dp passes the same layout (its tensor and pipeline
 * coordinates). init_params: lay->nparams floats, or NULL. Otherwise as
 * dp_new; dp_new is dp_new_part over the whole model's layout with groups
 * {c, NULL, NULL}.
 */
dp_runtime *dp_new_part(const mp_layout *lay, const dp_groups *g, int zero_stage,
                        const float *init_params, const adamw_config *opt, char *err,
                        size_t errlen);

/*
 * The ZeRO partition: of a unit of numel elements over a dp group of
 * dp_size, rank dp_rank owns [begin, end) (block = ceil(numel / dp_size),
 * [dp_rank * block, (dp_rank + 1) * block) clipped to numel). The same for
 * every stage; checkpoints and offline resharding use it.
 */
dp_range dp_partition(size_t numel, int dp_size, int dp_rank);

/*
 * Create the runtime; all float storage is allocated here, never later.
 * IN: cfg (copied), c (borrowed: must outlive the runtime), zero_stage 0-3,
 *     init_params: the full flat vector (gpt_num_params floats), identical
 *     on every rank, copied; NULL starts from zeros (then dp_load_shard),
 *     opt (copied).
 * RET: the runtime (caller frees with dp_free), or NULL with a message
 *      (out of memory says so). Not collective.
 */
dp_runtime *dp_new(const gpt_config *cfg, comm *c, int zero_stage, const float *init_params,
                   const adamw_config *opt, char *err, size_t errlen);
void dp_free(dp_runtime *dp);

/* RET: the hooks the model uses (ctx is dp). */
gpt_hooks dp_hooks(dp_runtime *dp);

/*
 * Start an optimizer step of micro_steps (>= 1) forward/backward passes:
 * zero the gradient accumulators. RET 0, DP_ERR_ARG, or a latched error.
 */
int dp_begin_step(dp_runtime *dp, int micro_steps);

/*
 * Finish the step: complete the gradient reduction over dp, sum unit 0's
 * over the tie (dp_groups), compute the norm of grad * grad_unscale over
 * every shard and the norm group (owned tensors only), and agree on
 * finiteness over the norm group (any local tensor). When finite: clip (grad_clip <= 0: no
 * clipping), apply AdamW with learning rate lr and bias correction for `step` (1-based; a trainer
 * that retries a skipped step passes the same number again) to the owned
 * shard, and make the parameters every rank needs consistent. When not
 * finite: change nothing. Collective over dp, tie and norm.
 * OUT: *out (may be NULL). RET 0 (also for a skipped step), or an error.
 */
int dp_step(dp_runtime *dp, int step, float lr, float grad_clip, float grad_unscale,
            dp_step_info *out);

/* RET: the error a hook latched, or 0. */
int dp_error(const dp_runtime *dp);

int dp_stage(const dp_runtime *dp);
/* RET: the local units (the layout's nunits; gpt_num_units for dp_new). */
int dp_num_units(const dp_runtime *dp);
/* RET: the step of the last applied update (0 before any). */
int dp_opt_step(const dp_runtime *dp);

/*
 * RET: the range of unit's elements this rank owns (for checkpoints), in
 * the flat layout (the local one of dp_new_part). unit is an index
 * 0 .. dp_num_units - 1 (the layout's order), not a global unit id.
 */
dp_range dp_owned_range(const dp_runtime *dp, int unit);
/*
 * RET: the owned elements of unit (end - begin floats of dp_owned_range):
 * fp32 master parameters, AdamW m and v. Borrowed; valid until the next
 * dp_step, dp_load_shard or dp_load_done. Stage 0 owns a range too (every
 * rank holds everything, but each writes only its range to a checkpoint).
 */
const float *dp_owned_params(const dp_runtime *dp, int unit);
const float *dp_owned_m(const dp_runtime *dp, int unit);
const float *dp_owned_v(const dp_runtime *dp, int unit);

/*
 * Restore unit's owned range from a checkpoint: params, m, v hold
 * end - begin floats each (m or v NULL: zeros). Not collective; call it
 * for every unit (an index, as dp_owned_range), then dp_load_done
 * (collective), which sets the step
 * count and makes every rank's copies consistent. RET 0 or DP_ERR_ARG.
 */
int dp_load_shard(dp_runtime *dp, int unit, const float *params, const float *m, const float *v);
int dp_load_done(dp_runtime *dp, int opt_step);

/*
 * Assemble the local flat parameter vector (the layout's nparams floats;
 * gpt_num_params for dp_new) into full_out on every rank of the dp group.
 * Collective over dp (stage 3 gathers; the others copy).
 * Not between params() and the model's last use of a stage-3 pointer.
 * RET 0 or an error.
 */
int dp_gather_params(dp_runtime *dp, float *full_out);

/* OUT: *out, the bytes allocated by role. */
void dp_memory_bytes(const dp_runtime *dp, dp_mem_info *out);

#endif
