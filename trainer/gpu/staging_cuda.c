/*
 * staging_cuda.c - the staging of comm_staged.h for buffers on the rank's
 * GPU: pinned host memory, and copies that wait for the device work
 * queued before them (the device ops run on the legacy default stream,
 * which cudaMemcpy orders itself after). Ranks that share one GPU talk
 * through it over MPI (gpu_backend.h, staging).
 */
#include "device.h"

#include <cuda_runtime.h>

#include "comm_staged.h"

static void *pinned_alloc(void *ctx, size_t bytes)
{
	(void)ctx;
	void *p = NULL;
	return cudaMallocHost(&p, bytes) == cudaSuccess ? p : NULL;
}

static void pinned_free(void *ctx, void *p)
{
	(void)ctx;
	cudaFreeHost(p);
}

static int device_to_host(void *ctx, void *host, const void *from, size_t bytes)
{
	(void)ctx;
	return cudaMemcpy(host, from, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
}

static int host_to_device(void *ctx, void *to, const void *host, size_t bytes)
{
	(void)ctx;
	return cudaMemcpy(to, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
}

const comm_staging *gpu_staging(void)
{
	static const comm_staging cuda = {
	    .name = "the GPU",
	    .ctx = NULL,
	    .host_alloc = pinned_alloc,
	    .host_free = pinned_free,
	    .to_host = device_to_host,
	    .to_caller = host_to_device,
	};
	return &cuda;
}
