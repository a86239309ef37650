/*
 * device.h - which GPU a rank uses, and the device memory its callers
 * reach: the staging of comm_staged.h, and plain vectors of floats.
 */
#ifndef TY_GPU_DEVICE_H
#define TY_GPU_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The GPU of this rank: its local rank (SLURM_LOCALID, or Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK; 0 when neither is set) modulo the devices
 * visible to the process, which Slurm's gres/gpu narrows to the job's own
 * (CUDA_VISIBLE_DEVICES). RET: the device index, or -1 with a message when
 * no device is visible.
 */
int gpu_local_device(char *err, size_t errlen);

/*
 * gpu_local_device(), made current (cudaSetDevice). OUT: desc, its name,
 * compute capability, memory and the CUDA runtime's version. RET as
 * gpu_local_device, or -1 when it cannot be used.
 */
int gpu_open_device(char *desc, size_t desclen, char *err, size_t errlen);

/*
 * How ranks that share this GPU communicate: the staging of comm_staged.h
 * for device buffers (staging_cuda.c), pinned host memory between the
 * device and MPI.
 */
struct comm_staging;
const struct comm_staging *gpu_staging(void);

/*
 * Vectors of floats in device memory, for buffers of the caller's own
 * (ZeRO 2's gradient buffers, train_gpu.c). zero and add are queued on
 * the stream the model's work is (vectors_cuda.c).
 */
typedef struct gpu_vectors {
	float *(*alloc)(size_t n); /* zeroed; NULL when out of device memory */
	void (*free)(float *x);    /* NULL is fine */
	void (*zero)(float *x, size_t n);
	void (*add)(float *y, const float *x, size_t n); /* y += x */
} gpu_vectors;
const gpu_vectors *gpu_vecs(void);

#ifdef __cplusplus
}
#endif

#endif
