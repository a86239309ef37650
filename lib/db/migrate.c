/*
 * migrate.c - apply the embedded migrations.
 */
#include "migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "embedded.h"
#include "error.h"
#include "log.h"

/* Advisory lock key shared by every migrator: "trainyrd" as a 64-bit number. */
#define MIGRATE_LOCK_KEY "7022344059591893092"

/* RET: the migration number of an embedded path, or -1 when not a migration. */
static int migration_number(const char *path)
{
	const char *prefix = "migrations/";
	size_t n = strlen(prefix);
	if (strncmp(path, prefix, n) != 0)
		return -1;
	const char *p = path + n;
	if (strspn(p, "0123456789") != 4 || p[4] != '_')
		return -1;
	return atoi(p);
}

int migrate_known_version(void)
{
	int max = 0;
	for (const embedded_file *f = embedded_files; f->path; f++) {
		int v = migration_number(f->path);
		if (v > max)
			max = v;
	}
	return max;
}

static const char create_table[] = "CREATE TABLE IF NOT EXISTS schema_migrations ("
                                   " version integer PRIMARY KEY, name text NOT NULL,"
                                   " applied_at timestamptz NOT NULL DEFAULT now())";

int migrate_db_version(PGconn *c, int *version)
{
	PGresult *r;
	*version = 0;
	int rc = db_query(c, &r, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0, NULL);
	bool exists = rc == 0 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	if (rc || !exists)
		return rc;
	rc = db_query(c, &r, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL);
	if (rc == 0)
		*version = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

static int apply_one(PGconn *c, const embedded_file *f, int v, int *done, char *err, size_t errlen)
{
	int rc = db_begin(c);
	if (rc)
		return rc;
	PGresult *r = NULL;
	if ((rc = db_query(c, NULL, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")", 0,
	                   NULL)) ||
	    (rc = db_query(c, NULL, create_table, 0, NULL)))
		goto fail;
	char vs[16];
	snprintf(vs, sizeof(vs), "%d", v);
	const char *p[] = {vs, f->path + strlen("migrations/")};
	if ((rc = db_query(c, &r, "SELECT 1 FROM schema_migrations WHERE version = $1", 1, p)))
		goto fail;
	bool present = PQntuples(r) > 0;
	PQclear(r);
	r = NULL;
	if (!present) {
		/* a migration file may hold several statements: simple protocol */
		PGresult *x = PQexec(c, f->data);
		ExecStatusType st = PQresultStatus(x);
		if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
			const char *m = PQresultErrorMessage(x);
			snprintf(err, errlen, "migration %s failed: %.*s", f->path,
			         (int)strcspn(m, "\n"), m);
			rc = PQstatus(c) == CONNECTION_OK ? -ERR_INTERNAL : -ERR_DB_UNAVAILABLE;
			PQclear(x);
			goto fail;
		}
		PQclear(x);
		if ((rc = db_query(c, NULL,
		                   "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
		                   2, p)))
			goto fail;
		(*done)++;
	}
	if ((rc = db_commit(c)))
		goto fail;
	if (!present)
		log_printf(LOG_INFO, "applied migration %s", f->path);
	return 0;
fail:
	PQclear(r);
	db_rollback(c);
	if (!*err)
		snprintf(err, errlen, "could not apply migration %s", f->path);
	return rc;
}

/* Read the database's version and refuse one from the future. RET 0 or -ERR_*. */
static int version_guard(PGconn *c, int *have, char *err, size_t errlen)
{
	int rc = migrate_db_version(c, have);
	if (rc) {
		snprintf(err, errlen, "could not read the schema version");
		return rc;
	}
	int known = migrate_known_version();
	if (*have > known) {
		snprintf(err, errlen, "database schema version %d is newer than this binary's %d",
		         *have, known);
		return -ERR_SCHEMA_TOO_NEW;
	}
	return 0;
}

int migrate_apply(PGconn *c, int *applied, char *err, size_t errlen)
{
	*applied = 0;
	err[0] = '\0';
	int have, rc = version_guard(c, &have, err, errlen);
	if (rc)
		return rc;
	int known = migrate_known_version();
	for (int v = have + 1; v <= known; v++) {
		for (const embedded_file *f = embedded_files; f->path; f++) {
			if (migration_number(f->path) != v)
				continue;
			if ((rc = apply_one(c, f, v, applied, err, errlen)))
				return rc;
		}
	}
	return 0;
}

int migrate_check(PGconn *c, char *err, size_t errlen)
{
	int have, rc = version_guard(c, &have, err, errlen);
	if (rc)
		return rc;
	int known = migrate_known_version();
	if (have < known) {
		snprintf(err, errlen,
		         "database schema version %d is older than %d: run `yardctl db migrate`",
		         have, known);
		return -ERR_INTERNAL;
	}
	return 0;
}
