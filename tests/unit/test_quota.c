/*
 * test_quota.c - the quota rule (lib/job/quota.h): each limit now and ever,
 * GPU-hours charged to GPU jobs only, every limit reported at once,
 * guaranteed and borrowed devices, and whether a cluster's nodes could
 * hold a job.
 */
#include <check.h>
#include <string.h>

#include "quota.h"
#include "unit.h"

START_TEST(fits_now)
{
	quota_limits l = {8, 2, 100, 0};
	quota_use u = {.devices = 4, .running_jobs = 1, .month_gpu_hours = 10};
	quota_ask gpu4 = {.devices = 4, .gpu = true}, gpu5 = {.devices = 5, .gpu = true};
	char why[256];
	ck_assert_int_eq(quota_fits_now(&l, &u, &gpu4, why, sizeof(why)), QUOTA_FITS);
	ck_assert_str_eq(why, "");
	ck_assert_int_eq(quota_fits_now(&l, &u, &gpu5, why, sizeof(why)), QUOTA_DEVICES);
	ck_assert_msg(strstr(why, "max_gpus 8 + borrow_gpus 0 (4 in use + 5 asked)"), "%s", why);
	quota_take(&u, &gpu4, 0);
	ck_assert_int_eq(u.devices, 8);
	ck_assert_int_eq(quota_fits_now(&l, &u, &gpu4, why, sizeof(why)), QUOTA_RUNNING_JOBS);
	ck_assert_msg(strstr(why, "max_running_jobs (2 running of 2)"), "%s", why);

	/* the month's GPU-hours spent: a GPU job waits, a CPU job does not */
	quota_use spent = {.month_gpu_hours = 100};
	quota_ask cpu = {.devices = 4, .gpu = false};
	ck_assert_int_eq(quota_fits_now(&l, &spent, &gpu4, why, sizeof(why)), QUOTA_GPU_HOURS);
	ck_assert_msg(strstr(why, "gpu_hours_per_month spent"), "%s", why);
	ck_assert_int_eq(quota_fits_now(&l, &spent, &cpu, NULL, 0), QUOTA_FITS);
}
END_TEST

static int reported;
static void count(void *arg, quota_verdict v, const char *why)
{
	(void)arg;
	ck_assert_int_ne(v, QUOTA_FITS);
	ck_assert_str_ne(why, "");
	reported++;
}

START_TEST(ever_fits)
{
	quota_limits l = {8, 1, 64, 0};
	quota_ask gpu = {.devices = 8, .gpu = true, .limit_minutes = 480};
	char why[256];
	ck_assert_int_eq(quota_ever_fits(&l, &gpu, why, sizeof(why)), QUOTA_FITS);
	gpu.limit_minutes = 481; /* 8 x 481 minutes: over 64 GPU-hours */
	ck_assert_int_eq(quota_ever_fits(&l, &gpu, why, sizeof(why)), QUOTA_GPU_HOURS);
	/* the same on CPU ranks: never charged GPU-hours */
	quota_ask cpu = {.devices = 8, .gpu = false, .limit_minutes = 100000};
	ck_assert_int_eq(quota_ever_fits(&l, &cpu, why, sizeof(why)), QUOTA_FITS);
	cpu.devices = 9;
	ck_assert_int_eq(quota_ever_fits(&l, &cpu, why, sizeof(why)), QUOTA_DEVICES);

	/* every limit it breaks, each once; the first is the one quota_ever_fits names */
	quota_limits none = {4, 0, 1, 0};
	reported = 0;
	ck_assert_int_eq(quota_never_fits(&none, &gpu, count, NULL), 3);
	ck_assert_int_eq(reported, 3);
	ck_assert_int_eq(quota_ever_fits(&none, &gpu, why, sizeof(why)), QUOTA_RUNNING_JOBS);
	ck_assert_msg(strstr(why, "max_running_jobs is 0"), "%s", why);
}
END_TEST

/* 4 guaranteed, 4 more borrowable: what a job borrows, and the jobs that may not */
START_TEST(borrowing)
{
	quota_limits l = {4, 10, 1000, 4};
	quota_use u = {0};
	quota_ask four = {.devices = 4}, one = {.devices = 1};
	char why[256];
	ck_assert_int_eq(quota_borrow(&l, &u, &four), 0);
	quota_take(&u, &four, 0);
	/* the guarantee is full: the next four are borrowed */
	ck_assert_int_eq(quota_borrow(&l, &u, &four), 4);
	ck_assert_int_eq(quota_fits_now(&l, &u, &four, why, sizeof(why)), QUOTA_FITS);
	quota_take(&u, &four, 4);
	ck_assert_int_eq(u.borrowed, 4);
	ck_assert_int_eq(quota_fits_now(&l, &u, &one, why, sizeof(why)), QUOTA_DEVICES);
	ck_assert_msg(strstr(why, "max_gpus 4 + borrow_gpus 4 (8 in use + 1 asked)"), "%s", why);
	/* the guaranteed job ended: a new one is within the guarantee again */
	quota_use later = {.devices = 4, .running_jobs = 1, .borrowed = 4};
	ck_assert_int_eq(quota_borrow(&l, &later, &four), 0);
	ck_assert_int_eq(quota_fits_now(&l, &later, &four, NULL, 0), QUOTA_FITS);
	/* part of a job may be borrowed */
	quota_use three = {.devices = 3, .running_jobs = 1};
	ck_assert_int_eq(quota_borrow(&l, &three, &four), 3);
	/* a job that is not preemptible runs only within the guarantee */
	quota_ask pinned = {.devices = 4, .no_preempt = true};
	ck_assert_int_eq(quota_fits_now(&l, &three, &pinned, why, sizeof(why)), QUOTA_NO_PREEMPT);
	ck_assert_msg(strstr(why, "not preemptible"), "%s", why);
	ck_assert_int_eq(quota_fits_now(&l, &later, &pinned, NULL, 0), QUOTA_FITS);
	/* and can ever fit only there; a preemptible one up to max_gpus + borrow_gpus */
	quota_ask eight = {.devices = 8}, nine = {.devices = 9};
	ck_assert_int_eq(quota_ever_fits(&l, &eight, NULL, 0), QUOTA_FITS);
	ck_assert_int_eq(quota_ever_fits(&l, &nine, NULL, 0), QUOTA_DEVICES);
	pinned.devices = 5;
	ck_assert_int_eq(quota_ever_fits(&l, &pinned, why, sizeof(why)), QUOTA_NO_PREEMPT);
}
END_TEST

START_TEST(cluster_could_hold)
{
	const int cpus[] = {64, 64, 8}, gpus[] = {8, 8, 8};
	const bool up[] = {true, false, true};
	/* two nodes of 32 cpus and 8 gpus: nodes 0 and 1 */
	ck_assert(quota_cluster_could_hold(cpus, gpus, NULL, 3, 2, 32, 8));
	ck_assert(!quota_cluster_could_hold(cpus, gpus, up, 3, 2, 32, 8)); /* node 1 is down */
	ck_assert(quota_cluster_could_hold(cpus, gpus, up, 3, 2, 8, 8));
	ck_assert(!quota_cluster_could_hold(cpus, gpus, NULL, 3, 4, 1, 0));
	ck_assert(!quota_cluster_could_hold(cpus, gpus, NULL, 3, 1, 8, 9));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("quota");
	TCase *tc = tcase_create("rule");
	tcase_add_test(tc, fits_now);
	tcase_add_test(tc, ever_fits);
	tcase_add_test(tc, borrowing);
	tcase_add_test(tc, cluster_could_hold);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
