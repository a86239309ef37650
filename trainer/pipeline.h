/*
 * pipeline.h - one optimizer step's micro-batches through the pipeline
 * stages, one forward one backward (1F1B).
 *
 * Stage s of S runs min(S - s - 1, M) forwards (warm-up), then alternates
 * a forward and a backward, then the remaining backwards, so it holds at
 * most S - s micro-batches in flight (the model's slots; micro-batch i
 * lives in slot i mod slots). Activations go to the next stage and
 * gradients back to the previous one by point-to-point transfers on the
 * pipeline group: sends are nonblocking (a slot's output is not
 * overwritten before its send completed), receives block, which is where
 * a stage waits for its neighbours: the bubble. With S = 1 it is plain
 * gradient accumulation: forward, backward, M times.
 *
 * Every stage reads the same micro-batches (inputs matter on the first,
 * targets on the last), so every rank's data position stays the same.
 *
 * The stage's model is the CPU's (gpt.h: model and hooks) or another one
 * behind pipe_model_ops (a GPU's: train_gpu.c), whose activations and
 * gradients live where its ops say (the receive buffers come from its
 * alloc; the pipeline comm moves buffers of that memory).
 */
#ifndef TY_PIPELINE_H
#define TY_PIPELINE_H

#include <stdint.h>

#include "comm.h"
#include "gpt.h"

/* A model's micro-batch failure other than a transfer's (its own message says why). */
#define PIPE_ERR_MODEL (-231)

/*
 * A stage's model, as the schedule drives it (ctx is pipeline.model_ctx).
 * forward: one micro-batch into slot, *loss its mean loss on the last stage;
 * output: the slot's [B,T,C] output; backward: from the loss (last stage,
 * dloss) or dy; input_grad: the last backward's input gradient [B,T,C].
 * The int ones RET 0 or a negative error (PIPE_ERR_MODEL, a COMM_ERR_*).
 * alloc and release: a [B,T,C] receive buffer of the model's memory.
 */
typedef struct pipe_model_ops {
	int (*forward)(void *ctx, int slot, const int32_t *inputs, const float *x,
	               const int32_t *targets, float *loss);
	const float *(*output)(void *ctx, int slot);
	int (*backward)(void *ctx, int slot, float dloss, const float *dy);
	const float *(*input_grad)(void *ctx);
	float *(*alloc)(size_t n);
	void (*release)(float *buf);
} pipe_model_ops;

typedef struct pipeline {
	/* the CPU's model (ops NULL), or ops over model_ctx */
	gpt_model *model;
	gpt_hooks hooks;
	const pipe_model_ops *ops;
	void *model_ctx;
	comm *pp; /* the pipeline group: rank = stage; NULL when there is one stage */
	int stage, stages, slots;
	int B, T, C;
	/* the next micro-batch's tokens: RET 0 or a negative error (then the step stops) */
	int (*next_batch)(void *ctx, int32_t *inputs, int32_t *targets);
	void *ctx;
	/* owned (pipe_init) */
	int32_t *inputs, *targets;
	float *x, *dy;          /* [B,T,C] receive buffers */
	comm_request *send_out; /* [slots]: a slot's output on its way to the next stage */
	comm_request send_grad; /* the input gradient on its way to the previous stage */
} pipeline;

/*
 * Allocate the buffers of p (its other fields set; ops NULL: the CPU's
 * model, then ops and model_ctx are set to it). slots must be
 * min(stages - stage, micro-batches) or more. RET 0, or -1 when out of memory.
 */
int pipe_init(pipeline *p);
void pipe_release(pipeline *p);

/* Slots a stage needs for m micro-batches: min(stages - stage, m). */
int pipe_slots(int stages, int stage, int m);

/*
 * Run the step's m micro-batches with dloss for each backward (the last
 * stage's). OUT: *loss_sum, the sum of the micro-batch losses (last stage;
 * 0 elsewhere). RET 0, the next_batch error, a COMM_ERR_* (also one the
 * model latched: gpt_error), or PIPE_ERR_MODEL.
 */
int pipe_step(pipeline *p, int m, float dloss, double *loss_sum);

#endif
