/*
 * tokenize.c - the byte-level tokenizer (see tokenize.h). Input is read in
 * blocks and streamed into data.c's shard writer, so memory stays small
 * whatever the size of the files or the shards.
 */
#include "tokenize.h"

#include "data.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BLOCK 16384

typedef struct tokenizer {
	const char *prefix;
	size_t shard_tokens;
	int next_index; /* of the shard to create next */
	data_shard_writer *cur;
	size_t total;
	char path[4096];
	char *err;
	size_t errlen;
} tokenizer;

static void shard_path(const tokenizer *t, int index, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%06d.bin", t->prefix, index);
}

static int finish_current(tokenizer *t)
{
	if (t->cur == NULL)
		return 0;
	data_shard_writer *w = t->cur;
	t->cur = NULL;
	return data_shard_finish(w, t->err, t->errlen);
}

/* Append tokens, cutting shards at shard_tokens. */
static int emit(tokenizer *t, const uint16_t *tok, size_t n)
{
	while (n > 0) {
		if (t->cur == NULL) {
			shard_path(t, t->next_index, t->path, sizeof(t->path));
			int rc = data_shard_create(t->path, &t->cur, t->err, t->errlen);
			if (rc)
				return rc;
			t->next_index++;
		}
		size_t room = t->shard_tokens - data_shard_tokens(t->cur);
		size_t k = n < room ? n : room;
		int rc = data_shard_append(t->cur, tok, k, t->err, t->errlen);
		if (rc)
			return rc;
		t->total += k;
		tok += k;
		n -= k;
		if (data_shard_tokens(t->cur) == t->shard_tokens) {
			rc = finish_current(t);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int tokenize_one(tokenizer *t, const char *path)
{
	unsigned char buf[BLOCK];
	uint16_t tok[BLOCK];
	int rc = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err_printf(t->err, t->errlen, "could not open input file \"%s\": %m", path);
		return -ERR_STORAGE_IO;
	}
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err_printf(t->err, t->errlen, "could not read input file \"%s\": %m", path);
			rc = -ERR_STORAGE_IO;
			break;
		}
		if (k == 0)
			break;
		for (ssize_t i = 0; i < k; i++)
			tok[i] = buf[i];
		rc = emit(t, tok, (size_t)k);
		if (rc)
			break;
	}
	close(fd);
	return rc;
}

/* Remove the shards this run wrote, after a failure. */
static void remove_written(tokenizer *t)
{
	for (int i = 0; i < t->next_index; i++) {
		shard_path(t, i, t->path, sizeof(t->path));
		unlink(t->path);
	}
}

/* Remove "<prefix>_%06d.bin" from index on while they exist. */
static int remove_stale(tokenizer *t)
{
	for (int i = t->next_index; i < 1000000; i++) {
		shard_path(t, i, t->path, sizeof(t->path));
		if (unlink(t->path) == 0)
			continue;
		if (errno == ENOENT)
			return 0;
		err_printf(t->err, t->errlen, "could not remove stale data file \"%s\": %m",
		           t->path);
		return -ERR_STORAGE_IO;
	}
	return 0;
}

int tokenize_files(char *const *paths, int n, const char *out_prefix, size_t shard_tokens,
                   size_t *total, char *err, size_t errlen)
{
	tokenizer t = {
	    .prefix = out_prefix,
	    .shard_tokens = shard_tokens,
	    .err = err,
	    .errlen = errlen,
	};
	int rc = 0;
	if (total != NULL)
		*total = 0;
	if (paths == NULL || n < 1 || out_prefix == NULL || out_prefix[0] == '\0') {
		err_printf(err, errlen, "could not tokenize: no input files or no output prefix");
		return -ERR_INVALID_ARGUMENT;
	}
	if (shard_tokens == 0 || shard_tokens > DATA_SHARD_MAX_TOKENS) {
		err_printf(err, errlen, "could not tokenize: shard size %zu is not in 1..%zu",
		           shard_tokens, DATA_SHARD_MAX_TOKENS);
		return -ERR_INVALID_ARGUMENT;
	}
	if (strlen(out_prefix) + 32 > sizeof(t.path)) {
		err_printf(err, errlen, "could not tokenize: output prefix \"%s\" is too long",
		           out_prefix);
		return -ERR_INVALID_ARGUMENT;
	}
	for (int i = 0; rc == 0 && i < n; i++)
		rc = tokenize_one(&t, paths[i]);
	if (rc == 0)
		rc = finish_current(&t);
	if (rc == 0 && t.total == 0) {
		err_printf(err, errlen, "could not tokenize: the input files are empty");
		rc = -ERR_TRAINING_DATA_INVALID;
	}
	if (rc == 0)
		rc = remove_stale(&t);
	data_shard_discard(t.cur);
	if (rc)
		remove_written(&t);
	if (rc == 0 && total != NULL)
		*total = t.total;
	return rc;
}
