/*
 * device.c - which GPU a rank uses (device.h).
 */
#include "device.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

int gpu_local_device(char *err, size_t errlen)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count < 1) {
		snprintf(err, errlen, "no CUDA device is visible to this rank%s%s",
		         e != cudaSuccess ? ": " : "",
		         e != cudaSuccess ? cudaGetErrorString(e) : "");
		return -1;
	}
	const char *local = getenv("SLURM_LOCALID");
	if (!local)
		local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	int rank = local ? atoi(local) : 0;
	return (rank < 0 ? 0 : rank) % count;
}

int gpu_open_device(char *desc, size_t desclen, char *err, size_t errlen)
{
	int dev = gpu_local_device(err, errlen);
	if (dev < 0)
		return -1;
	struct cudaDeviceProp p;
	int runtime = 0;
	cudaError_t e = cudaSetDevice(dev);
	if (e == cudaSuccess)
		e = cudaGetDeviceProperties(&p, dev);
	if (e == cudaSuccess)
		e = cudaRuntimeGetVersion(&runtime);
	if (e != cudaSuccess) {
		snprintf(err, errlen, "could not use CUDA device %d: %s", dev,
		         cudaGetErrorString(e));
		return -1;
	}
	snprintf(desc, desclen, "%s, sm_%d%d, %.0f GiB, CUDA runtime %d.%d", p.name, p.major,
	         p.minor, (double)p.totalGlobalMem / 1073741824.0, runtime / 1000,
	         runtime % 1000 / 10);
	return dev;
}
