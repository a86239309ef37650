/*
 * test_sched_preempt.c - the preemption rule (scheduler/preempt.h): who
 * may be preempted, for what reason, in which order, and that no job is
 * preempted when the victims together would not make room.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "preempt.h"
#include "unit.h"

/* Two nodes of 4 cpus, no gpus; both full. */
static void cluster_full(admit_cluster *c)
{
	memset(c, 0, sizeof(*c));
	c->n_nodes = 2;
	c->lend_left = -1;
	for (int i = 0; i < 2; i++) {
		snprintf(c->name[i], sizeof(c->name[i]), "n%d", i + 1);
		c->up[i] = true;
		c->cpus[i] = 4;
	}
}

/* A running 4-rank job of tenant on node, started run_s ago. */
static void cand(preempt_candidate *c, const char *id, const char *tenant, int node, int borrowed,
                 int priority, double run_s, int unsaved)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->job_id, sizeof(c->job_id), "%s", id);
	snprintf(c->tenant_id, sizeof(c->tenant_id), "%s", tenant);
	c->devices = 4;
	c->borrowed = borrowed;
	c->priority = priority;
	c->cpus_per_node = 4;
	c->n_nodes = 1;
	c->node[0] = node;
	c->preemptible = true;
	c->run_s = run_s;
	c->unsaved = unsaved;
}

static void waiting(admit_job *j, int priority, int borrowed)
{
	memset(j, 0, sizeof(*j));
	snprintf(j->id, sizeof(j->id), "w");
	j->devices = 4;
	j->nodes = 1;
	j->cpus_per_node = 4;
	j->priority = priority;
	j->borrowed = borrowed;
	j->wait = ADMIT_WAIT_CLUSTER;
}

/* B within its guarantee takes back what A borrowed; A's guaranteed job stays. */
START_TEST(reclaim_takes_the_borrowed_job)
{
	admit_cluster room;
	cluster_full(&room);
	preempt_candidate c[2];
	cand(&c[0], "a-guaranteed", "A", 0, 0, 0, 100, 0);
	cand(&c[1], "a-borrowed", "A", 1, 4, 0, 100, 3);
	admit_job j;
	waiting(&j, 0, 0);
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 2, 60), 1);
	ck_assert_int_eq(c[0].taken, PREEMPT_NONE);
	ck_assert_int_eq(c[1].taken, PREEMPT_RECLAIM);
	ck_assert_str_eq(preempt_reason_name(c[1].taken), "reclaim");
	/* the freed node is the waiting job's now */
	ck_assert_int_eq(room.free_cpus[1], 0);
}
END_TEST

/*
 * Nothing is taken back by a job that would itself borrow, by the same
 * tenant, or from a job of a higher priority (which then could take it
 * back in turn: the loop the rule rules out).
 */
START_TEST(no_reclaim_when_borrowing_own_or_higher)
{
	admit_cluster room;
	cluster_full(&room);
	preempt_candidate c[1];
	cand(&c[0], "a-borrowed", "A", 1, 4, 0, 100, 0);
	admit_job j;
	waiting(&j, 0, 4);
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 1, 60), 0);
	waiting(&j, 0, 0);
	ck_assert_int_eq(preempt_plan(&room, &j, "A", c, 1, 60), 0);
	c[0].priority = 100;
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 1, 60), 0);
	ck_assert_int_eq(c[0].taken, PREEMPT_NONE);
}
END_TEST

/*
 * The loop a run of the stack found: C's urgent job, borrowing, preempts
 * A's normal one by priority; A's, requeued within its guarantee, must
 * not take C's back by reclaim. Neither preempts the other in turn.
 */
START_TEST(no_preemption_back_and_forth)
{
	admit_cluster room;
	cluster_full(&room);
	preempt_candidate a[1], cj[1];
	cand(&a[0], "a-guaranteed", "A", 0, 0, 0, 100, 0);
	admit_job urgent;
	waiting(&urgent, 100, 4);
	ck_assert_int_eq(preempt_plan(&room, &urgent, "C", a, 1, 60), 1);
	ck_assert_int_eq(a[0].taken, PREEMPT_PRIORITY);
	/* then C's job runs on borrowed devices, and A's waits within its guarantee */
	cluster_full(&room);
	cand(&cj[0], "c-urgent", "C", 0, 4, 100, 100, 0);
	admit_job back;
	waiting(&back, 0, 0);
	ck_assert_int_eq(preempt_plan(&room, &back, "A", cj, 1, 60), 0);
}
END_TEST

/* A higher class preempts a lower one: the lowest first, then least progress lost. */
START_TEST(priority_takes_lowest_then_least_unsaved)
{
	admit_cluster room;
	cluster_full(&room);
	preempt_candidate c[2];
	cand(&c[0], "low-much-unsaved", "A", 0, 0, 0, 100, 9);
	cand(&c[1], "low-little-unsaved", "A", 1, 0, 0, 100, 1);
	admit_job j;
	waiting(&j, 10, 4);
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 2, 60), 1);
	ck_assert_int_eq(c[1].taken, PREEMPT_PRIORITY);
	ck_assert_int_eq(c[0].taken, PREEMPT_NONE);
	/* an equal class is no victim */
	cluster_full(&room);
	c[1].taken = PREEMPT_NONE;
	waiting(&j, 0, 4);
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 2, 60), 0);
}
END_TEST

/* Never: not preemptible, being preempted, younger than the minimum run time. */
START_TEST(never_victims)
{
	admit_cluster room;
	cluster_full(&room);
	preempt_candidate c[3];
	cand(&c[0], "pinned", "A", 0, 0, 0, 100, 0);
	c[0].preemptible = false;
	cand(&c[1], "young", "A", 1, 4, 0, 59, 0);
	cand(&c[2], "going", "A", 1, 4, 0, 100, 0);
	c[2].preempting = true;
	admit_job j;
	waiting(&j, 10, 0);
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 3, 60), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(c[i].taken, PREEMPT_NONE);
	/* once old enough, the young one goes */
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 3, 59), 1);
	ck_assert_int_eq(c[1].taken, PREEMPT_RECLAIM);
}
END_TEST

/* A 2-node job: one victim frees one node, not enough; two victims together do. */
START_TEST(victims_until_room)
{
	admit_cluster room;
	cluster_full(&room);
	preempt_candidate c[2];
	cand(&c[0], "v1", "A", 0, 4, 0, 100, 0);
	cand(&c[1], "v2", "A", 1, 0, 0, 100, 0);
	admit_job j;
	waiting(&j, 0, 0);
	j.nodes = 2;
	j.devices = 8;
	/* v2 borrowed nothing and has the same class: reclaim takes v1 only, which is not enough */
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 2, 60), 0);
	ck_assert_int_eq(c[0].taken, PREEMPT_NONE);
	c[1].borrowed = 4;
	ck_assert_int_eq(preempt_plan(&room, &j, "B", c, 2, 60), 2);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("sched_preempt");
	TCase *t = tcase_create("rule");
	tcase_add_test(t, reclaim_takes_the_borrowed_job);
	tcase_add_test(t, no_reclaim_when_borrowing_own_or_higher);
	tcase_add_test(t, no_preemption_back_and_forth);
	tcase_add_test(t, priority_takes_lowest_then_least_unsaved);
	tcase_add_test(t, never_victims);
	tcase_add_test(t, victims_until_room);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
