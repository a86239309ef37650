/*
 * ops.h - the numeric kernels of the GPT-2 decoder, forward and backward.
 *
 * Shapes, as in gpt.h: N = B * T rows, C channels, OC output channels,
 * NH heads of hs = C / NH channels, V vocabulary, Vp padded vocabulary.
 * Every tensor is row-major and contiguous.
 *
 * Each op has a fast version (ops.c: matmuls through OpenBLAS's
 * cblas_sgemm, everything else split over OpenMP threads) and a plain
 * single-threaded reference with naive loops (ops_ref.c, name + "_ref")
 * that the unit tests compare it with. The fast ops never combine floats
 * from different threads: a reduction is summed by one thread in a fixed
 * order, so results are the same on every run with the same thread
 * count. All but the matmuls (matmul_*, lmhead_*), which are cut into one
 * block per thread, give the same bits whatever the thread count.
 *
 * Threads are OpenMP's alone: the ops call OpenBLAS from inside their
 * parallel regions, one thread per call (see ops.c).
 *
 * Conventions: an output named d<x> of a backward op *accumulates* (+=),
 * except where a comment says "overwritten". No op allocates memory.
 * The backward of a residual add is the identity: the model hands the
 * same gradient buffer to both branches, so there is no residual_backward.
 */
#ifndef TY_OPS_H
#define TY_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "gpt.h"

/* Epsilon of every LayerNorm (GPT-2's value). */
#define OPS_LN_EPS 1e-5f

/* --- encoder: token + position embedding --------------------------- */

/* out [B,T,C] = wte[inp[b,t]] + wpe[t]; inp [B,T] token ids. */
void encoder_forward(float *out, const int32_t *inp, const float *wte, const float *wpe, int B,
                     int T, int C);
/* dwte [Vp,C] and dwpe [T,C] += the rows of dout [B,T,C]. */
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T,
                      int C);

/* --- layernorm ---------------------------------------------------------- */

/* out [N,C] = (inp - mean) * rstd * w + b; mean and rstd [N] kept for backward. */
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C);
/* dinp [N,C], dw [C], db [C] += gradients from dout [N,C]. */
void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C);

/* --- matmul (linear layer) --------------------------------------------- */

/* out [N,OC] = inp [N,C] @ w [OC,C]^T + bias [OC] (bias may be NULL). */
void matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int C,
                    int OC);
/* dinp [N,C] overwritten with dout @ w; dw [OC,C] += dout^T @ inp;
 * dbias [OC] += column sums of dout (dbias may be NULL). */
void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                     const float *w, int N, int C, int OC);

/* --- causal multi-head self-attention ------------------------------------ */

/*
 * qkv [B,T,3C] holds q, k, v side by side, head h in channels
 * [h*hs, (h+1)*hs) of each. att [B,NH,T,T] gets the softmax of
 * q k^T / sqrt(hs) over t2 <= t, zero above the diagonal (kept for the
 * backward). out [B,T,C] = att @ v, heads side by side.
 * prec: the probabilities, an input of the second matmul, are rounded to it.
 */
void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH,
                       gpt_precision prec);
/*
 * dqkv [B,T,3C] overwritten with the gradient from dout [B,T,C].
 * scratch [B,NH,T,T]: work space. prec: the score gradients, an input of
 * the last two matmuls, are rounded to it.
 */
void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH, gpt_precision prec);

/* --- GELU, tanh approximation ------------------------------------------- */

/* out [N] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void gelu_forward(float *out, const float *inp, size_t N);
/* dinp [N] overwritten with dout * gelu'(inp); dinp may be dout. */
void gelu_backward(float *dinp, const float *inp, const float *dout, size_t N);

/* --- residual ------------------------------------------------------------ */

/* out [N] = a + b. */
void residual_forward(float *out, const float *a, const float *b, size_t N);

/* --- LM head tied to wte, softmax and cross-entropy ------------------- */

/*
 * logits [N,Vp]: columns v < V = inp [N,C] @ wte[v]; columns v >= V (the
 * padding) are set to -inf, so they can never win, not even in a caller
 * that takes an argmax over Vp.
 */
void lmhead_forward(float *logits, const float *inp, const float *wte, int N, int C, int V, int Vp);
/* dinp [N,C] overwritten with dlogits @ wte; dwte [Vp,C] += dlogits^T @ inp
 * over the rows v < V (padded rows of dwte are not touched). */
void lmhead_backward(float *dinp, float *dwte, const float *dlogits, const float *inp,
                     const float *wte, int N, int C, int V, int Vp);

/*
 * Softmax over logits [N,Vp] (columns v < V only) fused with the
 * cross-entropy against targets [N]: losses [N] = -log p[target];
 * lse [N] = log sum exp(logits), kept for the backward.
 */
void softmax_xent_forward(float *losses, float *lse, const float *logits, const int32_t *targets,
                          int N, int V, int Vp);
/*
 * dlogits [N,Vp] overwritten with (softmax - onehot(target)) * dscale for
 * v < V and exactly 0 for v >= V. dscale is d(objective)/d(loss of one
 * position), e.g. dloss / N for a mean loss. dlogits may be logits.
 */
void softmax_xent_backward(float *dlogits, const float *logits, const float *lse,
                           const int32_t *targets, float dscale, int N, int V, int Vp);

/* --- precision ------------------------------------------------------------ */

/* x [n] rounded in place to prec (lowp.h); nothing for GPT_FP32. */
void lowp_round_buf(float *x, size_t n, gpt_precision prec);
/* dst [n] = src [n] rounded to prec. */
void lowp_round_copy(float *dst, const float *src, size_t n, gpt_precision prec);

/* --- the references (ops_ref.c): same contracts, fp32, no rounding ----- */

void encoder_forward_ref(float *out, const int32_t *inp, const float *wte, const float *wpe, int B,
                         int T, int C);
void encoder_backward_ref(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B,
                          int T, int C);
void layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, int N, int C);
void layernorm_backward_ref(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C);
void matmul_forward_ref(float *out, const float *inp, const float *w, const float *bias, int N,
                        int C, int OC);
void matmul_backward_ref(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                         const float *w, int N, int C, int OC);
void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void attention_backward_ref(float *dqkv, const float *dout, const float *qkv, const float *att,
                            int B, int T, int C, int NH);
void gelu_forward_ref(float *out, const float *inp, size_t N);
void gelu_backward_ref(float *dinp, const float *inp, const float *dout, size_t N);
void residual_forward_ref(float *out, const float *a, const float *b, size_t N);
void lmhead_forward_ref(float *logits, const float *inp, const float *wte, int N, int C, int V,
                        int Vp);
void lmhead_backward_ref(float *dinp, float *dwte, const float *dlogits, const float *inp,
                         const float *wte, int N, int C, int V, int Vp);
void softmax_xent_forward_ref(float *losses, float *lse, const float *logits,
                              const int32_t *targets, int N, int V, int Vp);
void softmax_xent_backward_ref(float *dlogits, const float *logits, const float *lse,
                               const int32_t *targets, float dscale, int N, int V, int Vp);

#endif
