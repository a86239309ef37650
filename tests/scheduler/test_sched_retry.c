/*
 * test_sched_retry.c - the retry policy against retry.h's table: one node
 * fewer after a lost node or rank while the smallest rung still fits, full
 * recomputation once after running out of memory, the same configuration
 * for transient failures, no retry for permanent ones, the restart limit
 * and the doubling backoff with its cap.
 */
#include <check.h>
#include <string.h>

#include "retry.h"
#include "unit.h"

/* A first failed attempt of a 4-node job, 8 ranks a node, 5 restarts allowed. */
static retry_input input(const char *failure_class)
{
	retry_input in = {
	    .failure_class = failure_class,
	    .attempts = 1,
	    .max_restarts = 5,
	    .nodes = 4,
	    .ranks_per_node = 8,
	    .min_rung_ranks = 8,
	    .recompute_full = false,
	    .backoff_base_s = 10,
	};
	return in;
}

static void assert_why(const retry_decision *d, const char *cls)
{
	ck_assert_msg(d->why[0] != '\0', "%s: empty why", cls);
	ck_assert_msg(memchr(d->why, '\0', sizeof(d->why)) != NULL, "%s: why not terminated", cls);
}

/* ------------------------------------------------------------ lost nodes */

/*
 * node_failure and rank_lost: one node fewer while fewer x ranks_per_node
 * reaches min_rung_ranks. 8 ranks a node, smallest rung 24 ranks:
 *   4 nodes -> 3 (24 >= 24, retry); 3 nodes -> 2 (16 < 24, stop).
 */
START_TEST(lost_node_goes_one_node_fewer)
{
	static const char *const classes[] = {"node_failure", "rank_lost"};
	for (int i = 0; i < 2; i++) {
		retry_input in = input(classes[i]);
		in.min_rung_ranks = 24;
		retry_decision d = retry_decide(&in);
		ck_assert_msg(d.retry, "%s on 4 nodes: %s", classes[i], d.why);
		ck_assert_int_eq(d.nodes, 3);
		ck_assert(!d.set_recompute_full);
		assert_why(&d, classes[i]);

		in.nodes = 3;
		in.attempts = 2;
		d = retry_decide(&in);
		ck_assert_msg(!d.retry, "%s on 3 nodes: %s", classes[i], d.why);
		assert_why(&d, classes[i]);
	}
}
END_TEST

/* With the smallest rung of one rank a node is still needed: 1 node -> 0 stops. */
START_TEST(lost_node_needs_one_node_left)
{
	static const char *const classes[] = {"node_failure", "rank_lost"};
	for (int i = 0; i < 2; i++) {
		retry_input in = input(classes[i]);
		in.nodes = 2;
		in.min_rung_ranks = 1;
		retry_decision d = retry_decide(&in);
		ck_assert_msg(d.retry, "%s on 2 nodes: %s", classes[i], d.why);
		ck_assert_int_eq(d.nodes, 1);

		in.nodes = 1;
		in.min_rung_ranks = 0;
		d = retry_decide(&in);
		ck_assert_msg(!d.retry, "%s on 1 node: %s", classes[i], d.why);
		assert_why(&d, classes[i]);
	}
}
END_TEST

/* ------------------------------------------------------------ memory */

/* out_of_memory: full recomputation on the same nodes, once. */
START_TEST(out_of_memory_recomputes_once)
{
	retry_input in = input("out_of_memory");
	retry_decision d = retry_decide(&in);
	ck_assert_msg(d.retry, "%s", d.why);
	ck_assert(d.set_recompute_full);
	ck_assert_int_eq(d.nodes, 4);
	assert_why(&d, "out_of_memory");

	in.attempts = 2;
	in.recompute_full = true;
	d = retry_decide(&in);
	ck_assert_msg(!d.retry, "%s", d.why);
	assert_why(&d, "out_of_memory");
}
END_TEST

/* A command job's program has no recompute setting: the same configuration again. */
START_TEST(out_of_memory_of_an_own_program_retries_the_same)
{
	retry_input in = input("out_of_memory");
	in.own_program = true;
	retry_decision d = retry_decide(&in);
	ck_assert_msg(d.retry, "%s", d.why);
	ck_assert(!d.set_recompute_full);
	ck_assert_int_eq(d.nodes, 4);
	assert_why(&d, "same configuration");
}
END_TEST

/* ------------------------------------------------------------ transient, permanent */

/* The table's third row: the same configuration, nothing added. */
START_TEST(transient_keeps_configuration)
{
	static const char *const classes[] = {
	    "hang",   "timeout", "comm_failure",  "lost",     "preempted",
	    "failed", "stopped", "launch_failed", "internal",
	};
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		retry_input in = input(classes[i]);
		in.min_rung_ranks = 32; /* one node fewer would not fit: must not matter */
		ck_assert_msg(retry_class_transient(classes[i]), "%s", classes[i]);
		retry_decision d = retry_decide(&in);
		ck_assert_msg(d.retry, "%s: %s", classes[i], d.why);
		ck_assert_msg(d.nodes == 4, "%s: %d nodes", classes[i], d.nodes);
		ck_assert_msg(!d.set_recompute_full, "%s adds recompute", classes[i]);
		assert_why(&d, classes[i]);
	}
}
END_TEST

/* The table's last row, and a missing class: never retried, however many restarts are left. */
START_TEST(permanent_never_retries)
{
	static const char *const classes[] = {
	    "invalid_config",     "data_error", "numerical_failure",
	    "checkpoint_corrupt", "cancelled",  "",
	};
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		retry_input in = input(classes[i]);
		in.max_restarts = 100;
		ck_assert_msg(!retry_class_transient(classes[i]), "\"%s\"", classes[i]);
		retry_decision d = retry_decide(&in);
		ck_assert_msg(!d.retry, "\"%s\" retried: %s", classes[i], d.why);
		ck_assert(!d.set_recompute_full);
		assert_why(&d, classes[i]);
	}
	retry_input in = input(NULL);
	ck_assert(!retry_class_transient(NULL));
	retry_decision d = retry_decide(&in);
	ck_assert(!d.retry);
	assert_why(&d, "NULL");
}
END_TEST

/* ------------------------------------------------------------ restarts, backoff */

/*
 * max_restarts 3: attempts 1..3 have used 0..2 restarts and may retry;
 * attempt 4 has used all 3 and stops. max_restarts 0 never retries.
 */
START_TEST(max_restarts_exhausted)
{
	static const char *const classes[] = {"timeout", "node_failure", "out_of_memory"};
	for (int i = 0; i < 3; i++) {
		retry_input in = input(classes[i]);
		in.max_restarts = 3;
		for (int a = 1; a <= 3; a++) {
			in.attempts = a;
			retry_decision d = retry_decide(&in);
			ck_assert_msg(d.retry, "%s attempt %d: %s", classes[i], a, d.why);
		}
		in.attempts = 4;
		retry_decision d = retry_decide(&in);
		ck_assert_msg(!d.retry, "%s attempt 4: %s", classes[i], d.why);
		assert_why(&d, classes[i]);

		in.max_restarts = 0;
		in.attempts = 1;
		d = retry_decide(&in);
		ck_assert_msg(!d.retry, "%s with no restarts: %s", classes[i], d.why);
	}
}
END_TEST

/*
 * The k-th retry (after attempt k) waits base x 2^(k-1), at most 600 s.
 * Base 10: 10, 20, 40, 80, 160, 320, then 640 -> 600, and 600 from there.
 */
START_TEST(backoff_doubles_to_cap)
{
	static const int want[] = {10, 20, 40, 80, 160, 320, 600, 600};
	retry_input in = input("hang");
	in.max_restarts = 1000;
	for (int k = 1; k <= 8; k++) {
		in.attempts = k;
		retry_decision d = retry_decide(&in);
		ck_assert(d.retry);
		ck_assert_msg(d.backoff_s == want[k - 1], "retry %d waits %d, expected %d", k,
		              d.backoff_s, want[k - 1]);
	}
	/* far out the doubling must not overflow past the cap */
	in.attempts = 200;
	ck_assert_int_eq(retry_decide(&in).backoff_s, RETRY_BACKOFF_MAX_S);
	/* a base above the cap is cut to it at once */
	in.attempts = 1;
	in.backoff_base_s = 700;
	ck_assert_int_eq(retry_decide(&in).backoff_s, RETRY_BACKOFF_MAX_S);
	/* the other retrying rows back off alike: base 7, third retry 28 */
	in.backoff_base_s = 7;
	in.attempts = 3;
	in.failure_class = "node_failure";
	ck_assert_int_eq(retry_decide(&in).backoff_s, 28);
	in.failure_class = "out_of_memory";
	ck_assert_int_eq(retry_decide(&in).backoff_s, 28);
}
END_TEST

/* Base 0 stays 0 at every retry. */
START_TEST(backoff_zero_base_stays_zero)
{
	retry_input in = input("preempted");
	in.backoff_base_s = 0;
	in.max_restarts = 1000;
	for (int k = 1; k <= 40; k++) {
		in.attempts = k;
		retry_decision d = retry_decide(&in);
		ck_assert(d.retry);
		ck_assert_msg(d.backoff_s == 0, "retry %d waits %d", k, d.backoff_s);
	}
}
END_TEST

/*
 * After a lost node the retry waits at least node_grace_s (Slurm's
 * SlurmdTimeout: 30 here), above a base of 10; a longer backoff stays as it
 * is; other classes ignore the grace.
 */
START_TEST(lost_node_waits_for_slurm_to_mark_it_down)
{
	retry_input in = input("node_failure");
	in.node_grace_s = 30;
	retry_decision d = retry_decide(&in);
	ck_assert(d.retry);
	ck_assert_int_eq(d.nodes, 3);
	ck_assert_int_eq(d.backoff_s, 30);
	in.failure_class = "rank_lost";
	ck_assert_int_eq(retry_decide(&in).backoff_s, 30);
	in.backoff_base_s = 45;
	ck_assert_int_eq(retry_decide(&in).backoff_s, 45);
	in.backoff_base_s = 10;
	in.failure_class = "timeout";
	ck_assert_int_eq(retry_decide(&in).backoff_s, 10);
	in.failure_class = "out_of_memory";
	ck_assert_int_eq(retry_decide(&in).backoff_s, 10);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("sched_retry");
	TCase *c = tcase_create("classes");
	tcase_add_test(c, lost_node_goes_one_node_fewer);
	tcase_add_test(c, lost_node_needs_one_node_left);
	tcase_add_test(c, out_of_memory_recomputes_once);
	tcase_add_test(c, out_of_memory_of_an_own_program_retries_the_same);
	tcase_add_test(c, transient_keeps_configuration);
	tcase_add_test(c, permanent_never_retries);
	suite_add_tcase(s, c);
	TCase *r = tcase_create("restarts");
	tcase_add_test(r, max_restarts_exhausted);
	tcase_add_test(r, backoff_doubles_to_cap);
	tcase_add_test(r, backoff_zero_base_stays_zero);
	tcase_add_test(r, lost_node_waits_for_slurm_to_mark_it_down);
	suite_add_tcase(s, r);
	return s;
}

UNIT_MAIN()
