/*
 * attempt.h - `trainyard-worker attempt`: one attempt of a platform job,
 * from its credential to its end.
 *
 * TRAINYARD_ATTEMPT (the attempt's id) and TRAINYARD_ATTEMPT_TOKEN (its
 * credential, tya_...) come from the environment; the credential is wiped
 * from the environment as soon as it is read and is never on a command
 * line or in a file. The attempt:
 *   1. GET the attempt: its tenant, job, number, normalised spec and
 *      pinned dataset versions; the spec goes to a private temporary file
 *      (0600) for the trainer (step 3), removed at the end;
 *   2. POST .../key: the job's data key, held in memory and handed to the
 *      launcher in its environment only (TRAINYARD_DATA_KEY, passed to the
 *      ranks with mpirun -x; srun passes the environment by itself);
 *   3. storage_job_prepare(): the job's directories under the storage root;
 *      datapath_tenant_prepare(): the tenant's directory under the data
 *      root, which every rank gets as trainyard-train --data-root; the
 *      job's registered datasets unsealed beneath it (datasets.h), the
 *      spec pointed at them and written for the trainer;
 *   4. runtime_run() with the checkpoints in the job's checkpoints area,
 *      sealed by the trainer (--encrypt TENANT_ID:JOB_ID), and the API sink
 *      (sink.h): the sealed log logs/attempt-<number>.log, metrics,
 *      checkpoints, fallbacks, heartbeats, and the end.
 */
#ifndef TY_WORKER_ATTEMPT_H
#define TY_WORKER_ATTEMPT_H

#include "driver.h"

/*
 * Run the attempt against the API at url. o carries the command line's
 * train_bin, overrides, slots and rank_memory_limit; the rest is filled
 * here. RET: trainyard-worker's exit status (driver.h), 2 when the
 * environment lacks the attempt, 1 when the attempt could not be set up.
 */
int attempt_run(const char *url, runtime_options *o);

#endif
