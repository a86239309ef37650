/*
 * model_gpu.h - the whole GPT-2 model on one NVIDIA GPU, fp32: forward,
 * backward, the gradient's squared norm and AdamW, from the ops of
 * ops_gpu.h in the order gpt_model.c runs the CPU ops.
 *
 * The parameters, gradients and AdamW moments are each one device array
 * in gpt.h's unit-major layout, so a checkpoint moves between the CPU and
 * the GPU as it is (gpu_model_get / gpu_model_set copy a whole array).
 * Everything, activations and scratch included, is allocated once by
 * gpu_model_new(); a step allocates nothing. The kernels are deterministic
 * (no atomics, fixed summation orders): the same inputs give the same bits,
 * so a run resumed from copied-out state continues bit for bit.
 *
 * Not yet here: bf16 and fp16, tensor and pipeline parallelism (gpt_part),
 * activation recomputation; the trainer program runs on the CPU.
 */
#ifndef TY_MODEL_GPU_H
#define TY_MODEL_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "gpt.h"
#include "optim.h"

typedef struct gpu_model gpu_model;

/* The device arrays of gpt_num_params(cfg) floats each. */
typedef enum gpu_array { GPU_PARAMS = 0, GPU_GRADS, GPU_ADAM_M, GPU_ADAM_V } gpu_array;

/*
 * Allocate everything for micro-batches of B sequences of T <= max_seq_len
 * tokens and copy params (unit-major, host) in; gradients and moments 0.
 * RET: the model, or NULL with a message (no device, out of device memory).
 */
gpu_model *gpu_model_new(const gpt_config *cfg, int B, int T, const float *params, char *err,
                         size_t errlen);
void gpu_model_free(gpu_model *m);

/* Bytes of device memory the model holds. */
size_t gpu_model_bytes(const gpu_model *m);

/*
 * Forward of inputs and targets [B,T] (host, token ids < V); *loss gets
 * the mean cross-entropy, summed in double in position order as the CPU
 * model does. RET 0, or -1 with a message (a token out of range, a CUDA
 * or cuBLASLt failure).
 */
int gpu_model_forward(gpu_model *m, const int32_t *inputs, const int32_t *targets, float *loss,
                      char *err, size_t errlen);
/* Gradients accumulate (+=) from the last forward; dloss as gpt_backward's. RET 0 or -1. */
int gpu_model_backward(gpu_model *m, float dloss, char *err, size_t errlen);
void gpu_model_zero_grad(gpu_model *m);

/* The squared L2 norm of the gradients, summed in double. RET 0 or -1. */
int gpu_model_grad_sumsq(gpu_model *m, double *sumsq, char *err, size_t errlen);

/*
 * One AdamW step of every tensor (weight decay on those gpt_tensors()
 * marks), the gradients scaled by grad_scale (clipping, 1 / loss scale);
 * t is the 1-based step. RET 0 or -1.
 */
int gpu_model_adamw(gpu_model *m, const adamw_config *a, float lr, float grad_scale, int t,
                    char *err, size_t errlen);

/* Copy one array to or from host memory (gpt_num_params floats). RET 0 or -1. */
int gpu_model_get(gpu_model *m, gpu_array which, float *host, char *err, size_t errlen);
int gpu_model_set(gpu_model *m, gpu_array which, const float *host, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
