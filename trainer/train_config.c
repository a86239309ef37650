/*
 * train_config.c - job spec file + overrides -> a validated run configuration.
 */
#include "train_config.h"

#include <stdio.h>
#include <string.h>

int train_padded_vocab(int vocab_size)
{
	return (vocab_size + 63) / 64 * 64;
}

int train_config_load(train_config *tc, const char *path, char *const *overrides, int n_overrides,
                      const char *run_layout, char *err, size_t errlen)
{
	memset(tc, 0, sizeof(*tc));
	if (jobspec_load(path, overrides, n_overrides, &tc->spec, &tc->normalized, err, errlen) < 0)
		return -1;
	const jobspec *s = &tc->spec;
	tc->run = s->parallel;
	if (run_layout) {
		if (layout_parse(run_layout, &tc->run, err, errlen) < 0)
			goto fail;
		layout_fit fit = {.heads = s->model.heads,
		                  .layers = s->model.layers,
		                  .global_batch = s->global_batch};
		int n = snprintf(err, errlen, "layout \"%s\": ", run_layout);
		if (n < 0 || (size_t)n >= errlen ||
		    layout_check_msg(&tc->run, &fit, err + n, errlen - (size_t)n) < 0)
			goto fail;
		tc->run.grad_accum = layout_grad_accum(&tc->run, s->global_batch);
	}
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
	return 0;
fail:
	train_config_release(tc);
	return -1;
}

void train_config_release(train_config *tc)
{
	json_decref(tc->normalized);
	tc->normalized = NULL;
}
