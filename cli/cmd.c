/*
 * cmd.c - shared command steps.
 */
#include "cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http.h"
#include "page.h"
#include "url.h"

int cmd_bad_path(void)
{
	fprintf(stderr, "yardctl: a name or id is empty or too long\n");
	return CLI_USAGE;
}

int cmd_limit(const cli_ctx *ctx, const char *s, long long *limit, char *msg, size_t msglen)
{
	if (args_int(s, 1, ctx->page_max, limit) == 0)
		return 0;
	snprintf(msg, msglen, "--limit must be a whole number from 1 to %d (TRAINYARD_PAGE_MAX)",
	         ctx->page_max);
	return -1;
}

int cmd_set_str(json_t *obj, const char *key, const char *val)
{
	if (!val)
		return 0;
	if (json_object_set_new(obj, key, json_string(val)) == 0)
		return 0;
	fprintf(stderr, "yardctl: the value for \"%s\" is not valid UTF-8\n", key);
	return -1;
}

void cmd_wipe_str(json_t *obj, const char *key)
{
	/* jansson keeps the string in a buffer of its own; it is writable */
	char *s = (char *)json_string_value(json_object_get(obj, key));
	if (s)
		explicit_bzero(s, strlen(s));
}

int cmd_show(const cli_ctx *ctx, const char *method, char *path, const json_t *body,
             const out_col *fields)
{
	json_t *answer = NULL;
	if (!path)
		return cmd_bad_path();
	int rc = http_json(ctx, method, path, body, &answer);
	free(path);
	if (rc == CLI_OK)
		rc = output_object(ctx, answer, fields);
	json_decref(answer);
	return rc;
}

int cmd_list(const cli_ctx *ctx, char *path, bool all, const out_col *cols)
{
	json_t *answer = NULL;
	if (!path)
		return cmd_bad_path();
	int rc = page_fetch(ctx, path, all, &answer);
	free(path);
	if (rc == CLI_OK)
		rc = output_list(ctx, answer, json_object_get(answer, "items"), cols);
	json_decref(answer);
	return rc;
}

int cmd_do(const cli_ctx *ctx, const char *method, char *path, const char *done,
           const out_col *fields)
{
	json_t *answer = NULL;
	if (!path)
		return cmd_bad_path();
	int rc = http_json(ctx, method, path, NULL, &answer);
	free(path);
	if (rc == CLI_OK && answer)
		rc = output_object(ctx, answer, fields);
	else if (rc == CLI_OK && ctx->format == CLI_FMT_TABLE)
		printf("%s\n", done);
	json_decref(answer);
	return rc;
}

int cmd_grant(const cli_ctx *ctx, char *path, const char *tenant, const char *expires, int download,
              const out_col *fields)
{
	json_t *body = json_object();
	int rc;
	if (cmd_set_str(body, "tenant", tenant) || cmd_set_str(body, "expires_at", expires)) {
		free(path);
		rc = CLI_USAGE;
	} else {
		if (download >= 0)
			json_object_set_new(body, "download", json_boolean(download));
		rc = cmd_show(ctx, "POST", path, body, fields);
	}
	json_decref(body);
	return rc;
}

int cmd_registry_grant(cli_ctx *ctx, const cli_command *self, int argc, char **argv,
                       const char *route, const out_col *fields)
{
	static const opt_spec opts[] = {
	    {"expires", true, true},
	    {NULL, false, false},
	};
	opt_result o;
	int rc = args_parse_cmd(ctx, self, opts, 3, 3, argc, argv, &o);
	if (rc >= 0)
		return rc;
	return cmd_grant(ctx, URL_PATH(route, o.pos[0], o.pos[1]), o.pos[2], o.val[0], -1, fields);
}

const out_col cmd_grant_cols[] = {
    {"ID", "id"}, {"TENANT", "tenant"}, {"STATE", "state"}, {"EXPIRES", "expires_at"}, {NULL, NULL},
};

const out_col cmd_shared_cols[] = {
    {"OWNER", "owner"},
    {"NAME", "name"},
    {"CLASSIFICATION", "classification"},
    {"LATEST_VERSION", "latest_version"},
    {"EXPIRES", "expires_at"},
    {NULL, NULL},
};

int cmd_call(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	const cli_call *call = self->call;
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, call->npos, call->npos, argc, argv, &o);
	if (rc >= 0)
		return rc;
	char *path = url_path(call->route, o.pos, (size_t)o.npos);
	switch (call->kind) {
	case CLI_CALL_LIST:
		return cmd_list(ctx, path, call->all, call->cols);
	case CLI_CALL_DO:
		return cmd_do(ctx, call->method, path, call->done, call->cols);
	case CLI_CALL_SHOW:
		break;
	}
	return cmd_show(ctx, call->method, path, NULL, call->cols);
}

/* The classifications docs/datasets.md names, least sensitive first. */
static const char *const classifications[] = {"public", "internal", "confidential", "restricted"};

bool cmd_classification_ok(const char *s)
{
	for (size_t i = 0; i < sizeof(classifications) / sizeof(classifications[0]); i++)
		if (strcmp(s, classifications[i]) == 0)
			return true;
	return false;
}

/*
 * Open the file to upload ("-": stdin). OUT: *f, *size (bytes of a regular
 * file; -1 for stdin, a pipe, a device, or a file that says it is empty, as
 * /proc's do: sent chunked). RET: CLI_OK, or CLI_USAGE after saying why.
 */
int cmd_upload_open(const char *file, FILE **f, long long *size)
{
	struct stat st;
	*size = -1;
	if (strcmp(file, "-") == 0) {
		*f = stdin;
		return CLI_OK;
	}
	*f = fopen(file, "rb");
	if (!*f || fstat(fileno(*f), &st) != 0) {
		fprintf(stderr, "yardctl: could not open \"%s\": %s\n", file, strerror(errno));
		if (*f)
			fclose(*f);
		return CLI_USAGE;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "yardctl: \"%s\" is a directory\n", file);
		fclose(*f);
		return CLI_USAGE;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0)
		*size = (long long)st.st_size;
	return CLI_OK;
}

int cmd_show_versions(const cli_ctx *ctx, char *path, const out_col *fields, const out_col *cols)
{
	json_t *e = NULL;
	if (!path)
		return cmd_bad_path();
	int rc = http_json(ctx, "GET", path, NULL, &e);
	free(path);
	if (rc == CLI_OK)
		rc = output_object(ctx, e, fields); /* -o json: the whole answer */
	if (rc == CLI_OK && ctx->format == CLI_FMT_TABLE) {
		const json_t *versions = json_object_get(e, "versions");
		printf("\n");
		if (json_array_size(versions) > 0)
			rc = output_list(ctx, e, versions, cols);
		else
			printf("no versions yet\n");
	}
	json_decref(e);
	return rc;
}
