/*
 * stream.c - the checkpoint store interface and its plain-file backend.
 *
 * The generic half validates names (by lib/base/storage.h's one rule) and dispatches through the
 * vtable. The plain-file half maps a name to "<root>/<name>", writes to
 * "<root>/<name>.tmp.<pid>" and renames at commit, with fsync of the file
 * before and of its directory after the rename.
 */
#include "ckpt_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

#define SKIP_CHUNK 65536

/* ---- names ---------------------------------------------------------- */

static int check_name(const char *name, bool root_ok, char *err, size_t errlen)
{
	if (root_ok && name != NULL && name[0] == '\0')
		return 0;
	if (storage_name_valid(name))
		return 0;
	err_printf(
	    err, errlen,
	    "invalid checkpoint file name \"%s\": expected a relative path of [A-Za-z0-9._-] "
	    "components without \".\" or \"..\"",
	    name ? name : "(null)");
	return -ERR_STORAGE_PATH_INVALID;
}

void ckpt_names_release(ckpt_names *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	l->names = NULL;
	l->n = 0;
}

/* ---- generic dispatch ----------------------------------------------- */

void ckpt_store_free(ckpt_store *s)
{
	if (s != NULL)
		s->ops->free(s);
}

/* Open name through the store's backend, for writing or for reading. */
static int store_open(ckpt_store *s, const char *name, bool writing, ckpt_stream **out, char *err,
                      size_t errlen)
{
	*out = NULL;
	int rc = check_name(name, false, err, errlen);
	if (rc)
		return rc;
	rc = writing ? s->ops->open_write(s, name, out, err, errlen)
	             : s->ops->open_read(s, name, out, err, errlen);
	if (rc == 0) {
		(*out)->store = s;
		(*out)->writing = writing;
	}
	return rc;
}

int ckpt_store_open_write(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
                          size_t errlen)
{
	return store_open(s, name, true, out, err, errlen);
}

int ckpt_stream_write(ckpt_stream *f, const void *buf, size_t n, char *err, size_t errlen)
{
	if (!f->writing) {
		err_printf(err, errlen,
		           "could not write checkpoint file: it was opened for reading");
		return -ERR_STORAGE_IO;
	}
	if (n == 0)
		return 0;
	return f->store->ops->write(f, buf, n, err, errlen);
}

int ckpt_stream_commit(ckpt_stream *f, char *err, size_t errlen)
{
	if (!f->writing) {
		f->store->ops->close(f);
		err_printf(err, errlen,
		           "could not commit checkpoint file: it was opened for reading");
		return -ERR_STORAGE_IO;
	}
	return f->store->ops->commit(f, err, errlen);
}

void ckpt_stream_abort(ckpt_stream *f)
{
	if (f == NULL)
		return;
	if (f->writing)
		f->store->ops->abort(f);
	else
		f->store->ops->close(f);
}

int ckpt_store_open_read(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
                         size_t errlen)
{
	return store_open(s, name, false, out, err, errlen);
}

int ckpt_stream_read(ckpt_stream *f, void *buf, size_t n, size_t *got, char *err, size_t errlen)
{
	*got = 0;
	if (f->writing) {
		err_printf(err, errlen,
		           "could not read checkpoint file: it was opened for writing");
		return -ERR_STORAGE_IO;
	}
	if (n == 0)
		return 0;
	return f->store->ops->read(f, buf, n, got, err, errlen);
}

int ckpt_stream_skip(ckpt_stream *f, size_t n, size_t *got, char *err, size_t errlen)
{
	*got = 0;
	if (f->writing) {
		err_printf(err, errlen,
		           "could not read checkpoint file: it was opened for writing");
		return -ERR_STORAGE_IO;
	}
	if (n == 0)
		return 0;
	if (f->store->ops->skip != NULL)
		return f->store->ops->skip(f, n, got, err, errlen);
	unsigned char buf[4096];
	while (*got < n) {
		size_t want = n - *got < sizeof(buf) ? n - *got : sizeof(buf), k;
		int rc = f->store->ops->read(f, buf, want, &k, err, errlen);
		if (rc)
			return rc;
		*got += k;
		if (k < want)
			break;
	}
	return 0;
}

void ckpt_stream_close(ckpt_stream *f)
{
	ckpt_stream_abort(f); /* a write that is closed without commit is dropped */
}

int ckpt_store_exists(ckpt_store *s, const char *name, bool *yes, char *err, size_t errlen)
{
	*yes = false;
	int rc = check_name(name, false, err, errlen);
	return rc ? rc : s->ops->exists(s, name, yes, err, errlen);
}

int ckpt_store_list(ckpt_store *s, const char *dir, ckpt_names *out, char *err, size_t errlen)
{
	out->names = NULL;
	out->n = 0;
	int rc = check_name(dir, true, err, errlen);
	return rc ? rc : s->ops->list(s, dir, out, err, errlen);
}

int ckpt_store_mkdir(ckpt_store *s, const char *dir, char *err, size_t errlen)
{
	int rc = check_name(dir, true, err, errlen);
	return rc ? rc : s->ops->mkdir(s, dir, err, errlen);
}

int ckpt_store_remove(ckpt_store *s, const char *name, char *err, size_t errlen)
{
	int rc = check_name(name, false, err, errlen);
	return rc ? rc : s->ops->remove(s, name, err, errlen);
}

/* ---- the plain-file store ------------------------------------------- */

typedef struct dir_store {
	ckpt_store base;
	char *root;
} dir_store;

typedef struct dir_stream {
	ckpt_stream base;
	int fd;
	char *path;  /* final path */
	char *tmp;   /* temporary path while writing, NULL when reading */
	size_t skip; /* bytes of "<root>/" before the name in path and tmp */
} dir_stream;

/*
 * How a message names path, a path in the store under root: by its name
 * in the store ("." for the root and what lies above it), never by the
 * file system path. A job's store lies in the server's storage, and its
 * messages reach the job's log.
 */
static const char *in_store(const char *root, const char *path)
{
	size_t n = strlen(root);
	if (strncmp(path, root, n) == 0 && path[n] == '/' && path[n + 1] != '\0')
		return path + n + 1;
	return ".";
}

/* RET: malloc'd "<root>/<name>" ("<root>" for ""), or NULL. */
static char *dir_path(const dir_store *d, const char *name)
{
	size_t n = strlen(d->root) + strlen(name) + 2;
	char *p = malloc(n);
	if (p == NULL)
		return NULL;
	if (name[0] == '\0')
		snprintf(p, n, "%s", d->root);
	else
		snprintf(p, n, "%s/%s", d->root, name);
	return p;
}

static int nomem(char *err, size_t errlen)
{
	err_printf(err, errlen, "out of memory");
	return -ERR_INTERNAL;
}

static int errno_code(int e)
{
	return e == ENOENT || e == ENOTDIR ? -ERR_STORAGE_FILE_NOT_FOUND : -ERR_STORAGE_IO;
}

/* fsync the directory that holds path, a path under root. */
static int sync_parent(const char *root, const char *path, char *err, size_t errlen)
{
	int rc = 0;
	char *dir = strdup(path);
	if (dir == NULL)
		return nomem(err, errlen);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	else
		snprintf(dir, strlen(dir) + 1, ".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		err_printf(err, errlen, "could not sync directory \"%s\": %m", in_store(root, dir));
		rc = -ERR_STORAGE_IO;
	}
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

static void dir_stream_free(dir_stream *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	free(f->tmp);
	free(f);
}

/* A stream of the file name, not open yet (fd -1). RET it, or NULL (out of memory, said in err). */
static dir_stream *dir_stream_new(ckpt_store *s, const char *name, char *err, size_t errlen)
{
	dir_stream *f = calloc(1, sizeof(*f));
	if (f != NULL) {
		f->fd = -1;
		f->path = dir_path((dir_store *)s, name);
	}
	if (f == NULL || f->path == NULL) {
		if (f)
			dir_stream_free(f);
		nomem(err, errlen);
		return NULL;
	}
	f->skip = strlen(f->path) - strlen(name);
	return f;
}

static int dir_open_write(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
                          size_t errlen)
{
	int rc = 0;
	dir_stream *f = dir_stream_new(s, name, err, errlen);
	if (f == NULL)
		return -ERR_INTERNAL;
	size_t n = strlen(f->path) + 32;
	f->tmp = malloc(n);
	if (f->tmp == NULL) {
		rc = nomem(err, errlen);
		goto fail;
	}
	snprintf(f->tmp, n, "%s.tmp.%ld", f->path, (long)getpid());
	f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f->fd < 0) {
		int e = errno;
		err_printf(err, errlen, "could not create file \"%s\": %m", f->tmp + f->skip);
		rc = errno_code(e);
		goto fail;
	}
	*out = &f->base;
	return 0;
fail:
	dir_stream_free(f);
	return rc;
}

static int dir_write(ckpt_stream *s, const void *buf, size_t n, char *err, size_t errlen)
{
	dir_stream *f = (dir_stream *)s;
	const unsigned char *p = buf;
	while (n > 0) {
		ssize_t k = write(f->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			err_printf(err, errlen, "could not write to file \"%s\": %m",
			           f->tmp + f->skip);
			return -ERR_STORAGE_IO;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int dir_commit(ckpt_stream *s, char *err, size_t errlen)
{
	dir_stream *f = (dir_stream *)s;
	int rc = 0;
	if (fsync(f->fd) != 0) {
		err_printf(err, errlen, "could not sync file \"%s\": %m", f->tmp + f->skip);
		rc = -ERR_STORAGE_IO;
		goto fail;
	}
	int fd = f->fd;
	f->fd = -1;
	if (close(fd) != 0) {
		err_printf(err, errlen, "could not close file \"%s\": %m", f->tmp + f->skip);
		rc = -ERR_STORAGE_IO;
		goto fail;
	}
	if (rename(f->tmp, f->path) != 0) {
		err_printf(err, errlen, "could not rename file \"%s\" to \"%s\": %m",
		           f->tmp + f->skip, f->path + f->skip);
		rc = -ERR_STORAGE_IO;
		goto fail;
	}
	rc = sync_parent(((dir_store *)f->base.store)->root, f->path, err, errlen);
	dir_stream_free(f);
	return rc;
fail:
	unlink(f->tmp);
	dir_stream_free(f);
	return rc;
}

static void dir_abort(ckpt_stream *s)
{
	dir_stream *f = (dir_stream *)s;
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
	}
	unlink(f->tmp);
	dir_stream_free(f);
}

static int dir_open_read(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
                         size_t errlen)
{
	int rc = 0;
	dir_stream *f = dir_stream_new(s, name, err, errlen);
	if (f == NULL)
		return -ERR_INTERNAL;
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		int e = errno;
		err_printf(err, errlen, "could not open file \"%s\": %m", f->path + f->skip);
		rc = errno_code(e);
		goto fail;
	}
	struct stat st;
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		err_printf(err, errlen, "could not open file \"%s\": not a regular file",
		           f->path + f->skip);
		rc = -ERR_STORAGE_IO;
		goto fail;
	}
	*out = &f->base;
	return 0;
fail:
	dir_stream_free(f);
	return rc;
}

static int dir_read(ckpt_stream *s, void *buf, size_t n, size_t *got, char *err, size_t errlen)
{
	dir_stream *f = (dir_stream *)s;
	unsigned char *p = buf;
	*got = 0;
	while (*got < n) {
		ssize_t k = read(f->fd, p + *got, n - *got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err_printf(err, errlen, "could not read file \"%s\": %m",
			           f->path + f->skip);
			return -ERR_STORAGE_IO;
		}
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

static int dir_skip(ckpt_stream *s, size_t n, size_t *got, char *err, size_t errlen)
{
	dir_stream *f = (dir_stream *)s;
	struct stat st;
	off_t pos = lseek(f->fd, 0, SEEK_CUR);
	if (pos < 0 || fstat(f->fd, &st) != 0) {
		err_printf(err, errlen, "could not seek in file \"%s\": %m", f->path + f->skip);
		return -ERR_STORAGE_IO;
	}
	size_t left = st.st_size > pos ? (size_t)(st.st_size - pos) : 0;
	size_t k = n < left ? n : left;
	if (lseek(f->fd, pos + (off_t)k, SEEK_SET) < 0) {
		err_printf(err, errlen, "could not seek in file \"%s\": %m", f->path + f->skip);
		return -ERR_STORAGE_IO;
	}
	*got = k;
	return 0;
}

static void dir_close(ckpt_stream *s)
{
	dir_stream_free((dir_stream *)s);
}

static int dir_exists(ckpt_store *s, const char *name, bool *yes, char *err, size_t errlen)
{
	char *path = dir_path((dir_store *)s, name);
	if (path == NULL)
		return nomem(err, errlen);
	int rc = 0;
	struct stat st;
	if (stat(path, &st) == 0)
		*yes = true;
	else if (errno != ENOENT && errno != ENOTDIR) {
		err_printf(err, errlen, "could not stat file \"%s\": %m", name);
		rc = -ERR_STORAGE_IO;
	}
	free(path);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dir_list(ckpt_store *s, const char *dirname, ckpt_names *out, char *err, size_t errlen)
{
	int rc = 0;
	size_t cap = 0;
	char *path = dir_path((dir_store *)s, dirname);
	if (path == NULL)
		return nomem(err, errlen);
	DIR *dir = opendir(path);
	if (dir == NULL) {
		int e = errno;
		err_printf(err, errlen, "could not open directory \"%s\": %m",
		           dirname[0] ? dirname : ".");
		rc = errno_code(e);
		goto out;
	}
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(dir);
		if (de == NULL) {
			if (errno != 0) {
				err_printf(err, errlen, "could not read directory \"%s\": %m",
				           dirname[0] ? dirname : ".");
				rc = -ERR_STORAGE_IO;
			}
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (out->n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			char **nn = realloc(out->names, ncap * sizeof(*nn));
			if (nn == NULL) {
				rc = nomem(err, errlen);
				break;
			}
			out->names = nn;
			cap = ncap;
		}
		out->names[out->n] = strdup(de->d_name);
		if (out->names[out->n] == NULL) {
			rc = nomem(err, errlen);
			break;
		}
		out->n++;
	}
	closedir(dir);
	if (rc == 0 && out->n > 1)
		qsort(out->names, out->n, sizeof(*out->names), cmp_str);
out:
	if (rc)
		ckpt_names_release(out);
	free(path);
	return rc;
}

/* mkdir -p path, a path under root; fsyncs the parent of each directory it creates. */
static int mkdir_parents(const char *root, char *path, char *err, size_t errlen)
{
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(path, 0755) == 0) {
			int rc = sync_parent(root, path, err, errlen);
			if (rc) {
				*p = c;
				return rc;
			}
		} else if (errno != EEXIST) {
			err_printf(err, errlen, "could not create directory \"%s\": %m",
			           in_store(root, path));
			*p = c;
			return -ERR_STORAGE_IO;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		err_printf(err, errlen, "could not create directory \"%s\": a file is in the way",
		           in_store(root, path));
		return -ERR_STORAGE_IO;
	}
	return 0;
}

static int dir_mkdir(ckpt_store *s, const char *dirname, char *err, size_t errlen)
{
	char *path = dir_path((dir_store *)s, dirname);
	if (path == NULL)
		return nomem(err, errlen);
	int rc = mkdir_parents(((dir_store *)s)->root, path, err, errlen);
	free(path);
	return rc;
}

static int dir_remove(ckpt_store *s, const char *name, char *err, size_t errlen)
{
	char *path = dir_path((dir_store *)s, name);
	if (path == NULL)
		return nomem(err, errlen);
	int rc = 0;
	struct stat st;
	if (lstat(path, &st) != 0) {
		int e = errno;
		err_printf(err, errlen, "could not remove \"%s\": %m", name);
		rc = errno_code(e);
	} else if ((S_ISDIR(st.st_mode) ? rmdir(path) : unlink(path)) != 0) {
		int e = errno;
		err_printf(err, errlen, "could not remove \"%s\": %m", name);
		rc = errno_code(e);
	} else {
		rc = sync_parent(((dir_store *)s)->root, path, err, errlen);
	}
	free(path);
	return rc;
}

static void dir_free(ckpt_store *s)
{
	dir_store *d = (dir_store *)s;
	free(d->root);
	free(d);
}

static const ckpt_store_ops dir_ops = {
    .open_write = dir_open_write,
    .write = dir_write,
    .commit = dir_commit,
    .abort = dir_abort,
    .open_read = dir_open_read,
    .read = dir_read,
    .skip = dir_skip,
    .close = dir_close,
    .exists = dir_exists,
    .list = dir_list,
    .mkdir = dir_mkdir,
    .remove = dir_remove,
    .free = dir_free,
};

ckpt_store *ckpt_store_dir(const char *root)
{
	dir_store *d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->base.ops = &dir_ops;
	d->root = strdup(root && root[0] ? root : ".");
	if (d->root == NULL) {
		free(d);
		return NULL;
	}
	size_t n = strlen(d->root);
	while (n > 1 && d->root[n - 1] == '/')
		d->root[--n] = '\0';
	return &d->base;
}
