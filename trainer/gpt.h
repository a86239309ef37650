/*
 * gpt.h - the GPT-2 style decoder: configuration, parameter layout,
 * forward, backward and the cross-entropy loss, on the CPU.
 *
 * Shapes: B batch, T sequence length (<= max_seq_len), C channels,
 * NH heads, L layers, V vocabulary, Vp padded vocabulary (multiple of 64).
 *
 * Parameters live in one flat float array in *unit-major* order, so a
 * parallel runtime can move one unit at a time:
 *   unit 0        embeddings: wte [Vp, C], wpe [max_seq_len, C]
 *   unit 1 .. L   layer l-1: ln1w [C], ln1b [C], qkvw [3C, C], qkvb [3C],
 *                 attprojw [C, C], attprojb [C], ln2w [C], ln2b [C],
 *                 fcw [4C, C], fcb [4C], fcprojw [C, 4C], fcprojb [C]
 *   unit L + 1    final LayerNorm: lnfw [C], lnfb [C]
 * The LM head is tied to wte. llmc.c converts from and to llm.c's
 * tensor-major file order.
 *
 * The model never owns parameters or gradients: it asks the caller for
 * each unit's parameter pointer before using it and for the unit's
 * gradient pointer before writing it, and says when a unit's gradients
 * are complete (gpt_hooks). Data parallel with ZeRO plugs in there (zero.h).
 * Activations and scratch are allocated once by gpt_new(), never in the
 * step loop.
 */
#ifndef TY_GPT_H
#define TY_GPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"

typedef enum gpt_precision { GPT_FP32 = 0, GPT_BF16, GPT_FP16 } gpt_precision;

typedef struct gpt_config {
	int max_seq_len;       /* T max, size of wpe */
	int vocab_size;        /* V */
	int padded_vocab_size; /* Vp >= V, multiple of 64 */
	int num_layers;        /* L */
	int num_heads;         /* NH, divides channels */
	int channels;          /* C */
} gpt_config;

/*
 * Tensor parallel (Megatron style): how a tensor is cut over the tp ranks
 * of a tensor group. Rank r of tp holds, of a [rows, cols] tensor:
 *   GPT_REPLICATED  all of it (LayerNorms, row-parallel biases, embeddings);
 *   GPT_SPLIT_ROWS  rows [r * rows/tp, (r+1) * rows/tp) (fcw, fcb: column parallel);
 *   GPT_SPLIT_COLS  columns [r * cols/tp, (r+1) * cols/tp) of every row
 *                   (attprojw, fcprojw: row parallel);
 *   GPT_SPLIT_QKV   the rows of each third (q, k, v) split as GPT_SPLIT_ROWS,
 *                   so a rank holds whole heads (qkvw, qkvb).
 * A rank's piece is stored row-major, in the global element order.
 */
typedef enum gpt_split {
	GPT_REPLICATED = 0,
	GPT_SPLIT_ROWS,
	GPT_SPLIT_COLS,
	GPT_SPLIT_QKV
} gpt_split;

/* One parameter tensor of the layout. */
typedef struct gpt_tensor {
	char name[32]; /* "wte", "wpe", "h3.qkvw", "lnfw", ... */
	int unit;      /* 0 .. L+1 */
	size_t offset; /* in the flat array */
	size_t numel;
	size_t rows, cols; /* the shape; a vector is [n, 1] */
	gpt_split split;
	bool decay; /* 2-D weight: AdamW applies weight decay */
} gpt_tensor;

/* RET: the floats one rank of a tensor group of tp holds of t. */
size_t gpt_tensor_local_numel(const gpt_tensor *t, int tp);

#define GPT_MAX_TENSORS (2 + 12 * 1024 + 2)

/* RET: 0, or -1 with a message when cfg is not a valid model. */
int gpt_config_check(const gpt_config *cfg, char *err, size_t errlen);
int gpt_num_units(const gpt_config *cfg);                /* L + 2 */
size_t gpt_num_params(const gpt_config *cfg);            /* total floats */
size_t gpt_unit_offset(const gpt_config *cfg, int unit); /* first float of the unit */
size_t gpt_unit_numel(const gpt_config *cfg, int unit);
/* Fill out[0..*n) with every tensor in layout order. RET *n. */
int gpt_tensors(const gpt_config *cfg, gpt_tensor *out, int max);

/* Deterministic initialisation of all parameters (GPT-2 scheme) from seed. */
void gpt_init_params(const gpt_config *cfg, float *params, uint64_t seed);

/*
 * How the model reaches parameters and gradients. Each callback gets ctx.
 *   params(unit):   pointer to the unit's parameters, valid until the
 *                   model asks for another unit's (a ZeRO-3 runtime may
 *                   gather into a buffer); called in forward and backward.
 *   grads(unit):    pointer where the unit's gradients accumulate (+=).
 *   grads_done(u):  the unit's gradients of this backward are complete
 *                   (order: L+1, L, ..., 1, 0). May be NULL.
 * All three may be NULL-free pointers into one flat array (gpt_hooks_flat).
 *
 * The calls, in order (P params, G grads, D grads_done):
 *   forward:   P0 (embeddings), P1 .. PL, P(L+1), P0 (LM head)
 *   backward:  P0 G0 (LM head), P(L+1) G(L+1) D(L+1),
 *              then for l = L .. 1: Pl Gl Dl,
 *              then P0 G0 D0 (embeddings; their backward reads no parameter)
 * A part (gpt_part) makes the calls of its units only:
 *   forward:   P0 (embeddings, first stage), its layers up, P(L+1) P0 (last stage)
 *   backward:  last stage: P0 G0 (LM head), P(L+1) G(L+1) D(L+1);
 *              its layers down: Pl Gl Dl;
 *              first stage: P0 G0 D0; last stage without the embeddings: D0
 */
typedef struct gpt_hooks {
	void *ctx;
	const float *(*params)(void *ctx, int unit);
	float *(*grads)(void *ctx, int unit);
	void (*grads_done)(void *ctx, int unit);
} gpt_hooks;

/*
 * Hooks over one flat parameter and one flat gradient array. unit_offset
 * NULL: the arrays are the whole model's layout; else unit u starts at
 * unit_offset[u] (a part's local arrays: see mp.h).
 */
typedef struct gpt_flat {
	const gpt_config *cfg;
	const float *params;
	float *grads;
	const size_t *unit_offset; /* [L + 2] or NULL */
} gpt_flat;
gpt_hooks gpt_hooks_flat(gpt_flat *flat);

typedef struct gpt_model gpt_model;

/*
 * Allocate activations for batch B and sequence length T once.
 * precision: matmul inputs and stored activations are rounded to it.
 * Threads are OpenMP's (omp_set_num_threads, OMP_NUM_THREADS): the
 * matmuls are split over them too, one single-threaded sgemm per thread.
 * RET: the model, or NULL with a message (out of memory: err says so).
 */
gpt_model *gpt_new(const gpt_config *cfg, int B, int T, gpt_precision precision, char *err,
                   size_t errlen);
void gpt_free(gpt_model *m);

/*
 * Activation recomputation, a memory option (the results are the same bits):
 *   GPT_RECOMPUTE_NONE       keep every activation the backward reads;
 *   GPT_RECOMPUTE_SELECTIVE  drop the attention probabilities [B,NH,T,T] of
 *                            each layer and recompute them in the backward;
 *   GPT_RECOMPUTE_FULL       keep only each layer's input and recompute the
 *                            whole layer in the backward.
 */
typedef enum gpt_recompute {
	GPT_RECOMPUTE_NONE = 0,
	GPT_RECOMPUTE_SELECTIVE,
	GPT_RECOMPUTE_FULL
} gpt_recompute;

/*
 * The part of the model one rank computes: a pipeline stage (a run of
 * layers, with the embeddings on the first stage and the final LayerNorm,
 * the LM head and the loss on the last), cut over a tensor group.
 *
 * Tensor parallel: the rank holds heads [r*NH/tp, (r+1)*NH/tp) and the
 * matching slices (gpt_split); its units are laid out as gpt.h's, with
 * each tensor replaced by its local piece (gpt_tensor_local_numel), in the
 * same order. Per layer, one all-reduce over tp_comm after the attention
 * projection and one after the MLP projection in the forward, one after
 * the QKV matmul's and one after the first MLP matmul's input gradient in
 * the backward. The embeddings, LayerNorms and LM head are replicated:
 * every tp rank computes them on the same values, so their gradients are
 * the same on every rank of the group.
 *
 * Slots: a stage keeps the activations of up to `slots` micro-batches in
 * flight (1F1B needs pp - stage); the scratch of the backward is shared.
 */
typedef struct gpt_part {
	int tp;          /* tensor-parallel width; divides num_heads (and so channels) */
	comm *tp_comm;   /* the tensor group (size tp); NULL when tp == 1 */
	int first_layer; /* 0-based */
	int num_layers;  /* layers first_layer .. first_layer + num_layers - 1 */
	bool has_embed;  /* first stage: embeddings */
	bool has_head;   /* last stage: final LayerNorm, LM head, loss */
	int slots;       /* >= 1 */
	gpt_recompute recompute;
} gpt_part;

/* The whole model on one rank: tp 1, every layer, both ends, one slot, no recompute. */
gpt_part gpt_part_whole(const gpt_config *cfg);

/*
 * As gpt_new, for a part. RET NULL with a message for a part that does not
 * fit cfg (tp does not divide num_heads, layers out of range, tp > 1
 * without tp_comm, slots < 1).
 */
gpt_model *gpt_new_part(const gpt_config *cfg, const gpt_part *part, int B, int T,
                        gpt_precision precision, char *err, size_t errlen);

/*
 * Forward of one micro-batch into slot (0 .. slots-1), overwriting what
 * the slot held. inputs [B,T] token ids: read on the first stage (else
 * may be NULL). x [B,T,C]: the previous stage's output, read (copied) on
 * other stages. targets [B,T]: read on the last stage; NULL there computes
 * no loss (and allows no backward). Hooks are called as gpt_hooks says,
 * restricted to the part's units.
 * RET: the mean loss on the last stage with targets, else 0.
 */
float gpt_forward_part(gpt_model *m, const gpt_hooks *h, int slot, const int32_t *inputs,
                       const float *x, const int32_t *targets);

/* The stage's output of slot's last forward, [B,T,C] (the residual after its last layer). */
const float *gpt_stage_output(const gpt_model *m, int slot);

/*
 * Backward of slot's last forward. Last stage: from the loss, with dloss
 * as in gpt_backward (dy unused). Other stages: dy [B,T,C], the gradient
 * of the stage output (dloss unused). Gradients accumulate through the
 * hooks; the last grads_done of a backward is always that of the part's
 * lowest unit (0 on a stage with the embeddings or the LM head, else its
 * first layer's).
 */
void gpt_backward_part(gpt_model *m, const gpt_hooks *h, int slot, float dloss, const float *dy);

/* [B,T,C] gradient of the stage input of the last backward (the previous stage's dy); valid
 * until the next backward. On the first stage it is the embeddings' output gradient. */
const float *gpt_stage_input_grad(const gpt_model *m);

/* Bytes of activations and scratch gpt_new_part allocated. */
size_t gpt_activation_bytes(const gpt_model *m);

/*
 * A failed tensor-parallel all-reduce cannot be returned from inside the
 * model: the first one is kept, and the model communicates no more (its
 * results are then meaningless). RET: that COMM_ERR_* code, or 0.
 */
int gpt_error(const gpt_model *m);

/*
 * Forward pass over inputs [B, T] (token ids < V). With targets non-NULL,
 * computes the mean cross-entropy loss over the B*T positions.
 * RET: the loss (or 0 without targets); NaN/Inf are returned as they are.
 */
float gpt_forward(gpt_model *m, const gpt_hooks *h, const int32_t *inputs, const int32_t *targets);

/*
 * Backward pass of the last forward. dloss is d(objective)/d(mean loss):
 * 1 for a plain step; accumulation, data parallel averaging and fp16 loss
 * scaling multiply it (e.g. scale / (accum * dp)). Gradients accumulate
 * (+=) into the hooks' grads.
 */
void gpt_backward(gpt_model *m, const gpt_hooks *h, float dloss);

/* Logits of the last forward, [B, T, Vp]; entries v >= V are -inf (for tests). */
const float *gpt_logits(const gpt_model *m);

/* Model FLOPs per token for training (6N + 6 L C T, as in the PaLM paper), with
 * N = gpt_num_params(cfg): every parameter, wpe and the padded rows of wte included. */
double gpt_flops_per_token(const gpt_config *cfg, int T);

#endif
