/*
 * program.h - what the driver does for a command job beyond the trainer's
 * launches (docs/own-code.md): the ranks' environment, the report lines
 * of the protocol (sdk/README.md), checkpoints sealed from the files the
 * program wrote, and the newest one unsealed for the next launch.
 *
 * The attempt's work directory (shared by the allocation's nodes, private
 * to the tenant's user) holds
 *   checkpoint/<step>/...   what the ranks write (TRAINYARD_CHECKPOINT_DIR)
 *   resume/...              the checkpoint a launch resumes from (TRAINYARD_RESUME_DIR)
 * A checkpoint goes into the job's store (ckpt.h) as the trainer's do:
 * step_%08d/ with one shard per file, shard i being the i-th of the
 * files in bytewise path order, and a manifest whose world is the number
 * of files and whose config is {"kind": "command", "files": [paths]}; so
 * the API, retention, downloads and grants treat it as any checkpoint.
 */
#ifndef TY_WORKER_PROGRAM_H
#define TY_WORKER_PROGRAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "ckpt.h"
#include "jobspec.h"

#define PROGRAM_CKPT_FILES_MAX 10000 /* files of one checkpoint */
#define PROGRAM_CKPT_KIND      "command"

typedef struct program {
	const jobspec *spec; /* borrowed */
	ckpt_store *store;   /* the job's checkpoints (sealed in attempt mode); owned */
	char work_dir[4096]; /* the attempt's; checkpoint/ and resume/ below it */
	char ckpt_out[4200]; /* work_dir/checkpoint */
	char resume_dir[4200];
	int resume_step;     /* the checkpoint the next launch resumes from; 0: none */
	char master_port[8]; /* this launch's */
	char **env;          /* "NAME=value" for the launcher, NULL-terminated; owned */
	const char **names;  /* their names (mpirun -x); owned, pointing into env */
	double last_step_at; /* when rank 0 last reported a step (monotonic s); 0: not yet */
} program;

/* What a program needs from the driver's options: where things are. Borrowed. */
typedef struct program_where {
	const char *code_dir;   /* the unpacked bundle */
	const char *work_dir;   /* private, shared by the nodes */
	const char *data_dir;   /* TRAINYARD_DATA_DIR; NULL: none */
	const char *job_id;     /* NULL outside the platform */
	int attempt;            /* 0 outside the platform */
	const char *sdk_python; /* prepended to PYTHONPATH; NULL: none */
	const char *path;       /* the program's PATH (TRAINYARD_PROGRAM_PATH) */
} program_where;

/* The program's PATH where no setting says (config.def's default) */
#define PROGRAM_PATH_DEFAULT "/usr/local/bin:/usr/bin:/bin"

/*
 * Open the job's checkpoint store (store: taken over) and the work
 * directory's areas. RET 0, or -1 with err.
 */
int program_open(program *p, const jobspec *spec, ckpt_store *store, const program_where *w,
                 char *err, size_t errlen);
void program_release(program *p);

/*
 * Before a launch: the newest checkpoint that verifies, unsealed into
 * resume/ (none: resume_step 0), a fresh MASTER_PORT, and the ranks'
 * environment in p->env and p->names. RET 0, or -1 with err.
 */
int program_prepare_launch(program *p, const program_where *w, char *err, size_t errlen);

/*
 * The ranks wrote checkpoint/<step>/: seal its files into the store as
 * step, prune to checkpoint.keep, remove the plain files.
 * OUT manifest: the manifest's path as the sink takes it. RET 0, or -1 with err.
 */
int program_checkpoint(program *p, int step, char *manifest, size_t mlen, char *err, size_t errlen);

/* A report line's kinds (sdk/README.md). */
typedef enum program_report {
	PROGRAM_REPORT_BAD = 0,
	PROGRAM_REPORT_STEP,
	PROGRAM_REPORT_CHECKPOINT,
	PROGRAM_REPORT_PROGRESS,
} program_report;

/*
 * Read one report line. A step becomes the metrics object the platform
 * keeps (*out, a new reference: type, step, loss, tokens, lr, grad_norm,
 * metrics as given; time_ms the wall clock, as the trainer's lines have
 * it; step_s and tokens_per_s measured since the last step, at now,
 * a monotonic clock's seconds). OUT *step for a step or checkpoint. RET its kind; BAD
 * with why for a line that breaks the protocol.
 */
program_report program_report_read(program *p, const char *text, double now, int *step,
                                   json_t **out, char *why, size_t whylen);

/*
 * The rank a launcher's label gives a line: srun --label's "N: " and
 * mpirun --tag-output's "[job,N]<stdout>:". OUT *rank (-1 when unlabelled).
 * RET: the line after the label.
 */
const char *program_label(const char *line, int *rank);

/* Remove dir and everything below it, not following links; best effort. */
void program_tree_remove(const char *dir);

#endif
