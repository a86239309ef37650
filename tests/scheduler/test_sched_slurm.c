/*
 * test_sched_slurm.c - a Slurm job id is no identity: a job in the
 * snapshot is an attempt's only when its comment names the same job and
 * attempt, and the comment parser takes only what the scheduler writes.
 */
#include <check.h>
#include <string.h>

#include "slurm.h"
#include "unit.h"

#define JOB_A "6bf0ad45-a119-45f5-a71b-798311dcb6a6"
#define JOB_B "c1f11469-a746-4820-b21d-f1d46a6073f5"

static sl_job job(uint32_t id, const char *job_id, int attempt)
{
	sl_job j = {.id = id, .attempt = attempt, .state = SL_RUNNING};
	snprintf(j.job_id, sizeof(j.job_id), "%s", job_id);
	return j;
}

START_TEST(find_matches_id_and_comment)
{
	/* sorted by id, as sl_our_jobs() leaves them */
	sl_job jobs[] = {job(7, JOB_A, 1), job(24, JOB_B, 2), job(62, JOB_A, 3)};
	int n = 3;
	const sl_job *j = sl_find(jobs, n, 24, JOB_B, 2);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(j->id, 24);
	/* the id handed out again: job 24 is B's attempt 2, not A's */
	ck_assert_ptr_null(sl_find(jobs, n, 24, JOB_A, 1));
	/* the same job, another attempt */
	ck_assert_ptr_null(sl_find(jobs, n, 24, JOB_B, 1));
	ck_assert_ptr_null(sl_find(jobs, n, 63, JOB_A, 3));
	ck_assert_ptr_nonnull(sl_find(jobs, n, 62, JOB_A, 3));
	ck_assert_ptr_null(sl_find(jobs, 0, 7, JOB_A, 1));
}
END_TEST

START_TEST(comment_parse_takes_only_ours)
{
	char id[37];
	int attempt = 0;
	ck_assert_int_eq(sl_comment_parse("trainyard job=" JOB_A " attempt=12", id, &attempt), 0);
	ck_assert_str_eq(id, JOB_A);
	ck_assert_int_eq(attempt, 12);
	ck_assert_int_eq(sl_comment_parse("trainyard job=" JOB_A " attempt=0", id, &attempt), -1);
	ck_assert_int_eq(sl_comment_parse("trainyard job=" JOB_A, id, &attempt), -1);
	ck_assert_int_eq(sl_comment_parse("trainyard job=6bf0ad45 attempt=1", id, &attempt), -1);
	ck_assert_int_eq(sl_comment_parse("someone else's job", id, &attempt), -1);
	ck_assert_int_eq(sl_comment_parse("", id, &attempt), -1);
	ck_assert_int_eq(sl_comment_parse(NULL, id, &attempt), -1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("sched_slurm");
	TCase *c = tcase_create("identity");
	tcase_add_test(c, find_matches_id_and_comment);
	tcase_add_test(c, comment_parse_takes_only_ours);
	suite_add_tcase(s, c);
	return s;
}

UNIT_MAIN()
