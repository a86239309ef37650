/*
 * test_storage.c - the storage layout: id and name validation, paths in
 * caller buffers, the shared levels created 0711 and the tenant's 0700,
 * and refusal of directories that are symlinks, not directories, owned by
 * another user than the rule says or open to others. As root: the
 * platform hands a tenant's directory to the tenant's user (and a tree it
 * made before the tenant had one, without following a link or touching a
 * file linked twice), the tenant's own view refuses a directory of another
 * user, and storage_tenant_owner() names the tenant's user.
 */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
	mode_t old = umask(077);
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
		/* the shared levels let the tenants' users pass, whatever the umask */
		mode_t want = i < 2 ? 0711 : 0700;
		ck_assert_msg(mode_of(p) == want, "%s has mode %o", p, mode_of(p));
		if (i >= 2)
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

	/* a shared level may be searched by others, never read or written */
	const char *shared[] = {"", "/tenants"};
	const mode_t shared_bad[] = {0750, 0705, 0777, 0730, 0703};
	const mode_t shared_ok[] = {0700, 0701, 0710, 0711};
	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s%s", root, shared[i]);
		for (size_t m = 0; m < sizeof(shared_bad) / sizeof(shared_bad[0]); m++) {
			ck_assert_int_eq(chmod(p, shared_bad[m]), 0);
			ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
			                 -ERR_STORAGE_UNSAFE);
			ck_assert_msg(strstr(err, p) && strstr(err, "chmod 711"), "%s", err);
		}
		for (size_t m = 0; m < sizeof(shared_ok) / sizeof(shared_ok[0]); m++) {
			ck_assert_int_eq(chmod(p, shared_ok[m]), 0);
			ck_assert_msg(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)) == 0,
			              "mode %o: %s", shared_ok[m], err);
		}
		ck_assert_int_eq(chmod(p, 0711), 0);
	}

	/* a tenant's level: no group or other bit at all */
	const char *dirs[] = {"/tenants/" TENANT, "/tenants/" TENANT "/jobs/" JOB "/logs"};
	const mode_t modes[] = {0750, 0705, 0777, 0710, 0701};
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

	/* owned by another user: a shared level of neither root nor the platform, or a
	 * tenant's directory of another user than the tenant's */
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/tenants", root);
		ck_assert_int_eq(chown(p, 65534, (gid_t)-1), 0);
		ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
		                 -ERR_STORAGE_UNSAFE);
		ck_assert_msg(strstr(err, "owned by uid 65534, not by root"), "%s", err);
		ck_assert_int_eq(chown(p, 0, (gid_t)-1), 0);
		snprintf(p, sizeof(p), "%s/tenants/%s/jobs", root, TENANT);
		ck_assert_int_eq(chown(p, 65534, (gid_t)-1), 0);
		ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
		                 -ERR_STORAGE_UNSAFE);
		ck_assert_msg(strstr(err, "owned by uid 65534, not by the tenant's user (uid 0)"),
		              "%s", err);
		ck_assert_int_eq(chown(p, 0, (gid_t)-1), 0);
	}
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)), 0);
}
END_TEST

#define OTHER "7f1c2a10-0000-4000-8000-00000000000b"
#define TUID  ((uid_t)65534) /* a tenant's user in these tests: nobody */
#define TGID  ((gid_t)65534)

static uid_t owner_of(const char *p)
{
	struct stat st;
	ck_assert_msg(lstat(p, &st) == 0, "%s missing", p);
	return st.st_uid;
}

START_TEST(platform_hands_over)
{
	if (geteuid() != 0)
		return; /* chown needs root */
	char err[512], p[512], q[600];
	storage_owners o = storage_owners_for(TUID, TGID);
	ck_assert_msg(storage_tenant_dirs(root, TENANT, &o, err, sizeof(err)) == 0, "%s", err);
	snprintf(p, sizeof(p), "%s/tenants/%s", root, TENANT);
	ck_assert_int_eq(owner_of(p), TUID);
	ck_assert_int_eq(mode_of(p), 0700);
	snprintf(q, sizeof(q), "%s/tenants", root);
	ck_assert_int_eq(owner_of(q), 0);
	ck_assert_int_eq(mode_of(q), 0711);
	uid_t u = 0;
	gid_t g = 0;
	ck_assert_int_eq(storage_tenant_owner(root, TENANT, &u, &g, err, sizeof(err)), 0);
	ck_assert(u == TUID && g == TGID);
	/* the tenant's directory is not root's: root's own view of it (a worker that is
	 * not the tenant's user) refuses it */
	ck_assert_int_eq(storage_job_prepare(root, TENANT, JOB, err, sizeof(err)),
	                 -ERR_STORAGE_UNSAFE);
	ck_assert_msg(strstr(err, "owned by uid 65534, not by the tenant's user (uid 0)"), "%s",
	              err);
	/* a second user's directory is not handed to a third: refused */
	storage_owners other = storage_owners_for(TUID - 1, TGID - 1);
	ck_assert_int_eq(storage_tenant_dirs(root, TENANT, &other, err, sizeof(err)),
	                 -ERR_STORAGE_UNSAFE);
	/* the shared levels at 0700 (made before tenants had users) are opened to 0711 */
	ck_assert_int_eq(chmod(root, 0700), 0);
	ck_assert_int_eq(storage_tenant_dirs(root, TENANT, &o, err, sizeof(err)), 0);
	ck_assert_int_eq(mode_of(root), 0711);
	/* another tenant's directory, of another user */
	storage_owners third = storage_owners_for(TUID - 1, TGID - 1);
	ck_assert_int_eq(storage_tenant_dirs(root, OTHER, &third, err, sizeof(err)), 0);
	/* as the tenant's user: through the shared levels it may only search, into
	 * its own tree, and not into the other tenant's */
	ck_assert_int_eq(chmod(tmpdir, 0711), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgid(TGID) != 0 || setuid(TUID) != 0)
			_exit(10);
		if (storage_job_prepare(root, TENANT, JOB, err, sizeof(err)) != 0)
			_exit(11);
		snprintf(p, sizeof(p), "%s/tenants/%s", root, OTHER);
		if (open(p, O_RDONLY | O_DIRECTORY) >= 0 || errno != EACCES)
			_exit(12);
		if (storage_job_prepare(root, OTHER, JOB, err, sizeof(err)) != -ERR_STORAGE_UNSAFE)
			_exit(13);
		snprintf(p, sizeof(p), "%s/tenants", root);
		if (open(p, O_RDONLY | O_DIRECTORY) >= 0) /* no listing of the tenants */
			_exit(14);
		_exit(0);
	}
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the tenant's view: status %d",
	              WEXITSTATUS(status));
	snprintf(p, sizeof(p), "%s/tenants/%s/jobs/%s/logs", root, TENANT, JOB);
	ck_assert_int_eq(owner_of(p), TUID);
}
END_TEST

START_TEST(platform_adopts_its_old_tree)
{
	if (geteuid() != 0)
		return;
	char err[512], t[512], p[700], q[700];
	/* as the platform made it before the tenant had a user: root's */
	ck_assert_int_eq(storage_job_prepare(root, OTHER, JOB, err, sizeof(err)), 0);
	snprintf(t, sizeof(t), "%s/tenants/%s", root, OTHER);
	snprintf(p, sizeof(p), "%s/jobs/%s/logs/attempt-1.log", t, JOB);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* a file of root's linked into the tree, and a link out of it */
	snprintf(q, sizeof(q), "%s/secret", tmpdir);
	fd = open(q, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	char hard[700], soft[700];
	snprintf(hard, sizeof(hard), "%s/jobs/%s/hard", t, JOB);
	snprintf(soft, sizeof(soft), "%s/jobs/%s/soft", t, JOB);
	ck_assert_int_eq(link(q, hard), 0);
	ck_assert_int_eq(symlink(q, soft), 0);
	storage_owners o = storage_owners_for(TUID, TGID);
	ck_assert_msg(storage_tenant_dirs(root, OTHER, &o, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(owner_of(t), TUID);
	ck_assert_int_eq(owner_of(p), TUID);
	snprintf(p, sizeof(p), "%s/jobs/%s/checkpoints", t, JOB);
	ck_assert_int_eq(owner_of(p), TUID);
	ck_assert_msg(owner_of(q) == 0, "a file linked twice was handed over");
	ck_assert_int_eq(owner_of(soft), 0); /* the link itself: left as it was */
	/* the directory's removal inside the tree goes by fds, never through a link */
	snprintf(p, sizeof(p), "%s/jobs/%s", t, JOB);
	int dfd = open(p, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	storage_dir_remove_at(dfd, "soft");
	close(dfd);
	ck_assert_msg(access(q, F_OK) == 0, "removal followed a link");
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
	tcase_add_test(tc, platform_hands_over);
	tcase_add_test(tc, platform_adopts_its_old_tree);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
