/*
 * cmd_class.c - yardctl class list | set | delete: the platform's priority
 * classes (scheduler/README.md, "Borrowing and preemption").
 */
#include <jansson.h>
#include <stdio.h>

#include "cmd.h"
#include "routes.h"
#include "url.h"

static const out_col class_fields[] = {
    {"name", "name"},
    {"value", "value"},
    {"description", "description"},
    {"updated_at", "updated_at"},
    {NULL, NULL},
};

static const out_col class_cols[] = {
    {"NAME", "name"},
    {"VALUE", "value"},
    {"DESCRIPTION", "description"},
    {NULL, NULL},
};

enum { OPT_VALUE, OPT_DESCRIPTION };
static const opt_spec set_opts[] = {
    {"value", true, false},
    {"description", true, false},
    {NULL, false, false},
};

static int class_set(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, set_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	long long v;
	if (!o.set[OPT_VALUE] || args_int(o.val[OPT_VALUE], -1000, 1000, &v))
		return args_usage_error(ctx, self,
		                        "--value needs a whole number from -1000 to 1000");
	json_t *body = json_pack("{s:I}", "value", (json_int_t)v);
	if (o.set[OPT_DESCRIPTION])
		json_object_set_new(body, "description", json_string(o.val[OPT_DESCRIPTION]));
	rc = cmd_show(ctx, "PUT", URL_PATH(ROUTE_PRIORITY_CLASS, o.pos[0]), body, class_fields);
	json_decref(body);
	return rc;
}

const cli_command class_commands[] = {
    {"list", "", "list the priority classes, highest value first", NULL, NULL, NULL,
     CMD_LIST(ROUTE_PRIORITY_CLASSES, 0, class_cols, true)},
    {"set", "NAME --value N [--description TEXT]",
     "define a priority class, or change its value (platform admin)",
     "N is from -1000 to 1000; higher goes first and may preempt lower. The queued jobs\n"
     "of the class take the new value. Tenants choose among the classes their quota\n"
     "allows (yardctl quota set TENANT --priority-classes A,B) and normal.\n",
     class_set, NULL, NULL},
    {"delete", "NAME", "remove a priority class no quota allows and no job that has not ended has",
     NULL, NULL, NULL, CMD_DO("DELETE", ROUTE_PRIORITY_CLASS, 1, "removed", class_fields)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
