/*
 * jsonx.h - strict JSON intake and field validation on top of jansson.
 *
 * jsonx_parse() is the only way untrusted JSON enters trainyard: it rejects
 * duplicate keys, bounds nesting depth before jansson recurses, and bounds
 * every array's length. Validation helpers collect per-field problems as
 * {"pointer", "code", "message"} rows (RFC 6901 pointers) in a verrs list,
 * so one response reports every offending field at once.
 */
#ifndef TY_JSONX_H
#define TY_JSONX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct jsonx_limits {
	int max_depth; /* objects/arrays nested deeper than this are refused */
	int max_array; /* arrays longer than this are refused */
} jsonx_limits;

/*
 * Parse len bytes of buf.
 * OUT: *out, a new reference owned by the caller, on success.
 * RET: 0, or -ERR_INVALID_JSON, -ERR_DUPLICATE_KEY, -ERR_JSON_TOO_DEEP,
 *      -ERR_JSON_TOO_LARGE with a message in msg.
 */
int jsonx_parse(const char *buf, size_t len, const jsonx_limits *lim, json_t **out, char *msg,
                size_t msglen);

/* A list of validation problems. list is never NULL between init and release. */
typedef struct verrs {
	json_t *list;
} verrs;

void verrs_init(verrs *v);
void verrs_release(verrs *v);
size_t verrs_count(const verrs *v);
void verrs_add(verrs *v, const char *pointer, err_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Write base + "/" + key (escaped per RFC 6901) into out. */
void jsonx_pointer(char *out, size_t outlen, const char *base, const char *key);

/*
 * Add an unknown_field row for every member of obj not named in allowed
 * (NULL-terminated). RET: the number of unknown members.
 */
int jsonx_only_fields(const json_t *obj, const char *base, const char *const *allowed, verrs *v);

/*
 * Field readers. Each looks up key in obj (base is obj's pointer). A missing
 * field leaves *out at the caller's default and, when required, adds a
 * "required" row. A wrong type or a value outside [min, max] adds a row.
 * RET: 1 when the field was present and valid, 0 when absent (and not
 * required), -1 when a row was added to v (not an err_code: v says why).
 */
int jsonx_get_int(const json_t *obj, const char *base, const char *key, bool required, int64_t min,
                  int64_t max, int64_t *out, verrs *v);
int jsonx_get_num(const json_t *obj, const char *base, const char *key, bool required, double min,
                  double max, double *out, verrs *v);
int jsonx_get_str(const json_t *obj, const char *base, const char *key, bool required,
                  size_t maxlen, const char **out, verrs *v);
int jsonx_get_obj(const json_t *obj, const char *base, const char *key, bool required,
                  const json_t **out, verrs *v);
int jsonx_get_bool(const json_t *obj, const char *base, const char *key, bool required, bool *out,
                   verrs *v);

/* RET: index of s in the NULL-terminated list, or -1. */
int jsonx_enum_index(const char *s, const char *const *names);

/*
 * RET: true when s is a lower-case name: [a-z][a-z0-9-]{1,62}, no trailing
 * '-', and not shaped like a UUID (so a path segment is never ambiguous).
 */
bool jsonx_is_name(const char *s);

/* RET: true when s is a canonical 36-character UUID (any hex case). */
bool jsonx_is_uuid(const char *s);

#endif
