/*
 * config.h - program settings from the environment, declared in config.def.
 *
 * config_load() fills every field from its variable or its default,
 * range-checks integers and refuses a relative PATH (a directory that
 * every process and node must find alike: never relative to a working
 * directory). Strings point into the environment or into the static
 * defaults: the caller never frees them.
 */
#ifndef TY_CONFIG_H
#define TY_CONFIG_H

#include <stddef.h>

#define STR  const char *
#define PATH const char *
#define INT  int
typedef struct ty_config {
#define CFG(field, env, type, def, min, max, doc) type field;
#include "config.def"
#undef CFG
} ty_config;
#undef STR
#undef PATH
#undef INT

typedef struct cfg_option {
	const char *env;
	int type; /* CFG_STR, CFG_INT, CFG_PATH */
	const char *def;
	long min, max;
	const char *doc;
} cfg_option;

enum { CFG_STR = 0, CFG_INT, CFG_PATH };

/* The table itself, for docs and tests. OUT: *n = number of rows. */
const cfg_option *config_options(size_t *n);

/*
 * Fill *cfg from the environment. RET 0, or -1 with a message in err
 * (e.g. "invalid value for TRAINYARD_THREADS: \"x\" (expected 1..256)").
 */
int config_load(ty_config *cfg, char *err, size_t errlen);

/*
 * A daemon's start: config_load(), then TRAINYARD_LOG_LEVEL as the log's
 * level. A failure is printed on stderr after "prog: ". RET 0, or -1.
 */
int config_load_daemon(ty_config *cfg, const char *prog);

#endif
