/*
 * cmd_webhook.c - yardctl webhook create | list | delete | deliveries: where
 * a tenant's alerts are POSTed (README.md, "Alerts and webhooks").
 *
 * The signing secret of a new webhook is printed once, with its id, and
 * wiped from memory after; list never shows it (the API keeps it sealed).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "http.h"
#include "routes.h"
#include "url.h"

static const out_col created_fields[] = {
    {"id", "id"},
    {"url", "url"},
    {"kinds", "kinds"},
    {"allow_private", "allow_private"},
    {"created_at", "created_at"},
    {"secret", "secret"},
    {NULL, NULL},
};

static const out_col webhook_cols[] = {
    {"ID", "id"},
    {"URL", "url"},
    {"KINDS", "kinds"},
    {"PRIVATE", "allow_private"},
    {"CREATED", "created_at"},
    {NULL, NULL},
};

static const out_col delivery_cols[] = {
    {"ID", "id"},
    {"ALERT", "alert_id"},
    {"KIND", "kind"},
    {"STATE", "state"},
    {"TRIES", "attempts"},
    {"LAST_STATUS", "last_status"},
    {"LAST_ERROR", "last_error"},
    {"NEXT", "next_at"},
    {"DELIVERED", "delivered_at"},
    {NULL, NULL},
};

enum { OPT_KIND, OPT_ALLOW_PRIVATE };
static const opt_spec create_opts[] = {
    {"kind", true, false},
    {"allow-private", false, false},
    {NULL, false, false},
};

/*
 * The POST body: {"url", "kinds" (every --kind, when any), "allow_private"}.
 * RET: it, or NULL after saying a value is not UTF-8.
 */
static json_t *create_body(const opt_result *o)
{
	json_t *body = json_object(), *kinds = json_array();
	int bad = cmd_set_str(body, "url", o->pos[1]);
	for (int i = 0; i < o->ngiven && !bad; i++) { /* --kind is the one option with a value */
		json_t *kind = json_string(o->given_val[i]);
		if (!kind) {
			fprintf(stderr, "yardctl: a --kind value is not valid UTF-8\n");
			bad = -1;
			break;
		}
		json_array_append_new(kinds, kind);
	}
	if (json_array_size(kinds) > 0)
		json_object_set(body, "kinds", kinds);
	json_object_set_new(body, "allow_private", json_boolean(o->set[OPT_ALLOW_PRIVATE]));
	json_decref(kinds);
	if (bad) {
		json_decref(body);
		return NULL;
	}
	return body;
}

static int webhook_create(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	json_t *answer = NULL;
	int rc = args_parse_cmd(ctx, self, create_opts, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	json_t *body = create_body(&o);
	if (!body)
		return CLI_USAGE;
	char *path = URL_PATH(ROUTE_TENANT_WEBHOOKS, o.pos[0]);
	rc = path ? http_json(ctx, "POST", path, body, &answer) : cmd_bad_path();
	if (rc == CLI_OK)
		rc = output_object(ctx, answer, created_fields);
	if (rc == CLI_OK && ctx->format == CLI_FMT_TABLE)
		fprintf(stderr,
		        "yardctl: the secret is shown this once: keep it with the receiver\n");
	fflush(stdout);
	cmd_wipe_str(answer, "secret");
	json_decref(answer);
	json_decref(body);
	free(path);
	return rc;
}

const cli_command webhook_commands[] = {
    {"create", "TENANT URL [--kind KIND]... [--allow-private]",
     "send TENANT's alerts to URL, signed; print the webhook and its secret once",
     "KIND (repeatable; every kind when none) is loss_spike, non_finite, stalled,\n"
     "slow_steps, restarts or quota_nearly_spent. URL is http or https, and its host\n"
     "must resolve to public addresses; --allow-private (platform admins) waives that\n"
     "for a receiver inside the cluster's network. Each delivery carries\n"
     "X-Trainyard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">,\n"
     "keyed with the secret, which is never shown again. Tenant owners, platform admins.\n",
     webhook_create, NULL, NULL},
    {"list", "TENANT", "list TENANT's webhooks (never their secrets)", NULL, NULL, NULL,
     CMD_LIST(ROUTE_TENANT_WEBHOOKS, 1, webhook_cols, false)},
    {"delete", "TENANT WEBHOOK_ID", "stop sending alerts to a webhook (its deliveries stay)", NULL,
     NULL, NULL, CMD_DO("DELETE", ROUTE_TENANT_WEBHOOK, 2, "webhook deleted", webhook_cols)},
    {"deliveries", "TENANT WEBHOOK_ID",
     "list a webhook's newest 200 deliveries: state, tries, last answer", NULL, NULL, NULL,
     CMD_LIST(ROUTE_WEBHOOK_DELIVERIES, 2, delivery_cols, false)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
