/*
 * cmd_checkpoint.c - yardctl checkpoint list | get | lineage | grant |
 * grants | approve | revoke | shared: a job's checkpoints, where they came
 * from, and sharing them with other tenants (docs/datasets.md).
 */
#include "cmd.h"
#include "routes.h"
#include "url.h"

static const out_col checkpoint_fields[] = {
    {"id", "id"},         {"job_id", "job_id"},         {"attempt_id", "attempt_id"},
    {"step", "step"},     {"world", "world"},           {"bytes", "bytes"},
    {"shards", "shards"}, {"created_at", "created_at"}, {NULL, NULL},
};

static const out_col checkpoint_cols[] = {
    {"ID", "id"},       {"STEP", "step"},          {"WORLD", "world"},
    {"BYTES", "bytes"}, {"CREATED", "created_at"}, {NULL, NULL},
};

static int checkpoint_list(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_list(ctx, URL_PATH(ROUTE_JOB_CKPTS, o.pos[0]), true, checkpoint_cols);
}

static int checkpoint_get(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_show(ctx, "GET", URL_PATH(ROUTE_CHECKPOINT, o.pos[0]), NULL, checkpoint_fields);
}

static int checkpoint_lineage(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	static const out_col fields[] = {
	    {"checkpoint", "checkpoint"},
	    {"job", "job"},
	    {"datasets", "datasets"},
	    {"data_paths", "data_paths"},
	    {"follows", "follows"},
	    {"init_from", "init_from"},
	    {NULL, NULL},
	};
	return cmd_show(ctx, "GET", URL_PATH(ROUTE_CKPT_LINEAGE, o.pos[0]), NULL, fields);
}

static const out_col grant_fields[] = {
    {"id", "id"},
    {"checkpoint_id", "checkpoint_id"},
    {"job", "job"},
    {"step", "step"},
    {"tenant", "tenant"},
    {"classification", "classification"},
    {"download", "download"},
    {"state", "state"},
    {"created_at", "created_at"},
    {"expires_at", "expires_at"},
    {"approved_at", "approved_at"},
    {"revoked_at", "revoked_at"},
    {NULL, NULL},
};

enum { OPT_EXPIRES, OPT_DOWNLOAD };
static const opt_spec grant_opts[] = {
    {"expires", true, true},
    {"download", false, false},
    {NULL, false, false},
};

static int checkpoint_grant(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, grant_opts, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_grant(ctx, URL_PATH(ROUTE_CKPT_GRANTS, o.pos[0]), o.pos[1], o.val[OPT_EXPIRES],
	                 o.set[OPT_DOWNLOAD], grant_fields);
}

static int checkpoint_grants(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	static const out_col cols[] = {
	    {"ID", "id"},
	    {"TENANT", "tenant"},
	    {"STATE", "state"},
	    {"DOWNLOAD", "download"},
	    {"EXPIRES", "expires_at"},
	    {NULL, NULL},
	};
	return cmd_list(ctx, URL_PATH(ROUTE_CKPT_GRANTS, o.pos[0]), true, cols);
}

/* approve (approve true) or revoke grant pos[1] of checkpoint pos[0] */
static int grant_change(cli_ctx *ctx, const cli_command *self, int argc, char **argv, bool approve)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_grant_change(ctx,
	                        approve ? URL_PATH(ROUTE_CKPT_GRANT_OK, o.pos[0], o.pos[1])
	                                : URL_PATH(ROUTE_CKPT_GRANT, o.pos[0], o.pos[1]),
	                        approve, grant_fields);
}

static int checkpoint_approve(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	return grant_change(ctx, self, argc, argv, true);
}

static int checkpoint_revoke(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	return grant_change(ctx, self, argc, argv, false);
}

static int checkpoint_shared(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	static const out_col cols[] = {
	    {"CHECKPOINT", "checkpoint_id"},
	    {"OWNER", "owner"},
	    {"JOB", "job"},
	    {"STEP", "step"},
	    {"CLASSIFICATION", "classification"},
	    {"DOWNLOAD", "download"},
	    {"EXPIRES", "expires_at"},
	    {NULL, NULL},
	};
	return cmd_list(ctx, URL_PATH(ROUTE_SHARED_CKPTS, o.pos[0]), true, cols);
}

const cli_command checkpoint_commands[] = {
    {"list", "JOB_ID", "list a job's registered checkpoints", NULL, checkpoint_list, NULL},
    {"get", "CHECKPOINT_ID", "show a checkpoint: step, world, shards and their SHA-256", NULL,
     checkpoint_get, NULL},
    {"lineage", "CHECKPOINT_ID",
     "what a checkpoint was trained on and from: datasets, paths, the checkpoint before", NULL,
     checkpoint_lineage, NULL},
    {"grant", "CHECKPOINT_ID TENANT --expires TIME [--download]",
     "let TENANT start jobs from the checkpoint (and download it) until TIME",
     "TIME is RFC 3339, within 366 days. The checkpoint's job must have ended. A\n"
     "confidential or restricted checkpoint's grant waits for a platform admin's approval;\n"
     "a restricted one is never downloaded by another tenant. Tenant owners grant.\n",
     checkpoint_grant, NULL},
    {"grants", "CHECKPOINT_ID", "list a checkpoint's grants", NULL, checkpoint_grants, NULL},
    {"approve", "CHECKPOINT_ID GRANT_ID", "put a pending grant in force (platform admins)", NULL,
     checkpoint_approve, NULL},
    {"revoke", "CHECKPOINT_ID GRANT_ID",
     "revoke a grant: no attempt that starts after it gets the checkpoint", NULL, checkpoint_revoke,
     NULL},
    {"shared", "TENANT", "list the checkpoints other tenants granted to TENANT", NULL,
     checkpoint_shared, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
