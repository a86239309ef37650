/*
 * cmd_plan.c - yardctl plan: ask the capacity planner (POST /v1/plan)
 * which parallel layouts fit a model, and print them as a table.
 *
 * The request comes from a JSON file (the body of POST /v1/plan), from
 * flags, or from both: a flag sets its field over the file's. The server
 * checks every value; yardctl only checks that numbers are numbers.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "http.h"
#include "routes.h"

#define GIB            (1024.0 * 1024.0 * 1024.0)
#define PLAN_INT_LIMIT 9007199254740992LL /* 2^53: beyond it the server refuses anyway */

typedef enum flag_kind { F_INT, F_NUM, F_STR, F_SIZE } flag_kind;

/* Each flag and the request member it sets: section ("" top level) and key. */
typedef struct plan_flag {
	const char *name, *section, *key;
	flag_kind kind;
} plan_flag;

static const plan_flag plan_flags[] = {
    {"preset", "model", "preset", F_STR},
    {"layers", "model", "layers", F_INT},
    {"d-model", "model", "d_model", F_INT},
    {"heads", "model", "heads", F_INT},
    {"vocab-size", "model", "vocab_size", F_INT},
    {"seq-len", "model", "seq_len", F_INT},
    {"global-batch", "", "global_batch", F_INT},
    {"micro-batch", "", "micro_batch", F_INT},
    {"precision", "", "precision", F_STR},
    {"recompute", "", "recompute", F_STR},
    {"devices", "", "devices", F_INT},
    {"device-memory", "", "device_memory_bytes", F_SIZE},
    {"peak-flops", "", "peak_flops", F_NUM},
    {"link-bandwidth", "", "link_bytes_per_s", F_NUM},
    {"data-parallel", "parallel", "data_parallel", F_INT},
    {"tensor-parallel", "parallel", "tensor_parallel", F_INT},
    {"pipeline-parallel", "parallel", "pipeline_parallel", F_INT},
    {"zero-stage", "parallel", "zero_stage", F_INT},
    {"max-configs", "", "max_configs", F_INT},
};
#define N_FLAGS (sizeof(plan_flags) / sizeof(plan_flags[0]))

_Static_assert(N_FLAGS <= ARGS_MAX_OPTS, "ARGS_MAX_OPTS holds every plan flag");

/* "85899345920", "80GiB", "512MiB": bytes. RET 0 and *out, or -1. */
static int size_parse(const char *s, long long *out)
{
	static const struct {
		const char *suffix;
		long long unit;
	} units[] = {{"", 1},
	             {"KiB", 1LL << 10},
	             {"MiB", 1LL << 20},
	             {"GiB", 1LL << 30},
	             {"TiB", 1LL << 40}};
	size_t digits = strspn(s, "0123456789");
	char number[24];
	long long n;
	if (digits == 0 || digits >= sizeof(number))
		return -1;
	memcpy(number, s, digits);
	number[digits] = '\0';
	if (args_int(number, 0, PLAN_INT_LIMIT, &n))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(s + digits, units[i].suffix) == 0) {
			if (n > PLAN_INT_LIMIT / units[i].unit)
				return -1;
			*out = n * units[i].unit;
			return 0;
		}
	return -1;
}

/* The JSON value of flag f's text. RET: a new value, or NULL when it is not one. */
static json_t *flag_value(const plan_flag *f, const char *text)
{
	long long n;
	double x;
	switch (f->kind) {
	case F_INT:
		return args_int(text, -PLAN_INT_LIMIT, PLAN_INT_LIMIT, &n) ? NULL : json_integer(n);
	case F_SIZE:
		return size_parse(text, &n) ? NULL : json_integer(n);
	case F_NUM:
		return args_double(text, &x) ? NULL : json_real(x);
	default:
		return json_string(text);
	}
}

/* Set obj's section.key (section "" is obj itself) to v (stolen). RET 0 or -1. */
static int member_set(json_t *obj, const char *section, const char *key, json_t *v)
{
	json_t *into = obj;
	if (*section) {
		into = json_object_get(obj, section);
		if (!json_is_object(into)) {
			into = json_object();
			if (json_object_set_new(obj, section, into) < 0) {
				json_decref(v);
				return -1;
			}
		}
	}
	return json_object_set_new(into, key, v);
}

/* The request from FILE ("-": stdin) or {}. OUT: *body. RET: CLI_OK, or CLI_USAGE after why. */
static int body_read(const char *file, json_t **body)
{
	json_error_t e;
	*body = NULL;
	if (!file)
		*body = json_object();
	else if (strcmp(file, "-") == 0)
		*body = json_loadf(stdin, JSON_REJECT_DUPLICATES, &e);
	else
		*body = json_load_file(file, JSON_REJECT_DUPLICATES, &e);
	if (file && !*body) {
		fprintf(stderr, "yardctl: could not read \"%s\": %s (line %d)\n", file, e.text,
		        e.line);
		return CLI_USAGE;
	}
	if (!json_is_object(*body)) {
		fprintf(stderr, "yardctl: \"%s\" must hold one JSON object\n", file ? file : "-");
		json_decref(*body);
		*body = NULL;
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* Apply the given flags to body. RET: CLI_OK, or CLI_USAGE after saying why. */
static int flags_apply(const cli_ctx *ctx, const cli_command *self, const opt_result *o,
                       json_t *body)
{
	for (size_t i = 0; i < N_FLAGS; i++) {
		if (!o->set[i])
			continue;
		const plan_flag *f = &plan_flags[i];
		json_t *v = flag_value(f, o->val[i]);
		if (!v) {
			char msg[96];
			snprintf(msg, sizeof(msg), "--%s needs %s", f->name,
			         f->kind == F_STR    ? "UTF-8 text"
			         : f->kind == F_NUM  ? "a number"
			         : f->kind == F_SIZE ? "bytes, optionally with KiB, MiB, GiB or TiB"
			                             : "a whole number");
			return args_usage_error(ctx, self, msg);
		}
		if (member_set(body, f->section, f->key, v) < 0) {
			fprintf(stderr, "yardctl: out of memory\n");
			return CLI_SERVER;
		}
	}
	return CLI_OK;
}

static const char *const plan_headers[] = {
    "DP",         "TP",     "PP",       "ZERO",   "MICRO", "ACCUM",
    "GIB/DEVICE", "STEP_S", "TOKENS/S", "BUBBLE", "FITS",
};
#define N_COLS (sizeof(plan_headers) / sizeof(plan_headers[0]))

static void cell_int(char *out, size_t n, const json_t *c, const char *key)
{
	snprintf(out, n, "%lld", (long long)json_integer_value(out_lookup(c, key)));
}

static void cell_num(char *out, size_t n, const json_t *c, const char *key, const char *fmt,
                     double scale)
{
	snprintf(out, n, fmt, json_number_value(out_lookup(c, key)) / scale);
}

/* One table row of a configuration. RET 0 or -1 (out of memory). */
static int row_add(table *t, const json_t *c)
{
	char cells[N_COLS][32];
	const char *row[N_COLS];
	static const char *const ints[] = {"data_parallel", "tensor_parallel", "pipeline_parallel",
	                                   "zero_stage",    "micro_batch",     "grad_accum"};
	for (size_t i = 0; i < 6; i++)
		cell_int(cells[i], sizeof(cells[i]), c, ints[i]);
	cell_num(cells[6], sizeof(cells[6]), c, "memory.total", "%.1f", GIB);
	cell_num(cells[7], sizeof(cells[7]), c, "step_seconds", "%.3f", 1);
	cell_num(cells[8], sizeof(cells[8]), c, "tokens_per_s", "%.0f", 1);
	cell_num(cells[9], sizeof(cells[9]), c, "bubble", "%.3f", 1);
	snprintf(cells[10], sizeof(cells[10]), "%s",
	         json_is_true(out_lookup(c, "fits")) ? "yes" : "no");
	for (size_t i = 0; i < N_COLS; i++)
		row[i] = cells[i];
	return table_add(t, row);
}

/* Print the configurations of list as a table. RET 0 or -1. */
static int configs_print(const json_t *list)
{
	table t;
	size_t i;
	const json_t *c;
	int rc = table_init(&t, N_COLS, plan_headers);
	json_array_foreach (list, i, c)
		if (rc == 0)
			rc = row_add(&t, c);
	if (rc == 0)
		table_print(&t, stdout);
	table_release(&t);
	return rc;
}

/* The answer as tables: the layouts, why one does not fit, the fallback ladder. */
static int plan_print(const cli_ctx *ctx, const json_t *answer)
{
	if (ctx->format == CLI_FMT_JSON) {
		output_json(stdout, answer);
		return CLI_OK;
	}
	const json_t *configs = json_object_get(answer, "configs");
	const json_t *fallback = json_object_get(answer, "fallback");
	long long feasible = json_integer_value(json_object_get(answer, "feasible"));
	if (json_array_size(configs) == 0) {
		printf("no layout fits\n");
		return CLI_OK;
	}
	if (configs_print(configs) < 0)
		goto oom;
	size_t i;
	const json_t *c;
	json_array_foreach (configs, i, c) {
		const char *why = json_string_value(json_object_get(c, "reason"));
		if (why)
			printf("does not fit: %s\n", why);
	}
	if (feasible > (long long)json_array_size(configs))
		printf("%zu of %lld layouts that fit; --max-configs shows more\n",
		       json_array_size(configs), feasible);
	if (json_array_size(fallback) > 0) {
		printf("\nfallback, smaller layouts that fit, largest first:\n");
		if (configs_print(fallback) < 0)
			goto oom;
	}
	return CLI_OK;
oom:
	fprintf(stderr, "yardctl: out of memory\n");
	return CLI_SERVER;
}

int cmd_plan(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_spec specs[N_FLAGS + 1];
	opt_result o;
	json_t *body = NULL, *answer = NULL;
	for (size_t i = 0; i < N_FLAGS; i++)
		specs[i] = (opt_spec){plan_flags[i].name, true, false};
	specs[N_FLAGS] = (opt_spec){NULL, false, false};
	int rc = args_parse_cmd(ctx, self, specs, 0, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	rc = body_read(o.npos ? o.pos[0] : NULL, &body);
	if (rc == CLI_OK)
		rc = flags_apply(ctx, self, &o, body);
	if (rc == CLI_OK)
		rc = http_json(ctx, "POST", ROUTE_PLAN, body, &answer);
	if (rc == CLI_OK)
		rc = plan_print(ctx, answer);
	json_decref(answer);
	json_decref(body);
	return rc;
}
