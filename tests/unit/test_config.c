/*
 * test_config.c - the settings table, its loader, and the documents that
 * describe it: README.md's configuration reference and
 * deploy/trainyard.env.example must list every setting with its default.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "unit.h"

/* RET: the line of text containing needle, copied into line; or NULL. */
static const char *line_with(const char *text, const char *needle, char *line, size_t n)
{
	const char *hit = strstr(text, needle);
	if (!hit)
		return NULL;
	const char *start = hit;
	while (start > text && start[-1] != '\n')
		start--;
	size_t len = strcspn(start, "\n");
	snprintf(line, n, "%.*s", (int)len, start);
	return line;
}

START_TEST(readme_lists_every_setting)
{
	char *readme = unit_read_file(SOURCE_DIR "/README.md");
	ck_assert_ptr_nonnull(readme);
	size_t n;
	const cfg_option *o = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		char needle[96], line[1024], def[160];
		snprintf(needle, sizeof(needle), "| `%s` |", o[i].env);
		ck_assert_msg(line_with(readme, needle, line, sizeof(line)),
		              "README.md has no row for %s", o[i].env);
		snprintf(def, sizeof(def), "| `%s` |", o[i].def[0] ? o[i].def : "(empty)");
		ck_assert_msg(strstr(line, def), "README.md row of %s lacks default %s", o[i].env,
		              def);
	}
	free(readme);
}
END_TEST

START_TEST(example_env_lists_every_setting)
{
	char *ex = unit_read_file(SOURCE_DIR "/deploy/trainyard.env.example");
	ck_assert_ptr_nonnull(ex);
	size_t n;
	const cfg_option *o = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		char needle[256];
		snprintf(needle, sizeof(needle), "\n%s=%s\n", o[i].env, o[i].def);
		bool found = strstr(ex, needle) != NULL;
		if (!found) {
			/* a value with spaces may be quoted */
			snprintf(needle, sizeof(needle), "\n%s='%s'\n", o[i].env, o[i].def);
			found = strstr(ex, needle) != NULL;
		}
		if (!found) {
			snprintf(needle, sizeof(needle), "\n%s=\"%s\"\n", o[i].env, o[i].def);
			found = strstr(ex, needle) != NULL;
		}
		if (!found) { /* a value that must not be written down is commented out */
			snprintf(needle, sizeof(needle), "\n# %s=%s\n", o[i].env, o[i].def);
			found = strstr(ex, needle) != NULL;
		}
		ck_assert_msg(found, "deploy/trainyard.env.example lacks %s=%s", o[i].env,
		              o[i].def);
	}
	free(ex);
}
END_TEST

START_TEST(defaults_load_and_ranges_hold)
{
	size_t n;
	const cfg_option *o = config_options(&n);
	for (size_t i = 0; i < n; i++)
		unsetenv(o[i].env);
	ty_config c;
	char err[256];
	ck_assert_int_eq(config_load(&c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.listen, "127.0.0.1:8080");
	ck_assert_int_eq(c.body_limit, 1048576);
	ck_assert_int_eq(c.migrate_on_start, 0);

	setenv("TRAINYARD_THREADS", "0", 1);
	ck_assert_int_eq(config_load(&c, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "TRAINYARD_THREADS"));
	setenv("TRAINYARD_THREADS", "12x", 1);
	ck_assert_int_eq(config_load(&c, err, sizeof(err)), -1);
	setenv("TRAINYARD_THREADS", "12", 1);
	ck_assert_int_eq(config_load(&c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.threads, 12);
	setenv("TRAINYARD_DB", "host=/tmp dbname=x", 1);
	ck_assert_int_eq(config_load(&c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.db, "host=/tmp dbname=x");
	unsetenv("TRAINYARD_THREADS");
	unsetenv("TRAINYARD_DB");
}
END_TEST

/* The storage and data roots and the spool: absolute paths, every default too. */
START_TEST(paths_must_be_absolute)
{
	size_t n;
	const cfg_option *o = config_options(&n);
	int paths = 0;
	for (size_t i = 0; i < n; i++)
		if (o[i].type == CFG_PATH) {
			ck_assert_msg(o[i].def[0] == '/', "%s's default is not absolute", o[i].env);
			paths++;
		}
	ck_assert_int_eq(paths, 3);
	ty_config c;
	char err[256];
	const char *env[] = {"TRAINYARD_STORAGE_ROOT", "TRAINYARD_DATA_ROOT",
	                     "TRAINYARD_SCHED_SPOOL"};
	for (int k = 0; k < 3; k++) {
		setenv(env[k], "var/x", 1);
		ck_assert_int_eq(config_load(&c, err, sizeof(err)), -1);
		ck_assert_ptr_nonnull(strstr(err, env[k]));
		ck_assert_ptr_nonnull(strstr(err, "must be an absolute path"));
		ck_assert_ptr_nonnull(strstr(err, "\"var/x\""));
		setenv(env[k], "/srv/trainyard/x", 1);
		ck_assert_int_eq(config_load(&c, err, sizeof(err)), 0);
		unsetenv(env[k]);
	}
	ck_assert_int_eq(config_load(&c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.storage_root, "/var/lib/trainyard/storage");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, readme_lists_every_setting);
	tcase_add_test(tc, example_env_lists_every_setting);
	tcase_add_test(tc, defaults_load_and_ranges_hold);
	tcase_add_test(tc, paths_must_be_absolute);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
