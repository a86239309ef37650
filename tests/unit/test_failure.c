/*
 * test_failure.c - the one table of failure classes (lib/failure.def):
 * names and exit statuses distinct, the lookups agree with the rows, and
 * scheduler/README.md's table of classes says exactly what the rows say.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "failure.h"
#include "unit.h"

START_TEST(names_and_statuses_distinct)
{
	for (int i = 0; i < FAILURE__COUNT; i++) {
		const char *n = failure_name((failure_class)i);
		ck_assert_uint_eq(strspn(n, "abcdefghijklmnopqrstuvwxyz_"), strlen(n));
		ck_assert_int_eq(failure_by_name(n), i);
		for (int j = 0; j < i; j++) {
			ck_assert_str_ne(n, failure_name((failure_class)j));
			if (failure_is_exit((failure_class)i) && failure_is_exit((failure_class)j))
				ck_assert_int_ne(failure_status((failure_class)i),
				                 failure_status((failure_class)j));
		}
		if (failure_is_exit((failure_class)i))
			ck_assert_str_eq(train_exit_name(failure_status((failure_class)i)), n);
	}
	ck_assert_int_eq(failure_by_name("paused"), FAILURE_NONE);
	ck_assert_int_eq(failure_by_name(NULL), FAILURE_NONE);
	ck_assert_str_eq(failure_name(FAILURE_NONE), "unknown");
	ck_assert_str_eq(train_exit_name(99), "unknown");
	ck_assert_int_eq(failure_retry_rule(FAILURE_NONE), FAILURE_RETRY_SAME);
}
END_TEST

START_TEST(the_decisions_written_out)
{
	/* by hand, as the runtime and the scheduler have always decided */
	ck_assert_int_eq(TRAIN_OOM, 11);
	ck_assert_int_eq(TRAIN_COMM, 12);
	ck_assert_int_eq(failure_status(FAILURE_RANK_LOST), TRAIN_COMM);
	ck_assert_int_eq(failure_status(FAILURE_LAUNCH_FAILED), TRAIN_INTERNAL);
	ck_assert_int_eq(failure_status(FAILURE_HANG), -1);
	static const failure_class falls_back[] = {FAILURE_RANK_LOST, FAILURE_OOM, FAILURE_COMM};
	int n = 0;
	for (int i = 0; i < FAILURE__COUNT; i++)
		n += failure_falls_back((failure_class)i);
	ck_assert_int_eq(n, 3);
	for (size_t i = 0; i < 3; i++)
		ck_assert(failure_falls_back(falls_back[i]));
	ck_assert_int_eq(failure_retry_rule(FAILURE_NODE_FAILURE), FAILURE_RETRY_FEWER_NODES);
	ck_assert_int_eq(failure_retry_rule(FAILURE_RANK_LOST), FAILURE_RETRY_FEWER_NODES);
	ck_assert_int_eq(failure_retry_rule(FAILURE_OOM), FAILURE_RETRY_RECOMPUTE);
	ck_assert_int_eq(failure_retry_rule(FAILURE_CANCELLED), FAILURE_RETRY_NEVER);
	ck_assert_int_eq(failure_retry_rule(FAILURE_DATA), FAILURE_RETRY_NEVER);
	ck_assert_int_eq(failure_retry_rule(FAILURE_HANG), FAILURE_RETRY_SAME);
}
END_TEST

START_TEST(scheduler_readme_lists_every_class)
{
	char *doc = unit_read_file(SOURCE_DIR "/scheduler/README.md");
	ck_assert_ptr_nonnull(doc);
	/* the table's rows: from its header to the first line that is not a row */
	const char *p = strstr(doc, "| class | exit status |");
	ck_assert_ptr_nonnull(p);
	int rows = 0;
	p = strchr(strchr(p, '\n') + 1, '\n'); /* past the header and its |---| line */
	for (; p && strncmp(p + 1, "| ", 2) == 0; p = strchr(p + 1, '\n'))
		rows += strncmp(p + 1, "| `", 3) == 0;
	ck_assert_int_eq(rows, FAILURE__COUNT);
	for (int i = 0; i < FAILURE__COUNT; i++) {
		failure_class f = (failure_class)i;
		char status[16], line[512];
		if (failure_status(f) < 0)
			snprintf(status, sizeof(status), "-");
		else
			snprintf(status, sizeof(status), "%d", failure_status(f));
		snprintf(line, sizeof(line), "| `%s` | %s | %s | %s | %s |", failure_name(f),
		         status, failure_falls_back(f) ? "falls back" : "ends",
		         failure_retry_text(failure_retry_rule(f)), failure_doc(f));
		ck_assert_msg(strstr(doc, line), "scheduler/README.md lacks the row: %s", line);
	}
	free(doc);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("failure");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, names_and_statuses_distinct);
	tcase_add_test(tc, the_decisions_written_out);
	tcase_add_test(tc, scheduler_readme_lists_every_class);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
