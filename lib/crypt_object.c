/*
 * crypt_object.c - streaming encryption of one object in constant memory.
 *
 * After the header come the chunks: each is the ciphertext of CRYPT_CHUNK
 * plaintext bytes and its 16-byte tag, except the last, which holds
 * 0..CRYPT_CHUNK-1 bytes and is sealed with the final flag. So a full
 * chunk is never final and a short one always is: the reader knows from
 * the length alone which flag to verify, and a file cut at a chunk
 * boundary lacks its final chunk.
 */
#include "crypt.h"
#include "crypt_aead.h"
#include "error.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (CRYPT_CHUNK + CRYPT_TAG_LEN)

struct crypt_object_writer {
	crypt_aead aead;
	crypt_sink_fn sink;
	void *arg;
	char name[CRYPT_NAME_MAX + 1];
	uint64_t index; /* of the next chunk */
	uint64_t bytes;
	size_t fill; /* plaintext bytes waiting in buf */
	bool finished;
	int failed;         /* the first failure; later calls return it */
	unsigned char *buf; /* CHUNK_BYTES: plaintext, then ciphertext and tag in place */
};

struct crypt_object_reader {
	crypt_aead aead;
	crypt_source_fn source;
	void *arg;
	char name[CRYPT_NAME_MAX + 1];
	uint64_t index;   /* of the next chunk */
	size_t have, pos; /* authenticated plaintext in buf, and how much was handed out */
	bool end;         /* the final chunk verified */
	int failed;
	unsigned char *buf; /* CHUNK_BYTES */
};

static bool name_ok(const char *name)
{
	return name != NULL && name[0] != '\0' && strlen(name) <= CRYPT_NAME_MAX;
}

static int sink_failed(const char *name, int rc, char *err, size_t errlen)
{
	if (rc == -ERR_STORAGE_IO)
		err_printf(err, errlen, "could not write encrypted object \"%s\": %s", name,
		           strerror(errno));
	else
		err_printf(err, errlen, "could not write encrypted object \"%s\"", name);
	return rc;
}

/* ---- writing -------------------------------------------------------- */

int crypt_object_writer_open(const crypt_object_ctx *ctx, const char *name, crypt_sink_fn sink,
                             void *arg, crypt_object_writer **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!name_ok(name)) {
		err_printf(err, errlen, "invalid encrypted object name");
		return -ERR_INTERNAL;
	}
	crypt_object_writer *w = calloc(1, sizeof(*w));
	if (w == NULL || (w->buf = malloc(CHUNK_BYTES)) == NULL) {
		free(w);
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	*out = w;
	w->sink = sink;
	w->arg = arg;
	memcpy(w->name, name, strlen(name) + 1);
	unsigned char h[CRYPT_HEADER_LEN];
	int rc = crypt_header_make(h, CRYPT_KIND_OBJECT, CRYPT_CHUNK);
	if (rc) {
		err_printf(err, errlen, "could not draw a salt for \"%s\"", name);
		return w->failed = rc;
	}
	rc = crypt_aead_init(&w->aead, ctx, name, h, true, err, errlen);
	if (rc)
		return w->failed = rc;
	rc = sink(arg, h, sizeof(h));
	if (rc)
		return w->failed = sink_failed(name, rc, err, errlen);
	return 0;
}

/* Seal n bytes at in (buf itself, or the caller's data) into buf and send them. */
static int emit_chunk(crypt_object_writer *w, const unsigned char *in, size_t n, bool final,
                      char *err, size_t errlen)
{
	int rc = crypt_aead_seal(&w->aead, w->index, final, in, n, w->buf, w->buf + n);
	if (rc) {
		err_printf(err, errlen, "could not encrypt object \"%s\"", w->name);
		return w->failed = rc;
	}
	rc = w->sink(w->arg, w->buf, n + CRYPT_TAG_LEN);
	if (rc)
		return w->failed = sink_failed(w->name, rc, err, errlen);
	w->index++;
	w->fill = 0;
	return 0;
}

static int writer_usable(crypt_object_writer *w, char *err, size_t errlen)
{
	if (w->failed) {
		err_printf(err, errlen, "encrypted object \"%s\" failed earlier", w->name);
		return w->failed;
	}
	if (w->finished) {
		err_printf(err, errlen, "encrypted object \"%s\" is already finished", w->name);
		return -ERR_INTERNAL;
	}
	return 0;
}

int crypt_object_writer_write(crypt_object_writer *w, const void *buf, size_t n, char *err,
                              size_t errlen)
{
	int rc = writer_usable(w, err, errlen);
	const unsigned char *p = buf;
	while (rc == 0 && n > 0) {
		if (w->fill == 0 && n >= CRYPT_CHUNK) { /* a whole chunk: no copy */
			rc = emit_chunk(w, p, CRYPT_CHUNK, false, err, errlen);
			p += CRYPT_CHUNK;
			n -= CRYPT_CHUNK;
			w->bytes += CRYPT_CHUNK;
			continue;
		}
		size_t k = CRYPT_CHUNK - w->fill < n ? CRYPT_CHUNK - w->fill : n;
		memcpy(w->buf + w->fill, p, k);
		w->fill += k;
		w->bytes += k;
		p += k;
		n -= k;
		if (w->fill == CRYPT_CHUNK)
			rc = emit_chunk(w, w->buf, CRYPT_CHUNK, false, err, errlen);
	}
	return rc;
}

int crypt_object_writer_finish(crypt_object_writer *w, char *err, size_t errlen)
{
	int rc = writer_usable(w, err, errlen);
	if (rc == 0)
		rc = emit_chunk(w, w->buf, w->fill, true, err, errlen);
	if (rc == 0)
		w->finished = true;
	return rc;
}

uint64_t crypt_object_writer_bytes(const crypt_object_writer *w)
{
	return w->bytes;
}

void crypt_object_writer_free(crypt_object_writer *w)
{
	if (w == NULL)
		return;
	crypt_aead_release(&w->aead);
	if (w->buf != NULL)
		OPENSSL_cleanse(w->buf, CHUNK_BYTES);
	free(w->buf);
	OPENSSL_cleanse(w, sizeof(*w));
	free(w);
}

/* ---- reading -------------------------------------------------------- */

static int reader_fail(crypt_object_reader *r, const char *why, char *err, size_t errlen)
{
	err_printf(err, errlen, "encrypted object \"%s\" failed authentication at chunk %llu: %s",
	           r->name, (unsigned long long)r->index, why);
	r->have = r->pos = 0;
	return r->failed = -ERR_DATA_AUTH_FAILED;
}

static int source_failed(crypt_object_reader *r, int rc, char *err, size_t errlen)
{
	if (rc == -ERR_STORAGE_IO)
		err_printf(err, errlen, "could not read encrypted object \"%s\": %s", r->name,
		           strerror(errno));
	else
		err_printf(err, errlen, "could not read encrypted object \"%s\"", r->name);
	return r->failed = rc;
}

int crypt_object_reader_open(const crypt_object_ctx *ctx, const char *name, crypt_source_fn source,
                             void *arg, crypt_object_reader **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!name_ok(name)) {
		err_printf(err, errlen, "invalid encrypted object name");
		return -ERR_INTERNAL;
	}
	crypt_object_reader *r = calloc(1, sizeof(*r));
	if (r == NULL || (r->buf = malloc(CHUNK_BYTES)) == NULL) {
		free(r);
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	*out = r;
	r->source = source;
	r->arg = arg;
	memcpy(r->name, name, strlen(name) + 1);
	unsigned char h[CRYPT_HEADER_LEN];
	size_t got;
	int rc = source(arg, h, sizeof(h), &got);
	if (rc)
		return source_failed(r, rc, err, errlen);
	if (got < sizeof(h)) {
		err_printf(err, errlen, "encrypted object \"%s\" is truncated inside its header",
		           name);
		return r->failed = -ERR_DATA_AUTH_FAILED;
	}
	rc = crypt_header_check(h, CRYPT_KIND_OBJECT, CRYPT_CHUNK, name, err, errlen);
	if (rc == 0)
		rc = crypt_aead_init(&r->aead, ctx, name, h, false, err, errlen);
	return r->failed = rc;
}

/* Read, verify and hold the next chunk. */
static int next_chunk(crypt_object_reader *r, char *err, size_t errlen)
{
	size_t got;
	int rc = r->source(r->arg, r->buf, CHUNK_BYTES, &got);
	if (rc)
		return source_failed(r, rc, err, errlen);
	if (got == 0)
		return reader_fail(r, "the object ends without its final chunk (truncated)", err,
		                   errlen);
	if (got < CRYPT_TAG_LEN)
		return reader_fail(r, "the object ends inside a tag (truncated)", err, errlen);
	size_t n = got - CRYPT_TAG_LEN;
	bool final = got < CHUNK_BYTES;
	if (crypt_aead_open(&r->aead, r->index, final, r->buf, n, r->buf, r->buf + n) != 0)
		return reader_fail(r,
		                   "it was altered, truncated, reordered, moved from another "
		                   "object, job or tenant, or the key is wrong",
		                   err, errlen);
	if (final) {
		unsigned char extra;
		rc = r->source(r->arg, &extra, 1, &got);
		if (rc)
			return source_failed(r, rc, err, errlen);
		if (got != 0)
			return reader_fail(r, "bytes follow the final chunk", err, errlen);
	}
	r->index++;
	r->have = n;
	r->pos = 0;
	r->end = final;
	return 0;
}

/* Hand out up to n bytes into buf, or discard them when buf is NULL. */
static int reader_take(crypt_object_reader *r, unsigned char *buf, size_t n, size_t *got, char *err,
                       size_t errlen)
{
	*got = 0;
	if (r->failed) {
		err_printf(err, errlen, "encrypted object \"%s\" failed earlier", r->name);
		return r->failed;
	}
	while (*got < n) {
		if (r->pos == r->have) {
			if (r->end)
				break;
			int rc = next_chunk(r, err, errlen);
			if (rc)
				return rc;
			continue;
		}
		size_t k = r->have - r->pos < n - *got ? r->have - r->pos : n - *got;
		if (buf != NULL)
			memcpy(buf + *got, r->buf + r->pos, k);
		r->pos += k;
		*got += k;
	}
	return 0;
}

int crypt_object_reader_read(crypt_object_reader *r, void *buf, size_t n, size_t *got, char *err,
                             size_t errlen)
{
	return reader_take(r, buf, n, got, err, errlen);
}

int crypt_object_reader_skip(crypt_object_reader *r, size_t n, size_t *got, char *err,
                             size_t errlen)
{
	return reader_take(r, NULL, n, got, err, errlen);
}

void crypt_object_reader_free(crypt_object_reader *r)
{
	if (r == NULL)
		return;
	crypt_aead_release(&r->aead);
	if (r->buf != NULL)
		OPENSSL_cleanse(r->buf, CHUNK_BYTES);
	free(r->buf);
	OPENSSL_cleanse(r, sizeof(*r));
	free(r);
}
