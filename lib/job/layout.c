/*
 * layout.c - see layout.h.
 */
#include "layout.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t layout_ranks(const layout *l)
{
	return (int64_t)l->data_parallel * l->tensor_parallel * l->pipeline_parallel;
}

int layout_grad_accum(const layout *l, int global_batch)
{
	if (l->micro_batch < 1 || l->data_parallel < 1 || global_batch < 1)
		return 0;
	int64_t per_step = (int64_t)l->micro_batch * l->data_parallel;
	return global_batch % per_step == 0 ? (int)(global_batch / per_step) : 0;
}

static void add(layout_problem *out, int *n, const char *field, err_code code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void add(layout_problem *out, int *n, const char *field, err_code code, const char *fmt, ...)
{
	layout_problem *p = &out[(*n)++];
	p->field = field;
	p->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->message, sizeof(p->message), fmt, ap);
	va_end(ap);
}

int layout_check(const layout *l, const layout_fit *fit, layout_problem *out)
{
	int n = 0;
	if (l->tensor_parallel >= 1 && fit->heads >= 1 && fit->heads % l->tensor_parallel != 0)
		add(out, &n, "tensor_parallel", ERR_F_HEADS_NOT_DIVISIBLE,
		    "heads (%d) is not divisible by tensor_parallel (%d)", fit->heads,
		    l->tensor_parallel);
	if (l->pipeline_parallel >= 1 && fit->layers >= 1 &&
	    fit->layers % l->pipeline_parallel != 0)
		add(out, &n, "pipeline_parallel", ERR_F_LAYERS_NOT_DIVISIBLE,
		    "layers (%d) is not divisible by pipeline_parallel (%d)", fit->layers,
		    l->pipeline_parallel);
	if (l->micro_batch >= 1 && l->data_parallel >= 1 && fit->global_batch >= 1 &&
	    layout_grad_accum(l, fit->global_batch) == 0)
		add(out, &n, "data_parallel", ERR_F_BATCH_MISMATCH,
		    "global_batch (%d) is not micro_batch (%d) x data_parallel (%d) x a whole "
		    "grad_accum",
		    fit->global_batch, l->micro_batch, l->data_parallel);
	if (l->data_parallel >= 1 && l->tensor_parallel >= 1 && l->pipeline_parallel >= 1 &&
	    fit->ranks >= 1 && layout_ranks(l) != fit->ranks) {
		char said[96];
		snprintf(said, sizeof(said),
		         fit->ranks_said ? fit->ranks_said : "there are %lld ranks",
		         (long long)fit->ranks);
		add(out, &n, "data_parallel", ERR_F_RANKS_MISMATCH,
		    "data_parallel x tensor_parallel x pipeline_parallel is %d x %d x %d = %lld "
		    "but %s",
		    l->data_parallel, l->tensor_parallel, l->pipeline_parallel,
		    (long long)layout_ranks(l), said);
	}
	return n;
}

int layout_on_device(const layout *l, layout_device dev, char *why, size_t whylen)
{
	bool ok = dev != LAYOUT_GPU_16BIT || (l->tensor_parallel == 1 && l->pipeline_parallel == 1);
	if (!ok && why)
		snprintf(why, whylen,
		         "bf16 and fp16 data parallel only for now (ZeRO 0 to 3): the layout must "
		         "have tensor and pipeline parallel 1 in 16 bits (fp32 trains any), not "
		         "%dx%dx%d",
		         l->data_parallel, l->tensor_parallel, l->pipeline_parallel);
	return ok;
}

int layout_check_msg(const layout *l, const layout_fit *fit, char *err, size_t errlen)
{
	layout_problem p[LAYOUT_PROBLEMS_MAX];
	int n = layout_check(l, fit, p);
	size_t used = 0;
	for (int i = 0; i < n && used < errlen; i++)
		used += (size_t)snprintf(err + used, errlen - used, "%s%s", i ? "; " : "",
		                         p[i].message);
	return n ? -1 : 0;
}

/*
 * The fields, in the order of the struct: their names, ranges and bits.
 * The text form holds them all but grad_accum, which it derives.
 */
static const struct {
	const char *name;
	size_t offset;
	int min, max;
	unsigned bit;
} fields[] = {
    {"data_parallel", offsetof(layout, data_parallel), 1, LAYOUT_DATA_PARALLEL_MAX,
     LAYOUT_F_DATA_PARALLEL},
    {"tensor_parallel", offsetof(layout, tensor_parallel), 1, LAYOUT_DEGREE_MAX,
     LAYOUT_F_TENSOR_PARALLEL},
    {"pipeline_parallel", offsetof(layout, pipeline_parallel), 1, LAYOUT_DEGREE_MAX,
     LAYOUT_F_PIPELINE_PARALLEL},
    {"zero_stage", offsetof(layout, zero_stage), 0, LAYOUT_ZERO_STAGE_MAX, LAYOUT_F_ZERO_STAGE},
    {"micro_batch", offsetof(layout, micro_batch), 1, LAYOUT_MICRO_BATCH_MAX, LAYOUT_F_MICRO_BATCH},
    {"grad_accum", offsetof(layout, grad_accum), 1, LAYOUT_BATCH_MAX, LAYOUT_F_GRAD_ACCUM},
};
#define N_FIELDS    (sizeof(fields) / sizeof(fields[0]))
#define TEXT_FIELDS (LAYOUT_F_ALL & ~LAYOUT_F_GRAD_ACCUM)
#define OTHERS_MAX  8

static int *field_of(layout *l, size_t i)
{
	return (int *)(void *)((char *)l + fields[i].offset);
}

int layout_format(const layout *l, char *buf, size_t n)
{
	layout copy = *l;
	size_t used = 0;
	for (size_t i = 0; i < N_FIELDS; i++) {
		if (!(fields[i].bit & TEXT_FIELDS))
			continue;
		int w = snprintf(buf + (used < n ? used : n), used < n ? n - used : 0, "%s%s=%d",
		                 used ? "," : "", fields[i].name, *field_of(&copy, i));
		used += (size_t)w;
	}
	return (int)used;
}

int layout_parse(const char *text, layout *out, char *err, size_t errlen)
{
	layout l = {0};
	bool seen[N_FIELDS] = {false};
	const char *p = text;
	while (*p) {
		const char *end = p + strcspn(p, ",");
		const char *eq = memchr(p, '=', (size_t)(end - p));
		size_t i = 0;
		while (eq && i < N_FIELDS &&
		       (!(fields[i].bit & TEXT_FIELDS) ||
		        strlen(fields[i].name) != (size_t)(eq - p) ||
		        strncmp(fields[i].name, p, (size_t)(eq - p)) != 0))
			i++;
		if (!eq || i == N_FIELDS) {
			err_printf(err, errlen,
			           "layout \"%s\": \"%.*s\" is not field=value of a layout", text,
			           (int)(end - p), p);
			return -1;
		}
		if (seen[i]) {
			err_printf(err, errlen, "layout \"%s\": %s is given twice", text,
			           fields[i].name);
			return -1;
		}
		char *stop;
		long v = strtol(eq + 1, &stop, 10);
		if (stop == eq + 1 || stop != end || v < fields[i].min || v > fields[i].max) {
			err_printf(err, errlen,
			           "layout \"%s\": %s must be an integer from %d to %d", text,
			           fields[i].name, fields[i].min, fields[i].max);
			return -1;
		}
		seen[i] = true;
		*field_of(&l, i) = (int)v;
		p = *end ? end + 1 : end;
	}
	for (size_t i = 0; i < N_FIELDS; i++) {
		if ((fields[i].bit & TEXT_FIELDS) && !seen[i]) {
			err_printf(err, errlen, "layout \"%s\": %s is missing", text,
			           fields[i].name);
			return -1;
		}
	}
	*out = l;
	return 0;
}

json_t *layout_to_json(const layout *l, unsigned want)
{
	layout copy = *l;
	json_t *o = json_object();
	for (size_t i = 0; o && i < N_FIELDS; i++) {
		if ((fields[i].bit & want) &&
		    json_object_set_new(o, fields[i].name, json_integer(*field_of(&copy, i))) < 0) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

int layout_from_json(const json_t *obj, const char *base, unsigned want, unsigned required,
                     const char *const *others, layout *l, layout_read *r, verrs *v)
{
	const char *allowed[N_FIELDS + OTHERS_MAX + 1];
	size_t n = 0;
	for (size_t i = 0; i < N_FIELDS; i++)
		if (fields[i].bit & want)
			allowed[n++] = fields[i].name;
	for (size_t i = 0; others && others[i] && i < OTHERS_MAX; i++)
		allowed[n++] = others[i];
	allowed[n] = NULL;
	int problems = json_is_object(obj) ? jsonx_only_fields(obj, base, allowed, v) : 0;
	layout_read got = {0};
	for (size_t i = 0; i < N_FIELDS; i++) {
		if (!(fields[i].bit & want))
			continue;
		int64_t x = 0;
		int rc = jsonx_get_int(obj, base, fields[i].name, (fields[i].bit & required) != 0,
		                       fields[i].min, fields[i].max, &x, v);
		if (rc > 0) {
			*field_of(l, i) = (int)x;
			got.given |= fields[i].bit;
		} else if (rc < 0) {
			got.bad |= fields[i].bit;
			problems++;
		}
	}
	if (r)
		*r = got;
	return problems;
}
