/*
 * goodput.c - a job's wall time by category (goodput.h).
 */
#include "goodput.h"

#include <string.h>

static const char *const cat_names[GP__COUNT] = {
    [GP_GOODPUT] = "goodput",     [GP_QUEUEING] = "queueing",     [GP_STARTUP] = "startup",
    [GP_DATA_WAIT] = "data_wait", [GP_CHECKPOINT] = "checkpoint", [GP_LOST] = "lost",
    [GP_RECOVERY] = "recovery",   [GP_FALLBACK] = "fallback",     [GP_OVERHEAD] = "overhead",
    [GP_PREEMPTED] = "preempted",
};

const char *goodput_cat_name(goodput_cat c)
{
	return (unsigned)c < GP__COUNT ? cat_names[c] : "overhead";
}

typedef struct cursor {
	double at, end;
	goodput_result *out;
} cursor;

/* Give [cursor, t] (cut to the job's end) to category c; the cursor never goes back. */
static void advance(cursor *cu, double t, goodput_cat c)
{
	if (t > cu->end)
		t = cu->end;
	if (t > cu->at) {
		cu->out->seconds[c] += t - cu->at;
		cu->at = t;
	}
}

/* The highest step a later attempt resumed from: its first step - 1 (0: none began). */
static int resumed_from(const goodput_job *job, size_t after)
{
	for (size_t k = after + 1; k < job->n_attempts; k++)
		if (job->attempts[k].n_steps)
			return job->attempts[k].steps[0].step - 1;
	return -1; /* no later attempt reported a step */
}

/* The last step of a saved in a checkpoint (0: none). */
static int last_saved(const goodput_attempt *a)
{
	int s = 0;
	for (size_t i = 0; i < a->n_steps; i++)
		if (a->steps[i].saved && a->steps[i].step > s)
			s = a->steps[i].step;
	return s;
}

/* Whether the worker fell back between t0 and t1. */
static bool fell_back(const goodput_attempt *a, double t0, double t1)
{
	for (size_t i = 0; i < a->n_fallbacks; i++)
		if (a->fallbacks[i] > t0 && a->fallbacks[i] <= t1)
			return true;
	return false;
}

void goodput_compute(const goodput_job *job, goodput_result *out)
{
	memset(out, 0, sizeof(*out));
	out->total = job->end > job->submitted ? job->end - job->submitted : 0;
	cursor cu = {.at = job->submitted, .end = job->end, .out = out};
	/* after a failed attempt: recovery, or preempted when it was stopped for another */
	bool after_failure = false;
	goodput_cat redo = GP_RECOVERY;
	for (size_t k = 0; k < job->n_attempts; k++) {
		const goodput_attempt *a = &job->attempts[k];
		goodput_cat wait = after_failure ? redo : k == 0 ? GP_QUEUEING : GP_OVERHEAD;
		if (!a->started) {
			/* dispatched, never run: its whole span is more waiting */
			advance(&cu, a->ended ? a->ended : job->end, wait);
			if (a->failed && !after_failure)
				redo = a->preempted ? GP_PREEMPTED : GP_RECOVERY;
			after_failure = after_failure || a->failed;
			continue;
		}
		advance(&cu, a->started, wait);
		/* how far this attempt's progress counts */
		int keep = resumed_from(job, k);
		bool last = keep < 0;
		if (last)
			keep = job->failed  ? last_saved(a)
			       : a->n_steps ? a->steps[a->n_steps - 1].step
			                    : 0;
		const goodput_step *prev = NULL;
		for (size_t i = 0; i < a->n_steps; i++) {
			const goodput_step *s = &a->steps[i];
			double begin = s->time - s->step_s;
			goodput_cat gap = !prev ? (after_failure ? redo : GP_STARTUP)
			                  : fell_back(a, prev->time, begin) ? GP_FALLBACK
			                  : prev->saved                     ? GP_CHECKPOINT
			                                                    : GP_OVERHEAD;
			advance(&cu, begin, gap);
			if (s->step <= keep) {
				advance(&cu, cu.at + s->data_wait, GP_DATA_WAIT);
				advance(&cu, s->time, GP_GOODPUT);
				out->steps_kept++;
			} else {
				advance(&cu, s->time, GP_LOST);
				out->steps_lost++;
			}
			prev = s;
		}
		double end = a->ended ? a->ended : job->end;
		goodput_cat ends_as = a->preempted ? GP_PREEMPTED : GP_RECOVERY;
		goodput_cat tail = a->failed             ? ends_as
		                   : prev && prev->saved ? GP_CHECKPOINT
		                   : !prev               ? (after_failure ? redo : GP_STARTUP)
		                                         : GP_OVERHEAD;
		advance(&cu, end, tail);
		after_failure = a->failed;
		redo = ends_as;
	}
	advance(&cu, job->end, job->n_attempts ? GP_OVERHEAD : GP_QUEUEING);
}
