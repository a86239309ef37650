/*
 * test_tenantfs.c - opening beneath a tenant's directory: a symbolic link
 * planted at each level of a checkpoint's path (pointing where the file
 * would be found if it were followed), a FIFO and a socket where a file
 * should be, a hard link, a file of another owner, a directory where a
 * file should be and the reverse, the tenant's directory itself replaced;
 * the resolver's walk refusing the same links; key files inside a root;
 * and the programs' sources, read for any open by path that bypasses
 * tenantfs.h.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "error.h"
#include "storage.h"
#include "tenantfs.h"
#include "unit.h"

#define TENANT "0b9e0c52-0000-4000-8000-0000000000a1"
#define JOB    "0b9e0c52-0000-4000-8000-0000000000c3"
#define STEP   "step_00000001"
#define SECRET "the platform's secret"

static char root[256], tdir[512], outside[512];

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void mkdirs(const char *base, const char *rel)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	for (char *s = p + strlen(base) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0700);
			*s = '/';
		}
	mkdir(p, 0700);
}

/*
 * <root>/tenants/<T>/jobs/<J>/checkpoints/step_00000001/manifest.json
 * holding "ours", and the same tree under <outside> holding SECRET: a link
 * that is followed anywhere on the way reads SECRET.
 */
static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/ty_tenantfs_%d", (int)getpid());
	snprintf(tdir, sizeof(tdir), "%s/tenants/%s", root, TENANT);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	mkdir(root, 0711);
	mkdirs(root, "tenants/" TENANT "/jobs/" JOB "/checkpoints/" STEP);
	chmod(root, 0711);
	char p[1024];
	snprintf(p, sizeof(p), "%s/tenants", root);
	chmod(p, 0711);
	snprintf(p, sizeof(p), "%s/jobs/%s/checkpoints/%s/manifest.json", tdir, JOB, STEP);
	put(p, "ours");
	mkdir(outside, 0700);
	mkdirs(outside, "jobs/" JOB "/checkpoints/" STEP);
	snprintf(p, sizeof(p), "%s/jobs/%s/checkpoints/%s/manifest.json", outside, JOB, STEP);
	put(p, SECRET);
	snprintf(p, sizeof(p), "%s/manifest.json", outside);
	put(p, SECRET);
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
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#define MANIFEST "jobs/" JOB "/checkpoints/" STEP "/manifest.json"

/* Read what rel opens to, or "" when refused. OUT *rc. */
static void read_rel(const char *rel, int *rc, char *out, size_t n)
{
	char err[512] = "";
	out[0] = '\0';
	int fd = tenantfs_open_file(root, TENANT, rel, err, sizeof(err));
	*rc = fd < 0 ? fd : 0;
	if (fd >= 0) {
		ssize_t k = read(fd, out, n - 1);
		out[k > 0 ? k : 0] = '\0';
		close(fd);
	} else {
		ck_assert_msg(err[0] != '\0', "a refusal says why");
	}
}

START_TEST(plain_file_opens)
{
	int rc;
	char got[64];
	read_rel(MANIFEST, &rc, got, sizeof(got));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(got, "ours");
}
END_TEST

/* The levels of MANIFEST below the tenant's directory, and where a link at each points. */
static const char *const levels[] = {"jobs", "jobs/" JOB, "jobs/" JOB "/checkpoints",
                                     "jobs/" JOB "/checkpoints/" STEP, MANIFEST};

START_TEST(link_at_each_level_refused)
{
	char at[1024], target[1024], moved[1100];
	snprintf(at, sizeof(at), "%s/%s", tdir, levels[_i]);
	snprintf(target, sizeof(target), "%s/%s", outside, levels[_i]);
	snprintf(moved, sizeof(moved), "%s.moved", at);
	ck_assert_int_eq(rename(at, moved), 0);
	ck_assert_int_eq(symlink(target, at), 0);
	int rc;
	char got[64];
	read_rel(MANIFEST, &rc, got, sizeof(got));
	ck_assert_int_eq(rc, -ERR_STORAGE_UNSAFE);
	ck_assert_str_eq(got, "");
	/* the same link, by the walk the kernels without openat2 get */
	int dfd = open(tdir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	int fd =
	    tenantfs_resolve_at(dfd, MANIFEST, O_RDONLY | O_NONBLOCK, 0, TENANTFS_RESOLVE_WALK);
	ck_assert_int_lt(fd, 0);
	ck_assert_msg(errno == ELOOP || errno == ENOTDIR, "errno %d", errno);
	close(dfd);
}
END_TEST

START_TEST(link_to_inside_refused)
{
	char at[1024];
	snprintf(at, sizeof(at), "%s/jobs/%s/checkpoints/%s/shard.bin", tdir, JOB, STEP);
	ck_assert_int_eq(symlink("manifest.json", at), 0);
	int rc;
	char got[64];
	read_rel("jobs/" JOB "/checkpoints/" STEP "/shard.bin", &rc, got, sizeof(got));
	ck_assert_int_eq(rc, -ERR_STORAGE_UNSAFE);
}
END_TEST

START_TEST(fifo_refused_without_blocking)
{
	char at[1024];
	snprintf(at, sizeof(at), "%s/%s", tdir, MANIFEST);
	unlink(at);
	ck_assert_int_eq(mkfifo(at, 0600), 0);
	int rc;
	char got[64];
	/* a blocking open would hang here until check's timeout fails the case */
	read_rel(MANIFEST, &rc, got, sizeof(got));
	ck_assert_int_eq(rc, -ERR_STORAGE_UNSAFE);
	tenant_tree t;
	char err[512];
	ck_assert_int_eq(tenant_tree_open(&t, root, TENANT, err, sizeof(err)), 0);
	int fd = tenant_tree_openat(&t, MANIFEST, O_RDWR | O_CREAT, 0600, TENANTFS_FILE, err,
	                            sizeof(err));
	ck_assert_int_eq(fd, -ERR_STORAGE_UNSAFE);
	ck_assert_ptr_nonnull(strstr(err, "FIFO"));
	fd = tenant_tree_openat(&t, MANIFEST, O_WRONLY, 0, TENANTFS_FILE, err, sizeof(err));
	ck_assert_int_eq(fd, -ERR_STORAGE_UNSAFE);
	tenant_tree_release(&t);
}
END_TEST

START_TEST(socket_refused)
{
	char at[1024];
	snprintf(at, sizeof(at), "%s/s", tdir);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	ck_assert_uint_lt(strlen(at), sizeof(a.sun_path));
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", at);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	int rc;
	char got[64];
	read_rel("s", &rc, got, sizeof(got));
	ck_assert_int_eq(rc, -ERR_STORAGE_UNSAFE);
	close(s);
}
END_TEST

START_TEST(hard_link_refused)
{
	char at[1024], other[1024];
	snprintf(at, sizeof(at), "%s/%s", tdir, MANIFEST);
	snprintf(other, sizeof(other), "%s/jobs/%s/again", tdir, JOB);
	ck_assert_int_eq(link(at, other), 0);
	int rc;
	char got[64];
	read_rel(MANIFEST, &rc, got, sizeof(got));
	ck_assert_int_eq(rc, -ERR_STORAGE_UNSAFE);
}
END_TEST

START_TEST(wrong_type_refused)
{
	char err[512];
	tenant_tree t;
	ck_assert_int_eq(tenant_tree_open(&t, root, TENANT, err, sizeof(err)), 0);
	/* a directory where a file is wanted, a file where a directory is */
	ck_assert_int_eq(
	    tenant_tree_openat(&t, "jobs/" JOB, O_RDONLY, 0, TENANTFS_FILE, err, sizeof(err)),
	    -ERR_STORAGE_UNSAFE);
	ck_assert_int_eq(
	    tenant_tree_openat(&t, MANIFEST, O_RDONLY, 0, TENANTFS_DIR, err, sizeof(err)),
	    -ERR_STORAGE_UNSAFE);
	int fd = tenant_tree_openat(&t, "jobs/" JOB, O_RDONLY, 0, TENANTFS_DIR, err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	close(fd);
	tenant_tree_release(&t);
}
END_TEST

START_TEST(other_owner_refused)
{
	if (geteuid() != 0)
		return; /* only root can make a file of another user */
	char at[1024];
	snprintf(at, sizeof(at), "%s/%s", tdir, MANIFEST);
	ck_assert_int_eq(chown(at, 47999, 47999), 0);
	int rc;
	char got[64];
	read_rel(MANIFEST, &rc, got, sizeof(got));
	ck_assert_int_eq(rc, -ERR_STORAGE_UNSAFE);
	/* the tenant's own user is accepted */
	ck_assert_int_eq(chown(tdir, 47999, 47999), 0);
	read_rel(MANIFEST, &rc, got, sizeof(got));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(got, "ours");
}
END_TEST

START_TEST(missing_and_invalid)
{
	int rc;
	char got[64];
	read_rel("jobs/" JOB "/checkpoints/" STEP "/nope", &rc, got, sizeof(got));
	ck_assert_int_eq(rc, -ERR_STORAGE_IO);
	ck_assert_int_eq(errno, ENOENT);
	static const char *const bad[] = {"../x", "/etc/shadow", "a//b", "jobs/..", "", "a b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		read_rel(bad[i], &rc, got, sizeof(got));
		ck_assert_int_eq(rc, -ERR_STORAGE_PATH_INVALID);
	}
}
END_TEST

START_TEST(tenant_dir_replaced)
{
	char moved[600], err[512];
	snprintf(moved, sizeof(moved), "%s.moved", tdir);
	ck_assert_int_eq(rename(tdir, moved), 0);
	ck_assert_int_eq(symlink(outside, tdir), 0);
	tenant_tree t;
	ck_assert_int_eq(tenant_tree_open(&t, root, TENANT, err, sizeof(err)), -ERR_STORAGE_UNSAFE);
	tenant_tree_release(&t);
	unlink(tdir);
	ck_assert_int_eq(rename(moved, tdir), 0);
	chmod(tdir, 0755); /* open to others: not a tenant's directory */
	ck_assert_int_eq(tenant_tree_open(&t, root, TENANT, err, sizeof(err)), -ERR_STORAGE_UNSAFE);
	tenant_tree_release(&t);
}
END_TEST

START_TEST(create_beneath)
{
	char err[512];
	tenant_tree t;
	ck_assert_int_eq(tenant_tree_open(&t, root, TENANT, err, sizeof(err)), 0);
	int fd = tenant_tree_openat(&t, "jobs/" JOB "/new.log", O_RDWR | O_CREAT | O_EXCL, 0600,
	                            TENANTFS_FILE, err, sizeof(err));
	ck_assert_msg(fd >= 0, "%s", err);
	close(fd);
	/* not through a link to a directory outside */
	char at[1024];
	snprintf(at, sizeof(at), "%s/jobs/out", tdir);
	ck_assert_int_eq(symlink(outside, at), 0);
	fd = tenant_tree_openat(&t, "jobs/out/planted", O_WRONLY | O_CREAT | O_EXCL, 0600,
	                        TENANTFS_FILE, err, sizeof(err));
	ck_assert_int_eq(fd, -ERR_STORAGE_UNSAFE);
	char p[1024];
	snprintf(p, sizeof(p), "%s/planted", outside);
	ck_assert_int_ne(access(p, F_OK), 0);
	tenant_tree_release(&t);
}
END_TEST

START_TEST(key_files_outside_roots)
{
	char key[1024], err[1024];
	const char *roots[] = {root, "/nonexistent/trainyard"};
	snprintf(key, sizeof(key), "%s/%s", tdir, MANIFEST);
	ck_assert_int_eq(
	    tenantfs_outside_roots(key, "the master key file", roots, 2, err, sizeof(err)),
	    -ERR_STORAGE_UNSAFE);
	ck_assert_ptr_nonnull(strstr(err, "master key file"));
	char elsewhere[300];
	snprintf(elsewhere, sizeof(elsewhere), "%s.key", root);
	put(elsewhere, "k");
	ck_assert_int_eq(
	    tenantfs_outside_roots(elsewhere, "the master key file", roots, 2, err, sizeof(err)),
	    0);
	unlink(elsewhere);
}
END_TEST

/*
 * The lint: every open by path in the programs' shared and platform code
 * (lib/, api/, scheduler/, worker/) is one of these, each with its reason;
 * any other is a file of a tenant's tree opened around tenantfs.h, or a
 * new kind of open that must say here why it is safe.
 */
static const unit_allowance allowed[] = {
    {"lib/base/tenantfs.c", 2, "the resolver's walk itself"},
    {"lib/base/storage.c", 5,
     "the directory walks of storage.h: each level O_NOFOLLOW and checked as the owners "
     "rule says; storage_dir_remove(): the worker's own tree, as the tenant's user"},
    {"lib/users/identity.c", 1, "the host's /etc/login.defs"},
    {"lib/base/process_metrics.c", 3,
     "the process's own /proc/self and /proc/stat, outside every root"},
    {"api/tls.c", 1, "the API's certificate and key, read once at start"},
    {"lib/crypt/crypt.c", 1, "key files, read once at start, outside every root (api/main.c)"},
    {"lib/data/datapath.c", 1, "a second open file of a directory tenantfs already opened"},
    {"lib/data/dataset.c", 2, "unsealing into the attempt's own tree, as the tenant's user"},
    {"lib/ckpt/ckpt_store.c", 4,
     "the checkpoint store of the trainer and the worker, as the tenant's user"},
    {"lib/ckpt/ckpt_store_crypt.c", 1, "the same, sealed"},
    {"worker/attempt.c", 1,
     "the attempt's credential: the tenant's own spool file, O_NONBLOCK and a regular file"},
    {"worker/initfrom.c", 1, "the checkpoint to start from, into the attempt's own tree"},
    {"worker/launch.c", 1, "/dev/null"},
    {"worker/sink_file.c", 1, "an operator's output files (trainyard-worker run by hand)"},
};

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Blank out the comments of C source text, in place. */
static void strip_comments(char *s)
{
	for (char *p = s; *p; p++) {
		if (p[0] == '/' && p[1] == '*') {
			char *e = strstr(p + 2, "*/");
			char *end = e ? e + 2 : p + strlen(p);
			memset(p, ' ', (size_t)(end - p));
			p = end - 1;
		} else if (p[0] == '/' && p[1] == '/') {
			size_t n = strcspn(p, "\n");
			memset(p, ' ', n);
			p += n - 1;
		}
	}
}

/* Calls of open(, openat(, fopen(, opendir( in text, comments left out. */
static int count_opens(char *text)
{
	strip_comments(text);
	static const char *const calls[] = {"open(", "openat(", "fopen(", "opendir("};
	int n = 0;
	for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++)
		for (const char *p = text; (p = strstr(p, calls[c])) != NULL; p++)
			if (p == text || !ident_char(p[-1]))
				n++;
	return n;
}

START_TEST(no_other_open_by_path)
{
	char failures[4096];
	unit_lint_sources(count_opens, allowed, sizeof(allowed) / sizeof(allowed[0]),
	                  "opens by path", failures, sizeof(failures));
	ck_assert_msg(failures[0] == '\0',
	              "open tenants' files with tenantfs.h (or say why not in this "
	              "test's table): %s",
	              failures);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("tenantfs");
	TCase *t = tcase_create("beneath");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, plain_file_opens);
	tcase_add_loop_test(t, link_at_each_level_refused, 0, sizeof(levels) / sizeof(levels[0]));
	tcase_add_test(t, link_to_inside_refused);
	tcase_add_test(t, fifo_refused_without_blocking);
	tcase_add_test(t, socket_refused);
	tcase_add_test(t, hard_link_refused);
	tcase_add_test(t, wrong_type_refused);
	tcase_add_test(t, other_owner_refused);
	tcase_add_test(t, missing_and_invalid);
	tcase_add_test(t, tenant_dir_replaced);
	tcase_add_test(t, create_beneath);
	tcase_add_test(t, key_files_outside_roots);
	suite_add_tcase(s, t);
	TCase *l = tcase_create("lint");
	tcase_add_test(l, no_other_open_by_path);
	suite_add_tcase(s, l);
	return s;
}

UNIT_MAIN()
