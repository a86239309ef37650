/*
 * dataset.c - dataset names, the version layout, and sealing and unsealing
 * a version's shards (dataset.h).
 */
#include "dataset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "jsonx.h"
#include "storage.h"
#include "tenantfs.h"

#define SHARD_FMT "shard_%06d.bin"
#define BLOCK     (1u << 16) /* tokens converted per step */

bool dataset_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > DATASET_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return false;
	}
	return true;
}

int dataset_ref_parse(const char *ref, char owner[DATASET_TENANT_MAX + 1],
                      char name[DATASET_NAME_MAX + 1], int *version, char *why, size_t whylen)
{
	const char *slash = strchr(ref, '/');
	owner[0] = '\0';
	if (slash) {
		size_t k = (size_t)(slash - ref);
		if (k > DATASET_TENANT_MAX) {
			snprintf(why, whylen, "a tenant's name is 2 to %d characters",
			         DATASET_TENANT_MAX);
			return -1;
		}
		memcpy(owner, ref, k);
		owner[k] = '\0';
		if (!jsonx_is_name(owner)) {
			snprintf(
			    why, whylen,
			    "\"%s\" before '/' is not a tenant's name (2-63 of a-z, 0-9 and '-', "
			    "starting with a letter)",
			    owner);
			owner[0] = '\0';
			return -1;
		}
		ref = slash + 1;
	}
	const char *at = strchr(ref, '@');
	size_t n = at ? (size_t)(at - ref) : strlen(ref);
	*version = 0;
	if (n == 0 || n > DATASET_NAME_MAX) {
		snprintf(why, whylen, "a dataset name is 1 to %d characters", DATASET_NAME_MAX);
		return -1;
	}
	memcpy(name, ref, n);
	name[n] = '\0';
	if (!dataset_name_valid(name)) {
		snprintf(why, whylen,
		         "a dataset name is of a-z, 0-9, '.', '_' and '-', starting with a letter "
		         "or digit");
		return -1;
	}
	if (!at)
		return 0;
	const char *v = at + 1;
	long x = 0;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9' || x > 100000000) {
			x = -1;
			break;
		}
		x = x * 10 + (*p - '0');
	}
	if (v[0] == '\0' || v[0] == '0' || x < 1) {
		snprintf(why, whylen, "the version after '@' is a whole number from 1");
		return -1;
	}
	*version = (int)x;
	return 0;
}

/* "<tenant's storage>/<area>/<dataset>/<version>" into buf. RET 0 or -ERR_STORAGE_PATH_INVALID. */
static int version_path(const char *root, const char *tenant_id, const char *area,
                        const char *dataset_id, const char *version_id, char *buf, size_t n)
{
	char t[4096];
	int rc = storage_tenant_dir(root, tenant_id, t, sizeof(t));
	if (rc == 0 && (!storage_uuid_valid(dataset_id) || !storage_uuid_valid(version_id)))
		rc = -ERR_STORAGE_PATH_INVALID;
	if (rc == 0) {
		int k = snprintf(buf, n, "%s/%s/%s/%s", t, area, dataset_id, version_id);
		if (k < 0 || (size_t)k >= n)
			rc = -ERR_STORAGE_PATH_INVALID;
	}
	if (rc && n > 0)
		buf[0] = '\0';
	return rc;
}

int dataset_version_dir(const char *root, const char *tenant_id, const char *dataset_id,
                        const char *version_id, char *buf, size_t n)
{
	return version_path(root, tenant_id, "datasets", dataset_id, version_id, buf, n);
}

int dataset_granted_dir(const char *root, const char *grantee_id, const char *dataset_id,
                        const char *version_id, char *buf, size_t n)
{
	return storage_granted_dir(root, grantee_id, dataset_id, version_id, buf, n);
}

static int shard_file(int i, char *buf, size_t n)
{
	int k = snprintf(buf, n, SHARD_FMT, i);
	return k > 0 && (size_t)k < n ? 0 : -1;
}

int dataset_stage(const char *root, const char *owner_id, const char *dataset_id,
                  const char *version_id, int shards, const char *grantee_id,
                  const storage_owners *owners, char *err, size_t errlen)
{
	return storage_stage(root, owner_id, "datasets", dataset_id, version_id, shard_file, shards,
	                     grantee_id, owners, err, errlen);
}

int dataset_shard_name(const char *version_id, int index, char *buf, size_t n)
{
	int k = snprintf(buf, n, "%s/" SHARD_FMT, version_id, index);
	return index >= 0 && k > 0 && (size_t)k < n ? 0 : -ERR_STORAGE_PATH_INVALID;
}

/* ---- writing a version ---------------------------------------------- */

struct dataset_writer {
	crypt_object_ctx ctx;
	storage_owners owners;
	char version_id[STORAGE_UUID_LEN + 1];
	char partial[4096], final[4096]; /* their paths, for messages */
	/*
	 * "<version>.partial" in the dataset's directory, opened without
	 * following links: everything is done relative to it, in a tree the
	 * tenant's user owns.
	 */
	storage_partial dir;
	size_t shard_tokens;
	EVP_MD_CTX *sha;
	/* the shard being written */
	crypt_object_writer *cw;
	int fd;
	uint64_t in_shard;
	dataset_summary sum;
	uint16_t block[BLOCK];
};

static int sink_fd(void *arg, const void *buf, size_t n)
{
	return crypt_fd_sink(arg, buf, n) < 0 ? -ERR_STORAGE_IO : 0;
}

int dataset_writer_open(const char *root, const storage_owners *owners, const crypt_object_ctx *ctx,
                        const char *version_id, size_t shard_tokens, dataset_writer **out,
                        char *err, size_t errlen)
{
	*out = NULL;
	if (shard_tokens == 0 || shard_tokens > TOKSHARD_MAX_TOKENS) {
		err_printf(err, errlen, "shard_tokens must be 1..%zu", TOKSHARD_MAX_TOKENS);
		return -ERR_INTERNAL;
	}
	dataset_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ERR_INTERNAL;
	*out = w;
	w->fd = w->dir.dfd = w->dir.pfd = -1;
	if (crypt_object_ctx_copy(&w->ctx, ctx) != 0) {
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	w->owners = *owners;
	w->shard_tokens = shard_tokens;
	snprintf(w->version_id, sizeof(w->version_id), "%s", version_id);
	int rc = dataset_version_dir(root, ctx->tenant_id, ctx->job_id, version_id, w->final,
	                             sizeof(w->final));
	if (rc == 0 && snprintf(w->partial, sizeof(w->partial), "%s" STORAGE_PARTIAL_EXT,
	                        w->final) >= (int)sizeof(w->partial))
		rc = -ERR_STORAGE_PATH_INVALID;
	if (rc) {
		err_printf(err, errlen, "invalid storage root or ids");
		return rc;
	}
	const char *steps[] = {"tenants", ctx->tenant_id, "datasets", ctx->job_id};
	if ((rc = storage_partial_open(&w->dir, root, steps, 4, owners, version_id, err, errlen)))
		return rc;
	w->sha = EVP_MD_CTX_new();
	if (!w->sha || EVP_DigestInit_ex(w->sha, EVP_sha256(), NULL) != 1)
		return -ERR_INTERNAL;
	return 0;
}

uint64_t dataset_writer_sealed_bytes(const dataset_writer *w)
{
	return w->sum.sealed_bytes + (w->cw ? crypt_object_sealed_size(2 * w->in_shard) : 0);
}

static int shard_close(dataset_writer *w, char *err, size_t errlen)
{
	if (!w->cw)
		return 0;
	w->sum.sealed_bytes += crypt_object_sealed_size(2 * w->in_shard);
	int rc = crypt_object_writer_finish(w->cw, err, errlen);
	crypt_object_writer_free(w->cw);
	w->cw = NULL;
	if (rc == 0 && fsync(w->fd) != 0) {
		err_printf(err, errlen, "could not sync a shard: %m");
		rc = -ERR_STORAGE_IO;
	}
	if (close(w->fd) != 0 && rc == 0) {
		err_printf(err, errlen, "could not close a shard: %m");
		rc = -ERR_STORAGE_IO;
	}
	w->fd = -1;
	w->in_shard = 0;
	return rc;
}

static int shard_begin(dataset_writer *w, char *err, size_t errlen)
{
	char name[128], path[4200], file[32];
	int idx = w->sum.shards;
	if (dataset_shard_name(w->version_id, idx, name, sizeof(name)) < 0)
		return -ERR_STORAGE_PATH_INVALID;
	snprintf(path, sizeof(path), "%s/" SHARD_FMT, w->partial, idx);
	snprintf(file, sizeof(file), SHARD_FMT, idx);
	w->fd = tenantfs_openat(w->dir.pfd, file, O_WRONLY | O_CREAT | O_EXCL, 0600, TENANTFS_FILE,
	                        w->owners.tenant, err, errlen);
	if (w->fd < 0) {
		int rc = w->fd;
		w->fd = -1;
		return rc;
	}
	if (w->owners.hand_over && fchown(w->fd, w->owners.tenant, w->owners.group) != 0) {
		err_printf(err, errlen, "could not give \"%s\" to the tenant: %m", path);
		close(w->fd);
		w->fd = -1;
		return -ERR_STORAGE_IO;
	}
	w->sum.shards++;
	return crypt_object_writer_open(&w->ctx, name, sink_fd, &w->fd, &w->cw, err, errlen);
}

int dataset_writer_tokens(dataset_writer *w, const uint16_t *tokens, size_t n, char *err,
                          size_t errlen)
{
	while (n > 0) {
		int rc;
		if (w->cw && w->in_shard == w->shard_tokens && (rc = shard_close(w, err, errlen)))
			return rc;
		if (!w->cw && (rc = shard_begin(w, err, errlen)))
			return rc;
		size_t k = w->shard_tokens - w->in_shard;
		if (k > n)
			k = n;
		unsigned char le[2 * 4096];
		for (size_t done = 0; done < k;) {
			size_t m = k - done < 4096 ? k - done : 4096;
			for (size_t i = 0; i < m; i++) {
				uint16_t t = tokens[done + i];
				if (t > w->sum.max_token)
					w->sum.max_token = t;
				le[2 * i] = (unsigned char)t;
				le[2 * i + 1] = (unsigned char)(t >> 8);
			}
			if (EVP_DigestUpdate(w->sha, le, 2 * m) != 1)
				return -ERR_INTERNAL;
			if ((rc = crypt_object_writer_write(w->cw, le, 2 * m, err, errlen)))
				return rc;
			done += m;
		}
		w->in_shard += k;
		w->sum.tokens += k;
		tokens += k;
		n -= k;
	}
	return 0;
}

int dataset_writer_text(dataset_writer *w, const void *bytes, size_t n, char *err, size_t errlen)
{
	const unsigned char *b = bytes;
	while (n > 0) {
		size_t k = n < BLOCK ? n : BLOCK;
		for (size_t i = 0; i < k; i++)
			w->block[i] = b[i];
		int rc = dataset_writer_tokens(w, w->block, k, err, errlen);
		if (rc)
			return rc;
		b += k;
		n -= k;
	}
	return 0;
}

int dataset_writer_next_shard(dataset_writer *w, char *err, size_t errlen)
{
	return w->in_shard > 0 ? shard_close(w, err, errlen) : 0;
}

/* fsync the open directory fd; path names it in the message. */
int dataset_writer_finish(dataset_writer *w, dataset_summary *sum, char *err, size_t errlen)
{
	int rc = shard_close(w, err, errlen);
	if (rc)
		return rc;
	if (w->sum.tokens == 0) {
		err_printf(err, errlen, "the upload holds no token");
		return -ERR_DATASET_EMPTY;
	}
	unsigned len = 0;
	if (EVP_DigestFinal_ex(w->sha, w->sum.sha256, &len) != 1)
		return -ERR_INTERNAL;
	if ((rc = storage_partial_commit(&w->dir, err, errlen)))
		return rc;
	*sum = w->sum;
	return 0;
}

void dataset_writer_free(dataset_writer *w, bool keep)
{
	if (!w)
		return;
	if (w->cw)
		crypt_object_writer_free(w->cw);
	if (w->fd >= 0)
		close(w->fd);
	storage_partial_close(&w->dir, keep);
	EVP_MD_CTX_free(w->sha);
	crypt_object_ctx_clear(&w->ctx);
	free(w);
}

int dataset_sweep(const char *root, const char *tenant_id, const char *dataset_id,
                  bool (*registered)(void *arg, const char *version_id), void *arg,
                  double older_than, int *removed)
{
	return storage_sweep_versions(root, tenant_id, "datasets", dataset_id, registered, arg,
	                              older_than, removed);
}

/* ---- an upload of token shards --------------------------------------- */

static int not_shards(const dataset_shard_parser *p, char *err, size_t errlen, const char *why)
{
	err_printf(err, errlen, "shard %d of the upload: %s", p->shards + 1, why);
	return -ERR_DATASET_NOT_SHARDS;
}

/* Feed n bytes of tokens of the current shard (n <= p->left), a split token carried over. */
static int feed_tokens(dataset_shard_parser *p, dataset_writer *w, const unsigned char *b, size_t n,
                       char *err, size_t errlen)
{
	uint16_t tok[2048];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!p->has_carry) {
			p->carry = b[i];
			p->has_carry = true;
			continue;
		}
		tok[k++] = (uint16_t)(p->carry | (unsigned)b[i] << 8);
		p->has_carry = false;
		if (k == sizeof(tok) / sizeof(tok[0])) {
			int rc = dataset_writer_tokens(w, tok, k, err, errlen);
			if (rc)
				return rc;
			k = 0;
		}
	}
	p->left -= n;
	return k ? dataset_writer_tokens(w, tok, k, err, errlen) : 0;
}

int dataset_shards_feed(dataset_shard_parser *p, dataset_writer *w, const void *buf, size_t n,
                        char *err, size_t errlen)
{
	const unsigned char *b = buf;
	while (n > 0) {
		int rc;
		if (!p->in_tokens) {
			size_t k = TOKSHARD_HEADER_BYTES - p->have;
			if (k > n)
				k = n;
			memcpy(p->header + p->have, b, k);
			p->have += k;
			b += k;
			n -= k;
			if (p->have < TOKSHARD_HEADER_BYTES)
				return 0;
			uint32_t count;
			char why[128];
			if (tokshard_header_decode(p->header, &count, why, sizeof(why)) < 0)
				return not_shards(p, err, errlen, why);
			if (count == 0)
				return not_shards(p, err, errlen, "its header declares no token");
			if ((rc = dataset_writer_next_shard(w, err, errlen)))
				return rc;
			p->in_tokens = true;
			p->left = 2 * (uint64_t)count;
			continue;
		}
		size_t k = p->left < n ? (size_t)p->left : n;
		if ((rc = feed_tokens(p, w, b, k, err, errlen)))
			return rc;
		b += k;
		n -= k;
		if (p->left == 0) {
			p->in_tokens = false;
			p->have = 0;
			p->shards++;
		}
	}
	return 0;
}

int dataset_shards_end(const dataset_shard_parser *p, char *err, size_t errlen)
{
	if (p->in_tokens)
		return not_shards(p, err, errlen, "the upload ends inside its tokens (cut short)");
	if (p->have > 0)
		return not_shards(p, err, errlen, "the upload ends inside its header");
	return 0;
}

/* ---- unsealing a version --------------------------------------------- */

static int source_fd(void *arg, void *buf, size_t n, size_t *got)
{
	return crypt_fd_source(arg, buf, n, got) < 0 ? -ERR_STORAGE_IO : 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Unseal shard idx into out_dir; hash its plaintext into sha. OUT *tokens. */
static int unseal_shard(const char *src_dir, const crypt_object_ctx *ctx, const char *version_id,
                        int idx, EVP_MD_CTX *sha, const char *out_dir, uint64_t *tokens, char *err,
                        size_t errlen)
{
	char name[128], src[4200], dst[4200], tmp[4300];
	dataset_shard_name(version_id, idx, name, sizeof(name));
	snprintf(src, sizeof(src), "%s/" SHARD_FMT, src_dir, idx);
	snprintf(dst, sizeof(dst), "%s/" SHARD_FMT, out_dir, idx);
	snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0) {
		err_printf(err, errlen, "could not open \"%s\": %m", src);
		return -ERR_STORAGE_IO;
	}
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	crypt_object_reader *r = NULL;
	unsigned char h[TOKSHARD_HEADER_BYTES] = {0}, *buf = malloc(1u << 20);
	int rc = out < 0 || !buf ? -ERR_STORAGE_IO : 0;
	if (rc)
		err_printf(err, errlen, "could not create \"%s\": %m", tmp);
	if (rc == 0 && write_all(out, h, sizeof(h)) < 0)
		rc = -ERR_STORAGE_IO;
	if (rc == 0)
		rc = crypt_object_reader_open(ctx, name, source_fd, &in, &r, err, errlen);
	uint64_t bytes = 0;
	for (size_t got = 1u << 20; rc == 0 && got == (1u << 20);) {
		rc = crypt_object_reader_read(r, buf, 1u << 20, &got, err, errlen);
		if (rc == 0 &&
		    (EVP_DigestUpdate(sha, buf, got) != 1 || write_all(out, buf, got) < 0))
			rc = -ERR_STORAGE_IO;
		bytes += got;
	}
	if (rc == 0 && (bytes % 2 != 0 || bytes / 2 > TOKSHARD_MAX_TOKENS || bytes == 0)) {
		err_printf(err, errlen, "shard %d holds %llu bytes: not whole tokens", idx,
		           (unsigned long long)bytes);
		rc = -ERR_DATA_AUTH_FAILED;
	}
	if (rc == 0) {
		tokshard_header_encode(h, (uint32_t)(bytes / 2));
		if (pwrite(out, h, sizeof(h), 0) != (ssize_t)sizeof(h) || fsync(out) != 0 ||
		    rename(tmp, dst) != 0) {
			err_printf(err, errlen, "could not write \"%s\": %m", dst);
			rc = -ERR_STORAGE_IO;
		}
	}
	if (rc && rc != -ERR_STORAGE_IO && rc != -ERR_DATA_AUTH_FAILED)
		rc = -ERR_DATA_AUTH_FAILED;
	if (rc)
		unlink(tmp);
	crypt_object_reader_free(r);
	free(buf);
	if (out >= 0)
		close(out);
	close(in);
	*tokens += bytes / 2;
	return rc;
}

int dataset_unseal(const char *root, const crypt_object_ctx *ctx, const char *version_id,
                   int shards, const unsigned char sha256[32], const char *out_dir,
                   uint64_t *tokens, char *err, size_t errlen)
{
	char dir[4096];
	int rc =
	    dataset_version_dir(root, ctx->tenant_id, ctx->job_id, version_id, dir, sizeof(dir));
	if (rc) {
		err_printf(err, errlen, "invalid storage root or ids");
		return rc;
	}
	return dataset_unseal_dir(dir, ctx, version_id, shards, sha256, out_dir, tokens, err,
	                          errlen);
}

int dataset_unseal_dir(const char *dir, const crypt_object_ctx *ctx, const char *version_id,
                       int shards, const unsigned char sha256[32], const char *out_dir,
                       uint64_t *tokens, char *err, size_t errlen)
{
	int rc;
	if ((rc = storage_dir_check(dir, err, errlen)))
		return rc;
	EVP_MD_CTX *sha = EVP_MD_CTX_new();
	if (!sha || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(sha);
		return -ERR_INTERNAL;
	}
	uint64_t n = 0;
	for (int i = 0; rc == 0 && i < shards; i++)
		rc = unseal_shard(dir, ctx, version_id, i, sha, out_dir, &n, err, errlen);
	unsigned char got[32];
	unsigned len = 0;
	if (rc == 0 && (EVP_DigestFinal_ex(sha, got, &len) != 1 || memcmp(got, sha256, 32) != 0)) {
		err_printf(err, errlen, "version %s does not hash to its registered SHA-256",
		           version_id);
		rc = -ERR_DATA_AUTH_FAILED;
	}
	EVP_MD_CTX_free(sha);
	if (tokens)
		*tokens = n;
	return rc;
}
