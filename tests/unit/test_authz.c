/*
 * test_authz.c - the permission table, exhaustively: every role x every
 * permission x every scope x same or other tenant, against an expectation
 * written out independently below, plus the grant rule for every pair.
 */
#include <check.h>
#include <string.h>

#include "authz.h"
#include "unit.h"

/* What each role may do, spelled out by hand (not derived from authz.c). */
static bool expected_has(role r, perm p)
{
	static const char *const table[ROLE__COUNT] = {
	    [ROLE_NONE] = "",
	    [ROLE_ADMIN] =
	        "authenticated tenant.create tenant.list_all tenant.read quota.read "
	        "quota.write member.read member.write user.create user.read "
	        "token.manage job.submit job.read job.cancel audit.read job.dispatch "
	        "checkpoint.download key.rotate key.shred dataset.read dataset.write "
	        "dataset.exempt dataset.grant dataset.approve checkpoint.grant "
	        "checkpoint.approve tenant.identity metrics.read webhook.manage code.read "
	        "code.write code.grant code.approve priority_class.write",
	    [ROLE_PLATFORM_AUDITOR] = "authenticated tenant.list_all tenant.read quota.read "
	                              "member.read user.read job.read audit.read dataset.read "
	                              "metrics.read code.read",
	    [ROLE_OWNER] = "authenticated tenant.read quota.read member.read member.write "
	                   "job.submit job.read job.cancel audit.read checkpoint.download "
	                   "key.rotate dataset.read dataset.write dataset.grant checkpoint.grant "
	                   "webhook.manage code.read code.write code.grant",
	    [ROLE_EDITOR] = "authenticated tenant.read quota.read member.read job.submit "
	                    "job.read job.cancel checkpoint.download dataset.read dataset.write "
	                    "code.read code.write",
	    [ROLE_VIEWER] =
	        "authenticated tenant.read quota.read member.read job.read dataset.read code.read",
	    [ROLE_TENANT_AUDITOR] = "authenticated tenant.read quota.read member.read job.read "
	                            "audit.read dataset.read code.read",
	    [ROLE_SELF] = "authenticated user.read token.manage",
	    [ROLE_ATTEMPT] = "attempt.report",
	};
	const char *list = table[r];
	const char *name = perm_name(p);
	size_t n = strlen(name);
	for (const char *s = list; (s = strstr(s, name)) != NULL; s += n)
		if ((s == list || s[-1] == ' ') && (s[n] == ' ' || s[n] == '\0'))
			return true;
	return false;
}

static bool is_platform(role r)
{
	return r == ROLE_ADMIN || r == ROLE_PLATFORM_AUDITOR;
}
static bool is_tenant(role r)
{
	return r >= ROLE_OWNER && r <= ROLE_TENANT_AUDITOR;
}

START_TEST(role_table_matches_expectation)
{
	for (int r = 0; r < ROLE__COUNT; r++)
		for (int p = 0; p < PERM__COUNT; p++)
			ck_assert_msg(
			    authz_role_has((role)r, (perm)p) == expected_has((role)r, (perm)p),
			    "role %s permission %s", role_name((role)r), perm_name((perm)p));
}
END_TEST

/*
 * The decision for a caller with platform role pr and tenant role tr in
 * the request's tenant ("same tenant"), or no role there ("other tenant",
 * tr = NONE), self or not.
 */
START_TEST(decide_every_combination)
{
	const role platforms[] = {ROLE_NONE, ROLE_ADMIN, ROLE_PLATFORM_AUDITOR};
	const role tenants[] = {ROLE_NONE, ROLE_OWNER, ROLE_EDITOR, ROLE_VIEWER,
	                        ROLE_TENANT_AUDITOR};
	int checked = 0;
	for (size_t a = 0; a < 3; a++)
		for (size_t b = 0; b < 5; b++)
			for (int who = 0; who < 4; who++)
				for (int sc = 0; sc < SCOPE__COUNT; sc++)
					for (int p = 0; p < PERM__COUNT; p++) {
						bool self = who & 1, att = who & 2;
						authz_subject s = {platforms[a], tenants[b], self,
						                   att};
						bool tenant_scope = sc == SCOPE_TENANT ||
						                    sc == SCOPE_JOB ||
						                    sc == SCOPE_CHECKPOINT;
						bool user_scope =
						    sc == SCOPE_USER || sc == SCOPE_TOKEN;
						bool attempt_scope = sc == SCOPE_ATTEMPT;
						bool allow =
						    expected_has(s.platform, (perm)p) ||
						    (tenant_scope &&
						     expected_has(s.tenant, (perm)p)) ||
						    (user_scope && self &&
						     expected_has(ROLE_SELF, (perm)p)) ||
						    (attempt_scope && att &&
						     expected_has(ROLE_ATTEMPT, (perm)p)) ||
						    (sc == SCOPE_PLATFORM &&
						     p == PERM_AUTHENTICATED);
						bool related =
						    is_platform(s.platform) ||
						    (tenant_scope && is_tenant(s.tenant)) ||
						    (user_scope && self) ||
						    (attempt_scope && att) || sc == SCOPE_PLATFORM;
						authz_result want = allow     ? AUTHZ_ALLOW
						                    : related ? AUTHZ_DENY_FORBIDDEN
						                              : AUTHZ_DENY_HIDDEN;
						authz_result got =
						    authz_decide(&s, (perm)p, (scope)sc);
						ck_assert_msg(got == want,
						              "platform %s tenant %s self %d scope "
						              "%s perm %s: got %d want %d",
						              role_name(s.platform),
						              role_name(s.tenant), self,
						              scope_name((scope)sc),
						              perm_name((perm)p), got, want);
						checked++;
					}
	ck_assert_int_eq(checked, 3 * 5 * 4 * SCOPE__COUNT * PERM__COUNT);
}
END_TEST

START_TEST(other_tenant_is_hidden)
{
	/* an owner elsewhere has no role here: every tenant permission reads as missing */
	authz_subject s = {ROLE_NONE, ROLE_NONE, false, false};
	for (int p = 0; p < PERM__COUNT; p++) {
		ck_assert_int_eq(authz_decide(&s, (perm)p, SCOPE_TENANT), AUTHZ_DENY_HIDDEN);
		ck_assert_int_eq(authz_decide(&s, (perm)p, SCOPE_JOB), AUTHZ_DENY_HIDDEN);
	}
	/* a viewer in the tenant sees it but may not submit */
	authz_subject v = {ROLE_NONE, ROLE_VIEWER, false, false};
	ck_assert_int_eq(authz_decide(&v, PERM_JOB_SUBMIT, SCOPE_TENANT), AUTHZ_DENY_FORBIDDEN);
	ck_assert_int_eq(authz_decide(&v, PERM_JOB_READ, SCOPE_JOB), AUTHZ_ALLOW);
}
END_TEST

/* Only an attempt's own credential reports for it; no user role does, not even an admin. */
START_TEST(attempt_reports_only_for_itself)
{
	authz_subject admin = {ROLE_ADMIN, ROLE_NONE, false, false};
	authz_subject owner = {ROLE_NONE, ROLE_OWNER, false, false};
	authz_subject mine = {ROLE_NONE, ROLE_NONE, false, true};
	ck_assert_int_eq(authz_decide(&admin, PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT),
	                 AUTHZ_DENY_FORBIDDEN);
	ck_assert_int_eq(authz_decide(&owner, PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT),
	                 AUTHZ_DENY_HIDDEN);
	ck_assert_int_eq(authz_decide(&mine, PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT), AUTHZ_ALLOW);
	ck_assert_int_eq(authz_decide(&mine, PERM_JOB_READ, SCOPE_JOB), AUTHZ_DENY_HIDDEN);
	ck_assert_int_eq(authz_decide(&mine, PERM_ATTEMPT_REPORT, SCOPE_JOB), AUTHZ_DENY_HIDDEN);
}
END_TEST

START_TEST(grant_needs_every_permission)
{
	const role platforms[] = {ROLE_NONE, ROLE_ADMIN, ROLE_PLATFORM_AUDITOR};
	for (size_t a = 0; a < 3; a++)
		for (int t = ROLE_NONE; t <= ROLE_TENANT_AUDITOR; t++) {
			if (t == ROLE_ADMIN || t == ROLE_PLATFORM_AUDITOR)
				continue;
			authz_subject s = {platforms[a], (role)t, false, false};
			for (int target = 0; target < ROLE__COUNT; target++) {
				bool want = is_tenant((role)target);
				bool can_write = expected_has(s.platform, PERM_MEMBER_WRITE) ||
				                 expected_has(s.tenant, PERM_MEMBER_WRITE);
				want = want && can_write;
				for (int p = 0; want && p < PERM__COUNT; p++)
					if (expected_has((role)target, (perm)p) &&
					    !expected_has(s.platform, (perm)p) &&
					    !expected_has(s.tenant, (perm)p))
						want = false;
				ck_assert_msg(authz_can_grant(&s, (role)target) == want,
				              "%s/%s granting %s", role_name(s.platform),
				              role_name(s.tenant), role_name((role)target));
			}
		}
	/* the cases people ask about */
	authz_subject owner = {ROLE_NONE, ROLE_OWNER, false, false};
	authz_subject editor = {ROLE_NONE, ROLE_EDITOR, false, false};
	authz_subject auditor = {ROLE_PLATFORM_AUDITOR, ROLE_NONE, false, false};
	ck_assert(authz_can_grant(&owner, ROLE_OWNER));
	ck_assert(authz_can_grant(&owner, ROLE_VIEWER));
	ck_assert(!authz_can_grant(&editor, ROLE_VIEWER));
	ck_assert(!authz_can_grant(&auditor, ROLE_VIEWER));
	ck_assert(!authz_can_grant(&owner, ROLE_ADMIN));
}
END_TEST

START_TEST(names_round_trip)
{
	for (int r = ROLE_OWNER; r <= ROLE_TENANT_AUDITOR; r++)
		ck_assert_int_eq(role_parse_tenant(role_name((role)r)), r);
	ck_assert_int_eq(role_parse_platform("admin"), ROLE_ADMIN);
	ck_assert_int_eq(role_parse_platform("auditor"), ROLE_PLATFORM_AUDITOR);
	ck_assert_int_eq(role_parse_platform("owner"), ROLE_NONE);
	ck_assert_int_eq(role_parse_tenant("admin"), ROLE_NONE);
	ck_assert_int_eq(role_parse_tenant(""), ROLE_NONE);
	for (int p = 0; p < PERM__COUNT; p++)
		ck_assert_str_ne(perm_name((perm)p), "unknown");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("authz");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, role_table_matches_expectation);
	tcase_add_test(tc, decide_every_combination);
	tcase_add_test(tc, other_tenant_is_hidden);
	tcase_add_test(tc, grant_needs_every_permission);
	tcase_add_test(tc, attempt_reports_only_for_itself);
	tcase_add_test(tc, names_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
