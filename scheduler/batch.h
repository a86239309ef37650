/*
 * batch.h - the Slurm batch job of one attempt: its script, environment
 * and resources.
 *
 * The script is fixed text plus the worker's path (the scheduler's own
 * setting) and numbers: no value from a job's spec or a user reaches it.
 * The job runs as its tenant's Unix user (docs/identity.md), never as the
 * scheduler's. The attempt's identity travels in the job's environment,
 * and its credential in a 0600 file of the tenant's user in the tenant's
 * directory of the spool (0700, that user's), which the worker removes
 * once it has read it (TRAINYARD_ATTEMPT_TOKEN_FILE). The batch step gets
 * SIGTERM warn_seconds before the time limit; the worker passes it on to
 * the trainer, which writes a final checkpoint and stops.
 *
 * The spool:
 *   <spool>/                                  0711, the scheduler's
 *   <spool>/tenants/                          0711, the scheduler's
 *   <spool>/tenants/<tenant>/                 0700, the tenant's user's
 *   <spool>/tenants/<tenant>/<attempt>.credential   0600, until the worker takes it
 *   <spool>/tenants/<tenant>/<job>-<n>.out    the batch job's output (Slurm writes it
 *                                             as the tenant's user); the job's directory
 */
#ifndef TY_SCHED_BATCH_H
#define TY_SCHED_BATCH_H

#include <stddef.h>

#include "dispatch.h"

/* Seconds before the time limit the batch step is warned (at most a tenth of it). */
#define BATCH_WARN_SECONDS 120

/* The tenant's directory of the spool. */
void batch_tenant_spool(const sched *s, const char *tenant_id, char *out, size_t n);
/* The spool's file for an attempt's credential. */
void batch_credential_path(const sched *s, const char *tenant_id, const char *attempt_id, char *out,
                           size_t n);

/*
 * The script of an item. RET 0, or -1 when an override is not one the
 * scheduler writes or the text does not fit.
 */
int batch_script(const sched *s, const dispatch_item *it, char *out, size_t n);

/* Submit the item; sets it->slurm_id. RET 0, or -1 with the reason in err. */
int batch_submit(sched *s, dispatch_item *it, char err[SL_ERR_MAX]);

/* Create the spool and its tenants/ (0711), or check them. RET 0, or -1 (logged). */
int batch_spool_prepare(const sched *s);

#endif
