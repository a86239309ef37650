/*
 * attention_flash.cu - fused causal self-attention in 16 bits
 * (attention_flash.h), forward and backward, as attention_forward and
 * attention_backward: the scores never leave the chip.
 *
 * Tiling. Queries and keys go in tiles of 64 rows (FLASH_BQ = FLASH_BK,
 * so the diagonal is one tile); a block is 4 warps, and warp w owns rows
 * 16w..16w+15 of every [64, x] product. Products go through the tensor
 * cores (nvcuda::wmma, 16x16x16, 16-bit inputs, fp32 accumulators) out of
 * tiles in shared memory; rows are padded (8 16-bit or 4 fp32 elements)
 * so that fragment loads do not all hit one bank.
 *
 * Forward, one block per (query tile, head, batch), the longest rows
 * first: Q in shared memory; for each key tile 0..diagonal (later ones
 * are all masked and never loaded), K and V are loaded, S = Q K^T goes to
 * shared fp32, two threads per row update the row's running max m and sum
 * l (online softmax, fp32), write P = exp(S/sqrt(hs) - m) rounded to 16
 * bits and rescale the row of the fp32 output accumulator O (in shared
 * memory) by exp(m_old - m_new); then O += P V. Masking: t2 > t and
 * t2 >= T get probability 0; rows and keys past T are loaded as zeros
 * (a zero row times a zero probability must stay zero, not NaN). At the
 * end out = O / l in 16 bits and lse = m + log l in fp32.
 *
 * Backward, three kernels: delta[t] = dout[t] . out[t] (fp32, one warp a
 * row); dK and dV, one block per (key tile, head, batch), looping over
 * the query tiles from the diagonal up in ascending order: S = Q K^T and
 * dP = dO V^T recomputed, P = exp(S/sqrt(hs) - lse), dS = P (dP - delta),
 * dV += P^T dO, dK += dS^T Q; dQ, one block per (query tile, head, batch),
 * looping over the key tiles 0..diagonal in ascending order: dQ += dS K.
 * dK and dQ are scaled by 1/sqrt(hs) once, at the end.
 *
 * Deterministic: every element of dqkv is summed by one warp of one
 * block, in fp32 fragments, over tiles in a fixed order, and written once
 * (16-bit); no atomics, so the same inputs give the same bits every run.
 *
 * Compiled here with the backend; only tests/gpu/test_gpu_attention.cu,
 * run on a GPU (sm_80 or later: bf16 wmma), checks what it computes.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <mma.h>
#include <stdint.h>
#include <type_traits>

#include "attention_flash.h"
#include "lowp_gpu.cuh"

using namespace nvcuda;

#define FLASH_BQ      64  /* query rows per tile */
#define FLASH_BK      64  /* keys per tile: as FLASH_BQ, so the diagonal is one tile */
#define FLASH_THREADS 128 /* 4 warps of 16 rows each */
#define FLASH_MAX_HS  128

static_assert(FLASH_BQ == FLASH_BK && FLASH_BQ == FLASH_THREADS / 32 * 16,
              "each warp owns 16 rows of a tile, and a query tile is a key tile");

typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_frag;

/* Shared-memory pieces start at 128 bytes (wmma wants 32). */
static constexpr size_t smem_round(size_t n)
{
	return (n + 127) & ~(size_t)127;
}

/*
 * Row pitches (elements) and shared-memory sizes (bytes) for heads of D:
 * ldt for [64,D] 16-bit tiles (Q, K, V, dO), ldo for the fp32 output
 * accumulator, lds for fp32 [64,64] scores, ldp for 16-bit [64,64]
 * probabilities. wmma needs pitches of 16 bytes and tiles at 32-byte
 * boundaries: 16 rows of any of these pitches are a multiple of 32 bytes.
 */
template <int D> struct flash_dims {
	static constexpr int ldt = D + 8, ldo = D + 4, lds = FLASH_BK + 4, ldp = FLASH_BK + 8;
	static constexpr size_t tile = smem_round(FLASH_BQ * ldt * 2);
	static constexpr size_t scores = smem_round(FLASH_BQ * lds * 4);
	static constexpr size_t probs = smem_round(FLASH_BQ * ldp * 2);
	static constexpr size_t accum = smem_round(FLASH_BQ * ldo * 4);
	static constexpr size_t rows = smem_round(FLASH_BQ * 4);
	static constexpr size_t stage = FLASH_THREADS / 32 * 16 * 16 * 4; /* a fragment a warp */
	/* Q K V, S, P, O, 1/l */
	static constexpr size_t fwd = 3 * tile + scores + probs + accum + rows;
	/* Q dO K V, S dP, P dS, lse delta, staging */
	static constexpr size_t bwd_kv = 4 * tile + 2 * scores + 2 * probs + 2 * rows + stage;
	/* Q dO K V, S dP, dS, lse delta, staging */
	static constexpr size_t bwd_q = 4 * tile + 2 * scores + probs + 2 * rows + stage;
	static_assert(bwd_kv <= 227 * 1024, "a block's shared memory fits an sm_80/sm_90 SM");
};

/* The next piece of n bytes of dynamic shared memory at *at. */
template <typename X> __device__ X *smem_take(unsigned char **at, size_t n)
{
	X *p = (X *)*at;
	*at += n;
	return p;
}

/*
 * Rows row0..row0+63, columns 0..D-1, of a 16-bit matrix with T rows of
 * pitch elements, into a tile of pitch ldt; rows past T are zeros. Copies
 * 16 bytes at a time: D, pitch and every head offset are multiples of 8
 * elements, and cudaMalloc aligns the base.
 */
template <typename L, int D>
__device__ void tile_load(L *dst, const L *src, size_t pitch, int row0, int T)
{
	constexpr int chunks = D / 8;
	for (int i = threadIdx.x; i < FLASH_BQ * chunks; i += FLASH_THREADS) {
		int r = i / chunks, c = i % chunks * 8;
		uint4 v = make_uint4(0, 0, 0, 0);
		if (row0 + r < T)
			v = *(const uint4 *)(src + (size_t)(row0 + r) * pitch + c);
		*(uint4 *)(dst + r * flash_dims<D>::ldt + c) = v;
	}
}

/* lse and delta of the rows row0..row0+63 of one (batch, head); zero past T. */
static __device__ void rows_load(float *lse_s, float *delta_s, const float *lse, const float *delta,
                                 int row0, int T)
{
	for (int r = threadIdx.x; r < FLASH_BQ; r += FLASH_THREADS) {
		lse_s[r] = row0 + r < T ? lse[row0 + r] : 0.0f;
		delta_s[r] = row0 + r < T ? delta[row0 + r] : 0.0f;
	}
}

/*
 * s [64,64] fp32, rows 16w..16w+15 (warp w's) = a b^T over D: a and b
 * [64,D] 16-bit tiles (Q and K for the scores, dO and V for dP). b read
 * column-major is b^T.
 */
template <typename L, int D> __device__ void warp_scores(float *s, const L *a, const L *b, int w)
{
	constexpr int ldt = flash_dims<D>::ldt, lds = flash_dims<D>::lds;
#pragma unroll
	for (int j = 0; j < FLASH_BK / 16; j++) {
		acc_frag acc;
		wmma::fill_fragment(acc, 0.0f);
#pragma unroll
		for (int k = 0; k < D / 16; k++) {
			wmma::fragment<wmma::matrix_a, 16, 16, 16, L, wmma::row_major> fa;
			wmma::fragment<wmma::matrix_b, 16, 16, 16, L, wmma::col_major> fb;
			wmma::load_matrix_sync(fa, a + 16 * w * ldt + 16 * k, ldt);
			wmma::load_matrix_sync(fb, b + 16 * j * ldt + 16 * k, ldt);
			wmma::mma_sync(acc, fa, fb, acc);
		}
		wmma::store_matrix_sync(s + 16 * w * lds + 16 * j, acc, lds, wmma::mem_row_major);
	}
}

/*
 * c[j] += A B[:, 16j..16j+15] for each of the D/16 fragments c holds: B a
 * [64,D] 16-bit tile, A the warp's 16 rows of a [64,64] 16-bit tile p
 * (rows 16w.. of p; with TRANS, columns 16w.. of p, so A = p^T: the
 * key-side products dV = P^T dO, dK = dS^T Q).
 */
template <typename L, int D, bool TRANS>
__device__ void warp_accumulate(acc_frag (&c)[D / 16], const L *p, const L *b, int w)
{
	typedef typename std::conditional<TRANS, wmma::col_major, wmma::row_major>::type layout;
	constexpr int ldt = flash_dims<D>::ldt, ldp = flash_dims<D>::ldp;
#pragma unroll
	for (int k = 0; k < FLASH_BK / 16; k++) {
		wmma::fragment<wmma::matrix_a, 16, 16, 16, L, layout> fa;
		wmma::load_matrix_sync(
		    fa, TRANS ? p + 16 * k * ldp + 16 * w : p + 16 * w * ldp + 16 * k, ldp);
#pragma unroll
		for (int j = 0; j < D / 16; j++) {
			wmma::fragment<wmma::matrix_b, 16, 16, 16, L, wmma::row_major> fb;
			wmma::load_matrix_sync(fb, b + 16 * k * ldt + 16 * j, ldt);
			wmma::mma_sync(c[j], fa, fb, c[j]);
		}
	}
}

/*
 * The warp's 16 rows (row0.. with row0 = tile start + 16w) of a [64,D]
 * sum held in fragments, times mul, into dst (16-bit, rows of pitch
 * elements); rows past T are not written. Fragments are opaque, so each
 * passes through the warp's 16x16 fp32 staging area.
 */
template <typename L, int D>
__device__ void warp_store(L *dst, size_t pitch, acc_frag (&c)[D / 16], float mul, int row0, int T,
                           float *stage)
{
	int lane = threadIdx.x % 32;
#pragma unroll
	for (int j = 0; j < D / 16; j++) {
		wmma::store_matrix_sync(stage, c[j], 16, wmma::mem_row_major);
		__syncwarp();
		for (int i = lane; i < 16 * 16; i += 32) {
			int r = i / 16, col = i % 16;
			if (row0 + r < T)
				dst[(size_t)(row0 + r) * pitch + 16 * j + col] =
				    from_f32<L>(stage[i] * mul);
		}
		__syncwarp(); /* read before the next fragment overwrites it */
	}
}

/*
 * One key tile of the online softmax, for row r = threadIdx.x / 2 (query
 * t) and half of its keys; the thread beside it (lane ^ 1, the same
 * warp) has the other half, and both keep the same m and l. Key k0 is
 * never masked (k0 <= q0 <= t and k0 < T), so m_new is finite and
 * exp(m - m_new) is 0 on the first tile, never NaN.
 */
template <typename L, int D>
__device__ void softmax_tile(float *m, float *l, const float *s, L *p, float *o, int t, int k0,
                             int T, float scale)
{
	constexpr int lds = flash_dims<D>::lds, ldp = flash_dims<D>::ldp, ldo = flash_dims<D>::ldo;
	int r = threadIdx.x / 2, c0 = threadIdx.x % 2 * (FLASH_BK / 2);
	int last = min(t, T - 1) - k0; /* the last key of the row in this tile */
	const float *srow = s + r * lds;
	float mx = -INFINITY;
	for (int c = c0; c < c0 + FLASH_BK / 2; c++)
		if (c <= last)
			mx = fmaxf(mx, srow[c] * scale);
	mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
	float m_new = fmaxf(*m, mx);
	float alpha = expf(*m - m_new), sum = 0.0f;
	for (int c = c0; c < c0 + FLASH_BK / 2; c++) {
		float e = c <= last ? expf(srow[c] * scale - m_new) : 0.0f;
		p[r * ldp + c] = from_f32<L>(e);
		sum += e;
	}
	sum += __shfl_xor_sync(0xffffffffu, sum, 1); /* a + b == b + a: both get the same l */
	*l = *l * alpha + sum;
	*m = m_new;
	for (int d = threadIdx.x % 2; d < D; d += 2)
		o[r * ldo + d] *= alpha;
}

/* o [64,D] fp32 rows 16w.. += p [64,64] v [64,D], through fragments. */
template <typename L, int D> __device__ void warp_pv(float *o, const L *p, const L *v, int w)
{
	constexpr int ldo = flash_dims<D>::ldo;
	acc_frag c[D / 16];
#pragma unroll
	for (int j = 0; j < D / 16; j++)
		wmma::load_matrix_sync(c[j], o + 16 * w * ldo + 16 * j, ldo, wmma::mem_row_major);
	warp_accumulate<L, D, false>(c, p, v, w);
#pragma unroll
	for (int j = 0; j < D / 16; j++)
		wmma::store_matrix_sync(o + 16 * w * ldo + 16 * j, c[j], ldo, wmma::mem_row_major);
}

template <typename L, int D>
__global__ void __launch_bounds__(FLASH_THREADS)
    flash_fwd(L *out, float *lse, const L *qkv, int T, int C, int NH, float scale)
{
	typedef flash_dims<D> dims;
	extern __shared__ __align__(128) unsigned char smem[];
	unsigned char *at = smem;
	L *qs = smem_take<L>(&at, dims::tile), *ks = smem_take<L>(&at, dims::tile);
	L *vs = smem_take<L>(&at, dims::tile);
	float *s = smem_take<float>(&at, dims::scores);
	L *p = smem_take<L>(&at, dims::probs);
	float *o = smem_take<float>(&at, dims::accum), *inv_l = smem_take<float>(&at, dims::rows);

	int qt = gridDim.x - 1 - blockIdx.x; /* the longest rows start first */
	int h = blockIdx.y, b = blockIdx.z, q0 = qt * FLASH_BQ, w = threadIdx.x / 32;
	int r = threadIdx.x / 2, t = q0 + r;
	size_t pitch = 3 * (size_t)C;
	const L *base = qkv + (size_t)b * T * pitch + h * D;
	tile_load<L, D>(qs, base, pitch, q0, T);
	for (int i = threadIdx.x; i < FLASH_BQ * dims::ldo; i += FLASH_THREADS)
		o[i] = 0.0f;
	float m = -INFINITY, l = 0.0f;
	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * FLASH_BK;
		__syncthreads(); /* the last tile's K, V and P are read */
		tile_load<L, D>(ks, base + C, pitch, k0, T);
		tile_load<L, D>(vs, base + 2 * C, pitch, k0, T);
		__syncthreads();
		warp_scores<L, D>(s, qs, ks, w);
		__syncthreads(); /* S is written */
		softmax_tile<L, D>(&m, &l, s, p, o, t, k0, T, scale);
		__syncthreads(); /* P is written, O rescaled */
		warp_pv<L, D>(o, p, vs, w);
	}
	if (threadIdx.x % 2 == 0) {
		inv_l[r] = 1.0f / l;
		if (t < T)
			lse[((size_t)b * NH + h) * T + t] = m + logf(l);
	}
	__syncthreads(); /* O and 1/l are complete */
	for (int i = threadIdx.x; i < FLASH_BQ * D; i += FLASH_THREADS) {
		int row = i / D, d = i % D;
		if (q0 + row < T)
			out[((size_t)b * T + q0 + row) * C + h * D + d] =
			    from_f32<L>(o[row * dims::ldo + d] * inv_l[row]);
	}
}

/* delta[b,h,t] = dout[b,t,h] . out[b,t,h] in fp32, one warp a row, lanes summed in a fixed tree. */
template <typename L>
__global__ void flash_delta(float *delta, const L *dout, const L *out, int B, int T, int C, int NH)
{
	size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	if (row >= (size_t)B * NH * T)
		return; /* the whole warp */
	int hs = C / NH, lane = threadIdx.x % 32, t = (int)(row % T);
	int h = (int)(row / T % NH), b = (int)(row / T / NH);
	size_t off = ((size_t)b * T + t) * C + (size_t)h * hs;
	float sum = 0.0f;
	for (int i = lane; i < hs; i += 32)
		sum += to_f32(dout[off + i]) * to_f32(out[off + i]);
	for (int o = 16; o > 0; o /= 2)
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
	if (lane == 0)
		delta[row] = sum;
}

/*
 * The probabilities and score gradients of a (query tile, key tile) from
 * S and dP: P = exp(S scale - lse) where t2 <= t < T, else 0; dS = P (dP -
 * delta), both rounded to 16 bits; p may be NULL (dQ needs only dS).
 */
template <typename L, int D>
__device__ void grad_tile(L *p, L *ds, const float *s, const float *dp, const float *lse_s,
                          const float *delta_s, int q0, int k0, int T, float scale)
{
	constexpr int lds = flash_dims<D>::lds, ldp = flash_dims<D>::ldp;
	for (int i = threadIdx.x; i < FLASH_BQ * FLASH_BK; i += FLASH_THREADS) {
		int r = i / FLASH_BK, c = i % FLASH_BK, t = q0 + r;
		float pr = 0.0f;
		if (t < T && k0 + c <= t)
			pr = expf(s[r * lds + c] * scale - lse_s[r]);
		if (p)
			p[r * ldp + c] = from_f32<L>(pr);
		ds[r * ldp + c] = from_f32<L>(pr * (dp[r * lds + c] - delta_s[r]));
	}
}

template <typename L, int D>
__global__ void __launch_bounds__(FLASH_THREADS)
    flash_bwd_kv(L *dqkv, const L *dout, const L *qkv, const float *lse, const float *delta, int T,
                 int C, int NH, float scale)
{
	typedef flash_dims<D> dims;
	extern __shared__ __align__(128) unsigned char smem[];
	unsigned char *at = smem;
	L *qs = smem_take<L>(&at, dims::tile), *dos = smem_take<L>(&at, dims::tile);
	L *ks = smem_take<L>(&at, dims::tile), *vs = smem_take<L>(&at, dims::tile);
	float *s = smem_take<float>(&at, dims::scores), *dp = smem_take<float>(&at, dims::scores);
	L *p = smem_take<L>(&at, dims::probs), *ds = smem_take<L>(&at, dims::probs);
	float *lse_s = smem_take<float>(&at, dims::rows),
	      *delta_s = smem_take<float>(&at, dims::rows);
	float *stage = smem_take<float>(&at, dims::stage);

	int kt = blockIdx.x, h = blockIdx.y, b = blockIdx.z, k0 = kt * FLASH_BK;
	int w = threadIdx.x / 32;
	size_t pitch = 3 * (size_t)C, bh = ((size_t)b * NH + h) * T;
	const L *base = qkv + (size_t)b * T * pitch + h * D;
	const L *dbase = dout + (size_t)b * T * C + h * D;
	tile_load<L, D>(ks, base + C, pitch, k0, T);
	tile_load<L, D>(vs, base + 2 * C, pitch, k0, T);
	acc_frag dk[D / 16], dv[D / 16];
#pragma unroll
	for (int j = 0; j < D / 16; j++) {
		wmma::fill_fragment(dk[j], 0.0f);
		wmma::fill_fragment(dv[j], 0.0f);
	}
	for (int qt = kt; qt < (int)gridDim.x; qt++) {
		int q0 = qt * FLASH_BQ;
		__syncthreads(); /* the last tile's Q, dO, P and dS are read */
		tile_load<L, D>(qs, base, pitch, q0, T);
		tile_load<L, D>(dos, dbase, C, q0, T);
		rows_load(lse_s, delta_s, lse + bh, delta + bh, q0, T);
		__syncthreads();
		warp_scores<L, D>(s, qs, ks, w);
		warp_scores<L, D>(dp, dos, vs, w);
		__syncthreads(); /* S and dP are written */
		grad_tile<L, D>(p, ds, s, dp, lse_s, delta_s, q0, k0, T, scale);
		__syncthreads(); /* P and dS are written */
		warp_accumulate<L, D, true>(dv, p, dos, w);
		warp_accumulate<L, D, true>(dk, ds, qs, w);
	}
	L *dst = dqkv + (size_t)b * T * pitch + h * D;
	warp_store<L, D>(dst + C, pitch, dk, scale, k0 + 16 * w, T, stage + w * 256);
	warp_store<L, D>(dst + 2 * C, pitch, dv, 1.0f, k0 + 16 * w, T, stage + w * 256);
}

template <typename L, int D>
__global__ void __launch_bounds__(FLASH_THREADS)
    flash_bwd_q(L *dqkv, const L *dout, const L *qkv, const float *lse, const float *delta, int T,
                int C, int NH, float scale)
{
	typedef flash_dims<D> dims;
	extern __shared__ __align__(128) unsigned char smem[];
	unsigned char *at = smem;
	L *qs = smem_take<L>(&at, dims::tile), *dos = smem_take<L>(&at, dims::tile);
	L *ks = smem_take<L>(&at, dims::tile), *vs = smem_take<L>(&at, dims::tile);
	float *s = smem_take<float>(&at, dims::scores), *dp = smem_take<float>(&at, dims::scores);
	L *ds = smem_take<L>(&at, dims::probs);
	float *lse_s = smem_take<float>(&at, dims::rows),
	      *delta_s = smem_take<float>(&at, dims::rows);
	float *stage = smem_take<float>(&at, dims::stage);

	int qt = gridDim.x - 1 - blockIdx.x; /* the longest rows start first */
	int h = blockIdx.y, b = blockIdx.z, q0 = qt * FLASH_BQ, w = threadIdx.x / 32;
	size_t pitch = 3 * (size_t)C, bh = ((size_t)b * NH + h) * T;
	const L *base = qkv + (size_t)b * T * pitch + h * D;
	tile_load<L, D>(qs, base, pitch, q0, T);
	tile_load<L, D>(dos, dout + (size_t)b * T * C + h * D, C, q0, T);
	rows_load(lse_s, delta_s, lse + bh, delta + bh, q0, T);
	acc_frag dq[D / 16];
#pragma unroll
	for (int j = 0; j < D / 16; j++)
		wmma::fill_fragment(dq[j], 0.0f);
	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * FLASH_BK;
		__syncthreads(); /* Q, dO, lse, delta loaded; the last tile's K and dS read */
		tile_load<L, D>(ks, base + C, pitch, k0, T);
		tile_load<L, D>(vs, base + 2 * C, pitch, k0, T);
		__syncthreads();
		warp_scores<L, D>(s, qs, ks, w);
		warp_scores<L, D>(dp, dos, vs, w);
		__syncthreads(); /* S and dP are written */
		grad_tile<L, D>(NULL, ds, s, dp, lse_s, delta_s, q0, k0, T, scale);
		__syncthreads(); /* dS is written */
		warp_accumulate<L, D, false>(dq, ds, ks, w);
	}
	warp_store<L, D>(dqkv + (size_t)b * T * pitch + h * D, pitch, dq, scale, q0 + 16 * w, T,
	                 stage + w * 256);
}

/*
 * Call f with std::integral_constant<int, hs> when hs is a multiple of 16
 * from D up to FLASH_MAX_HS, the head sizes the kernels are built for;
 * other sizes (refused by gpu_flash_attention_fits) call nothing.
 */
template <int D = 16, typename F> static void head_dispatch(int hs, F &&f)
{
	if (hs == D)
		f(std::integral_constant<int, D>());
	else if constexpr (D < FLASH_MAX_HS)
		head_dispatch<D + 16>(hs, f);
}

/* Launch kernel with bytes of dynamic shared memory, raising the 48 KiB default first. */
template <typename K, typename... A>
static void launch(K kernel, dim3 grid, size_t bytes, A... args)
{
	cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
	kernel<<<grid, FLASH_THREADS, bytes>>>(args...);
}

extern "C" int gpu_flash_attention_fits(int C, int NH)
{
	return NH > 0 && C > 0 && C % NH == 0 && C / NH % 16 == 0 && C / NH <= FLASH_MAX_HS;
}

extern "C" void gpu_flash_attention_forward(void *out, float *lse, const void *qkv, int B, int T,
                                            int C, int NH, gpu_lowp fmt)
{
	if (B <= 0 || T <= 0 || !gpu_flash_attention_fits(C, NH))
		return;
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs); /* as attention_forward_ref */
	dim3 grid((T + FLASH_BQ - 1) / FLASH_BQ, NH, B);
	lowp_dispatch(fmt, [&](auto tag) {
		using L = decltype(tag);
		head_dispatch(hs, [&](auto dtag) {
			constexpr int D = decltype(dtag)::value;
			launch(flash_fwd<L, D>, grid, flash_dims<D>::fwd, (L *)out, lse,
			       (const L *)qkv, T, C, NH, scale);
		});
	});
}

extern "C" void gpu_flash_attention_backward(void *dqkv, float *delta, const void *dout,
                                             const void *qkv, const void *out, const float *lse,
                                             int B, int T, int C, int NH, gpu_lowp fmt)
{
	if (B <= 0 || T <= 0 || !gpu_flash_attention_fits(C, NH))
		return;
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs);
	dim3 grid((T + FLASH_BQ - 1) / FLASH_BQ, NH, B);
	size_t rows = (size_t)B * NH * T;
	lowp_dispatch(fmt, [&](auto tag) {
		using L = decltype(tag);
		flash_delta<L><<<(unsigned)((rows + 7) / 8), 256>>>(delta, (const L *)dout,
		                                                    (const L *)out, B, T, C, NH);
		head_dispatch(hs, [&](auto dtag) {
			constexpr int D = decltype(dtag)::value;
			launch(flash_bwd_kv<L, D>, grid, flash_dims<D>::bwd_kv, (L *)dqkv,
			       (const L *)dout, (const L *)qkv, lse, (const float *)delta, T, C, NH,
			       scale);
			launch(flash_bwd_q<L, D>, grid, flash_dims<D>::bwd_q, (L *)dqkv,
			       (const L *)dout, (const L *)qkv, lse, (const float *)delta, T, C, NH,
			       scale);
		});
	});
}
