/*
 * codeunpack.c - a stored code bundle version unpacked for a job's
 * attempt (codestore.h, code_version_unpack).
 */
#include "codestore.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "tenantfs.h"

#define UNPACK_BLOCK 65536

/* One read of the sealed archive: its plaintext through the seal, hashed on the way. */
typedef struct sealed_read {
	int fd;
	crypt_object_reader *r;
	EVP_MD_CTX *sha;
	int rc;
	char *err;
	size_t errlen;
	char buf[UNPACK_BLOCK];
} sealed_read;

static int sealed_open(sealed_read *s, const char *root, const char *holder_id,
                       const crypt_object_ctx *ctx, const char *version_id, char *err,
                       size_t errlen)
{
	char rel[STORAGE_NAME_MAX + 1], name[STORAGE_UUID_LEN + sizeof("/" CODE_ARCHIVE_FILE)];
	s->fd = -1;
	s->err = err;
	s->errlen = errlen;
	if (!storage_uuid_valid(ctx->job_id) || !storage_uuid_valid(version_id)) {
		err_printf(err, errlen, "invalid bundle or version id");
		return -ERR_STORAGE_PATH_INVALID;
	}
	/* the bundle's own tree, or the copy a grant put in the grantee's (code_stage) */
	bool own = strcmp(holder_id, ctx->tenant_id) == 0;
	snprintf(rel, sizeof(rel), "%s/%s/%s/" CODE_ARCHIVE_FILE, own ? "code" : "granted",
	         ctx->job_id, version_id);
	snprintf(name, sizeof(name), "%s/" CODE_ARCHIVE_FILE, version_id);
	tenant_tree t;
	int rc = tenant_tree_open(&t, root, holder_id, err, errlen);
	if (rc)
		return rc;
	s->fd = tenant_tree_openat(&t, rel, O_RDONLY, 0, TENANTFS_FILE, err, errlen);
	tenant_tree_release(&t);
	if (s->fd < 0) {
		rc = s->fd;
		s->fd = -1;
		return rc;
	}
	s->sha = EVP_MD_CTX_new();
	if (!s->sha || EVP_DigestInit_ex(s->sha, EVP_sha256(), NULL) != 1)
		return -ERR_INTERNAL;
	return crypt_object_reader_open(ctx, name, crypt_fd_source, &s->fd, &s->r, err, errlen);
}

static void sealed_close(sealed_read *s)
{
	crypt_object_reader_free(s->r);
	EVP_MD_CTX_free(s->sha);
	if (s->fd >= 0)
		close(s->fd);
	OPENSSL_cleanse(s->buf, sizeof(s->buf));
}

static int sealed_next(sealed_read *s, void *buf, size_t n, size_t *got)
{
	int rc = crypt_object_reader_read(s->r, buf, n, got, s->err, s->errlen);
	if (rc == 0 && EVP_DigestUpdate(s->sha, buf, *got) != 1)
		rc = -ERR_INTERNAL;
	return rc;
}

static int check_source(void *arg, void *buf, size_t n, size_t *got)
{
	return sealed_next(arg, buf, n, got);
}

static la_ssize_t archive_cb(struct archive *a, void *arg, const void **out)
{
	(void)a;
	sealed_read *s = arg;
	size_t got = 0;
	if ((s->rc = sealed_next(s, s->buf, sizeof(s->buf), &got)) < 0)
		return -1;
	*out = s->buf;
	return (la_ssize_t)got;
}

/* Pass 1: the hash of the whole archive, and the bundle check. */
static int verify(const char *root, const char *holder_id, const crypt_object_ctx *ctx,
                  const char *version_id, const unsigned char sha256[32], uint64_t max_bytes,
                  bundle_summary *sum, char *err, size_t errlen)
{
	sealed_read *s = calloc(1, sizeof(*s));
	if (!s)
		return -ERR_INTERNAL;
	int rc = sealed_open(s, root, holder_id, ctx, version_id, err, errlen);
	if (rc == 0)
		rc = bundle_check(check_source, s, max_bytes, NULL, NULL, sum, err, errlen);
	/* bundle_check stops at the archive's end: the rest (tar padding) is hashed too */
	size_t got = 1;
	while (rc == 0 && got > 0)
		rc = sealed_next(s, s->buf, sizeof(s->buf), &got);
	unsigned char digest[32];
	unsigned len = 0;
	if (rc == 0 && EVP_DigestFinal_ex(s->sha, digest, &len) != 1)
		rc = -ERR_INTERNAL;
	if (rc == 0 && memcmp(digest, sha256, sizeof(digest)) != 0) {
		err_printf(err, errlen,
		           "the stored archive does not hash to the version's SHA-256");
		rc = -ERR_CODE_BUNDLE_INVALID;
	}
	sealed_close(s);
	free(s);
	return rc;
}

/* RET: whether e is the archive's own top directory ("./", ".") */
static bool top_dir(struct archive_entry *e)
{
	const char *p = archive_entry_pathname(e);
	while (p && strncmp(p, "./", 2) == 0)
		p += 2;
	return !p || !*p || strcmp(p, ".") == 0;
}

/* Pass 2: every member written beneath the current directory (dirfd, by fchdir). */
static int extract(const char *root, const char *holder_id, const crypt_object_ctx *ctx,
                   const char *version_id, char *err, size_t errlen)
{
	sealed_read *s = calloc(1, sizeof(*s));
	struct archive *a = archive_read_new(), *w = archive_write_disk_new();
	int rc = s && a && w ? sealed_open(s, root, holder_id, ctx, version_id, err, errlen)
	                     : -ERR_INTERNAL;
	if (rc == 0) {
		archive_read_support_filter_gzip(a);
		archive_read_support_format_tar(a);
		archive_write_disk_set_options(
		    w, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
		           ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
		           ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_NO_OVERWRITE);
		if (archive_read_open(a, s, NULL, archive_cb, NULL) != ARCHIVE_OK)
			rc = -ERR_CODE_BUNDLE_INVALID;
	}
	struct archive_entry *e;
	int ar = ARCHIVE_OK;
	while (rc == 0 && (ar = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		if (top_dir(e))
			continue;
		archive_entry_set_mode(e, archive_entry_mode(e) & ~(mode_t)(S_ISUID | S_ISGID));
		if (archive_write_header(w, e) != ARCHIVE_OK)
			rc = -ERR_STORAGE_IO;
		const void *buf;
		size_t n;
		la_int64_t off;
		int dr = ARCHIVE_EOF;
		while (rc == 0 && (dr = archive_read_data_block(a, &buf, &n, &off)) == ARCHIVE_OK)
			if (archive_write_data_block(w, buf, n, off) != ARCHIVE_OK)
				rc = -ERR_STORAGE_IO;
		if (rc == 0 && dr != ARCHIVE_EOF)
			rc = -ERR_STORAGE_IO;
		if (rc == 0 && archive_write_finish_entry(w) != ARCHIVE_OK)
			rc = -ERR_STORAGE_IO;
		if (rc)
			err_printf(err, errlen, "could not unpack \"%.200s\": %s",
			           archive_entry_pathname(e),
			           archive_error_string(w)   ? archive_error_string(w)
			           : archive_error_string(a) ? archive_error_string(a)
			                                     : "a read failed");
	}
	if (rc == 0 && ar != ARCHIVE_EOF) {
		err_printf(err, errlen, "the archive could not be read back: %s",
		           archive_error_string(a) ? archive_error_string(a) : "unreadable");
		rc = s->rc < 0 ? s->rc : -ERR_CODE_BUNDLE_INVALID;
	}
	if (w && archive_write_close(w) != ARCHIVE_OK && rc == 0) {
		err_printf(err, errlen, "could not finish unpacking: %s", archive_error_string(w));
		rc = -ERR_STORAGE_IO;
	}
	archive_write_free(w);
	archive_read_free(a);
	if (s)
		sealed_close(s);
	free(s);
	return rc;
}

int code_version_unpack(const char *root, const char *holder_id, const crypt_object_ctx *ctx,
                        const char *version_id, const unsigned char sha256[32], uint64_t max_bytes,
                        int dirfd, bundle_summary *sum, char *err, size_t errlen)
{
	int rc = verify(root, holder_id, ctx, version_id, sha256, max_bytes, sum, err, errlen);
	if (rc)
		return rc;
	char here[4096];
	if (!getcwd(here, sizeof(here)) || fchdir(dirfd) != 0) {
		err_printf(err, errlen, "could not enter the directory to unpack into: %m");
		return -ERR_STORAGE_IO;
	}
	rc = extract(root, holder_id, ctx, version_id, err, errlen);
	/* back where the caller was: its own relative paths go on meaning what they did */
	if (chdir(here) != 0 && rc == 0) {
		err_printf(err, errlen, "could not go back to \"%s\": %m", here);
		rc = -ERR_STORAGE_IO;
	}
	return rc;
}
