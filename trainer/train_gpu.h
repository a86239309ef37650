/*
 * train_gpu.h - a run's model on a GPU (trainyard-train --device cuda).
 *
 * One rank, or data parallel with ZeRO 0 to 3, in fp32, bf16 or fp16
 * (training.precision), and tensor and pipeline parallel in fp32 (dp x tp
 * x pp ranks, mp.h's grid): each rank's model (its stage's units, its
 * tensor rank's slice of them: mp.h's local layout) and its gradients live
 * on its device (gpu_backend.h), and the AdamW moments of what it
 * updates: everything under ZeRO 0, where the ranks all-reduce their
 * gradients and each updates the whole model; its shard under ZeRO 1
 * (zero.h's partition), where the gradients are reduce-scattered into
 * the owners' shards, each updates its own and the parameters are then
 * all-gathered; under ZeRO 2 the backward writes each unit's gradients
 * into one of three device buffers (unit 0's, and two the layers take
 * in turn, as the CPU runtime's), reduce-scattered into the shard in
 * every backward, so no rank keeps a whole gradient array; under ZeRO 3
 * the device keeps the parameters of its shard alone, and each unit's
 * are all-gathered into one of three buffers as the model asks for them
 * (forward and backward alike), so no rank keeps a whole model either. Each unit's reduction starts
 * in the step's last backward, as the model ends that unit's gradients, and runs while the backward
 * goes on. A tensor group sums its partial activations and their gradients inside the forward and
 * the backward, on a comm of its own (the model's, gpu_part). Pipeline stages run the CPU's 1F1B
 * schedule (pipeline.h) over the device model's slots, their activations and gradients moving
 * between devices on the pipeline group's device comm; the first and last stage sum the tied
 * embedding's gradients on a tie comm after the data-parallel reduction, as the CPU runtime does.
 * The ranks communicate on NCCL where every rank has a GPU of its own (and the backend was built
 * with it), else on staged comms (comm_staged.h: device buffers through pinned host memory over
 * MPI), which work whether or not the ranks share a GPU. The gradient norm is every rank's share
 * (gpu_part's norm pieces: its data-parallel range of the tensors its tensor rank owns) summed over
 * the world, as the CPU's. The data-parallel runtime (zero.h) keeps the host copies that
 * checkpoints, resumes and exports read and write, so a checkpoint is the same whichever device
 * wrote it: a CPU run resumes on a GPU and back. train_gpu_upload puts the runtime's state on the
 * device (at start, after a resume); train_gpu_download brings it back (before a checkpoint or an
 * export).
 */
#ifndef TY_TRAIN_GPU_H
#define TY_TRAIN_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "comm.h"
#include "gpu_backend.h"
#include "mp.h"
#include "optim.h"
#include "pipeline.h"
#include "train_config.h"
#include "zero.h"

/* Where a step's micro-batches come from: RET 0, or < 0 (data_next's -ERR_X). */
typedef int (*train_gpu_batch_fn)(void *ctx, int32_t *inputs, int32_t *targets);

typedef struct train_gpu {
	bool on;
	const gpu_backend *be;
	gpu_model *model;
	const train_config *tc;
	adamw_config adam;
	int opt_step;   /* the last applied update */
	mp_grid grid;   /* dp x tp x pp ranks */
	mp_layout *lay; /* this rank's part of the model */
	/* data parallel: the gradients' reductions (device buffers, "nccl" or "staged") */
	comm *dev;
	comm *tp_dev;            /* tensor parallel: the tensor group's sums inside the model */
	comm *pp_dev;            /* pipeline: activations and their gradients between stages */
	comm *tie_dev;           /* the first and last stage: the tied embedding's gradients */
	comm *boot[MP_GROUPS];   /* NCCL's: the host comms the device ones were made over */
	pipeline pipe;           /* the step's schedule over the model's slots */
	pipe_model_ops pipe_ops; /* the device model's, for it */
	train_gpu_batch_fn next; /* the step's micro-batches (train_gpu_step's) */
	void *next_ctx;
	int data_rc;     /* next's failure, or 0 */
	char fail[512];  /* the device model's message of a failed micro-batch */
	comm *host;      /* the world, for the loss and the norm (host memory); borrowed */
	comm *host_dp;   /* the data-parallel group on the host (upload), or NULL (dp 1) */
	float *stage[3]; /* params, m, v on the host, the layout's nparams floats each */
	/* several ranks: each unit's flat offset and size, padded block, shard offset */
	int nunits;
	size_t *unit_off, *unit_numel, *unit_block, *unit_at;
	/* ZeRO 0, 1: each unit's reduction, started as the last backward ends it */
	comm_request *unit_req;
	int reduce_rc;   /* the first failure inside a hook */
	bool sharded;    /* ZeRO 1 to 3 */
	int zero;        /* the ZeRO stage with several ranks; 0 with one */
	int accum;       /* the step's micro-batches */
	int backward;    /* backward passes ended in this step */
	gpu_shard shard; /* what the device model is told (pieces owned here) */
	gpu_part part;   /* the same, its tensor group and the norm's pieces */
	/*
	 * ZeRO 2 and 3: the gradient buffers on the device, and ZeRO 3's
	 * parameter buffers: unit 0's, and two the other units take in turn.
	 */
	float *gbuf[3], *pbuf[3];
	size_t buf_len[3];        /* floats: the padded blocks of the largest unit each takes */
	int gbuf_unit[3];         /* the unit whose gradients a buffer takes; -1: none */
	int pbuf_unit[3];         /* the unit whose parameters a buffer holds; -1: none */
	comm_request gbuf_req[3]; /* its reduce-scatter into the shard */
	char device[160];         /* what train_gpu_open chose */
} train_gpu;

/*
 * Check the run fits the GPU path (layout_on_device), load the backend
 * and open this rank's device, rank grid->rank of world; with several
 * ranks, the device comms of its data-parallel and tensor groups
 * (collective over world).
 * OUT: *g (zeroed first). RET a train_exit: TRAIN_OK; TRAIN_INVALID_CONFIG
 * (another layout or precision, a backend that is not built);
 * TRAIN_INTERNAL (no usable device); TRAIN_COMM. err says why.
 */
int train_gpu_open(train_gpu *g, const train_config *tc, comm *world, const mp_grid *grid,
                   const adamw_config *adam, char *err, size_t errlen);

/* Copy dp's state to the device, allocating the model the first time. RET a train_exit. */
int train_gpu_upload(train_gpu *g, const dp_runtime *dp, char *err, size_t errlen);

/* Copy the device's state into dp (dp_load_shard, dp_load_done). RET a train_exit. */
int train_gpu_download(train_gpu *g, dp_runtime *dp, char *err, size_t errlen);

/*
 * One optimizer step: accum micro-batches from next (gradients summed
 * with dloss loss_scale / (accum x ranks): numerics.h's scaler, 1 but in
 * fp16), summed over the data-parallel ranks, the mean loss of every
 * rank into *loss, the unscaled norm, clipping and AdamW when the
 * gradient is finite (info says what happened; the caller's numerics
 * rules act on it as on the CPU's). The host waits for the device once,
 * for the loss and the norm together (and for the gradients' copy out,
 * with several ranks).
 * RET a train_exit: TRAIN_OK, TRAIN_DATA (next failed; its code in
 * *data_rc), TRAIN_OOM or TRAIN_INTERNAL (the device failed), TRAIN_COMM
 * (the all-reduce failed).
 */
int train_gpu_step(train_gpu *g, int accum, train_gpu_batch_fn next, void *ctx, float lr,
                   float clip, float loss_scale, float *loss, dp_step_info *info, int *data_rc,
                   char *err, size_t errlen);

/*
 * The seconds the last train_gpu_step spent in its groups' device
 * transfers (comm_seconds): the tensor group's, the pipeline's (the
 * bubble), and the data-parallel group's with the tie's.
 */
void train_gpu_comm_seconds(const train_gpu *g, double *tp, double *pp, double *dp);

/* Device memory the run holds: the model's and the ZeRO 2 and 3 buffers'. */
size_t train_gpu_bytes(const train_gpu *g);

void train_gpu_close(train_gpu *g);

#endif
