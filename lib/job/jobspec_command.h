/*
 * jobspec_command.h - the rules of a command job's program (jobspec.h,
 * kind "command"): which environment variables a job may set, and which
 * file of its code bundle its argv runs.
 *
 * The platform sets the variables a rank needs (RANK, WORLD_SIZE, ...,
 * TRAINYARD_*, PATH); a job adds only names from the list here, so none of
 * them can be overridden and nothing is preloaded into the program.
 *
 * The argv runs the bundle's own code: argv[0] is either one of the
 * interpreters (python3, python, bash, sh), which then reads a file of the
 * bundle (or, for Python, "-m" a module of it), or a file of the bundle
 * itself, run from the bundle's directory ("train.sh" runs ./train.sh,
 * never a program found on PATH). A program given as a string ("-c") is a
 * shell string and is refused. docs/own-code.md is the user's reference.
 */
#ifndef TY_JOBSPEC_COMMAND_H
#define TY_JOBSPEC_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

#include "jobspec.h"

#define JOBSPEC_TARGET_MAX 1024 /* bytes of a bundle path (lib/code/bundle.h) */

/* RET: whether a job may set the variable name (exact names and prefixes, docs/own-code.md). */
bool jobspec_env_allowed(const char *name);

/* RET: the allowed names, then prefixes ending in '_' (for messages and docs), NULL-terminated. */
const char *const *jobspec_env_allowed_list(void);

typedef enum jobspec_runs {
	JOBSPEC_RUNS_FILE,   /* argv[0] is the bundle's file, run itself (it must be executable) */
	JOBSPEC_RUNS_SCRIPT, /* an interpreter reads the bundle's file */
	JOBSPEC_RUNS_MODULE, /* python3 -m: the bundle's PATH.py or PATH/__main__.py */
} jobspec_runs;

/* What of the bundle a command runs. */
typedef struct jobspec_target {
	jobspec_runs runs;
	int arg;                           /* the argument that names it */
	char path[JOBSPEC_TARGET_MAX + 1]; /* its path in the bundle, without "./"; a module's
	                                       dots become '/' and it has no suffix */
} jobspec_target;

/*
 * The file of the bundle that the command c runs.
 * OUT: *t when RET is 0. RET: 0; or, with why and the argument's index in
 * *bad_arg, -ERR_F_COMMAND_NOT_ARGV for a program given as a string
 * ("-c"), -ERR_F_COMMAND_NOT_IN_BUNDLE for a path that leaves the bundle
 * or an interpreter with no script.
 */
int jobspec_command_target(const jobspec_command *c, jobspec_target *t, int *bad_arg, char *why,
                           size_t whylen);

#endif
