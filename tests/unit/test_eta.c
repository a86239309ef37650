/*
 * test_eta.c - a queued job's estimated start (lib/job/eta.h) on queues worked
 * out by hand: room now, room at a running job's end, the jobs ahead
 * taking it first, the running-jobs slot limit, a back-off, a job that can
 * never fit (passed, as admission passes it), a spent GPU-hour budget; and
 * a running job's expected end from its pace.
 */
#include <check.h>

#include "eta.h"
#include "unit.h"

START_TEST(queue_replays)
{
	/* quota 8 devices, 4 running jobs; nothing runs */
	eta_queued q[] = {{4, true, 100, 0}, {4, true, 100, 0}, {4, true, 10, 0}};
	eta_input in = {.now = 1000, .limits = {8, 4, 1000}, .queue = q, .n_queue = 1};
	ck_assert_double_eq(eta_start(&in), 1000); /* room now */
	in.n_queue = 3;
	ck_assert_double_eq(eta_start(&in), 1100); /* after the first of the two ahead */

	/* one job holds all 8 devices until 1050 */
	eta_running r[] = {{1050, 8, 0}};
	in.running = r;
	in.n_running = 1;
	in.n_queue = 1;
	ck_assert_double_eq(eta_start(&in), 1050);
	in.n_queue = 3; /* the two ahead start at 1050, the third when one of them ends */
	ck_assert_double_eq(eta_start(&in), 1150);

	/* one running job at a time: 1050, then 1150, then 1250 */
	in.limits.max_running_jobs = 1;
	ck_assert_double_eq(eta_start(&in), 1250);

	/* the job asked about is backing off until 2000 */
	eta_queued late[] = {{1, true, 10, 2000}};
	eta_input b = {.now = 1000, .limits = {8, 4, 1000}, .queue = late, .n_queue = 1};
	ck_assert_double_eq(eta_start(&b), 2000);

	/* a job ahead that could never fit is passed, as admission passes it */
	eta_queued big[] = {{16, true, 10, 0}, {1, true, 10, 0}};
	eta_input c = {.now = 0, .limits = {8, 4, 1000}, .queue = big, .n_queue = 2};
	ck_assert_double_eq(eta_start(&c), 0);
	c.n_queue = 1; /* and has no estimate itself */
	ck_assert_double_eq(eta_start(&c), -1);
	c.n_queue = 2;
	c.limits.max_gpus = 16; /* it fits now and takes every device until 10 */
	ck_assert_double_eq(eta_start(&c), 10);
	c.limits.max_running_jobs = 0;
	ck_assert_double_eq(eta_start(&c), -1);

	/* the month's GPU-hours spent: a GPU job has no estimate, a CPU job starts */
	eta_queued cpu[] = {{2, false, 10, 0}};
	eta_input d = {
	    .now = 5, .limits = {8, 4, 10}, .month_gpu_hours = 10, .queue = late, .n_queue = 1};
	ck_assert_double_eq(eta_start(&d), -1);
	d.queue = cpu;
	ck_assert_double_eq(eta_start(&d), 5);
}
END_TEST

START_TEST(running_end)
{
	/* 5 of 20 steps in 10 s: 40 s in all, within a 100 s limit */
	ck_assert_double_eq(eta_running_end(0, 10, 5, 20, 100), 40);
	ck_assert_double_eq(eta_running_end(0, 10, 5, 20, 30), 30);   /* the limit ends it first */
	ck_assert_double_eq(eta_running_end(0, 10, 0, 20, 100), 100); /* no pace yet */
	ck_assert_double_eq(eta_running_end(0, 10, 20, 20, 100), 10); /* done: now */
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("eta");
	TCase *tc = tcase_create("replay");
	tcase_add_test(tc, queue_replays);
	tcase_add_test(tc, running_end);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
