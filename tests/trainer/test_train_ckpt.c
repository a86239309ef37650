/*
 * test_train_ckpt.c - the checkpoint store and sharded checkpoints: round
 * trip, corruption and fallback, incomplete directories, pruning,
 * truncation, atomic commit, name validation.
 */
#include <check.h>
#include <dirent.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "ckpt_store.h"
#include "unit.h"

static char tmpdir[256];
static ckpt_store *store;

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ty-ckpt-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	char root[512];
	snprintf(root, sizeof(root), "%s/ckpt", tmpdir); /* created on first use */
	store = ckpt_store_dir(root);
	ck_assert_ptr_nonnull(store);
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
	ckpt_store_free(store);
	store = NULL;
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void file_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/ckpt/%s", tmpdir, name);
}

static bool exists(const char *name)
{
	char path[512];
	file_path(path, sizeof(path), name);
	struct stat st;
	return stat(path, &st) == 0;
}

/* Number of entries in the store directory dir whose names contain s. */
static int count_names(const char *dir, const char *s)
{
	char path[512];
	file_path(path, sizeof(path), dir);
	DIR *d = opendir(path);
	if (d == NULL)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strstr(de->d_name, s) != NULL)
			n++;
	closedir(d);
	return n;
}

/* The contents of rank's sections at step: deterministic bytes. */
static void fill(unsigned char *buf, size_t n, int step, int rank, int section)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(i * 31 + (size_t)step * 7 + (size_t)rank * 13 +
		                         (size_t)section * 101);
}

#define BIG (3u << 20) /* more than one read chunk */

static const char *const sec_names[] = {"params/u0", "adam.m", "empty", "rng"};
static const size_t sec_sizes[] = {BIG, 4096 + 3, 0, 16};

static void write_shard(int step, int rank, int world, ckpt_shard_info *info)
{
	char err[512];
	ckpt_writer *w;
	ck_assert_msg(ckpt_shard_begin(store, step, rank, world, &w, err, sizeof(err)) == 0, "%s",
	              err);
	unsigned char *buf = malloc(BIG);
	for (int s = 0; s < 4; s++) {
		fill(buf, sec_sizes[s], step, rank, s);
		ck_assert_int_eq(ckpt_put(w, sec_names[s], buf, sec_sizes[s]), 0);
	}
	free(buf);
	ck_assert_msg(ckpt_shard_commit(w, info, err, sizeof(err)) == 0, "%s", err);
}

/* A complete checkpoint of world ranks at step. */
static void write_checkpoint(int step, int world)
{
	ckpt_shard_info info[4];
	for (int r = world - 1; r >= 0; r--) /* any order */
		write_shard(step, r, world, &info[world - 1 - r]);
	json_t *cfg = json_pack("{s:{s:i, s:i}, s:{s:i}}", "model", "layers", 2, "channels", 64,
	                        "parallel", "data", world);
	char err[512];
	ck_assert_msg(ckpt_manifest_write(store, step, world, cfg, info, world, err, sizeof(err)) ==
	                  0,
	              "%s", err);
	json_decref(cfg);
}

static void sha256_file(const char *name, char hex[65])
{
	char path[512];
	file_path(path, sizeof(path), name);
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	unsigned char buf[65536], d[32];
	size_t k;
	while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
		EVP_DigestUpdate(md, buf, k);
	unsigned int dl;
	EVP_DigestFinal_ex(md, d, &dl);
	EVP_MD_CTX_free(md);
	fclose(f);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static void flip_byte(const char *name, long at)
{
	char path[512];
	file_path(path, sizeof(path), name);
	FILE *f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	fseek(f, at, SEEK_SET);
	int c = fgetc(f);
	fseek(f, at, SEEK_SET);
	fputc(c ^ 0x40, f);
	fclose(f);
}

START_TEST(round_trip)
{
	write_checkpoint(20, 2);
	ck_assert(exists("step_00000020/shard_00000_of_00002.bin"));
	ck_assert(exists("step_00000020/shard_00001_of_00002.bin"));
	ck_assert(exists("step_00000020/manifest.json"));
	ck_assert_int_eq(count_names("step_00000020", ".tmp."), 0);

	char err[512];
	ckpt_manifest m;
	ck_assert_msg(ckpt_manifest_read(store, 20, &m, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(m.step, 20);
	ck_assert_int_eq(m.world, 2);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(m.config, "model"), "channels")),
	    64);
	ck_assert_uint_eq(strlen(m.created_at), 24); /* RFC 3339 with milliseconds */
	ck_assert(m.created_at[19] == '.' && m.created_at[23] == 'Z');
	for (int r = 0; r < 2; r++) {
		char name[128], hex[65];
		snprintf(name, sizeof(name), "step_00000020/shard_%05d_of_00002.bin", r);
		sha256_file(name, hex);
		ck_assert_int_eq(m.shards[r].rank, r);
		ck_assert_str_eq(m.shards[r].sha256, hex);
		char path[512];
		file_path(path, sizeof(path), name);
		struct stat st;
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(m.shards[r].bytes, (uint64_t)st.st_size);
		/* header 64, four records of 72 + data, trailer 72 */
		ck_assert_uint_eq(st.st_size, 64 + 4 * 72 + BIG + 4096 + 3 + 16 + 72);

		ckpt_reader *rd;
		ck_assert_msg(ckpt_shard_open(store, 20, r, 2, m.shards[r].sha256, &rd, err,
		                              sizeof(err)) == 0,
		              "%s", err);
		ck_assert_int_eq(ckpt_section_count(rd), 4);
		ck_assert_str_eq(ckpt_section_name(rd, 1), "adam.m");
		ck_assert_ptr_null(ckpt_section_name(rd, 4));
		unsigned char *got = malloc(BIG), *want = malloc(BIG);
		/* backwards, so the reader has to reopen, then forwards */
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < 4; i++) {
				int s = pass == 0 ? 3 - i : i;
				uint64_t size;
				ck_assert_int_eq(ckpt_get_size(rd, sec_names[s], &size), 0);
				ck_assert_uint_eq(size, sec_sizes[s]);
				fill(want, sec_sizes[s], 20, r, s);
				ck_assert_msg(ckpt_get(rd, sec_names[s], got, sec_sizes[s], err,
				                       sizeof(err)) == 0,
				              "%s", err);
				ck_assert_mem_eq(got, want, sec_sizes[s]);
			}
		free(got);
		free(want);
		uint64_t size;
		ck_assert_int_eq(ckpt_get_size(rd, "nope", &size), -ERR_CHECKPOINT_NOT_FOUND);
		unsigned char small[16];
		ck_assert_int_eq(ckpt_get(rd, "nope", small, 16, err, sizeof(err)),
		                 -ERR_CHECKPOINT_NOT_FOUND);
		ck_assert_int_eq(ckpt_get(rd, "rng", small, 15, err, sizeof(err)),
		                 -ERR_INVALID_ARGUMENT);
		ck_assert_ptr_nonnull(strstr(err, "has 16 bytes"));
		ckpt_shard_close(rd);
	}
	ckpt_manifest_release(&m);

	int step;
	ck_assert_int_eq(ckpt_latest(store, &step, err, sizeof(err)), 0);
	ck_assert_int_eq(step, 20);
	ck_assert_int_eq(ckpt_manifest_read(store, 30, &m, err, sizeof(err)),
	                 -ERR_CHECKPOINT_NOT_FOUND);
	ckpt_manifest_release(&m);
}
END_TEST

typedef struct refusals {
	int n, step, code;
	char why[1024];
} refusals;

static void on_refused(void *ctx, int step, int code, const char *why)
{
	refusals *r = ctx;
	r->n++;
	r->step = step;
	r->code = code;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

START_TEST(corrupt_shard_falls_back)
{
	write_checkpoint(10, 2);
	write_checkpoint(20, 2);
	const char *bad = "step_00000020/shard_00001_of_00002.bin";
	char before[65], after[65], err[1024];
	sha256_file(bad, before);
	flip_byte(bad, 100000);
	sha256_file(bad, after);

	ckpt_manifest m;
	ck_assert_int_eq(ckpt_manifest_read(store, 20, &m, err, sizeof(err)), 0);
	ckpt_reader *rd = (ckpt_reader *)1;
	ck_assert_int_eq(
	    ckpt_shard_open(store, 20, 1, 2, m.shards[1].sha256, &rd, err, sizeof(err)),
	    -ERR_CHECKPOINT_CORRUPT);
	ck_assert_ptr_null(rd);
	ck_assert_msg(strstr(err, bad) && strstr(err, before) && strstr(err, after), "%s", err);
	ck_assert_int_eq(ckpt_verify(store, &m, 0, 1, err, sizeof(err)), -ERR_CHECKPOINT_CORRUPT);
	ck_assert_int_eq(ckpt_verify(store, &m, 0, 2, err, sizeof(err)), 0); /* rank 0 only */
	ckpt_manifest_release(&m);

	/* the newest is still the latest by manifest, but the fallback skips it */
	int step;
	ck_assert_int_eq(ckpt_latest(store, &step, err, sizeof(err)), 0);
	ck_assert_int_eq(step, 20);
	refusals r = {0};
	ckpt_find_opts o = {.refused = on_refused, .ctx = &r};
	ck_assert_msg(ckpt_find_valid(store, &o, &m, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(m.step, 10);
	ck_assert_int_eq(m.world, 2);
	ckpt_manifest_release(&m);
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.step, 20);
	ck_assert_int_eq(r.code, -ERR_CHECKPOINT_CORRUPT);
	ck_assert_ptr_nonnull(strstr(r.why, before));

	/* when every checkpoint is corrupt: a distinct code */
	flip_byte("step_00000010/shard_00000_of_00002.bin", 70);
	ck_assert_int_eq(ckpt_find_valid(store, NULL, &m, err, sizeof(err)),
	                 -ERR_CHECKPOINT_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err, "step 20"));
	ckpt_manifest_release(&m);
}
END_TEST

static int veto_calls;
static int veto_first(void *ctx, int ok)
{
	(void)ctx;
	return veto_calls++ == 0 ? 0 : ok;
}

START_TEST(find_valid_agreement)
{
	char err[512];
	ckpt_manifest m;
	ck_assert_int_eq(ckpt_find_valid(store, NULL, &m, err, sizeof(err)),
	                 -ERR_CHECKPOINT_NOT_FOUND);
	write_checkpoint(10, 1);
	write_checkpoint(20, 1);
	/* another process refusing the newest makes everyone fall back */
	veto_calls = 0;
	ckpt_find_opts o = {.part = 0, .parts = 1, .agree = veto_first};
	ck_assert_int_eq(ckpt_find_valid(store, &o, &m, err, sizeof(err)), 0);
	ck_assert_int_eq(m.step, 10);
	ck_assert_int_eq(veto_calls, 2);
	ckpt_manifest_release(&m);
	ck_assert_int_eq(ckpt_find_valid(store, NULL, &m, err, sizeof(err)), 0);
	ck_assert_int_eq(m.step, 20);
	ckpt_manifest_release(&m);
}
END_TEST

START_TEST(incomplete_ignored_and_pruned)
{
	ckpt_shard_info info;
	write_checkpoint(10, 2);
	write_shard(15, 0, 2, &info); /* interrupted: no manifest */
	write_checkpoint(20, 2);
	write_shard(30, 1, 2, &info); /* in progress, newer than the newest complete */
	char err[512];
	int step, n;
	ck_assert_int_eq(ckpt_latest(store, &step, err, sizeof(err)), 0);
	ck_assert_int_eq(step, 20);
	ckpt_entry *e;
	ck_assert_int_eq(ckpt_list(store, &e, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 4);
	ck_assert(e[0].step == 10 && e[0].complete);
	ck_assert(e[1].step == 15 && !e[1].complete);
	ck_assert(e[2].step == 20 && e[2].complete);
	ck_assert(e[3].step == 30 && !e[3].complete);
	free(e);

	int removed;
	ck_assert_int_eq(ckpt_prune(store, 2, &removed, err, sizeof(err)), 0);
	ck_assert_int_eq(removed, 1);
	ck_assert(!exists("step_00000015"));
	ck_assert(exists("step_00000010/manifest.json"));
	ck_assert(exists("step_00000030/shard_00001_of_00002.bin"));

	/* a rewrite of a step first takes its old manifest away */
	ckpt_writer *w;
	ck_assert_int_eq(ckpt_shard_begin(store, 20, 0, 2, &w, err, sizeof(err)), 0);
	ck_assert(!exists("step_00000020/manifest.json"));
	ckpt_shard_abort(w);
	ck_assert_int_eq(ckpt_latest(store, &step, err, sizeof(err)), 0);
	ck_assert_int_eq(step, 10);
	ck_assert_int_eq(ckpt_prune(store, 0, &removed, err, sizeof(err)), -ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(prune_keeps_n)
{
	for (int s = 1; s <= 5; s++)
		write_checkpoint(s * 100, 1);
	char err[512];
	int removed, n;
	ck_assert_int_eq(ckpt_prune(store, 2, &removed, err, sizeof(err)), 0);
	ck_assert_int_eq(removed, 3);
	ckpt_entry *e;
	ck_assert_int_eq(ckpt_list(store, &e, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 2);
	ck_assert(e[0].step == 400 && e[0].complete);
	ck_assert(e[1].step == 500 && e[1].complete);
	free(e);
	ck_assert_int_eq(count_names("", "step_"), 2);
	ck_assert_int_eq(ckpt_prune(store, 2, &removed, err, sizeof(err)), 0);
	ck_assert_int_eq(removed, 0);
	ck_assert_int_eq(ckpt_prune(store, 1, &removed, err, sizeof(err)), 0);
	ck_assert_int_eq(removed, 1);
	ck_assert(exists("step_00000500/manifest.json"));
}
END_TEST

START_TEST(truncated_and_malformed_refused)
{
	write_checkpoint(7, 2);
	const char *name = "step_00000007/shard_00000_of_00002.bin";
	char path[512], err[512];
	file_path(path, sizeof(path), name);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ckpt_manifest m;
	ck_assert_int_eq(ckpt_manifest_read(store, 7, &m, err, sizeof(err)), 0);
	ckpt_reader *rd;
	/* cut inside the last section, then inside the trailer */
	long cuts[] = {(long)st.st_size - 80, (long)st.st_size - 1, 30};
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(truncate(path, cuts[i]), 0);
		ck_assert_int_eq(ckpt_shard_open(store, 7, 0, 2, NULL, &rd, err, sizeof(err)),
		                 -ERR_CHECKPOINT_CORRUPT);
		ck_assert_msg(strstr(err, "ends after") && strstr(err, name), "%s", err);
		ck_assert_int_eq(
		    ckpt_shard_open(store, 7, 0, 2, m.shards[0].sha256, &rd, err, sizeof(err)),
		    -ERR_CHECKPOINT_CORRUPT);
		ck_assert_ptr_nonnull(strstr(err, m.shards[0].sha256));
	}
	ckpt_manifest_release(&m);

	/* a shard under another rank's name, a newer version, a bad magic */
	const char *other = "step_00000007/shard_00001_of_00002.bin";
	ck_assert_int_eq(ckpt_shard_open(store, 7, 1, 2, NULL, &rd, err, sizeof(err)), 0);
	ckpt_shard_close(rd);
	ck_assert_int_eq(ckpt_shard_open(store, 7, 1, 4, NULL, &rd, err, sizeof(err)),
	                 -ERR_STORAGE_FILE_NOT_FOUND);
	flip_byte(other, 16); /* rank */
	ck_assert_int_eq(ckpt_shard_open(store, 7, 1, 2, NULL, &rd, err, sizeof(err)),
	                 -ERR_CHECKPOINT_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err, "header says"));
	flip_byte(other, 16);
	flip_byte(other, 8); /* version */
	ck_assert_int_eq(ckpt_shard_open(store, 7, 1, 2, NULL, &rd, err, sizeof(err)),
	                 -ERR_CHECKPOINT_VERSION);
	flip_byte(other, 8);
	flip_byte(other, 0); /* magic */
	ck_assert_int_eq(ckpt_shard_open(store, 7, 1, 2, NULL, &rd, err, sizeof(err)),
	                 -ERR_CHECKPOINT_CORRUPT);
	flip_byte(other, 0);
	ck_assert_int_eq(ckpt_shard_open(store, 7, 1, 2, NULL, &rd, err, sizeof(err)), 0);
	ckpt_shard_close(rd);

	/* a manifest that is not JSON, or lies about its step */
	ckpt_stream *f;
	ck_assert_int_eq(
	    ckpt_store_open_write(store, "step_00000007/manifest.json", &f, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_stream_write(f, "{\"magic\":", 9, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_stream_commit(f, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_manifest_read(store, 7, &m, err, sizeof(err)),
	                 -ERR_CHECKPOINT_CORRUPT);
	ckpt_manifest_release(&m);
	int step;
	ck_assert_int_eq(ckpt_latest(store, &step, err, sizeof(err)), -ERR_CHECKPOINT_NOT_FOUND);
}
END_TEST

START_TEST(commit_is_atomic)
{
	char err[512];
	ck_assert_int_eq(ckpt_store_mkdir(store, "d/e", err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_store_mkdir(store, "d/e", err, sizeof(err)), 0);
	ckpt_stream *f;
	ck_assert_int_eq(ckpt_store_open_write(store, "d/e/x.bin", &f, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_stream_write(f, "hello", 5, err, sizeof(err)), 0);
	bool yes = true;
	ck_assert_int_eq(ckpt_store_exists(store, "d/e/x.bin", &yes, err, sizeof(err)), 0);
	ck_assert(!yes);
	ck_assert_int_eq(count_names("d/e", ".tmp."), 1);
	ck_assert_int_eq(ckpt_stream_commit(f, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_store_exists(store, "d/e/x.bin", &yes, err, sizeof(err)), 0);
	ck_assert(yes);
	ck_assert_int_eq(count_names("d/e", ".tmp."), 0);

	/* a replacement is invisible until commit; abort leaves the old file */
	ck_assert_int_eq(ckpt_store_open_write(store, "d/e/x.bin", &f, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_stream_write(f, "other bytes", 11, err, sizeof(err)), 0);
	ckpt_stream_abort(f);
	ck_assert_int_eq(count_names("d/e", ".tmp."), 0);
	ckpt_stream *in;
	char buf[16];
	size_t got;
	ck_assert_int_eq(ckpt_store_open_read(store, "d/e/x.bin", &in, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_stream_read(in, buf, sizeof(buf), &got, err, sizeof(err)), 0);
	ck_assert_uint_eq(got, 5);
	ck_assert_mem_eq(buf, "hello", 5);
	ckpt_stream_close(in);

	/* an aborted new file leaves nothing */
	ck_assert_int_eq(ckpt_store_open_write(store, "d/e/y.bin", &f, err, sizeof(err)), 0);
	ckpt_stream_abort(f);
	ck_assert_int_eq(ckpt_store_exists(store, "d/e/y.bin", &yes, err, sizeof(err)), 0);
	ck_assert(!yes);
	ck_assert_int_eq(count_names("d/e", "y.bin"), 0);

	/* so does a shard whose put failed, and the failure reaches commit */
	ckpt_writer *w;
	ckpt_shard_info info;
	ck_assert_int_eq(ckpt_shard_begin(store, 3, 0, 1, &w, err, sizeof(err)), 0);
	ck_assert_int_eq(count_names("step_00000003", ".tmp."), 1);
	ck_assert_int_eq(ckpt_put(w, "a", "x", 1), 0);
	ck_assert_int_eq(ckpt_put(w, "a", "y", 1), -ERR_INVALID_ARGUMENT);
	ck_assert_int_eq(ckpt_put(w, "b", "z", 1), -ERR_INVALID_ARGUMENT);
	ck_assert_int_eq(ckpt_shard_commit(w, &info, err, sizeof(err)), -ERR_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "already there"));
	ck_assert_int_eq(count_names("step_00000003", "shard"), 0);
	ck_assert_int_eq(ckpt_shard_begin(store, 3, 0, 1, &w, err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_put(w, "bad name", "x", 1), -ERR_INVALID_ARGUMENT);
	ckpt_shard_abort(w);
	ck_assert_int_eq(count_names("step_00000003", "shard"), 0);

	/* list and remove */
	ckpt_names l;
	ck_assert_int_eq(ckpt_store_list(store, "d/e", &l, err, sizeof(err)), 0);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_str_eq(l.names[0], "x.bin");
	ckpt_names_release(&l);
	ck_assert_int_eq(ckpt_store_remove(store, "d/e", err, sizeof(err)), -ERR_STORAGE_IO);
	ck_assert_int_eq(ckpt_store_remove(store, "d/e/x.bin", err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_store_remove(store, "d/e/x.bin", err, sizeof(err)),
	                 -ERR_STORAGE_FILE_NOT_FOUND);
	ck_assert_int_eq(ckpt_store_remove(store, "d/e", err, sizeof(err)), 0);
	ck_assert_int_eq(ckpt_store_open_read(store, "d/e/x.bin", &in, err, sizeof(err)),
	                 -ERR_STORAGE_FILE_NOT_FOUND);
}
END_TEST

START_TEST(bad_names_refused)
{
	static const char *const bad[] = {"..",   "../x", "/abs", "a/../b",     "a/./b",
	                                  "a//b", "a/",   "",     ".",          "a b",
	                                  "a\\b", "x/..", "a\nb", "caf\xc3\xa9"};
	char err[512];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(!storage_name_valid(bad[i]), "%s", bad[i]);
		ckpt_stream *f = (ckpt_stream *)1;
		ck_assert_int_eq(ckpt_store_open_write(store, bad[i], &f, err, sizeof(err)),
		                 -ERR_STORAGE_PATH_INVALID);
		ck_assert_ptr_null(f);
		ck_assert_ptr_nonnull(strstr(err, "invalid checkpoint file name"));
		ck_assert_int_eq(ckpt_store_open_read(store, bad[i], &f, err, sizeof(err)),
		                 -ERR_STORAGE_PATH_INVALID);
		ck_assert_int_eq(ckpt_store_remove(store, bad[i], err, sizeof(err)),
		                 -ERR_STORAGE_PATH_INVALID);
		if (bad[i][0] != '\0')
			ck_assert_int_eq(ckpt_store_mkdir(store, bad[i], err, sizeof(err)),
			                 -ERR_STORAGE_PATH_INVALID);
	}
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert(!storage_name_valid(longname));
	ck_assert(storage_name_valid("step_00000020/shard_00000_of_00002.bin"));
	ck_assert(storage_name_valid(".hidden"));
	ck_assert(storage_name_valid("a..b"));
	/* nothing escaped the root */
	char parent[512];
	snprintf(parent, sizeof(parent), "%s/x", tmpdir);
	struct stat st;
	ck_assert_int_ne(stat(parent, &st), 0);

	/* ids out of range */
	ckpt_writer *w;
	ck_assert_int_eq(ckpt_shard_begin(store, -1, 0, 1, &w, err, sizeof(err)),
	                 -ERR_INVALID_ARGUMENT);
	ck_assert_int_eq(ckpt_shard_begin(store, 1, 2, 2, &w, err, sizeof(err)),
	                 -ERR_INVALID_ARGUMENT);
	ckpt_shard_info info = {.rank = 0, .name = "shard_00000_of_00002.bin"};
	ck_assert_int_eq(ckpt_manifest_write(store, 1, 2, NULL, &info, 1, err, sizeof(err)),
	                 -ERR_INVALID_ARGUMENT);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_ckpt");
	TCase *tc = tcase_create("ckpt");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, corrupt_shard_falls_back);
	tcase_add_test(tc, find_valid_agreement);
	tcase_add_test(tc, incomplete_ignored_and_pruned);
	tcase_add_test(tc, prune_keeps_n);
	tcase_add_test(tc, truncated_and_malformed_refused);
	tcase_add_test(tc, commit_is_atomic);
	tcase_add_test(tc, bad_names_refused);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
