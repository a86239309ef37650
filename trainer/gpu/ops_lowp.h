/*
 * ops_lowp.h - the ops of the GPU backend's mixed precision (bf16, fp16),
 * fused where the fp32 ops of ops_gpu.h are separate. Activations and the
 * GEMMs' inputs are 16-bit (gpu_lowp, passed as void *); the residual
 * stream, LayerNorm statistics, gradients of the weights and every sum
 * stay fp32. Each op states its CPU counterpart; tests/gpu/test_gpu_lowp.cu
 * checks them against it with per-op bounds.
 *
 * Sums over rows (bias and LayerNorm weight gradients) are two passes:
 * blocks of GPU_COL_ROWS rows write partial sums to scratch, then one
 * thread per column adds the partials in row order. No atomics: the same
 * inputs give the same bits.
 */
#ifndef TY_OPS_LOWP_H
#define TY_OPS_LOWP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lowp_gpu.h"

#define GPU_COL_ROWS 256
/* Floats of scratch the column sums of an [N, cols] tensor need (two sums). */
#define GPU_COL_SCRATCH(N, cols) (2 * (((size_t)(N) + GPU_COL_ROWS - 1) / GPU_COL_ROWS) * (cols))

/* dst [n] (fmt) = src [n] rounded to nearest. */
void gpu_lowp_from_f32(void *dst, const float *src, size_t n, gpu_lowp fmt);
/* dst [n] = src [n] (fmt), exactly. */
void gpu_lowp_to_f32(float *dst, const void *src, size_t n, gpu_lowp fmt);

/*
 * The residual add fused with the LayerNorm after it: res_out [N,C] =
 * res_in + add (add [N,C] in fmt, or NULL: res_out may then be res_in),
 * then out (fmt) = layernorm(res_out) with fp32 w, b, mean and rstd, as
 * residual_forward followed by layernorm_forward.
 */
void gpu_residual_layernorm_forward(float *res_out, void *out, float *mean, float *rstd,
                                    const float *res_in, const void *add, const float *w,
                                    const float *b, int N, int C, gpu_lowp fmt);
/*
 * layernorm_backward with dout (fmt) and inp the fp32 residual: dres
 * [N,C] += dinp, dres_low (fmt) = the new dres (the next GEMM's input);
 * dw, db [C] += gradients. scratch: GPU_COL_SCRATCH(N, C) floats.
 */
void gpu_lowp_layernorm_backward(float *dres, void *dres_low, float *dw, float *db, float *scratch,
                                 const void *dout, const float *inp, const float *w,
                                 const float *mean, const float *rstd, int N, int C, gpu_lowp fmt);

/*
 * dbias [cols] += alpha * the column sums of x [N, cols] (fmt, rows ld
 * apart). scratch: GPU_COL_SCRATCH(N, cols) floats.
 */
void gpu_lowp_column_sum(float *dbias, float *scratch, const void *x, float alpha, int N, int cols,
                         int ld, gpu_lowp fmt);

/*
 * The classifier in one kernel, a block per row: losses [N] and lse [N]
 * as softmax_xent_forward over the V real columns of logits [N,Vp] (fmt),
 * and, in place of each row's logits, its unit gradient softmax - onehot
 * (the caller scales it, in the LM head's backward GEMM). No second
 * logits-sized buffer; the padded columns are never read or written.
 */
void gpu_lowp_classifier(void *logits, float *losses, float *lse, const int32_t *targets, int N,
                         int V, int Vp, gpu_lowp fmt);

/*
 * The linear layer in fmt through cuBLASLt (matmul_lowp.cu), fp32
 * compute. Forward: out [N,OC] (rows ldout apart) = inp [N,C] @ w
 * [OC,C]^T + bias [OC] (fmt, may be NULL); with gelu_pre, out = gelu(x)
 * and gelu_pre [N,OC] = x, both in the GEMM's epilogue.
 * Backward: dinp [N,C] = alpha * dout [N,OC] (rows lddout apart) @ w,
 * times gelu'(gelu_pre) when gelu_pre is given (in the epilogue: dinp is
 * then the gradient of the previous layer's pre-activation); dw [OC,C]
 * (fp32) += alpha * dout^T @ inp; dbias (fp32, may be NULL) += alpha *
 * column sums of dout (scratch: GPU_COL_SCRATCH(N, OC) floats).
 * Each shape's algorithm is chosen once, on its first call, and kept; one
 * workspace serves them all. RET 0, or -1 when cuBLASLt refused.
 */
int gpu_lowp_matmul_forward(void *out, void *gelu_pre, const void *inp, const void *w,
                            const void *bias, int N, int C, int OC, int ldout, gpu_lowp fmt);
int gpu_lowp_matmul_backward(void *dinp, float *dw, float *dbias, float *scratch, const void *dout,
                             const void *inp, const void *w, const void *gelu_pre, float alpha,
                             int N, int C, int OC, int lddout, gpu_lowp fmt);

#ifdef __cplusplus
}
#endif

#endif
