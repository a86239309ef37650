/*
 * hex.c - see hex.h.
 */
#include "hex.h"

#include <string.h>

void hex_encode(const unsigned char *in, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[in[i] >> 4];
		hex[2 * i + 1] = digits[in[i] & 15];
	}
	hex[2 * n] = '\0';
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool hex_decode(const char *hex, size_t len, unsigned char *out, size_t n)
{
	if (hex == NULL || len != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}

bool hex_is_lower(const char *s, size_t n)
{
	return s != NULL && strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}
