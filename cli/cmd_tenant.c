/*
 * cmd_tenant.c - yardctl tenant create | list | show.
 */
#include <jansson.h>

#include "cmd.h"
#include "routes.h"
#include "url.h"

static const out_col tenant_fields[] = {
    {"id", "id"}, {"name", "name"}, {"display_name", "display_name"}, {"created_at", "created_at"},
    {NULL, NULL},
};

static const out_col tenant_cols[] = {
    {"ID", "id"}, {"NAME", "name"}, {"DISPLAY_NAME", "display_name"}, {"CREATED", "created_at"},
    {NULL, NULL},
};

enum { OPT_DISPLAY_NAME };
static const opt_spec create_opts[] = {{"display-name", true, false}, {NULL, false, false}};

static int tenant_create(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, create_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	json_t *body = json_object();
	if (cmd_set_str(body, "name", o.pos[0]) ||
	    cmd_set_str(body, "display_name", o.val[OPT_DISPLAY_NAME]))
		rc = CLI_USAGE;
	else
		rc = cmd_show(ctx, "POST", URL_FIXED(ROUTE_TENANTS), body, tenant_fields);
	json_decref(body);
	return rc;
}

static int tenant_list(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_list(ctx, URL_FIXED(ROUTE_TENANTS), true, tenant_cols);
}

static int tenant_show(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_show(ctx, "GET", URL_PATH(ROUTE_TENANT, o.pos[0]), NULL, tenant_fields);
}

static const out_col identity_fields[] = {
    {"uid", "uid"},       {"gid", "gid"},       {"user", "user"},
    {"usable", "usable"}, {"source", "source"}, {"assigned_at", "assigned_at"},
    {NULL, NULL},
};

static int tenant_identity(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_show(ctx, "GET", URL_PATH(ROUTE_TENANT_IDENTITY, o.pos[0]), NULL,
	                identity_fields);
}

static int tenant_set_identity(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	json_t *body = json_object();
	if (cmd_set_str(body, "user", o.pos[1]))
		rc = CLI_USAGE;
	else
		rc = cmd_show(ctx, "PUT", URL_PATH(ROUTE_TENANT_IDENTITY, o.pos[0]), body,
		              identity_fields);
	json_decref(body);
	return rc;
}

const cli_command tenant_commands[] = {
    {"create", "NAME [--display-name TEXT]", "create a tenant (platform admins)",
     "NAME is lower case: letters, digits and '-', starting with a letter.\n", tenant_create, NULL},
    {"list", "", "list the tenants the caller can see", NULL, tenant_list, NULL},
    {"show", "NAME|ID", "show one tenant", NULL, tenant_show, NULL},
    {"identity", "NAME|ID", "show the Unix user the tenant's attempts run as", NULL,
     tenant_identity, NULL},
    {"set-identity", "NAME|ID USER",
     "run the tenant's attempts as Unix user USER (platform admins)",
     "For a tenant that has no user yet (docs/identity.md): USER's uid and primary group on\n"
     "the API's host, the same on every node. A tenant's user is for good.\n",
     tenant_set_identity, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
