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

static const out_col lineage_fields[] = {
    {"checkpoint", "checkpoint"},
    {"job", "job"},
    {"datasets", "datasets"},
    {"data_paths", "data_paths"},
    {"follows", "follows"},
    {"init_from", "init_from"},
    {NULL, NULL},
};

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

static const out_col grant_cols[] = {
    {"ID", "id"},
    {"TENANT", "tenant"},
    {"STATE", "state"},
    {"DOWNLOAD", "download"},
    {"EXPIRES", "expires_at"},
    {NULL, NULL},
};

static const out_col shared_cols[] = {
    {"CHECKPOINT", "checkpoint_id"},
    {"OWNER", "owner"},
    {"JOB", "job"},
    {"STEP", "step"},
    {"CLASSIFICATION", "classification"},
    {"DOWNLOAD", "download"},
    {"EXPIRES", "expires_at"},
    {NULL, NULL},
};

const cli_command checkpoint_commands[] = {
    {"list", "JOB_ID", "list a job's registered checkpoints", NULL, NULL, NULL,
     CMD_LIST(ROUTE_JOB_CKPTS, 1, checkpoint_cols, true)},
    {"get", "CHECKPOINT_ID", "show a checkpoint: step, world, shards and their SHA-256", NULL, NULL,
     NULL, CMD_SHOW("GET", ROUTE_CHECKPOINT, 1, checkpoint_fields)},
    {"lineage", "CHECKPOINT_ID",
     "what a checkpoint was trained on and from: datasets, paths, the checkpoint before", NULL,
     NULL, NULL, CMD_SHOW("GET", ROUTE_CKPT_LINEAGE, 1, lineage_fields)},
    {"grant", "CHECKPOINT_ID TENANT --expires TIME [--download]",
     "let TENANT start jobs from the checkpoint (and download it) until TIME",
     "TIME is RFC 3339, within 366 days. The checkpoint's job must have ended. A\n"
     "confidential or restricted checkpoint's grant waits for a platform admin's approval;\n"
     "a restricted one is never downloaded by another tenant. Tenant owners grant.\n",
     checkpoint_grant, NULL, NULL},
    {"grants", "CHECKPOINT_ID", "list a checkpoint's grants", NULL, NULL, NULL,
     CMD_LIST(ROUTE_CKPT_GRANTS, 1, grant_cols, true)},
    {"approve", "CHECKPOINT_ID GRANT_ID", "put a pending grant in force (platform admins)", NULL,
     NULL, NULL, CMD_SHOW("POST", ROUTE_CKPT_GRANT_OK, 2, grant_fields)},
    {"revoke", "CHECKPOINT_ID GRANT_ID",
     "revoke a grant: no attempt that starts after it gets the checkpoint", NULL, NULL, NULL,
     CMD_DO("DELETE", ROUTE_CKPT_GRANT, 2, "revoked", grant_fields)},
    {"shared", "TENANT", "list the checkpoints other tenants granted to TENANT", NULL, NULL, NULL,
     CMD_LIST(ROUTE_SHARED_CKPTS, 1, shared_cols, true)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
