/*
 * ladder.c - the fallback ladder of a job (ladder.h).
 */
#include "ladder.h"

#include <math.h>

#include "plan.h"

int ladder_auto(const jobspec *s, layout *out, int cap)
{
	/* the shapes only: whether a rung fits in memory, its launch finds out */
	plan_input in;
	plan_input_from_job(s, HUGE_VAL, &in);
	plan_config rungs[JOBSPEC_MAX_FALLBACK];
	int n = plan_fallback_ladder(&in, &s->parallel, rungs,
	                             cap < JOBSPEC_MAX_FALLBACK ? cap : JOBSPEC_MAX_FALLBACK);
	for (int i = 0; i < n; i++)
		out[i] = rungs[i].layout;
	return n;
}

int ladder_build(const jobspec *s, layout rungs[LADDER_MAX])
{
	rungs[0] = s->parallel;
	if (s->fallback_auto)
		return 1 + ladder_auto(s, rungs + 1, JOBSPEC_MAX_FALLBACK);
	for (int i = 0; i < s->n_fallback; i++)
		rungs[1 + i] = s->fallback[i];
	return 1 + s->n_fallback;
}

int ladder_pick(const layout *rungs, int n, int from, int slots, layout_device dev)
{
	for (int i = from < 0 ? 0 : from; i < n; i++)
		if (layout_ranks(&rungs[i]) <= slots && layout_on_device(&rungs[i], dev, NULL, 0))
			return i;
	return -1;
}
