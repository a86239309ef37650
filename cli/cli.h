/*
 * cli.h - what every yardctl command shares: the invocation context, the
 * exit statuses and the command tree.
 *
 * Commands form a tree of cli_command rows: a row either has subcommands
 * (tenant, job, ...), a run function (tenant create, whoami, ...), or one
 * API call described as data (tenant list, job events, ...): a cli_call.
 * cli_dispatch() walks argv down the tree; the usage texts of every level
 * are printed from the same rows, so help and dispatch never disagree.
 */
#ifndef YARDCTL_CLI_H
#define YARDCTL_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* Exit statuses; cli/README.md and `yardctl --help` list the same. */
typedef enum cli_exit {
	CLI_OK = 0,        /* done */
	CLI_REFUSED = 1,   /* the server refused: 409, 422, 413, 429, other 4xx */
	CLI_USAGE = 2,     /* bad command line */
	CLI_AUTH = 3,      /* 401, 403 */
	CLI_NOT_FOUND = 4, /* 404 */
	CLI_SERVER = 5     /* 5xx, network failure, database unreachable */
} cli_exit;

typedef enum cli_format { CLI_FMT_TABLE = 0, CLI_FMT_JSON } cli_format;

typedef struct cli_ctx {
	const char *url;     /* API base URL (flag, TRAINYARD_URL or default) */
	const char *ca_file; /* TRAINYARD_CA_FILE: the CAs the API's certificate is verified with */
	char *token;         /* owned copy of the bearer token, or NULL; wiped on release */
	const char *db;      /* libpq conninfo for bootstrap and db */
	cli_format format;   /* -o */
	int token_ttl_days;  /* TRAINYARD_TOKEN_TTL_DAYS, for bootstrap */
	int page_max;        /* TRAINYARD_PAGE_MAX: the largest --limit the API accepts */
	char cmd[64];        /* "yardctl tenant create": the command being run */
} cli_ctx;

struct cli_command;
struct out_col;
typedef int (*cli_run_fn)(cli_ctx *ctx, const struct cli_command *self, int argc, char **argv);

/* What a command made of one API call shows of the answer. */
typedef enum cli_call_kind {
	CLI_CALL_SHOW, /* the answer as `field  value` lines of cols */
	CLI_CALL_LIST, /* GET: the answer's items as a table of cols */
	CLI_CALL_DO,   /* an empty answer (204) as the line done; any other as SHOW */
} cli_call_kind;

/*
 * A command that is one API call and nothing else: no options, no body.
 * Its positional arguments, exactly npos of them, fill the "{}" of route
 * in order (url_path(): escaped, none empty). cmd_call() (cmd.c) runs
 * it; rows write it with CMD_SHOW(), CMD_LIST() and CMD_DO() (cmd.h).
 */
typedef struct cli_call {
	cli_call_kind kind;
	const char *method;         /* "GET", "POST", "DELETE"; a list is always "GET" */
	const char *route;          /* routes.h: as many "{}" as npos */
	int npos;                   /* positional arguments, each a name or an id */
	const struct out_col *cols; /* the fields (SHOW, DO) or the columns (LIST) */
	bool all;                   /* LIST: follow every page, else the first alone */
	const char *done;           /* DO: what an empty answer prints (table format) */
} cli_call;

typedef struct cli_command {
	const char *name;
	const char *synopsis;           /* what follows the name in a usage line */
	const char *summary;            /* one line, lower case, no final period */
	const char *details;            /* more help for `--help`, or NULL */
	cli_run_fn run;                 /* a leaf: called with the arguments after its name */
	const struct cli_command *subs; /* or a group: rows ending with a NULL name */
	const cli_call *call;           /* or a leaf that is one API call */
} cli_command;

/*
 * Fill ctx from the environment (lib/base/config.def) and take the global flags
 * (--url, --token, -o, --db) out of argv wherever they stand; *argc shrinks.
 * A --token value is copied and then overwritten in argv so that `ps`
 * shows it for as short a time as possible.
 * RET: CLI_OK, or CLI_USAGE after printing why.
 */
int cli_ctx_init(cli_ctx *ctx, int *argc, char **argv);
void cli_ctx_release(cli_ctx *ctx);

/* Run the command named by argv[0..argc) (the program name excluded). RET: exit status. */
int cli_main(cli_ctx *ctx, int argc, char **argv);

/*
 * Find argv[0] among the rows of table and run it (a leaf) or dispatch
 * again (a group). Appends the name to ctx->cmd. `-h`/`--help` or no
 * argument prints the group's usage. RET: the exit status.
 */
int cli_dispatch(cli_ctx *ctx, const cli_command *table, int argc, char **argv);

/* Usage of a leaf command: "usage: yardctl tenant create NAME ..." and its details. */
void cli_usage_leaf(FILE *f, const cli_ctx *ctx, const cli_command *cmd);

/* Usage of the whole program: every leaf, the global flags and the exit statuses. */
void cli_usage_global(FILE *f);

/* The rows of the top level ("yardctl COMMAND"), ending with a NULL name. */
extern const cli_command cli_top_commands[];

/* The command groups, one per cmd_*.c file. */
extern const cli_command tenant_commands[];
extern const cli_command quota_commands[];
extern const cli_command class_commands[];
extern const cli_command user_commands[];
extern const cli_command token_commands[];
extern const cli_command member_commands[];
extern const cli_command job_commands[];
extern const cli_command checkpoint_commands[];
extern const cli_command dataset_commands[];
extern const cli_command code_commands[];
extern const cli_command db_commands[];
extern const cli_command audit_commands[];
extern const cli_command keys_commands[];
extern const cli_command alert_commands[];
extern const cli_command webhook_commands[];

/* Leaf commands that stand at the top level. */
int cmd_bootstrap(cli_ctx *ctx, const cli_command *self, int argc, char **argv);
int cmd_whoami(cli_ctx *ctx, const cli_command *self, int argc, char **argv);
int cmd_plan(cli_ctx *ctx, const cli_command *self, int argc, char **argv);
int cmd_report(cli_ctx *ctx, const cli_command *self, int argc, char **argv);

/* yardctl token issue: a platform admin's token made on the database directly (cmd_db.c) */
int cmd_token_issue(cli_ctx *ctx, const cli_command *self, int argc, char **argv);

/*
 * Run a row that is one API call (self->call; cmd.c): take exactly
 * self->call->npos positional arguments and no option (the usage texts of
 * args_parse_cmd()), fill the route with them, then cmd_show(), cmd_list()
 * or cmd_do() (cmd.h). RET: exit status.
 */
int cmd_call(cli_ctx *ctx, const cli_command *self, int argc, char **argv);

#endif
