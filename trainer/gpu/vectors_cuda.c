/*
 * vectors_cuda.c - device vectors of floats for the trainer's own buffers
 * (device.h): allocated zeroed, zeroed and summed on the legacy default
 * stream, in order with the model's kernels.
 */
#include <cuda_runtime.h>

#include "device.h"
#include "ops_gpu.h"

static float *vec_alloc(size_t n)
{
	float *x = NULL;
	size_t bytes = (n ? n : 1) * sizeof(float);
	if (cudaMalloc((void **)&x, bytes) != cudaSuccess)
		return NULL;
	if (cudaMemset(x, 0, bytes) != cudaSuccess) {
		cudaFree(x);
		return NULL;
	}
	return x;
}

static void vec_free(float *x)
{
	if (x)
		cudaFree(x);
}

static void vec_zero(float *x, size_t n)
{
	cudaMemsetAsync(x, 0, n * sizeof(float), 0);
}

static void vec_add(float *y, const float *x, size_t n)
{
	gpu_residual_forward(y, y, x, n); /* elementwise: in place is fine */
}

const gpu_vectors *gpu_vecs(void)
{
	static const gpu_vectors v = {vec_alloc, vec_free, vec_zero, vec_add};
	return &v;
}
