/*
 * unit.h - shared main() for the check-based unit test programs.
 *
 * A test file defines `static Suite *make_suite(void)` and ends with
 * UNIT_MAIN(). The program exits non-zero when any case fails.
 */
#ifndef TY_UNIT_H
#define TY_UNIT_H

#include <check.h>
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
 * The source lints' walk: every C file of lib/'s layers, api/, scheduler/
 * and worker/, whose text count() measures and allowed() says how much of
 * it the file may hold (by its path from the source tree; below 0: any).
 * OUT: failures, "" or one "FILE: N WHAT, M allowed; " for each file that
 * differs.
 */
static inline void unit_lint_sources(int (*count)(char *text), int (*allowed)(const char *rel),
                                     const char *what, char *failures, size_t n)
{
	static const char *const dirs[] = {"lib/*", "api", "scheduler", "worker"};
	failures[0] = '\0';
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "ls %s/%s/*.c", SOURCE_DIR, dirs[d]);
		FILE *ls = popen(cmd, "r");
		ck_assert_ptr_nonnull(ls);
		char path[1024];
		while (fgets(path, sizeof(path), ls)) {
			path[strcspn(path, "\n")] = '\0';
			char *text = unit_read_file(path);
			ck_assert_ptr_nonnull(text);
			int k = count(text);
			free(text);
			const char *rel = path + strlen(SOURCE_DIR) + 1;
			int want = allowed(rel);
			size_t len = strlen(failures);
			if (want >= 0 && k != want)
				snprintf(failures + len, n - len, "%s: %d %s, %d allowed; ", rel, k,
				         what, want);
		}
		pclose(ls);
	}
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
