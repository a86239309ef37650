/*
 * tenant_dirs.c - the tenant's identity and directories, for what the API
 * writes into a tenant's tree (tenant_dirs.h).
 */
#include "tenant_dirs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codestore.h"
#include "dataset.h"
#include "log.h"

int tenant_dirs_prepare(api_req *rq, const char *tenant_id, tenant_identity *id, char *why,
                        size_t whylen)
{
	int rc = identity_ensure(rq->db, rq->cfg, tenant_id, id, why, whylen);
	if (rc < 0)
		return rc;
	if (rc == 1 || identity_usable(id, why, whylen) < 0) {
		log_printf(LOG_WARN, "tenant %s: %s", tenant_id, why);
		return -ERR_STORAGE_UNSAFE;
	}
	const char *roots[] = {rq->cfg->storage_root, rq->cfg->data_root};
	rc = identity_tenant_dirs(roots, 2, tenant_id, id, why, whylen);
	if (rc)
		log_printf(LOG_ERROR, "tenant %s: %s", tenant_id, why);
	return rc;
}

/* The scope tenant's user, for the copy of another tenant's version into its tree. */
static int grantee_owners(api_req *rq, storage_owners *o)
{
	tenant_identity id;
	char why[1024];
	int rc = tenant_dirs_prepare(rq, rq->scope.tenant_id, &id, why, sizeof(why));
	if (rc == 0)
		*o = storage_owners_for(id.uid, id.gid);
	return rc;
}

int tenant_dirs_stage(api_req *rq, const char *owner_id, const char *dataset_id,
                      const char *version_id, int shards)
{
	storage_owners o;
	char why[1024];
	int rc = grantee_owners(rq, &o);
	if (rc == 0 && (rc = dataset_stage(rq->cfg->storage_root, owner_id, dataset_id, version_id,
	                                   shards, rq->scope.tenant_id, &o, why, sizeof(why))))
		log_printf(LOG_ERROR, "dataset version %s for tenant %s: %s", version_id,
		           rq->scope.tenant_id, why);
	return rc;
}

int tenant_dirs_stage_code(api_req *rq, const char *owner_id, const char *bundle_id,
                           const char *version_id)
{
	storage_owners o;
	char why[1024];
	int rc = grantee_owners(rq, &o);
	if (rc == 0 && (rc = code_stage(rq->cfg->storage_root, owner_id, bundle_id, version_id,
	                                rq->scope.tenant_id, &o, why, sizeof(why))))
		log_printf(LOG_ERROR, "code version %s for tenant %s: %s", version_id,
		           rq->scope.tenant_id, why);
	return rc;
}

int tenant_storage_left(api_req *rq, bool lock, int64_t *left)
{
	const char *p[] = {rq->scope.tenant_id};
	PGresult *r = NULL;
	int rc = lock ? db_query(rq->db, NULL,
	                         "SELECT 1 FROM quotas WHERE tenant_id = $1 FOR UPDATE", 1, p)
	              : 0;
	if (rc == 0)
		rc = db_query(rq->db, &r,
		              "SELECT max_storage_bytes - tenant_storage_bytes(tenant_id)"
		              " FROM quotas WHERE tenant_id = $1",
		              1, p);
	*left = rc == 0 && PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : INT64_MAX;
	PQclear(r);
	return rc;
}

/* What crashes left goes when it is this old (docs/datasets.md, docs/own-code.md). */
#define SWEEP_AGE_S (24 * 3600.0)

static bool version_registered(void *arg, const char *id)
{
	const PGresult *r = arg;
	for (int i = 0; i < PQntuples(r); i++)
		if (strcmp(PQgetvalue(r, i, 0), id) == 0)
			return true;
	return false;
}

void tenant_dirs_sweep(api_req *rq, const char *area, const char *owner_id,
                       const char *registered_sql)
{
	const char *p[] = {owner_id};
	PGresult *r = NULL;
	int removed = 0;
	if (db_query(rq->db, &r, registered_sql, 1, p) == 0)
		storage_sweep_versions(rq->cfg->storage_root, rq->scope.tenant_id, area, owner_id,
		                       version_registered, r, SWEEP_AGE_S, &removed);
	PQclear(r);
	if (removed)
		log_printf(LOG_INFO, "%s/%s: removed %d directories crashed uploads left", area,
		           owner_id, removed);
}

int tenant_storage_room(api_req *rq, uint64_t sealed, char *err, size_t errlen)
{
	int64_t left;
	int rc = tenant_storage_left(rq, true, &left);
	if (rc == 0 && (left < 0 || sealed > (uint64_t)left)) {
		snprintf(err, errlen,
		         "the version's %llu sealed bytes pass the %lld bytes the tenant's storage "
		         "quota has left",
		         (unsigned long long)sealed, (long long)(left < 0 ? 0 : left));
		rc = -ERR_STORAGE_QUOTA_EXCEEDED;
	}
	return rc;
}

int tenant_storage_begin(api_req *rq, int64_t min, int64_t *left, char *err, size_t errlen)
{
	int rc = tenant_storage_left(rq, false, left);
	if (rc == 0 && *left < min) {
		snprintf(err, errlen,
		         "the tenant's storage quota has %lld bytes left, fewer than the smallest "
		         "version takes (%lld)",
		         (long long)(*left < 0 ? 0 : *left), (long long)min);
		rc = -ERR_STORAGE_QUOTA_EXCEEDED;
	}
	return rc;
}

int tenant_storage_passed(int64_t left, uint64_t sealed, char *err, size_t errlen)
{
	if (left >= 0 && sealed <= (uint64_t)left)
		return 0;
	snprintf(err, errlen,
	         "the version passes the %lld bytes the tenant's storage quota had left when the "
	         "upload began (%llu bytes sealed so far)",
	         (long long)left, (unsigned long long)sealed);
	return -ERR_STORAGE_QUOTA_EXCEEDED;
}
