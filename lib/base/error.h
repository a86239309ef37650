/*
 * error.h - trainyard's error codes, generated from errors.def.
 *
 * Functions across the project return 0 on success or a negative err_code
 * (-ERR_X). err_info() maps a code to its stable string, HTTP status and
 * description; callers never spell a code string or status by hand.
 */
#ifndef TY_ERROR_H
#define TY_ERROR_H

#include <stdbool.h>
#include <stddef.h>

typedef enum err_code {
#define ERR(e, code, status, kind, doc) ERR_##e,
#include "errors.def"
#undef ERR
	ERR__COUNT
} err_code;

typedef enum err_kind { ERR_KIND_REQ, ERR_KIND_FIELD } err_kind;

typedef struct err_info_t {
	const char *code; /* stable machine code, e.g. "job_not_found" */
	int status;       /* HTTP status */
	err_kind kind;    /* whole request or one field */
	const char *doc;  /* one-line description for docs and "title" */
} err_info_t;

/* RET: the row for e; an out-of-range e yields the internal_error row. */
const err_info_t *err_info(err_code e);

/* RET: the code whose string is s, or -1 when none matches. */
int err_from_string(const char *s);

/*
 * Format a failure's message into the caller's err buffer of errlen bytes,
 * the (err, errlen) convention of the library's functions; err NULL or
 * errlen 0 writes nothing.
 */
void err_printf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
