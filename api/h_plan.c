/*
 * h_plan.c - POST /v1/plan: the capacity planner (lib/job/plan.h) over HTTP.
 *
 * The request is read strictly: unknown fields are refused and every bad
 * field is reported at once; the rules between fields run once every
 * field is valid. The answer holds the layouts that fit, best first (or
 * the one layout asked for, fitting or not) and a fallback ladder. The
 * route reads and writes nothing in the database, so it is not audited.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "jobspec.h"
#include "plan.h"

#define MIB 1048576.0

typedef struct plan_request {
	plan_input in;
	bool fixed; /* a parallel layout was given */
	layout layout;
	int max_configs;
} plan_request;

static const char *const body_fields[] = {"model",
                                          "global_batch",
                                          "micro_batch",
                                          "precision",
                                          "recompute",
                                          "devices",
                                          "device_memory_bytes",
                                          "peak_flops",
                                          "link_bytes_per_s",
                                          "parallel",
                                          "max_configs",
                                          NULL};

/* An int member into *dst (which holds the default). RET as jsonx_get_int. */
static int get_int(const json_t *obj, const char *base, const char *key, bool required, int64_t min,
                   int64_t max, int *dst, verrs *v)
{
	int64_t x = *dst;
	int rc = jsonx_get_int(obj, base, key, required, min, max, &x, v);
	if (rc > 0)
		*dst = (int)x;
	return rc;
}

/* A positive number up to max into *dst. */
static void get_rate(const json_t *in, const char *key, double max, double *dst, verrs *v)
{
	if (jsonx_get_num(in, "", key, true, 0, max, dst, v) > 0 && !(*dst > 0)) {
		char ptr[64];
		jsonx_pointer(ptr, sizeof(ptr), "", key);
		verrs_add(v, ptr, ERR_F_OUT_OF_RANGE, "%s must be greater than 0 and at most %g",
		          key, max);
	}
}

/* A word among name(0 .. n-1) into *dst (which holds the default). */
static void get_word(const json_t *in, const char *key, const char *(*name)(int), int n, int *dst,
                     verrs *v)
{
	const char *s = NULL;
	if (jsonx_get_str(in, "", key, false, 32, &s, v) <= 0)
		return;
	for (int i = 0; i < n; i++)
		if (strcmp(s, name(i)) == 0) {
			*dst = i;
			return;
		}
	char ptr[64], list[96] = "";
	for (int i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
		         name(i));
	jsonx_pointer(ptr, sizeof(ptr), "", key);
	verrs_add(v, ptr, ERR_F_INVALID_VALUE, "%s must be one of %s", key, list);
}

static const char *precision_name(int i)
{
	return jobspec_precision_name((jobspec_precision)i);
}

static const char *recompute_name(int i)
{
	return jobspec_recompute_name((jobspec_recompute)i);
}

/* parallel: a layout's shape (LAYOUT_F_SHAPE), each field optional. */
static void read_parallel(const json_t *in, plan_request *r, verrs *v)
{
	const json_t *p = NULL;
	r->layout = (layout){.data_parallel = 1, .tensor_parallel = 1, .pipeline_parallel = 1};
	if (jsonx_get_obj(in, "", "parallel", false, &p, v) <= 0)
		return;
	r->fixed = true;
	layout_from_json(p, "/parallel", LAYOUT_F_SHAPE, 0, NULL, &r->layout, NULL, v);
}

/* Every field of the body. RET: the rows added. */
static size_t read_fields(const json_t *in, const ty_config *cfg, plan_request *r, verrs *v)
{
	size_t before = verrs_count(v);
	plan_input *x = &r->in;
	jsonx_only_fields(in, "", body_fields, v);
	jobspec_model_parse(in, &x->model, v);
	get_int(in, "", "global_batch", true, 1, LAYOUT_BATCH_MAX, &x->global_batch, v);
	get_int(in, "", "micro_batch", true, 1, LAYOUT_MICRO_BATCH_MAX, &x->micro_batch, v);
	int word = JOBSPEC_PRECISION_FP32;
	get_word(in, "precision", precision_name, 3, &word, v);
	x->precision = (jobspec_precision)word;
	word = JOBSPEC_RECOMPUTE_NONE;
	get_word(in, "recompute", recompute_name, 3, &word, v);
	x->recompute = (jobspec_recompute)word;
	int64_t n = 0;
	jsonx_get_int(in, "", "devices", true, 1, PLAN_DEVICES_MAX, &n, v);
	x->devices = n;
	n = (int64_t)cfg->gpu_memory_mib * (int64_t)MIB;
	jsonx_get_int(in, "", "device_memory_bytes", false, 1, (int64_t)PLAN_BYTES_MAX, &n, v);
	x->device_memory_bytes = (double)n;
	get_rate(in, "peak_flops", PLAN_FLOPS_MAX, &x->peak_flops, v);
	get_rate(in, "link_bytes_per_s", PLAN_LINK_MAX, &x->link_bytes_per_s, v);
	r->max_configs = PLAN_CONFIGS_DEFAULT;
	get_int(in, "", "max_configs", false, 1, PLAN_CONFIGS_MAX, &r->max_configs, v);
	read_parallel(in, r, v);
	return verrs_count(v) - before;
}

/* The rules between valid fields, each reported where it is fixed. */
static void check_rules(const plan_request *r, verrs *v)
{
	const plan_input *x = &r->in;
	if (x->global_batch % x->micro_batch != 0)
		verrs_add(v, "/global_batch", ERR_F_BATCH_MISMATCH,
		          "global_batch (%d) is not a whole number of micro_batch (%d)",
		          x->global_batch, x->micro_batch);
	if (!r->fixed)
		return;
	layout l = r->layout;
	l.micro_batch = x->micro_batch;
	layout_fit fit = {
	    .heads = x->model.heads,
	    .layers = x->model.layers,
	    /* a batch that is no whole number of micro-batches is reported once, above */
	    .global_batch = x->global_batch % x->micro_batch == 0 ? x->global_batch : 0,
	    .ranks = x->devices,
	    .ranks_said = "devices is %lld",
	};
	layout_problem p[LAYOUT_PROBLEMS_MAX];
	int n = layout_check(&l, &fit, p);
	for (int i = 0; i < n; i++) {
		char ptr[64];
		if (p[i].code == ERR_F_BATCH_MISMATCH)
			snprintf(ptr, sizeof(ptr), "/global_batch");
		else
			snprintf(ptr, sizeof(ptr), "/parallel/%s", p[i].field);
		verrs_add(v, ptr, p[i].code, "%s", p[i].message);
	}
}

/* Bytes as a JSON integer, rounded up and capped at 2^53. */
static json_int_t bytes(double b)
{
	b = ceil(b);
	return (json_int_t)(b < PLAN_BYTES_MAX ? b : PLAN_BYTES_MAX);
}

/* A configuration: its layout's fields, then what the planner says of it. */
static json_t *config_json(const plan_config *c)
{
	const plan_memory *m = &c->memory;
	json_t *o = layout_to_json(&c->layout, LAYOUT_F_ALL);
	json_t *said = json_pack(
	    "{s:{s:I, s:I, s:I, s:I, s:I}, s:f, s:{s:I, s:I, s:I}, s:f, s:f, s:f, s:b, s:s?}",
	    "memory", "params", bytes(m->params), "grads", bytes(m->grads), "optimizer",
	    bytes(m->optimizer), "activations", bytes(m->activations), "total", bytes(m->total),
	    "flops_per_step", c->flops_per_step, "comm_bytes_per_step", "dp", bytes(c->comm.dp),
	    "tp", bytes(c->comm.tp), "pp", bytes(c->comm.pp), "bubble", c->bubble, "step_seconds",
	    c->step_seconds, "tokens_per_s", c->tokens_per_s, "fits", c->fits, "reason",
	    c->fits ? NULL : c->reason);
	if (json_object_update_new(o, said) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Append n configurations to a new array. RET: it, or NULL when out of memory. */
static json_t *configs_json(const plan_config *c, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, config_json(&c[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* The answer: configs (ranked, or the one asked for), feasible, fallback. */
static json_t *answer_json(const plan_request *r, const plan_config *configs, size_t n,
                           size_t feasible)
{
	plan_config ladder[JOBSPEC_MAX_FALLBACK];
	int rungs = 0;
	if (n > 0)
		rungs =
		    plan_fallback_ladder(&r->in, &configs[0].layout, ladder, JOBSPEC_MAX_FALLBACK);
	return json_pack("{s:o, s:I, s:o}", "configs", configs_json(configs, n), "feasible",
	                 (json_int_t)feasible, "fallback", configs_json(ladder, (size_t)rungs));
}

int h_plan(api_req *rq)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	plan_request r = {0};
	verrs v;
	verrs_init(&v);
	if (read_fields(in, rq->cfg, &r, &v) == 0)
		check_rules(&r, &v);
	json_decref(in);
	if (verrs_count(&v))
		return api_fail_validation(rq, &v);
	verrs_release(&v);

	json_t *out;
	if (r.fixed) {
		plan_config c;
		plan_evaluate(&r.in, &r.layout, &c);
		out = answer_json(&r, &c, 1, c.fits ? 1 : 0);
	} else {
		plan_list list;
		if (plan_enumerate(&r.in, &list) < 0)
			return -ERR_INTERNAL;
		size_t n = list.n < (size_t)r.max_configs ? list.n : (size_t)r.max_configs;
		out = answer_json(&r, list.items, n, list.n);
		plan_list_release(&list);
	}
	if (!out)
		return -ERR_INTERNAL;
	return api_reply(rq, 200, out);
}
