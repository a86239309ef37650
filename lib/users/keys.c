/*
 * keys.c - tenant KEKs and job data keys in the database (keys.h).
 */
#include "clock.h"
#include "keys.h"

#include <openssl/crypto.h>
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

/* The master key being replaced during a rotation: set once at start (keys_master_previous_set). */
static crypt_key previous_master;
static bool has_previous_master;

void keys_master_previous_set(const crypt_key *previous)
{
	crypt_key_clear(&previous_master);
	has_previous_master = previous != NULL;
	if (previous)
		previous_master = *previous;
}

const crypt_key *keys_master_previous(void)
{
	return has_previous_master ? &previous_master : NULL;
}

int keys_master_secret_unwrap(const crypt_key *master, const char *context,
                              const unsigned char *wrapped, size_t len, crypt_key *out)
{
	int rc = crypt_unwrap(master, context, wrapped, len, out);
	if (rc && has_previous_master)
		rc = crypt_unwrap(&previous_master, context, wrapped, len, out);
	return rc;
}

int keys_kek_unwrap(const crypt_key *master, const crypt_key *previous, const char *master_id,
                    const char *tenant_id, int version, const unsigned char *wrapped, size_t len,
                    crypt_key *kek)
{
	char ctx[CRYPT_CONTEXT_MAX + 1], id[CRYPT_KEY_ID_LEN + 1];
	crypt_key_clear(kek);
	if (crypt_context(ctx, sizeof(ctx), CRYPT_CONTEXT_TENANT_KEK, tenant_id, version) < 0)
		return -ERR_INTERNAL;
	if (master_id == NULL || master_id[0] == '\0') {
		/* wrapped before ids were kept: by whichever master key the server held then */
		int rc = crypt_unwrap(master, ctx, wrapped, len, kek);
		if (rc && previous)
			rc = crypt_unwrap(previous, ctx, wrapped, len, kek);
		return rc;
	}
	crypt_key_id(master, id);
	if (strcmp(id, master_id) == 0)
		return crypt_unwrap(master, ctx, wrapped, len, kek);
	if (previous) {
		crypt_key_id(previous, id);
		if (strcmp(id, master_id) == 0)
			return crypt_unwrap(previous, ctx, wrapped, len, kek);
	}
	return -ERR_MASTER_KEY_MISSING;
}

int keys_kek_rewrap(const crypt_key *from, const crypt_key *to, const char *tenant_id, int version,
                    const unsigned char *wrapped, size_t len, unsigned char out[CRYPT_WRAPPED_LEN])
{
	char ctx[CRYPT_CONTEXT_MAX + 1];
	crypt_key kek;
	int rc = crypt_context(ctx, sizeof(ctx), CRYPT_CONTEXT_TENANT_KEK, tenant_id, version);
	if (rc == 0)
		rc = crypt_unwrap(from, ctx, wrapped, len, &kek);
	if (rc == 0)
		rc = crypt_wrap(to, ctx, &kek, out);
	crypt_key_clear(&kek);
	return rc;
}

/* A KEK row's bytea text and master key id (NULL when the column is). */
static int kek_unwrap_row(const crypt_key *master, const char *master_id, const char *tenant_id,
                          int version, const char *pg_wrapped, crypt_key *kek)
{
	unsigned char w[CRYPT_WRAPPED_LEN];
	if (!wrapped_from_pg(pg_wrapped, w))
		return -ERR_KEY_UNWRAP_FAILED;
	return keys_kek_unwrap(master, keys_master_previous(), master_id, tenant_id, version, w,
	                       sizeof(w), kek);
}

/* A column's text, or NULL when it is NULL. */
static const char *pg_text(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* Insert KEK version v (a fresh key) for the tenant. OUT: *kek. */
static int kek_create(PGconn *c, const crypt_key *master, const char *tenant_id, int v,
                      crypt_key *kek)
{
	char hex[2 * CRYPT_WRAPPED_LEN + 1], ver[16], mid[CRYPT_KEY_ID_LEN + 1];
	snprintf(ver, sizeof(ver), "%d", v);
	crypt_key_id(master, mid);
	int rc = crypt_key_generate(kek) < 0 ? -ERR_INTERNAL : 0;
	if (rc == 0)
		rc = wrap_hex(master, CRYPT_CONTEXT_TENANT_KEK, tenant_id, v, kek, hex);
	const char *p[] = {tenant_id, ver, hex, mid};
	if (rc == 0)
		rc = db_query(c, NULL,
		              "INSERT INTO tenant_keys (tenant_id, version, wrapped, master_key_id)"
		              " VALUES ($1, $2::int, decode($3, 'hex'), $4)",
		              4, p);
	return rc;
}

/*
 * The tenant's current KEK, locked; made when there is none. OUT: *kek,
 * *version, *wraps, *epoch (the tenant's data-key epoch).
 * RET -ERR_KEYS_UNAVAILABLE for a shredded tenant.
 */
static int kek_current(PGconn *c, const crypt_key *master, const char *tenant_id, crypt_key *kek,
                       int *version, int64_t *wraps, int *epoch)
{
	const char *p[] = {tenant_id};
	PGresult *r;
	/* the tenant row serialises key creation and rotation for the tenant */
	int rc = db_query(c, &r,
	                  "SELECT EXISTS (SELECT 1 FROM tenant_key_shreds WHERE tenant_id = $1),"
	                  " data_key_epoch FROM tenants WHERE id = $1 FOR UPDATE",
	                  1, p);
	bool shredded = rc == 0 && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	if (rc == 0 && PQntuples(r) == 1)
		*epoch = atoi(PQgetvalue(r, 0, 1));
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_TENANT_NOT_FOUND;
	PQclear(r);
	if (rc)
		return rc;
	if (shredded)
		return -ERR_KEYS_UNAVAILABLE;
	rc = db_query(
	    c, &r,
	    "SELECT version, wrapped, wraps, master_key_id FROM tenant_keys WHERE tenant_id = $1"
	    " AND retired_at IS NULL ORDER BY version DESC LIMIT 1",
	    1, p);
	if (rc == 0 && PQntuples(r) == 1) {
		*version = atoi(PQgetvalue(r, 0, 0));
		*wraps = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
		rc = kek_unwrap_row(master, pg_text(r, 0, 3), tenant_id, *version,
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
 * What owns a data key: a job, a dataset or a code bundle. Each kind has its table and its
 * wrapping context; everything else about their keys is the same. A data
 * key is a ring of generations (crypt.h): one row per generation.
 */
typedef struct key_owner {
	const char *context; /* CRYPT_CONTEXT_*_DEK */
	/* $1 owner, $2 tenant: generation, epoch, key_version, wrapped, the KEK's wrapped, its
	 * master */
	const char *ring;
	/* $1 owner, $2 tenant, $3 version, $4 wrapped hex, $5 generation, $6 epoch */
	const char *insert;
	/* $1 tenant: owner, generation, key_version, wrapped, the KEK's wrapped, its master */
	const char *all;
	const char *update; /* $1 owner, $2 generation, $3 version, $4 wrapped hex */
} key_owner;

#define OWNER_SQL(table, col)                                                                      \
	"SELECT k.generation, k.epoch, k.key_version, k.wrapped, t.wrapped, t.master_key_id"       \
	" FROM " table " k"                                                                        \
	" JOIN tenant_keys t ON t.tenant_id = k.tenant_id AND t.version = k.key_version"           \
	" WHERE k." col " = $1 AND k.tenant_id = $2 ORDER BY k.generation",                        \
	    "INSERT INTO " table " (" col ", tenant_id, key_version, wrapped, generation, epoch)"  \
	    " VALUES ($1, $2, $3::int, decode($4, 'hex'), $5::int, $6::int)",                      \
	    "SELECT k." col ", k.generation, k.key_version, k.wrapped, t.wrapped,"                 \
	    " t.master_key_id FROM " table " k"                                                    \
	    " JOIN tenant_keys t ON t.tenant_id = k.tenant_id AND t.version = k.key_version"       \
	    " WHERE k.tenant_id = $1 FOR UPDATE OF k",                                             \
	    "UPDATE " table " SET key_version = $3::int, wrapped = decode($4, 'hex')"              \
	    " WHERE " col " = $1 AND generation = $2::int"

static const key_owner owners[] = {
    {CRYPT_CONTEXT_JOB_DEK, OWNER_SQL("job_keys", "job_id")},
    {CRYPT_CONTEXT_DATASET_DEK, OWNER_SQL("dataset_keys", "dataset_id")},
    {CRYPT_CONTEXT_CODE_DEK, OWNER_SQL("code_keys", "bundle_id")},
};
#define JOB_OWNER     (&owners[0])
#define DATASET_OWNER (&owners[1])
#define CODE_OWNER    (&owners[2])

/*
 * The wrapping context of generation g of owner id's data key under KEK
 * version v: "<kind>|<id>|v<v>" for the first generation (as before
 * generations), "<kind>|<id>/g<g>|v<v>" for the others.
 */
static int dek_context(char ctx[CRYPT_CONTEXT_MAX + 1], const key_owner *o, const char *id, int g,
                       int v)
{
	char gid[CRYPT_CONTEXT_MAX + 1];
	int k = g == 1 ? snprintf(gid, sizeof(gid), "%s", id)
	               : snprintf(gid, sizeof(gid), "%s/g%d", id, g);
	if (g < 1 || k < 0 || (size_t)k >= sizeof(gid))
		return -ERR_INTERNAL;
	return crypt_context(ctx, CRYPT_CONTEXT_MAX + 1, o->context, gid, v);
}

static int dek_unwrap(const crypt_key *kek, const key_owner *o, const char *id, int g, int v,
                      const char *pg_wrapped, crypt_key *out)
{
	char ctx[CRYPT_CONTEXT_MAX + 1];
	unsigned char w[CRYPT_WRAPPED_LEN];
	if (dek_context(ctx, o, id, g, v) < 0)
		return -ERR_INTERNAL;
	if (!wrapped_from_pg(pg_wrapped, w))
		return -ERR_KEY_UNWRAP_FAILED;
	return crypt_unwrap(kek, ctx, w, sizeof(w), out);
}

static int dek_wrap_hex(const crypt_key *kek, const key_owner *o, const char *id, int g, int v,
                        const crypt_key *key, char hex[2 * CRYPT_WRAPPED_LEN + 1])
{
	char ctx[CRYPT_CONTEXT_MAX + 1];
	unsigned char w[CRYPT_WRAPPED_LEN];
	int rc = dek_context(ctx, o, id, g, v);
	if (rc == 0)
		rc = crypt_wrap(kek, ctx, key, w);
	if (rc == 0)
		hex_encode(w, CRYPT_WRAPPED_LEN, hex);
	return rc;
}

/*
 * Unwrap the generations of owner id that r (o->ring's columns) holds,
 * with one more slot for a generation the caller may add. Generations must
 * run 1..n: a gap means altered rows. OUT: *keys (malloc'd, n + 1 slots;
 * the caller wipes and frees it), *n, *newest_epoch.
 */
static int ring_unwrap(const crypt_key *master, const key_owner *o, const char *tenant_id,
                       const char *id, PGresult *r, crypt_key **keys, int *n, int *newest_epoch)
{
	*n = PQntuples(r);
	*newest_epoch = 0;
	*keys = calloc((size_t)*n + 1, sizeof(crypt_key));
	if (*keys == NULL)
		return -ERR_INTERNAL;
	int rc = 0;
	crypt_key kek;
	int kek_version = 0;
	for (int i = 0; rc == 0 && i < *n; i++) {
		int g = atoi(PQgetvalue(r, i, 0)), v = atoi(PQgetvalue(r, i, 2));
		*newest_epoch = atoi(PQgetvalue(r, i, 1));
		if (g != i + 1) {
			rc = -ERR_KEY_UNWRAP_FAILED;
			break;
		}
		if (v != kek_version) {
			crypt_key_clear(&kek);
			kek_version = v;
			rc = kek_unwrap_row(master, pg_text(r, i, 5), tenant_id, v,
			                    PQgetvalue(r, i, 4), &kek);
		}
		if (rc == 0)
			rc = dek_unwrap(&kek, o, id, g, v, PQgetvalue(r, i, 3), &(*keys)[i]);
	}
	if (kek_version)
		crypt_key_clear(&kek);
	return rc;
}

static void ring_free(crypt_key *keys, int slots)
{
	if (keys)
		OPENSSL_cleanse(keys, (size_t)slots * sizeof(*keys));
	free(keys);
}

/* The data key ring of owner id for writing, as keys_job_data_key() describes. */
static int data_key(PGconn *c, const crypt_key *master, const key_owner *o, const char *tenant_id,
                    const char *id, crypt_object_ctx *ring, int *version, bool *rotated)
{
	memset(ring, 0, sizeof(*ring));
	if (rotated)
		*rotated = false;
	crypt_key kek;
	int64_t wraps = 0;
	int epoch = 1, n = 0, newest_epoch = 0;
	crypt_key *keys = NULL;
	int rc = kek_current(c, master, tenant_id, &kek, version, &wraps, &epoch);
	const char *p[] = {id, tenant_id};
	PGresult *r = NULL;
	if (rc == 0)
		rc = db_query(c, &r, o->ring, 2, p);
	if (rc == 0)
		rc = ring_unwrap(master, o, tenant_id, id, r, &keys, &n, &newest_epoch);
	int slots = n + 1;
	/* every generation is wrapped by the current KEK version: rotation moves them all */
	for (int i = 0; rc == 0 && i < n; i++)
		if (atoi(PQgetvalue(r, i, 2)) != *version)
			rc = -ERR_KEY_UNWRAP_FAILED;
	PQclear(r);
	if (rc == 0 && (n == 0 || newest_epoch < epoch)) {
		/* the first generation, or a new one since the tenant's data keys were rotated */
		if (n >= CRYPT_GENERATIONS_MAX)
			rc = -ERR_INTERNAL; /* keys_rotate() keeps epochs below it */
		if (rc == 0 && wraps >= (int64_t)CRYPT_WRAPS_PER_KEY_LIMIT) {
			/* the KEK has wrapped its limit: a new version wraps this generation */
			int64_t moved;
			crypt_key_clear(&kek);
			if ((rc = keys_rotate(c, master, tenant_id, false, version, &moved)) == 0)
				rc = kek_current(c, master, tenant_id, &kek, version, &wraps,
				                 &epoch);
			if (rc == 0 && rotated)
				*rotated = true;
		}
		char hex[2 * CRYPT_WRAPPED_LEN + 1], ver[16], gen[16], ep[16];
		snprintf(ver, sizeof(ver), "%d", *version);
		snprintf(gen, sizeof(gen), "%d", n + 1);
		snprintf(ep, sizeof(ep), "%d", epoch);
		if (rc == 0)
			rc = crypt_key_generate(&keys[n]) < 0 ? -ERR_INTERNAL : 0;
		if (rc == 0)
			rc = dek_wrap_hex(&kek, o, id, n + 1, *version, &keys[n], hex);
		const char *q[] = {id, tenant_id, ver, hex, gen, ep};
		if (rc == 0)
			rc = db_query(c, NULL, o->insert, 6, q);
		const char *w[] = {tenant_id, ver};
		if (rc == 0)
			rc =
			    db_query(c, NULL,
			             "UPDATE tenant_keys SET wraps = wraps + 1 WHERE tenant_id = $1"
			             " AND version = $2::int",
			             2, w);
		if (rc == 0)
			n++;
	}
	crypt_key_clear(&kek);
	if (rc == 0)
		rc = crypt_object_ctx_init_ring(ring, tenant_id, id, keys, (size_t)n);
	ring_free(keys, slots);
	return rc;
}

static int data_key_existing(PGconn *c, const crypt_key *master, const key_owner *o,
                             const char *tenant_id, const char *id, crypt_object_ctx *ring,
                             int *version)
{
	memset(ring, 0, sizeof(*ring));
	const char *p[] = {id, tenant_id};
	PGresult *r;
	crypt_key *keys = NULL;
	int n = 0, newest_epoch;
	int rc = db_query(c, &r, o->ring, 2, p);
	if (rc == 0 && PQntuples(r) == 0)
		rc = -ERR_KEYS_UNAVAILABLE;
	if (rc == 0) {
		*version = atoi(PQgetvalue(r, PQntuples(r) - 1, 2));
		rc = ring_unwrap(master, o, tenant_id, id, r, &keys, &n, &newest_epoch);
	}
	PQclear(r);
	if (rc == 0)
		rc = crypt_object_ctx_init_ring(ring, tenant_id, id, keys, (size_t)n);
	ring_free(keys, n + 1);
	return rc;
}

int keys_job_data_key(PGconn *c, const crypt_key *master, const char *tenant_id, const char *job_id,
                      crypt_object_ctx *ring, int *version, bool *rotated)
{
	return data_key(c, master, JOB_OWNER, tenant_id, job_id, ring, version, rotated);
}

int keys_job_data_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                               const char *job_id, crypt_object_ctx *ring, int *version)
{
	return data_key_existing(c, master, JOB_OWNER, tenant_id, job_id, ring, version);
}

int keys_dataset_key(PGconn *c, const crypt_key *master, const char *tenant_id,
                     const char *dataset_id, crypt_object_ctx *ring, int *version, bool *rotated)
{
	return data_key(c, master, DATASET_OWNER, tenant_id, dataset_id, ring, version, rotated);
}

int keys_dataset_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                              const char *dataset_id, crypt_object_ctx *ring, int *version)
{
	return data_key_existing(c, master, DATASET_OWNER, tenant_id, dataset_id, ring, version);
}

int keys_code_key(PGconn *c, const crypt_key *master, const char *tenant_id, const char *bundle_id,
                  crypt_object_ctx *ring, int *version, bool *rotated)
{
	return data_key(c, master, CODE_OWNER, tenant_id, bundle_id, ring, version, rotated);
}

int keys_code_key_existing(PGconn *c, const crypt_key *master, const char *tenant_id,
                           const char *bundle_id, crypt_object_ctx *ring, int *version)
{
	return data_key_existing(c, master, CODE_OWNER, tenant_id, bundle_id, ring, version);
}

/* Re-wrap every data key generation of kind o of the tenant under neu (version nv). */
static int rewrap_owner(PGconn *c, const key_owner *o, const char *tenant_id,
                        const crypt_key *master, int nv, const crypt_key *neu, int64_t *rewrapped)
{
	const char *p[] = {tenant_id};
	PGresult *r;
	int rc = db_query(c, &r, o->all, 1, p);
	char ver[16];
	snprintf(ver, sizeof(ver), "%d", nv);
	for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
		const char *id = PQgetvalue(r, i, 0), *gen = PQgetvalue(r, i, 1);
		int g = atoi(gen), v = atoi(PQgetvalue(r, i, 2));
		crypt_key old_kek, dk;
		char hex[2 * CRYPT_WRAPPED_LEN + 1];
		rc = kek_unwrap_row(master, pg_text(r, i, 5), tenant_id, v, PQgetvalue(r, i, 4),
		                    &old_kek);
		if (rc == 0)
			rc = dek_unwrap(&old_kek, o, id, g, v, PQgetvalue(r, i, 3), &dk);
		if (rc == 0)
			rc = dek_wrap_hex(neu, o, id, g, nv, &dk, hex);
		crypt_key_clear(&old_kek);
		crypt_key_clear(&dk);
		const char *q[] = {id, gen, ver, hex};
		if (rc == 0)
			rc = db_query(c, NULL, o->update, 4, q);
		if (rc == 0)
			(*rewrapped)++;
	}
	PQclear(r);
	return rc;
}

/* Re-wrap every data key of the tenant, jobs', datasets' and bundles', under neu (version nv). */
static int rewrap_all(PGconn *c, const char *tenant_id, const crypt_key *master, int nv,
                      const crypt_key *neu, int64_t *rewrapped)
{
	*rewrapped = 0;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof(owners) / sizeof(owners[0]); i++)
		rc = rewrap_owner(c, &owners[i], tenant_id, master, nv, neu, rewrapped);
	return rc;
}

int keys_rotate(PGconn *c, const crypt_key *master, const char *tenant_id, bool data_keys,
                int *version, int64_t *rewrapped)
{
	crypt_key cur, neu;
	int64_t wraps;
	int v, epoch = 1;
	int rc = kek_current(c, master, tenant_id, &cur, &v, &wraps, &epoch);
	crypt_key_clear(&cur);
	if (rc)
		return rc;
	/* a key's generations never outnumber its tenant's epochs */
	if (data_keys && epoch >= CRYPT_GENERATIONS_MAX)
		return -ERR_DATA_KEY_GENERATIONS;
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
		/* new objects get new data keys: each the next time it is taken to write */
		if (rc == 0 && data_keys)
			rc = db_query(c, NULL,
			              "UPDATE tenants SET data_key_epoch = data_key_epoch + 1"
			              " WHERE id = $1",
			              1, p);
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
	                  " b AS (DELETE FROM code_keys WHERE tenant_id = $1 RETURNING 1),"
	                  " t AS (DELETE FROM tenant_keys WHERE tenant_id = $1 RETURNING 1),"
	                  " s AS (INSERT INTO tenant_key_shreds (tenant_id) VALUES ($1)"
	                  " ON CONFLICT DO NOTHING RETURNING 1)"
	                  " SELECT (SELECT count(*) FROM k) + (SELECT count(*) FROM d)"
	                  " + (SELECT count(*) FROM b),"
	                  " (SELECT count(*) FROM t)",
	                  1, p);
	if (rc == 0)
		*destroyed = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}

/* ---- master-key rotation -------------------------------------------- */

#define WEBHOOK_SECRET_CONTEXT "webhook-secret"

int keys_master_rotation_begin(PGconn *c, const crypt_key *from, const crypt_key *to)
{
	char fid[CRYPT_KEY_ID_LEN + 1], tid[CRYPT_KEY_ID_LEN + 1];
	crypt_key_id(from, fid);
	crypt_key_id(to, tid);
	if (strcmp(fid, tid) == 0)
		return -ERR_CONFLICT;
	const char *p[] = {fid, tid};
	/* the key wrapped into is in use again, should it have been retired before */
	return db_query(
	    c, NULL,
	    "INSERT INTO master_keys (id) VALUES ($1), ($2)"
	    " ON CONFLICT (id) DO UPDATE SET retired_at = NULL WHERE master_keys.id = $2",
	    2, p);
}

/* Tenant KEKs not under `to` yet, at most limit of them. */
static int rewrap_tenant_keys(PGconn *c, const crypt_key *from, const crypt_key *to,
                              const char *fid, const char *tid, int limit, int64_t *done)
{
	char lim[16];
	snprintf(lim, sizeof(lim), "%d", limit);
	const char *p[] = {tid, lim};
	PGresult *r;
	/* rows another transaction holds (a tenant's KEK being rotated) wait for a later batch */
	int rc = db_query(c, &r,
	                  "SELECT tenant_id, version, wrapped, master_key_id FROM tenant_keys"
	                  " WHERE master_key_id IS DISTINCT FROM $1"
	                  " ORDER BY tenant_id, version LIMIT $2::int FOR UPDATE SKIP LOCKED",
	                  2, p);
	for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
		const char *tenant = PQgetvalue(r, i, 0), *ver = PQgetvalue(r, i, 1);
		const char *mid = pg_text(r, i, 3);
		unsigned char w[CRYPT_WRAPPED_LEN], out[CRYPT_WRAPPED_LEN];
		char hex[2 * CRYPT_WRAPPED_LEN + 1];
		if (mid && strcmp(mid, fid) != 0)
			rc = -ERR_MASTER_KEY_MISSING; /* a third master key: not this rotation's */
		else if (!wrapped_from_pg(PQgetvalue(r, i, 2), w))
			rc = -ERR_KEY_UNWRAP_FAILED;
		else
			rc = keys_kek_rewrap(from, to, tenant, atoi(ver), w, sizeof(w), out);
		if (rc)
			break;
		hex_encode(out, sizeof(out), hex);
		const char *q[] = {tenant, ver, hex, tid};
		rc = db_query(
		    c, NULL,
		    "UPDATE tenant_keys SET wrapped = decode($3, 'hex'), master_key_id = $4"
		    " WHERE tenant_id = $1 AND version = $2::int",
		    4, q);
		if (rc == 0)
			(*done)++;
	}
	PQclear(r);
	return rc;
}

/*
 * Webhook signing secrets not under `to` yet, at most limit of them. The
 * API seals a new webhook's secret with its master key without naming it:
 * such a row, already under `to`, only gets its id.
 */
static int rewrap_webhooks(PGconn *c, const crypt_key *from, const crypt_key *to, const char *fid,
                           const char *tid, int limit, int64_t *done)
{
	char lim[16];
	snprintf(lim, sizeof(lim), "%d", limit);
	const char *p[] = {tid, lim};
	PGresult *r;
	int rc = db_query(c, &r,
	                  "SELECT id, secret_sealed, secret_master_key_id FROM webhooks"
	                  " WHERE secret_master_key_id IS DISTINCT FROM $1"
	                  " ORDER BY id LIMIT $2::int FOR UPDATE SKIP LOCKED",
	                  2, p);
	for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
		const char *id = PQgetvalue(r, i, 0), *mid = pg_text(r, i, 2);
		char ctx[CRYPT_CONTEXT_MAX + 1], hex[2 * CRYPT_WRAPPED_LEN + 1];
		unsigned char w[CRYPT_WRAPPED_LEN], out[CRYPT_WRAPPED_LEN];
		crypt_key secret;
		if (mid && strcmp(mid, fid) != 0)
			rc = -ERR_MASTER_KEY_MISSING;
		else if (!wrapped_from_pg(PQgetvalue(r, i, 1), w))
			rc = -ERR_KEY_UNWRAP_FAILED;
		else
			rc = crypt_context(ctx, sizeof(ctx), WEBHOOK_SECRET_CONTEXT, id, 1);
		if (rc)
			break;
		if (crypt_unwrap(from, ctx, w, sizeof(w), &secret) == 0) {
			rc = crypt_wrap(to, ctx, &secret, out);
		} else if (mid == NULL && crypt_unwrap(to, ctx, w, sizeof(w), &secret) == 0) {
			memcpy(out, w, sizeof(out));
		} else {
			rc = -ERR_KEY_UNWRAP_FAILED;
		}
		crypt_key_clear(&secret);
		if (rc)
			break;
		hex_encode(out, sizeof(out), hex);
		const char *q[] = {id, hex, tid};
		rc = db_query(c, NULL,
		              "UPDATE webhooks SET secret_sealed = decode($2, 'hex'),"
		              " secret_master_key_id = $3 WHERE id = $1",
		              3, q);
		if (rc == 0)
			(*done)++;
	}
	PQclear(r);
	return rc;
}

int keys_master_rewrap_batch(PGconn *c, const crypt_key *from, const crypt_key *to, int limit,
                             int64_t *done, int64_t *left)
{
	char fid[CRYPT_KEY_ID_LEN + 1], tid[CRYPT_KEY_ID_LEN + 1];
	crypt_key_id(from, fid);
	crypt_key_id(to, tid);
	*done = 0;
	*left = 0;
	if (limit < 1)
		return -ERR_INTERNAL;
	if (strcmp(fid, tid) == 0)
		return -ERR_CONFLICT;
	int rc = rewrap_tenant_keys(c, from, to, fid, tid, limit, done);
	if (rc == 0 && *done < limit)
		rc = rewrap_webhooks(c, from, to, fid, tid, limit - (int)*done, done);
	const char *p[] = {tid};
	PGresult *r;
	if (rc == 0 && (rc = db_query(c, &r,
	                              "SELECT (SELECT count(*) FROM tenant_keys"
	                              " WHERE master_key_id IS DISTINCT FROM $1)"
	                              " + (SELECT count(*) FROM webhooks"
	                              " WHERE secret_master_key_id IS DISTINCT FROM $1)",
	                              1, p)) == 0) {
		*left = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
	}
	return rc;
}

int keys_master_retire(PGconn *c, const crypt_key *from, const crypt_key *to, bool *retired)
{
	char fid[CRYPT_KEY_ID_LEN + 1], tid[CRYPT_KEY_ID_LEN + 1];
	crypt_key_id(from, fid);
	crypt_key_id(to, tid);
	*retired = false;
	const char *p[] = {fid, tid};
	PGresult *r;
	/* the count and the retirement in one statement: no row may still name from */
	int rc =
	    db_query(c, &r,
	             "UPDATE master_keys SET retired_at = coalesce(retired_at, clock_timestamp())"
	             " WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM tenant_keys"
	             " WHERE master_key_id IS DISTINCT FROM $2)"
	             " AND NOT EXISTS (SELECT 1 FROM webhooks"
	             " WHERE secret_master_key_id IS DISTINCT FROM $2)"
	             " RETURNING id",
	             2, p);
	if (rc == 0)
		*retired = PQntuples(r) == 1;
	PQclear(r);
	return rc;
}

int keys_master_status(PGconn *c, const crypt_key *master, const crypt_key *previous, json_t **out)
{
	char cid[CRYPT_KEY_ID_LEN + 1], pid[CRYPT_KEY_ID_LEN + 1];
	crypt_key_id(master, cid);
	if (previous)
		crypt_key_id(previous, pid);
	else
		memcpy(pid, cid, sizeof(pid));
	const char *p[] = {cid, pid};
	PGresult *r;
	*out = NULL;
	int rc =
	    db_query(c, &r,
	             "WITH n AS (SELECT master_key_id AS id, count(*) AS tk, 0::bigint AS wh"
	             " FROM tenant_keys GROUP BY 1 UNION ALL"
	             " SELECT secret_master_key_id, 0, count(*) FROM webhooks GROUP BY 1),"
	             " s AS (SELECT id, sum(tk) AS tk, sum(wh) AS wh FROM n GROUP BY id),"
	             " i AS (SELECT id FROM s UNION SELECT id FROM master_keys UNION SELECT $1"
	             " UNION SELECT $2)"
	             " SELECT i.id, coalesce(s.tk, 0), coalesce(s.wh, 0),"
	             " " CLOCK_SQL_RFC3339(
	                 "m.retired_at") " FROM i LEFT JOIN s ON s.id IS NOT DISTINCT FROM i.id"
	                                 " LEFT JOIN master_keys m ON m.id = i.id"
	                                 " ORDER BY m.created_at NULLS LAST, i.id NULLS FIRST",
	             2, p);
	if (rc)
		return rc;
	json_t *keys = json_array(), *legacy = NULL;
	bool prev_needed = false;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *id = pg_text(r, i, 0), *retired = pg_text(r, i, 3);
		json_int_t tk = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		json_int_t wh = strtoll(PQgetvalue(r, i, 2), NULL, 10);
		if (id == NULL) {
			/* rows from before ids: they need whichever key wrapped them */
			legacy = json_pack("{s:I, s:I}", "tenant_keys", tk, "webhook_secrets", wh);
			prev_needed = prev_needed || (previous && tk + wh > 0);
			continue;
		}
		const char *held = strcmp(id, cid) == 0               ? "current"
		                   : previous && strcmp(id, pid) == 0 ? "previous"
		                                                      : "none";
		if (previous && strcmp(id, pid) == 0 && tk + wh > 0)
			prev_needed = true;
		json_array_append_new(keys,
		                      json_pack("{s:s, s:s, s:I, s:I, s:s?}", "id", id, "held",
		                                held, "tenant_keys", tk, "webhook_secrets", wh,
		                                "retired_at", retired));
	}
	PQclear(r);
	*out = json_pack("{s:s, s:s?, s:b, s:o, s:o}", "master_key_id", cid, "previous_key_id",
	                 previous ? pid : NULL, "previous_needed", prev_needed, "keys", keys,
	                 "unidentified", legacy ? legacy : json_null());
	return *out ? 0 : -ERR_INTERNAL;
}
