/*
 * error.c - lookup in the error table generated from errors.def, and
 * messages into callers' err buffers.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define REQ   ERR_KIND_REQ
#define FIELD ERR_KIND_FIELD
#define RUN   ERR_KIND_RUN
static const err_info_t err_table[ERR__COUNT] = {
#define ERR(e, code, status, kind, doc) [ERR_##e] = {code, status, kind, doc},
#include "errors.def"
#undef ERR
};
#undef REQ
#undef FIELD
#undef RUN

const err_info_t *err_info(err_code e)
{
	if ((int)e < 0 || e >= ERR__COUNT)
		return &err_table[ERR_INTERNAL];
	return &err_table[e];
}

int err_from_string(const char *s)
{
	for (int i = 0; i < ERR__COUNT; i++)
		if (strcmp(err_table[i].code, s) == 0)
			return i;
	return -1;
}

void err_printf(char *err, size_t errlen, const char *fmt, ...)
{
	if (err == NULL || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
