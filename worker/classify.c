/*
 * classify.c - the end of a launch, classified (classify.h).
 */
#include "classify.h"

#include <string.h>

/* Lowest launcher status that means "ended by a signal" (the shell's convention). */
#define SIGNAL_STATUS_BASE 128

failure_class launch_classify(const launch_end *e)
{
	if (e->start_failed)
		return FAILURE_LAUNCH_FAILED;
	if (e->exit_status == TRAIN_OK)
		return FAILURE_OK;
	if (e->exit_status == TRAIN_STOPPED)
		return FAILURE_STOPPED;
	if (e->ranks_lost > 0 || e->exit_status > SIGNAL_STATUS_BASE)
		return FAILURE_RANK_LOST;
	/* the trainer's failures; its other statuses (usage...) are the runtime's own bug */
	if (e->exit_status >= TRAIN_INVALID_CONFIG && e->exit_status <= TRAIN_CKPT_CORRUPT)
		for (int c = 0; c < FAILURE__COUNT; c++)
			if (failure_is_exit((failure_class)c) &&
			    failure_status((failure_class)c) == e->exit_status)
				return (failure_class)c;
	return FAILURE_INTERNAL;
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
