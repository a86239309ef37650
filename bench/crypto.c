/*
 * crypto.c - encrypted object throughput on one core, beside the plain
 * path, the driver of bench/crypto.
 *
 * Streams MIB MiB of checkpoint-like bytes (handed over 1 MiB at a time,
 * as the checkpoint writer does) through crypt_object_writer into an
 * in-memory sink that lends the writer its memory, and back through
 * crypt_object_reader from an in-memory source into the caller's 1 MiB
 * buffer; the plain rows copy the same bytes through the same sink and
 * source, five runs each. A further row takes the encrypted chunks through
 * the sink's memcpy instead, as a file or socket sink does. Then the same
 * through a file on disk, once: write, fsync, read back (from the page
 * cache). Every buffer is touched before timing.
 *
 * Prints one row per case: MB/s of the best run, and for the encrypted
 * rows the ratio to OPENSSL_BPS (the bytes/s of `openssl speed -evp
 * aes-256-gcm -bytes 16384`) and the median over the runs of the ratio to
 * EVP AES-256-GCM on 16 KiB messages measured in this process right before
 * each run: on a machine whose speed drifts, the yardstick taken beside
 * each run is the steadier comparison. The memory rows carry the 0.8
 * target. The "added" rows divide the bytes by the time the copying
 * encrypted run took beyond the plain one (the sink's and source's own
 * copies are common to both): the cost of the cipher and framing alone.
 * The disk rows show where the disk, not the cipher, sets the pace.
 *
 * usage: crypto MIB OPENSSL_BPS DIR
 */
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypt.h"
#include "error.h"
#include "membuf.h"

#define PIECE   (1u << 20)
#define TARGET  0.8
#define REPEATS 5 /* runs of each memory row */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "crypto: %s: %s\n", what, err);
	exit(1);
}

/* The yardstick beside each row: EVP AES-256-GCM on 16 KiB messages, as openssl speed. */
static double evp_rate(double seconds)
{
	unsigned char key[32] = {1}, iv[12] = {0}, tag[16], *buf = calloc(1, 16384);
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, iv);
	size_t bytes = 0;
	double t0 = now(), t;
	int len;
	do {
		for (int i = 0; i < 64; i++, iv[0]++) {
			EVP_EncryptInit_ex(c, NULL, NULL, NULL, iv);
			EVP_EncryptUpdate(c, buf, &len, buf, 16384);
			EVP_EncryptFinal_ex(c, buf, &len);
			EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag);
			bytes += 16384;
		}
	} while ((t = now() - t0) < seconds);
	EVP_CIPHER_CTX_free(c);
	free(buf);
	return (double)bytes / t;
}

/* A row's measurement: best seconds, and its runs' ratios to the EVP rate beside each. */
typedef struct measured {
	double best;
	double ratio[REPEATS];
	int runs;
} measured;

static void measured_add(measured *m, double secs, size_t bytes, double evp_bps)
{
	if (m->runs == 0 || secs < m->best)
		m->best = secs;
	m->ratio[m->runs++] = (double)bytes / secs / evp_bps;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* RET: the median ratio to EVP over the runs, 0 when there were none. */
static double measured_median(measured *m)
{
	if (m->runs == 0)
		return 0;
	qsort(m->ratio, (size_t)m->runs, sizeof(double), cmp_double);
	return m->ratio[m->runs / 2];
}

/*
 * One table row: MB/s from the best run; ratio to openssl speed (0: left
 * out); the median ratio to EVP beside each run (0: left out); the target.
 */
static void row(const char *what, size_t bytes, double secs, double openssl_bps, double vs_evp,
                bool targeted)
{
	double bps = (double)bytes / secs;
	printf("| %-40s | %6.0f |", what, bps / 1e6);
	if (openssl_bps > 0)
		printf(" %5.2f |", bps / openssl_bps);
	else
		printf("     - |");
	if (vs_evp > 0)
		printf(" %5.2f |", vs_evp);
	else
		printf("     - |");
	if (targeted)
		printf(" %4.1f |\n", TARGET);
	else
		printf("    - |\n");
	fflush(stdout);
}

/*
 * The in-memory sink lending its own memory to the writer (crypt.h,
 * crypt_object_writer_lend): chunks are sealed where they stay.
 */
static void *membuf_reserve(void *arg, size_t n)
{
	membuf *m = arg;
	return m->len + n <= m->cap ? m->p + m->len : NULL;
}

static int membuf_commit(void *arg, size_t n)
{
	membuf *m = arg;
	m->len += n;
	return 0;
}

static int null_sink(void *arg, const void *buf, size_t n)
{
	(void)arg;
	(void)buf;
	(void)n;
	return 0;
}

/*
 * Write total bytes of plain (PIECE at a time) to sink, encrypted or not;
 * lend: let the writer seal into the membuf at arg. RET seconds.
 */
static double write_all(const crypt_object_ctx *ctx, bool encrypt, bool lend,
                        const unsigned char *plain, size_t total, crypt_sink_fn sink, void *arg)
{
	char err[256];
	double t0 = now();
	if (!encrypt) {
		for (size_t off = 0; off < total; off += PIECE)
			if (sink(arg, plain, PIECE) != 0)
				die("plain write", "sink failed");
		return now() - t0;
	}
	crypt_object_writer *w;
	if (crypt_object_writer_open(ctx, "bench/shard.bin", sink, arg, &w, err, sizeof(err)))
		die("writer", err);
	if (lend)
		crypt_object_writer_lend(w, membuf_reserve, membuf_commit);
	for (size_t off = 0; off < total; off += PIECE)
		if (crypt_object_writer_write(w, plain, PIECE, err, sizeof(err)))
			die("write", err);
	if (crypt_object_writer_finish(w, err, sizeof(err)))
		die("finish", err);
	crypt_object_writer_free(w);
	return now() - t0;
}

/* Read everything from source into out (PIECE at a time). OUT *bytes. RET seconds. */
static double read_all(const crypt_object_ctx *ctx, bool decrypt, crypt_source_fn source, void *arg,
                       unsigned char *out, size_t *bytes)
{
	char err[256];
	size_t got;
	*bytes = 0;
	double t0 = now();
	if (!decrypt) {
		do {
			if (source(arg, out, PIECE, &got) != 0)
				die("plain read", "source failed");
			*bytes += got;
		} while (got == PIECE);
		return now() - t0;
	}
	crypt_object_reader *r;
	if (crypt_object_reader_open(ctx, "bench/shard.bin", source, arg, &r, err, sizeof(err)))
		die("reader", err);
	do {
		if (crypt_object_reader_read(r, out, PIECE, &got, err, sizeof(err)))
			die("read", err);
		*bytes += got;
	} while (got == PIECE);
	crypt_object_reader_free(r);
	return now() - t0;
}

/* The memory rows' runs of one pass, plain or encrypted. */
typedef struct memory_pass {
	measured write, read, copying, alone;
} memory_pass;

/*
 * One run of each memory row, beside a fresh EVP rate (kept best in
 * *evp_best). Encrypted, the writer seals into the sink's own memory; the
 * copying row takes the same chunks through the sink's memcpy, as a file
 * or socket sink would.
 */
static void memory_run(const crypt_object_ctx *ctx, bool enc, const unsigned char *plain,
                       size_t total, membuf *m, unsigned char *out, memory_pass *p,
                       double *evp_best)
{
	double evp = evp_rate(0.15);
	*evp_best = evp > *evp_best ? evp : *evp_best;
	m->len = 0;
	measured_add(&p->write, write_all(ctx, enc, enc, plain, total, membuf_sink, m), total, evp);
	m->pos = 0;
	size_t n;
	measured_add(&p->read, read_all(ctx, enc, membuf_source, m, out, &n), total, evp);
	if (n != total)
		die("read", "short");
	if (!enc)
		return;
	m->len = 0;
	measured_add(&p->copying, write_all(ctx, true, false, plain, total, membuf_sink, m), total,
	             evp);
	measured_add(&p->alone, write_all(ctx, true, false, plain, total, null_sink, NULL), total,
	             evp);
}

static void bench_memory(const crypt_object_ctx *ctx, const unsigned char *plain, size_t total,
                         double openssl_bps)
{
	membuf m = {.cap = total + total / 64 + 4096};
	m.p = malloc(m.cap);
	unsigned char *out = malloc(PIECE);
	if (m.p == NULL || out == NULL)
		die("memory", "out of memory");
	memset(m.p, 1, m.cap);
	memset(out, 1, PIECE);
	double evp_best = 0;
	memory_pass plain_pass = {0}, enc = {0};
	for (int rep = 0; rep < REPEATS; rep++)
		memory_run(ctx, false, plain, total, &m, out, &plain_pass, &evp_best);
	for (int rep = 0; rep < REPEATS; rep++)
		memory_run(ctx, true, plain, total, &m, out, &enc, &evp_best);
	double plain_write = plain_pass.write.best, plain_read = plain_pass.read.best;
	row("plain copy, memory to memory", total, plain_write, 0, 0, false);
	row("plain copy back, memory to memory", total, plain_read, 0, 0, false);
	row("encrypt, to no sink (writer alone)", total, enc.alone.best, openssl_bps,
	    measured_median(&enc.alone), false);
	row("encrypt, memory to memory", total, enc.write.best, openssl_bps,
	    measured_median(&enc.write), true);
	row("decrypt, memory to memory", total, enc.read.best, openssl_bps,
	    measured_median(&enc.read), true);
	row("encrypt, through a copying sink", total, enc.copying.best, openssl_bps,
	    measured_median(&enc.copying), false);
	/* what encryption adds to the plain path's copy, as a rate */
	double added_w = enc.copying.best - plain_write, added_r = enc.read.best - plain_read;
	row("encrypt, copying sink, added to the copy", total, added_w, openssl_bps,
	    (double)total / added_w / evp_best, false);
	row("decrypt, added to the plain copy", total, added_r, openssl_bps,
	    (double)total / added_r / evp_best, false);
	printf("| %-40s | %6.0f |     - |  1.00 |    - |\n",
	       "EVP AES-256-GCM 16 KiB, beside each run", evp_best / 1e6);
	free(m.p);
	free(out);
}

static void bench_disk(const crypt_object_ctx *ctx, const unsigned char *plain, size_t total,
                       const char *dir, double openssl_bps)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/crypto-bench.bin", dir);
	unsigned char *out = malloc(PIECE);
	memset(out, 1, PIECE);
	for (int enc = 0; enc <= 1; enc++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			die("open", path);
		double t0 = now();
		write_all(ctx, enc, false, plain, total, crypt_fd_sink, &fd);
		if (fsync(fd) != 0)
			die("fsync", path);
		double t = now() - t0;
		close(fd);
		row(enc ? "encrypt, to disk with fsync" : "plain, to disk with fsync", total, t,
		    enc ? openssl_bps : 0, 0, false);
		fd = open(path, O_RDONLY);
		size_t n;
		t = read_all(ctx, enc, crypt_fd_source, &fd, out, &n);
		close(fd);
		if (n != total)
			die("read", "short");
		row(enc ? "decrypt, from file (page cache)" : "plain, from file (page cache)",
		    total, t, enc ? openssl_bps : 0, 0, false);
	}
	unlink(path);
	free(out);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: crypto MIB OPENSSL_BPS DIR\n");
		return 2;
	}
	size_t total = (size_t)atol(argv[1]) << 20;
	double openssl_bps = atof(argv[2]);
	crypt_key key;
	crypt_object_ctx ctx;
	if (total == 0 || crypt_key_generate(&key) != 0 ||
	    crypt_object_ctx_init(&ctx, "7f1c2a10-0000-4000-8000-00000000000a",
	                          "0b9e0c52-0000-4000-8000-0000000000a1", &key) != 0)
		die("setup", "bad size or no key");
	unsigned char *plain = malloc(PIECE);
	for (size_t i = 0; i < PIECE; i++)
		plain[i] = (unsigned char)(i * 2654435761u >> 13);
	printf("| case | MB/s | vs openssl speed | vs EVP beside | target |\n"
	       "|---|---|---|---|---|\n");
	printf("| %-40s | %6.0f |  1.00 |     - |    - |\n", "openssl speed aes-256-gcm 16 KiB",
	       openssl_bps / 1e6);
	bench_memory(&ctx, plain, total, openssl_bps);
	bench_disk(&ctx, plain, total, argv[3], openssl_bps);
	crypt_object_ctx_clear(&ctx);
	crypt_key_clear(&key);
	free(plain);
	return 0;
}
