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
