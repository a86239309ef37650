/*
 * auditseq.h - the API's sequencer of the audit log: a thread that, with a
 * connection of its own, brings queued audit records into the Merkle tree
 * and signs tree heads when they are due (lib/audit/auditlog.h). Every API
 * process runs one; the log's advisory lock lets one step run at a time.
 */
#ifndef TY_AUDITSEQ_H
#define TY_AUDITSEQ_H

#include "auditlog.h"
#include "config.h"

#define AUDITSEQ_IDLE_MS 200 /* the wait between steps while nothing is queued */

typedef struct auditseq auditseq;

/* Start the thread; signer (borrowed, may be NULL: no heads) outlives it. RET it, or NULL. */
auditseq *auditseq_start(const ty_config *cfg, const audit_signer *signer);
/* Stop the thread after its current step. NULL is fine. */
void auditseq_stop(auditseq *s);

#endif
