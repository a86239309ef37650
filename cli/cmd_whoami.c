/*
 * cmd_whoami.c - yardctl whoami: the caller, its roles and its token.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "http.h"
#include "routes.h"
#include "url.h"

static const out_col whoami_fields[] = {
    {"user", "user.name"},    {"user_id", "user.id"}, {"platform_role", "platform_role"},
    {"token_id", "token_id"}, {NULL, NULL},
};

static const out_col membership_cols[] = {
    {"TENANT", "tenant"},
    {"ROLE", "role"},
    {"TENANT_ID", "tenant_id"},
    {NULL, NULL},
};

int cmd_whoami(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	json_t *me = NULL;
	int rc = args_parse_cmd(ctx, self, NULL, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	char *path = URL_FIXED(ROUTE_WHOAMI);
	if (!path)
		return cmd_bad_path();
	rc = http_json(ctx, "GET", path, NULL, &me);
	free(path);
	if (rc == CLI_OK)
		rc = output_object(ctx, me, whoami_fields);
	if (rc == CLI_OK && ctx->format == CLI_FMT_TABLE) {
		const json_t *m = json_object_get(me, "memberships");
		if (json_array_size(m) > 0) {
			printf("\n");
			rc = output_list(ctx, me, m, membership_cols);
		}
	}
	json_decref(me);
	return rc;
}
