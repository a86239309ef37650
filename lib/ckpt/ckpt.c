/*
 * ckpt.c - sharded checkpoints: shard files with named sections, the JSON
 * manifest, and finding, verifying and pruning checkpoints in a store.
 *
 * Shard file (all integers little-endian; see trainer/README.md):
 *   header  64 bytes: "TYCKSHRD", u32 version, u32 header size (64),
 *           u32 rank, u32 world, u64 step, 32 zero bytes
 *   section 64-byte NUL-padded name, u64 length, length bytes
 *   trailer 64 zero bytes (an empty name), u64 number of sections; then EOF
 */
#include "clock.h"
#include "ckpt.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "hex.h"

#define HEADER_BYTES 64
#define NAME_BYTES   64
#define RECORD_BYTES (NAME_BYTES + 8)
#define SCAN_CHUNK   (1u << 20)

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static bool section_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > CKPT_SECTION_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == '/'))
			return false;
	}
	return true;
}

void ckpt_step_dir(int step, char buf[32])
{
	snprintf(buf, 32, "step_%08d", step);
}

void ckpt_shard_name(int rank, int world, char buf[64])
{
	snprintf(buf, 64, "shard_%05d_of_%05d.bin", rank, world);
}

/* "step_%08d/<file>" */
static void step_file(int step, const char *file, char buf[128])
{
	snprintf(buf, 128, "step_%08d/%s", step, file);
}

static int check_ids(int step, int rank, int world, char *err, size_t errlen)
{
	if (step < 0 || step > CKPT_STEP_MAX || world < 1 || world > CKPT_WORLD_MAX || rank < 0 ||
	    rank >= world) {
		err_printf(
		    err, errlen,
		    "invalid checkpoint shard: step %d, rank %d of world %d (need 0 <= step <= "
		    "%d and 0 <= rank < world <= %d)",
		    step, rank, world, CKPT_STEP_MAX, CKPT_WORLD_MAX);
		return -ERR_INVALID_ARGUMENT;
	}
	return 0;
}

/* ---- the writer ----------------------------------------------------- */

struct ckpt_writer {
	ckpt_store *store;
	ckpt_stream *out;
	EVP_MD_CTX *md;
	int rank, world;
	char path[128];
	uint64_t bytes;
	char (*names)[NAME_BYTES];
	size_t nsections, cap;
	int rc; /* first failure, sticky */
	char err[512];
};

static int writer_emit(ckpt_writer *w, const void *buf, size_t n)
{
	if (w->rc)
		return w->rc;
	if (EVP_DigestUpdate(w->md, buf, n) != 1) {
		err_printf(w->err, sizeof(w->err), "could not hash checkpoint shard \"%s\"",
		           w->path);
		return w->rc = -ERR_INTERNAL;
	}
	int rc = ckpt_stream_write(w->out, buf, n, w->err, sizeof(w->err));
	if (rc)
		return w->rc = rc;
	w->bytes += n;
	return 0;
}

static void writer_free(ckpt_writer *w)
{
	ckpt_stream_abort(w->out);
	EVP_MD_CTX_free(w->md);
	free(w->names);
	free(w);
}

int ckpt_shard_begin(ckpt_store *s, int step, int rank, int world, ckpt_writer **out, char *err,
                     size_t errlen)
{
	*out = NULL;
	int rc = check_ids(step, rank, world, err, errlen);
	if (rc)
		return rc;
	ckpt_writer *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	w->store = s;
	w->rank = rank;
	w->world = world;
	char dir[32], file[64], manifest[128];
	ckpt_step_dir(step, dir);
	ckpt_shard_name(rank, world, file);
	step_file(step, file, w->path);
	step_file(step, CKPT_MANIFEST_NAME, manifest);
	w->md = EVP_MD_CTX_new();
	if (w->md == NULL || EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1) {
		err_printf(err, errlen, "could not start hashing checkpoint shard \"%s\"", w->path);
		rc = -ERR_INTERNAL;
		goto fail;
	}
	rc = ckpt_store_mkdir(s, dir, err, errlen);
	if (rc)
		goto fail;
	if (rank == 0) {
		/* an earlier attempt at this step must not look complete */
		rc = ckpt_store_remove(s, manifest, err, errlen);
		if (rc == -ERR_STORAGE_FILE_NOT_FOUND)
			rc = 0;
		if (rc)
			goto fail;
	}
	rc = ckpt_store_open_write(s, w->path, &w->out, err, errlen);
	if (rc)
		goto fail;
	unsigned char h[HEADER_BYTES] = {0};
	memcpy(h, CKPT_SHARD_MAGIC, 8);
	put_u32(h + 8, CKPT_SHARD_VERSION);
	put_u32(h + 12, HEADER_BYTES);
	put_u32(h + 16, (uint32_t)rank);
	put_u32(h + 20, (uint32_t)world);
	put_u64(h + 24, (uint64_t)step);
	rc = writer_emit(w, h, sizeof(h));
	if (rc) {
		err_printf(err, errlen, "%s", w->err);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	writer_free(w);
	return rc;
}

int ckpt_put(ckpt_writer *w, const char *name, const void *data, size_t n)
{
	if (w->rc)
		return w->rc;
	if (name == NULL || !section_name_valid(name)) {
		err_printf(
		    w->err, sizeof(w->err),
		    "invalid section name \"%s\" for checkpoint shard \"%s\": expected 1 to %d "
		    "characters of [A-Za-z0-9._/-]",
		    name ? name : "(null)", w->path, CKPT_SECTION_MAX);
		return w->rc = -ERR_INVALID_ARGUMENT;
	}
	for (size_t i = 0; i < w->nsections; i++)
		if (strcmp(w->names[i], name) == 0) {
			err_printf(w->err, sizeof(w->err),
			           "could not add section \"%s\" to checkpoint shard \"%s\": it is "
			           "already there",
			           name, w->path);
			return w->rc = -ERR_INVALID_ARGUMENT;
		}
	if (w->nsections == w->cap) {
		size_t ncap = w->cap ? 2 * w->cap : 16;
		void *nn = realloc(w->names, ncap * sizeof(*w->names));
		if (nn == NULL) {
			err_printf(w->err, sizeof(w->err), "out of memory");
			return w->rc = -ERR_INTERNAL;
		}
		w->names = nn;
		w->cap = ncap;
	}
	snprintf(w->names[w->nsections++], NAME_BYTES, "%s", name);
	unsigned char rec[RECORD_BYTES] = {0};
	memcpy(rec, name, strlen(name));
	put_u64(rec + NAME_BYTES, (uint64_t)n);
	int rc = writer_emit(w, rec, sizeof(rec));
	if (rc == 0 && n > 0)
		rc = writer_emit(w, data, n);
	return rc;
}

int ckpt_shard_commit(ckpt_writer *w, ckpt_shard_info *info, char *err, size_t errlen)
{
	int rc = w->rc;
	memset(info, 0, sizeof(*info));
	if (rc == 0) {
		unsigned char rec[RECORD_BYTES] = {0};
		put_u64(rec + NAME_BYTES, (uint64_t)w->nsections);
		rc = writer_emit(w, rec, sizeof(rec));
	}
	unsigned char digest[32];
	unsigned int dlen = 0;
	if (rc == 0 && (EVP_DigestFinal_ex(w->md, digest, &dlen) != 1 || dlen != 32)) {
		err_printf(w->err, sizeof(w->err), "could not hash checkpoint shard \"%s\"",
		           w->path);
		rc = -ERR_INTERNAL;
	}
	if (rc) {
		err_printf(err, errlen, "%s", w->err);
		goto out;
	}
	ckpt_stream *f = w->out;
	w->out = NULL;
	rc = ckpt_stream_commit(f, err, errlen);
	if (rc)
		goto out;
	info->rank = w->rank;
	info->bytes = w->bytes;
	ckpt_shard_name(w->rank, w->world, info->name);
	hex_encode(digest, 32, info->sha256);
out:
	writer_free(w);
	return rc;
}

void ckpt_shard_abort(ckpt_writer *w)
{
	if (w != NULL)
		writer_free(w);
}

/* ---- the reader ----------------------------------------------------- */

typedef struct section {
	char name[NAME_BYTES];
	uint64_t offset; /* of the data, from the start of the file */
	uint64_t size;
} section;

struct ckpt_reader {
	ckpt_store *store;
	char path[128];
	uint64_t bytes;
	section *sections;
	size_t n, cap;
	ckpt_stream *in; /* open for ckpt_get, at pos; NULL until needed */
	uint64_t pos;
};

/* The first pass: a stream read that hashes as it goes. */
typedef struct scan {
	ckpt_reader *r;
	ckpt_stream *in;
	EVP_MD_CTX *md;
	uint64_t pos;
	char *err;
	size_t errlen;
} scan;

static int truncated(const scan *sc, const char *what)
{
	err_printf(sc->err, sc->errlen,
	           "checkpoint shard \"%s\" is corrupt: it ends after %llu bytes, inside %s",
	           sc->r->path, (unsigned long long)sc->pos, what);
	return -ERR_CHECKPOINT_CORRUPT;
}

/* Read exactly n bytes (or fewer at EOF: *got says). */
static int scan_read(scan *sc, void *buf, size_t n, size_t *got)
{
	int rc = ckpt_stream_read(sc->in, buf, n, got, sc->err, sc->errlen);
	if (rc)
		return rc;
	if (*got > 0 && EVP_DigestUpdate(sc->md, buf, *got) != 1) {
		err_printf(sc->err, sc->errlen, "could not hash checkpoint shard \"%s\"",
		           sc->r->path);
		return -ERR_INTERNAL;
	}
	sc->pos += *got;
	return 0;
}

static int scan_exact(scan *sc, void *buf, size_t n, const char *what)
{
	size_t got;
	int rc = scan_read(sc, buf, n, &got);
	if (rc)
		return rc;
	return got < n ? truncated(sc, what) : 0;
}

static int scan_header(scan *sc, int step, int rank, int world)
{
	unsigned char h[HEADER_BYTES];
	int rc = scan_exact(sc, h, sizeof(h), "the header");
	if (rc)
		return rc;
	if (memcmp(h, CKPT_SHARD_MAGIC, 8) != 0) {
		err_printf(sc->err, sc->errlen,
		           "checkpoint shard \"%s\" is corrupt: it does not start with \"%s\"",
		           sc->r->path, CKPT_SHARD_MAGIC);
		return -ERR_CHECKPOINT_CORRUPT;
	}
	uint32_t version = get_u32(h + 8);
	if (version != CKPT_SHARD_VERSION) {
		err_printf(sc->err, sc->errlen,
		           "checkpoint shard \"%s\" has format version %u, this build reads %d",
		           sc->r->path, version, CKPT_SHARD_VERSION);
		return -ERR_CHECKPOINT_VERSION;
	}
	uint32_t hbytes = get_u32(h + 12), hrank = get_u32(h + 16), hworld = get_u32(h + 20);
	uint64_t hstep = get_u64(h + 24);
	if (hbytes != HEADER_BYTES || hrank != (uint32_t)rank || hworld != (uint32_t)world ||
	    hstep != (uint64_t)step) {
		err_printf(
		    sc->err, sc->errlen,
		    "checkpoint shard \"%s\" is corrupt: its header says step %llu, rank %u of "
		    "%u (header size %u), expected step %d, rank %d of %d",
		    sc->r->path, (unsigned long long)hstep, hrank, hworld, hbytes, step, rank,
		    world);
		return -ERR_CHECKPOINT_CORRUPT;
	}
	return 0;
}

static int reader_add(scan *sc, const char *name, uint64_t size)
{
	ckpt_reader *r = sc->r;
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->sections[i].name, name) == 0) {
			err_printf(
			    sc->err, sc->errlen,
			    "checkpoint shard \"%s\" is corrupt: section \"%s\" appears twice",
			    r->path, name);
			return -ERR_CHECKPOINT_CORRUPT;
		}
	if (r->n == r->cap) {
		size_t ncap = r->cap ? 2 * r->cap : 16;
		section *ns = realloc(r->sections, ncap * sizeof(*ns));
		if (ns == NULL) {
			err_printf(sc->err, sc->errlen, "out of memory");
			return -ERR_INTERNAL;
		}
		r->sections = ns;
		r->cap = ncap;
	}
	section *s = &r->sections[r->n++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->offset = sc->pos;
	s->size = size;
	return 0;
}

/* The trailer counts the sections, and nothing follows it. */
static int scan_trailer(scan *sc, uint64_t count, unsigned char *chunk)
{
	if (count != sc->r->n) {
		err_printf(sc->err, sc->errlen,
		           "checkpoint shard \"%s\" is corrupt: its trailer counts %llu sections, "
		           "the file has %zu",
		           sc->r->path, (unsigned long long)count, sc->r->n);
		return -ERR_CHECKPOINT_CORRUPT;
	}
	size_t got;
	int rc = scan_read(sc, chunk, 1, &got);
	if (rc)
		return rc;
	if (got != 0) {
		err_printf(sc->err, sc->errlen,
		           "checkpoint shard \"%s\" is corrupt: bytes follow its trailer",
		           sc->r->path);
		return -ERR_CHECKPOINT_CORRUPT;
	}
	return 0;
}

/* Sections up to and including the trailer, then EOF. */
static int scan_sections(scan *sc, unsigned char *chunk)
{
	for (;;) {
		unsigned char rec[RECORD_BYTES];
		int rc = scan_exact(sc, rec, sizeof(rec), "a section header");
		if (rc)
			return rc;
		uint64_t len = get_u64(rec + NAME_BYTES);
		char name[NAME_BYTES];
		memcpy(name, rec, NAME_BYTES);
		if (name[NAME_BYTES - 1] != '\0' ||
		    (name[0] != '\0' && !section_name_valid(name))) {
			err_printf(
			    sc->err, sc->errlen,
			    "checkpoint shard \"%s\" is corrupt: bad section name at byte %llu",
			    sc->r->path, (unsigned long long)(sc->pos - RECORD_BYTES));
			return -ERR_CHECKPOINT_CORRUPT;
		}
		if (name[0] == '\0')
			return scan_trailer(sc, len, chunk);
		rc = reader_add(sc, name, len);
		if (rc)
			return rc;
		for (uint64_t left = len; left > 0;) {
			size_t want = left < SCAN_CHUNK ? (size_t)left : SCAN_CHUNK;
			rc = scan_exact(sc, chunk, want, "a section");
			if (rc)
				return rc;
			left -= want;
		}
	}
}

/*
 * Finish the hash after the scan ended with rc and compare it. A hash
 * mismatch is the clearest report, so it replaces a structural one: the
 * rest of a file that broke early is hashed too.
 */
static int scan_finish(scan *sc, int rc, unsigned char *chunk, const char *expected)
{
	if (rc != 0 && (rc != -ERR_CHECKPOINT_CORRUPT || expected == NULL))
		return rc;
	size_t got;
	while (rc != 0 && ckpt_stream_read(sc->in, chunk, SCAN_CHUNK, &got, NULL, 0) == 0 &&
	       got > 0 && EVP_DigestUpdate(sc->md, chunk, got) == 1)
		;
	unsigned char digest[32];
	unsigned int dlen = 0;
	if (EVP_DigestFinal_ex(sc->md, digest, &dlen) != 1 || dlen != 32) {
		if (rc)
			return rc;
		err_printf(sc->err, sc->errlen, "could not hash checkpoint shard \"%s\"",
		           sc->r->path);
		return -ERR_INTERNAL;
	}
	char hex[65];
	hex_encode(digest, 32, hex);
	if (expected != NULL && strcmp(hex, expected) != 0) {
		err_printf(sc->err, sc->errlen,
		           "checkpoint shard \"%s\" is corrupt: its SHA-256 is %s, the manifest "
		           "records %s",
		           sc->r->path, hex, expected);
		return -ERR_CHECKPOINT_CORRUPT;
	}
	return rc;
}

void ckpt_shard_close(ckpt_reader *r)
{
	if (r == NULL)
		return;
	ckpt_stream_close(r->in);
	free(r->sections);
	free(r);
}

int ckpt_shard_open(ckpt_store *s, int step, int rank, int world, const char *expected_sha256,
                    ckpt_reader **out, char *err, size_t errlen)
{
	*out = NULL;
	int rc = check_ids(step, rank, world, err, errlen);
	if (rc)
		return rc;
	if (expected_sha256 != NULL && !hex_is_lower(expected_sha256, 64)) {
		err_printf(err, errlen,
		           "invalid expected SHA-256 \"%s\": need 64 lower-case hex digits",
		           expected_sha256);
		return -ERR_INVALID_ARGUMENT;
	}
	scan sc = {.err = err, .errlen = errlen};
	unsigned char *chunk = malloc(SCAN_CHUNK);
	ckpt_reader *r = calloc(1, sizeof(*r));
	sc.md = EVP_MD_CTX_new();
	if (chunk == NULL || r == NULL || sc.md == NULL ||
	    EVP_DigestInit_ex(sc.md, EVP_sha256(), NULL) != 1) {
		err_printf(err, errlen, "out of memory");
		rc = -ERR_INTERNAL;
		goto fail;
	}
	sc.r = r;
	r->store = s;
	char file[64];
	ckpt_shard_name(rank, world, file);
	step_file(step, file, r->path);
	rc = ckpt_store_open_read(s, r->path, &sc.in, err, errlen);
	if (rc)
		goto fail;
	rc = scan_header(&sc, step, rank, world);
	if (rc == 0)
		rc = scan_sections(&sc, chunk);
	rc = scan_finish(&sc, rc, chunk, expected_sha256);
	if (rc)
		goto fail;
	r->bytes = sc.pos;
	ckpt_stream_close(sc.in);
	EVP_MD_CTX_free(sc.md);
	free(chunk);
	*out = r;
	return 0;
fail:
	ckpt_stream_close(sc.in);
	EVP_MD_CTX_free(sc.md);
	free(chunk);
	ckpt_shard_close(r);
	return rc;
}

static const section *find_section(const ckpt_reader *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->sections[i].name, name) == 0)
			return &r->sections[i];
	return NULL;
}

int ckpt_get_size(const ckpt_reader *r, const char *name, uint64_t *n)
{
	const section *s = find_section(r, name);
	*n = s ? s->size : 0;
	return s ? 0 : -ERR_CHECKPOINT_NOT_FOUND;
}

int ckpt_section_count(const ckpt_reader *r)
{
	return (int)r->n;
}

const char *ckpt_section_name(const ckpt_reader *r, int i)
{
	return i >= 0 && (size_t)i < r->n ? r->sections[i].name : NULL;
}

int ckpt_get(ckpt_reader *r, const char *name, void *buf, size_t n, char *err, size_t errlen)
{
	const section *s = find_section(r, name);
	if (s == NULL) {
		err_printf(err, errlen, "checkpoint shard \"%s\" has no section \"%s\"", r->path,
		           name);
		return -ERR_CHECKPOINT_NOT_FOUND;
	}
	if (s->size != (uint64_t)n) {
		err_printf(err, errlen,
		           "could not read section \"%s\" of checkpoint shard \"%s\": it has %llu "
		           "bytes, the caller expects %zu",
		           name, r->path, (unsigned long long)s->size, n);
		return -ERR_INVALID_ARGUMENT;
	}
	int rc;
	size_t got;
	if (r->in != NULL && s->offset < r->pos) {
		ckpt_stream_close(r->in);
		r->in = NULL;
	}
	if (r->in == NULL) {
		rc = ckpt_store_open_read(r->store, r->path, &r->in, err, errlen);
		if (rc)
			return rc;
		r->pos = 0;
	}
	if (s->offset > r->pos) {
		rc = ckpt_stream_skip(r->in, (size_t)(s->offset - r->pos), &got, err, errlen);
		if (rc)
			goto fail;
		r->pos += got;
		if (r->pos != s->offset)
			goto changed;
	}
	rc = ckpt_stream_read(r->in, buf, n, &got, err, errlen);
	if (rc)
		goto fail;
	r->pos += got;
	if (got != n)
		goto changed;
	return 0;
changed:
	err_printf(err, errlen,
	           "checkpoint shard \"%s\" is corrupt: it became shorter after it was verified",
	           r->path);
	rc = -ERR_CHECKPOINT_CORRUPT;
fail:
	ckpt_stream_close(r->in);
	r->in = NULL;
	return rc;
}

/* ---- the manifest --------------------------------------------------- */

void ckpt_manifest_release(ckpt_manifest *m)
{
	if (m == NULL)
		return;
	json_decref(m->config);
	free(m->shards);
	memset(m, 0, sizeof(*m));
}

static json_t *manifest_json(int step, int world, const json_t *config,
                             const ckpt_shard_info *byrank)
{
	json_t *shards = json_array();
	json_t *cfg = config ? json_deep_copy(config) : json_object();
	char created[CLOCK_RFC3339_SIZE];
	clock_rfc3339(clock_epoch_s(), created);
	for (int r = 0; shards != NULL && r < world; r++) {
		json_t *o =
		    json_pack("{s:i, s:s, s:I, s:s}", "rank", r, "name", byrank[r].name, "bytes",
		              (json_int_t)byrank[r].bytes, "sha256", byrank[r].sha256);
		if (o == NULL || json_array_append_new(shards, o) != 0) {
			json_decref(shards);
			shards = NULL;
		}
	}
	if (shards == NULL || cfg == NULL) {
		json_decref(shards);
		json_decref(cfg);
		return NULL;
	}
	return json_pack("{s:s, s:i, s:i, s:i, s:o, s:o, s:s}", "magic", CKPT_MANIFEST_MAGIC,
	                 "version", CKPT_MANIFEST_VERSION, "step", step, "world", world, "config",
	                 cfg, "shards", shards, "created_at", created);
}

int ckpt_manifest_write(ckpt_store *s, int step, int world, const json_t *config,
                        const ckpt_shard_info *shards, int n, char *err, size_t errlen)
{
	int rc = check_ids(step, 0, world, err, errlen);
	ckpt_shard_info *byrank = NULL;
	json_t *doc = NULL;
	char *text = NULL;
	ckpt_stream *out = NULL;
	if (rc)
		return rc;
	if (config != NULL && !json_is_object(config)) {
		err_printf(err, errlen,
		           "could not write checkpoint manifest: config is not an object");
		return -ERR_INVALID_ARGUMENT;
	}
	if (n != world) {
		err_printf(
		    err, errlen,
		    "could not write checkpoint manifest for step %d: %d shards for a world of "
		    "%d",
		    step, n, world);
		return -ERR_INVALID_ARGUMENT;
	}
	byrank = calloc((size_t)world, sizeof(*byrank));
	if (byrank == NULL) {
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	for (int i = 0; i < n; i++) {
		int r = shards[i].rank;
		char want[64];
		if (r >= 0 && r < world)
			ckpt_shard_name(r, world, want);
		if (r < 0 || r >= world || byrank[r].name[0] != '\0' ||
		    strcmp(shards[i].name, want) != 0 || !hex_is_lower(shards[i].sha256, 64)) {
			err_printf(
			    err, errlen,
			    "could not write checkpoint manifest for step %d: shard entry %d "
			    "(rank %d, \"%.63s\") is invalid or repeated",
			    step, i, r, shards[i].name);
			rc = -ERR_INVALID_ARGUMENT;
			goto out;
		}
		byrank[r] = shards[i];
	}
	doc = manifest_json(step, world, config, byrank);
	text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
	if (text == NULL) {
		err_printf(err, errlen, "out of memory");
		rc = -ERR_INTERNAL;
		goto out;
	}
	char path[128];
	step_file(step, CKPT_MANIFEST_NAME, path);
	rc = ckpt_store_open_write(s, path, &out, err, errlen);
	if (rc == 0)
		rc = ckpt_stream_write(out, text, strlen(text), err, errlen);
	if (rc == 0)
		rc = ckpt_stream_write(out, "\n", 1, err, errlen);
	if (rc == 0) {
		rc = ckpt_stream_commit(out, err, errlen);
		out = NULL;
	}
out:
	ckpt_stream_abort(out);
	free(text);
	json_decref(doc);
	free(byrank);
	return rc;
}

static int manifest_bad(char *err, size_t errlen, const char *path, const char *why)
{
	err_printf(err, errlen, "checkpoint manifest \"%s\" is invalid: %s", path, why);
	return -ERR_CHECKPOINT_CORRUPT;
}

/* Read the whole file name (at most max bytes) into a NUL-terminated buffer. */
static int read_all(ckpt_store *s, const char *name, size_t max, char **out, size_t *len, char *err,
                    size_t errlen)
{
	ckpt_stream *in = NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	*out = NULL;
	int rc = ckpt_store_open_read(s, name, &in, err, errlen);
	if (rc)
		return rc == -ERR_STORAGE_FILE_NOT_FOUND ? -ERR_CHECKPOINT_NOT_FOUND : rc;
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				err_printf(err, errlen,
				           "checkpoint file \"%s\" is larger than %zu bytes", name,
				           max);
				rc = -ERR_CHECKPOINT_CORRUPT;
				goto out;
			}
			size_t ncap = cap ? 2 * cap : 4096;
			char *nb = realloc(buf, ncap + 1);
			if (nb == NULL) {
				err_printf(err, errlen, "out of memory");
				rc = -ERR_INTERNAL;
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		size_t got;
		rc = ckpt_stream_read(in, buf + n, cap - n, &got, err, errlen);
		if (rc)
			goto out;
		n += got;
		if (got == 0)
			break;
	}
	if (n > max) {
		err_printf(err, errlen, "checkpoint file \"%s\" is larger than %zu bytes", name,
		           max);
		rc = -ERR_CHECKPOINT_CORRUPT;
		goto out;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
out:
	ckpt_stream_close(in);
	free(buf);
	return rc;
}

static int manifest_shards(const json_t *arr, ckpt_manifest *m, const char *path, char *err,
                           size_t errlen)
{
	if (!json_is_array(arr) || json_array_size(arr) != (size_t)m->world)
		return manifest_bad(err, errlen, path, "\"shards\" must list one entry per rank");
	m->shards = calloc((size_t)m->world, sizeof(*m->shards));
	if (m->shards == NULL) {
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	size_t i;
	const json_t *e;
	json_array_foreach (arr, i, e) {
		json_int_t rank, bytes;
		const char *name, *sha;
		if (json_unpack((json_t *)e, "{s:I, s:s, s:I, s:s}", "rank", &rank, "name", &name,
		                "bytes", &bytes, "sha256", &sha) != 0)
			return manifest_bad(err, errlen, path,
			                    "a shard entry lacks rank, name, bytes or sha256");
		char want[64];
		if (rank < 0 || rank >= m->world || m->shards[rank].name[0] != '\0')
			return manifest_bad(err, errlen, path,
			                    "a shard rank is out of range or repeated");
		ckpt_shard_name((int)rank, m->world, want);
		if (strcmp(name, want) != 0 || bytes < 0 || !hex_is_lower(sha, 64))
			return manifest_bad(err, errlen, path,
			                    "a shard entry has a bad name, size or sha256");
		ckpt_shard_info *si = &m->shards[rank];
		si->rank = (int32_t)rank;
		si->bytes = (uint64_t)bytes;
		snprintf(si->name, sizeof(si->name), "%s", want);
		snprintf(si->sha256, sizeof(si->sha256), "%s", sha);
	}
	return 0;
}

int ckpt_manifest_read(ckpt_store *s, int step, ckpt_manifest *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	char path[128], *text = NULL;
	size_t len = 0;
	json_t *doc = NULL;
	int rc = check_ids(step, 0, 1, err, errlen);
	if (rc)
		return rc;
	step_file(step, CKPT_MANIFEST_NAME, path);
	rc = read_all(s, path, CKPT_MANIFEST_MAX, &text, &len, err, errlen);
	if (rc == -ERR_CHECKPOINT_NOT_FOUND)
		err_printf(err, errlen, "checkpoint manifest \"%s\" does not exist", path);
	if (rc)
		return rc;
	json_error_t jerr;
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL) {
		err_printf(err, errlen, "checkpoint manifest \"%s\" is invalid: line %d: %s", path,
		           jerr.line, jerr.text);
		rc = -ERR_CHECKPOINT_CORRUPT;
		goto out;
	}
	const char *magic = NULL, *created = NULL;
	json_int_t version = 0, mstep = 0, world = 0;
	json_t *config = NULL, *shards = NULL;
	if (json_unpack(doc, "{s:s, s:I, s:I, s:I, s:o, s:o, s:s}", "magic", &magic, "version",
	                &version, "step", &mstep, "world", &world, "config", &config, "shards",
	                &shards, "created_at", &created) != 0 ||
	    strcmp(magic, CKPT_MANIFEST_MAGIC) != 0) {
		rc =
		    manifest_bad(err, errlen, path,
		                 "it is not a trainyard checkpoint manifest (magic, version, step, "
		                 "world, config, shards, created_at)");
		goto out;
	}
	if (version != CKPT_MANIFEST_VERSION) {
		err_printf(err, errlen,
		           "checkpoint manifest \"%s\" has version %lld, this build reads %d", path,
		           (long long)version, CKPT_MANIFEST_VERSION);
		rc = -ERR_CHECKPOINT_VERSION;
		goto out;
	}
	if (mstep != step || world < 1 || world > CKPT_WORLD_MAX || !json_is_object(config) ||
	    strlen(created) >= sizeof(out->created_at)) {
		rc = manifest_bad(err, errlen, path,
		                  "step, world, config or created_at does not fit its directory");
		goto out;
	}
	out->step = step;
	out->world = (int)world;
	snprintf(out->created_at, sizeof(out->created_at), "%s", created);
	rc = manifest_shards(shards, out, path, err, errlen);
	if (rc)
		goto out;
	out->config = json_incref(config);
out:
	if (rc)
		ckpt_manifest_release(out);
	json_decref(doc);
	free(text);
	return rc;
}

/* ---- listing, pruning, verifying ------------------------------------ */

/* RET: the step of a canonical "step_%08d" name, or -1. */
static int parse_step_dir(const char *name)
{
	if (strncmp(name, "step_", 5) != 0 || strlen(name) != 13)
		return -1;
	int step = 0;
	for (int i = 5; i < 13; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		step = step * 10 + (name[i] - '0');
	}
	return step;
}

static int cmp_entry(const void *a, const void *b)
{
	const ckpt_entry *x = a, *y = b;
	return (x->step > y->step) - (x->step < y->step);
}

int ckpt_list(ckpt_store *s, ckpt_entry **out, int *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	ckpt_names names;
	int rc = ckpt_store_list(s, "", &names, err, errlen);
	if (rc == -ERR_STORAGE_FILE_NOT_FOUND)
		return 0; /* no root yet: no checkpoints */
	if (rc)
		return rc;
	ckpt_entry *e = calloc(names.n ? names.n : 1, sizeof(*e));
	if (e == NULL) {
		ckpt_names_release(&names);
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	int k = 0;
	for (size_t i = 0; i < names.n; i++) {
		int step = parse_step_dir(names.names[i]);
		if (step < 0)
			continue;
		/* a manifest that is there but does not read (corrupt, or sealed with
		 * another key) makes a complete checkpoint that verification refuses,
		 * never an interrupted write that pruning may take away */
		char name[64];
		bool there = false;
		e[k].step = step;
		snprintf(name, sizeof(name), "step_%08d/manifest.json", step);
		/* and a store that cannot say fails the list: pruning must not guess */
		rc = ckpt_store_exists(s, name, &there, err, errlen);
		if (rc) {
			ckpt_names_release(&names);
			free(e);
			return rc;
		}
		e[k].complete = there;
		k++;
	}
	ckpt_names_release(&names);
	qsort(e, (size_t)k, sizeof(*e), cmp_entry);
	*out = e;
	*n = k;
	return 0;
}

int ckpt_latest(ckpt_store *s, int *step, char *err, size_t errlen)
{
	ckpt_entry *e;
	int n;
	*step = -1;
	int rc = ckpt_list(s, &e, &n, err, errlen);
	if (rc)
		return rc;
	for (int i = n - 1; i >= 0 && *step < 0; i--) {
		ckpt_manifest m;
		memset(&m, 0, sizeof(m));
		if (e[i].complete && ckpt_manifest_read(s, e[i].step, &m, NULL, 0) == 0)
			*step = e[i].step;
		ckpt_manifest_release(&m);
	}
	free(e);
	if (*step < 0) {
		err_printf(err, errlen, "no checkpoint with a readable manifest in the store");
		return -ERR_CHECKPOINT_NOT_FOUND;
	}
	return 0;
}

int ckpt_step_remove(ckpt_store *s, int step, char *err, size_t errlen)
{
	char dir[32], path[128];
	ckpt_step_dir(step, dir);
	step_file(step, CKPT_MANIFEST_NAME, path);
	int rc = ckpt_store_remove(s, path, err, errlen);
	if (rc && rc != -ERR_STORAGE_FILE_NOT_FOUND)
		return rc;
	ckpt_names names;
	rc = ckpt_store_list(s, dir, &names, err, errlen);
	if (rc == -ERR_STORAGE_FILE_NOT_FOUND) /* not a directory, or gone */
		rc = 0;
	for (size_t i = 0; rc == 0 && i < names.n; i++) {
		step_file(step, names.names[i], path);
		rc = ckpt_store_remove(s, path, err, errlen);
		if (rc == -ERR_STORAGE_FILE_NOT_FOUND)
			rc = 0;
	}
	ckpt_names_release(&names);
	if (rc == 0) {
		rc = ckpt_store_remove(s, dir, err, errlen);
		if (rc == -ERR_STORAGE_FILE_NOT_FOUND)
			rc = 0;
	}
	return rc;
}

int ckpt_prune(ckpt_store *s, int keep, int *removed, char *err, size_t errlen)
{
	ckpt_entry *e;
	int n, gone = 0;
	if (removed)
		*removed = 0;
	if (keep < 1) {
		err_printf(err, errlen,
		           "could not prune checkpoints: keep must be at least 1, not %d", keep);
		return -ERR_INVALID_ARGUMENT;
	}
	int rc = ckpt_list(s, &e, &n, err, errlen);
	if (rc)
		return rc;
	int newest = -1, kept = 0;
	for (int i = n - 1; i >= 0; i--)
		if (e[i].complete) {
			newest = e[i].step;
			break;
		}
	for (int i = n - 1; rc == 0 && i >= 0; i--) {
		bool drop;
		if (e[i].complete)
			drop = ++kept > keep;
		else
			drop = newest >= 0 && e[i].step < newest;
		if (!drop)
			continue;
		rc = ckpt_step_remove(s, e[i].step, err, errlen);
		if (rc == 0)
			gone++;
	}
	free(e);
	if (removed)
		*removed = gone;
	return rc;
}

int ckpt_verify(ckpt_store *s, const ckpt_manifest *m, int part, int parts, char *err,
                size_t errlen)
{
	if (parts < 1 || part < 0 || part >= parts) {
		err_printf(err, errlen, "could not verify checkpoint: part %d of %d", part, parts);
		return -ERR_INVALID_ARGUMENT;
	}
	for (int r = part; r < m->world; r += parts) {
		ckpt_reader *rd;
		int rc =
		    ckpt_shard_open(s, m->step, r, m->world, m->shards[r].sha256, &rd, err, errlen);
		if (rc)
			return rc;
		uint64_t bytes = rd->bytes;
		ckpt_shard_close(rd);
		if (bytes != m->shards[r].bytes) {
			char dir[32];
			ckpt_step_dir(m->step, dir);
			err_printf(err, errlen,
			           "checkpoint shard \"%s/%s\" is corrupt: it has %llu bytes, the "
			           "manifest records %llu",
			           dir, m->shards[r].name, (unsigned long long)bytes,
			           (unsigned long long)m->shards[r].bytes);
			return -ERR_CHECKPOINT_CORRUPT;
		}
	}
	return 0;
}

int ckpt_find_valid(ckpt_store *s, const ckpt_find_opts *opts, ckpt_manifest *out, char *err,
                    size_t errlen)
{
	ckpt_find_opts none = {0};
	const ckpt_find_opts *o = opts ? opts : &none;
	int part = o->parts ? o->part : 0, parts = o->parts ? o->parts : 1;
	ckpt_entry *e;
	int n, complete = 0;
	char why[1024] = "", first[1200] = "";
	memset(out, 0, sizeof(*out));
	int rc = ckpt_list(s, &e, &n, err, errlen);
	if (rc)
		return rc;
	for (int i = n - 1; i >= 0; i--) {
		if (!e[i].complete)
			continue;
		complete++;
		rc = ckpt_manifest_read(s, e[i].step, out, why, sizeof(why));
		if (rc == 0)
			rc = ckpt_verify(s, out, part, parts, why, sizeof(why));
		int ok = rc == 0;
		if (o->agree != NULL)
			ok = o->agree(o->ctx, ok);
		if (ok) {
			free(e);
			return 0;
		}
		if (rc == 0) {
			snprintf(why, sizeof(why),
			         "a shard of checkpoint step %d did not verify in another process",
			         e[i].step);
			rc = -ERR_CHECKPOINT_CORRUPT;
		}
		if (first[0] == '\0')
			snprintf(first, sizeof(first), "step %d: %s", e[i].step, why);
		if (o->refused != NULL)
			o->refused(o->ctx, e[i].step, rc, why);
		ckpt_manifest_release(out);
	}
	free(e);
	if (complete == 0) {
		err_printf(err, errlen, "no complete checkpoint in the store");
		return -ERR_CHECKPOINT_NOT_FOUND;
	}
	err_printf(err, errlen, "none of %d checkpoints verifies; the newest was refused at %s",
	           complete, first);
	return -ERR_CHECKPOINT_CORRUPT;
}
