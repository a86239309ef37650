/*
 * dataset_stage.c - a copy of another tenant's dataset version, as sealed,
 * in the grantee's tree (dataset.h, dataset_stage).
 *
 * The platform runs this with the power to read every tenant's tree and to
 * chown. Both trees belong to tenants' users, who may put links or other
 * files where a version's should be, so nothing here goes by path below
 * the tenants' directories: the source is walked with O_NOFOLLOW and every
 * shard must be a plain file of the owner's user with one link, and the
 * copy is written relative to directories opened the same way.
 */
#include "dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "hex.h"
#include "tenantfs.h"

#define SHARD_FMT "shard_%06d.bin"
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* The owner's version directory, opened without following links; -1 with err. */
static int source_open(const char *root, const char *owner_id, const char *dataset_id,
                       const char *version_id, char *err, size_t errlen)
{
	char rel[128];
	tenant_tree t;
	if (tenant_tree_open(&t, root, owner_id, err, errlen) != 0)
		return -1;
	snprintf(rel, sizeof(rel), "datasets/%s/%s", dataset_id, version_id);
	int fd = tenant_tree_openat(&t, rel, O_RDONLY, 0, TENANTFS_DIR, err, errlen);
	tenant_tree_release(&t);
	return fd < 0 ? -1 : fd;
}

/* Copy shard idx from src to dst (directory fds), the copy owned as o says. RET 0 or -1. */
static int copy_shard(int src, int dst, int idx, uid_t owner, const storage_owners *o, char *err,
                      size_t errlen)
{
	char name[32], buf[1 << 16];
	snprintf(name, sizeof(name), SHARD_FMT, idx);
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

int dataset_stage(const char *root, const char *owner_id, const char *dataset_id,
                  const char *version_id, int shards, const char *grantee_id,
                  const storage_owners *owners, char *err, size_t errlen)
{
	char path[4096], tmp[64];
	int rc = dataset_granted_dir(root, grantee_id, dataset_id, version_id, path, sizeof(path));
	if (rc || !storage_uuid_valid(owner_id) || shards < 1) {
		err_printf(err, errlen, "invalid storage root, ids or shard count");
		return -ERR_STORAGE_PATH_INVALID;
	}
	const char *steps[] = {"tenants", grantee_id, "granted", dataset_id};
	int dfd = storage_private_dirs_fd(root, steps, 4, owners, err, errlen);
	if (dfd < 0)
		return dfd;
	struct stat st;
	if (fstatat(dfd, version_id, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		close(dfd); /* copied before; the worker checks it against its hash */
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
	int src = source_open(root, owner_id, dataset_id, version_id, err, errlen);
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
	for (int i = 0; rc == 0 && i < shards; i++)
		if (copy_shard(src, out, i, owner, owners, err, errlen) < 0)
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
