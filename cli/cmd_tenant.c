/*
 * cmd_tenant.c - yardctl tenant create | list | show | usage | identity | set-identity.
 */
#include <jansson.h>

#include "args.h"
#include "cmd.h"
#include "routes.h"
#include "sbuf.h"
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

static const out_col identity_fields[] = {
    {"uid", "uid"},       {"gid", "gid"},       {"user", "user"},
    {"usable", "usable"}, {"source", "source"}, {"assigned_at", "assigned_at"},
    {NULL, NULL},
};

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

static const out_col usage_fields[] = {
    {"tenant", "tenant"},
    {"days", "days"},
    {"jobs", "jobs"},
    {"truncated", "truncated"},
    {"wall_s", "wall_seconds"},
    {"goodput_s", "goodput_seconds"},
    {"goodput_fraction", "goodput_fraction"},
    {"badput_queueing_s", "badput_seconds.queueing"},
    {"badput_startup_s", "badput_seconds.startup"},
    {"badput_data_wait_s", "badput_seconds.data_wait"},
    {"badput_checkpoint_s", "badput_seconds.checkpoint"},
    {"badput_lost_s", "badput_seconds.lost"},
    {"badput_recovery_s", "badput_seconds.recovery"},
    {"badput_fallback_s", "badput_seconds.fallback"},
    {"badput_overhead_s", "badput_seconds.overhead"},
    {"steps_kept", "steps.kept"},
    {"steps_lost", "steps.lost"},
    {"device_s", "device_seconds"},
    {"max_gpus", "quota.max_gpus"},
    {"devices_in_use", "quota.devices_in_use"},
    {"max_storage_bytes", "quota.max_storage_bytes"},
    {"storage_bytes_used", "quota.storage_bytes_used"},
    {NULL, NULL},
};

enum { OPT_DAYS };
static const opt_spec usage_opts[] = {
    {"days", true, false},
    {NULL, false, false},
};

static int tenant_usage(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, usage_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	char *path = URL_PATH(ROUTE_TENANT_USAGE, o.pos[0]);
	if (!path)
		return cmd_bad_path();
	sbuf url;
	sbuf_init(&url, 4096);
	rc = sbuf_adds(&url, path) || url_query_add(&url, "days", o.val[OPT_DAYS]);
	free(path);
	if (rc) {
		sbuf_release(&url);
		return cmd_bad_path();
	}
	return cmd_show(ctx, "GET", sbuf_detach(&url), NULL, usage_fields);
}

const cli_command tenant_commands[] = {
    {"create", "NAME [--display-name TEXT]", "create a tenant (platform admins)",
     "NAME is lower case: letters, digits and '-', starting with a letter.\n", tenant_create, NULL,
     NULL},
    {"list", "", "list the tenants the caller can see", NULL, NULL, NULL,
     CMD_LIST(ROUTE_TENANTS, 0, tenant_cols, true)},
    {"show", "NAME|ID", "show one tenant", NULL, NULL, NULL,
     CMD_SHOW("GET", ROUTE_TENANT, 1, tenant_fields)},
    {"usage", "NAME|ID [--days N]",
     "where the tenant's jobs' time went: goodput, badput by cause, quota use",
     "Sums the jobs submitted in the last N days (default 30, at most 366).\n", tenant_usage, NULL,
     NULL},
    {"identity", "NAME|ID", "show the Unix user the tenant's attempts run as", NULL, NULL, NULL,
     CMD_SHOW("GET", ROUTE_TENANT_IDENTITY, 1, identity_fields)},
    {"set-identity", "NAME|ID USER",
     "run the tenant's attempts as Unix user USER (platform admins)",
     "For a tenant that has no user yet (docs/identity.md): USER's uid and primary group on\n"
     "the API's host, the same on every node. A tenant's user is for good.\n",
     tenant_set_identity, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
