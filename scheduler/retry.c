/*
 * retry.c - the retry policy (see retry.h for the table).
 */
#include "retry.h"

#include <stdio.h>
#include <string.h>

static const char *const permanent[] = {
    "invalid_config", "data_error", "numerical_failure", "checkpoint_corrupt", "cancelled", NULL,
};

static bool in_list(const char *s, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

bool retry_class_transient(const char *c)
{
	return c && c[0] && !in_list(c, permanent);
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
	int restarts = in->attempts - 1;
	if (restarts >= in->max_restarts) {
		snprintf(d.why, sizeof(d.why), "%s: no restarts left (%d of %d used)", c, restarts,
		         in->max_restarts);
		return d;
	}
	if (strcmp(c, "node_failure") == 0 || strcmp(c, "rank_lost") == 0) {
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
	} else if (strcmp(c, "out_of_memory") == 0) {
		if (in->recompute_full) {
			snprintf(
			    d.why, sizeof(d.why),
			    "out_of_memory: already ran with full recomputation and every rung");
			return d;
		}
		d.set_recompute_full = true;
		snprintf(d.why, sizeof(d.why), "out_of_memory: retry with training.recompute=full");
	} else {
		snprintf(d.why, sizeof(d.why), "%s: retry in the same configuration", c);
	}
	d.retry = true;
	d.backoff_s = backoff(in->backoff_base_s, restarts + 1);
	if (d.nodes < in->nodes && d.backoff_s < in->node_grace_s)
		d.backoff_s = in->node_grace_s;
	return d;
}
