/*
 * reduce.cuh - a block-wide reduction for the GPU ops: blocks of
 * ROW_THREADS threads, one row of a tensor each.
 */
#ifndef TY_REDUCE_CUH
#define TY_REDUCE_CUH

#define ROW_THREADS 256

/* The sum (or max) of v over the block; every thread gets it. */
template <bool MAX> __device__ float block_reduce(float v)
{
	__shared__ float part[ROW_THREADS / 32];
	for (int o = 16; o > 0; o /= 2) {
		float w = __shfl_xor_sync(0xffffffffu, v, o);
		v = MAX ? fmaxf(v, w) : v + w;
	}
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads(); /* part[] may still be read by a previous call */
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	v = part[0];
	for (int i = 1; i < ROW_THREADS / 32; i++)
		v = MAX ? fmaxf(v, part[i]) : v + part[i];
	return v;
}

#endif
