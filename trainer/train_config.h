/*
 * train_config.h - a training run's configuration: the job spec JSON the
 * API accepts (read and validated by lib/job/jobspec.c, the same code), with
 * command-line overrides applied before validation, so a run can never
 * use a configuration the platform would refuse; and the layout it runs.
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
	layout run; /* the layout this run trains in: the spec's, or --layout's */
} train_config;

/*
 * Read the spec at path ("-": stdin) with its overrides (jobspec_load()),
 * and the layout to run: the spec's own, or, when run_layout is not NULL,
 * that one (layout_parse()'s form: the worker runtime's fallbacks), which
 * must keep the spec's model and global batch (layout.h's rules).
 * RET 0; -1 with every problem in err (one per line).
 */
int train_config_load(train_config *tc, const char *path, char *const *overrides, int n_overrides,
                      const char *run_layout, char *err, size_t errlen);
void train_config_release(train_config *tc);

/* Round a vocabulary up to the padded size the model uses (multiple of 64). */
int train_padded_vocab(int vocab_size);

#endif
