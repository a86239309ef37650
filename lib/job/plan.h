/*
 * plan.h - the capacity planner: will a model fit a parallel layout on a
 * kind of device, and how fast would it train there.
 *
 * Pure arithmetic, no I/O. Given a model, a batch, a precision, a
 * recompute mode and the devices (count, memory, peak FLOP/s, link
 * bandwidth), plan_evaluate() estimates one layout (data x tensor x
 * pipeline parallel, ZeRO stage): bytes per device, FLOPs, communication,
 * pipeline bubble, step time, and whether it fits. plan_enumerate() ranks
 * every layout that fits; plan_fallback_ladder() lists the smaller ones a
 * job could restart on. docs/plan.md gives each formula and its source.
 *
 * Every estimate is for the fullest device: the pipeline stage that needs
 * the most memory (usually the first). Byte counts are doubles here; the
 * API rounds them up to integers.
 */
#ifndef TY_PLAN_H
#define TY_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobspec.h"
#include "jsonx.h"

/*
 * Bytes of model state per parameter (ZeRO paper, section 3.1). Mixed
 * precision (bf16, fp16) Adam keeps 16-bit parameters and gradients and,
 * in the optimizer, an fp32 copy of the parameters, the momentum and the
 * variance (K = 12). fp32 training keeps 4-byte parameters and gradients
 * and the two fp32 moments (K = 8).
 */
#define PLAN_MIXED_PARAM_BYTES 2
#define PLAN_MIXED_GRAD_BYTES  2
#define PLAN_MIXED_OPTIM_BYTES 12 /* K */
#define PLAN_FP32_PARAM_BYTES  4
#define PLAN_FP32_GRAD_BYTES   4
#define PLAN_FP32_OPTIM_BYTES  8 /* K */

/*
 * Activation bytes per layer per micro-batch (Korthikanti et al. 2022,
 * table 2) with s sequence, b micro-batch, h hidden, a heads, t tensor
 * parallel (sequence parallel assumed beside it):
 *   none       s b h / t * (34 + 5 a s / h)
 *   selective  s b h / t * 34
 *   full       s b h * 2   (only each layer's input is kept)
 * The constants count 16-bit activations; fp32 doubles them.
 */
#define PLAN_ACT_LINEAR    34.0 /* bytes per s b h / t outside the attention scores */
#define PLAN_ACT_SCORES    5.0  /* bytes per a s^2 b / t: the attention scores */
#define PLAN_ACT_FULL      2.0  /* bytes per s b h under full recompute */
#define PLAN_ACT_FP32_MULT 2.0
#define PLAN_LOGIT_BYTES   4.0 /* the last stage's fp32 logits: 4 s b Vp */

/* Fraction of peak FLOP/s the step estimate assumes a device sustains. */
#define PLAN_COMPUTE_EFFICIENCY 0.5

/* Tensor-parallel collectives per layer per micro-batch (2 forward, 2 backward). */
#define PLAN_TP_COLLECTIVES 4
/* Full recompute repeats the forward, and with it its 2 collectives. */
#define PLAN_TP_COLLECTIVES_FULL 6

/* Vocabulary rows are padded to a multiple of this, as the trainer does. */
#define PLAN_VOCAB_PAD 64

#define PLAN_REASON_MAX 160

/* The ranges of a plan request (POST /v1/plan; the OpenAPI document's PlanRequest) */
#define PLAN_DEVICES_MAX     1048576
#define PLAN_CONFIGS_DEFAULT 20
#define PLAN_CONFIGS_MAX     4096
#define PLAN_BYTES_MAX       9007199254740992.0 /* 2^53: byte counts stay exact in JSON */
#define PLAN_FLOPS_MAX       1e21
#define PLAN_LINK_MAX        1e15

/* One run's question: the model, the batch and the devices. */
typedef struct plan_input {
	jobspec_model model; /* layers, d_model, heads, vocab_size, seq_len */
	int global_batch;    /* sequences per optimizer step */
	int micro_batch;     /* sequences per micro-batch per replica */
	jobspec_precision precision;
	jobspec_recompute recompute;
	int64_t devices;
	double device_memory_bytes; /* per device */
	double peak_flops;          /* per device; 0: no time estimate */
	double link_bytes_per_s;    /* per device; 0: no time estimate */
} plan_input;

/* Why a layout was refused; PLAN_FITS when it was not. */
typedef enum plan_verdict {
	PLAN_FITS = 0,
	PLAN_BAD_LAYOUT,     /* a degree below 1, or zero_stage outside 0..3 */
	PLAN_RANKS_MISMATCH, /* dp x tp x pp is not the device count */
	PLAN_HEADS_NOT_DIVISIBLE,
	PLAN_LAYERS_NOT_DIVISIBLE,
	PLAN_BATCH_MISMATCH, /* global_batch is not micro_batch x dp x a whole accumulation */
	PLAN_OUT_OF_MEMORY,
} plan_verdict;

/* Bytes per device, at the fullest pipeline stage. */
typedef struct plan_memory {
	double params, grads, optimizer, activations, total;
} plan_memory;

/* Bytes one device sends per optimizer step, by kind of parallelism. */
typedef struct plan_comm {
	double dp, tp, pp;
} plan_comm;

/* One layout, estimated. */
typedef struct plan_config {
	layout layout; /* with the request's micro_batch and the grad_accum it gives */
	plan_memory memory;
	double flops_per_step; /* hardware FLOPs of all devices, recompute included */
	plan_comm comm;
	double bubble;       /* idle fraction of the pipeline, 0 without one */
	double step_seconds; /* 0 when peak_flops or link_bytes_per_s is 0 */
	double tokens_per_s;
	plan_verdict verdict;
	bool fits;                    /* verdict == PLAN_FITS */
	char reason[PLAN_REASON_MAX]; /* "" when it fits, else why not */
} plan_config;

/* A list of estimates; items is NULL when n is 0. Owned: plan_list_release(). */
typedef struct plan_list {
	plan_config *items;
	size_t n;
} plan_list;

/* ---- the formulas, one by one (docs/plan.md) ---- */

/*
 * RET: the model's parameters as the trainer lays them out (trainer/gpt.c):
 * (Vp + seq_len) d + layers (12 d^2 + 13 d) + 2 d, Vp the padded vocabulary.
 */
double plan_params(const jobspec_model *m);

/*
 * RET: the parameters one device of pipeline stage `stage` holds (0-based)
 * with tensor parallel tp: its layers' split and replicated parts, the
 * embeddings on the first stage, the final LayerNorm and the tied LM head
 * on the last. Embeddings are replicated over tp, as in the trainer.
 */
double plan_stage_params(const jobspec_model *m, int tp, int pp, int stage);

/*
 * Model state bytes of psi parameters under ZeRO stage zero_stage over
 * dp replicas. OUT: out->params, grads, optimizer (other members untouched).
 */
void plan_model_states(double psi, int dp, int zero_stage, jobspec_precision p, plan_memory *out);

/* RET: activation bytes of one layer for one micro-batch of b sequences. */
double plan_layer_activations(const jobspec_model *m, int b, int tp, jobspec_recompute r,
                              jobspec_precision p);

/* RET: micro-batches stage `stage` of pp holds at once under 1F1B with m per step. */
int plan_in_flight(int pp, int stage, int m);

/* RET: the 1F1B bubble (pp - 1) / (m + pp - 1). */
double plan_bubble(int pp, int m);

/*
 * RET: training FLOPs per token: 6 N + 6 L d s (trainer/gpt.c
 * gpt_flops_per_token), plus the repeated forward of recompute: a third
 * of it for full, a third of the attention term for selective.
 */
double plan_flops_per_token(const jobspec_model *m, jobspec_recompute r);

/* ---- layouts ---- */

/*
 * Estimate layout l for in. OUT: *out, every member filled (numbers that
 * the verdict makes meaningless are 0). RET: out->verdict.
 */
plan_verdict plan_evaluate(const plan_input *in, const layout *l, plan_config *out);

/*
 * Every layout of in->devices that fits: each tp dividing the heads, pp
 * dividing the layers, dp the rest with the batch whole, and ZeRO stages
 * 0-3 (only 0 when dp is 1, where the stages do not differ). Ranked by
 * tokens_per_s, best first; ties by less memory, then lower stage, smaller
 * tp, smaller pp.
 * OUT: *out (plan_list_release() it). RET: 0, or -ERR_INTERNAL when out
 * of memory (*out is then empty).
 */
int plan_enumerate(const plan_input *in, plan_list *out);
void plan_list_release(plan_list *l);

/*
 * Smaller layouts to restart on after losing devices, largest first, each
 * using strictly fewer devices than the one before: data parallel shrinks
 * first (by its smallest prime factor, so the batch stays whole), then
 * pipeline, then tensor parallel; micro_batch is kept and grad_accum grows
 * to keep the global batch. A size is listed when it fits with the layout's
 * ZeRO stage or a higher one (the lowest that fits). in->devices is ignored.
 * OUT: out[0 .. RET). RET: entries written, at most cap.
 */
int plan_fallback_ladder(const plan_input *in, const layout *from, plan_config *out, int cap);

/* ---- jobs ---- */

/*
 * The planner's question for a validated job spec on devices of
 * device_memory_bytes (no time estimate: peak and bandwidth are 0).
 */
void plan_input_from_job(const jobspec *s, double device_memory_bytes, plan_input *in);

/*
 * Check that a validated job spec's layout and each of its fallbacks fit
 * devices of device_memory_bytes. Adds one does_not_fit row per layout
 * that does not: at /parallel, or /fault_tolerance/fallback/<i>.
 * RET: the rows added.
 */
int plan_check_job(const jobspec *s, double device_memory_bytes, verrs *v);

/* RET: the spelling of a verdict ("fits", "out_of_memory", ...). */
const char *plan_verdict_name(plan_verdict v);

#endif
