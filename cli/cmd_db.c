/*
 * cmd_db.c - the commands that work on the database directly rather than
 * through the API: yardctl bootstrap, token issue, db migrate, db status.
 *
 * They connect with TRAINYARD_DB (or --db) and use lib/ as the API does,
 * so the first admin and its token are created exactly as the API would.
 */
#include <jansson.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "config.h"
#include "db.h"
#include "error.h"
#include "http.h"
#include "migrate.h"
#include "users.h"

static void notice_ignore(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* RET: a connection to ctx->db, or NULL after saying why. */
static PGconn *db_open(const cli_ctx *ctx)
{
	char err[512];
	PGconn *c = db_connect(ctx->db, err, sizeof(err));
	if (!c) {
		fprintf(stderr, "yardctl: %s\n", err);
		return NULL;
	}
	PQsetNoticeProcessor(c, notice_ignore, NULL);
	return c;
}

/* Say that e happened while doing what. RET: the exit status for e. */
static int db_failed(const char *what, int e, const char *err)
{
	const err_info_t *info = err_info((err_code)-e);
	fprintf(stderr, "yardctl: %s: %s", what, err && *err ? err : info->doc);
	if (-e != ERR_INTERNAL) /* "internal_error" would tell the reader nothing more */
		fprintf(stderr, " (%s)", info->code);
	fputc('\n', stderr);
	return http_exit_from_err((err_code)-e);
}

/* Print j (consumed) as JSON. RET: CLI_OK. */
static int json_print_new(json_t *j)
{
	output_json(stdout, j);
	json_decref(j);
	return CLI_OK;
}

static int bootstrap_refused(void)
{
	fprintf(stderr, "yardctl: bootstrap refused: a platform admin already exists\n");
	return CLI_REFUSED;
}

/* Print a token made here (bootstrap, token issue): its secret alone, or as JSON. */
static void token_print(const cli_ctx *ctx, const char *name, const store_token *t)
{
	if (ctx->format == CLI_FMT_TABLE) {
		printf("%s\n", t->secret);
		return;
	}
	json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "user", name, "token_id", t->id, "token",
	                      t->secret, "expires_at", t->expires_at);
	output_json(stdout, j);
	cmd_wipe_str(j, "token");
	json_decref(j);
}

enum { OPT_NAME };
static const opt_spec bootstrap_opts[] = {{"name", true, false}, {NULL, false, false}};

int cmd_bootstrap(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	store_token t;
	char err[512] = "";
	int rc = args_parse_cmd(ctx, self, bootstrap_opts, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *name = o.set[OPT_NAME] ? o.val[OPT_NAME] : "admin";
	PGconn *c = db_open(ctx);
	if (!c)
		return CLI_SERVER;
	if ((rc = migrate_check(c, err, sizeof(err))))
		rc = db_failed("bootstrap needs a current schema", rc, err);
	else if ((rc = store_bootstrap_admin(c, name, ctx->token_ttl_days, &t)) ==
	         -ERR_ADMIN_EXISTS)
		rc = bootstrap_refused();
	else if (rc)
		rc = db_failed("bootstrap failed", rc, NULL);
	else
		token_print(ctx, name, &t);
	fflush(stdout);
	explicit_bzero(&t, sizeof(t));
	db_close(c);
	return rc;
}

enum { OPT_USER, OPT_DAYS };
static const opt_spec issue_opts[] = {
    {"user", true, true}, {"days", true, false}, {NULL, false, false}};

int cmd_token_issue(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	store_token t = {0};
	ty_config cfg;
	char err[512] = "", name[64] = "";
	long long days = ctx->token_ttl_days;
	int rc = args_parse_cmd(ctx, self, issue_opts, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.set[OPT_DAYS] && args_int(o.val[OPT_DAYS], 1, 3650, &days))
		return args_usage_error(ctx, self,
		                        "--days needs a whole number of days, 1 to 3650");
	if (config_load(&cfg, err, sizeof(err))) {
		fprintf(stderr, "yardctl: %s\n", err);
		return CLI_USAGE;
	}
	const struct passwd *pw = getpwuid(geteuid());
	char os_user[64];
	snprintf(os_user, sizeof(os_user), "%s", pw ? pw->pw_name : "");
	if (!pw)
		snprintf(os_user, sizeof(os_user), "uid %u", (unsigned)geteuid());
	PGconn *c = db_open(ctx);
	if (!c)
		return CLI_SERVER;
	if ((rc = migrate_check(c, err, sizeof(err))))
		rc = db_failed("token issue needs a current schema", rc, err);
	else if ((rc = store_token_issue(c, o.val[OPT_USER], (int)days, cfg.tokens_per_user,
	                                 os_user, &t, name)) == -ERR_NOT_PLATFORM_ADMIN)
		rc = db_failed("token issue refused", rc, "the user is not a platform admin");
	else if (rc == -ERR_USER_NOT_FOUND)
		rc = db_failed("token issue refused", rc, "no such user");
	else if (rc)
		rc = db_failed("token issue failed", rc, NULL);
	else
		token_print(ctx, name, &t);
	fflush(stdout);
	explicit_bzero(&t, sizeof(t));
	db_close(c);
	return rc;
}

static int db_migrate(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	char err[512] = "";
	int applied = 0, version = 0;
	int rc = args_parse_cmd(ctx, self, NULL, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	PGconn *c = db_open(ctx);
	if (!c)
		return CLI_SERVER;
	if ((rc = migrate_apply(c, &applied, err, sizeof(err))) ||
	    (rc = migrate_db_version(c, &version)))
		rc = db_failed("could not migrate the database", rc, err);
	else if (ctx->format == CLI_FMT_JSON)
		rc =
		    json_print_new(json_pack("{s:i, s:i}", "applied", applied, "version", version));
	else
		printf("applied %d migration%s; schema at version %d\n", applied,
		       applied == 1 ? "" : "s", version);
	db_close(c);
	return rc;
}

static int db_status(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int version = 0, known = migrate_known_version();
	int rc = args_parse_cmd(ctx, self, NULL, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	PGconn *c = db_open(ctx);
	if (!c)
		return CLI_SERVER;
	if ((rc = migrate_db_version(c, &version)))
		rc = db_failed("could not read the schema version", rc, NULL);
	else if (ctx->format == CLI_FMT_JSON)
		rc = json_print_new(
		    json_pack("{s:i, s:i}", "version", version, "known_version", known));
	else
		printf("schema at version %d; this yardctl knows version %d%s\n", version, known,
		       version < known ? " (run `yardctl db migrate`)" : "");
	db_close(c);
	return rc;
}

const cli_command db_commands[] = {
    {"migrate", "", "apply every pending schema migration",
     "Connects with TRAINYARD_DB (or --db). Safe to run while the API is up.\n", db_migrate, NULL,
     NULL},
    {"status", "", "show the schema version and the newest one this binary knows", NULL, db_status,
     NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
