/*
 * retry.c - the retry policy (retry.h; each class's rule is lib/job/failure.def's).
 */
#include "retry.h"

#include <stdio.h>
#include <string.h>

#include "failure.h"

bool retry_class_transient(const char *c)
{
	return c && c[0] && failure_retry_rule(failure_by_name(c)) != FAILURE_RETRY_NEVER;
}

static int backoff(int base, int k)
{
	long s = base;
	for (int i = 1; i < k && s < RETRY_BACKOFF_MAX_S; i++)
		s *= 2;
	return s > RETRY_BACKOFF_MAX_S ? RETRY_BACKOFF_MAX_S : (int)s;
}

retry_decision retry_decide(const retry_input *in)
{
	retry_decision d = {.retry = false, .nodes = in->nodes};
	const char *c = in->failure_class ? in->failure_class : "";
	if (!retry_class_transient(c)) {
		snprintf(d.why, sizeof(d.why), "%s: retrying cannot help",
		         c[0] ? c : "unknown failure");
		return d;
	}
	failure_retry rule = failure_retry_rule(failure_by_name(c));
	if (rule == FAILURE_RETRY_REQUEUE) {
		snprintf(d.why, sizeof(d.why), "%s: requeued, resuming from its last checkpoint",
		         c);
		d.retry = true;
		return d;
	}
	int restarts = in->attempts - 1 - in->requeues;
	if (restarts >= in->max_restarts) {
		snprintf(d.why, sizeof(d.why), "%s: no restarts left (%d of %d used)", c, restarts,
		         in->max_restarts);
		return d;
	}
	if (rule == FAILURE_RETRY_RECOMPUTE && in->own_program)
		rule = FAILURE_RETRY_SAME; /* its memory is the program's own business */
	if (rule == FAILURE_RETRY_FEWER_NODES) {
		int fewer = in->nodes - 1;
		if (fewer < 1 || (long)fewer * in->ranks_per_node < in->min_rung_ranks) {
			snprintf(d.why, sizeof(d.why),
			         "%s: no configuration of the job fits on %d node(s) of %d ranks",
			         c, fewer, in->ranks_per_node);
			return d;
		}
		d.nodes = fewer;
		snprintf(d.why, sizeof(d.why), "%s: retry on %d node(s) instead of %d", c, fewer,
		         in->nodes);
	} else if (rule == FAILURE_RETRY_RECOMPUTE) {
		if (in->recompute_full) {
			snprintf(d.why, sizeof(d.why),
			         "%s: already ran with full recomputation and every rung", c);
			return d;
		}
		d.set_recompute_full = true;
		snprintf(d.why, sizeof(d.why), "%s: retry with training.recompute=full", c);
	} else {
		snprintf(d.why, sizeof(d.why), "%s: retry in the same configuration", c);
	}
	d.retry = true;
	d.backoff_s = backoff(in->backoff_base_s, restarts + 1);
	if (d.nodes < in->nodes && d.backoff_s < in->node_grace_s)
		d.backoff_s = in->node_grace_s;
	return d;
}
