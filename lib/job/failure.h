/*
 * failure.h - the classes of an attempt's end (failure.def): the exit
 * statuses of trainyard-train and trainyard-worker, the classes the worker
 * runtime sees in a launch, and those Slurm and the scheduler give, each
 * with what the runtime and the scheduler do about it.
 */
#ifndef TY_FAILURE_H
#define TY_FAILURE_H

#include <stdbool.h>

/* The scheduler's next attempt after an attempt ended in a class. */
typedef enum failure_retry {
	FAILURE_RETRY_NEVER,       /* retrying cannot help: the job fails */
	FAILURE_RETRY_SAME,        /* the same configuration */
	FAILURE_RETRY_FEWER_NODES, /* one node fewer (the ladder's smallest rung must fit) */
	FAILURE_RETRY_RECOMPUTE,   /* training.recompute=full, once */
	FAILURE_RETRY_REQUEUE,     /* back to the queue at once, not counted as a restart */
} failure_retry;

typedef enum failure_class {
	FAILURE_NONE = -1,
#define EXIT(e, name, failure, status, fallback, retry, doc)    FAILURE_##e,
#define CLASS(e, name, failure, exits_as, fallback, retry, doc) FAILURE_##e,
#include "failure.def"
#undef EXIT
#undef CLASS
	FAILURE__COUNT
} failure_class;

/* trainyard-train's exit statuses (and trainyard-worker's), one per EXIT row. */
typedef enum train_exit {
#define EXIT(e, name, failure, status, fallback, retry, doc) TRAIN_##e = status,
#define CLASS(e, name, failure, exits_as, fallback, retry, doc)
#include "failure.def"
#undef EXIT
#undef CLASS
} train_exit;

/* RET: the class's name ("out_of_memory"), or "unknown". */
const char *failure_name(failure_class f);
/* RET: when it happens (failure.def's text), or "". */
const char *failure_doc(failure_class f);
/* RET: the class named name (exactly, failure.def's name), or FAILURE_NONE. */
failure_class failure_by_name(const char *name);
/*
 * RET: the class of an attempt that failed with the free-text reason:
 * the class it names (failure_by_name), else FAILURE_FAILED; never
 * FAILURE_NONE, so what is stored is always a class of failure.def.
 */
failure_class failure_of_reason(const char *reason);
/* RET: whether an attempt ending in it failed (not ok, not cancelled); FAILURE_NONE: false. */
bool failure_is_failure(failure_class f);
/* RET: the exit status that stands for it (an EXIT row's own, a CLASS row's exits_as), or -1. */
int failure_status(failure_class f);
/* RET: whether it is an EXIT row: a program exits with its own status. */
bool failure_is_exit(failure_class f);
/* RET: whether the worker runtime falls back to a smaller layout after it. */
bool failure_falls_back(failure_class f);
/* RET: what the scheduler does next; an unknown class (FAILURE_NONE) retries the same. */
failure_retry failure_retry_rule(failure_class f);
/* RET: the name the scheduler's README gives the rule ("one node fewer"). */
const char *failure_retry_text(failure_retry r);

/* RET: the name of a trainyard-train exit status ("out_of_memory"), or "unknown". */
const char *train_exit_name(int status);

#endif
