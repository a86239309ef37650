/*
 * cmd_code.c - yardctl code create | list | show | upload | grant | grants |
 * approve | revoke | shared: a tenant's code bundles, their versions, and
 * other tenants' leave to run them (docs/own-code.md).
 *
 * An upload streams the archive to the API as it reads it (http_upload()),
 * as a dataset upload does; the server checks every member.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "http.h"
#include "routes.h"
#include "url.h"

static const out_col bundle_fields[] = {
    {"id", "id"},
    {"name", "name"},
    {"description", "description"},
    {"classification", "classification"},
    {"latest_version", "latest_version"},
    {"created_at", "created_at"},
    {NULL, NULL},
};

static const out_col bundle_cols[] = {
    {"NAME", "name"},
    {"CLASSIFICATION", "classification"},
    {"LATEST_VERSION", "latest_version"},
    {"CREATED", "created_at"},
    {NULL, NULL},
};

static const out_col version_fields[] = {
    {"id", "id"},
    {"version", "version"},
    {"files", "files"},
    {"dirs", "dirs"},
    {"symlinks", "symlinks"},
    {"hardlinks", "hardlinks"},
    {"bytes", "bytes"},
    {"archive_bytes", "archive_bytes"},
    {"sealed_bytes", "sealed_bytes"},
    {"sha256", "sha256"},
    {"created_at", "created_at"},
    {NULL, NULL},
};

static const out_col version_cols[] = {
    {"VERSION", "version"}, {"FILES", "files"},        {"BYTES", "bytes"},
    {"SHA256", "sha256"},   {"CREATED", "created_at"}, {NULL, NULL},
};

enum { OPT_CLASSIFICATION, OPT_DESCRIPTION };
static const opt_spec create_opts[] = {
    {"classification", true, true},
    {"description", true, false},
    {NULL, false, false},
};

static int code_create(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, create_opts, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!cmd_classification_ok(o.val[OPT_CLASSIFICATION]))
		return args_usage_error(
		    ctx, self, "--classification is public, internal, confidential or restricted");
	json_t *body = json_object();
	if (cmd_set_str(body, "name", o.pos[1]) ||
	    cmd_set_str(body, "description", o.val[OPT_DESCRIPTION]) ||
	    cmd_set_str(body, "classification", o.val[OPT_CLASSIFICATION]))
		rc = CLI_USAGE;
	else
		rc = cmd_show(ctx, "POST", URL_PATH(ROUTE_TENANT_CODES, o.pos[0]), body,
		              bundle_fields);
	json_decref(body);
	return rc;
}

static int code_show(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 2, 2, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_show_versions(ctx, URL_PATH(ROUTE_TENANT_CODE, o.pos[0], o.pos[1]),
	                         bundle_fields, version_cols);
}

/* A gzip file begins with 1f 8b; anything else goes as a plain tar. */
static bool gzipped(const char *file)
{
	if (strcmp(file, "-") == 0)
		return false;
	FILE *f = fopen(file, "rb");
	unsigned char m[2] = {0, 0};
	bool gz = f && fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b;
	if (f)
		fclose(f);
	return gz;
}

enum { OPT_GZIP };
static const opt_spec upload_opts[] = {
    {"gzip", false, false},
    {NULL, false, false},
};

static int code_upload(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	FILE *f;
	long long size;
	json_t *version = NULL;
	int rc = args_parse_cmd(ctx, self, upload_opts, 3, 3, argc, argv, &o);
	if (rc >= 0)
		return rc;
	bool gz = o.set[OPT_GZIP] || gzipped(o.pos[2]);
	char *path = URL_PATH(ROUTE_CODE_VERSIONS, o.pos[0], o.pos[1]);
	if (!path)
		return cmd_bad_path();
	rc = cmd_upload_open(o.pos[2], &f, &size);
	if (rc == CLI_OK) {
		rc = http_upload(ctx, path, gz ? "application/gzip" : "application/x-tar", f, size,
		                 &version);
		if (f != stdin)
			fclose(f);
	}
	free(path);
	if (rc == CLI_OK)
		rc = output_object(ctx, version, version_fields);
	json_decref(version);
	return rc;
}

static const out_col grant_fields[] = {
    {"id", "id"},
    {"code", "code"},
    {"tenant", "tenant"},
    {"classification", "classification"},
    {"state", "state"},
    {"created_at", "created_at"},
    {"expires_at", "expires_at"},
    {"approved_at", "approved_at"},
    {"revoked_at", "revoked_at"},
    {NULL, NULL},
};

static int code_grant(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	return cmd_registry_grant(ctx, self, argc, argv, ROUTE_CODE_GRANTS, grant_fields);
}

const cli_command code_commands[] = {
    {"create", "TENANT NAME --classification C [--description TEXT]",
     "register a code bundle in TENANT",
     "C is public, internal, confidential or restricted. NAME is 1 to 63 of a-z 0-9 . _ -,\n"
     "starting with a letter or digit.\n",
     code_create, NULL, NULL},
    {"list", "TENANT", "list TENANT's code bundles", NULL, NULL, NULL,
     CMD_LIST(ROUTE_TENANT_CODES, 1, bundle_cols, true)},
    {"show", "TENANT NAME", "show a code bundle and its versions", NULL, code_show, NULL, NULL},
    {"upload", "TENANT NAME FILE [--gzip]",
     "upload the tar archive FILE ('-': stdin) as the bundle's next version",
     "Make one with: tar -czf code.tgz -C DIR . A file that begins as gzip does (or any,\n"
     "with --gzip) goes as application/gzip, else as application/x-tar. The server\n"
     "checks every member (docs/own-code.md) before it keeps the version; the file is\n"
     "streamed as it is read, stdin chunked.\n",
     code_upload, NULL, NULL},
    {"grant", "TENANT NAME GRANTEE --expires TIME",
     "let GRANTEE's command jobs run the bundle until TIME",
     "TIME is RFC 3339, within 366 days. A confidential or restricted bundle's grant waits\n"
     "for a platform admin's approval. GRANTEE's jobs name it as TENANT/NAME[@VERSION].\n"
     "Tenant owners grant.\n",
     code_grant, NULL, NULL},
    {"grants", "TENANT NAME", "list a code bundle's grants", NULL, NULL, NULL,
     CMD_LIST(ROUTE_CODE_GRANTS, 2, cmd_grant_cols, true)},
    {"approve", "TENANT NAME GRANT_ID", "put a pending grant in force (platform admins)", NULL,
     NULL, NULL, CMD_SHOW("POST", ROUTE_CODE_GRANT_OK, 3, grant_fields)},
    {"revoke", "TENANT NAME GRANT_ID",
     "revoke a grant: no attempt that starts after it runs the bundle", NULL, NULL, NULL,
     CMD_DO("DELETE", ROUTE_CODE_GRANT, 3, "revoked", grant_fields)},
    {"shared", "TENANT", "list the code bundles other tenants granted to TENANT", NULL, NULL, NULL,
     CMD_LIST(ROUTE_SHARED_CODE, 1, cmd_shared_cols, true)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
