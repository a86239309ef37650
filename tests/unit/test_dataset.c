/*
 * test_dataset.c - datasets on disk (lib/data/dataset.h): names and references;
 * a version written as text and as token shards fed in pieces of every
 * size, unsealed back to the same tokens with the right headers; shard
 * uploads that are not shards or are cut short; a version that is never
 * finished leaves nothing; and a shard altered, moved to another version,
 * or read with another key, or a version with the wrong hash, fails; a
 * version copied, as sealed, into a grantee's tree unseals from there, and
 * a shard that is a link is not copied. The sealed size the writer counts
 * is the shards' bytes on disk.
 */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "error.h"
#include "unit.h"

#define TENANT  "0b9e0c52-0000-4000-8000-0000000000a1"
#define DATASET "0b9e0c52-0000-4000-8000-0000000000d1"
#define VERSION "0b9e0c52-0000-4000-8000-0000000000e1"
#define OTHER_V "0b9e0c52-0000-4000-8000-0000000000e2"

static char root[256], out[300];
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
	snprintf(root, sizeof(root), "/tmp/ty-dataset-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(out, sizeof(out), "%s/out", root);
	ck_assert_int_eq(mkdir(out, 0700), 0);
	crypt_key k;
	ck_assert_int_eq(crypt_key_generate(&k), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&ctx, TENANT, DATASET, &k), 0);
	crypt_key_clear(&k);
}

static void teardown(void)
{
	crypt_object_ctx_clear(&ctx);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

START_TEST(names_and_refs)
{
	ck_assert(dataset_name_valid("owt"));
	ck_assert(dataset_name_valid("9a.b_c-d"));
	ck_assert(!dataset_name_valid(""));
	ck_assert(!dataset_name_valid("-x"));
	ck_assert(!dataset_name_valid("Owt"));
	ck_assert(!dataset_name_valid("a/b"));
	ck_assert(!dataset_name_valid("a@1"));
	char big[80];
	memset(big, 'a', 64);
	big[64] = '\0';
	ck_assert(!dataset_name_valid(big));
	big[63] = '\0';
	ck_assert(dataset_name_valid(big));

	char owner[DATASET_TENANT_MAX + 1], name[DATASET_NAME_MAX + 1], why[160];
	int v = -1;
	ck_assert_int_eq(dataset_ref_parse("owt", owner, name, &v, why, sizeof(why)), 0);
	ck_assert_str_eq(name, "owt");
	ck_assert_str_eq(owner, "");
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(dataset_ref_parse("owt@12", owner, name, &v, why, sizeof(why)), 0);
	ck_assert_int_eq(v, 12);
	ck_assert_int_eq(dataset_ref_parse("team-b/owt@3", owner, name, &v, why, sizeof(why)), 0);
	ck_assert_str_eq(owner, "team-b");
	ck_assert_str_eq(name, "owt");
	ck_assert_int_eq(v, 3);
	static const char *const bad[] = {"owt@", "owt@0", "owt@01", "owt@-1",         "owt@1x",
	                                  "@3",   "O@1",   "a@1@2",  "/owt",           "Team/owt",
	                                  "t/",   "a/b/c", "9t/owt", "owt@99999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(dataset_ref_parse(bad[i], owner, name, &v, why, sizeof(why)) < 0 &&
		                  why[0],
		              "%s was accepted", bad[i]);
}
END_TEST

/* The shard file out/shard_<i>.bin: its header's count and its tokens. OUT *n. */
static uint16_t *read_shard(int i, uint32_t *n)
{
	char p[400], why[128];
	snprintf(p, sizeof(p), "%s/shard_%06d.bin", out, i);
	FILE *f = fopen(p, "rb");
	ck_assert_ptr_nonnull(f);
	unsigned char h[TOKSHARD_HEADER_BYTES];
	ck_assert_uint_eq(fread(h, 1, sizeof(h), f), sizeof(h));
	ck_assert_int_eq(tokshard_header_decode(h, n, why, sizeof(why)), 0);
	uint16_t *t = malloc(2 * (size_t)*n + 2);
	unsigned char *b = malloc(2 * (size_t)*n + 2);
	ck_assert_uint_eq(fread(b, 1, 2 * (size_t)*n + 1, f), 2 * (size_t)*n);
	for (uint32_t k = 0; k < *n; k++)
		t[k] = (uint16_t)(b[2 * k] | b[2 * k + 1] << 8);
	free(b);
	fclose(f);
	return t;
}

START_TEST(text_round_trip)
{
	dataset_writer *w;
	char err[512] = "";
	ck_assert_int_eq(
	    dataset_writer_open(root, &self, &ctx, VERSION, 1000, &w, err, sizeof(err)), 0);
	char text[2500];
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)('a' + i % 26);
	text[7] = (char)0xff;
	ck_assert_int_eq(dataset_writer_text(w, text, 1200, err, sizeof(err)), 0);
	ck_assert_int_eq(dataset_writer_text(w, text + 1200, 1300, err, sizeof(err)), 0);
	dataset_summary s;
	ck_assert_int_eq(dataset_writer_finish(w, &s, err, sizeof(err)), 0);
	dataset_writer_free(w, true);
	ck_assert_int_eq(s.shards, 3);
	ck_assert_uint_eq(s.tokens, 2500);
	ck_assert_uint_eq(s.max_token, 0xff);
	char dir[512];
	ck_assert_int_eq(dataset_version_dir(root, TENANT, DATASET, VERSION, dir, sizeof(dir)), 0);
	struct stat st;
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	uint64_t tokens = 0;
	ck_assert_int_eq(
	    dataset_unseal(root, &ctx, VERSION, s.shards, s.sha256, out, &tokens, err, sizeof(err)),
	    0);
	ck_assert_uint_eq(tokens, 2500);
	size_t at = 0;
	for (int i = 0; i < 3; i++) {
		uint32_t n;
		uint16_t *t = read_shard(i, &n);
		ck_assert_uint_eq(n, i < 2 ? 1000 : 500);
		for (uint32_t k = 0; k < n; k++, at++)
			ck_assert_uint_eq(t[k], (unsigned char)text[at]);
		free(t);
	}
}
END_TEST

/*
 * The sealed size the writer counts, which the tenant's storage quota is
 * held to: 50,000 tokens in shards of 40,000 are shards of 80,000 and
 * 20,000 bytes, each a 42-byte header, its bytes and a 16-byte tag per
 * 64 KiB chunk begun (docs/storage.md): 80,074 and 20,058 bytes.
 */
START_TEST(sealed_bytes_counted)
{
	dataset_writer *w;
	char err[512] = "";
	ck_assert_int_eq(
	    dataset_writer_open(root, &self, &ctx, VERSION, 40000, &w, err, sizeof(err)), 0);
	static char text[25000];
	memset(text, 'q', sizeof(text));
	ck_assert_uint_eq(dataset_writer_sealed_bytes(w), 0);
	ck_assert_int_eq(dataset_writer_text(w, text, sizeof(text), err, sizeof(err)), 0);
	ck_assert_uint_eq(dataset_writer_sealed_bytes(w), 42 + 50000 + 16);
	ck_assert_int_eq(dataset_writer_text(w, text, sizeof(text), err, sizeof(err)), 0);
	ck_assert_uint_eq(dataset_writer_sealed_bytes(w), 80074 + 42 + 20000 + 16);
	dataset_summary s;
	ck_assert_int_eq(dataset_writer_finish(w, &s, err, sizeof(err)), 0);
	dataset_writer_free(w, true);
	ck_assert_int_eq(s.shards, 2);
	ck_assert_uint_eq(s.sealed_bytes, 80074 + 20058);
	char dir[512], p[600];
	ck_assert_int_eq(dataset_version_dir(root, TENANT, DATASET, VERSION, dir, sizeof(dir)), 0);
	uint64_t on_disk = 0;
	for (int i = 0; i < 2; i++) {
		struct stat st;
		snprintf(p, sizeof(p), "%s/shard_%06d.bin", dir, i);
		ck_assert_int_eq(stat(p, &st), 0);
		on_disk += (uint64_t)st.st_size;
	}
	ck_assert_uint_eq(on_disk, s.sealed_bytes);
}
END_TEST

/* Two token shards laid end to end, as an upload carries them. OUT *len. */
static unsigned char *two_shards(size_t *len)
{
	static const uint32_t counts[2] = {300, 5};
	*len = 2 * TOKSHARD_HEADER_BYTES + 2 * (counts[0] + counts[1]);
	unsigned char *b = malloc(*len), *p = b;
	for (int s = 0; s < 2; s++) {
		tokshard_header_encode(p, counts[s]);
		p += TOKSHARD_HEADER_BYTES;
		for (uint32_t k = 0; k < counts[s]; k++) {
			uint16_t t = (uint16_t)(k * 7u + (unsigned)s * 40000u);
			*p++ = (unsigned char)t;
			*p++ = (unsigned char)(t >> 8);
		}
	}
	return b;
}

START_TEST(shards_in_pieces)
{
	size_t len;
	unsigned char *body = two_shards(&len);
	static const size_t pieces[] = {1, 3, 1023, 1024, 1025, 4096};
	for (size_t pi = 0; pi < sizeof(pieces) / sizeof(pieces[0]); pi++) {
		char v[40], err[512] = "";
		snprintf(v, sizeof(v), "0b9e0c52-0000-4000-8000-%012zu", pi);
		dataset_writer *w;
		dataset_shard_parser p = {0};
		ck_assert_int_eq(
		    dataset_writer_open(root, &self, &ctx, v, 1u << 20, &w, err, sizeof(err)), 0);
		for (size_t at = 0; at < len; at += pieces[pi]) {
			size_t n = len - at < pieces[pi] ? len - at : pieces[pi];
			ck_assert_int_eq(dataset_shards_feed(&p, w, body + at, n, err, sizeof(err)),
			                 0);
		}
		ck_assert_int_eq(dataset_shards_end(&p, err, sizeof(err)), 0);
		dataset_summary s;
		ck_assert_int_eq(dataset_writer_finish(w, &s, err, sizeof(err)), 0);
		dataset_writer_free(w, true);
		ck_assert_int_eq(s.shards, 2);
		ck_assert_uint_eq(s.tokens, 305);
		ck_assert_uint_eq(s.max_token, 40000u + 4u * 7u);
		ck_assert_int_eq(
		    dataset_unseal(root, &ctx, v, 2, s.sha256, out, NULL, err, sizeof(err)), 0);
		uint32_t n;
		uint16_t *t = read_shard(1, &n);
		ck_assert_uint_eq(n, 5);
		ck_assert_uint_eq(t[4], 4 * 7 + 40000);
		free(t);
	}
	free(body);
}
END_TEST

/* Feed body[0..len) as one upload. RET the first failure's code, or 0. */
static int feed_all(const unsigned char *body, size_t len, char *err, size_t errlen)
{
	dataset_writer *w;
	dataset_shard_parser p = {0};
	ck_assert_int_eq(dataset_writer_open(root, &self, &ctx, OTHER_V, 1u << 20, &w, err, errlen),
	                 0);
	int rc = dataset_shards_feed(&p, w, body, len, err, errlen);
	if (rc == 0)
		rc = dataset_shards_end(&p, err, errlen);
	dataset_writer_free(w, false);
	return rc;
}

START_TEST(not_shards)
{
	size_t len;
	unsigned char *body = two_shards(&len);
	char err[512] = "";
	ck_assert_int_eq(feed_all(body, len - 1, err, sizeof(err)), -ERR_DATASET_NOT_SHARDS);
	ck_assert_msg(strstr(err, "shard 2 of the upload") && strstr(err, "cut short"), "%s", err);
	ck_assert_int_eq(feed_all(body, TOKSHARD_HEADER_BYTES + 600 + 100, err, sizeof(err)),
	                 -ERR_DATASET_NOT_SHARDS);
	ck_assert_msg(strstr(err, "inside its header"), "%s", err);
	body[0] ^= 1;
	ck_assert_int_eq(feed_all(body, len, err, sizeof(err)), -ERR_DATASET_NOT_SHARDS);
	ck_assert_msg(strstr(err, "shard 1 of the upload: magic"), "%s", err);
	body[0] ^= 1;
	tokshard_header_encode(body, 0);
	ck_assert_int_eq(feed_all(body, len, err, sizeof(err)), -ERR_DATASET_NOT_SHARDS);
	ck_assert_msg(strstr(err, "no token"), "%s", err);
	free(body);
	/* an unfinished version, and a finished one never registered, leave no directory */
	char dir[512];
	ck_assert_int_eq(dataset_version_dir(root, TENANT, DATASET, OTHER_V, dir, sizeof(dir)), 0);
	ck_assert_int_ne(access(dir, F_OK), 0);
	char partial[600];
	snprintf(partial, sizeof(partial), "%s.partial", dir);
	ck_assert_int_ne(access(partial, F_OK), 0);
	dataset_writer *w;
	ck_assert_int_eq(dataset_writer_open(root, &self, &ctx, OTHER_V, 100, &w, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(dataset_writer_text(w, "abc", 3, err, sizeof(err)), 0);
	dataset_summary s;
	ck_assert_int_eq(dataset_writer_finish(w, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(access(dir, F_OK), 0);
	dataset_writer_free(w, false);
	ck_assert_int_ne(access(dir, F_OK), 0);
	/* and nothing at all is no version */
	ck_assert_int_eq(dataset_writer_open(root, &self, &ctx, OTHER_V, 100, &w, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(dataset_writer_finish(w, &s, err, sizeof(err)), -ERR_DATASET_EMPTY);
	dataset_writer_free(w, false);
	ck_assert_int_ne(access(partial, F_OK), 0);
}
END_TEST

/* Write VERSION as 2 shards of text. OUT *s. */
static void write_version(dataset_summary *s)
{
	dataset_writer *w;
	char err[512] = "";
	ck_assert_int_eq(dataset_writer_open(root, &self, &ctx, VERSION, 100, &w, err, sizeof(err)),
	                 0);
	char text[150];
	memset(text, 'x', sizeof(text));
	ck_assert_int_eq(dataset_writer_text(w, text, sizeof(text), err, sizeof(err)), 0);
	ck_assert_int_eq(dataset_writer_finish(w, s, err, sizeof(err)), 0);
	dataset_writer_free(w, true);
}

START_TEST(tampering_fails)
{
	dataset_summary s;
	write_version(&s);
	char dir[512], p[600], q[600], err[512] = "";
	ck_assert_int_eq(dataset_version_dir(root, TENANT, DATASET, VERSION, dir, sizeof(dir)), 0);
	snprintf(p, sizeof(p), "%s/shard_000001.bin", dir);
	/* a flipped byte in the second shard */
	FILE *f = fopen(p, "r+b");
	ck_assert_ptr_nonnull(f);
	fseek(f, 60, SEEK_SET);
	int c = fgetc(f);
	fseek(f, 60, SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
	ck_assert_int_eq(
	    dataset_unseal(root, &ctx, VERSION, 2, s.sha256, out, NULL, err, sizeof(err)),
	    -ERR_DATA_AUTH_FAILED);
	char left[400];
	snprintf(left, sizeof(left), "%s/shard_000001.bin", out);
	ck_assert_msg(access(left, F_OK) != 0, "a shard that failed was left for the trainer");
	/* restored, the same bytes under another version's name */
	f = fopen(p, "r+b");
	fseek(f, 60, SEEK_SET);
	fputc(c, f);
	fclose(f);
	ck_assert_int_eq(
	    dataset_unseal(root, &ctx, VERSION, 2, s.sha256, out, NULL, err, sizeof(err)), 0);
	char odir[512];
	ck_assert_int_eq(dataset_version_dir(root, TENANT, DATASET, OTHER_V, odir, sizeof(odir)),
	                 0);
	ck_assert_int_eq(rename(dir, odir), 0);
	ck_assert_int_eq(
	    dataset_unseal(root, &ctx, OTHER_V, 2, s.sha256, out, NULL, err, sizeof(err)),
	    -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(rename(odir, dir), 0);
	/* the shards swapped */
	snprintf(q, sizeof(q), "%s/shard_000000.bin", dir);
	char t[600];
	snprintf(t, sizeof(t), "%s/tmp", dir);
	ck_assert_int_eq(rename(p, t) | rename(q, p) | rename(t, q), 0);
	ck_assert_int_eq(
	    dataset_unseal(root, &ctx, VERSION, 2, s.sha256, out, NULL, err, sizeof(err)),
	    -ERR_DATA_AUTH_FAILED);
	ck_assert_int_eq(rename(p, t) | rename(q, p) | rename(t, q), 0);
	/* another key */
	crypt_object_ctx other;
	crypt_key k;
	ck_assert_int_eq(crypt_key_generate(&k), 0);
	ck_assert_int_eq(crypt_object_ctx_init(&other, TENANT, DATASET, &k), 0);
	crypt_key_clear(&k);
	ck_assert_int_eq(
	    dataset_unseal(root, &other, VERSION, 2, s.sha256, out, NULL, err, sizeof(err)),
	    -ERR_DATA_AUTH_FAILED);
	crypt_object_ctx_clear(&other);
	/* the hash the database holds differs */
	unsigned char wrong[32];
	memcpy(wrong, s.sha256, 32);
	wrong[31] ^= 1;
	ck_assert_int_eq(dataset_unseal(root, &ctx, VERSION, 2, wrong, out, NULL, err, sizeof(err)),
	                 -ERR_DATA_AUTH_FAILED);
	ck_assert_msg(strstr(err, "SHA-256"), "%s", err);
	/* a shard left out */
	ck_assert_int_eq(unlink(q), 0);
	ck_assert_int_eq(
	    dataset_unseal(root, &ctx, VERSION, 2, s.sha256, out, NULL, err, sizeof(err)),
	    -ERR_STORAGE_IO);
}
END_TEST

static bool only_version(void *arg, const char *id)
{
	(void)arg;
	return strcmp(id, VERSION) == 0;
}

/* Set dir's times back by ago seconds. */
static void age(const char *dir, double ago)
{
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= (time_t)ago;
	t[1] = t[0];
	ck_assert_int_eq(utimensat(AT_FDCWD, dir, t, 0), 0);
}

START_TEST(sweep_leftovers)
{
	dataset_summary s;
	write_version(&s); /* VERSION, registered */
	char dir[512], orphan[512], partial[600], fresh[600], other[512];
	ck_assert_int_eq(dataset_version_dir(root, TENANT, DATASET, VERSION, dir, sizeof(dir)), 0);
	ck_assert_int_eq(
	    dataset_version_dir(root, TENANT, DATASET, OTHER_V, orphan, sizeof(orphan)), 0);
	ck_assert_int_eq(dataset_version_dir(root, TENANT, DATASET,
	                                     "0b9e0c52-0000-4000-8000-0000000000e3", other,
	                                     sizeof(other)),
	                 0);
	snprintf(partial, sizeof(partial), "%s.partial", other);
	snprintf(fresh, sizeof(fresh), "%s.partial", orphan);
	ck_assert_int_eq(mkdir(orphan, 0700) | mkdir(partial, 0700) | mkdir(fresh, 0700), 0);
	char shard[700];
	snprintf(shard, sizeof(shard), "%s/shard_000000.bin", partial);
	FILE *f = fopen(shard, "wb");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	age(dir, 7200);
	age(orphan, 7200);
	age(partial, 7200);
	int removed = -1;
	ck_assert_int_eq(dataset_sweep(root, TENANT, DATASET, only_version, NULL, 3600, &removed),
	                 0);
	ck_assert_int_eq(removed, 2);
	ck_assert_msg(access(dir, F_OK) == 0, "a registered version was removed");
	ck_assert_msg(access(orphan, F_OK) != 0, "a version no row names was kept");
	ck_assert_msg(access(partial, F_OK) != 0, "an old partial upload was kept");
	ck_assert_msg(access(fresh, F_OK) == 0, "an upload under way was removed");
	/* a dataset without a directory yet */
	ck_assert_int_eq(dataset_sweep(root, TENANT, "0b9e0c52-0000-4000-8000-0000000000d9",
	                               only_version, NULL, 3600, &removed),
	                 0);
	ck_assert_int_eq(removed, 0);
}
END_TEST

#define GRANTEE "0b9e0c52-0000-4000-8000-0000000000a2"

START_TEST(stage_for_a_grantee)
{
	dataset_summary s;
	write_version(&s);
	char err[512] = "", dir[512], src[512], p[600];
	ck_assert_msg(dataset_stage(root, TENANT, DATASET, VERSION, s.shards, GRANTEE, &self, err,
	                            sizeof(err)) == 0,
	              "%s", err);
	ck_assert_int_eq(dataset_granted_dir(root, GRANTEE, DATASET, VERSION, dir, sizeof(dir)), 0);
	struct stat st;
	ck_assert_int_eq(lstat(dir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	uint64_t tokens = 0;
	ck_assert_msg(dataset_unseal_dir(dir, &ctx, VERSION, s.shards, s.sha256, out, &tokens, err,
	                                 sizeof(err)) == 0,
	              "%s", err);
	ck_assert_uint_eq(tokens, 150);
	/* a copy made before is kept */
	ck_assert_int_eq(dataset_stage(root, TENANT, DATASET, VERSION, s.shards, GRANTEE, &self,
	                               err, sizeof(err)),
	                 0);
	/* a shard of the owner's that is a link is not followed: nothing is copied */
	ck_assert_int_eq(dataset_version_dir(root, TENANT, DATASET, VERSION, src, sizeof(src)), 0);
	snprintf(p, sizeof(p), "%s/shard_000001.bin", src);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(symlink("/etc/passwd", p), 0);
	const char *other = "0b9e0c52-0000-4000-8000-0000000000a3";
	ck_assert_int_eq(
	    dataset_stage(root, TENANT, DATASET, VERSION, s.shards, other, &self, err, sizeof(err)),
	    -ERR_STORAGE_IO);
	ck_assert_msg(strstr(err, "symbolic link"), "%s", err);
	ck_assert_int_eq(dataset_granted_dir(root, other, DATASET, VERSION, dir, sizeof(dir)), 0);
	ck_assert_int_eq(lstat(dir, &st), -1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("dataset");
	TCase *tc = tcase_create("names");
	tcase_add_test(tc, names_and_refs);
	suite_add_tcase(s, tc);
	tc = tcase_create("versions");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, text_round_trip);
	tcase_add_test(tc, sealed_bytes_counted);
	tcase_add_test(tc, shards_in_pieces);
	tcase_add_test(tc, not_shards);
	tcase_add_test(tc, tampering_fails);
	tcase_add_test(tc, sweep_leftovers);
	tcase_add_test(tc, stage_for_a_grantee);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
