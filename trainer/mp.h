/*
 * mp.h - model parallelism: the grid of ranks, and the slice of the model
 * one rank holds.
 *
 * Grid. world = dp * tp * pp ranks, tensor-parallel peers adjacent, then
 * data parallel, then pipeline stages:
 *   rank = (pp_rank * dp + dp_rank) * tp + tp_rank
 * so a tensor group (the ranks that split one layer) is tp consecutive
 * ranks, which on a real cluster share a node. Sub-communicators, by the
 * ranks that share all other coordinates:
 *   tp group    same dp_rank and pp_rank        (size tp)
 *   dp group    same tp_rank and pp_rank        (size dp: ZeRO shards here)
 *   pp group    same dp_rank and tp_rank        (size pp: activations flow here)
 *   tie group   the first and the last stage of a pp group (size 2 when
 *               pp > 1): the two copies of the tied embedding (unit 0)
 *
 * Layout. A rank's local parameters are the units of its pipeline stage,
 * in global unit order: unit 0 when the stage has the embeddings (first)
 * or the LM head (last; the head is tied to wte), its layers, and unit
 * L+1 on the last stage. Inside a unit every tensor of gpt_tensors()
 * is replaced by this tensor rank's piece (gpt_split), in the same order.
 *
 * Ownership. Every element of the global model has exactly one owner in
 * a model-parallel group (the ranks of one dp_rank): the tensor rank 0
 * copy of a replicated tensor, and the first stage's copy of unit 0. The
 * owner writes it to checkpoints and counts it in the global gradient
 * norm; the other copies are kept equal to it.
 */
#ifndef TY_MP_H
#define TY_MP_H

#include <stdbool.h>
#include <stddef.h>

#include "gpt.h"

typedef struct mp_grid {
	int world, rank;
	int dp, tp, pp;
	int dp_rank, tp_rank, pp_rank;
} mp_grid;

/* RET 0, or -1 with a message when world != dp * tp * pp or a width is < 1. */
int mp_grid_init(mp_grid *g, int world, int rank, int dp, int tp, int pp, char *err, size_t errlen);
/* RET: the world rank at grid position (dp_rank, tp_rank, pp_rank). */
int mp_grid_rank(const mp_grid *g, int dp_rank, int tp_rank, int pp_rank);

/* The sub-communicators above. */
typedef enum mp_group { MP_TP = 0, MP_DP, MP_PP, MP_TIE, MP_GROUPS } mp_group;

/*
 * How this rank splits the world into its group which (comm_split's color
 * and key), and the group's width: 1 means there is no such group (and
 * every rank of the world skips that split alike). A middle stage of the
 * pipeline takes part in the tie's split with a color of its own, and
 * drops what it gets (*member false).
 */
typedef struct mp_split {
	int width, color, key;
	bool member;
} mp_split;
mp_split mp_group_split(const mp_grid *g, mp_group which);

typedef struct mp_tensor {
	gpt_tensor t;         /* the global tensor: name, unit, offset, numel, shape, split */
	size_t offset, numel; /* this rank's piece in the local flat array */
	bool owner;           /* see above */
} mp_tensor;

typedef struct mp_unit {
	int id;               /* global unit: 0 .. L+1 */
	size_t offset, numel; /* in the local flat array */
	int first_tensor, ntensors;
} mp_unit;

typedef struct mp_layout {
	gpt_config cfg;
	int tp, tp_rank, pp, pp_rank;
	int first_layer, num_layers; /* this stage's layers (0-based) */
	bool has_embed, has_head;
	int nunits;
	mp_unit *units; /* in global unit order */
	int ntensors;
	mp_tensor *tensors;
	size_t nparams;      /* local floats */
	size_t *unit_offset; /* [L + 2]: local offset of each global unit, or SIZE_MAX (absent) */
	int *unit_index;     /* [L + 2]: index into units, or -1 */
} mp_layout;

/*
 * The slice of rank (tp_rank, pp_rank). RET NULL with a message when tp
 * does not divide num_heads, pp does not divide num_layers, or a rank is
 * out of range (out of memory says so).
 */
mp_layout *mp_layout_new(const gpt_config *cfg, int tp, int tp_rank, int pp, int pp_rank, char *err,
                         size_t errlen);
void mp_layout_free(mp_layout *lay);

/* The gpt_part of this layout (tp_comm, slots and recompute left for the caller). */
gpt_part mp_layout_part(const mp_layout *lay);

/*
 * A run: n consecutive local elements starting at local that are n
 * consecutive global elements starting at global.
 */
typedef struct mp_run {
	size_t global, local, n;
} mp_run;

/*
 * The runs covering local elements [begin, end), in increasing local (and
 * so global) order; owned_only skips the pieces of tensors this rank does
 * not own. Fills out[0 .. min(count, max)); RET count (call with max 0 to
 * size the array).
 */
size_t mp_runs(const mp_layout *lay, size_t begin, size_t end, bool owned_only, mp_run *out,
               size_t max);

/* local[0 .. nparams) = this rank's slice of the whole model's flat vector global. */
void mp_extract(const mp_layout *lay, const float *global, float *local);

/* global[...] = local, for the elements this rank owns (others untouched). */
void mp_insert_owned(const mp_layout *lay, const float *local, float *global);

#endif
