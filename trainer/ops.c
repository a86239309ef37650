/*
 * ops.c - the fast ops of ops.h.
 *
 * Threads: all parallelism is OpenMP's. A matmul is cut into one block of
 * its output per OpenMP thread, and each block is one single-threaded
 * cblas_sgemm call; attention runs one (batch, head) pair per iteration,
 * with its q k^T and att v products as sgemm calls too. OpenBLAS never
 * starts threads of its own here (ops_blas_serial): a second pool on the
 * same cores spins while ours works and the other way round, which cost
 * 40% of a step with OpenBLAS's pthread build.
 *
 * The other loops are split so that each output element is computed by
 * one thread in a fixed order (a reduction over rows is split by column
 * instead), which keeps results independent of scheduling. exp and tanh
 * use the branch-free approximations below, which the compiler can
 * vectorise; they are within a few ulp of libm (the tests check it).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <cblas.h>
#include <omp.h>

#include "lowp.h"
#include "ops.h"

/* Columns one thread owns in a reduction over rows. */
#define OPS_COL_BLOCK 64

/*
 * The loops below are written so that GCC vectorises them at -O2 without
 * fast-math flags: no float comparisons in a loop body (with trapping
 * math they block if-conversion), selects done with integer masks, and
 * reductions spread over OPS_LANES partial sums that are added in a fixed
 * order at the end.
 */
#define OPS_LANES 16

/*
 * e^x for x <= 88, within about 2 ulp of the true value for x >= -87; below
 * -87 (and for -inf) it gives e^-87 (about 1.6e-38) instead of a smaller
 * or zero value. NaN stays NaN. x = k ln2 + r with |r| <= ln2 / 2, e^r by
 * its Taylor series to r^7, 2^k put in the exponent bits; k comes from
 * the 1.5 * 2^23 rounding trick, so no float-to-int conversion is needed.
 */
static inline float ops_exp(float x)
{
	const float shift = 12582912.0f;   /* 1.5 * 2^23 */
	const uint32_t lo = 0xc2ae0000u;   /* -87.0f */
	const uint32_t ninf = 0xff800000u; /* -inf; above it only NaNs */
	uint32_t xb = lowp_bits(x);
	uint32_t clamp = 0u - (uint32_t)((xb > lo) & (xb <= ninf));
	x = lowp_from_bits((xb & ~clamp) | (lo & clamp));

	float kf = x * 1.44269504f + shift;
	uint32_t kbits = lowp_bits(kf);
	kf -= shift;
	float r = x - kf * 0.693359375f; /* ln2, high part: the product is exact */
	r = r - kf * -2.12194440e-4f;    /* ln2, low part */
	float p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	uint32_t scale = (kbits - 0x4b400000u + 127u) << 23;
	return p * lowp_from_bits(scale);
}

/*
 * The two forms GELU needs, with e = e^-2|u| (0 < e <= 1):
 *   1 + tanh(u) = 2 / (1 + e) for u >= 0, 2e / (1 + e) for u < 0
 *   1 - tanh(u)^2 = 4e / (1 + e)^2
 * Unlike 1 + tanhf(u), neither cancels when tanh is close to -1.
 */
static inline float ops_one_plus_tanh(float u, float e)
{
	uint32_t neg = 0u - (lowp_bits(u) >> 31);
	float num = lowp_from_bits((lowp_bits(1.0f) & ~neg) | (lowp_bits(e) & neg));
	return 2.0f * num / (1.0f + e);
}

static inline float ops_tanh_e(float u)
{
	return ops_exp(-2.0f * lowp_from_bits(lowp_bits(u) & 0x7fffffffu));
}

/* A float's bits as an int32 that orders like the float (NaN above +inf). */
static inline int32_t ops_order_key(float x)
{
	int32_t b = (int32_t)lowp_bits(x);
	return b ^ (int32_t)((uint32_t)(b >> 31) & 0x7fffffffu);
}

static inline float ops_from_order_key(int32_t k)
{
	return lowp_from_bits((uint32_t)(k ^ (int32_t)((uint32_t)(k >> 31) & 0x7fffffffu)));
}

/* max of x [n] (n >= 1); a NaN of either sign may or may not win. */
static float row_max(const float *x, int n)
{
	int32_t acc[OPS_LANES];
	for (int j = 0; j < OPS_LANES; j++)
		acc[j] = INT32_MIN;
	int i = 0;
	for (; i + OPS_LANES <= n; i += OPS_LANES)
		for (int j = 0; j < OPS_LANES; j++) {
			int32_t k = ops_order_key(x[i + j]);
			acc[j] = k > acc[j] ? k : acc[j];
		}
	int32_t m = acc[0];
	for (int j = 1; j < OPS_LANES; j++)
		m = acc[j] > m ? acc[j] : m;
	for (; i < n; i++) {
		int32_t k = ops_order_key(x[i]);
		m = k > m ? k : m;
	}
	return ops_from_order_key(m);
}

/* sum of e^(x[i] - shift) over x [n]; also stored to y [n] when y is not NULL
 * (y may be x). */
static float row_exp_sum(float *y, const float *x, float shift, int n)
{
	float acc[OPS_LANES] = {0};
	int i = 0;
	if (y)
		for (; i + OPS_LANES <= n; i += OPS_LANES)
			for (int j = 0; j < OPS_LANES; j++) {
				float e = ops_exp(x[i + j] - shift);
				y[i + j] = e;
				acc[j] += e;
			}
	else
		for (; i + OPS_LANES <= n; i += OPS_LANES)
			for (int j = 0; j < OPS_LANES; j++)
				acc[j] += ops_exp(x[i + j] - shift);
	float sum = 0.0f;
	for (int j = 0; j < OPS_LANES; j++)
		sum += acc[j];
	for (; i < n; i++) {
		float e = ops_exp(x[i] - shift);
		if (y)
			y[i] = e;
		sum += e;
	}
	return sum;
}

/*
 * OpenBLAS runs inside our OpenMP threads, one thread per call. Its OpenMP
 * build sees that by itself (omp_in_parallel) and must be left alone: its
 * openblas_set_num_threads() is omp_set_num_threads(). Its pthread build
 * has a pool of its own, set to one thread here.
 */
static void ops_blas_serial(void)
{
	if (openblas_get_parallel() == 1 && openblas_get_num_threads() != 1)
		openblas_set_num_threads(1);
}

/*
 * C [M,N] (leading dimension ldc) = alpha op(A) op(B) + beta C, row-major,
 * op(A) [M,K] and op(B) [K,N]. The larger of M and N is cut into one
 * block per OpenMP thread (multiples of 16), each a single-threaded sgemm.
 */
static void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *Cm, int ldc)
{
	enum CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans;
	enum CBLAS_TRANSPOSE opb = tb ? CblasTrans : CblasNoTrans;
	bool by_rows = M >= N;
	int len = by_rows ? M : N;

	ops_blas_serial();
#pragma omp parallel
	{
		int nt = omp_get_num_threads(), id = omp_get_thread_num();
		int part = ((len + nt - 1) / nt + 15) / 16 * 16;
		int lo = id * part, hi = lo + part < len ? lo + part : len;
		if (lo < hi && by_rows)
			cblas_sgemm(CblasRowMajor, opa, opb, hi - lo, N, K, alpha,
			            ta ? A + lo : A + (size_t)lo * lda, lda, B, ldb, beta,
			            Cm + (size_t)lo * ldc, ldc);
		else if (lo < hi)
			cblas_sgemm(CblasRowMajor, opa, opb, M, hi - lo, K, alpha, A, lda,
			            tb ? B + (size_t)lo * ldb : B + lo, ldb, beta, Cm + lo, ldc);
	}
}

#define GELU_S 0.7978845608f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

void encoder_forward(float *out, const int32_t *inp, const float *wte, const float *wpe, int B,
                     int T, int C)
{
#pragma omp parallel for
	for (int n = 0; n < B * T; n++) {
		const float *e = wte + (size_t)inp[n] * C;
		const float *p = wpe + (size_t)(n % T) * C;
		float *o = out + (size_t)n * C;
		for (int c = 0; c < C; c++)
			o[c] = e[c] + p[c];
	}
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T,
                      int C)
{
	/* Several positions may hold the same token: split by channel, and
	 * let each thread walk the positions in order. */
	int nblocks = (C + OPS_COL_BLOCK - 1) / OPS_COL_BLOCK;
#pragma omp parallel for
	for (int blk = 0; blk < nblocks; blk++) {
		int c0 = blk * OPS_COL_BLOCK;
		int c1 = c0 + OPS_COL_BLOCK < C ? c0 + OPS_COL_BLOCK : C;
		for (int n = 0; n < B * T; n++) {
			const float *d = dout + (size_t)n * C;
			float *de = dwte + (size_t)inp[n] * C;
			for (int c = c0; c < c1; c++)
				de[c] += d[c];
		}
	}
#pragma omp parallel for
	for (int t = 0; t < T; t++) {
		float *dp = dwpe + (size_t)t * C;
		for (int b = 0; b < B; b++) {
			const float *d = dout + ((size_t)b * T + t) * C;
			for (int c = 0; c < C; c++)
				dp[c] += d[c];
		}
	}
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C)
{
#pragma omp parallel for
	for (int n = 0; n < N; n++) {
		const float *x = inp + (size_t)n * C;
		float *o = out + (size_t)n * C;
		float m = 0.0f;
		for (int c = 0; c < C; c++)
			m += x[c];
		m /= (float)C;
		float v = 0.0f;
		for (int c = 0; c < C; c++)
			v += (x[c] - m) * (x[c] - m);
		v /= (float)C;
		float s = 1.0f / sqrtf(v + OPS_LN_EPS);
		for (int c = 0; c < C; c++)
			o[c] = (x[c] - m) * s * w[c] + b[c];
		mean[n] = m;
		rstd[n] = s;
	}
}

void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C)
{
#pragma omp parallel for
	for (int n = 0; n < N; n++) {
		const float *x = inp + (size_t)n * C;
		const float *d = dout + (size_t)n * C;
		float *di = dinp + (size_t)n * C;
		float m = mean[n], s = rstd[n];
		float dmean = 0.0f, dnorm_mean = 0.0f;
		for (int c = 0; c < C; c++) {
			float norm = (x[c] - m) * s;
			dmean += w[c] * d[c];
			dnorm_mean += w[c] * d[c] * norm;
		}
		dmean /= (float)C;
		dnorm_mean /= (float)C;
		for (int c = 0; c < C; c++) {
			float norm = (x[c] - m) * s;
			di[c] += (w[c] * d[c] - dmean - norm * dnorm_mean) * s;
		}
	}
	int nblocks = (C + OPS_COL_BLOCK - 1) / OPS_COL_BLOCK;
#pragma omp parallel for
	for (int blk = 0; blk < nblocks; blk++) {
		int c0 = blk * OPS_COL_BLOCK;
		int len = c0 + OPS_COL_BLOCK < C ? OPS_COL_BLOCK : C - c0;
		float sw[OPS_COL_BLOCK] = {0}, sb[OPS_COL_BLOCK] = {0};
		for (int n = 0; n < N; n++) {
			const float *x = inp + (size_t)n * C + c0;
			const float *d = dout + (size_t)n * C + c0;
			float m = mean[n], s = rstd[n];
			for (int j = 0; j < len; j++) {
				sw[j] += (x[j] - m) * s * d[j];
				sb[j] += d[j];
			}
		}
		for (int j = 0; j < len; j++) {
			dw[c0 + j] += sw[j];
			db[c0 + j] += sb[j];
		}
	}
}

void matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int C,
                    int OC)
{
	float beta = 0.0f;
	if (bias) {
#pragma omp parallel for
		for (int n = 0; n < N; n++)
			memcpy(out + (size_t)n * OC, bias, (size_t)OC * sizeof(float));
		beta = 1.0f;
	}
	/* out [N,OC] (+)= inp [N,C] @ w^T, w stored [OC,C] */
	gemm(false, true, N, OC, C, 1.0f, inp, C, w, C, beta, out, OC);
}

/* dbias [OC] += the column sums of dout [N,OC], rows in order per column. */
static void bias_backward(float *dbias, const float *dout, int N, int OC)
{
	int nblocks = (OC + OPS_COL_BLOCK - 1) / OPS_COL_BLOCK;
#pragma omp parallel for
	for (int blk = 0; blk < nblocks; blk++) {
		int o0 = blk * OPS_COL_BLOCK;
		int len = o0 + OPS_COL_BLOCK < OC ? OPS_COL_BLOCK : OC - o0;
		float acc[OPS_COL_BLOCK] = {0};
		for (int n = 0; n < N; n++) {
			const float *d = dout + (size_t)n * OC + o0;
			for (int j = 0; j < len; j++)
				acc[j] += d[j];
		}
		for (int j = 0; j < len; j++)
			dbias[o0 + j] += acc[j];
	}
}

void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                     const float *w, int N, int C, int OC)
{
	/* dinp [N,C] = dout [N,OC] @ w [OC,C] */
	gemm(false, false, N, C, OC, 1.0f, dout, OC, w, C, 0.0f, dinp, C);
	/* dw [OC,C] += dout^T [OC,N] @ inp [N,C] */
	gemm(true, false, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
	if (dbias)
		bias_backward(dbias, dout, N, OC);
}

/* Causal softmax of one row of scores in place: entries 0..t, the rest 0. */
static void causal_softmax_row(float *a, int t, int T, gpt_precision prec)
{
	float mx = row_max(a, t + 1);
	float inv = 1.0f / row_exp_sum(a, a, mx, t + 1);
	for (int t2 = 0; t2 <= t; t2++)
		a[t2] = lowp_round(a[t2] * inv, prec);
	for (int t2 = t + 1; t2 < T; t2++)
		a[t2] = 0.0f;
}

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH,
                       gpt_precision prec)
{
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs);
	size_t TT = (size_t)T * T;

	ops_blas_serial();
#pragma omp parallel for schedule(static)
	for (int bh = 0; bh < B * NH; bh++) {
		int b = bh / NH, h = bh % NH;
		/* q, k, v of this head: [T,hs] each, rows 3C apart */
		const float *q = qkv + (size_t)b * T * 3 * C + (size_t)h * hs;
		const float *k = q + C, *v = q + 2 * (size_t)C;
		float *a = att + (size_t)bh * TT;
		/* a [T,T] = scale * q @ k^T, then the causal softmax of each row */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, 3 * C, k,
		            3 * C, 0.0f, a, T);
		for (int t = 0; t < T; t++)
			causal_softmax_row(a + (size_t)t * T, t, T, prec);
		/* out[b, :, h] [T,hs] = a @ v */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v,
		            3 * C, 0.0f, out + (size_t)b * T * C + (size_t)h * hs, C);
	}
}

void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH, gpt_precision prec)
{
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs);
	size_t TT = (size_t)T * T;

	ops_blas_serial();
#pragma omp parallel for schedule(static)
	for (int bh = 0; bh < B * NH; bh++) {
		int b = bh / NH, h = bh % NH;
		size_t base = (size_t)b * T * 3 * C + (size_t)h * hs;
		const float *q = qkv + base, *k = q + C, *v = q + 2 * (size_t)C;
		float *dq = dqkv + base, *dk = dq + C, *dv = dq + 2 * (size_t)C;
		const float *d =
		    dout + (size_t)b * T * C + (size_t)h * hs; /* [T,hs], rows C apart */
		const float *a = att + (size_t)bh * TT;
		float *ds = scratch + (size_t)bh * TT;

		/* da [T,T] = d @ v^T (into ds); dv = a^T @ d */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, d, C, v, 3 * C,
		            0.0f, ds, T);
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, d, C,
		            0.0f, dv, 3 * C);
		/* softmax backward, row by row: ds = a * (da - sum(a * da)) */
		for (int t = 0; t < T; t++) {
			const float *ar = a + (size_t)t * T;
			float *dr = ds + (size_t)t * T;
			float dot = 0.0f;
			for (int t2 = 0; t2 <= t; t2++)
				dot += ar[t2] * dr[t2];
			for (int t2 = 0; t2 <= t; t2++)
				dr[t2] = lowp_round(ar[t2] * (dr[t2] - dot), prec);
			for (int t2 = t + 1; t2 < T; t2++)
				dr[t2] = 0.0f;
		}
		/* dq = scale * ds @ k; dk = scale * ds^T @ q */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, ds, T, k,
		            3 * C, 0.0f, dq, 3 * C);
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, ds, T, q,
		            3 * C, 0.0f, dk, 3 * C);
	}
}

/* Elementwise loops go in chunks, so each thread gets long simd runs. */
#define OPS_CHUNK 4096

void gelu_forward(float *out, const float *inp, size_t N)
{
	size_t nchunks = (N + OPS_CHUNK - 1) / OPS_CHUNK;
#pragma omp parallel for
	for (size_t k = 0; k < nchunks; k++) {
		size_t i1 = (k + 1) * OPS_CHUNK < N ? (k + 1) * OPS_CHUNK : N;
#pragma omp simd
		for (size_t i = k * OPS_CHUNK; i < i1; i++) {
			float x = inp[i];
			float u = GELU_S * (x + GELU_A * x * x * x);
			out[i] = 0.5f * x * ops_one_plus_tanh(u, ops_tanh_e(u));
		}
	}
}

void gelu_backward(float *dinp, const float *inp, const float *dout, size_t N)
{
	size_t nchunks = (N + OPS_CHUNK - 1) / OPS_CHUNK;
#pragma omp parallel for
	for (size_t k = 0; k < nchunks; k++) {
		size_t i1 = (k + 1) * OPS_CHUNK < N ? (k + 1) * OPS_CHUNK : N;
#pragma omp simd
		for (size_t i = k * OPS_CHUNK; i < i1; i++) {
			float x = inp[i];
			float u = GELU_S * (x + GELU_A * x * x * x);
			float e = ops_tanh_e(u);
			float sech2 = 4.0f * e / ((1.0f + e) * (1.0f + e)); /* 1 - tanh^2 */
			float du = GELU_S * (1.0f + 3.0f * GELU_A * x * x);
			float g = 0.5f * ops_one_plus_tanh(u, e) + 0.5f * x * sech2 * du;
			dinp[i] = g * dout[i];
		}
	}
}

void residual_forward(float *out, const float *a, const float *b, size_t N)
{
	size_t nchunks = (N + OPS_CHUNK - 1) / OPS_CHUNK;
#pragma omp parallel for
	for (size_t k = 0; k < nchunks; k++) {
		size_t i1 = (k + 1) * OPS_CHUNK < N ? (k + 1) * OPS_CHUNK : N;
#pragma omp simd
		for (size_t i = k * OPS_CHUNK; i < i1; i++)
			out[i] = a[i] + b[i];
	}
}

void lmhead_forward(float *logits, const float *inp, const float *wte, int N, int C, int V, int Vp)
{
	/* logits[:, :V] = inp [N,C] @ wte[:V]^T, rows Vp apart */
	gemm(false, true, N, V, C, 1.0f, inp, C, wte, C, 0.0f, logits, Vp);
	for (int n = 0; n < N; n++)
		for (int v = V; v < Vp; v++)
			logits[(size_t)n * Vp + v] = -INFINITY;
}

void lmhead_backward(float *dinp, float *dwte, const float *dlogits, const float *inp,
                     const float *wte, int N, int C, int V, int Vp)
{
	/* dinp [N,C] = dlogits[:, :V] @ wte[:V] */
	gemm(false, false, N, C, V, 1.0f, dlogits, Vp, wte, C, 0.0f, dinp, C);
	/* dwte[:V] [V,C] += dlogits[:, :V]^T @ inp */
	gemm(true, false, V, C, N, 1.0f, dlogits, Vp, inp, C, 1.0f, dwte, C);
}

void softmax_xent_forward(float *losses, float *lse, const float *logits, const int32_t *targets,
                          int N, int V, int Vp)
{
#pragma omp parallel for
	for (int n = 0; n < N; n++) {
		const float *l = logits + (size_t)n * Vp;
		/* A NaN logit may be skipped by the max, never by the sum. */
		float mx = row_max(l, V);
		lse[n] = mx + logf(row_exp_sum(NULL, l, mx, V));
		losses[n] = lse[n] - l[targets[n]];
	}
}

void softmax_xent_backward(float *dlogits, const float *logits, const float *lse,
                           const int32_t *targets, float dscale, int N, int V, int Vp)
{
#pragma omp parallel for
	for (int n = 0; n < N; n++) {
		const float *l = logits + (size_t)n * Vp;
		float *d = dlogits + (size_t)n * Vp;
		float m = lse[n];
#pragma omp simd
		for (int v = 0; v < V; v++)
			d[v] = ops_exp(l[v] - m) * dscale;
		d[targets[n]] -= dscale;
		for (int v = V; v < Vp; v++)
			d[v] = 0.0f;
	}
}

void lowp_round_buf(float *x, size_t n, gpt_precision prec)
{
	if (prec == GPT_FP32)
		return;
	lowp_round_copy(x, x, n, prec);
}

void lowp_round_copy(float *dst, const float *src, size_t n, gpt_precision prec)
{
	if (prec == GPT_FP32) {
		if (dst != src)
			memcpy(dst, src, n * sizeof(float));
		return;
	}
	size_t nchunks = (n + OPS_CHUNK - 1) / OPS_CHUNK;
#pragma omp parallel for
	for (size_t k = 0; k < nchunks; k++) {
		size_t i1 = (k + 1) * OPS_CHUNK < n ? (k + 1) * OPS_CHUNK : n;
		if (prec == GPT_BF16) {
#pragma omp simd
			for (size_t i = k * OPS_CHUNK; i < i1; i++)
				dst[i] = lowp_round_bf16(src[i]);
		} else {
#pragma omp simd
			for (size_t i = k * OPS_CHUNK; i < i1; i++)
				dst[i] = lowp_round_fp16(src[i]);
		}
	}
}
