/*
 * args.c - global flags, per-command options and number arguments.
 */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The global flags: long spelling, the short one (or NULL), where the value goes. */
typedef struct global_flag {
	const char *name;
	const char *short_name;
	size_t offset;
} global_flag;

static const global_flag global_flags[] = {
    {"--url", NULL, offsetof(args_global, url)},
    {"--token", NULL, offsetof(args_global, token)},
    {"--output", "-o", offsetof(args_global, output)},
    {"--db", NULL, offsetof(args_global, db)},
};
#define N_GLOBAL (sizeof(global_flags) / sizeof(global_flags[0]))

/*
 * Does arg name flag f? OUT: *inline_val, the value glued to it
 * ("--url=X", "-oX"), or NULL when the value is the next argument.
 */
static bool global_match(const global_flag *f, char *arg, char **inline_val)
{
	size_t n = strlen(f->name);
	*inline_val = NULL;
	if (strncmp(arg, f->name, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
		if (arg[n] == '=')
			*inline_val = arg + n + 1;
		return true;
	}
	if (f->short_name && strncmp(arg, f->short_name, 2) == 0) {
		if (arg[2] != '\0')
			*inline_val = arg + 2;
		return true;
	}
	return false;
}

int args_take_global(int *argc, char **argv, args_global *g, char *err, size_t errlen)
{
	int out = 1, i = 1;
	memset(g, 0, sizeof(*g));
	while (i < *argc) {
		char *arg = argv[i], *val = NULL;
		const global_flag *f = NULL;
		if (strcmp(arg, "--") == 0)
			break;
		for (size_t k = 0; k < N_GLOBAL && !f; k++)
			if (global_match(&global_flags[k], arg, &val))
				f = &global_flags[k];
		if (!f) {
			argv[out++] = argv[i++];
			continue;
		}
		if (!val) {
			if (i + 1 >= *argc) {
				snprintf(err, errlen, "option %s needs a value", f->name);
				return -1;
			}
			val = argv[++i];
		}
		*(char **)((char *)g + f->offset) = val;
		i++;
	}
	while (i < *argc)
		argv[out++] = argv[i++];
	argv[out] = NULL;
	*argc = out;
	return 0;
}

int args_format_parse(const char *s, cli_format *out)
{
	if (strcmp(s, "table") == 0)
		*out = CLI_FMT_TABLE;
	else if (strcmp(s, "json") == 0)
		*out = CLI_FMT_JSON;
	else
		return -1;
	return 0;
}

static bool is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

/* RET: the index of the spec named by arg ("--name" or "--name=v"), or -1. */
static int spec_find(const opt_spec *specs, const char *arg, const char **inline_val)
{
	*inline_val = NULL;
	for (int k = 0; specs && specs[k].name; k++) {
		size_t n = strlen(specs[k].name);
		if (strncmp(arg + 2, specs[k].name, n) != 0)
			continue;
		if (arg[2 + n] == '\0')
			return k;
		if (arg[2 + n] == '=') {
			*inline_val = arg + 3 + n;
			return k;
		}
	}
	return -1;
}

size_t args_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[3][ARGS_NEAR_LEN + 1]; /* rows i-2, i-1 and i of the table, by i % 3 */
	if (la > ARGS_NEAR_LEN || lb > ARGS_NEAR_LEN)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = row[i % 3], *up = row[(i - 1) % 3], *up2 = row[(i - 2) % 3];
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t d = up[j - 1] + (a[i - 1] != b[j - 1]);
			if (up[j] + 1 < d)
				d = up[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    up2[j - 2] + 1 < d)
				d = up2[j - 2] + 1;
			cur[j] = d;
		}
	}
	return row[la % 3][lb];
}

void args_near_init(args_near *n, const char *word)
{
	n->word = word;
	n->best = NULL;
	n->dist = SIZE_MAX;
}

void args_near_offer(args_near *n, const char *name)
{
	size_t d = args_distance(n->word, name);
	size_t most = strlen(n->word) <= 4 && strlen(name) <= 4 ? 1 : 2;
	if (d <= most && d < n->dist) {
		n->best = name;
		n->dist = d;
	}
}

/* Say that arg is no option of specs, and which one it may have meant. */
static void unknown_option(const opt_spec *specs, const char *arg, char *err, size_t errlen)
{
	char word[ARGS_NEAR_LEN + 1] = "";
	args_near near;
	if (strncmp(arg, "--", 2) == 0)
		snprintf(word, sizeof(word), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
	args_near_init(&near, word);
	for (int k = 0; *word && specs && specs[k].name; k++)
		args_near_offer(&near, specs[k].name);
	if (near.best)
		snprintf(err, errlen, "unknown option \"%s\"; did you mean --%s?", arg, near.best);
	else
		snprintf(err, errlen, "unknown option \"%s\"", arg);
}

/* Take the option argv[*i]. RET 0, or -1 with a message in err. */
static int take_option(const opt_spec *specs, int argc, char **argv, int *i, opt_result *out,
                       char *err, size_t errlen)
{
	const char *arg = argv[*i], *val;
	int k = strncmp(arg, "--", 2) == 0 ? spec_find(specs, arg, &val) : -1;
	if (k < 0) {
		unknown_option(specs, arg, err, errlen);
		return -1;
	}
	if (!specs[k].has_arg && val) {
		snprintf(err, errlen, "option --%s takes no value", specs[k].name);
		return -1;
	}
	if (specs[k].has_arg && !val) {
		if (*i + 1 >= argc) {
			snprintf(err, errlen, "option --%s needs a value", specs[k].name);
			return -1;
		}
		val = argv[++*i];
	}
	if (specs[k].has_arg) {
		if (out->ngiven == ARGS_MAX_GIVEN) {
			snprintf(err, errlen, "more than %d options with values", ARGS_MAX_GIVEN);
			return -1;
		}
		out->given_opt[out->ngiven] = k;
		out->given_val[out->ngiven++] = val;
	}
	out->set[k] = true;
	out->val[k] = val;
	return 0;
}

static int take_positional(const char *arg, int max_pos, opt_result *out, char *err, size_t errlen)
{
	if (out->npos >= max_pos || out->npos >= ARGS_MAX_POS) {
		snprintf(err, errlen, "unexpected argument \"%s\"", arg);
		return -1;
	}
	out->pos[out->npos++] = arg;
	return 0;
}

/* The checks after every argument was read: counts and required options. */
static int check_complete(const opt_spec *specs, int min_pos, const opt_result *out, char *err,
                          size_t errlen)
{
	for (int k = 0; specs && specs[k].name; k++)
		if (specs[k].required && !out->set[k]) {
			snprintf(err, errlen, "option --%s is required", specs[k].name);
			return -1;
		}
	if (out->npos < min_pos) {
		snprintf(err, errlen, "missing argument");
		return -1;
	}
	return 0;
}

int args_parse(const opt_spec *specs, int min_pos, int max_pos, int argc, char **argv,
               opt_result *out, char *err, size_t errlen)
{
	bool only_pos = false;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			break;
		else if (is_help(argv[i])) {
			out->help = true;
			return 0;
		}
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		int rc;
		if (!only_pos && strcmp(arg, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (!only_pos && arg[0] == '-' && arg[1] != '\0')
			rc = take_option(specs, argc, argv, &i, out, err, errlen);
		else
			rc = take_positional(arg, max_pos, out, err, errlen);
		if (rc)
			return rc;
	}
	return check_complete(specs, min_pos, out, err, errlen);
}

int args_usage_error(const cli_ctx *ctx, const cli_command *cmd, const char *msg)
{
	fprintf(stderr, "yardctl: %s\n", msg);
	fprintf(stderr, "usage: %s%s%s\n", ctx->cmd, *cmd->synopsis ? " " : "", cmd->synopsis);
	fprintf(stderr, "Try '%s --help' for more information.\n", ctx->cmd);
	return CLI_USAGE;
}

int args_parse_cmd(const cli_ctx *ctx, const cli_command *cmd, const opt_spec *specs, int min_pos,
                   int max_pos, int argc, char **argv, opt_result *out)
{
	char err[256];
	if (args_parse(specs, min_pos, max_pos, argc, argv, out, err, sizeof(err)))
		return args_usage_error(ctx, cmd, err);
	if (out->help) {
		cli_usage_leaf(stdout, ctx, cmd);
		return CLI_OK;
	}
	return -1;
}

int args_pair(const char *s, size_t *name_len, const char **value)
{
	const char *eq = strchr(s, '=');
	if (!eq || eq == s)
		return -1;
	*name_len = (size_t)(eq - s);
	*value = eq + 1;
	return 0;
}

int args_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno == ERANGE || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int args_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}
