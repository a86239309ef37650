/*
 * hex.h - bytes as hexadecimal text and back, the one way every part
 * writes and reads them (hashes, keys, wrapped keys, request ids).
 */
#ifndef TY_HEX_H
#define TY_HEX_H

#include <stdbool.h>
#include <stddef.h>

/* OUT: hex, 2n + 1 bytes: in[0..n) as lower-case digits, NUL-terminated. */
void hex_encode(const unsigned char *in, size_t n, char *hex);

/* RET: the value of one hexadecimal digit (either case), or -1. */
int hex_digit(char c);

/*
 * Decode hex, which must be exactly 2n digits (either case), into out[0..n).
 * RET true; false when it is not (out may then hold part of it).
 */
bool hex_decode(const char *hex, size_t len, unsigned char *out, size_t n);

/* RET: whether s is exactly n lower-case hexadecimal digits (hex_encode's form). */
bool hex_is_lower(const char *s, size_t n);

#endif
