/*
 * classify.h - what the end of one launch means, as a class of
 * lib/job/failure.def: success, a failure the driver retries in a smaller
 * layout (the class's fallback column), or a failure that ends the run.
 *
 *   launcher's end                          class
 *   exit 0                                  ok
 *   exit 16 (stopped)                       stopped
 *   the launcher could not be started, or   launch_failed
 *     says it could not start the trainer
 *     (mpirun: "was unable to launch", 132)
 *   a rank ended by a signal: the launcher  rank_lost
 *     says "exited on signal N" (mpirun,
 *     exit 137 for SIGKILL), or exits above
 *     128 (128 + N, the shell's convention)
 *   a status of the trainer's own classes   that class
 *     (failure.def's EXIT rows: 10 to 15)
 *   anything else (1, 2, ...)               internal
 *
 * mpirun and srun pass the first failing rank's status through.
 */
#ifndef TY_WORKER_CLASSIFY_H
#define TY_WORKER_CLASSIFY_H

#include <stdbool.h>

#include "failure.h"

/* How a launch ended, as the driver observed it. */
typedef struct launch_end {
	int exit_status; /* the launcher's exit status; 128 + N when signal N ended it */
	bool
	    start_failed; /* the launcher could not be executed, or said it could not start ranks */
	int ranks_lost;   /* launcher messages that report a rank ended by a signal */
} launch_end;

/* What a line of the launcher's stderr reports. */
typedef enum launch_line {
	LAUNCH_LINE_OTHER,
	LAUNCH_LINE_RANK_LOST,    /* a rank ended by a signal */
	LAUNCH_LINE_START_FAILED, /* the trainer could not be started */
} launch_line;

failure_class launch_classify(const launch_end *e);

/* RET: what a line of the launch's stderr reports (mpirun's own messages). */
launch_line launch_line_kind(const char *line);

#endif
