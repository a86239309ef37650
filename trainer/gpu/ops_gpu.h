/*
 * ops_gpu.h - the trainer's ops on an NVIDIA GPU (CUDA), one per op of
 * ../ops.h with the same shapes and the same meaning, on device memory.
 * Each has the CPU op as its reference (tests/gpu/test_gpu_ops.cu checks
 * them against ../ops_ref.c). All run on the default stream and return at
 * once; gpu_sync() waits and says whether a kernel failed.
 *
 * The ops of the fp32 device backend: embeddings, the element-wise and
 * per-row ops, the linear layer and the LM head, attention, AdamW and the
 * squared norm. model_gpu.h puts them together into the whole model.
 */
#ifndef TY_OPS_GPU_H
#define TY_OPS_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lowp_gpu.h"

/* As encoder_forward: inp [B,T] token ids on the device. */
void gpu_encoder_forward(float *out, const int32_t *inp, const float *wte, const float *wpe, int B,
                         int T, int C);
/*
 * The batch's positions grouped by token, on the host, for the encoder's
 * backward: buckets [3N + 1] gets the positions sorted by token (stable),
 * the distinct tokens, and where each one's positions begin; count: V
 * ints of scratch. RET the number of distinct tokens.
 */
int gpu_token_buckets(int32_t *buckets, const int32_t *inp, int N, int V, int32_t *count);
/* As encoder_backward, with inp's buckets on the device: each wte row sums its positions
 * in position order (no atomics: the same bits every run). */
void gpu_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *buckets,
                          int nbuckets, int B, int T, int C);
/* The padded columns v >= V of logits [N,Vp] set to -inf. */
void gpu_pad_logits(float *logits, int N, int V, int Vp);

void gpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, int N, int C);
/* dinp [N,C], dw [C], db [C] += gradients, as layernorm_backward */
void gpu_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C);
void gpu_gelu_forward(float *out, const float *inp, size_t N);
void gpu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N);
void gpu_residual_forward(float *out, const float *a, const float *b, size_t N);
/* out [N,OC] += bias [OC] on every row (a row-parallel matmul's bias, after its all-reduce). */
void gpu_add_bias(float *out, const float *bias, int N, int OC);
void gpu_softmax_xent_forward(float *losses, float *lse, const float *logits,
                              const int32_t *targets, int N, int V, int Vp);
void gpu_softmax_xent_backward(float *dlogits, const float *logits, const float *lse,
                               const int32_t *targets, float dscale, int N, int V, int Vp);

/*
 * The linear layer through cuBLASLt (matmul_gpu.cu), as matmul_forward
 * and matmul_backward: out [N,OC] = inp [N,C] @ w [OC,C]^T + bias [OC]
 * (bias may be NULL); dinp overwritten, dw and dbias (may be NULL)
 * accumulated. RET 0, or -1 when cuBLASLt refused the call.
 */
int gpu_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N,
                       int C, int OC);
int gpu_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC);

/*
 * The LM head tied to wte, as lmhead_forward / lmhead_backward: only the V
 * real rows of wte are read or written; padded logits are -inf.
 */
int gpu_lmhead_forward(float *logits, const float *inp, const float *wte, int N, int C, int V,
                       int Vp);
int gpu_lmhead_backward(float *dinp, float *dwte, const float *dlogits, const float *inp,
                        const float *wte, int N, int C, int V, int Vp);

/*
 * Causal self-attention forward, as attention_forward (attention_gpu.cu):
 * qkv [B,T,3C] in, out [B,T,C] and the probabilities att [B,NH,T,T].
 */
void gpu_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
/* dqkv [B,T,3C] overwritten with the gradient from dout; scratch [B,NH,T,T]: work space. */
void gpu_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                            const float *att, int B, int T, int C, int NH);

/*
 * One AdamW step over n elements, as adamw_update (../optim.h): g scaled
 * by grad_scale, weight decay wd (0 for tensors without decay), t the
 * 1-based step.
 */
void gpu_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                      float beta2, float eps, float wd, float grad_scale, int t);

/*
 * AdamW over a whole flat parameter array in one kernel: spans [nspans]
 * (device memory) are its tensors, sorted by begin, saying which take
 * weight decay; the arithmetic per element is gpu_adamw_update's. With
 * fmt a 16-bit format, low (n values of it) gets the new weights.
 */
typedef struct gpu_span {
	size_t begin;
	int decay;
} gpu_span;
typedef struct gpu_adamw_args {
	float lr, beta1, beta2, eps, weight_decay, grad_scale;
	int t;
} gpu_adamw_args;
void gpu_adamw_flat(float *p, void *low, const float *g, float *m, float *v, size_t n,
                    const gpu_span *spans, int nspans, const gpu_adamw_args *a, gpu_lowp fmt);

/* *acc (device) += the mean of losses [N] (device), summed in double in a fixed order. */
void gpu_loss_mean_add(double *acc, const float *losses, int N);

/*
 * The sum of x[i]^2 over n elements into *out (device memory), summed in
 * double in a fixed order, so the same input gives the same bits: the
 * squared gradient norm that clipping needs. scratch: GPU_SUMSQ_BLOCKS
 * doubles of device memory.
 */
#define GPU_SUMSQ_BLOCKS 1024
void gpu_sumsq(double *out, double *scratch, const float *x, size_t n);

/* Wait for the device. RET 0, or -1 with the CUDA error's words in err. */
int gpu_sync(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
