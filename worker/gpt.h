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

typedef enum gpt_precision { GPT_FP32 = 0, GPT_BF16, GPT_FP16 } gpt_precision;

typedef struct gpt_config {
	int max_seq_len;       /* T max, size of wpe */
	int vocab_size;        /* V */
	int padded_vocab_size; /* Vp >= V, multiple of 64 */
	int num_layers;        /* L */
	int num_heads;         /* NH, divides channels */
	int channels;          /* C */
} gpt_config;

/* One parameter tensor of the layout. */
typedef struct gpt_tensor {
	char name[32]; /* "wte", "wpe", "h3.qkvw", "lnfw", ... */
	int unit;      /* 0 .. L+1 */
	size_t offset; /* in the flat array */
	size_t numel;
	bool decay; /* 2-D weight: AdamW applies weight decay */
} gpt_tensor;

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
 */
typedef struct gpt_hooks {
	void *ctx;
	const float *(*params)(void *ctx, int unit);
	float *(*grads)(void *ctx, int unit);
	void (*grads_done)(void *ctx, int unit);
} gpt_hooks;

/* Hooks over one flat parameter and one flat gradient array. */
typedef struct gpt_flat {
	const gpt_config *cfg;
	const float *params;
	float *grads;
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
