/*
 * codestore.c - code bundle versions on disk (codestore.h).
 */
#include "codestore.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "tenantfs.h"

struct code_writer {
	crypt_object_ctx ctx;
	storage_owners owners;
	char version_id[STORAGE_UUID_LEN + 1];
	char name[STORAGE_UUID_LEN + sizeof("/" CODE_ARCHIVE_FILE)]; /* the object's */
	storage_partial dir;
	int fd;
	crypt_object_writer *cw;
	EVP_MD_CTX *sha;
	bool finished;
};

static int sink_fd(void *arg, const void *buf, size_t n)
{
	return crypt_fd_sink(arg, buf, n) < 0 ? -ERR_STORAGE_IO : 0;
}

int code_writer_open(const char *root, const storage_owners *owners, const crypt_object_ctx *ctx,
                     const char *version_id, code_writer **out, char *err, size_t errlen)
{
	code_writer *w = calloc(1, sizeof(*w));
	*out = w;
	if (!w)
		return -ERR_INTERNAL;
	w->fd = w->dir.dfd = w->dir.pfd = -1;
	if (crypt_object_ctx_copy(&w->ctx, ctx) != 0)
		return -ERR_INTERNAL;
	w->owners = *owners;
	snprintf(w->version_id, sizeof(w->version_id), "%s", version_id);
	snprintf(w->name, sizeof(w->name), "%s/" CODE_ARCHIVE_FILE, version_id);
	if (!storage_uuid_valid(ctx->job_id)) {
		err_printf(err, errlen, "invalid bundle id");
		return -ERR_STORAGE_PATH_INVALID;
	}
	const char *steps[] = {"tenants", ctx->tenant_id, "code", ctx->job_id};
	int rc = storage_partial_open(&w->dir, root, steps, 4, owners, version_id, err, errlen);
	if (rc)
		return rc;
	w->fd = tenantfs_openat(w->dir.pfd, CODE_ARCHIVE_FILE, O_WRONLY | O_CREAT | O_EXCL, 0600,
	                        TENANTFS_FILE, owners->tenant, err, errlen);
	if (w->fd < 0) {
		rc = w->fd;
		w->fd = -1;
		return rc;
	}
	if (owners->hand_over && fchown(w->fd, owners->tenant, owners->group) != 0) {
		err_printf(err, errlen, "could not give the archive to the tenant: %m");
		return -ERR_STORAGE_IO;
	}
	w->sha = EVP_MD_CTX_new();
	if (!w->sha || EVP_DigestInit_ex(w->sha, EVP_sha256(), NULL) != 1)
		return -ERR_INTERNAL;
	return crypt_object_writer_open(&w->ctx, w->name, sink_fd, &w->fd, &w->cw, err, errlen);
}

int code_writer_write(code_writer *w, const void *buf, size_t n, char *err, size_t errlen)
{
	if (EVP_DigestUpdate(w->sha, buf, n) != 1)
		return -ERR_INTERNAL;
	return crypt_object_writer_write(w->cw, buf, n, err, errlen);
}

uint64_t code_writer_sealed_bytes(const code_writer *w)
{
	return crypt_object_sealed_size(w->cw ? crypt_object_writer_bytes(w->cw) : 0);
}

typedef struct unsealer {
	crypt_object_reader *r;
	char *err;
	size_t errlen;
} unsealer;

/* The archive's plaintext for the check, its seal verified chunk by chunk. */
static int unseal_source(void *arg, void *buf, size_t n, size_t *got)
{
	unsealer *u = arg;
	return crypt_object_reader_read(u->r, buf, n, got, u->err, u->errlen);
}

/* Read the sealed archive back from the partial directory and check it. */
static int check_stored(code_writer *w, uint64_t max_bytes, bundle_member_fn each_member,
                        void *member_arg, bundle_summary *sum, char *err, size_t errlen)
{
	int fd = tenantfs_openat(w->dir.pfd, CODE_ARCHIVE_FILE, O_RDONLY, 0, TENANTFS_FILE,
	                         w->owners.tenant, err, errlen);
	if (fd < 0)
		return fd;
	unsealer u = {NULL, err, errlen};
	int rc =
	    crypt_object_reader_open(&w->ctx, w->name, crypt_fd_source, &fd, &u.r, err, errlen);
	if (rc == 0)
		rc = bundle_check(unseal_source, &u, max_bytes, each_member, member_arg, sum, err,
		                  errlen);
	crypt_object_reader_free(u.r);
	close(fd);
	return rc;
}

int code_writer_finish(code_writer *w, uint64_t max_bytes, bundle_member_fn each_member,
                       void *member_arg, code_version_info *info, char *err, size_t errlen)
{
	memset(info, 0, sizeof(*info));
	info->archive_bytes = crypt_object_writer_bytes(w->cw);
	int rc = crypt_object_writer_finish(w->cw, err, errlen);
	struct stat st;
	if (rc == 0 && (fsync(w->fd) != 0 || fstat(w->fd, &st) != 0)) {
		err_printf(err, errlen, "could not sync the archive: %m");
		rc = -ERR_STORAGE_IO;
	}
	if (rc)
		return rc;
	info->sealed_bytes = (uint64_t)st.st_size;
	unsigned len = 0;
	if (EVP_DigestFinal_ex(w->sha, info->sha256, &len) != 1)
		return -ERR_INTERNAL;
	if ((rc = check_stored(w, max_bytes, each_member, member_arg, &info->sum, err, errlen)))
		return rc;
	if ((rc = storage_partial_commit(&w->dir, err, errlen)))
		return rc;
	w->finished = true;
	return 0;
}

void code_writer_free(code_writer *w, bool keep)
{
	if (!w)
		return;
	crypt_object_writer_free(w->cw);
	if (w->fd >= 0)
		close(w->fd);
	storage_partial_close(&w->dir, w->finished && keep);
	EVP_MD_CTX_free(w->sha);
	crypt_object_ctx_clear(&w->ctx);
	free(w);
}

static int archive_file(int i, char *buf, size_t n)
{
	return i == 0 && snprintf(buf, n, "%s", CODE_ARCHIVE_FILE) < (int)n ? 0 : -1;
}

int code_stage(const char *root, const char *owner_id, const char *bundle_id,
               const char *version_id, const char *grantee_id, const storage_owners *owners,
               char *err, size_t errlen)
{
	return storage_stage(root, owner_id, "code", bundle_id, version_id, archive_file, 1,
	                     grantee_id, owners, err, errlen);
}
