/*
 * test_train_gpt.c - model parts in a world of one: activation
 * recomputation, pipeline stages chained by hand, micro-batch slots, the
 * hook calls of a part, and the parts gpt_new_part refuses.
 *
 * Everything here is expected to match the whole model bit for bit,
 * except the gradient of unit 0 when two stages share it (the LM head's
 * and the embeddings' contributions are then summed in another order).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "gpt.h"
#include "mp.h"
#include "unit.h"

/* --- helpers ------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static float *fbuf(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof *p);
	ck_assert_ptr_nonnull(p);
	return p;
}

static int32_t *tokens(size_t n, int V, uint64_t seed)
{
	int32_t *t = calloc(n, sizeof *t);
	ck_assert_ptr_nonnull(t);
	for (size_t i = 0; i < n; i++)
		t[i] = (int32_t)(rng_next(&seed) % (uint64_t)V);
	return t;
}

/* GPT-2 init plus noise, so that no bias is 0 and no LayerNorm weight is 1. */
static float *model_params(const gpt_config *cfg, uint64_t seed)
{
	size_t np = gpt_num_params(cfg);
	float *p = fbuf(np);
	gpt_init_params(cfg, p, seed);
	for (size_t i = 0; i < np; i++)
		p[i] += 0.05f * ((float)(rng_next(&seed) >> 40) * 0x1p-24f - 0.5f);
	return p;
}

static void check_equal(const char *what, const float *got, const float *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(memcmp(&got[i], &want[i], sizeof(float)) == 0,
		              "%s[%zu]: got %.9g, want %.9g bit for bit", what, i, (double)got[i],
		              (double)want[i]);
}

/* |got - want| <= rtol max |want| for every element; want must not be all zero. */
static void check_close(const char *what, const float *got, const float *want, size_t n,
                        double rtol)
{
	double mx = 0;
	for (size_t i = 0; i < n; i++)
		mx = fmax(mx, fabs(want[i]));
	ck_assert_msg(mx > 0, "%s: the reference is all zero", what);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(fabs((double)got[i] - want[i]) <= rtol * mx,
		              "%s[%zu]: got %.9g, want %.9g (max %g)", what, i, (double)got[i],
		              (double)want[i], mx);
}

static void check_bits(const char *what, float got, float want)
{
	ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "%s: got %.9g, want %.9g bit for bit",
	              what, (double)got, (double)want);
}

static const gpt_config cfg3 = {.max_seq_len = 8,
                                .vocab_size = 61,
                                .padded_vocab_size = 64,
                                .num_layers = 3,
                                .num_heads = 4,
                                .channels = 32};

static const gpt_config cfg4 = {.max_seq_len = 8,
                                .vocab_size = 61,
                                .padded_vocab_size = 64,
                                .num_layers = 4,
                                .num_heads = 4,
                                .channels = 32};

enum { B = 2, T = 8 };

/* A whole model with a recompute mode and slots, over flat arrays. */
typedef struct whole {
	const gpt_config *cfg;
	float *params, *grads;
	gpt_flat flat;
	gpt_hooks hooks;
	gpt_model *m;
} whole;

static void whole_init(whole *w, const gpt_config *cfg, const float *params, gpt_recompute rc,
                       int slots, gpt_precision prec)
{
	char err[256];
	size_t np = gpt_num_params(cfg);
	w->cfg = cfg;
	w->params = fbuf(np);
	memcpy(w->params, params, np * sizeof(float));
	w->grads = fbuf(np);
	w->flat = (gpt_flat){.cfg = cfg, .params = w->params, .grads = w->grads};
	w->hooks = gpt_hooks_flat(&w->flat);
	gpt_part part = gpt_part_whole(cfg);
	part.recompute = rc;
	part.slots = slots;
	w->m = gpt_new_part(cfg, &part, B, T, prec, err, sizeof err);
	ck_assert_msg(w->m != NULL, "gpt_new_part: %s", err);
	ck_assert_int_eq(gpt_error(w->m), 0);
}

static void whole_free(whole *w)
{
	gpt_free(w->m);
	free(w->params);
	free(w->grads);
}

/* One pipeline stage (tp 1) over its local arrays. */
typedef struct stage {
	mp_layout *lay;
	float *params, *grads;
	gpt_flat flat;
	gpt_hooks hooks;
	gpt_model *m;
} stage;

static void stage_init(stage *s, const gpt_config *cfg, int pp, int rank, const float *global,
                       gpt_recompute rc, int slots)
{
	char err[256];
	s->lay = mp_layout_new(cfg, 1, 0, pp, rank, err, sizeof err);
	ck_assert_msg(s->lay != NULL, "mp_layout_new: %s", err);
	s->params = fbuf(s->lay->nparams);
	s->grads = fbuf(s->lay->nparams);
	mp_extract(s->lay, global, s->params);
	s->flat = (gpt_flat){
	    .cfg = cfg, .params = s->params, .grads = s->grads, .unit_offset = s->lay->unit_offset};
	s->hooks = gpt_hooks_flat(&s->flat);
	gpt_part part = mp_layout_part(s->lay);
	part.recompute = rc;
	part.slots = slots;
	s->m = gpt_new_part(cfg, &part, B, T, GPT_FP32, err, sizeof err);
	ck_assert_msg(s->m != NULL, "gpt_new_part: %s", err);
}

static void stage_free(stage *s)
{
	gpt_free(s->m);
	free(s->params);
	free(s->grads);
	mp_layout_free(s->lay);
}

/* Forward of slot through stages 0 .. pp-1; RET the last stage's loss. */
static float pipe_forward(stage *st, int pp, int slot, const int32_t *in, const int32_t *tg)
{
	const float *x = NULL;
	float loss = 0;
	for (int r = 0; r < pp; r++) {
		loss = gpt_forward_part(st[r].m, &st[r].hooks, slot, r == 0 ? in : NULL, x,
		                        r == pp - 1 ? tg : NULL);
		if (r < pp - 1)
			ck_assert_float_eq(loss, 0.0f);
		x = gpt_stage_output(st[r].m, slot);
	}
	return loss;
}

static void pipe_backward(stage *st, int pp, int slot)
{
	const float *dy = NULL;
	for (int r = pp - 1; r >= 0; r--) {
		gpt_backward_part(st[r].m, &st[r].hooks, slot, 1.0f, dy);
		dy = gpt_stage_input_grad(st[r].m);
	}
}

/*
 * Stage gradients against the whole model's: every layer and the final
 * LayerNorm bit for bit, unit 0 as the sum of the first and the last
 * stage's copies within rtol (summation order).
 */
static void check_stage_grads(const gpt_config *cfg, stage *st, int pp, const float *want)
{
	int L = cfg->num_layers;
	char what[64];
	for (int r = 0; r < pp; r++)
		for (int u = 1; u <= L + 1; u++) {
			size_t off = st[r].lay->unit_offset[u];
			if (off == SIZE_MAX)
				continue;
			snprintf(what, sizeof what, "stage %d of %d, unit %d", r, pp, u);
			check_equal(what, st[r].grads + off, want + gpt_unit_offset(cfg, u),
			            gpt_unit_numel(cfg, u));
		}
	size_t n0 = gpt_unit_numel(cfg, 0);
	float *sum = fbuf(n0);
	for (size_t i = 0; i < n0; i++)
		sum[i] = st[0].grads[i] + st[pp - 1].grads[st[pp - 1].lay->unit_offset[0] + i];
	snprintf(what, sizeof what, "unit 0 over %d stages", pp);
	check_close(what, sum, want, n0, 1e-6);
	free(sum);
}

/* --- recomputation -------------------------------------------------------- */

/* Two forward/backward passes (gradients accumulate); the losses into loss[2]. */
static void two_passes(whole *w, const int32_t *tok, float loss[2])
{
	for (int k = 0; k < 2; k++) {
		const int32_t *in = tok + (size_t)k * B * T * 2;
		loss[k] = gpt_forward(w->m, &w->hooks, in, in + B * T);
		gpt_backward(w->m, &w->hooks, 1.0f);
	}
}

START_TEST(test_recompute_bits)
{
	const gpt_config *cfg = &cfg3;
	size_t np = gpt_num_params(cfg);
	float *params = model_params(cfg, 11);
	int32_t *tok = tokens(4 * B * T, cfg->vocab_size, 12);
	const gpt_precision precs[] = {GPT_FP32, GPT_BF16};
	for (int pi = 0; pi < 2; pi++) {
		whole ref;
		float want[2];
		whole_init(&ref, cfg, params, GPT_RECOMPUTE_NONE, 1, precs[pi]);
		two_passes(&ref, tok, want);
		for (gpt_recompute rc = GPT_RECOMPUTE_SELECTIVE; rc <= GPT_RECOMPUTE_FULL; rc++) {
			whole w;
			float got[2];
			whole_init(&w, cfg, params, rc, 1, precs[pi]);
			two_passes(&w, tok, got);
			check_bits("first loss", got[0], want[0]);
			check_bits("second loss", got[1], want[1]);
			check_equal(rc == GPT_RECOMPUTE_FULL ? "full recompute" : "selective",
			            w.grads, ref.grads, np);
			check_equal("logits", gpt_logits(w.m), gpt_logits(ref.m),
			            (size_t)B * T * cfg->padded_vocab_size);
			whole_free(&w);
		}
		whole_free(&ref);
	}
	free(params);
	free(tok);
}
END_TEST

/* The activations drop: by the attention probabilities of all but one layer, then more. */
START_TEST(test_recompute_memory)
{
	gpt_config cfg = cfg3;
	cfg.max_seq_len = 64;
	char err[256];
	size_t bytes[3];
	for (int rc = 0; rc < 3; rc++) {
		gpt_part part = gpt_part_whole(&cfg);
		part.recompute = (gpt_recompute)rc;
		gpt_model *m = gpt_new_part(&cfg, &part, B, 64, GPT_FP32, err, sizeof err);
		ck_assert_msg(m != NULL, "%s", err);
		bytes[rc] = gpt_activation_bytes(m);
		gpt_free(m);
	}
	size_t att = (size_t)B * cfg.num_heads * 64 * 64 * sizeof(float);
	ck_assert_uint_eq(bytes[0] - bytes[1], (size_t)(cfg.num_layers - 1) * att);
	ck_assert_msg(bytes[2] < bytes[1], "full %zu vs selective %zu bytes", bytes[2], bytes[1]);
	/* full keeps of each layer only its output [N,C]; one working set of the other
	 * activations (15 [N,C] worth and 4 [N] LayerNorm statistics) serves all layers */
	size_t N = (size_t)B * 64, NC = N * (size_t)cfg.channels;
	ck_assert_uint_eq(bytes[1] - bytes[2],
	                  (size_t)(cfg.num_layers - 1) * (15 * NC + 4 * N) * sizeof(float));

	/* a middle stage holds no logits: far less than a stage with the head */
	gpt_part mid = {.tp = 1, .first_layer = 1, .num_layers = 1, .slots = 1};
	gpt_part last = {.tp = 1, .first_layer = 2, .num_layers = 1, .has_head = true, .slots = 1};
	gpt_model *a = gpt_new_part(&cfg, &mid, B, 64, GPT_FP32, err, sizeof err);
	gpt_model *b = gpt_new_part(&cfg, &last, B, 64, GPT_FP32, err, sizeof err);
	ck_assert(a && b);
	size_t logits = (size_t)B * 64 * cfg.padded_vocab_size * sizeof(float);
	ck_assert_uint_ge(gpt_activation_bytes(b) - gpt_activation_bytes(a), 2 * logits);
	gpt_free(a);
	gpt_free(b);
}
END_TEST

/* --- pipeline stages --------------------------------------------------------- */

static void pipeline_case(const gpt_config *cfg, int pp, gpt_recompute rc)
{
	size_t np = gpt_num_params(cfg);
	float *params = model_params(cfg, 21);
	int32_t *tok = tokens(2 * B * T, cfg->vocab_size, 22);
	whole ref;
	whole_init(&ref, cfg, params, GPT_RECOMPUTE_NONE, 1, GPT_FP32);
	float want = gpt_forward(ref.m, &ref.hooks, tok, tok + B * T);
	gpt_backward(ref.m, &ref.hooks, 1.0f);

	stage st[4];
	for (int r = 0; r < pp; r++)
		stage_init(&st[r], cfg, pp, r, params, rc, 1);
	float loss = pipe_forward(st, pp, 0, tok, tok + B * T);
	check_bits("pipelined loss", loss, want);
	check_equal("last stage output", gpt_stage_output(st[pp - 1].m, 0),
	            gpt_stage_output(ref.m, 0), (size_t)B * T * cfg->channels);
	pipe_backward(st, pp, 0);
	check_stage_grads(cfg, st, pp, ref.grads);
	check_equal("embeddings' output gradient", gpt_stage_input_grad(st[0].m),
	            gpt_stage_input_grad(ref.m), (size_t)B * T * cfg->channels);
	/* the last stage's copy of unit 0 gets the LM head's gradient only: none for wpe */
	const float *dwpe = st[pp - 1].grads + st[pp - 1].lay->unit_offset[0] +
	                    (size_t)cfg->padded_vocab_size * cfg->channels;
	for (size_t i = 0; i < (size_t)cfg->max_seq_len * cfg->channels; i++)
		ck_assert(dwpe[i] == 0.0f);
	ck_assert(np > 0);
	for (int r = 0; r < pp; r++)
		stage_free(&st[r]);
	whole_free(&ref);
	free(params);
	free(tok);
}

START_TEST(test_pipeline_two_stages)
{
	pipeline_case(&cfg4, 2, GPT_RECOMPUTE_NONE);
	pipeline_case(&cfg4, 2, GPT_RECOMPUTE_FULL);
}
END_TEST

START_TEST(test_pipeline_four_stages)
{
	pipeline_case(&cfg4, 4, GPT_RECOMPUTE_NONE);
	pipeline_case(&cfg4, 4, GPT_RECOMPUTE_SELECTIVE);
}
END_TEST

/* --- slots -------------------------------------------------------------------- */

START_TEST(test_slots_whole)
{
	const gpt_config *cfg = &cfg3;
	size_t np = gpt_num_params(cfg);
	float *params = model_params(cfg, 31);
	int32_t *tok = tokens(4 * B * T, cfg->vocab_size, 32);
	const int32_t *b0 = tok, *b1 = tok + 2 * B * T;
	for (gpt_recompute rc = GPT_RECOMPUTE_NONE; rc <= GPT_RECOMPUTE_FULL; rc++) {
		whole seq, sl;
		whole_init(&seq, cfg, params, rc, 1, GPT_FP32);
		whole_init(&sl, cfg, params, rc, 2, GPT_FP32);
		float want0 = gpt_forward(seq.m, &seq.hooks, b0, b0 + B * T);
		gpt_backward(seq.m, &seq.hooks, 1.0f);
		float want1 = gpt_forward(seq.m, &seq.hooks, b1, b1 + B * T);
		gpt_backward(seq.m, &seq.hooks, 1.0f);

		float got0 = gpt_forward_part(sl.m, &sl.hooks, 0, b0, NULL, b0 + B * T);
		float got1 = gpt_forward_part(sl.m, &sl.hooks, 1, b1, NULL, b1 + B * T);
		gpt_backward_part(sl.m, &sl.hooks, 0, 1.0f, NULL);
		gpt_backward_part(sl.m, &sl.hooks, 1, 1.0f, NULL);
		check_bits("slot 0 loss", got0, want0);
		check_bits("slot 1 loss", got1, want1);
		ck_assert(memcmp(&want0, &want1, sizeof want0) != 0); /* the batches differ */
		check_equal("gradients of two slots", sl.grads, seq.grads, np);
		whole_free(&seq);
		whole_free(&sl);
	}
	free(params);
	free(tok);
}
END_TEST

/* Two stages, two slots, in the 1F1B order of stage 0 against a sequential whole model. */
START_TEST(test_slots_pipeline)
{
	const gpt_config *cfg = &cfg4;
	float *params = model_params(cfg, 41);
	int32_t *tok = tokens(4 * B * T, cfg->vocab_size, 42);
	const int32_t *bt[2] = {tok, tok + 2 * B * T};
	whole ref;
	whole_init(&ref, cfg, params, GPT_RECOMPUTE_NONE, 1, GPT_FP32);
	float want[2];
	for (int k = 0; k < 2; k++) {
		want[k] = gpt_forward(ref.m, &ref.hooks, bt[k], bt[k] + B * T);
		gpt_backward(ref.m, &ref.hooks, 1.0f);
	}
	stage st[2];
	stage_init(&st[0], cfg, 2, 0, params, GPT_RECOMPUTE_SELECTIVE, 2);
	stage_init(&st[1], cfg, 2, 1, params, GPT_RECOMPUTE_FULL, 1);
	gpt_model *s0 = st[0].m, *s1 = st[1].m;
	const gpt_hooks *h0 = &st[0].hooks, *h1 = &st[1].hooks;
	float got[2];
	gpt_forward_part(s0, h0, 0, bt[0], NULL, NULL);
	gpt_forward_part(s0, h0, 1, bt[1], NULL, NULL);
	got[0] = gpt_forward_part(s1, h1, 0, NULL, gpt_stage_output(s0, 0), bt[0] + B * T);
	gpt_backward_part(s1, h1, 0, 1.0f, NULL);
	gpt_backward_part(s0, h0, 0, 1.0f, gpt_stage_input_grad(s1));
	got[1] = gpt_forward_part(s1, h1, 0, NULL, gpt_stage_output(s0, 1), bt[1] + B * T);
	gpt_backward_part(s1, h1, 0, 1.0f, NULL);
	gpt_backward_part(s0, h0, 1, 1.0f, gpt_stage_input_grad(s1));
	check_bits("micro-batch 0 loss", got[0], want[0]);
	check_bits("micro-batch 1 loss", got[1], want[1]);
	check_stage_grads(cfg, st, 2, ref.grads);
	stage_free(&st[0]);
	stage_free(&st[1]);
	whole_free(&ref);
	free(params);
	free(tok);
}
END_TEST

/* --- hook calls of a part ----------------------------------------------------------- */

/*
 * Records the calls and behaves like a ZeRO-3 runtime: params(u) copies
 * the unit into a shared buffer (unit 0 into its own) and poisons the
 * previous copy; grads(u) hands out a private buffer that grads_done(u)
 * folds into the local gradients and poisons. Only the part's units may
 * be asked for.
 */
typedef struct recorder {
	const stage *st;
	float *grads;
	float *pbuf0, *pbuf;
	float *gbuf[16];
	char log[512];
} recorder;

static size_t unit_numel(const mp_layout *lay, int u)
{
	ck_assert_msg(lay->unit_index[u] >= 0, "unit %d is not the part's", u);
	return lay->units[lay->unit_index[u]].numel;
}

static void rec_log(recorder *r, char kind, int unit)
{
	char item[16];
	snprintf(item, sizeof item, "%s%c%d", r->log[0] ? " " : "", kind, unit);
	ck_assert_uint_lt(strlen(r->log) + strlen(item), sizeof r->log);
	strcat(r->log, item);
}

static const float *rec_params(void *ctx, int unit)
{
	recorder *r = ctx;
	const mp_layout *lay = r->st->lay;
	rec_log(r, 'P', unit);
	size_t n = unit_numel(lay, unit), big = 0;
	for (int i = 0; i < lay->nunits; i++)
		if (lay->units[i].id != 0 && lay->units[i].numel > big)
			big = lay->units[i].numel;
	float *dst = unit == 0 ? r->pbuf0 : r->pbuf;
	if (unit != 0)
		for (size_t i = 0; i < big; i++)
			r->pbuf[i] = NAN;
	memcpy(dst, r->st->params + lay->unit_offset[unit], n * sizeof(float));
	return dst;
}

static float *rec_grads(void *ctx, int unit)
{
	recorder *r = ctx;
	rec_log(r, 'G', unit);
	if (!r->gbuf[unit])
		r->gbuf[unit] = fbuf(unit_numel(r->st->lay, unit));
	return r->gbuf[unit];
}

static void rec_done(void *ctx, int unit)
{
	recorder *r = ctx;
	rec_log(r, 'D', unit);
	float *g = r->gbuf[unit];
	ck_assert_msg(g != NULL, "D%d without G%d", unit, unit);
	size_t n = unit_numel(r->st->lay, unit);
	float *dst = r->grads + r->st->lay->unit_offset[unit];
	for (size_t i = 0; i < n; i++) {
		dst[i] += g[i];
		g[i] = NAN;
	}
	free(g);
	r->gbuf[unit] = NULL;
}

START_TEST(test_part_hook_order)
{
	gpt_config cfg = cfg4;
	cfg.num_layers = 6; /* three stages of two layers; L + 1 = 7 */
	float *params = model_params(&cfg, 51);
	int32_t *tok = tokens(2 * B * T, cfg.vocab_size, 52);
	const char *want[3] = {
	    "P0 P1 P2 | P2 G2 D2 P1 G1 D1 P0 G0 D0",
	    "P3 P4 | P4 G4 D4 P3 G3 D3",
	    "P5 P6 P7 P0 | P0 G0 P7 G7 D7 P6 G6 D6 P5 G5 D5 D0",
	};
	stage st[3];
	for (int r = 0; r < 3; r++)
		stage_init(&st[r], &cfg, 3, r, params, GPT_RECOMPUTE_FULL, 1);
	pipe_forward(st, 3, 0, tok, tok + B * T);
	pipe_backward(st, 3, 0);

	recorder rec[3];
	const float *x = NULL, *dy = NULL;
	for (int r = 0; r < 3; r++) {
		size_t n = st[r].lay->nparams;
		rec[r] = (recorder){.st = &st[r], .grads = fbuf(n)};
		rec[r].pbuf0 = fbuf(n);
		rec[r].pbuf = fbuf(n);
	}
	gpt_hooks h[3];
	for (int r = 0; r < 3; r++) {
		h[r] = (gpt_hooks){.ctx = &rec[r],
		                   .params = rec_params,
		                   .grads = rec_grads,
		                   .grads_done = rec_done};
		gpt_forward_part(st[r].m, &h[r], 0, r == 0 ? tok : NULL, x,
		                 r == 2 ? tok + B * T : NULL);
		x = gpt_stage_output(st[r].m, 0);
		strcat(rec[r].log, " |");
	}
	for (int r = 2; r >= 0; r--) {
		gpt_backward_part(st[r].m, &h[r], 0, 1.0f, dy);
		dy = gpt_stage_input_grad(st[r].m);
	}
	for (int r = 0; r < 3; r++) {
		ck_assert_msg(strcmp(rec[r].log, want[r]) == 0, "stage %d: %s, want %s", r,
		              rec[r].log, want[r]);
		check_equal("grads through the recorder", rec[r].grads, st[r].grads,
		            st[r].lay->nparams);
		free(rec[r].grads);
		free(rec[r].pbuf0);
		free(rec[r].pbuf);
		stage_free(&st[r]);
	}
	free(params);
	free(tok);
}
END_TEST

/* --- refusals ----------------------------------------------------------------------- */

static void refused(const gpt_part *p, const char *msg)
{
	char err[256] = "";
	gpt_model *m = gpt_new_part(&cfg4, p, B, T, GPT_FP32, err, sizeof err);
	ck_assert_ptr_null(m);
	ck_assert_str_eq(err, msg);
}

START_TEST(test_part_refused)
{
	gpt_part p = gpt_part_whole(&cfg4);
	ck_assert_int_eq(p.tp, 1);
	ck_assert_int_eq(p.num_layers, 4);
	ck_assert(p.has_embed && p.has_head && p.slots == 1 && !p.recompute && !p.tp_comm);

	p.tp = 3;
	refused(&p, "heads (4) is not divisible by tensor_parallel (3)");
	p.tp = 2;
	refused(&p, "tensor_parallel 2 needs a tensor group of 2 ranks");
	char err[256];
	comm *self = comm_self_new(err, sizeof err);
	ck_assert_ptr_nonnull(self);
	p.tp_comm = self; /* a group of one */
	refused(&p, "tensor_parallel 2 needs a tensor group of 2 ranks");
	comm_free(self);

	p = gpt_part_whole(&cfg4);
	p.has_embed = p.has_head = false;
	p.first_layer = 2;
	p.num_layers = 3;
	refused(&p, "layers 2 .. 4 are outside the model's 0 .. 3");
	p.first_layer = -1;
	p.num_layers = 2;
	refused(&p, "layers -1 .. 0 are outside the model's 0 .. 3");
	p.first_layer = 1;
	p.num_layers = 0;
	refused(&p, "layers 1 .. 0 are outside the model's 0 .. 3");
	p.num_layers = 1;
	p.has_embed = true;
	refused(&p, "a part with the embeddings must start at layer 0, not 1");
	p.has_embed = false;
	p.has_head = true;
	refused(&p, "a part with the LM head must end at layer 3, not 1");
	p.has_head = false;
	p.slots = 0;
	refused(&p, "a part needs at least one slot, not 0");
	p.slots = 1;
	p.recompute = (gpt_recompute)7;
	refused(&p, "unknown recompute mode 7");
	p.recompute = GPT_RECOMPUTE_FULL;
	gpt_model *m = gpt_new_part(&cfg4, &p, B, T, GPT_FP32, err, sizeof err);
	ck_assert_msg(m != NULL, "a middle stage: %s", err);
	gpt_free(m);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_gpt");
	TCase *tc = tcase_create("parts");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_recompute_bits);
	tcase_add_test(tc, test_recompute_memory);
	tcase_add_test(tc, test_pipeline_two_stages);
	tcase_add_test(tc, test_pipeline_four_stages);
	tcase_add_test(tc, test_slots_whole);
	tcase_add_test(tc, test_slots_pipeline);
	tcase_add_test(tc, test_part_hook_order);
	tcase_add_test(tc, test_part_refused);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
