/*
 * ladder.h - the layouts a job may run in, largest first: rung 0 is the
 * job's own parallel layout, the rest its fallbacks, each on strictly
 * fewer ranks. After a failed launch the driver moves down to the first
 * rung that fits the slots still healthy.
 *
 * The fallbacks are the spec's fault_tolerance.fallback array as the spec
 * normalised it, or, for "auto", the rule of ladder_auto(). [] gives a
 * ladder of the job's layout alone.
 */
#ifndef TY_LADDER_H
#define TY_LADDER_H

#include <stdbool.h>

#include "jobspec.h"

#define LADDER_MAX (1 + JOBSPEC_MAX_FALLBACK)

/*
 * The "auto" fallbacks of a job: the capacity planner's ladder
 * (lib/job/plan.h plan_fallback_ladder, the rule the API checks at submit),
 * by shape alone: data_parallel shrinks first, by its smallest prime
 * factor so the global batch stays whole, then pipeline_parallel, then
 * tensor_parallel; micro_batch and zero_stage are kept and grad_accum
 * grows. Each rung runs on fewer ranks than the one before. Whether a rung
 * fits in memory is left to its launch (out of memory moves one rung down).
 * OUT: out[0..RET-1]. RET: the number of rungs (0 for a one-rank job), at most cap.
 */
int ladder_auto(const jobspec *s, layout *out, int cap);

/* OUT: rungs[0] the job's layout, then its fallbacks. RET: the rungs, 1..LADDER_MAX. */
int ladder_build(const jobspec *s, layout rungs[LADDER_MAX]);

/*
 * RET: the first rung at or after `from` that runs on at most `slots`
 * ranks and trains on dev (layout_on_device), or -1 when none does.
 */
int ladder_pick(const layout *rungs, int n, int from, int slots, layout_device dev);

#endif
