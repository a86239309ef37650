/*
 * train_config.c - job spec file + overrides -> a validated run configuration.
 */
#include "train_config.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"

int train_padded_vocab(int vocab_size)
{
	return (vocab_size + 63) / 64 * 64;
}

/* Apply "a.b=value" to spec. RET 0, or -1 with a message. */
static int apply_override(json_t *spec, const char *ov, char *err, size_t errlen)
{
	const char *eq = strchr(ov, '=');
	const char *dot = strchr(ov, '.');
	if (!eq || !dot || dot > eq || dot == ov || eq == dot + 1) {
		snprintf(err, errlen, "invalid override \"%s\" (expected section.field=value)", ov);
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
		snprintf(err, errlen, "override \"%s\": %s is not an object", ov, section);
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
		snprintf(err, errlen, "could not read job spec \"%s\": %s (line %d)", path, je.text,
		         je.line);
	else if (!json_is_object(j)) {
		snprintf(err, errlen, "job spec \"%s\" is not a JSON object", path);
		json_decref(j);
		j = NULL;
	}
	return j;
}

int train_config_load(train_config *tc, const char *path, char *const *overrides, int n_overrides,
                      char *err, size_t errlen)
{
	memset(tc, 0, sizeof(*tc));
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
	int rc = jobspec_parse(in, NULL, &tc->spec, &tc->normalized, &v);
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
		verrs_release(&v);
		return -1;
	}
	verrs_release(&v);
	const jobspec *s = &tc->spec;
	tc->model = (gpt_config){
	    .max_seq_len = s->model.seq_len,
	    .vocab_size = s->model.vocab_size,
	    .padded_vocab_size = train_padded_vocab(s->model.vocab_size),
	    .num_layers = s->model.layers,
	    .num_heads = s->model.heads,
	    .channels = s->model.d_model,
	};
	tc->precision = s->training.precision == JOBSPEC_PRECISION_BF16   ? GPT_BF16
	                : s->training.precision == JOBSPEC_PRECISION_FP16 ? GPT_FP16
	                                                                  : GPT_FP32;
	tc->micro_batch = s->parallel.micro_batch;
	tc->grad_accum = s->parallel.grad_accum;
	tc->data_parallel = s->parallel.data_parallel;
	tc->zero_stage = s->parallel.zero_stage;
	return 0;
}

void train_config_release(train_config *tc)
{
	json_decref(tc->normalized);
	tc->normalized = NULL;
}
