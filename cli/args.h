/*
 * args.h - command-line parsing for yardctl: the global flags and each
 * command's own options and positional arguments.
 *
 * Pure functions over argv, with no output of their own except
 * args_parse_cmd(), which prints usage; they are unit-tested in
 * tests/unit/test_cli.c. Values point into argv: nothing to free.
 */
#ifndef YARDCTL_ARGS_H
#define YARDCTL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define ARGS_MAX_OPTS  24 /* yardctl plan has 19 */
#define ARGS_MAX_POS   8
#define ARGS_MAX_GIVEN 64 /* options with a value on one command line, repeats included */

/* The global flags as found on the command line; NULL when absent. */
typedef struct args_global {
	char *url;
	char *db;
	char *output;
	char *token; /* points into argv, so the caller can copy it and wipe it */
} args_global;

/*
 * Remove --url, --token, -o/--output and --db (as "--flag VALUE",
 * "--flag=VALUE" or "-oVALUE") from argv[1..*argc), anywhere before a "--".
 * OUT: *g. RET 0, or -1 with a message in err (a flag without its value).
 */
int args_take_global(int *argc, char **argv, args_global *g, char *err, size_t errlen);

/* RET 0 and *out for "table" or "json", else -1. */
int args_format_parse(const char *s, cli_format *out);

/* One option of a command, spelt "--name". A row with a NULL name ends the list. */
typedef struct opt_spec {
	const char *name;
	bool has_arg;  /* takes a value: "--name V" or "--name=V" */
	bool required; /* a missing one is a usage error */
} opt_spec;

typedef struct opt_result {
	bool set[ARGS_MAX_OPTS];        /* by index in the spec list */
	const char *val[ARGS_MAX_OPTS]; /* the value (the last, if repeated), for has_arg */
	const char *pos[ARGS_MAX_POS];  /* positional arguments in order */
	int npos;
	/* every option with a value, in the order given: all the values of a repeated one */
	int given_opt[ARGS_MAX_GIVEN];         /* its index in the spec list */
	const char *given_val[ARGS_MAX_GIVEN]; /* its value */
	int ngiven;
	bool help; /* -h or --help was given */
} opt_result;

/*
 * Parse argv[0..argc) against specs, expecting min_pos..max_pos positional
 * arguments. "-" is a positional argument; after "--" everything is.
 * OUT: *out. RET 0, or -1 with a message in err. With --help, returns 0
 * with out->help set and checks nothing else.
 */
int args_parse(const opt_spec *specs, int min_pos, int max_pos, int argc, char **argv,
               opt_result *out, char *err, size_t errlen);

/*
 * args_parse() for the leaf command cmd, printing its usage: on stdout
 * for --help, on stderr after a usage error.
 * RET: -1 when the command should go on; else the exit status it must
 * return now (CLI_OK after --help, CLI_USAGE after an error).
 */
int args_parse_cmd(const cli_ctx *ctx, const cli_command *cmd, const opt_spec *specs, int min_pos,
                   int max_pos, int argc, char **argv, opt_result *out);

/* Print "yardctl: <msg>" and the usage of cmd on stderr. RET: CLI_USAGE. */
int args_usage_error(const cli_ctx *ctx, const cli_command *cmd, const char *msg);

/*
 * Split "NAME=VALUE" at its first '='. OUT: *name_len (the name is
 * s[0..*name_len)), *value (after the '=', may be empty). RET 0, or -1
 * when s has no '=' or the name is empty.
 */
int args_pair(const char *s, size_t *name_len, const char **value);

/*
 * The nearest of several names to a mistyped word, for "did you mean ...?".
 * Offer each name in turn; the best is the one fewest edits away (an
 * insertion, a deletion, a substitution or two neighbours swapped count
 * one each), the first offered on a tie, and only when it is near enough
 * to be a typo: 1 edit when both are 4 characters or shorter, else 2.
 */
typedef struct args_near {
	const char *word;
	const char *best; /* NULL until a name is near enough */
	size_t dist;
} args_near;

#define ARGS_NEAR_LEN 64 /* longer words and names are never near */

void args_near_init(args_near *n, const char *word);
void args_near_offer(args_near *n, const char *name);

/* RET: the edits between a and b (as args_near counts them), or SIZE_MAX when one is longer than
 * ARGS_NEAR_LEN. */
size_t args_distance(const char *a, const char *b);

/* RET 0 and *out when s is a whole decimal integer in [min, max], else -1. */
int args_int(const char *s, long long min, long long max, long long *out);

/* RET 0 and *out when s is a whole finite decimal number, else -1. */
int args_double(const char *s, double *out);

#endif
