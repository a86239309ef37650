/*
 * keys_record.h - the keys a deployment's database belongs with.
 *
 * API processes of one deployment must hold the same master key (which
 * wraps every tenant key and webhook secret) and the same audit signing
 * key (which signs the audit log's tree heads): a process with another
 * would serve what it cannot open, or sign heads no reader can verify,
 * and store them for good. So the first process to start records their
 * ids (deployment_keys, migration 0024), and every later one compares its
 * own: one that differs, or that holds no key where one is on record,
 * refuses to start and says which key and which ids.
 *
 * A master-key rotation (docs/storage.md, "Rotating the master key")
 * restarts the API with the new key and the old one as the previous: a
 * process whose previous master key is the one on record records its new
 * key instead, and from then on the old key alone is refused. Rolling
 * back is the same move the other way (the old key as new, the new one as
 * previous).
 */
#ifndef TY_KEYS_RECORD_H
#define TY_KEYS_RECORD_H

#include <libpq-fe.h>
#include <stddef.h>

/* The ids of the keys a process holds (16 hex digits), each NULL when it holds none. */
typedef struct keys_held {
	const char *master, *master_previous, *audit;
} keys_held;

/*
 * Record the keys k where none is on record yet, move the master's record
 * on a rotation, and compare the rest; one transaction, serialised against
 * other processes starting at once. OUT: note (may be NULL) says what
 * changed ("" when nothing did). RET 0, or -1 with why this process must
 * not start in err (another key, no key, or the database failed).
 */
int keys_record_check(PGconn *c, const keys_held *k, char *note, size_t notelen, char *err,
                      size_t errlen);

#endif
