/*
 * tokshard.h - the token shard file: what the trainer reads, what dataset
 * uploads carry, and what the worker unseals a dataset version into.
 *
 * A shard is a header of TOKSHARD_HEADER_INTS little-endian int32 values
 * (magic TOKSHARD_MAGIC, version TOKSHARD_VERSION, the token count n, the
 * rest zero) followed by n tokens, each a little-endian uint16. The format
 * is llm.c's, so its shards work as they are.
 */
#ifndef TY_TOKSHARD_H
#define TY_TOKSHARD_H

#include <stddef.h>
#include <stdint.h>

#define TOKSHARD_MAGIC        20240520
#define TOKSHARD_VERSION      1
#define TOKSHARD_HEADER_INTS  256
#define TOKSHARD_HEADER_BYTES (4 * TOKSHARD_HEADER_INTS)
#define TOKSHARD_MAX_TOKENS   ((size_t)INT32_MAX)

/* Encode the header of a shard of ntokens tokens. */
void tokshard_header_encode(unsigned char out[TOKSHARD_HEADER_BYTES], uint32_t ntokens);

/*
 * Decode a header. OUT *ntokens. RET 0, or -1 with why (whylen bytes) set:
 * a wrong magic or version, or a negative count.
 */
int tokshard_header_decode(const unsigned char h[TOKSHARD_HEADER_BYTES], uint32_t *ntokens,
                           char *why, size_t whylen);

#endif
