/*
 * page.c - following next_cursor.
 */
#include "page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "sbuf.h"
#include "url.h"

/* RET: the answer's items array, or NULL after saying the answer is no list. */
static json_t *items_of(const json_t *answer)
{
	json_t *items = json_object_get(answer, "items");
	if (!json_is_array(items))
		fprintf(stderr, "yardctl: the server's answer has no \"items\" list\n");
	return items;
}

/* GET path with cursor added. OUT: *page. RET: the exit status. */
static int page_next(const cli_ctx *ctx, const char *path, const char *cursor, json_t **page)
{
	sbuf url;
	sbuf_init(&url, URL_MAX);
	int rc = sbuf_adds(&url, path) || url_query_add(&url, "cursor", cursor);
	if (rc) {
		sbuf_release(&url);
		fprintf(stderr, "yardctl: the next page's URL is too long\n");
		*page = NULL;
		return CLI_SERVER;
	}
	rc = http_json(ctx, "GET", url.buf, NULL, page);
	sbuf_release(&url);
	return rc;
}

/* Append the items of every page after first to first's. RET: the exit status. */
static int page_follow(const cli_ctx *ctx, const char *path, json_t *first)
{
	json_t *all = items_of(first), *page = NULL;
	const char *cursor = json_string_value(json_object_get(first, "next_cursor"));
	int rc = all ? CLI_OK : CLI_SERVER;
	char *cur = cursor ? strdup(cursor) : NULL;
	for (int n = 0; rc == CLI_OK && cur && n < PAGE_MAX_FOLLOW; n++) {
		json_t *items;
		if ((rc = page_next(ctx, path, cur, &page)))
			break;
		if (!(items = items_of(page))) {
			rc = CLI_SERVER;
			break;
		}
		json_array_extend(all, items);
		free(cur);
		cursor = json_string_value(json_object_get(page, "next_cursor"));
		cur = cursor ? strdup(cursor) : NULL;
		json_decref(page);
		page = NULL;
	}
	json_decref(page);
	free(cur);
	if (rc == CLI_OK)
		json_object_set_new(first, "next_cursor", json_null());
	return rc;
}

int page_fetch(const cli_ctx *ctx, const char *path, bool all, json_t **answer)
{
	int rc = http_json(ctx, "GET", path, NULL, answer);
	if (rc == CLI_OK && !items_of(*answer))
		rc = CLI_SERVER;
	if (rc == CLI_OK && all)
		rc = page_follow(ctx, path, *answer);
	if (rc != CLI_OK) {
		json_decref(*answer);
		*answer = NULL;
	}
	return rc;
}

/* GET path, with after=N added unless after < 0. OUT: *page. RET: the exit status. */
static int page_after(const cli_ctx *ctx, const char *path, long long after, json_t **page)
{
	char n[24];
	sbuf url;
	snprintf(n, sizeof(n), "%lld", after);
	sbuf_init(&url, URL_MAX);
	int rc = sbuf_adds(&url, path) || url_query_add(&url, "after", after < 0 ? NULL : n);
	*page = NULL;
	if (rc) {
		sbuf_release(&url);
		fprintf(stderr, "yardctl: the page's URL is too long\n");
		return CLI_SERVER;
	}
	rc = http_json(ctx, "GET", url.buf, NULL, page);
	sbuf_release(&url);
	if (rc == CLI_OK && !items_of(*page))
		rc = CLI_SERVER;
	return rc;
}

/* RET: the key of items' last item, or -1 after saying it has none. */
static long long last_key(const json_t *items, const char *key)
{
	const json_t *v = json_object_get(json_array_get(items, json_array_size(items) - 1), key);
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		return json_integer_value(v);
	fprintf(stderr, "yardctl: the server's last item has no \"%s\" to page by\n", key);
	return -1;
}

int page_fetch_after(const cli_ctx *ctx, const char *path, const char *key, long long after,
                     bool all, json_t **answer)
{
	int rc = page_after(ctx, path, after, answer);
	json_t *items = rc == CLI_OK ? json_object_get(*answer, "items") : NULL;
	for (int n = 0; rc == CLI_OK && all && n < PAGE_MAX_FOLLOW; n++) {
		json_t *page = NULL;
		if (json_array_size(items) == 0)
			break;
		long long last = last_key(items, key);
		if (last < 0 || last <= after) { /* no key, or no progress: the server misbehaves */
			rc = CLI_SERVER;
			break;
		}
		after = last;
		rc = page_after(ctx, path, after, &page);
		json_t *more = rc == CLI_OK ? json_object_get(page, "items") : NULL;
		if (json_array_size(more) == 0) {
			json_decref(page);
			break;
		}
		json_array_extend(items, more);
		json_decref(page);
	}
	if (rc != CLI_OK) {
		json_decref(*answer);
		*answer = NULL;
	}
	return rc;
}
