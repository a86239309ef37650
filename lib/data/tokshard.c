/*
 * tokshard.c - the token shard header (tokshard.h).
 */
#include "tokshard.h"

#include <stdio.h>
#include <string.h>

static int32_t get_i32(const unsigned char *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	                 (uint32_t)p[3] << 24);
}

void tokshard_header_encode(unsigned char out[TOKSHARD_HEADER_BYTES], uint32_t ntokens)
{
	const uint32_t v[3] = {TOKSHARD_MAGIC, TOKSHARD_VERSION, ntokens};
	memset(out, 0, TOKSHARD_HEADER_BYTES);
	for (int i = 0; i < 3; i++)
		for (int b = 0; b < 4; b++)
			out[4 * i + b] = (unsigned char)(v[i] >> (8 * b));
}

int tokshard_header_decode(const unsigned char h[TOKSHARD_HEADER_BYTES], uint32_t *ntokens,
                           char *why, size_t whylen)
{
	int32_t magic = get_i32(h), version = get_i32(h + 4), count = get_i32(h + 8);
	if (magic != TOKSHARD_MAGIC)
		snprintf(why, whylen, "magic %d, expected %d", magic, TOKSHARD_MAGIC);
	else if (version != TOKSHARD_VERSION)
		snprintf(why, whylen, "shard version %d, expected %d", version, TOKSHARD_VERSION);
	else if (count < 0)
		snprintf(why, whylen, "a negative token count (%d)", count);
	else {
		*ntokens = (uint32_t)count;
		return 0;
	}
	return -1;
}
