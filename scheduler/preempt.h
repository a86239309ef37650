/*
 * preempt.h - which running jobs a waiting job may preempt, and which it
 * does: the rule, as pure logic over what the cycle loaded (the cycle's
 * side, asking and following, is preemptions.c).
 *
 * A job that waits only for the cluster's room (ADMIT_WAIT_CLUSTER,
 * admit.h) may preempt a running job (a candidate) when
 *   - reclaim: its devices are all within its tenant's guarantee (it
 *     borrows none) and the candidate, of another tenant and of no higher
 *     priority, borrowed devices;
 *   - priority: the candidate's priority (its class's value) is lower.
 * Never a candidate: a job that is not preemptible, one already being
 * preempted, one whose attempt has run less than TRAINYARD_PREEMPT_MIN_RUN_S
 * (so that no job is preempted in a loop), and a job of its own tenant by
 * reclaim.
 *
 * The victims are taken in this order, until the nodes they free with what
 * is free already hold the waiting job: candidates that borrowed first,
 * then the lowest priority, then the least progress lost (the fewest
 * steps since the job's last checkpoint), then the latest started. If all
 * of them would not make room, none is preempted.
 *
 * No loop: every preemption makes room for a job of at least the victim's
 * priority (strictly higher, or equal by reclaim), and a job admitted
 * within its guarantee borrowed nothing, so it is never reclaimed. Two
 * jobs therefore never preempt each other in turn, and no longer cycle
 * closes either: along one, priorities never fall, so all its steps
 * would be reclaims at one priority, and the first job of it, within its
 * guarantee, cannot be reclaimed at the end. What remains, a borrowing
 * job lent room again and taken back again, the minimum run time spaces.
 */
#ifndef TY_SCHED_PREEMPT_H
#define TY_SCHED_PREEMPT_H

#include <stdbool.h>

#include "admit.h"

typedef enum preempt_reason {
	PREEMPT_NONE = 0,
	PREEMPT_RECLAIM,  /* the waiting tenant takes its guarantee back */
	PREEMPT_PRIORITY, /* a higher class waits */
} preempt_reason;

/* RET: "reclaim", "priority" (the preemptions table's words), or "". */
const char *preempt_reason_name(preempt_reason r);

typedef struct preempt_candidate {
	char job_id[37], attempt_id[37], tenant_id[37];
	int devices, borrowed, priority;
	int cpus_per_node, gpus_per_node;
	int n_nodes;
	int node[ADMIT_MAX_NODES]; /* its nodes, as indexes of the cycle's admit_cluster */
	bool preemptible;
	bool preempting; /* being preempted already */
	double run_s;    /* since its attempt started */
	int unsaved;     /* steps since the job's last checkpoint */
	/* out */
	preempt_reason taken; /* PREEMPT_NONE when not a victim */
} preempt_candidate;

/* Whether c may be preempted for job j of tenant tenant_id, and why. */
preempt_reason preempt_eligible(const preempt_candidate *c, const admit_job *j,
                                const char *tenant_id, int min_run_s);

/*
 * Pick the victims for job j of tenant tenant_id among cands[0..n-1] (those
 * taken before, for another job, are passed over) by the rule above, on
 * the room *cluster has free. When they make room, marks them (taken) and
 * takes j's room from *cluster, so that a plan for the next waiting job
 * counts only what is left. RET: the victims marked; 0 when none would do.
 */
int preempt_plan(admit_cluster *cluster, const admit_job *j, const char *tenant_id,
                 preempt_candidate *cands, int n, int min_run_s);

#endif
