/*
 * reshard.h - offline resharding: rewrite a checkpoint for another
 * parallel layout, in one process, without training.
 *
 * The newest checkpoint of the source store whose shards verify (or the
 * one of a given step) is read whole; for every rank of the target layout
 * (the job spec's parallel section: dp x tp x pp and zero_stage) the
 * elements it owns are collected (train_ckpt.h) and written as its shard,
 * with the source's state (step, optimizer step, loss scaler, data
 * position) and the new grid; the manifest, written last, holds the
 * target spec. A run with the target layout then resumes from it exactly
 * as from a checkpoint it wrote itself. Memory: the whole checkpoint
 * (parameters and both AdamW moments).
 */
#ifndef TY_RESHARD_H
#define TY_RESHARD_H

#include "train_config.h"

typedef struct reshard_options {
	const char *from, *to; /* checkpoint directories; to may be created */
	int step;              /* 0: the newest valid */
} reshard_options;

/* RET: a train_exit status; messages on stderr, a summary on stdout. */
int reshard_run(const train_config *target, const reshard_options *o);

#endif
