/*
 * membuf.h - an in-memory sink and source for encrypted objects
 * (crypt_sink_fn and crypt_source_fn, crypt.h), shared by the crypt unit
 * tests, the crypt fuzz target and bench/crypto.
 *
 * The sink appends at len: membuf_sink within cap bytes of p (a full
 * buffer fails), membuf_grow_sink growing p with realloc (p NULL or
 * malloc'd; the caller frees it). membuf_source reads from pos up to len.
 */
#ifndef TY_MEMBUF_H
#define TY_MEMBUF_H

#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct membuf {
	unsigned char *p;
	size_t len, cap, pos;
} membuf;

static inline int membuf_sink(void *arg, const void *buf, size_t n)
{
	membuf *m = arg;
	if (m->len + n > m->cap)
		return -ERR_INTERNAL;
	memcpy(m->p + m->len, buf, n);
	m->len += n;
	return 0;
}

static inline int membuf_grow_sink(void *arg, const void *buf, size_t n)
{
	membuf *m = arg;
	if (m->len + n > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;
		while (cap < m->len + n)
			cap *= 2;
		unsigned char *p = realloc(m->p, cap);
		if (p == NULL)
			return -ERR_INTERNAL;
		m->p = p;
		m->cap = cap;
	}
	return membuf_sink(m, buf, n);
}

static inline int membuf_source(void *arg, void *buf, size_t n, size_t *got)
{
	membuf *m = arg;
	size_t left = m->len - m->pos;
	*got = n < left ? n : left;
	memcpy(buf, m->p + m->pos, *got);
	m->pos += *got;
	return 0;
}

#endif
