/*
 * model_gpu.h - the whole GPT-2 model on one NVIDIA GPU: forward,
 * backward, the gradient's squared norm and AdamW.
 *
 * fp32: the ops of ops_gpu.h in the order gpt_model.c runs the CPU ops,
 * the device's reference. bf16 and fp16 (mixed precision): the GEMMs take
 * 16-bit inputs with the bias and GELU in cuBLASLt's epilogues, attention
 * is one fused kernel that keeps the scores on chip (attention_flash.h),
 * the residual add is fused with the LayerNorm after it and the
 * classifier is one kernel (ops_lowp.h); activations are 16-bit, the
 * residual stream fp32.
 *
 * In every precision the parameters, gradients and AdamW moments are fp32,
 * each one device array in gpt.h's unit-major layout, so a checkpoint
 * moves between the CPU and the GPU as it is (gpu_model_get / gpu_model_set
 * copy a whole array); a 16-bit model also keeps the weights' 16-bit
 * working copy, which AdamW rewrites with the weights. Everything,
 * activations and scratch included, is allocated once by gpu_model_new();
 * a step allocates nothing. The kernels are deterministic (no atomics,
 * fixed summation orders): the same inputs give the same bits, so a run
 * resumed from copied-out state continues bit for bit.
 *
 * A step waits for the device once: gpu_model_step_stats, which reads the
 * gradient norm and the step's loss together. Forward (loss NULL),
 * backward and AdamW only queue work; a kernel's failure shows at the
 * next wait.
 *
 * Data parallel ranks with ZeRO 1 keep the moments of their shard alone
 * (gpu_shard), with ZeRO 2 no gradient array either (the backward writes
 * each unit's into its caller's buffer), with ZeRO 3 the parameters of
 * their shard alone (each unit's gathered by the caller as the model asks
 * for it). A part of the model (gpu_part: the CPU model's gpt_part) holds
 * its tensor rank's slice of every layer of its pipeline stage, the
 * arrays in mp.h's local layout, and sums partial results over its
 * tensor group's comm (device buffers) inside the forward and the
 * backward; a stage keeps the activations of its slots' micro-batches
 * (gpu_model_forward_slot), its input and output device buffers the
 * pipeline moves; fp32 only so far. Not yet here: activation
 * recomputation.
 */
#ifndef TY_MODEL_GPU_H
#define TY_MODEL_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "gpt.h"
#include "optim.h"

typedef struct gpu_model gpu_model;

/*
 * The device arrays: the part's parameter count each (gpt_num_params(cfg)
 * for the whole model), but the moments of
 * a sharded model (gpu_shard), which are its shard's size, the
 * gradients of a model of unit_grads, which has none (0 floats), and the
 * parameters of a model of unit_params, its shard's size too.
 */
typedef enum gpu_array { GPU_PARAMS = 0, GPU_GRADS, GPU_ADAM_M, GPU_ADAM_V } gpu_array;

/* Owned elements of one tensor: flat [flat, flat + n), at shard [at, at + n). */
typedef struct gpu_shard_piece {
	size_t flat, at, n;
	int decay; /* the tensor takes weight decay (gpt_tensors) */
} gpu_shard_piece;

/*
 * The share of the optimizer one data-parallel rank owns under ZeRO 1
 * and 2 (zero.h's partition), as train_gpu.c cuts it: its summed gradients
 * arrive in a shard array of `size` floats (each unit's padded block, the
 * comm's reduce-scatter writes them), the AdamW moments are kept in the
 * same layout, and AdamW updates the owned pieces of the parameters
 * alone (the caller all-gathers them, then gpu_model_params_sync). reach:
 * the floats of the flat parameter and gradient arrays a unit's padded
 * blocks touch (>= gpt_num_params); the model allocates that many, the
 * rest zero. Pieces in flat order, none empty (a rank may own none),
 * copied by gpu_model_new.
 */
typedef struct gpu_shard {
	size_t size, reach;
	int npieces;
	const gpu_shard_piece *pieces;
	/*
	 * ZeRO 2: the gradients go unit by unit into the caller's buffers
	 * (the hooks' grads, gpu_model_set_hooks), and the model keeps no gradient array.
	 */
	bool unit_grads;
	/*
	 * ZeRO 3 (with unit_grads): the model keeps the parameters of its
	 * shard alone, in the shard's layout (the pieces' at), and reads each
	 * unit's where the hooks' params gathers it.
	 */
	bool unit_params;
} gpu_shard;

/*
 * What one rank of a parallel run holds (gpu_model_new; NULL: the whole
 * model, alone):
 *   slice        the part of the model (gpt.h's gpt_part): tensor parallel
 *                (tp, tp_comm: heads and slices of rank comm_rank(tp_comm)
 *                of tp; tp_comm sums device buffers, NULL when tp is 1),
 *                the pipeline stage's layers and ends, its slots (recompute
 *                must be none); the arrays are in the local layout (mp.h:
 *                the stage's units, each tensor replaced by its piece, in
 *                gpt.h's order);
 *   shard        ZeRO 1 to 3: the optimizer's share, or NULL;
 *   norm         the pieces of the gradient this rank counts in the norm,
 *                with at in the shard's layout when sharded, else at ==
 *                flat (nnorm 0: the whole gradient): its share of a sum over
 *                every rank, each element counted once (the owned tensors
 *                of mp.h). Copied.
 */
typedef struct gpu_part {
	gpt_part slice;
	const gpu_shard *shard;
	int nnorm;
	const gpu_shard_piece *norm;
} gpu_part;

/*
 * Whether the model trains on the GPU in precision, cut over tp tensor
 * ranks and pp pipeline stages: 16-bit needs heads the fused attention
 * takes and rows the GEMMs can read, and neither tensor nor pipeline
 * parallel yet; tp divides the heads, pp the layers. Asks no device.
 * RET 0, or -1 with the reason.
 */
int gpu_model_fits(const gpt_config *cfg, int tp, int pp, gpt_precision precision, char *err,
                   size_t errlen);

/*
 * Allocate everything for micro-batches of B sequences of T <= max_seq_len
 * tokens in precision (GPT_FP32, GPT_BF16, GPT_FP16) and copy params
 * (unit-major, host; the part's local layout) in; gradients and moments 0.
 * part: what this rank holds, or NULL (the whole model, updating
 * everything). RET: the model, or NULL with a message (no device, out of
 * device memory, heads the fused attention does not take, a tensor-parallel
 * width that does not divide the heads, 16 bits under tensor parallel).
 */
gpu_model *gpu_model_new(const gpt_config *cfg, int B, int T, gpt_precision precision,
                         const float *params, const gpu_part *part, char *err, size_t errlen);
void gpu_model_free(gpu_model *m);

/* Bytes of device memory the model holds. */
size_t gpu_model_bytes(const gpu_model *m);

/*
 * A stage's forward of one micro-batch into slot (0 .. slots - 1),
 * overwriting what the slot held: inputs and targets [B,T] (host, token
 * ids < V; the targets may be NULL but on the last stage), x [B,T,C] (device) the previous
 * stage's output on a stage without the embeddings (else NULL). The last
 * stage adds the mean loss to the step's (gpu_model_step_stats). Queues
 * the work; RET 0, or -1 with a message.
 */
int gpu_model_forward_slot(gpu_model *m, int slot, const int32_t *inputs, const float *x,
                           const int32_t *targets, char *err, size_t errlen);
/* The stage's output of slot's last forward, [B,T,C] device memory. */
const float *gpu_model_stage_output(const gpu_model *m, int slot);
/*
 * Backward of slot's last forward: from the loss on the last stage (dloss
 * as gpt_backward's), else from dy [B,T,C] (device), the gradient of the
 * stage's output. Gradients accumulate through the hooks. RET 0 or -1.
 */
int gpu_model_backward_slot(gpu_model *m, int slot, float dloss, const float *dy, char *err,
                            size_t errlen);
/*
 * [B,T,C] device: the gradient of the stage's input of the last backward
 * (the previous stage's dy), valid until the next backward.
 */
const float *gpu_model_stage_input_grad(const gpu_model *m);

/*
 * The whole model's forward of inputs and targets [B,T] (host, token ids < V); *loss gets
 * the mean cross-entropy, summed in double in position order as the CPU
 * model does (a wait for the device); with loss NULL the mean is added on
 * the device to the step's loss, which gpu_model_step_stats reads. RET 0,
 * or -1 with a message (a token out of range, a CUDA or cuBLASLt failure).
 */
int gpu_model_forward(gpu_model *m, const int32_t *inputs, const int32_t *targets, float *loss,
                      char *err, size_t errlen);
/*
 * The model's hooks from now on (copied; NULL: none): how it reaches its
 * units beyond its own arrays, gpt_hooks (gpt.h), called in their order,
 * on the device. Any may be NULL.
 *   params(u):     unit u's fp32 parameters, device memory laid out as the
 *                  unit's part of the flat array (ZeRO 3: gathered into a
 *                  buffer of the caller's); valid until params() is asked
 *                  for the second unit of 1..L+1 after u (the 16-bit
 *                  forward reads the next layer's LayerNorm in the
 *                  layer's), unit 0's until the next step. NULL: the
 *                  model's own array.
 *   grads(u):      where unit u's gradients of a backward accumulate (+=),
 *                  device memory the caller zeroed, laid out as params';
 *                  NULL: the model's own gradient array.
 *   grads_done(u): unit u's gradients of a backward are all queued on the
 *                  model's stream. A data-parallel caller starts the unit's
 *                  reduction there, behind those kernels in stream order,
 *                  while the rest of the backward runs.
 * A model sharded with unit_grads needs grads, with unit_params params too.
 */
void gpu_model_set_hooks(gpu_model *m, const gpt_hooks *hooks);

/*
 * Gradients accumulate (+=) from the last forward; dloss as gpt_backward's.
 * RET 0 or -1.
 */
int gpu_model_backward(gpu_model *m, float dloss, char *err, size_t errlen);
/* Gradients and the step's loss (gpu_model_step_stats) to 0. */
void gpu_model_zero_grad(gpu_model *m);
/*
 * The device's gradient array (gpt_num_params floats, fp32), which data
 * parallel sums; NULL for a model of unit_grads.
 */
float *gpu_model_grads(gpu_model *m);
/* A sharded model's: the summed gradients of its shard (gpu_shard's size); else NULL. */
float *gpu_model_grad_shard(gpu_model *m);
/*
 * The device's parameter array (fp32), which a sharded model's caller
 * all-gathers (a model of unit_params: the shard, gathered unit by unit).
 */
float *gpu_model_params(gpu_model *m);
/* After the parameters changed on the device outside the model: the 16-bit copy follows. */
int gpu_model_params_sync(gpu_model *m, char *err, size_t errlen);

/*
 * A failed all-reduce of the tensor group (inside a forward or backward,
 * which then failed): its COMM_ERR_* code, or 0.
 */
int gpu_model_comm_error(const gpu_model *m);

/*
 * The squared L2 norm of the gradients (with gpu_part's norm pieces: of
 * those, piece by piece, in the shard when sharded), summed in double, and the sum of
 * the micro-batch mean losses since the last call (forward with loss
 * NULL), in one copy from the device: the step's one wait. RET 0 or -1.
 */
int gpu_model_step_stats(gpu_model *m, double *sumsq, double *loss_sum, char *err, size_t errlen);
/* gpu_model_step_stats' norm alone. RET 0 or -1. */
int gpu_model_grad_sumsq(gpu_model *m, double *sumsq, char *err, size_t errlen);

/*
 * One AdamW step of every tensor (weight decay on those gpt_tensors()
 * marks), or of a sharded model's pieces from its shard, the gradients
 * scaled by grad_scale (clipping, 1 / loss scale); t is the 1-based step.
 * RET 0 or -1.
 */
int gpu_model_adamw(gpu_model *m, const adamw_config *a, float lr, float grad_scale, int t,
                    char *err, size_t errlen);

/* Copy one array to or from host memory (its floats: gpu_array). RET 0 or -1. */
int gpu_model_get(gpu_model *m, gpu_array which, float *host, char *err, size_t errlen);
int gpu_model_set(gpu_model *m, gpu_array which, const float *host, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
