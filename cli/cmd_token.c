/*
 * cmd_token.c - yardctl token create | list | revoke | issue (the last on the
 * database directly, in cmd_db.c).
 *
 * The secret of a new token is printed once, alone on stdout, so that
 * `TRAINYARD_TOKEN=$(yardctl token create alice)` works; it is never
 * written anywhere else.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "http.h"
#include "routes.h"
#include "url.h"

static const out_col token_fields[] = {
    {"id", "id"},
    {"user_id", "user_id"},
    {"name", "name"},
    {"created_at", "created_at"},
    {"expires_at", "expires_at"},
    {"revoked_at", "revoked_at"},
    {"last_used_at", "last_used_at"},
    {NULL, NULL},
};

static const out_col token_cols[] = {
    {"ID", "id"},
    {"NAME", "name"},
    {"CREATED", "created_at"},
    {"EXPIRES", "expires_at"},
    {"REVOKED", "revoked_at"},
    {"LAST_USED", "last_used_at"},
    {NULL, NULL},
};

enum { OPT_NAME, OPT_EXPIRES_DAYS };
static const opt_spec create_opts[] = {
    {"name", true, false},
    {"expires-days", true, false},
    {NULL, false, false},
};

/* The POST body from the options. OUT: *body. RET 0, or -1 with msg set. */
static int create_body(const opt_result *o, json_t **body, const char **msg)
{
	long long days = 0;
	*msg = "--expires-days needs a whole number of days, at least 1";
	if (o->set[OPT_EXPIRES_DAYS] && args_int(o->val[OPT_EXPIRES_DAYS], 1, 36500, &days))
		return -1;
	*body = json_object();
	if (cmd_set_str(*body, "name", o->val[OPT_NAME])) {
		*msg = NULL;
		json_decref(*body);
		return -1;
	}
	if (days)
		json_object_set_new(*body, "expires_in_days", json_integer(days));
	return 0;
}

/* Print the new token: its secret alone, or the whole answer as JSON. */
static int created_print(const cli_ctx *ctx, const json_t *answer)
{
	const char *secret = json_string_value(json_object_get(answer, "token"));
	if (ctx->format == CLI_FMT_JSON) {
		output_json(stdout, answer);
		return CLI_OK;
	}
	if (!secret) {
		fprintf(stderr, "yardctl: the server's answer holds no token\n");
		return CLI_SERVER;
	}
	printf("%s\n", secret);
	return CLI_OK;
}

static int token_create(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	json_t *body, *answer = NULL;
	const char *msg;
	int rc = args_parse_cmd(ctx, self, create_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (create_body(&o, &body, &msg))
		return msg ? args_usage_error(ctx, self, msg) : CLI_USAGE;
	char *path = URL_PATH(ROUTE_USER_TOKENS, o.pos[0]);
	rc = path ? http_json(ctx, "POST", path, body, &answer) : cmd_bad_path();
	if (rc == CLI_OK)
		rc = created_print(ctx, answer);
	fflush(stdout);
	cmd_wipe_str(answer, "token");
	json_decref(answer);
	json_decref(body);
	free(path);
	return rc;
}

const cli_command token_commands[] = {
    {"create", "USER [--name NAME] [--expires-days DAYS]",
     "create an API token for USER and print its secret alone",
     "The secret is shown once; with -o json the whole answer is printed.\n"
     "Without --expires-days the server's default lifetime applies.\n",
     token_create, NULL, NULL},
    {"list", "USER", "list a user's tokens (never their secrets)", NULL, NULL, NULL,
     CMD_LIST(ROUTE_USER_TOKENS, 1, token_cols, true)},
    {"revoke", "TOKEN_ID", "revoke a token at once", NULL, NULL, NULL,
     CMD_DO("DELETE", ROUTE_TOKEN, 1, "token revoked", token_fields)},
    {"issue", "--user USER [--days DAYS]",
     "as the operator, give a platform admin a new token on the database directly",
     "For when no working admin token is left: every token made through the API\n"
     "descends from the bootstrap token and ends with it. Connects with TRAINYARD_DB\n"
     "(or --db), like bootstrap, and needs no API token. USER (a name or an id) must\n"
     "be a platform admin. The token has no parent, lives DAYS days (default\n"
     "TRAINYARD_TOKEN_TTL_DAYS), is shown once, and the act is audited (token.issue).\n",
     cmd_token_issue, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
