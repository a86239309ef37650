/*
 * bundle.c - the code bundle check (bundle.h), over libarchive's reader.
 */
#include "bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"

#define READ_BLOCK 65536

bool bundle_path_valid(const char *path)
{
	size_t n = strlen(path);
	if (n == 0 || n > BUNDLE_PATH_MAX || path[0] == '/')
		return false;
	const char *c = path;
	while (*c) {
		const char *end = strchr(c, '/');
		size_t len = end ? (size_t)(end - c) : strlen(c);
		if (len == 0 || (len == 1 && c[0] == '.') ||
		    (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)c[i] < 0x20 || c[i] == 0x7f)
				return false;
		c += len;
		if (*c == '/')
			c++;
	}
	return path[n - 1] != '/';
}

/* A link target that stays under the link's directory: relative, plain, no '..'. */
static bool target_valid(const char *t)
{
	while (t[0] == '.' && t[1] == '/')
		t += 2;
	return t[0] != '\0' && bundle_path_valid(t);
}

typedef struct reader {
	bundle_source_fn source;
	void *arg;
	int rc; /* the source's failure */
	char buf[READ_BLOCK];
} reader;

static la_ssize_t read_cb(struct archive *a, void *arg, const void **out)
{
	(void)a;
	reader *r = arg;
	size_t got = 0;
	int rc = r->source(r->arg, r->buf, sizeof(r->buf), &got);
	if (rc < 0) {
		r->rc = rc;
		return -1;
	}
	*out = r->buf;
	return (la_ssize_t)got;
}

/* The paths seen, for duplicates and paths under a non-directory. */
typedef struct seen {
	char **path;
	bool *dir;
	size_t n, cap;
} seen;

static int seen_add(seen *s, const char *path, bool dir)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		char **p = realloc(s->path, cap * sizeof(*p));
		if (p)
			s->path = p;
		bool *d = p ? realloc(s->dir, cap * sizeof(*d)) : NULL;
		if (!p || !d)
			return -ERR_INTERNAL;
		s->dir = d;
		s->cap = cap;
	}
	if (!(s->path[s->n] = strdup(path)))
		return -ERR_INTERNAL;
	s->dir[s->n++] = dir;
	return 0;
}

static void seen_free(seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->path[i]);
	free(s->path);
	free(s->dir);
}

typedef struct ranked {
	const char *path;
	bool dir;
} ranked;

static int by_path(const void *a, const void *b)
{
	return strcmp(((const ranked *)a)->path, ((const ranked *)b)->path);
}

/*
 * A path twice, or a path below a member that is not a directory. RET 0,
 * or -ERR_CODE_BUNDLE_INVALID with the member in err.
 */
static int seen_conflicts(const seen *s, char *err, size_t errlen)
{
	ranked *r = malloc((s->n ? s->n : 1) * sizeof(*r));
	if (!r)
		return -ERR_INTERNAL;
	for (size_t i = 0; i < s->n; i++)
		r[i] = (ranked){s->path[i], s->dir[i]};
	qsort(r, s->n, sizeof(*r), by_path);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i + 1 < s->n; i++)
		if (strcmp(r[i].path, r[i + 1].path) == 0) {
			err_printf(err, errlen, "\"%s\" comes twice in the archive", r[i].path);
			rc = -ERR_CODE_BUNDLE_INVALID;
		}
	/* "p/..." sorts after "p" and before any other path beginning with "p/" too */
	for (size_t i = 0; rc == 0 && i < s->n; i++) {
		if (r[i].dir)
			continue;
		size_t len = strlen(r[i].path);
		for (size_t j = i + 1; j < s->n && strncmp(r[j].path, r[i].path, len) == 0; j++)
			if (r[j].path[len] == '/') {
				err_printf(err, errlen,
				           "\"%s\" lies under \"%s\", which is not a directory",
				           r[j].path, r[i].path);
				rc = -ERR_CODE_BUNDLE_INVALID;
				break;
			}
	}
	free(r);
	return rc;
}

/* The member's path without "./" prefixes or a trailing '/' into buf. RET false when none is left.
 */
static bool member_path(const char *raw, char *buf, size_t n)
{
	while (raw[0] == '.' && raw[1] == '/')
		raw += 2;
	size_t len = strlen(raw);
	while (len > 0 && raw[len - 1] == '/')
		len--;
	if (len == 0 || len >= n)
		return false;
	memcpy(buf, raw, len);
	buf[len] = '\0';
	return true;
}

/* Check one header. OUT *m (pointing into path and the entry). RET 0 or -ERR_CODE_BUNDLE_INVALID.
 */
static int check_member(struct archive_entry *e, const seen *s, char path[BUNDLE_PATH_MAX + 2],
                        bundle_member *m, char *err, size_t errlen)
{
	const char *raw = archive_entry_pathname(e);
	memset(m, 0, sizeof(*m));
	if (!raw || !member_path(raw, path, BUNDLE_PATH_MAX + 2) || !bundle_path_valid(path)) {
		err_printf(err, errlen,
		           "member \"%.200s\": a path must be relative, at most %d bytes, without "
		           "'..', empty components or control characters",
		           raw ? raw : "(unreadable)", BUNDLE_PATH_MAX);
		return -ERR_CODE_BUNDLE_INVALID;
	}
	m->path = path;
	mode_t mode = archive_entry_mode(e);
	if (mode & (S_ISUID | S_ISGID)) {
		err_printf(err, errlen, "member \"%s\" is set-user-ID or set-group-ID", path);
		return -ERR_CODE_BUNDLE_INVALID;
	}
	m->perm = mode & 01777;
	const char *hard = archive_entry_hardlink(e);
	if (hard) {
		char t[BUNDLE_PATH_MAX + 2];
		bool found = false;
		if (member_path(hard, t, sizeof(t)) && bundle_path_valid(t))
			for (size_t i = 0; i < s->n && !found; i++)
				found = !s->dir[i] && strcmp(s->path[i], t) == 0;
		if (!found) {
			err_printf(
			    err, errlen,
			    "member \"%s\" is a hard link to \"%.200s\", which is not a file "
			    "before it in the archive",
			    path, hard);
			return -ERR_CODE_BUNDLE_INVALID;
		}
		m->kind = BUNDLE_HARDLINK;
		m->target = hard;
		return 0;
	}
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		m->kind = BUNDLE_FILE;
		m->size = (uint64_t)archive_entry_size(e);
		return 0;
	case AE_IFDIR:
		m->kind = BUNDLE_DIR;
		return 0;
	case AE_IFLNK:
		m->kind = BUNDLE_SYMLINK;
		m->target = archive_entry_symlink(e);
		if (!m->target || !target_valid(m->target)) {
			err_printf(
			    err, errlen,
			    "member \"%s\" is a symbolic link to \"%.200s\": a link must point "
			    "down from its own directory (relative, without '..')",
			    path, m->target ? m->target : "");
			return -ERR_CODE_BUNDLE_INVALID;
		}
		return 0;
	default:
		err_printf(err, errlen,
		           "member \"%s\" is a device, a pipe or a socket: a bundle holds files, "
		           "directories and links",
		           path);
		return -ERR_CODE_BUNDLE_INVALID;
	}
}

/* The archive's own top directory: "." or "./" (any number of "./"). */
static bool is_root(struct archive_entry *e)
{
	const char *p = archive_entry_pathname(e);
	if (!p || archive_entry_filetype(e) != AE_IFDIR || archive_entry_hardlink(e))
		return false;
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	return p[0] == '\0' || (p[0] == '.' && p[1] == '\0');
}

static int count(bundle_summary *sum, const bundle_member *m, uint64_t max_bytes, char *err,
                 size_t errlen)
{
	int members = sum->files + sum->dirs + sum->symlinks + sum->hardlinks;
	if (members >= BUNDLE_MEMBERS_MAX) {
		err_printf(err, errlen, "the archive has more than %d members", BUNDLE_MEMBERS_MAX);
		return -ERR_CODE_BUNDLE_INVALID;
	}
	switch (m->kind) {
	case BUNDLE_FILE:
		sum->files++;
		break;
	case BUNDLE_DIR:
		sum->dirs++;
		break;
	case BUNDLE_SYMLINK:
		sum->symlinks++;
		break;
	case BUNDLE_HARDLINK:
		sum->hardlinks++;
		break;
	}
	if (m->size > max_bytes - sum->bytes) {
		err_printf(err, errlen, "member \"%s\": the files unpack to more than %llu bytes",
		           m->path, (unsigned long long)max_bytes);
		return -ERR_CODE_BUNDLE_INVALID;
	}
	sum->bytes += m->size;
	return 0;
}

int bundle_check(bundle_source_fn source, void *source_arg, uint64_t max_bytes,
                 bundle_member_fn each_member, void *member_arg, bundle_summary *sum, char *err,
                 size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	reader *r = calloc(1, sizeof(*r));
	struct archive *a = archive_read_new();
	if (!r || !a) {
		free(r);
		archive_read_free(a);
		return -ERR_INTERNAL;
	}
	r->source = source;
	r->arg = source_arg;
	archive_read_support_filter_gzip(a);
	archive_read_support_format_tar(a);
	seen s = {0};
	char path[BUNDLE_PATH_MAX + 2];
	int rc = 0, ar = ARCHIVE_OK;
	bool unreadable = archive_read_open(a, r, NULL, read_cb, NULL) != ARCHIVE_OK;
	struct archive_entry *e;
	while (!unreadable && rc == 0 && (ar = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		if (is_root(e))
			continue; /* "./", as tar -C dir . writes first: the bundle itself */
		bundle_member m;
		rc = check_member(e, &s, path, &m, err, errlen);
		if (rc == 0)
			rc = count(sum, &m, max_bytes, err, errlen);
		if (rc == 0)
			rc = seen_add(&s, path, m.kind == BUNDLE_DIR);
		if (rc == 0 && each_member)
			rc = each_member(member_arg, &m);
		/* the data is read through, and so checked to be all there */
		if (rc == 0 && archive_read_data_skip(a) != ARCHIVE_OK)
			unreadable = true;
	}
	if (!unreadable && rc == 0 && ar != ARCHIVE_EOF)
		unreadable = true;
	if (unreadable && r->rc < 0) {
		rc = r->rc; /* the source failed, not the archive */
	} else if (unreadable) {
		const char *why = archive_error_string(a);
		err_printf(err, errlen, "not a tar archive, or one cut short: %s",
		           why ? why : "unreadable");
		rc = -ERR_CODE_BUNDLE_INVALID;
	}
	if (rc == 0 && sum->files + sum->dirs + sum->symlinks + sum->hardlinks == 0) {
		err_printf(err, errlen, "the archive has no member");
		rc = -ERR_CODE_BUNDLE_INVALID;
	}
	if (rc == 0)
		rc = seen_conflicts(&s, err, errlen);
	seen_free(&s);
	archive_read_free(a);
	free(r);
	return rc;
}
