/*
 * test_failure.c - the one table of failure classes (lib/job/failure.def):
 * names and exit statuses distinct, the lookups agree with the rows,
 * scheduler/README.md's table of classes says exactly what the rows say,
 * and the other places that list the classes list exactly its names: the
 * CHECK constraint on job_attempts.failure_class
 * (migrations/0017_failure_class_check.sql) and the API's AttemptFinish
 * failure_class (api/openapi.json).
 */
#include <check.h>
#include <jansson.h>
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
	ck_assert_int_eq(failure_status(FAILURE_HANG),
	                 TRAIN_COMM); /* a command job's silent ranks */
	ck_assert_int_eq(failure_status(FAILURE_TIMEOUT), -1);
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

START_TEST(failures_and_reasons)
{
	/* by hand: an attempt that ends ok or cancelled has not failed */
	int not_failures = 0;
	for (int i = 0; i < FAILURE__COUNT; i++)
		not_failures += !failure_is_failure((failure_class)i);
	ck_assert_int_eq(not_failures, 2);
	ck_assert(!failure_is_failure(FAILURE_OK));
	ck_assert(!failure_is_failure(FAILURE_CANCELLED));
	ck_assert(!failure_is_failure(FAILURE_NONE));
	ck_assert(failure_is_failure(FAILURE_STOPPED));
	ck_assert(failure_is_failure(FAILURE_FAILED));
	ck_assert(failure_is_failure(failure_by_name("rank_lost")));
	ck_assert(!failure_is_failure(failure_by_name("")));
	/* a reason that names a class is it; any other is failed, never unknown */
	ck_assert_int_eq(failure_of_reason("rank_lost"), FAILURE_RANK_LOST);
	ck_assert_int_eq(failure_of_reason("storage_quota_exceeded"), FAILURE_STORAGE_QUOTA);
	ck_assert_int_eq(failure_of_reason("NCCL timeout on rank 3"), FAILURE_FAILED);
	ck_assert_int_eq(failure_of_reason("rank_lost "), FAILURE_FAILED);
	ck_assert_int_eq(failure_of_reason("Rank_Lost"), FAILURE_FAILED);
	ck_assert_int_eq(failure_of_reason("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"),
	                 FAILURE_FAILED);
	ck_assert_int_eq(failure_of_reason(""), FAILURE_FAILED);
	ck_assert_int_eq(failure_of_reason(NULL), FAILURE_FAILED);
	ck_assert_int_eq(failure_retry_rule(FAILURE_STORAGE_QUOTA), FAILURE_RETRY_NEVER);
	ck_assert_int_eq(failure_status(FAILURE_STORAGE_QUOTA), TRAIN_STOPPED);
}
END_TEST

/*
 * Each class of failure.def is named once in names (n of them), and
 * nothing else is: what is not a class is reported as where's.
 */
static void names_are_the_classes(const char *const *names, int n, const char *where)
{
	int seen[FAILURE__COUNT] = {0};
	for (int i = 0; i < n; i++) {
		failure_class f = failure_by_name(names[i]);
		ck_assert_msg(f != FAILURE_NONE, "%s names \"%s\", which lib/job/failure.def lacks",
		              where, names[i]);
		ck_assert_msg(seen[f]++ == 0, "%s names \"%s\" twice", where, names[i]);
	}
	for (int i = 0; i < FAILURE__COUNT; i++)
		ck_assert_msg(seen[i], "%s lacks lib/job/failure.def's class \"%s\"", where,
		              failure_name((failure_class)i));
}

/*
 * The quoted names of the SQL list that starts at p ("('', 'ok', ...)"),
 * at most max, in names (pointers into the text, whose quotes end them).
 * RET how many, '' left out; *empty says whether '' is one.
 */
static int sql_list(char *p, const char **names, int max, bool *empty)
{
	int n = 0;
	*empty = false;
	char *end = strchr(p, ')');
	ck_assert_ptr_nonnull(end);
	for (char *q = strchr(p, '\''); q && q < end; q = strchr(q + 1, '\'')) {
		char *close = strchr(q + 1, '\'');
		ck_assert_ptr_nonnull(close);
		*close = '\0';
		if (q[1] == '\0')
			*empty = true;
		else if (n < max)
			names[n++] = q + 1;
		else
			ck_abort_msg("a list of 0017 is twice as long as lib/job/failure.def");
		q = close;
	}
	return n;
}

START_TEST(migration_checks_every_class)
{
	char *sql = unit_read_file(SOURCE_DIR "/migrations/0017_failure_class_check.sql");
	ck_assert_ptr_nonnull(sql);
	/* the constraint's list, and the list the rows before it are held to */
	static const char *const lists[] = {"CHECK (failure_class IN (",
	                                    "WHERE failure_class NOT IN ("};
	for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
		char *p = strstr(sql, lists[k]);
		ck_assert_msg(p, "0017 lacks %s", lists[k]);
		const char *names[2 * FAILURE__COUNT];
		bool empty;
		int n = sql_list(p + strlen(lists[k]) - 1, names, 2 * FAILURE__COUNT, &empty);
		ck_assert_msg(empty, "0017's %s list lacks '' (no class)", lists[k]);
		names_are_the_classes(names, n, lists[k]);
	}
	free(sql);
}
END_TEST

START_TEST(openapi_finish_lists_every_class)
{
	json_error_t e;
	json_t *doc = json_load_file(SOURCE_DIR "/api/openapi.json", 0, &e);
	ck_assert_msg(doc, "api/openapi.json line %d: %s", e.line, e.text);
	const json_t *en = json_object_get(
	    json_object_get(
	        json_object_get(
	            json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
	                            "AttemptFinish"),
	            "properties"),
	        "failure_class"),
	    "enum");
	ck_assert_msg(json_is_array(en), "AttemptFinish.failure_class has no enum");
	const char *names[FAILURE__COUNT];
	size_t n = json_array_size(en);
	ck_assert_msg(n <= FAILURE__COUNT, "AttemptFinish.failure_class lists %zu names", n);
	for (size_t i = 0; i < n; i++) {
		names[i] = json_string_value(json_array_get(en, i));
		ck_assert_ptr_nonnull(names[i]);
	}
	names_are_the_classes(names, (int)n, "AttemptFinish.failure_class");
	json_decref(doc);
}
END_TEST

START_TEST(scheduler_readme_lists_every_class)
{
	char *doc = unit_read_file(SOURCE_DIR "/scheduler/README.md");
	ck_assert_ptr_nonnull(doc);
	/* the table's rows: from its header to the first line that is not a row */
	const char *p = strstr(doc, "| class | a failure | exit status |");
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
		snprintf(line, sizeof(line), "| `%s` | %s | %s | %s | %s | %s |", failure_name(f),
		         failure_is_failure(f) ? "yes" : "no", status,
		         failure_falls_back(f) ? "falls back" : "ends",
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
	tcase_add_test(tc, failures_and_reasons);
	tcase_add_test(tc, migration_checks_every_class);
	tcase_add_test(tc, openapi_finish_lists_every_class);
	tcase_add_test(tc, scheduler_readme_lists_every_class);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
