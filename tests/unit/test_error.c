/*
 * test_error.c - the error table is consistent, and docs/errors.md is
 * exactly what the table generates (run with --write-docs FILE to
 * regenerate it: `make docs`).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "unit.h"

/* The markdown document generated from the table. Caller frees. */
static char *render_docs(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fprintf(
	    f,
	    "# Error codes\n\n"
	    "Generated from lib/base/errors.def by `make docs`; a unit test fails when this file "
	    "and the table differ.\n\n"
	    "Every error answer is `application/problem+json` with a stable `code`. "
	    "Validation errors (`validation_failed`) list one row per offending field in "
	    "`errors[]`, each with a JSON pointer and one of the field codes below.\n\n"
	    "## Request errors\n\n| code | HTTP status | meaning |\n|---|---|---|\n");
	for (int i = 1; i < ERR__COUNT; i++)
		if (err_info((err_code)i)->kind == ERR_KIND_REQ)
			fprintf(f, "| `%s` | %d | %s |\n", err_info((err_code)i)->code,
			        err_info((err_code)i)->status, err_info((err_code)i)->doc);
	fprintf(f, "\n## Field codes (inside `errors[]`)\n\n| code | meaning |\n|---|---|\n");
	for (int i = 1; i < ERR__COUNT; i++)
		if (err_info((err_code)i)->kind == ERR_KIND_FIELD)
			fprintf(f, "| `%s` | %s |\n", err_info((err_code)i)->code,
			        err_info((err_code)i)->doc);
	fprintf(f, "\n## Codes of a program's own work\n\n"
	           "No API answer carries these. The checkpoint store and the trainer's data "
	           "loader return them, beside `storage_io`, `storage_path_invalid`, "
	           "`checkpoint_not_found` and `internal_error` (out of memory) above; the "
	           "trainer and the worker runtime report them by message and exit status "
	           "([trainer/README.md](../trainer/README.md)).\n\n"
	           "| code | meaning |\n|---|---|\n");
	for (int i = 1; i < ERR__COUNT; i++)
		if (err_info((err_code)i)->kind == ERR_KIND_RUN)
			fprintf(f, "| `%s` | %s |\n", err_info((err_code)i)->code,
			        err_info((err_code)i)->doc);
	fclose(f);
	return buf;
}

START_TEST(codes_unique_and_wellformed)
{
	for (int i = 0; i < ERR__COUNT; i++) {
		const err_info_t *a = err_info((err_code)i);
		ck_assert_int_eq(err_from_string(a->code), i);
		ck_assert_msg(a->status >= 200 && a->status < 600, "%s status", a->code);
		ck_assert_msg(strspn(a->code, "abcdefghijklmnopqrstuvwxyz_") == strlen(a->code),
		              "%s must be snake_case", a->code);
		ck_assert_msg(a->doc[0] >= 'a' && a->doc[0] <= 'z', "%s doc starts lower case",
		              a->code);
		ck_assert_msg(a->doc[strlen(a->doc) - 1] != '.', "%s doc ends without a period",
		              a->code);
		if (a->kind == ERR_KIND_FIELD)
			ck_assert_int_eq(a->status, 422);
	}
	ck_assert_int_eq(err_from_string("no_such_code"), -1);
	ck_assert_str_eq(err_info((err_code)-5)->code, "internal_error");
	ck_assert_str_eq(err_info(ERR__COUNT)->code, "internal_error");
	ck_assert_int_eq(err_info(ERR_JOB_NOT_FOUND)->status, 404);
	ck_assert_int_eq(err_info(ERR_RATE_LIMITED)->status, 429);
	ck_assert_int_eq(err_info(ERR_DB_UNAVAILABLE)->status, 503);
}
END_TEST

START_TEST(docs_match_table)
{
	char *want = render_docs();
	char *have = unit_read_file(SOURCE_DIR "/docs/errors.md");
	ck_assert_msg(have != NULL, "docs/errors.md is missing: run `make docs`");
	ck_assert_msg(strcmp(want, have) == 0, "docs/errors.md is stale: run `make docs`");
	free(want);
	free(have);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, codes_unique_and_wellformed);
	tcase_add_test(tc, docs_match_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-docs") == 0) {
		FILE *f = fopen(argv[2], "w");
		char *doc = render_docs();
		if (!f || fputs(doc, f) < 0 || fclose(f) != 0) {
			fprintf(stderr, "could not write \"%s\"\n", argv[2]);
			return 1;
		}
		free(doc);
		return 0;
	}
	SRunner *sr = srunner_create(make_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
