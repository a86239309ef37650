/*
 * crypt_log.c - sealed logs: append-only files of authenticated records
 * that can be read while they are written.
 *
 * A log file is one or more segments. A segment is a header (kind log,
 * size field CRYPT_LOG_RECORD_MAX, its own salt and so its own key) and
 * records:
 *   u32 little-endian word: bit 31 closing, bits 0..30 length n
 *   n bytes of ciphertext, 16 bytes of tag
 * Record i (counted from 0 over the whole log, across segments) is sealed
 * with nonce i and the AAD of crypt_aead.h, its flag being the closing bit.
 * The writer appends each record with one write. Every writer that reopens
 * a log starts a new segment: a record torn by a crash is cut off and its
 * index used again, but under a new key, so no (key, nonce) pair is ever
 * sealed twice. A segment header cannot be mistaken for a record: "TYEC"
 * read as a record word has a length far above CRYPT_LOG_RECORD_MAX.
 * The closing record is empty; nothing may follow it.
 */
#include "crypt.h"
#include "crypt_aead.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

#define RECORD_OVERHEAD (4 + CRYPT_TAG_LEN)
#define RECORD_BYTES    (RECORD_OVERHEAD + CRYPT_LOG_RECORD_MAX)
#define CLOSING_BIT     0x80000000u

/* What the next position of a log holds. */
enum scan_result {
	SCAN_END = 0,    /* nothing: the file ends here */
	SCAN_RECORD = 1, /* a record that verified */
	SCAN_TAIL = 2,   /* the start of something unfinished */
	SCAN_SEGMENT = 3 /* a segment header (now in effect) */
};

/* The reading state both the reader and a reopening writer use. */
typedef struct log_scan {
	int fd;
	const char *path;
	const char *name;
	const crypt_object_ctx *ctx;
	crypt_aead aead; /* of the current segment; aead.evp NULL before the first */
	off_t off;       /* of the next record or segment */
	uint64_t index;  /* of the next record */
	bool closed;
	unsigned char *buf; /* RECORD_BYTES */
} log_scan;

struct crypt_log_writer {
	int fd;
	crypt_aead aead;
	off_t off;
	uint64_t index;
	int failed;
	char name[CRYPT_NAME_MAX + 1];
	unsigned char *buf; /* RECORD_BYTES */
};

struct crypt_log_reader {
	log_scan scan;
	crypt_object_ctx ctx;
	char path[4096];
	char name[CRYPT_NAME_MAX + 1];
	uint64_t records;
	bool tail;
	int failed;
};

static int log_io_error(const char *what, const char *path, char *err, size_t errlen)
{
	err_printf(err, errlen, "could not %s sealed log \"%s\": %s", what, path, strerror(errno));
	return -ERR_STORAGE_IO;
}

static int log_auth_error(const log_scan *s, const char *why, char *err, size_t errlen)
{
	err_printf(err, errlen, "sealed log \"%s\" failed authentication at record %llu: %s",
	           s->path, (unsigned long long)s->index, why);
	return -ERR_DATA_AUTH_FAILED;
}

/* Read and adopt the segment header at s->off. */
static int scan_segment(log_scan *s, char *err, size_t errlen)
{
	unsigned char h[CRYPT_HEADER_LEN];
	ssize_t k = fileio_pread_all(s->fd, h, sizeof(h), s->off);
	if (k < 0)
		return log_io_error("read", s->path, err, errlen);
	if (k == 0 && s->aead.evp == NULL)
		return SCAN_END; /* an empty file: nothing written yet */
	if ((size_t)k < sizeof(h))
		return SCAN_TAIL;
	int rc = crypt_header_check(h, CRYPT_KIND_LOG, CRYPT_LOG_RECORD_MAX, s->name, err, errlen);
	if (rc)
		return rc;
	crypt_aead_release(&s->aead);
	rc = crypt_aead_init(&s->aead, s->ctx, s->name, h, false, err, errlen);
	if (rc)
		return rc;
	s->off += (off_t)sizeof(h);
	return SCAN_SEGMENT;
}

/*
 * What is at s->off: a verified record (OUT *rec, *len; s advances), a
 * segment header (adopted; s advances), the end, or an unfinished tail.
 * RET a scan_result or a negative code.
 */
static int scan_next(log_scan *s, const void **rec, size_t *len, char *err, size_t errlen)
{
	if (s->aead.evp == NULL)
		return scan_segment(s, err, errlen);
	unsigned char word[4];
	ssize_t k = fileio_pread_all(s->fd, word, sizeof(word), s->off);
	if (k < 0)
		return log_io_error("read", s->path, err, errlen);
	if (k == 0)
		return SCAN_END;
	if (k < 4)
		return SCAN_TAIL;
	if (memcmp(word, CRYPT_MAGIC, 4) == 0)
		return scan_segment(s, err, errlen);
	uint32_t w = crypt_get_u32(word);
	bool closing = (w & CLOSING_BIT) != 0;
	size_t n = w & ~CLOSING_BIT;
	if (n > CRYPT_LOG_RECORD_MAX)
		return log_auth_error(s, "its length is out of range", err, errlen);
	k = fileio_pread_all(s->fd, s->buf, n + CRYPT_TAG_LEN, s->off + 4);
	if (k < 0)
		return log_io_error("read", s->path, err, errlen);
	if ((size_t)k < n + CRYPT_TAG_LEN)
		return SCAN_TAIL;
	if (crypt_aead_open(&s->aead, s->index, closing, s->buf, n, s->buf, s->buf + n) != 0)
		return log_auth_error(s,
		                      "it was altered, reordered, moved from another log, job or "
		                      "tenant, or the key is wrong",
		                      err, errlen);
	if (closing && n != 0)
		return log_auth_error(s, "its closing record is not empty", err, errlen);
	s->off += (off_t)(RECORD_OVERHEAD + n);
	s->index++;
	s->closed = closing;
	*rec = s->buf;
	*len = n;
	return SCAN_RECORD;
}

/* ---- writing -------------------------------------------------------- */

/* Authenticate an existing log and cut off a torn tail; w->off, w->index: where it goes on. */
static int writer_scan(crypt_log_writer *w, const char *path, const crypt_object_ctx *ctx,
                       char *err, size_t errlen)
{
	log_scan s = {.fd = w->fd, .path = path, .name = w->name, .ctx = ctx, .buf = w->buf};
	int rc;
	const void *rec;
	size_t len;
	while ((rc = scan_next(&s, &rec, &len, err, errlen)) == SCAN_RECORD || rc == SCAN_SEGMENT) {
		if (s.closed) {
			err_printf(err, errlen, "sealed log \"%s\" is closed", path);
			rc = -ERR_LOG_CLOSED;
			break;
		}
	}
	crypt_aead_release(&s.aead);
	if (rc < 0)
		return rc;
	if (rc == SCAN_TAIL && (ftruncate(w->fd, s.off) != 0 || fsync(w->fd) != 0))
		return log_io_error("cut the torn tail of", path, err, errlen);
	w->off = s.off;
	w->index = s.index;
	return 0;
}

int crypt_log_writer_open(int fd, const char *path, const crypt_object_ctx *ctx, const char *name,
                          crypt_log_writer **out, char *err, size_t errlen)
{
	*out = NULL;
	if (name == NULL || name[0] == '\0' || strlen(name) > CRYPT_NAME_MAX) {
		err_printf(err, errlen, "invalid sealed log name");
		if (fd >= 0)
			close(fd);
		return -ERR_INTERNAL;
	}
	crypt_log_writer *w = calloc(1, sizeof(*w));
	if (w == NULL || (w->buf = malloc(RECORD_BYTES)) == NULL) {
		free(w);
		if (fd >= 0)
			close(fd);
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	memcpy(w->name, name, strlen(name) + 1);
	int rc = 0;
	struct stat st;
	w->fd = fd;
	if (w->fd < 0)
		errno = EBADF;
	if (w->fd < 0 || fstat(w->fd, &st) != 0) {
		rc = log_io_error("open", path, err, errlen);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err_printf(err, errlen, "sealed log \"%s\" is not a regular file", path);
		rc = -ERR_STORAGE_IO;
		goto fail;
	}
	if (flock(w->fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK) {
			err_printf(err, errlen, "sealed log \"%s\" is open in another writer",
			           path);
			rc = -ERR_CONFLICT;
		} else {
			rc = log_io_error("lock", path, err, errlen);
		}
		goto fail;
	}
	rc = writer_scan(w, path, ctx, err, errlen);
	if (rc)
		goto fail;
	unsigned char h[CRYPT_HEADER_LEN];
	rc = crypt_header_make(h, CRYPT_KIND_LOG, CRYPT_LOG_RECORD_MAX, ctx->generations);
	if (rc == 0)
		rc = crypt_aead_init(&w->aead, ctx, name, h, true, err, errlen);
	if (rc)
		goto fail;
	if (fileio_pwrite_all(w->fd, h, sizeof(h), w->off) != 0) {
		rc = log_io_error("write", path, err, errlen);
		goto fail;
	}
	w->off += (off_t)sizeof(h);
	*out = w;
	return 0;
fail:
	crypt_log_writer_free(w);
	return rc;
}

static int append_record(crypt_log_writer *w, const void *rec, size_t n, bool closing, char *err,
                         size_t errlen)
{
	if (w->failed) {
		err_printf(err, errlen, "sealed log \"%s\" failed earlier", w->name);
		return w->failed;
	}
	if (n > CRYPT_LOG_RECORD_MAX) {
		err_printf(err, errlen, "a record of %zu bytes exceeds the sealed log limit of %u",
		           n, CRYPT_LOG_RECORD_MAX);
		return -ERR_INTERNAL;
	}
	crypt_put_u32(w->buf, (uint32_t)n | (closing ? CLOSING_BIT : 0));
	if (crypt_aead_seal(&w->aead, w->index, closing, rec, n, w->buf + 4, w->buf + 4 + n) != 0) {
		err_printf(err, errlen, "could not encrypt a record of sealed log \"%s\"", w->name);
		return w->failed = -ERR_INTERNAL;
	}
	/* After a failed write the index may be on disk in part: never seal it again. */
	if (fileio_pwrite_all(w->fd, w->buf, RECORD_OVERHEAD + n, w->off) != 0)
		return w->failed = log_io_error("append to", w->name, err, errlen);
	w->off += (off_t)(RECORD_OVERHEAD + n);
	w->index++;
	return 0;
}

int crypt_log_append(crypt_log_writer *w, const void *rec, size_t n, char *err, size_t errlen)
{
	return append_record(w, rec, n, false, err, errlen);
}

int crypt_log_sync(crypt_log_writer *w, char *err, size_t errlen)
{
	if (fdatasync(w->fd) != 0)
		return log_io_error("sync", w->name, err, errlen);
	return 0;
}

uint64_t crypt_log_writer_records(const crypt_log_writer *w)
{
	return w->index;
}

int crypt_log_writer_close(crypt_log_writer *w, char *err, size_t errlen)
{
	int rc = append_record(w, "", 0, true, err, errlen);
	if (rc == 0 && fsync(w->fd) != 0)
		rc = log_io_error("sync", w->name, err, errlen);
	crypt_log_writer_free(w);
	return rc;
}

void crypt_log_writer_free(crypt_log_writer *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd); /* releases the lock */
	crypt_aead_release(&w->aead);
	if (w->buf != NULL)
		OPENSSL_cleanse(w->buf, RECORD_BYTES);
	free(w->buf);
	free(w);
}

/* ---- reading -------------------------------------------------------- */

int crypt_log_reader_open(int fd, const char *path, const crypt_object_ctx *ctx, const char *name,
                          crypt_log_reader **out, char *err, size_t errlen)
{
	*out = NULL;
	if (name == NULL || name[0] == '\0' || strlen(name) > CRYPT_NAME_MAX ||
	    strlen(path) >= sizeof(((crypt_log_reader *)0)->path)) {
		err_printf(err, errlen, "invalid sealed log name or path");
		if (fd >= 0)
			close(fd);
		return -ERR_INTERNAL;
	}
	crypt_log_reader *r = calloc(1, sizeof(*r));
	if (r == NULL || (r->scan.buf = malloc(RECORD_BYTES)) == NULL) {
		free(r);
		if (fd >= 0)
			close(fd);
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	memcpy(r->path, path, strlen(path) + 1);
	memcpy(r->name, name, strlen(name) + 1);
	r->scan.path = r->path;
	r->scan.name = r->name;
	r->scan.ctx = &r->ctx;
	r->scan.fd = fd;
	if (crypt_object_ctx_copy(&r->ctx, ctx) != 0) {
		err_printf(err, errlen, "out of memory");
		crypt_log_reader_free(r);
		return -ERR_INTERNAL;
	}
	if (r->scan.fd < 0) {
		errno = EBADF;
		int rc = log_io_error("open", path, err, errlen);
		crypt_log_reader_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* After the closing record the file must end. */
static int check_nothing_follows(crypt_log_reader *r, char *err, size_t errlen)
{
	unsigned char b;
	ssize_t k = fileio_pread_all(r->scan.fd, &b, 1, r->scan.off);
	if (k < 0)
		return log_io_error("read", r->path, err, errlen);
	if (k > 0)
		return log_auth_error(&r->scan, "bytes follow the closing record", err, errlen);
	return 0;
}

int crypt_log_next(crypt_log_reader *r, const void **rec, size_t *len, char *err, size_t errlen)
{
	*rec = NULL;
	*len = 0;
	if (r->failed) {
		err_printf(err, errlen, "sealed log \"%s\" failed earlier", r->path);
		return r->failed;
	}
	if (r->scan.closed) {
		int rc = check_nothing_follows(r, err, errlen);
		return rc ? (r->failed = rc) : CRYPT_LOG_END;
	}
	for (;;) {
		int rc = scan_next(&r->scan, rec, len, err, errlen);
		if (rc < 0)
			return r->failed = rc;
		r->tail = rc == SCAN_TAIL;
		if (rc == SCAN_SEGMENT)
			continue;
		if (rc != SCAN_RECORD)
			return CRYPT_LOG_END;
		if (!r->scan.closed) {
			r->records++;
			return CRYPT_LOG_RECORD;
		}
		*rec = NULL;
		rc = check_nothing_follows(r, err, errlen);
		return rc ? (r->failed = rc) : CRYPT_LOG_END;
	}
}

void crypt_log_reader_state(const crypt_log_reader *r, crypt_log_state *out)
{
	out->records = r->records;
	out->closed = r->scan.closed;
	out->incomplete_tail = r->tail;
}

void crypt_log_reader_free(crypt_log_reader *r)
{
	if (r == NULL)
		return;
	if (r->scan.fd >= 0)
		close(r->scan.fd);
	crypt_aead_release(&r->scan.aead);
	if (r->scan.buf != NULL)
		OPENSSL_cleanse(r->scan.buf, RECORD_BYTES);
	free(r->scan.buf);
	crypt_object_ctx_clear(&r->ctx);
	free(r);
}
