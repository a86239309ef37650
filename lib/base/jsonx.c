/*
 * jsonx.c - strict JSON parsing and field validation helpers.
 */
#include "jsonx.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Nesting depth of raw JSON text, counted outside strings; stops past limit. */
static int scan_depth(const char *buf, size_t len, int limit)
{
	int depth = 0, max = 0;
	bool in_str = false, esc = false;
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"')
			in_str = true;
		else if (c == '{' || c == '[') {
			if (++depth > max)
				max = depth;
			if (max > limit)
				return max;
		} else if (c == '}' || c == ']')
			depth--;
	}
	return max;
}

/* RET: true when some array under j is longer than max_array. */
static bool has_long_array(const json_t *j, int max_array)
{
	if (json_is_array(j)) {
		if (json_array_size(j) > (size_t)max_array)
			return true;
		size_t i;
		const json_t *e;
		json_array_foreach (j, i, e)
			if (has_long_array(e, max_array))
				return true;
	} else if (json_is_object(j)) {
		const char *k;
		const json_t *e;
		json_object_foreach ((json_t *)j, k, e)
			if (has_long_array(e, max_array))
				return true;
	}
	return false;
}

int jsonx_parse(const char *buf, size_t len, const jsonx_limits *lim, json_t **out, char *msg,
                size_t msglen)
{
	*out = NULL;
	if (scan_depth(buf, len, lim->max_depth) > lim->max_depth) {
		snprintf(msg, msglen, "body nests deeper than %d levels", lim->max_depth);
		return -ERR_JSON_TOO_DEEP;
	}
	json_error_t jerr;
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (j == NULL) {
		if (json_error_code(&jerr) == json_error_duplicate_key) {
			snprintf(msg, msglen, "duplicate key in body: %s", jerr.text);
			return -ERR_DUPLICATE_KEY;
		}
		snprintf(msg, msglen, "invalid JSON at line %d column %d: %s", jerr.line,
		         jerr.column, jerr.text);
		return -ERR_INVALID_JSON;
	}
	if (has_long_array(j, lim->max_array)) {
		json_decref(j);
		snprintf(msg, msglen, "an array in the body has more than %d elements",
		         lim->max_array);
		return -ERR_JSON_TOO_LARGE;
	}
	*out = j;
	return 0;
}

void verrs_init(verrs *v)
{
	v->list = json_array();
}

void verrs_release(verrs *v)
{
	json_decref(v->list);
	v->list = NULL;
}

size_t verrs_count(const verrs *v)
{
	return json_array_size(v->list);
}

/* Cut a string that truncation may have left ending inside a UTF-8 sequence. */
static void utf8_trim(char *s)
{
	size_t n = strlen(s), i = n;
	while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--; /* continuation bytes */
	if (i == 0)
		return;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

void verrs_add(verrs *v, const char *pointer, err_code code, const char *fmt, ...)
{
	char text[256], ptr[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	snprintf(ptr, sizeof(ptr), "%s", pointer);
	utf8_trim(text);
	utf8_trim(ptr);
	json_t *row = json_pack("{s:s, s:s, s:s}", "pointer", ptr, "code", err_info(code)->code,
	                        "message", text);
	if (!row) /* never lose a row: fall back to text that is plain ASCII */
		row = json_pack("{s:s, s:s, s:s}", "pointer", "", "code", err_info(code)->code,
		                "message", err_info(code)->doc);
	json_array_append_new(v->list, row);
}

void jsonx_pointer(char *out, size_t outlen, const char *base, const char *key)
{
	size_t n = (size_t)snprintf(out, outlen, "%s/", base);
	for (const char *p = key; *p && n + 3 < outlen; p++) {
		if (*p == '~') {
			out[n++] = '~';
			out[n++] = '0';
		} else if (*p == '/') {
			out[n++] = '~';
			out[n++] = '1';
		} else
			out[n++] = *p;
	}
	if (n < outlen)
		out[n] = '\0';
}

int jsonx_enum_index(const char *s, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

int jsonx_only_fields(const json_t *obj, const char *base, const char *const *allowed, verrs *v)
{
	int unknown = 0;
	const char *k;
	const json_t *e;
	json_object_foreach ((json_t *)obj, k, e) {
		if (jsonx_enum_index(k, allowed) >= 0)
			continue;
		char ptr[256];
		jsonx_pointer(ptr, sizeof(ptr), base, k);
		verrs_add(v, ptr, ERR_F_UNKNOWN_FIELD, "unknown field \"%.64s\"", k);
		unknown++;
	}
	return unknown;
}

/* Common start of every reader. RET: member, or NULL (absent: *rc set). */
static const json_t *field(const json_t *obj, const char *base, const char *key, bool required,
                           char *ptr, size_t ptrlen, int *rc, verrs *v)
{
	jsonx_pointer(ptr, ptrlen, base, key);
	const json_t *m = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	if (m == NULL || json_is_null(m)) {
		*rc = 0;
		if (required) {
			verrs_add(v, ptr, ERR_F_REQUIRED, "%s is required", key);
			*rc = -1;
		}
		return NULL;
	}
	return m;
}

int jsonx_get_int(const json_t *obj, const char *base, const char *key, bool required, int64_t min,
                  int64_t max, int64_t *out, verrs *v)
{
	char ptr[256];
	int rc;
	const json_t *m = field(obj, base, key, required, ptr, sizeof(ptr), &rc, v);
	if (!m)
		return rc;
	if (!json_is_integer(m)) {
		verrs_add(v, ptr, ERR_F_WRONG_TYPE, "%s must be an integer", key);
		return -1;
	}
	int64_t x = json_integer_value(m);
	if (x < min || x > max) {
		verrs_add(v, ptr, ERR_F_OUT_OF_RANGE, "%s must be between %lld and %lld", key,
		          (long long)min, (long long)max);
		return -1;
	}
	*out = x;
	return 1;
}

int jsonx_get_num(const json_t *obj, const char *base, const char *key, bool required, double min,
                  double max, double *out, verrs *v)
{
	char ptr[256];
	int rc;
	const json_t *m = field(obj, base, key, required, ptr, sizeof(ptr), &rc, v);
	if (!m)
		return rc;
	if (!json_is_number(m)) {
		verrs_add(v, ptr, ERR_F_WRONG_TYPE, "%s must be a number", key);
		return -1;
	}
	double x = json_number_value(m);
	if (!(x >= min && x <= max)) {
		verrs_add(v, ptr, ERR_F_OUT_OF_RANGE, "%s must be between %g and %g", key, min,
		          max);
		return -1;
	}
	*out = x;
	return 1;
}

int jsonx_get_str(const json_t *obj, const char *base, const char *key, bool required,
                  size_t maxlen, const char **out, verrs *v)
{
	char ptr[256];
	int rc;
	const json_t *m = field(obj, base, key, required, ptr, sizeof(ptr), &rc, v);
	if (!m)
		return rc;
	if (!json_is_string(m)) {
		verrs_add(v, ptr, ERR_F_WRONG_TYPE, "%s must be a string", key);
		return -1;
	}
	size_t n = json_string_length(m);
	if (n == 0 || n > maxlen || strlen(json_string_value(m)) != n) {
		verrs_add(v, ptr, ERR_F_INVALID_VALUE, "%s must be 1 to %zu characters without NUL",
		          key, maxlen);
		return -1;
	}
	*out = json_string_value(m);
	return 1;
}

int jsonx_get_obj(const json_t *obj, const char *base, const char *key, bool required,
                  const json_t **out, verrs *v)
{
	char ptr[256];
	int rc;
	const json_t *m = field(obj, base, key, required, ptr, sizeof(ptr), &rc, v);
	if (!m)
		return rc;
	if (!json_is_object(m)) {
		verrs_add(v, ptr, ERR_F_WRONG_TYPE, "%s must be an object", key);
		return -1;
	}
	*out = m;
	return 1;
}

bool jsonx_is_uuid(const char *s)
{
	for (int i = 0; i < 36; i++) {
		char c = s[i];
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return false;
		} else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		             (c >= 'A' && c <= 'F')))
			return false;
	}
	return s[36] == '\0';
}

bool jsonx_is_name(const char *s)
{
	size_t n = strlen(s);
	if (jsonx_is_uuid(s))
		return false;
	if (n < 2 || n > 63 || s[0] < 'a' || s[0] > 'z' || s[n - 1] == '-')
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
	}
	return true;
}

int jsonx_get_bool(const json_t *obj, const char *base, const char *key, bool required, bool *out,
                   verrs *v)
{
	char ptr[256];
	int rc;
	const json_t *m = field(obj, base, key, required, ptr, sizeof(ptr), &rc, v);
	if (!m)
		return rc;
	if (!json_is_boolean(m)) {
		verrs_add(v, ptr, ERR_F_WRONG_TYPE, "%s must be true or false", key);
		return -1;
	}
	*out = json_is_true(m);
	return 1;
}
