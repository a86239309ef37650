/*
 * cli.c - the invocation context, the command tree's top level, dispatch
 * and usage texts.
 */
#include "cli.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "config.h"
#include "log.h"

const cli_command cli_top_commands[] = {
    {"bootstrap", "[--name NAME]", "create the first platform admin and print its token",
     "Works on the database directly (TRAINYARD_DB or --db), which must be migrated.\n"
     "Refused when a platform admin exists. The token lives TRAINYARD_TOKEN_TTL_DAYS days.\n",
     cmd_bootstrap, NULL, NULL},
    {"db", NULL, "database schema", NULL, NULL, db_commands, NULL},
    {"tenant", NULL, "tenants", NULL, NULL, tenant_commands, NULL},
    {"quota", NULL, "tenant quotas", NULL, NULL, quota_commands, NULL},
    {"class", NULL, "priority classes", NULL, NULL, class_commands, NULL},
    {"user", NULL, "users", NULL, NULL, user_commands, NULL},
    {"token", NULL, "API tokens", NULL, NULL, token_commands, NULL},
    {"member", NULL, "tenant members and their roles", NULL, NULL, member_commands, NULL},
    {"job", NULL, "training jobs", NULL, NULL, job_commands, NULL},
    {"checkpoint", NULL, "registered checkpoints of jobs", NULL, NULL, checkpoint_commands, NULL},
    {"dataset", NULL, "a tenant's registered datasets and their versions", NULL, NULL,
     dataset_commands, NULL},
    {"code", NULL, "a tenant's code bundles and their versions", NULL, NULL, code_commands, NULL},
    {"alert", NULL, "alerts raised for a tenant's jobs (loss spikes, stalls, ...)", NULL, NULL,
     alert_commands, NULL},
    {"webhook", NULL, "where a tenant's alerts are sent, signed, and how each delivery went", NULL,
     NULL, webhook_commands, NULL},
    {"audit", NULL, "the verifiable audit log: heads, proofs, export, offline verification", NULL,
     NULL, audit_commands, NULL},
    {"keys", NULL,
     "rotate a tenant's keys or the master key, and see which master keys the stored keys need",
     NULL, NULL, keys_commands, NULL},
    {"report",
     "KIND [--from T] [--to T | --at T] [--tenant TENANT] [--format csv|json|html]\n"
     "      [--out FILE]",
     "an evidence report from the audit log, computed from a signed tree head",
     "KIND is access-review, permission-changes, data-access, denials, key-management\n"
     "or admin-actions. T is an RFC 3339 time or a date; the period is [from, to), by\n"
     "default the 30 days up to now; access-review is the moment --at (default: now).\n"
     "--tenant keeps the report to one tenant (its owners and auditors may ask for it);\n"
     "without it the report covers every tenant (platform admins and auditors). Each\n"
     "row lists the sequence numbers of the records behind it. The format is csv\n"
     "unless asked; html is one printable page.\n",
     cmd_report, NULL, NULL},
    {"whoami", "", "show the caller, its roles and its token", NULL, cmd_whoami, NULL, NULL},
    {"plan",
     "[FILE] [--preset P | --layers N --d-model N --heads N --vocab-size N --seq-len N]\n"
     "      --global-batch N --micro-batch N --devices N --peak-flops F --link-bandwidth B\n"
     "      [--device-memory BYTES] [--precision P] [--recompute R] [--max-configs N]\n"
     "      [--data-parallel N --tensor-parallel N --pipeline-parallel N --zero-stage N]",
     "estimate which parallel layouts fit a model and how fast they train",
     "FILE ('-': stdin) holds the body of POST /v1/plan; a flag sets its field over the\n"
     "file's. --device-memory takes bytes or KiB, MiB, GiB, TiB (80GiB; default: the\n"
     "server's TRAINYARD_GPU_MEMORY_MIB); --peak-flops is FLOP/s and --link-bandwidth\n"
     "bytes/s of one device. Without the parallel flags every layout that fits is listed,\n"
     "fastest first; with them, that layout and why it does not fit. Formulas: docs/plan.md.\n",
     cmd_plan, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

static const char global_help[] =
    "\n"
    "Global flags (before or after the command):\n"
    "  --url URL          API base URL (default: TRAINYARD_URL, else http://127.0.0.1:8080)\n"
    "  --token TOKEN      API token (default: TRAINYARD_TOKEN; prefer the variable:\n"
    "                     a flag is visible to other users in `ps`)\n"
    "  -o table|json      output format (default table)\n"
    "  --db CONNINFO      libpq connection string for bootstrap, token issue and db\n"
    "                     (default: TRAINYARD_DB)\n"
    "  -h, --help         show help; every command and subcommand takes it\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  the request was refused (conflict, validation, too large, rate limited, ...)\n"
    "  2  usage error\n"
    "  3  authentication or authorisation failed (HTTP 401, 403)\n"
    "  4  not found (HTTP 404)\n"
    "  5  server or connection error (HTTP 5xx, network, database unreachable)\n";

static void usage_rows(FILE *f, const char *prefix, const cli_command *table)
{
	for (const cli_command *c = table; c->name; c++) {
		char name[64];
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? " " : "", c->name);
		if (c->subs) {
			usage_rows(f, name, c->subs);
			continue;
		}
		fprintf(f, "  %s%s%s\n", name, *c->synopsis ? " " : "", c->synopsis);
		fprintf(f, "      %s\n", c->summary);
	}
}

void cli_usage_global(FILE *f)
{
	fprintf(f, "usage: yardctl [global flags] COMMAND [ARGS]\n\n"
	           "Administer a trainyard control plane.\n\nCommands:\n");
	usage_rows(f, "", cli_top_commands);
	fputs(global_help, f);
}

/* Usage of a group: "usage: yardctl tenant COMMAND" and its rows. */
static void usage_group(FILE *f, const cli_ctx *ctx, const cli_command *table)
{
	fprintf(f, "usage: %s COMMAND [ARGS]\n\nCommands:\n", ctx->cmd);
	usage_rows(f, ctx->cmd + strlen("yardctl "), table);
	fprintf(f, "\nSee 'yardctl --help' for the global flags and exit statuses.\n");
}

void cli_usage_leaf(FILE *f, const cli_ctx *ctx, const cli_command *cmd)
{
	fprintf(f, "usage: %s%s%s\n\n%s\n", ctx->cmd, *cmd->synopsis ? " " : "", cmd->synopsis,
	        cmd->summary);
	if (cmd->details)
		fprintf(f, "\n%s", cmd->details);
	fprintf(f, "\nSee 'yardctl --help' for the global flags and exit statuses.\n");
}

static bool is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

/*
 * Say that word is no command of table: with the nearest one when it looks
 * like a typo of it, else with the group's commands (not the whole
 * program's). RET: CLI_USAGE.
 */
static int unknown_command(const cli_ctx *ctx, const cli_command *table, const char *word)
{
	bool option = word[0] == '-';
	args_near near;
	args_near_init(&near, word);
	for (const cli_command *c = table; c->name && !option; c++)
		args_near_offer(&near, c->name);
	fprintf(stderr, "yardctl: unknown %s \"%s\"", option ? "option" : "command", word);
	if (near.best)
		fprintf(stderr, "; did you mean \"%s\"?", near.best);
	fputc('\n', stderr);
	if (near.best || table == cli_top_commands)
		fprintf(stderr, "Run '%s --help' for the list of commands.\n", ctx->cmd);
	else
		usage_group(stderr, ctx, table);
	return CLI_USAGE;
}

int cli_dispatch(cli_ctx *ctx, const cli_command *table, int argc, char **argv)
{
	bool top = table == cli_top_commands;
	if (argc == 0 || is_help(argv[0])) {
		FILE *f = argc == 0 ? stderr : stdout;
		if (top)
			cli_usage_global(f);
		else
			usage_group(f, ctx, table);
		return argc == 0 ? CLI_USAGE : CLI_OK;
	}
	for (const cli_command *c = table; c->name; c++) {
		if (strcmp(c->name, argv[0]) != 0)
			continue;
		size_t n = strlen(ctx->cmd);
		snprintf(ctx->cmd + n, sizeof(ctx->cmd) - n, " %s", c->name);
		if (c->subs)
			return cli_dispatch(ctx, c->subs, argc - 1, argv + 1);
		if (c->call)
			return cmd_call(ctx, c, argc - 1, argv + 1);
		return c->run(ctx, c, argc - 1, argv + 1);
	}
	return unknown_command(ctx, table, argv[0]);
}

int cli_main(cli_ctx *ctx, int argc, char **argv)
{
	return cli_dispatch(ctx, cli_top_commands, argc, argv);
}

/* Take the token: copy it, then overwrite the argument (see cli.h). RET 0 or -1. */
static int token_take(cli_ctx *ctx, char *from_argv, const char *from_env)
{
	const char *src = from_argv ? from_argv : from_env;
	if (!src || !*src)
		return 0;
	ctx->token = strdup(src);
	if (from_argv)
		memset(from_argv, 'x', strlen(from_argv));
	return ctx->token ? 0 : -1;
}

int cli_ctx_init(cli_ctx *ctx, int *argc, char **argv)
{
	ty_config cfg;
	args_global g;
	char err[256];
	memset(ctx, 0, sizeof(*ctx));
	snprintf(ctx->cmd, sizeof(ctx->cmd), "yardctl");
	log_set_level(LOG_WARN);
	if (config_load(&cfg, err, sizeof(err)) ||
	    args_take_global(argc, argv, &g, err, sizeof(err))) {
		fprintf(stderr, "yardctl: %s\n", err);
		return CLI_USAGE;
	}
	ctx->url = g.url ? g.url : cfg.url;
	ctx->ca_file = cfg.ca_file;
	ctx->db = g.db ? g.db : cfg.db;
	ctx->token_ttl_days = cfg.token_ttl_days;
	ctx->page_max = cfg.page_max;
	if (g.output && args_format_parse(g.output, &ctx->format)) {
		fprintf(stderr, "yardctl: unknown output format \"%s\" (expected table or json)\n",
		        g.output);
		return CLI_USAGE;
	}
	if (token_take(ctx, g.token, cfg.token) || curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "yardctl: out of memory\n");
		return CLI_SERVER;
	}
	return CLI_OK;
}

void cli_ctx_release(cli_ctx *ctx)
{
	if (ctx->token) {
		explicit_bzero(ctx->token, strlen(ctx->token));
		free(ctx->token);
	}
	curl_global_cleanup();
	memset(ctx, 0, sizeof(*ctx));
}
