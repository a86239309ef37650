/*
 * cmd_dataset.c - yardctl dataset create | list | show | upload | exempt |
 * grant | grants | approve | revoke | shared: a tenant's dataset registry,
 * and sharing datasets with other tenants (docs/datasets.md).
 *
 * An upload streams its file to the API as it reads it (http_upload()):
 * the file is never held in memory whole, whatever its size.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "http.h"
#include "routes.h"
#include "sbuf.h"
#include "url.h"

static const out_col dataset_fields[] = {
    {"id", "id"},
    {"name", "name"},
    {"description", "description"},
    {"classification", "classification"},
    {"mask_patterns", "mask_patterns"},
    {"latest_version", "latest_version"},
    {"masking_exempt", "masking_exempt"},
    {"exempt_reason", "exempt_reason"},
    {"exempt_at", "exempt_at"},
    {"created_at", "created_at"},
    {NULL, NULL},
};

static const out_col dataset_cols[] = {
    {"NAME", "name"},
    {"CLASSIFICATION", "classification"},
    {"LATEST_VERSION", "latest_version"},
    {"MASKING_EXEMPT", "masking_exempt"},
    {"CREATED", "created_at"},
    {NULL, NULL},
};

static const out_col version_fields[] = {
    {"id", "id"},
    {"version", "version"},
    {"format", "format"},
    {"shards", "shards"},
    {"tokens", "tokens"},
    {"max_token", "max_token"},
    {"bytes", "bytes"},
    {"sha256", "sha256"},
    {"unmasked", "unmasked"},
    {"created_at", "created_at"},
    {NULL, NULL},
};

static const out_col version_cols[] = {
    {"VERSION", "version"},    {"FORMAT", "format"}, {"SHARDS", "shards"},
    {"TOKENS", "tokens"},      {"SHA256", "sha256"}, {"UNMASKED", "unmasked"},
    {"CREATED", "created_at"}, {NULL, NULL},
};

enum { OPT_CLASSIFICATION, OPT_DESCRIPTION, OPT_MASK_PATTERN };
static const opt_spec create_opts[] = {
    {"classification", true, true},
    {"description", true, false},
    {"mask-pattern", true, false}, /* may repeat: every value is in given_val[] */
    {NULL, false, false},
};

/*
 * The mask_patterns array from every --mask-pattern NAME=REGEX, split at
 * the first '='. OUT: *patterns (NULL when none was given). RET 0, or -1
 * with msg.
 */
static int mask_patterns_build(const opt_result *o, json_t **patterns, char *msg, size_t msglen)
{
	json_t *a = NULL;
	*patterns = NULL;
	for (int i = 0; i < o->ngiven; i++) {
		size_t name_len;
		const char *regex, *arg = o->given_val[i];
		if (o->given_opt[i] != OPT_MASK_PATTERN)
			continue;
		if (args_pair(arg, &name_len, &regex) || !*regex) {
			snprintf(msg, msglen,
			         "--mask-pattern takes NAME=REGEX, both not empty: \"%s\"", arg);
			goto fail;
		}
		json_t *name = json_stringn(arg, name_len), *re = json_string(regex);
		if (!name || !re) {
			json_decref(name);
			json_decref(re);
			snprintf(msg, msglen, "--mask-pattern \"%s\" is not valid UTF-8", arg);
			goto fail;
		}
		if (!a)
			a = json_array();
		json_array_append_new(a, json_pack("{s:o, s:o}", "name", name, "regex", re));
	}
	*patterns = a;
	return 0;
fail:
	json_decref(a);
	return -1;
}

static int dataset_create(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	json_t *patterns;
	char msg[512];
	int rc = args_parse_cmd(ctx, self, create_opts, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!cmd_classification_ok(o.val[OPT_CLASSIFICATION]))
		return args_usage_error(
		    ctx, self, "--classification is public, internal, confidential or restricted");
	if (mask_patterns_build(&o, &patterns, msg, sizeof(msg)))
		return args_usage_error(ctx, self, msg);
	json_t *body = json_object();
	if (cmd_set_str(body, "name", o.pos[1]) ||
	    cmd_set_str(body, "description", o.val[OPT_DESCRIPTION]) ||
	    cmd_set_str(body, "classification", o.val[OPT_CLASSIFICATION])) {
		rc = CLI_USAGE;
	} else {
		if (patterns)
			json_object_set(body, "mask_patterns", patterns);
		rc = cmd_show(ctx, "POST", URL_PATH(ROUTE_TENANT_DATASETS, o.pos[0]), body,
		              dataset_fields);
	}
	json_decref(patterns);
	json_decref(body);
	return rc;
}

static int dataset_show(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_show_versions(ctx, URL_PATH(ROUTE_TENANT_DATASET, o.pos[0], o.pos[1]),
	                         dataset_fields, version_cols);
}

/* Print a new version: its fields and, for masked text, the replacements per pattern. */
static int version_print(const cli_ctx *ctx, const json_t *v)
{
	int rc = output_object(ctx, v, version_fields);
	const json_t *counts = out_lookup(v, "masking.counts");
	if (rc != CLI_OK || ctx->format != CLI_FMT_TABLE || json_object_size(counts) == 0)
		return rc;
	static const char *const headers[] = {"PATTERN", "MASKED"};
	table t;
	const char *name;
	const json_t *n;
	rc = table_init(&t, 2, headers);
	json_object_foreach ((json_t *)counts, name, n) {
		char *cell = out_cell(n);
		const char *row[] = {name, cell};
		if (rc == 0)
			rc = cell ? table_add(&t, row) : -1;
		free(cell);
	}
	if (rc == 0) {
		printf("\n");
		table_print(&t, stdout);
	}
	table_release(&t);
	if (rc)
		fprintf(stderr, "yardctl: out of memory\n");
	return rc ? CLI_SERVER : CLI_OK;
}

enum { OPT_FORMAT, OPT_NO_MASK };
static const opt_spec upload_opts[] = {
    {"format", true, true},
    {"no-mask", false, false},
    {NULL, false, false},
};

/* The versions path with its query. RET: the path (caller frees), or NULL. */
static char *upload_path(const opt_result *o, bool text)
{
	char *base = URL_PATH(ROUTE_DATASET_VERSIONS, o->pos[0], o->pos[1]);
	sbuf b;
	if (!base)
		return NULL;
	sbuf_init(&b, URL_MAX);
	int rc = sbuf_adds(&b, base) || url_query_add(&b, "format", text ? "text" : "tokens") ||
	         url_query_add(&b, "mask", o->set[OPT_NO_MASK] ? "off" : NULL);
	free(base);
	if (rc) {
		sbuf_release(&b);
		return NULL;
	}
	return sbuf_detach(&b);
}

static int dataset_upload(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	FILE *f;
	long long size;
	json_t *version = NULL;
	int rc = args_parse_cmd(ctx, self, upload_opts, 3, 3, argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *format = o.val[OPT_FORMAT];
	bool text = strcmp(format, "text") == 0;
	if (!text && strcmp(format, "tokens") != 0)
		return args_usage_error(ctx, self, "--format is tokens or text");
	if (o.set[OPT_NO_MASK] && !text)
		return args_usage_error(
		    ctx, self, "--no-mask is for --format text (token shards are never masked)");
	char *path = upload_path(&o, text);
	if (!path)
		return cmd_bad_path();
	rc = cmd_upload_open(o.pos[2], &f, &size);
	if (rc == CLI_OK) {
		rc = http_upload(ctx, path, text ? "text/plain" : "application/octet-stream", f,
		                 size, &version);
		if (f != stdin)
			fclose(f);
	}
	free(path);
	if (rc == CLI_OK)
		rc = version_print(ctx, version);
	json_decref(version);
	return rc;
}

enum { OPT_REASON };
static const opt_spec exempt_opts[] = {
    {"reason", true, true},
    {NULL, false, false},
};

static int dataset_exempt(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, exempt_opts, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!*o.val[OPT_REASON])
		return args_usage_error(ctx, self, "--reason must not be empty");
	json_t *body = json_object();
	if (cmd_set_str(body, "reason", o.val[OPT_REASON]))
		rc = CLI_USAGE;
	else
		rc = cmd_show(ctx, "PUT", URL_PATH(ROUTE_DATASET_EXEMPTION, o.pos[0], o.pos[1]),
		              body, dataset_fields);
	json_decref(body);
	return rc;
}

static const out_col grant_fields[] = {
    {"id", "id"},
    {"dataset", "dataset"},
    {"tenant", "tenant"},
    {"classification", "classification"},
    {"state", "state"},
    {"created_at", "created_at"},
    {"expires_at", "expires_at"},
    {"approved_at", "approved_at"},
    {"revoked_at", "revoked_at"},
    {NULL, NULL},
};

static int dataset_grant(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	return cmd_registry_grant(ctx, self, argc, argv, ROUTE_DATASET_GRANTS, grant_fields);
}

const cli_command dataset_commands[] = {
    {"create",
     "TENANT NAME --classification C [--description TEXT]\n"
     "      [--mask-pattern NAME=REGEX ...]",
     "register a dataset in TENANT",
     "C is public, internal, confidential or restricted. NAME is 1 to 63 of a-z 0-9 . _ -,\n"
     "starting with a letter or digit. --mask-pattern (repeatable, at most 16) adds a\n"
     "PCRE2 pattern masked in text uploads after the built-in ones (e-mail, card, ipv6,\n"
     "ipv4, phone) as [NAME]; it is split at the first '='.\n",
     dataset_create, NULL, NULL},
    {"list", "TENANT", "list TENANT's datasets", NULL, NULL, NULL,
     CMD_LIST(ROUTE_TENANT_DATASETS, 1, dataset_cols, true)},
    {"show", "TENANT NAME", "show a dataset and its versions", NULL, dataset_show, NULL, NULL},
    {"upload", "TENANT NAME FILE --format tokens|text [--no-mask]",
     "upload FILE ('-': stdin) as the dataset's next version",
     "tokens: token shards laid end to end (cat train_*.bin), sent as\n"
     "application/octet-stream. text: raw text, sent as text/plain, masked by the server\n"
     "line by line before it is tokenized and stored; --no-mask stores it as it is\n"
     "(refused for a restricted dataset without an exemption). The file is streamed as\n"
     "it is read, with no time limit while bytes move; stdin goes chunked.\n",
     dataset_upload, NULL, NULL},
    {"exempt", "TENANT NAME --reason TEXT",
     "let a restricted dataset take unmasked data (platform admins)",
     "The exemption and its reason are audited and shown on the dataset.\n", dataset_exempt, NULL,
     NULL},
    {"grant", "TENANT NAME GRANTEE --expires TIME",
     "let GRANTEE's jobs read the dataset until TIME",
     "TIME is RFC 3339, within 366 days. A confidential or restricted dataset's grant waits\n"
     "for a platform admin's approval. GRANTEE's jobs name it as TENANT/NAME[@VERSION].\n"
     "Tenant owners grant.\n",
     dataset_grant, NULL, NULL},
    {"grants", "TENANT NAME", "list a dataset's grants", NULL, NULL, NULL,
     CMD_LIST(ROUTE_DATASET_GRANTS, 2, cmd_grant_cols, true)},
    {"approve", "TENANT NAME GRANT_ID", "put a pending grant in force (platform admins)", NULL,
     NULL, NULL, CMD_SHOW("POST", ROUTE_DATASET_GRANT_OK, 3, grant_fields)},
    {"revoke", "TENANT NAME GRANT_ID",
     "revoke a grant: no attempt that starts after it reads the dataset", NULL, NULL, NULL,
     CMD_DO("DELETE", ROUTE_DATASET_GRANT, 3, "revoked", grant_fields)},
    {"shared", "TENANT", "list the datasets other tenants granted to TENANT", NULL, NULL, NULL,
     CMD_LIST(ROUTE_SHARED_DATASETS, 1, cmd_shared_cols, true)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
