/*
 * cmd.h - the steps most commands are made of: call a route, then show
 * the answer as an object or a list.
 *
 * The path argument of these helpers is consumed: they free it. A NULL
 * path (URL_PATH() refused an empty argument, or ran out of memory) is
 * reported as a usage error, so a command can pass URL_PATH() inline.
 */
#ifndef YARDCTL_CMD_H
#define YARDCTL_CMD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "args.h"
#include "cli.h"
#include "output.h"

/* RET: CLI_USAGE after saying a path could not be built. */
int cmd_bad_path(void);

/*
 * Check the page size s of a list (--limit): 1 to ctx->page_max, the API's
 * TRAINYARD_PAGE_MAX. OUT: *limit, or msg saying the range. RET 0 or -1.
 */
int cmd_limit(const cli_ctx *ctx, const char *s, long long *limit, char *msg, size_t msglen);

/* RET: true for a classification of data or code: public, internal, confidential, restricted. */
bool cmd_classification_ok(const char *s);

/*
 * Open the file to upload ("-": stdin). OUT: *f, *size (bytes of a regular
 * file; -1 for stdin, a pipe, a device, or a file that says it is empty, as
 * /proc's do: sent chunked). RET: CLI_OK, or CLI_USAGE after saying why.
 */
int cmd_upload_open(const char *file, FILE **f, long long *size);

/*
 * Set obj[key] to the string val (NULL: leave it out). RET 0, or -1 after
 * saying val is not UTF-8 (a usage error for the caller to return).
 */
int cmd_set_str(json_t *obj, const char *key, const char *val);

/* Overwrite the string obj[key] in place (a secret about to be freed). */
void cmd_wipe_str(json_t *obj, const char *key);

/* Send method path with body (borrowed, may be NULL); show the answer with fields. RET: exit
 * status. */
int cmd_show(const cli_ctx *ctx, const char *method, char *path, const json_t *body,
             const out_col *fields);

/*
 * GET path (freed here; NULL: a path that could not be built) of a
 * registry entry with "versions" (a dataset, a code bundle): its fields,
 * then its versions as a table with cols ("no versions yet" when none);
 * -o json prints the whole answer. RET: exit status.
 */
int cmd_show_versions(const cli_ctx *ctx, char *path, const out_col *fields, const out_col *cols);

/* Read the list at path (every page when all); show it with cols. RET: exit status. */
int cmd_list(const cli_ctx *ctx, char *path, bool all, const out_col *cols);

/*
 * Send method path without a body; for an empty answer print done (table)
 * or nothing (json), else show the answer with fields. RET: exit status.
 */
int cmd_do(const cli_ctx *ctx, const char *method, char *path, const char *done,
           const out_col *fields);

/*
 * Grant another tenant a dataset or a checkpoint (docs/datasets.md): POST
 * path {"tenant", "expires_at"} plus "download" unless download < 0; show
 * the grant with fields. RET: exit status.
 */
int cmd_grant(const cli_ctx *ctx, char *path, const char *tenant, const char *expires, int download,
              const out_col *fields);

/*
 * "yardctl dataset|code grant TENANT NAME GRANTEE --expires TIME": grant
 * GRANTEE an entry of TENANT's registry at route (its grants, two
 * segments), shown with fields. RET: exit status.
 */
int cmd_registry_grant(cli_ctx *ctx, const cli_command *self, int argc, char **argv,
                       const char *route, const out_col *fields);

/* The tables of a registry's grants and of the entries other tenants granted (datasets, code). */
extern const out_col cmd_grant_cols[];
extern const out_col cmd_shared_cols[];

/* The call of a row (cli_command.call; cmd_call() runs it): method route, shown with fields. */
#define CMD_SHOW(method_, route_, npos_, fields_)                                                  \
	(&(const cli_call){.kind = CLI_CALL_SHOW,                                                  \
	                   .method = (method_),                                                    \
	                   .route = (route_),                                                      \
	                   .npos = (npos_),                                                        \
	                   .cols = (fields_)})

/* GET route, its items shown with cols; every page when all_ is true. */
#define CMD_LIST(route_, npos_, cols_, all_)                                                       \
	(&(const cli_call){.kind = CLI_CALL_LIST,                                                  \
	                   .method = "GET",                                                        \
	                   .route = (route_),                                                      \
	                   .npos = (npos_),                                                        \
	                   .cols = (cols_),                                                        \
	                   .all = (all_)})

/* method route; an empty answer prints done_ (table), any other is shown with fields. */
#define CMD_DO(method_, route_, npos_, done_, fields_)                                             \
	(&(const cli_call){.kind = CLI_CALL_DO,                                                    \
	                   .method = (method_),                                                    \
	                   .route = (route_),                                                      \
	                   .npos = (npos_),                                                        \
	                   .cols = (fields_),                                                      \
	                   .done = (done_)})

#endif
