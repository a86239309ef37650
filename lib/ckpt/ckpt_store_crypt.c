/*
 * ckpt_store_crypt.c - the encrypted checkpoint store: the plain-file store
 * underneath, every file an encrypted object (lib/crypt/crypt.h).
 *
 * A write stream is an object writer whose sink is the plain store's write
 * stream: the header goes out at open, full chunks as they fill, the final
 * chunk at commit, and then the plain store's commit (temporary file,
 * fsync, rename, directory fsync) makes it visible. A read stream is an
 * object reader whose source is the plain store's read stream. The AAD
 * name of each file is its relative name in the store, and the tenant and
 * job come from the store's context.
 */
#include "crypt.h"
#include "error.h"
#include "ckpt_store.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct crypt_store {
	ckpt_store base;
	ckpt_store *inner;
	char *root;
	crypt_object_ctx ctx;
} crypt_store;

typedef struct crypt_stream {
	ckpt_stream base;
	ckpt_stream *inner;
	crypt_object_writer *w;
	crypt_object_reader *r;
	int inner_rc; /* the plain store's code when a sink or source call failed */
	char inner_err[512];
} crypt_stream;

/* The plain store's failure stands as it is; a crypt failure is -ERR_STORAGE_IO. */
static int stream_result(crypt_stream *f, int rc, const char *cerr, char *err, size_t errlen)
{
	if (rc == 0)
		return 0;
	if (f->inner_rc != 0) {
		err_printf(err, errlen, "%s", f->inner_err);
		return f->inner_rc;
	}
	err_printf(err, errlen, "%s", cerr);
	return -ERR_STORAGE_IO;
}

static int stream_sink(void *arg, const void *buf, size_t n)
{
	crypt_stream *f = arg;
	int rc = ckpt_stream_write(f->inner, buf, n, f->inner_err, sizeof(f->inner_err));
	if (rc)
		f->inner_rc = rc;
	return rc ? -1 : 0;
}

static int stream_source(void *arg, void *buf, size_t n, size_t *got)
{
	crypt_stream *f = arg;
	int rc = ckpt_stream_read(f->inner, buf, n, got, f->inner_err, sizeof(f->inner_err));
	if (rc)
		f->inner_rc = rc;
	return rc ? -1 : 0;
}

static void stream_free(crypt_stream *f)
{
	crypt_object_writer_free(f->w);
	crypt_object_reader_free(f->r);
	free(f);
}

static void crypt_abort(ckpt_stream *s)
{
	crypt_stream *f = (crypt_stream *)s;
	ckpt_stream_abort(f->inner);
	stream_free(f);
}

static void crypt_close(ckpt_stream *s)
{
	crypt_stream *f = (crypt_stream *)s;
	ckpt_stream_close(f->inner);
	stream_free(f);
}

/*
 * Open the plain store's stream of name and an object writer (write) or
 * reader over it. A failure of either leaves nothing open.
 */
static int open_stream(ckpt_store *s, const char *name, bool write, ckpt_stream **out, char *err,
                       size_t errlen)
{
	crypt_store *cs = (crypt_store *)s;
	crypt_stream *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	int rc = write ? ckpt_store_open_write(cs->inner, name, &f->inner, err, errlen)
	               : ckpt_store_open_read(cs->inner, name, &f->inner, err, errlen);
	if (rc) {
		free(f);
		return rc;
	}
	char cerr[512];
	if (write)
		rc = crypt_object_writer_open(&cs->ctx, name, stream_sink, f, &f->w, cerr,
		                              sizeof(cerr));
	else
		rc = crypt_object_reader_open(&cs->ctx, name, stream_source, f, &f->r, cerr,
		                              sizeof(cerr));
	if (rc) {
		rc = stream_result(f, rc, cerr, err, errlen);
		if (write)
			crypt_abort(&f->base);
		else
			crypt_close(&f->base);
		return rc;
	}
	*out = &f->base;
	return 0;
}

static int crypt_open_write(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
                            size_t errlen)
{
	return open_stream(s, name, true, out, err, errlen);
}

static int crypt_open_read(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
                           size_t errlen)
{
	return open_stream(s, name, false, out, err, errlen);
}

static int crypt_write(ckpt_stream *s, const void *buf, size_t n, char *err, size_t errlen)
{
	crypt_stream *f = (crypt_stream *)s;
	char cerr[512];
	int rc = crypt_object_writer_write(f->w, buf, n, cerr, sizeof(cerr));
	return stream_result(f, rc, cerr, err, errlen);
}

static int crypt_commit(ckpt_stream *s, char *err, size_t errlen)
{
	crypt_stream *f = (crypt_stream *)s;
	char cerr[512];
	int rc = crypt_object_writer_finish(f->w, cerr, sizeof(cerr));
	if (rc) {
		rc = stream_result(f, rc, cerr, err, errlen);
		ckpt_stream_abort(f->inner);
	} else {
		rc = ckpt_stream_commit(f->inner, err, errlen);
	}
	stream_free(f);
	return rc;
}

static int crypt_read(ckpt_stream *s, void *buf, size_t n, size_t *got, char *err, size_t errlen)
{
	crypt_stream *f = (crypt_stream *)s;
	char cerr[512];
	int rc = crypt_object_reader_read(f->r, buf, n, got, cerr, sizeof(cerr));
	return stream_result(f, rc, cerr, err, errlen);
}

static int crypt_skip(ckpt_stream *s, size_t n, size_t *got, char *err, size_t errlen)
{
	crypt_stream *f = (crypt_stream *)s;
	char cerr[512];
	int rc = crypt_object_reader_skip(f->r, n, got, cerr, sizeof(cerr));
	return stream_result(f, rc, cerr, err, errlen);
}

static int crypt_exists(ckpt_store *s, const char *name, bool *yes, char *err, size_t errlen)
{
	return ckpt_store_exists(((crypt_store *)s)->inner, name, yes, err, errlen);
}

static int crypt_list(ckpt_store *s, const char *dir, ckpt_names *out, char *err, size_t errlen)
{
	return ckpt_store_list(((crypt_store *)s)->inner, dir, out, err, errlen);
}

/* chmod 0700 the directory root/dir without following a link. */
static int make_private(const crypt_store *cs, const char *dir, size_t len, char *err,
                        size_t errlen)
{
	char path[4096];
	int k = snprintf(path, sizeof(path), "%s%s%.*s", cs->root, len ? "/" : "", (int)len, dir);
	if (k < 0 || (size_t)k >= sizeof(path)) {
		err_printf(err, errlen, "checkpoint directory \"%.*s\" has too long a path",
		           (int)len, dir);
		return -ERR_STORAGE_PATH_INVALID;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0700) != 0) {
		err_printf(err, errlen, "could not make directory \"%.*s\" private: %m",
		           len ? (int)len : 1, len ? dir : ".");
		if (fd >= 0)
			close(fd);
		return -ERR_STORAGE_IO;
	}
	close(fd);
	return 0;
}

static int crypt_mkdir(ckpt_store *s, const char *dir, char *err, size_t errlen)
{
	crypt_store *cs = (crypt_store *)s;
	int rc = ckpt_store_mkdir(cs->inner, dir, err, errlen);
	if (rc)
		return rc;
	rc = make_private(cs, dir, 0, err, errlen); /* the root */
	for (size_t i = 0; rc == 0 && dir[i] != '\0'; i++)
		if (dir[i + 1] == '/' || dir[i + 1] == '\0')
			rc = make_private(cs, dir, i + 1, err, errlen);
	return rc;
}

static int crypt_remove(ckpt_store *s, const char *name, char *err, size_t errlen)
{
	return ckpt_store_remove(((crypt_store *)s)->inner, name, err, errlen);
}

static void crypt_free(ckpt_store *s)
{
	crypt_store *cs = (crypt_store *)s;
	ckpt_store_free(cs->inner);
	crypt_object_ctx_clear(&cs->ctx);
	free(cs->root);
	free(cs);
}

static const ckpt_store_ops crypt_ops = {
    .open_write = crypt_open_write,
    .write = crypt_write,
    .commit = crypt_commit,
    .abort = crypt_abort,
    .open_read = crypt_open_read,
    .read = crypt_read,
    .skip = crypt_skip,
    .close = crypt_close,
    .exists = crypt_exists,
    .list = crypt_list,
    .mkdir = crypt_mkdir,
    .remove = crypt_remove,
    .free = crypt_free,
};

ckpt_store *ckpt_store_encrypted(const char *root, const struct crypt_object_ctx *ctx)
{
	if (ctx == NULL || ctx->tenant_id[0] == '\0' || ctx->job_id[0] == '\0')
		return NULL;
	crypt_store *cs = calloc(1, sizeof(*cs));
	if (cs == NULL)
		return NULL;
	cs->base.ops = &crypt_ops;
	int rc = crypt_object_ctx_copy(&cs->ctx, ctx);
	cs->inner = ckpt_store_dir(root);
	cs->root = strdup(root && root[0] ? root : ".");
	if (rc || cs->inner == NULL || cs->root == NULL) {
		crypt_free(&cs->base);
		return NULL;
	}
	size_t n = strlen(cs->root);
	while (n > 1 && cs->root[n - 1] == '/')
		cs->root[--n] = '\0';
	return &cs->base;
}
