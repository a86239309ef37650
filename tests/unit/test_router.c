/*
 * test_router.c - path matching as a data table, and the route table's
 * own invariants (every placeholder scoped, every mutation audited).
 */
#include <check.h>
#include <string.h>

#include "router.h"
#include "unit.h"

static int dummy(struct api_req *rq)
{
	(void)rq;
	return 0;
}

static const route table[] = {
    {"GET", "/v1/tenants", PERM_AUTHENTICATED, SCOPE_PLATFORM, NULL, 0, dummy},
    {"POST", "/v1/tenants", PERM_TENANT_CREATE, SCOPE_PLATFORM, "tenant.create", 0, dummy},
    {"GET", "/v1/tenants/{tenant}", PERM_TENANT_READ, SCOPE_TENANT, NULL, 0, dummy},
    {"PUT", "/v1/tenants/{tenant}/members/{user}", PERM_MEMBER_WRITE, SCOPE_TENANT, "m", 0, dummy},
    {"GET", "/v1/jobs/{job}", PERM_JOB_READ, SCOPE_JOB, NULL, 0, dummy},
};

/* clang-format off */
static const struct {
	const char *method, *path;
	route_match want;
	int route;          /* index in table when found */
	const char *p1, *v1; /* a captured parameter and its value */
	const char *p2, *v2;
} cases[] = {
	{"GET", "/v1/tenants", ROUTE_FOUND, 0, NULL, NULL, NULL, NULL},
	{"POST", "/v1/tenants", ROUTE_FOUND, 1, NULL, NULL, NULL, NULL},
	{"DELETE", "/v1/tenants", ROUTE_BAD_METHOD, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/acme", ROUTE_FOUND, 2, "tenant", "acme", NULL, NULL},
	{"GET", "/v1/tenants/ac%2Dme", ROUTE_FOUND, 2, "tenant", "ac-me", NULL, NULL},
	{"GET", "/v1/tenants/a%2Fb", ROUTE_BAD_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/a%00b", ROUTE_BAD_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/a%zz", ROUTE_BAD_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/%C3%28", ROUTE_BAD_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/%ED%A0%80", ROUTE_BAD_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/%C0%AF", ROUTE_BAD_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/a%0Ab", ROUTE_BAD_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/caf%C3%A9", ROUTE_FOUND, 2, "tenant", "caf\xc3\xa9", NULL, NULL},
	{"GET", "/v1/tenants/a%2", ROUTE_BAD_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/", ROUTE_NO_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants//", ROUTE_NO_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenants/acme/", ROUTE_NO_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/tenantsx", ROUTE_NO_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1", ROUTE_NO_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "", ROUTE_NO_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/", ROUTE_NO_PATH, -1, NULL, NULL, NULL, NULL},
	{"PUT", "/v1/tenants/acme/members/bob", ROUTE_FOUND, 3, "tenant", "acme", "user", "bob"},
	{"GET", "/v1/tenants/acme/members/bob", ROUTE_BAD_METHOD, -1, NULL, NULL, NULL, NULL},
	{"PUT", "/v1/tenants/acme/members/bob/x", ROUTE_NO_PATH, -1, NULL, NULL, NULL, NULL},
	{"GET", "/v1/jobs/0b5e3c1e-0000-4000-8000-000000000000", ROUTE_FOUND, 4, "job",
	 "0b5e3c1e-0000-4000-8000-000000000000", NULL, NULL},
	{"get", "/v1/tenants", ROUTE_BAD_METHOD, -1, NULL, NULL, NULL, NULL},
};
/* clang-format on */

START_TEST(match_table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const route *r = NULL;
		route_params p;
		route_match m = router_match(table, sizeof(table) / sizeof(table[0]),
		                             cases[i].method, cases[i].path, &r, &p);
		ck_assert_msg(m == cases[i].want, "%s %s: got %d want %d", cases[i].method,
		              cases[i].path, m, cases[i].want);
		if (m != ROUTE_FOUND)
			continue;
		ck_assert_ptr_eq(r, &table[cases[i].route]);
		if (cases[i].p1)
			ck_assert_str_eq(route_param(&p, cases[i].p1), cases[i].v1);
		if (cases[i].p2)
			ck_assert_str_eq(route_param(&p, cases[i].p2), cases[i].v2);
		ck_assert_ptr_null(route_param(&p, "nope"));
	}
}
END_TEST

START_TEST(long_segment_refused)
{
	char path[400] = "/v1/tenants/";
	memset(path + strlen(path), 'a', ROUTE_PARAM_MAX + 1);
	const route *r;
	route_params p;
	ck_assert_int_eq(router_match(table, 5, "GET", path, &r, &p), ROUTE_BAD_PATH);
	path[strlen("/v1/tenants/") + ROUTE_PARAM_MAX] = '\0';
	ck_assert_int_eq(router_match(table, 5, "GET", path, &r, &p), ROUTE_FOUND);
}
END_TEST

/*
 * The real table: placeholders decide the scope; every mutation is
 * audited, and of the reads exactly those of data and of reports.
 */
START_TEST(route_table_invariants)
{
	size_t n;
	const route *rt = routes_table(&n);
	ck_assert_uint_gt(n, 20);
	for (size_t i = 0; i < n; i++) {
		const char *pat = rt[i].pattern;
		bool computes = (rt[i].flags & ROUTE_COMPUTE) != 0;
		bool mut = strcmp(rt[i].method, "GET") != 0 && !computes;
		bool audited_read = strcmp(pat, "/v1/jobs/{job}/logs") == 0 ||
		                    strstr(pat, "/{checkpoint}/download") != NULL ||
		                    strstr(pat, "/reports/{kind}") != NULL;
		ck_assert_msg((mut || audited_read) == (rt[i].action != NULL),
		              "%s %s: audit action", rt[i].method, pat);
		ck_assert_msg(!computes || strcmp(rt[i].method, "POST") == 0,
		              "%s %s: only a POST computes", rt[i].method, pat);
		ck_assert_ptr_nonnull(rt[i].handler);
		scope want = strstr(pat, "{tenant}")       ? SCOPE_TENANT
		             : strstr(pat, "{job}")        ? SCOPE_JOB
		             : strstr(pat, "{user}")       ? SCOPE_USER
		             : strstr(pat, "{token_id}")   ? SCOPE_TOKEN
		             : strstr(pat, "{checkpoint}") ? SCOPE_CHECKPOINT
		             : strstr(pat, "{attempt}")    ? SCOPE_ATTEMPT
		                                           : SCOPE_PLATFORM;
		ck_assert_msg(rt[i].scope == want, "%s %s: scope", rt[i].method, pat);
		if (rt[i].flags & ROUTE_PUBLIC)
			ck_assert_msg(
			    !mut && (strcmp(pat, "/healthz") == 0 || strcmp(pat, "/readyz") == 0 ||
			             strcmp(pat, "/v1/openapi.json") == 0 ||
			             strncmp(pat, "/ui", 3) == 0), /* the web view's files */
			    "%s must not be public", pat);
		/* a route run on the polling thread may not wait: no token, no database */
		if (rt[i].flags & ROUTE_MEMORY)
			ck_assert_msg((rt[i].flags & ROUTE_PUBLIC) && !mut &&
			                  rt[i].action == NULL && strcmp(pat, "/readyz") != 0,
			              "%s may not run on the polling thread", pat);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(rt[i].method, rt[j].method) ||
			                  strcmp(pat, rt[j].pattern),
			              "duplicate route %s %s", rt[i].method, pat);
	}
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("router");
	TCase *tc = tcase_create("match");
	tcase_add_test(tc, match_table);
	tcase_add_test(tc, long_segment_refused);
	tcase_add_test(tc, route_table_invariants);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
