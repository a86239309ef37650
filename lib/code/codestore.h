/*
 * codestore.h - code bundle versions on disk (docs/own-code.md).
 *
 * Layout under the storage root (storage.h's rules: 0700, owned by the
 * tenant's Unix user, walked without following links):
 *   <root>/tenants/<tenant>/code/<bundle>/<version>/bundle.tar
 * with the bundle's and the version's ids (UUIDs). A version is written
 * into "<version>.partial" and renamed whole (storage_partial), after its
 * archive was read back and passed the bundle check (bundle.h), before
 * the database registers it: a refused or cut-off upload leaves nothing
 * under a version's name.
 *
 * The archive is kept as uploaded (plain or gzip), one object sealed by
 * crypt.h under the bundle's data key, with the bundle's id where a job's
 * objects carry the job's and the name "<version>/bundle.tar": moved to
 * another name, version, bundle or tenant, it fails authentication.
 */
#ifndef TY_CODESTORE_H
#define TY_CODESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bundle.h"
#include "crypt.h"
#include "storage.h"

#define CODE_ARCHIVE_FILE "bundle.tar"

/* What a stored version holds. */
typedef struct code_version_info {
	bundle_summary sum;
	uint64_t archive_bytes; /* as uploaded */
	uint64_t sealed_bytes;  /* on disk */
	unsigned char sha256[32];
} code_version_info;

typedef struct code_writer code_writer;

/*
 * Start version version_id of the bundle ctx names (ctx's job id is the
 * bundle's id; its key the bundle's data key). OUT *out: free with
 * code_writer_free() also after a failure. RET 0 or -ERR_STORAGE_*.
 */
int code_writer_open(const char *root, const storage_owners *owners, const crypt_object_ctx *ctx,
                     const char *version_id, code_writer **out, char *err, size_t errlen);
/* The next n bytes of the archive. RET 0 or -ERR_*. */
int code_writer_write(code_writer *w, const void *buf, size_t n, char *err, size_t errlen);
/* The sealed bytes the version takes so far (for the storage quota). */
uint64_t code_writer_sealed_bytes(const code_writer *w);
/*
 * Seal the end, read the archive back through its seal, check it
 * (bundle_check, files adding up to at most max_bytes; each_member, may be
 * NULL, sees every member that passed) and put the version in place. OUT
 * *info. RET 0; -ERR_CODE_BUNDLE_INVALID (err names the member and the
 * rule); each_member's code; -ERR_*.
 */
int code_writer_finish(code_writer *w, uint64_t max_bytes, bundle_member_fn each_member,
                       void *member_arg, code_version_info *info, char *err, size_t errlen);
/* Free; the version stays only when it was finished and keep is set (it was registered). */
void code_writer_free(code_writer *w, bool keep);

/* ---- reading a version back: a job's attempt unpacks it ------------------ */

/*
 * Unpack version version_id of the bundle ctx names (ctx as for
 * code_writer_open) into the empty directory dirfd, for a job's attempt
 * (codeunpack.c). holder_id is the tenant whose tree holds the version:
 * the bundle's own (ctx's tenant), or a grantee's, which reads the copy
 * code_stage() put in its tree. The sealed archive is read twice, each
 * time through its seal: first it must hash to sha256 (the version's,
 * from the database) and pass the bundle check again (at most max_bytes
 * unpacked), then it is written out by libarchive with its secure flags
 * (no absolute path, no "..", no write through a symbolic link), modes
 * kept, owners not. Links stay inside: bundle.h holds them to pointing
 * down.
 * OUT *sum. RET 0; -ERR_CODE_BUNDLE_INVALID (another hash, or a check that
 * fails); -ERR_STORAGE_* (the version is not there, or fails its seal).
 */
int code_version_unpack(const char *root, const char *holder_id, const crypt_object_ctx *ctx,
                        const char *version_id, const unsigned char sha256[32], uint64_t max_bytes,
                        int dirfd, bundle_summary *sum, char *err, size_t errlen);

/*
 * Copy version version_id of bundle bundle_id of tenant owner_id, as
 * sealed, into the grantee's tree (storage_stage), owned as owners says:
 * the platform does it when a grant lets the grantee's attempt run the
 * version. RET 0 or a negative storage code, err set.
 */
int code_stage(const char *root, const char *owner_id, const char *bundle_id,
               const char *version_id, const char *grantee_id, const storage_owners *owners,
               char *err, size_t errlen);

#endif
