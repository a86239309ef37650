/*
 * test_crypt_log.c - sealed logs: read while being written, reopen and
 * append, torn tails, closing, one writer at a time, and the tamper
 * matrix (bit flips, truncation, record reorder, swapped files between
 * jobs and tenants, wrong key, wrong name).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypt.h"
#include "error.h"
#include "unit.h"

#define TENANT_A "7f1c2a10-0000-4000-8000-00000000000a"
#define TENANT_B "7f1c2a10-0000-4000-8000-00000000000b"
#define JOB_A    "0b9e0c52-0000-4000-8000-0000000000a1"
#define JOB_B    "0b9e0c52-0000-4000-8000-0000000000b1"
#define LOG_NAME "logs/attempt-1.log"

/* The log file opened as the programs open it beneath a tenant's directory. */
static int log_wfd(const char *p)
{
	return open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
}

static int log_rfd(const char *p)
{
	return open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

static char dir[64], path[128];
static crypt_key key_a, key_b;
static crypt_object_ctx ctx_a;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ty-log-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.log", dir);
	ck_assert_int_eq(crypt_key_generate(&key_a), 0);
	ck_assert_int_eq(crypt_key_generate(&key_b), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&ctx_a, TENANT_A, JOB_A, &key_a), 0);
}

static void teardown(void)
{
	crypt_object_ctx_clear(&ctx_a);
	char p[160];
	const char *names[] = {"a.log", "b.log"};
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

/* Record i's text: varying lengths, including empty. */
static size_t record_text(int i, char *buf, size_t n)
{
	if (i % 7 == 6)
		return 0;
	return (size_t)snprintf(buf, n, "step %d loss %.4f %*s", i, 1.0 / (i + 1), i * 37 % 300,
	                        "|");
}

static void append_range(crypt_log_writer *w, int from, int to)
{
	char text[512], err[256];
	for (int i = from; i < to; i++) {
		size_t n = record_text(i, text, sizeof(text));
		ck_assert_msg(crypt_log_append(w, text, n, err, sizeof(err)) == 0, "%s", err);
	}
}

static crypt_log_writer *open_writer(const crypt_object_ctx *ctx)
{
	crypt_log_writer *w;
	char err[256];
	ck_assert_msg(
	    crypt_log_writer_open(log_wfd(path), path, ctx, LOG_NAME, &w, err, sizeof(err)) == 0,
	    "%s", err);
	return w;
}

/*
 * Read from r until the end; every record must be the expected one from
 * *next on. RET the final code (CRYPT_LOG_END or an error).
 */
static int read_expected(crypt_log_reader *r, int *next)
{
	char want[512], err[512];
	for (;;) {
		const void *rec;
		size_t len;
		int rc = crypt_log_next(r, &rec, &len, err, sizeof(err));
		if (rc != CRYPT_LOG_RECORD)
			return rc;
		size_t n = record_text(*next, want, sizeof(want));
		ck_assert_uint_eq(len, n);
		if (n)
			ck_assert_mem_eq(rec, want, n);
		(*next)++;
	}
}

/* Read the whole log at path under ctx and name. OUT *state. RET the final code. */
static int read_log(const crypt_object_ctx *ctx, const char *name, crypt_log_state *state)
{
	crypt_log_reader *r;
	char err[512];
	ck_assert_msg(crypt_log_reader_open(log_rfd(path), path, ctx, name, &r, err, sizeof(err)) ==
	                  0,
	              "%s", err);
	int next = 0, rc = read_expected(r, &next);
	crypt_log_reader_state(r, state);
	ck_assert_uint_eq(state->records, (uint64_t)next);
	crypt_log_reader_free(r);
	return rc;
}

static long file_size(void)
{
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	return (long)st.st_size;
}

static void truncate_to(long n)
{
	ck_assert_int_eq(truncate(path, n), 0);
}

static void flip_at(long off)
{
	int fd = open(path, O_RDWR);
	unsigned char c;
	ck_assert_int_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x08;
	ck_assert_int_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

START_TEST(read_while_writing)
{
	crypt_log_writer *w = open_writer(&ctx_a);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	crypt_log_reader *r;
	char err[512];
	ck_assert_int_eq(
	    crypt_log_reader_open(log_rfd(path), path, &ctx_a, LOG_NAME, &r, err, sizeof(err)), 0);
	int next = 0;
	crypt_log_state s;
	ck_assert_int_eq(read_expected(r, &next), CRYPT_LOG_END);
	ck_assert_int_eq(next, 0);

	append_range(w, 0, 3);
	ck_assert_int_eq(read_expected(r, &next), CRYPT_LOG_END);
	ck_assert_int_eq(next, 3);
	crypt_log_reader_state(r, &s);
	ck_assert(!s.closed && !s.incomplete_tail);

	append_range(w, 3, 10);
	ck_assert_int_eq(crypt_log_sync(w, err, sizeof(err)), 0);
	ck_assert_int_eq(read_expected(r, &next), CRYPT_LOG_END);
	ck_assert_int_eq(next, 10);
	ck_assert_uint_eq(crypt_log_writer_records(w), 10);

	/* a writer mid-append: half a record on disk is a tail, not plaintext */
	long end = file_size();
	char text[512];
	size_t n = record_text(10, text, sizeof(text));
	append_range(w, 10, 11);
	long full = file_size();
	ck_assert_int_eq(full - end, (long)(4 + n + CRYPT_TAG_LEN));
	unsigned char *rec = malloc((size_t)(full - end));
	int fd = open(path, O_RDWR);
	ck_assert_int_eq(pread(fd, rec, (size_t)(full - end), end), full - end);
	ck_assert_int_eq(ftruncate(fd, end + 9), 0);
	ck_assert_int_eq(read_expected(r, &next), CRYPT_LOG_END);
	crypt_log_reader_state(r, &s);
	ck_assert(s.incomplete_tail && !s.closed);
	ck_assert_int_eq(next, 10);
	ck_assert_int_eq(pwrite(fd, rec, (size_t)(full - end), end), full - end); /* finished */
	close(fd);
	free(rec);
	ck_assert_int_eq(read_expected(r, &next), CRYPT_LOG_END);
	ck_assert_int_eq(next, 11);
	crypt_log_reader_state(r, &s);
	ck_assert(!s.incomplete_tail && !s.closed);

	ck_assert_int_eq(crypt_log_writer_close(w, err, sizeof(err)), 0);
	ck_assert_int_eq(read_expected(r, &next), CRYPT_LOG_END);
	crypt_log_reader_state(r, &s);
	ck_assert(s.closed && !s.incomplete_tail);
	ck_assert_uint_eq(s.records, 11);
	ck_assert_int_eq(read_expected(r, &next), CRYPT_LOG_END); /* stays closed */
	crypt_log_reader_free(r);
}
END_TEST

START_TEST(reopen_continues_index)
{
	crypt_log_writer *w = open_writer(&ctx_a);
	append_range(w, 0, 4);
	crypt_log_writer_free(w); /* not closed: a job that stops and comes back */
	w = open_writer(&ctx_a);
	ck_assert_uint_eq(crypt_log_writer_records(w), 4);
	append_range(w, 4, 9);
	crypt_log_writer_free(w);
	w = open_writer(&ctx_a);
	ck_assert_uint_eq(crypt_log_writer_records(w), 9);
	append_range(w, 9, 12);
	char err[256];
	ck_assert_int_eq(crypt_log_writer_close(w, err, sizeof(err)), 0);
	crypt_log_state s;
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
	ck_assert_uint_eq(s.records, 12);
	ck_assert(s.closed);
	/* a closed log takes no more */
	ck_assert_int_eq(
	    crypt_log_writer_open(log_wfd(path), path, &ctx_a, LOG_NAME, &w, err, sizeof(err)),
	    -ERR_LOG_CLOSED);
	ck_assert_ptr_null(w);
}
END_TEST

START_TEST(torn_tail_cut_on_reopen)
{
	crypt_log_writer *w = open_writer(&ctx_a);
	append_range(w, 0, 5);
	crypt_log_writer_free(w);
	truncate_to(file_size() - 3); /* a crash inside record 4 */
	crypt_log_state s;
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
	ck_assert_uint_eq(s.records, 4);
	ck_assert(s.incomplete_tail);
	w = open_writer(&ctx_a);
	ck_assert_uint_eq(crypt_log_writer_records(w), 4); /* record 4 again, under a new segment */
	append_range(w, 4, 8);
	crypt_log_writer_free(w);
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
	ck_assert_uint_eq(s.records, 8);
	ck_assert(!s.incomplete_tail && !s.closed);

	/* a header torn at creation is written again */
	truncate_to(10);
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
	ck_assert(s.incomplete_tail && s.records == 0);
	w = open_writer(&ctx_a);
	ck_assert_uint_eq(crypt_log_writer_records(w), 0);
	append_range(w, 0, 2);
	crypt_log_writer_free(w);
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
	ck_assert_uint_eq(s.records, 2);
}
END_TEST

START_TEST(one_writer_at_a_time)
{
	crypt_log_writer *w = open_writer(&ctx_a), *w2;
	char err[256];
	ck_assert_int_eq(
	    crypt_log_writer_open(log_wfd(path), path, &ctx_a, LOG_NAME, &w2, err, sizeof(err)),
	    -ERR_CONFLICT);
	crypt_log_writer_free(w);
	w2 = open_writer(&ctx_a);
	crypt_log_writer_free(w2);
	char link[160];
	snprintf(link, sizeof(link), "%s/b.log", dir);
	ck_assert_int_eq(symlink(path, link), 0);
	ck_assert_int_lt(
	    crypt_log_writer_open(log_wfd(link), link, &ctx_a, LOG_NAME, &w2, err, sizeof(err)), 0);
}
END_TEST

/* A closed log of 6 records. OUT offs[i]: where record i starts; offs[6] the closing one. */
static void closed_log(long offs[7])
{
	crypt_log_writer *w = open_writer(&ctx_a);
	for (int i = 0; i < 6; i++) {
		offs[i] = file_size();
		append_range(w, i, i + 1);
	}
	offs[6] = file_size();
	char err[256];
	ck_assert_int_eq(crypt_log_writer_close(w, err, sizeof(err)), 0);
}

START_TEST(tamper_bit_flips)
{
	long offs[7];
	closed_log(offs);
	long size = file_size();
	unsigned char *orig = malloc((size_t)size);
	int fd = open(path, O_RDONLY);
	ck_assert_int_eq(pread(fd, orig, (size_t)size, 0), size);
	close(fd);
	crypt_log_state s;
	long spots[] = {
	    0,           4,           5,           6, 9, 10, CRYPT_HEADER_LEN - 1, /* header */
	    offs[2],     offs[2] + 4, offs[3] - 1, /* length, ciphertext, tag */
	    offs[5] + 5, size - 1};
	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		flip_at(spots[i]);
		int rc = read_log(&ctx_a, LOG_NAME, &s);
		/* a record whose length grew past the file reads as a torn tail */
		bool tail = spots[i] == offs[2] && s.incomplete_tail;
		ck_assert_msg(rc == -ERR_DATA_AUTH_FAILED || tail, "byte %ld: rc %d", spots[i], rc);
		ck_assert(!s.closed);
		char err[256];
		crypt_log_writer *w;
		ck_assert_int_lt(crypt_log_writer_open(log_wfd(path), path, &ctx_a, LOG_NAME, &w,
		                                       err, sizeof(err)),
		                 0);
		fd = open(path, O_WRONLY);
		ck_assert_int_eq(pwrite(fd, orig, (size_t)size, 0), size);
		close(fd);
	}
	/* a flipped record refuses it and what follows, never what came before */
	flip_at(offs[3] + 6);
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), -ERR_DATA_AUTH_FAILED);
	ck_assert_uint_eq(s.records, 3);
	free(orig);
}
END_TEST

START_TEST(tamper_truncation_and_tail)
{
	long offs[7];
	closed_log(offs);
	long size = file_size();
	crypt_log_state s;
	/* dropping the closing record: the log reads as open */
	truncate_to(offs[6]);
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
	ck_assert(!s.closed && !s.incomplete_tail && s.records == 6);
	/* inside a record, inside its length, at a record boundary (each cut shorter) */
	long cuts[] = {offs[5] - 1, offs[4] + 7, offs[4] + 2, offs[4]};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		truncate_to(cuts[i]);
		ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
		ck_assert_uint_eq(s.records, 4);
		ck_assert(!s.closed);
		ck_assert(s.incomplete_tail == (cuts[i] != offs[4]));
	}
	/* inside the header */
	truncate_to(CRYPT_HEADER_LEN - 1);
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
	ck_assert(s.records == 0 && s.incomplete_tail);
	(void)size;
}
END_TEST

START_TEST(tamper_trailing_bytes)
{
	long offs[7];
	closed_log(offs);
	int fd = open(path, O_WRONLY | O_APPEND);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
	crypt_log_state s;
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), -ERR_DATA_AUTH_FAILED);
	ck_assert_uint_eq(s.records, 6);
}
END_TEST

START_TEST(tamper_reorder)
{
	/* two records of the same length, swapped */
	crypt_log_writer *w = open_writer(&ctx_a);
	char err[256];
	long a = file_size();
	ck_assert_int_eq(crypt_log_append(w, "first", 5, err, sizeof(err)), 0);
	long b = file_size();
	ck_assert_int_eq(crypt_log_append(w, "other", 5, err, sizeof(err)), 0);
	crypt_log_writer_free(w);
	long len = b - a;
	unsigned char ra[64], rb[64];
	int fd = open(path, O_RDWR);
	ck_assert_int_eq(pread(fd, ra, (size_t)len, a), len);
	ck_assert_int_eq(pread(fd, rb, (size_t)len, b), len);
	ck_assert_int_eq(pwrite(fd, rb, (size_t)len, a), len);
	ck_assert_int_eq(pwrite(fd, ra, (size_t)len, b), len);
	close(fd);
	crypt_log_reader *r;
	ck_assert_int_eq(
	    crypt_log_reader_open(log_rfd(path), path, &ctx_a, LOG_NAME, &r, err, sizeof(err)), 0);
	const void *rec;
	size_t n;
	ck_assert_int_eq(crypt_log_next(r, &rec, &n, err, sizeof(err)), -ERR_DATA_AUTH_FAILED);
	ck_assert_ptr_null(rec);
	ck_assert_int_eq(crypt_log_next(r, &rec, &n, err, sizeof(err)), -ERR_DATA_AUTH_FAILED);
	crypt_log_reader_free(r);
}
END_TEST

START_TEST(tamper_swap_key_and_name)
{
	long offs[7];
	closed_log(offs);
	crypt_object_ctx other_job, other_tenant, wrong_key;
	ck_assert_int_eq(crypt_object_ctx_init(&other_job, TENANT_A, JOB_B, &key_a), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&other_tenant, TENANT_B, JOB_A, &key_a), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&wrong_key, TENANT_A, JOB_A, &key_b), 0);
	crypt_log_state s;
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &s), CRYPT_LOG_END);
	ck_assert(s.closed);
	ck_assert_int_eq(read_log(&other_job, LOG_NAME, &s), -ERR_DATA_AUTH_FAILED);
	ck_assert_uint_eq(s.records, 0);
	ck_assert_int_eq(read_log(&other_tenant, LOG_NAME, &s), -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(read_log(&wrong_key, LOG_NAME, &s), -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(read_log(&ctx_a, "logs/attempt-2.log", &s), -ERR_DATA_AUTH_FAILED);
	crypt_object_ctx_clear(&other_job);
	crypt_object_ctx_clear(&other_tenant);
	crypt_object_ctx_clear(&wrong_key);
}
END_TEST

START_TEST(record_limits)
{
	crypt_log_writer *w = open_writer(&ctx_a);
	char err[256];
	unsigned char *big = calloc(1, CRYPT_LOG_RECORD_MAX + 1);
	ck_assert_int_eq(crypt_log_append(w, big, CRYPT_LOG_RECORD_MAX, err, sizeof(err)), 0);
	ck_assert_int_eq(crypt_log_append(w, big, CRYPT_LOG_RECORD_MAX + 1, err, sizeof(err)),
	                 -ERR_INTERNAL);
	ck_assert_int_eq(crypt_log_writer_close(w, err, sizeof(err)), 0);
	crypt_log_reader *r;
	ck_assert_int_eq(
	    crypt_log_reader_open(log_rfd(path), path, &ctx_a, LOG_NAME, &r, err, sizeof(err)), 0);
	const void *rec;
	size_t n;
	ck_assert_int_eq(crypt_log_next(r, &rec, &n, err, sizeof(err)), CRYPT_LOG_RECORD);
	ck_assert_uint_eq(n, CRYPT_LOG_RECORD_MAX);
	ck_assert_mem_eq(rec, big, n);
	ck_assert_int_eq(crypt_log_next(r, &rec, &n, err, sizeof(err)), CRYPT_LOG_END);
	crypt_log_reader_free(r);
	free(big);
}
END_TEST

/* A writer reopened after a data-key rotation seals its new segment under the newest generation. */
START_TEST(segments_of_generations)
{
	crypt_key ring_keys[2] = {key_a, key_b};
	crypt_object_ctx ring;
	ck_assert_int_eq(crypt_object_ctx_init_ring(&ring, TENANT_A, JOB_A, ring_keys, 2), 0);
	crypt_log_writer *w = open_writer(&ctx_a);
	append_range(w, 0, 5);
	crypt_log_writer_free(w); /* not closed: the next attempt goes on with the log */
	long first = file_size();
	w = open_writer(&ring);
	append_range(w, 5, 9);
	char err[256];
	ck_assert_int_eq(crypt_log_writer_close(w, err, sizeof(err)), 0);
	/* the second segment's header names generation 2 */
	int fd = open(path, O_RDONLY);
	unsigned char h[CRYPT_HEADER_LEN];
	ck_assert_int_eq(pread(fd, h, sizeof(h), first), (ssize_t)sizeof(h));
	close(fd);
	ck_assert_mem_eq(h, "TYEC\x02\x02", 6);
	ck_assert_mem_eq(h + 10, "\x02\x00\x00\x00", 4);
	crypt_log_state st;
	ck_assert_int_eq(read_log(&ring, LOG_NAME, &st), CRYPT_LOG_END);
	ck_assert(st.closed);
	ck_assert_uint_eq(st.records, 9);
	/* the first generation alone reads its own records, then stops at the next segment */
	ck_assert_int_eq(read_log(&ctx_a, LOG_NAME, &st), -ERR_DATA_AUTH_FAILED);
	ck_assert_uint_eq(st.records, 5);
	crypt_object_ctx_clear(&ring);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("crypt_log");
	TCase *tc = tcase_create("logs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, read_while_writing);
	tcase_add_test(tc, segments_of_generations);
	tcase_add_test(tc, reopen_continues_index);
	tcase_add_test(tc, torn_tail_cut_on_reopen);
	tcase_add_test(tc, one_writer_at_a_time);
	tcase_add_test(tc, tamper_bit_flips);
	tcase_add_test(tc, tamper_truncation_and_tail);
	tcase_add_test(tc, tamper_trailing_bytes);
	tcase_add_test(tc, tamper_reorder);
	tcase_add_test(tc, tamper_swap_key_and_name);
	tcase_add_test(tc, record_limits);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
