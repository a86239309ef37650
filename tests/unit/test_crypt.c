/*
 * test_crypt.c - keys, wrapping, the master key and encrypted objects:
 * round trips, and the tamper matrix (bit flips in header, ciphertext and
 * tag; truncation, at chunk boundaries too; chunk reorder; files swapped
 * between names, jobs and tenants; wrong key), each read both through the
 * reader's chunk buffer and straight into large caller buffers.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "crypt.h"
#include "error.h"
#include "hex.h"
#include "keys.h"
#include "membuf.h"
#include "unit.h"

#define TENANT_A      "7f1c2a10-0000-4000-8000-00000000000a"
#define TENANT_B      "7f1c2a10-0000-4000-8000-00000000000b"
#define JOB_A         "0b9e0c52-0000-4000-8000-0000000000a1"
#define JOB_B         "0b9e0c52-0000-4000-8000-0000000000b1"
#define CHUNK_ON_DISK (CRYPT_CHUNK + CRYPT_TAG_LEN)

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 2654435761u + seed) >> 13);
}

static crypt_key key_a, key_b;
static crypt_object_ctx ctx_a;

static void setup(void)
{
	ck_assert_int_eq(crypt_key_generate(&key_a), 0);
	ck_assert_int_eq(crypt_key_generate(&key_b), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&ctx_a, TENANT_A, JOB_A, &key_a), 0);
}

static void teardown(void)
{
	crypt_object_ctx_clear(&ctx_a);
}

/* Encrypt n pattern bytes as name, written in uneven pieces. */
static membuf seal(const crypt_object_ctx *ctx, const char *name, size_t n, unsigned seed)
{
	membuf m = {0};
	unsigned char *p = malloc(n + 1);
	pattern(p, n, seed);
	char err[256];
	crypt_object_writer *w;
	ck_assert_msg(
	    crypt_object_writer_open(ctx, name, membuf_grow_sink, &m, &w, err, sizeof(err)) == 0,
	    "%s", err);
	size_t pieces[] = {1, 1000, CRYPT_CHUNK, 3 * CRYPT_CHUNK + 7, 5};
	for (size_t off = 0, i = 0; off < n; i++) {
		size_t k = pieces[i % 5] < n - off ? pieces[i % 5] : n - off;
		ck_assert_msg(crypt_object_writer_write(w, p + off, k, err, sizeof(err)) == 0, "%s",
		              err);
		off += k;
	}
	ck_assert_msg(crypt_object_writer_finish(w, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(crypt_object_writer_bytes(w), n);
	crypt_object_writer_free(w);
	free(p);
	return m;
}

/*
 * Read sizes for open_all: below a chunk (through the reader's buffer);
 * a chunk and a few bytes (decrypted in the caller's buffer, the tag read
 * apart); several chunks (one source call per chunk, the last one in each
 * call with room for its ciphertext only).
 */
static const size_t read_sizes[] = {9999, CRYPT_CHUNK + 7, 5 * CRYPT_CHUNK};

/*
 * Decrypt m as name under ctx, piece bytes per call. OUT *out (caller
 * frees), *n: every byte the reader released. RET the first failure or 0.
 */
static int open_all(const crypt_object_ctx *ctx, const char *name, membuf *m, size_t piece,
                    unsigned char **out, size_t *n, char *err, size_t errlen)
{
	m->pos = 0;
	*out = NULL;
	*n = 0;
	crypt_object_reader *r;
	int rc = crypt_object_reader_open(ctx, name, membuf_source, m, &r, err, errlen);
	size_t cap = 0;
	while (rc == 0) {
		if (cap - *n < piece) {
			cap = cap * 2 + 2 * piece;
			*out = realloc(*out, cap);
		}
		size_t got;
		rc = crypt_object_reader_read(r, *out + *n, piece, &got, err, errlen);
		*n += got;
		if (rc == 0 && got < piece)
			break;
	}
	crypt_object_reader_free(r);
	return rc;
}

/* The reader's code for m, read piece bytes at a time; what it released must be a prefix. */
static int verify_by(const crypt_object_ctx *ctx, const char *name, membuf *m, size_t n,
                     unsigned seed, size_t piece)
{
	unsigned char *out, *want = malloc(n + 1);
	size_t got;
	char err[512];
	pattern(want, n, seed);
	int rc = open_all(ctx, name, m, piece, &out, &got, err, sizeof(err));
	ck_assert_uint_le(got, n);
	if (got > 0)
		ck_assert_mem_eq(out, want, got);
	if (rc == 0)
		ck_assert_uint_eq(got, n);
	else
		ck_assert_msg(rc == -ERR_DATA_AUTH_FAILED, "rc %d: %s", rc, err);
	free(out);
	free(want);
	return rc;
}

/* RET: the reader's code for m, the same for every read size. */
static int verify(const crypt_object_ctx *ctx, const char *name, membuf *m, size_t n, unsigned seed)
{
	int rc = verify_by(ctx, name, m, n, seed, read_sizes[0]);
	for (size_t i = 1; i < sizeof(read_sizes) / sizeof(read_sizes[0]); i++)
		ck_assert_int_eq(verify_by(ctx, name, m, n, seed, read_sizes[i]), rc);
	return rc;
}

/* ---- keys and wrapping --------------------------------------------- */

START_TEST(keys_and_hex)
{
	ck_assert_mem_ne(key_a.bytes, key_b.bytes, CRYPT_KEY_LEN);
	crypt_key k;
	const char *hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
	ck_assert(crypt_key_from_hex(hex, 64, &k));
	ck_assert_uint_eq(k.bytes[0], 0x00);
	ck_assert_uint_eq(k.bytes[10], 0xaa);
	ck_assert_uint_eq(k.bytes[31], 0xff);
	ck_assert(!crypt_key_from_hex(hex, 63, &k));
	ck_assert(!crypt_key_from_hex(
	    "zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 64, &k));
	crypt_key_clear(&k);
	for (int i = 0; i < CRYPT_KEY_LEN; i++)
		ck_assert_uint_eq(k.bytes[i], 0);
	char ctx[CRYPT_CONTEXT_MAX + 1];
	ck_assert_int_eq(crypt_context(ctx, sizeof(ctx), CRYPT_CONTEXT_JOB_DEK, JOB_A, 3), 0);
	ck_assert_str_eq(ctx, "job-dek|" JOB_A "|v3");
	ck_assert_int_eq(crypt_context(ctx, sizeof(ctx), CRYPT_CONTEXT_TENANT_KEK, TENANT_A, 1), 0);
	ck_assert_str_eq(ctx, "tenant-kek|" TENANT_A "|v1");
	ck_assert_int_eq(crypt_context(ctx, 10, CRYPT_CONTEXT_JOB_DEK, JOB_A, 3), -ERR_INTERNAL);
	ck_assert_int_eq(crypt_context(ctx, sizeof(ctx), "job-dek", "a|b", 1), -ERR_INTERNAL);
	ck_assert_int_eq(crypt_context(ctx, sizeof(ctx), "job-dek", JOB_A, 0), -ERR_INTERNAL);
}
END_TEST

START_TEST(wrap_round_trip_and_tamper)
{
	const char *context = "job-dek|" JOB_A "|v1";
	unsigned char w1[CRYPT_WRAPPED_LEN], w2[CRYPT_WRAPPED_LEN];
	ck_assert_int_eq(CRYPT_WRAPPED_LEN, 61);
	ck_assert_int_eq(crypt_wrap(&key_a, context, &key_b, w1), 0);
	ck_assert_int_eq(crypt_wrap(&key_a, context, &key_b, w2), 0);
	ck_assert_uint_eq(w1[0], CRYPT_WRAP_VERSION);
	ck_assert_mem_ne(w1, w2, CRYPT_WRAPPED_LEN); /* fresh nonce each time */
	ck_assert_mem_ne(w1 + 13, key_b.bytes, CRYPT_KEY_LEN);
	crypt_key out;
	ck_assert_int_eq(crypt_unwrap(&key_a, context, w1, sizeof(w1), &out), 0);
	ck_assert_mem_eq(out.bytes, key_b.bytes, CRYPT_KEY_LEN);
	ck_assert_int_eq(crypt_unwrap(&key_a, context, w2, sizeof(w2), &out), 0);
	ck_assert_mem_eq(out.bytes, key_b.bytes, CRYPT_KEY_LEN);

	for (size_t i = 0; i < CRYPT_WRAPPED_LEN; i++)
		for (int bit = 0; bit < 8; bit += 7) {
			unsigned char bad[CRYPT_WRAPPED_LEN];
			memcpy(bad, w1, sizeof(bad));
			bad[i] ^= (unsigned char)(1 << bit);
			ck_assert_int_eq(crypt_unwrap(&key_a, context, bad, sizeof(bad), &out),
			                 -ERR_KEY_UNWRAP_FAILED);
			for (int j = 0; j < CRYPT_KEY_LEN; j++)
				ck_assert_uint_eq(out.bytes[j], 0);
		}
	ck_assert_int_eq(crypt_unwrap(&key_b, context, w1, sizeof(w1), &out),
	                 -ERR_KEY_UNWRAP_FAILED);
	ck_assert_int_eq(crypt_unwrap(&key_a, "job-dek|" JOB_A "|v2", w1, sizeof(w1), &out),
	                 -ERR_KEY_UNWRAP_FAILED);
	ck_assert_int_eq(crypt_unwrap(&key_a, "job-dek|" JOB_B "|v1", w1, sizeof(w1), &out),
	                 -ERR_KEY_UNWRAP_FAILED);
	ck_assert_int_eq(crypt_unwrap(&key_a, context, w1, sizeof(w1) - 1, &out),
	                 -ERR_KEY_UNWRAP_FAILED);
	ck_assert_int_eq(crypt_unwrap(&key_a, "", w1, sizeof(w1), &out), -ERR_KEY_UNWRAP_FAILED);
	ck_assert_int_eq(crypt_wrap(&key_a, "", &key_b, w2), -ERR_INTERNAL);
}
END_TEST

/* ---- the master key ------------------------------------------------- */

static const char master_hex[] = "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf";

static void write_key_file(const char *path, const char *text, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ck_assert_int_eq(chmod(path, mode), 0);
}

START_TEST(master_key_file_permissions)
{
	char dir[] = "/tmp/ty-master-XXXXXX", path[128], link[160], err[512];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/master.key", dir);
	crypt_key k;

	write_key_file(path, master_hex, 0600);
	ck_assert_msg(crypt_master_load_file(path, &k, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(k.bytes[0], 0xa0);
	ck_assert_uint_eq(k.bytes[31], 0xbf);

	char with_newline[80];
	snprintf(with_newline, sizeof(with_newline), "%s\n", master_hex);
	write_key_file(path, with_newline, 0400);
	ck_assert_msg(crypt_master_load_file(path, &k, err, sizeof(err)) == 0, "%s", err);

	static const mode_t refused[] = {0644, 0640, 0604, 0660, 0606, 0700 | 0040};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		write_key_file(path, master_hex, refused[i]);
		ck_assert_int_eq(crypt_master_load_file(path, &k, err, sizeof(err)),
		                 -ERR_MASTER_KEY_INVALID);
		ck_assert_msg(strstr(err, "0600 or stricter") != NULL, "%s", err);
		for (int j = 0; j < CRYPT_KEY_LEN; j++)
			ck_assert_uint_eq(k.bytes[j], 0);
	}

	static const char *const bad_text[] = {
	    "a0a1", "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf\n\n",
	    "x0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf", ""};
	for (size_t i = 0; i < sizeof(bad_text) / sizeof(bad_text[0]); i++) {
		write_key_file(path, bad_text[i], 0600);
		ck_assert_int_eq(crypt_master_load_file(path, &k, err, sizeof(err)),
		                 -ERR_MASTER_KEY_INVALID);
		ck_assert_msg(strstr(err, "64 hex digits") != NULL, "%s", err);
	}

	write_key_file(path, master_hex, 0600);
	snprintf(link, sizeof(link), "%s/link.key", dir);
	ck_assert_int_eq(symlink(path, link), 0);
	ck_assert_int_eq(crypt_master_load_file(link, &k, err, sizeof(err)),
	                 -ERR_MASTER_KEY_INVALID);
	ck_assert_msg(strstr(err, "symbolic link") != NULL, "%s", err);
	ck_assert_int_eq(crypt_master_load_file(dir, &k, err, sizeof(err)),
	                 -ERR_MASTER_KEY_INVALID);
	snprintf(link, sizeof(link), "%s/missing.key", dir);
	ck_assert_int_eq(crypt_master_load_file(link, &k, err, sizeof(err)),
	                 -ERR_MASTER_KEY_INVALID);

	if (geteuid() == 0) { /* owned by someone else */
		ck_assert_int_eq(chown(path, 65534, (gid_t)-1), 0);
		ck_assert_int_eq(crypt_master_load_file(path, &k, err, sizeof(err)),
		                 -ERR_MASTER_KEY_INVALID);
		ck_assert_msg(strstr(err, "owned by uid 65534") != NULL, "%s", err);
	}
	unlink(path);
	snprintf(link, sizeof(link), "%s/link.key", dir);
	unlink(link);
	rmdir(dir);
}
END_TEST

START_TEST(master_key_from_environment)
{
	char err[512];
	crypt_key k;
	ty_config cfg;
	unsetenv("TRAINYARD_MASTER_KEY_FILE");
	ck_assert_int_eq(setenv("TRAINYARD_MASTER_KEY", master_hex, 1), 0);
	ck_assert_int_eq(config_load(&cfg, err, sizeof(err)), 0);
	ck_assert_msg(crypt_master_from_config(&cfg, &k, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(k.bytes[1], 0xa1);
	ck_assert_ptr_null(getenv("TRAINYARD_MASTER_KEY")); /* gone from the environment */
	ck_assert_str_eq(cfg.master_key, "");               /* and its bytes overwritten */

	ck_assert_int_eq(config_load(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(crypt_master_from_config(&cfg, &k, err, sizeof(err)),
	                 -ERR_MASTER_KEY_INVALID);
	ck_assert_msg(strstr(err, "no master key") != NULL, "%s", err);

	setenv("TRAINYARD_MASTER_KEY", "abc", 1);
	ck_assert_int_eq(config_load(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(crypt_master_from_config(&cfg, &k, err, sizeof(err)),
	                 -ERR_MASTER_KEY_INVALID);
	ck_assert_ptr_null(getenv("TRAINYARD_MASTER_KEY"));

	setenv("TRAINYARD_MASTER_KEY", master_hex, 1);
	setenv("TRAINYARD_MASTER_KEY_FILE", "/nonexistent", 1);
	ck_assert_int_eq(config_load(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(crypt_master_from_config(&cfg, &k, err, sizeof(err)),
	                 -ERR_MASTER_KEY_INVALID);
	ck_assert_msg(strstr(err, "only one") != NULL, "%s", err);
	ck_assert_ptr_null(getenv("TRAINYARD_MASTER_KEY"));
	unsetenv("TRAINYARD_MASTER_KEY_FILE");
}
END_TEST

/* Vectors from Python's hashlib: sha256(b"trainyard key id v1" + key)[:8].hex() */
START_TEST(master_key_ids)
{
	crypt_key a, b;
	char id[CRYPT_KEY_ID_LEN + 1];
	for (int i = 0; i < CRYPT_KEY_LEN; i++) {
		a.bytes[i] = (unsigned char)i;
		b.bytes[i] = 0x11;
	}
	crypt_key_id(&a, id);
	ck_assert_str_eq(id, "2058da4b0259167a");
	crypt_key_id(&b, id);
	ck_assert_str_eq(id, "0d8e9cc92f6aa04f");
}
END_TEST

START_TEST(master_key_previous_from_config)
{
	char dir[] = "/tmp/ty-prev-XXXXXX", path[128], err[512];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/previous.key", dir);
	ty_config cfg;
	crypt_key k;
	unsetenv("TRAINYARD_MASTER_KEY_PREVIOUS_FILE");
	ck_assert_int_eq(config_load(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(crypt_master_previous_from_config(&cfg, &k, err, sizeof(err)), 0);

	write_key_file(path, master_hex, 0600);
	setenv("TRAINYARD_MASTER_KEY_PREVIOUS_FILE", path, 1);
	ck_assert_int_eq(config_load(&cfg, err, sizeof(err)), 0);
	ck_assert_msg(crypt_master_previous_from_config(&cfg, &k, err, sizeof(err)) == 1, "%s",
	              err);
	ck_assert_uint_eq(k.bytes[0], 0xa0);

	write_key_file(path, master_hex, 0644); /* the master key file's rules */
	ck_assert_int_eq(crypt_master_previous_from_config(&cfg, &k, err, sizeof(err)),
	                 -ERR_MASTER_KEY_INVALID);
	ck_assert_msg(strstr(err, "previous master key file") != NULL, "%s", err);
	ck_assert_uint_eq(k.bytes[0], 0);
	unsetenv("TRAINYARD_MASTER_KEY_PREVIOUS_FILE");
	unlink(path);
	rmdir(dir);
}
END_TEST

#define TENANT "0b5c8d2e-7f31-4a4b-9e0c-1d2e3f405162"

/* A tenant KEK wrapped by master for version v, as keys.c stores it. */
static void kek_wrapped(const crypt_key *master, const crypt_key *kek, int v,
                        unsigned char w[CRYPT_WRAPPED_LEN])
{
	char ctx[CRYPT_CONTEXT_MAX + 1];
	ck_assert_int_eq(crypt_context(ctx, sizeof(ctx), CRYPT_CONTEXT_TENANT_KEK, TENANT, v), 0);
	ck_assert_int_eq(crypt_wrap(master, ctx, kek, w), 0);
}

START_TEST(master_rotation_rewrap)
{
	crypt_key old_m, new_m, third, kek, got;
	char old_id[CRYPT_KEY_ID_LEN + 1], new_id[CRYPT_KEY_ID_LEN + 1];
	unsigned char w[CRYPT_WRAPPED_LEN], rw[CRYPT_WRAPPED_LEN];
	ck_assert_int_eq(crypt_key_generate(&old_m), 0);
	ck_assert_int_eq(crypt_key_generate(&new_m), 0);
	ck_assert_int_eq(crypt_key_generate(&third), 0);
	ck_assert_int_eq(crypt_key_generate(&kek), 0);
	crypt_key_id(&old_m, old_id);
	crypt_key_id(&new_m, new_id);
	kek_wrapped(&old_m, &kek, 3, w);

	/* during the rotation: a row naming the old key opens with it as the previous key */
	ck_assert_int_eq(keys_kek_unwrap(&new_m, &old_m, old_id, TENANT, 3, w, sizeof(w), &got), 0);
	ck_assert_mem_eq(got.bytes, kek.bytes, CRYPT_KEY_LEN);
	/* without the previous key it names a key the server does not hold */
	ck_assert_int_eq(keys_kek_unwrap(&new_m, NULL, old_id, TENANT, 3, w, sizeof(w), &got),
	                 -ERR_MASTER_KEY_MISSING);
	ck_assert_uint_eq(got.bytes[0] | got.bytes[31], 0);
	/* a row from before ids: tried with the current key, then the previous one */
	ck_assert_int_eq(keys_kek_unwrap(&new_m, &old_m, NULL, TENANT, 3, w, sizeof(w), &got), 0);
	ck_assert_int_eq(keys_kek_unwrap(&old_m, NULL, "", TENANT, 3, w, sizeof(w), &got), 0);
	ck_assert_int_eq(keys_kek_unwrap(&new_m, NULL, NULL, TENANT, 3, w, sizeof(w), &got),
	                 -ERR_KEY_UNWRAP_FAILED);
	/* a row whose bytes the named key does not open */
	ck_assert_int_eq(keys_kek_unwrap(&new_m, &old_m, new_id, TENANT, 3, w, sizeof(w), &got),
	                 -ERR_KEY_UNWRAP_FAILED);

	/* the rewrap: same KEK, opens with the new key only, a fresh nonce */
	ck_assert_int_eq(keys_kek_rewrap(&old_m, &new_m, TENANT, 3, w, sizeof(w), rw), 0);
	ck_assert_mem_ne(rw + 1, w + 1, CRYPT_NONCE_LEN);
	ck_assert_int_eq(keys_kek_unwrap(&new_m, NULL, new_id, TENANT, 3, rw, sizeof(rw), &got), 0);
	ck_assert_mem_eq(got.bytes, kek.bytes, CRYPT_KEY_LEN);
	ck_assert_int_eq(keys_kek_unwrap(&old_m, NULL, NULL, TENANT, 3, rw, sizeof(rw), &got),
	                 -ERR_KEY_UNWRAP_FAILED);
	/* the context is kept: another version or tenant does not open it */
	ck_assert_int_eq(keys_kek_unwrap(&new_m, NULL, new_id, TENANT, 4, rw, sizeof(rw), &got),
	                 -ERR_KEY_UNWRAP_FAILED);
	ck_assert_int_eq(keys_kek_unwrap(&new_m, NULL, new_id,
	                                 "0b5c8d2e-7f31-4a4b-9e0c-1d2e3f405163", 3, rw, sizeof(rw),
	                                 &got),
	                 -ERR_KEY_UNWRAP_FAILED);
	/* a rewrap from the wrong key changes nothing */
	ck_assert_int_eq(keys_kek_rewrap(&third, &new_m, TENANT, 3, w, sizeof(w), rw),
	                 -ERR_KEY_UNWRAP_FAILED);

	/* the process-wide previous key, as the API sets it at start */
	ck_assert_ptr_null(keys_master_previous());
	const char *hook = "webhook-secret|6f1d0c52-3b1e-4d8a-9a57-0c4f5e2d1b7a|v1";
	ck_assert_int_eq(crypt_wrap(&old_m, hook, &kek, w), 0);
	ck_assert_int_eq(keys_master_secret_unwrap(&new_m, hook, w, sizeof(w), &got),
	                 -ERR_KEY_UNWRAP_FAILED);
	keys_master_previous_set(&old_m);
	ck_assert_mem_eq(keys_master_previous()->bytes, old_m.bytes, CRYPT_KEY_LEN);
	/* a webhook secret not reached by the rotation yet opens with the previous key */
	ck_assert_int_eq(keys_master_secret_unwrap(&new_m, hook, w, sizeof(w), &got), 0);
	ck_assert_mem_eq(got.bytes, kek.bytes, CRYPT_KEY_LEN);
	ck_assert_int_eq(keys_master_secret_unwrap(&third, hook, rw, sizeof(rw), &got),
	                 -ERR_KEY_UNWRAP_FAILED);
	keys_master_previous_set(NULL);
	ck_assert_ptr_null(keys_master_previous());
	ck_assert_int_eq(keys_master_secret_unwrap(&new_m, hook, w, sizeof(w), &got),
	                 -ERR_KEY_UNWRAP_FAILED);
}
END_TEST

/* ---- objects -------------------------------------------------------- */

START_TEST(object_round_trip)
{
	static const size_t sizes[] = {0,
	                               1,
	                               CRYPT_CHUNK - 1,
	                               CRYPT_CHUNK,
	                               CRYPT_CHUNK + 1,
	                               3 * CRYPT_CHUNK,
	                               3 * CRYPT_CHUNK + 5};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		membuf m = seal(&ctx_a, "step_00000001/shard_00000_of_00001.bin", n, (unsigned)i);
		/* header, full chunks, and a short final chunk (empty after a full one) */
		size_t chunks = n / CRYPT_CHUNK + 1;
		ck_assert_uint_eq(m.len, CRYPT_HEADER_LEN + n + chunks * CRYPT_TAG_LEN);
		ck_assert_mem_eq(m.p, "TYEC\x02\x01", 6);
		ck_assert_mem_eq(m.p + 10, "\x01\x00\x00\x00", 4); /* generation 1 */
		ck_assert_int_eq(
		    verify(&ctx_a, "step_00000001/shard_00000_of_00001.bin", &m, n, (unsigned)i),
		    0);
		/* no plaintext on the wire */
		if (n >= 64) {
			unsigned char *plain = malloc(n);
			pattern(plain, n, (unsigned)i);
			ck_assert_ptr_null(memmem(m.p, m.len, plain, 32));
			free(plain);
		}
		free(m.p);
	}
	/* the same bytes twice: a fresh salt, so different ciphertext throughout */
	membuf a = seal(&ctx_a, "x", 1000, 1), b = seal(&ctx_a, "x", 1000, 1);
	ck_assert_uint_eq(a.len, b.len);
	ck_assert_mem_ne(a.p + 10, b.p + 10, CRYPT_SALT_LEN);
	ck_assert_mem_ne(a.p + CRYPT_HEADER_LEN, b.p + CRYPT_HEADER_LEN, 1000);
	free(a.p);
	free(b.p);
}
END_TEST

/* Flip one bit at off of a copy of m; RET the reader's verdict. */
static int verify_flipped(const membuf *m, size_t off, size_t n)
{
	membuf c = *m;
	c.p = malloc(m->len);
	memcpy(c.p, m->p, m->len);
	c.p[off] ^= 0x10;
	int rc = verify(&ctx_a, "obj", &c, n, 7);
	free(c.p);
	return rc;
}

START_TEST(object_bit_flips)
{
	size_t n = 2 * CRYPT_CHUNK + 100;
	membuf m = seal(&ctx_a, "obj", n, 7);
	for (size_t off = 0; off < CRYPT_HEADER_LEN; off++)
		ck_assert_msg(verify_flipped(&m, off, n) == -ERR_DATA_AUTH_FAILED,
		              "header byte %zu", off);
	size_t c0 = CRYPT_HEADER_LEN, c1 = c0 + CHUNK_ON_DISK, c2 = c1 + CHUNK_ON_DISK;
	size_t spots[] = {c0,       c0 + 1234, c1 - CRYPT_TAG_LEN, c1 - 1, c1 + 5, c2 - 1,
	                  c2,       c2 + 99,   c2 + 100, /* last tag */
	                  m.len - 1};
	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++)
		ck_assert_msg(verify_flipped(&m, spots[i], n) == -ERR_DATA_AUTH_FAILED, "byte %zu",
		              spots[i]);
	free(m.p);
}
END_TEST

START_TEST(object_truncation)
{
	size_t n = 3 * CRYPT_CHUNK; /* ends with an empty final chunk */
	membuf m = seal(&ctx_a, "obj", n, 7);
	size_t c = CHUNK_ON_DISK, h = CRYPT_HEADER_LEN;
	size_t cuts[] = {0,         1,         h - 1,         h,        h + 1,
	                 h + 15,    h + 16,    h + c - 1,     h + c,    h + c + 1,
	                 h + 2 * c, h + 3 * c, h + 3 * c + 1, m.len - 1};
	ck_assert_uint_eq(m.len, h + 3 * c + CRYPT_TAG_LEN);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		membuf t = m;
		t.len = cuts[i];
		ck_assert_msg(verify(&ctx_a, "obj", &t, n, 7) == -ERR_DATA_AUTH_FAILED,
		              "cut at %zu", cuts[i]);
	}
	/* exactly at a chunk boundary, the reader says the final chunk is missing */
	membuf t = m;
	t.len = h + 2 * c;
	unsigned char *out;
	size_t got;
	char err[512];
	for (size_t i = 0; i < sizeof(read_sizes) / sizeof(read_sizes[0]); i++) {
		ck_assert_int_eq(
		    open_all(&ctx_a, "obj", &t, read_sizes[i], &out, &got, err, sizeof(err)),
		    -ERR_DATA_AUTH_FAILED);
		ck_assert_uint_eq(got, 2 * CRYPT_CHUNK); /* only what verified */
		ck_assert_msg(strstr(err, "final chunk") != NULL, "%s", err);
		free(out);
	}
	/* bytes appended after the final chunk */
	membuf longer = m;
	longer.p = malloc(m.len + 1);
	memcpy(longer.p, m.p, m.len);
	longer.p[m.len] = 0;
	longer.len = m.len + 1;
	ck_assert_int_eq(verify(&ctx_a, "obj", &longer, n, 7), -ERR_DATA_AUTH_FAILED);
	free(longer.p);
	free(m.p);
}
END_TEST

START_TEST(object_reorder)
{
	size_t n = 3 * CRYPT_CHUNK + 10;
	membuf m = seal(&ctx_a, "obj", n, 7);
	unsigned char *tmp = malloc(CHUNK_ON_DISK);
	unsigned char *c0 = m.p + CRYPT_HEADER_LEN, *c1 = c0 + CHUNK_ON_DISK;
	memcpy(tmp, c0, CHUNK_ON_DISK);
	memcpy(c0, c1, CHUNK_ON_DISK);
	memcpy(c1, tmp, CHUNK_ON_DISK);
	ck_assert_int_eq(verify(&ctx_a, "obj", &m, n, 7), -ERR_DATA_AUTH_FAILED);
	free(tmp);
	free(m.p);
	/* a chunk of another object under the same key and name */
	membuf a = seal(&ctx_a, "obj", n, 7), b = seal(&ctx_a, "obj", n, 7);
	memcpy(a.p + CRYPT_HEADER_LEN + CHUNK_ON_DISK, b.p + CRYPT_HEADER_LEN + CHUNK_ON_DISK,
	       CHUNK_ON_DISK);
	ck_assert_int_eq(verify(&ctx_a, "obj", &a, n, 7), -ERR_DATA_AUTH_FAILED);
	free(a.p);
	free(b.p);
}
END_TEST

START_TEST(object_swaps_and_wrong_key)
{
	size_t n = CRYPT_CHUNK + 10;
	membuf m = seal(&ctx_a, "step_00000010/shard_00000_of_00002.bin", n, 7);
	const char *name = "step_00000010/shard_00000_of_00002.bin";
	crypt_object_ctx other_job, other_tenant, wrong_key;
	ck_assert_int_eq(crypt_object_ctx_init(&other_job, TENANT_A, JOB_B, &key_a), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&other_tenant, TENANT_B, JOB_A, &key_a), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&wrong_key, TENANT_A, JOB_A, &key_b), 0);
	ck_assert_int_eq(verify(&ctx_a, name, &m, n, 7), 0);
	ck_assert_int_eq(verify(&other_job, name, &m, n, 7), -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(verify(&other_tenant, name, &m, n, 7), -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(verify(&wrong_key, name, &m, n, 7), -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(verify(&ctx_a, "step_00000010/shard_00001_of_00002.bin", &m, n, 7),
	                 -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(verify(&ctx_a, "step_00000020/shard_00000_of_00002.bin", &m, n, 7),
	                 -ERR_DATA_AUTH_FAILED);
	crypt_object_ctx_clear(&other_job);
	crypt_object_ctx_clear(&other_tenant);
	crypt_object_ctx_clear(&wrong_key);
	free(m.p);
}
END_TEST

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/*
 * Read m in one call into a buffer of 4 chunks filled with 0xee. RET the
 * reader's code, OUT *got; the buffer goes to *out (caller frees).
 */
static int read_at_once(membuf *m, unsigned char **out, size_t *got)
{
	size_t cap = 4 * CRYPT_CHUNK;
	*out = malloc(cap);
	memset(*out, 0xee, cap);
	char err[512];
	crypt_object_reader *r;
	m->pos = 0;
	ck_assert_msg(
	    crypt_object_reader_open(&ctx_a, "obj", membuf_source, m, &r, err, sizeof(err)) == 0,
	    "%s", err);
	int rc = crypt_object_reader_read(r, *out, cap, got, err, sizeof(err));
	crypt_object_reader_free(r);
	return rc;
}

/*
 * A chunk decrypted straight into the caller's buffer counts only once its
 * tag verified: a tampered one fails, and its bytes there are zeros, not
 * the plaintext that decryption wrote before the tag was checked.
 */
START_TEST(object_tamper_into_caller_buffer)
{
	size_t n = 3 * CRYPT_CHUNK + 100;
	membuf m = seal(&ctx_a, "obj", n, 7);
	unsigned char *want = malloc(n), *out;
	pattern(want, n, 7);
	size_t c1 = CRYPT_HEADER_LEN + CHUNK_ON_DISK, got;
	size_t spots[] = {c1 + 4321, c1 + CRYPT_CHUNK + 3}; /* ciphertext, tag of chunk 1 */
	for (size_t i = 0; i < 2; i++) {
		m.p[spots[i]] ^= 0x01;
		ck_assert_int_eq(read_at_once(&m, &out, &got), -ERR_DATA_AUTH_FAILED);
		m.p[spots[i]] ^= 0x01;
		ck_assert_uint_eq(got, CRYPT_CHUNK); /* chunk 0 verified */
		ck_assert_mem_eq(out, want, CRYPT_CHUNK);
		ck_assert(all_zero(out + CRYPT_CHUNK, CHUNK_ON_DISK));
		ck_assert_uint_eq(out[2 * CRYPT_CHUNK + CRYPT_TAG_LEN], 0xee); /* not read */
		free(out);
	}
	ck_assert_int_eq(read_at_once(&m, &out, &got), 0);
	ck_assert_uint_eq(got, n);
	ck_assert_mem_eq(out, want, n);
	free(out);
	/* a final chunk that verifies, followed by a byte: its plaintext is wiped too */
	membuf longer = {.p = malloc(m.len + 1), .len = m.len + 1, .cap = m.len + 1};
	memcpy(longer.p, m.p, m.len);
	longer.p[m.len] = 0;
	ck_assert_int_eq(read_at_once(&longer, &out, &got), -ERR_DATA_AUTH_FAILED);
	ck_assert_uint_eq(got, 3 * CRYPT_CHUNK);
	ck_assert(all_zero(out + 3 * CRYPT_CHUNK, 100 + CRYPT_TAG_LEN));
	free(out);
	free(longer.p);
	free(m.p);
	free(want);
}
END_TEST

/* The membuf lending every other chunk's room to the writer (crypt_object_writer_lend). */
static void *lend_reserve(void *arg, size_t n)
{
	membuf *m = arg;
	static unsigned calls;
	if (calls++ % 2 == 1)
		return NULL; /* this chunk goes through the sink */
	if (m->len + n > m->cap) {
		m->cap = 2 * (m->len + n);
		m->p = realloc(m->p, m->cap);
	}
	return m->p + m->len;
}

static int lend_commit(void *arg, size_t n)
{
	((membuf *)arg)->len += n;
	return 0;
}

START_TEST(object_lent_sink)
{
	size_t n = 5 * CRYPT_CHUNK + 77;
	unsigned char *p = malloc(n);
	pattern(p, n, 3);
	membuf m = {0};
	char err[256];
	crypt_object_writer *w;
	ck_assert_int_eq(
	    crypt_object_writer_open(&ctx_a, "obj", membuf_grow_sink, &m, &w, err, sizeof(err)), 0);
	crypt_object_writer_lend(w, lend_reserve, lend_commit);
	/* whole chunks from the caller's data, and partial ones from the writer's buffer */
	ck_assert_int_eq(crypt_object_writer_write(w, p, 2 * CRYPT_CHUNK, err, sizeof(err)), 0);
	ck_assert_int_eq(crypt_object_writer_write(w, p + 2 * CRYPT_CHUNK, 10, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(crypt_object_writer_write(w, p + 2 * CRYPT_CHUNK + 10,
	                                           n - 2 * CRYPT_CHUNK - 10, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(crypt_object_writer_finish(w, err, sizeof(err)), 0);
	crypt_object_writer_free(w);
	ck_assert_uint_eq(m.len, CRYPT_HEADER_LEN + n + 6 * CRYPT_TAG_LEN);
	ck_assert_int_eq(verify(&ctx_a, "obj", &m, n, 3), 0);
	free(m.p);
	free(p);
}
END_TEST

START_TEST(object_misuse)
{
	membuf m = {0};
	char err[256];
	crypt_object_writer *w;
	ck_assert_int_eq(
	    crypt_object_writer_open(&ctx_a, "", membuf_grow_sink, &m, &w, err, sizeof(err)),
	    -ERR_INTERNAL);
	ck_assert_ptr_null(w);
	crypt_object_ctx bad;
	ck_assert_int_eq(crypt_object_ctx_init(&bad, "", JOB_A, &key_a), -ERR_INTERNAL);
	ck_assert_int_eq(
	    crypt_object_writer_open(&ctx_a, "x", membuf_grow_sink, &m, &w, err, sizeof(err)), 0);
	ck_assert_int_eq(crypt_object_writer_finish(w, err, sizeof(err)), 0);
	ck_assert_int_eq(crypt_object_writer_write(w, "a", 1, err, sizeof(err)), -ERR_INTERNAL);
	ck_assert_int_eq(crypt_object_writer_finish(w, err, sizeof(err)), -ERR_INTERNAL);
	crypt_object_writer_free(w);
	free(m.p);
}
END_TEST

/* A sink that fails on its third call: the writer reports it and stays failed. */
static int failing_sink(void *arg, const void *buf, size_t n)
{
	(void)buf;
	(void)n;
	return ++*(int *)arg >= 3 ? -ERR_STORAGE_IO : 0;
}

START_TEST(object_sink_failure)
{
	int calls = 0;
	char err[256];
	crypt_object_writer *w;
	ck_assert_int_eq(
	    crypt_object_writer_open(&ctx_a, "x", failing_sink, &calls, &w, err, sizeof(err)), 0);
	unsigned char *buf = calloc(1, 3 * CRYPT_CHUNK);
	errno = EIO;
	ck_assert_int_eq(crypt_object_writer_write(w, buf, 3 * CRYPT_CHUNK, err, sizeof(err)),
	                 -ERR_STORAGE_IO);
	ck_assert_int_eq(crypt_object_writer_finish(w, err, sizeof(err)), -ERR_STORAGE_IO);
	crypt_object_writer_free(w);
	free(buf);
}
END_TEST

/* The first generation's key of the version-1 vector below: 0x40, 0x41, ... 0x5f. */
static void vector_key(crypt_key *k)
{
	for (int i = 0; i < CRYPT_KEY_LEN; i++)
		k->bytes[i] = (unsigned char)(0x40 + i);
}

/*
 * "format one", sealed as object "v1" of tenant "t1", job "j1" by the
 * writer of format version 1 (before data keys had generations).
 */
static const char v1_object[] =
    "5459454301010000010060a5ab43ccbcd3d6b755662cef9062b59f029415a94d3b651e75d6069d62b8"
    "077772a8b10d3b6d91fa9f95cc61e3061cd535797b07b61080105a";

START_TEST(object_key_generations)
{
	crypt_key ring_keys[3] = {key_a, key_b};
	ck_assert_int_eq(crypt_key_generate(&ring_keys[2]), 0);
	crypt_object_ctx ring, two, copy;
	ck_assert_int_eq(crypt_object_ctx_init_ring(&ring, TENANT_A, JOB_A, ring_keys, 3), 0);
	ck_assert_int_eq(crypt_object_ctx_init_ring(&two, TENANT_A, JOB_A, ring_keys, 2), 0);
	ck_assert_uint_eq(ring.generations, 3);
	ck_assert_mem_eq(crypt_object_ctx_key(&ring, 3)->bytes, ring_keys[2].bytes, CRYPT_KEY_LEN);
	ck_assert_ptr_null(crypt_object_ctx_key(&ring, 0));
	ck_assert_ptr_null(crypt_object_ctx_key(&ring, 4));

	/* the newest generation seals, and the header says which */
	size_t n = CRYPT_CHUNK + 10;
	membuf old = seal(&ctx_a, "obj", n, 3), neu = seal(&ring, "obj", n, 3);
	ck_assert_mem_eq(neu.p + 10, "\x03\x00\x00\x00", 4);
	/* the ring opens what every generation sealed */
	ck_assert_int_eq(verify(&ring, "obj", &old, n, 3), 0);
	ck_assert_int_eq(verify(&ring, "obj", &neu, n, 3), 0);
	/* a ring without the generation refuses it, before any byte */
	ck_assert_int_eq(verify(&two, "obj", &neu, n, 3), -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(verify(&ctx_a, "obj", &neu, n, 3), -ERR_DATA_AUTH_FAILED);
	char err[512];
	unsigned char *out;
	size_t got;
	ck_assert_int_eq(open_all(&ctx_a, "obj", &neu, 9999, &out, &got, err, sizeof(err)),
	                 -ERR_DATA_AUTH_FAILED);
	free(out);
	ck_assert_msg(strstr(err, "generation 3") != NULL, "%s", err);
	/* the generation is part of the salt: another one derives another key */
	for (unsigned char g = 0; g < 6; g++) {
		if (g == 3)
			continue;
		neu.p[10] = g;
		ck_assert_int_eq(verify(&ring, "obj", &neu, n, 3), -ERR_DATA_AUTH_FAILED);
	}
	neu.p[10] = 3;

	/* a copy holds keys of its own */
	ck_assert_int_eq(crypt_object_ctx_copy(&copy, &ring), 0);
	crypt_object_ctx_clear(&ring);
	ck_assert_ptr_null(ring.keys);
	ck_assert_int_eq(verify(&copy, "obj", &neu, n, 3), 0);

	/* format version 1 is read as generation 1 */
	membuf v1 = {0};
	v1.len = strlen(v1_object) / 2;
	v1.p = malloc(v1.len);
	ck_assert(hex_decode(v1_object, strlen(v1_object), v1.p, v1.len));
	crypt_key vk[2];
	vector_key(&vk[0]);
	ck_assert_int_eq(crypt_key_generate(&vk[1]), 0);
	crypt_object_ctx vring;
	ck_assert_int_eq(crypt_object_ctx_init_ring(&vring, "t1", "j1", vk, 2), 0);
	ck_assert_int_eq(open_all(&vring, "v1", &v1, 9999, &out, &got, err, sizeof(err)), 0);
	ck_assert_uint_eq(got, 10);
	ck_assert_mem_eq(out, "format one", 10);
	free(out);
	/* a version this reader does not know */
	v1.p[4] = 3;
	ck_assert_int_eq(open_all(&vring, "v1", &v1, 9999, &out, &got, err, sizeof(err)),
	                 -ERR_DATA_AUTH_FAILED);
	free(out);
	free(v1.p);
	crypt_object_ctx_clear(&vring);
	crypt_object_ctx_clear(&two);
	crypt_object_ctx_clear(&copy);
	free(old.p);
	free(neu.p);
}
END_TEST

START_TEST(object_ring_text)
{
	crypt_key k[3] = {key_a, key_b};
	ck_assert_int_eq(crypt_key_generate(&k[2]), 0);
	crypt_object_ctx ring, back;
	ck_assert_int_eq(crypt_object_ctx_init_ring(&ring, TENANT_A, JOB_A, k, 3), 0);
	char *text = crypt_object_ctx_text(&ring);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(strlen(text), 3 * 64 + 2);
	ck_assert_int_eq(text[64], ',');
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, text), 0);
	ck_assert_uint_eq(back.generations, 3);
	ck_assert_mem_eq(back.keys, k, sizeof(k));
	crypt_object_ctx_clear(&back);
	/* one key alone is a ring of one: the form of a single data key */
	text[64] = '\0';
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, text), 0);
	ck_assert_uint_eq(back.generations, 1);
	ck_assert_mem_eq(back.keys[0].bytes, key_a.bytes, CRYPT_KEY_LEN);
	crypt_object_ctx_clear(&back);
	text[64] = ',';
	/* malformed: nothing is kept */
	char bad[400];
	const char *cases[] = {"", ",", "abc"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, cases[i]),
		                 -ERR_INTERNAL);
		ck_assert_ptr_null(back.keys);
	}
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, NULL), -ERR_INTERNAL);
	snprintf(bad, sizeof(bad), "%.64s,", text); /* a trailing comma */
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, bad), -ERR_INTERNAL);
	snprintf(bad, sizeof(bad), "%.64s;%.64s", text, text + 65); /* another separator */
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, bad), -ERR_INTERNAL);
	snprintf(bad, sizeof(bad), "%.64s,%.63sg", text, text + 65); /* not hex */
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, bad), -ERR_INTERNAL);
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, "", JOB_A, text), -ERR_INTERNAL);
	/* more generations than a ring holds */
	size_t over = (size_t)(CRYPT_GENERATIONS_MAX + 1) * 65;
	char *big = malloc(over);
	for (size_t i = 0; i < CRYPT_GENERATIONS_MAX + 1; i++) {
		memcpy(big + i * 65, text, 64);
		big[i * 65 + 64] = ',';
	}
	big[over - 1] = '\0';
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, big), -ERR_INTERNAL);
	big[over - 1 - 65] = '\0'; /* exactly CRYPT_GENERATIONS_MAX */
	ck_assert_int_eq(crypt_object_ctx_init_text(&back, TENANT_A, JOB_A, big), 0);
	ck_assert_uint_eq(back.generations, CRYPT_GENERATIONS_MAX);
	crypt_object_ctx_clear(&back);
	free(big);
	free(text);
	crypt_object_ctx_clear(&ring);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("crypt");
	TCase *keys = tcase_create("keys");
	tcase_add_checked_fixture(keys, setup, teardown);
	tcase_add_test(keys, keys_and_hex);
	tcase_add_test(keys, wrap_round_trip_and_tamper);
	tcase_add_test(keys, master_key_file_permissions);
	tcase_add_test(keys, master_key_from_environment);
	tcase_add_test(keys, master_key_ids);
	tcase_add_test(keys, master_key_previous_from_config);
	tcase_add_test(keys, master_rotation_rewrap);
	suite_add_tcase(s, keys);
	TCase *obj = tcase_create("objects");
	tcase_add_checked_fixture(obj, setup, teardown);
	tcase_set_timeout(obj, 60);
	tcase_add_test(obj, object_round_trip);
	tcase_add_test(obj, object_bit_flips);
	tcase_add_test(obj, object_truncation);
	tcase_add_test(obj, object_reorder);
	tcase_add_test(obj, object_swaps_and_wrong_key);
	tcase_add_test(obj, object_tamper_into_caller_buffer);
	tcase_add_test(obj, object_lent_sink);
	tcase_add_test(obj, object_misuse);
	tcase_add_test(obj, object_sink_failure);
	tcase_add_test(obj, object_key_generations);
	tcase_add_test(obj, object_ring_text);
	suite_add_tcase(s, obj);
	return s;
}

UNIT_MAIN()
