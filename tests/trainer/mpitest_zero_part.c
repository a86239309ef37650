/*
 * mpitest_zero_part.c - the data-parallel runtime over a rank's slice of
 * the model (dp_new_part, zero.h; layouts from mp.h).
 *
 *   mpirun --allow-run-as-root --oversubscribe -np 2 build/tests/mpitest_zero_part
 *   build/tests/mpitest_zero_part                  (a world of one, no MPI)
 *
 * The stand-in model is standin.h's (as in mpitest_zero.c), driven over
 * a layout: each part makes the hook calls of its units only, in gpt.h's
 * part order, and the gradient of a local element is that of its global
 * element. Unit 0's LM-head part writes its first two thirds, the
 * embeddings' part its last two thirds, so the two halves of a tie
 * overlap. Replicated tensors of a tensor-parallel layout get equal
 * gradients on every tensor rank, as in the real model.
 *
 * "Harness tie": without a tie group (a world of one), a part adds both of
 * unit 0's contributions itself, so every copy of unit 0 sees the whole
 * gradient. A real tie (2 ranks, one pipeline stage each) sums the two
 * stages' partial unit-0 gradients in the runtime.
 *
 * Every rank computes the whole-model reference on its own comm_self run
 * and compares its local slice of it (mp_extract), within standin.h's
 * tolerance (only the order of sums differs).
 *
 * Only rank 0 prints progress; every rank prints its own failures
 * (mpicheck.h). The last line is check's summary format over all ranks'
 * checks, and the exit status is non-zero when any rank failed.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "gpt.h"
#include "mp.h"
#include "mpicheck.h"
#include "optim.h"
#include "standin.h"
#include "zero.h"

/* ---- the stand-in model over a layout ---- */

/* L 4 (pp 2 or 4): units of 204, 147 x 4 (odd: padding) and 6 floats. */
static const gpt_config pp_cfg = {.max_seq_len = 4,
                                  .vocab_size = 50,
                                  .padded_vocab_size = 64,
                                  .num_layers = 4,
                                  .num_heads = 1,
                                  .channels = 3};

/* NH 2, C 4 (tp 2): every split kind, replicated embeddings and LayerNorms. */
static const gpt_config tp_cfg = {.max_seq_len = 4,
                                  .vocab_size = 50,
                                  .padded_vocab_size = 64,
                                  .num_layers = 2,
                                  .num_heads = 2,
                                  .channels = 4};

typedef struct part_model {
	const mp_layout *lay;
	size_t *gidx; /* [nparams]: the global index of each local element */
	size_t n0;    /* unit 0's numel (0 when absent) */
	bool harness_tie;
} part_model;

static int part_model_init(part_model *pm, const mp_layout *lay, bool harness_tie)
{
	memset(pm, 0, sizeof(*pm));
	pm->lay = lay;
	pm->harness_tie = harness_tie;
	pm->gidx = malloc(lay->nparams * sizeof(size_t) + 1);
	size_t nr = mp_runs(lay, 0, lay->nparams, false, NULL, 0);
	mp_run *runs = malloc(nr * sizeof(*runs) + 1);
	if (!pm->gidx || !runs) {
		free(runs);
		return -1;
	}
	/* sizing (max 0) counts runs unmerged: use the count of the filling call */
	nr = mp_runs(lay, 0, lay->nparams, false, runs, nr);
	for (size_t k = 0; k < nr; k++)
		for (size_t j = 0; j < runs[k].n; j++)
			pm->gidx[runs[k].local + j] = runs[k].global + j;
	free(runs);
	if (lay->unit_index[0] >= 0)
		pm->n0 = lay->units[lay->unit_index[0]].numel;
	return 0;
}

static void add_grads(const part_model *pm, const gpt_hooks *h, int id, size_t from, size_t to,
                      float dloss, int step, int micro, const poison *bad)
{
	const mp_unit *mu = &pm->lay->units[pm->lay->unit_index[id]];
	const float *p = h->params(h->ctx, id);
	float *g = h->grads(h->ctx, id);
	for (size_t i = from; i < to; i++)
		g[i] += dloss * grad_of(p[i], pm->gidx[mu->offset + i], step, micro);
	if (bad && bad->step == step && bad->index >= mu->offset + from &&
	    bad->index < mu->offset + to)
		g[bad->index - mu->offset] = bad->value;
}

static void add_unit(const part_model *pm, const gpt_hooks *h, int id, float dloss, int step,
                     int micro, const poison *bad)
{
	size_t n = pm->lay->units[pm->lay->unit_index[id]].numel;
	add_grads(pm, h, id, 0, n, dloss, step, micro, bad);
	h->grads_done(h->ctx, id);
}

static float fake_forward(const part_model *pm, const gpt_hooks *h)
{
	const mp_layout *lay = pm->lay;
	float sum = 0;
	if (lay->has_embed)
		sum += h->params(h->ctx, 0)[0];
	for (int l = lay->first_layer; l < lay->first_layer + lay->num_layers; l++)
		sum += h->params(h->ctx, l + 1)[0];
	if (lay->has_head) {
		sum += h->params(h->ctx, lay->cfg.num_layers + 1)[0];
		sum += h->params(h->ctx, 0)[0];
	}
	return sum;
}

/* gpt.h's backward of a part; unit 0: LM head [0, 2n0/3), embeddings [n0/3, n0). */
static void fake_backward(const part_model *pm, const gpt_hooks *h, float dloss, int step,
                          int micro, const poison *bad)
{
	const mp_layout *lay = pm->lay;
	size_t head_end = 2 * pm->n0 / 3, embed_begin = pm->n0 / 3;
	if (lay->has_head) {
		add_grads(pm, h, 0, 0, head_end, dloss, step, micro, bad);
		add_unit(pm, h, lay->cfg.num_layers + 1, dloss, step, micro, bad);
	}
	for (int l = lay->first_layer + lay->num_layers - 1; l >= lay->first_layer; l--)
		add_unit(pm, h, l + 1, dloss, step, micro, bad);
	if (lay->has_embed) {
		if (pm->harness_tie && !lay->has_head)
			add_grads(pm, h, 0, 0, head_end, dloss, step, micro, bad);
		add_grads(pm, h, 0, embed_begin, pm->n0, dloss, step, micro, bad);
		h->grads_done(h->ctx, 0);
	} else if (lay->has_head) {
		if (pm->harness_tie)
			add_grads(pm, h, 0, embed_begin, pm->n0, dloss, step, micro, bad);
		h->grads_done(h->ctx, 0);
	}
}

/* ---- training runs ---- */

typedef struct run_spec {
	int stage;
	int accum;       /* micro-steps of this runtime per step */
	int first_micro; /* its micro-batches: first_micro .. + accum */
	int world;       /* dloss = 1 / (accum * world) */
	float clip;
	int steps;
	poison bad;
} run_spec;

static int train_step(dp_runtime *dp, const part_model *pm, const run_spec *rs, int step,
                      dp_step_info *info)
{
	gpt_hooks h = dp_hooks(dp);
	int rc = dp_begin_step(dp, rs->accum);
	if (rc)
		return rc;
	float dloss = 1.0f / (float)(rs->accum * rs->world);
	for (int k = 0; k < rs->accum; k++) {
		(void)fake_forward(pm, &h);
		fake_backward(pm, &h, dloss, step, rs->first_micro + k, &rs->bad);
	}
	return dp_step(dp, step, lr_at(&sched, step), rs->clip, 1.0f, info);
}

/*
 * Train rs->steps steps of lay's part from the global init over groups g.
 * OUT: out, the local parameters (lay->nparams); infos per step. RET 0 or rc.
 */
static int run_part(const mp_layout *lay, const dp_groups *g, bool harness_tie, const float *init,
                    const run_spec *rs, float *out, dp_step_info *infos)
{
	char err[256];
	adamw_config opt = test_adamw();
	part_model pm = {.lay = NULL};
	float *local = malloc(lay->nparams * sizeof(float));
	dp_runtime *dp = NULL;
	int rc = -1;
	if (!CHECK(local && part_model_init(&pm, lay, harness_tie) == 0, "out of memory"))
		goto out;
	mp_extract(lay, init, local);
	dp = dp_new_part(lay, g, rs->stage, local, &opt, err, sizeof(err));
	if (!CHECK(dp != NULL, "dp_new_part stage %d: %s", rs->stage, err))
		goto out;
	CHECK(dp_num_units(dp) == lay->nunits, "%d units, layout %d", dp_num_units(dp),
	      lay->nunits);
	for (int s = 1; s <= rs->steps; s++)
		if ((rc = train_step(dp, &pm, rs, s, &infos[s - 1])))
			goto out;
	rc = dp_gather_params(dp, out);
out:
	CHECK(rc == 0, "run stage %d: rc %d", rs->stage, rc);
	dp_free(dp);
	free(pm.gidx);
	free(local);
	return rc;
}

/* The whole model on self, accum micro-batches 0 .. accum per step. OUT: ref, infos. */
static int run_ref(comm *self, const gpt_config *cfg, const float *init, int accum, float clip,
                   float *ref, dp_step_info *infos)
{
	char err[256];
	mp_layout *whole = mp_layout_new(cfg, 1, 0, 1, 0, err, sizeof(err));
	if (!CHECK(whole != NULL, "layout: %s", err))
		return -1;
	dp_groups g = {self, NULL, NULL};
	run_spec rs = {.stage = 0,
	               .accum = accum,
	               .world = 1,
	               .clip = clip,
	               .steps = STEPS,
	               .bad = {SIZE_MAX, 0, 0}};
	int rc = run_part(whole, &g, false, init, &rs, ref, infos);
	mp_layout_free(whole);
	return rc;
}

/*
 * A rank's slice against the whole model: its layout, the global init,
 * the whole model's run on self (2 micro-batches a step, clip 10) and
 * that run cut to the slice (want); got and info are the slice's run.
 */
typedef struct slice_test {
	mp_layout *lay;
	size_t n; /* of the whole model */
	float *init, *ref, *want, *got;
	dp_step_info rinfo[STEPS], info[STEPS];
} slice_test;

/* The slice mp_layout_new(cfg, tp, tp_rank, pp, pp_rank). RET 0 or -1 (checked); slice_free it
 * either way. */
static int slice_new(slice_test *t, comm *self, const gpt_config *cfg, int tp, int tp_rank, int pp,
                     int pp_rank)
{
	char err[256];
	t->n = gpt_num_params(cfg);
	t->init = malloc(t->n * sizeof(float));
	t->ref = malloc(t->n * sizeof(float));
	t->want = malloc(t->n * sizeof(float));
	t->got = malloc(t->n * sizeof(float));
	t->lay = mp_layout_new(cfg, tp, tp_rank, pp, pp_rank, err, sizeof(err));
	init_params(t->init, t->n);
	if (!CHECK(t->lay != NULL, "layout: %s", err) ||
	    run_ref(self, cfg, t->init, 2, 10, t->ref, t->rinfo))
		return -1;
	mp_extract(t->lay, t->ref, t->want);
	return 0;
}

static void slice_free(slice_test *t)
{
	mp_layout_free(t->lay);
	free(t->init);
	free(t->ref);
	free(t->want);
	free(t->got);
}

/*
 * The slice's run under ZeRO-stage over g, with the reference's
 * micro-batches and clip. OUT: t->got, t->info. RET: the worst tol_ratio
 * against t->want, or -1 when the run failed (checked).
 */
static double slice_run(slice_test *t, const dp_groups *g, int stage)
{
	run_spec rs = {.stage = stage,
	               .accum = 2,
	               .first_micro = 0,
	               .world = 1,
	               .clip = 10,
	               .steps = STEPS,
	               .bad = {SIZE_MAX, 0, 0}};
	if (run_part(t->lay, g, false, t->init, &rs, t->got, t->info))
		return -1;
	return tol_ratio(t->got, t->want, t->lay->nparams);
}

/* ---- tests ---- */

static void test_partition(void)
{
	static const struct {
		size_t numel;
		int size, rank;
		size_t begin, end;
	} cases[] = {
	    {3, 4, 0, 0, 1},      {3, 4, 2, 2, 3},  {3, 4, 3, 3, 3}, /* fewer elements than ranks */
	    {8, 4, 0, 0, 2},      {8, 4, 3, 6, 8},                   /* an exact multiple */
	    {10, 4, 0, 0, 3},     {10, 4, 2, 6, 9}, {10, 4, 3, 9, 10}, /* a remainder */
	    {147, 2, 1, 74, 147}, {5, 1, 0, 0, 5},  {0, 2, 1, 0, 0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		dp_range r = dp_partition(cases[k].numel, cases[k].size, cases[k].rank);
		CHECK(r.begin == cases[k].begin && r.end == cases[k].end,
		      "dp_partition(%zu, %d, %d) = [%zu, %zu), want [%zu, %zu)", cases[k].numel,
		      cases[k].size, cases[k].rank, r.begin, r.end, cases[k].begin, cases[k].end);
	}
	/* the ranks' ranges tile the unit */
	for (int size = 1; size <= 5; size++) {
		size_t at = 0;
		for (int r = 0; r < size; r++) {
			dp_range g = dp_partition(13, size, r);
			at = g.begin == at ? g.end : SIZE_MAX;
		}
		CHECK(at == 13, "13 elements over %d ranks do not tile", size);
	}
}

/*
 * Every stage of a pp-way split, ZeRO over c, each with the harness tie and
 * no clipping: each stage's slice matches the whole model's, and the
 * stages' squared norms (unit 0 counted by the first only) add up to the
 * whole model's.
 */
static void test_stages_harness_tie(comm *c, comm *self, int pp)
{
	const gpt_config *cfg = &pp_cfg;
	size_t n = gpt_num_params(cfg);
	int P = comm_size(c), r = comm_rank(c);
	char err[256];
	float *init = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
	float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
	dp_step_info rinfo[STEPS], info[STEPS];
	init_params(init, n);
	if (run_ref(self, cfg, init, 2 * P, 0, ref, rinfo))
		goto out;
	for (int stage = 0; stage <= 3; stage++) {
		double ss[STEPS] = {0};
		bool applied = true, ranges = true;
		for (int s = 0; s < pp; s++) {
			mp_layout *lay = mp_layout_new(cfg, 1, 0, pp, s, err, sizeof(err));
			if (!CHECK(lay != NULL, "layout: %s", err))
				continue;
			dp_groups g = {c, NULL, NULL};
			run_spec rs = {.stage = stage,
			               .accum = 2,
			               .first_micro = 2 * r,
			               .world = P,
			               .clip = 0,
			               .steps = STEPS,
			               .bad = {SIZE_MAX, 0, 0}};
			if (run_part(lay, &g, true, init, &rs, got, info) == 0) {
				mp_extract(lay, ref, want);
				double worst = tol_ratio(got, want, lay->nparams);
				say("  pp %d stage %d of %d x ZeRO-%d, harness tie: %.2g of tol\n",
				    pp, s, P, stage, worst);
				CHECK(worst <= 1.0,
				      "pp %d stage %d ZeRO-%d vs the whole model: %.3g", pp, s,
				      stage, worst);
				for (int k = 0; k < STEPS; k++)
					ss[k] += (double)info[k].grad_norm * info[k].grad_norm;
				applied = applied && all_applied(info, STEPS);
			}
			/* owned ranges: dp_partition of each local unit, in the local layout */
			adamw_config opt = test_adamw();
			dp_runtime *dp = dp_new_part(lay, &g, stage, NULL, &opt, err, sizeof(err));
			for (int u = 0; dp && u < lay->nunits; u++) {
				dp_range p = dp_partition(lay->units[u].numel, P, r);
				dp_range o = dp_owned_range(dp, u);
				ranges = ranges && o.begin == lay->units[u].offset + p.begin &&
				         o.end == lay->units[u].offset + p.end;
			}
			CHECK(dp != NULL && ranges, "pp %d stage %d ZeRO-%d: owned ranges", pp, s,
			      stage);
			dp_free(dp);
			mp_layout_free(lay);
		}
		bool norms = true;
		for (int k = 0; k < STEPS; k++)
			norms = norms && close_rel(sqrt(ss[k]), rinfo[k].grad_norm, 1e-5);
		CHECK(norms,
		      "pp %d ZeRO-%d: the stages' norms make the whole model's (step 1: "
		      "%.7g vs %.7g)",
		      pp, stage, sqrt(ss[0]), rinfo[0].grad_norm);
		CHECK(applied, "pp %d ZeRO-%d: every step applied", pp, stage);
	}
out:
	free(init);
	free(ref);
	free(want);
	free(got);
}

/* A non-finite gradient in a tensor this rank does not own still skips the step. */
static void test_unowned_poison(comm *self)
{
	const gpt_config *cfg = &pp_cfg;
	size_t n = gpt_num_params(cfg);
	char err[256];
	float *init = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
	dp_step_info info[3];
	init_params(init, n);
	/* the last of 2 stages: a copy of unit 0 it does not own, at local offset 0 */
	mp_layout *lay = mp_layout_new(cfg, 1, 0, 2, 1, err, sizeof(err));
	if (!CHECK(lay != NULL, "layout: %s", err))
		goto out;
	CHECK(lay->unit_index[0] == 0 && !lay->tensors[0].owner, "unit 0 is not owned");
	for (int stage = 0; stage <= 3; stage += 2) {
		dp_groups g = {self, NULL, NULL};
		run_spec rs = {.stage = stage,
		               .accum = 1,
		               .world = 1,
		               .clip = 1,
		               .steps = 3,
		               .bad = {5, NAN, 2}};
		if (run_part(lay, &g, true, init, &rs, got, info))
			continue;
		CHECK(info[0].updated && !info[1].finite && !info[1].updated && info[2].updated,
		      "ZeRO-%d: a NaN in an unowned tensor skips the step (finite %d %d %d)", stage,
		      info[0].finite, info[1].finite, info[2].finite);
		CHECK(isfinite(info[1].grad_norm), "ZeRO-%d: the unowned NaN is not in the norm",
		      stage);
	}
out:
	mp_layout_free(lay);
	free(init);
	free(got);
}

/*
 * 2 ranks, a real tie: rank r is stage r of 2 (dp self, norm and tie the
 * world). Both stages see the same micro-batches; their unit-0 gradients
 * are partial and summed by the tie.
 */
static void test_real_tie(comm *c, comm *self)
{
	int r = comm_rank(c);
	slice_test t;
	if (slice_new(&t, self, &pp_cfg, 1, 0, 2, r))
		goto out;
	size_t n0 = t.lay->units[t.lay->unit_index[0]].numel;
	for (int stage = 0; stage <= 3; stage++) {
		dp_groups g = {self, c, c};
		double worst = slice_run(&t, &g, stage);
		if (worst < 0)
			continue;
		say("  2 stages, ZeRO-%d, tied over the world: %.2g of tol\n", stage, worst);
		CHECK(worst <= 1.0, "stage %d ZeRO-%d vs the whole model: %.3g", r, stage, worst);
		bool clipped = false;
		for (int k = 0; k < STEPS; k++)
			clipped = clipped || t.info[k].clip_scale < 1.0f;
		CHECK(norms_close(t.info, t.rinfo, STEPS, 1e-5),
		      "ZeRO-%d: grad norm %.7g, whole model %.7g", stage, t.info[0].grad_norm,
		      t.rinfo[0].grad_norm);
		CHECK(all_applied(t.info, STEPS) && clipped,
		      "ZeRO-%d: every step applied, clipping active", stage);
		CHECK(same_on_all_ranks(c, t.got + t.lay->unit_offset[0], n0),
		      "ZeRO-%d: the two copies of unit 0 differ", stage);
	}
out:
	slice_free(&t);
}

/*
 * 2 ranks as one tensor group (dp self, norm the world): replicated
 * tensors are counted once in the norm, and a NaN in rank 1's unowned
 * replica skips the step on both.
 */
static void test_tensor_parallel(comm *c, comm *self)
{
	int r = comm_rank(c);
	slice_test t;
	if (slice_new(&t, self, &tp_cfg, 2, r, 1, 0))
		goto out;
	const mp_layout *lay = t.lay;
	size_t replicated = 0;
	for (int k = 0; k < lay->ntensors; k++)
		if (lay->tensors[k].t.split == GPT_REPLICATED)
			replicated += lay->tensors[k].numel;
	CHECK(replicated > t.n / 4, "replicated elements %zu of %zu", replicated, t.n);
	for (int stage = 0; stage <= 3; stage++) {
		dp_groups g = {self, c, NULL};
		double worst = slice_run(&t, &g, stage);
		if (worst < 0)
			continue;
		say("  tp 2, ZeRO-%d: %.2g of tol, grad norm %.7g (whole model %.7g)\n", stage,
		    worst, t.info[0].grad_norm, t.rinfo[0].grad_norm);
		CHECK(worst <= 1.0, "tp rank %d ZeRO-%d vs the whole model: %.3g", r, stage, worst);
		CHECK(norms_close(t.info, t.rinfo, STEPS, 1e-5),
		      "ZeRO-%d: grad norm %.7g, owned-only reference %.7g", stage,
		      t.info[0].grad_norm, t.rinfo[0].grad_norm);
	}
	/* a NaN in tp rank 1's copy of the first replicated tensor (wte) */
	for (int stage = 0; stage <= 3; stage += 3) {
		dp_groups g = {self, c, NULL};
		run_spec rs = {.stage = stage,
		               .accum = 1,
		               .world = 1,
		               .clip = 10,
		               .steps = 3,
		               .bad = {r == 1 ? 7 : SIZE_MAX, NAN, 2}};
		CHECK(r != 1 || !lay->tensors[0].owner, "rank 1 does not own wte");
		if (run_part(lay, &g, false, t.init, &rs, t.got, t.info))
			continue;
		CHECK(t.info[0].updated && !t.info[1].finite && !t.info[1].updated &&
		          t.info[2].updated,
		      "ZeRO-%d: rank %d did not skip for the replica's NaN", stage, r);
	}
out:
	slice_free(&t);
}

/* Scratch and gather buffers of a part without unit 0: two layer buffers, one gather. */
static void test_memory(comm *c)
{
	char err[256];
	adamw_config opt = test_adamw();
	int P = comm_size(c);
	size_t F = sizeof(float);
	for (int s = 0; s < 4; s++) {
		mp_layout *lay = mp_layout_new(&pp_cfg, 1, 0, 4, s, err, sizeof(err));
		if (!CHECK(lay != NULL, "layout: %s", err))
			continue;
		size_t u0 = 0, rest = 0, shard = 0;
		for (int u = 0; u < lay->nunits; u++) {
			size_t block = dp_partition(lay->units[u].numel, P, 0).end;
			shard += block;
			if (lay->units[u].id == 0)
				u0 = block * (size_t)P;
			else if (block * (size_t)P > rest)
				rest = block * (size_t)P;
		}
		CHECK((s == 1 || s == 2) == (u0 == 0), "pp stage %d: unit 0 present", s);
		for (int stage = 2; stage <= 3; stage++) {
			dp_groups g = {c, NULL, NULL};
			dp_runtime *dp = dp_new_part(lay, &g, stage, NULL, &opt, err, sizeof(err));
			if (!CHECK(dp != NULL, "dp_new_part: %s", err))
				continue;
			dp_mem_info m;
			dp_memory_bytes(dp, &m);
			CHECK(m.grad_scratch == (u0 + 2 * rest) * F,
			      "pp stage %d ZeRO-%d scratch %zu, want %zu", s, stage, m.grad_scratch,
			      (u0 + 2 * rest) * F);
			CHECK(m.param_gather == (stage == 3 ? (u0 + rest) * F : 0),
			      "pp stage %d ZeRO-%d gather %zu", s, stage, m.param_gather);
			CHECK(m.grad_shard == shard * F && m.optimizer == 2 * shard * F,
			      "pp stage %d ZeRO-%d shard %zu", s, stage, m.grad_shard);
			dp_free(dp);
		}
		mp_layout_free(lay);
	}
}

static void test_contract(comm *self)
{
	char err[256];
	adamw_config opt = test_adamw();
	dp_groups g = {self, NULL, NULL};
	dp_step_info info;
	int L = pp_cfg.num_layers;
	/* stage 0 of 2 holds units 0, 1, 2 */
	mp_layout *first = mp_layout_new(&pp_cfg, 1, 0, 2, 0, err, sizeof(err));
	/* stage 1 of 4 holds unit 2 only */
	mp_layout *mid = mp_layout_new(&pp_cfg, 1, 0, 4, 1, err, sizeof(err));
	if (!CHECK(first && mid, "layouts: %s", err))
		goto out;
	say("  (logged errors follow: deliberate hook contract violations)\n");
	const struct {
		int stage, which, unit; /* which: 0 params, 1 grads, 2 grads_done */
	} bad[] = {{0, 0, 3}, {2, 1, 3}, {1, 2, L + 1}, {3, 0, L + 2}, {0, 1, -1}};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		dp_runtime *dp = dp_new_part(first, &g, bad[k].stage, NULL, &opt, err, sizeof(err));
		if (!CHECK(dp != NULL, "dp_new_part: %s", err))
			continue;
		gpt_hooks h = dp_hooks(dp);
		dp_begin_step(dp, 1);
		h.params(h.ctx, 2); /* a unit of the layout: fine */
		CHECK(dp_error(dp) == 0, "unit 2 is in the layout");
		if (bad[k].which == 0)
			h.params(h.ctx, bad[k].unit);
		else if (bad[k].which == 1)
			h.grads(h.ctx, bad[k].unit);
		else
			h.grads_done(h.ctx, bad[k].unit);
		CHECK(dp_error(dp) == DP_ERR_CONTRACT, "ZeRO-%d: hook %d for unit %d: error %d",
		      bad[k].stage, bad[k].which, bad[k].unit, dp_error(dp));
		CHECK(dp_step(dp, 1, 0.1f, 0, 1, &info) == DP_ERR_CONTRACT && !info.updated,
		      "dp_step reports it");
		dp_free(dp);
	}
	/*
	 * A middle stage counts backwards by its first unit's grads_done: with
	 * 2 micro-steps, a third backward's gradients come after the reduction
	 * started.
	 */
	for (int stage = 0; stage <= 1; stage++) {
		dp_runtime *dp = dp_new_part(mid, &g, stage, NULL, &opt, err, sizeof(err));
		if (!CHECK(dp != NULL, "dp_new_part: %s", err))
			continue;
		gpt_hooks h = dp_hooks(dp);
		dp_begin_step(dp, 2);
		for (int k = 0; k < 2; k++) {
			h.params(h.ctx, 2);
			h.grads(h.ctx, 2)[0] += 1.0f;
			h.grads_done(h.ctx, 2);
		}
		CHECK(dp_error(dp) == 0, "two backwards are fine");
		h.grads(h.ctx, 2);
		CHECK(dp_error(dp) == DP_ERR_CONTRACT, "ZeRO-%d: a third backward latches %d",
		      stage, dp_error(dp));
		dp_free(dp);
	}
	CHECK(dp_new_part(NULL, &g, 0, NULL, &opt, err, sizeof(err)) == NULL, "no layout: %s", err);
	dp_groups none = {NULL, NULL, NULL};
	CHECK(dp_new_part(first, &none, 0, NULL, &opt, err, sizeof(err)) == NULL, "no dp group: %s",
	      err);
	CHECK(dp_new_part(first, &g, 4, NULL, &opt, err, sizeof(err)) == NULL &&
	          strstr(err, "zero_stage") != NULL,
	      "stage 4 refused: %s", err);
out:
	mp_layout_free(first);
	mp_layout_free(mid);
}

int main(void)
{
	comm *c, *self;
	int rc = check_open("mpitest_zero_part", &c, &self);
	if (rc)
		return rc;
	if (my_rank != 0 && !freopen("/dev/null", "w", stderr))
		return 2;
	say("Running mpitest_zero_part: %d rank(s) over %s\n", comm_size(c), comm_name(c));

	say("the partition rule\n");
	test_partition();
	say("pipeline stages with the tie in the harness\n");
	test_stages_harness_tie(c, self, 2);
	test_stages_harness_tie(c, self, 4);
	say("non-finite gradients in unowned tensors\n");
	test_unowned_poison(self);
	say("memory of parts\n");
	test_memory(c);
	if (comm_size(c) == 2) {
		say("two pipeline stages tied over the world\n");
		test_real_tie(c, self);
		say("a tensor group of two\n");
		test_tensor_parallel(c, self);
	} else {
		say("(the tie and tensor-group tests need 2 ranks: skipped)\n");
	}
	say("hook contract\n");
	test_contract(self);

	rc = check_summary(c);
	comm_free(self);
	comm_free(c);
	return rc;
}
