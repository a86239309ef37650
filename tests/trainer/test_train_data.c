/*
 * test_train_data.c - the data loader and the byte-level tokenizer: shard
 * format, glob order, refusals, the data root's confinement, the sequence formula, the shuffle, the
 * data-parallel split, epochs, tell/seek, prefetch, tokenizer output.
 *
 * Most data sets here hold token i at stream position i (vocabulary 65536),
 * so the first input token of a row divided by T is its sequence index.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data.h"
#include "tokenize.h"
#include "unit.h"

static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ty-data-XXXXXX");
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
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

/* A shard named name holding tokens first, first+1, ... (mod 65536). */
static void write_counting(const char *name, size_t first, size_t n)
{
	uint16_t *tok = malloc(n * sizeof(*tok) + 1);
	for (size_t i = 0; i < n; i++)
		tok[i] = (uint16_t)(first + i);
	char path[512], err[512];
	path_of(path, sizeof(path), name);
	ck_assert_msg(data_write_shard(path, tok, n, err, sizeof(err)) == 0, "%s", err);
	free(tok);
}

static void write_file(const char *name, const void *buf, size_t n)
{
	char path[512];
	path_of(path, sizeof(path), name);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
	fclose(f);
}

static unsigned char *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *buf = malloc((size_t)len + 1);
	ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return buf;
}

/* Number of names in tmpdir containing s. */
static int count_names(const char *s)
{
	DIR *d = opendir(tmpdir);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strstr(de->d_name, s) != NULL)
			n++;
	closedir(d);
	return n;
}

/* The loader on the data path glob, beneath the data root tmpdir. */
static data_config config(const char *glob, int B, int T)
{
	data_config c = {
	    .root = tmpdir,
	    .pattern = glob,
	    .vocab_size = 65536,
	    .B = B,
	    .T = T,
	    .dp_rank = 0,
	    .dp_size = 1,
	    .seed = 42,
	};
	return c;
}

static data_loader *open_ok(const data_config *c)
{
	data_loader *d = NULL;
	char err[512];
	int rc = data_open(c, &d, err, sizeof(err));
	ck_assert_msg(rc == 0, "data_open: %d %s", rc, err);
	return d;
}

/* Sequence indices of the next batch (rows of B), checking inputs and targets agree. */
static void next_ids(data_loader *d, int B, int T, uint64_t *ids)
{
	int32_t *in = malloc((size_t)B * T * sizeof(int32_t));
	int32_t *tg = malloc((size_t)B * T * sizeof(int32_t));
	int rc = data_next(d, in, tg);
	ck_assert_msg(rc == 0, "data_next: %s", data_error(d));
	for (int b = 0; b < B; b++) {
		const int32_t *row = in + (size_t)b * T, *trow = tg + (size_t)b * T;
		ck_assert_int_eq(row[0] % T, 0);
		for (int t = 0; t < T; t++) {
			ck_assert_int_eq(row[t], row[0] + t);
			ck_assert_int_eq(trow[t], row[0] + t + 1);
		}
		ids[b] = (uint64_t)row[0] / (uint64_t)T;
	}
	free(in);
	free(tg);
}

START_TEST(shard_round_trip)
{
	uint16_t tok[1000];
	for (int i = 0; i < 1000; i++)
		tok[i] = (uint16_t)(i * 61 + 7);
	char path[512], err[512];
	path_of(path, sizeof(path), "one.bin");
	ck_assert_int_eq(data_write_shard(path, tok, 1000, err, sizeof(err)), 0);
	ck_assert_int_eq(count_names(".tmp."), 0);

	size_t n;
	unsigned char *raw = read_file(path, &n);
	ck_assert_uint_eq(n, 1024 + 2000);
	int32_t h[3];
	memcpy(h, raw, sizeof(h)); /* little-endian host */
	ck_assert_int_eq(h[0], 20240520);
	ck_assert_int_eq(h[1], 1);
	ck_assert_int_eq(h[2], 1000);
	for (int i = 12; i < 1024; i++)
		ck_assert_int_eq(raw[i], 0);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(raw[1024 + 2 * i] | raw[1024 + 2 * i + 1] << 8, tok[i]);
	free(raw);

	/* read back through the loader, in order */
	data_config c = config("one.bin", 2, 9);
	data_loader *d = open_ok(&c);
	ck_assert_uint_eq(data_num_tokens(d), 1000);
	ck_assert_uint_eq(data_num_sequences(d), 111);
	int32_t in[18], tg[18];
	for (int step = 0; step < 55; step++) {
		ck_assert_int_eq(data_next(d, in, tg), 0);
		for (int b = 0; b < 2; b++)
			for (int t = 0; t < 9; t++) {
				int k = (step * 2 + b) * 9 + t;
				ck_assert_int_eq(in[b * 9 + t], tok[k]);
				ck_assert_int_eq(tg[b * 9 + t], tok[k + 1]);
			}
	}
	data_close(d);
}
END_TEST

START_TEST(glob_order_and_boundaries)
{
	/* written out of order; names sort b < c < d, and a sequence spans each boundary */
	write_counting("part_c.bin", 7, 11);
	write_counting("part_b.bin", 0, 7);
	write_counting("part_d.bin", 18, 13);
	write_counting("empty_e.bin", 0, 0);
	data_config c = config("part_*.bin", 1, 4);
	data_loader *d = open_ok(&c);
	ck_assert_uint_eq(data_num_tokens(d), 31);
	ck_assert_uint_eq(data_num_sequences(d), 7);
	for (uint64_t k = 0; k < 7; k++) {
		uint64_t id;
		next_ids(d, 1, 4, &id);
		ck_assert_uint_eq(id, k);
	}
	data_close(d);

	/* an empty shard in the middle is fine */
	c = config("*_*.bin", 1, 4);
	d = open_ok(&c);
	ck_assert_uint_eq(data_num_tokens(d), 31);
	data_close(d);
}
END_TEST

/* data_open on glob must fail with code, naming the file. */
static void open_refused(const char *glob, int code, const char *want_in_err)
{
	data_config c = config(glob, 1, 4);
	c.vocab_size = 300;
	data_loader *d = (data_loader *)1;
	char err[512] = "";
	ck_assert_int_eq(data_open(&c, &d, err, sizeof(err)), code);
	ck_assert_ptr_null(d);
	ck_assert_msg(strstr(err, want_in_err) != NULL, "error \"%s\" lacks \"%s\"", err,
	              want_in_err);
}

START_TEST(bad_shards_refused)
{
	unsigned char h[1024 + 20];
	memset(h, 0, sizeof(h));
	data_shard_header(h, 10);

	open_refused("nothing_*.bin", -ERR_TRAINING_DATA_INVALID, "no data files match");

	unsigned char bad[sizeof(h)];
	memcpy(bad, h, sizeof(h));
	bad[0] ^= 1;
	write_file("magic.bin", bad, sizeof(bad));
	open_refused("magic.bin", -ERR_TRAINING_DATA_INVALID, "magic.bin\" is not a token shard");

	memcpy(bad, h, sizeof(h));
	bad[4] = 2;
	write_file("version.bin", bad, sizeof(bad));
	open_refused("version.bin", -ERR_TRAINING_DATA_INVALID,
	             "version.bin\" has shard version 2");

	write_file("short.bin", h, sizeof(h) - 2);
	open_refused("short.bin", -ERR_TRAINING_DATA_INVALID, "short.bin\" has 1042 bytes");
	write_file("long.bin", h, sizeof(h));
	unsigned char longer[sizeof(h) + 2];
	memcpy(longer, h, sizeof(h));
	longer[sizeof(h)] = longer[sizeof(h) + 1] = 0;
	write_file("long.bin", longer, sizeof(longer));
	open_refused("long.bin", -ERR_TRAINING_DATA_INVALID, "long.bin\" has 1046 bytes");
	write_file("tiny.bin", h, 100);
	open_refused("tiny.bin", -ERR_TRAINING_DATA_INVALID, "tiny.bin\" is not a token shard");

	memcpy(bad, h, sizeof(h));
	bad[1024 + 2 * 7] = 0x2C; /* token 300 at index 7 */
	bad[1024 + 2 * 7 + 1] = 0x01;
	write_file("token.bin", bad, sizeof(bad));
	open_refused("token.bin", -ERR_TRAINING_DATA_INVALID,
	             "token.bin\" holds token 300 at index 7");

	/* without the scan at open, the bad token is refused when it is read */
	data_config c = config("token.bin", 1, 4);
	c.vocab_size = 300;
	c.skip_scan = true;
	data_loader *d = open_ok(&c);
	int32_t in[4], tg[4];
	ck_assert_int_eq(data_next(d, in, tg), 0); /* tokens 0..4 */
	ck_assert_int_eq(data_next(d, in, tg), -ERR_TRAINING_DATA_INVALID);
	ck_assert_ptr_nonnull(strstr(data_error(d), "holds token 300 at index 7"));
	ck_assert_uint_eq(data_tell(d).cursor, 1); /* did not move */
	data_close(d);

	/* too little data for one optimizer step */
	write_file("ok.bin", h, sizeof(h));
	c = config("ok.bin", 2, 4);
	c.accum_steps = 2;
	char err[512];
	ck_assert_int_eq(data_open(&c, &d, err, sizeof(err)), -ERR_TRAINING_DATA_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "too little data"));

	/* bad arguments are not data errors */
	c = config("ok.bin", 1, 4);
	c.dp_rank = 1;
	ck_assert_int_eq(data_open(&c, &d, err, sizeof(err)), -ERR_INVALID_ARGUMENT);
	c = config("ok.bin", 0, 4);
	ck_assert_int_eq(data_open(&c, &d, err, sizeof(err)), -ERR_INVALID_ARGUMENT);
}
END_TEST

/*
 * The loader reads only beneath its root: paths that are not allowed,
 * symbolic links (to a file outside, to a directory, matched by a
 * pattern) are the data error, with the data path in the message.
 */
START_TEST(root_confines_the_loader)
{
	char outside[512], path[512], err[512];
	snprintf(outside, sizeof(outside), "%s-outside", tmpdir);
	ck_assert_int_eq(mkdir(outside, 0700), 0);
	char secret[600];
	snprintf(secret, sizeof(secret), "%s/secret.bin", outside);
	uint16_t tok[64] = {0};
	ck_assert_int_eq(data_write_shard(secret, tok, 64, err, sizeof(err)), 0);

	open_refused("/etc/passwd", -ERR_TRAINING_DATA_INVALID, "it is absolute");
	open_refused("../x.bin", -ERR_TRAINING_DATA_INVALID, "\"..\" component");
	open_refused("*/x.bin", -ERR_TRAINING_DATA_INVALID, "only its last component");

	path_of(path, sizeof(path), "link.bin");
	ck_assert_int_eq(symlink(secret, path), 0);
	open_refused("link.bin", -ERR_TRAINING_DATA_INVALID,
	             "\"link.bin\" is or passes through a symbolic link");
	open_refused("l*.bin", -ERR_TRAINING_DATA_INVALID,
	             "\"link.bin\" is or passes through a symbolic link");
	path_of(path, sizeof(path), "dir");
	ck_assert_int_eq(symlink(outside, path), 0);
	open_refused("dir/secret.bin", -ERR_TRAINING_DATA_INVALID,
	             "passes through a symbolic link");
	open_refused("dir/*.bin", -ERR_TRAINING_DATA_INVALID,
	             "\"dir\" passes through a symbolic link");

	/* a FIFO does not hang the loader */
	path_of(path, sizeof(path), "fifo.bin");
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	open_refused("fifo.bin", -ERR_TRAINING_DATA_INVALID, "\"fifo.bin\" is not a regular file");

	/* the same shard, really inside, is read */
	path_of(path, sizeof(path), "real");
	ck_assert_int_eq(mkdir(path, 0700), 0);
	write_counting("real/in.bin", 0, 64);
	data_config c = config("real/*.bin", 1, 4);
	data_loader *d = open_ok(&c);
	ck_assert_uint_eq(data_num_tokens(d), 64);
	data_close(d);

	nftw(outside, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

START_TEST(sequence_formula)
{
	ck_assert_uint_eq(data_sequence_count(0, 4), 0);
	ck_assert_uint_eq(data_sequence_count(4, 4), 0);
	ck_assert_uint_eq(data_sequence_count(5, 4), 1);
	ck_assert_uint_eq(data_sequence_count(8, 4), 1);
	ck_assert_uint_eq(data_sequence_count(9, 4), 2);
	ck_assert_uint_eq(data_sequence_count(100, 10), 9);
	ck_assert_uint_eq(data_sequence_count(101, 10), 10);
	ck_assert_uint_eq(data_sequence_count(1000000, 1024), 976);
	/* the loader agrees, and the last sequence ends at the last token */
	write_counting("f.bin", 0, 101);
	data_config c = config("f.bin", 1, 10);
	data_loader *d = open_ok(&c);
	ck_assert_uint_eq(data_num_sequences(d), 10);
	int32_t in[10], tg[10];
	for (int k = 0; k < 10; k++)
		ck_assert_int_eq(data_next(d, in, tg), 0);
	ck_assert_int_eq(tg[9], 100);
	data_close(d);
}
END_TEST

START_TEST(shuffle_permutation)
{
	enum { N = 1000 };
	uint32_t *a = malloc(N * 4), *b = malloc(N * 4), *e1 = malloc(N * 4), *s2 = malloc(N * 4);
	char *seen = calloc(N, 1);
	data_permutation(7, 0, a, N);
	data_permutation(7, 0, b, N);
	data_permutation(7, 1, e1, N);
	data_permutation(8, 0, s2, N);
	ck_assert_mem_eq(a, b, N * 4);
	int same_e = 0, same_s = 0, fixed = 0;
	for (int i = 0; i < N; i++) {
		ck_assert_uint_lt(a[i], N);
		ck_assert_int_eq(seen[a[i]], 0);
		seen[a[i]] = 1;
		same_e += a[i] == e1[i];
		same_s += a[i] == s2[i];
		fixed += a[i] == (uint32_t)i;
	}
	ck_assert_int_lt(same_e, 20);
	ck_assert_int_lt(same_s, 20);
	ck_assert_int_lt(fixed, 20);
	/* pinned, so that every machine and every later build draws the same order */
	uint32_t small[10];
	data_permutation(1234, 3, small, 10);
	static const uint32_t want[10] = {8, 4, 3, 9, 1, 7, 6, 5, 2, 0};
	ck_assert_mem_eq(small, want, sizeof(want));
	data_permutation(1, 0, small, 1);
	ck_assert_uint_eq(small[0], 0);
	free(a);
	free(b);
	free(e1);
	free(s2);
	free(seen);
}
END_TEST

/*
 * One optimizer step of runs with dp ranks, micro-batch B and accumulation
 * a: the sequence ids, micro-step by micro-step, rank by rank.
 */
static void run_step(data_loader **ranks, int dp, int B, int T, int a, uint64_t *out)
{
	size_t k = 0;
	for (int m = 0; m < a; m++)
		for (int r = 0; r < dp; r++) {
			next_ids(ranks[r], B, T, out + k);
			k += (size_t)B;
		}
}

static void dp_equivalence(bool shuffle, bool prefetch)
{
	/* 103 sequences of 8; an optimizer step takes 2*2*2 = 8: 12 steps an epoch */
	write_counting("dp.bin", 0, 103 * 8 + 1);
	data_config c = config("dp.bin", 2, 8);
	c.shuffle = shuffle;
	c.prefetch = prefetch;
	c.accum_steps = 4;
	data_loader *one = open_ok(&c);
	c.accum_steps = 2;
	c.dp_size = 2;
	data_loader *two[2];
	two[0] = open_ok(&c);
	c.dp_rank = 1;
	two[1] = open_ok(&c);
	ck_assert_uint_eq(data_steps_per_epoch(one), 12);
	ck_assert_uint_eq(data_steps_per_epoch(two[0]), 12);
	uint64_t x[8], y[8];
	char *seen = calloc(103, 1);
	for (int step = 0; step < 40; step++) { /* over three epochs */
		run_step(&one, 1, 2, 8, 4, x);
		run_step(two, 2, 2, 8, 2, y);
		ck_assert_mem_eq(x, y, sizeof(x));
		if (step % 12 == 0)
			memset(seen, 0, 103);
		for (int i = 0; i < 8; i++) { /* no repeats inside an epoch */
			ck_assert_int_eq(seen[x[i]], 0);
			seen[x[i]] = 1;
		}
		data_position p1 = data_tell(one), p2 = data_tell(two[0]), p3 = data_tell(two[1]);
		ck_assert_mem_eq(&p1, &p2, sizeof(p1));
		ck_assert_mem_eq(&p2, &p3, sizeof(p1));
		ck_assert_uint_eq(p1.epoch, (uint64_t)(step + 1) / 12);
	}
	free(seen);
	data_close(one);
	data_close(two[0]);
	data_close(two[1]);
}

START_TEST(dp_split_matches_accumulation)
{
	dp_equivalence(true, false);
}
END_TEST

START_TEST(dp_split_in_order_and_prefetched)
{
	dp_equivalence(false, true);
}
END_TEST

START_TEST(epoch_rollover)
{
	/* 10 sequences, B 3: 3 micro-steps an epoch, one sequence left out each time */
	write_counting("e.bin", 0, 10 * 5 + 1);
	data_config c = config("e.bin", 3, 5);
	c.shuffle = true;
	c.seed = 99;
	data_loader *d = open_ok(&c);
	for (uint64_t epoch = 0; epoch < 3; epoch++) {
		uint32_t perm[10];
		data_permutation(99, epoch, perm, 10);
		for (int m = 0; m < 3; m++) {
			data_position p = data_tell(d);
			ck_assert_uint_eq(p.epoch, epoch);
			ck_assert_uint_eq(p.cursor, (uint64_t)m * 3);
			uint64_t ids[3];
			next_ids(d, 3, 5, ids);
			for (int b = 0; b < 3; b++)
				ck_assert_uint_eq(ids[b], perm[m * 3 + b]);
		}
	}
	data_close(d);

	/* with accumulation 2 an optimizer step needs 6: one step an epoch */
	c.accum_steps = 2;
	d = open_ok(&c);
	ck_assert_uint_eq(data_steps_per_epoch(d), 1);
	uint64_t ids[3];
	next_ids(d, 3, 5, ids);
	next_ids(d, 3, 5, ids);
	data_position p = data_tell(d);
	ck_assert_uint_eq(p.epoch, 1);
	ck_assert_uint_eq(p.cursor, 0);
	ck_assert_uint_eq(p.sequences, 10);
	data_close(d);
}
END_TEST

START_TEST(tell_seek_resumes)
{
	write_counting("s.bin", 0, 61 * 4 + 1);
	for (int pf = 0; pf < 2; pf++) {
		data_config c = config("s.bin", 3, 4);
		c.shuffle = true;
		c.dp_size = 2;
		c.dp_rank = 1;
		c.prefetch = pf;
		data_loader *d = open_ok(&c);
		uint64_t ids[3], want[30][3];
		for (int i = 0; i < 17; i++)
			next_ids(d, 3, 4, ids);
		data_position at = data_tell(d);
		for (int i = 0; i < 30; i++)
			next_ids(d, 3, 4, want[i]);

		/* a fresh loader, with or without prefetch, resumes exactly */
		c.prefetch = !pf;
		data_loader *e = open_ok(&c);
		next_ids(e, 3, 4, ids);
		ck_assert_int_eq(data_seek(e, at), 0);
		for (int i = 0; i < 30; i++) {
			next_ids(e, 3, 4, ids);
			ck_assert_mem_eq(ids, want[i], sizeof(ids));
		}
		/* and the same loader can go back */
		ck_assert_int_eq(data_seek(d, at), 0);
		for (int i = 0; i < 30; i++) {
			next_ids(d, 3, 4, ids);
			ck_assert_mem_eq(ids, want[i], sizeof(ids));
		}
		/* a position taken over other data is refused */
		data_position other = at;
		other.sequences = 60;
		ck_assert_int_eq(data_seek(d, other), -ERR_TRAINING_DATA_INVALID);
		ck_assert_ptr_nonnull(strstr(data_error(d), "60 sequences"));
		ck_assert(data_wait_seconds(d) >= 0.0);
		data_close(d);
		data_close(e);
	}
}
END_TEST

START_TEST(prefetch_matches_sync)
{
	/* arbitrary token values across three shards */
	for (int s = 0; s < 3; s++) {
		uint16_t tok[777];
		for (int i = 0; i < 777; i++)
			tok[i] = (uint16_t)((i * 2654435761u + (unsigned)s * 97) >> 7);
		char name[32], path[512], err[512];
		snprintf(name, sizeof(name), "p%d.bin", s);
		path_of(path, sizeof(path), name);
		ck_assert_int_eq(data_write_shard(path, tok, 777, err, sizeof(err)), 0);
	}
	data_config c = config("p*.bin", 4, 16);
	c.shuffle = true;
	c.dp_size = 3;
	c.dp_rank = 2;
	c.accum_steps = 2;
	data_loader *sync = open_ok(&c);
	c.prefetch = true;
	data_loader *pre = open_ok(&c);
	int32_t a[64], b[64], ta[64], tb[64];
	for (int i = 0; i < 200; i++) {
		if (i == 120) {
			data_position p = {.epoch = 5, .cursor = 24};
			ck_assert_int_eq(data_seek(sync, p), 0);
			ck_assert_int_eq(data_seek(pre, p), 0);
		}
		ck_assert_int_eq(data_next(sync, a, ta), 0);
		ck_assert_int_eq(data_next(pre, b, tb), 0);
		ck_assert_mem_eq(a, b, sizeof(a));
		ck_assert_mem_eq(ta, tb, sizeof(ta));
		data_position p = data_tell(sync), q = data_tell(pre);
		ck_assert_mem_eq(&p, &q, sizeof(p));
	}
	data_close(sync);
	data_close(pre);
}
END_TEST

START_TEST(eval_loader_in_order)
{
	write_counting("val.bin", 0, 40 * 3 + 1);
	char err[512];
	data_loader *d;
	ck_assert_int_eq(data_open_eval(tmpdir, "val.bin", 65536, 4, 3, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(data_steps_per_epoch(d), 10);
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(data_seek(d, (data_position){0, 0, 0}), 0);
		for (uint64_t m = 0; m < 10; m++) {
			uint64_t ids[4];
			next_ids(d, 4, 3, ids);
			for (int b = 0; b < 4; b++)
				ck_assert_uint_eq(ids[b], m * 4 + (uint64_t)b);
		}
	}
	data_close(d);
}
END_TEST

START_TEST(tokenizer_output)
{
	const char *t1 = "hello, ", *t2 = "world\n\xff\x01";
	write_file("a.txt", t1, strlen(t1));
	write_file("b.txt", t2, strlen(t2));
	char pa[512], pb[512], prefix[512], err[512];
	path_of(pa, sizeof(pa), "a.txt");
	path_of(pb, sizeof(pb), "b.txt");
	path_of(prefix, sizeof(prefix), "tok");
	char *const paths[] = {pa, pb};
	size_t total = 0;
	ck_assert_msg(tokenize_files(paths, 2, prefix, 4, &total, err, sizeof(err)) == 0, "%s",
	              err);
	const char *all = "hello, world\n\xff\x01";
	size_t n = strlen(all);
	ck_assert_uint_eq(total, n);
	int shards = (int)((n + 3) / 4);
	ck_assert_int_eq(count_names("tok_"), shards);
	ck_assert_int_eq(count_names(".tmp."), 0);
	size_t at = 0;
	for (int s = 0; s < shards; s++) {
		char name[64], path[512];
		snprintf(name, sizeof(name), "tok_%06d.bin", s);
		path_of(path, sizeof(path), name);
		size_t len;
		unsigned char *raw = read_file(path, &len);
		size_t count = s < shards - 1 ? 4 : n - 4 * (size_t)(shards - 1);
		ck_assert_uint_eq(len, 1024 + 2 * count);
		int32_t h[3];
		memcpy(h, raw, sizeof(h));
		ck_assert_int_eq(h[0], 20240520);
		ck_assert_int_eq(h[2], (int32_t)count);
		for (size_t i = 0; i < count; i++, at++) {
			ck_assert_uint_eq(raw[1024 + 2 * i], (unsigned char)all[at]);
			ck_assert_uint_eq(raw[1024 + 2 * i + 1], 0);
		}
		free(raw);
	}
	/* the output is a data set of vocabulary 256 */
	data_config c = config("tok_*.bin", 1, 3);
	c.vocab_size = TOKENIZE_VOCAB;
	data_loader *d = open_ok(&c);
	int32_t in[3], tg[3];
	ck_assert_int_eq(data_next(d, in, tg), 0);
	ck_assert_int_eq(in[0], 'h');
	ck_assert_int_eq(tg[2], 'l');
	data_close(d);

	/* a rerun with bigger shards removes the earlier run's extra shards */
	ck_assert_int_eq(tokenize_files(paths, 2, prefix, 1000, &total, err, sizeof(err)), 0);
	ck_assert_int_eq(count_names("tok_"), 1);
	ck_assert_int_eq(count_names(".tmp."), 0);

	/* empty input, a missing file, a bad shard size */
	write_file("empty.txt", "", 0);
	char pe[512], px[512];
	path_of(pe, sizeof(pe), "empty.txt");
	path_of(px, sizeof(px), "missing.txt");
	char *const empty[] = {pe};
	char *const missing[] = {pa, px};
	path_of(prefix, sizeof(prefix), "other");
	ck_assert_int_eq(tokenize_files(empty, 1, prefix, 4, &total, err, sizeof(err)),
	                 -ERR_TRAINING_DATA_INVALID);
	ck_assert_int_eq(tokenize_files(missing, 2, prefix, 4, &total, err, sizeof(err)),
	                 -ERR_STORAGE_IO);
	ck_assert_ptr_nonnull(strstr(err, "missing.txt"));
	ck_assert_int_eq(count_names("other_"), 0); /* a failed run leaves nothing */
	ck_assert_int_eq(tokenize_files(paths, 2, prefix, 0, &total, err, sizeof(err)),
	                 -ERR_INVALID_ARGUMENT);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_data");
	TCase *tc = tcase_create("data");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, shard_round_trip);
	tcase_add_test(tc, glob_order_and_boundaries);
	tcase_add_test(tc, bad_shards_refused);
	tcase_add_test(tc, root_confines_the_loader);
	tcase_add_test(tc, sequence_formula);
	tcase_add_test(tc, shuffle_permutation);
	tcase_add_test(tc, dp_split_matches_accumulation);
	tcase_add_test(tc, dp_split_in_order_and_prefetched);
	tcase_add_test(tc, epoch_rollover);
	tcase_add_test(tc, tell_seek_resumes);
	tcase_add_test(tc, prefetch_matches_sync);
	tcase_add_test(tc, eval_loader_in_order);
	tcase_add_test(tc, tokenizer_output);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
