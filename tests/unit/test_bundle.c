/*
 * test_bundle.c - the code bundle check (lib/code/bundle.h) on archives
 * libarchive writes here: a bundle of files, directories and links in
 * plain and gzip-compressed tar passes with its members counted; each
 * rule's breach (not a tar, cut short, an absolute or '..' path, a link
 * out, a hard link to nothing before it, a device or a pipe, a set-ID
 * bit, a path twice, a path under a file, too many bytes, no member) is
 * refused with code_bundle_invalid and the member named; a source's own
 * failure comes back as its code.
 */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bundle.h"
#include "error.h"
#include "unit.h"

#define ARCHIVE_CAP (1 << 20)

typedef struct member_spec {
	const char *path;
	unsigned type; /* AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR, AE_IFIFO; 0: a hard link */
	const char *data_or_target;
	unsigned mode;
} member_spec;

/* An archive of n members into buf, gzip-compressed when gz; its size. */
static size_t make_archive(const member_spec *m, int n, bool gz, char *buf)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (gz)
		archive_write_add_filter_gzip(a);
	size_t used = 0;
	ck_assert_int_eq(archive_write_open_memory(a, buf, ARCHIVE_CAP, &used), ARCHIVE_OK);
	for (int i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, m[i].path);
		archive_entry_set_perm(e, m[i].mode ? m[i].mode : 0644);
		if (m[i].type == 0) {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_hardlink(e, m[i].data_or_target);
		} else {
			archive_entry_set_filetype(e, m[i].type);
		}
		if (m[i].type == AE_IFLNK)
			archive_entry_set_symlink(e, m[i].data_or_target);
		size_t len = m[i].type == AE_IFREG ? strlen(m[i].data_or_target) : 0;
		archive_entry_set_size(e, (la_int64_t)len);
		ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
		if (len)
			ck_assert_int_eq(archive_write_data(a, m[i].data_or_target, len),
			                 (la_ssize_t)len);
		archive_entry_free(e);
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	return used;
}

typedef struct mem {
	const char *buf;
	size_t len, at, step;
	int fail; /* a code to fail with after the first read, or 0 */
} mem;

/* Hands out the buffer in pieces of step bytes. */
static int mem_source(void *arg, void *buf, size_t n, size_t *got)
{
	mem *m = arg;
	if (m->fail && m->at > 0)
		return m->fail;
	size_t k = m->len - m->at;
	if (k > n)
		k = n;
	if (k > m->step)
		k = m->step;
	memcpy(buf, m->buf + m->at, k);
	m->at += k;
	*got = k;
	return 0;
}

typedef struct seen_list {
	char paths[16][64];
	int n;
} seen_list;

static int note_member(void *arg, const bundle_member *m)
{
	seen_list *s = arg;
	if (s->n < 16)
		snprintf(s->paths[s->n++], 64, "%s", m->path);
	return 0;
}

static char *archive_buf;

/* The check's code for these members; err gets its message. */
static int check_members(const member_spec *m, int n, uint64_t max_bytes, char *err,
                         bundle_summary *sum)
{
	size_t len = make_archive(m, n, false, archive_buf);
	mem src = {archive_buf, len, 0, 1000, 0};
	err[0] = '\0';
	return bundle_check(mem_source, &src, max_bytes, NULL, NULL, sum, err, 512);
}

static void setup(void)
{
	archive_buf = malloc(ARCHIVE_CAP);
}

static void teardown(void)
{
	free(archive_buf);
}

static const member_spec good[] = {
    {"./", AE_IFDIR, NULL, 0755}, /* tar -C dir . begins with the directory itself */
    {"./pkg/", AE_IFDIR, NULL, 0755},
    {"./pkg/train.py", AE_IFREG, "print('step 1')\n", 0755},
    {"README", AE_IFREG, "how to run\n", 0},
    {"pkg/latest.py", AE_IFLNK, "train.py", 0777},
    {"pkg/copy.py", 0, "pkg/train.py", 0},
    {"pkg/data/", AE_IFDIR, NULL, 0700},
};

START_TEST(a_bundle_of_files_dirs_and_links_passes)
{
	for (int gz = 0; gz <= 1; gz++) {
		size_t len = make_archive(good, 7, gz, archive_buf);
		mem src = {archive_buf, len, 0, 777, 0};
		bundle_summary sum;
		seen_list seen = {0};
		char err[512] = "";
		ck_assert_int_eq(bundle_check(mem_source, &src, 1 << 20, note_member, &seen, &sum,
		                              err, sizeof(err)),
		                 0);
		ck_assert_int_eq(sum.files, 2);
		ck_assert_int_eq(sum.dirs, 2);
		ck_assert_int_eq(sum.symlinks, 1);
		ck_assert_int_eq(sum.hardlinks, 1);
		ck_assert_uint_eq(sum.bytes, strlen("print('step 1')\n") + strlen("how to run\n"));
		ck_assert_int_eq(seen.n, 6);
		ck_assert_str_eq(seen.paths[0], "pkg"); /* "./" and the trailing '/' dropped */
		ck_assert_str_eq(seen.paths[1], "pkg/train.py");
		ck_assert_str_eq(seen.paths[4], "pkg/copy.py");
	}
}
END_TEST

/* Each case: the members, and a word the message must hold. */
typedef struct bad_case {
	member_spec m[3];
	int n;
	const char *says;
} bad_case;

static const bad_case bad[] = {
    {{{"/etc/passwd", AE_IFREG, "x", 0}}, 1, "/etc/passwd"},
    {{{"../escape.py", AE_IFREG, "x", 0}}, 1, "../escape.py"},
    {{{"pkg/../../escape.py", AE_IFREG, "x", 0}}, 1, "escape.py"},
    {{{"a//b.py", AE_IFREG, "x", 0}}, 1, "a//b.py"},
    {{{"bad\tname", AE_IFREG, "x", 0}}, 1, "control"},
    {{{"out", AE_IFLNK, "/etc", 0}}, 1, "symbolic link"},
    {{{"pkg/", AE_IFDIR, NULL, 0755}, {"pkg/up", AE_IFLNK, "../../x", 0}}, 2, "pkg/up"},
    {{{"alias", 0, "later.py", 0}, {"later.py", AE_IFREG, "x", 0}}, 2, "hard link"},
    {{{"tty", AE_IFCHR, NULL, 0}}, 1, "device"},
    {{{"queue", AE_IFIFO, NULL, 0}}, 1, "pipe"},
    {{{"run.sh", AE_IFREG, "x", 04755}}, 1, "set-user-ID"},
    {{{"a.py", AE_IFREG, "x", 0}, {"./a.py", AE_IFREG, "y", 0}}, 2, "twice"},
    {{{"a", AE_IFREG, "x", 0}, {"a/b.py", AE_IFREG, "y", 0}}, 2, "not a directory"},
};

START_TEST(each_rule_refuses_and_names_the_member)
{
	const bad_case *c = &bad[_i];
	char err[512];
	bundle_summary sum;
	ck_assert_int_eq(check_members(c->m, c->n, 1 << 20, err, &sum), -ERR_CODE_BUNDLE_INVALID);
	ck_assert_msg(strstr(err, c->says), "case %d: \"%s\" does not say \"%s\"", _i, err,
	              c->says);
}
END_TEST

START_TEST(bytes_past_the_limit_are_refused)
{
	const member_spec m[] = {{"a.py", AE_IFREG, "0123456789", 0},
	                         {"b.py", AE_IFREG, "0123456789", 0}};
	char err[512];
	bundle_summary sum;
	ck_assert_int_eq(check_members(m, 2, 20, err, &sum), 0);
	ck_assert_int_eq(check_members(m, 2, 19, err, &sum), -ERR_CODE_BUNDLE_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "b.py"));
}
END_TEST

START_TEST(not_a_tar_cut_short_or_empty_is_refused)
{
	char err[512];
	bundle_summary sum;
	/* bytes that are no archive */
	const char junk[] = "this is a text file, not an archive at all; it goes on for a while "
	                    "so that it is longer than a tar header would be ............"
	                    "..............................................................."
	                    ".........................................................";
	mem src = {junk, sizeof(junk), 0, 64, 0};
	ck_assert_int_eq(bundle_check(mem_source, &src, 1 << 20, NULL, NULL, &sum, err, 512),
	                 -ERR_CODE_BUNDLE_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "not a tar archive"));
	/* a good archive cut in the middle of a file's data */
	const member_spec big[] = {{"a.py", AE_IFREG,
	                            "a file long enough that its data spans past the first "
	                            "header block of the archive, which is 512 bytes, so cutting "
	                            "the archive at 700 bytes cuts this file short..............."
	                            "............................................................"
	                            "............................................................"
	                            "............................................................"
	                            "............................................................",
	                            0}};
	size_t len = make_archive(big, 1, false, archive_buf);
	ck_assert_uint_gt(len, 1024);
	mem cut = {archive_buf, 700, 0, 512, 0};
	ck_assert_int_eq(bundle_check(mem_source, &cut, 1 << 20, NULL, NULL, &sum, err, 512),
	                 -ERR_CODE_BUNDLE_INVALID);
	/* an archive with no member */
	len = make_archive(NULL, 0, false, archive_buf);
	mem none = {archive_buf, len, 0, 512, 0};
	ck_assert_int_eq(bundle_check(mem_source, &none, 1 << 20, NULL, NULL, &sum, err, 512),
	                 -ERR_CODE_BUNDLE_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "no member"));
}
END_TEST

START_TEST(a_source_failure_is_its_own_code)
{
	size_t len = make_archive(good, 7, false, archive_buf);
	mem src = {archive_buf, len, 0, 512, -ERR_STORAGE_IO};
	bundle_summary sum;
	char err[512];
	ck_assert_int_eq(bundle_check(mem_source, &src, 1 << 20, NULL, NULL, &sum, err, 512),
	                 -ERR_STORAGE_IO);
}
END_TEST

START_TEST(member_paths)
{
	ck_assert(bundle_path_valid("train.py"));
	ck_assert(bundle_path_valid("pkg/sub/.hidden"));
	ck_assert(bundle_path_valid("a..b/c"));
	ck_assert(!bundle_path_valid(""));
	ck_assert(!bundle_path_valid("/abs"));
	ck_assert(!bundle_path_valid("a/../b"));
	ck_assert(!bundle_path_valid(".."));
	ck_assert(!bundle_path_valid("a/./b"));
	ck_assert(!bundle_path_valid("a//b"));
	ck_assert(!bundle_path_valid("a/"));
	ck_assert(!bundle_path_valid("a\nb"));
	char longp[BUNDLE_PATH_MAX + 2];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	ck_assert(!bundle_path_valid(longp));
	longp[BUNDLE_PATH_MAX] = '\0';
	ck_assert(bundle_path_valid(longp));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("bundle");
	TCase *tc = tcase_create("check");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_bundle_of_files_dirs_and_links_passes);
	tcase_add_loop_test(tc, each_rule_refuses_and_names_the_member, 0,
	                    (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, bytes_past_the_limit_are_refused);
	tcase_add_test(tc, not_a_tar_cut_short_or_empty_is_refused);
	tcase_add_test(tc, a_source_failure_is_its_own_code);
	tcase_add_test(tc, member_paths);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
