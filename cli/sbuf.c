/*
 * sbuf.c - the capped growable buffer.
 */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char sbuf_empty[1];

void sbuf_init(sbuf *b, size_t max)
{
	b->buf = sbuf_empty;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void sbuf_release(sbuf *b)
{
	if (b->cap)
		free(b->buf);
	sbuf_init(b, b->max);
}

void sbuf_release_wipe(sbuf *b)
{
	if (b->cap)
		explicit_bzero(b->buf, b->cap);
	sbuf_release(b);
}

/* Make room for n more bytes and the NUL. RET 0 or -1. */
static int sbuf_grow(sbuf *b, size_t n)
{
	if (n > b->max - b->len)
		return -1;
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
	char *p = b->cap ? realloc(b->buf, cap) : malloc(cap);
	if (!p)
		return -1;
	if (!b->cap)
		p[0] = '\0';
	b->buf = p;
	b->cap = cap;
	return 0;
}

int sbuf_add(sbuf *b, const void *data, size_t n)
{
	if (sbuf_grow(b, n))
		return -1;
	memcpy(b->buf + b->len, data, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return 0;
}

int sbuf_adds(sbuf *b, const char *s)
{
	return sbuf_add(b, s, strlen(s));
}

int sbuf_addf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || sbuf_grow(b, (size_t)n))
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *sbuf_detach(sbuf *b)
{
	char *s = b->cap ? b->buf : strdup("");
	sbuf_init(b, b->max);
	return s;
}
