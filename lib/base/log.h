/*
 * log.h - structured JSON logs, one object per line on stderr.
 *
 * Every line carries "ts", "level" and "msg"; callers add context fields
 * (request_id, tenant, user, job, route, status, ...). Secrets never go in:
 * there is no field for a token or a password, and callers pass ids only.
 */
#ifndef TY_LOG_H
#define TY_LOG_H

#include <jansson.h>

typedef enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;

/* RET 0 and sets *out, or -1 for an unknown name. */
int log_level_parse(const char *name, log_level *out);
void log_set_level(log_level lvl);
int log_enabled(log_level lvl);

/* Emit msg with the members of fields (stolen; may be NULL). */
void log_event(log_level lvl, const char *msg, json_t *fields);

/* Emit a message formatted with printf rules and no extra fields. */
void log_printf(log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
