/*
 * main.c - yardctl, the trainyard admin CLI: global flags, then dispatch.
 *
 * Commands live in cmd_*.c, the HTTP call in http.c, printing in
 * output.c; cli/README.md describes every command and exit status.
 */
#include "cli.h"

int main(int argc, char **argv)
{
	cli_ctx ctx;
	int rc = cli_ctx_init(&ctx, &argc, argv);
	if (rc == 0)
		rc = cli_main(&ctx, argc - 1, argv + 1);
	cli_ctx_release(&ctx);
	return rc;
}
