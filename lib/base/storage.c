/*
 * storage.c - the storage root's layout: checked ids and names, paths in
 * caller buffers, and private directories created and verified with
 * openat(O_NOFOLLOW).
 */
#include "storage.h"
#include "error.h"
#include "hex.h"
#include "tenantfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const area_names[] = {
    [STORAGE_CHECKPOINTS] = "checkpoints",
    [STORAGE_LOGS] = "logs",
};

/* ---- ids and names -------------------------------------------------- */

bool storage_uuid_valid(const char *id)
{
	if (id == NULL || strlen(id) != STORAGE_UUID_LEN)
		return false;
	for (int i = 0; i < STORAGE_UUID_LEN; i++) {
		char c = id[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

int storage_uuid_new(char id[STORAGE_UUID_LEN + 1])
{
	unsigned char b[16];
	if (RAND_bytes(b, sizeof(b)) != 1)
		return -ERR_INTERNAL;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	char hex[33];
	hex_encode(b, sizeof(b), hex);
	snprintf(id, STORAGE_UUID_LEN + 1, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
	         hex + 16, hex + 20);
	return 0;
}

static bool name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

bool storage_name_valid(const char *name)
{
	if (name == NULL)
		return false;
	size_t len = strlen(name);
	if (len == 0 || len > STORAGE_NAME_MAX)
		return false;
	for (const char *p = name;;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		for (size_t i = 0; i < n; i++)
			if (!name_char_ok(p[i]))
				return false;
		if (p[n] == '\0')
			return true;
		p += n + 1; /* a trailing '/' leaves an empty last component */
	}
}

bool storage_shard_name_valid(const char *name)
{
	return storage_name_valid(name) && strlen(name) <= STORAGE_SHARD_NAME_MAX &&
	       !strchr(name, '/') && strcmp(name, STORAGE_MANIFEST_NAME) != 0;
}

/* ---- paths ---------------------------------------------------------- */

static int path_fmt(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int path_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= n) {
		if (n > 0)
			buf[0] = '\0';
		return -ERR_STORAGE_PATH_INVALID;
	}
	return 0;
}

static bool root_ok(const char *root)
{
	return root != NULL && root[0] != '\0';
}

static int invalid_path(char *buf, size_t n)
{
	if (n > 0)
		buf[0] = '\0';
	return -ERR_STORAGE_PATH_INVALID;
}

int storage_tenant_dir(const char *root, const char *tenant_id, char *buf, size_t n)
{
	if (!root_ok(root) || !storage_uuid_valid(tenant_id))
		return invalid_path(buf, n);
	return path_fmt(buf, n, "%s/tenants/%s", root, tenant_id);
}

int storage_job_dir(const char *root, const char *tenant_id, const char *job_id, char *buf,
                    size_t n)
{
	if (!root_ok(root) || !storage_uuid_valid(tenant_id) || !storage_uuid_valid(job_id))
		return invalid_path(buf, n);
	return path_fmt(buf, n, "%s/tenants/%s/jobs/%s", root, tenant_id, job_id);
}

int storage_area_dir(const char *root, const char *tenant_id, const char *job_id, storage_area area,
                     char *buf, size_t n)
{
	if ((unsigned)area > STORAGE_LOGS || !root_ok(root) || !storage_uuid_valid(tenant_id) ||
	    !storage_uuid_valid(job_id))
		return invalid_path(buf, n);
	return path_fmt(buf, n, "%s/tenants/%s/jobs/%s/%s", root, tenant_id, job_id,
	                area_names[area]);
}

int storage_object_path(const char *root, const char *tenant_id, const char *job_id,
                        storage_area area, const char *name, char *buf, size_t n)
{
	if (!storage_name_valid(name))
		return invalid_path(buf, n);
	int rc = storage_area_dir(root, tenant_id, job_id, area, buf, n);
	if (rc)
		return rc;
	size_t len = strlen(buf);
	return path_fmt(buf + len, n - len, "/%s", name) ? invalid_path(buf, n) : 0;
}

int storage_object_rel(const char *job_id, storage_area area, const char *name, char *buf, size_t n)
{
	if ((unsigned)area > STORAGE_LOGS || !storage_uuid_valid(job_id) ||
	    !storage_name_valid(name))
		return invalid_path(buf, n);
	if (path_fmt(buf, n, "jobs/%s/%s/%s", job_id, area_names[area], name) != 0 ||
	    !storage_name_valid(buf))
		return invalid_path(buf, n);
	return 0;
}

int storage_log_name(int number, char *buf, size_t n)
{
	if (number < 1)
		return invalid_path(buf, n);
	return path_fmt(buf, n, "attempt-%d.log", number);
}

/* ---- private directories -------------------------------------------- */

int storage_fd_private(int fd, const storage_private_kind *kind, const char *path, char *err,
                       size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		err_printf(err, errlen, "could not stat %s \"%s\": %s", kind->what, path,
		           strerror(errno));
		return -ERR_STORAGE_IO;
	}
	if (kind->dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		err_printf(err, errlen, "%s \"%s\" is not %s",
		           kind->what_type ? kind->what_type : kind->what, path,
		           kind->dir ? "a directory" : "a regular file");
		return -ERR_STORAGE_UNSAFE;
	}
	if (st.st_uid != geteuid()) {
		err_printf(err, errlen,
		           "%s \"%s\" is owned by uid %u, not by the service user (uid %u)",
		           kind->what, path, (unsigned)st.st_uid, (unsigned)geteuid());
		return -ERR_STORAGE_UNSAFE;
	}
	if ((st.st_mode & 077) != 0) {
		err_printf(err, errlen, "%s \"%s\" has mode %04o: %s", kind->what, path,
		           (unsigned)(st.st_mode & 07777),
		           kind->dir ? "group and others must have no access (chmod 700)"
		                     : "it must be 0600 or stricter (chmod 600)");
		return -ERR_STORAGE_UNSAFE;
	}
	return 0;
}

static const storage_private_kind storage_dir = {
    .dir = true, .what = "storage directory", .what_type = "storage path"};

storage_owners storage_owners_self(void)
{
	storage_owners o = {geteuid(), geteuid(), getegid(), false};
	return o;
}

storage_owners storage_owners_for(uid_t tenant, gid_t group)
{
	storage_owners o = {geteuid(), tenant, group, true};
	return o;
}

/*
 * The rule for one level of a walk (storage.h): a shared level belongs to
 * root or the platform and is at most searchable by others; a tenant's
 * level belongs to the tenant and is private. RET 0 or -ERR_STORAGE_*.
 */
static int level_check(const struct stat *st, bool shared, const storage_owners *o,
                       const char *path, char *err, size_t errlen)
{
	if (!S_ISDIR(st->st_mode)) {
		err_printf(err, errlen, "storage path \"%s\" is not a directory", path);
		return -ERR_STORAGE_UNSAFE;
	}
	if (shared && st->st_uid != 0 && st->st_uid != o->platform) {
		err_printf(err, errlen,
		           "storage directory \"%s\" is owned by uid %u, not by root or the "
		           "platform's user (uid %u)",
		           path, (unsigned)st->st_uid, (unsigned)o->platform);
		return -ERR_STORAGE_UNSAFE;
	}
	if (!shared && st->st_uid != o->tenant) {
		err_printf(err, errlen,
		           "storage directory \"%s\" is owned by uid %u, not by the tenant's user "
		           "(uid %u)",
		           path, (unsigned)st->st_uid, (unsigned)o->tenant);
		return -ERR_STORAGE_UNSAFE;
	}
	if ((st->st_mode & (shared ? 066 : 077)) != 0) {
		err_printf(err, errlen, "storage directory \"%s\" has mode %04o: %s", path,
		           (unsigned)(st->st_mode & 07777),
		           shared ? "group and others may at most search it (chmod 711)"
		                  : "group and others must have no access (chmod 700)");
		return -ERR_STORAGE_UNSAFE;
	}
	return 0;
}

/* Open dir (relative to at) refusing symlinks and non-directories. RET fd or negative. */
static int open_dir_nofollow(int at, const char *dir, const char *path, char *err, size_t errlen)
{
	int fd = openat(at, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* a shared level (0711) that a tenant's user may pass through but not read */
	if (fd < 0 && errno == EACCES)
		fd = openat(at, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno == ELOOP || errno == ENOTDIR) {
		err_printf(err, errlen, "storage path \"%s\" is a symbolic link or not a directory",
		           path);
		return -ERR_STORAGE_UNSAFE;
	}
	err_printf(err, errlen, "could not open storage directory \"%s\": %s", path,
	           strerror(errno));
	return -ERR_STORAGE_IO;
}

int storage_dir_check(const char *path, char *err, size_t errlen)
{
	int fd = open_dir_nofollow(AT_FDCWD, path, path, err, errlen);
	if (fd < 0)
		return fd;
	int rc = storage_fd_private(fd, &storage_dir, path, err, errlen);
	close(fd);
	return rc;
}

/* mkdir -p the parents of path, 0755; they are the operator's, not ours. */
static int make_parents(const char *path, char *err, size_t errlen)
{
	char buf[4096];
	if (path_fmt(buf, sizeof(buf), "%s", path) != 0) {
		err_printf(err, errlen, "storage root \"%s\" is too long", path);
		return -ERR_STORAGE_PATH_INVALID;
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
			err_printf(err, errlen, "could not create directory \"%s\": %s", buf,
			           strerror(errno));
			return -ERR_STORAGE_IO;
		}
		*p = '/';
	}
	return 0;
}

/*
 * Give the directory fd and what the platform owns below it to the
 * tenant's user, without following a link (fchownat AT_SYMLINK_NOFOLLOW on
 * entries, directories opened O_NOFOLLOW). Entries of other owners are
 * left as they are. RET 0 or -1 (errno).
 */
static int hand_over_tree(int fd, const storage_owners *o, int depth)
{
	/*
	 * Children first: while the platform still owns a directory, the
	 * tenant's user cannot add or swap entries in it. A file with more
	 * than one link is left alone: it may be a link to a file elsewhere.
	 */
	int dup_fd = depth <= 64 ? dup(fd) : -1;
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    st.st_uid != o->platform)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub =
			    openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			rc = sub >= 0 ? hand_over_tree(sub, o, depth + 1) : -1;
			if (sub >= 0)
				close(sub);
		} else if (S_ISREG(st.st_mode) && st.st_nlink == 1) {
			rc = fchownat(fd, e->d_name, o->tenant, o->group, AT_SYMLINK_NOFOLLOW);
		}
	}
	closedir(d);
	return rc == 0 ? fchown(fd, o->tenant, o->group) : rc;
}

/*
 * Create dir inside the directory at (fsync at when created), open it
 * without following links, give it to its owner when the walk hands over,
 * and check it as a shared or a tenant's level. path names it in messages.
 * RET the new directory's fd, or a negative code.
 */
static int enter_dir(int at, const char *dir, bool shared, const storage_owners *o,
                     const char *path, char *err, size_t errlen)
{
	bool made = mkdirat(at, dir, shared ? 0711 : 0700) == 0;
	if (made) {
		if (at != AT_FDCWD)
			fsync(at);
	} else if (errno != EEXIST) {
		err_printf(err, errlen, "could not create storage directory \"%s\": %s", path,
		           strerror(errno));
		return -ERR_STORAGE_IO;
	}
	int fd = open_dir_nofollow(at, dir, path, err, errlen);
	if (fd < 0)
		return fd;
	struct stat st;
	int rc = fstat(fd, &st) == 0 ? 0 : -ERR_STORAGE_IO;
	bool mine = rc == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid();
	/* the umask may have taken the search bits a shared level needs */
	if (rc == 0 && mine && shared && (made || o->hand_over) && (st.st_mode & 0777) != 0711 &&
	    (st.st_mode & 066) == 0)
		rc = fchmod(fd, 0711) == 0 ? 0 : -ERR_STORAGE_IO;
	if (rc == 0 && mine && !shared && o->hand_over && st.st_uid == o->platform &&
	    o->tenant != o->platform)
		rc = hand_over_tree(fd, o, 0) == 0 ? 0 : -ERR_STORAGE_IO;
	if (rc == 0 && fstat(fd, &st) != 0)
		rc = -ERR_STORAGE_IO;
	if (rc)
		err_printf(err, errlen, "could not give storage directory \"%s\" its owner: %s",
		           path, strerror(errno));
	if (rc == 0)
		rc = level_check(&st, shared, o, path, err, errlen);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int storage_private_dirs_fd(const char *root, const char *const *steps, size_t nsteps,
                            const storage_owners *owners, char *err, size_t errlen)
{
	char path[4096], top[4096];
	if (!root_ok(root)) {
		err_printf(err, errlen, "the directory root is empty");
		return -ERR_STORAGE_PATH_INVALID;
	}
	size_t len = strlen(root);
	while (len > 1 && root[len - 1] == '/')
		len--; /* "dir/" would follow a link named dir */
	size_t need = len + 1;
	for (size_t i = 0; i < nsteps; i++) {
		if (!storage_name_valid(steps[i]) || strchr(steps[i], '/')) {
			err_printf(err, errlen, "invalid directory name \"%.64s\" under \"%.*s\"",
			           steps[i] ? steps[i] : "", (int)len, root);
			return -ERR_STORAGE_PATH_INVALID;
		}
		need += 1 + strlen(steps[i]);
	}
	if (need > sizeof(path)) {
		err_printf(err, errlen, "the directories under \"%.*s\" make too long a path",
		           (int)len, root);
		return -ERR_STORAGE_PATH_INVALID;
	}
	snprintf(top, sizeof(top), "%.*s", (int)len, root);
	int rc = make_parents(top, err, errlen);
	if (rc)
		return rc;
	int fd = enter_dir(AT_FDCWD, top, true, owners, top, err, errlen);
	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "%s", top);
	for (size_t i = 0; i < nsteps; i++) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/%s", steps[i]);
		int next = enter_dir(fd, steps[i], i == 0, owners, path, err, errlen);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	return fd;
}

int storage_private_dirs_as(const char *root, const char *const *steps, size_t nsteps,
                            const storage_owners *owners, char *err, size_t errlen)
{
	int fd = storage_private_dirs_fd(root, steps, nsteps, owners, err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int storage_private_dirs(const char *root, const char *const *steps, size_t nsteps, char *err,
                         size_t errlen)
{
	storage_owners self = storage_owners_self();
	return storage_private_dirs_as(root, steps, nsteps, &self, err, errlen);
}

int storage_tenant_dirs(const char *root, const char *tenant_id, const storage_owners *owners,
                        char *err, size_t errlen)
{
	if (!storage_uuid_valid(tenant_id)) {
		err_printf(err, errlen, "invalid tenant id \"%.64s\"", tenant_id ? tenant_id : "");
		return -ERR_STORAGE_PATH_INVALID;
	}
	const char *steps[] = {"tenants", tenant_id};
	return storage_private_dirs_as(root, steps, 2, owners, err, errlen);
}

int storage_tenant_dir_fd(const char *root, const char *tenant_id, uid_t *uid, gid_t *gid,
                          char *err, size_t errlen)
{
	char path[4096], shown[4096];
	int rc = storage_tenant_dir(root, tenant_id, path, sizeof(path));
	if (rc) {
		err_printf(err, errlen, "invalid root or tenant id");
		return rc;
	}
	storage_owners self = storage_owners_self();
	const char *names[] = {root, "tenants", tenant_id};
	int fd = AT_FDCWD;
	struct stat st;
	for (int i = 0; i < 3; i++) {
		snprintf(shown, sizeof(shown), "%s%s%s", i ? root : "", i ? "/" : "", names[i]);
		if (i == 2)
			snprintf(shown, sizeof(shown), "%s", path);
		int next = open_dir_nofollow(fd, names[i], shown, err, errlen);
		int e = errno;
		if (fd != AT_FDCWD)
			close(fd);
		if (next < 0) {
			errno = e;
			return next;
		}
		fd = next;
		rc = fstat(fd, &st) == 0 ? 0 : -ERR_STORAGE_IO;
		if (rc == 0 && i < 2)
			rc = level_check(&st, true, &self, shown, err, errlen);
		if (rc) {
			close(fd);
			return rc;
		}
	}
	self.tenant = st.st_uid;
	rc = level_check(&st, false, &self, path, err, errlen);
	if (rc) {
		close(fd);
		return rc;
	}
	*uid = st.st_uid;
	*gid = st.st_gid;
	return fd;
}

int storage_tenant_owner(const char *root, const char *tenant_id, uid_t *uid, gid_t *gid, char *err,
                         size_t errlen)
{
	int fd = storage_tenant_dir_fd(root, tenant_id, uid, gid, err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int storage_job_prepare(const char *root, const char *tenant_id, const char *job_id, char *err,
                        size_t errlen)
{
	char path[4096];
	/* the longest path below, so every one fits */
	int rc = storage_area_dir(root, tenant_id, job_id, STORAGE_CHECKPOINTS, path, sizeof(path));
	if (rc) {
		err_printf(err, errlen,
		           "invalid storage root or ids (tenant \"%.64s\", job \"%.64s\")",
		           tenant_id ? tenant_id : "", job_id ? job_id : "");
		return rc;
	}
	for (int a = STORAGE_CHECKPOINTS; a <= STORAGE_LOGS; a++) {
		const char *steps[] = {"tenants", tenant_id, "jobs", job_id, area_names[a]};
		rc = storage_private_dirs(root, steps, sizeof(steps) / sizeof(steps[0]), err,
		                          errlen);
		if (rc)
			return rc;
	}
	return 0;
}

void storage_dir_remove_at(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	unlinkat(at, name, AT_REMOVEDIR);
}

void storage_dir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL)
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

/* ---- a directory written whole ------------------------------------------- */

static int sync_fd(int fd, const char *what, const char *id, char *err, size_t errlen)
{
	if (fsync(fd) == 0)
		return 0;
	err_printf(err, errlen, "could not sync %s of \"%s\": %m", what, id);
	return -ERR_STORAGE_IO;
}

int storage_partial_open(storage_partial *p, const char *root, const char *const *steps,
                         size_t nsteps, const storage_owners *owners, const char *id, char *err,
                         size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->dfd = p->pfd = -1;
	if (!storage_uuid_valid(id)) {
		err_printf(err, errlen, "invalid id \"%s\"", id);
		return -ERR_STORAGE_PATH_INVALID;
	}
	snprintf(p->id, sizeof(p->id), "%s", id);
	p->dfd = storage_private_dirs_fd(root, steps, nsteps, owners, err, errlen);
	if (p->dfd < 0) {
		int rc = p->dfd;
		p->dfd = -1;
		return rc;
	}
	char name[STORAGE_UUID_LEN + sizeof(STORAGE_PARTIAL_EXT)];
	snprintf(name, sizeof(name), "%s" STORAGE_PARTIAL_EXT, id);
	if (mkdirat(p->dfd, name, 0700) != 0) {
		err_printf(err, errlen, "could not create \"%s\": %m", name);
		return -ERR_STORAGE_IO;
	}
	p->pfd =
	    tenantfs_openat(p->dfd, name, O_RDONLY, 0, TENANTFS_DIR, owners->tenant, err, errlen);
	if (p->pfd < 0) {
		int rc = p->pfd;
		p->pfd = -1;
		storage_dir_remove_at(p->dfd, name);
		return rc;
	}
	if (owners->hand_over && fchown(p->pfd, owners->tenant, owners->group) != 0) {
		err_printf(err, errlen, "could not give \"%s\" to the tenant: %m", name);
		return -ERR_STORAGE_IO;
	}
	return 0;
}

int storage_partial_commit(storage_partial *p, char *err, size_t errlen)
{
	char from[STORAGE_UUID_LEN + sizeof(STORAGE_PARTIAL_EXT)];
	snprintf(from, sizeof(from), "%s" STORAGE_PARTIAL_EXT, p->id);
	int rc = sync_fd(p->pfd, "the directory", from, err, errlen);
	if (rc)
		return rc;
	if (renameat(p->dfd, from, p->dfd, p->id) != 0) {
		err_printf(err, errlen, "could not rename \"%s\": %m", from);
		return -ERR_STORAGE_IO;
	}
	p->committed = true;
	return sync_fd(p->dfd, "the parent", p->id, err, errlen);
}

void storage_partial_close(storage_partial *p, bool keep)
{
	if (p->pfd >= 0 && !(p->committed && keep)) {
		char name[STORAGE_UUID_LEN + sizeof(STORAGE_PARTIAL_EXT)];
		snprintf(name, sizeof(name), "%s%s", p->id,
		         p->committed ? "" : STORAGE_PARTIAL_EXT);
		storage_dir_remove_at(p->dfd, name);
	}
	if (p->pfd >= 0)
		close(p->pfd);
	if (p->dfd >= 0)
		close(p->dfd);
	p->pfd = p->dfd = -1;
}

/* "<area>/<owner_id>" in the tenant's tree, opened without following a link, or -1. */
static int versions_dir_open(const char *root, const char *tenant_id, const char *area,
                             const char *owner_id)
{
	char rel[128], err[512];
	tenant_tree t;
	if (!storage_uuid_valid(owner_id) || !storage_name_valid(area) ||
	    tenant_tree_open(&t, root, tenant_id, err, sizeof(err)) != 0)
		return -1;
	snprintf(rel, sizeof(rel), "%s/%s", area, owner_id);
	int fd = tenant_tree_openat(&t, rel, O_RDONLY, 0, TENANTFS_DIR, err, sizeof(err));
	tenant_tree_release(&t);
	return fd < 0 ? -1 : fd;
}

int storage_sweep_versions(const char *root, const char *tenant_id, const char *area,
                           const char *owner_id, bool (*registered)(void *arg, const char *id),
                           void *arg, double older_than, int *removed)
{
	if (removed)
		*removed = 0;
	char probe[4096];
	if (storage_tenant_dir(root, tenant_id, probe, sizeof(probe)) != 0 ||
	    !storage_uuid_valid(owner_id))
		return -ERR_STORAGE_PATH_INVALID;
	int dfd = versions_dir_open(root, tenant_id, area, owner_id);
	int dup_fd = dfd >= 0 ? dup(dfd) : -1;
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char id[STORAGE_UUID_LEN + 1];
		size_t n = strlen(e->d_name);
		bool partial = n == STORAGE_UUID_LEN + strlen(STORAGE_PARTIAL_EXT) &&
		               strcmp(e->d_name + STORAGE_UUID_LEN, STORAGE_PARTIAL_EXT) == 0;
		if (n != STORAGE_UUID_LEN && !partial)
			continue;
		snprintf(id, sizeof(id), "%.*s", STORAGE_UUID_LEN, e->d_name);
		struct stat st;
		if (!storage_uuid_valid(id) ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode) || difftime(now, st.st_mtime) <= older_than)
			continue;
		if (!partial && registered(arg, id))
			continue;
		storage_dir_remove_at(dfd, e->d_name);
		if (removed)
			++*removed;
	}
	closedir(d);
	close(dfd);
	return 0;
}
