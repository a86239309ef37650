/*
 * gpu_backend.h - the trainer's door to its GPU backend.
 *
 * The backend (trainer/gpu/, CUDA) is a shared library, libtytrain-cuda.so,
 * built by `make GPU=1` next to the programs' lib/ directory and loaded
 * only when a run asks for a device (trainyard-train --device cuda): the
 * trainer itself is built, tested and run without CUDA anywhere. The
 * library hands over one table of functions, those of gpu/model_gpu.h,
 * checked by an ABI number.
 */
#ifndef TY_GPU_BACKEND_H
#define TY_GPU_BACKEND_H

#include <stddef.h>

#include "comm.h"
#include "gpu/device.h"
#include "gpu/model_gpu.h"

#define GPU_BACKEND_ABI    6
#define GPU_BACKEND_SYMBOL "ty_gpu_backend"
#define GPU_BACKEND_FILE   "libtytrain-cuda.so"

typedef struct gpu_backend {
	int abi; /* GPU_BACKEND_ABI */
	/*
	 * Pick this rank's GPU (gpu_local_device) and make it current.
	 * OUT: desc ("NVIDIA H200, sm_90, 139 GiB, CUDA 13.0"). RET the device, or
	 * -1 with a message when none is visible.
	 */
	int (*open_device)(char *desc, size_t desclen, char *err, size_t errlen);
	int (*model_fits)(const gpt_config *cfg, int tp, int pp, gpt_precision precision, char *err,
	                  size_t errlen);
	gpu_model *(*model_new)(const gpt_config *cfg, int B, int T, gpt_precision precision,
	                        const float *params, const gpu_part *part, char *err,
	                        size_t errlen);
	void (*model_free)(gpu_model *m);
	size_t (*model_bytes)(const gpu_model *m);
	/* a stage's micro-batch in a slot (gpu_model_forward_slot and the rest) */
	int (*forward)(gpu_model *m, int slot, const int32_t *inputs, const float *x,
	               const int32_t *targets, char *err, size_t errlen);
	const float *(*stage_output)(const gpu_model *m, int slot);
	int (*backward)(gpu_model *m, int slot, float dloss, const float *dy, char *err,
	                size_t errlen);
	const float *(*stage_input_grad)(const gpu_model *m);
	int (*comm_error)(const gpu_model *m); /* the tensor group's failure, a COMM_ERR_* */
	void (*set_hooks)(gpu_model *m, const gpt_hooks *hooks); /* data parallel's reach */
	void (*zero_grad)(gpu_model *m);
	float *(*grads)(gpu_model *m);      /* device memory: data parallel sums it */
	float *(*grad_shard)(gpu_model *m); /* ZeRO 1-3: where the owned sums arrive */
	float *(*params)(gpu_model *m); /* ZeRO 1, 2: all-gathered after the update; 3: the shard */
	int (*params_sync)(gpu_model *m, char *err, size_t errlen);
	int (*step_stats)(gpu_model *m, double *sumsq, double *loss_sum, char *err, size_t errlen);
	int (*adamw)(gpu_model *m, const adamw_config *a, float lr, float grad_scale, int t,
	             char *err, size_t errlen);
	int (*get)(gpu_model *m, gpu_array which, float *host, char *err, size_t errlen);
	int (*set)(gpu_model *m, gpu_array which, const float *host, char *err, size_t errlen);
	/* device buffers through pinned host memory, for comm_staged_new() (gpu/device.h) */
	const struct comm_staging *(*staging)(void);
	/* device vectors of the caller's own (gpu/device.h): ZeRO 2 and 3's buffers */
	const gpu_vectors *(*vectors)(void);
	/*
	 * NCCL over boot's ranks on device, for ranks of a GPU each
	 * (gpu/comm_nccl.h); NULL in a backend built without NCCL.
	 */
	comm *(*nccl_new)(comm *boot, int device, char *err, size_t errlen);
} gpu_backend;

/*
 * Load the backend: TRAINYARD_GPU_BACKEND names the library when set;
 * otherwise it is ../lib/libtytrain-cuda.so beside this program. Loaded
 * once per process. RET the table, or NULL with a message (not built, a
 * CUDA library missing, another ABI).
 */
const gpu_backend *gpu_backend_load(char *err, size_t errlen);

#endif
