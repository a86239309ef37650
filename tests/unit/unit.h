/*
 * unit.h - shared main() for the check-based unit test programs.
 *
 * A test file defines `static Suite *make_suite(void)` and ends with
 * UNIT_MAIN(). The program exits non-zero when any case fails.
 */
#ifndef TY_UNIT_H
#define TY_UNIT_H

#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file at path, NUL-terminated (caller frees), or NULL. */
static inline char *unit_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0, n;
	char chunk[4096];
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		char *nb = realloc(buf, len + n + 1);
		if (!nb) {
			free(buf);
			fclose(f);
			return NULL;
		}
		buf = nb;
		memcpy(buf + len, chunk, n);
		len += n;
	}
	fclose(f);
	if (!buf)
		buf = calloc(1, 1);
	else
		buf[len] = '\0';
	return buf;
}

/*
 * Call each(rel, text, arg) for every .c file of the folders dirs[0..n)
 * below SOURCE_DIR, in name order: rel is its path from there
 * ("worker/main.c"), text its contents (each may change them; freed after).
 * For the tests that hold a rule over the sources.
 */
static inline void unit_each_source(const char *const *dirs, size_t n,
                                    void (*each)(const char *rel, char *text, void *arg), void *arg)
{
	for (size_t d = 0; d < n; d++) {
		char pattern[1024];
		glob_t g;
		snprintf(pattern, sizeof(pattern), "%s/%s/*.c", SOURCE_DIR, dirs[d]);
		ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
		for (size_t i = 0; i < g.gl_pathc; i++) {
			char *text = unit_read_file(g.gl_pathv[i]);
			ck_assert_ptr_nonnull(text);
			each(g.gl_pathv[i] + strlen(SOURCE_DIR) + 1, text, arg);
			free(text);
		}
		globfree(&g);
	}
}

/* A file a source lint lets hold what it counts, how much (below 0: any), and why. */
typedef struct unit_allowance {
	const char *file; /* its path from the source tree: "lib/base/storage.c" */
	int count;
	const char *why;
} unit_allowance;

/* What unit_lint_sources() walks with. */
typedef struct unit_lint {
	int (*count)(char *text);
	const unit_allowance *allowed;
	size_t n_allowed;
	const char *what;
	char *failures;
	size_t n;
} unit_lint;

static inline void unit_lint_one(const char *rel, char *text, void *arg)
{
	unit_lint *l = arg;
	int k = l->count(text), want = 0;
	for (size_t i = 0; i < l->n_allowed; i++)
		if (strcmp(l->allowed[i].file, rel) == 0)
			want = l->allowed[i].count;
	size_t len = strlen(l->failures);
	if (want >= 0 && k != want)
		snprintf(l->failures + len, l->n - len, "%s: %d %s, %d allowed; ", rel, k, l->what,
		         want);
}

/*
 * The source lints' walk: every C file of lib/'s layers, api/, scheduler/
 * and worker/, whose text count() measures; a file may hold as much as
 * its row of allowed[0..n_allowed) says, else none.
 * OUT: failures, "" or one "FILE: N WHAT, M allowed; " for each file that
 * differs.
 */
static inline void unit_lint_sources(int (*count)(char *text), const unit_allowance *allowed,
                                     size_t n_allowed, const char *what, char *failures, size_t n)
{
	static const char *const dirs[] = {"lib/*", "api", "scheduler", "worker"};
	unit_lint l = {count, allowed, n_allowed, what, failures, n};
	failures[0] = '\0';
	unit_each_source(dirs, sizeof(dirs) / sizeof(dirs[0]), unit_lint_one, &l);
}

#define UNIT_MAIN()                                                                                \
	int main(void)                                                                             \
	{                                                                                          \
		SRunner *sr = srunner_create(make_suite());                                        \
		srunner_run_all(sr, CK_NORMAL);                                                    \
		int failed = srunner_ntests_failed(sr);                                            \
		srunner_free(sr);                                                                  \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                       \
	}

#endif
