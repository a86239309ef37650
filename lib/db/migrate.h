/*
 * migrate.h - schema migrations compiled into every binary.
 *
 * Migrations are migrations/NNNN_name.sql, embedded at build time. Each is
 * applied in its own transaction holding a transaction-scoped advisory
 * lock, and recorded in schema_migrations, so concurrent migrators are
 * safe and a failed migration leaves nothing half-done. A database whose
 * schema is newer than the binary's newest migration is refused.
 */
#ifndef TY_MIGRATE_H
#define TY_MIGRATE_H

#include <libpq-fe.h>
#include <stddef.h>

/* RET: the highest migration number this binary carries. */
int migrate_known_version(void);

/* OUT: *version, the database's applied version (0: none). RET 0 or -ERR_*. */
int migrate_db_version(PGconn *c, int *version);

/*
 * Apply every pending migration. OUT: *applied, how many were applied.
 * RET 0; -ERR_SCHEMA_TOO_NEW; -ERR_DB_UNAVAILABLE; -ERR_INTERNAL with the
 * server's message in err.
 */
int migrate_apply(PGconn *c, int *applied, char *err, size_t errlen);

/*
 * Check that the schema is exactly current. RET 0; -ERR_SCHEMA_TOO_NEW;
 * -ERR_INTERNAL when migrations are pending (message in err).
 */
int migrate_check(PGconn *c, char *err, size_t errlen);

#endif
