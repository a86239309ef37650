/*
 * cmd_member.c - yardctl member grant | revoke | list: users' roles in a
 * tenant.
 */
#include <jansson.h>

#include "authz.h"
#include "cmd.h"
#include "routes.h"
#include "url.h"

static const out_col member_fields[] = {
    {"user", "user"}, {"user_id", "user_id"}, {"role", "role"}, {"created_at", "created_at"},
    {NULL, NULL},
};

static const out_col member_cols[] = {
    {"USER", "user"},          {"ROLE", "role"}, {"USER_ID", "user_id"},
    {"GRANTED", "created_at"}, {NULL, NULL},
};

static int member_grant(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 3, 3, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (role_parse_tenant(o.pos[2]) == ROLE_NONE)
		return args_usage_error(ctx, self, "ROLE is owner, editor, viewer or auditor");
	json_t *body = json_pack("{s:s}", "role", o.pos[2]);
	rc = cmd_show(ctx, "PUT", URL_PATH(ROUTE_TENANT_MEMBER, o.pos[0], o.pos[1]), body,
	              member_fields);
	json_decref(body);
	return rc;
}

const cli_command member_commands[] = {
    {"grant", "TENANT USER ROLE", "give USER the ROLE in TENANT (replacing any other)",
     "ROLE is owner, editor, viewer or auditor. Granting needs every permission of ROLE.\n",
     member_grant, NULL, NULL},
    {"revoke", "TENANT USER", "take USER's role in TENANT away", NULL, NULL, NULL,
     CMD_DO("DELETE", ROUTE_TENANT_MEMBER, 2, "membership revoked", member_fields)},
    {"list", "TENANT", "list TENANT's members and their roles", NULL, NULL, NULL,
     CMD_LIST(ROUTE_TENANT_MEMBERS, 1, member_cols, true)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
