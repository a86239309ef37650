/*
 * lowp_gpu.cuh - CUDA's types for gpu_lowp (lowp_gpu.h), and conversions
 * that read the same for both, so a kernel is written once as a template
 * over its 16-bit type.
 */
#ifndef TY_LOWP_GPU_CUH
#define TY_LOWP_GPU_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "lowp_gpu.h"

template <typename T> __device__ __forceinline__ float to_f32(T x);
template <> __device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 x)
{
	return __bfloat162float(x);
}
template <> __device__ __forceinline__ float to_f32<__half>(__half x)
{
	return __half2float(x);
}
template <> __device__ __forceinline__ float to_f32<float>(float x)
{
	return x;
}

/* Round to nearest, ties to even (as lowp.h does on the CPU). */
template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x)
{
	return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half from_f32<__half>(float x)
{
	return __float2half_rn(x);
}
template <> __device__ __forceinline__ float from_f32<float>(float x)
{
	return x;
}

/*
 * Call f with a value of the type of fmt, so a generic lambda learns it
 * (using T = decltype(tag)): the one place a gpu_lowp becomes a CUDA type.
 */
template <typename F> static inline void lowp_dispatch(gpu_lowp fmt, F &&f)
{
	if (fmt == GPU_FP16)
		f(__half());
	else
		f(__nv_bfloat16());
}

#endif
