/*
 * tenantfs.c - opening beneath a tenant's directory without following
 * links, blocking on FIFOs or trusting what is found (tenantfs.h).
 */
#include "tenantfs.h"
#include "error.h"
#include "storage.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define COMPONENT_MAX 255 /* NAME_MAX */

/* ---- resolving ------------------------------------------------------ */

/* RET the fd, or -1 with errno; ENOSYS when the kernel has no openat2. */
static int resolve_openat2(int dirfd, const char *rel, int flags, mode_t mode)
{
#ifdef SYS_openat2
	struct open_how how = {
	    .flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW),
	    .mode = (flags & O_CREAT) ? mode : 0,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
#else
	(void)dirfd;
	(void)rel;
	(void)flags;
	(void)mode;
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * The same by hand: every directory component with O_DIRECTORY |
 * O_NOFOLLOW, the last with flags | O_NOFOLLOW. Safe only for a rel
 * tenantfs_resolve_at() checked: no "..", no absolute start.
 */
static int resolve_walk(int dirfd, const char *rel, int flags, mode_t mode)
{
	char part[COMPONENT_MAX + 1];
	int at = dirfd;
	for (const char *p = rel;;) {
		size_t n = strcspn(p, "/");
		memcpy(part, p, n);
		part[n] = '\0';
		bool last = p[n] == '\0';
		int fd = last ? openat(at, part, flags | O_CLOEXEC | O_NOFOLLOW, mode)
		              : openat(at, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		if (at != dirfd)
			close(at);
		if (fd < 0) {
			errno = e;
			return -1;
		}
		if (last)
			return fd;
		at = fd;
		p += n + 1;
	}
}

/* RET: true when rel is relative with plain components of at most NAME_MAX bytes. */
static bool rel_plain(const char *rel)
{
	if (rel == NULL || rel[0] == '\0' || rel[0] == '/')
		return false;
	for (const char *p = rel;;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || n > COMPONENT_MAX || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

int tenantfs_resolve_at(int dirfd, const char *rel, int flags, mode_t mode, tenantfs_resolve how)
{
	if (!rel_plain(rel)) {
		errno = EINVAL;
		return -1;
	}
	if (how == TENANTFS_RESOLVE_AUTO) {
		int fd = resolve_openat2(dirfd, rel, flags, mode);
		/* EPERM: a seccomp filter that does not know openat2 */
		if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
			return fd;
	}
	return resolve_walk(dirfd, rel, flags, mode);
}

/* ---- checking what was opened ---------------------------------------- */

static const char *type_name(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	if (S_ISLNK(m))
		return "a symbolic link";
	return "a regular file";
}

static int check_opened(int fd, const char *rel, tenantfs_type want, uid_t owner, char *err,
                        size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		err_printf(err, errlen, "could not stat \"%s\" in the tenant's storage: %s", rel,
		           strerror(errno));
		return -ERR_STORAGE_IO;
	}
	bool dir = want == TENANTFS_DIR;
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		err_printf(err, errlen, "\"%s\" in the tenant's storage is %s, not %s", rel,
		           type_name(st.st_mode), dir ? "a directory" : "a regular file");
		return -ERR_STORAGE_UNSAFE;
	}
	if (st.st_uid != owner && st.st_uid != geteuid()) {
		err_printf(err, errlen,
		           "\"%s\" in the tenant's storage is owned by uid %u, neither the "
		           "tenant's user (uid %u) nor the platform's (uid %u)",
		           rel, (unsigned)st.st_uid, (unsigned)owner, (unsigned)geteuid());
		return -ERR_STORAGE_UNSAFE;
	}
	if (!dir && st.st_nlink != 1) {
		err_printf(err, errlen,
		           "\"%s\" in the tenant's storage has %lu links: a file there has one",
		           rel, (unsigned long)st.st_nlink);
		return -ERR_STORAGE_UNSAFE;
	}
	return 0;
}

int tenantfs_openat(int dirfd, const char *rel, int flags, mode_t mode, tenantfs_type want,
                    uid_t owner, char *err, size_t errlen)
{
	if (!storage_name_valid(rel)) {
		err_printf(err, errlen, "invalid name \"%.64s\" in the tenant's storage",
		           rel ? rel : "");
		return -ERR_STORAGE_PATH_INVALID;
	}
	flags |= O_NONBLOCK | O_NOCTTY;
	if (want == TENANTFS_DIR)
		flags |= O_DIRECTORY;
	int fd = tenantfs_resolve_at(dirfd, rel, flags, mode, TENANTFS_RESOLVE_AUTO);
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP || e == EXDEV || (e == ENOTDIR && want == TENANTFS_DIR) ||
		    e == ENXIO) {
			err_printf(err, errlen,
			           "\"%s\" in the tenant's storage is or passes through a symbolic "
			           "link, or is not %s",
			           rel, want == TENANTFS_DIR ? "a directory" : "a regular file");
			errno = e;
			return -ERR_STORAGE_UNSAFE;
		}
		if (e == ENOTDIR) {
			err_printf(err, errlen,
			           "\"%s\" in the tenant's storage passes through a symbolic link "
			           "or a file where a directory should be",
			           rel);
			errno = e;
			return -ERR_STORAGE_UNSAFE;
		}
		err_printf(err, errlen, "could not open \"%s\" in the tenant's storage: %s", rel,
		           strerror(e));
		errno = e;
		return -ERR_STORAGE_IO;
	}
	int rc = check_opened(fd, rel, want, owner, err, errlen);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/* ---- the tenant's directory ------------------------------------------ */

int tenant_tree_open(tenant_tree *t, const char *root, const char *tenant_id, char *err,
                     size_t errlen)
{
	t->fd = -1;
	t->owner = 0;
	gid_t gid;
	int fd = storage_tenant_dir_fd(root, tenant_id, &t->owner, &gid, err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	return 0;
}

int tenant_tree_openat(const tenant_tree *t, const char *rel, int flags, mode_t mode,
                       tenantfs_type want, char *err, size_t errlen)
{
	return tenantfs_openat(t->fd, rel, flags, mode, want, t->owner, err, errlen);
}

void tenant_tree_release(tenant_tree *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

int tenantfs_open_file(const char *root, const char *tenant_id, const char *rel, char *err,
                       size_t errlen)
{
	tenant_tree t;
	int rc = tenant_tree_open(&t, root, tenant_id, err, errlen);
	if (rc)
		return rc;
	int fd = tenant_tree_openat(&t, rel, O_RDONLY, 0, TENANTFS_FILE, err, errlen);
	int e = errno;
	tenant_tree_release(&t);
	errno = e;
	return fd;
}

int tenantfs_outside_roots(const char *path, const char *what, const char *const *roots, size_t n,
                           char *err, size_t errlen)
{
	char real[PATH_MAX], base[PATH_MAX];
	if (realpath(path, real) == NULL)
		return 0; /* missing: the reader says so */
	for (size_t i = 0; i < n; i++) {
		if (roots[i] == NULL || roots[i][0] == '\0' || realpath(roots[i], base) == NULL)
			continue;
		size_t k = strlen(base);
		if (strncmp(real, base, k) == 0 && (real[k] == '/' || real[k] == '\0' || k == 1)) {
			err_printf(err, errlen,
			           "%s \"%s\" lies in \"%s\", where tenants' files are: keep it "
			           "outside the storage root, the data root and the spool",
			           what, path, roots[i]);
			return -ERR_STORAGE_UNSAFE;
		}
	}
	return 0;
}
