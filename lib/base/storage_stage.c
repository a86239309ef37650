/*
 * storage_stage.c - a version of another tenant's registry entry, as
 * sealed, copied into the grantee's tree (storage.h, storage_stage).
 *
 * The platform runs this with the power to read every tenant's tree and to
 * chown. Both trees belong to tenants' users, who may put links or other
 * files where a version's should be, so nothing here goes by path below
 * the tenants' directories: the source is opened beneath its tenant's
 * directory (tenantfs.h), every file must be a plain file of the owner's
 * user with one link, and the copy is written relative to directories
 * opened the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "hex.h"
#include "storage.h"
#include "tenantfs.h"

int storage_granted_dir(const char *root, const char *grantee_id, const char *entry_id,
                        const char *version_id, char *buf, size_t n)
{
	char t[4096];
	int rc = storage_tenant_dir(root, grantee_id, t, sizeof(t));
	if (rc == 0 && (!storage_uuid_valid(entry_id) || !storage_uuid_valid(version_id)))
		rc = -ERR_STORAGE_PATH_INVALID;
	if (rc == 0) {
		int k = snprintf(buf, n, "%s/granted/%s/%s", t, entry_id, version_id);
		if (k < 0 || (size_t)k >= n)
			rc = -ERR_STORAGE_PATH_INVALID;
	}
	if (rc && n > 0)
		buf[0] = '\0';
	return rc;
}

/* The owner's version directory, opened beneath its tree; -1 with err. */
static int source_open(const char *root, const char *owner_id, const char *area,
                       const char *entry_id, const char *version_id, char *err, size_t errlen)
{
	char rel[160];
	tenant_tree t;
	if (tenant_tree_open(&t, root, owner_id, err, errlen) != 0)
		return -1;
	snprintf(rel, sizeof(rel), "%s/%s/%s", area, entry_id, version_id);
	int fd = tenant_tree_openat(&t, rel, O_RDONLY, 0, TENANTFS_DIR, err, errlen);
	tenant_tree_release(&t);
	return fd < 0 ? -1 : fd;
}

/* Copy file name from src to dst (directory fds), the copy owned as o says. RET 0 or -1. */
static int copy_file(int src, int dst, const char *name, uid_t owner, const storage_owners *o,
                     char *err, size_t errlen)
{
	char buf[1 << 16];
	int in = tenantfs_openat(src, name, O_RDONLY, 0, TENANTFS_FILE, owner, err, errlen);
	if (in < 0)
		return -1;
	int out = tenantfs_openat(dst, name, O_WRONLY | O_CREAT | O_EXCL, 0600, TENANTFS_FILE,
	                          o->tenant, err, errlen);
	int rc = out >= 0 && (!o->hand_over || fchown(out, o->tenant, o->group) == 0) ? 0 : -1;
	for (ssize_t got = 1; rc == 0 && got > 0;) {
		got = read(in, buf, sizeof(buf));
		for (ssize_t off = 0; got > 0 && off < got && rc == 0;) {
			ssize_t k = write(out, buf + off, (size_t)(got - off));
			rc = k > 0 ? 0 : -1;
			off += k > 0 ? k : 0;
		}
		if (got < 0)
			rc = -1;
	}
	if (rc == 0 && fsync(out) != 0)
		rc = -1;
	if (rc)
		err_printf(err, errlen, "could not copy %s: %s", name, strerror(errno));
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

int storage_stage(const char *root, const char *owner_id, const char *area, const char *entry_id,
                  const char *version_id, storage_stage_name_fn name_of, int files,
                  const char *grantee_id, const storage_owners *owners, char *err, size_t errlen)
{
	char path[4096], tmp[64], name[STORAGE_NAME_MAX + 1];
	int rc = storage_granted_dir(root, grantee_id, entry_id, version_id, path, sizeof(path));
	if (rc || !storage_uuid_valid(owner_id) || files < 1) {
		err_printf(err, errlen, "invalid storage root, ids or file count");
		return -ERR_STORAGE_PATH_INVALID;
	}
	const char *steps[] = {"tenants", grantee_id, "granted", entry_id};
	int dfd = storage_private_dirs_fd(root, steps, 4, owners, err, errlen);
	if (dfd < 0)
		return dfd;
	struct stat st;
	if (fstatat(dfd, version_id, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		close(dfd); /* copied before; the reader checks it against its hash */
		return 0;
	}
	unsigned char r[8];
	char hex[17];
	if (RAND_bytes(r, sizeof(r)) != 1) {
		close(dfd);
		return -ERR_INTERNAL;
	}
	hex_encode(r, sizeof(r), hex);
	snprintf(tmp, sizeof(tmp), "%s.copy-%s", version_id, hex);
	int src = source_open(root, owner_id, area, entry_id, version_id, err, errlen);
	uid_t owner = 0;
	rc = src >= 0 && fstat(src, &st) == 0 ? 0 : -ERR_STORAGE_IO;
	owner = st.st_uid;
	int out = -1;
	if (rc == 0 && (mkdirat(dfd, tmp, 0700) != 0 ||
	                (out = tenantfs_openat(dfd, tmp, O_RDONLY, 0, TENANTFS_DIR, owners->tenant,
	                                       err, errlen)) < 0 ||
	                (owners->hand_over && fchown(out, owners->tenant, owners->group) != 0))) {
		err_printf(err, errlen, "could not create a copy under \"%s\": %s", path,
		           strerror(errno));
		rc = -ERR_STORAGE_IO;
	}
	for (int i = 0; rc == 0 && i < files; i++)
		if (name_of(i, name, sizeof(name)) != 0 ||
		    copy_file(src, out, name, owner, owners, err, errlen) < 0)
			rc = -ERR_STORAGE_IO;
	if (rc == 0 && (fsync(out) != 0 || renameat(dfd, tmp, dfd, version_id) != 0) &&
	    errno != EEXIST && errno != ENOTEMPTY) {
		err_printf(err, errlen, "could not rename the copy to \"%s\": %s", path,
		           strerror(errno));
		rc = -ERR_STORAGE_IO;
	}
	if (rc == 0)
		fsync(dfd);
	storage_dir_remove_at(dfd, tmp); /* gone after the rename; a lost race's copy */
	if (out >= 0)
		close(out);
	if (src >= 0)
		close(src);
	close(dfd);
	return rc;
}
