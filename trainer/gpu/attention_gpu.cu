/*
 * attention_gpu.cu - causal multi-head self-attention on the GPU
 * (ops_gpu.h), forward, as attention_forward: one block per (t, head,
 * batch) row. Only the unmasked half is computed (t2 <= t); the row's
 * probabilities are kept in att for the backward, zeros above the
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

extern "C" void gpu_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C,
                                      int NH)
{
	attention_fwd<<<dim3(T, NH, B), ROW_THREADS>>>(out, att, qkv, T, C, NH);
}
