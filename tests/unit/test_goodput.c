/*
 * test_goodput.c - a job's wall time cut into goodput and badput
 * (lib/job/goodput.h) on timelines worked out by hand: a failure and a resume
 * from the checkpoint before it, a fallback between steps, a job that
 * failed for good, a job still queued, and reports whose clocks overlap.
 * Every case also checks that the pieces add up to the whole.
 */
#include <check.h>
#include <math.h>

#include "goodput.h"
#include "unit.h"

static void expect(const goodput_result *r, goodput_cat c, double want)
{
	ck_assert_msg(fabs(r->seconds[c] - want) < 1e-9, "%s: %.6f, want %.6f", goodput_cat_name(c),
	              r->seconds[c], want);
}

static void adds_up(const goodput_result *r)
{
	double sum = 0;
	for (int c = 0; c < GP__COUNT; c++) {
		ck_assert_msg(r->seconds[c] >= 0, "%s is negative",
		              goodput_cat_name((goodput_cat)c));
		sum += r->seconds[c];
	}
	ck_assert_msg(fabs(sum - r->total) < 1e-9, "the pieces make %.6f of %.6f", sum, r->total);
}

/*
 * Submitted at 0, first attempt starts at 10, steps 1-4 from 20 (1 s each,
 * 0.1 s of data wait; step 2 saved, then 0.5 s of saving), fails at 30; the
 * second starts at 40, resumes from step 2 (steps 3-5 from 45; step 5
 * saved), ends at 49; the job ends at 50.
 */
START_TEST(failure_and_resume)
{
	goodput_step s1[] = {{1, 21, 1, 0.1, false},
	                     {2, 22, 1, 0.1, true},
	                     {3, 23.5, 1, 0.1, false},
	                     {4, 24.5, 1, 0.1, false}};
	goodput_step s2[] = {{3, 46, 1, 0.1, false}, {4, 47, 1, 0.1, false}, {5, 48, 1, 0.1, true}};
	goodput_attempt a[] = {
	    {.started = 10, .ended = 30, .failed = true, .steps = s1, .n_steps = 4},
	    {.started = 40, .ended = 49, .steps = s2, .n_steps = 3}};
	goodput_job job = {.submitted = 0, .end = 50, .attempts = a, .n_attempts = 2};
	goodput_result r;
	goodput_compute(&job, &r);
	expect(&r, GP_QUEUEING, 10);
	expect(&r, GP_STARTUP, 10);
	expect(&r, GP_GOODPUT, 0.9 * 5);
	expect(&r, GP_DATA_WAIT, 0.1 * 5);
	expect(&r, GP_CHECKPOINT, 0.5 + 1);
	expect(&r, GP_LOST, 2);
	expect(&r, GP_RECOVERY, 5.5 + 10 + 5);
	expect(&r, GP_OVERHEAD, 1);
	expect(&r, GP_FALLBACK, 0);
	ck_assert_int_eq(r.steps_kept, 5);
	ck_assert_int_eq(r.steps_lost, 2);
	ck_assert(fabs(r.total - 50) < 1e-9);
	adds_up(&r);
}
END_TEST

/* A fallback at 13 inside the 3 s gap between steps 1 and 2 of one attempt. */
START_TEST(fallback_between_steps)
{
	const double fb[] = {13};
	goodput_step s[] = {{1, 11, 1, 0, false}, {2, 15, 1, 0, false}};
	goodput_attempt a[] = {{.started = 5,
	                        .ended = 16,
	                        .steps = s,
	                        .n_steps = 2,
	                        .fallbacks = fb,
	                        .n_fallbacks = 1}};
	goodput_job job = {.submitted = 0, .end = 16, .attempts = a, .n_attempts = 1};
	goodput_result r;
	goodput_compute(&job, &r);
	expect(&r, GP_QUEUEING, 5);
	expect(&r, GP_STARTUP, 5);
	expect(&r, GP_FALLBACK, 3);
	expect(&r, GP_GOODPUT, 2);
	expect(&r, GP_OVERHEAD, 1);
	adds_up(&r);
}
END_TEST

/* The job fails for good: what came after its last save is lost. */
START_TEST(failed_for_good)
{
	goodput_step s[] = {{1, 2, 1, 0, true}, {2, 3, 1, 0, false}, {3, 4, 1, 0, false}};
	goodput_attempt a[] = {
	    {.started = 1, .ended = 6, .failed = true, .steps = s, .n_steps = 3}};
	goodput_job job = {
	    .submitted = 0, .end = 7, .failed = true, .attempts = a, .n_attempts = 1};
	goodput_result r;
	goodput_compute(&job, &r);
	expect(&r, GP_GOODPUT, 1);
	expect(&r, GP_LOST, 2);
	expect(&r, GP_RECOVERY, 2); /* the failed attempt's tail */
	expect(&r, GP_OVERHEAD, 1);
	ck_assert_int_eq(r.steps_lost, 2);
	adds_up(&r);
}
END_TEST

/* Queued, never started; and an attempt still running, its steps kept. */
START_TEST(queued_and_running)
{
	goodput_job job = {.submitted = 100, .end = 160};
	goodput_result r;
	goodput_compute(&job, &r);
	expect(&r, GP_QUEUEING, 60);
	adds_up(&r);

	goodput_step s[] = {{1, 12, 1, 0.5, false}, {2, 13, 1, 0.5, false}};
	goodput_attempt a[] = {{.started = 10, .steps = s, .n_steps = 2}};
	goodput_job run = {.submitted = 0, .end = 20, .attempts = a, .n_attempts = 1};
	goodput_compute(&run, &r);
	expect(&r, GP_GOODPUT, 1);
	expect(&r, GP_DATA_WAIT, 1);
	expect(&r, GP_STARTUP, 1);
	expect(&r, GP_OVERHEAD, 7); /* since the last step, up to now */
	adds_up(&r);
}
END_TEST

/* Reports whose intervals overlap (another machine's clock): cut, never counted twice. */
START_TEST(overlapping_clocks)
{
	goodput_step s[] = {{1, 5, 2, 0, false}, {2, 5.5, 2, 0, false}, {3, 4, 1, 0, false}};
	goodput_attempt a[] = {{.started = 1, .ended = 9, .steps = s, .n_steps = 3}};
	goodput_job job = {.submitted = 0, .end = 8, .attempts = a, .n_attempts = 1};
	goodput_result r;
	goodput_compute(&job, &r);
	expect(&r, GP_GOODPUT, 2.5);  /* [3, 5] and [5, 5.5]; step 3 lies behind the cursor */
	expect(&r, GP_OVERHEAD, 2.5); /* to the job's end; the attempt's end is cut there */
	adds_up(&r);
	ck_assert_str_eq(goodput_cat_name(GP_DATA_WAIT), "data_wait");
	ck_assert_str_eq(goodput_cat_name((goodput_cat)99), "overhead");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("goodput");
	TCase *tc = tcase_create("timelines");
	tcase_add_test(tc, failure_and_resume);
	tcase_add_test(tc, fallback_between_steps);
	tcase_add_test(tc, failed_for_good);
	tcase_add_test(tc, queued_and_running);
	tcase_add_test(tc, overlapping_clocks);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
