/*
 * storage.h - where tenants' files live on disk, and keeping it private.
 *
 * Layout under the storage root (TRAINYARD_STORAGE_ROOT):
 *   <root>/tenants/<tenant uuid>/jobs/<job uuid>/checkpoints/<name>
 *   <root>/tenants/<tenant uuid>/jobs/<job uuid>/logs/<name>
 * The data root and the scheduler's spool have the same first two levels.
 *
 * Who owns what (docs/identity.md): the root and its tenants/ directory are
 * shared by every tenant. They belong to root or to the platform's own
 * user, and group and others may at most search them (0711): each tenant's
 * Unix user passes through to its own directory, and nobody but the owner
 * lists them. tenants/<tenant> and everything below it belong to the
 * tenant's Unix user, mode 0700 (files 0600), so one tenant's attempts
 * cannot read another's files. storage_owners says which users those are
 * for a caller: a process of the tenant itself (the worker runtime) is the
 * tenant; the platform (the API, the scheduler) names the tenant's user and
 * hands over what it creates below tenants/.
 *
 * The walks create what is missing and refuse (-ERR_STORAGE_UNSAFE) any
 * existing directory that is a symbolic link, not a directory, owned by
 * another user than the rule says, or open beyond it; they go with
 * openat(O_NOFOLLOW), so no link is followed below the root.
 *
 * Ids are canonical lower-case UUIDs (8-4-4-4-12 hex digits). Names are one
 * or more components of [A-Za-z0-9._-] joined by '/', none empty, "." or
 * "..", at most STORAGE_NAME_MAX bytes. This is the one rule for object
 * names: the checkpoint store (lib/ckpt/ckpt_store.h), the worker
 * runtime and the API all check names with storage_name_valid(), and a
 * checkpoint's shard names with storage_shard_name_valid(). Paths are built
 * only from checked ids and names, so no input reaches the file system
 * unchecked.
 *
 * Path functions write into the caller's buf of n bytes and return 0, or
 * -ERR_STORAGE_PATH_INVALID for a bad id or name or a path that does not
 * fit. The files themselves are encrypted (crypt.h): the directory modes
 * keep other local users, other tenants' attempts among them, from even
 * listing them.
 */
#ifndef TY_STORAGE_H
#define TY_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define STORAGE_NAME_MAX 255
#define STORAGE_UUID_LEN 36
/* A checkpoint's own file in its step directory, beside its shards. */
#define STORAGE_MANIFEST_NAME "manifest.json"
/* The longest shard name: "step_<8 digits>/<shard>" must stay a name. */
#define STORAGE_SHARD_NAME_MAX 128

typedef enum storage_area {
	STORAGE_CHECKPOINTS,
	STORAGE_LOGS,
} storage_area;

/* RET: true for a canonical lower-case UUID. */
bool storage_uuid_valid(const char *id);
/* OUT id: a new random (version 4) UUID, canonical. RET 0 or -ERR_INTERNAL. */
int storage_uuid_new(char id[STORAGE_UUID_LEN + 1]);
/* RET: true for a valid relative object name (see above). */
bool storage_name_valid(const char *name);
/*
 * RET: true for the name of a checkpoint's shard: a valid name of one
 * component (no '/'), at most STORAGE_SHARD_NAME_MAX bytes, and not
 * STORAGE_MANIFEST_NAME, which is the checkpoint's own file.
 */
bool storage_shard_name_valid(const char *name);

/* OUT buf: "<root>/tenants/<tenant>". */
int storage_tenant_dir(const char *root, const char *tenant_id, char *buf, size_t n);
/* OUT buf: "<root>/tenants/<tenant>/jobs/<job>". */
int storage_job_dir(const char *root, const char *tenant_id, const char *job_id, char *buf,
                    size_t n);
/* OUT buf: "<job dir>/checkpoints" or "<job dir>/logs". */
int storage_area_dir(const char *root, const char *tenant_id, const char *job_id, storage_area area,
                     char *buf, size_t n);
/* OUT buf: "<area dir>/<name>". */
int storage_object_path(const char *root, const char *tenant_id, const char *job_id,
                        storage_area area, const char *name, char *buf, size_t n);

/*
 * OUT buf: "jobs/<job>/checkpoints/<name>" or ".../logs/<name>": the
 * object's name relative to its tenant's directory, to open beneath it
 * (tenantfs.h). Fails also when the whole is longer than STORAGE_NAME_MAX.
 */
int storage_object_rel(const char *job_id, storage_area area, const char *name, char *buf,
                       size_t n);

/*
 * The name of attempt number's sealed log in the logs area,
 * "attempt-<number>.log"; it is also the log's object name in the AAD.
 * The worker runtime writes it and the API reads it. OUT buf.
 * RET 0, or -ERR_STORAGE_PATH_INVALID (number < 1, or buf too small).
 */
int storage_log_name(int number, char *buf, size_t n);

/*
 * The users a walk holds the layout to. The shared levels (the root and
 * tenants/) must belong to root or to platform, with no read or write bit
 * for group or others (0711 or 0700); new ones are made 0711. The tenant's
 * levels (tenants/<tenant> and below) must belong to tenant, mode 0700.
 * With hand_over (the platform, which may chown), what the walk creates
 * below tenants/ is given to tenant:group; so is an existing tenant's
 * directory the platform itself still owns (made before the tenant had a
 * user of its own), with everything of the platform's below it; and a
 * shared level of the platform's at 0700 is opened to 0711.
 */
typedef struct storage_owners {
	uid_t platform;
	uid_t tenant;
	gid_t group;
	bool hand_over;
} storage_owners;

/* A process of the tenant itself: tenant and platform are the caller (geteuid()). */
storage_owners storage_owners_self(void);
/* The platform (the caller, geteuid()) handing what it creates to tenant:group. */
storage_owners storage_owners_for(uid_t tenant, gid_t group);

/*
 * Create or check, as a process of the tenant itself (storage_owners_self),
 * the root and every directory of the job's layout, both areas included.
 * Missing parents of the root itself are created 0755 like mkdir -p and not
 * checked: they are not trainyard's.
 * RET 0; -ERR_STORAGE_PATH_INVALID; -ERR_STORAGE_UNSAFE; -ERR_STORAGE_IO;
 * with the reason in err.
 */
int storage_job_prepare(const char *root, const char *tenant_id, const char *job_id, char *err,
                        size_t errlen);

/*
 * Create or check root and the directories steps[0], steps[0]/steps[1],
 * ... below it, each a single name component, walked with
 * openat(O_NOFOLLOW). The root and steps[0] ("tenants") are the shared
 * levels, the rest the tenant's (storage_owners). The walk behind
 * storage_job_prepare(), the data root's and the spool's tenant
 * directories and a dataset's directories.
 * RET as storage_job_prepare().
 */
int storage_private_dirs_as(const char *root, const char *const *steps, size_t nsteps,
                            const storage_owners *owners, char *err, size_t errlen);
/* The same, leaving the last directory open: RET its fd (O_DIRECTORY), or a negative code. */
int storage_private_dirs_fd(const char *root, const char *const *steps, size_t nsteps,
                            const storage_owners *owners, char *err, size_t errlen);
/* storage_private_dirs_as() as a process of the tenant itself. */
int storage_private_dirs(const char *root, const char *const *steps, size_t nsteps, char *err,
                         size_t errlen);

/*
 * The platform's walk to a tenant's directory under root (the storage
 * root, the data root or the spool): "<root>/tenants/<tenant>", created
 * and handed to the tenant's user when owners says so.
 * RET as storage_job_prepare().
 */
int storage_tenant_dirs(const char *root, const char *tenant_id, const storage_owners *owners,
                        char *err, size_t errlen);

/*
 * Who owns "<root>/tenants/<tenant>": the tenant's Unix user, as the
 * platform made it. The shared levels on the way are checked as for the
 * caller (storage_owners_self), the tenant's directory must be a directory
 * of mode 0700. OUT *uid, *gid. RET as storage_job_prepare(); -ERR_STORAGE_IO
 * when the directory is not there.
 */
int storage_tenant_owner(const char *root, const char *tenant_id, uid_t *uid, gid_t *gid, char *err,
                         size_t errlen);
/*
 * The same, leaving the tenant's directory open (tenantfs.h opens beneath
 * it). RET its fd (O_DIRECTORY, or O_PATH where the caller may only
 * search it), or a negative code as storage_tenant_owner(); errno ENOENT
 * when a level is not there.
 */
int storage_tenant_dir_fd(const char *root, const char *tenant_id, uid_t *uid, gid_t *gid,
                          char *err, size_t errlen);

/*
 * Remove dir and the plain files directly in it (a dataset version's
 * shards, an attempt's unsealed data); best effort, nothing is reported.
 */
void storage_dir_remove(const char *dir);
/*
 * The same for the directory name inside the open directory at, opened
 * without following a link: what the platform removes in a tenant's tree,
 * where the tenant's user may have put a link in its place.
 */
void storage_dir_remove_at(int at, const char *name);

/*
 * A directory written whole or not at all (a dataset version, a code
 * bundle version): "<id>.partial" is made in the directory steps name
 * (storage_private_dirs_fd()'s walk, owners as there), filled through
 * pfd, and renamed to "<id>" by storage_partial_commit() once what is in
 * it is synced. A crash in between leaves a ".partial" directory or a
 * whole one that the database does not name yet, never half a version
 * under its final name.
 */
#define STORAGE_PARTIAL_EXT ".partial"
typedef struct storage_partial {
	int dfd; /* the directory steps name */
	int pfd; /* "<id>.partial", then "<id>" */
	char id[STORAGE_UUID_LEN + 1];
	bool committed;
} storage_partial;

/* RET 0, or -ERR_* with err set; *p is closable either way. */
int storage_partial_open(storage_partial *p, const char *root, const char *const *steps,
                         size_t nsteps, const storage_owners *owners, const char *id, char *err,
                         size_t errlen);
/* Sync the directory, rename it to "<id>" and sync its parent. RET 0 or -ERR_STORAGE_IO. */
int storage_partial_commit(storage_partial *p, char *err, size_t errlen);
/* Close; remove the directory unless it was committed and keep is set. */
void storage_partial_close(storage_partial *p, bool keep);

/*
 * Remove what crashes left in "<tenant's tree>/<area>/<owner_id>" (a
 * dataset's or a code bundle's directory of versions): "<id>.partial"
 * directories (an upload cut off by a crash of the API) and "<id>"
 * directories no row names (a crash between the rename and the commit),
 * each only when it was last changed more than older_than seconds ago, so
 * an upload under way is never touched. registered(arg, id) says whether
 * version id is in the database. OUT *removed (may be NULL). RET 0, or
 * -ERR_STORAGE_PATH_INVALID; an owner without a directory is fine.
 */
int storage_sweep_versions(const char *root, const char *tenant_id, const char *area,
                           const char *owner_id, bool (*registered)(void *arg, const char *id),
                           void *arg, double older_than, int *removed);

/*
 * Another tenant's registry entries (a dataset's versions, a code bundle's)
 * that a grant lets a tenant's attempts read are copied, as sealed, into
 * the grantee's tree: "<root>/tenants/<grantee>/granted/<entry>/<version>"
 * (storage_stage.c). The files stay sealed under the owner's key, which
 * the attempt gets only while the grant is in force.
 */

/* OUT buf: the grantee's copy of the version. RET 0 or -ERR_STORAGE_PATH_INVALID. */
int storage_granted_dir(const char *root, const char *grantee_id, const char *entry_id,
                        const char *version_id, char *buf, size_t n);

/* The name of a version's file i into buf. RET 0, or -1 when it does not fit. */
typedef int (*storage_stage_name_fn)(int i, char *buf, size_t n);

/*
 * Copy the files of "<owner's tree>/<area>/<entry_id>/<version_id>" (the
 * names name_of gives for 0 .. files-1: plain files of the owner's user
 * with one link each) to the grantee's storage_granted_dir(), owned as
 * owners says (the grantee's user). The copy is made in a directory of its
 * own and renamed whole; a copy already there is kept (its reader checks
 * it against the version's hash). RET 0 or a negative storage code, err
 * set.
 */
int storage_stage(const char *root, const char *owner_id, const char *area, const char *entry_id,
                  const char *version_id, storage_stage_name_fn name_of, int files,
                  const char *grantee_id, const storage_owners *owners, char *err, size_t errlen);

/*
 * Check that path is a directory (not a symlink) owned by the caller
 * (geteuid(): the service user, or a tenant's own process for its tenant's
 * tree) with no group or other permission bits. RET 0; -ERR_STORAGE_UNSAFE;
 * -ERR_STORAGE_IO (it cannot be examined, e.g. it does not exist).
 */
int storage_dir_check(const char *path, char *err, size_t errlen);

/*
 * What storage_fd_private() requires of an open fd, and how its messages
 * name it: what ("storage directory", "master key file") and, in the
 * message for the wrong type, what_type (NULL: what again).
 */
typedef struct storage_private_kind {
	bool dir; /* a directory, else a regular file */
	const char *what;
	const char *what_type;
} storage_private_kind;

/*
 * Check that the open fd is of kind's type, owned by the caller (geteuid()),
 * with no group or other permission bits (directories chmod 700, files
 * 600 or stricter), reported under path. The one check behind every
 * private directory here and the master key file.
 * RET 0; -ERR_STORAGE_UNSAFE; -ERR_STORAGE_IO (fstat failed).
 */
int storage_fd_private(int fd, const storage_private_kind *kind, const char *path, char *err,
                       size_t errlen);

#endif
