/*
 * trainer.h - one training run: configuration, model, data-parallel
 * runtime, data, checkpoints, numerics and metrics, from start (or the
 * last valid checkpoint) to the last step.
 */
#ifndef TY_TRAINER_H
#define TY_TRAINER_H

#include <stdbool.h>
#include <stddef.h>

#include "train_config.h"

struct crypt_object_ctx;

typedef struct train_options {
	const char *ckpt_dir;    /* checkpoints here; resume from the newest valid one */
	const char *data_root;   /* the spec's data paths resolve beneath it; NULL: "." */
	const char *metrics;     /* "-", "fd:N", a file, or NULL */
	const char *init_from;   /* llm.c model file to start from, or NULL */
	const char *export_path; /* llm.c model file written at the end, or NULL */
	double peak_flops;       /* per rank, for MFU; 0: not reported */
	int stop_after;          /* optimizer steps this run takes at most; -1: no limit */
	int threads;             /* OpenMP threads; 0: the default */
	double loss_scale;       /* fp16: the initial loss scale; 0: 65536 */
	bool no_resume;          /* start fresh even if checkpoints exist */
	bool cuda;               /* the model on this rank's GPU (train_gpu.h) */
	size_t memory_limit;     /* bytes of address space per rank (RLIMIT_AS); 0: none */
	const struct crypt_object_ctx
	    *encrypt;          /* checkpoints sealed for this tenant and job; NULL: plain */
	const char *init_ckpt; /* a checkpoint store: start from its newest weights; or NULL */
	const struct crypt_object_ctx
	    *init_encrypt; /* init_ckpt sealed for its own tenant and job; NULL: plain */
} train_options;

/* RET: a train_exit status (failure.h). Messages go to stderr. */
int train_run(const train_config *tc, const train_options *o);

#endif
