/*
 * test_sched_admit.c - one admission cycle against the rules of admit.h:
 * weighted fair share between tenants, the up-front charge that
 * interleaves them, each quota with its reason, strict order within a
 * tenant, first fit of multi-node jobs on the cluster's free room, the
 * rank at the cycle's start and the cap; a tenant held (no Unix user to
 * run as) admits nothing and its first job says why; priority before
 * fair share, and devices borrowed beyond a tenant's guarantee.
 *
 * Every expected order is worked out by hand from the share key
 * (usage + charged) / weight in the comment beside it.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "admit.h"
#include "unit.h"

#define NO_LIMIT 1000000

/* A tenant with room in every quota, no usage and weight 1. */
static void tenant_init(admit_tenant *t, const char *name, admit_job *jobs, int n_jobs)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->id, sizeof(t->id), "id-%s", name);
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->limits = (quota_limits){NO_LIMIT, NO_LIMIT, NO_LIMIT, 0};
	t->weight = 1.0;
	t->jobs = jobs;
	t->n_jobs = n_jobs;
}

static void job_init(admit_job *j, const char *id, int devices, int nodes, int cpus_per_node,
                     int gpus_per_node)
{
	memset(j, 0, sizeof(*j));
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->devices = devices;
	j->nodes = nodes;
	j->cpus_per_node = cpus_per_node;
	j->gpus_per_node = gpus_per_node;
}

/* A one-GPU, one-node job. */
static void job_small(admit_job *j, const char *id)
{
	job_init(j, id, 1, 1, 4, 1);
}

static void cluster_init(admit_cluster *c, int n_nodes, int cpus, int gpus)
{
	memset(c, 0, sizeof(*c));
	c->n_nodes = n_nodes;
	for (int i = 0; i < n_nodes; i++) {
		c->up[i] = true;
		c->cpus[i] = c->free_cpus[i] = cpus;
		c->gpus[i] = c->free_gpus[i] = gpus;
	}
}

/* order[0..n-1] names exactly the ids of want, in that order. */
static void assert_order(admit_job **order, int n, const char *const *want, int n_want)
{
	ck_assert_int_eq(n, n_want);
	for (int i = 0; i < n; i++)
		ck_assert_msg(strcmp(order[i]->id, want[i]) == 0, "order[%d] is %s, expected %s", i,
		              order[i]->id, want[i]);
}

/* ------------------------------------------------------------ fair share */

/*
 * Equal weights: a has 10 hours of decayed usage, b has 5. Keys a = 10,
 * b = 5: b goes first although a was loaded first. Ranks b 1, a 2.
 */
START_TEST(more_usage_goes_second)
{
	admit_job ja, jb;
	job_small(&ja, "a1");
	job_small(&jb, "b1");
	admit_tenant t[2];
	tenant_init(&t[0], "a", &ja, 1);
	tenant_init(&t[1], "b", &jb, 1);
	t[0].usage_hours = 10;
	t[1].usage_hours = 5;
	admit_cluster c;
	cluster_init(&c, 1, 64, 8);
	admit_job *order[4];
	int n = admit_cycle(t, 2, &c, order, 4);
	static const char *const want[] = {"b1", "a1"};
	assert_order(order, n, want, 2);
	ck_assert_int_eq(t[1].rank, 1);
	ck_assert_int_eq(t[0].rank, 2);
	ck_assert(ja.admitted && jb.admitted);
}
END_TEST

/*
 * Weights divide the usage: a has 10 hours at weight 4 (key 2.5), b has 5
 * at weight 1 (key 5). a goes first though it used more.
 */
START_TEST(weight_divides_usage)
{
	admit_job ja, jb;
	job_small(&ja, "a1");
	job_small(&jb, "b1");
	admit_tenant t[2];
	tenant_init(&t[0], "a", &ja, 1);
	tenant_init(&t[1], "b", &jb, 1);
	t[0].usage_hours = 10;
	t[0].weight = 4;
	t[1].usage_hours = 5;
	t[1].weight = 1;
	ck_assert_double_eq_tol(admit_share_key(&t[0]), 2.5, 1e-12);
	ck_assert_double_eq_tol(admit_share_key(&t[1]), 5.0, 1e-12);
	admit_cluster c;
	cluster_init(&c, 1, 64, 8);
	admit_job *order[4];
	int n = admit_cycle(t, 2, &c, order, 4);
	static const char *const want[] = {"a1", "b1"};
	assert_order(order, n, want, 2);
	ck_assert_int_eq(t[0].rank, 1);
	ck_assert_int_eq(t[1].rank, 2);

	/* the same usage with the weights swapped: keys a 10, b 1.25: b first */
	job_small(&ja, "a1");
	job_small(&jb, "b1");
	t[0].weight = 1;
	t[1].weight = 4;
	t[0].use.running_jobs = t[1].use.running_jobs = 0;
	t[0].use.devices = t[1].use.devices = 0;
	cluster_init(&c, 1, 64, 8);
	n = admit_cycle(t, 2, &c, order, 4);
	static const char *const swapped[] = {"b1", "a1"};
	assert_order(order, n, swapped, 2);
}
END_TEST

/*
 * The up-front charge, devices x ADMIT_CHARGE_HOURS (1.0), interleaves.
 * a: usage 0, three 2-GPU jobs; b: usage 1.5, three 1-GPU jobs; weight 1.
 *   a 0   < b 1.5  -> a1, a = 0 + 2 = 2
 *   b 1.5 < a 2    -> b1, b = 2.5
 *   a 2   < b 2.5  -> a2, a = 4
 *   b 2.5 < a 4    -> b2, b = 3.5
 *   b 3.5 < a 4    -> b3, b = 4.5 (b has no more jobs)
 *   a 4            -> a3
 * Without the charge a would take all three first.
 */
START_TEST(charge_interleaves_tenants)
{
	admit_job ja[3], jb[3];
	job_init(&ja[0], "a1", 2, 1, 4, 2);
	job_init(&ja[1], "a2", 2, 1, 4, 2);
	job_init(&ja[2], "a3", 2, 1, 4, 2);
	job_small(&jb[0], "b1");
	job_small(&jb[1], "b2");
	job_small(&jb[2], "b3");
	admit_tenant t[2];
	tenant_init(&t[0], "a", ja, 3);
	tenant_init(&t[1], "b", jb, 3);
	t[1].usage_hours = 1.5;
	admit_cluster c;
	cluster_init(&c, 2, 64, 8);
	admit_job *order[8];
	int n = admit_cycle(t, 2, &c, order, 8);
	static const char *const want[] = {"a1", "b1", "a2", "b2", "b3", "a3"};
	assert_order(order, n, want, 6);
	/*
	 * 9 GPUs of 16 taken. First fit: a1 b1 a2 b2 b3 leave node 0 with
	 * 8 - 2 - 1 - 2 - 1 - 1 = 1, too few for a3's 2, which goes to node 1.
	 */
	ck_assert_int_eq(c.free_gpus[0], 1);
	ck_assert_int_eq(c.free_gpus[1], 6);
}
END_TEST

/* ------------------------------------------------------------ quotas */

/*
 * max_gpus 8 with 4 running: a 4-GPU job fits (4 + 4 = 8 is not above 8),
 * then a 1-GPU job would make 9 > 8 and waits with the quota named.
 */
START_TEST(max_gpus_blocks_with_reason)
{
	admit_job j[2];
	job_init(&j[0], "a1", 4, 1, 4, 4);
	job_small(&j[1], "a2");
	admit_tenant t;
	tenant_init(&t, "a", j, 2);
	t.limits.max_gpus = 8;
	t.use.devices = 4;
	t.use.running_jobs = 1;
	admit_cluster c;
	cluster_init(&c, 2, 64, 8);
	admit_job *order[4];
	int n = admit_cycle(&t, 1, &c, order, 4);
	ck_assert_int_eq(n, 1);
	ck_assert_ptr_eq(order[0], &j[0]);
	ck_assert(j[0].admitted);
	ck_assert_str_eq(j[0].reason, "");
	ck_assert(!j[1].admitted);
	ck_assert_msg(strstr(j[1].reason, "max_gpus"), "reason \"%s\"", j[1].reason);
	ck_assert_msg(strstr(t.reason, "max_gpus"), "tenant reason \"%s\"", t.reason);
}
END_TEST

/* A quota alone keeps a job out, with the cluster empty: one job asking 9 of max 8. */
START_TEST(max_gpus_blocks_a_single_job)
{
	admit_job j;
	job_init(&j, "a1", 9, 2, 4, 8);
	admit_tenant t;
	tenant_init(&t, "a", &j, 1);
	t.limits.max_gpus = 8;
	admit_cluster c;
	cluster_init(&c, 4, 64, 8);
	admit_job *order[2];
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 0);
	ck_assert(!j.admitted);
	ck_assert_msg(strstr(j.reason, "max_gpus"), "reason \"%s\"", j.reason);
	/* nothing taken from the cluster */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(c.free_gpus[i], 8);
}
END_TEST

/*
 * max_running_jobs 2 with 1 running: the first job starts (1 < 2), the
 * second would be the third running and waits.
 */
START_TEST(max_running_jobs_blocks_with_reason)
{
	admit_job j[2];
	job_small(&j[0], "a1");
	job_small(&j[1], "a2");
	admit_tenant t;
	tenant_init(&t, "a", j, 2);
	t.limits.max_running_jobs = 2;
	t.use.running_jobs = 1;
	t.use.devices = 1;
	admit_cluster c;
	cluster_init(&c, 1, 64, 8);
	admit_job *order[4];
	int n = admit_cycle(&t, 1, &c, order, 4);
	ck_assert_int_eq(n, 1);
	ck_assert(j[0].admitted);
	ck_assert(!j[1].admitted);
	ck_assert_msg(strstr(j[1].reason, "max_running_jobs"), "reason \"%s\"", j[1].reason);
	ck_assert_msg(strstr(t.reason, "max_running_jobs"), "tenant reason \"%s\"", t.reason);
}
END_TEST

/* A month budget is spent when month_hours >= budget_hours: equal blocks. */
START_TEST(month_budget_spent_blocks_with_reason)
{
	admit_job j;
	job_small(&j, "a1");
	admit_tenant t;
	tenant_init(&t, "a", &j, 1);
	t.limits.gpu_hours_per_month = 100;
	t.use.month_gpu_hours = 100;
	admit_cluster c;
	cluster_init(&c, 1, 64, 8);
	admit_job *order[2];
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 0);
	ck_assert(!j.admitted);
	ck_assert_msg(strstr(j.reason, "gpu_hours_per_month"), "reason \"%s\"", j.reason);
	ck_assert_msg(strstr(t.reason, "gpu_hours_per_month"), "tenant reason \"%s\"", t.reason);
	ck_assert_int_eq(c.free_gpus[0], 8);

	/* just below the budget it starts */
	job_small(&j, "a1");
	t.use.month_gpu_hours = 99.9;
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 1);
	ck_assert(j.admitted);
	ck_assert_str_eq(t.reason, "");
}
END_TEST

/*
 * Strict order within a tenant. a (key 0) has a 16-GPU job that its
 * max_gpus 20 cannot take while 8 are in use, then a 1-GPU job; b (key 5)
 * has a 1-GPU job. a's head job waits and a admits nothing more, the small
 * a2 is not reached; b still takes free room: order [b1].
 */
START_TEST(blocked_head_keeps_tenant_order)
{
	admit_job ja[2], jb;
	job_init(&ja[0], "a1", 16, 2, 4, 8);
	job_small(&ja[1], "a2");
	job_small(&jb, "b1");
	admit_tenant t[2];
	tenant_init(&t[0], "a", ja, 2);
	tenant_init(&t[1], "b", &jb, 1);
	t[0].limits.max_gpus = 20;
	t[0].use.devices = 8;
	t[0].use.running_jobs = 1;
	t[1].usage_hours = 5;
	admit_cluster c;
	cluster_init(&c, 4, 64, 8);
	admit_job *order[4];
	int n = admit_cycle(t, 2, &c, order, 4);
	static const char *const want[] = {"b1"};
	assert_order(order, n, want, 1);
	ck_assert(!ja[0].admitted);
	ck_assert(!ja[1].admitted);
	ck_assert_msg(strstr(ja[0].reason, "max_gpus"), "reason \"%s\"", ja[0].reason);
	ck_assert_str_eq(ja[1].reason, ""); /* not reached */
	ck_assert_msg(strstr(t[0].reason, "max_gpus"), "tenant reason \"%s\"", t[0].reason);
	ck_assert_str_eq(t[1].reason, "");
}
END_TEST

/*
 * A held tenant (no Unix user of its own, docs/identity.md): a (key 0)
 * would go first, but it is held; nothing of it is admitted, its first
 * job and the tenant carry the hold, and b still runs: order [b1].
 */
START_TEST(held_tenant_admits_nothing)
{
	admit_job ja[2], jb;
	job_small(&ja[0], "a1");
	job_small(&ja[1], "a2");
	job_small(&jb, "b1");
	admit_tenant t[2];
	tenant_init(&t[0], "a", ja, 2);
	tenant_init(&t[1], "b", &jb, 1);
	t[1].usage_hours = 5;
	snprintf(t[0].hold, sizeof(t[0].hold), "identity: the tenant has no Unix user to run as");
	admit_cluster c;
	cluster_init(&c, 4, 64, 8);
	admit_job *order[4];
	int n = admit_cycle(t, 2, &c, order, 4);
	static const char *const want[] = {"b1"};
	assert_order(order, n, want, 1);
	ck_assert(!ja[0].admitted && !ja[1].admitted);
	ck_assert_str_eq(ja[0].reason, t[0].hold);
	ck_assert_str_eq(ja[1].reason, "");
	ck_assert_str_eq(t[0].reason, t[0].hold);
	ck_assert_str_eq(t[1].reason, "");
}
END_TEST

/*
 * The same when the head job waits for room: a's head needs 2 nodes of 8
 * GPUs on a cluster of 2 nodes of 8 with 4 free each; its small a2 would
 * fit but is not reached, and b's 1-GPU job (key 5 after a's 0) is admitted.
 */
START_TEST(blocked_by_room_keeps_tenant_order)
{
	admit_job ja[2], jb;
	job_init(&ja[0], "a1", 16, 2, 4, 8);
	job_small(&ja[1], "a2");
	job_small(&jb, "b1");
	admit_tenant t[2];
	tenant_init(&t[0], "a", ja, 2);
	tenant_init(&t[1], "b", &jb, 1);
	t[1].usage_hours = 5;
	admit_cluster c;
	cluster_init(&c, 2, 64, 8);
	c.free_gpus[0] = c.free_gpus[1] = 4; /* the other half is taken */
	admit_job *order[4];
	int n = admit_cycle(t, 2, &c, order, 4);
	static const char *const want[] = {"b1"};
	assert_order(order, n, want, 1);
	ck_assert(!ja[1].admitted);
	ck_assert_str_eq(ja[1].reason, "");
	ck_assert_msg(strstr(ja[0].reason, "cluster"), "reason \"%s\"", ja[0].reason);
	/* b1 went to node 0 by first fit */
	ck_assert_int_eq(c.free_gpus[0], 3);
	ck_assert_int_eq(c.free_gpus[1], 4);
}
END_TEST

/* ------------------------------------------------------------ cluster room */

/*
 * First fit across nodes. Free (cpus, gpus): n0 (8, 2), n1 (64, 8),
 * n2 (64, 4), n3 (64, 8). Jobs of 2 nodes x 32 cpus x 4 gpus, one tenant
 * each so that no quota or order stands between them, keys 0, 1, 2:
 *   x: n0 lacks cpus; n1, n2 fit  -> n1 (32, 4), n2 (32, 0)
 *   y: n0 no; n1 fits; n2 lacks gpus; n3 fits -> n1 (0, 0), n3 (32, 4)
 *   z: only n3 is left: 1 node of 2 -> waits, nothing taken
 */
START_TEST(first_fit_multi_node)
{
	admit_job jx, jy, jz;
	job_init(&jx, "x", 8, 2, 32, 4);
	job_init(&jy, "y", 8, 2, 32, 4);
	job_init(&jz, "z", 8, 2, 32, 4);
	admit_tenant t[3];
	tenant_init(&t[0], "x", &jx, 1);
	tenant_init(&t[1], "y", &jy, 1);
	tenant_init(&t[2], "z", &jz, 1);
	t[1].usage_hours = 1;
	t[2].usage_hours = 2;
	admit_cluster c;
	memset(&c, 0, sizeof(c));
	c.n_nodes = 4;
	const int cpus[] = {8, 64, 64, 64}, gpus[] = {2, 8, 4, 8};
	for (int i = 0; i < 4; i++) {
		c.up[i] = true;
		c.cpus[i] = c.free_cpus[i] = cpus[i];
		c.gpus[i] = c.free_gpus[i] = gpus[i];
	}
	admit_job *order[4];
	int n = admit_cycle(t, 3, &c, order, 4);
	static const char *const want[] = {"x", "y"};
	assert_order(order, n, want, 2);
	const int want_cpus[] = {8, 0, 32, 32}, want_gpus[] = {2, 0, 0, 4};
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(c.free_cpus[i] == want_cpus[i], "node %d: %d cpus free, expected %d",
		              i, c.free_cpus[i], want_cpus[i]);
		ck_assert_msg(c.free_gpus[i] == want_gpus[i], "node %d: %d gpus free, expected %d",
		              i, c.free_gpus[i], want_gpus[i]);
	}
	ck_assert(!jz.admitted);
	ck_assert_msg(strstr(jz.reason, "cluster"), "reason \"%s\"", jz.reason);
	ck_assert_msg(strstr(t[2].reason, "cluster"), "tenant reason \"%s\"", t[2].reason);
}
END_TEST

/*
 * Room is per node: 8 GPUs free in all, 4 on each of 2 nodes, do not hold
 * a 1-node job of 8 GPUs; the tenant's quota is not what stops it.
 */
START_TEST(room_is_per_node)
{
	admit_job j;
	job_init(&j, "a1", 8, 1, 4, 8);
	admit_tenant t;
	tenant_init(&t, "a", &j, 1);
	admit_cluster c;
	cluster_init(&c, 2, 64, 4);
	admit_job *order[2];
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 0);
	ck_assert(!j.admitted);
	ck_assert_msg(strstr(j.reason, "cluster"), "reason \"%s\"", j.reason);
	ck_assert_msg(!strstr(j.reason, "quota"), "reason \"%s\"", j.reason);
	ck_assert_int_eq(c.free_gpus[0], 4);
	ck_assert_int_eq(c.free_gpus[1], 4);
	/* a CPU job (no GPUs per node) of 2 nodes x 48 cpus fits */
	job_init(&j, "a1", 96, 2, 48, 0);
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 1);
	ck_assert_int_eq(c.free_cpus[0], 16);
	ck_assert_int_eq(c.free_cpus[1], 16);
	ck_assert_int_eq(c.free_gpus[0], 4);
}
END_TEST

/* ------------------------------------------------------------ rank, cap */

/*
 * Ranks by the key at the cycle's start: a 6 / 2 = 3, b 1 / 1 = 1,
 * c 8 / 4 = 2, d 3 / 1 = 3 (ties keep the load order: a before d).
 * Ranks b 1, c 2, a 3, d 4. b admits a 4-GPU job and ends the cycle at
 * key 5, above everyone: its rank stays 1. A stale charge from an earlier
 * cycle does not count.
 */
START_TEST(rank_by_key_at_start)
{
	admit_job jb;
	job_init(&jb, "b1", 4, 1, 4, 4);
	admit_tenant t[4];
	tenant_init(&t[0], "a", NULL, 0);
	tenant_init(&t[1], "b", &jb, 1);
	tenant_init(&t[2], "c", NULL, 0);
	tenant_init(&t[3], "d", NULL, 0);
	t[0].usage_hours = 6;
	t[0].weight = 2;
	t[1].usage_hours = 1;
	t[1].charged = 50; /* left from an earlier cycle */
	t[2].usage_hours = 8;
	t[2].weight = 4;
	t[3].usage_hours = 3;
	admit_cluster c;
	cluster_init(&c, 1, 64, 8);
	admit_job *order[2];
	ck_assert_int_eq(admit_cycle(t, 4, &c, order, 2), 1);
	ck_assert(admit_share_key(&t[1]) > admit_share_key(&t[0]));
	ck_assert_int_eq(t[1].rank, 1);
	ck_assert_int_eq(t[2].rank, 2);
	ck_assert_int_eq(t[0].rank, 3);
	ck_assert_int_eq(t[3].rank, 4);
}
END_TEST

/*
 * cap 3 of six jobs that would all fit. Keys a 0, b 0.5, one GPU each:
 * a1 (a 1), b1 (b 1.5), a2 (a 2); then the cap. The rest stay queued.
 */
START_TEST(cap_limits_admissions)
{
	admit_job ja[3], jb[3];
	job_small(&ja[0], "a1");
	job_small(&ja[1], "a2");
	job_small(&ja[2], "a3");
	job_small(&jb[0], "b1");
	job_small(&jb[1], "b2");
	job_small(&jb[2], "b3");
	admit_tenant t[2];
	tenant_init(&t[0], "a", ja, 3);
	tenant_init(&t[1], "b", jb, 3);
	t[1].usage_hours = 0.5;
	admit_cluster c;
	cluster_init(&c, 1, 64, 8);
	admit_job *order[6];
	int n = admit_cycle(t, 2, &c, order, 3);
	static const char *const want[] = {"a1", "b1", "a2"};
	assert_order(order, n, want, 3);
	ck_assert(!ja[2].admitted && !jb[1].admitted && !jb[2].admitted);
	ck_assert_int_eq(c.free_gpus[0], 8 - 3);
	/* both still have work: each says that the cap ended the cycle, and so
	 * does its next job */
	ck_assert_ptr_nonnull(strstr(t[0].reason, "most jobs (3)"));
	ck_assert_ptr_nonnull(strstr(t[1].reason, "most jobs (3)"));
	ck_assert_ptr_nonnull(strstr(ja[2].reason, "most jobs (3)"));
	ck_assert_ptr_nonnull(strstr(jb[1].reason, "most jobs (3)"));
	ck_assert_str_eq(jb[2].reason, "");

	/* cap 0 admits nothing and takes no room */
	for (int i = 0; i < 3; i++) {
		ja[i].admitted = jb[i].admitted = false;
	}
	t[0].use.running_jobs = t[1].use.running_jobs = 0;
	t[0].use.devices = t[1].use.devices = 0;
	cluster_init(&c, 1, 64, 8);
	ck_assert_int_eq(admit_cycle(t, 2, &c, order, 0), 0);
	ck_assert(!ja[0].admitted && !jb[0].admitted);
	ck_assert_int_eq(c.free_gpus[0], 8);
}
END_TEST

/*
 * The GPU-hour budget is charged to GPU jobs only: with a's month spent,
 * its GPU job waits and says so, its CPU job behind it still waits (strict
 * order); a CPU job at the head starts.
 */
START_TEST(month_budget_spares_cpu_jobs)
{
	admit_job j[2];
	job_init(&j[0], "cpu", 4, 1, 4, 0);
	job_small(&j[1], "gpu");
	admit_tenant t;
	tenant_init(&t, "a", j, 2);
	t.limits.gpu_hours_per_month = 10;
	t.use.month_gpu_hours = 12;
	admit_cluster c;
	cluster_init(&c, 2, 64, 8);
	admit_job *order[2];
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 1);
	ck_assert_str_eq(order[0]->id, "cpu");
	ck_assert(!j[1].admitted);
	ck_assert_msg(strstr(j[1].reason, "gpu_hours_per_month"), "reason \"%s\"", j[1].reason);
}
END_TEST

/*
 * Backfill (admit.h): a head job the cluster's up nodes could never hold,
 * even empty (3 nodes asked of 2 up), keeps its reason and lets the job
 * behind it start; one that could fit an empty cluster but not the room
 * there is now holds the queue.
 */
START_TEST(never_fitting_head_is_passed)
{
	admit_job j[2];
	job_init(&j[0], "big", 24, 3, 4, 8);
	job_small(&j[1], "small");
	admit_tenant t;
	tenant_init(&t, "a", j, 2);
	admit_cluster c;
	cluster_init(&c, 3, 64, 8);
	c.up[2] = false; /* down: no room, and it counts for nothing */
	c.free_cpus[2] = c.free_gpus[2] = 0;
	admit_job *order[2];
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 1);
	ck_assert_str_eq(order[0]->id, "small");
	ck_assert(!j[0].admitted);
	ck_assert_msg(strstr(j[0].reason, "cannot hold"), "reason \"%s\"", j[0].reason);

	/* with the node back up but busy, the big job could fit later: it holds the queue */
	job_init(&j[0], "big", 24, 3, 4, 8);
	job_small(&j[1], "small");
	cluster_init(&c, 3, 64, 8);
	c.free_gpus[0] = 0;
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 0);
	ck_assert_msg(strstr(j[0].reason, "not there now"), "reason \"%s\"", j[0].reason);
	ck_assert_str_eq(j[1].reason, "");
}
END_TEST

/* A quota lowered below a queued job: it keeps its reason, the jobs behind it go on. */
START_TEST(quota_lowered_below_head_is_passed)
{
	admit_job j[2];
	job_init(&j[0], "a1", 16, 2, 4, 8);
	job_small(&j[1], "a2");
	admit_tenant t;
	tenant_init(&t, "a", j, 2);
	t.limits.max_gpus = 8;
	admit_cluster c;
	cluster_init(&c, 4, 64, 8);
	admit_job *order[2];
	ck_assert_int_eq(admit_cycle(&t, 1, &c, order, 2), 1);
	ck_assert_str_eq(order[0]->id, "a2");
	ck_assert_msg(strstr(j[0].reason, "max_gpus"), "reason \"%s\"", j[0].reason);
}
END_TEST

/* ------------------------------------------------ priority and borrowing */

/*
 * a has no usage, b ten hours: fair share puts a first, but b's job has a
 * higher priority (its class's value), and priority goes before fair share.
 * One node's room: b's job only.
 */
START_TEST(priority_before_fair_share)
{
	admit_job ja, jb;
	job_small(&ja, "a1");
	job_small(&jb, "b1");
	jb.priority = 10;
	admit_tenant t[2];
	tenant_init(&t[0], "a", &ja, 1);
	tenant_init(&t[1], "b", &jb, 1);
	t[1].usage_hours = 10;
	admit_cluster c;
	cluster_init(&c, 1, 4, 1);
	admit_job *order[2];
	int n = admit_cycle(t, 2, &c, order, 2);
	const char *want[] = {"b1"};
	assert_order(order, n, want, 1);
	ck_assert_int_eq(ja.wait, ADMIT_WAIT_CLUSTER);
	/* a job preemptions were made for goes before any priority */
	cluster_init(&c, 1, 4, 1);
	memset(&ja.admitted, 0, sizeof(ja.admitted));
	memset(&jb.admitted, 0, sizeof(jb.admitted));
	ja.favoured = true;
	n = admit_cycle(t, 2, &c, order, 2);
	const char *favoured[] = {"a1"};
	assert_order(order, n, favoured, 1);
}
END_TEST

/*
 * a is guaranteed 4 devices and may borrow 4: its second 4-device job is
 * admitted on borrowed devices, marked so; with the cluster lending only
 * 3 more it waits instead, and says why.
 */
START_TEST(borrowed_devices_marked)
{
	admit_job j[3];
	job_init(&j[0], "a1", 4, 1, 4, 0);
	job_init(&j[1], "a2", 4, 1, 4, 0);
	job_init(&j[2], "a3", 1, 1, 1, 0);
	admit_tenant t;
	tenant_init(&t, "a", j, 3);
	t.limits.max_gpus = 4;
	t.limits.borrow_gpus = 4;
	admit_cluster c;
	cluster_init(&c, 4, 4, 0);
	c.lend_left = -1;
	admit_job *order[3];
	int n = admit_cycle(&t, 1, &c, order, 3);
	const char *want[] = {"a1", "a2"};
	assert_order(order, n, want, 2);
	ck_assert_int_eq(j[0].borrowed, 0);
	ck_assert_int_eq(j[1].borrowed, 4);
	ck_assert_int_eq(j[2].wait, ADMIT_WAIT_QUOTA); /* 9 > 4 + 4 */
	ck_assert_msg(strstr(j[2].reason, "borrow_gpus 4"), "reason \"%s\"", j[2].reason);

	for (int i = 0; i < 3; i++)
		j[i].admitted = false;
	t.use = (quota_use){0};
	cluster_init(&c, 4, 4, 0);
	c.lend_left = 3;
	n = admit_cycle(&t, 1, &c, order, 3);
	const char *lent[] = {"a1"};
	assert_order(order, n, lent, 1);
	ck_assert_int_eq(j[1].wait, ADMIT_WAIT_LENDING);
	ck_assert_msg(strstr(j[1].reason, "lends 3 more"), "reason \"%s\"", j[1].reason);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("sched_admit");
	TCase *f = tcase_create("fair_share");
	tcase_add_test(f, more_usage_goes_second);
	tcase_add_test(f, weight_divides_usage);
	tcase_add_test(f, charge_interleaves_tenants);
	suite_add_tcase(s, f);
	TCase *q = tcase_create("quotas");
	tcase_add_test(q, max_gpus_blocks_with_reason);
	tcase_add_test(q, max_gpus_blocks_a_single_job);
	tcase_add_test(q, max_running_jobs_blocks_with_reason);
	tcase_add_test(q, month_budget_spent_blocks_with_reason);
	tcase_add_test(q, blocked_head_keeps_tenant_order);
	tcase_add_test(q, held_tenant_admits_nothing);
	tcase_add_test(q, blocked_by_room_keeps_tenant_order);
	tcase_add_test(q, month_budget_spares_cpu_jobs);
	tcase_add_test(q, never_fitting_head_is_passed);
	tcase_add_test(q, quota_lowered_below_head_is_passed);
	suite_add_tcase(s, q);
	TCase *r = tcase_create("room");
	tcase_add_test(r, first_fit_multi_node);
	tcase_add_test(r, room_is_per_node);
	suite_add_tcase(s, r);
	TCase *k = tcase_create("rank_cap");
	tcase_add_test(k, rank_by_key_at_start);
	tcase_add_test(k, cap_limits_admissions);
	suite_add_tcase(s, k);
	TCase *p = tcase_create("priority_borrowing");
	tcase_add_test(p, priority_before_fair_share);
	tcase_add_test(p, borrowed_devices_marked);
	suite_add_tcase(s, p);
	return s;
}

UNIT_MAIN()
