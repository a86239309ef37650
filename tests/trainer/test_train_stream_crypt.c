/*
 * test_train_stream_crypt.c - the encrypted checkpoint store under the
 * unchanged checkpoint module: a sharded checkpoint round trip, nothing
 * in the clear on disk, a flipped byte refused with fallback to the older
 * checkpoint, shards swapped between jobs or truncated refused, abort
 * leaving nothing, private directories.
 */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "crypt.h"
#include "storage.h"
#include "ckpt_store.h"
#include "unit.h"

#define TENANT "7f1c2a10-0000-4000-8000-00000000000a"
#define JOB_A  "0b9e0c52-0000-4000-8000-0000000000a1"
#define JOB_B  "0b9e0c52-0000-4000-8000-0000000000b1"
#define SHARD1 "step_00000020/shard_00001_of_00002.bin"
#define BIG    (3u * CRYPT_CHUNK + 1000) /* several chunks */

static char tmpdir[64], root[128], dir_a[512], dir_b[512];
static crypt_key data_key;
static ckpt_store *store_a, *store_b;

static ckpt_store *open_store(const char *job, char *dir, size_t n)
{
	char err[512];
	ck_assert_msg(storage_job_prepare(root, TENANT, job, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(storage_area_dir(root, TENANT, job, STORAGE_CHECKPOINTS, dir, n), 0);
	crypt_object_ctx ctx;
	ck_assert_int_eq(crypt_object_ctx_init(&ctx, TENANT, job, &data_key), 0);
	ckpt_store *s = ckpt_store_encrypted(dir, &ctx);
	crypt_object_ctx_clear(&ctx);
	ck_assert_ptr_nonnull(s);
	return s;
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ty-scrypt-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(root, sizeof(root), "%s/storage", tmpdir);
	ck_assert_int_eq(crypt_key_generate(&data_key), 0);
	/* two jobs of one tenant under the same data key: only the AAD tells them apart */
	store_a = open_store(JOB_A, dir_a, sizeof(dir_a));
	store_b = open_store(JOB_B, dir_b, sizeof(dir_b));
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
	ckpt_store_free(store_a);
	ckpt_store_free(store_b);
	crypt_key_clear(&data_key);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void fill(unsigned char *buf, size_t n, int step, int rank, int section)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(i * 31 + (size_t)step * 7 + (size_t)rank * 13 +
		                         (size_t)section * 101);
}

static const char *const sec_names[] = {"params/u0", "adam.m", "empty", "rng"};
static const size_t sec_sizes[] = {BIG, 4096 + 3, 0, 16};

static void write_checkpoint(ckpt_store *s, int step, int world)
{
	char err[512];
	ckpt_shard_info info[4];
	unsigned char *buf = malloc(BIG);
	for (int r = 0; r < world; r++) {
		ckpt_writer *w;
		ck_assert_msg(ckpt_shard_begin(s, step, r, world, &w, err, sizeof(err)) == 0, "%s",
		              err);
		for (int i = 0; i < 4; i++) {
			fill(buf, sec_sizes[i], step, r, i);
			ck_assert_int_eq(ckpt_put(w, sec_names[i], buf, sec_sizes[i]), 0);
		}
		ck_assert_msg(ckpt_shard_commit(w, &info[r], err, sizeof(err)) == 0, "%s", err);
	}
	free(buf);
	json_t *cfg = json_pack("{s:{s:i}}", "model", "layers", 2);
	ck_assert_msg(ckpt_manifest_write(s, step, world, cfg, info, world, err, sizeof(err)) == 0,
	              "%s", err);
	json_decref(cfg);
}

/* Read back every section of every shard of step and compare. */
static void check_checkpoint(ckpt_store *s, const ckpt_manifest *m)
{
	char err[512];
	unsigned char *got = malloc(BIG), *want = malloc(BIG);
	for (int r = 0; r < m->world; r++) {
		ckpt_reader *rd;
		ck_assert_msg(ckpt_shard_open(s, m->step, r, m->world, m->shards[r].sha256, &rd,
		                              err, sizeof(err)) == 0,
		              "%s", err);
		for (int pass = 0; pass < 2; pass++) /* backwards first: reopen and skip */
			for (int i = 0; i < 4; i++) {
				int k = pass == 0 ? 3 - i : i;
				fill(want, sec_sizes[k], m->step, r, k);
				ck_assert_msg(ckpt_get(rd, sec_names[k], got, sec_sizes[k], err,
				                       sizeof(err)) == 0,
				              "%s", err);
				ck_assert_mem_eq(got, want, sec_sizes[k]);
			}
		ckpt_shard_close(rd);
	}
	free(got);
	free(want);
}

static void file_path(char *buf, size_t n, const char *dir, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

static long file_size(const char *dir, const char *name)
{
	char p[1024];
	file_path(p, sizeof(p), dir, name);
	struct stat st;
	ck_assert_int_eq(stat(p, &st), 0);
	return (long)st.st_size;
}

static void flip_byte(const char *dir, const char *name, long at)
{
	char p[1024];
	file_path(p, sizeof(p), dir, name);
	FILE *f = fopen(p, "r+b");
	ck_assert_ptr_nonnull(f);
	fseek(f, at, SEEK_SET);
	int c = fgetc(f);
	fseek(f, at, SEEK_SET);
	fputc(c ^ 0x01, f);
	fclose(f);
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	ck_assert(in && out);
	char buf[65536];
	size_t k;
	while ((k = fread(buf, 1, sizeof(buf), in)) > 0)
		ck_assert_uint_eq(fwrite(buf, 1, k, out), k);
	fclose(in);
	fclose(out);
}

typedef struct refusals {
	int n, step;
	char why[1024];
} refusals;

static void on_refused(void *ctx, int step, int code, const char *why)
{
	(void)code;
	refusals *r = ctx;
	r->n++;
	r->step = step;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

START_TEST(checkpoint_round_trip)
{
	write_checkpoint(store_a, 20, 2);
	char err[1024];
	ckpt_manifest m;
	ck_assert_msg(ckpt_find_valid(store_a, NULL, &m, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(m.step, 20);
	ck_assert_int_eq(m.world, 2);
	check_checkpoint(store_a, &m);
	/* the manifest records plaintext sizes; the files are larger by header and tags */
	long plain = (long)m.shards[1].bytes;
	long chunks = plain / CRYPT_CHUNK + 1;
	ck_assert_int_eq(file_size(dir_a, SHARD1), CRYPT_HEADER_LEN + plain + chunks * 16);
	ckpt_manifest_release(&m);

	/* nothing in the clear: not the shard magic, a section name or the manifest text */
	char p[1024];
	const char *names[] = {SHARD1, "step_00000020/manifest.json"};
	for (int i = 0; i < 2; i++) {
		file_path(p, sizeof(p), dir_a, names[i]);
		FILE *f = fopen(p, "rb");
		ck_assert_ptr_nonnull(f);
		size_t n = (size_t)file_size(dir_a, names[i]);
		unsigned char *buf = malloc(n);
		ck_assert_uint_eq(fread(buf, 1, n, f), n);
		fclose(f);
		ck_assert_mem_eq(buf, "TYEC", 4);
		ck_assert_ptr_null(memmem(buf, n, "TYCKSHRD", 8));
		ck_assert_ptr_null(memmem(buf, n, "params/u0", 9));
		ck_assert_ptr_null(memmem(buf, n, "trainyard-checkpoint", 20));
		free(buf);
	}
	/* the plain store sees only ciphertext: it does not parse as a checkpoint */
	ckpt_store *plain_store = ckpt_store_dir(dir_a);
	ck_assert_int_ne(ckpt_find_valid(plain_store, NULL, &m, err, sizeof(err)), 0);
	ckpt_manifest_release(&m);
	ckpt_store_free(plain_store);

	/* directories the store makes are private */
	file_path(p, sizeof(p), dir_a, "step_00000020");
	struct stat st;
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
}
END_TEST

START_TEST(flipped_byte_falls_back)
{
	write_checkpoint(store_a, 10, 2);
	write_checkpoint(store_a, 20, 2);
	long spots[] = {5, CRYPT_HEADER_LEN + 100, CRYPT_HEADER_LEN + CRYPT_CHUNK + 3,
	                file_size(dir_a, SHARD1) - 1};
	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		flip_byte(dir_a, SHARD1, spots[i]);
		char err[1024];
		refusals r = {0};
		ckpt_find_opts o = {.refused = on_refused, .ctx = &r};
		ckpt_manifest m;
		ck_assert_msg(ckpt_find_valid(store_a, &o, &m, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(m.step, 10);
		check_checkpoint(store_a, &m);
		ckpt_manifest_release(&m);
		ck_assert_int_eq(r.n, 1);
		ck_assert_int_eq(r.step, 20);
		ck_assert_msg(strstr(r.why, "encrypted object"), "%s", r.why);
		flip_byte(dir_a, SHARD1, spots[i]); /* restore */
		ck_assert_int_eq(ckpt_find_valid(store_a, NULL, &m, err, sizeof(err)), 0);
		ck_assert_int_eq(m.step, 20);
		ckpt_manifest_release(&m);
	}
	/* a flipped manifest makes the step incomplete */
	flip_byte(dir_a, "step_00000020/manifest.json", 50);
	char err[1024];
	ckpt_manifest m;
	int step;
	ck_assert_int_eq(ckpt_latest(store_a, &step, err, sizeof(err)), 0);
	ck_assert_int_eq(step, 10);
	ck_assert_int_eq(ckpt_find_valid(store_a, NULL, &m, err, sizeof(err)), 0);
	ck_assert_int_eq(m.step, 10);
	ckpt_manifest_release(&m);
}
END_TEST

START_TEST(truncated_shard_refused)
{
	write_checkpoint(store_a, 10, 2);
	write_checkpoint(store_a, 20, 2);
	char p[1024], err[1024];
	file_path(p, sizeof(p), dir_a, SHARD1);
	/* at a chunk boundary: every remaining chunk authenticates, the final one is missing */
	long cuts[] = {CRYPT_HEADER_LEN + 2L * (CRYPT_CHUNK + 16), CRYPT_HEADER_LEN + 7, 20};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		ck_assert_int_eq(truncate(p, cuts[i]), 0);
		ckpt_manifest m;
		ck_assert_int_eq(ckpt_find_valid(store_a, NULL, &m, err, sizeof(err)), 0);
		ck_assert_int_eq(m.step, 10);
		ckpt_manifest_release(&m);
	}
}
END_TEST

START_TEST(swap_between_jobs_refused)
{
	write_checkpoint(store_a, 10, 2);
	write_checkpoint(store_a, 20, 2);
	write_checkpoint(store_b, 20, 2);
	char from[1024], to[1024], err[1024];
	file_path(from, sizeof(from), dir_a, SHARD1);
	file_path(to, sizeof(to), dir_b, SHARD1);
	copy_file(from, to); /* same tenant, same key, same name: another job */
	refusals r = {0};
	ckpt_find_opts o = {.refused = on_refused, .ctx = &r};
	ckpt_manifest m;
	ck_assert_int_eq(ckpt_find_valid(store_b, &o, &m, err, sizeof(err)),
	                 -ERR_CHECKPOINT_CORRUPT);
	ckpt_manifest_release(&m);
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.step, 20);
	/* the manifest of job A in job B's store is refused too */
	file_path(from, sizeof(from), dir_a, "step_00000010");
	file_path(to, sizeof(to), dir_b, "step_00000010");
	ck_assert_int_eq(mkdir(to, 0700), 0);
	const char *names[] = {"manifest.json", "shard_00000_of_00002.bin",
	                       "shard_00001_of_00002.bin"};
	for (int i = 0; i < 3; i++) {
		char a[1100], b[1100];
		snprintf(a, sizeof(a), "%s/%s", from, names[i]);
		snprintf(b, sizeof(b), "%s/%s", to, names[i]);
		copy_file(a, b);
	}
	int step;
	ck_assert_int_eq(ckpt_latest(store_b, &step, err, sizeof(err)), 0);
	ck_assert_int_eq(step, 20); /* step 10's manifest does not authenticate */
	/* and the swapped shard inside one job under another name */
	file_path(from, sizeof(from), dir_a, "step_00000020/shard_00000_of_00002.bin");
	file_path(to, sizeof(to), dir_a, SHARD1);
	copy_file(from, to);
	ck_assert_int_eq(ckpt_find_valid(store_a, NULL, &m, err, sizeof(err)), 0);
	ck_assert_int_eq(m.step, 10);
	ckpt_manifest_release(&m);
}
END_TEST

START_TEST(abort_leaves_nothing)
{
	char err[512];
	ck_assert_int_eq(ckpt_store_mkdir(store_a, "d", err, sizeof(err)), 0);
	ckpt_stream *f;
	ck_assert_int_eq(ckpt_store_open_write(store_a, "d/file.bin", &f, err, sizeof(err)), 0);
	unsigned char buf[1000] = {1};
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(ckpt_stream_write(f, buf, sizeof(buf), err, sizeof(err)), 0);
	ckpt_stream_abort(f);
	ckpt_names names;
	ck_assert_int_eq(ckpt_store_list(store_a, "d", &names, err, sizeof(err)), 0);
	ck_assert_uint_eq(names.n, 0);
	ckpt_names_release(&names);
	bool yes;
	ck_assert_int_eq(ckpt_store_exists(store_a, "d/file.bin", &yes, err, sizeof(err)), 0);
	ck_assert(!yes);
	ck_assert_int_eq(ckpt_store_open_read(store_a, "d/file.bin", &f, err, sizeof(err)),
	                 -ERR_STORAGE_FILE_NOT_FOUND);

	/* a committed file reads back, skips, and is removed */
	ck_assert_int_eq(ckpt_store_open_write(store_a, "d/file.bin", &f, err, sizeof(err)), 0);
	for (int i = 0; i < 200; i++) {
		buf[0] = (unsigned char)i;
		ck_assert_int_eq(ckpt_stream_write(f, buf, sizeof(buf), err, sizeof(err)), 0);
	}
	ck_assert_int_eq(ckpt_stream_commit(f, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_store_open_read(store_a, "d/file.bin", &f, err, sizeof(err)), 0);
	size_t got;
	ck_assert_int_eq(ckpt_stream_skip(f, 150 * 1000, &got, err, sizeof(err)), 0);
	ck_assert_uint_eq(got, 150 * 1000);
	unsigned char back[1000];
	ck_assert_int_eq(ckpt_stream_read(f, back, sizeof(back), &got, err, sizeof(err)), 0);
	ck_assert_uint_eq(got, sizeof(back));
	ck_assert_uint_eq(back[0], 150);
	ck_assert_int_eq(ckpt_stream_skip(f, 1u << 30, &got, err, sizeof(err)), 0);
	ck_assert_uint_eq(got, 49 * 1000);
	ckpt_stream_close(f);
	ck_assert_int_eq(ckpt_store_remove(store_a, "d/file.bin", err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_store_remove(store_a, "d", err, sizeof(err)), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_stream_crypt");
	TCase *tc = tcase_create("encrypted store");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, checkpoint_round_trip);
	tcase_add_test(tc, flipped_byte_falls_back);
	tcase_add_test(tc, truncated_shard_refused);
	tcase_add_test(tc, swap_between_jobs_refused);
	tcase_add_test(tc, abort_leaves_nothing);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
