/*
 * router.c - path matching over the route table.
 */
#include "router.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hex.h"

/* RET: true when s is well-formed UTF-8 without control characters. */
static bool utf8_printable(const unsigned char *s)
{
	while (*s) {
		unsigned char c = *s;
		size_t len = c < 0x80             ? 1
		             : (c & 0xE0) == 0xC0 ? 2
		             : (c & 0xF0) == 0xE0 ? 3
		             : (c & 0xF8) == 0xF0 ? 4
		                                  : 0;
		if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7f)) || (len == 2 && c < 0xC2))
			return false;
		for (size_t i = 1; i < len; i++)
			if ((s[i] & 0xC0) != 0x80)
				return false;
		if ((len == 3 && c == 0xE0 && s[1] < 0xA0) ||
		    (len == 3 && c == 0xED && s[1] >= 0xA0) ||
		    (len == 4 && c == 0xF0 && s[1] < 0x90) || (len == 4 && c > 0xF4) ||
		    (len == 4 && c == 0xF4 && s[1] >= 0x90))
			return false; /* overlong, surrogate or beyond U+10FFFF */
		s += len;
	}
	return true;
}

/* Percent-decode seg[0..n) into out. RET 0, or -1 when malformed or too long. */
static int decode_segment(const char *seg, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = seg[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -1;
			int hi = hex_digit(seg[i + 1]), lo = hex_digit(seg[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (c == '\0' || c == '/' || o >= ROUTE_PARAM_MAX)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return o > 0 && utf8_printable((const unsigned char *)out) ? 0 : -1;
}

/* Match one pattern. RET: 1 match, 0 no match, -1 match with a bad value. */
static int match_pattern(const char *pat, const char *path, route_params *pp)
{
	pp->n = 0;
	while (*pat && *path) {
		if (*pat != '/' || *path != '/')
			return 0;
		pat++;
		path++;
		size_t pl = strcspn(pat, "/"), sl = strcspn(path, "/");
		if (pat[0] == '{') {
			if (sl == 0 || pp->n >= ROUTE_PARAMS)
				return 0;
			int i = pp->n++;
			pp->names[i] = pat + 1;
			pp->name_len[i] = pl - 2;
			if (decode_segment(path, sl, pp->values[i]) < 0)
				return -1;
		} else if (pl != sl || memcmp(pat, path, pl) != 0) {
			return 0;
		}
		pat += pl;
		path += sl;
	}
	return (*pat == '\0' && *path == '\0') ? 1 : 0;
}

/* HEAD is GET without the body (RFC 9110 9.3.2): every GET route answers it. */
static bool method_matches(const char *route_method, const char *method)
{
	return strcmp(route_method, method) == 0 ||
	       (strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0);
}

route_match router_match(const route *table, size_t n, const char *method, const char *path,
                         const route **found, route_params *params)
{
	route_match result = ROUTE_NO_PATH;
	route_params scratch;
	for (size_t i = 0; i < n; i++) {
		int m = match_pattern(table[i].pattern, path, &scratch);
		if (m == 0)
			continue;
		if (m < 0) {
			if (result == ROUTE_NO_PATH)
				result = ROUTE_BAD_PATH;
			continue;
		}
		if (method_matches(table[i].method, method)) {
			*found = &table[i];
			*params = scratch;
			return ROUTE_FOUND;
		}
		result = ROUTE_BAD_METHOD;
	}
	return result;
}

size_t router_allow(const route *table, size_t n, const char *path, char *out, size_t size)
{
	static const char *const order[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
	route_params scratch;
	size_t len = 0;
	out[0] = '\0';
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		bool allowed = false;
		for (size_t i = 0; i < n && !allowed; i++)
			allowed = method_matches(table[i].method, order[k]) &&
			          match_pattern(table[i].pattern, path, &scratch) > 0;
		if (!allowed)
			continue;
		int w = snprintf(out + len, size - len, "%s%s", len ? ", " : "", order[k]);
		if (w < 0 || (size_t)w >= size - len)
			break;
		len += (size_t)w;
	}
	return len;
}

const char *route_param(const route_params *p, const char *name)
{
	size_t len = strlen(name);
	for (int i = 0; i < p->n; i++)
		if (p->name_len[i] == len && memcmp(p->names[i], name, len) == 0)
			return p->values[i];
	return NULL;
}
