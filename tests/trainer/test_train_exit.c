/*
 * test_train_exit.c - trainyard-train's exit statuses: distinct, named, and
 * documented in trainer/README.md exactly as lib/job/failure.def declares them
 * (their distinctness: tests/unit/test_failure.c).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "numerics.h"
#include "unit.h"

START_TEST(statuses_documented)
{
	char *doc = unit_read_file(SOURCE_DIR "/trainer/README.md");
	ck_assert_ptr_nonnull(doc);
	size_t n = 0;
	for (int c = 0; c < FAILURE__COUNT; c++) {
		if (!failure_is_exit((failure_class)c))
			continue;
		char line[512];
		snprintf(line, sizeof(line), "| %d | %s | %s |", failure_status((failure_class)c),
		         failure_name((failure_class)c), failure_doc((failure_class)c));
		ck_assert_msg(strstr(doc, line), "trainer/README.md lacks the row: %s", line);
		n++;
	}
	ck_assert_uint_eq(n, 11);
	ck_assert_str_eq(train_exit_name(99), "unknown");
	ck_assert_int_eq(TRAIN_OOM, 11);
	ck_assert_int_eq(TRAIN_STOPPED, 16);
	ck_assert_int_eq(TRAIN_ATTEMPT_OVER, 17);
	free(doc);
}
END_TEST

START_TEST(loss_scaler_halves_and_grows)
{
	loss_scaler s;
	loss_scaler_init(&s, true, 1024.0f, 3);
	ck_assert(loss_scaler_update(&s, false));
	ck_assert_float_eq(s.scale, 512.0f);
	ck_assert(!loss_scaler_update(&s, true));
	ck_assert(!loss_scaler_update(&s, true));
	ck_assert(loss_scaler_update(&s, true)); /* the third good step in a row */
	ck_assert_float_eq(s.scale, 1024.0f);
	for (int i = 0; i < 20; i++)
		loss_scaler_update(&s, false);
	ck_assert_float_eq(s.scale, 1.0f); /* never below the minimum */
	loss_scaler off;
	loss_scaler_init(&off, false, 1024.0f, 3);
	ck_assert_float_eq(off.scale, 1.0f);
	ck_assert(!loss_scaler_update(&off, false));
	ck_assert_float_eq(off.scale, 1.0f);
}
END_TEST

START_TEST(spikes_by_z_score)
{
	spike_detector d;
	spike_init(&d, 50, 10, 4.0);
	double z;
	for (int i = 0; i < 30; i++)
		ck_assert(!spike_add(&d, 3.0 + 0.01 * (i % 5), &z));
	ck_assert(spike_add(&d, 5.0, &z)); /* far above a steady history */
	ck_assert(z > 4.0);
	ck_assert(!spike_add(&d, 3.02, &z));
	spike_detector young;
	spike_init(&young, 50, 10, 4.0);
	for (int i = 0; i < 5; i++)
		spike_add(&young, 3.0, &z);
	ck_assert(!spike_add(&young, 50.0, &z)); /* not enough history yet */
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_exit");
	TCase *tc = tcase_create("exit");
	tcase_add_test(tc, statuses_documented);
	tcase_add_test(tc, loss_scaler_halves_and_grows);
	tcase_add_test(tc, spikes_by_z_score);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
