/*
 * sbuf.h - a growable, NUL-terminated byte buffer with a size cap.
 *
 * Invariants: between sbuf_init() and sbuf_release(), buf is never NULL
 * and buf[len] == '\0'; len never exceeds max. An append that would pass
 * max, or that cannot allocate, fails and leaves the buffer as it was.
 * The buffer owns buf; sbuf_detach() hands it to the caller (free()).
 */
#ifndef YARDCTL_SBUF_H
#define YARDCTL_SBUF_H

#include <stddef.h>

typedef struct sbuf {
	char *buf;
	size_t len;
	size_t cap; /* allocated bytes, 0 while buf is the shared empty string */
	size_t max; /* largest len allowed */
} sbuf;

void sbuf_init(sbuf *b, size_t max);
/* Free the memory, after overwriting it when wipe is set (secrets). */
void sbuf_release(sbuf *b);
void sbuf_release_wipe(sbuf *b);

/* RET 0, or -1 (over max or out of memory). */
int sbuf_add(sbuf *b, const void *data, size_t n);
int sbuf_adds(sbuf *b, const char *s);
int sbuf_addf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* RET: the contents as a malloc'd string owned by the caller (NULL when out of memory); b is empty.
 */
char *sbuf_detach(sbuf *b);

#endif
