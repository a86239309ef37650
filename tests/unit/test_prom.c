/*
 * test_prom.c - the Prometheus text format writer (lib/base/prom.h): the exact
 * text of a small registry (help and type lines, label escaping, a
 * histogram's cumulative buckets, +Inf, sum and count), the refusal of bad
 * names and labels, counters that only go up, gauges reset for a scrape,
 * and series updated from two threads at once. promtool checks the API's
 * whole exposition in tests/integration/metrics.sh.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"
#include "unit.h"

START_TEST(exact_text)
{
	prom_registry *r = prom_registry_new();
	const char *const rl[] = {"route", "status"};
	prom_family *c = prom_counter(r, "ty_requests_total", "Requests\nby route", 2, rl);
	prom_family *g = prom_gauge(r, "ty_queue", "Queued jobs", 0, NULL);
	const double b[] = {0.1, 1};
	const char *const tl[] = {"tenant"};
	prom_family *h = prom_histogram(r, "ty_wait_seconds", "Wait", 1, tl, b, 2);
	ck_assert(c && g && h);
	const char *const v1[] = {"/v1/jobs", "200"}, *const v2[] = {"a\"b\\c\nd", "500"};
	prom_add(c, v1, 1);
	prom_add(c, v1, 2);
	prom_add(c, v2, 1);
	prom_add(c, v1, -5);       /* ignored: counters only go up */
	prom_add(c, v1, INFINITY); /* ignored */
	prom_set(g, NULL, 7);
	const char *const t[] = {"acme"};
	prom_observe(h, t, 0.05);
	prom_observe(h, t, 0.5);
	prom_observe(h, t, 3);
	size_t len = 0;
	char *text = prom_render(r, &len);
	const char *want = "# HELP ty_requests_total Requests\\nby route\n"
	                   "# TYPE ty_requests_total counter\n"
	                   "ty_requests_total{route=\"/v1/jobs\",status=\"200\"} 3\n"
	                   "ty_requests_total{route=\"a\\\"b\\\\c\\nd\",status=\"500\"} 1\n"
	                   "# HELP ty_queue Queued jobs\n"
	                   "# TYPE ty_queue gauge\n"
	                   "ty_queue 7\n"
	                   "# HELP ty_wait_seconds Wait\n"
	                   "# TYPE ty_wait_seconds histogram\n"
	                   "ty_wait_seconds_bucket{tenant=\"acme\",le=\"0.1\"} 1\n"
	                   "ty_wait_seconds_bucket{tenant=\"acme\",le=\"1\"} 2\n"
	                   "ty_wait_seconds_bucket{tenant=\"acme\",le=\"+Inf\"} 3\n"
	                   "ty_wait_seconds_sum{tenant=\"acme\"} 3.55\n"
	                   "ty_wait_seconds_count{tenant=\"acme\"} 3\n";
	ck_assert_str_eq(text, want);
	ck_assert_uint_eq(len, strlen(want));
	free(text);

	prom_reset(g);
	text = prom_render(r, &len);
	ck_assert_ptr_null(strstr(text, "ty_queue 7"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE ty_queue gauge\n# HELP ty_wait_seconds"));
	free(text);
	prom_registry_free(r);
}
END_TEST

START_TEST(bad_names_refused)
{
	prom_registry *r = prom_registry_new();
	const char *const ok[] = {"route"}, *const le[] = {"le"}, *const dunder[] = {"__x"},
	                  *const digit[] = {"1x"};
	const double b[] = {1, 2}, down[] = {2, 1};
	ck_assert_ptr_null(prom_counter(r, "requests", "no _total", 0, NULL));
	ck_assert_ptr_null(prom_counter(r, "9_total", "starts with a digit", 0, NULL));
	ck_assert_ptr_null(prom_gauge(r, "a-b", "a dash", 0, NULL));
	ck_assert_ptr_null(prom_gauge(r, "g", "le is the histogram's", 1, le));
	ck_assert_ptr_null(prom_gauge(r, "g", "reserved", 1, dunder));
	ck_assert_ptr_null(prom_gauge(r, "g", "digit first", 1, digit));
	ck_assert_ptr_null(prom_gauge(r, "g", "too many", PROM_MAX_LABELS + 1, ok));
	ck_assert_ptr_null(prom_histogram(r, "h", "descending", 0, NULL, down, 2));
	ck_assert_ptr_null(prom_histogram(r, "h", "no buckets", 0, NULL, b, 0));
	ck_assert_ptr_nonnull(prom_gauge(r, "ns:g_1", "colons in names", 1, ok));
	size_t len;
	char *text = prom_render(r, &len);
	ck_assert_str_eq(text, "# HELP ns:g_1 colons in names\n# TYPE ns:g_1 gauge\n");
	free(text);
	prom_registry_free(r);
}
END_TEST

static void *bump(void *arg)
{
	prom_family *f = arg;
	const char *const v[] = {"x"};
	for (int i = 0; i < 100000; i++)
		prom_add(f, v, 1);
	return NULL;
}

START_TEST(two_threads)
{
	prom_registry *r = prom_registry_new();
	const char *const l[] = {"k"};
	prom_family *c = prom_counter(r, "n_total", "n", 1, l);
	pthread_t a, b;
	pthread_create(&a, NULL, bump, c);
	pthread_create(&b, NULL, bump, c);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	size_t len;
	char *text = prom_render(r, &len);
	ck_assert_ptr_nonnull(strstr(text, "n_total{k=\"x\"} 200000\n"));
	free(text);
	prom_registry_free(r);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("prom");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, exact_text);
	tcase_add_test(tc, bad_names_refused);
	tcase_add_test(tc, two_threads);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
