/*
 * keys.h - the envelope keys in the database: each tenant's key-encryption
 * key (KEK), wrapped by the master key, and each job's and each dataset's
 * data key, wrapped by a version of its tenant's KEK (crypt.h does the
 * cryptography).
 *
 * Every function runs inside the caller's open transaction and locks what
 * it changes, so concurrent callers see one KEK version and one data key
 * per job. Key material lives only in memory; callers clear it
 * (crypt_key_clear) and never log it. The audit records of key operations
 * are the caller's (the API writes them in the same transaction).
 *
 * Rotation adds a KEK version and re-wraps every data key generation of
 * the tenant under it, without touching encrypted data; the older versions
 * are then deleted. A data key is a ring of generations (crypt.h): with
 * data_keys, rotation also advances the tenant's data-key epoch, and each
 * job or dataset gets a new generation the next time it is given its key
 * to write with. Shredding deletes every KEK version, and with them the wrapped
 * data keys: nothing the tenant's jobs wrote can be decrypted again.
 *
 * Each KEK row names the master key that wraps it (master_key_id, its
 * crypt_key_id()). During a master-key rotation the server holds two: the
 * current one, which wraps every new KEK, and the previous one
 * (keys_master_previous_set), which only unwraps the rows that still name
 * it. keys_master_rewrap_batch() moves the rows from one to the other in
 * batches, and keys_master_retire() retires the previous one once no row
 * names it (docs/storage.md, "Rotating the master key").
 *
 * Errors: 0, or -ERR_KEYS_UNAVAILABLE (the tenant's keys were shredded:
 * a job of a shredded tenant gets no new key), -ERR_KEY_UNWRAP_FAILED
 * (a wrong master key, or altered rows), -ERR_MASTER_KEY_MISSING (a row
 * names a master key the server does not hold), -ERR_DB_UNAVAILABLE,
 * -ERR_INTERNAL.
 */
#ifndef TY_KEYS_H
#define TY_KEYS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "crypt.h"

/*
 * The job's data key ring for writing (crypt.h: generations 1..n, the
 * newest seals): made, and wrapped under the tenant's current KEK (made
 * too when the tenant has none yet), on first use; given a new generation
 * when its newest was made before the tenant's last data-key rotation
 * (keys_rotate with data_keys). A KEK that has wrapped
 * CRYPT_WRAPS_PER_KEY_LIMIT keys is rotated first.
 * OUT: *ring (ids and keys; the caller clears it), *version (the KEK
 * version wrapping them); *rotated (when not NULL), whether the tenant's
 * KEK was rotated for it.
 */
int keys_job_data_key(PGconn *c, const crypt_key *master, const char *tenant_id, const char *job_id,
                      crypt_object_ctx *ring, int *version, bool *rotated);

/*
 * The job's data key ring when it has one, for reading: nothing is made,
 * locked or rotated, and no transaction is needed (one statement reads
 * the generations and their KEK together). RET -ERR_KEYS_UNAVAILABLE when
 * the job has no data key: none was ever fetched, or its tenant's keys
 * were destroyed. OUT: *ring, *version (the KEK version wrapping it).
 */
int keys_job_data_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                               const char *job_id, crypt_object_ctx *ring, int *version);

/*
 * A dataset's data key ring, the same way: made on first use (a dataset's
 * first version), a new generation for an upload after a data-key
 * rotation, and read back without change by keys_dataset_key_existing().
 */
int keys_dataset_key(PGconn *c, const crypt_key *master, const char *tenant_id,
                     const char *dataset_id, crypt_object_ctx *ring, int *version, bool *rotated);
int keys_dataset_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                              const char *dataset_id, crypt_object_ctx *ring, int *version);

/* A code bundle's data key ring, the same way as a dataset's (docs/own-code.md). */
int keys_code_key(PGconn *c, const crypt_key *master, const char *tenant_id, const char *bundle_id,
                  crypt_object_ctx *ring, int *version, bool *rotated);
int keys_code_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                           const char *bundle_id, crypt_object_ctx *ring, int *version);

/*
 * Rotate the tenant's KEK: a new version re-wraps every generation of the
 * tenant's data keys. With data_keys, the tenant's data-key epoch advances
 * too, so that every job and dataset seals what it writes next under a new
 * generation (nothing already written is touched); RET
 * -ERR_DATA_KEY_GENERATIONS once CRYPT_GENERATIONS_MAX epochs are used.
 * OUT: *version, the new KEK version; *rewrapped, the data key
 * generations (jobs', datasets' and code bundles') re-wrapped.
 */
int keys_rotate(PGconn *c, const crypt_key *master, const char *tenant_id, bool data_keys,
                int *version, int64_t *rewrapped);

/* Destroy the tenant's keys. OUT: *destroyed, the data keys that went with them. */
int keys_shred(PGconn *c, const char *tenant_id, int64_t *destroyed);

/* ---- the master key and its rotation -------------------------------- */

/*
 * The previous master key during a rotation (TRAINYARD_MASTER_KEY_PREVIOUS_FILE),
 * copied; NULL forgets it. Set once at start, before any thread uses this
 * module: every function here that unwraps a KEK then tries it for the rows
 * that name it. Nothing new is wrapped with it.
 */
void keys_master_previous_set(const crypt_key *previous);
/* RET: the previous master key, or NULL when none is set. */
const crypt_key *keys_master_previous(void);

/*
 * Unwrap a secret the master key seals directly (a webhook's signing
 * secret, whose row may not name its key): with master, then with the
 * previous master key when one is set. RET 0 or -ERR_KEY_UNWRAP_FAILED.
 */
int keys_master_secret_unwrap(const crypt_key *master, const char *context,
                              const unsigned char *wrapped, size_t len, crypt_key *out);

/*
 * Unwrap KEK version of tenant_id, wrapped (len bytes) by the master key
 * named master_id: master or previous (may be NULL), whichever has that id.
 * A NULL or empty master_id (a row from before ids were kept) is tried with
 * master, then previous. OUT *kek (cleared on failure).
 * RET 0; -ERR_MASTER_KEY_MISSING when neither key has the id;
 * -ERR_KEY_UNWRAP_FAILED; -ERR_INTERNAL.
 */
int keys_kek_unwrap(const crypt_key *master, const crypt_key *previous, const char *master_id,
                    const char *tenant_id, int version, const unsigned char *wrapped, size_t len,
                    crypt_key *kek);

/*
 * Wrap KEK version of tenant_id again: unwrap it with from, wrap it with to
 * (a fresh nonce, the same context). OUT out. RET 0; -ERR_KEY_UNWRAP_FAILED
 * when from does not open it; -ERR_INTERNAL.
 */
int keys_kek_rewrap(const crypt_key *from, const crypt_key *to, const char *tenant_id, int version,
                    const unsigned char *wrapped, size_t len, unsigned char out[CRYPT_WRAPPED_LEN]);

/*
 * Start (or resume) rotating from the master key from to to: both ids are
 * recorded in master_keys, to as not retired. RET 0; -ERR_CONFLICT when the
 * two are one key; -ERR_DB_UNAVAILABLE.
 */
int keys_master_rotation_begin(PGconn *c, const crypt_key *from, const crypt_key *to);

/*
 * One batch of the rotation, in the caller's transaction: at most limit
 * rows not yet under to (tenant KEKs, then webhook signing secrets) are
 * locked, unwrapped with from and wrapped with to, and name to afterwards.
 * Rows another transaction holds are left to a later batch. A crash loses
 * at most the batch, which is then done again.
 * OUT *done, rows wrapped again; *left, rows not under to after it.
 * RET 0; -ERR_MASTER_KEY_MISSING (a row names a third master key);
 * -ERR_KEY_UNWRAP_FAILED (from does not open a row that names it);
 * -ERR_CONFLICT (from is to); -ERR_DB_UNAVAILABLE; -ERR_INTERNAL.
 */
int keys_master_rewrap_batch(PGconn *c, const crypt_key *from, const crypt_key *to, int limit,
                             int64_t *done, int64_t *left);

/*
 * Retire from when no stored row is outside to any more. OUT *retired
 * (false: rows remain, or from is not recorded). RET 0 or -ERR_DB_UNAVAILABLE.
 */
int keys_master_retire(PGconn *c, const crypt_key *from, const crypt_key *to, bool *retired);

/*
 * What the stored rows need: OUT *out (new reference) {master_key_id,
 * previous_key_id (null without previous), previous_needed (a row still
 * names it, or predates ids), keys: [{id, held: current|previous|none,
 * tenant_keys, webhook_secrets, retired_at?}], unidentified: {tenant_keys,
 * webhook_secrets} of rows from before ids, or null}. previous may be NULL.
 */
int keys_master_status(PGconn *c, const crypt_key *master, const crypt_key *previous, json_t **out);

#endif
