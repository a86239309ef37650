/*
 * cmd_quota.c - yardctl quota get | set.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "routes.h"
#include "url.h"

static const out_col quota_fields[] = {
    {"tenant_id", "tenant_id"},
    {"max_gpus", "max_gpus"},
    {"max_running_jobs", "max_running_jobs"},
    {"gpu_hours_per_month", "gpu_hours_per_month"},
    {"max_storage_bytes", "max_storage_bytes"},
    {"weight", "weight"},
    {"borrow_gpus", "borrow_gpus"},
    {"priority_classes", "priority_classes"},
    {"updated_at", "updated_at"},
    {NULL, NULL},
};

/* The integer options of quota set, in the order of set_opts, and their members. */
static const char *const int_members[] = {"max_gpus", "max_running_jobs", "gpu_hours_per_month",
                                          "max_storage_bytes", "borrow_gpus"};
#define N_INT_OPTS (sizeof(int_members) / sizeof(int_members[0]))
enum { OPT_WEIGHT = N_INT_OPTS, OPT_CLASSES };
static const opt_spec set_opts[] = {
    {"max-gpus", true, false},
    {"max-running-jobs", true, false},
    {"gpu-hours-per-month", true, false},
    {"max-storage-bytes", true, false},
    {"borrow-gpus", true, false},
    {"weight", true, false},
    {"priority-classes", true, false},
    {NULL, false, false},
};

/* "a,b" as ["a", "b"]; "" as []. RET: a new array. */
static json_t *class_array(const char *list)
{
	json_t *a = json_array();
	const char *p = list;
	while (a && *p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n > 0)
			json_array_append_new(a, json_stringn(p, n));
		p += n + (comma ? 1 : 0);
	}
	return a;
}

/* Build the PUT body from the options given. OUT: *body. RET 0 or -1 with msg. */
static int quota_body(const opt_result *o, json_t **body, char *msg, size_t msglen)
{
	json_t *b = json_object();
	for (size_t k = 0; k < N_INT_OPTS; k++) {
		long long v;
		if (!o->set[k])
			continue;
		if (args_int(o->val[k], INT64_MIN, INT64_MAX, &v)) {
			snprintf(msg, msglen, "--%s needs a whole number", set_opts[k].name);
			goto fail;
		}
		json_object_set_new(b, int_members[k], json_integer(v));
	}
	if (o->set[OPT_WEIGHT]) {
		double w;
		if (args_double(o->val[OPT_WEIGHT], &w)) {
			snprintf(msg, msglen, "--weight needs a number");
			goto fail;
		}
		json_object_set_new(b, "weight", json_real(w));
	}
	if (o->set[OPT_CLASSES])
		json_object_set_new(b, "priority_classes", class_array(o->val[OPT_CLASSES]));
	if (json_object_size(b) == 0) {
		snprintf(msg, msglen, "give at least one of the quota options");
		goto fail;
	}
	*body = b;
	return 0;
fail:
	json_decref(b);
	return -1;
}

static int quota_set(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	json_t *body;
	char msg[128];
	int rc = args_parse_cmd(ctx, self, set_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (quota_body(&o, &body, msg, sizeof(msg)))
		return args_usage_error(ctx, self, msg);
	rc = cmd_show(ctx, "PUT", URL_PATH(ROUTE_TENANT_QUOTA, o.pos[0]), body, quota_fields);
	json_decref(body);
	return rc;
}

const cli_command quota_commands[] = {
    {"get", "TENANT", "show a tenant's quota", NULL, NULL, NULL,
     CMD_SHOW("GET", ROUTE_TENANT_QUOTA, 1, quota_fields)},
    {"set",
     "TENANT [--max-gpus N] [--max-running-jobs N] [--gpu-hours-per-month N]"
     " [--max-storage-bytes N] [--borrow-gpus N] [--weight W] [--priority-classes LIST]",
     "change a tenant's quota; fields not given keep their values",
     "At least one option is required. --max-gpus is guaranteed; --borrow-gpus more may be\n"
     "borrowed while others leave theirs idle. W is the tenant's fair-share weight (> 0).\n"
     "LIST names the priority classes its members may choose beside normal, comma-separated\n"
     "(\"\" for none).\n",
     quota_set, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
