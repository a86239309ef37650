/*
 * identity.c - the Unix user each tenant's attempts run as (identity.h).
 */
#include "identity.h"

#include <errno.h>
#include <grp.h>
#include <jansson.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "db.h"
#include "error.h"
#include "storage.h"

int identity_get(PGconn *db, const char *tenant_id, tenant_identity *out)
{
	const char *p[] = {tenant_id};
	PGresult *r;
	int rc =
	    db_query(db, &r, "SELECT uid, gid FROM tenant_identities WHERE tenant_id = $1", 1, p);
	if (rc == 0 && PQntuples(r) == 1) {
		memset(out, 0, sizeof(*out));
		out->uid = (uid_t)strtoul(PQgetvalue(r, 0, 0), NULL, 10);
		out->gid = (gid_t)strtoul(PQgetvalue(r, 0, 1), NULL, 10);
	} else if (rc == 0) {
		rc = 1;
	}
	PQclear(r);
	return rc;
}

/* The user of uid: OUT its name and primary group. RET 0, or -1 when there is none. */
static int user_of(uid_t uid, char *name, size_t n, gid_t *gid)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || !found)
		return -1;
	snprintf(name, n, "%s", pw.pw_name);
	if (gid)
		*gid = pw.pw_gid;
	return 0;
}

uid_t identity_login_uid_min(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return IDENTITY_UID_MIN_DEFAULT;
	uid_t min = IDENTITY_UID_MIN_DEFAULT;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char key[16], value[32], rest[2];
		/* "UID_MIN <number>", blanks around; comments start with '#' */
		if (sscanf(line, " %15s %31s %1s", key, value, rest) != 2 ||
		    strcmp(key, "UID_MIN") != 0)
			continue;
		char *end;
		errno = 0;
		unsigned long v = strtoul(value, &end, 10);
		if (errno == 0 && *end == '\0' && value[0] >= '0' && value[0] <= '9' && v > 0 &&
		    v < (unsigned long)INT32_MAX)
			min = (uid_t)v;
	}
	fclose(f);
	return min;
}

/* The users of the services beside the platform (the database, Slurm, munge, Slurm's database). */
static const char *const service_users[] = {"postgres", "slurm", "munge", "mysql", "nobody"};

int identity_account_check(uid_t uid, gid_t gid, const char *name, uid_t uid_min, char *why,
                           size_t whylen)
{
	if (uid == 0 || gid == 0) {
		snprintf(why, whylen,
		         "the tenant's Unix identity %u:%u is root's; no attempt runs as it",
		         (unsigned)uid, (unsigned)gid);
		return -1;
	}
	if (uid < uid_min) {
		snprintf(why, whylen,
		         "the tenant's Unix user %s (uid %u) is a system account, below the login "
		         "range (UID_MIN %u); no attempt runs as it",
		         name, (unsigned)uid, (unsigned)uid_min);
		return -1;
	}
	for (size_t i = 0; i < sizeof(service_users) / sizeof(service_users[0]); i++)
		if (strcmp(name, service_users[i]) == 0) {
			snprintf(why, whylen,
			         "the tenant's Unix user %s (uid %u) is a service's account; no "
			         "attempt runs as it",
			         name, (unsigned)uid);
			return -1;
		}
	return 0;
}

int identity_usable(tenant_identity *id, char *why, size_t whylen)
{
	if (id->uid == 0 || id->gid == 0)
		return identity_account_check(id->uid, id->gid, "root", 0, why, whylen);
	if (id->uid == geteuid()) {
		snprintf(why, whylen,
		         "the tenant's Unix identity %u:%u is the platform's own; no attempt runs "
		         "as it",
		         (unsigned)id->uid, (unsigned)id->gid);
		return -1;
	}
	if (user_of(id->uid, id->user, sizeof(id->user), NULL) < 0) {
		snprintf(why, whylen, "the tenant's Unix user (uid %u) does not exist on this host",
		         (unsigned)id->uid);
		return -1;
	}
	return identity_account_check(id->uid, id->gid, id->user,
	                              identity_login_uid_min(IDENTITY_LOGIN_DEFS), why, whylen);
}

/*
 * Give uid to the tenant, with its audit record, unless the tenant or the
 * uid is taken meanwhile. RET 0 when given, 1 when not, or -ERR_*.
 */
static int assign(PGconn *db, const char *tenant_id, uid_t uid, gid_t gid, const char *user)
{
	char u[16], g[16];
	snprintf(u, sizeof(u), "%u", (unsigned)uid);
	snprintf(g, sizeof(g), "%u", (unsigned)gid);
	const char *p[] = {tenant_id, u, g};
	PGresult *r;
	int rc = db_query(db, &r,
	                  "WITH i AS (INSERT INTO tenant_identities (tenant_id, uid, gid, source)"
	                  " VALUES ($1, $2::int, $3::int, 'pool') ON CONFLICT DO NOTHING"
	                  " RETURNING tenant_id) SELECT t.name FROM i JOIN tenants t"
	                  " ON t.id = i.tenant_id",
	                  3, p);
	if (rc || PQntuples(r) != 1) {
		PQclear(r);
		return rc ? rc : 1;
	}
	char resource[96];
	snprintf(resource, sizeof(resource), "tenant/%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	json_t *d = json_pack("{s:i, s:i, s:s, s:s}", "uid", (int)uid, "gid", (int)gid, "user",
	                      user, "source", "pool");
	audit_record a = {.actor_name = "platform",
	                  .tenant_id = tenant_id,
	                  .action = "tenant.identity",
	                  .resource = resource,
	                  .outcome = "success",
	                  .status = 201,
	                  .client_addr = "local",
	                  .detail = d};
	rc = audit_write(db, &a);
	json_decref(d);
	return rc;
}

/* The uids of the pool already given. OUT *taken (free()), *n. RET 0 or -ERR_*. */
static int pool_taken(PGconn *db, const ty_config *cfg, uid_t **taken, int *n)
{
	char lo[16], hi[16];
	snprintf(lo, sizeof(lo), "%d", cfg->tenant_uid_min);
	snprintf(hi, sizeof(hi), "%d", cfg->tenant_uid_max);
	const char *p[] = {lo, hi};
	PGresult *r;
	int rc = db_query(db, &r,
	                  "SELECT uid FROM tenant_identities WHERE uid BETWEEN $1::int AND $2::int"
	                  " ORDER BY uid",
	                  2, p);
	*n = rc == 0 ? PQntuples(r) : 0;
	*taken = calloc((size_t)*n + 1, sizeof(**taken));
	if (rc == 0 && !*taken)
		rc = -ERR_INTERNAL;
	for (int i = 0; rc == 0 && i < *n; i++)
		(*taken)[i] = (uid_t)strtoul(PQgetvalue(r, i, 0), NULL, 10);
	PQclear(r);
	return rc;
}

/* One pass over the pool. RET 0 given (*out), 1 none free, or -ERR_*. */
static int pool_give(PGconn *db, const ty_config *cfg, const char *tenant_id, tenant_identity *out)
{
	uid_t *taken;
	int n, k = 0, rc = pool_taken(db, cfg, &taken, &n);
	uid_t uid_min = identity_login_uid_min(IDENTITY_LOGIN_DEFS);
	for (long uid = cfg->tenant_uid_min; rc == 0 && uid <= cfg->tenant_uid_max; uid++) {
		while (k < n && taken[k] < (uid_t)uid)
			k++;
		tenant_identity id = {.uid = (uid_t)uid};
		char why[256];
		if ((k < n && taken[k] == (uid_t)uid) || uid == 0 ||
		    user_of(id.uid, id.user, sizeof(id.user), &id.gid) < 0 ||
		    identity_account_check(id.uid, id.gid, id.user, uid_min, why, sizeof(why)) <
		        0 ||
		    id.uid == geteuid())
			continue;
		rc = assign(db, tenant_id, id.uid, id.gid, id.user);
		if (rc == 0) {
			*out = id;
			break;
		}
		if (rc == 1)
			rc = 0; /* the uid, or the tenant, was taken meanwhile */
		if (rc == 0 && identity_get(db, tenant_id, out) == 0)
			break;
	}
	free(taken);
	return rc ? rc : (out->uid ? 0 : 1);
}

int identity_ensure(PGconn *db, const ty_config *cfg, const char *tenant_id, tenant_identity *out,
                    char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	int rc = identity_get(db, tenant_id, out);
	if (rc <= 0)
		return rc;
	if (cfg->tenant_uid_min <= 0 || cfg->tenant_uid_max < cfg->tenant_uid_min) {
		snprintf(why, whylen,
		         "the tenant has no Unix user to run as, and no pool of users is set "
		         "(TRAINYARD_TENANT_UID_MIN, TRAINYARD_TENANT_UID_MAX)");
		return 1;
	}
	/* a uid another tenant takes meanwhile is passed over (pool_give) */
	bool own = PQtransactionStatus(db) == PQTRANS_IDLE;
	rc = own ? db_begin(db) : 0;
	if (rc == 0)
		rc = pool_give(db, cfg, tenant_id, out);
	if (own && rc == 0)
		rc = db_commit(db);
	else if (own)
		db_rollback(db);
	if (rc == 1)
		snprintf(why, whylen,
		         "the tenant has no Unix user to run as: every user of the pool (uids %d "
		         "to %d) is another tenant's, or missing on this host",
		         cfg->tenant_uid_min, cfg->tenant_uid_max);
	return rc;
}

int identity_tenant_dirs(const char *const *roots, size_t n, const char *tenant_id,
                         const tenant_identity *id, char *err, size_t errlen)
{
	storage_owners o = storage_owners_for(id->uid, id->gid);
	for (size_t i = 0; i < n; i++) {
		int rc = storage_tenant_dirs(roots[i], tenant_id, &o, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int identity_become_tenant(const char *storage_root, const char *tenant_id, char *why,
                           size_t whylen)
{
	if (geteuid() != 0)
		return 0;
	uid_t uid;
	gid_t gid;
	char err[1024], name[64];
	if (storage_tenant_owner(storage_root, tenant_id, &uid, &gid, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "the tenant's directory in the storage root: %s", err);
		return -1;
	}
	if (uid == 0 || gid == 0) {
		snprintf(
		    why, whylen,
		    "the tenant's directory in the storage root belongs to root: the tenant has "
		    "no Unix user of its own to run as");
		return -1;
	}
	int rc = user_of(uid, name, sizeof(name), NULL) == 0 ? initgroups(name, gid)
	                                                     : setgroups(0, NULL);
	if (rc == 0)
		rc = setresgid(gid, gid, gid);
	if (rc == 0)
		rc = setresuid(uid, uid, uid);
	if (rc != 0 || geteuid() != uid || getegid() != gid || setuid(0) == 0) {
		snprintf(why, whylen, "could not become the tenant's user %u:%u: %s", (unsigned)uid,
		         (unsigned)gid, strerror(errno));
		return -1;
	}
	return 0;
}
