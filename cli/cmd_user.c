/*
 * cmd_user.c - yardctl user create | list.
 */
#include <jansson.h>
#include <string.h>

#include "cmd.h"
#include "routes.h"
#include "url.h"

static const out_col user_fields[] = {
    {"id", "id"},
    {"name", "name"},
    {"email", "email"},
    {"platform_role", "platform_role"},
    {"created_at", "created_at"},
    {NULL, NULL},
};

static const out_col user_cols[] = {
    {"ID", "id"},
    {"NAME", "name"},
    {"EMAIL", "email"},
    {"PLATFORM_ROLE", "platform_role"},
    {"CREATED", "created_at"},
    {NULL, NULL},
};

enum { OPT_EMAIL, OPT_PLATFORM_ROLE };
static const opt_spec create_opts[] = {
    {"email", true, false},
    {"platform-role", true, false},
    {NULL, false, false},
};

static int user_create(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, create_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *role = o.val[OPT_PLATFORM_ROLE];
	if (role && strcmp(role, "admin") != 0 && strcmp(role, "auditor") != 0)
		return args_usage_error(ctx, self, "--platform-role is admin or auditor");
	json_t *body = json_object();
	if (cmd_set_str(body, "name", o.pos[0]) || cmd_set_str(body, "email", o.val[OPT_EMAIL]) ||
	    cmd_set_str(body, "platform_role", role))
		rc = CLI_USAGE;
	else
		rc = cmd_show(ctx, "POST", URL_FIXED(ROUTE_USERS), body, user_fields);
	json_decref(body);
	return rc;
}

const cli_command user_commands[] = {
    {"create", "NAME [--email EMAIL] [--platform-role admin|auditor]",
     "create a user (platform admins)", NULL, user_create, NULL, NULL},
    {"list", "", "list users", NULL, NULL, NULL, CMD_LIST(ROUTE_USERS, 0, user_cols, true)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
