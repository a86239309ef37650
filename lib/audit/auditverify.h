/*
 * auditverify.h - checking an export of the audit log with nothing but the
 * log's public key (docs/audit.md): no database, no trust in the server.
 *
 * An export is lines: first the signed head it ends at; then every record's
 * entry in sequence order, each signed head in between after the record
 * that completes it. The check rebuilds the Merkle tree from the entries'
 * own bytes as it reads them (memory stays that of the tree's right edge)
 * and stops at the first line that fails:
 *   - a head whose signature does not verify under the key (forged);
 *   - a record out of sequence: missing (deleted), repeated or moved
 *     (inserted, reordered), named by its sequence number;
 *   - a head whose root the records before it do not give (an entry
 *     altered among the records since the last head that held);
 *   - fewer records than the export's head counts (truncated), or more;
 *   - against a head seen before (previous): an export whose head is
 *     smaller (rolled back), or whose first records do not give its root
 *     (rewritten).
 */
#ifndef TY_AUDITVERIFY_H
#define TY_AUDITVERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auditlog.h"
#include "merkle.h"

typedef struct auditverify {
	unsigned char pub[AUDIT_KEY_LEN];
	bool have_previous;
	auditlog_head previous;
	bool started;       /* the export's head was read */
	auditlog_head head; /* the export's head */
	merkle_frontier f;  /* the records read so far */
	int64_t good;       /* the size of the last head that held */
	int64_t heads;      /* heads checked */
	bool failed;
	char problem[512];
} auditverify;

/* Start a check with the log's public key and, when not NULL, a head seen before. */
void auditverify_init(auditverify *v, const unsigned char pub[AUDIT_KEY_LEN],
                      const auditlog_head *previous);

/* Check one line (without its newline). RET 0, or -1 once it fails (v->problem says why). */
int auditverify_line(auditverify *v, const char *line, size_t len);

/* The checks of the end. RET 0 when the export holds, or -1 with why in v->problem. */
int auditverify_end(auditverify *v);

/*
 * A head from its JSON line (as the export and GET /v1/audit/head give it).
 * RET 0, or -1 with why in err.
 */
int auditverify_head_parse(const char *text, size_t len, auditlog_head *h, char *err,
                           size_t errlen);

/* RET: whether h's signature verifies under pub. */
bool auditverify_head_signed(const auditlog_head *h, const unsigned char pub[AUDIT_KEY_LEN]);

#endif
