/*
 * lowp_gpu.h - the 16-bit formats of the GPU backend's mixed precision:
 * activations, the weights' working copy and the GEMMs' inputs are held
 * in one of them; master weights, gradients, AdamW moments and every
 * accumulation stay fp32. C code names the format with gpu_lowp and
 * passes 16-bit buffers as void *; CUDA code maps it to a type with
 * lowp_type<> (lowp_gpu.cuh).
 */
#ifndef TY_LOWP_GPU_H
#define TY_LOWP_GPU_H

typedef enum gpu_lowp {
	GPU_NO_LOWP = 0, /* fp32 throughout: no 16-bit copies */
	GPU_BF16 = 1,    /* bfloat16: fp32's exponent range, 8 significant bits */
	GPU_FP16 = 2,    /* IEEE binary16: needs loss scaling (numerics.h) */
} gpu_lowp;

#endif
