/*
 * test_train_errors.c - the checkpoint store and the data loader answer in
 * the one error space of lib/base/errors.def: each failure, produced by calling
 * the function that meets it, is the -ERR_X its header documents, never a
 * value another row of the table owns (they once had code spaces of their
 * own, -10 to -34, that read as forbidden, conflict or internal_error).
 *
 * Out of memory is proved by failing each allocation of the library in turn:
 * this program is linked with --wrap=malloc,calloc,realloc (Makefile), so
 * fail_at counts down the allocations of our own code (not those inside
 * libc, jansson or OpenSSL) and the one it reaches returns NULL.
 */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "data.h"
#include "error.h"
#include "ckpt_store.h"
#include "unit.h"

/* ---- failing allocations ---------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);

static long fail_at;      /* 0: never; n: the n-th allocation from now fails */
static bool alloc_failed; /* one did */

static bool fail_now(void)
{
	if (fail_at <= 0 || --fail_at > 0)
		return false;
	alloc_failed = true;
	return true;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
	return fail_now() ? NULL : __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

/* ---- fixtures ------------------------------------------------------------ */

static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ty-errors-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
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
	fail_at = 0;
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* rc is -want, the row whose code string is code. */
static void expect_code(int rc, err_code want, const char *code, const char *what)
{
	ck_assert_msg(rc < 0 && -rc < ERR__COUNT, "%s: %d is not a negative err_code", what, rc);
	ck_assert_msg(rc == -(int)want, "%s: %d (%s), expected -%d (%s)", what, rc,
	              err_info((err_code)-rc)->code, (int)want, code);
	ck_assert_str_eq(err_info((err_code)-rc)->code, code);
}

static ckpt_store *store_at(const char *name)
{
	char root[512];
	snprintf(root, sizeof(root), "%s/%s", tmpdir, name);
	ckpt_store *s = ckpt_store_dir(root);
	ck_assert_ptr_nonnull(s);
	return s;
}

/* Commit text as the file name of s. */
static void put_file(ckpt_store *s, const char *name, const char *text)
{
	char err[512];
	ckpt_stream *f;
	ck_assert_msg(ckpt_store_open_write(s, name, &f, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ckpt_stream_write(f, text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ckpt_stream_commit(f, err, sizeof(err)) == 0, "%s", err);
}

/* A complete checkpoint of step 3, one rank, in s. */
static void put_checkpoint(ckpt_store *s)
{
	char err[512];
	ckpt_writer *w;
	ckpt_shard_info info;
	ck_assert_msg(ckpt_shard_begin(s, 3, 0, 1, &w, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(ckpt_put(w, "params", "0123456789abcdef", 16), 0);
	ck_assert_int_eq(ckpt_put(w, "state", "{}", 2), 0);
	ck_assert_msg(ckpt_shard_commit(w, &info, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ckpt_manifest_write(s, 3, 1, NULL, &info, 1, err, sizeof(err)) == 0, "%s",
	              err);
}

/* ---- the checkpoint store ------------------------------------------------ */

START_TEST(store_codes_are_the_table)
{
	char err[512];
	ckpt_store *s = store_at("none"); /* its directory does not exist */
	ckpt_stream *f = NULL;
	expect_code(ckpt_store_open_read(s, "step_00000001/manifest.json", &f, err, sizeof(err)),
	            ERR_STORAGE_FILE_NOT_FOUND, "storage_file_not_found", "open_read, no root");
	expect_code(ckpt_store_remove(s, "step_00000001", err, sizeof(err)),
	            ERR_STORAGE_FILE_NOT_FOUND, "storage_file_not_found", "remove, no root");
	expect_code(ckpt_store_remove(s, "../escape", err, sizeof(err)), ERR_STORAGE_PATH_INVALID,
	            "storage_path_invalid", "remove ..");
	expect_code(ckpt_store_open_write(s, "/abs", &f, err, sizeof(err)),
	            ERR_STORAGE_PATH_INVALID, "storage_path_invalid", "open_write /abs");
	ckpt_manifest m;
	expect_code(ckpt_manifest_read(s, 1, &m, err, sizeof(err)), ERR_CHECKPOINT_NOT_FOUND,
	            "checkpoint_not_found", "manifest_read, no root");
	ckpt_manifest_release(&m);
	int step;
	expect_code(ckpt_latest(s, &step, err, sizeof(err)), ERR_CHECKPOINT_NOT_FOUND,
	            "checkpoint_not_found", "latest, no root");
	expect_code(ckpt_find_valid(s, NULL, &m, err, sizeof(err)), ERR_CHECKPOINT_NOT_FOUND,
	            "checkpoint_not_found", "find_valid, no root");
	ckpt_manifest_release(&m);
	expect_code(ckpt_prune(s, 0, NULL, err, sizeof(err)), ERR_INVALID_ARGUMENT,
	            "invalid_argument", "prune keep 0");
	ckpt_writer *w = NULL;
	expect_code(ckpt_shard_begin(s, 1, 2, 2, &w, err, sizeof(err)), ERR_INVALID_ARGUMENT,
	            "invalid_argument", "shard_begin rank 2 of 2");

	/* a directory that is not empty cannot be removed: an I/O failure */
	ck_assert_int_eq(ckpt_store_mkdir(s, "d", err, sizeof(err)), 0);
	put_file(s, "d/f", "x");
	expect_code(ckpt_store_remove(s, "d", err, sizeof(err)), ERR_STORAGE_IO, "storage_io",
	            "remove a full directory");

	/* manifests that do not parse, or of another format version */
	ck_assert_int_eq(ckpt_store_mkdir(s, "step_00000007", err, sizeof(err)), 0);
	put_file(s, "step_00000007/manifest.json", "not json");
	expect_code(ckpt_manifest_read(s, 7, &m, err, sizeof(err)), ERR_CHECKPOINT_CORRUPT,
	            "checkpoint_corrupt", "manifest_read, not JSON");
	ckpt_manifest_release(&m);
	expect_code(ckpt_find_valid(s, NULL, &m, err, sizeof(err)), ERR_CHECKPOINT_CORRUPT,
	            "checkpoint_corrupt", "find_valid, none verifies");
	ckpt_manifest_release(&m);
	put_file(s, "step_00000007/manifest.json",
	         "{\"magic\": \"trainyard-checkpoint\", \"version\": 2, \"step\": 7, \"world\": 1,"
	         " \"config\": {}, \"shards\": [], \"created_at\": \"2024-05-20T12:00:00Z\"}");
	expect_code(ckpt_manifest_read(s, 7, &m, err, sizeof(err)), ERR_CHECKPOINT_VERSION,
	            "checkpoint_version_unsupported", "manifest_read, version 2");
	ckpt_manifest_release(&m);

	/* a shard that is not there, and a section that is not there */
	put_checkpoint(s);
	ckpt_reader *rd = NULL;
	expect_code(ckpt_shard_open(s, 3, 0, 2, NULL, &rd, err, sizeof(err)),
	            ERR_STORAGE_FILE_NOT_FOUND, "storage_file_not_found", "shard_open, no shard");
	ck_assert_msg(ckpt_shard_open(s, 3, 0, 1, NULL, &rd, err, sizeof(err)) == 0, "%s", err);
	uint64_t size;
	expect_code(ckpt_get_size(rd, "nope", &size), ERR_CHECKPOINT_NOT_FOUND,
	            "checkpoint_not_found", "get_size, no section");
	char buf[8];
	expect_code(ckpt_get(rd, "params", buf, sizeof(buf), err, sizeof(err)),
	            ERR_INVALID_ARGUMENT, "invalid_argument", "get, wrong size");
	ckpt_shard_close(rd);
	ckpt_store_free(s);
}
END_TEST

/*
 * Fail the n-th allocation of call(ctx) for n = 1, 2, ... until one runs
 * through without failing: every failure must be out of memory, -ERR_INTERNAL.
 */
static void each_allocation_fails(int (*call)(void *ctx), void *ctx, const char *what)
{
	int tried = 0;
	for (long n = 1;; n++) {
		alloc_failed = false;
		fail_at = n;
		int rc = call(ctx);
		fail_at = 0;
		if (!alloc_failed) {
			ck_assert_msg(rc == 0, "%s: %d without a failed allocation", what, rc);
			break;
		}
		tried++;
		expect_code(rc, ERR_INTERNAL, "internal_error", what);
	}
	ck_assert_msg(tried > 1, "%s: only %d allocations failed", what, tried);
}

static int read_manifest(void *s)
{
	ckpt_manifest m;
	int rc = ckpt_manifest_read(s, 3, &m, NULL, 0);
	ckpt_manifest_release(&m);
	return rc;
}

static int open_shard(void *s)
{
	ckpt_reader *rd = NULL;
	int rc = ckpt_shard_open(s, 3, 0, 1, NULL, &rd, NULL, 0);
	char buf[16];
	if (rc == 0)
		rc = ckpt_get(rd, "params", buf, sizeof(buf), NULL, 0);
	ckpt_shard_close(rd);
	return rc;
}

static int list_store(void *s)
{
	ckpt_entry *e = NULL;
	int n;
	int rc = ckpt_list(s, &e, &n, NULL, 0);
	free(e);
	return rc;
}

START_TEST(store_out_of_memory_is_internal)
{
	ckpt_store *s = store_at("ckpt");
	put_checkpoint(s);
	each_allocation_fails(read_manifest, s, "manifest_read");
	each_allocation_fails(open_shard, s, "shard_open and get");
	each_allocation_fails(list_store, s, "list");
	ckpt_store_free(s);
}
END_TEST

/* ---- the data loader ----------------------------------------------------- */

static data_config data_at(const char *root, const char *pattern, int B)
{
	data_config c = {.root = root,
	                 .pattern = pattern,
	                 .vocab_size = 65536,
	                 .B = B,
	                 .T = 4,
	                 .dp_rank = 0,
	                 .dp_size = 1,
	                 .seed = 1,
	                 .shuffle = true};
	return c;
}

/* A shard of tokens 0..63 as name beneath tmpdir. */
static void put_shard(const char *name)
{
	char err[512], path[512];
	uint16_t tok[64];
	for (int i = 0; i < 64; i++)
		tok[i] = (uint16_t)i;
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	ck_assert_msg(data_write_shard(path, tok, 64, err, sizeof(err)) == 0, "%s", err);
}

START_TEST(data_codes_are_the_table)
{
	char err[512], missing[512];
	snprintf(missing, sizeof(missing), "%s/none", tmpdir);
	data_loader *d = NULL;
	data_config c = data_at(missing, "*.bin", 1);
	expect_code(data_open(&c, &d, err, sizeof(err)), ERR_STORAGE_IO, "storage_io",
	            "open, no data root");
	c = data_at(tmpdir, "nothing_*.bin", 1);
	expect_code(data_open(&c, &d, err, sizeof(err)), ERR_TRAINING_DATA_INVALID,
	            "training_data_invalid", "open, no match");
	c = data_at(tmpdir, "../x.bin", 1);
	expect_code(data_open(&c, &d, err, sizeof(err)), ERR_TRAINING_DATA_INVALID,
	            "training_data_invalid", "open, a way out of the root");
	c = data_at(tmpdir, "*.bin", 0);
	expect_code(data_open(&c, &d, err, sizeof(err)), ERR_INVALID_ARGUMENT, "invalid_argument",
	            "open, B 0");
	ck_assert_ptr_null(d);

	put_shard("a.bin");
	c = data_at(tmpdir, "a.bin", 1);
	c.vocab_size = 10;
	expect_code(data_open(&c, &d, err, sizeof(err)), ERR_TRAINING_DATA_INVALID,
	            "training_data_invalid", "open, a token above the vocabulary");
	c = data_at(tmpdir, "a.bin", 64);
	expect_code(data_open(&c, &d, err, sizeof(err)), ERR_TRAINING_DATA_INVALID,
	            "training_data_invalid", "open, too little data");
	c = data_at(tmpdir, "a.bin", 1);
	ck_assert_msg(data_open(&c, &d, err, sizeof(err)) == 0, "%s", err);
	data_position p = data_tell(d);
	p.sequences += 1;
	expect_code(data_seek(d, p), ERR_TRAINING_DATA_INVALID, "training_data_invalid",
	            "seek, a position of other data");
	data_close(d);
}
END_TEST

static int open_data(void *cfg)
{
	data_loader *d = NULL;
	char err[512];
	int rc = data_open(cfg, &d, err, sizeof(err));
	data_close(d);
	return rc;
}

START_TEST(data_out_of_memory_is_internal)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/d", tmpdir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	put_shard("d/a.bin");
	put_shard("d/b.bin");
	data_config c = data_at(tmpdir, "d/*.bin", 2);
	c.prefetch = true;
	each_allocation_fails(open_data, &c, "data_open");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_errors");
	TCase *tc = tcase_create("codes");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, store_codes_are_the_table);
	tcase_add_test(tc, store_out_of_memory_is_internal);
	tcase_add_test(tc, data_codes_are_the_table);
	tcase_add_test(tc, data_out_of_memory_is_internal);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
