/*
 * data.c - token shards, the per-epoch shuffle, the data-parallel split and
 * the prefetch thread (see data.h for the contract).
 *
 * Files stay open and tokens are read with pread(2) one sequence at a
 * time, so memory holds only the order of the current epoch (4 bytes per
 * sequence) and two batches.
 *
 * Positions: d->pos is where the caller is (the batch data_next returns
 * next). The batch itself is produced by fill_batch(), called by data_next
 * without prefetch, or by the thread for the position in d->want.
 */
#include "data.h"
#include "datapath.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fileio.h"

#define SCAN_TOKENS (1u << 16)
#define ERR_LEN     512

/* Read exactly n bytes at off. RET: 0, or -1 with errno (0 at end of file). */
static int read_exactly(int fd, void *buf, size_t n, off_t off)
{
	ssize_t k = fileio_pread_all(fd, buf, n, off);
	if (k >= 0 && (size_t)k < n)
		errno = 0;
	return k >= 0 && (size_t)k == n ? 0 : -1;
}

/* ---- the order ------------------------------------------------------ */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *state)
{
	*state += 0x9E3779B97F4A7C15ull;
	return mix64(*state);
}

/* Uniform in [0, bound) without modulo bias. */
static uint64_t uniform(uint64_t *state, uint64_t bound)
{
	uint64_t threshold = (0 - bound) % bound;
	for (;;) {
		uint64_t r = splitmix64(state);
		if (r >= threshold)
			return r % bound;
	}
}

void data_permutation(uint64_t seed, uint64_t epoch, uint32_t *perm, uint32_t n)
{
	uint64_t state = seed ^ mix64(epoch);
	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = (uint32_t)uniform(&state, i);
		uint32_t t = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = t;
	}
}

uint64_t data_sequence_count(uint64_t tokens, int T)
{
	if (T <= 0 || tokens <= (uint64_t)T)
		return 0;
	return (tokens - 1) / (uint64_t)T;
}

/* ---- the loader ----------------------------------------------------- */

typedef struct shard {
	char *path;
	int fd;
	uint64_t first; /* stream offset of its first token */
	uint64_t count;
} shard;

enum { SLOT_WANTED, SLOT_READY };

struct data_loader {
	int B, T, rank, dp, accum, vocab;
	uint64_t seed;
	bool shuffle, prefetch;
	shard *shards;
	size_t nshards;
	uint64_t tokens, sequences;
	data_position pos;
	double wait;
	char err[ERR_LEN];

	/* used only by whoever fills batches (the thread with prefetch) */
	uint32_t *perm;
	uint64_t perm_epoch;
	bool perm_valid;
	unsigned char *raw; /* 2 * (T + 1) bytes */

	/* prefetch */
	bool started, stop;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state;
	data_position want;
	int32_t *slot_in, *slot_tg;
	int slot_rc;
	char slot_err[ERR_LEN];
};

static uint64_t group_size(const data_loader *d)
{
	return (uint64_t)d->dp * (uint64_t)d->B;
}

/* Start the next epoch where the current one cannot fill what comes next. */
static data_position normalize(const data_loader *d, data_position p)
{
	uint64_t group = group_size(d), step = group * (uint64_t)d->accum;
	bool step_start = p.cursor % step == 0;
	if (p.cursor + group > d->sequences || (step_start && p.cursor + step > d->sequences)) {
		p.epoch++;
		p.cursor = 0;
	}
	p.sequences = d->sequences;
	return p;
}

static data_position advance(const data_loader *d, data_position p)
{
	p.cursor += group_size(d);
	return normalize(d, p);
}

static int read_failed(const shard *s, char *err, size_t errlen)
{
	if (errno == 0)
		err_printf(err, errlen, "could not read data file \"%s\": it ended early", s->path);
	else
		err_printf(err, errlen, "could not read data file \"%s\": %m", s->path);
	return -ERR_STORAGE_IO;
}

static int bad_token(const data_loader *d, const shard *s, unsigned tok, uint64_t index, char *err,
                     size_t errlen)
{
	err_printf(
	    err, errlen,
	    "data file \"%s\" holds token %u at index %llu, not below the vocabulary size %d",
	    s->path, tok, (unsigned long long)index, d->vocab);
	return -ERR_TRAINING_DATA_INVALID;
}

/* The last shard whose first token is at or before off. */
static size_t shard_find(const data_loader *d, uint64_t off)
{
	size_t lo = 0, hi = d->nshards;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->shards[mid].first <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Sequence k into in[0..T) and tg[0..T). */
static int read_sequence(data_loader *d, uint64_t k, int32_t *in, int32_t *tg, char *err,
                         size_t errlen)
{
	const size_t n = (size_t)d->T + 1;
	const uint64_t off = k * (uint64_t)d->T;
	size_t done = 0;
	for (size_t si = shard_find(d, off); done < n; si++) {
		if (si >= d->nshards) {
			err_printf(err, errlen,
			           "could not read sequence %llu: past the end of the data",
			           (unsigned long long)k);
			return -ERR_STORAGE_IO;
		}
		const shard *s = &d->shards[si];
		uint64_t at = off + done - s->first;
		if (at >= s->count)
			continue;
		size_t take = n - done;
		if ((uint64_t)take > s->count - at)
			take = (size_t)(s->count - at);
		off_t where = (off_t)(DATA_SHARD_HEADER_BYTES + 2 * at);
		if (read_exactly(s->fd, d->raw, 2 * take, where) != 0)
			return read_failed(s, err, errlen);
		for (size_t i = 0; i < take; i++) {
			unsigned tok = d->raw[2 * i] | (unsigned)d->raw[2 * i + 1] << 8;
			if (tok >= (unsigned)d->vocab)
				return bad_token(d, s, tok, at + i, err, errlen);
			size_t t = done + i;
			if (t < n - 1)
				in[t] = (int32_t)tok;
			if (t > 0)
				tg[t - 1] = (int32_t)tok;
		}
		done += take;
	}
	return 0;
}

/* This rank's part of the micro-step at p. */
static int fill_batch(data_loader *d, data_position p, int32_t *in, int32_t *tg, char *err,
                      size_t errlen)
{
	if (d->shuffle && (!d->perm_valid || d->perm_epoch != p.epoch)) {
		data_permutation(d->seed, p.epoch, d->perm, (uint32_t)d->sequences);
		d->perm_epoch = p.epoch;
		d->perm_valid = true;
	}
	uint64_t first = p.cursor + (uint64_t)d->rank * (uint64_t)d->B;
	for (int b = 0; b < d->B; b++) {
		uint64_t q = first + (uint64_t)b;
		uint64_t k = d->shuffle ? d->perm[q] : q;
		size_t row = (size_t)b * (size_t)d->T;
		int rc = read_sequence(d, k, in + row, tg + row, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static void *prefetch_main(void *arg)
{
	data_loader *d = arg;
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (!d->stop && d->state != SLOT_WANTED)
			pthread_cond_wait(&d->cv, &d->mu);
		if (d->stop)
			break;
		data_position p = d->want;
		pthread_mutex_unlock(&d->mu);
		int rc = fill_batch(d, p, d->slot_in, d->slot_tg, d->slot_err, sizeof(d->slot_err));
		pthread_mutex_lock(&d->mu);
		d->slot_rc = rc;
		d->state = SLOT_READY;
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* Ask the thread for the batch at d->pos. Caller holds d->mu. */
static void request_locked(data_loader *d)
{
	d->want = d->pos;
	d->state = SLOT_WANTED;
	pthread_cond_broadcast(&d->cv);
}

/* ---- opening -------------------------------------------------------- */

static int32_t get_i32(const unsigned char *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	                 (uint32_t)p[3] << 24);
}

/* Check the header and size of the shard opened in s->fd. */
static int open_shard(shard *s, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(s->fd, &st) != 0) {
		err_printf(err, errlen, "could not stat data file \"%s\": %m", s->path);
		return -ERR_STORAGE_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		err_printf(err, errlen, "data file \"%s\" is not a regular file", s->path);
		return -ERR_TRAINING_DATA_INVALID;
	}
	unsigned char h[DATA_SHARD_HEADER_BYTES];
	if (st.st_size < DATA_SHARD_HEADER_BYTES) {
		err_printf(err, errlen,
		           "data file \"%s\" is not a token shard: %lld bytes is too short for the "
		           "%d-byte header",
		           s->path, (long long)st.st_size, DATA_SHARD_HEADER_BYTES);
		return -ERR_TRAINING_DATA_INVALID;
	}
	if (read_exactly(s->fd, h, sizeof(h), 0) != 0)
		return read_failed(s, err, errlen);
	int32_t magic = get_i32(h), version = get_i32(h + 4), count = get_i32(h + 8);
	if (magic != DATA_SHARD_MAGIC) {
		err_printf(err, errlen,
		           "data file \"%s\" is not a token shard: magic %d, expected %d", s->path,
		           magic, DATA_SHARD_MAGIC);
		return -ERR_TRAINING_DATA_INVALID;
	}
	if (version != DATA_SHARD_VERSION) {
		err_printf(err, errlen, "data file \"%s\" has shard version %d, expected %d",
		           s->path, version, DATA_SHARD_VERSION);
		return -ERR_TRAINING_DATA_INVALID;
	}
	long long want = (long long)DATA_SHARD_HEADER_BYTES + 2 * (long long)count;
	if (count < 0 || (long long)st.st_size != want) {
		err_printf(
		    err, errlen,
		    "data file \"%s\" has %lld bytes, but its header declares %d tokens (%lld "
		    "bytes)",
		    s->path, (long long)st.st_size, count, want);
		return -ERR_TRAINING_DATA_INVALID;
	}
	s->count = (uint64_t)count;
	return 0;
}

static int scan_shard(const data_loader *d, const shard *s, unsigned char *buf, char *err,
                      size_t errlen)
{
	for (uint64_t at = 0; at < s->count;) {
		size_t n = s->count - at < SCAN_TOKENS ? (size_t)(s->count - at) : SCAN_TOKENS;
		off_t where = (off_t)(DATA_SHARD_HEADER_BYTES + 2 * at);
		if (read_exactly(s->fd, buf, 2 * n, where) != 0)
			return read_failed(s, err, errlen);
		for (size_t i = 0; i < n; i++) {
			unsigned tok = buf[2 * i] | (unsigned)buf[2 * i + 1] << 8;
			if (tok >= (unsigned)d->vocab)
				return bad_token(d, s, tok, at + i, err, errlen);
		}
		at += n;
	}
	return 0;
}

static int check_config(const data_config *c, char *err, size_t errlen)
{
	const char *why = NULL;
	if (c->pattern == NULL || c->pattern[0] == '\0')
		why = "no file pattern";
	else if (c->vocab_size < 1 || c->vocab_size > DATA_VOCAB_MAX)
		why = "vocab_size must be in 1..65536";
	else if (c->B < 1 || c->T < 1)
		why = "B and T must be positive";
	else if (c->dp_size < 1 || c->dp_rank < 0 || c->dp_rank >= c->dp_size)
		why = "dp_rank must be in 0..dp_size-1";
	else if (c->accum_steps < 0)
		why = "accum_steps must not be negative";
	if (why == NULL)
		return 0;
	err_printf(err, errlen, "could not open training data: %s", why);
	return -ERR_INVALID_ARGUMENT;
}

/* Match the shards beneath the data root and take over their fds. */
static int match_shards(data_loader *d, const data_config *cfg, char *err, size_t errlen)
{
	const char *root = cfg->root && cfg->root[0] ? cfg->root : ".";
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		err_printf(err, errlen, "could not open the data root \"%s\": %m", root);
		return -ERR_STORAGE_IO;
	}
	datapath_matches m;
	int rc = datapath_match(rootfd, cfg->pattern, cfg->resolve, &m, err, errlen);
	close(rootfd);
	if (rc < 0) {
		/* out of memory and I/O stand; the rest: not allowed, or a way out of the root */
		if (rc != -ERR_INTERNAL && rc != -ERR_STORAGE_IO)
			rc = -ERR_TRAINING_DATA_INVALID;
	} else if (m.n == 0) {
		err_printf(err, errlen, "no data files match \"%s\" in the data root \"%s\"",
		           cfg->pattern, root);
		rc = -ERR_TRAINING_DATA_INVALID;
	} else if (!(d->shards = calloc(m.n, sizeof(*d->shards)))) {
		err_printf(err, errlen, "out of memory");
		rc = -ERR_INTERNAL;
	}
	for (size_t i = 0; rc == 0 && i < m.n; i++) {
		shard *s = &d->shards[d->nshards++];
		s->path = m.files[i].name;
		s->fd = m.files[i].fd;
		m.files[i].name = NULL;
		m.files[i].fd = -1;
		rc = open_shard(s, err, errlen);
		s->first = d->tokens;
		d->tokens += s->count;
	}
	datapath_matches_release(&m);
	return rc;
}

int data_open(const data_config *cfg, data_loader **out, char *err, size_t errlen)
{
	*out = NULL;
	int rc = check_config(cfg, err, errlen);
	if (rc)
		return rc;
	data_loader *d = calloc(1, sizeof(*d));
	if (d == NULL) {
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	d->B = cfg->B;
	d->T = cfg->T;
	d->rank = cfg->dp_rank;
	d->dp = cfg->dp_size;
	d->accum = cfg->accum_steps ? cfg->accum_steps : 1;
	d->vocab = cfg->vocab_size;
	d->seed = cfg->seed;
	d->shuffle = cfg->shuffle;
	rc = match_shards(d, cfg, err, errlen);
	if (rc)
		goto fail;
	d->sequences = data_sequence_count(d->tokens, d->T);
	uint64_t step = group_size(d) * (uint64_t)d->accum;
	if (d->sequences < step) {
		err_printf(
		    err, errlen,
		    "too little data in \"%s\": %llu tokens make %llu sequences of %d tokens, "
		    "one optimizer step needs %llu",
		    cfg->pattern, (unsigned long long)d->tokens, (unsigned long long)d->sequences,
		    d->T, (unsigned long long)step);
		rc = -ERR_TRAINING_DATA_INVALID;
		goto fail;
	}
	if (d->sequences > UINT32_MAX) {
		err_printf(err, errlen, "too much data in \"%s\": %llu sequences, at most %u",
		           cfg->pattern, (unsigned long long)d->sequences, (unsigned)UINT32_MAX);
		rc = -ERR_TRAINING_DATA_INVALID;
		goto fail;
	}
	size_t bt = (size_t)d->B * (size_t)d->T;
	size_t rawlen = 2 * ((size_t)d->T + 1);
	d->raw = malloc(rawlen > 2 * SCAN_TOKENS ? rawlen : 2 * SCAN_TOKENS);
	if (d->shuffle)
		d->perm = malloc((size_t)d->sequences * sizeof(*d->perm));
	if (d->raw == NULL || (d->shuffle && d->perm == NULL)) {
		err_printf(err, errlen, "out of memory");
		rc = -ERR_INTERNAL;
		goto fail;
	}
	for (size_t i = 0; !cfg->skip_scan && i < d->nshards; i++) {
		rc = scan_shard(d, &d->shards[i], d->raw, err, errlen);
		if (rc)
			goto fail;
	}
	d->pos = normalize(d, (data_position){0, 0, 0});
	if (cfg->prefetch) {
		d->slot_in = malloc(bt * sizeof(int32_t));
		d->slot_tg = malloc(bt * sizeof(int32_t));
		if (d->slot_in == NULL || d->slot_tg == NULL) {
			err_printf(err, errlen, "out of memory");
			rc = -ERR_INTERNAL;
			goto fail;
		}
		pthread_mutex_init(&d->mu, NULL);
		pthread_cond_init(&d->cv, NULL);
		d->prefetch = true;
		d->state = SLOT_WANTED;
		d->want = d->pos;
		int prc = pthread_create(&d->thread, NULL, prefetch_main, d);
		if (prc != 0) {
			err_printf(err, errlen, "could not start the data prefetch thread: %s",
			           strerror(prc));
			rc = -ERR_INTERNAL;
			goto fail;
		}
		d->started = true;
	}
	*out = d;
	return 0;
fail:
	data_close(d);
	return rc;
}

int data_open_eval(const char *root, const char *pattern, int vocab_size, int B, int T,
                   data_loader **out, char *err, size_t errlen)
{
	data_config c = {
	    .root = root,
	    .pattern = pattern,
	    .vocab_size = vocab_size,
	    .B = B,
	    .T = T,
	    .dp_rank = 0,
	    .dp_size = 1,
	    .accum_steps = 1,
	    .shuffle = false,
	};
	return data_open(&c, out, err, errlen);
}

void data_close(data_loader *d)
{
	if (d == NULL)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->mu);
		d->stop = true;
		pthread_cond_broadcast(&d->cv);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->thread, NULL);
	}
	if (d->prefetch) {
		pthread_mutex_destroy(&d->mu);
		pthread_cond_destroy(&d->cv);
	}
	for (size_t i = 0; i < d->nshards; i++) {
		if (d->shards[i].fd >= 0)
			close(d->shards[i].fd);
		free(d->shards[i].path);
	}
	free(d->shards);
	free(d->perm);
	free(d->raw);
	free(d->slot_in);
	free(d->slot_tg);
	free(d);
}

/* ---- reading -------------------------------------------------------- */

int data_next(data_loader *d, int32_t *inputs, int32_t *targets)
{
	double t0 = clock_mono_s();
	int rc;
	if (!d->prefetch) {
		rc = fill_batch(d, d->pos, inputs, targets, d->err, sizeof(d->err));
		if (rc == 0)
			d->pos = advance(d, d->pos);
		d->wait += clock_mono_s() - t0;
		return rc;
	}
	size_t bytes = (size_t)d->B * (size_t)d->T * sizeof(int32_t);
	pthread_mutex_lock(&d->mu);
	while (d->state != SLOT_READY)
		pthread_cond_wait(&d->cv, &d->mu);
	d->wait += clock_mono_s() - t0;
	rc = d->slot_rc;
	if (rc == 0) {
		memcpy(inputs, d->slot_in, bytes);
		memcpy(targets, d->slot_tg, bytes);
		d->pos = advance(d, d->pos);
		request_locked(d);
	} else {
		/* stays READY with the failure: the next call reports it again */
		snprintf(d->err, sizeof(d->err), "%s", d->slot_err);
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

const char *data_error(const data_loader *d)
{
	return d->err;
}

data_position data_tell(const data_loader *d)
{
	return d->pos;
}

int data_seek(data_loader *d, data_position p)
{
	if (p.sequences != 0 && p.sequences != d->sequences) {
		err_printf(d->err, sizeof(d->err),
		           "could not resume the data position: it was taken over %llu sequences, "
		           "the data now has %llu (did the data files or T change?)",
		           (unsigned long long)p.sequences, (unsigned long long)d->sequences);
		return -ERR_TRAINING_DATA_INVALID;
	}
	data_position n = normalize(d, p);
	if (!d->prefetch) {
		d->pos = n;
		return 0;
	}
	pthread_mutex_lock(&d->mu);
	while (d->state == SLOT_WANTED) /* let a fill in progress finish */
		pthread_cond_wait(&d->cv, &d->mu);
	d->pos = n;
	request_locked(d);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

double data_wait_seconds(const data_loader *d)
{
	return d->wait;
}

uint64_t data_num_tokens(const data_loader *d)
{
	return d->tokens;
}

uint64_t data_num_sequences(const data_loader *d)
{
	return d->sequences;
}

uint64_t data_steps_per_epoch(const data_loader *d)
{
	return d->sequences / (group_size(d) * (uint64_t)d->accum);
}

/* ---- writing shards ------------------------------------------------- */

struct data_shard_writer {
	int fd;
	char *path, *tmp;
	size_t tokens;
};

void data_shard_header(unsigned char out[DATA_SHARD_HEADER_BYTES], uint32_t ntokens)
{
	tokshard_header_encode(out, ntokens);
}

void data_shard_discard(data_shard_writer *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp != NULL)
		unlink(w->tmp);
	free(w->tmp);
	free(w->path);
	free(w);
}

int data_shard_create(const char *path, data_shard_writer **out, char *err, size_t errlen)
{
	*out = NULL;
	data_shard_writer *w = calloc(1, sizeof(*w));
	size_t n = strlen(path) + 32;
	if (w == NULL || (w->path = strdup(path)) == NULL || (w->tmp = malloc(n)) == NULL) {
		if (w != NULL) {
			w->fd = -1;
			free(w->tmp);
			w->tmp = NULL;
		}
		data_shard_discard(w);
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	snprintf(w->tmp, n, "%s.tmp.%ld", path, (long)getpid());
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		err_printf(err, errlen, "could not create data file \"%s\": %m", w->tmp);
		free(w->tmp);
		w->tmp = NULL; /* nothing to remove */
		data_shard_discard(w);
		return -ERR_STORAGE_IO;
	}
	unsigned char h[DATA_SHARD_HEADER_BYTES];
	data_shard_header(h, 0);
	if (fileio_pwrite_all(w->fd, h, sizeof(h), 0) != 0) {
		err_printf(err, errlen, "could not write data file \"%s\": %m", w->tmp);
		data_shard_discard(w);
		return -ERR_STORAGE_IO;
	}
	*out = w;
	return 0;
}

size_t data_shard_tokens(const data_shard_writer *w)
{
	return w->tokens;
}

int data_shard_append(data_shard_writer *w, const uint16_t *tokens, size_t n, char *err,
                      size_t errlen)
{
	if (n > DATA_SHARD_MAX_TOKENS - w->tokens) {
		err_printf(err, errlen, "could not write data file \"%s\": more than %zu tokens",
		           w->path, DATA_SHARD_MAX_TOKENS);
		return -ERR_INVALID_ARGUMENT;
	}
	unsigned char buf[8192];
	const size_t per = sizeof(buf) / 2;
	for (size_t done = 0; done < n;) {
		size_t k = n - done < per ? n - done : per;
		for (size_t i = 0; i < k; i++) {
			buf[2 * i] = (unsigned char)(tokens[done + i] & 0xFF);
			buf[2 * i + 1] = (unsigned char)(tokens[done + i] >> 8);
		}
		off_t where = (off_t)(DATA_SHARD_HEADER_BYTES + 2 * (w->tokens + done));
		if (fileio_pwrite_all(w->fd, buf, 2 * k, where) != 0) {
			err_printf(err, errlen, "could not write data file \"%s\": %m", w->tmp);
			return -ERR_STORAGE_IO;
		}
		done += k;
	}
	w->tokens += n;
	return 0;
}

/* fsync the directory holding path. */
static int sync_dir_of(const char *path, char *err, size_t errlen)
{
	char *dir = strdup(path);
	if (dir == NULL) {
		err_printf(err, errlen, "out of memory");
		return -ERR_INTERNAL;
	}
	char *slash = strrchr(dir, '/');
	const char *name = dir;
	if (slash == dir)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	else
		name = ".";
	int rc = 0, fd = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		err_printf(err, errlen, "could not sync directory \"%s\": %m", name);
		rc = -ERR_STORAGE_IO;
	}
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

int data_shard_finish(data_shard_writer *w, char *err, size_t errlen)
{
	int rc = 0;
	unsigned char h[DATA_SHARD_HEADER_BYTES];
	data_shard_header(h, (uint32_t)w->tokens);
	if (fileio_pwrite_all(w->fd, h, sizeof(h), 0) != 0 || fsync(w->fd) != 0) {
		err_printf(err, errlen, "could not write data file \"%s\": %m", w->tmp);
		rc = -ERR_STORAGE_IO;
		goto out;
	}
	int fd = w->fd;
	w->fd = -1;
	if (close(fd) != 0) {
		err_printf(err, errlen, "could not close data file \"%s\": %m", w->tmp);
		rc = -ERR_STORAGE_IO;
		goto out;
	}
	if (rename(w->tmp, w->path) != 0) {
		err_printf(err, errlen, "could not rename data file \"%s\" to \"%s\": %m", w->tmp,
		           w->path);
		rc = -ERR_STORAGE_IO;
		goto out;
	}
	free(w->tmp);
	w->tmp = NULL; /* renamed: nothing left to remove */
	rc = sync_dir_of(w->path, err, errlen);
out:
	data_shard_discard(w);
	return rc;
}

int data_write_shard(const char *path, const uint16_t *tokens, size_t n, char *err, size_t errlen)
{
	data_shard_writer *w;
	int rc = data_shard_create(path, &w, err, errlen);
	if (rc)
		return rc;
	rc = data_shard_append(w, tokens, n, err, errlen);
	if (rc) {
		data_shard_discard(w);
		return rc;
	}
	return data_shard_finish(w, err, errlen);
}
