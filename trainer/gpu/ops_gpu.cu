/*
 * ops_gpu.cu - the trainer's element-wise and per-row ops on the GPU
 * (ops_gpu.h). A row (layernorm, softmax) is one block of ROW_THREADS
 * threads, reducing through warp shuffles and shared memory; element-wise
 * ops use a grid-stride loop. Sums are in fp32, as on the CPU.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lowp_gpu.cuh"
#include "ops_gpu.h"
#include "reduce.cuh"

#define LN_EPS 1e-5f               /* OPS_LN_EPS */
#define GELU_S 0.7978845608028654f /* sqrt(2 / pi) */

static unsigned blocks_for(size_t n, unsigned threads)
{
	size_t b = (n + threads - 1) / threads;
	return b > 65535 * 8 ? 65535 * 8 : (unsigned)(b ? b : 1);
}

__global__ void layernorm_fwd(float *out, float *mean, float *rstd, const float *inp,
                              const float *w, const float *b, int C)
{
	const float *x = inp + (size_t)blockIdx.x * C;
	float s = 0.0f;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS)
		s += x[c];
	float m = block_reduce<false>(s) / (float)C;
	float v = 0.0f;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS)
		v += (x[c] - m) * (x[c] - m);
	float r = rsqrtf(block_reduce<false>(v) / (float)C + LN_EPS);
	float *o = out + (size_t)blockIdx.x * C;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS)
		o[c] = (x[c] - m) * r * w[c] + b[c];
	if (threadIdx.x == 0) {
		mean[blockIdx.x] = m;
		rstd[blockIdx.x] = r;
	}
}

__global__ void layernorm_bwd_inp(float *dinp, const float *dout, const float *inp, const float *w,
                                  const float *mean, const float *rstd, int C)
{
	size_t row = (size_t)blockIdx.x * C;
	float m = mean[blockIdx.x], r = rstd[blockIdx.x], dm = 0.0f, dn = 0.0f;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS) {
		float g = w[c] * dout[row + c];
		dm += g;
		dn += g * (inp[row + c] - m) * r;
	}
	dm = block_reduce<false>(dm) / (float)C;
	dn = block_reduce<false>(dn) / (float)C;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS) {
		float norm = (inp[row + c] - m) * r;
		dinp[row + c] += (w[c] * dout[row + c] - dm - norm * dn) * r;
	}
}

/* dw, db: one thread per column, the rows in order (deterministic). */
__global__ void layernorm_bwd_wb(float *dw, float *db, const float *dout, const float *inp,
                                 const float *mean, const float *rstd, int N, int C)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= C)
		return;
	float sw = 0.0f, sb = 0.0f;
	for (int n = 0; n < N; n++) {
		size_t i = (size_t)n * C + c;
		sw += (inp[i] - mean[n]) * rstd[n] * dout[i];
		sb += dout[i];
	}
	dw[c] += sw;
	db[c] += sb;
}

__global__ void gelu_fwd(float *out, const float *inp, size_t N)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
	     i += (size_t)gridDim.x * blockDim.x) {
		float x = inp[i];
		out[i] = 0.5f * x * (1.0f + tanhf(GELU_S * (x + 0.044715f * x * x * x)));
	}
}

__global__ void gelu_bwd(float *dinp, const float *inp, const float *dout, size_t N)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
	     i += (size_t)gridDim.x * blockDim.x) {
		float x = inp[i];
		float th = tanhf(GELU_S * (x + 0.044715f * x * x * x));
		float du = GELU_S * (1.0f + 3.0f * 0.044715f * x * x);
		dinp[i] = (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du) * dout[i];
	}
}

__global__ void residual_fwd(float *out, const float *a, const float *b, size_t N)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] = a[i] + b[i];
}

__global__ void bias_add(float *out, const float *bias, size_t N, int OC)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N * OC;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] += bias[i % OC];
}

__global__ void xent_fwd(float *losses, float *lse, const float *logits, const int32_t *targets,
                         int V, int Vp)
{
	const float *l = logits + (size_t)blockIdx.x * Vp;
	float mx = -INFINITY;
	for (int v = threadIdx.x; v < V; v += ROW_THREADS)
		mx = fmaxf(mx, l[v]);
	mx = block_reduce<true>(mx);
	float s = 0.0f;
	for (int v = threadIdx.x; v < V; v += ROW_THREADS)
		s += expf(l[v] - mx);
	s = block_reduce<false>(s);
	if (threadIdx.x == 0) {
		float z = mx + logf(s);
		lse[blockIdx.x] = z;
		losses[blockIdx.x] = z - l[targets[blockIdx.x]];
	}
}

__global__ void xent_bwd(float *dlogits, const float *logits, const float *lse,
                         const int32_t *targets, float dscale, int V, int Vp)
{
	size_t row = (size_t)blockIdx.x * Vp;
	float z = lse[blockIdx.x];
	int t = targets[blockIdx.x];
	for (int v = threadIdx.x; v < Vp; v += ROW_THREADS)
		dlogits[row + v] =
		    v < V ? (expf(logits[row + v] - z) - (v == t ? 1.0f : 0.0f)) * dscale : 0.0f;
}

/* One element's AdamW update, as adamw_update: the one formula both kernels use. */
__device__ __forceinline__ float adamw_elem(float *p, const float *g, float *m, float *v, size_t i,
                                            float lr, float b1, float b2, float eps, float wd,
                                            float grad_scale, float c1, float c2)
{
	float gi = g[i] * grad_scale;
	float mi = b1 * m[i] + (1.0f - b1) * gi;
	float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
	m[i] = mi;
	v[i] = vi;
	float step = (mi * c1) / (sqrtf(vi * c2) + eps);
	float pi = p[i] - lr * (step + wd * p[i]);
	p[i] = pi;
	return pi;
}

__global__ void adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                      float b2, float eps, float wd, float grad_scale, float c1, float c2)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		adamw_elem(p, g, m, v, i, lr, b1, b2, eps, wd, grad_scale, c1, c2);
}

/*
 * AdamW over the whole flat array: element i's weight decay is its
 * tensor's (the last span beginning at or before i, found by binary
 * search in the nspans sorted begins); low, when not NULL, gets the new
 * weights rounded to T (the GEMMs' working copy).
 */
template <typename T>
__global__ void adamw_flat(float *p, T *low, const float *g, float *m, float *v, size_t n,
                           const gpu_span *spans, int nspans, float lr, float b1, float b2,
                           float eps, float weight_decay, float grad_scale, float c1, float c2)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		int lo = 0, hi = nspans - 1;
		while (lo < hi) {
			int mid = (lo + hi + 1) / 2;
			if (spans[mid].begin <= i)
				lo = mid;
			else
				hi = mid - 1;
		}
		float wd = spans[lo].decay ? weight_decay : 0.0f;
		float pi = adamw_elem(p, g, m, v, i, lr, b1, b2, eps, wd, grad_scale, c1, c2);
		if (low)
			low[i] = from_f32<T>(pi);
	}
}

/* The block's sum of each thread's a, through a fixed tree in double (thread 0 gets it). */
__device__ double block_sum_double(double a)
{
	__shared__ double s[ROW_THREADS];
	s[threadIdx.x] = a;
	__syncthreads();
	for (int k = ROW_THREADS / 2; k > 0; k /= 2) {
		if (threadIdx.x < k)
			s[threadIdx.x] += s[threadIdx.x + k];
		__syncthreads();
	}
	return s[0];
}

/*
 * *acc += the mean of losses [N]: one block, each thread a strided sum in
 * double, then the fixed tree: the same bits every run.
 */
__global__ void loss_mean_add(double *acc, const float *losses, int N)
{
	double a = 0.0;
	for (int i = threadIdx.x; i < N; i += ROW_THREADS)
		a += (double)losses[i];
	a = block_sum_double(a);
	if (threadIdx.x == 0)
		*acc += a / (double)N;
}

/* Each block's partial sum of squares, in double, over a fixed stride. */
__global__ void sumsq_part(double *part, const float *x, size_t n)
{
	double acc = 0.0;
	for (size_t i = blockIdx.x * (size_t)ROW_THREADS + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * ROW_THREADS)
		acc += (double)x[i] * (double)x[i];
	acc = block_sum_double(acc);
	if (threadIdx.x == 0)
		part[blockIdx.x] = acc;
}

/* The partial sums added in block order by one thread: the same bits every run. */
__global__ void sumsq_total(double *out, const double *part, int nparts)
{
	double acc = 0.0;
	for (int i = 0; i < nparts; i++)
		acc += part[i];
	*out = acc;
}

/* out [B,T,C] = wte[inp[b,t]] + wpe[t]: one thread per element. */
__global__ void encoder_fwd(float *out, const int32_t *inp, const float *wte, const float *wpe,
                            int T, int C, size_t total)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t bt = i / C;
		int c = (int)(i % C), t = (int)(bt % T);
		out[i] = wte[(size_t)inp[bt] * C + c] + wpe[(size_t)t * C + c];
	}
}

/*
 * dwte rows of the tokens += dout rows: one block per distinct token of
 * the batch (gpu_token_buckets), a thread per channel adding the token's
 * positions in position order: each row's sum has one order, no atomics,
 * and every row is worked on at once.
 */
__global__ void encoder_bwd_wte(float *dwte, const float *dout, const int32_t *buckets, int N,
                                int C)
{
	const int32_t *order = buckets, *tok = buckets + N, *start = buckets + 2 * N;
	int k = blockIdx.x;
	float *row = dwte + (size_t)tok[k] * C;
	for (int c = blockIdx.y * blockDim.x + threadIdx.x; c < C; c += gridDim.y * blockDim.x) {
		float s = row[c];
		for (int i = start[k]; i < start[k + 1]; i++)
			s += dout[(size_t)order[i] * C + c];
		row[c] = s;
	}
}

/* dwpe [T,C] += the sum over the batch: one thread per (t, c), b in order. */
__global__ void encoder_bwd_wpe(float *dwpe, const float *dout, int B, int T, int C)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= (size_t)T * C)
		return;
	float s = 0.0f;
	for (int b = 0; b < B; b++)
		s += dout[(size_t)b * T * C + i];
	dwpe[i] += s;
}

/* The padded columns v >= V of logits [N,Vp] to -inf. */
__global__ void pad_columns(float *logits, int N, int V, int Vp)
{
	size_t pad = (size_t)(Vp - V);
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)N * pad;
	     i += (size_t)gridDim.x * blockDim.x)
		logits[(i / pad) * Vp + V + i % pad] = -INFINITY;
}

extern "C" {

void gpu_encoder_forward(float *out, const int32_t *inp, const float *wte, const float *wpe, int B,
                         int T, int C)
{
	size_t total = (size_t)B * T * C;
	encoder_fwd<<<blocks_for(total, 256), 256>>>(out, inp, wte, wpe, T, C, total);
}

int gpu_token_buckets(int32_t *buckets, const int32_t *inp, int N, int V, int32_t *count)
{
	int32_t *order = buckets, *tok = buckets + N, *start = buckets + 2 * N;
	memset(count, 0, (size_t)V * sizeof(*count));
	for (int n = 0; n < N; n++)
		count[inp[n]]++;
	int nb = 0, at = 0;
	for (int v = 0; v < V; v++)
		if (count[v]) {
			tok[nb] = v;
			start[nb++] = at;
			int c = count[v];
			count[v] = at; /* now where the token's next position goes */
			at += c;
		}
	start[nb] = at;
	for (int n = 0; n < N; n++)
		order[count[inp[n]]++] = n;
	return nb;
}

void gpu_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *buckets,
                          int nbuckets, int B, int T, int C)
{
	if (nbuckets > 0) {
		dim3 grid(nbuckets, (C + 255) / 256);
		encoder_bwd_wte<<<grid, 256>>>(dwte, dout, buckets, B * T, C);
	}
	encoder_bwd_wpe<<<blocks_for((size_t)T * C, 256), 256>>>(dwpe, dout, B, T, C);
}

void gpu_pad_logits(float *logits, int N, int V, int Vp)
{
	if (Vp > V)
		pad_columns<<<blocks_for((size_t)N * (Vp - V), 256), 256>>>(logits, N, V, Vp);
}


void gpu_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                      float beta2, float eps, float wd, float grad_scale, int t)
{
	/* bias corrections in double on the host, as the CPU does */
	float c1 = (float)(1.0 / (1.0 - pow((double)beta1, (double)t)));
	float c2 = (float)(1.0 / (1.0 - pow((double)beta2, (double)t)));
	adamw<<<blocks_for(n, 256), 256>>>(p, g, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, c1,
	                                   c2);
}

void gpu_adamw_flat(float *p, void *low, const float *g, float *m, float *v, size_t n,
                    const gpu_span *spans, int nspans, const gpu_adamw_args *a, gpu_lowp fmt)
{
	float c1 = (float)(1.0 / (1.0 - pow((double)a->beta1, (double)a->t)));
	float c2 = (float)(1.0 / (1.0 - pow((double)a->beta2, (double)a->t)));
	lowp_dispatch(fmt, [&](auto tag) {
		using T = decltype(tag);
		adamw_flat<T><<<blocks_for(n, 256), 256>>>(
		    p, fmt == GPU_NO_LOWP ? (T *)NULL : (T *)low, g, m, v, n, spans, nspans, a->lr,
		    a->beta1, a->beta2, a->eps, a->weight_decay, a->grad_scale, c1, c2);
	});
}

void gpu_loss_mean_add(double *acc, const float *losses, int N)
{
	loss_mean_add<<<1, ROW_THREADS>>>(acc, losses, N);
}

void gpu_sumsq(double *out, double *scratch, const float *x, size_t n)
{
	sumsq_part<<<GPU_SUMSQ_BLOCKS, ROW_THREADS>>>(scratch, x, n);
	sumsq_total<<<1, 1>>>(out, scratch, GPU_SUMSQ_BLOCKS);
}

void gpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, int N, int C)
{
	layernorm_fwd<<<N, ROW_THREADS>>>(out, mean, rstd, inp, w, b, C);
}

void gpu_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C)
{
	layernorm_bwd_inp<<<N, ROW_THREADS>>>(dinp, dout, inp, w, mean, rstd, C);
	layernorm_bwd_wb<<<(C + 255) / 256, 256>>>(dw, db, dout, inp, mean, rstd, N, C);
}

void gpu_gelu_forward(float *out, const float *inp, size_t N)
{
	gelu_fwd<<<blocks_for(N, 256), 256>>>(out, inp, N);
}

void gpu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N)
{
	gelu_bwd<<<blocks_for(N, 256), 256>>>(dinp, inp, dout, N);
}

void gpu_residual_forward(float *out, const float *a, const float *b, size_t N)
{
	residual_fwd<<<blocks_for(N, 256), 256>>>(out, a, b, N);
}

void gpu_add_bias(float *out, const float *bias, int N, int OC)
{
	bias_add<<<blocks_for((size_t)N * OC, 256), 256>>>(out, bias, (size_t)N, OC);
}

void gpu_softmax_xent_forward(float *losses, float *lse, const float *logits,
                              const int32_t *targets, int N, int V, int Vp)
{
	xent_fwd<<<N, ROW_THREADS>>>(losses, lse, logits, targets, V, Vp);
}

void gpu_softmax_xent_backward(float *dlogits, const float *logits, const float *lse,
                               const int32_t *targets, float dscale, int N, int V, int Vp)
{
	xent_bwd<<<N, ROW_THREADS>>>(dlogits, logits, lse, targets, dscale, V, Vp);
}

int gpu_sync(char *err, size_t errlen)
{
	cudaError_t e = cudaDeviceSynchronize();
	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e == cudaSuccess)
		return 0;
	snprintf(err, errlen, "%s", cudaGetErrorString(e));
	return -1;
}

} /* extern "C" */
