/*
 * mp.c - the rank grid and the local slice of the model (mp.h).
 *
 * A piece of a [rows, cols] tensor is a rectangle of it: rows [r0, r0 +
 * nr) and columns [c0, c0 + nc), stored row-major. Its elements map to
 * the global tensor row by row, so a local range becomes at most one run
 * per row (one run in all when the piece has every column). GPT_SPLIT_QKV
 * is three such rectangles, one per third, one after the other.
 */
#include "mp.h"

#include "layout.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mp_grid_init(mp_grid *g, int world, int rank, int dp, int tp, int pp, char *err, size_t errlen)
{
	if (dp < 1 || tp < 1 || pp < 1) {
		snprintf(err, errlen,
		         "data, tensor and pipeline parallel must be at least 1, not "
		         "%d x %d x %d",
		         dp, tp, pp);
		return -1;
	}
	layout l = {.data_parallel = dp, .tensor_parallel = tp, .pipeline_parallel = pp};
	layout_fit fit = {.ranks = world, .ranks_said = "the world has %lld ranks"};
	if (layout_check_msg(&l, &fit, err, errlen) < 0)
		return -1;
	if (rank < 0 || rank >= world) {
		snprintf(err, errlen, "rank %d is outside a world of %d", rank, world);
		return -1;
	}
	*g = (mp_grid){.world = world, .rank = rank, .dp = dp, .tp = tp, .pp = pp};
	g->tp_rank = rank % tp;
	g->dp_rank = rank / tp % dp;
	g->pp_rank = rank / (tp * dp);
	return 0;
}

int mp_grid_rank(const mp_grid *g, int dp_rank, int tp_rank, int pp_rank)
{
	return (pp_rank * g->dp + dp_rank) * g->tp + tp_rank;
}

mp_split mp_group_split(const mp_grid *g, mp_group which)
{
	bool end_stage = g->pp_rank == 0 || g->pp_rank == g->pp - 1;
	switch (which) {
	case MP_TP:
		return (mp_split){g->tp, g->pp_rank * g->dp + g->dp_rank, g->tp_rank, true};
	case MP_DP:
		return (mp_split){g->dp, g->pp_rank * g->tp + g->tp_rank, g->dp_rank, true};
	case MP_PP:
		return (mp_split){g->pp, g->dp_rank * g->tp + g->tp_rank, g->pp_rank, true};
	case MP_TIE:
		if (!end_stage) /* a colour no other rank has */
			return (mp_split){2, g->dp * g->tp + g->rank, g->pp_rank, false};
		return (mp_split){g->pp > 1 ? 2 : 1, g->dp_rank * g->tp + g->tp_rank, g->pp_rank,
		                  true};
	default:
		return (mp_split){1, 0, 0, false};
	}
}

/* The rectangle k (0, or 0..2 for QKV) of tensor t's piece on tp rank r. */
typedef struct rect {
	size_t r0, nr, c0, nc;
} rect;

static int rect_count(const gpt_tensor *t, int tp)
{
	return tp > 1 && t->split == GPT_SPLIT_QKV ? 3 : 1;
}

static rect rect_of(const gpt_tensor *t, int tp, int r, int k)
{
	rect x = {0, t->rows, 0, t->cols};
	if (tp <= 1)
		return x;
	switch (t->split) {
	case GPT_SPLIT_ROWS:
		x.nr = t->rows / (size_t)tp;
		x.r0 = (size_t)r * x.nr;
		break;
	case GPT_SPLIT_COLS:
		x.nc = t->cols / (size_t)tp;
		x.c0 = (size_t)r * x.nc;
		break;
	case GPT_SPLIT_QKV: {
		size_t third = t->rows / 3;
		x.nr = third / (size_t)tp;
		x.r0 = (size_t)k * third + (size_t)r * x.nr;
		break;
	}
	default:
		break;
	}
	return x;
}

void mp_layout_free(mp_layout *lay)
{
	if (!lay)
		return;
	free(lay->units);
	free(lay->tensors);
	free(lay->unit_offset);
	free(lay->unit_index);
	free(lay);
}

static bool unit_on_stage(const mp_layout *lay, int u)
{
	int L = lay->cfg.num_layers;
	if (u == 0)
		return lay->has_embed || lay->has_head;
	if (u == L + 1)
		return lay->has_head;
	return u - 1 >= lay->first_layer && u - 1 < lay->first_layer + lay->num_layers;
}

mp_layout *mp_layout_new(const gpt_config *cfg, int tp, int tp_rank, int pp, int pp_rank, char *err,
                         size_t errlen)
{
	if (gpt_config_check(cfg, err, errlen) < 0)
		return NULL;
	if (tp < 1 || pp < 1) {
		snprintf(err, errlen,
		         "tensor and pipeline parallel must be at least 1, not %d x %d", tp, pp);
		return NULL;
	}
	layout l = {.tensor_parallel = tp, .pipeline_parallel = pp};
	layout_fit fit = {.heads = cfg->num_heads, .layers = cfg->num_layers};
	if (layout_check_msg(&l, &fit, err, errlen) < 0)
		return NULL;
	if (tp_rank < 0 || tp_rank >= tp || pp_rank < 0 || pp_rank >= pp) {
		snprintf(err, errlen, "rank (tp %d, pp %d) is outside the grid %d x %d", tp_rank,
		         pp_rank, tp, pp);
		return NULL;
	}
	int L = cfg->num_layers, nunits = L + 2;
	int max = gpt_tensors(cfg, NULL, 0);
	mp_layout *lay = calloc(1, sizeof(*lay));
	gpt_tensor *all = calloc((size_t)max, sizeof(*all));
	if (lay) {
		lay->units = calloc((size_t)nunits, sizeof(*lay->units));
		lay->tensors = calloc((size_t)max, sizeof(*lay->tensors));
		lay->unit_offset = malloc((size_t)nunits * sizeof(*lay->unit_offset));
		lay->unit_index = malloc((size_t)nunits * sizeof(*lay->unit_index));
	}
	if (!lay || !all || !lay->units || !lay->tensors || !lay->unit_offset || !lay->unit_index) {
		free(all);
		mp_layout_free(lay);
		snprintf(err, errlen, "out of memory for the model layout");
		return NULL;
	}
	gpt_tensors(cfg, all, max);
	lay->cfg = *cfg;
	lay->tp = tp;
	lay->tp_rank = tp_rank;
	lay->pp = pp;
	lay->pp_rank = pp_rank;
	lay->num_layers = L / pp;
	lay->first_layer = pp_rank * lay->num_layers;
	lay->has_embed = pp_rank == 0;
	lay->has_head = pp_rank == pp - 1;

	size_t off = 0;
	int k = 0;
	for (int u = 0; u < nunits; u++) {
		lay->unit_offset[u] = SIZE_MAX;
		lay->unit_index[u] = -1;
		if (!unit_on_stage(lay, u))
			continue;
		mp_unit *mu = &lay->units[lay->nunits];
		lay->unit_index[u] = lay->nunits++;
		lay->unit_offset[u] = off;
		mu->id = u;
		mu->offset = off;
		mu->first_tensor = lay->ntensors;
		for (; k < max && all[k].unit < u; k++)
			;
		for (; k < max && all[k].unit == u; k++) {
			mp_tensor *t = &lay->tensors[lay->ntensors++];
			t->t = all[k];
			t->offset = off;
			t->numel = gpt_tensor_local_numel(&all[k], tp);
			t->owner = (tp_rank == 0 || all[k].split != GPT_REPLICATED) &&
			           (u != 0 || lay->has_embed);
			off += t->numel;
			mu->ntensors++;
		}
		mu->numel = off - mu->offset;
	}
	lay->nparams = off;
	free(all);
	return lay;
}

gpt_part mp_layout_part(const mp_layout *lay)
{
	return (gpt_part){.tp = lay->tp,
	                  .first_layer = lay->first_layer,
	                  .num_layers = lay->num_layers,
	                  .has_embed = lay->has_embed,
	                  .has_head = lay->has_head,
	                  .slots = 1,
	                  .recompute = GPT_RECOMPUTE_NONE};
}

/* Runs being collected: the first max are stored; n counts them all. */
typedef struct run_list {
	mp_run *out;
	size_t max, n;
	mp_run last; /* the newest, stored or not (merging must not depend on max) */
} run_list;

/* Append a run (merged with the previous one when contiguous in both). */
static void run_add(run_list *l, size_t global, size_t local, size_t len)
{
	if (len == 0)
		return;
	mp_run *p = &l->last;
	if (l->n > 0 && p->global + p->n == global && p->local + p->n == local) {
		p->n += len;
		if (l->n <= l->max)
			l->out[l->n - 1].n = p->n;
		return;
	}
	l->last = (mp_run){global, local, len};
	if (l->n < l->max)
		l->out[l->n] = l->last;
	l->n++;
}

/* The runs of local piece elements [b, e) (relative to the tensor's piece) of t. */
static void tensor_runs(const mp_layout *lay, const mp_tensor *t, size_t b, size_t e, run_list *l)
{
	size_t at = 0; /* piece element where rectangle k starts */
	for (int k = 0; k < rect_count(&t->t, lay->tp) && b < e; k++) {
		rect x = rect_of(&t->t, lay->tp, lay->tp_rank, k);
		size_t size = x.nr * x.nc;
		size_t lo = b > at ? b : at, hi = e < at + size ? e : at + size;
		while (lo < hi) {
			size_t i = lo - at, row = i / x.nc, col = i % x.nc;
			size_t len = x.nc - col < hi - lo ? x.nc - col : hi - lo;
			size_t g = t->t.offset + (x.r0 + row) * t->t.cols + x.c0 + col;
			run_add(l, g, t->offset + lo, len);
			lo += len;
		}
		at += size;
	}
}

size_t mp_runs(const mp_layout *lay, size_t begin, size_t end, bool owned_only, mp_run *out,
               size_t max)
{
	run_list l = {.out = out, .max = max};
	for (int i = 0; i < lay->ntensors && begin < end; i++) {
		const mp_tensor *t = &lay->tensors[i];
		if (t->offset >= end || t->offset + t->numel <= begin)
			continue;
		if (owned_only && !t->owner)
			continue;
		size_t b = begin > t->offset ? begin - t->offset : 0;
		size_t e = end - t->offset < t->numel ? end - t->offset : t->numel;
		tensor_runs(lay, t, b, e, &l);
	}
	return l.n;
}

/* Call fn for every run of the whole layout (owned_only as mp_runs). */
static void each_run(const mp_layout *lay, bool owned_only, float *a, const float *b,
                     void (*fn)(const mp_run *, float *, const float *))
{
	enum { CHUNK = 256 };
	mp_run runs[CHUNK];
	for (int i = 0; i < lay->ntensors; i++) {
		const mp_tensor *t = &lay->tensors[i];
		if (owned_only && !t->owner)
			continue;
		/* a piece has at most one run per row; take CHUNK / 2 rows at a time */
		size_t row_len =
		    t->t.split == GPT_SPLIT_COLS && lay->tp > 1 ? t->t.cols / lay->tp : t->numel;
		size_t step = row_len * (CHUNK / 2);
		for (size_t b0 = 0; b0 < t->numel; b0 += step) {
			size_t e0 = b0 + step < t->numel ? b0 + step : t->numel;
			run_list l = {.out = runs, .max = CHUNK};
			tensor_runs(lay, t, b0, e0, &l);
			for (size_t k = 0; k < l.n && k < CHUNK; k++)
				fn(&runs[k], a, b);
		}
	}
}

static void copy_to_local(const mp_run *r, float *local, const float *global)
{
	memcpy(local + r->local, global + r->global, r->n * sizeof(float));
}

static void copy_to_global(const mp_run *r, float *global, const float *local)
{
	memcpy(global + r->global, local + r->local, r->n * sizeof(float));
}

void mp_extract(const mp_layout *lay, const float *global, float *local)
{
	each_run(lay, false, local, global, copy_to_local);
}

void mp_insert_owned(const mp_layout *lay, const float *local, float *global)
{
	each_run(lay, true, global, local, copy_to_global);
}
