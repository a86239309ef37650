/*
 * attention_flash.h - fused causal self-attention in 16 bits (bf16 or
 * fp16, gpu_lowp) on the GPU, forward and backward, with the scores kept
 * on chip: no [B,NH,T,T] tensor, only each row's log-sum-exp is saved for
 * the backward. The same meaning as attention_forward / attention_backward
 * (../ops.h), which tests/gpu/test_gpu_attention.cu checks it against.
 * All run on the default stream and return at once; gpu_sync() (ops_gpu.h)
 * waits and says whether a kernel failed. Shapes that
 * gpu_flash_attention_fits refuses launch nothing: the caller asks first.
 */
#ifndef TY_ATTENTION_FLASH_H
#define TY_ATTENTION_FLASH_H

#include "lowp_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the fused kernel takes heads of this size: hs = C / NH a multiple of 16, at most 128. */
int gpu_flash_attention_fits(int C, int NH);
/* Causal self-attention, as attention_forward: qkv [B,T,3C] (q at h*hs, k at C + h*hs, v at 2C +
 * h*hs within a row), out [B,T,C] in the 16-bit type fmt; lse [B,NH,T] fp32 gets each query row's
 * log-sum-exp of its scaled scores (the backward's only saved statistic). No [B,NH,T,T] tensor
 * anywhere. */
void gpu_flash_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C,
                                 int NH, gpu_lowp fmt);
/* dqkv [B,T,3C] overwritten (all three parts) with the gradient from dout [B,T,C]; out and lse from
 * the forward; delta: scratch [B,NH,T] fp32 (rowsum(dout * out)). Deterministic: no atomics, fixed
 * reduction orders. */
void gpu_flash_attention_backward(void *dqkv, float *delta, const void *dout, const void *qkv,
                                  const void *out, const float *lse, int B, int T, int C, int NH,
                                  gpu_lowp fmt);

#ifdef __cplusplus
}
#endif

#endif
