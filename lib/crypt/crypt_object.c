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
	crypt_reserve_fn reserve; /* NULL: every chunk goes through sink */
	crypt_commit_fn commit;
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
	int rc = crypt_header_make(h, CRYPT_KIND_OBJECT, CRYPT_CHUNK, ctx->generations);
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

void crypt_object_writer_lend(crypt_object_writer *w, crypt_reserve_fn reserve,
                              crypt_commit_fn commit)
{
	w->reserve = reserve;
	w->commit = commit;
}

/*
 * Where the sealed chunk of n bytes goes: room the sink lends, so that the
 * cipher's output is the only write of those bytes, else buf.
 */
static unsigned char *chunk_out(crypt_object_writer *w, size_t n)
{
	unsigned char *room = w->reserve ? w->reserve(w->arg, n + CRYPT_TAG_LEN) : NULL;
	return room != NULL ? room : w->buf;
}

/* Seal n bytes at in (buf itself, or the caller's data) and hand them to the sink. */
static int emit_chunk(crypt_object_writer *w, const unsigned char *in, size_t n, bool final,
                      char *err, size_t errlen)
{
	unsigned char *out = chunk_out(w, n);
	int rc = crypt_aead_seal(&w->aead, w->index, final, in, n, out, out + n);
	if (rc) {
		err_printf(err, errlen, "could not encrypt object \"%s\"", w->name);
		return w->failed = rc;
	}
	if (out == w->buf)
		rc = w->sink(w->arg, w->buf, n + CRYPT_TAG_LEN);
	else
		rc = w->commit(w->arg, n + CRYPT_TAG_LEN);
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

/* After the final chunk the source must be empty: more bytes mean a changed file. */
static int expect_end(crypt_object_reader *r, char *err, size_t errlen)
{
	unsigned char extra;
	size_t got;
	int rc = r->source(r->arg, &extra, 1, &got);
	if (rc)
		return source_failed(r, rc, err, errlen);
	if (got != 0)
		return reader_fail(r, "bytes follow the final chunk", err, errlen);
	return 0;
}

/* From the bytes one chunk read returned, OUT *n: its ciphertext bytes. RET 0 or a failure. */
static int chunk_size(crypt_object_reader *r, size_t got, size_t *n, char *err, size_t errlen)
{
	if (got == 0)
		return reader_fail(r, "the object ends without its final chunk (truncated)", err,
		                   errlen);
	if (got < CRYPT_TAG_LEN)
		return reader_fail(r, "the object ends inside a tag (truncated)", err, errlen);
	*n = got - CRYPT_TAG_LEN;
	return 0;
}

/*
 * Decrypt the n bytes at p in place and verify tag; a short chunk is the
 * final one. On any failure p holds zeros, so no unverified plaintext is
 * left behind, and neither is the final chunk of an object that goes on.
 */
static int open_chunk(crypt_object_reader *r, unsigned char *p, size_t n,
                      const unsigned char tag[CRYPT_TAG_LEN], char *err, size_t errlen)
{
	bool final = n < CRYPT_CHUNK;
	if (crypt_aead_open(&r->aead, r->index, final, p, n, p, tag) != 0)
		return reader_fail(r,
		                   "it was altered, truncated, reordered, moved from another "
		                   "object, job or tenant, or the key is wrong",
		                   err, errlen);
	int rc = final ? expect_end(r, err, errlen) : 0;
	if (rc) {
		OPENSSL_cleanse(p, n);
		return rc;
	}
	r->index++;
	r->end = final;
	return 0;
}

/* Read, verify and hold the next chunk in buf, for callers that want less than a chunk. */
static int next_chunk(crypt_object_reader *r, char *err, size_t errlen)
{
	size_t got, n;
	int rc = r->source(r->arg, r->buf, CHUNK_BYTES, &got);
	if (rc)
		return source_failed(r, rc, err, errlen);
	rc = chunk_size(r, got, &n, err, errlen);
	if (rc == 0)
		rc = open_chunk(r, r->buf, n, r->buf + n, err, errlen);
	if (rc)
		return rc;
	r->have = n;
	r->pos = 0;
	return 0;
}

/*
 * Read the next chunk straight into dst, which has room >= CRYPT_CHUNK
 * bytes, and decrypt it there: the plaintext is then written once, where
 * the caller wants it, instead of into buf and through a copy. With room
 * for the tag too, that is one source call; else what is left of the
 * chunk, its tag or part of it, is read apart. The caller counts the
 * bytes only once the tag verified; on failure dst holds zeros.
 * OUT *n: the chunk's plaintext bytes.
 */
static int chunk_into(crypt_object_reader *r, unsigned char *dst, size_t room, size_t *n, char *err,
                      size_t errlen)
{
	unsigned char spill[CRYPT_TAG_LEN], tag[CRYPT_TAG_LEN];
	size_t want = room < CHUNK_BYTES ? room : CHUNK_BYTES, got, more = 0;
	int rc = r->source(r->arg, dst, want, &got);
	if (rc == 0 && got == want && want < CHUNK_BYTES)
		rc = r->source(r->arg, spill, CHUNK_BYTES - want, &more);
	if (rc)
		rc = source_failed(r, rc, err, errlen);
	else
		rc = chunk_size(r, got + more, n, err, errlen);
	if (rc == 0) {
		/* the ciphertext all lies in dst (more <= CRYPT_TAG_LEN); the tag may straddle */
		memcpy(tag, dst + *n, got - *n);
		memcpy(tag + (got - *n), spill, more);
		rc = open_chunk(r, dst, *n, tag, err, errlen);
	}
	if (rc) {
		OPENSSL_cleanse(dst, want);
		return rc;
	}
	r->have = r->pos = 0;
	return 0;
}

/* Bring in the next chunk: into buf + *got when a whole one fits there, else into r->buf. */
static int refill(crypt_object_reader *r, unsigned char *buf, size_t n, size_t *got, char *err,
                  size_t errlen)
{
	if (buf == NULL || n - *got < CRYPT_CHUNK)
		return next_chunk(r, err, errlen);
	size_t k;
	int rc = chunk_into(r, buf + *got, n - *got, &k, err, errlen);
	if (rc == 0)
		*got += k;
	return rc;
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
			int rc = refill(r, buf, n, got, err, errlen);
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
