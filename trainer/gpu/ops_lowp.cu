/*
 * ops_lowp.cu - the mixed-precision ops of ops_lowp.h: conversions, the
 * residual add fused with LayerNorm, LayerNorm's backward, column sums
 * and the fused classifier, each a template over the 16-bit type. Rows
 * are blocks of ROW_THREADS threads (reduce.cuh); arithmetic is fp32.
 */
#include <cuda_runtime.h>
#include <math.h>

#include "lowp_gpu.cuh"
#include "ops_lowp.h"
#include "reduce.cuh"

#define LN_EPS 1e-5f /* OPS_LN_EPS */

static unsigned grid_for(size_t n, unsigned threads)
{
	size_t b = (n + threads - 1) / threads;
	return b > 65535 * 8 ? 65535 * 8 : (unsigned)(b ? b : 1);
}

template <typename T> __global__ void from_f32_kernel(T *dst, const float *src, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = from_f32<T>(src[i]);
}

template <typename T> __global__ void to_f32_kernel(float *dst, const T *src, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = to_f32<T>(src[i]);
}

/*
 * One row: x = res_in + add written to res_out, then its mean and the
 * mean of (x - mean)^2 (two passes over the row, as the CPU's
 * layernorm_forward), and the normalised row in T.
 */
template <typename T>
__global__ void residual_ln_fwd(float *res_out, T *out, float *mean, float *rstd,
                                const float *res_in, const T *add, const float *w,
                                const float *b, int C)
{
	size_t row = (size_t)blockIdx.x * C;
	const float *x = res_out + row;
	float s = 0.0f;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS) {
		float v = res_in[row + c];
		if (add)
			v += to_f32<T>(add[row + c]);
		if (add || res_out != res_in)
			res_out[row + c] = v;
		s += v;
	}
	/* each thread re-reads only what it wrote: no barrier needed before */
	float m = block_reduce<false>(s) / (float)C;
	float var = 0.0f;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS)
		var += (x[c] - m) * (x[c] - m);
	float r = rsqrtf(block_reduce<false>(var) / (float)C + LN_EPS);
	for (int c = threadIdx.x; c < C; c += ROW_THREADS)
		out[row + c] = from_f32<T>((x[c] - m) * r * w[c] + b[c]);
	if (threadIdx.x == 0) {
		mean[blockIdx.x] = m;
		rstd[blockIdx.x] = r;
	}
}

/* One row of layernorm_backward's dinp, added to the fp32 residual gradient. */
template <typename T>
__global__ void ln_bwd_rows(float *dres, T *dres_low, const T *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int C)
{
	size_t row = (size_t)blockIdx.x * C;
	float m = mean[blockIdx.x], r = rstd[blockIdx.x], dm = 0.0f, dn = 0.0f;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS) {
		float g = w[c] * to_f32<T>(dout[row + c]);
		dm += g;
		dn += g * (inp[row + c] - m) * r;
	}
	dm = block_reduce<false>(dm) / (float)C;
	dn = block_reduce<false>(dn) / (float)C;
	for (int c = threadIdx.x; c < C; c += ROW_THREADS) {
		float norm = (inp[row + c] - m) * r;
		float d = dres[row + c] + (w[c] * to_f32<T>(dout[row + c]) - dm - norm * dn) * r;
		dres[row + c] = d;
		dres_low[row + c] = from_f32<T>(d);
	}
}

/*
 * Column partial sums over GPU_COL_ROWS rows: block (32, 8) covers 32
 * columns; thread (x, y) adds rows y, y + 8, ... of its column, then row
 * y = 0 adds the 8 in order. part [R, cols] gets the sum of x; with inp
 * (LayerNorm), part2 [R, cols] the sum of x * (inp - mean) * rstd.
 */
template <typename T>
__global__ void col_partials(float *part, float *part2, const T *x, int ld, const float *inp,
                             const float *mean, const float *rstd, int N, int cols)
{
	__shared__ float sh[2][8][33];
	int c = blockIdx.x * 32 + threadIdx.x;
	int r0 = blockIdx.y * GPU_COL_ROWS, r1 = min(r0 + GPU_COL_ROWS, N);
	float s = 0.0f, s2 = 0.0f;
	if (c < cols)
		for (int n = r0 + threadIdx.y; n < r1; n += 8) {
			float d = to_f32<T>(x[(size_t)n * ld + c]);
			s += d;
			if (inp)
				s2 += (inp[(size_t)n * cols + c] - mean[n]) * rstd[n] * d;
		}
	sh[0][threadIdx.y][threadIdx.x] = s;
	sh[1][threadIdx.y][threadIdx.x] = s2;
	__syncthreads();
	if (threadIdx.y != 0 || c >= cols)
		return;
	float a = 0.0f, a2 = 0.0f;
	for (int y = 0; y < 8; y++) {
		a += sh[0][y][threadIdx.x];
		a2 += sh[1][y][threadIdx.x];
	}
	part[(size_t)blockIdx.y * cols + c] = a;
	if (inp)
		part2[(size_t)blockIdx.y * cols + c] = a2;
}

/* dst [cols] += alpha * the R partials of each column, in row order. */
__global__ void col_total(float *dst, const float *part, int R, int cols, float alpha)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= cols)
		return;
	float s = 0.0f;
	for (int r = 0; r < R; r++)
		s += part[(size_t)r * cols + c];
	dst[c] += alpha * s;
}

template <typename T>
static void column_sums(float *dsum, float *dsum2, float *scratch, const T *x, int ld,
                        const float *inp, const float *mean, const float *rstd, float alpha,
                        int N, int cols)
{
	int R = (N + GPU_COL_ROWS - 1) / GPU_COL_ROWS;
	float *part2 = scratch + (size_t)R * cols;
	dim3 grid((cols + 31) / 32, R), block(32, 8);
	col_partials<T><<<grid, block>>>(scratch, part2, x, ld, inp, mean, rstd, N, cols);
	col_total<<<(cols + 255) / 256, 256>>>(dsum, scratch, R, cols, alpha);
	if (dsum2)
		col_total<<<(cols + 255) / 256, 256>>>(dsum2, part2, R, cols, alpha);
}

/*
 * One row of the classifier: an online max and sum over the V columns
 * (each thread its own, then combined), the loss, and the row replaced by
 * softmax - onehot. The target's logit is read before any thread writes.
 */
template <typename T>
__global__ void classifier(T *logits, float *losses, float *lse, const int32_t *targets, int V,
                           int Vp)
{
	T *l = logits + (size_t)blockIdx.x * Vp;
	int t = targets[blockIdx.x];
	float xt = to_f32<T>(l[t]);
	float mx = -INFINITY, s = 0.0f;
	for (int v = threadIdx.x; v < V; v += ROW_THREADS) {
		float x = to_f32<T>(l[v]);
		if (x > mx) {
			s = s * expf(mx - x) + 1.0f;
			mx = x;
		} else {
			s += expf(x - mx);
		}
	}
	float M = block_reduce<true>(mx);
	float part = mx == -INFINITY ? 0.0f : s * expf(mx - M);
	float z = M + logf(block_reduce<false>(part));
	/* block_reduce's barriers: every read of the row above is done */
	for (int v = threadIdx.x; v < V; v += ROW_THREADS)
		l[v] = from_f32<T>(expf(to_f32<T>(l[v]) - z) - (v == t ? 1.0f : 0.0f));
	if (threadIdx.x == 0) {
		lse[blockIdx.x] = z;
		losses[blockIdx.x] = z - xt;
	}
}

extern "C" {

void gpu_lowp_from_f32(void *dst, const float *src, size_t n, gpu_lowp fmt)
{
	lowp_dispatch(fmt, [&](auto tag) {
		using T = decltype(tag);
		from_f32_kernel<T><<<grid_for(n, 256), 256>>>((T *)dst, src, n);
	});
}

void gpu_lowp_to_f32(float *dst, const void *src, size_t n, gpu_lowp fmt)
{
	lowp_dispatch(fmt, [&](auto tag) {
		using T = decltype(tag);
		to_f32_kernel<T><<<grid_for(n, 256), 256>>>(dst, (const T *)src, n);
	});
}

void gpu_residual_layernorm_forward(float *res_out, void *out, float *mean, float *rstd,
                                    const float *res_in, const void *add, const float *w,
                                    const float *b, int N, int C, gpu_lowp fmt)
{
	lowp_dispatch(fmt, [&](auto tag) {
		using T = decltype(tag);
		residual_ln_fwd<T><<<N, ROW_THREADS>>>(res_out, (T *)out, mean, rstd, res_in,
		                                       (const T *)add, w, b, C);
	});
}

void gpu_lowp_layernorm_backward(float *dres, void *dres_low, float *dw, float *db,
                                 float *scratch, const void *dout, const float *inp,
                                 const float *w, const float *mean, const float *rstd, int N,
                                 int C, gpu_lowp fmt)
{
	lowp_dispatch(fmt, [&](auto tag) {
		using T = decltype(tag);
		/* the weights' sums first: they read dout, not dres */
		column_sums<T>(db, dw, scratch, (const T *)dout, C, inp, mean, rstd, 1.0f, N, C);
		ln_bwd_rows<T><<<N, ROW_THREADS>>>(dres, (T *)dres_low, (const T *)dout, inp, w,
		                                   mean, rstd, C);
	});
}

void gpu_lowp_column_sum(float *dbias, float *scratch, const void *x, float alpha, int N,
                         int cols, int ld, gpu_lowp fmt)
{
	lowp_dispatch(fmt, [&](auto tag) {
		using T = decltype(tag);
		column_sums<T>(dbias, NULL, scratch, (const T *)x, ld, NULL, NULL, NULL, alpha, N,
		               cols);
	});
}

void gpu_lowp_classifier(void *logits, float *losses, float *lse, const int32_t *targets, int N,
                         int V, int Vp, gpu_lowp fmt)
{
	lowp_dispatch(fmt, [&](auto tag) {
		using T = decltype(tag);
		classifier<T><<<N, ROW_THREADS>>>((T *)logits, losses, lse, targets, V, Vp);
	});
}

} /* extern "C" */
