/*
 * batch.h - the Slurm batch job of one attempt: its script, environment
 * and resources.
 *
 * The script is fixed text plus the worker's path (the scheduler's own
 * setting) and numbers: no value from a job's spec or a user reaches it.
 * The attempt's identity travels in the job's environment, and its
 * credential in a 0600 file of the spool that the worker removes once it
 * has read it (TRAINYARD_ATTEMPT_TOKEN_FILE). The batch step gets SIGTERM
 * warn_seconds before the time limit; the worker passes it on to the
 * trainer, which writes a final checkpoint and stops.
 */
#ifndef TY_SCHED_BATCH_H
#define TY_SCHED_BATCH_H

#include <stddef.h>

#include "dispatch.h"

/* Seconds before the time limit the batch step is warned (at most a tenth of it). */
#define BATCH_WARN_SECONDS 120

/* The spool's file for an attempt's credential. */
void batch_credential_path(const sched *s, const char *attempt_id, char *out, size_t n);

/*
 * The script of an item. RET 0, or -1 when an override is not one the
 * scheduler writes or the text does not fit.
 */
int batch_script(const sched *s, const dispatch_item *it, char *out, size_t n);

/* Submit the item; sets it->slurm_id. RET 0, or -1 with the reason in err. */
int batch_submit(sched *s, dispatch_item *it, char err[SL_ERR_MAX]);

/* Create the spool's folders (0700). RET 0, or -1 (logged). */
int batch_spool_prepare(const sched *s);

#endif
