/*
 * layout.h - how a job's ranks are laid out: data x tensor x pipeline
 * parallel, the ZeRO stage and the batch split. One type for the job
 * spec's layout and each of its fallbacks, the capacity planner's
 * candidates, the worker runtime's ladder and the layout the trainer runs;
 * the names and ranges of its fields, its text and JSON forms and the
 * rules between a layout, its model and its batch are written here once.
 */
#ifndef TY_LAYOUT_H
#define TY_LAYOUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "jsonx.h"

/* The ranges of the fields (the job spec, the plan request, the OpenAPI document). */
#define LAYOUT_DATA_PARALLEL_MAX 65536
#define LAYOUT_DEGREE_MAX        1024 /* tensor_parallel, pipeline_parallel */
#define LAYOUT_ZERO_STAGE_MAX    3
#define LAYOUT_MICRO_BATCH_MAX   65536
#define LAYOUT_BATCH_MAX         16777216 /* global_batch, grad_accum */

typedef struct layout {
	int data_parallel, tensor_parallel, pipeline_parallel, zero_stage, micro_batch;
	int grad_accum; /* derived: global_batch / (micro_batch x data_parallel) */
} layout;

/* RET: the ranks the layout needs, data x tensor x pipeline parallel. */
int64_t layout_ranks(const layout *l);

/*
 * RET: global_batch / (micro_batch x data_parallel), or 0 when that is not
 * a whole number or a value is unknown (below 1).
 */
int layout_grad_accum(const layout *l, int global_batch);

/* What a layout must agree with; a value below 1 is unknown, and the rules that need it wait. */
typedef struct layout_fit {
	int heads, layers; /* the model's */
	int global_batch;  /* sequences per optimizer step */
	int64_t ranks;     /* the ranks there are */
	/* how a message says so, a printf format of one long long:
	 * "nodes x ranks_per_node is %lld", "the world has %lld ranks" */
	const char *ranks_said;
} layout_fit;

/* One broken rule: the field of the layout it points at, its code and why. */
typedef struct layout_problem {
	const char *field; /* "tensor_parallel", "pipeline_parallel", "data_parallel" */
	err_code code;     /* ERR_F_HEADS_NOT_DIVISIBLE, ERR_F_LAYERS_NOT_DIVISIBLE,
	                      ERR_F_BATCH_MISMATCH, ERR_F_RANKS_MISMATCH */
	char message[192];
} layout_problem;

#define LAYOUT_PROBLEMS_MAX 4

/*
 * The rules between a layout and what it must agree with: tensor_parallel
 * divides the heads, pipeline_parallel the layers, global_batch is
 * micro_batch x data_parallel x a whole grad_accum, and data x tensor x
 * pipeline parallel is the ranks there are. A field of l below 1 is
 * unknown too. OUT: out[0..RET-1], the broken rules in that order (out
 * holds LAYOUT_PROBLEMS_MAX). RET: how many.
 */
int layout_check(const layout *l, const layout_fit *fit, layout_problem *out);

/*
 * layout_check() as one message, for programs that stop on a bad layout.
 * RET 0, or -1 with the broken rules in err ("; " between them).
 */
int layout_check_msg(const layout *l, const layout_fit *fit, char *err, size_t errlen);

/*
 * The environment variable naming the trainer's GPU backend library
 * (trainer/gpu_backend.h) in place of the one built beside it. A node
 * that sets it trains GPU jobs on that backend: the worker runtime asks
 * for --device cuda there even without an NVIDIA driver
 * (launch_device_cuda, worker/launch.h), as for the CPU stand-in of the
 * tests.
 */
#define GPU_BACKEND_ENV "TRAINYARD_GPU_BACKEND"

/* Where a layout trains: the CPU, or GPUs in fp32 or in 16 bits (bf16, fp16). */
typedef enum layout_device { LAYOUT_CPU = 0, LAYOUT_GPU_FP32, LAYOUT_GPU_16BIT } layout_device;

/*
 * Whether layout l trains on dev: the CPU trains every layout; the
 * trainer's GPU path (trainer/train_gpu.h) every one in fp32, and in 16
 * bits data parallel alone (ZeRO 0 to 3), since its 16-bit model has no
 * tensor or pipeline parallel yet (gpu_model_fits). The trainer refuses
 * another layout with --device cuda, and the worker runtime's fallback
 * ladder skips it for a job on GPUs. RET 1, or 0 with why (NULL: not
 * said), which completes "--device cuda trains ...".
 */
int layout_on_device(const layout *l, layout_device dev, char *why, size_t whylen);

/*
 * The layout as the trainer's --layout takes it and the runtime writes it:
 * "data_parallel=2,tensor_parallel=1,pipeline_parallel=1,zero_stage=1,
 * micro_batch=4". RET the characters written (snprintf's count).
 */
int layout_format(const layout *l, char *buf, size_t n);

/*
 * Parse what layout_format() writes: every field once, in any order, each
 * within its range. RET 0, or -1 with why in err.
 */
int layout_parse(const char *text, layout *out, char *err, size_t errlen);

/*
 * The fields of a layout as bits, for its JSON form: which fields an
 * object holds, must hold, or held. Its members are named as the struct's
 * fields are ("data_parallel", ...): the job spec's parallel section and
 * fallbacks, the plan request and answer, the runtime's events and a
 * checkpoint's grid all use these names and no others.
 */
enum {
	LAYOUT_F_DATA_PARALLEL = 1u << 0,
	LAYOUT_F_TENSOR_PARALLEL = 1u << 1,
	LAYOUT_F_PIPELINE_PARALLEL = 1u << 2,
	LAYOUT_F_ZERO_STAGE = 1u << 3,
	LAYOUT_F_MICRO_BATCH = 1u << 4,
	LAYOUT_F_GRAD_ACCUM = 1u << 5,
};
#define LAYOUT_F_RANKS                                                                             \
	(LAYOUT_F_DATA_PARALLEL | LAYOUT_F_TENSOR_PARALLEL | LAYOUT_F_PIPELINE_PARALLEL)
/* the shape without the batch split: the plan request's parallel, a checkpoint's grid */
#define LAYOUT_F_SHAPE (LAYOUT_F_RANKS | LAYOUT_F_ZERO_STAGE)
#define LAYOUT_F_ALL   (LAYOUT_F_SHAPE | LAYOUT_F_MICRO_BATCH | LAYOUT_F_GRAD_ACCUM)

/*
 * RET: a new object with the fields of l named in fields (LAYOUT_F_*), in
 * the order of the struct, the caller's to json_decref(); NULL when out of
 * memory.
 */
json_t *layout_to_json(const layout *l, unsigned fields);

/* What layout_from_json() found. */
typedef struct layout_read {
	unsigned given; /* LAYOUT_F_*: present and valid, now in the layout */
	unsigned bad;   /* LAYOUT_F_*: a wrong type, out of range, or required and absent */
} layout_read;

/*
 * Read the layout fields of the JSON object obj, whose pointer is base
 * ("" for a whole document), into *l, which holds the defaults: a field
 * absent (or null) or bad keeps its value there.
 *
 * IN:  fields (LAYOUT_F_*): the fields obj may hold; required: those it
 *      must hold; others: the other members its caller reads itself
 *      (NULL-terminated, at most 8), or NULL.
 * OUT: *l; *r (may be NULL); v: a row for each problem, at base/<member>,
 *      as jsonx.h's readers and jsonx_only_fields() write them:
 *      unknown_field (a member neither in fields nor in others),
 *      required, wrong_type ("data_parallel must be an integer"),
 *      out_of_range ("data_parallel must be between 1 and 65536").
 * RET: the problems found, 0 when there were none; counted here, not
 *      from v.
 */
int layout_from_json(const json_t *obj, const char *base, unsigned fields, unsigned required,
                     const char *const *others, layout *l, layout_read *r, verrs *v);

#endif
