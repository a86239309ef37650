/*
 * test_job_fields.c - one writer of a job's state_reason and attempts:
 * lib/job/jobstate.c (its transitions, jobstate_note() and
 * jobstate_attempts_add()). This reads the SQL in the string literals of
 * lib/, api/, scheduler/ and worker/ and fails on any other assignment of
 * either column, unless the table below says why it is not a job's.
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "unit.h"

static const unit_allowance allowed[] = {
    {"lib/job/jobstate.c", -1, "the writer"},
    {"api/webhook_send.c", 1, "webhook_deliveries.attempts: a delivery's, not a job's"},
};

/*
 * The assignments "state_reason =" and "attempts =" (any spaces, not "==",
 * not a member like "d.attempts") inside the string literals of text.
 */
static int count_writes(const char *text)
{
	static const char *const cols[] = {"state_reason", "attempts"};
	int n = 0;
	bool in_str = false;
	for (const char *p = text; *p; p++) {
		if (!in_str) {
			if (p[0] == '/' && p[1] == '*') {
				const char *e = strstr(p + 2, "*/");
				p = e ? e + 1 : p + strlen(p) - 1;
			} else if (p[0] == '/' && p[1] == '/') {
				p += strcspn(p, "\n") - 1;
			} else if (*p == '\'' && p[1] && p[2] == '\'') {
				p += 2; /* a character constant such as '"' */
			} else if (*p == '\'' && p[1] == '\\' && p[2] && p[3] == '\'') {
				p += 3;
			} else if (*p == '"') {
				in_str = true;
			}
			continue;
		}
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == '"') {
			in_str = false;
			continue;
		}
		for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
			size_t k = strlen(cols[c]);
			if (strncmp(p, cols[c], k) != 0 ||
			    (p > text && (p[-1] == '.' || p[-1] == '_')))
				continue;
			const char *q = p + k;
			while (*q == ' ')
				q++;
			if (q[0] == '=' && q[1] != '=')
				n++;
		}
	}
	return n;
}

START_TEST(counts_what_it_should)
{
	ck_assert_int_eq(count_writes("x = \"UPDATE jobs SET state_reason = $2\";"), 1);
	ck_assert_int_eq(count_writes("x = \"SET attempts=attempts + 1\";"), 1);
	ck_assert_int_eq(count_writes("x = \"SET attempts = d.attempts + 1\";"), 1);
	ck_assert_int_eq(count_writes("/* state_reason = */ int attempts = 0;"), 0);
	ck_assert_int_eq(count_writes("x = \"WHERE j.state_reason = $2\";"), 0);
	ck_assert_int_eq(count_writes("c = '\"'; y = \"attempts = 1\";"), 1);
}
END_TEST

static int writes_in(char *text)
{
	return count_writes(text);
}

START_TEST(one_writer_of_job_fields)
{
	char failures[4096];
	unit_lint_sources(writes_in, allowed, sizeof(allowed) / sizeof(allowed[0]), "writes",
	                  failures, sizeof(failures));
	ck_assert_msg(failures[0] == '\0',
	              "write a job's state_reason and attempts through lib/job/jobstate.h: %s",
	              failures);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("job_fields");
	TCase *t = tcase_create("lint");
	tcase_add_test(t, counts_what_it_should);
	tcase_add_test(t, one_writer_of_job_fields);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
