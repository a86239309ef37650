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

#include "args.h"
#include "cli.h"
#include "output.h"

/* RET: CLI_USAGE after saying a path could not be built. */
int cmd_bad_path(void);

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

/* Approve a grant (POST path, its .../approve) or revoke it (DELETE path). RET: exit status. */
int cmd_grant_change(const cli_ctx *ctx, char *path, bool approve, const out_col *fields);

#endif
