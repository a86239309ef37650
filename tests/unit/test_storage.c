/*
 * test_storage.c - the storage layout: id and name validation, paths in
 * caller buffers, directories created 0700, and refusal of directories
 * that are symlinks, not directories, foreign-owned or open to others.
 */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "storage.h"
#include "unit.h"

#define TENANT "7f1c2a10-0000-4000-8000-00000000000a"
#define JOB    "0b9e0c52-0000-4000-8000-0000000000a1"

static char tmpdir[64], root[128];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ty-storage-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(root, sizeof(root), "%s/var/storage", tmpdir); /* parents missing too */
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void teardown(void)
{
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static mode_t mode_of(const char *p)
{
	struct stat st;
	ck_assert_msg(lstat(p, &st) == 0, "%s missing", p);
	ck_assert_msg(S_ISDIR(st.st_mode), "%s not a directory", p);
	return st.st_mode & 07777;
}

START_TEST(uuids)
{
	ck_assert(storage_uuid_valid(TENANT));
	ck_assert(storage_uuid_valid("00000000-0000-0000-0000-000000000000"));
	static const char *const bad[] = {
	    "",
	    "7F1C2A10-0000-4000-8000-00000000000A", /* upper case */
	    "7f1c2a10-0000-4000-8000-00000000000",  /* short */
	    "7f1c2a10-0000-4000-8000-00000000000aa",
	    "7f1c2a100000-4000-8000-00000000000a-",
	    "7f1c2a10-0000-4000-8000_00000000000a",
	    "7f1c2a10-0000-4000-8000-00000000000g",
	    "../../../../../../etc/passwd/xxxxxxx",
	    "{7f1c2a1-0000-4000-8000-00000000000a}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!storage_uuid_valid(bad[i]), "%s", bad[i]);
	ck_assert(!storage_uuid_valid(NULL));
}
END_TEST

START_TEST(names)
{
	static const char *const good[] = {
	    "a", "manifest.json", "step_00000020/manifest.json", "a/b/c", "...", "-x_.Y9", "a..b"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(storage_name_valid(good[i]), "%s", good[i]);
	static const char *const bad[] = {"",     "/a",          "a/",   "a//b", ".",   "..",
	                                  "../a", "a/../b",      "a/..", "./a",  "a b", "a\\b",
	                                  "a\n",  "caf\xc3\xa9", "a:b",  "~"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!storage_name_valid(bad[i]), "%s", bad[i]);
	char longest[STORAGE_NAME_MAX + 2];
	memset(longest, 'n', sizeof(longest));
	longest[STORAGE_NAME_MAX] = '\0';
	ck_assert(storage_name_valid(longest));
	longest[STORAGE_NAME_MAX] = 'n';
	longest[STORAGE_NAME_MAX + 1] = '\0';
	ck_assert(!storage_name_valid(longest));
	ck_assert(!storage_name_valid(NULL));
}
END_TEST

START_TEST(shard_names)
{
	static const char *const good[] = {
	    "shard_00000_of_00002.bin", "a",     "...", "a..b", "Manifest.json",
	    "manifest.json.bin",        "-x_.Y9"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(storage_shard_name_valid(good[i]), "%s", good[i]);
	static const char *const bad[] = {"",    ".",
	                                  "..",  "manifest.json",
	                                  "a/b", "../a",
	                                  "/a",  "a/",
	                                  "a b", "a\\b",
	                                  "a:b", "caf\xc3\xa9",
	                                  "a\n", "step_00000005/shard_00000_of_00001.bin"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!storage_shard_name_valid(bad[i]), "%s", bad[i]);
	ck_assert(!storage_shard_name_valid(NULL));
	char longest[STORAGE_SHARD_NAME_MAX + 2];
	memset(longest, 's', sizeof(longest));
	longest[STORAGE_SHARD_NAME_MAX] = '\0';
	ck_assert(storage_shard_name_valid(longest));
	longest[STORAGE_SHARD_NAME_MAX] = 's';
	longest[STORAGE_SHARD_NAME_MAX + 1] = '\0';
	ck_assert(!storage_shard_name_valid(longest));
	/* a shard's place in its step directory is always a name */
	char rel[STORAGE_NAME_MAX + 2];
	snprintf(rel, sizeof(rel), "step_99999999/%s", longest);
	rel[strlen(rel) - 1] = '\0';
	ck_assert(storage_name_valid(rel));
}
END_TEST

START_TEST(paths)
{
	char buf[512];
	ck_assert_int_eq(storage_tenant_dir("/srv/ty", TENANT, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/srv/ty/tenants/" TENANT);
	ck_assert_int_eq(storage_job_dir("/srv/ty", TENANT, JOB, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/srv/ty/tenants/" TENANT "/jobs/" JOB);
	ck_assert_int_eq(storage_area_dir("/srv/ty", TENANT, JOB, STORAGE_LOGS, buf, sizeof(buf)),
	                 0);
	ck_assert_str_eq(buf, "/srv/ty/tenants/" TENANT "/jobs/" JOB "/logs");
	ck_assert_int_eq(storage_object_path("/srv/ty", TENANT, JOB, STORAGE_CHECKPOINTS,
	                                     "step_00000020/manifest.json", buf, sizeof(buf)),
	                 0);
	ck_assert_str_eq(buf, "/srv/ty/tenants/" TENANT "/jobs/" JOB
	                      "/checkpoints/step_00000020/manifest.json");

	/* every length one short of the path is refused, and leaves "" */
	size_t need = strlen(buf) + 1;
	for (size_t n = 0; n < need; n++) {
		char small[512];
		memset(small, 'x', sizeof(small));
		ck_assert_int_eq(storage_object_path("/srv/ty", TENANT, JOB, STORAGE_CHECKPOINTS,
		                                     "step_00000020/manifest.json", small, n),
		                 -ERR_STORAGE_PATH_INVALID);
		if (n > 0)
			ck_assert_str_eq(small, "");
	}
	ck_assert_int_eq(
	    storage_object_path("/srv/ty", TENANT, JOB, STORAGE_LOGS, "../x", buf, sizeof(buf)),
	    -ERR_STORAGE_PATH_INVALID);
	ck_assert_int_eq(storage_log_name(12, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "attempt-12.log");
	ck_assert(storage_name_valid(buf));
	ck_assert_int_eq(storage_log_name(0, buf, sizeof(buf)), -ERR_STORAGE_PATH_INVALID);
	ck_assert_int_eq(storage_log_name(12, buf, 14), -ERR_STORAGE_PATH_INVALID);
	ck_assert_int_eq(storage_job_dir("/srv/ty", TENANT, "..", buf, sizeof(buf)),
	                 -ERR_STORAGE_PATH_INVALID);
	ck_assert_int_eq(storage_job_dir("", TENANT, JOB, buf, sizeof(buf)),
	                 -ERR_STORAGE_PATH_INVALID);
	ck_assert_int_eq(storage_tenant_dir("/srv/ty", "Tenant", buf, sizeof(buf)),
	                 -ERR_STORAGE_PATH_INVALID);
	ck_assert_int_eq(
	    storage_area_dir("/srv/ty", TENANT, JOB, (storage_area)7, buf, sizeof(buf)),
	    -ERR_STORAGE_PATH_INVALID);
}
END_TEST

START_TEST(prepare_creates_private_dirs)
{
	char err[512], p[512];
	mode_t old = umask(0);
	ck_assert_msg(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)) == 0, "%s", err);
	umask(old);
	const char *dirs[] = {"",
	                      "/tenants",
	                      "/tenants/" TENANT,
	                      "/tenants/" TENANT "/jobs",
	                      "/tenants/" TENANT "/jobs/" JOB,
	                      "/tenants/" TENANT "/jobs/" JOB "/checkpoints",
	                      "/tenants/" TENANT "/jobs/" JOB "/logs"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", root, dirs[i]);
		ck_assert_msg(mode_of(p) == 0700, "%s has mode %o", p, mode_of(p));
		ck_assert_int_eq(storage_dir_check(p, err, sizeof(err)), 0);
	}
	/* idempotent, and a second job beside the first */
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)), 0);
	ck_assert_int_eq(storage_job_prepare(root, TENANT, "0b9e0c52-0000-4000-8000-0000000000a2",
	                                     err, sizeof(err)),
	                 0);
	/* a trailing slash on the root is the same root */
	snprintf(p, sizeof(p), "%s/", root);
	ck_assert_int_eq(storage_job_prepare(p, TENANT, JOB, err, sizeof(err)), 0);
	ck_assert_int_eq(storage_job_prepare(root, TENANT, "nope", err, sizeof(err)),
	                 -ERR_STORAGE_PATH_INVALID);
}
END_TEST

START_TEST(prepare_refuses_unsafe_dirs)
{
	char err[512], p[512], q[512];
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)), 0);

	/* group or other bits anywhere in the layout, the root included */
	const char *dirs[] = {"", "/tenants/" TENANT, "/tenants/" TENANT "/jobs/" JOB "/logs"};
	const mode_t modes[] = {0750, 0705, 0777, 0710};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			snprintf(p, sizeof(p), "%s%s", root, dirs[i]);
			ck_assert_int_eq(chmod(p, modes[m]), 0);
			ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
			                 -ERR_STORAGE_UNSAFE);
			ck_assert_msg(strstr(err, p) && strstr(err, "chmod 700"), "%s", err);
			ck_assert_int_eq(storage_dir_check(p, err, sizeof(err)),
			                 -ERR_STORAGE_UNSAFE);
			ck_assert_int_eq(chmod(p, 0700), 0);
		}
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)), 0);

	/* a symlink in place of the jobs directory, pointing at a private directory */
	snprintf(p, sizeof(p), "%s/tenants/%s/jobs", root, TENANT);
	snprintf(q, sizeof(q), "%s/elsewhere", tmpdir);
	ck_assert_int_eq(rename(p, q), 0);
	ck_assert_int_eq(symlink(q, p), 0);
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
	                 -ERR_STORAGE_UNSAFE);
	ck_assert_msg(strstr(err, "symbolic link"), "%s", err);
	ck_assert_int_eq(storage_dir_check(p, err, sizeof(err)), -ERR_STORAGE_UNSAFE);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(rename(q, p), 0);

	/* the root itself as a symlink */
	snprintf(q, sizeof(q), "%s/storage-real", tmpdir);
	ck_assert_int_eq(rename(root, q), 0);
	ck_assert_int_eq(symlink(q, root), 0);
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
	                 -ERR_STORAGE_UNSAFE);
	ck_assert_int_eq(unlink(root), 0);
	ck_assert_int_eq(rename(q, root), 0);

	/* a file where a directory belongs */
	snprintf(p, sizeof(p), "%s/tenants/%s/jobs/%s/logs", root, TENANT, JOB);
	ck_assert_int_eq(rmdir(p), 0);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
	                 -ERR_STORAGE_UNSAFE);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)), 0);

	/* owned by another user */
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/tenants", root);
		ck_assert_int_eq(chown(p, 65534, (gid_t)-1), 0);
		ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
		                 -ERR_STORAGE_UNSAFE);
		ck_assert_msg(strstr(err, "owned by uid 65534"), "%s", err);
		ck_assert_int_eq(chown(p, 0, (gid_t)-1), 0);
	}
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("storage");
	TCase *tc = tcase_create("layout");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, uuids);
	tcase_add_test(tc, names);
	tcase_add_test(tc, shard_names);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, prepare_creates_private_dirs);
	tcase_add_test(tc, prepare_refuses_unsafe_dirs);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
