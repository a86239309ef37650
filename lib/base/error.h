/*
 * error.h - trainyard's error codes, generated from errors.def.
 *
 * One space: functions across the project that fail with a code return 0
 * on success or a negative err_code (-ERR_X), and no module keeps a code
 * space of its own beside it. The checkpoint store (ckpt.h, ckpt_store.h) and
 * the trainer's data loader (trainer/data.h) answer -ERR_X like everyone
 * else, so a code passed up through several layers still means one thing.
 * Out of memory is -ERR_INTERNAL. err_info() maps a code to its stable
 * string, HTTP status and description; callers never spell a code string or
 * status by hand.
 *
 * -1 is not an err_code (it is -ERR_BAD_REQUEST). A function that returns
 * -1 instead says so in its header together with where the reason goes (a
 * message in err, errno, a log line, an answer already sent), never returns
 * both -1 and -ERR_X, and its callers test `< 0` and never pass that -1 on
 * as an err_code (to api_fail(), err_info() or their own callers). The
 * trainer's communication and optimizer codes (COMM_ERR_*, DP_ERR_*, from
 * -201 down) lie outside the table; trainer.c asserts they stay apart.
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

/* REQ: a whole request; FIELD: one field of validation_failed; RUN: no API answer (errors.def). */
typedef enum err_kind { ERR_KIND_REQ, ERR_KIND_FIELD, ERR_KIND_RUN } err_kind;

typedef struct err_info_t {
	const char *code; /* stable machine code, e.g. "job_not_found" */
	int status;       /* HTTP status */
	err_kind kind;    /* whole request, one field, or a program's own work */
	const char *doc;  /* one-line description for docs and "title" */
} err_info_t;

/* RET: the row for e; an out-of-range e yields the internal_error row. */
const err_info_t *err_info(err_code e);

/* RET: the code whose string is s (>= 0), or -1 when none matches. */
int err_from_string(const char *s);

/*
 * Format a failure's message into the caller's err buffer of errlen bytes,
 * the (err, errlen) convention of the library's functions; err NULL or
 * errlen 0 writes nothing.
 */
void err_printf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
