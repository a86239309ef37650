/*
 * classify.h - what the end of one launch means, as a class of
 * lib/job/failure.def: success, a failure the driver retries in a smaller
 * layout (the class's fallback column), or a failure that ends the run.
 *
 *   launcher's end                          class
 *   a command job's ranks silent beyond     hang
 *     heartbeat_timeout_s (the driver
 *     killed the launch)
 *   exit 0                                  ok
 *   exit 16 (stopped)                       stopped
 *   the launcher could not be started, or   launch_failed
 *     says it could not start the trainer
 *     (mpirun: "was unable to launch", 132)
 *   a rank ended by a signal: the launcher  rank_lost
 *     says "exited on signal N" (mpirun,
 *     exit 137 for SIGKILL), or exits above
 *     128 (128 + N, the shell's convention)
 *   the launcher says a rank was killed     out_of_memory
 *     for its memory (srun: "Out Of Memory",
 *     slurmstepd: "oom_kill event")
 *   a status of the trainer's own classes   that class
 *     (failure.def's EXIT rows: 10 to 15)
 *   anything else (1, 2, ...)               internal
 *
 * mpirun and srun pass the first failing rank's status through. A command
 * job's program uses the same statuses (sdk/README.md); its task ends as
 * the program did (task.h), so srun names the rank and how it ended
 * ("task 1: Killed"), which counts as a rank ended by a signal.
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
	int oom_kills;    /* launcher messages that report a rank killed for its memory */
	bool silent;      /* a command job's ranks stopped reporting; the driver killed it */
} launch_end;

/* What a line of the launcher's stderr reports. */
typedef enum launch_line {
	LAUNCH_LINE_OTHER,
	LAUNCH_LINE_RANK_LOST,    /* a rank ended by a signal */
	LAUNCH_LINE_START_FAILED, /* the trainer could not be started */
	LAUNCH_LINE_OOM,          /* a rank was killed for its memory */
} launch_line;

failure_class launch_classify(const launch_end *e);

/* RET: what a line of the launch's stderr reports (mpirun's and srun's own messages). */
launch_line launch_line_kind(const char *line);
/* The same; OUT *rank: the rank it names, or -1. */
launch_line launch_line_kind_rank(const char *line, int *rank);

#endif
