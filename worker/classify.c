/*
 * classify.c - the end of a launch, classified (classify.h).
 */
#include "classify.h"

#include <stdlib.h>
#include <string.h>

#include "task.h"

/* Lowest launcher status that means "ended by a signal" (the shell's convention). */
#define SIGNAL_STATUS_BASE 128

failure_class launch_classify(const launch_end *e)
{
	if (e->start_failed)
		return FAILURE_LAUNCH_FAILED;
	if (e->silent)
		return FAILURE_HANG;
	if (e->exit_status == TRAIN_OK)
		return FAILURE_OK;
	if (e->exit_status == TRAIN_STOPPED)
		return FAILURE_STOPPED;
	if (e->oom_kills > 0)
		return FAILURE_OOM;
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
	int rank;
	return launch_line_kind_rank(line, &rank);
}

launch_line launch_line_kind_rank(const char *line, int *rank)
{
	*rank = -1;
	/* slurmstepd: "Detected 1 oom_kill event in StepId=..."; srun: "task 1: Out Of Memory" */
	if (strstr(line, "oom_kill event") || strstr(line, "oom-kill event") ||
	    strstr(line, ": Out Of Memory"))
		return LAUNCH_LINE_OOM;
	/* the task could not start the program (task.h) */
	if (strstr(line, TASK_START_FAILED))
		return LAUNCH_LINE_START_FAILED;
	/* srun: "srun: error: n2: task 1: Killed" (a signal); "task 0: Exited with exit code 3"
	 * is a status, which the launcher's own exit status carries */
	const char *t = strstr(line, "srun: error: ");
	t = t ? strstr(t, ": task ") : NULL;
	if (t) {
		char *end;
		long r = strtol(t + 7, &end, 10);
		if (end != t + 7 && strncmp(end, ": ", 2) == 0 &&
		    strncmp(end + 2, "Exited with exit code", 21) != 0) {
			*rank = (int)r;
			return LAUNCH_LINE_RANK_LOST;
		}
	}
	if (strstr(line, "srun: error: Node failure on"))
		return LAUNCH_LINE_RANK_LOST;
	/* mpirun (Open MPI 4.1): "mpirun noticed that process rank 1 with PID 0 on node vm
	 * exited on signal 9 (Killed)." */
	if (strstr(line, "exited on signal")) {
		const char *r = strstr(line, "process rank ");
		*rank = r ? atoi(r + 13) : -1;
		return LAUNCH_LINE_RANK_LOST;
	}
	/* mpirun: "mpirun was unable to launch the specified application as it could not
	 * access or execute an executable:", and "N total processes failed to start" */
	if (strstr(line, "was unable to launch") || strstr(line, "processes failed to start"))
		return LAUNCH_LINE_START_FAILED;
	return LAUNCH_LINE_OTHER;
}
