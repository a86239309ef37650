/*
 * config.c - load struct ty_config from the environment using config.def.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static const cfg_option options[] = {
#define STR                                       CFG_STR
#define INT                                       CFG_INT
#define PATH                                      CFG_PATH
#define CFG(field, env, type, def, min, max, doc) {env, type, def, min, max, doc},
#include "config.def"
#undef CFG
#undef STR
#undef INT
#undef PATH
};

const cfg_option *config_options(size_t *n)
{
	*n = sizeof(options) / sizeof(options[0]);
	return options;
}

static int parse_int(const cfg_option *o, const char *s, int *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < o->min || v > o->max) {
		snprintf(err, errlen, "invalid value for %s: \"%s\" (expected an integer %ld..%ld)",
		         o->env, s, o->min, o->max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_path(const cfg_option *o, const char *s, const char **out, char *err,
                      size_t errlen)
{
	if (s[0] != '/') {
		snprintf(err, errlen,
		         "%s must be an absolute path, the same for every process and node, not "
		         "\"%s\"",
		         o->env, s);
		return -1;
	}
	*out = s;
	return 0;
}

int config_load(ty_config *cfg, char *err, size_t errlen)
{
	const cfg_option *o = options;
	const char *s;

#define STR_SET(field) cfg->field = s
#define INT_SET(field)                                                                             \
	if (parse_int(o, s, &cfg->field, err, errlen) < 0)                                         \
	return -1
#define PATH_SET(field)                                                                            \
	if (parse_path(o, s, &cfg->field, err, errlen) < 0)                                        \
	return -1
#define CFG(field, env, type, def, min, max, doc)                                                  \
	s = getenv(env);                                                                           \
	if (s == NULL || *s == '\0')                                                               \
		s = def;                                                                           \
	type##_SET(field);                                                                         \
	o++;
#include "config.def"
#undef CFG
#undef STR_SET
#undef INT_SET
#undef PATH_SET
	return 0;
}

int config_load_daemon(ty_config *cfg, const char *prog)
{
	char err[256];
	if (config_load(cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return -1;
	}
	log_level lvl;
	if (log_level_parse(cfg->log_level, &lvl) < 0) {
		fprintf(stderr, "%s: invalid TRAINYARD_LOG_LEVEL \"%s\"\n", prog, cfg->log_level);
		return -1;
	}
	log_set_level(lvl);
	return 0;
}
