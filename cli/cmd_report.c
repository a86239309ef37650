/*
 * cmd_report.c - yardctl report KIND: an evidence report from the audit
 * log (docs/audit.md), streamed to stdout or a file as the API makes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd.h"
#include "http.h"
#include "routes.h"
#include "sbuf.h"
#include "url.h"

enum { OPT_FROM, OPT_TO, OPT_AT, OPT_TENANT, OPT_FORMAT, OPT_OUT };
static const opt_spec report_opts[] = {
    {"from", true, false},   {"to", true, false},  {"at", true, false},  {"tenant", true, false},
    {"format", true, false}, {"out", true, false}, {NULL, false, false},
};

int cmd_report(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, report_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.set[OPT_AT] && o.set[OPT_TO])
		return args_usage_error(ctx, self, "--at and --to name the same time: give one");
	const char *kind = o.pos[0];
	const char *tenant = o.val[OPT_TENANT];
	/* a tenant's report is the tenant's route: its owners and auditors may ask for it */
	char *path =
	    tenant ? URL_PATH(ROUTE_TENANT_REPORT, tenant, kind) : URL_PATH(ROUTE_REPORT, kind);
	if (!path)
		return args_usage_error(ctx, self, "KIND and --tenant must not be empty");
	sbuf url;
	sbuf_init(&url, 4096);
	rc = sbuf_adds(&url, path);
	free(path);
	if (rc == 0)
		rc = url_query_add(&url, "from", o.val[OPT_FROM]);
	if (rc == 0)
		rc = url_query_add(&url, "to", o.set[OPT_AT] ? o.val[OPT_AT] : o.val[OPT_TO]);
	if (rc == 0)
		rc = url_query_add(&url, "format", o.set[OPT_FORMAT] ? o.val[OPT_FORMAT] : "csv");
	if (rc) {
		sbuf_release(&url);
		return CLI_USAGE;
	}
	FILE *out = stdout;
	if (o.set[OPT_OUT] && !(out = fopen(o.val[OPT_OUT], "w"))) {
		fprintf(stderr, "yardctl: could not write %s: %s\n", o.val[OPT_OUT],
		        strerror(errno));
		sbuf_release(&url);
		return CLI_USAGE;
	}
	char *u = sbuf_detach(&url);
	rc = http_stream(ctx, u, out, NULL);
	free(u);
	if (out != stdout && fclose(out) != 0 && rc == CLI_OK) {
		fprintf(stderr, "yardctl: could not write %s: %s\n", o.val[OPT_OUT],
		        strerror(errno));
		rc = CLI_USAGE;
	}
	return rc;
}
