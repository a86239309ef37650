/*
 * train_config.h - a training run's configuration: the job spec JSON the
 * API accepts (validated by lib/jobspec.c, the same code), with
 * command-line overrides applied before validation, so a run can never
 * use a configuration the platform would refuse.
 */
#ifndef TY_TRAIN_CONFIG_H
#define TY_TRAIN_CONFIG_H

#include <jansson.h>

#include "gpt.h"
#include "jobspec.h"

typedef struct train_config {
	jobspec spec;       /* validated */
	json_t *normalized; /* the spec with every default filled in (owned) */
	gpt_config model;
	gpt_precision precision;
	int micro_batch, grad_accum, data_parallel, zero_stage;
} train_config;

/*
 * Read the spec at path ("-": stdin), apply each override "section.field=value"
 * (value parsed as JSON, else taken as a string), validate.
 * RET 0; -1 with every problem in err (one per line).
 */
int train_config_load(train_config *tc, const char *path, char *const *overrides, int n_overrides,
                      char *err, size_t errlen);
void train_config_release(train_config *tc);

/* Round a vocabulary up to the padded size the model uses (multiple of 64). */
int train_padded_vocab(int vocab_size);

#endif
