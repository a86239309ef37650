/*
 * url.c - URL building with escaping.
 */
#include "url.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

char *url_escape(const char *s)
{
	/* since curl 7.82 the handle argument is unused */
	char *e = curl_easy_escape(NULL, s, 0);
	if (!e)
		return NULL;
	char *copy = strdup(e);
	curl_free(e);
	return copy;
}

/* Append s escaped. RET 0 or -1. */
static int add_escaped(sbuf *b, const char *s)
{
	char *e = url_escape(s);
	int rc = e ? sbuf_adds(b, e) : -1;
	free(e);
	return rc;
}

char *url_path(const char *tmpl, const char *const *segs, size_t nseg)
{
	sbuf b;
	size_t used = 0;
	const char *p = tmpl;
	sbuf_init(&b, URL_MAX);
	for (const char *hole; (hole = strstr(p, "{}")); p = hole + 2) {
		if (used == nseg || !segs[used] || !*segs[used])
			goto fail;
		if (sbuf_add(&b, p, (size_t)(hole - p)) || add_escaped(&b, segs[used++]))
			goto fail;
	}
	if (used != nseg || sbuf_adds(&b, p))
		goto fail;
	return sbuf_detach(&b);
fail:
	sbuf_release(&b);
	return NULL;
}

int url_query_add(sbuf *url, const char *key, const char *value)
{
	if (!value)
		return 0;
	if (sbuf_adds(url, strchr(url->buf, '?') ? "&" : "?") || add_escaped(url, key) ||
	    sbuf_adds(url, "=") || add_escaped(url, value))
		return -1;
	return 0;
}

char *url_join(const char *base, const char *path)
{
	sbuf b;
	size_t n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	sbuf_init(&b, URL_MAX);
	if (sbuf_add(&b, base, n) || sbuf_adds(&b, path)) {
		sbuf_release(&b);
		return NULL;
	}
	return sbuf_detach(&b);
}
