/*
 * test_specopt.c - --spec, --set and --layout as trainyard-train and
 * trainyard-worker take them (lib/job/specopt.h): in every spelling getopt_long
 * allows, every --set kept in order, the program's own options left to
 * it; and no program spells those options again itself.
 */
#include <check.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "specopt.h"
#include "unit.h"

/* A program's table: the three, and one option of its own. */
static const struct option opts[] = {SPECOPT_ROW_SPEC,
                                     SPECOPT_ROW_SET,
                                     SPECOPT_ROW_LAYOUT,
                                     {"ckpt-dir", required_argument, 0, 'c'},
                                     {0, 0, 0, 0}};

/* Parse args as a program's loop does. OUT: *s, *ckpt (its own option). RET: getopt's '?' count. */
static int parse(const char *const *args, specopt *s, const char **ckpt)
{
	static char buf[16][128];
	char *argv[17];
	int argc = 0, c, unknown = 0;
	for (; args[argc]; argc++) {
		snprintf(buf[argc], sizeof(buf[argc]), "%s", args[argc]);
		argv[argc] = buf[argc];
	}
	argv[argc] = NULL;
	ck_assert_int_eq(specopt_init(s, argc), 0);
	*ckpt = NULL;
	optind = 0; /* glibc: start again */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (specopt_take(s, c, optarg))
			continue;
		if (c == 'c')
			*ckpt = optarg;
		else
			unknown++;
	}
	return unknown;
}

START_TEST(takes_the_three_in_every_spelling)
{
	static const char *const args[] = {"train",
	                                   "--spec",
	                                   "a.json",
	                                   "--set",
	                                   "model.layers=2",
	                                   "--ckpt-dir",
	                                   "ck",
	                                   "--set=data.shuffle=false",
	                                   "--layout=data_parallel=2",
	                                   "--spec=b.json",
	                                   "--set",
	                                   "parallel.micro_batch=4",
	                                   NULL};
	specopt s;
	const char *ckpt;
	ck_assert_int_eq(parse(args, &s, &ckpt), 0);
	ck_assert_str_eq(s.spec, "b.json"); /* the last wins */
	ck_assert_str_eq(s.layout, "data_parallel=2");
	ck_assert_int_eq(s.n_overrides, 3);
	ck_assert_str_eq(s.overrides[0], "model.layers=2");
	ck_assert_str_eq(s.overrides[1], "data.shuffle=false");
	ck_assert_str_eq(s.overrides[2], "parallel.micro_batch=4");
	ck_assert_str_eq(ckpt, "ck");
	specopt_release(&s);
	ck_assert_ptr_null(s.overrides);
}
END_TEST

START_TEST(leaves_the_rest_to_the_program)
{
	static const char *const args[] = {"run", "--ckpt-dir", "ck", "--bogus", "-h", NULL};
	specopt s;
	const char *ckpt;
	ck_assert_int_eq(parse(args, &s, &ckpt), 2); /* --bogus, and -h the program's own */
	ck_assert_ptr_null(s.spec);
	ck_assert_ptr_null(s.layout);
	ck_assert_int_eq(s.n_overrides, 0);
	ck_assert_str_eq(ckpt, "ck");
	ck_assert(!specopt_take(&s, 'c', (char *)"x"));
	ck_assert(!specopt_take(&s, '?', NULL));
	specopt_release(&s);
}
END_TEST

/* Every --set of a full command line fits: one value per two arguments at most. */
START_TEST(room_for_every_set)
{
	static const char *const args[] = {"t", "--set", "a=1", "--set", "b=2", "--set=c=3", NULL};
	specopt s;
	const char *ckpt;
	ck_assert_int_eq(parse(args, &s, &ckpt), 0);
	ck_assert_int_eq(s.n_overrides, 3);
	specopt_release(&s);
}
END_TEST

enum { FAILURES_MAX = 2048 };

/* Add rel to failures (char[FAILURES_MAX]) when it spells a row of the three itself. */
static void check_rows(const char *rel, char *text, void *failures)
{
	static const char *const rows[] = {"\"spec\", required_argument",
	                                   "\"set\", required_argument",
	                                   "\"layout\", required_argument"};
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
		if (strstr(text, rows[r])) {
			size_t len = strlen(failures);
			snprintf((char *)failures + len, FAILURES_MAX - len, "%s: %s; ", rel,
			         rows[r]);
		}
}

/* No program's source spells the three options' getopt rows itself. */
START_TEST(one_spelling_of_the_options)
{
	static const char *const dirs[] = {"trainer", "worker", "scheduler", "api", "cli"};
	char failures[FAILURES_MAX] = "";
	unit_each_source(dirs, sizeof(dirs) / sizeof(dirs[0]), check_rows, failures);
	ck_assert_msg(failures[0] == '\0',
	              "take --spec, --set and --layout through lib/job/specopt.h: %s", failures);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("specopt");
	TCase *t = tcase_create("parse");
	tcase_add_test(t, takes_the_three_in_every_spelling);
	tcase_add_test(t, leaves_the_rest_to_the_program);
	tcase_add_test(t, room_for_every_set);
	tcase_add_test(t, one_spelling_of_the_options);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
