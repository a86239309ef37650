/*
 * keys.c - tenant KEKs and job data keys in the database (keys.h).
 */
#include "keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "error.h"
#include "hex.h"

/* bytea text form of PostgreSQL ("\x..."). RET true and fills out when it is one wrapped key. */
static bool wrapped_from_pg(const char *v, unsigned char out[CRYPT_WRAPPED_LEN])
{
	return v && strncmp(v, "\\x", 2) == 0 &&
	       hex_decode(v + 2, strlen(v + 2), out, CRYPT_WRAPPED_LEN);
}

static int unwrap_row(const crypt_key *kek, const char *kind, const char *id, int version,
                      const char *pg_wrapped, crypt_key *out)
{
	char ctx[CRYPT_CONTEXT_MAX + 1];
	unsigned char w[CRYPT_WRAPPED_LEN];
	if (crypt_context(ctx, sizeof(ctx), kind, id, version) < 0)
		return -ERR_INTERNAL;
	if (!wrapped_from_pg(pg_wrapped, w))
		return -ERR_KEY_UNWRAP_FAILED;
	return crypt_unwrap(kek, ctx, w, sizeof(w), out);
}

static int wrap_hex(const crypt_key *kek, const char *kind, const char *id, int version,
                    const crypt_key *key, char hex[2 * CRYPT_WRAPPED_LEN + 1])
{
	char ctx[CRYPT_CONTEXT_MAX + 1];
	unsigned char w[CRYPT_WRAPPED_LEN];
	int rc = crypt_context(ctx, sizeof(ctx), kind, id, version);
	if (rc == 0)
		rc = crypt_wrap(kek, ctx, key, w);
	if (rc == 0)
		hex_encode(w, CRYPT_WRAPPED_LEN, hex);
	return rc;
}

/* Insert KEK version v (a fresh key) for the tenant. OUT: *kek. */
static int kek_create(PGconn *c, const crypt_key *master, const char *tenant_id, int v,
                      crypt_key *kek)
{
	char hex[2 * CRYPT_WRAPPED_LEN + 1], ver[16];
	snprintf(ver, sizeof(ver), "%d", v);
	int rc = crypt_key_generate(kek) < 0 ? -ERR_INTERNAL : 0;
	if (rc == 0)
		rc = wrap_hex(master, CRYPT_CONTEXT_TENANT_KEK, tenant_id, v, kek, hex);
	const char *p[] = {tenant_id, ver, hex};
	if (rc == 0)
		rc = db_query(c, NULL,
		              "INSERT INTO tenant_keys (tenant_id, version, wrapped)"
		              " VALUES ($1, $2::int, decode($3, 'hex'))",
		              3, p);
	return rc;
}

/*
 * The tenant's current KEK, locked; made when there is none. OUT: *kek,
 * *version, *wraps. RET -ERR_KEYS_UNAVAILABLE for a shredded tenant.
 */
static int kek_current(PGconn *c, const crypt_key *master, const char *tenant_id, crypt_key *kek,
                       int *version, int64_t *wraps)
{
	const char *p[] = {tenant_id};
	PGresult *r;
	/* the tenant row serialises key creation and rotation for the tenant */
	int rc = db_query(c, &r,
	                  "SELECT EXISTS (SELECT 1 FROM tenant_key_shreds WHERE tenant_id = $1)"
	                  " FROM tenants WHERE id = $1 FOR UPDATE",
	                  1, p);
	bool shredded = rc == 0 && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_TENANT_NOT_FOUND;
	PQclear(r);
	if (rc)
		return rc;
	if (shredded)
		return -ERR_KEYS_UNAVAILABLE;
	rc = db_query(c, &r,
	              "SELECT version, wrapped, wraps FROM tenant_keys WHERE tenant_id = $1"
	              " AND retired_at IS NULL ORDER BY version DESC LIMIT 1",
	              1, p);
	if (rc == 0 && PQntuples(r) == 1) {
		*version = atoi(PQgetvalue(r, 0, 0));
		*wraps = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
		rc = unwrap_row(master, CRYPT_CONTEXT_TENANT_KEK, tenant_id, *version,
		                PQgetvalue(r, 0, 1), kek);
	} else if (rc == 0) {
		*version = 1;
		*wraps = 0;
		rc = kek_create(c, master, tenant_id, 1, kek);
	}
	PQclear(r);
	return rc;
}

/*
 * What owns a data key: a job or a dataset. Each kind has its table and its
 * wrapping context; everything else about their keys is the same.
 */
typedef struct key_owner {
	const char *context;  /* CRYPT_CONTEXT_*_DEK */
	const char *select;   /* $1 owner: key_version, wrapped */
	const char *insert;   /* $1 owner, $2 tenant, $3 version, $4 wrapped hex */
	const char *existing; /* $1 owner, $2 tenant: key_version, wrapped, the KEK's wrapped */
	const char *all;      /* $1 tenant: owner, key_version, wrapped, the KEK's wrapped */
	const char *update;   /* $1 owner, $2 version, $3 wrapped hex */
} key_owner;

#define OWNER_SQL(table, col)                                                                      \
	"SELECT key_version, wrapped FROM " table " WHERE " col " = $1",                           \
	    "INSERT INTO " table " (" col ", tenant_id, key_version, wrapped)"                     \
	    " VALUES ($1, $2, $3::int, decode($4, 'hex'))",                                        \
	    "SELECT k.key_version, k.wrapped, t.wrapped FROM " table " k"                          \
	    " JOIN tenant_keys t ON t.tenant_id = k.tenant_id AND t.version = k.key_version"       \
	    " WHERE k." col " = $1 AND k.tenant_id = $2",                                          \
	    "SELECT k." col ", k.key_version, k.wrapped, t.wrapped FROM " table " k"               \
	    " JOIN tenant_keys t ON t.tenant_id = k.tenant_id AND t.version = k.key_version"       \
	    " WHERE k.tenant_id = $1 FOR UPDATE OF k",                                             \
	    "UPDATE " table " SET key_version = $2::int, wrapped = decode($3, 'hex')"              \
	    " WHERE " col " = $1"

static const key_owner owners[] = {
    {CRYPT_CONTEXT_JOB_DEK, OWNER_SQL("job_keys", "job_id")},
    {CRYPT_CONTEXT_DATASET_DEK, OWNER_SQL("dataset_keys", "dataset_id")},
};
#define JOB_OWNER     (&owners[0])
#define DATASET_OWNER (&owners[1])

/* The data key of owner id (made on first use), as keys_job_data_key() describes. */
static int data_key(PGconn *c, const crypt_key *master, const key_owner *o, const char *tenant_id,
                    const char *id, crypt_key *key, int *version, bool *rotated)
{
	if (rotated)
		*rotated = false;
	crypt_key kek;
	int64_t wraps = 0;
	int rc = kek_current(c, master, tenant_id, &kek, version, &wraps);
	const char *p[] = {id};
	PGresult *r = NULL;
	if (rc == 0)
		rc = db_query(c, &r, o->select, 1, p);
	if (rc == 0 && PQntuples(r) == 1) {
		/* rotation keeps every data key under the current version */
		int v = atoi(PQgetvalue(r, 0, 0));
		rc = v == *version ? unwrap_row(&kek, o->context, id, v, PQgetvalue(r, 0, 1), key)
		                   : -ERR_KEY_UNWRAP_FAILED;
	} else if (rc == 0) {
		PQclear(r);
		r = NULL;
		if (wraps >= (int64_t)CRYPT_WRAPS_PER_KEY_LIMIT) {
			int64_t n;
			crypt_key_clear(&kek);
			if ((rc = keys_rotate(c, master, tenant_id, version, &n)) ||
			    (rc = kek_current(c, master, tenant_id, &kek, version, &wraps)))
				return rc;
			if (rotated)
				*rotated = true;
		}
		char hex[2 * CRYPT_WRAPPED_LEN + 1], ver[16];
		snprintf(ver, sizeof(ver), "%d", *version);
		rc = crypt_key_generate(key) < 0 ? -ERR_INTERNAL : 0;
		if (rc == 0)
			rc = wrap_hex(&kek, o->context, id, *version, key, hex);
		const char *q[] = {id, tenant_id, ver, hex};
		if (rc == 0)
			rc = db_query(c, NULL, o->insert, 4, q);
		const char *w[] = {tenant_id, ver};
		if (rc == 0)
			rc =
			    db_query(c, NULL,
			             "UPDATE tenant_keys SET wraps = wraps + 1 WHERE tenant_id = $1"
			             " AND version = $2::int",
			             2, w);
	}
	PQclear(r);
	crypt_key_clear(&kek);
	if (rc)
		crypt_key_clear(key);
	return rc;
}

static int data_key_existing(PGconn *c, const crypt_key *master, const key_owner *o,
                             const char *tenant_id, const char *id, crypt_key *key, int *version)
{
	const char *p[] = {id, tenant_id};
	PGresult *r;
	int rc = db_query(c, &r, o->existing, 2, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_KEYS_UNAVAILABLE;
	crypt_key kek;
	if (rc == 0) {
		*version = atoi(PQgetvalue(r, 0, 0));
		rc = unwrap_row(master, CRYPT_CONTEXT_TENANT_KEK, tenant_id, *version,
		                PQgetvalue(r, 0, 2), &kek);
		if (rc == 0)
			rc = unwrap_row(&kek, o->context, id, *version, PQgetvalue(r, 0, 1), key);
		crypt_key_clear(&kek);
	}
	PQclear(r);
	if (rc)
		crypt_key_clear(key);
	return rc;
}

int keys_job_data_key(PGconn *c, const crypt_key *master, const char *tenant_id, const char *job_id,
                      crypt_key *key, int *version, bool *rotated)
{
	return data_key(c, master, JOB_OWNER, tenant_id, job_id, key, version, rotated);
}

int keys_job_data_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                               const char *job_id, crypt_key *key, int *version)
{
	return data_key_existing(c, master, JOB_OWNER, tenant_id, job_id, key, version);
}

int keys_dataset_key(PGconn *c, const crypt_key *master, const char *tenant_id,
                     const char *dataset_id, crypt_key *key, int *version, bool *rotated)
{
	return data_key(c, master, DATASET_OWNER, tenant_id, dataset_id, key, version, rotated);
}

int keys_dataset_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                              const char *dataset_id, crypt_key *key, int *version)
{
	return data_key_existing(c, master, DATASET_OWNER, tenant_id, dataset_id, key, version);
}

/* Re-wrap every data key of kind o of the tenant under neu (version nv). */
static int rewrap_owner(PGconn *c, const key_owner *o, const char *tenant_id,
                        const crypt_key *master, int nv, const crypt_key *neu, int64_t *rewrapped)
{
	const char *p[] = {tenant_id};
	PGresult *r;
	int rc = db_query(c, &r, o->all, 1, p);
	char ver[16];
	snprintf(ver, sizeof(ver), "%d", nv);
	for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
		const char *id = PQgetvalue(r, i, 0);
		int v = atoi(PQgetvalue(r, i, 1));
		crypt_key old_kek, dk;
		char hex[2 * CRYPT_WRAPPED_LEN + 1];
		rc = unwrap_row(master, CRYPT_CONTEXT_TENANT_KEK, tenant_id, v, PQgetvalue(r, i, 3),
		                &old_kek);
		if (rc == 0)
			rc = unwrap_row(&old_kek, o->context, id, v, PQgetvalue(r, i, 2), &dk);
		if (rc == 0)
			rc = wrap_hex(neu, o->context, id, nv, &dk, hex);
		crypt_key_clear(&old_kek);
		crypt_key_clear(&dk);
		const char *q[] = {id, ver, hex};
		if (rc == 0)
			rc = db_query(c, NULL, o->update, 3, q);
		if (rc == 0)
			(*rewrapped)++;
	}
	PQclear(r);
	return rc;
}

/* Re-wrap every data key of the tenant, jobs' and datasets', under neu (version nv). */
static int rewrap_all(PGconn *c, const char *tenant_id, const crypt_key *master, int nv,
                      const crypt_key *neu, int64_t *rewrapped)
{
	*rewrapped = 0;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof(owners) / sizeof(owners[0]); i++)
		rc = rewrap_owner(c, &owners[i], tenant_id, master, nv, neu, rewrapped);
	return rc;
}

int keys_rotate(PGconn *c, const crypt_key *master, const char *tenant_id, int *version,
                int64_t *rewrapped)
{
	crypt_key cur, neu;
	int64_t wraps;
	int v;
	int rc = kek_current(c, master, tenant_id, &cur, &v, &wraps);
	crypt_key_clear(&cur);
	if (rc)
		return rc;
	*version = v + 1;
	char ver[16];
	snprintf(ver, sizeof(ver), "%d", *version);
	const char *p[] = {tenant_id, ver};
	if ((rc = kek_create(c, master, tenant_id, *version, &neu)) == 0 &&
	    (rc = rewrap_all(c, tenant_id, master, *version, &neu, rewrapped)) == 0) {
		char n[24];
		snprintf(n, sizeof(n), "%lld", (long long)*rewrapped);
		const char *q[] = {tenant_id, ver, n};
		/* the older versions wrap nothing now: they go */
		rc = db_query(c, NULL,
		              "DELETE FROM tenant_keys WHERE tenant_id = $1 AND version < $2::int",
		              2, p);
		if (rc == 0)
			rc = db_query(
			    c, NULL,
			    "UPDATE tenant_keys SET wraps = $3::bigint WHERE tenant_id = $1"
			    " AND version = $2::int",
			    3, q);
	}
	crypt_key_clear(&neu);
	return rc;
}

int keys_shred(PGconn *c, const char *tenant_id, int64_t *destroyed)
{
	const char *p[] = {tenant_id};
	PGresult *r;
	int rc = db_query(c, &r,
	                  "WITH k AS (DELETE FROM job_keys WHERE tenant_id = $1 RETURNING 1),"
	                  " d AS (DELETE FROM dataset_keys WHERE tenant_id = $1 RETURNING 1),"
	                  " t AS (DELETE FROM tenant_keys WHERE tenant_id = $1 RETURNING 1),"
	                  " s AS (INSERT INTO tenant_key_shreds (tenant_id) VALUES ($1)"
	                  " ON CONFLICT DO NOTHING RETURNING 1)"
	                  " SELECT (SELECT count(*) FROM k) + (SELECT count(*) FROM d),"
	                  " (SELECT count(*) FROM t)",
	                  1, p);
	if (rc == 0)
		*destroyed = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}
