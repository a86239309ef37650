/*
 * test_train_llmc.c - llm.c model files: a file written here in llm.c's
 * tensor order (with offsets computed independently of gpt.c) is read
 * into the unit-major layout exactly and written back bit for bit; read
 * for a model of shorter sequences or other padding; bad files are
 * rejected with messages that say what is wrong.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpt.h"
#include "llmc.h"
#include "unit.h"

static const gpt_config cfg = {.max_seq_len = 8,
                               .vocab_size = 40,
                               .padded_vocab_size = 64,
                               .num_layers = 3,
                               .num_heads = 2,
                               .channels = 16};

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_llmc.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			char p[512];
			snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(dir);
}

static void path_in_dir(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* Random unit-major parameters; every value distinct in practice. */
static float *random_params(size_t n)
{
	float *p = malloc(n * sizeof *p);
	ck_assert_ptr_nonnull(p);
	uint64_t s = 12345;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005u + 1442695040888963407u;
		p[i] = (float)((int64_t)(s >> 11) - (1ll << 52)) * 0x1p-52f;
	}
	return p;
}

/* Sizes of the 12 tensors of a layer, in order, from the documented layout. */
static void layer_sizes(size_t C, size_t sz[12])
{
	size_t v[12] = {C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C};
	memcpy(sz, v, sizeof v);
}

/* Write a llm.c file by hand: header, then tensor-major order. */
static void write_reference(const char *path, const gpt_config *c, const float *p, int32_t magic,
                            int32_t version)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	int32_t h[256] = {magic,         version,      c->max_seq_len, c->vocab_size,
	                  c->num_layers, c->num_heads, c->channels,    c->padded_vocab_size};
	ck_assert_int_eq(fwrite(h, sizeof h, 1, f), 1);
	size_t C = (size_t)c->channels, L = (size_t)c->num_layers;
	size_t emb = ((size_t)c->padded_vocab_size + (size_t)c->max_seq_len) * C;
	size_t sz[12], layer = 0;
	layer_sizes(C, sz);
	for (int j = 0; j < 12; j++)
		layer += sz[j];
	ck_assert_int_eq(fwrite(p, sizeof(float), emb, f), emb); /* wte, wpe */
	size_t off = 0;
	for (int j = 0; j < 12; j++) {
		for (size_t l = 0; l < L; l++)
			ck_assert_int_eq(fwrite(p + emb + l * layer + off, sizeof(float), sz[j], f),
			                 sz[j]);
		off += sz[j];
	}
	ck_assert_int_eq(fwrite(p + emb + L * layer, sizeof(float), 2 * C, f), 2 * C); /* lnf */
	ck_assert_int_eq(fclose(f), 0);
}

static long file_size(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	return n;
}

/* Byte-for-byte comparison, like cmp(1): -1 when equal, else the first difference. */
static long compare_files(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	ck_assert_ptr_nonnull(fa);
	ck_assert_ptr_nonnull(fb);
	long pos = 0, diff = -1;
	for (;; pos++) {
		int ca = fgetc(fa), cb = fgetc(fb);
		if (ca != cb) {
			diff = pos;
			break;
		}
		if (ca == EOF)
			break;
	}
	fclose(fa);
	fclose(fb);
	return diff;
}

START_TEST(test_round_trip)
{
	make_dir();
	char ref[256], out[256], again[256];
	path_in_dir(ref, sizeof ref, "ref.bin");
	path_in_dir(out, sizeof out, "out.bin");
	path_in_dir(again, sizeof again, "again.bin");
	size_t np = gpt_num_params(&cfg);
	float *p = random_params(np);
	write_reference(ref, &cfg, p, LLMC_MAGIC, LLMC_VERSION);
	ck_assert_int_eq(file_size(ref), 1024 + (long)np * 4);

	char err[512] = "";
	gpt_config got;
	float *q = NULL;
	ck_assert_msg(llmc_read(ref, &got, &q, err, sizeof err) == 0, "read: %s", err);
	ck_assert(memcmp(&got, &cfg, sizeof cfg) == 0);
	ck_assert_msg(memcmp(q, p, np * sizeof(float)) == 0, "parameters differ after import");

	ck_assert_msg(llmc_write(out, &got, q, err, sizeof err) == 0, "write: %s", err);
	long d = compare_files(ref, out);
	ck_assert_msg(d < 0, "exported file differs from the original at byte %ld", d);

	float *r = NULL;
	ck_assert_msg(llmc_read(out, &got, &r, err, sizeof err) == 0, "read back: %s", err);
	ck_assert_msg(llmc_write(again, &got, r, err, sizeof err) == 0, "write again: %s", err);
	ck_assert_int_lt(compare_files(ref, again), 0);
	/* overwriting an existing file works and leaves no temporary behind */
	ck_assert_msg(llmc_write(out, &got, r, err, sizeof err) == 0, "overwrite: %s", err);
	DIR *dd = opendir(dir);
	struct dirent *e;
	int files = 0;
	while ((e = readdir(dd)))
		if (e->d_name[0] != '.') {
			files++;
			ck_assert_msg(!strstr(e->d_name, ".tmp"), "left behind: %s", e->d_name);
		}
	closedir(dd);
	ck_assert_int_eq(files, 3);
	free(p);
	free(q);
	free(r);
	remove_dir();
}
END_TEST

/*
 * q (laid out for want) holds what p (laid out for have) holds, tensor by
 * tensor, over the leading elements both have, and zeros past them.
 */
static void expect_same_leading(const gpt_config *want, const float *q, const gpt_config *have,
                                const float *p)
{
	int n = 2 + 12 * want->num_layers + 2;
	gpt_tensor *wt = calloc((size_t)n, sizeof *wt), *ht = calloc((size_t)n, sizeof *ht);
	ck_assert(wt && ht);
	gpt_tensors(want, wt, n);
	gpt_tensors(have, ht, n);
	for (int i = 0; i < n; i++) {
		size_t both = wt[i].numel < ht[i].numel ? wt[i].numel : ht[i].numel;
		ck_assert_msg(memcmp(q + wt[i].offset, p + ht[i].offset, both * sizeof *q) == 0,
		              "tensor %s differs", wt[i].name);
		for (size_t k = both; k < wt[i].numel; k++)
			ck_assert_msg(q[wt[i].offset + k] == 0.0f, "%s[%zu] is not 0", wt[i].name,
			              k);
	}
	free(wt);
	free(ht);
}

/*
 * A file made for longer sequences and another padded vocabulary (as
 * llm.c's GPT-2 files: 1024 positions, 50304 rows) is read for the
 * job's model: wpe's first rows, wte's rows up to the job's padding; a
 * job with more padding than the file gets zero rows. Another shape of
 * model, or too few positions, is refused saying what differs.
 */
START_TEST(test_read_for_another_layout)
{
	make_dir();
	char path[256], err[512] = "";
	gpt_config big = cfg;
	big.max_seq_len = 16;
	big.padded_vocab_size = 128;
	float *p = random_params(gpt_num_params(&big)), *q = NULL;
	path_in_dir(path, sizeof path, "big.bin");
	write_reference(path, &big, p, LLMC_MAGIC, LLMC_VERSION);

	ck_assert_msg(llmc_read_for(path, &cfg, &q, err, sizeof err) == 0, "read: %s", err);
	expect_same_leading(&cfg, q, &big, p);
	free(q);

	gpt_config wide = cfg; /* 8 positions, 192 rows: more padding than the file */
	wide.padded_vocab_size = 192;
	ck_assert_msg(llmc_read_for(path, &wide, &q, err, sizeof err) == 0, "read: %s", err);
	expect_same_leading(&wide, q, &big, p);
	free(q);

	ck_assert_msg(llmc_read_for(path, &big, &q, err, sizeof err) == 0, "read: %s", err);
	ck_assert(memcmp(q, p, gpt_num_params(&big) * sizeof *p) == 0);
	free(q);

	gpt_config longer = big;
	longer.max_seq_len = 32;
	q = p;
	ck_assert_int_eq(llmc_read_for(path, &longer, &q, err, sizeof err), -1);
	ck_assert_ptr_null(q);
	ck_assert_msg(strstr(err, "sequences of 16 tokens, fewer than the job's seq_len 32"), "%s",
	              err);
	gpt_config other = cfg;
	other.num_layers = 2;
	ck_assert_int_eq(llmc_read_for(path, &other, &q, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "its layers is 3, the job's 2") && strstr(err, path), "%s", err);
	other = cfg;
	other.vocab_size = 41;
	ck_assert_int_eq(llmc_read_for(path, &other, &q, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "its vocab_size is 40, the job's 41"), "%s", err);
	free(p);
	remove_dir();
}
END_TEST

/* Read path and expect failure with a message containing want. */
static void expect_error(const char *path, const char *want)
{
	char err[512] = "";
	gpt_config got;
	float *q = (float *)&got; /* must be reset to NULL */
	ck_assert_int_eq(llmc_read(path, &got, &q, err, sizeof err), -1);
	ck_assert_ptr_null(q);
	ck_assert_msg(strstr(err, want) != NULL, "error \"%s\" does not say \"%s\"", err, want);
	ck_assert_msg(strstr(err, path) != NULL, "error \"%s\" does not name the file", err);
}

START_TEST(test_rejects)
{
	make_dir();
	char path[256], msg[512];
	size_t np = gpt_num_params(&cfg);
	float *p = random_params(np);

	path_in_dir(path, sizeof path, "magic.bin");
	write_reference(path, &cfg, p, 1234, LLMC_VERSION);
	expect_error(path, "bad magic number 1234 (expected 20240326)");

	path_in_dir(path, sizeof path, "swapped.bin");
	write_reference(path, &cfg, p, (int32_t)__builtin_bswap32(LLMC_MAGIC), LLMC_VERSION);
	expect_error(path, "wrong byte order");

	path_in_dir(path, sizeof path, "version.bin");
	write_reference(path, &cfg, p, LLMC_MAGIC, 5);
	expect_error(path, "unsupported version 5 (expected 3");

	gpt_config bad = cfg;
	bad.num_heads = 3;
	path_in_dir(path, sizeof path, "heads.bin");
	write_reference(path, &bad, p, LLMC_MAGIC, LLMC_VERSION);
	expect_error(path, "invalid header: num_heads 3 does not divide channels 16");

	path_in_dir(path, sizeof path, "short.bin");
	write_reference(path, &cfg, p, LLMC_MAGIC, LLMC_VERSION);
	ck_assert_int_eq(truncate(path, 1024 + (long)np * 4 - 4), 0);
	snprintf(msg, sizeof msg, "is truncated: %ld bytes, expected %ld", 1024 + (long)np * 4 - 4,
	         1024 + (long)np * 4);
	expect_error(path, msg);
	ck_assert_int_eq(truncate(path, 100), 0);
	expect_error(path, "is truncated: 100 bytes, less than its header");

	path_in_dir(path, sizeof path, "long.bin");
	write_reference(path, &cfg, p, LLMC_MAGIC, LLMC_VERSION);
	ck_assert_int_eq(truncate(path, 1024 + (long)np * 4 + 8), 0);
	expect_error(path, "is too long");

	path_in_dir(path, sizeof path, "missing.bin");
	expect_error(path, "could not open model file");

	char err[512] = "";
	snprintf(path, sizeof path, "%s/no/such/dir/out.bin", dir);
	ck_assert_int_eq(llmc_write(path, &cfg, p, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "could not create file") != NULL, "write error: %s", err);
	ck_assert_int_eq(llmc_write(path, &bad, p, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "cannot write model file") != NULL, "write error: %s", err);
	free(p);
	remove_dir();
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_llmc");
	TCase *tc = tcase_create("llmc");
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_rejects);
	tcase_add_test(tc, test_read_for_another_layout);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
