/*
 * train_ckpt.c - the trainer's checkpoint shard contents (train_ckpt.h).
 */
#include "train_ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const section_name[TS_SECTIONS] = {"params", "adam_m", "adam_v"};

void train_shard_release(train_shard *s)
{
	free(s->ranges);
	free(s->at);
	for (int k = 0; k < TS_SECTIONS; k++)
		free(s->sec[k]);
	free(s->state);
	memset(s, 0, sizeof(*s));
}

/* Allocate s for nruns runs of n floats in all. */
static int shard_alloc(train_shard *s, size_t nruns, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->ranges = malloc((nruns ? nruns : 1) * 2 * sizeof(uint64_t));
	s->at = malloc((nruns ? nruns : 1) * sizeof(size_t));
	int ok = s->ranges && s->at;
	for (int k = 0; k < TS_SECTIONS; k++)
		ok = (s->sec[k] = malloc((n ? n : 1) * sizeof(float))) && ok;
	if (!ok) {
		train_shard_release(s);
		return -ERR_INTERNAL;
	}
	s->nruns = nruns;
	s->n = n;
	return 0;
}

/* The runs of the owned elements of local [b, e); *out malloc'ed. RET count or (size_t)-1. */
static size_t owned_runs(const mp_layout *lay, size_t b, size_t e, mp_run **out)
{
	size_t n = mp_runs(lay, b, e, true, NULL, 0);
	*out = malloc((n ? n : 1) * sizeof(mp_run));
	if (!*out)
		return (size_t)-1;
	mp_runs(lay, b, e, true, *out, n);
	return n;
}

/* Owned ranges of every local unit of a rank: [begin, end) local, per unit. */
typedef struct unit_range {
	size_t begin, end;
} unit_range;

/*
 * Lay out s for the owned elements of ranges[0..nunits) and call take for
 * each run with its place in the sections. RET 0 or an error.
 */
static int shard_collect(train_shard *s, const mp_layout *lay, const unit_range *ranges,
                         int (*take)(void *ctx, int unit, const mp_run *r, size_t at), void *ctx)
{
	mp_run **runs = calloc((size_t)lay->nunits, sizeof(*runs));
	size_t *count = calloc((size_t)lay->nunits, sizeof(*count));
	size_t total_runs = 0, total = 0;
	int rc = runs && count ? 0 : -ERR_INTERNAL;
	for (int u = 0; rc == 0 && u < lay->nunits; u++) {
		count[u] = owned_runs(lay, ranges[u].begin, ranges[u].end, &runs[u]);
		if (count[u] == (size_t)-1) {
			count[u] = 0;
			rc = -ERR_INTERNAL;
		}
		total_runs += count[u];
		for (size_t i = 0; i < count[u]; i++)
			total += runs[u][i].n;
	}
	if (rc == 0)
		rc = shard_alloc(s, total_runs, total);
	size_t k = 0, at = 0;
	for (int u = 0; rc == 0 && u < lay->nunits; u++)
		for (size_t i = 0; rc == 0 && i < count[u]; i++, k++) {
			const mp_run *r = &runs[u][i];
			s->ranges[2 * k] = r->global;
			s->ranges[2 * k + 1] = r->global + r->n;
			s->at[k] = at;
			rc = take(ctx, u, r, at);
			at += r->n;
		}
	for (int u = 0; runs && u < lay->nunits; u++)
		free(runs[u]);
	free(runs);
	free(count);
	if (rc)
		train_shard_release(s);
	return rc;
}

typedef struct from_dp {
	train_shard *s;
	const dp_runtime *dp;
	const unit_range *ranges;
} from_dp;

static int take_from_dp(void *ctx, int unit, const mp_run *r, size_t at)
{
	from_dp *f = ctx;
	size_t off = r->local - f->ranges[unit].begin;
	const float *src[TS_SECTIONS] = {dp_owned_params(f->dp, unit), dp_owned_m(f->dp, unit),
	                                 dp_owned_v(f->dp, unit)};
	for (int k = 0; k < TS_SECTIONS; k++)
		memcpy(f->s->sec[k] + at, src[k] + off, r->n * sizeof(float));
	return 0;
}

int train_shard_from_dp(train_shard *s, const mp_layout *lay, const dp_runtime *dp)
{
	unit_range *ranges = calloc((size_t)lay->nunits, sizeof(*ranges));
	if (!ranges)
		return -ERR_INTERNAL;
	for (int u = 0; u < lay->nunits; u++) {
		dp_range g = dp_owned_range(dp, u);
		ranges[u] = (unit_range){g.begin, g.end};
	}
	from_dp f = {s, dp, ranges};
	int rc = shard_collect(s, lay, ranges, take_from_dp, &f);
	free(ranges);
	return rc;
}

typedef struct from_srcs {
	train_shard *s;
	const train_shard *srcs;
	int nsrc;
	size_t missing;
} from_srcs;

static int take_from_srcs(void *ctx, int unit, const mp_run *r, size_t at)
{
	from_srcs *f = ctx;
	(void)unit;
	mp_run want = {r->global, at, r->n};
	float *dst[TS_SECTIONS] = {f->s->sec[0], f->s->sec[1], f->s->sec[2]};
	size_t got = 0;
	for (int k = 0; k < f->nsrc; k++)
		got += train_shard_fill(&f->srcs[k], &want, 1, 0, dst);
	f->missing += r->n - (got < r->n ? got : r->n);
	return 0;
}

int train_shard_for_rank(train_shard *s, const mp_layout *lay, int dp_size, int dp_rank,
                         const train_shard *srcs, int nsrc, char *err, size_t errlen)
{
	unit_range *ranges = calloc((size_t)lay->nunits, sizeof(*ranges));
	if (!ranges)
		return -ERR_INTERNAL;
	for (int u = 0; u < lay->nunits; u++) {
		dp_range g = dp_partition(lay->units[u].numel, dp_size, dp_rank);
		ranges[u] =
		    (unit_range){lay->units[u].offset + g.begin, lay->units[u].offset + g.end};
	}
	from_srcs f = {s, srcs, nsrc, 0};
	int rc = shard_collect(s, lay, ranges, take_from_srcs, &f);
	free(ranges);
	if (rc == 0 && f.missing) {
		snprintf(err, errlen, "the checkpoint lacks %zu elements of the model", f.missing);
		train_shard_release(s);
		return -ERR_CHECKPOINT_CORRUPT;
	}
	return rc;
}

int train_shard_write(const train_shard *s, const char *state, ckpt_store *st, int step, int rank,
                      int world, ckpt_shard_info *info, char *err, size_t errlen)
{
	ckpt_writer *w = NULL;
	int rc = ckpt_shard_begin(st, step, rank, world, &w, err, errlen);
	if (rc < 0)
		return rc;
	ckpt_put(w, "ranges", s->ranges, s->nruns * 2 * sizeof(uint64_t));
	for (int k = 0; k < TS_SECTIONS; k++)
		ckpt_put(w, section_name[k], s->sec[k], s->n * sizeof(float));
	ckpt_put(w, "state", state, strlen(state));
	return ckpt_shard_commit(w, info, err, errlen);
}

static int read_state(train_shard *s, ckpt_reader *rd, char *err, size_t errlen)
{
	uint64_t n = 0;
	if (ckpt_get_size(rd, "state", &n) < 0 || n > (1u << 20)) {
		snprintf(err, errlen, "checkpoint shard has no state section");
		return -ERR_CHECKPOINT_CORRUPT;
	}
	s->state = calloc(n + 1, 1);
	if (!s->state)
		return -ERR_INTERNAL;
	return ckpt_get(rd, "state", s->state, n, err, errlen);
}

/* Drop empty runs, check order and bounds, and number the sections. */
static int index_runs(train_shard *s, size_t nparams, char *err, size_t errlen)
{
	size_t k = 0, at = 0;
	uint64_t last_end = 0;
	for (size_t i = 0; i < s->nruns; i++) {
		uint64_t b = s->ranges[2 * i], e = s->ranges[2 * i + 1];
		if (e == b)
			continue;
		if (e < b || b < last_end || e > nparams) {
			snprintf(err, errlen,
			         "checkpoint run %zu [%llu, %llu) is out of order or "
			         "outside the model",
			         i, (unsigned long long)b, (unsigned long long)e);
			return -ERR_CHECKPOINT_CORRUPT;
		}
		s->ranges[2 * k] = b;
		s->ranges[2 * k + 1] = e;
		s->at[k++] = at;
		at += e - b;
		last_end = e;
	}
	s->nruns = k;
	if (at != s->n) {
		snprintf(err, errlen, "checkpoint sections disagree with their ranges");
		return -ERR_CHECKPOINT_CORRUPT;
	}
	return 0;
}

int train_shard_read(train_shard *s, ckpt_store *st, const ckpt_manifest *m, int k, size_t nparams,
                     bool with_state, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	ckpt_reader *rd = NULL;
	int rc = ckpt_shard_open(st, m->step, k, m->world, m->shards[k].sha256, &rd, err, errlen);
	if (rc < 0)
		return rc;
	uint64_t rbytes = 0, pbytes = 0;
	ckpt_get_size(rd, "ranges", &rbytes);
	ckpt_get_size(rd, "params", &pbytes);
	if (rbytes % 16 != 0 || pbytes % sizeof(float) != 0) {
		snprintf(err, errlen, "checkpoint shard %d has malformed sections", k);
		rc = -ERR_CHECKPOINT_CORRUPT;
		goto out;
	}
	if ((rc = shard_alloc(s, rbytes / 16, pbytes / sizeof(float))) < 0)
		goto out;
	if ((rc = ckpt_get(rd, "ranges", s->ranges, rbytes, err, errlen)) < 0)
		goto out;
	for (int i = 0; i < TS_SECTIONS; i++)
		if ((rc = ckpt_get(rd, section_name[i], s->sec[i], pbytes, err, errlen)) < 0)
			goto out;
	if ((rc = index_runs(s, nparams, err, errlen)) < 0)
		goto out;
	if (with_state)
		rc = read_state(s, rd, err, errlen);
out:
	ckpt_shard_close(rd);
	if (rc < 0)
		train_shard_release(s);
	return rc;
}

/* RET: the first run of s that ends after global g (s->nruns if none). */
static size_t first_run_after(const train_shard *s, uint64_t g)
{
	size_t lo = 0, hi = s->nruns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ranges[2 * mid + 1] <= g)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t train_shard_fill(const train_shard *s, const mp_run *want, size_t nwant, size_t base,
                        float *const dst[TS_SECTIONS])
{
	size_t copied = 0;
	for (size_t i = 0; i < nwant; i++) {
		uint64_t wb = want[i].global, we = wb + want[i].n;
		for (size_t j = first_run_after(s, wb); j < s->nruns && s->ranges[2 * j] < we;
		     j++) {
			uint64_t b = s->ranges[2 * j], e = s->ranges[2 * j + 1];
			uint64_t lo = b > wb ? b : wb, hi = e < we ? e : we;
			size_t from = s->at[j] + (size_t)(lo - b);
			size_t to = want[i].local - base + (size_t)(lo - wb);
			for (int k = 0; k < TS_SECTIONS; k++)
				memcpy(dst[k] + to, s->sec[k] + from,
				       (size_t)(hi - lo) * sizeof(float));
			copied += (size_t)(hi - lo);
		}
	}
	return copied;
}

int train_ckpt_params(ckpt_store *st, const json_t *model, size_t nparams, float *out,
                      ckpt_manifest *m, char *err, size_t errlen)
{
	int step = 0, rc = ckpt_latest(st, &step, err, errlen);
	memset(m, 0, sizeof(*m));
	if (rc == 0)
		rc = ckpt_manifest_read(st, step, m, err, errlen);
	if (rc < 0)
		return rc;
	if (!json_equal(json_object_get(m->config, "model"), model)) {
		snprintf(err, errlen,
		         "the checkpoint of step %d is of another model than the job's", m->step);
		return -ERR_INVALID_ARGUMENT;
	}
	size_t filled = 0;
	for (int k = 0; rc == 0 && k < m->world; k++) {
		train_shard s;
		if ((rc = train_shard_read(&s, st, m, k, nparams, false, err, errlen)) < 0)
			break;
		/* the shards' runs do not overlap (each element is owned once) */
		for (size_t j = 0; j < s.nruns; j++) {
			uint64_t b = s.ranges[2 * j], e = s.ranges[2 * j + 1];
			memcpy(out + b, s.sec[TS_PARAMS] + s.at[j],
			       (size_t)(e - b) * sizeof(float));
			filled += (size_t)(e - b);
		}
		train_shard_release(&s);
	}
	if (rc == 0 && filled != nparams) {
		snprintf(err, errlen,
		         "the checkpoint of step %d holds %zu of the model's %zu weights", m->step,
		         filled, nparams);
		rc = -ERR_CHECKPOINT_CORRUPT;
	}
	return rc;
}
