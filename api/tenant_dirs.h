/*
 * tenant_dirs.h - what the API writes into a tenant's tree belongs to the
 * tenant's Unix user (docs/identity.md).
 *
 * The API reads every tenant's checkpoints and logs, and writes dataset
 * versions into tenants' storage: it runs as root on the local stack, and
 * with CAP_DAC_OVERRIDE and CAP_CHOWN in production. Whatever it creates
 * below tenants/<tenant> it hands to the tenant's user, so that the
 * tenant's attempts, which run as that user, can read it.
 */
#ifndef TY_API_TENANT_DIRS_H
#define TY_API_TENANT_DIRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "identity.h"

/*
 * The tenant's identity (given from the pool when it has none, in a
 * transaction of its own), checked (identity_usable), and the tenant's
 * directories in the storage and data roots, made or checked as its
 * user's. RET 0 with *id; -ERR_STORAGE_UNSAFE when the tenant has no
 * usable identity or a directory is wrong (why says which, for the log); a
 * storage code; -ERR_* of the database.
 */
int tenant_dirs_prepare(api_req *rq, const char *tenant_id, tenant_identity *id, char *why,
                        size_t whylen);

/*
 * Before the grantee's attempt gets the key of another tenant's dataset
 * version (under a grant in force): the version's sealed shards copied to
 * the grantee's tree as its user's (dataset_stage), since the attempt may
 * open nothing of the owner's tree. RET 0, or a storage code or -ERR_* of
 * the database (logged).
 */
int tenant_dirs_stage(api_req *rq, const char *owner_id, const char *dataset_id,
                      const char *version_id, int shards);
/* The same for another tenant's code version (code_stage): its sealed archive. */
int tenant_dirs_stage_code(api_req *rq, const char *owner_id, const char *bundle_id,
                           const char *version_id);

/*
 * What the scope's tenant may still store: max_storage_bytes less
 * tenant_storage_bytes() (migrations/0014_storage_quota.sql, 0020). With
 * lock, under a lock on the tenant's quota row, held to the end of the
 * transaction: the one check before a dataset or code version is
 * registered. OUT *left (may be negative). RET 0 or -ERR_*.
 */
int tenant_storage_left(api_req *rq, bool lock, int64_t *left);

/*
 * An upload's first check, before a byte of its body is read: OUT *left,
 * what the tenant may still store (tenant_storage_left, no lock). RET 0;
 * -ERR_STORAGE_QUOTA_EXCEEDED (err says so) when that is less than min,
 * the smallest version on disk; -ERR_*.
 */
int tenant_storage_begin(api_req *rq, int64_t min, int64_t *left, char *err, size_t errlen);

/*
 * As the body arrives: RET 0, or -ERR_STORAGE_QUOTA_EXCEEDED (err says so)
 * once the sealed bytes so far pass left, what there was at the start.
 */
int tenant_storage_passed(int64_t left, uint64_t sealed, char *err, size_t errlen);

/*
 * A version's registration check, inside its transaction: sealed bytes
 * against what the tenant has left now, under the lock. RET 0,
 * -ERR_STORAGE_QUOTA_EXCEEDED (err says by how much) or -ERR_*.
 */
int tenant_storage_room(api_req *rq, uint64_t sealed, char *err, size_t errlen);

/*
 * Before an upload into "<area>/<owner_id>" of the scope's tenant (a
 * dataset's or a code bundle's versions): what crashed uploads left there
 * a day or more ago goes (storage_sweep_versions), the versions that
 * registered_sql ($1 the owner's id) returns kept. Best effort: a failure
 * only logs.
 */
void tenant_dirs_sweep(api_req *rq, const char *area, const char *owner_id,
                       const char *registered_sql);

#endif
