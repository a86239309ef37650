/*
 * backend.c - what libtytrain-cuda.so hands the trainer (../gpu_backend.h):
 * the functions of model_gpu.h, the device choice of device.h, the staging
 * of device buffers and NCCL's communicator where it was built.
 */
#include "device.h"
#include "gpu_backend.h"
#ifdef TY_HAVE_NCCL
#include "comm_nccl.h"
#else
#define comm_nccl_new NULL
#endif

const gpu_backend *ty_gpu_backend(void);

const gpu_backend *ty_gpu_backend(void)
{
	static const gpu_backend table = {
	    .abi = GPU_BACKEND_ABI,
	    .open_device = gpu_open_device,
	    .model_fits = gpu_model_fits,
	    .model_new = gpu_model_new,
	    .model_free = gpu_model_free,
	    .model_bytes = gpu_model_bytes,
	    .forward = gpu_model_forward_slot,
	    .stage_output = gpu_model_stage_output,
	    .backward = gpu_model_backward_slot,
	    .stage_input_grad = gpu_model_stage_input_grad,
	    .comm_error = gpu_model_comm_error,
	    .set_hooks = gpu_model_set_hooks,
	    .zero_grad = gpu_model_zero_grad,
	    .grads = gpu_model_grads,
	    .grad_shard = gpu_model_grad_shard,
	    .params = gpu_model_params,
	    .params_sync = gpu_model_params_sync,
	    .step_stats = gpu_model_step_stats,
	    .adamw = gpu_model_adamw,
	    .get = gpu_model_get,
	    .set = gpu_model_set,
	    .staging = gpu_staging,
	    .vectors = gpu_vecs,
	    .nccl_new = comm_nccl_new,
	};
	return &table;
}
