/*
 * identity.h - the Unix user each tenant's attempts run as
 * (docs/identity.md).
 *
 * A tenant has at most one identity, its row of tenant_identities: a uid no
 * other tenant has, and a gid. It is given on first need (the tenant's
 * creation, a dataset upload, the scheduler before it dispatches) from the
 * pool TRAINYARD_TENANT_UID_MIN..TRAINYARD_TENANT_UID_MAX: the lowest uid
 * no tenant holds that names a user on this host (getpwuid), with that
 * user's primary group. An operator may record one instead (source
 * 'admin'); the pool then never gives it out. Tenants are never deleted,
 * so a uid once given stays its tenant's, and with it every file it owns.
 * Giving one out is audited (tenant.identity).
 *
 * No tenant runs as root, as the platform's own user, with group 0, or as
 * a system or service account (a uid below the login range, UID_MIN of
 * /etc/login.defs, or a user of the services beside the platform:
 * PostgreSQL, Slurm, munge, MariaDB, nobody): identity_usable() refuses
 * such a row, the pool passes such a user over, and a tenant without a
 * usable identity does not run at all.
 */
#ifndef TY_IDENTITY_H
#define TY_IDENTITY_H

#include <libpq-fe.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

typedef struct tenant_identity {
	uid_t uid;
	gid_t gid;
	char user[64]; /* the user's name (passwd), which Slurm's associations use */
} tenant_identity;

/* The tenant's identity as recorded. RET 0 with *out, 1 when it has none, or -ERR_*. */
int identity_get(PGconn *db, const char *tenant_id, tenant_identity *out);

/*
 * The tenant's identity, given from the pool when it has none. Runs in the
 * caller's transaction when one is open (the API's tenant creation), else
 * in one of its own. RET 0 with *out (not yet checked: identity_usable), 1
 * when the tenant has none and the pool has none to give (why says so), or
 * -ERR_* (the database).
 */
int identity_ensure(PGconn *db, const ty_config *cfg, const char *tenant_id, tenant_identity *out,
                    char *why, size_t whylen);

/* Where the login range's first uid is read from, and its value when the file does not say. */
#define IDENTITY_LOGIN_DEFS      "/etc/login.defs"
#define IDENTITY_UID_MIN_DEFAULT 1000

/*
 * The first uid of the login range: UID_MIN in the login.defs file at path,
 * or IDENTITY_UID_MIN_DEFAULT when the file cannot be read or gives no
 * (valid) UID_MIN. Users below it are the system's.
 */
uid_t identity_login_uid_min(const char *path);

/*
 * Whether the user name (uid, gid) is one that may run tenants' attempts:
 * not root's uid or group, not below uid_min (a system account), and not
 * one of the services' users (postgres, slurm, munge, mysql, nobody).
 * RET 0, or -1 with why.
 */
int identity_account_check(uid_t uid, gid_t gid, const char *name, uid_t uid_min, char *why,
                           size_t whylen);

/*
 * Whether id may run a tenant's attempts on this host: a user of that uid
 * exists (its name into id->user), passes identity_account_check() against
 * this host's login range, and is not the platform's own user.
 * RET 0, or -1 with why.
 */
int identity_usable(tenant_identity *id, char *why, size_t whylen);

/*
 * The platform's part: the tenant's directory under each of roots[0..n-1]
 * (the storage root, the data root, the spool), created or checked as its
 * user's (storage_owners_for), the shared levels above it made 0711.
 * RET 0, or a negative storage code with err set.
 */
int identity_tenant_dirs(const char *const *roots, size_t n, const char *tenant_id,
                         const tenant_identity *id, char *err, size_t errlen);

/*
 * For a process that is to act as a tenant's own (the worker runtime, a
 * test tool): started as root, it becomes the owner of the tenant's
 * directory in the storage root, which only the platform makes
 * (storage_tenant_owner), with that user's groups, for good; started as any
 * other user it stays as it is, and the walks then hold the tenant's tree
 * to be the caller's. Never root: a tenant's directory of root's is
 * refused. RET 0, or -1 with why.
 */
int identity_become_tenant(const char *storage_root, const char *tenant_id, char *why,
                           size_t whylen);

#endif
