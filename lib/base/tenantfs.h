/*
 * tenantfs.h - opening what lies in a tenant's tree.
 *
 * Everything below <root>/tenants/<tenant>/ (the storage root, the data
 * root, the spool: storage.h's layout) belongs to the tenant's Unix user,
 * and so to any code the tenant runs. At any moment a name there may be a
 * symbolic link to the platform's keys, a FIFO that blocks whoever opens
 * or reads it, a device, a socket, or a hard link to someone else's file.
 * The API, the scheduler and the worker runtime therefore open nothing
 * there by a path string: they hold the tenant's directory open
 * (tenant_tree_open) and open beneath it with tenantfs_openat(), the one
 * function for it:
 *
 *   - resolution with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 *     RESOLVE_NO_MAGICLINKS) (Linux 5.6), or, where the kernel lacks
 *     openat2, a walk of openat(O_NOFOLLOW) component by component: no
 *     symbolic link is followed, not even one that stays inside;
 *   - always O_NONBLOCK | O_NOCTTY | O_CLOEXEC, so that opening a FIFO or a
 *     device cannot block the caller;
 *   - then fstat(): a regular file with one link (or a directory, where one
 *     is wanted), owned by the tenant's user or by the caller (the
 *     platform); anything else is closed and refused.
 *
 * Refusals are -ERR_STORAGE_UNSAFE with the name (relative to the tenant's
 * directory) and the reason in err. A unit test (test_tenantfs) reads the
 * programs' sources and fails on any other open by path.
 */
#ifndef TY_TENANTFS_H
#define TY_TENANTFS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What the caller wants to find at a name. */
typedef enum tenantfs_type {
	TENANTFS_FILE, /* a regular file with one link */
	TENANTFS_DIR,  /* a directory */
} tenantfs_type;

/* How names are resolved: openat2 where the kernel has it, or the walk. */
typedef enum tenantfs_resolve {
	TENANTFS_RESOLVE_AUTO = 0,
	TENANTFS_RESOLVE_WALK, /* always the openat(O_NOFOLLOW) walk (tests) */
} tenantfs_resolve;

/*
 * Resolve rel beneath the directory dirfd without following any symbolic
 * link, with flags | O_CLOEXEC | O_NOFOLLOW (mode for O_CREAT). rel must
 * be relative, with no empty, "." or ".." component (the callers check it
 * against their own name rule first). No type or owner check: the
 * resolver behind tenantfs_openat() and datapath_openat().
 * RET the fd, or -1 with errno: ELOOP or EXDEV for a link or a way out,
 * ENOTDIR, ENOENT, EACCES... as open(2); EINVAL for an absolute rel or a
 * "." or ".." component.
 */
int tenantfs_resolve_at(int dirfd, const char *rel, int flags, mode_t mode, tenantfs_resolve how);

/*
 * Open rel (storage_name_valid: components of [A-Za-z0-9._-]) beneath
 * dirfd as the header says, and check what was opened: want's type, and
 * owned by uid owner or by the caller (geteuid()). flags: O_RDONLY,
 * O_WRONLY or O_RDWR, with O_CREAT / O_EXCL / O_TRUNC / O_APPEND as
 * needed (mode for O_CREAT); O_NONBLOCK and O_NOCTTY are always added,
 * O_DIRECTORY for TENANTFS_DIR. A new file is created with the caller's
 * uid: give it to the tenant (fchown) where that matters.
 * RET the fd; -ERR_STORAGE_PATH_INVALID (rel is not a valid name);
 * -ERR_STORAGE_UNSAFE (a link on the way, or not want's type, or another
 * owner, or more than one link); -ERR_STORAGE_IO (any other failure, errno
 * ENOENT when rel or a directory on its way is not there); err names rel
 * and says why.
 */
int tenantfs_openat(int dirfd, const char *rel, int flags, mode_t mode, tenantfs_type want,
                    uid_t owner, char *err, size_t errlen);

/* A tenant's directory under one of the roots, held open. */
typedef struct tenant_tree {
	int fd;      /* "<root>/tenants/<tenant>", O_DIRECTORY; -1 when not open */
	uid_t owner; /* its owner: the tenant's Unix user */
} tenant_tree;

/*
 * Open "<root>/tenants/<tenant_id>" without following links: the root and
 * tenants/ must be root's or the caller's and at most searchable by others
 * (the shared levels), the tenant's directory a directory of mode 0700,
 * whose owner becomes t->owner (storage_tenant_owner's rule).
 * RET 0; -ERR_STORAGE_PATH_INVALID; -ERR_STORAGE_UNSAFE; -ERR_STORAGE_IO
 * (errno ENOENT when the directory is not there: the tenant has no files
 * there yet).
 */
int tenant_tree_open(tenant_tree *t, const char *root, const char *tenant_id, char *err,
                     size_t errlen);

/* tenantfs_openat() beneath the tenant's directory, owned by its user or the caller. */
int tenant_tree_openat(const tenant_tree *t, const char *rel, int flags, mode_t mode,
                       tenantfs_type want, char *err, size_t errlen);

/* Close the directory; t may be zeroed or already released. */
void tenant_tree_release(tenant_tree *t);

/*
 * The same for one file in one step: open the tenant's tree under root and
 * rel beneath it, read-only. RET the fd, or a negative code as above.
 */
int tenantfs_open_file(const char *root, const char *tenant_id, const char *rel, char *err,
                       size_t errlen);

/*
 * Refuse a file of the platform's own (the master key, the audit signing
 * key) that lies in one of roots[0..n-1] (the storage root, the data root,
 * the spool: tenants' trees are below them), compared by real path. Roots
 * that do not exist yet, or are empty strings, are skipped. The key files
 * are read once, at start, by path: this keeps that path out of every
 * tenant's reach. RET 0, or -ERR_STORAGE_UNSAFE with err naming both.
 */
int tenantfs_outside_roots(const char *path, const char *what, const char *const *roots, size_t n,
                           char *err, size_t errlen);

#endif
