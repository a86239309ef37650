/*
 * crypt.h - keys, key wrapping, encrypted objects and sealed logs.
 *
 * Key hierarchy (docs/storage.md has the whole story and every format byte
 * by byte):
 *   master key   32 bytes from a key file or the environment, never stored
 *                by trainyard; it only wraps tenant keys (and webhook
 *                secrets), and is named by its id (crypt_key_id) in the
 *                rows it wraps, so that it can be rotated (keys.h)
 *   tenant KEK   one per tenant and version, random, kept wrapped under the
 *                master key (context "tenant-kek|<tenant uuid>|v<n>")
 *   job data key one per job and generation, random, kept wrapped under
 *                its tenant's KEK (context "job-dek|<job uuid>|v<n>", and
 *                "job-dek|<job uuid>/g<g>|v<n>" for generations g > 1)
 *   dataset key  one per dataset and generation, the same way
 *                ("dataset-dek|<dataset uuid>...|v<n>"); its objects take
 *                the dataset's id where a job's take the job's
 * A data key never encrypts anything itself: every object and every log
 * derives its own key from it and a fresh random salt.
 *
 * Wrapping. AES-256-GCM under the wrapping key with a random 96-bit nonce;
 * the AAD is the version byte and the caller's context string, so a wrapped
 * key only unwraps under the key, the context and the bytes it was made
 * with. Random nonces collide with probability about q^2 / 2^97 after q
 * wraps under one key; NIST caps such use at 2^32 wraps. Callers count the
 * wraps they make under each key and rotate it before
 * CRYPT_WRAPS_PER_KEY_LIMIT (2^24: collision odds below 2^-49).
 *
 * Objects and logs. Per-object key = HKDF-SHA256(ikm = the generation of
 * the data key the header names, salt = the header's 32 salt bytes (that
 * generation and 28 random bytes; 32 random bytes in format version 1,
 * read as generation 1), info = "trainyard object v1" or
 * "trainyard log v1"). The nonce of chunk or record i is i as a 64-bit
 * big-endian integer followed by 4 zero bytes. Indexes never repeat inside
 * one object, and every object (every rewrite of a file too) draws a new
 * salt and so a new key: no (key, nonce) pair is ever used twice. Two of m
 * objects under one data key generation share a key only if their 224
 * random salt bits meet, at odds of about m^2 / 2^225. Logs start a new
 * segment, with a new salt, each time a writer reopens them (crypt_log.c).
 * The AAD of each chunk binds the header fields, tenant id, job id, object
 * name, index and final flag, so bit flips, truncation, reordering, and
 * moving a file to another name, job or tenant all fail authentication, as
 * does a wrong key.
 * The data key never meets a nonce; the only random nonces are the
 * wrapping nonces, bounded by CRYPT_WRAPS_PER_KEY_LIMIT.
 *
 * Rotation: a new tenant KEK re-wraps the tenant's data keys; no data is
 * touched. A data-key rotation adds a generation to each data key for what
 * is written next (keys.h); older objects keep theirs. Destroying every wrapped copy of a tenant
 * KEK makes all of the tenant's objects and logs unreadable (crypto-shredding).
 *
 * Errors: 0 or a negative err_code (-ERR_X, error.h), with a message in err
 * (errlen bytes; err may be NULL). A sink or source callback's own negative
 * code is passed through unchanged.
 *
 * Secrets: key material lives in crypt_key values that the caller clears
 * with crypt_key_clear() (OPENSSL_cleanse); writers, readers and contexts
 * clear the keys they hold when freed. Nothing here logs a key.
 */
#ifndef TY_CRYPT_H
#define TY_CRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define CRYPT_KEY_LEN             32
#define CRYPT_NONCE_LEN           12
#define CRYPT_TAG_LEN             16
#define CRYPT_WRAP_VERSION        1
#define CRYPT_WRAPPED_LEN         (1 + CRYPT_NONCE_LEN + CRYPT_KEY_LEN + CRYPT_TAG_LEN) /* 61 */
#define CRYPT_WRAPS_PER_KEY_LIMIT (1u << 24)
#define CRYPT_CONTEXT_MAX         255 /* bytes of a wrapping context string */
#define CRYPT_CONTEXT_TENANT_KEK  "tenant-kek"
#define CRYPT_CONTEXT_JOB_DEK     "job-dek"
#define CRYPT_CONTEXT_DATASET_DEK "dataset-dek"
#define CRYPT_CONTEXT_CODE_DEK    "code-dek"

#define CRYPT_MAGIC          "TYEC" /* 4 bytes, no terminator in the file */
#define CRYPT_FORMAT_VERSION 2      /* written; 1 is still read (generation 1) */
#define CRYPT_KIND_OBJECT    1
#define CRYPT_KIND_LOG       2
#define CRYPT_SALT_LEN       32
#define CRYPT_HEADER_LEN     (4 + 1 + 1 + 4 + CRYPT_SALT_LEN) /* 42 */
#define CRYPT_CHUNK          (64u * 1024) /* plaintext bytes of a full object chunk */
#define CRYPT_LOG_RECORD_MAX (64u * 1024) /* plaintext bytes of one log record */
#define CRYPT_ID_MAX         64           /* bytes of a tenant or job id */
#define CRYPT_NAME_MAX       255          /* bytes of an object name */

/* ---- keys ----------------------------------------------------------- */

typedef struct crypt_key {
	unsigned char bytes[CRYPT_KEY_LEN];
} crypt_key;

/* OUT *k: 32 bytes from OpenSSL's CSPRNG. RET 0 or -ERR_INTERNAL. */
int crypt_key_generate(crypt_key *k);

/* Overwrite k with zeros in a way the compiler keeps. k may be NULL. */
void crypt_key_clear(crypt_key *k);

/* Parse exactly 2 * CRYPT_KEY_LEN hex digits (either case). RET: true when valid. */
bool crypt_key_from_hex(const char *hex, size_t len, crypt_key *out);

/*
 * Read a secret key of n bytes (at most CRYPT_KEY_FILE_MAX) from path: a
 * regular file (not a symlink) owned by the process's effective user, of
 * mode 0600 or stricter, holding 2n hex digits and an optional trailing
 * newline; messages name it what ("master key file"). The master key and
 * the audit log's signing key are read this way.
 * RET 0; -ERR_MASTER_KEY_INVALID with the reason in err (out wiped).
 */
#define CRYPT_KEY_FILE_MAX 64
int crypt_key_file_read(const char *path, const char *what, unsigned char *out, size_t n, char *err,
                        size_t errlen);

/*
 * Load the master key from path: a regular file (not a symlink) owned by
 * the process's effective user, of mode 0600 or stricter, holding 64 hex
 * digits and an optional trailing newline.
 * RET 0; -ERR_MASTER_KEY_INVALID with the reason in err.
 */
int crypt_master_load_file(const char *path, crypt_key *out, char *err, size_t errlen);

/*
 * The master key from the settings: TRAINYARD_MASTER_KEY_FILE (preferred),
 * else TRAINYARD_MASTER_KEY (64 hex digits, treated like an unseal key).
 * After reading TRAINYARD_MASTER_KEY this overwrites the variable's bytes
 * and removes it from the environment, so cfg->master_key then reads as
 * "". Setting both, or neither, is refused.
 * RET 0; -ERR_MASTER_KEY_INVALID with the reason in err.
 */
int crypt_master_from_config(const ty_config *cfg, crypt_key *out, char *err, size_t errlen);

/*
 * The previous master key during a rotation: TRAINYARD_MASTER_KEY_PREVIOUS_FILE,
 * read like TRAINYARD_MASTER_KEY_FILE. OUT *out when set.
 * RET 1 (read), 0 (the setting is empty), -ERR_MASTER_KEY_INVALID.
 */
int crypt_master_previous_from_config(const ty_config *cfg, crypt_key *out, char *err,
                                      size_t errlen);

/*
 * A key's id: the first CRYPT_KEY_ID_BYTES bytes of SHA-256("trainyard key
 * id v1" | key) in lower-case hex. It names a master key in the database
 * (tenant_keys.master_key_id) and in messages without telling anything of
 * the key. OUT id: 2 * CRYPT_KEY_ID_BYTES digits and a terminator.
 */
#define CRYPT_KEY_ID_BYTES 8
#define CRYPT_KEY_ID_LEN   (2 * CRYPT_KEY_ID_BYTES)
void crypt_key_id(const crypt_key *k, char id[CRYPT_KEY_ID_LEN + 1]);

/* ---- wrapping ------------------------------------------------------- */

/*
 * "<kind>|<id>|v<version>", e.g. crypt_context(buf, n, CRYPT_CONTEXT_JOB_DEK,
 * job_id, 3) -> "job-dek|<job id>|v3". RET 0; -ERR_INTERNAL when it does not
 * fit in n bytes or version < 1.
 */
int crypt_context(char *buf, size_t n, const char *kind, const char *id, int version);

/*
 * Wrap key under kek for context (1..CRYPT_CONTEXT_MAX bytes).
 * OUT out: version 1 | 12 nonce | 32 ciphertext | 16 tag.
 * RET 0; -ERR_INTERNAL (bad context, CSPRNG or cipher failure).
 */
int crypt_wrap(const crypt_key *kek, const char *context, const crypt_key *key,
               unsigned char out[CRYPT_WRAPPED_LEN]);

/*
 * Unwrap len bytes made by crypt_wrap. OUT *out (cleared on failure).
 * RET 0; -ERR_KEY_UNWRAP_FAILED for a wrong length or version, a wrong
 * kek or context, or any changed byte.
 */
int crypt_unwrap(const crypt_key *kek, const char *context, const unsigned char *wrapped,
                 size_t len, crypt_key *out);

/* ---- what an object belongs to ------------------------------------- */

/*
 * Tenant, job and the job's data key: what every object's AAD and key
 * derive from. A data key has generations 1..n (a rotation of data keys
 * adds one, keys.h): keys[g - 1] is generation g, the newest seals what
 * is written, and each object's header names the generation that sealed
 * it, so a reader holding the ring opens every object the job ever wrote.
 * The keys are the context's own (heap): copy with crypt_object_ctx_copy,
 * never by assignment, and free with crypt_object_ctx_clear.
 */
#define CRYPT_GENERATIONS_MAX 1024 /* generations of one data key */
typedef struct crypt_object_ctx {
	char tenant_id[CRYPT_ID_MAX + 1];
	char job_id[CRYPT_ID_MAX + 1];
	crypt_key *keys;
	uint32_t generations;
} crypt_object_ctx;

/* Fill *c (ids of 1..CRYPT_ID_MAX bytes) with a data key of one generation. RET 0 or -ERR_INTERNAL.
 */
int crypt_object_ctx_init(crypt_object_ctx *c, const char *tenant_id, const char *job_id,
                          const crypt_key *data_key);
/* The same with n generations, keys[0] the first (1 <= n <= CRYPT_GENERATIONS_MAX). */
int crypt_object_ctx_init_ring(crypt_object_ctx *c, const char *tenant_id, const char *job_id,
                               const crypt_key *keys, size_t n);
/*
 * The same from the ring's text, the form in which the API hands a ring
 * to an attempt and the worker to the trainer: each generation's key as
 * 64 hex digits, oldest first, separated by commas. RET 0, or
 * -ERR_INTERNAL for a malformed text (nothing is kept).
 */
int crypt_object_ctx_init_text(crypt_object_ctx *c, const char *tenant_id, const char *job_id,
                               const char *text);
/* The ring's text (malloc'd; the caller wipes it with OPENSSL_cleanse and frees it), or NULL. */
char *crypt_object_ctx_text(const crypt_object_ctx *c);
/* Generation g's key, or NULL when c holds no such generation. */
const crypt_key *crypt_object_ctx_key(const crypt_object_ctx *c, uint32_t generation);
/* *dst becomes a copy of *src with keys of its own. RET 0 or -ERR_INTERNAL. */
int crypt_object_ctx_copy(crypt_object_ctx *dst, const crypt_object_ctx *src);
/* Wipe and free what c holds; c may be NULL or already cleared. */
void crypt_object_ctx_clear(crypt_object_ctx *c);

/* ---- streaming objects --------------------------------------------- */

/* Take all n bytes. RET 0 or a negative code (passed through to the caller). */
typedef int (*crypt_sink_fn)(void *arg, const void *buf, size_t n);
/* Fill buf with up to n bytes; *got < n only at the end. RET 0 or negative. */
typedef int (*crypt_source_fn)(void *arg, void *buf, size_t n, size_t *got);

/* A sink and a source over a file descriptor: arg points to the int fd. */
int crypt_fd_sink(void *arg, const void *buf, size_t n);
int crypt_fd_source(void *arg, void *buf, size_t n, size_t *got);

typedef struct crypt_object_writer crypt_object_writer;
typedef struct crypt_object_reader crypt_object_reader;

/*
 * Start the object name (1..CRYPT_NAME_MAX bytes, any content: it is only
 * authenticated) of ctx. Draws the salt and sends the header to the sink.
 * Memory is constant: one chunk buffer. ctx is copied.
 * OUT *out: free with crypt_object_writer_free (also after failures).
 */
int crypt_object_writer_open(const crypt_object_ctx *ctx, const char *name, crypt_sink_fn sink,
                             void *arg, crypt_object_writer **out, char *err, size_t errlen);
/*
 * A sink that can lend room in its own destination: reserve returns n
 * writable bytes there (or NULL to take this chunk through the sink as
 * usual), and commit keeps the n bytes last reserved once they hold the
 * sealed chunk. The cipher then writes each chunk where it ends up, and
 * nothing copies it afterwards. Failures before commit leave the
 * destination as it was. Set right after crypt_object_writer_open; the
 * header always goes through the sink.
 */
typedef void *(*crypt_reserve_fn)(void *arg, size_t n);
typedef int (*crypt_commit_fn)(void *arg, size_t n);
void crypt_object_writer_lend(crypt_object_writer *w, crypt_reserve_fn reserve,
                              crypt_commit_fn commit);
/* Encrypt n bytes; each full chunk goes to the sink as soon as it is full. */
int crypt_object_writer_write(crypt_object_writer *w, const void *buf, size_t n, char *err,
                              size_t errlen);
/* Send the final chunk (0..CRYPT_CHUNK-1 bytes). Nothing may be written after. */
int crypt_object_writer_finish(crypt_object_writer *w, char *err, size_t errlen);
/* Plaintext bytes taken so far. */
uint64_t crypt_object_writer_bytes(const crypt_object_writer *w);
/* The bytes on disk of an object of n plaintext bytes: header, data, a tag per chunk begun. */
static inline uint64_t crypt_object_sealed_size(uint64_t n)
{
	return CRYPT_HEADER_LEN + n + CRYPT_TAG_LEN * (n / CRYPT_CHUNK + 1);
}
void crypt_object_writer_free(crypt_object_writer *w);

/*
 * Read the header of the object name of ctx from source and check it.
 * RET 0; -ERR_DATA_AUTH_FAILED for a short or foreign header.
 * OUT *out: free with crypt_object_reader_free (also after failures).
 */
int crypt_object_reader_open(const crypt_object_ctx *ctx, const char *name, crypt_source_fn source,
                             void *arg, crypt_object_reader **out, char *err, size_t errlen);
/*
 * Copy up to n authenticated plaintext bytes into buf. A chunk is released
 * only after its tag verifies. OUT *got: < n only at the authenticated end
 * of the object. RET 0; -ERR_DATA_AUTH_FAILED for any tampering,
 * truncation, reordering, wrong name, job, tenant or key (then no byte of
 * the failing chunk is returned, and every later call fails too).
 * Where at least a whole chunk of buf is free, the chunk is read and
 * decrypted there in place; bytes of buf past *got are then unspecified,
 * and those of a chunk that fails are overwritten with zeros.
 */
int crypt_object_reader_read(crypt_object_reader *r, void *buf, size_t n, size_t *got, char *err,
                             size_t errlen);
/* Like crypt_object_reader_read, discarding the bytes (each chunk is still verified). */
int crypt_object_reader_skip(crypt_object_reader *r, size_t n, size_t *got, char *err,
                             size_t errlen);
void crypt_object_reader_free(crypt_object_reader *r);

/* ---- sealed logs ---------------------------------------------------- */

typedef struct crypt_log_writer crypt_log_writer;
typedef struct crypt_log_reader crypt_log_reader;

/*
 * Take over fd, the log file opened read-write (created 0600 when missing,
 * beneath its tenant's directory: tenantfs.h), for appending; path names it
 * in messages. It must be a regular file. An exclusive lock is held on it (a second writer gets
 * -ERR_CONFLICT). An existing log's records are authenticated first and
 * its index continues; a torn record at the end is cut off. A closed log
 * is -ERR_LOG_CLOSED; a log that fails authentication -ERR_DATA_AUTH_FAILED.
 * OUT *out: finish with crypt_log_writer_close or crypt_log_writer_free.
 */
int crypt_log_writer_open(int fd, const char *path, const crypt_object_ctx *ctx, const char *name,
                          crypt_log_writer **out, char *err, size_t errlen);
/* Append one record of 0..CRYPT_LOG_RECORD_MAX bytes with a single write(). */
int crypt_log_append(crypt_log_writer *w, const void *rec, size_t n, char *err, size_t errlen);
/* Make the records appended so far durable (fdatasync). */
int crypt_log_sync(crypt_log_writer *w, char *err, size_t errlen);
/* Records in the log, the existing ones included. */
uint64_t crypt_log_writer_records(const crypt_log_writer *w);
/* Append the closing record, sync and free w (also on failure). */
int crypt_log_writer_close(crypt_log_writer *w, char *err, size_t errlen);
/* Free w and unlock the file without closing the log: it can be reopened. */
void crypt_log_writer_free(crypt_log_writer *w);

typedef struct crypt_log_state {
	uint64_t records;     /* authenticated records returned so far */
	bool closed;          /* the closing record was read */
	bool incomplete_tail; /* bytes of an unfinished record follow the last one */
} crypt_log_state;

enum { CRYPT_LOG_END = 0, CRYPT_LOG_RECORD = 1 };

/*
 * Take over fd, the log file opened for reading (tenantfs.h), named path in
 * messages; the header is read with the first record. fd is closed on
 * failure too.
 */
int crypt_log_reader_open(int fd, const char *path, const crypt_object_ctx *ctx, const char *name,
                          crypt_log_reader **out, char *err, size_t errlen);
/*
 * The next record. RET CRYPT_LOG_RECORD with *rec (valid until the next
 * call) and *len; CRYPT_LOG_END when no complete record follows now (see
 * crypt_log_reader_state: closed, or an incomplete tail; call again later
 * to see records appended since); -ERR_DATA_AUTH_FAILED when a complete
 * record fails authentication or bytes follow the closing record;
 * -ERR_STORAGE_IO.
 */
int crypt_log_next(crypt_log_reader *r, const void **rec, size_t *len, char *err, size_t errlen);
void crypt_log_reader_state(const crypt_log_reader *r, crypt_log_state *out);
void crypt_log_reader_free(crypt_log_reader *r);

#endif
