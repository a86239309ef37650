/*
 * errbuf.h - writing a failure's message into a caller's (err, errlen)
 * buffer, the convention of the trainer's library functions.
 */
#ifndef TY_ERRBUF_H
#define TY_ERRBUF_H

#include <stddef.h>

/* Format into err (errlen bytes); err NULL or errlen 0 writes nothing. */
void train_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
