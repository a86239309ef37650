/*
 * test_datapath.c - data paths: the rule as a table, the tenant's
 * directory under the data root, and the resolver beneath a directory,
 * by openat2 and by the openat(O_NOFOLLOW) walk, against a tree with
 * symbolic links out of it (to a file, to a directory, to another
 * tenant's directory), a FIFO, and files a pattern matches.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datapath.h"
#include "error.h"
#include "unit.h"

#define TENANT "0b9e0c52-0000-4000-8000-0000000000a1"
#define OTHER  "0b9e0c52-0000-4000-8000-0000000000b2"

typedef struct rule_case {
	const char *path;
	const char *why; /* NULL: accepted; else a piece of the reason */
} rule_case;

static const rule_case rules[] = {
    {"train.bin", NULL},
    {"owt/train_*.bin", NULL},
    {"a/b/c/shard_[0-9]?.bin", NULL},
    {".hidden/..x/x..", NULL},
    {"...", NULL},
    {"a\\*b", NULL},
    {"", "empty"},
    {"/etc/shadow", "absolute"},
    {"/proc/self/environ", "absolute"},
    {"../../etc/passwd", "\"..\""},
    {"a/../../b", "\"..\""},
    {"a/..", "\"..\""},
    {"..", "\"..\""},
    {".", "\".\""},
    {"./x.bin", "\".\""},
    {"a/./b", "\".\""},
    {"a//b", "empty component"},
    {"a/", "empty component"},
    {"*/train.bin", "last component"},
    {"a?/x", "last component"},
    {"a[1]/x", "last component"},
    {"a\\b/x", "last component"},
};

START_TEST(rule_table)
{
	const rule_case *c = &rules[_i];
	char why[128] = "";
	int rc = datapath_check(c->path, why, sizeof(why));
	if (c->why == NULL)
		ck_assert_msg(rc == 0, "\"%s\" refused: %s", c->path, why);
	else
		ck_assert_msg(rc == -1 && strstr(why, c->why),
		              "\"%s\": rc %d, why \"%s\", want \"%s\"", c->path, rc, why, c->why);
}
END_TEST

START_TEST(component_length)
{
	char path[600];
	memset(path, 'a', 255);
	path[255] = '\0';
	ck_assert_int_eq(datapath_check(path, NULL, 0), 0);
	path[255] = 'a';
	path[256] = '\0';
	ck_assert_int_eq(datapath_check(path, NULL, 0), -1);
	ck_assert_int_eq(datapath_check(NULL, NULL, 0), -1);
	ck_assert(datapath_has_pattern("a*"));
	ck_assert(!datapath_has_pattern("a/b.bin"));
}
END_TEST

/* ---- the tree -------------------------------------------------------- */

static char base[256], root[512], other[512], outside[512];
static int rootfd = -1;

static void write_text(const char *dir, const char *name, const char *text)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void link_at(const char *target, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", root, name);
	ck_assert_int_eq(symlink(target, p), 0);
}

static void mkdir_at(const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	ck_assert_int_eq(mkdir(p, 0700), 0);
}

/*
 * base/data/tenants/TENANT: the root, with
 *   a.bin b.bin .dot.bin sub/c.bin fifo.bin
 *   out.bin -> base/outside/secret    etc -> /etc
 *   peer -> ../OTHER (another tenant)  in.bin -> a.bin (a link even inside)
 *   deep/up -> ..                      lnk/ -> sub (a linked directory)
 */
static void setup(void)
{
	char err[256], p[1024];
	snprintf(base, sizeof(base), "/tmp/ty-datapath-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(p, sizeof(p), "%s/data", base);
	ck_assert_msg(datapath_tenant_prepare(p, TENANT, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(datapath_tenant_prepare(p, OTHER, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(datapath_tenant_dir(p, TENANT, root, sizeof(root)), 0);
	ck_assert_int_eq(datapath_tenant_dir(p, OTHER, other, sizeof(other)), 0);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	ck_assert_int_eq(mkdir(outside, 0700), 0);
	write_text(outside, "secret", "secret");
	write_text(other, "b_1.bin", "other tenant");
	write_text(root, "a.bin", "a");
	write_text(root, "b.bin", "b");
	write_text(root, ".dot.bin", "dot");
	mkdir_at(root, "sub");
	write_text(root, "sub/c.bin", "c");
	snprintf(p, sizeof(p), "%s/fifo.bin", root);
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/secret", outside);
	link_at(p, "out.bin");
	link_at("/etc", "etc");
	link_at("../" OTHER, "peer");
	link_at("a.bin", "in.bin");
	mkdir_at(root, "deep");
	link_at("..", "deep/up");
	link_at("sub", "lnk");
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(rootfd, 0);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void teardown(void)
{
	if (rootfd >= 0)
		close(rootfd);
	rootfd = -1;
	nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

START_TEST(tenant_dirs_private)
{
	char p[1024], err[256];
	struct stat st;
	snprintf(p, sizeof(p), "%s/data/tenants", base);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0711); /* shared: the tenants' users pass */
	ck_assert_int_eq(stat(root, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert(strstr(root, "/data/tenants/" TENANT) != NULL);
	ck_assert_int_eq(datapath_tenant_dir(p, "../x", p, sizeof(p)), -ERR_STORAGE_PATH_INVALID);
	snprintf(p, sizeof(p), "%s/data", base);
	ck_assert_int_eq(datapath_tenant_prepare(p, "not-an-id", err, sizeof(err)),
	                 -ERR_STORAGE_PATH_INVALID);
	/* a tenant directory opened to others, or replaced by a link, is refused */
	ck_assert_int_eq(chmod(root, 0755), 0);
	ck_assert_int_eq(datapath_tenant_prepare(p, TENANT, err, sizeof(err)), -ERR_STORAGE_UNSAFE);
	ck_assert_int_eq(chmod(root, 0700), 0);
	char moved[1024];
	snprintf(moved, sizeof(moved), "%s.real", other);
	ck_assert_int_eq(rename(other, moved), 0);
	ck_assert_int_eq(symlink(moved, other), 0);
	ck_assert_int_eq(datapath_tenant_prepare(p, OTHER, err, sizeof(err)), -ERR_STORAGE_UNSAFE);
	ck_assert_msg(strstr(err, "symbolic link"), "%s", err);
}
END_TEST

/* What datapath_openat does with each path, by either resolver. */
typedef struct open_case {
	const char *path;
	int flags;
	int want_errno; /* 0: opens */
	int alt_errno;  /* another errno the kernel may give for the same refusal */
} open_case;

static const open_case opens[] = {
    {"a.bin", O_RDONLY, 0, 0},
    {"sub/c.bin", O_RDONLY, 0, 0},
    {"sub", O_RDONLY | O_DIRECTORY, 0, 0},
    {"missing.bin", O_RDONLY, ENOENT, 0},
    {"a.bin/x", O_RDONLY, ENOTDIR, 0},
    {"out.bin", O_RDONLY, ELOOP, 0},
    {"in.bin", O_RDONLY, ELOOP, 0},
    {"etc/passwd", O_RDONLY, ELOOP, ENOTDIR},
    {"etc", O_RDONLY | O_DIRECTORY, ELOOP, ENOTDIR},
    {"peer/b_1.bin", O_RDONLY, ELOOP, ENOTDIR},
    {"lnk/c.bin", O_RDONLY, ELOOP, ENOTDIR},
    {"deep/up/a.bin", O_RDONLY, ELOOP, ENOTDIR},
    {"/etc/passwd", O_RDONLY, EINVAL, 0},
    {"../" OTHER "/b_1.bin", O_RDONLY, EINVAL, 0},
    {"sub/../a.bin", O_RDONLY, EINVAL, 0},
};

static void open_each(datapath_resolve how)
{
	for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
		const open_case *c = &opens[i];
		errno = 0;
		int fd = datapath_openat(rootfd, c->path, c->flags | O_NONBLOCK, how);
		int e = errno;
		if (fd >= 0)
			close(fd);
		if (c->want_errno == 0)
			ck_assert_msg(fd >= 0, "%s: refused (%s)", c->path, strerror(e));
		else
			ck_assert_msg(
			    fd < 0 && (e == c->want_errno || (c->alt_errno && e == c->alt_errno)),
			    "%s (how %d): fd %d, errno %s, want %s", c->path, (int)how, fd,
			    strerror(e), strerror(c->want_errno));
	}
}

START_TEST(openat_beneath)
{
	open_each(DATAPATH_RESOLVE_AUTO);
}
END_TEST

START_TEST(openat_walk)
{
	open_each(DATAPATH_RESOLVE_WALK);
}
END_TEST

typedef struct match_case {
	const char *pattern;
	int rc;           /* 0, or the refusal */
	const char *want; /* rc 0: the names joined by ' '; else a piece of the message */
} match_case;

static const match_case matches[] = {
    {"a.bin", 0, "a.bin"},
    {"[ab].bin", 0, "a.bin b.bin"},
    {"sub/*.bin", 0, "sub/c.bin"},
    {".*.bin", 0, ".dot.bin"},
    {"nothing_*.bin", 0, ""},
    {"missing.bin", 0, ""},
    {"nodir/*.bin", 0, ""},
    {"fifo.bin", 0, "fifo.bin"}, /* opened without blocking; the loader refuses it */
    {"*.bin", -ERR_STORAGE_UNSAFE, "symbolic link"},
    {"o*.bin", -ERR_STORAGE_UNSAFE, "\"out.bin\" is or passes through a symbolic link"},
    {"out.bin", -ERR_STORAGE_UNSAFE, "\"out.bin\" is or passes through a symbolic link"},
    {"etc/passw?", -ERR_STORAGE_UNSAFE, "\"etc\" passes through a symbolic link"},
    {"peer/*.bin", -ERR_STORAGE_UNSAFE, "\"peer\" passes through a symbolic link"},
    {"lnk/*.bin", -ERR_STORAGE_UNSAFE, "\"lnk\" passes through a symbolic link"},
    {"/etc/*", -ERR_STORAGE_PATH_INVALID, "absolute"},
    {"../" OTHER "/*.bin", -ERR_STORAGE_PATH_INVALID, "\"..\""},
    {"*/c.bin", -ERR_STORAGE_PATH_INVALID, "last component"},
};

static void match_each(datapath_resolve how)
{
	for (size_t i = 0; i < sizeof(matches) / sizeof(matches[0]); i++) {
		const match_case *c = &matches[i];
		datapath_matches m;
		char err[512] = "", got[1024] = "";
		int rc = datapath_match(rootfd, c->pattern, how, &m, err, sizeof(err));
		for (size_t k = 0; rc == 0 && k < m.n; k++) {
			ck_assert_int_ge(m.files[k].fd, 0);
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " " : "",
			         m.files[k].name);
		}
		datapath_matches_release(&m);
		ck_assert_msg(rc == c->rc, "%s (how %d): rc %d, want %d: %s", c->pattern, (int)how,
		              rc, c->rc, err);
		if (rc == 0)
			ck_assert_msg(strcmp(got, c->want) == 0, "%s: got \"%s\", want \"%s\"",
			              c->pattern, got, c->want);
		else
			ck_assert_msg(strstr(err, c->want), "%s: \"%s\" lacks \"%s\"", c->pattern,
			              err, c->want);
	}
}

START_TEST(match_beneath)
{
	match_each(DATAPATH_RESOLVE_AUTO);
}
END_TEST

START_TEST(match_walk)
{
	match_each(DATAPATH_RESOLVE_WALK);
}
END_TEST

START_TEST(attempts_reserved)
{
	ck_assert(datapath_reserved("attempts"));
	ck_assert(datapath_reserved("attempts/x/train/shard_*.bin"));
	ck_assert(!datapath_reserved("attempts2/x.bin"));
	ck_assert(!datapath_reserved("owt/attempts/x.bin"));
	ck_assert(!datapath_reserved("train_*.bin"));
	ck_assert(!datapath_reserved(""));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("datapath");
	TCase *tc = tcase_create("rule");
	tcase_add_loop_test(tc, rule_table, 0, (int)(sizeof(rules) / sizeof(rules[0])));
	tcase_add_test(tc, component_length);
	tcase_add_test(tc, attempts_reserved);
	suite_add_tcase(s, tc);
	tc = tcase_create("tree");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, tenant_dirs_private);
	tcase_add_test(tc, openat_beneath);
	tcase_add_test(tc, openat_walk);
	tcase_add_test(tc, match_beneath);
	tcase_add_test(tc, match_walk);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
