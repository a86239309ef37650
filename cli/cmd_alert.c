/*
 * cmd_alert.c - yardctl alert list: what a tenant's jobs raised (README.md,
 * "Alerts and webhooks"; the kinds are the API's AlertKind).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "routes.h"
#include "sbuf.h"
#include "url.h"

static const out_col alert_cols[] = {
    {"ID", "id"},         {"KIND", "kind"}, {"JOB", "job_id"}, {"CREATED", "created_at"},
    {"DETAIL", "detail"}, {NULL, NULL},
};

enum { OPT_JOB };
static const opt_spec list_opts[] = {
    {"job", true, false},
    {NULL, false, false},
};

static int alert_list(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	sbuf url;
	int rc = args_parse_cmd(ctx, self, list_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.set[OPT_JOB] && !*o.val[OPT_JOB])
		return args_usage_error(ctx, self, "--job needs a job id");
	char *path = URL_PATH(ROUTE_TENANT_ALERTS, o.pos[0]);
	if (!path)
		return cmd_bad_path();
	sbuf_init(&url, URL_MAX);
	rc = sbuf_adds(&url, path) || url_query_add(&url, "job", o.val[OPT_JOB]);
	free(path);
	path = rc ? NULL : sbuf_detach(&url);
	sbuf_release(&url);
	return cmd_list(ctx, path, false, alert_cols);
}

const cli_command alert_commands[] = {
    {"list", "TENANT [--job JOB_ID]", "list the newest alerts of a tenant and its jobs",
     "The newest 200, newest first; --job keeps one job's. KIND is loss_spike,\n"
     "non_finite, stalled, slow_steps, restarts or quota_nearly_spent; DETAIL says\n"
     "what raised it. Any role in the tenant may list them.\n",
     alert_list, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
