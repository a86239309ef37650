/*
 * cmd_checkpoint.c - yardctl checkpoint list | get.
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

const cli_command checkpoint_commands[] = {
    {"list", "JOB_ID", "list a job's registered checkpoints", NULL, checkpoint_list, NULL},
    {"get", "CHECKPOINT_ID", "show a checkpoint: step, world, shards and their SHA-256", NULL,
     checkpoint_get, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
