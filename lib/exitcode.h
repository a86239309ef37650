/*
 * exitcode.h - trainyard-train's exit statuses, one per failure class, so
 * the worker runtime can choose a fallback (README.md, "Exit codes").
 *
 * EXIT_CODE(ENUM, status, "name", "when")
 */
#ifndef TY_EXITCODE_H
#define TY_EXITCODE_H

#define TRAIN_EXIT_CODES(X)                                                                        \
	X(TRAIN_OK, 0, "ok",                                                                       \
	  "training finished: every step ran and the last checkpoint is written")                  \
	X(TRAIN_INTERNAL, 1, "internal", "an unexpected failure (a bug); the message says where")  \
	X(TRAIN_USAGE, 2, "usage", "the command line is wrong")                                    \
	X(TRAIN_INVALID_CONFIG, 10, "invalid_config",                                              \
	  "the job spec or the parallel layout cannot run (e.g. world size differs from the "      \
	  "grid)")                                                                                 \
	X(TRAIN_OOM, 11, "out_of_memory",                                                          \
	  "an allocation failed: retry with less memory per device")                               \
	X(TRAIN_COMM, 12, "comm_failure",                                                          \
	  "a collective or a peer failed: a rank or a link is lost")                               \
	X(TRAIN_DATA, 13, "data_error",                                                            \
	  "the token shards are missing, malformed or out of range, or a data path leads "         \
	  "through a symbolic link")                                                               \
	X(TRAIN_NUMERIC, 14, "numerical_failure",                                                  \
	  "too many consecutive steps had a non-finite loss or gradient")                          \
	X(TRAIN_CKPT_CORRUPT, 15, "checkpoint_corrupt",                                            \
	  "no checkpoint to resume from verifies (hash mismatch or truncation)")                   \
	X(TRAIN_STOPPED, 16, "stopped",                                                            \
	  "stopped by SIGTERM or SIGUSR1 after writing a final checkpoint")                        \
	X(TRAIN_ATTEMPT_OVER, 17, "attempt_over",                                                  \
	  "trainyard-worker only: the attempt already started once (Slurm ran its batch job "      \
	  "again); nothing was done")

typedef enum train_exit {
#define X(e, status, name, doc) e = status,
	TRAIN_EXIT_CODES(X)
#undef X
} train_exit;

/* RET: the name of an exit status ("out_of_memory"), or "unknown". */
const char *train_exit_name(int status);

#endif
