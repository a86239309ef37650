/*
 * jobspec.c - validation and normal form of a training job spec.
 *
 * Each section of the spec is read into struct jobspec by its own function.
 * A bit in ctx.known marks every value that is usable: valid, or defaulted
 * from usable values. The cross-field rules look only at usable values, so a
 * bad field is reported once and never hides, or fakes, another problem.
 */
#include "jobspec.h"
#include "dataset.h"
#include "datapath.h"
#include "jobspec_command.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTR_MAX 256

/*
 * Usable values (ctx.known): the layout's fields by their bits in layout.h
 * (LAYOUT_F_*, which also describe each fallback), then these.
 */
enum {
	K_GB = 1u << 8,
	K_LAYERS = 1u << 9,
	K_DMODEL = 1u << 10,
	K_HEADS = 1u << 11,
	K_NODES = 1u << 12,
	K_GPN = 1u << 13,
	K_RPN = 1u << 14,
	K_TIME = 1u << 15,
	K_STEPS = 1u << 16,
};
_Static_assert(LAYOUT_F_ALL < K_GB, "the layout's bits come first");

typedef struct ctx {
	jobspec *s;
	verrs *v;
	int problems; /* counted here, not from v: RET must not depend on v */
	unsigned known;
	bool d_model_given, heads_given, rpn_given;
	int grad_accum_given; /* the job's parallel.grad_accum, 0 when absent */
} ctx;

typedef struct preset {
	const char *name;
	int layers, d_model, heads, vocab_size, seq_len;
} preset;

static const preset presets[] = {
    {"tiny", 2, 64, 4, 256, 64},
    {"gpt2-124m", 12, 768, 12, 50257, 1024},
    {"gpt2-350m", 24, 1024, 16, 50257, 1024},
    {"gpt2-774m", 36, 1280, 20, 50257, 1024},
    {"gpt2-1558m", 48, 1600, 25, 50257, 1024},
};

#define N_PRESETS (sizeof(presets) / sizeof(presets[0]))

static const char *const schedule_names[] = {"cosine", "linear", "constant", NULL};
static const char *const lr_convention_names[] = {"trainyard", "llmc", "nanogpt", NULL};
static const char *const precision_names[] = {"fp32", "bf16", "fp16", NULL};
static const char *const recompute_names[] = {"none", "selective", "full", NULL};

static const char *const kind_names[] = {"train", "command", NULL};

static const char *const top_fields[] = {
    "name",     "kind",       "model",           "data", "parallel", "resources",
    "training", "checkpoint", "fault_tolerance", NULL};
/* a command job's: no model, no layout (jobspec.h) */
static const char *const command_top_fields[] = {
    "name",      "kind",     "code",       "command",         "env", "data",
    "resources", "training", "checkpoint", "fault_tolerance", NULL};
static const char *const command_data_fields[] = {"dataset", "val_dataset", NULL};
static const char *const command_training_fields[] = {"steps", NULL};
static const char *const command_checkpoint_fields[] = {"keep", NULL};
static const char *const command_fault_fields[] = {"max_restarts", "heartbeat_timeout_s", NULL};
static const char *const model_fields[] = {"preset",     "layers",  "d_model", "heads",
                                           "vocab_size", "seq_len", NULL};
static const char *const data_fields[] = {"train",       "val",     "dataset",
                                          "val_dataset", "shuffle", NULL};
/* parallel holds a layout's fields (layout.h) and these */
static const char *const parallel_others[] = {"global_batch", NULL};
static const char *const resources_fields[] = {
    "nodes",     "gpus_per_node",  "ranks_per_node", "time_limit_minutes",
    "partition", "priority_class", "preemptible",    NULL};
static const char *const command_resources_fields[] = {
    "nodes",     "gpus_per_node",  "ranks_per_node", "time_limit_minutes",
    "partition", "priority_class", "preemptible",    "min_nodes",
    NULL};
static const char *const training_fields[] = {
    "steps",           "lr",        "warmup_steps",  "schedule",     "lr_convention",
    "min_lr_fraction", "precision", "grad_clip",     "weight_decay", "seed",
    "recompute",       "init_from", "grad_clip_eps", "adam_beta1",   "adam_beta2",
    "adam_eps",        NULL};
static const char *const checkpoint_fields[] = {"every_steps", "keep", NULL};
static const char *const fault_fields[] = {"max_restarts", "heartbeat_timeout_s", "fallback", NULL};

static void problem(ctx *c, const char *pointer, err_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void problem(ctx *c, const char *pointer, err_code code, const char *fmt, ...)
{
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	verrs_add(c->v, pointer, code, "%s", text);
	c->problems++;
}

/* Mark bit usable when a reader returned 0 (defaulted) or 1 (valid). */
static void mark(ctx *c, unsigned bit, int rc)
{
	if (rc >= 0)
		c->known |= bit;
}

static bool all_known(unsigned known, unsigned bits)
{
	return (known & bits) == bits;
}

/*
 * Reject members of obj not in allowed. jsonx_only_fields() can drop a row
 * whose text it could not build (a long non-ASCII key), so a shortfall is
 * made up with a row at the object itself: a problem is never silent.
 */
static void only(ctx *c, const json_t *obj, const char *base, const char *const *allowed)
{
	if (!json_is_object(obj))
		return;
	size_t before = verrs_count(c->v);
	int n = jsonx_only_fields(obj, base, allowed, c->v);
	c->problems += n;
	if (n > 0 && verrs_count(c->v) - before < (size_t)n)
		problem(c, base, ERR_F_UNKNOWN_FIELD,
		        "an unknown field here has a name too long to show");
}

/* jsonx readers with the problem counted. RET as theirs. */
static int rd_int(ctx *c, const json_t *obj, const char *base, const char *key, bool required,
                  int64_t min, int64_t max, int def, int *dst)
{
	int64_t x = def;
	int rc = jsonx_get_int(obj, base, key, required, min, max, &x, c->v);
	if (rc < 0) {
		c->problems++;
		return rc;
	}
	*dst = (int)x;
	return rc;
}

static int rd_int64(ctx *c, const json_t *obj, const char *base, const char *key, int64_t min,
                    int64_t max, int64_t def, int64_t *dst)
{
	*dst = def;
	int rc = jsonx_get_int(obj, base, key, false, min, max, dst, c->v);
	if (rc < 0)
		c->problems++;
	return rc;
}

static int rd_num(ctx *c, const json_t *obj, const char *base, const char *key, double min,
                  double max, double def, double *dst)
{
	*dst = def;
	int rc = jsonx_get_num(obj, base, key, false, min, max, dst, c->v);
	if (rc < 0)
		c->problems++;
	return rc;
}

static int rd_obj(ctx *c, const json_t *obj, const char *key, bool required, const json_t **dst)
{
	*dst = NULL;
	int rc = jsonx_get_obj(obj, "", key, required, dst, c->v);
	if (rc < 0)
		c->problems++;
	return rc;
}

/*
 * A string member, null counting as absent like the jsonx readers.
 * OUT: *s and *n (bytes) when RET is 1. RET: 1 present, 0 absent, -1 bad.
 */
static int rd_string(ctx *c, const json_t *obj, const char *base, const char *key, bool required,
                     const char **s, size_t *n)
{
	char ptr[PTR_MAX];
	jsonx_pointer(ptr, sizeof(ptr), base, key);
	const json_t *m = json_object_get(obj, key);
	if (m == NULL || json_is_null(m)) {
		if (!required)
			return 0;
		problem(c, ptr, ERR_F_REQUIRED, "%s is required", key);
		return -1;
	}
	if (!json_is_string(m)) {
		problem(c, ptr, ERR_F_WRONG_TYPE, "%s must be a string", key);
		return -1;
	}
	*s = json_string_value(m);
	*n = json_string_length(m);
	return 1;
}

typedef enum text_kind {
	TEXT_LABEL, /* printable, counted in characters */
	TEXT_PATH,  /* printable, counted in bytes */
	TEXT_WORD,  /* [A-Za-z0-9_.-] */
} text_kind;

static bool is_word_char(unsigned char b)
{
	return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
	       b == '_' || b == '.' || b == '-';
}

/* RET: true when the n bytes of s are 1 to max units of kind. */
static bool text_ok(const char *s, size_t n, text_kind kind, size_t max)
{
	size_t units = 0;
	if (n == 0 || strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];
		unsigned char next = i + 1 < n ? (unsigned char)s[i + 1] : 0;
		if (b < 0x20 || b == 0x7f || (b == 0xc2 && next >= 0x80 && next <= 0x9f))
			return false; /* C0, DEL, C1 (U+0080..U+009F) */
		if (kind == TEXT_WORD && !is_word_char(b))
			return false;
		if (kind != TEXT_LABEL || (b & 0xc0) != 0x80)
			units++;
	}
	return units <= max;
}

/* A string member checked against kind and copied into dst (dstlen bytes). */
static int rd_text(ctx *c, const json_t *obj, const char *base, const char *key, bool required,
                   text_kind kind, size_t max, char *dst, size_t dstlen)
{
	static const char *const rule[] = {
	    [TEXT_LABEL] = "printable characters",
	    [TEXT_PATH] = "bytes without control characters",
	    [TEXT_WORD] = "characters from A-Z, a-z, 0-9, '_', '.' and '-'",
	};
	const char *s = NULL;
	size_t n = 0;
	int rc = rd_string(c, obj, base, key, required, &s, &n);
	if (rc <= 0)
		return rc;
	if (n >= dstlen || !text_ok(s, n, kind, max)) {
		char ptr[PTR_MAX];
		jsonx_pointer(ptr, sizeof(ptr), base, key);
		problem(c, ptr, ERR_F_INVALID_VALUE, "%s must be 1 to %zu %s", key, max,
		        rule[kind]);
		return -1;
	}
	memcpy(dst, s, n + 1);
	return 1;
}

/* A string member that must be one of names; *dst keeps its default when absent. */
static int rd_enum(ctx *c, const json_t *obj, const char *base, const char *key,
                   const char *const *names, int *dst)
{
	const char *s = NULL;
	size_t n = 0;
	int rc = rd_string(c, obj, base, key, false, &s, &n);
	if (rc <= 0)
		return rc;
	int i = strlen(s) == n ? jsonx_enum_index(s, names) : -1;
	if (i < 0) {
		char ptr[PTR_MAX], list[128] = "";
		jsonx_pointer(ptr, sizeof(ptr), base, key);
		for (int k = 0; names[k]; k++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			         k ? ", " : "", names[k]);
		problem(c, ptr, ERR_F_INVALID_VALUE, "%s must be one of %s", key, list);
		return -1;
	}
	*dst = i;
	return 1;
}

static void read_name(ctx *c, const json_t *root)
{
	rd_text(c, root, "", "name", true, TEXT_LABEL, JOBSPEC_NAME_CHARS, c->s->name,
	        sizeof(c->s->name));
}

/* RET: the preset named by the n bytes of s, or NULL. */
static const preset *preset_find(const char *s, size_t n)
{
	for (size_t i = 0; i < N_PRESETS; i++)
		if (strlen(presets[i].name) == n && memcmp(presets[i].name, s, n) == 0)
			return &presets[i];
	return NULL;
}

/*
 * The model: a preset and/or explicit fields, explicit winning. Without a
 * preset all five fields are required; with a bad preset the explicit ones
 * are still checked but the missing ones stay unknown.
 */
static void read_model(ctx *c, const json_t *root)
{
	static const char *const B = "/model";
	const json_t *m;
	if (rd_obj(c, root, "model", true, &m) <= 0)
		return;
	only(c, m, B, model_fields);

	jobspec_model *x = &c->s->model;
	const preset *p = NULL;
	const char *name = NULL;
	size_t n = 0;
	int rc = rd_string(c, m, B, "preset", false, &name, &n);
	if (rc > 0) {
		p = preset_find(name, n);
		if (p == NULL) {
			char known[128] = "";
			for (size_t i = 0; i < N_PRESETS; i++)
				snprintf(known + strlen(known), sizeof(known) - strlen(known),
				         "%s%s", i ? ", " : "", presets[i].name);
			problem(c, "/model/preset", ERR_F_UNKNOWN_PRESET,
			        "unknown preset; the presets are %s", known);
			rc = -1;
		} else
			snprintf(x->preset, sizeof(x->preset), "%s", p->name);
	}
	bool required = rc == 0;
	bool usable_default = p != NULL;

	rc = rd_int(c, m, B, "layers", required, 1, 1024, p ? p->layers : 0, &x->layers);
	mark(c, K_LAYERS, rc > 0 || (rc == 0 && usable_default) ? 1 : -1);
	rc = rd_int(c, m, B, "d_model", required, 1, 65536, p ? p->d_model : 0, &x->d_model);
	mark(c, K_DMODEL, rc > 0 || (rc == 0 && usable_default) ? 1 : -1);
	c->d_model_given = rc > 0;
	rc = rd_int(c, m, B, "heads", required, 1, 1024, p ? p->heads : 0, &x->heads);
	mark(c, K_HEADS, rc > 0 || (rc == 0 && usable_default) ? 1 : -1);
	c->heads_given = rc > 0;
	rd_int(c, m, B, "vocab_size", required, 2, 1048576, p ? p->vocab_size : 0, &x->vocab_size);
	rd_int(c, m, B, "seq_len", required, 1, 1048576, p ? p->seq_len : 0, &x->seq_len);
}

/* A data path: a path string (rd_text) that datapath_check() accepts. */
static void rd_data_path(ctx *c, const json_t *d, const char *key, bool required, char *dst,
                         size_t dstlen)
{
	char why[128], ptr[PTR_MAX];
	if (rd_text(c, d, "/data", key, required, TEXT_PATH, JOBSPEC_PATH_BYTES, dst, dstlen) <= 0)
		return;
	if (datapath_check(dst, why, sizeof(why)) == 0)
		return;
	jsonx_pointer(ptr, sizeof(ptr), "/data", key);
	problem(c, ptr, ERR_F_PATH_NOT_ALLOWED,
	        "%s must be a path inside the tenant's data root: %s", key, why);
	dst[0] = '\0';
}

/* RET: whether obj has key with a value other than null (null stands for absent). */
static bool given(const json_t *obj, const char *key)
{
	const json_t *m = json_object_get(obj, key);
	return m && !json_is_null(m);
}

/* A dataset reference, "name" or "name@N" (dataset.h); its tenant resolves it at submission. */
static void rd_dataset_ref(ctx *c, const json_t *d, const char *key, char *dst, size_t dstlen)
{
	char why[160], ptr[PTR_MAX], owner[DATASET_TENANT_MAX + 1], name[DATASET_NAME_MAX + 1];
	int version;
	if (rd_text(c, d, "/data", key, false, TEXT_PATH, DATASET_REF_MAX, dst, dstlen) <= 0)
		return;
	if (dataset_ref_parse(dst, owner, name, &version, why, sizeof(why)) == 0)
		return;
	jsonx_pointer(ptr, sizeof(ptr), "/data", key);
	problem(c, ptr, ERR_F_INVALID_VALUE,
	        "%s must be [tenant/]name or [tenant/]name@version: %s", key, why);
	dst[0] = '\0';
}

static void read_data(ctx *c, const json_t *root)
{
	const json_t *d;
	jobspec_data *x = &c->s->data;
	x->shuffle = true;
	if (rd_obj(c, root, "data", true, &d) <= 0)
		return;
	only(c, d, "/data", data_fields);
	rd_data_path(c, d, "train", false, x->train, sizeof(x->train));
	rd_data_path(c, d, "val", false, x->val, sizeof(x->val));
	rd_dataset_ref(c, d, "dataset", x->dataset, sizeof(x->dataset));
	rd_dataset_ref(c, d, "val_dataset", x->val_dataset, sizeof(x->val_dataset));
	if (jsonx_get_bool(d, "/data", "shuffle", false, &x->shuffle, c->v) < 0)
		c->problems++;
	bool train = given(d, "train"), ds = given(d, "dataset");
	if (!train && !ds)
		problem(c, "/data/train", ERR_F_REQUIRED,
		        "data needs train (a path) or dataset (a registered dataset)");
	if (train && ds)
		problem(c, "/data/dataset", ERR_F_INVALID_VALUE,
		        "data takes train (a path) or dataset, not both");
	if (given(d, "val") && given(d, "val_dataset"))
		problem(c, "/data/val_dataset", ERR_F_INVALID_VALUE,
		        "data takes val (a path) or val_dataset, not both");
}

/*
 * One layout's fields (layout.h), and no other member but the others:
 * the job's (job == NULL: data, tensor and pipeline default to 1,
 * micro_batch is required) or a fallback's (data, tensor and pipeline
 * required; zero_stage and micro_batch default to the job's).
 * OUT: *p, *ga (grad_accum as given, 0 when absent). RET: usable K_ bits.
 */
static unsigned read_layout(ctx *c, const json_t *obj, const char *base, const layout *job,
                            const char *const *others, layout *p, int *ga)
{
	bool fb = job != NULL;
	*p = (layout){.data_parallel = 1,
	              .tensor_parallel = 1,
	              .pipeline_parallel = 1,
	              .zero_stage = fb ? job->zero_stage : 0,
	              .micro_batch = fb ? job->micro_batch : 0};
	layout_read r;
	c->problems +=
	    layout_from_json(obj, base, LAYOUT_F_ALL, fb ? LAYOUT_F_RANKS : LAYOUT_F_MICRO_BATCH,
	                     others, p, &r, c->v);
	unsigned k = LAYOUT_F_RANKS & ~r.bad;
	if ((r.given & LAYOUT_F_ZERO_STAGE) ||
	    (!(r.bad & LAYOUT_F_ZERO_STAGE) && (!fb || (c->known & LAYOUT_F_ZERO_STAGE))))
		k |= LAYOUT_F_ZERO_STAGE;
	if ((r.given & LAYOUT_F_MICRO_BATCH) ||
	    (!(r.bad & LAYOUT_F_MICRO_BATCH) && fb && (c->known & LAYOUT_F_MICRO_BATCH)))
		k |= LAYOUT_F_MICRO_BATCH;
	*ga = (r.given & LAYOUT_F_GRAD_ACCUM) ? p->grad_accum : 0;
	p->grad_accum = 0; /* derived by check_layout() */
	return k;
}

static void read_parallel(ctx *c, const json_t *root)
{
	const json_t *p;
	if (rd_obj(c, root, "parallel", true, &p) <= 0)
		return;
	c->known |= read_layout(c, p, "/parallel", NULL, parallel_others, &c->s->parallel,
	                        &c->grad_accum_given);
	mark(c, K_GB,
	     rd_int(c, p, "/parallel", "global_batch", true, 1, LAYOUT_BATCH_MAX, 0,
	            &c->s->global_batch));
}

static void read_resources(ctx *c, const json_t *root, const char *const *fields)
{
	static const char *const B = "/resources";
	const json_t *r;
	if (rd_obj(c, root, "resources", true, &r) <= 0)
		return;
	only(c, r, B, fields);
	jobspec_resources *x = &c->s->resources;
	mark(c, K_NODES, rd_int(c, r, B, "nodes", true, 1, JOBSPEC_MAX_NODES, 0, &x->nodes));
	mark(c, K_GPN, rd_int(c, r, B, "gpus_per_node", false, 0, 64, 0, &x->gpus_per_node));
	int rc = rd_int(c, r, B, "ranks_per_node", false, 1, 256, 0, &x->ranks_per_node);
	c->rpn_given = rc > 0;
	if (rc == 0 && !(c->known & K_GPN))
		rc = -1; /* its default comes from a bad gpus_per_node */
	else if (rc == 0)
		x->ranks_per_node = x->gpus_per_node > 0 ? x->gpus_per_node : 1;
	mark(c, K_RPN, rc);
	mark(c, K_TIME,
	     rd_int(c, r, B, "time_limit_minutes", false, 1, 525600, 60, &x->time_limit_minutes));
	rd_text(c, r, B, "partition", false, TEXT_WORD, JOBSPEC_PARTITION_MAX, x->partition,
	        sizeof(x->partition));
	if (rd_text(c, r, B, "priority_class", false, TEXT_WORD, JOBSPEC_CLASS_MAX,
	            x->priority_class, sizeof(x->priority_class)) <= 0)
		snprintf(x->priority_class, sizeof(x->priority_class), "%s", JOBSPEC_CLASS_DEFAULT);
	x->preemptible = true;
	if (jsonx_get_bool(r, B, "preemptible", false, &x->preemptible, c->v) < 0)
		c->problems++;
	if (fields != command_resources_fields)
		return;
	int *min = &c->s->command.min_nodes;
	if (rd_int(c, r, B, "min_nodes", false, 1, JOBSPEC_MAX_NODES, 0, min) > 0 &&
	    (c->known & K_NODES) && *min > x->nodes)
		problem(c, "/resources/min_nodes", ERR_F_OUT_OF_RANGE,
		        "min_nodes must be between 1 and nodes (%d)", x->nodes);
	if (*min == 0 || *min > x->nodes)
		*min = x->nodes;
}

static void read_training(ctx *c, const json_t *root)
{
	static const char *const B = "/training";
	const json_t *t;
	if (rd_obj(c, root, "training", true, &t) <= 0)
		return;
	only(c, t, B, training_fields);
	jobspec_training *x = &c->s->training;
	mark(c, K_STEPS, rd_int(c, t, B, "steps", true, 1, 100000000, 0, &x->steps));
	if (rd_num(c, t, B, "lr", 0, 10, 3e-4, &x->lr) > 0 && !(x->lr > 0))
		problem(c, "/training/lr", ERR_F_OUT_OF_RANGE,
		        "lr must be greater than 0 and at most 10");
	if (rd_int(c, t, B, "warmup_steps", false, 0, 100000000, 0, &x->warmup_steps) > 0 &&
	    (c->known & K_STEPS) && x->warmup_steps > x->steps)
		problem(c, "/training/warmup_steps", ERR_F_OUT_OF_RANGE,
		        "warmup_steps must be between 0 and steps (%d)", x->steps);
	int e = JOBSPEC_SCHEDULE_COSINE;
	rd_enum(c, t, B, "schedule", schedule_names, &e);
	x->schedule = (jobspec_schedule)e;
	e = JOBSPEC_LR_TRAINYARD;
	rd_enum(c, t, B, "lr_convention", lr_convention_names, &e);
	x->lr_convention = (jobspec_lr_convention)e;
	rd_num(c, t, B, "min_lr_fraction", 0, 1, 0.1, &x->min_lr_fraction);
	e = JOBSPEC_PRECISION_FP32;
	rd_enum(c, t, B, "precision", precision_names, &e);
	x->precision = (jobspec_precision)e;
	e = JOBSPEC_RECOMPUTE_NONE;
	rd_enum(c, t, B, "recompute", recompute_names, &e);
	x->recompute = (jobspec_recompute)e;
	rd_num(c, t, B, "grad_clip", 0, 1e6, 1.0, &x->grad_clip);
	rd_num(c, t, B, "grad_clip_eps", 0, 1, 1e-6, &x->grad_clip_eps);
	rd_num(c, t, B, "weight_decay", 0, 10, 0.1, &x->weight_decay);
	/* betas below 1 (1 would never forget), epsilon above 0 (the update's denominator) */
	static const char *const betas[] = {"adam_beta1", "adam_beta2"};
	double *bv[] = {&x->adam_beta1, &x->adam_beta2};
	for (int i = 0; i < 2; i++)
		if (rd_num(c, t, B, betas[i], 0, 1, i == 0 ? 0.9 : 0.95, bv[i]) > 0 &&
		    !(*bv[i] < 1))
			problem(c, i == 0 ? "/training/adam_beta1" : "/training/adam_beta2",
			        ERR_F_OUT_OF_RANGE, "%s must be at least 0 and below 1", betas[i]);
	if (rd_num(c, t, B, "adam_eps", 0, 1, 1e-8, &x->adam_eps) > 0 && !(x->adam_eps > 0))
		problem(c, "/training/adam_eps", ERR_F_OUT_OF_RANGE,
		        "adam_eps must be greater than 0 and at most 1");
	rd_int64(c, t, B, "seed", 0, INT64_C(1) << 53, 1234, &x->seed);
	if (rd_text(c, t, B, "init_from", false, TEXT_WORD, 36, x->init_from,
	            sizeof(x->init_from)) > 0 &&
	    !jsonx_is_uuid(x->init_from)) {
		problem(c, "/training/init_from", ERR_F_INVALID_VALUE,
		        "init_from is the id of a checkpoint to take the initial weights from");
		x->init_from[0] = '\0';
	}
}

/* Optional section: absent means every default. */
static void read_checkpoint(ctx *c, const json_t *root)
{
	static const char *const B = "/checkpoint";
	const json_t *o;
	if (rd_obj(c, root, "checkpoint", false, &o) < 0)
		return;
	only(c, o, B, checkpoint_fields);
	jobspec_checkpoint *x = &c->s->checkpoint;
	int steps = c->s->training.steps;
	int def = (c->known & K_STEPS) ? (steps < 1000 ? steps : 1000) : 1;
	if (rd_int(c, o, B, "every_steps", false, 1, 100000000, def, &x->every_steps) > 0 &&
	    (c->known & K_STEPS) && x->every_steps > steps)
		problem(c, "/checkpoint/every_steps", ERR_F_OUT_OF_RANGE,
		        "every_steps must be between 1 and steps (%d)", steps);
	rd_int(c, o, B, "keep", false, 1, 1000, 3, &x->keep);
}

/* Report the broken rules of layout.h at the layout's pointer (base). */
static void layout_problems(ctx *c, const layout *l, const layout_fit *fit, const char *base,
                            const char *batch_ptr)
{
	layout_problem pr[LAYOUT_PROBLEMS_MAX];
	int n = layout_check(l, fit, pr);
	char ptr[PTR_MAX];
	for (int i = 0; i < n; i++) {
		if (pr[i].code == ERR_F_BATCH_MISMATCH)
			snprintf(ptr, sizeof(ptr), "%s", batch_ptr);
		else
			jsonx_pointer(ptr, sizeof(ptr), base, pr[i].field);
		problem(c, ptr, pr[i].code, "%s", pr[i].message);
	}
}

/*
 * The model and batch rules every layout obeys (layout.h), and its
 * grad_accum. k: the fields of p that were read; what was not waits.
 * base: the layout's pointer; batch_ptr: where a batch mismatch points.
 */
static void check_layout(ctx *c, layout *p, unsigned k, int ga_given, const char *base,
                         const char *batch_ptr)
{
	const jobspec_model *m = &c->s->model;
	layout known = *p;
	known.data_parallel = (k & LAYOUT_F_DATA_PARALLEL) ? p->data_parallel : 0;
	known.tensor_parallel = (k & LAYOUT_F_TENSOR_PARALLEL) ? p->tensor_parallel : 0;
	known.pipeline_parallel = (k & LAYOUT_F_PIPELINE_PARALLEL) ? p->pipeline_parallel : 0;
	known.micro_batch = (k & LAYOUT_F_MICRO_BATCH) ? p->micro_batch : 0;
	layout_fit fit = {
	    .heads = (c->known & K_HEADS) ? m->heads : 0,
	    .layers = (c->known & K_LAYERS) ? m->layers : 0,
	    .global_batch = (c->known & K_GB) ? c->s->global_batch : 0,
	};
	layout_problems(c, &known, &fit, base, batch_ptr);
	p->grad_accum = layout_grad_accum(&known, fit.global_batch);
	if (p->grad_accum && ga_given && ga_given != p->grad_accum) {
		char ptr[PTR_MAX];
		jsonx_pointer(ptr, sizeof(ptr), base, "grad_accum");
		problem(c, ptr, ERR_F_BATCH_MISMATCH,
		        "grad_accum must be global_batch / (micro_batch x data_parallel) = %d",
		        p->grad_accum);
	}
}

/* RET: this entry's ranks, or -1 when unknown. */
static int64_t read_fallback_entry(ctx *c, const json_t *e, size_t i, int64_t prev)
{
	char base[64], batch_ptr[PTR_MAX];
	snprintf(base, sizeof(base), "/fault_tolerance/fallback/%zu", i);
	if (!json_is_object(e)) {
		problem(c, base, ERR_F_WRONG_TYPE, "a fallback entry must be an object");
		return -1;
	}
	layout p;
	int ga;
	unsigned k = read_layout(c, e, base, &c->s->parallel, NULL, &p, &ga);
	jsonx_pointer(batch_ptr, sizeof(batch_ptr), base, "data_parallel");
	check_layout(c, &p, k, ga, base, batch_ptr);
	if (i < JOBSPEC_MAX_FALLBACK)
		c->s->fallback[c->s->n_fallback++] = p;
	if (!all_known(k, LAYOUT_F_RANKS))
		return -1;
	int64_t ranks = layout_ranks(&p);
	if (prev >= 0 && ranks >= prev)
		problem(c, base, ERR_F_FALLBACK_NOT_SMALLER,
		        "this fallback uses %lld ranks; it must use fewer than the %lld of %s",
		        (long long)ranks, (long long)prev,
		        i == 0 ? "the job" : "the entry before it");
	return ranks;
}

static void read_fallback(ctx *c, const json_t *ft)
{
	static const char *const P = "/fault_tolerance/fallback";
	const json_t *f = json_object_get(ft, "fallback");
	c->s->fallback_auto = true;
	if (f == NULL || json_is_null(f))
		return;
	if (json_is_string(f)) {
		if (strcmp(json_string_value(f), "auto") != 0 ||
		    json_string_length(f) != strlen("auto"))
			problem(c, P, ERR_F_INVALID_VALUE,
			        "fallback must be \"auto\" or an array of layouts");
		return;
	}
	if (!json_is_array(f)) {
		problem(c, P, ERR_F_WRONG_TYPE, "fallback must be \"auto\" or an array of layouts");
		return;
	}
	c->s->fallback_auto = false;
	if (json_array_size(f) > JOBSPEC_MAX_FALLBACK)
		problem(c, P, ERR_F_OUT_OF_RANGE,
		        "fallback lists %zu layouts; at most %d are allowed", json_array_size(f),
		        JOBSPEC_MAX_FALLBACK);
	int64_t prev = all_known(c->known, LAYOUT_F_RANKS) ? layout_ranks(&c->s->parallel) : -1;
	size_t i;
	const json_t *e;
	json_array_foreach (f, i, e)
		prev = read_fallback_entry(c, e, i, prev);
}

static void read_fault(ctx *c, const json_t *root)
{
	static const char *const B = "/fault_tolerance";
	const json_t *o;
	if (rd_obj(c, root, "fault_tolerance", false, &o) < 0)
		return;
	only(c, o, B, fault_fields);
	jobspec_fault *x = &c->s->fault_tolerance;
	rd_int(c, o, B, "max_restarts", false, 0, 100, 3, &x->max_restarts);
	rd_int(c, o, B, "heartbeat_timeout_s", false, 10, 86400, 300, &x->heartbeat_timeout_s);
	read_fallback(c, o);
}

static void check_model(ctx *c)
{
	const jobspec_model *m = &c->s->model;
	if (!all_known(c->known, K_DMODEL | K_HEADS) || m->d_model % m->heads == 0)
		return;
	/* Point at what the user wrote: d_model when only it overrides the preset. */
	const char *ptr = c->d_model_given && !c->heads_given ? "/model/d_model" : "/model/heads";
	problem(c, ptr, ERR_F_DMODEL_NOT_DIVISIBLE, "d_model (%d) is not divisible by heads (%d)",
	        m->d_model, m->heads);
}

static void check_ranks(ctx *c)
{
	const jobspec *s = c->s;
	const jobspec_resources *r = &s->resources;
	if (all_known(c->known, LAYOUT_F_RANKS | K_NODES | K_RPN)) {
		layout_fit fit = {.ranks = jobspec_ranks(s),
		                  .ranks_said = "nodes x ranks_per_node is %lld"};
		layout_problems(c, &s->parallel, &fit, "/parallel", "/parallel/global_batch");
	}
	if (c->rpn_given && (c->known & K_GPN) && r->gpus_per_node > 0 &&
	    r->ranks_per_node != r->gpus_per_node)
		problem(c, "/resources/ranks_per_node", ERR_F_GPUS_RANKS_MISMATCH,
		        "ranks_per_node (%d) must equal gpus_per_node (%d)", r->ranks_per_node,
		        r->gpus_per_node);
}

static void quota_problem(void *arg, quota_verdict v, const char *why)
{
	(void)v;
	problem(arg, "/resources/nodes", ERR_F_QUOTA_NEVER_FITS, "%s", why);
}

/* Each limit of the tenant's quota the job could never fit (quota.h). */
static void check_quota(ctx *c, const quota_limits *q)
{
	quota_ask ask = {0};
	if (all_known(c->known, K_NODES | K_GPN | K_RPN)) {
		ask.devices = jobspec_devices(c->s);
		ask.gpu = c->s->resources.gpus_per_node > 0;
		if (c->known & K_TIME)
			ask.limit_minutes = c->s->resources.time_limit_minutes;
	}
	ask.no_preempt = !c->s->resources.preemptible;
	quota_never_fits(q, &ask, quota_problem, c);
}

static const char *or_null(const char *s)
{
	return s[0] ? s : NULL;
}

static json_t *fallback_json(const jobspec *s)
{
	if (s->fallback_auto)
		return json_string("auto");
	json_t *a = json_array();
	for (int i = 0; a && i < s->n_fallback; i++)
		if (json_array_append_new(a, layout_to_json(&s->fallback[i], LAYOUT_F_ALL)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *model_json(const jobspec_model *m)
{
	return json_pack("{s:s*, s:i, s:i, s:i, s:i, s:i}", "preset", or_null(m->preset), "layers",
	                 m->layers, "d_model", m->d_model, "heads", m->heads, "vocab_size",
	                 m->vocab_size, "seq_len", m->seq_len);
}

/* The layout's fields and global_batch. RET: NULL when out of memory. */
static json_t *parallel_json(const layout *p, int global_batch)
{
	json_t *o = layout_to_json(p, LAYOUT_F_ALL);
	if (o && json_object_set_new(o, "global_batch", json_integer(global_batch)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * The scheduling fields (priority_class, preemptible) onto a normal form's
 * resources only when they differ from their defaults: the normal form of
 * a job without them is unchanged. RET: o, or NULL (o released) out of memory.
 */
static json_t *scheduling_json(json_t *o, const jobspec_resources *r)
{
	if (o && strcmp(r->priority_class, JOBSPEC_CLASS_DEFAULT) != 0 &&
	    json_object_set_new(o, "priority_class", json_string(r->priority_class)) < 0) {
		json_decref(o);
		return NULL;
	}
	if (o && !r->preemptible && json_object_set_new(o, "preemptible", json_false()) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *resources_json(const jobspec_resources *r)
{
	return scheduling_json(json_pack("{s:i, s:i, s:i, s:i, s:s*}", "nodes", r->nodes,
	                                 "gpus_per_node", r->gpus_per_node, "ranks_per_node",
	                                 r->ranks_per_node, "time_limit_minutes",
	                                 r->time_limit_minutes, "partition", or_null(r->partition)),
	                       r);
}

static json_t *training_json(const jobspec_training *t)
{
	/* init_from only when set: the normal form of a job without it is unchanged */
	return json_pack("{s:i, s:f, s:i, s:s, s:s, s:f, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, "
	                 "s:I, s:s*}",
	                 "steps", t->steps, "lr", t->lr, "warmup_steps", t->warmup_steps,
	                 "schedule", jobspec_schedule_name(t->schedule), "lr_convention",
	                 jobspec_lr_convention_name(t->lr_convention), "min_lr_fraction",
	                 t->min_lr_fraction, "precision", jobspec_precision_name(t->precision),
	                 "recompute", jobspec_recompute_name(t->recompute), "grad_clip",
	                 t->grad_clip, "grad_clip_eps", t->grad_clip_eps, "weight_decay",
	                 t->weight_decay, "adam_beta1", t->adam_beta1, "adam_beta2", t->adam_beta2,
	                 "adam_eps", t->adam_eps, "seed", (json_int_t)t->seed, "init_from",
	                 or_null(t->init_from));
}

/*
 * RET: the normal form of a valid s, or NULL when out of memory. json_pack()
 * releases the "o" sections it was given when it fails.
 */
static json_t *spec_json(const jobspec *s)
{
	return json_pack(
	    "{s:s, s:o, s:{s:s*, s:s*, s:s*, s:s*, s:b}, s:o, s:o, s:o, s:{s:i, s:i}, "
	    "s:{s:i, s:i, s:o}}",
	    "name", s->name, "model", model_json(&s->model), "data", "train",
	    or_null(s->data.train), "val", or_null(s->data.val), "dataset",
	    or_null(s->data.dataset), "val_dataset", or_null(s->data.val_dataset), "shuffle",
	    s->data.shuffle, "parallel", parallel_json(&s->parallel, s->global_batch), "resources",
	    resources_json(&s->resources), "training", training_json(&s->training), "checkpoint",
	    "every_steps", s->checkpoint.every_steps, "keep", s->checkpoint.keep, "fault_tolerance",
	    "max_restarts", s->fault_tolerance.max_restarts, "heartbeat_timeout_s",
	    s->fault_tolerance.heartbeat_timeout_s, "fallback", fallback_json(s));
}

/* ---- a command job (kind "command") --------------------------------- */

const char *jobspec_command_arg(const jobspec_command *c, int i)
{
	const char *p = c->args;
	while (i-- > 0)
		p += strlen(p) + 1;
	return p;
}

const char *jobspec_command_env(const jobspec_command *c, int i)
{
	const char *p = c->env;
	while (i-- > 0)
		p += strlen(p) + 1;
	return p;
}

/* Append the n bytes of s and a NUL to the packed strings buf (*used of cap). RET 0 or -1. */
static int pack(char *buf, size_t cap, size_t *used, const char *s, size_t n)
{
	if (*used + n + 1 > cap)
		return -1;
	memcpy(buf + *used, s, n);
	buf[*used + n] = '\0';
	*used += n + 1;
	return 0;
}

static void read_code(ctx *c, const json_t *root)
{
	char why[160], owner[DATASET_TENANT_MAX + 1], name[DATASET_NAME_MAX + 1];
	int version;
	char *dst = c->s->command.code;
	if (rd_text(c, root, "", "code", true, TEXT_PATH, DATASET_REF_MAX, dst,
	            sizeof(c->s->command.code)) <= 0)
		return;
	if (dataset_ref_parse(dst, owner, name, &version, why, sizeof(why)) == 0)
		return;
	problem(c, "/code", ERR_F_INVALID_VALUE,
	        "code must be name, name@version or tenant/name@version: %s", why);
	dst[0] = '\0';
}

/* The argv, packed, then what of the bundle it runs. */
static void read_argv(ctx *c, const json_t *root)
{
	jobspec_command *x = &c->s->command;
	const json_t *a = json_object_get(root, "command");
	if (!a || json_is_null(a)) {
		problem(c, "/command", ERR_F_REQUIRED, "command is required: the argv to run");
		return;
	}
	if (json_is_string(a)) {
		problem(c, "/command", ERR_F_COMMAND_NOT_ARGV,
		        "command is an array of arguments, [\"python3\", \"train.py\", ...]; a "
		        "shell string is not run");
		return;
	}
	if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > JOBSPEC_ARGV_MAX) {
		problem(c, "/command", json_is_array(a) ? ERR_F_OUT_OF_RANGE : ERR_F_WRONG_TYPE,
		        "command is an array of 1 to %d arguments", JOBSPEC_ARGV_MAX);
		return;
	}
	size_t used = 0, i;
	const json_t *e;
	int bad = 0;
	json_array_foreach (a, i, e) {
		char ptr[PTR_MAX];
		snprintf(ptr, sizeof(ptr), "/command/%zu", i);
		const char *s = json_string_value(e);
		size_t n = json_string_length(e);
		if (!s || strlen(s) != n || (i == 0 && n == 0)) {
			problem(c, ptr, s ? ERR_F_INVALID_VALUE : ERR_F_WRONG_TYPE,
			        "an argument is a string without NUL bytes%s",
			        i == 0 ? ", and the first is not empty" : "");
			bad++;
		} else if (pack(x->args, sizeof(x->args), &used, s, n) < 0) {
			problem(c, "/command", ERR_F_OUT_OF_RANGE,
			        "the arguments hold more than %d bytes together",
			        JOBSPEC_ARGV_BYTES);
			return;
		}
	}
	if (bad)
		return;
	x->argc = (int)json_array_size(a);
	jobspec_target t;
	char why[160], ptr[PTR_MAX];
	int at, rc = jobspec_command_target(x, &t, &at, why, sizeof(why));
	if (rc < 0) {
		snprintf(ptr, sizeof(ptr), "/command/%d", at);
		problem(c, ptr, (err_code)-rc, "command: \"%.64s\" %s", jobspec_command_arg(x, at),
		        why);
	}
}

static void read_env(ctx *c, const json_t *root)
{
	jobspec_command *x = &c->s->command;
	const json_t *o;
	if (rd_obj(c, root, "env", false, &o) <= 0)
		return;
	if (json_object_size(o) > JOBSPEC_ENV_MAX) {
		problem(c, "/env", ERR_F_OUT_OF_RANGE, "env sets at most %d variables",
		        JOBSPEC_ENV_MAX);
		return;
	}
	size_t used = 0;
	const char *k;
	const json_t *val;
	json_object_foreach ((json_t *)o, k, val) {
		char ptr[PTR_MAX];
		jsonx_pointer(ptr, sizeof(ptr), "/env", k);
		const char *s = json_string_value(val);
		size_t n = json_string_length(val);
		if (!jobspec_env_allowed(k)) {
			problem(c, ptr, ERR_F_ENV_NOT_ALLOWED,
			        "a job may not set %.64s: the names it may set are in "
			        "docs/own-code.md (APP_* for its own)",
			        k);
			continue;
		}
		if (!s || strlen(s) != n) {
			problem(c, ptr, s ? ERR_F_INVALID_VALUE : ERR_F_WRONG_TYPE,
			        "a variable's value is a string without NUL bytes");
			continue;
		}
		size_t kn = strlen(k);
		char *entry = malloc(kn + 1 + n + 1);
		int rc = entry ? 0 : -1;
		if (entry) {
			memcpy(entry, k, kn);
			entry[kn] = '=';
			memcpy(entry + kn + 1, s, n + 1);
			rc = pack(x->env, sizeof(x->env), &used, entry, kn + 1 + n);
			free(entry);
		}
		if (rc < 0) {
			problem(c, "/env", ERR_F_OUT_OF_RANGE,
			        "the variables hold more than %d bytes together",
			        JOBSPEC_ENV_BYTES);
			return;
		}
		x->n_env++;
	}
}

/* data, training, checkpoint and fault_tolerance: what of them a command job takes. */
static void read_command_sections(ctx *c, const json_t *root)
{
	const json_t *o;
	if (rd_obj(c, root, "data", false, &o) > 0) {
		only(c, o, "/data", command_data_fields);
		rd_dataset_ref(c, o, "dataset", c->s->data.dataset, sizeof(c->s->data.dataset));
		rd_dataset_ref(c, o, "val_dataset", c->s->data.val_dataset,
		               sizeof(c->s->data.val_dataset));
	}
	if (rd_obj(c, root, "training", false, &o) > 0) {
		only(c, o, "/training", command_training_fields);
		rd_int(c, o, "/training", "steps", false, 1, 100000000, 0, &c->s->training.steps);
	}
	jobspec_checkpoint *k = &c->s->checkpoint;
	k->keep = 3;
	if (rd_obj(c, root, "checkpoint", false, &o) > 0) {
		only(c, o, "/checkpoint", command_checkpoint_fields);
		rd_int(c, o, "/checkpoint", "keep", false, 1, 1000, 3, &k->keep);
	}
	jobspec_fault *f = &c->s->fault_tolerance;
	f->max_restarts = 3;
	f->heartbeat_timeout_s = 300;
	if (rd_obj(c, root, "fault_tolerance", false, &o) > 0) {
		only(c, o, "/fault_tolerance", command_fault_fields);
		rd_int(c, o, "/fault_tolerance", "max_restarts", false, 0, 100, 3,
		       &f->max_restarts);
		rd_int(c, o, "/fault_tolerance", "heartbeat_timeout_s", false, 10, 86400, 300,
		       &f->heartbeat_timeout_s);
	}
}

/*
 * A command job's layout: one task per rank, data_parallel over them; its
 * fallbacks the same on fewer whole nodes, down to min_nodes (at most
 * JOBSPEC_MAX_FALLBACK of them, min_nodes always the last).
 */
static void command_ladder(jobspec *s)
{
	int rpn = s->resources.ranks_per_node;
	s->parallel = (layout){.data_parallel = s->resources.nodes * rpn,
	                       .tensor_parallel = 1,
	                       .pipeline_parallel = 1,
	                       .micro_batch = 1,
	                       .grad_accum = 1};
	s->global_batch = s->parallel.data_parallel;
	s->fallback_auto = false;
	s->n_fallback = 0;
	int lo = s->command.min_nodes;
	for (int n = s->resources.nodes - 1; n >= lo; n--) {
		if (s->n_fallback == JOBSPEC_MAX_FALLBACK - 1 && n != lo)
			n = lo;
		layout *l = &s->fallback[s->n_fallback++];
		*l = s->parallel;
		l->data_parallel = n * rpn;
		l->grad_accum = 1;
	}
}

static void read_command_job(ctx *c, const json_t *in)
{
	only(c, in, "", command_top_fields);
	read_name(c, in);
	read_code(c, in);
	read_argv(c, in);
	read_env(c, in);
	read_command_sections(c, in);
	read_resources(c, in, command_resources_fields);
	const jobspec_resources *r = &c->s->resources;
	if (c->rpn_given && (c->known & K_GPN) && r->gpus_per_node > 0 &&
	    r->ranks_per_node != r->gpus_per_node)
		problem(c, "/resources/ranks_per_node", ERR_F_GPUS_RANKS_MISMATCH,
		        "ranks_per_node (%d) must equal gpus_per_node (%d)", r->ranks_per_node,
		        r->gpus_per_node);
	if (all_known(c->known, K_NODES | K_RPN))
		command_ladder(c->s);
}

static json_t *command_argv_json(const jobspec_command *x)
{
	json_t *a = json_array();
	for (int i = 0; a && i < x->argc; i++)
		if (json_array_append_new(a, json_string(jobspec_command_arg(x, i))) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *command_env_json(const jobspec_command *x)
{
	json_t *o = json_object();
	for (int i = 0; o && i < x->n_env; i++) {
		const char *e = jobspec_command_env(x, i);
		const char *eq = strchr(e, '=');
		char name[JOBSPEC_ENV_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - e), e);
		if (json_object_set_new(o, name, json_string(eq + 1)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *command_spec_json(const jobspec *s)
{
	const jobspec_resources *r = &s->resources;
	json_t *res = scheduling_json(
	    json_pack("{s:i, s:i, s:i, s:i, s:i, s:s*}", "nodes", r->nodes, "min_nodes",
	              s->command.min_nodes, "gpus_per_node", r->gpus_per_node, "ranks_per_node",
	              r->ranks_per_node, "time_limit_minutes", r->time_limit_minutes, "partition",
	              or_null(r->partition)),
	    r);
	return json_pack(
	    "{s:s, s:s, s:s, s:o, s:o, s:{s:s*, s:s*}, s:o, s:{s:o}, s:{s:i}, s:{s:i, s:i}}",
	    "name", s->name, "kind", "command", "code", s->command.code, "command",
	    command_argv_json(&s->command), "env", command_env_json(&s->command), "data", "dataset",
	    or_null(s->data.dataset), "val_dataset", or_null(s->data.val_dataset), "resources", res,
	    "training", "steps",
	    s->training.steps > 0 ? json_integer(s->training.steps) : json_null(), "checkpoint",
	    "keep", s->checkpoint.keep, "fault_tolerance", "max_restarts",
	    s->fault_tolerance.max_restarts, "heartbeat_timeout_s",
	    s->fault_tolerance.heartbeat_timeout_s);
}

int jobspec_parse(const json_t *in, const quota_limits *quota, jobspec *out, json_t **normalized,
                  verrs *v)
{
	ctx c = {.s = out, .v = v};
	memset(out, 0, sizeof(*out));
	if (normalized)
		*normalized = NULL;
	if (!json_is_object(in)) {
		problem(&c, "", ERR_F_WRONG_TYPE, "the job spec must be a JSON object");
		return -ERR_VALIDATION_FAILED;
	}
	int kind = JOBSPEC_KIND_TRAIN;
	rd_enum(&c, in, "", "kind", kind_names, &kind);
	out->kind = (jobspec_kind)kind;
	if (out->kind == JOBSPEC_KIND_COMMAND) {
		read_command_job(&c, in);
		if (quota)
			check_quota(&c, quota);
		if (c.problems > 0)
			return -ERR_VALIDATION_FAILED;
		if (normalized && (*normalized = command_spec_json(out)) == NULL)
			return -ERR_INTERNAL;
		return 0;
	}
	only(&c, in, "", top_fields);
	read_name(&c, in);
	read_model(&c, in);
	read_data(&c, in);
	read_parallel(&c, in);
	read_resources(&c, in, resources_fields);
	read_training(&c, in);
	read_checkpoint(&c, in);
	read_fault(&c, in);
	check_model(&c);
	check_layout(&c, &out->parallel, c.known, c.grad_accum_given, "/parallel",
	             "/parallel/global_batch");
	check_ranks(&c);
	if (quota)
		check_quota(&c, quota);
	if (c.problems > 0)
		return -ERR_VALIDATION_FAILED;
	if (normalized && (*normalized = spec_json(out)) == NULL)
		return -ERR_INTERNAL;
	return 0;
}

/* Apply "a.b=value" to spec. RET 0, or -1 with a message. */
static int apply_override(json_t *spec, const char *ov, char *err, size_t errlen)
{
	const char *eq = strchr(ov, '=');
	const char *dot = strchr(ov, '.');
	if (!eq || !dot || dot > eq || dot == ov || eq == dot + 1) {
		err_printf(err, errlen, "invalid override \"%s\" (expected section.field=value)",
		           ov);
		return -1;
	}
	char section[64], field[64];
	snprintf(section, sizeof(section), "%.*s", (int)(dot - ov), ov);
	snprintf(field, sizeof(field), "%.*s", (int)(eq - dot - 1), dot + 1);
	json_error_t je;
	json_t *value = json_loads(eq + 1, JSON_DECODE_ANY, &je);
	if (!value)
		value = json_string(eq + 1);
	json_t *obj = json_object_get(spec, section);
	if (!obj) {
		obj = json_object();
		json_object_set_new(spec, section, obj);
	}
	if (!json_is_object(obj)) {
		json_decref(value);
		err_printf(err, errlen, "override \"%s\": %s is not an object", ov, section);
		return -1;
	}
	json_object_set_new(obj, field, value);
	return 0;
}

static json_t *read_spec(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *j = strcmp(path, "-") == 0 ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &je)
	                                   : json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		err_printf(err, errlen, "could not read job spec \"%s\": %s (line %d)", path,
		           je.text, je.line);
	else if (!json_is_object(j)) {
		err_printf(err, errlen, "job spec \"%s\" is not a JSON object", path);
		json_decref(j);
		j = NULL;
	}
	return j;
}

int jobspec_load(const char *path, char *const *overrides, int n_overrides, jobspec *out,
                 json_t **normalized, char *err, size_t errlen)
{
	json_t *in = read_spec(path, err, errlen);
	if (!in)
		return -1;
	for (int i = 0; i < n_overrides; i++) {
		if (apply_override(in, overrides[i], err, errlen) < 0) {
			json_decref(in);
			return -1;
		}
	}
	verrs v;
	verrs_init(&v);
	int rc = jobspec_parse(in, NULL, out, normalized, &v);
	json_decref(in);
	if (rc < 0) {
		size_t n = (size_t)snprintf(err, errlen, "the job spec is not valid:");
		size_t i;
		json_t *row;
		json_array_foreach (v.list, i, row) {
			if (n >= errlen)
				break;
			n += (size_t)snprintf(err + n, errlen - n, "\n  %s: %s (%s)",
			                      json_string_value(json_object_get(row, "pointer")),
			                      json_string_value(json_object_get(row, "message")),
			                      json_string_value(json_object_get(row, "code")));
		}
	}
	verrs_release(&v);
	return rc < 0 ? -1 : 0;
}

int jobspec_model_parse(const json_t *body, jobspec_model *out, verrs *v)
{
	jobspec s;
	ctx c = {.s = &s, .v = v};
	memset(&s, 0, sizeof(s));
	read_model(&c, body);
	check_model(&c);
	*out = s.model;
	return c.problems > 0 ? -ERR_VALIDATION_FAILED : 0;
}

int64_t jobspec_ranks(const jobspec *s)
{
	return (int64_t)s->resources.nodes * s->resources.ranks_per_node;
}

int64_t jobspec_devices(const jobspec *s)
{
	const jobspec_resources *r = &s->resources;
	return r->gpus_per_node > 0 ? (int64_t)r->nodes * r->gpus_per_node : jobspec_ranks(s);
}

const char *jobspec_schedule_name(jobspec_schedule s)
{
	return (unsigned)s < 3 ? schedule_names[s] : "cosine";
}

const char *jobspec_lr_convention_name(jobspec_lr_convention c)
{
	return (unsigned)c < 3 ? lr_convention_names[c] : "trainyard";
}

const char *jobspec_recompute_name(jobspec_recompute r)
{
	return (unsigned)r < 3 ? recompute_names[r] : "none";
}

const char *jobspec_precision_name(jobspec_precision p)
{
	return (unsigned)p < 3 ? precision_names[p] : "fp32";
}
