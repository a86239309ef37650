/*
 * ckpt_store.h - the storage interface that every checkpoint byte goes through.
 *
 * A ckpt_store is a namespace of files and directories addressed by
 * relative names ("step_00000020/manifest.json"). The trainer and ckpt.c
 * never touch the file system directly, so a store that encrypts, compresses
 * or uploads can be put in later without changing either. A store is a
 * vtable (ckpt_store_ops); the ckpt_store_* and ckpt_stream_* functions
 * below validate their arguments once and dispatch to it.
 *
 * Invariants every store keeps:
 *   - nothing is visible under a name until ckpt_stream_commit() returns 0;
 *     commit replaces an existing file of that name atomically and makes the
 *     file and its directory entry durable;
 *   - ckpt_stream_abort() leaves no trace of the write behind;
 *   - a reader sees exactly the bytes the writer committed.
 *
 * Names: one or more components joined by '/', each made of [A-Za-z0-9._-],
 * none empty, "." or "..", at most CKPT_NAME_MAX bytes in all: the storage
 * layout's one rule, storage_name_valid() in lib/base/storage.h. Absolute
 * names are refused. The empty name "" means the store's root and is only
 * accepted by ckpt_store_list() and ckpt_store_mkdir().
 *
 * Errors: functions return 0 or a negative err_code (error.h), and write a
 * message into err (errlen bytes, may be 0) naming the file:
 *   -ERR_STORAGE_IO             the underlying read, write or sync failed (and
 *                               in the encrypted store, a file that does not
 *                               authenticate)
 *   -ERR_STORAGE_PATH_INVALID   the name is not a valid relative name
 *   -ERR_STORAGE_FILE_NOT_FOUND no file or directory of that name
 *   -ERR_INTERNAL               out of memory
 *
 * Who frees what: a stream is freed by commit, abort or close (exactly one
 * of them, whatever they return); ckpt_names by ckpt_names_release(); the
 * store by ckpt_store_free(). One store and its streams are used from one
 * thread at a time.
 */
#ifndef TY_STREAM_H
#define TY_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "storage.h"

#define CKPT_NAME_MAX STORAGE_NAME_MAX

typedef struct ckpt_store ckpt_store;
typedef struct ckpt_stream ckpt_stream;

/* A list of names, sorted with strcmp. */
typedef struct ckpt_names {
	char **names;
	size_t n;
} ckpt_names;

void ckpt_names_release(ckpt_names *l);

/*
 * The backend vtable. Arguments arrive validated. A backend embeds
 * struct ckpt_store / struct ckpt_stream as the first member of its own
 * structs and sets .ops / .store.
 */
typedef struct ckpt_store_ops {
	int (*open_write)(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
	                  size_t errlen);
	int (*write)(ckpt_stream *f, const void *buf, size_t n, char *err, size_t errlen);
	int (*commit)(ckpt_stream *f, char *err, size_t errlen); /* frees f */
	void (*abort)(ckpt_stream *f);                           /* frees f */
	int (*open_read)(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
	                 size_t errlen);
	/* Fill buf; *got < n only at the end of the file. */
	int (*read)(ckpt_stream *f, void *buf, size_t n, size_t *got, char *err, size_t errlen);
	/* Skip n bytes forward; *got < n only at the end. May be NULL (read and discard). */
	int (*skip)(ckpt_stream *f, size_t n, size_t *got, char *err, size_t errlen);
	void (*close)(ckpt_stream *f); /* frees f */
	int (*exists)(ckpt_store *s, const char *name, bool *yes, char *err, size_t errlen);
	int (*list)(ckpt_store *s, const char *dir, ckpt_names *out, char *err, size_t errlen);
	int (*mkdir)(ckpt_store *s, const char *dir, char *err, size_t errlen);
	int (*remove)(ckpt_store *s, const char *name, char *err, size_t errlen);
	void (*free)(ckpt_store *s);
} ckpt_store_ops;

struct ckpt_store {
	const ckpt_store_ops *ops;
};

struct ckpt_stream {
	ckpt_store *store;
	bool writing;
};

/*
 * The plain-file store over the directory root (which need not exist yet:
 * ckpt_store_mkdir(s, "") creates it and its parents). A write goes to
 * "<name>.tmp.<pid>" and is renamed onto the name at commit, after fsync
 * of the file; the directory is fsynced after the rename.
 * RET: the store, or NULL when out of memory. Caller frees with ckpt_store_free().
 */
ckpt_store *ckpt_store_dir(const char *root);
void ckpt_store_free(ckpt_store *s);

/*
 * The encrypted store (ckpt_store_crypt.c): the plain-file store over root, with
 * every file an encrypted object of ctx (crypt.h) whose AAD name is its
 * relative name, so a file moved to another name, job or tenant, altered
 * or truncated fails to read (-ERR_STORAGE_IO, naming the file). Commit
 * seals the final chunk, then commits as the plain store does. Reads
 * return only authenticated bytes. ctx is copied; the store clears its
 * key when freed. Directories it creates are made 0700.
 * RET: the store, or NULL when out of memory or ctx is invalid.
 */
struct crypt_object_ctx;
ckpt_store *ckpt_store_encrypted(const char *root, const struct crypt_object_ctx *ctx);

/* Start writing name. OUT *out: the stream. */
int ckpt_store_open_write(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
                          size_t errlen);
int ckpt_stream_write(ckpt_stream *f, const void *buf, size_t n, char *err, size_t errlen);
/* Make the bytes visible under the name, durably. Frees f, also on failure. */
int ckpt_stream_commit(ckpt_stream *f, char *err, size_t errlen);
/* Drop a write: the temporary file is removed. Frees f; f may be NULL. */
void ckpt_stream_abort(ckpt_stream *f);

/* Open name for reading; -ERR_STORAGE_FILE_NOT_FOUND when it does not exist. */
int ckpt_store_open_read(ckpt_store *s, const char *name, ckpt_stream **out, char *err,
                         size_t errlen);
/* Read up to n bytes into buf. OUT *got: bytes read, < n only at the end of the file. */
int ckpt_stream_read(ckpt_stream *f, void *buf, size_t n, size_t *got, char *err, size_t errlen);
/* Skip n bytes. OUT *got: bytes skipped, < n only at the end of the file. */
int ckpt_stream_skip(ckpt_stream *f, size_t n, size_t *got, char *err, size_t errlen);
/* Close a read stream. Frees f; f may be NULL. */
void ckpt_stream_close(ckpt_stream *f);

/* OUT *yes: whether a file or directory of that name exists. */
int ckpt_store_exists(ckpt_store *s, const char *name, bool *yes, char *err, size_t errlen);
/* The entries directly inside dir ("" for the root), sorted, without "." and "..". */
int ckpt_store_list(ckpt_store *s, const char *dir, ckpt_names *out, char *err, size_t errlen);
/* Create dir and its missing parents; an existing directory is fine. */
int ckpt_store_mkdir(ckpt_store *s, const char *dir, char *err, size_t errlen);
/* Remove a file or an empty directory; -ERR_STORAGE_FILE_NOT_FOUND when absent. */
int ckpt_store_remove(ckpt_store *s, const char *name, char *err, size_t errlen);

#endif
