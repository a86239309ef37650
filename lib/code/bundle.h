/*
 * bundle.h - a code bundle's archive: what a tenant may upload as its
 * training code, checked member by member before anything of it is kept
 * (docs/own-code.md).
 *
 * A bundle is a tar archive (ustar, pax or GNU; plain or gzip-compressed,
 * read by libarchive) of regular files, directories, symbolic links and
 * hard links, nothing else. Every member's path is relative and plain:
 * no leading '/', no '..' component, no empty component, no control
 * character, at most BUNDLE_PATH_MAX bytes; a leading "./" is dropped,
 * and the archive's own top directory ("./", which tar -C dir . writes
 * first) is no member.
 * A symbolic link points down from its own directory (a relative target
 * without '..'), so no chain of links leaves the bundle; a hard link
 * names a regular file before it. No member is set-user-ID or
 * set-group-ID, no path comes twice, and no path lies under a member
 * that is not a directory. The whole unpacks to at most a caller's limit
 * of bytes and BUNDLE_MEMBERS_MAX members: a small archive cannot
 * expand without bound.
 */
#ifndef TY_BUNDLE_H
#define TY_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BUNDLE_PATH_MAX    1024
#define BUNDLE_MEMBERS_MAX 100000

typedef enum bundle_kind {
	BUNDLE_FILE = 0,
	BUNDLE_DIR,
	BUNDLE_SYMLINK,
	BUNDLE_HARDLINK,
} bundle_kind;

/* One member, as the check saw it; path without a leading "./" or a trailing '/'. */
typedef struct bundle_member {
	const char *path;
	bundle_kind kind;
	uint64_t size;      /* a regular file's bytes; 0 otherwise */
	mode_t perm;        /* permission bits (07777 less set-ID) */
	const char *target; /* a link's target; NULL otherwise */
} bundle_member;

/* What a bundle holds. */
typedef struct bundle_summary {
	int files, dirs, symlinks, hardlinks;
	uint64_t bytes; /* the regular files' bytes, unpacked */
} bundle_summary;

/*
 * Where the archive's bytes come from: up to n bytes into buf, *got the
 * count (0 at the end). RET 0, or < 0 (the check then returns that code).
 */
typedef int (*bundle_source_fn)(void *arg, void *buf, size_t n, size_t *got);

/* Called for each member in archive order. RET 0 to go on, < 0 to stop with that code. */
typedef int (*bundle_member_fn)(void *arg, const bundle_member *m);

/*
 * Read the whole archive from source and check it. each_member (may be
 * NULL) sees every member that passed. max_bytes: the most the regular
 * files may add up to. OUT *sum. RET 0; -ERR_CODE_BUNDLE_INVALID with
 * the offending member and the rule in err; a source's or member
 * function's own code.
 */
int bundle_check(bundle_source_fn source, void *source_arg, uint64_t max_bytes,
                 bundle_member_fn each_member, void *member_arg, bundle_summary *sum, char *err,
                 size_t errlen);

/* RET: true when path is a plain relative member path (the rules above), after any "./". */
bool bundle_path_valid(const char *path);

#endif
