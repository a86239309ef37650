/*
 * ladder.c - the fallback ladder of a job (ladder.h).
 */
#include "ladder.h"

#include <math.h>

#include "plan.h"

int ladder_ranks(const jobspec_parallel *p)
{
	return p->data_parallel * p->tensor_parallel * p->pipeline_parallel;
}

int ladder_auto(const jobspec *s, jobspec_parallel *out, int cap)
{
	/* the shapes only: whether a rung fits in memory, its launch finds out */
	plan_input in;
	plan_input_from_job(s, HUGE_VAL, &in);
	plan_layout from = plan_layout_from_job(&s->parallel);
	plan_config rungs[JOBSPEC_MAX_FALLBACK];
	int n = plan_fallback_ladder(&in, &from, rungs,
	                             cap < JOBSPEC_MAX_FALLBACK ? cap : JOBSPEC_MAX_FALLBACK);
	for (int i = 0; i < n; i++)
		out[i] = (jobspec_parallel){.data_parallel = rungs[i].layout.data_parallel,
		                            .tensor_parallel = rungs[i].layout.tensor_parallel,
		                            .pipeline_parallel = rungs[i].layout.pipeline_parallel,
		                            .zero_stage = rungs[i].layout.zero_stage,
		                            .micro_batch = rungs[i].micro_batch,
		                            .grad_accum = rungs[i].grad_accum};
	return n;
}

int ladder_build(const jobspec *s, jobspec_parallel rungs[LADDER_MAX])
{
	rungs[0] = s->parallel;
	if (s->fallback_auto)
		return 1 + ladder_auto(s, rungs + 1, JOBSPEC_MAX_FALLBACK);
	for (int i = 0; i < s->n_fallback; i++)
		rungs[1 + i] = s->fallback[i];
	return 1 + s->n_fallback;
}

int ladder_pick(const jobspec_parallel *rungs, int n, int from, int slots)
{
	for (int i = from < 0 ? 0 : from; i < n; i++)
		if (ladder_ranks(&rungs[i]) <= slots)
			return i;
	return -1;
}
