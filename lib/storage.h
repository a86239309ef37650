/*
 * storage.h - where tenants' files live on disk, and keeping it private.
 *
 * Layout under the storage root (TRAINYARD_STORAGE_ROOT):
 *   <root>/tenants/<tenant uuid>/jobs/<job uuid>/checkpoints/<name>
 *   <root>/tenants/<tenant uuid>/jobs/<job uuid>/logs/<name>
 * The root and every directory below it are mode 0700 and owned by the
 * service user. storage_job_prepare() creates what is missing and refuses
 * (-ERR_STORAGE_UNSAFE) any existing one that is a symbolic link, not a
 * directory, owned by someone else or open to group or others; it walks
 * the path with openat(O_NOFOLLOW), so no link is followed below the root.
 *
 * Ids are canonical lower-case UUIDs (8-4-4-4-12 hex digits). Names are one
 * or more components of [A-Za-z0-9._-] joined by '/', none empty, "." or
 * "..", at most STORAGE_NAME_MAX bytes. This is the one rule for object
 * names: the checkpoint store (lib/stream.h), the worker
 * runtime and the API all check names with storage_name_valid(), and a
 * checkpoint's shard names with storage_shard_name_valid(). Paths are built
 * only from checked ids and names, so no input reaches the file system
 * unchecked.
 *
 * Path functions write into the caller's buf of n bytes and return 0, or
 * -ERR_STORAGE_PATH_INVALID for a bad id or name or a path that does not
 * fit. The files themselves are encrypted (crypt.h): the directory modes
 * keep other local users from even listing them.
 */
#ifndef TY_STORAGE_H
#define TY_STORAGE_H

#include <stdbool.h>
#include <stddef.h>

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
 * The name of attempt number's sealed log in the logs area,
 * "attempt-<number>.log"; it is also the log's object name in the AAD.
 * The worker runtime writes it and the API reads it. OUT buf.
 * RET 0, or -ERR_STORAGE_PATH_INVALID (number < 1, or buf too small).
 */
int storage_log_name(int number, char *buf, size_t n);

/*
 * Create (0700) or check the root and every directory of the job's layout,
 * both areas included. Missing parents of the root itself are created 0755
 * like mkdir -p and not checked: they are not trainyard's.
 * RET 0; -ERR_STORAGE_PATH_INVALID; -ERR_STORAGE_UNSAFE; -ERR_STORAGE_IO;
 * with the reason in err.
 */
int storage_job_prepare(const char *root, const char *tenant_id, const char *job_id, char *err,
                        size_t errlen);

/*
 * Create (0700) or check root and the directories steps[0], steps[0]/
 * steps[1], ... below it, each a single name component, walked with
 * openat(O_NOFOLLOW) and held to the same rules as the job's layout. The
 * walk behind storage_job_prepare(), and behind the data root's tenant
 * directories (datapath.h).
 * RET as storage_job_prepare().
 */
int storage_private_dirs(const char *root, const char *const *steps, size_t nsteps, char *err,
                         size_t errlen);

/*
 * Remove dir and the plain files directly in it (a dataset version's
 * shards, an attempt's unsealed data); best effort, nothing is reported.
 */
void storage_dir_remove(const char *dir);

/*
 * Check that path is a directory (not a symlink) owned by the service user
 * with no group or other permission bits. RET 0; -ERR_STORAGE_UNSAFE;
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
 * Check that the open fd is of kind's type, owned by the service user,
 * with no group or other permission bits (directories chmod 700, files
 * 600 or stricter), reported under path. The one check behind every
 * private directory here and the master key file.
 * RET 0; -ERR_STORAGE_UNSAFE; -ERR_STORAGE_IO (fstat failed).
 */
int storage_fd_private(int fd, const storage_private_kind *kind, const char *path, char *err,
                       size_t errlen);

#endif
