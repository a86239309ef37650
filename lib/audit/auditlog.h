/*
 * auditlog.h - the audit log as a verifiable log (docs/audit.md): records
 * sequenced into an RFC 6962 Merkle tree (merkle.h), signed tree heads
 * (auditsign.h), and the proofs an auditor checks them with.
 *
 * Writers only insert into audit_log (audit.h), inside the transaction of
 * the change; the record is queued in audit_pending by a trigger. One
 * sequencer at a time (an advisory lock) turns queued records into leaves:
 * gap-free sequence numbers 0, 1, 2, ... in the order of the records' ids,
 * each with its canonical encoding (the entry) and leaf hash, and stores
 * every subtree a leaf completes. A tree head (size, root, time) is signed
 * every AUDIT_HEAD_RECORDS leaves or AUDIT_HEAD_SECONDS seconds, and on
 * demand.
 *
 * The entry of a record, the bytes its leaf hashes, is one line of JSON
 * with these members in this order and no white space:
 *   {"seq":N,"id":N,"at":"2026-12-04T08:00:00.123456Z","actor_id":"<uuid>"|null,
 *    "actor_name":"...","actor_role":"admin"|"auditor"|"","tenant_id":"<uuid>"|null,
 *    "action":"...","resource":"...","outcome":"...","status":N,
 *    "request_id":"...","client_addr":"...","detail":{...}}
 * strings escaped as JSON requires, detail's members sorted by key.
 */
#ifndef TY_AUDITLOG_H
#define TY_AUDITLOG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auditsign.h"
#include "merkle.h"

/* The advisory lock the sequencer holds for its transaction. */
#define AUDITLOG_LOCK "7427356847920134229"
/* Records sequenced in one transaction at the most. */
#define AUDITLOG_BATCH 5000

/* The columns of audit_log row a that auditlog_encode() reads, as SQL. */
#define AUDITLOG_COLS                                                                              \
	"a.id, to_char(a.at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS at,"       \
	" a.actor_id, a.actor_name, a.actor_role, a.tenant_id, a.action, a.resource,"              \
	" a.outcome, a.status, a.request_id, a.client_addr, a.detail"

/* A signed tree head. */
typedef struct auditlog_head {
	int64_t size;
	merkle_hash root;
	char at[40]; /* RFC 3339 UTC with milliseconds */
	unsigned char signature[AUDIT_SIG_LEN];
	char key_id[AUDIT_KEY_ID_LEN + 1];
} auditlog_head;

/* When the sequencer signs a head without being asked. */
typedef struct auditlog_policy {
	int64_t head_records; /* after this many new leaves */
	int head_seconds;     /* or this long after the last head, when the log grew */
} auditlog_policy;

/* What one step did. */
typedef struct auditlog_step_result {
	int64_t added;   /* records sequenced */
	int64_t size;    /* the log's size after */
	bool more;       /* records are still queued */
	bool signed_now; /* a head was signed: head */
	auditlog_head head;
} auditlog_step_result;

/*
 * The entry of row `row` of r (AUDITLOG_COLS) as leaf seq.
 * OUT: *out (malloc'ed, NUL-terminated, caller frees), *len.
 * RET 0, or -1 (out of memory, or a detail that is not JSON).
 */
int auditlog_encode(const PGresult *r, int row, int64_t seq, char **out, size_t *len);

/*
 * One step of the sequencer, in a transaction of its own under the log's
 * lock: sequence up to AUDITLOG_BATCH queued records, then, with a signer,
 * sign a head of the new size when the policy says it is due or force is
 * set (and no head of that size exists yet).
 * RET 0 or -ERR_* (nothing of the step is kept then).
 */
int auditlog_step(PGconn *c, const audit_signer *signer, const auditlog_policy *p, bool force,
                  auditlog_step_result *out);

/* The newest head. OUT: *found. RET 0 or -ERR_*. */
int auditlog_head_latest(PGconn *c, auditlog_head *h, bool *found);

/*
 * The bytes h's signature covers (auditsign_head_message()). RET their
 * length, or -1 when n bytes cannot hold them.
 */
int auditlog_head_message(const auditlog_head *h, char *buf, size_t n);

/* The log's size, leaves sequenced so far. RET 0 or -ERR_*. */
int auditlog_size(PGconn *c, int64_t *size);

/* A merkle_get_fn over the stored leaves and subtrees; ctx is the PGconn. */
int auditlog_subtree(void *ctx, int level, uint64_t idx, merkle_hash out);

#endif
