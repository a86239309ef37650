/*
 * tokenize.h - the byte-level tokenizer: text files to token shards.
 *
 * Every byte of the input is one token (0..255, so the vocabulary is
 * TOKENIZE_VOCAB). The files are concatenated in the order given and the
 * stream is cut into shards of at most shard_tokens tokens, written in the
 * format of data.h as "<out_prefix>_000000.bin", "<out_prefix>_000001.bin",
 * ... Each shard goes to a temporary file and is renamed when complete, so
 * a glob over the prefix never sees a partial shard.
 */
#ifndef TY_TOKENIZE_H
#define TY_TOKENIZE_H

#include <stddef.h>

#define TOKENIZE_VOCAB 256

/*
 * Tokenize paths[0..n) into shards under out_prefix (its directory must
 * exist). Shards "<out_prefix>_%06d.bin" that directly follow the last one
 * written (left by an earlier, longer run) are removed, so the glob
 * "<out_prefix>_*.bin" matches exactly this run's output.
 * After a failure, the shards this run wrote are removed again.
 * RET: 0; -ERR_INVALID_ARGUMENT for no files, shard_tokens 0 or above
 * DATA_SHARD_MAX_TOKENS, or a prefix too long; -ERR_STORAGE_IO when a file
 * cannot be read or written; -ERR_TRAINING_DATA_INVALID when the input is
 * empty.
 * OUT *total (may be NULL): the number of tokens written.
 */
int tokenize_files(char *const *paths, int n, const char *out_prefix, size_t shard_tokens,
                   size_t *total, char *err, size_t errlen);

#endif
