/*
 * classify.c - the end of a launch, classified (classify.h).
 */
#include "classify.h"

#include <string.h>

#include "exitcode.h"

/* Lowest launcher status that means "ended by a signal" (the shell's convention). */
#define SIGNAL_STATUS_BASE 128

launch_class launch_classify(const launch_end *e)
{
	if (e->start_failed)
		return LAUNCH_START_FAILED;
	switch (e->exit_status) {
	case TRAIN_OK:
		return LAUNCH_SUCCEEDED;
	case TRAIN_STOPPED:
		return LAUNCH_STOPPED;
	default:
		break;
	}
	if (e->ranks_lost > 0 || e->exit_status > SIGNAL_STATUS_BASE)
		return LAUNCH_RANK_LOST;
	switch (e->exit_status) {
	case TRAIN_OOM:
		return LAUNCH_OUT_OF_MEMORY;
	case TRAIN_COMM:
		return LAUNCH_COMM_FAILURE;
	case TRAIN_INVALID_CONFIG:
		return LAUNCH_INVALID_CONFIG;
	case TRAIN_DATA:
		return LAUNCH_DATA_ERROR;
	case TRAIN_NUMERIC:
		return LAUNCH_NUMERICAL_FAILURE;
	case TRAIN_CKPT_CORRUPT:
		return LAUNCH_CHECKPOINT_CORRUPT;
	default:
		return LAUNCH_INTERNAL;
	}
}

/* The trainer status each class stands for; rank_lost is a lost peer (comm_failure). */
static int class_status(launch_class c)
{
	switch (c) {
	case LAUNCH_SUCCEEDED:
		return TRAIN_OK;
	case LAUNCH_STOPPED:
		return TRAIN_STOPPED;
	case LAUNCH_RANK_LOST:
	case LAUNCH_COMM_FAILURE:
		return TRAIN_COMM;
	case LAUNCH_OUT_OF_MEMORY:
		return TRAIN_OOM;
	case LAUNCH_INVALID_CONFIG:
		return TRAIN_INVALID_CONFIG;
	case LAUNCH_DATA_ERROR:
		return TRAIN_DATA;
	case LAUNCH_NUMERICAL_FAILURE:
		return TRAIN_NUMERIC;
	case LAUNCH_CHECKPOINT_CORRUPT:
		return TRAIN_CKPT_CORRUPT;
	case LAUNCH_START_FAILED:
	case LAUNCH_INTERNAL:
		break;
	}
	return TRAIN_INTERNAL;
}

const char *launch_class_name(launch_class c)
{
	switch (c) {
	case LAUNCH_SUCCEEDED:
		return "succeeded";
	case LAUNCH_STOPPED:
		return "stopped";
	case LAUNCH_RANK_LOST:
		return "rank_lost";
	case LAUNCH_START_FAILED:
		return "launch_failed";
	default:
		return train_exit_name(class_status(c));
	}
}

bool launch_class_retryable(launch_class c)
{
	return c == LAUNCH_RANK_LOST || c == LAUNCH_OUT_OF_MEMORY || c == LAUNCH_COMM_FAILURE;
}

int launch_class_exit_status(launch_class c)
{
	return class_status(c);
}

launch_line launch_line_kind(const char *line)
{
	/* mpirun (Open MPI 4.1): "mpirun noticed that process rank 1 with PID 0 on node vm
	 * exited on signal 9 (Killed)." */
	if (strstr(line, "exited on signal"))
		return LAUNCH_LINE_RANK_LOST;
	/* mpirun: "mpirun was unable to launch the specified application as it could not
	 * access or execute an executable:", and "N total processes failed to start" */
	if (strstr(line, "was unable to launch") || strstr(line, "processes failed to start"))
		return LAUNCH_LINE_START_FAILED;
	return LAUNCH_LINE_OTHER;
}
