/*
 * goodput.h - where a job's wall time went: goodput (time in training
 * steps whose progress was kept) and badput by cause, adding up to the
 * time since submission.
 *
 * The job's life is cut into consecutive pieces, each given one category,
 * walking a cursor from submission to the end (or now):
 *   queueing     from submission to the first attempt's start (Slurm's
 *                pending time included);
 *   startup      from the first attempt's start to its first step;
 *   recovery     after a failed attempt: the rest of that attempt past its
 *                last step, the wait for the next one (back-off, queue,
 *                Slurm) and that attempt's start up to its first step
 *                (launch, checkpoint restore);
 *   fallback     a gap between two steps of one attempt in which the
 *                worker fell back to a smaller layout (the failed launch's
 *                unsaved steps included: their reports were replaced);
 *   checkpoint   a gap between two steps after a step that was saved, and
 *                the end of an attempt whose last step was saved;
 *   data_wait    the part of a kept step spent waiting for its batch;
 *   goodput      the rest of a kept step;
 *   preempted    the same as recovery, after an attempt the scheduler
 *                preempted for another job (its class preempted): its
 *                rest, the wait in the queue and the next one's start;
 *   lost         every step whose progress was thrown away: past the
 *                checkpoint the next attempt resumed from, or past the
 *                last checkpoint of a job that failed;
 *   overhead     whatever else lies between steps, and after the last
 *                attempt (metrics, logging, the end's bookkeeping).
 * A step's interval is [time - step_s, time], time being when the trainer
 * reported it. Intervals that overlap what came before (clocks of other
 * machines) are cut at the cursor, so the pieces never overlap and always
 * add up to the whole.
 */
#ifndef TY_GOODPUT_H
#define TY_GOODPUT_H

#include <stdbool.h>
#include <stddef.h>

typedef enum goodput_cat {
	GP_GOODPUT = 0,
	GP_QUEUEING,
	GP_STARTUP,
	GP_DATA_WAIT,
	GP_CHECKPOINT,
	GP_LOST,
	GP_RECOVERY,
	GP_FALLBACK,
	GP_OVERHEAD,
	GP_PREEMPTED,
	GP__COUNT
} goodput_cat;

/* RET: the category's name in the API ("goodput", "queueing", ...). */
const char *goodput_cat_name(goodput_cat c);

/* One reported step of an attempt. Times are seconds since the epoch. */
typedef struct goodput_step {
	int step;
	double time;      /* when it ended */
	double step_s;    /* how long it took */
	double data_wait; /* seconds of it spent waiting for data */
	bool saved;       /* a checkpoint of this step was written by its attempt */
} goodput_step;

typedef struct goodput_attempt {
	double started;      /* 0: it never started (Slurm never ran it) */
	double ended;        /* 0: it runs still */
	bool failed;         /* it ended with a failure (retried or not) */
	bool preempted;      /* of them, preempted for another job */
	goodput_step *steps; /* in report order */
	size_t n_steps;
	const double *fallbacks; /* times of the worker's fallbacks in it */
	size_t n_fallbacks;
} goodput_attempt;

typedef struct goodput_job {
	double submitted;
	double end;                /* when the job reached its final state, or now */
	bool failed;               /* the job ended failed: progress past its last save is lost */
	goodput_attempt *attempts; /* by number */
	size_t n_attempts;
} goodput_job;

typedef struct goodput_result {
	double seconds[GP__COUNT];
	double total; /* end - submitted: the sum of seconds[] */
	int steps_kept, steps_lost;
} goodput_result;

/* Cut the job's wall time into the categories. */
void goodput_compute(const goodput_job *job, goodput_result *out);

#endif
