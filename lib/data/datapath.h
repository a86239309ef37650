/*
 * datapath.h - a job's data paths: what a spec may name, the tenant's data
 * root, and opening files beneath it without a way out.
 *
 * Layout under the data root (TRAINYARD_DATA_ROOT):
 *   <root>/tenants/<tenant uuid>/<the tenant's token shards, any tree>
 * The root and tenants/ are shared (root's or the platform's, 0711), every
 * tenant directory is its tenant's Unix user's, mode 0700 (storage.h's
 * owners and checks; the platform makes it, datapath_tenant_prepare checks
 * it as the tenant's own process).
 *
 * A data path (data.train, data.val) is relative to its tenant's directory:
 * one or more plain components joined by '/', none empty, "." or "..", none
 * longer than DATAPATH_COMPONENT_MAX bytes, no leading '/'. Only the last
 * component may be a pattern (fnmatch(3): '*', '?', '[...]', '\' escapes);
 * the directories before it are names as they are. datapath_check() is the
 * rule, at submit (jobspec.c) and again wherever files are opened.
 *
 * Opening: datapath_openat() resolves a checked path beneath a directory fd
 * by tenantfs_resolve_at() (tenantfs.h, the one resolver): openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) (Linux 5.6), or, where the kernel lacks openat2, by
 * a walk of openat(O_NOFOLLOW) component by component. Either way no symbolic link is followed, not
 * even one that stays inside the root. datapath_match() expands a pattern by reading the directory
 * it opened that way, never by glob(3) on a string.
 */
#ifndef TY_DATAPATH_H
#define TY_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>

#define DATAPATH_COMPONENT_MAX 255 /* NAME_MAX */

/*
 * The tenant directory's "attempts/" holds the datasets the worker
 * unsealed for running attempts (docs/datasets.md): a job reads a dataset
 * only through its own pinned versions, so no submitted data path may
 * begin there (datapath_reserved).
 */
#define DATAPATH_ATTEMPTS_DIR "attempts"

/* RET: true when path is DATAPATH_ATTEMPTS_DIR or beneath it. */
bool datapath_reserved(const char *path);

/*
 * RET: 0 when path is a valid data path (above), else -1 with the reason
 * in why ("it is absolute", ...). path is NUL-terminated.
 */
int datapath_check(const char *path, char *why, size_t whylen);

/* RET: true when s holds a pattern character ('*', '?', '[' or '\'). */
bool datapath_has_pattern(const char *s);

/* OUT buf: "<root>/tenants/<tenant id>". RET 0, or -ERR_STORAGE_PATH_INVALID. */
int datapath_tenant_dir(const char *root, const char *tenant_id, char *buf, size_t n);

/*
 * Create or check the root, tenants/ and the tenant's directory as a
 * process of the tenant itself (storage_private_dirs). RET 0, or a
 * negative storage code with err set.
 */
int datapath_tenant_prepare(const char *root, const char *tenant_id, char *err, size_t errlen);

/* How datapath_openat resolves: openat2 when the kernel has it, or the walk. */
typedef enum datapath_resolve {
	DATAPATH_RESOLVE_AUTO = 0,
	DATAPATH_RESOLVE_WALK, /* always the openat(O_NOFOLLOW) walk (tests) */
} datapath_resolve;

/*
 * Open rel (a valid data path; pattern characters in its last component
 * are taken as they are) beneath the directory dirfd, with flags (O_RDONLY, O_DIRECTORY, ...;
 * O_CLOEXEC and O_NOFOLLOW are added). RET: the fd, or -1 with errno: EINVAL when rel fails
 * datapath_check; ELOOP or EXDEV when a component is a symbolic link or leads out; ENOENT, ENOTDIR,
 * EACCES... as open(2).
 */
int datapath_openat(int dirfd, const char *rel, int flags, datapath_resolve how);

/* One matched file: its data path (relative to the root) and its open fd. */
typedef struct datapath_file {
	char *name;
	int fd;
} datapath_file;

typedef struct datapath_matches {
	datapath_file *files; /* sorted by name (strcmp) */
	size_t n;
} datapath_matches;

/*
 * The files pattern names beneath rootfd, each opened read-only and
 * non-blocking (so a FIFO cannot hang the caller) by datapath_openat.
 * Entries whose name starts with '.' match only a pattern that starts
 * with '.', as in glob(3); "." and ".." never do. No match, or a missing
 * directory or file, is success with n 0.
 * OUT: *out, to release with datapath_matches_release (also on failure).
 * RET: 0; -ERR_STORAGE_PATH_INVALID (pattern fails datapath_check);
 * -ERR_STORAGE_UNSAFE (a component, or a match, is a symbolic link or
 * leads out of the root); -ERR_STORAGE_IO; -ERR_INTERNAL (out of memory);
 * err says which path and why.
 */
int datapath_match(int rootfd, const char *pattern, datapath_resolve how, datapath_matches *out,
                   char *err, size_t errlen);

/* Close the fds and free the names. m may be zeroed or partly filled. */
void datapath_matches_release(datapath_matches *m);

#endif
