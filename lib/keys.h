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
 * Rotation adds a KEK version and re-wraps every data key of the tenant
 * under it, without touching encrypted data; the older versions are then
 * deleted. Shredding deletes every KEK version, and with them the wrapped
 * data keys: nothing the tenant's jobs wrote can be decrypted again.
 *
 * Errors: 0, or -ERR_KEYS_UNAVAILABLE (the tenant's keys were shredded:
 * a job of a shredded tenant gets no new key), -ERR_KEY_UNWRAP_FAILED
 * (a wrong master key, or altered rows), -ERR_DB_UNAVAILABLE, -ERR_INTERNAL.
 */
#ifndef TY_KEYS_H
#define TY_KEYS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "crypt.h"

/*
 * The job's data key, made (and wrapped under the tenant's current KEK,
 * made too when the tenant has none yet) on first use. A KEK that has
 * wrapped CRYPT_WRAPS_PER_KEY_LIMIT keys is rotated first.
 * OUT: *key, *version (the KEK version wrapping it); *rotated (when not
 * NULL), whether the tenant's KEK was rotated for it.
 */
int keys_job_data_key(PGconn *c, const crypt_key *master, const char *tenant_id, const char *job_id,
                      crypt_key *key, int *version, bool *rotated);

/*
 * The job's data key when it has one, for reading: nothing is made,
 * locked or rotated, and no transaction is needed (one statement reads
 * the data key and its KEK together). RET -ERR_KEYS_UNAVAILABLE when the
 * job has no data key: none was ever fetched, or its tenant's keys were
 * destroyed. OUT: *key, *version (the KEK version wrapping it).
 */
int keys_job_data_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                               const char *job_id, crypt_key *key, int *version);

/*
 * A dataset's data key, the same way: made on first use (a dataset's first
 * version), and read back without change by keys_dataset_key_existing().
 */
int keys_dataset_key(PGconn *c, const crypt_key *master, const char *tenant_id,
                     const char *dataset_id, crypt_key *key, int *version, bool *rotated);
int keys_dataset_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                              const char *dataset_id, crypt_key *key, int *version);

/* OUT: *version, the new KEK version; *rewrapped, the data keys (jobs' and datasets') re-wrapped.
 */
int keys_rotate(PGconn *c, const crypt_key *master, const char *tenant_id, int *version,
                int64_t *rewrapped);

/* Destroy the tenant's keys. OUT: *destroyed, the data keys that went with them. */
int keys_shred(PGconn *c, const char *tenant_id, int64_t *destroyed);

#endif
