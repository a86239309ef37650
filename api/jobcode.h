/*
 * jobcode.h - the code version a command job runs (docs/own-code.md):
 * resolved and pinned at submission, its command checked against the
 * version's members, and for each attempt the bundle's data key (a
 * recorded read).
 */
#ifndef TY_API_JOBCODE_H
#define TY_API_JOBCODE_H

#include <jansson.h>

#include "api.h"
#include "jobspec.h"

/*
 * Resolve js->command.code ("name", "name@N" or "owner/name@N") to a
 * version of one of the scope tenant's bundles, or of another tenant's
 * under a grant to it in force, the newest where none is named, pin it in
 * spec ("name@N", "owner/name@N"), and check that the command runs a file of that version
 * (jobspec_command.h). An unknown bundle or version is unknown_code at
 * /code, a command that names no member command_not_in_bundle at its
 * argument. Nothing for a job of another kind.
 * OUT: version_id ("" when none). RET 0, or -ERR_* from the database.
 */
int jobcode_resolve(api_req *rq, const jobspec *js, json_t *spec, char version_id[37], verrs *v);

/* Queue the job_code row of job_id on the submission's pipeline (nothing when version_id is ""). */
void jobcode_insert(api_req *rq, const char *job_id, const char *version_id);

#endif
