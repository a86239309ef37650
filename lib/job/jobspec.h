/*
 * jobspec.h - the training job spec: validation at submit, normal form.
 *
 * A client submits a job as JSON. jobspec_parse() checks every field and
 * every cross-field rule in one pass, so a response lists all problems, and
 * produces two things: a struct jobspec with plain C values for the
 * scheduler, and the normalized JSON (every default filled in, the preset
 * expanded) that is stored in jobs.spec. The normalized form is itself a
 * valid spec: parsing it again yields the same struct and the same JSON.
 *
 * docs/jobspec.md is the user reference: every field, default, range and
 * rule, and the pointer each rule reports.
 */
#ifndef TY_JOBSPEC_H
#define TY_JOBSPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "dataset.h"
#include "jsonx.h"
#include "layout.h"
#include "quota.h"

#define JOBSPEC_MAX_FALLBACK  8
#define JOBSPEC_NAME_CHARS    128  /* name: characters (code points) */
#define JOBSPEC_PATH_BYTES    4096 /* data.train, data.val: bytes of UTF-8 */
#define JOBSPEC_MAX_NODES     256  /* resources.nodes: the most nodes the scheduler places */
#define JOBSPEC_PARTITION_MAX 64   /* partition: ASCII characters */
#define JOBSPEC_PRESET_MAX    15   /* longest preset name */
#define JOBSPEC_ARGV_MAX      256  /* command: arguments */
#define JOBSPEC_ARGV_BYTES    8192 /* command: every argument with its NUL */
#define JOBSPEC_ENV_MAX       64   /* env: variables */
#define JOBSPEC_ENV_BYTES     8192 /* env: every "NAME=value" with its NUL */
#define JOBSPEC_ENV_NAME_MAX  128  /* env: bytes of a name */
#define JOBSPEC_CLASS_MAX     32   /* resources.priority_class: characters */
#define JOBSPEC_CLASS_DEFAULT "normal"

/*
 * What a job runs: the built-in GPT trainer (the default; model, parallel
 * and training say what), or a team's own program from a code bundle
 * (command; jobspec_command.h has its rules).
 */
typedef enum jobspec_kind {
	JOBSPEC_KIND_TRAIN = 0,
	JOBSPEC_KIND_COMMAND,
} jobspec_kind;

typedef enum jobspec_schedule {
	JOBSPEC_SCHEDULE_COSINE = 0,
	JOBSPEC_SCHEDULE_LINEAR,
	JOBSPEC_SCHEDULE_CONSTANT,
} jobspec_schedule;

/*
 * How the schedule counts steps (trainer/optim.h has the formulas): ours
 * (1-based, the decay reaches its floor at the last step), llm.c's and
 * nanoGPT's (0-based; nanoGPT's warmup also divides by warmup_steps + 1).
 */
typedef enum jobspec_lr_convention {
	JOBSPEC_LR_TRAINYARD = 0,
	JOBSPEC_LR_LLMC,
	JOBSPEC_LR_NANOGPT,
} jobspec_lr_convention;

typedef enum jobspec_precision {
	JOBSPEC_PRECISION_FP32 = 0,
	JOBSPEC_PRECISION_BF16,
	JOBSPEC_PRECISION_FP16,
} jobspec_precision;

/* Activation recomputation in the backward: a memory option, same results. */
typedef enum jobspec_recompute {
	JOBSPEC_RECOMPUTE_NONE = 0,
	JOBSPEC_RECOMPUTE_SELECTIVE, /* the attention probabilities */
	JOBSPEC_RECOMPUTE_FULL,      /* every layer from its input */
} jobspec_recompute;

typedef struct jobspec_model {
	char preset[JOBSPEC_PRESET_MAX + 1]; /* "" when the model is fully explicit */
	int layers, d_model, heads, vocab_size, seq_len;
} jobspec_model;

typedef struct jobspec_data {
	/*
	 * The training data: data paths of token shards inside the tenant's
	 * data root (datapath.h), or registered datasets (dataset.h). Exactly
	 * one of train and dataset is set; val and val_dataset are optional,
	 * at most one of them. "" when absent.
	 */
	char train[JOBSPEC_PATH_BYTES + 1]; /* a path, or a pattern in its last component */
	char val[JOBSPEC_PATH_BYTES + 1];
	char dataset[DATASET_REF_MAX + 1]; /* "name" or "name@N" */
	char val_dataset[DATASET_REF_MAX + 1];
	bool shuffle; /* sequences in a new random order each epoch (default), or in stream order */
} jobspec_data;

typedef struct jobspec_resources {
	int nodes;
	int gpus_per_node; /* 0: CPU ranks */
	int ranks_per_node;
	int time_limit_minutes;
	char partition[JOBSPEC_PARTITION_MAX + 1]; /* "" when absent */
	/*
	 * Scheduling (scheduler/README.md, "Borrowing and preemption"): the
	 * job's priority class, which the API checks against the tenant's
	 * allowed ones, and whether it may be preempted (false only within
	 * the tenant's guaranteed devices).
	 */
	char priority_class[JOBSPEC_CLASS_MAX + 1]; /* JOBSPEC_CLASS_DEFAULT when absent */
	bool preemptible;                           /* true when absent */
} jobspec_resources;

typedef struct jobspec_training {
	int steps;
	double lr;
	int warmup_steps;
	jobspec_schedule schedule;
	jobspec_lr_convention lr_convention;
	double min_lr_fraction; /* the floor of the decay, a fraction of lr */
	jobspec_precision precision;
	jobspec_recompute recompute;
	double grad_clip;     /* 0 disables clipping */
	double grad_clip_eps; /* the clip rule's epsilon: clip / (norm + eps) */
	double weight_decay;
	double adam_beta1, adam_beta2, adam_eps; /* AdamW's (trainer/optim.h) */
	int64_t seed;
	char init_from[37]; /* a checkpoint's id: the initial weights; "" when absent */
} jobspec_training;

/*
 * A command job's program: the code version it runs, its argv (never a
 * shell string), the variables it adds to the platform's, and the fewest
 * nodes a retry may shrink to. Strings are packed one after another, each
 * with its NUL (jobspec_command_arg(), jobspec_command_env()).
 */
typedef struct jobspec_command {
	char code[DATASET_REF_MAX + 1]; /* "name" or "name@N"; pinned to "name@N" at submission */
	int argc;
	char args[JOBSPEC_ARGV_BYTES];
	int n_env;
	char env[JOBSPEC_ENV_BYTES]; /* "NAME=value" */
	int min_nodes;               /* resources.min_nodes: 1..nodes, nodes when absent */
} jobspec_command;

typedef struct jobspec_checkpoint {
	int every_steps, keep;
} jobspec_checkpoint;

typedef struct jobspec_fault {
	int max_restarts, heartbeat_timeout_s;
} jobspec_fault;

/*
 * A validated spec. Self-contained: strings are copied in, nothing points
 * into the JSON it came from, and there is nothing to free.
 */
typedef struct jobspec {
	char name[JOBSPEC_NAME_CHARS * 4 + 1]; /* UTF-8 */
	jobspec_kind kind;
	/*
	 * kind COMMAND: the program. Such a job has no model; its parallel
	 * layout is data_parallel over its ranks (one task each, micro_batch
	 * and grad_accum 1), and its fallbacks are the same on fewer whole
	 * nodes, down to min_nodes: the elastic range.
	 */
	jobspec_command command;
	jobspec_model model;
	jobspec_data data;
	layout parallel;
	int global_batch; /* sequences per optimizer step; shared by every fallback */
	jobspec_resources resources;
	jobspec_training training;
	jobspec_checkpoint checkpoint;
	jobspec_fault fault_tolerance;
	/* Smaller layouts to restart with after losing ranks, largest first. */
	int n_fallback;
	layout fallback[JOBSPEC_MAX_FALLBACK];
	bool fallback_auto; /* "auto": the scheduler derives the ladder; n_fallback is 0 */
} jobspec;

/*
 * Validate a job spec and bring it to normal form.
 *
 * IN:  in, untrusted parsed JSON (already depth/size/duplicate-key checked
 *      by jsonx_parse); any json_t, or NULL, is handled.
 *      quota, the tenant's limits, or NULL to skip the never-fits check.
 * OUT: *out, zeroed and then filled; use it only when RET is 0.
 *      *normalized (normalized may be NULL to skip it): on success a new
 *      object owned by the caller (json_decref() it), NULL on failure.
 *      v, initialised by the caller: one {pointer, code, message} row is
 *      appended for every problem found. Rows already in v are left alone
 *      and do not affect RET.
 * RET: 0 when the spec is valid, -ERR_VALIDATION_FAILED when this call
 *      added rows, -ERR_INTERNAL when memory ran out building *normalized.
 *      Never aborts, whatever in holds.
 */
int jobspec_parse(const json_t *in, const quota_limits *quota, jobspec *out, json_t **normalized,
                  verrs *v);

/*
 * A job spec from a file ("-": standard input), with each override
 * "section.field=value" applied before validation (value read as JSON,
 * else taken as a string), so a program never runs a spec the API would
 * refuse. The one loader of the trainer and the worker runtime.
 * OUT: *out and, when normalized is not NULL, *normalized (caller
 * json_decref()s it) as jobspec_parse() gives them.
 * RET 0; -1 with every problem in err, one per line.
 */
int jobspec_load(const char *path, char *const *overrides, int n_overrides, jobspec *out,
                 json_t **normalized, char *err, size_t errlen);

/*
 * Read only the "model" member of body (any JSON object holding one, such
 * as a capacity plan request), with the job spec's presets, ranges and
 * rules, reported at /model/... as jobspec_parse() reports them.
 * OUT: *out, usable when RET is 0; rows appended to v.
 * RET: 0, or -ERR_VALIDATION_FAILED when rows were added.
 */
int jobspec_model_parse(const json_t *body, jobspec_model *out, verrs *v);

/* RET: the i-th argument (0 <= i < argc) or "NAME=value" of a command job. */
const char *jobspec_command_arg(const jobspec_command *c, int i);
const char *jobspec_command_env(const jobspec_command *c, int i);

/* RET: the job's ranks, nodes x ranks_per_node. */
int64_t jobspec_ranks(const jobspec *s);

/*
 * RET: what counts against max_gpus: nodes x gpus_per_node, or the CPU
 * ranks (nodes x ranks_per_node) when gpus_per_node is 0.
 */
int64_t jobspec_devices(const jobspec *s);

/* RET: the spec's spelling of a schedule or precision ("cosine", "bf16"). */
const char *jobspec_schedule_name(jobspec_schedule s);
const char *jobspec_lr_convention_name(jobspec_lr_convention c);
const char *jobspec_precision_name(jobspec_precision p);
const char *jobspec_recompute_name(jobspec_recompute r);

#endif
