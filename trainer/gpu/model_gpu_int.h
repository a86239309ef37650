/*
 * model_gpu_int.h - the GPU model's insides, shared by model_gpu.cu (the
 * model's life, fp32 layers, the step's bookkeeping) and model_lowp.cu
 * (the bf16 / fp16 layers). Not for callers: they use model_gpu.h.
 */
#ifndef TY_MODEL_GPU_INT_H
#define TY_MODEL_GPU_INT_H

#include "model_gpu.h"
#include "ops_gpu.h"

/* A layer's parameters, in gpt.h's order within its unit. */
enum {
	P_LN1W,
	P_LN1B,
	P_QKVW,
	P_QKVB,
	P_PROJW,
	P_PROJB,
	P_LN2W,
	P_LN2B,
	P_FCW,
	P_FCB,
	P_FCPW,
	P_FCPB,
	P_COUNT
};

/*
 * A layer's activations kept for the backward. fp32: all of them as
 * named. 16-bit: ln1, qkv, atty, ln2, fch (the pre-activation), fchg are
 * in the 16-bit format; res2, res3 (the residual stream) and the
 * LayerNorm statistics stay fp32; att holds the attention's log-sum-exp
 * [B,NH,T] instead of the probabilities.
 */
typedef struct acts {
	float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *res2, *ln2, *ln2_mean, *ln2_rstd;
	float *fch, *fchg, *res3;
} acts;

/*
 * What one micro-batch in flight keeps (gpu_part's slots): the stage's
 * input (the embeddings' output, or the previous stage's), its layers'
 * activations, on the last stage the final LayerNorm's, the logits and
 * the losses, and its tokens on the device with their buckets (the
 * embeddings' backward reads them).
 */
typedef struct slot_state {
	float *enc, *lnf, *lnf_mean, *lnf_rstd, *logits, *dev_losses, *lse;
	acts *layer; /* [nl] */
	int32_t *inputs, *targets, *buckets;
	int nbuckets;
} slot_state;

struct gpu_model {
	gpt_config cfg;
	int B, T, N, C, NH, L, V, Vp;
	/* tensor parallel (gpu_part): Cl = C / tp channels and NHl = NH / tp heads here */
	int tp, Cl, NHl;
	/* the pipeline stage (gpu_part): layers first .. first + nl - 1, its ends, its slots */
	int first, nl, nslots;
	bool has_embed, has_head;
	slot_state *slot; /* [nslots] */
	slot_state cur;   /* the slot the layers read and write now (bind_slot) */
	comm *tp_comm;    /* NULL when tp is 1 */
	int tp_error;     /* the first failed all-reduce's COMM_ERR_* (then no more) */
	size_t *unit_off; /* [L + 2]: each unit's first float in the local flat arrays */
	size_t *unit_len; /* [L + 2]: its floats */
	gpu_lowp fmt;     /* GPU_NO_LOWP: fp32 throughout */
	size_t np;        /* the local parameter count */
	float *arr[4];    /* gpu_array */
	/* ZeRO 1 (gpu_shard): grad_shard NULL when the model is not sharded */
	gpu_shard_piece *pieces;
	int npieces;
	size_t shard_size, reach; /* reach: floats of arr[GPU_PARAMS] and arr[GPU_GRADS] */
	float *grad_shard;        /* device [shard_size]: the summed gradients of the shard */
	gpu_shard_piece *norm;    /* the norm's pieces (gpu_part); NULL: the whole gradient */
	int nnorm;
	double *piece_sq;      /* device [nnorm]: each norm piece's squared norm */
	double *piece_sq_host; /* host [nnorm] */
	gpu_span *decay_span;  /* device [2]: {0, 0} and {0, 1}, a piece's one span */
	void *wlow;            /* 16-bit: the weights' working copy, np values */
	gpt_tensor *tensors;
	int ntensors;
	gpu_span *spans;  /* device [ntensors]: gpu_adamw_flat's */
	int32_t *ints;    /* device [nslots][5N + 1]: each slot's tokens and buckets */
	int32_t *staging; /* pinned host [2][5N + 1]: a micro-batch's tokens and buckets */
	void *staged;     /* cudaEvent_t [2]: when each staging half was last copied */
	int next_stage;
	int32_t *count; /* host [V]: gpu_token_buckets' scratch */
	float *losses;  /* host [N] */
	void *block;    /* every activation and scratch buffer */
	size_t block_bytes;
	acts *layers; /* [nslots][nl]: each slot's layers */
	float *proj, *dres, *dbtc, *dbt4c, *dqkv, *datt;
	float *dres_low; /* 16-bit: dres rounded, the next GEMM's input */
	float *colsum;   /* 16-bit: GPU_COL_SCRATCH(N, 4C) floats for the column sums */
	double *sumsq;   /* [1 + GPU_SUMSQ_BLOCKS] */
	double
	    *loss_acc; /* [1]: the step's summed micro-batch means (gpu_model_forward, loss NULL) */
	bool unit_grads;   /* ZeRO 2, 3: no gradient array; the hooks' buffers */
	bool unit_params;  /* ZeRO 3: the parameters of the shard; each unit's from the hooks */
	void *low_slot[3]; /* ZeRO 3, 16-bit: the 16-bit copy of the units asked for (unit 0's,
	                      and the other units' in turn) */
	gpt_hooks hooks;   /* gpu_model_set_hooks */
};

/* Unit u's fp32 parameters: the hooks' (ZeRO 3), or the flat array's part. */
const float *gpu_unit_params(const gpu_model *m, int u);
/*
 * Unit u's 16-bit working copy, of its fp32 parameters p (gpu_unit_params):
 * the flat copy's part, or (ZeRO 3) p rounded into a slot of the model's.
 */
const void *gpu_unit_low(const gpu_model *m, int u, const float *p);
/* Where unit u's gradients of this backward go: the hooks' buffer, or the flat array's part. */
float *gpu_unit_grads(const gpu_model *m, int u);

/* Unit u's gradients of this backward are all queued: tell the caller. */
static inline void unit_done(const gpu_model *m, int u)
{
	if (m->hooks.grads_done)
		m->hooks.grads_done(m->hooks.ctx, u);
}

/* The residual stream entering local layer l (l == nl: the final LayerNorm's input), fp32. */
static inline const float *layer_input(const gpu_model *m, int l)
{
	return l == 0 ? m->cur.enc : m->cur.layer[l - 1].res3;
}

/*
 * Sum buf [n] (device) over the tensor group, in stream order after the
 * work queued so far; nothing with tp 1 or after a failure (tp_error).
 */
void gpu_tp_allreduce(gpu_model *m, float *buf, size_t n);

/* The pointers of layer l's parameters (or gradients) in the flat array base, of elem bytes. */
void gpu_layer_tensors(const gpu_model *m, void *base, size_t elem, int l, void *t[P_COUNT]);
/* The same in the layer's own part (unit l + 1) starting at unit. */
void gpu_unit_tensors(const gpu_model *m, void *unit, size_t elem, void *t[P_COUNT]);

/* 16-bit layers (model_lowp.cu). RET 0, or -1 when cuBLASLt refused. */
int lowp_model_forward(gpu_model *m);
int lowp_model_backward(gpu_model *m, float dloss);

#endif
