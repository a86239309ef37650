/*
 * preempt.c - the preemption rule (preempt.h).
 */
#include "preempt.h"

#include <stdlib.h>
#include <string.h>

const char *preempt_reason_name(preempt_reason r)
{
	switch (r) {
	case PREEMPT_RECLAIM:
		return "reclaim";
	case PREEMPT_PRIORITY:
		return "priority";
	case PREEMPT_NONE:
		break;
	}
	return "";
}

preempt_reason preempt_eligible(const preempt_candidate *c, const admit_job *j,
                                const char *tenant_id, int min_run_s)
{
	if (!c->preemptible || c->preempting || c->taken != PREEMPT_NONE || c->run_s < min_run_s)
		return PREEMPT_NONE;
	if (j->borrowed == 0 && c->borrowed > 0 && c->priority <= j->priority &&
	    strcmp(c->tenant_id, tenant_id) != 0)
		return PREEMPT_RECLAIM;
	if (c->priority < j->priority)
		return PREEMPT_PRIORITY;
	return PREEMPT_NONE;
}

/* preempt.h's order: borrowed first, lowest priority, least unsaved, latest started. */
static int by_rule(const void *pa, const void *pb)
{
	const preempt_candidate *a = *(preempt_candidate *const *)pa;
	const preempt_candidate *b = *(preempt_candidate *const *)pb;
	if ((a->borrowed > 0) != (b->borrowed > 0))
		return a->borrowed > 0 ? -1 : 1;
	if (a->priority != b->priority)
		return a->priority < b->priority ? -1 : 1;
	if (a->unsaved != b->unsaved)
		return a->unsaved < b->unsaved ? -1 : 1;
	if (a->run_s != b->run_s)
		return a->run_s < b->run_s ? -1 : 1;
	return strcmp(a->job_id, b->job_id);
}

/* Give c's room on its nodes back to *room. */
static void free_room(admit_cluster *room, const preempt_candidate *c)
{
	for (int k = 0; k < c->n_nodes; k++) {
		int i = c->node[k];
		if (i < 0 || i >= room->n_nodes || !room->up[i])
			continue;
		room->free_cpus[i] += c->cpus_per_node;
		room->free_gpus[i] += c->gpus_per_node;
	}
}

int preempt_plan(admit_cluster *cluster, const admit_job *j, const char *tenant_id,
                 preempt_candidate *cands, int n, int min_run_s)
{
	preempt_candidate **order = calloc(n > 0 ? (size_t)n : 1, sizeof(*order));
	if (!order)
		return 0;
	int m = 0;
	for (int i = 0; i < n; i++)
		if (preempt_eligible(&cands[i], j, tenant_id, min_run_s) != PREEMPT_NONE)
			order[m++] = &cands[i];
	qsort(order, (size_t)m, sizeof(*order), by_rule);
	admit_cluster room = *cluster;
	int picked = 0;
	bool fits = false;
	for (int k = 0; k < m && !fits; k++) {
		free_room(&room, order[k]);
		picked = k + 1;
		admit_cluster trial = room;
		fits = admit_cluster_take(&trial, j);
	}
	if (!fits) {
		free(order);
		return 0;
	}
	for (int k = 0; k < picked; k++)
		order[k]->taken = preempt_eligible(order[k], j, tenant_id, min_run_s);
	/* the victims' room is j's: the next plan sees only what remains */
	admit_cluster_take(&room, j);
	*cluster = room;
	free(order);
	return picked;
}
