/*
 * classify.h - what the end of one launch means: success, a failure the
 * driver retries in a smaller layout, or a failure that ends the run.
 *
 *   launcher's end                          class               next
 *   exit 0                                  succeeded           done
 *   exit 16 (stopped)                       stopped             done
 *   the launcher could not be started, or   launch_failed       done (failed)
 *     says it could not start the trainer
 *     (mpirun: "was unable to launch", 132)
 *   a rank ended by a signal: the launcher  rank_lost           fall back, one slot fewer
 *     says "exited on signal N" (mpirun,
 *     exit 137 for SIGKILL), or exits above
 *     128 (128 + N, the shell's convention)
 *   exit 11 (out_of_memory)                 out_of_memory       fall back
 *   exit 12 (comm_failure)                  comm_failure        fall back
 *   exit 10, 13, 14, 15                     the trainer's name  done (failed)
 *   anything else (1, 2, ...)               internal            done (failed)
 *
 * The trainer's statuses are worker/exitcode.h; mpirun and srun pass the
 * first failing rank's status through.
 */
#ifndef TY_RUNTIME_CLASSIFY_H
#define TY_RUNTIME_CLASSIFY_H

#include <stdbool.h>

typedef enum launch_class {
	LAUNCH_SUCCEEDED,
	LAUNCH_STOPPED,
	LAUNCH_RANK_LOST,
	LAUNCH_OUT_OF_MEMORY,
	LAUNCH_COMM_FAILURE,
	LAUNCH_INVALID_CONFIG,
	LAUNCH_DATA_ERROR,
	LAUNCH_NUMERICAL_FAILURE,
	LAUNCH_CHECKPOINT_CORRUPT,
	LAUNCH_START_FAILED,
	LAUNCH_INTERNAL,
} launch_class;

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

launch_class launch_classify(const launch_end *e);

/* RET: the class's name ("rank_lost"); the trainer's names for its statuses. */
const char *launch_class_name(launch_class c);

/* RET: whether the driver falls back to a smaller layout after this class. */
bool launch_class_retryable(launch_class c);

/* RET: trainyard-worker's exit status for a run ending in this class (exitcode.h). */
int launch_class_exit_status(launch_class c);

/* RET: what a line of the launch's stderr reports (mpirun's own messages). */
launch_line launch_line_kind(const char *line);

#endif
