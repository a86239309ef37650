/*
 * page.h - reading list routes, one page or all of them.
 *
 * List answers are {"items": [...], "next_cursor": "..." | null}; the next
 * page is the same path with cursor=<next_cursor> added.
 */
#ifndef YARDCTL_PAGE_H
#define YARDCTL_PAGE_H

#include <jansson.h>
#include <stdbool.h>

#include "cli.h"

/* Most pages one command follows, a guard against a server that never stops. */
#define PAGE_MAX_FOLLOW 10000

/*
 * GET path (escaped, may carry a query). With all, follow next_cursor and
 * gather every item into the first answer, whose next_cursor becomes null.
 * OUT: *answer (caller json_decref()s). RET: the exit status.
 */
int page_fetch(const cli_ctx *ctx, const char *path, bool all, json_t **answer);

/*
 * GET path?after=N of a list that pages by an item's integer member key
 * instead of a cursor (a job's metrics, by step); after < 0 asks for the
 * first page. With all, ask again with after= the last item's key until a
 * page comes back empty, gathering every item into the first answer.
 * OUT: *answer (caller json_decref()s). RET: the exit status.
 */
int page_fetch_after(const cli_ctx *ctx, const char *path, const char *key, long long after,
                     bool all, json_t **answer);

#endif
