/*
 * url.h - building request URLs: path templates with escaped segments,
 * query strings and the join with the base URL.
 *
 * Every piece of user input that goes into a URL passes url_escape()
 * (curl_easy_escape: everything but unreserved characters is %XX), so a
 * name can never add a path segment or a query parameter.
 * Returned strings are malloc'd and owned by the caller (free()).
 */
#ifndef YARDCTL_URL_H
#define YARDCTL_URL_H

#include <stddef.h>

#include "sbuf.h"

/* Longest URL yardctl builds. */
#define URL_MAX 8192

/* RET: s percent-escaped (caller frees), or NULL when out of memory. */
char *url_escape(const char *s);

/*
 * Expand tmpl, replacing the i-th "{}" with segs[i] escaped. RET: the path,
 * or NULL when the count of "{}" is not nseg, a segment is empty, or out
 * of memory.
 */
char *url_path(const char *tmpl, const char *const *segs, size_t nseg);

/* url_path() with the segments listed inline: URL_PATH("/v1/jobs/{}", id). */
#define URL_PATH(tmpl, ...)                                                                        \
	url_path((tmpl), (const char *const[]){__VA_ARGS__},                                       \
	         sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* A path without segments, as a malloc'd copy like url_path()'s. */
#define URL_FIXED(tmpl) url_path((tmpl), NULL, 0)

/*
 * Append "?key=value" or "&key=value", both escaped; a NULL value adds
 * nothing. RET 0, or -1 when url would pass its cap or memory runs out (sbuf_add).
 */
int url_query_add(sbuf *url, const char *key, const char *value);

/* RET: base (trailing slashes dropped) followed by path, or NULL. */
char *url_join(const char *base, const char *path);

#endif
