/*
 * tool_seal.c - writes a job's encrypted files the way the worker runtime
 * and the trainer do, for the integration tests of the read routes
 * (storage_flow.sh). The job's data key ring (the "keys" of the API's
 * answer: 64-hex-digit keys, oldest first, comma-separated; the last
 * seals) is read from stdin, never from the command line.
 *
 *   tool_seal log ROOT TENANT JOB ATTEMPT FIRST COUNT open|close
 *       append COUNT records "attempt ATTEMPT line I" (I = FIRST...) to the
 *       attempt's sealed log, then leave it open or close it
 *   tool_seal lines ROOT TENANT JOB ATTEMPT open|close
 *       append each further line of stdin (after the key ring) as one record,
 *       as the runtime does with the trainer's output; then leave the log
 *       open or close it
 *   tool_seal checkpoint ROOT TENANT JOB STEP BYTES
 *       write step STEP's only shard (BYTES bytes) and its manifest through
 *       the encrypted checkpoint store; print "<bytes> <sha256>" of the shard
 *
 * Started as root, it writes as the tenant's Unix user, like the worker
 * runtime (identity_become_tenant). Exit status 0, or 1 with the reason on
 * stderr.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypt.h"
#include "identity.h"
#include "storage.h"
#include "ckpt_store.h"

#define SHARD_NAME "shard_00000_of_00001.bin"

static int fail(const char *what, const char *err)
{
	fprintf(stderr, "tool_seal: %s: %s\n", what, err);
	return 1;
}

static int read_ctx(const char *tenant, const char *job, crypt_object_ctx *ctx)
{
	static char text[CRYPT_GENERATIONS_MAX * (2 * CRYPT_KEY_LEN + 1) + 2];
	if (!fgets(text, sizeof(text), stdin))
		return fail("stdin", "no data key");
	text[strcspn(text, "\n")] = '\0';
	int rc = crypt_object_ctx_init_text(ctx, tenant, job, text);
	OPENSSL_cleanse(text, sizeof(text));
	return rc ? fail("stdin", "not a key ring of 64-hex-digit keys, or bad ids") : 0;
}

/* Open the attempt's sealed log for appending, as the tenant's Unix user. */
static int open_log(char **argv, const crypt_object_ctx *ctx, crypt_log_writer **w, char *path,
                    size_t path_len)
{
	const char *root = argv[2], *tenant = argv[3], *job = argv[4];
	int attempt = atoi(argv[5]);
	char name[32], err[512];
	if (identity_become_tenant(root, tenant, err, sizeof(err)) < 0)
		return fail("identity", err);
	if (storage_job_prepare(root, tenant, job, err, sizeof(err)) < 0)
		return fail("storage", err);
	if (storage_log_name(attempt, name, sizeof(name)) < 0 ||
	    storage_object_path(root, tenant, job, STORAGE_LOGS, name, path, path_len) < 0)
		return fail("log path", "invalid");
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (crypt_log_writer_open(fd, path, ctx, name, w, err, sizeof(err)) < 0)
		return fail(path, err);
	return 0;
}

/* Close the log, or leave it open with its records on disk. */
static int finish_log(crypt_log_writer *w, const char *path, bool close_it)
{
	char err[512];
	if (close_it)
		return crypt_log_writer_close(w, err, sizeof(err)) < 0 ? fail(path, err) : 0;
	int rc = crypt_log_sync(w, err, sizeof(err));
	crypt_log_writer_free(w);
	return rc < 0 ? fail(path, err) : 0;
}

static int write_log(char **argv, const crypt_object_ctx *ctx)
{
	int attempt = atoi(argv[5]), first = atoi(argv[6]), count = atoi(argv[7]);
	char path[4096], err[512];
	crypt_log_writer *w;
	if (open_log(argv, ctx, &w, path, sizeof(path)))
		return 1;
	for (int i = first; i < first + count; i++) {
		char line[64];
		int n = snprintf(line, sizeof(line), "attempt %d line %d", attempt, i);
		if (crypt_log_append(w, line, (size_t)n, err, sizeof(err)) < 0) {
			crypt_log_writer_free(w);
			return fail(path, err);
		}
	}
	return finish_log(w, path, strcmp(argv[8], "close") == 0);
}

/* Each further line of stdin as one record: the trainer's own lines. */
static int write_lines(char **argv, const crypt_object_ctx *ctx)
{
	char path[4096], err[512], line[4096];
	crypt_log_writer *w;
	if (open_log(argv, ctx, &w, path, sizeof(path)))
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		size_t n = strcspn(line, "\n");
		if (crypt_log_append(w, line, n, err, sizeof(err)) < 0) {
			crypt_log_writer_free(w);
			return fail(path, err);
		}
	}
	return finish_log(w, path, strcmp(argv[6], "close") == 0);
}

/* Commit one file of the store. */
static int put(ckpt_store *s, const char *name, const void *buf, size_t n)
{
	char err[512];
	ckpt_stream *f;
	if (ckpt_store_open_write(s, name, &f, err, sizeof(err)) < 0)
		return fail(name, err);
	if (ckpt_stream_write(f, buf, n, err, sizeof(err)) < 0) {
		ckpt_stream_abort(f);
		return fail(name, err);
	}
	return ckpt_stream_commit(f, err, sizeof(err)) < 0 ? fail(name, err) : 0;
}

static void sha256_hex(const unsigned char *buf, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned len = 0;
	EVP_Digest(buf, n, md, &len, EVP_sha256(), NULL);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static int write_checkpoint(char **argv, const crypt_object_ctx *ctx)
{
	const char *root = argv[2], *tenant = argv[3], *job = argv[4];
	int step = atoi(argv[5]);
	size_t bytes = strtoul(argv[6], NULL, 10);
	char dir[4096], err[512], step_dir[32], name[128], sha[65];
	if (identity_become_tenant(root, tenant, err, sizeof(err)) < 0)
		return fail("identity", err);
	if (storage_job_prepare(root, tenant, job, err, sizeof(err)) < 0)
		return fail("storage", err);
	if (storage_area_dir(root, tenant, job, STORAGE_CHECKPOINTS, dir, sizeof(dir)) < 0)
		return fail("checkpoint area", "invalid");
	ckpt_store *s = ckpt_store_encrypted(dir, ctx);
	unsigned char *shard = malloc(bytes ? bytes : 1);
	if (!s || !shard)
		return fail("checkpoint", "out of memory");
	uint32_t x = 2463534242u; /* xorshift: bytes that do not compress */
	for (size_t i = 0; i < bytes; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		shard[i] = (unsigned char)x;
	}
	sha256_hex(shard, bytes, sha);
	snprintf(step_dir, sizeof(step_dir), "step_%08d", step);
	int rc = ckpt_store_mkdir(s, step_dir, err, sizeof(err)) < 0 ? fail(step_dir, err) : 0;
	snprintf(name, sizeof(name), "%s/" SHARD_NAME, step_dir);
	if (rc == 0)
		rc = put(s, name, shard, bytes);
	char manifest[512];
	int n =
	    snprintf(manifest, sizeof(manifest),
	             "{\"magic\":\"trainyard-checkpoint\",\"version\":1,\"step\":%d,\"world\":1,"
	             "\"shards\":[{\"name\":\"" SHARD_NAME "\",\"bytes\":%zu,\"sha256\":\"%s\"}]}",
	             step, bytes, sha);
	snprintf(name, sizeof(name), "%s/manifest.json", step_dir);
	if (rc == 0)
		rc = put(s, name, manifest, (size_t)n);
	if (rc == 0)
		printf("%zu %s\n", bytes, sha);
	free(shard);
	ckpt_store_free(s);
	return rc;
}

int main(int argc, char **argv)
{
	bool log = argc == 9 && strcmp(argv[1], "log") == 0;
	bool lines = argc == 7 && strcmp(argv[1], "lines") == 0;
	bool ckpt = argc == 7 && strcmp(argv[1], "checkpoint") == 0;
	if (!log && !lines && !ckpt) {
		fprintf(stderr,
		        "usage: tool_seal log ROOT TENANT JOB ATTEMPT FIRST COUNT open|close\n"
		        "       tool_seal lines ROOT TENANT JOB ATTEMPT open|close\n"
		        "       tool_seal checkpoint ROOT TENANT JOB STEP BYTES\n"
		        "(the job's data key ring on stdin)\n");
		return 2;
	}
	crypt_object_ctx ctx;
	if (read_ctx(argv[3], argv[4], &ctx))
		return 1;
	int rc = log     ? write_log(argv, &ctx)
	         : lines ? write_lines(argv, &ctx)
	                 : write_checkpoint(argv, &ctx);
	crypt_object_ctx_clear(&ctx);
	return rc;
}
