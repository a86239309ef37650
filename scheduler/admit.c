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

quota_ask admit_ask(const admit_job *j)
{
	return (quota_ask){
	    .devices = j->devices, .gpu = j->gpus_per_node > 0, .no_preempt = j->no_preempt};
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

bool admit_cluster_could_hold(const admit_cluster *c, const admit_job *j)
{
	return quota_cluster_could_hold(c->cpus, c->gpus, c->up, c->n_nodes, j->nodes,
	                                j->cpus_per_node, j->gpus_per_node);
}

bool admit_goes_before(const admit_tenant *a, const admit_tenant *b)
{
	const admit_job *x = &a->jobs[a->next], *y = &b->jobs[b->next];
	if (x->favoured != y->favoured)
		return x->favoured;
	if (x->priority != y->priority)
		return x->priority > y->priority;
	return admit_share_key(a) < admit_share_key(b);
}

/* The unblocked tenant with work left whose next job goes first, or -1. */
static int next_tenant(admit_tenant *ts, int n)
{
	int best = -1;
	for (int i = 0; i < n; i++) {
		admit_tenant *t = &ts[i];
		if (t->blocked || t->next >= t->n_jobs)
			continue;
		if (best < 0 || admit_goes_before(t, &ts[best]))
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
		quota_ask ask = admit_ask(j);
		bool never = false;
		j->borrowed = (int)quota_borrow(&t->limits, &t->use, &ask);
		if (quota_ever_fits(&t->limits, &ask, j->reason, sizeof(j->reason)) != QUOTA_FITS) {
			never = true; /* the quota was lowered below it since it was queued */
			j->wait = ADMIT_WAIT_QUOTA;
		} else if (quota_fits_now(&t->limits, &t->use, &ask, j->reason,
		                          sizeof(j->reason)) != QUOTA_FITS) {
			t->blocked = true;
			j->wait = ADMIT_WAIT_QUOTA;
		} else if (j->borrowed > 0 && cluster->lend_left >= 0 &&
		           j->borrowed > cluster->lend_left) {
			snprintf(
			    j->reason, sizeof(j->reason),
			    "lending: it would borrow %d devices and the cluster lends %d more "
			    "(TRAINYARD_LEND_LIMIT)",
			    j->borrowed, cluster->lend_left);
			t->blocked = true;
			j->wait = ADMIT_WAIT_LENDING;
		} else if (!admit_cluster_take(cluster, j)) {
			never = !admit_cluster_could_hold(cluster, j);
			j->wait = never ? ADMIT_WAIT_NEVER : ADMIT_WAIT_CLUSTER;
			if (never)
				snprintf(j->reason, sizeof(j->reason),
				         "cluster: its up nodes cannot hold %d node(s) with %d "
				         "cpus and %d "
				         "gpus, even empty",
				         j->nodes, j->cpus_per_node, j->gpus_per_node);
			else
				snprintf(j->reason, sizeof(j->reason),
				         "cluster: %d free node(s) with %d cpus and %d gpus are "
				         "not there "
				         "now",
				         j->nodes, j->cpus_per_node, j->gpus_per_node);
			t->blocked = !never;
		} else {
			j->admitted = true;
			j->wait = ADMIT_WAIT_NONE;
			if (cluster->lend_left >= 0)
				cluster->lend_left -= j->borrowed;
			j->reason[0] = '\0';
			quota_take(&t->use, &ask, j->borrowed);
			t->charged += j->devices * ADMIT_CHARGE_HOURS;
			t->next++;
			order[admitted++] = j;
			continue;
		}
		if (never) {
			t->next++; /* it keeps its reason; the jobs behind it go on (admit.h) */
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
