/*
 * admit.c - fair-share admission of one scheduling cycle (see admit.h).
 */
#include "admit.h"

#include <stdio.h>
#include <string.h>

double admit_share_key(const admit_tenant *t)
{
	return (t->usage_hours + t->charged) / t->weight;
}

/* Why job j of tenant t may not start now by its quota, or "" (written to why). */
static bool quota_allows(const admit_tenant *t, const admit_job *j, char *why, size_t n)
{
	if (t->running_jobs >= t->max_running_jobs) {
		snprintf(why, n, "quota: max_running_jobs (%d running of %d)", t->running_jobs,
		         t->max_running_jobs);
		return false;
	}
	if (t->running_devices + j->devices > t->max_gpus) {
		snprintf(why, n, "quota: max_gpus (%d in use + %d asked > %d)", t->running_devices,
		         j->devices, t->max_gpus);
		return false;
	}
	if (t->month_hours >= t->budget_hours) {
		snprintf(why, n, "quota: gpu_hours_per_month spent (%.1f of %.0f)", t->month_hours,
		         t->budget_hours);
		return false;
	}
	return true;
}

bool admit_cluster_take(admit_cluster *c, const admit_job *j)
{
	int pick[ADMIT_MAX_NODES], n = 0;
	for (int i = 0; i < c->n_nodes && n < j->nodes; i++)
		if (c->free_cpus[i] >= j->cpus_per_node && c->free_gpus[i] >= j->gpus_per_node)
			pick[n++] = i;
	if (n < j->nodes)
		return false;
	for (int k = 0; k < n; k++) {
		c->free_cpus[pick[k]] -= j->cpus_per_node;
		c->free_gpus[pick[k]] -= j->gpus_per_node;
	}
	return true;
}

/* The unblocked tenant with work left and the smallest key, or -1. */
static int next_tenant(admit_tenant *ts, int n)
{
	int best = -1;
	for (int i = 0; i < n; i++) {
		admit_tenant *t = &ts[i];
		if (t->blocked || t->next >= t->n_jobs)
			continue;
		if (best < 0 || admit_share_key(t) < admit_share_key(&ts[best]))
			best = i;
	}
	return best;
}

/* Ranks by key at the start of the cycle; ties keep the load order. */
static void rank_tenants(admit_tenant *ts, int n)
{
	for (int i = 0; i < n; i++) {
		int r = 1;
		for (int k = 0; k < n; k++)
			if (admit_share_key(&ts[k]) < admit_share_key(&ts[i]) ||
			    (admit_share_key(&ts[k]) == admit_share_key(&ts[i]) && k < i))
				r++;
		ts[i].rank = r;
	}
}

int admit_cycle(admit_tenant *ts, int n, admit_cluster *cluster, admit_job **order, int cap)
{
	for (int i = 0; i < n; i++) {
		admit_tenant *t = &ts[i];
		t->next = 0;
		t->blocked = t->hold[0] != '\0';
		t->charged = 0;
		snprintf(t->reason, sizeof(t->reason), "%s", t->hold);
		if (t->blocked && t->n_jobs > 0)
			snprintf(t->jobs[0].reason, sizeof(t->jobs[0].reason), "%s", t->hold);
	}
	rank_tenants(ts, n);
	int admitted = 0;
	int i;
	while (admitted < cap && (i = next_tenant(ts, n)) >= 0) {
		admit_tenant *t = &ts[i];
		admit_job *j = &t->jobs[t->next];
		if (!quota_allows(t, j, j->reason, sizeof(j->reason))) {
			t->blocked = true;
		} else if (!admit_cluster_take(cluster, j)) {
			snprintf(
			    j->reason, sizeof(j->reason),
			    "cluster: %d free node(s) with %d cpus and %d gpus are not there now",
			    j->nodes, j->cpus_per_node, j->gpus_per_node);
			t->blocked = true;
		} else {
			j->admitted = true;
			j->reason[0] = '\0';
			t->running_devices += j->devices;
			t->running_jobs++;
			t->charged += j->devices * ADMIT_CHARGE_HOURS;
			t->next++;
			order[admitted++] = j;
			continue;
		}
		snprintf(t->reason, sizeof(t->reason), "%s", j->reason);
	}
	/* the cap ended the cycle: whoever still has work waits for the next one */
	for (int k = 0; admitted >= cap && k < n; k++) {
		admit_tenant *t = &ts[k];
		if (t->blocked || t->next >= t->n_jobs)
			continue;
		snprintf(t->reason, sizeof(t->reason),
		         "this cycle admitted its most jobs (%d); the next one goes on", cap);
		snprintf(t->jobs[t->next].reason, sizeof(t->jobs[0].reason), "%s", t->reason);
	}
	return admitted;
}
