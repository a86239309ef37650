/*
 * test_sched_batch.c - an attempt's batch script: the worker's path in
 * single quotes with the attempt's slot count, only the overrides the
 * retry policy writes, and refusals for a path that could end the quoted
 * word, an unknown override and a buffer the text does not fit.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "unit.h"

#define WORKER "/opt/trainyard/bin/trainyard-worker"

static sched s; /* batch_script reads only worker_bin */

static dispatch_item item(int nodes, int ranks_per_node)
{
	dispatch_item it;
	memset(&it, 0, sizeof(it));
	snprintf(it.job_id, sizeof(it.job_id), "0b5e2c9a-6f0e-4d47-9a51-3c1f2e7d8a10");
	snprintf(it.attempt_id, sizeof(it.attempt_id), "7c1d9e44-2b3a-4f6e-8d0c-5a9b1e2f3c4d");
	it.number = 2;
	it.nodes = nodes;
	it.ranks_per_node = ranks_per_node;
	it.gpus_per_node = ranks_per_node;
	it.time_limit_minutes = 60;
	return it;
}

static void set_worker(const char *path)
{
	memset(&s, 0, sizeof(s));
	snprintf(s.worker_bin, sizeof(s.worker_bin), "%s", path);
}

/* The line of text that starts with prefix, copied to out, or fails. */
static void line_starting(const char *text, const char *prefix, char *out, size_t n)
{
	size_t len = strlen(prefix);
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t l = end ? (size_t)(end - p) : strlen(p);
		if (l >= len && strncmp(p, prefix, len) == 0) {
			ck_assert(l < n);
			memcpy(out, p, l);
			out[l] = '\0';
			return;
		}
		p += l + (end ? 1 : 0);
	}
	ck_abort_msg("no line starts with \"%s\" in:\n%s", prefix, text);
}

/* 2 nodes x 8 ranks: --slots 16; a shell script ending in a newline. */
START_TEST(script_execs_quoted_worker)
{
	set_worker(WORKER);
	dispatch_item it = item(2, 8);
	char out[4096], exec_line[512];
	ck_assert_int_eq(batch_script(&s, &it, out, sizeof(out)), 0);
	ck_assert_msg(strncmp(out, "#!/bin/sh\n", 10) == 0, "script:\n%s", out);
	ck_assert(out[strlen(out) - 1] == '\n');
	line_starting(out, "exec ", exec_line, sizeof(exec_line));
	ck_assert_str_eq(exec_line, "exec '" WORKER "' attempt --slots 16");

	/* 3 nodes x 4 ranks: 12 */
	it = item(3, 4);
	ck_assert_int_eq(batch_script(&s, &it, out, sizeof(out)), 0);
	line_starting(out, "exec ", exec_line, sizeof(exec_line));
	ck_assert_str_eq(exec_line, "exec '" WORKER "' attempt --slots 12");
}
END_TEST

/* A path with a space stays one word inside the quotes. */
START_TEST(script_quotes_path_with_space)
{
	set_worker("/opt/train yard/worker");
	dispatch_item it = item(1, 1);
	char out[4096], exec_line[512];
	ck_assert_int_eq(batch_script(&s, &it, out, sizeof(out)), 0);
	line_starting(out, "exec ", exec_line, sizeof(exec_line));
	ck_assert_str_eq(exec_line, "exec '/opt/train yard/worker' attempt --slots 1");
}
END_TEST

/* The retry policy's override reaches the worker as --set '...'. */
START_TEST(known_override_is_set)
{
	set_worker(WORKER);
	dispatch_item it = item(2, 8);
	snprintf(it.overrides[0], sizeof(it.overrides[0]), "training.recompute=full");
	it.n_overrides = 1;
	char out[4096], exec_line[512];
	ck_assert_int_eq(batch_script(&s, &it, out, sizeof(out)), 0);
	line_starting(out, "exec ", exec_line, sizeof(exec_line));
	ck_assert_str_eq(exec_line,
	                 "exec '" WORKER "' attempt --slots 16 --set 'training.recompute=full'");
}
END_TEST

/* Anything else is refused, also after a known one. */
START_TEST(unknown_override_refused)
{
	static const char *const bad[] = {
	    "training.lr=1",
	    "training.recompute=full'; rm -rf /; '",
	    "training.recompute=selective",
	    "",
	};
	set_worker(WORKER);
	char out[4096];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dispatch_item it = item(1, 8);
		snprintf(it.overrides[0], sizeof(it.overrides[0]), "%s", bad[i]);
		it.n_overrides = 1;
		ck_assert_msg(batch_script(&s, &it, out, sizeof(out)) == -1, "\"%s\" accepted",
		              bad[i]);

		it = item(1, 8);
		snprintf(it.overrides[0], sizeof(it.overrides[0]), "training.recompute=full");
		snprintf(it.overrides[1], sizeof(it.overrides[1]), "%s", bad[i]);
		it.n_overrides = 2;
		ck_assert_msg(batch_script(&s, &it, out, sizeof(out)) == -1,
		              "\"%s\" accepted after a known one", bad[i]);
	}
}
END_TEST

/* A quote or newline in the worker's path could end the word: refused. */
START_TEST(worker_path_with_quote_or_newline_refused)
{
	static const char *const bad[] = {
	    "/opt/it's/worker",
	    "/opt/x'; rm -rf /; '",
	    "/opt/worker\nrm -rf /",
	    "'",
	};
	char out[4096];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_worker(bad[i]);
		dispatch_item it = item(1, 8);
		ck_assert_msg(batch_script(&s, &it, out, sizeof(out)) == -1, "path %zu accepted",
		              i);
	}
}
END_TEST

/*
 * A buffer of exactly the script's length has no room for its NUL: -1.
 * One more byte: 0, and the same text. Smaller buffers, with or without an
 * override, are all refused.
 */
START_TEST(small_buffer_refused)
{
	set_worker(WORKER);
	dispatch_item it = item(2, 8);
	snprintf(it.overrides[0], sizeof(it.overrides[0]), "training.recompute=full");
	it.n_overrides = 1;
	char full[4096], out[4096];
	ck_assert_int_eq(batch_script(&s, &it, full, sizeof(full)), 0);
	size_t len = strlen(full);
	ck_assert_int_eq(batch_script(&s, &it, out, len + 1), 0);
	ck_assert_str_eq(out, full);
	for (size_t n = 1; n <= len; n++)
		ck_assert_msg(batch_script(&s, &it, out, n) == -1, "fits in %zu of %zu", n, len);
	it.n_overrides = 0;
	ck_assert_int_eq(batch_script(&s, &it, full, sizeof(full)), 0);
	len = strlen(full);
	ck_assert_int_eq(batch_script(&s, &it, out, len), -1);
	ck_assert_int_eq(batch_script(&s, &it, out, 16), -1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *su = suite_create("sched_batch");
	TCase *t = tcase_create("script");
	tcase_add_test(t, script_execs_quoted_worker);
	tcase_add_test(t, script_quotes_path_with_space);
	tcase_add_test(t, known_override_is_set);
	tcase_add_test(t, unknown_override_refused);
	tcase_add_test(t, worker_path_with_quote_or_newline_refused);
	tcase_add_test(t, small_buffer_refused);
	suite_add_tcase(su, t);
	return su;
}

UNIT_MAIN()
