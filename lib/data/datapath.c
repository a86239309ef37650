/*
 * datapath.c - data paths: the rule, the tenant's directory under the
 * data root, and opening beneath a directory without following links
 * (see datapath.h).
 */
#include "datapath.h"
#include "error.h"
#include "storage.h"
#include "tenantfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the rule ------------------------------------------------------- */

static bool is_pattern_char(char c)
{
	return c == '*' || c == '?' || c == '[' || c == '\\';
}

bool datapath_has_pattern(const char *s)
{
	for (; *s; s++)
		if (is_pattern_char(*s))
			return true;
	return false;
}

static int refuse(char *why, size_t whylen, const char *text)
{
	if (why && whylen)
		snprintf(why, whylen, "%s", text);
	return -1;
}

int datapath_check(const char *path, char *why, size_t whylen)
{
	if (path == NULL || path[0] == '\0')
		return refuse(why, whylen, "it is empty");
	if (path[0] == '/')
		return refuse(why, whylen, "it is absolute; give it relative to the data root");
	for (const char *p = path;;) {
		size_t n = strcspn(p, "/");
		bool last = p[n] == '\0';
		if (n == 0)
			return refuse(why, whylen,
			              "it has an empty component (\"//\" or a final \"/\")");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return refuse(why, whylen, "it has a \".\" or \"..\" component");
		if (n > DATAPATH_COMPONENT_MAX)
			return refuse(why, whylen, "a component is longer than 255 bytes");
		for (size_t i = 0; !last && i < n; i++)
			if (is_pattern_char(p[i]))
				return refuse(
				    why, whylen,
				    "only its last component may hold '*', '?', '[' or '\\'");
		if (last)
			return 0;
		p += n + 1;
	}
}

/* ---- the tenant's directory ----------------------------------------- */

int datapath_tenant_dir(const char *root, const char *tenant_id, char *buf, size_t n)
{
	if (root == NULL || root[0] == '\0' || !storage_uuid_valid(tenant_id)) {
		if (n)
			buf[0] = '\0';
		return -ERR_STORAGE_PATH_INVALID;
	}
	int k = snprintf(buf, n, "%s/tenants/%s", root, tenant_id);
	if (k < 0 || (size_t)k >= n) {
		if (n)
			buf[0] = '\0';
		return -ERR_STORAGE_PATH_INVALID;
	}
	return 0;
}

int datapath_tenant_prepare(const char *root, const char *tenant_id, char *err, size_t errlen)
{
	if (!storage_uuid_valid(tenant_id)) {
		err_printf(err, errlen, "invalid tenant id \"%.64s\"", tenant_id ? tenant_id : "");
		return -ERR_STORAGE_PATH_INVALID;
	}
	const char *steps[] = {"tenants", tenant_id};
	return storage_private_dirs(root, steps, 2, err, errlen);
}

/* ---- opening beneath a directory ------------------------------------ */

int datapath_openat(int dirfd, const char *rel, int flags, datapath_resolve how)
{
	if (datapath_check(rel, NULL, 0) != 0) {
		errno = EINVAL;
		return -1;
	}
	return tenantfs_resolve_at(dirfd, rel, flags, 0,
	                           how == DATAPATH_RESOLVE_WALK ? TENANTFS_RESOLVE_WALK
	                                                        : TENANTFS_RESOLVE_AUTO);
}

/* ---- matching -------------------------------------------------------- */

/* A failed open of what (a data path) as a datapath_match RET, err set. */
static int open_failed(const char *what, char *err, size_t errlen)
{
	if (errno == ELOOP || errno == EXDEV) {
		err_printf(err, errlen,
		           "data path \"%s\" is or passes through a symbolic link, which the "
		           "data root does not follow",
		           what);
		return -ERR_STORAGE_UNSAFE;
	}
	if (errno == ENOTDIR) { /* O_DIRECTORY | O_NOFOLLOW on a link says ENOTDIR */
		err_printf(err, errlen,
		           "data path \"%s\" passes through a symbolic link or a file where a "
		           "directory should be; the data root follows no symbolic link",
		           what);
		return -ERR_STORAGE_UNSAFE;
	}
	err_printf(err, errlen, "could not open data path \"%s\": %s", what, strerror(errno));
	return -ERR_STORAGE_IO;
}

static int add_match(datapath_matches *m, size_t *cap, char *name, int fd)
{
	if (m->n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		datapath_file *f = realloc(m->files, c * sizeof(*f));
		if (!f)
			return -1;
		m->files = f;
		*cap = c;
	}
	m->files[m->n++] = (datapath_file){name, fd};
	return 0;
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const datapath_file *)a)->name, ((const datapath_file *)b)->name);
}

/* "<dir>/<name>", or name when dir is "". RET malloc'd, or NULL. */
static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + 1 + strlen(name) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s%s%s", dir, dir[0] ? "/" : "", name);
	return s;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Every entry of the open directory dirfd (named dir) matching pat. */
static int match_dir(int dirfd, const char *dir, const char *pat, datapath_resolve how,
                     datapath_matches *out, char *err, size_t errlen)
{
	/* a new open file of its own: a dup would share (and move) dirfd's offset */
	int listfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
	if (!d) {
		if (listfd >= 0)
			close(listfd);
		err_printf(err, errlen, "could not list data directory \"%s\": %s",
		           dir[0] ? dir : ".", strerror(errno));
		return -ERR_STORAGE_IO;
	}
	size_t cap = 0;
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (errno = 0, e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    fnmatch(pat, e->d_name, FNM_PERIOD) != 0)
			continue;
		char *name = join(dir, e->d_name);
		if (!name) {
			err_printf(err, errlen, "out of memory");
			rc = -ERR_INTERNAL;
			break;
		}
		int fd = datapath_openat(dirfd, e->d_name, O_RDONLY | O_NONBLOCK, how);
		if (fd < 0) {
			rc = open_failed(name, err, errlen);
			free(name);
		} else if (add_match(out, &cap, name, fd) < 0) {
			close(fd);
			free(name);
			err_printf(err, errlen, "out of memory");
			rc = -ERR_INTERNAL;
		}
	}
	if (rc == 0 && errno != 0) {
		err_printf(err, errlen, "could not list data directory \"%s\": %s",
		           dir[0] ? dir : ".", strerror(errno));
		rc = -ERR_STORAGE_IO;
	}
	closedir(d);
	return rc;
}

int datapath_match(int rootfd, const char *pattern, datapath_resolve how, datapath_matches *out,
                   char *err, size_t errlen)
{
	char why[128];
	memset(out, 0, sizeof(*out));
	if (datapath_check(pattern, why, sizeof(why)) != 0) {
		err_printf(err, errlen, "data path \"%.256s\" is not allowed: %s", pattern, why);
		return -ERR_STORAGE_PATH_INVALID;
	}
	const char *slash = strrchr(pattern, '/');
	const char *last = slash ? slash + 1 : pattern;
	if (!datapath_has_pattern(last)) {
		int fd = datapath_openat(rootfd, pattern, O_RDONLY | O_NONBLOCK, how);
		if (fd < 0)
			return errno == ENOENT ? 0 : open_failed(pattern, err, errlen);
		char *name = strdup(pattern);
		size_t cap = 0;
		if (!name || add_match(out, &cap, name, fd) < 0) {
			free(name);
			close(fd);
			err_printf(err, errlen, "out of memory");
			return -ERR_INTERNAL;
		}
		return 0;
	}
	char *dir = strndup(pattern, slash ? (size_t)(slash - pattern) : 0);
	if (!dir) {
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	int dirfd = rootfd, rc = 0;
	if (dir[0]) {
		dirfd = datapath_openat(rootfd, dir, O_RDONLY | O_DIRECTORY, how);
		if (dirfd < 0) {
			rc = errno == ENOENT ? 0 : open_failed(dir, err, errlen);
			free(dir);
			return rc;
		}
	}
	rc = match_dir(dirfd, dir, last, how, out, err, errlen);
	if (dirfd != rootfd)
		close_fd(&dirfd);
	free(dir);
	if (rc == 0 && out->n > 1)
		qsort(out->files, out->n, sizeof(*out->files), cmp_file);
	return rc;
}

void datapath_matches_release(datapath_matches *m)
{
	for (size_t i = 0; i < m->n; i++) {
		close_fd(&m->files[i].fd);
		free(m->files[i].name);
	}
	free(m->files);
	m->files = NULL;
	m->n = 0;
}

bool datapath_reserved(const char *path)
{
	size_t n = strlen(DATAPATH_ATTEMPTS_DIR);
	return strncmp(path, DATAPATH_ATTEMPTS_DIR, n) == 0 && (path[n] == '\0' || path[n] == '/');
}
