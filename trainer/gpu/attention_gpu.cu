/*
 * attention_gpu.cu - causal multi-head self-attention on the GPU
 * (ops_gpu.h), forward and backward, as attention_forward and
 * attention_backward (in fp32): one block per (t, head, batch) row. Only the unmasked half is
 * computed (t2 <= t); the row's probabilities are kept in att for the backward, zeros above the
 * diagonal, as on the CPU. A fused kernel that keeps the scores on chip
 * comes later; this one is the device's reference.
 */
#include <cuda_runtime.h>
#include <math.h>

#include "ops_gpu.h"
#include "reduce.cuh"

__global__ void attention_fwd(float *out, float *att, const float *qkv, int T, int C, int NH)
{
	int t = blockIdx.x, h = blockIdx.y, b = blockIdx.z, hs = C / NH;
	float scale = rsqrtf((float)hs);
	const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
	float *a = att + (((size_t)b * NH + h) * T + t) * T;
	float mx = -INFINITY;
	for (int t2 = threadIdx.x; t2 <= t; t2 += ROW_THREADS) {
		const float *k = qkv + ((size_t)b * T + t2) * 3 * C + C + h * hs;
		float s = 0.0f;
		for (int i = 0; i < hs; i++)
			s += q[i] * k[i];
		a[t2] = s * scale;
		mx = fmaxf(mx, a[t2]);
	}
	mx = block_reduce<true>(mx);
	float sum = 0.0f;
	for (int t2 = threadIdx.x; t2 <= t; t2 += ROW_THREADS) {
		a[t2] = expf(a[t2] - mx);
		sum += a[t2];
	}
	float inv = 1.0f / block_reduce<false>(sum);
	for (int t2 = threadIdx.x; t2 < T; t2 += ROW_THREADS)
		a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
	__syncthreads(); /* every probability of the row is written */
	float *o = out + ((size_t)b * T + t) * C + h * hs;
	for (int i = threadIdx.x; i < hs; i += ROW_THREADS) {
		float s = 0.0f;
		for (int t2 = 0; t2 <= t; t2++)
			s += a[t2] * qkv[((size_t)b * T + t2) * 3 * C + 2 * C + h * hs + i];
		o[i] = s;
	}
}

/*
 * Backward, first half, one block per (t, head, batch) row: the score
 * gradients ds[t2] = a[t2] (dout . v[t2] - sum_t2' a[t2'] dout . v[t2'])
 * / sqrt(hs) into scratch, and dq of the row, which only this row adds to.
 */
__global__ void attention_bwd_q(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                const float *att, int T, int C, int NH)
{
	int t = blockIdx.x, h = blockIdx.y, b = blockIdx.z, hs = C / NH;
	float scale = rsqrtf((float)hs);
	size_t arow = (((size_t)b * NH + h) * T + t) * T;
	const float *a = att + arow, *d = dout + ((size_t)b * T + t) * C + h * hs;
	float *ds = scratch + arow;
	float dot = 0.0f;
	for (int t2 = threadIdx.x; t2 <= t; t2 += ROW_THREADS) {
		const float *v = qkv + ((size_t)b * T + t2) * 3 * C + 2 * C + h * hs;
		float g = 0.0f;
		for (int i = 0; i < hs; i++)
			g += d[i] * v[i];
		ds[t2] = g; /* for now: dout . v[t2] */
		dot += a[t2] * g;
	}
	dot = block_reduce<false>(dot);
	for (int t2 = threadIdx.x; t2 <= t; t2 += ROW_THREADS)
		ds[t2] = a[t2] * (ds[t2] - dot) * scale;
	__syncthreads(); /* every score gradient of the row is written */
	float *dq = dqkv + ((size_t)b * T + t) * 3 * C + h * hs;
	for (int i = threadIdx.x; i < hs; i += ROW_THREADS) {
		float s = 0.0f;
		for (int t2 = 0; t2 <= t; t2++)
			s += ds[t2] * qkv[((size_t)b * T + t2) * 3 * C + C + h * hs + i];
		dq[i] = s;
	}
}

/*
 * Backward, second half, one block per (t2, head, batch): dk and dv of
 * position t2, summed over the rows t >= t2 that attend to it, in order:
 * no two blocks write the same element, so no atomics and the same bits
 * every run.
 */
__global__ void attention_bwd_kv(float *dqkv, const float *scratch, const float *dout,
                                 const float *qkv, const float *att, int T, int C, int NH)
{
	int t2 = blockIdx.x, h = blockIdx.y, b = blockIdx.z, hs = C / NH;
	size_t rows = ((size_t)b * NH + h) * T;
	float *dk = dqkv + ((size_t)b * T + t2) * 3 * C + C + h * hs;
	float *dv = dk + C;
	for (int i = threadIdx.x; i < hs; i += ROW_THREADS) {
		float sk = 0.0f, sv = 0.0f;
		for (int t = t2; t < T; t++) {
			size_t at = (rows + t) * T + t2;
			sk += scratch[at] * qkv[((size_t)b * T + t) * 3 * C + h * hs + i];
			sv += att[at] * dout[((size_t)b * T + t) * C + h * hs + i];
		}
		dk[i] = sk;
		dv[i] = sv;
	}
}

extern "C" void gpu_attention_backward(float *dqkv, float *scratch, const float *dout,
                                       const float *qkv, const float *att, int B, int T, int C,
                                       int NH)
{
	attention_bwd_q<<<dim3(T, NH, B), ROW_THREADS>>>(dqkv, scratch, dout, qkv, att, T, C, NH);
	attention_bwd_kv<<<dim3(T, NH, B), ROW_THREADS>>>(dqkv, scratch, dout, qkv, att, T, C, NH);
}

extern "C" void gpu_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C,
                                      int NH)
{
	attention_fwd<<<dim3(T, NH, B), ROW_THREADS>>>(out, att, qkv, T, C, NH);
}
