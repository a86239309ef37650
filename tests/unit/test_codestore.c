/*
 * test_codestore.c - code bundle versions on disk (lib/code/codestore.h):
 * an archive written in pieces is stored sealed (no plaintext on disk),
 * under "<version>/bundle.tar", with its SHA-256, sizes and members'
 * summary; the sealed size counted while writing is the file's; an
 * archive that breaks a rule, or is no archive, is refused at the finish
 * and leaves nothing behind; a version never finished leaves nothing; a
 * stored version unpacks as packed, and only when its hash and seal hold;
 * a grantee's copy is the sealed archive as it is, and unpacks from its
 * own tree.
 */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codestore.h"
#include "error.h"
#include "unit.h"

#define TENANT  "0b9e0c52-0000-4000-8000-0000000000a1"
#define BUNDLE  "0b9e0c52-0000-4000-8000-0000000000c1"
#define VERSION "0b9e0c52-0000-4000-8000-0000000000e1"
#define MARKER  "print('a line only the plaintext holds')\n"

static char root[256];
static crypt_object_ctx ctx;
static storage_owners self;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void setup(void)
{
	self = storage_owners_self();
	snprintf(root, sizeof(root), "/tmp/ty-code-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	crypt_key k;
	ck_assert_int_eq(crypt_key_generate(&k), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&ctx, TENANT, BUNDLE, &k), 0);
	crypt_key_clear(&k);
}

static void teardown(void)
{
	crypt_object_ctx_clear(&ctx);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A tar of train.py (the marker, many times over, so it spans chunks) and a symlink; its size. */
static size_t make_tar(char *buf, size_t cap, const char *link_target)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	size_t used = 0;
	ck_assert_int_eq(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
	struct archive_entry *e = archive_entry_new();
	size_t reps = 4000, len = reps * strlen(MARKER);
	archive_entry_set_pathname(e, "train.py");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0755);
	archive_entry_set_size(e, (la_int64_t)len);
	ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
	for (size_t i = 0; i < reps; i++)
		archive_write_data(a, MARKER, strlen(MARKER));
	archive_entry_clear(e);
	archive_entry_set_pathname(e, "latest.py");
	archive_entry_set_filetype(e, AE_IFLNK);
	archive_entry_set_symlink(e, link_target);
	ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
	archive_entry_free(e);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	return used;
}

static bool exists(const char *rel)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/tenants/%s/code/%s/%s", root, TENANT, BUNDLE, rel);
	return lstat(p, &st) == 0;
}

/* Write tar in pieces of step bytes and finish. RET the finish's code. */
static int store(const char *tar, size_t len, size_t step, code_version_info *info,
                 uint64_t *counted, bool keep, char *err)
{
	code_writer *w = NULL;
	int rc = code_writer_open(root, &self, &ctx, VERSION, &w, err, 512);
	ck_assert_int_eq(rc, 0);
	for (size_t at = 0; at < len; at += step)
		ck_assert_int_eq(
		    code_writer_write(w, tar + at, len - at < step ? len - at : step, err, 512), 0);
	*counted = code_writer_sealed_bytes(w);
	rc = code_writer_finish(w, 1 << 20, NULL, NULL, info, err, 512);
	code_writer_free(w, keep);
	return rc;
}

/*
 * A version of train.py stored (65536 bytes at a time), and the empty
 * directory out (ROOT/unpacked) to unpack it into. RET out, opened.
 */
static int stored_for_unpack(code_version_info *info, char *out, size_t outlen)
{
	size_t cap = 1 << 20;
	char *tar = malloc(cap), err[512] = "";
	ck_assert_ptr_nonnull(tar);
	size_t len = make_tar(tar, cap, "train.py");
	uint64_t counted;
	ck_assert_msg(store(tar, len, 65536, info, &counted, true, err) == 0, "%s", err);
	free(tar);
	snprintf(out, outlen, "%s/unpacked", root);
	ck_assert_int_eq(mkdir(out, 0700), 0);
	int dfd = open(out, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	return dfd;
}

START_TEST(a_version_is_stored_sealed_and_checked)
{
	size_t cap = 1 << 20;
	char *tar = malloc(cap), err[512] = "";
	size_t len = make_tar(tar, cap, "train.py");
	code_version_info info;
	uint64_t counted;
	ck_assert_int_eq(store(tar, len, 10007, &info, &counted, true, err), 0);
	ck_assert_uint_eq(info.archive_bytes, len);
	ck_assert_int_eq(info.sum.files, 1);
	ck_assert_int_eq(info.sum.symlinks, 1);
	ck_assert_uint_eq(info.sum.bytes, 4000 * strlen(MARKER));
	unsigned char want[32];
	SHA256((const unsigned char *)tar, len, want);
	ck_assert_mem_eq(info.sha256, want, 32);
	ck_assert(exists(VERSION "/" CODE_ARCHIVE_FILE));
	ck_assert(!exists(VERSION STORAGE_PARTIAL_EXT));
	/* on disk: the sealed size counted, and no plaintext */
	char path[512];
	snprintf(path, sizeof(path), "%s/tenants/%s/code/%s/%s/%s", root, TENANT, BUNDLE, VERSION,
	         CODE_ARCHIVE_FILE);
	char *disk = unit_read_file(path);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, info.sealed_bytes);
	ck_assert_uint_eq(counted, info.sealed_bytes);
	ck_assert_ptr_null(memmem(disk, (size_t)st.st_size, "a line only the plaintext", 25));
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	free(disk);
	free(tar);
}
END_TEST

START_TEST(a_refused_archive_leaves_nothing)
{
	size_t cap = 1 << 20;
	char *tar = malloc(cap), err[512] = "";
	size_t len = make_tar(tar, cap, "../../escape");
	code_version_info info;
	uint64_t counted;
	ck_assert_int_eq(store(tar, len, 4096, &info, &counted, true, err),
	                 -ERR_CODE_BUNDLE_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "latest.py"));
	ck_assert(!exists(VERSION));
	ck_assert(!exists(VERSION STORAGE_PARTIAL_EXT));
	/* no archive at all */
	memset(tar, 'x', 5000);
	ck_assert_int_eq(store(tar, 5000, 5000, &info, &counted, true, err),
	                 -ERR_CODE_BUNDLE_INVALID);
	ck_assert(!exists(VERSION STORAGE_PARTIAL_EXT));
	free(tar);
}
END_TEST

START_TEST(an_unfinished_or_unkept_version_leaves_nothing)
{
	char err[512];
	code_writer *w = NULL;
	ck_assert_int_eq(code_writer_open(root, &self, &ctx, VERSION, &w, err, sizeof(err)), 0);
	ck_assert_int_eq(code_writer_write(w, "abc", 3, err, sizeof(err)), 0);
	ck_assert(exists(VERSION STORAGE_PARTIAL_EXT));
	code_writer_free(w, true);
	ck_assert(!exists(VERSION STORAGE_PARTIAL_EXT));
	/* finished but not kept (its registration failed) */
	size_t cap = 1 << 20;
	char *tar = malloc(cap);
	size_t len = make_tar(tar, cap, "train.py");
	code_version_info info;
	uint64_t counted;
	ck_assert_int_eq(store(tar, len, len, &info, &counted, false, err), 0);
	ck_assert(!exists(VERSION));
	free(tar);
}
END_TEST

/* A version unpacks as it was packed; another hash, or a sealed file altered, unpacks nothing. */
START_TEST(a_version_unpacks_for_an_attempt)
{
	char err[512] = "", out[512];
	code_version_info info;
	int dfd = stored_for_unpack(&info, out, sizeof(out));
	char cwd[512], after[512];
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	bundle_summary sum;
	int rc = code_version_unpack(root, ctx.tenant_id, &ctx, VERSION, info.sha256, 1 << 20, dfd,
	                             &sum, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_ptr_nonnull(getcwd(after, sizeof(after)));
	ck_assert_str_eq(cwd, after);
	ck_assert_int_eq(sum.files, 1);
	struct stat st;
	char p[600];
	snprintf(p, sizeof(p), "%s/train.py", out);
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 4000 * strlen(MARKER));
	ck_assert_uint_eq(st.st_mode & 0777, 0755);
	snprintf(p, sizeof(p), "%s/latest.py", out);
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(stat(out, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700); /* the top directory keeps its own mode */

	/* the database's hash is another: nothing is written */
	unsigned char other[32];
	memcpy(other, info.sha256, 32);
	other[0] ^= 1;
	snprintf(out, sizeof(out), "%s/second", root);
	ck_assert_int_eq(mkdir(out, 0700), 0);
	int d2 = open(out, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(code_version_unpack(root, ctx.tenant_id, &ctx, VERSION, other, 1 << 20, d2,
	                                     &sum, err, sizeof(err)),
	                 -ERR_CODE_BUNDLE_INVALID);
	snprintf(p, sizeof(p), "%s/train.py", out);
	ck_assert_int_ne(lstat(p, &st), 0);
	/* one byte of the sealed file altered: its seal refuses it */
	snprintf(p, sizeof(p), "%s/tenants/%s/code/%s/%s/%s", root, TENANT, BUNDLE, VERSION,
	         CODE_ARCHIVE_FILE);
	int fd = open(p, O_RDWR);
	char b;
	ck_assert_int_eq(pread(fd, &b, 1, 2000), 1);
	b ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &b, 1, 2000), 1);
	close(fd);
	ck_assert_int_lt(code_version_unpack(root, ctx.tenant_id, &ctx, VERSION, info.sha256,
	                                     1 << 20, d2, &sum, err, sizeof(err)),
	                 0);
	snprintf(p, sizeof(p), "%s/train.py", out);
	ck_assert_int_ne(lstat(p, &st), 0);
	close(d2);
	close(dfd);
}
END_TEST

#define GRANTEE "0b9e0c52-0000-4000-8000-0000000000a2"

/*
 * A grantee's copy: the sealed archive as it is, in the grantee's tree,
 * unpacked from there with the owner's key; without the copy the grantee
 * reads nothing of the owner's tree.
 */
START_TEST(a_granted_copy_unpacks_in_the_grantees_tree)
{
	char err[512] = "", out[512], p[600], q[600];
	code_version_info info;
	int dfd = stored_for_unpack(&info, out, sizeof(out));
	bundle_summary sum;
	/* no copy yet: the grantee's tree holds nothing to read */
	ck_assert_int_eq(storage_tenant_dirs(root, GRANTEE, &self, err, sizeof(err)), 0);
	ck_assert_int_lt(code_version_unpack(root, GRANTEE, &ctx, VERSION, info.sha256, 1 << 20,
	                                     dfd, &sum, err, sizeof(err)),
	                 0);
	ck_assert_msg(code_stage(root, TENANT, BUNDLE, VERSION, GRANTEE, &self, err, sizeof(err)) ==
	                  0,
	              "%s", err);
	snprintf(p, sizeof(p), "%s/tenants/%s/code/%s/%s/%s", root, TENANT, BUNDLE, VERSION,
	         CODE_ARCHIVE_FILE);
	snprintf(q, sizeof(q), "%s/tenants/%s/granted/%s/%s/%s", root, GRANTEE, BUNDLE, VERSION,
	         CODE_ARCHIVE_FILE);
	struct stat a, b;
	ck_assert_int_eq(lstat(p, &a), 0);
	ck_assert_int_eq(lstat(q, &b), 0);
	ck_assert(S_ISREG(b.st_mode) && (b.st_mode & 0777) == 0600);
	ck_assert_int_eq(a.st_size, b.st_size); /* still sealed: the same bytes */
	int rc = code_version_unpack(root, GRANTEE, &ctx, VERSION, info.sha256, 1 << 20, dfd, &sum,
	                             err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(sum.files, 1);
	snprintf(p, sizeof(p), "%s/train.py", out);
	ck_assert_int_eq(lstat(p, &a), 0);
	/* a copy already there is kept; a link where the owner's archive should be is not followed
	 */
	ck_assert_int_eq(
	    code_stage(root, TENANT, BUNDLE, VERSION, GRANTEE, &self, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/tenants/%s/code/%s/%s/%s", root, TENANT, BUNDLE, VERSION,
	         CODE_ARCHIVE_FILE);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(symlink("/etc/passwd", p), 0);
	const char *other = "0b9e0c52-0000-4000-8000-0000000000a3";
	ck_assert_int_eq(code_stage(root, TENANT, BUNDLE, VERSION, other, &self, err, sizeof(err)),
	                 -ERR_STORAGE_IO);
	snprintf(q, sizeof(q), "%s/tenants/%s/granted/%s/%s", root, other, BUNDLE, VERSION);
	ck_assert_int_eq(lstat(q, &b), -1);
	close(dfd);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("codestore");
	TCase *tc = tcase_create("versions");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_version_is_stored_sealed_and_checked);
	tcase_add_test(tc, a_refused_archive_leaves_nothing);
	tcase_add_test(tc, an_unfinished_or_unkept_version_leaves_nothing);
	tcase_add_test(tc, a_version_unpacks_for_an_attempt);
	tcase_add_test(tc, a_granted_copy_unpacks_in_the_grantees_tree);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
