/*
 * test_identity.c - which Unix users may run a tenant's attempts
 * (identity_usable): never root, and never a system or service account,
 * whichever of this host's users those are; the rule on users written out
 * here, and the login range read from login.defs.
 */
#include <check.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "identity.h"
#include "unit.h"

/* Users every Debian host has, and the services the stack runs beside the platform. */
static const char *const system_users[] = {"root",  "daemon", "bin",   "postgres",
                                           "mysql", "munge",  "slurm", "nobody"};

START_TEST(system_accounts_refused)
{
	int tried = 0;
	for (size_t i = 0; i < sizeof(system_users) / sizeof(system_users[0]); i++) {
		struct passwd *pw = getpwnam(system_users[i]);
		if (!pw)
			continue;
		tenant_identity id = {.uid = pw->pw_uid, .gid = pw->pw_gid};
		char why[256] = "";
		ck_assert_msg(identity_usable(&id, why, sizeof(why)) == -1,
		              "user %s (uid %u) may run a tenant's attempts", system_users[i],
		              (unsigned)pw->pw_uid);
		ck_assert_msg(why[0] != '\0', "no reason given for %s", system_users[i]);
		tried++;
	}
	ck_assert_int_ge(tried, 3); /* root, daemon and bin at least */
}
END_TEST

/* The rule itself, on users written out here: the login range and the services' names. */
START_TEST(account_rule)
{
	static const struct {
		unsigned uid, gid;
		const char *name;
		int want;
	} cases[] = {
	    {47001, 47001, "ty-tenant-001", 0}, /* the local stack's pool */
	    {47128, 47128, "ty-tenant-128", 0},
	    {1000, 1000, "alice", 0},          /* the first login uid */
	    {999, 999, "systemd-network", -1}, /* the last system one */
	    {101, 104, "postgres", -1},
	    {64030, 64030, "slurm", -1},  /* Debian's slurm, above UID_MIN */
	    {5001, 5001, "postgres", -1}, /* the database's user, wherever it sits */
	    {5002, 5002, "munge", -1},
	    {5003, 5003, "mysql", -1},
	    {65534, 65534, "nobody", -1},
	    {0, 0, "root", -1},
	    {47002, 0, "ty-tenant-002", -1}, /* root's group */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[256] = "";
		int rc = identity_account_check(cases[i].uid, cases[i].gid, cases[i].name, 1000,
		                                why, sizeof(why));
		ck_assert_msg(rc == cases[i].want, "%s (uid %u): %d, want %d", cases[i].name,
		              cases[i].uid, rc, cases[i].want);
		ck_assert(rc == 0 ? why[0] == '\0' : why[0] != '\0');
	}
	/* another login range moves the line */
	char why[256];
	ck_assert_int_eq(identity_account_check(1500, 1500, "bob", 2000, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "UID_MIN 2000"));
	ck_assert_int_eq(identity_account_check(2000, 2000, "bob", 2000, why, sizeof(why)), 0);
}
END_TEST

/* UID_MIN read from a login.defs, the default where it says nothing usable. */
START_TEST(login_uid_min)
{
	static const struct {
		const char *text;
		unsigned want;
	} cases[] = {
	    {"# comment\nUID_MIN\t\t\t 1000\nUID_MAX 60000\n", 1000},
	    {"UID_MAX 60000\n  UID_MIN   5000  \n", 5000},
	    {"#UID_MIN 5000\nSYS_UID_MIN 100\n", 1000},
	    {"UID_MIN -5\n", 1000},
	    {"UID_MIN 5000x\n", 1000},
	    {"UID_MIN 500 600\n", 1000},
	    {"UID_MINIMUM 500\n", 1000},
	    {"", 1000},
	};
	char path[] = "/tmp/ty-login-defs-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(cases[i].text, f);
		fclose(f);
		ck_assert_msg(identity_login_uid_min(path) == cases[i].want,
		              "case %zu: %u, want %u", i, (unsigned)identity_login_uid_min(path),
		              cases[i].want);
	}
	unlink(path);
	ck_assert_uint_eq(identity_login_uid_min(path), 1000); /* no file */
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("identity");
	TCase *tc = tcase_create("usable");
	tcase_add_test(tc, system_accounts_refused);
	tcase_add_test(tc, account_rule);
	tcase_add_test(tc, login_uid_min);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
