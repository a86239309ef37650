/*
 * jobinit.h - a job that starts from a checkpoint (training.init_from;
 * docs/datasets.md, "Sharing checkpoints"): resolved and pinned at
 * submission, fetched by each attempt (jobinit.c's attempt routes).
 *
 * The checkpoint must be of the job's own tenant or granted to it (a
 * grant in force), of an ended job (its checkpoints no longer change),
 * and of the same model as the job's spec. The job's checkpoints then
 * carry its classification too (JOB_CLASSIFICATION in h_attempts.c).
 */
#ifndef TY_API_JOBINIT_H
#define TY_API_JOBINIT_H

#include <jansson.h>

#include "api.h"
#include "jobspec.h"

typedef struct job_init {
	char checkpoint_id[37]; /* "" when the job starts afresh */
	char source_job_id[37];
	char step[16];
	char grant_id[37]; /* "" for the job's own tenant's checkpoint */
	char classification[16];
} job_init;

/*
 * Resolve js->training.init_from for the scope's tenant; spec is the
 * normalized spec (its "model" is compared). A checkpoint that is not
 * there for this tenant, not final or of another model is a field error
 * in v. OUT *out. RET 0, or -ERR_* from the database.
 */
int jobinit_resolve(api_req *rq, const jobspec *js, const json_t *spec, job_init *out, verrs *v);

/* Queue the job_init row of job_id on the submission's pipeline (nothing when none). */
void jobinit_insert(api_req *rq, const char *job_id, const job_init *in);

#endif
