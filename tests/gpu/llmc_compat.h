/*
 * llmc_compat.h - what llm.c's train_gpt2.cu (third_party/llm.c, at the
 * commit tests/gpu/fetch_llmc.sh pins) needs to build with CUDA 13:
 * tests/gpu/llmc.sh includes it ahead of the source (nvcc -include), so
 * that llm.c's own files stay as they were fetched.
 *
 * CUDA 13 took the device ordinal out of cudaMemAdvise: its last argument
 * is a struct cudaMemLocation now, and llmc/cuda_utils.cuh still passes
 * cudaCpuDeviceId (its fallback to managed memory when cudaMalloc runs out
 * of memory). This overload takes the ordinal and makes the location:
 * the host for cudaCpuDeviceId, else that device.
 */
#ifndef TY_LLMC_COMPAT_H
#define TY_LLMC_COMPAT_H

#include <cuda_runtime.h>

#if defined(__cplusplus) && CUDART_VERSION >= 13000
static inline cudaError_t cudaMemAdvise(const void *ptr, size_t count, enum cudaMemoryAdvise advice,
                                        int device)
{
	struct cudaMemLocation where;
	where.type =
	    device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
	where.id = device == cudaCpuDeviceId ? 0 : device;
	return cudaMemAdvise(ptr, count, advice, where);
}
#endif

#endif
