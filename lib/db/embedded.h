/*
 * embedded.h - files compiled into every binary (migrations, OpenAPI).
 *
 * The table is generated at build time by tools/embed.c from the migrations/ SQL files
 * and api/openapi.json, terminated by a row whose path is NULL.
 */
#ifndef TY_EMBEDDED_H
#define TY_EMBEDDED_H

#include <stddef.h>

typedef struct embedded_file {
	const char *path; /* as in the source tree, e.g. "migrations/0001_init.sql" */
	const char *data; /* NUL-terminated */
	size_t len;       /* bytes, without the terminating NUL */
} embedded_file;

extern const embedded_file embedded_files[];

/* RET: the row for path, or NULL. */
const embedded_file *embedded_find(const char *path);

#endif
