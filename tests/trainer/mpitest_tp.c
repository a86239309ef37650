/*
 * mpitest_tp.c - tensor-parallel model parts (gpt.h's gpt_part with tp
 * ranks) against the whole model.
 *
 *   mpirun --allow-run-as-root --oversubscribe -np 2 build/tests/mpitest_tp
 *   build/tests/mpitest_tp                      (a world of one, no MPI)
 *
 * The tensor group is the whole world: tp = world size, each rank holds
 * the slice mp_layout_new(cfg, tp, rank, 1, 0) of one global
 * initialisation (mp_extract), and every rank also runs the whole model
 * (tp 1) itself as the reference. With a world of one the part is the
 * whole model and everything must match bit for bit.
 *
 * Tolerance against the whole model (tp > 1): the row-parallel matmuls
 * (attention and MLP projections in the forward, the QKV and first MLP
 * matmuls' input gradients in the backward) split their inner sum into tp
 * partial sums that the all-reduce adds, so every value downstream
 * differs from the whole model's by float rounding, about 1e-7 to 1e-6
 * relative. Per tensor: |a - b| <= 1e-6 + 1e-4 max |b| (b the whole
 * model's gradient, cut to the rank's piece), and the loss within 1e-5
 * relative; the observed worst error is printed. A missing all-reduce,
 * a bias added twice or a wrong slice is off by tens of percent.
 *
 * Exact checks: replicated tensors (LayerNorms, row-parallel biases,
 * embeddings, final LayerNorm) get bitwise equal gradients on every tp
 * rank; full and selective recomputation give the same bits as none under
 * tp; a tp part cut into two pipeline stages (both on every rank, chained
 * by hand) gives the same loss and layer gradients as the unsplit tp part.
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

/* ---- the model and its data ---- */

static const gpt_config cfg = {.max_seq_len = 8,
                               .vocab_size = 61,
                               .padded_vocab_size = 64,
                               .num_layers = 2,
                               .num_heads = 4,
                               .channels = 32};

enum { B = 2, T = 8, PASSES = 2 };

/* GPT-2 init plus noise (no bias 0, no LayerNorm weight 1); the same on every rank. */
static void init_global(float *p)
{
	size_t n = gpt_num_params(&cfg);
	gpt_init_params(&cfg, p, 77);
	for (size_t i = 0; i < n; i++)
		p[i] +=
		    0.05f * ((float)(mix((uint32_t)i * 2654435761U + 5) >> 8) * 0x1p-24f - 0.5f);
}

/* Pass k's inputs [B*T] and targets [B*T]. */
static void batch(int k, int32_t *in, int32_t *tg)
{
	for (int i = 0; i < B * T; i++) {
		in[i] = (int32_t)(mix((uint32_t)(k * 1000 + i)) % (uint32_t)cfg.vocab_size);
		tg[i] = (int32_t)(mix((uint32_t)(k * 1000 + i + 500)) % (uint32_t)cfg.vocab_size);
	}
}

/* One rank's part: its layout, local arrays and model. */
typedef struct part {
	mp_layout *lay;
	float *params, *grads;
	gpt_flat flat;
	gpt_hooks hooks;
	gpt_model *m;
} part;

static bool part_new(part *p, int tp, int tp_rank, int pp, int pp_rank, comm *c, gpt_recompute rc,
                     gpt_precision prec, const float *global)
{
	char err[256];
	memset(p, 0, sizeof *p);
	p->lay = mp_layout_new(&cfg, tp, tp_rank, pp, pp_rank, err, sizeof err);
	if (!CHECK(p->lay != NULL, "mp_layout_new: %s", err))
		return false;
	p->params = calloc(p->lay->nparams, sizeof(float));
	p->grads = calloc(p->lay->nparams, sizeof(float));
	if (!CHECK(p->params && p->grads, "out of memory"))
		return false;
	mp_extract(p->lay, global, p->params);
	p->flat = (gpt_flat){.cfg = &cfg,
	                     .params = p->params,
	                     .grads = p->grads,
	                     .unit_offset = p->lay->unit_offset};
	p->hooks = gpt_hooks_flat(&p->flat);
	gpt_part gp = mp_layout_part(p->lay);
	gp.tp_comm = tp > 1 ? c : NULL;
	gp.recompute = rc;
	p->m = gpt_new_part(&cfg, &gp, B, T, prec, err, sizeof err);
	return CHECK(p->m != NULL, "gpt_new_part: %s", err);
}

static void part_free(part *p)
{
	gpt_free(p->m);
	free(p->params);
	free(p->grads);
	mp_layout_free(p->lay);
}

/* PASSES forward/backward passes of one unsplit part; gradients accumulate. */
static void part_run(part *p, float loss[PASSES])
{
	int32_t in[B * T], tg[B * T];
	for (int k = 0; k < PASSES; k++) {
		batch(k, in, tg);
		loss[k] = gpt_forward_part(p->m, &p->hooks, 0, in, NULL, tg);
		gpt_backward_part(p->m, &p->hooks, 0, 1.0f, NULL);
	}
	CHECK(gpt_error(p->m) == 0, "gpt_error %d", gpt_error(p->m));
}

static bool same_bits(const float *a, const float *b, size_t n)
{
	return memcmp(a, b, n * sizeof(float)) == 0;
}

/* The whole model on this rank alone: tp 1 over the global arrays. */
static void reference(const float *global, float *grads, gpt_precision prec, float loss[PASSES])
{
	part w;
	if (part_new(&w, 1, 0, 1, 0, NULL, GPT_RECOMPUTE_NONE, prec, global)) {
		part_run(&w, loss);
		memcpy(grads, w.grads, w.lay->nparams * sizeof(float));
	}
	part_free(&w);
}

/* A tp part (tp = world, this rank's slice) and the whole model, run from one global init. */
typedef struct vs_whole {
	float *global, *gref;            /* the init; the whole model's gradients */
	float want[PASSES], got[PASSES]; /* the whole model's losses; the part's */
	part p;
} vs_whole;

/* Run both, the part with rc and prec. RET whether the part ran; vs_whole_free v either way. */
static bool vs_whole_run(vs_whole *v, comm *c, gpt_recompute rc, gpt_precision prec)
{
	size_t n = gpt_num_params(&cfg);
	v->global = malloc(n * sizeof(float));
	v->gref = calloc(n, sizeof(float));
	init_global(v->global);
	reference(v->global, v->gref, prec, v->want);
	if (!part_new(&v->p, comm_size(c), comm_rank(c), 1, 0, c, rc, prec, v->global))
		return false;
	part_run(&v->p, v->got);
	return true;
}

static void vs_whole_free(vs_whole *v)
{
	part_free(&v->p);
	free(v->global);
	free(v->gref);
}

/* ---- the tests ---- */

/* tp = world against the whole model: loss, every local gradient, replicas across ranks. */
static void test_tp_vs_whole(comm *c)
{
	int tp = comm_size(c);
	vs_whole v;
	if (!vs_whole_run(&v, c, GPT_RECOMPUTE_NONE, GPT_FP32))
		goto out;
	const part *p = &v.p;
	const float *want = v.want, *got = v.got;
	for (int k = 0; k < PASSES; k++) {
		say("  pass %d: loss %.7f, whole model %.7f\n", k, (double)got[k], (double)want[k]);
		CHECK(fabsf(got[k] - want[k]) <= 1e-5f * fabsf(want[k]),
		      "pass %d loss %.9g vs %.9g", k, (double)got[k], (double)want[k]);
		if (tp == 1)
			CHECK(same_bits(&got[k], &want[k], 1), "tp 1: loss bit for bit");
	}

	/* local gradients against the whole model's, cut to this rank's pieces */
	size_t ln = p->lay->nparams;
	float *lref = malloc(ln * sizeof(float));
	mp_extract(p->lay, v.gref, lref);
	double worst = 0, worst_rel = 0;
	const char *worst_name = "";
	for (int i = 0; i < p->lay->ntensors; i++) {
		const mp_tensor *t = &p->lay->tensors[i];
		const float *a = p->grads + t->offset, *b = lref + t->offset;
		double mx = 0, err = 0;
		for (size_t j = 0; j < t->numel; j++) {
			mx = fmax(mx, fabs(b[j]));
			err = fmax(err, fabs((double)a[j] - b[j]));
		}
		double bound = 1e-6 + 1e-4 * mx;
		CHECK(mx > 0, "%s: the reference gradient is all zero", t->t.name);
		CHECK(err <= bound, "%s: max error %.3g, bound %.3g (max |g| %.3g)", t->t.name, err,
		      bound, mx);
		if (tp == 1)
			CHECK(same_bits(a, b, t->numel), "tp 1: %s bit for bit", t->t.name);
		if (err / bound > worst) {
			worst = err / bound;
			worst_name = t->t.name;
		}
		if (mx > 0)
			worst_rel = fmax(worst_rel, err / mx);
	}
	say("  gradients, tp %d vs the whole model: max error %.2g of max |g| (%.2g of the "
	    "bound, %s)\n",
	    tp, worst_rel, worst, worst_name);

	/* replicated tensors: the same bits on every tp rank; and the same loss */
	float *all = malloc((size_t)tp * ln * sizeof(float));
	float losses[16];
	if (CHECK(all && tp <= 16, "gather buffers") &&
	    CHECK(comm_allgather(c, p->grads, all, ln) == 0, "allgather of the gradients") &&
	    CHECK(comm_allgather(c, got, losses, 1) == 0, "allgather of the loss")) {
		int nrep = 0;
		for (int q = 1; q < tp; q++) {
			CHECK(same_bits(&losses[q], &losses[0], 1), "loss of rank %d differs", q);
			for (int i = 0; i < p->lay->ntensors; i++) {
				const mp_tensor *t = &p->lay->tensors[i];
				if (t->t.split != GPT_REPLICATED)
					continue;
				nrep++;
				CHECK(same_bits(all + (size_t)q * ln + t->offset, all + t->offset,
				                t->numel),
				      "replicated %s: rank %d's gradient differs from rank 0's",
				      t->t.name, q);
			}
		}
		say("  %d replicated tensor gradient(s) compared across ranks\n", nrep);
	}
	free(all);
	free(lref);
out:
	vs_whole_free(&v);
}

/* Recomputation under tp: the same bits as none (the recomputed layers all-reduce again). */
static void test_tp_recompute(comm *c)
{
	int tp = comm_size(c), r = comm_rank(c);
	size_t n = gpt_num_params(&cfg);
	float *global = malloc(n * sizeof(float));
	init_global(global);
	part base;
	float want[PASSES];
	if (part_new(&base, tp, r, 1, 0, c, GPT_RECOMPUTE_NONE, GPT_FP32, global)) {
		part_run(&base, want);
		for (gpt_recompute rc = GPT_RECOMPUTE_SELECTIVE; rc <= GPT_RECOMPUTE_FULL; rc++) {
			part p;
			float got[PASSES];
			const char *name = rc == GPT_RECOMPUTE_FULL ? "full" : "selective";
			if (part_new(&p, tp, r, 1, 0, c, rc, GPT_FP32, global)) {
				part_run(&p, got);
				CHECK(same_bits(got, want, PASSES), "%s recompute: loss bits",
				      name);
				CHECK(same_bits(p.grads, base.grads, p.lay->nparams),
				      "%s recompute: gradient bits", name);
				CHECK(gpt_activation_bytes(p.m) < gpt_activation_bytes(base.m),
				      "%s recompute: %zu bytes, none %zu", name,
				      gpt_activation_bytes(p.m), gpt_activation_bytes(base.m));
			}
			part_free(&p);
		}
	}
	part_free(&base);
	free(global);
}

/* Two pipeline stages of a tp part, both on this rank, against the unsplit tp part. */
static void test_tp_pipeline(comm *c)
{
	int tp = comm_size(c), r = comm_rank(c), L = cfg.num_layers;
	size_t n = gpt_num_params(&cfg);
	float *global = malloc(n * sizeof(float));
	init_global(global);
	part w, s[2];
	bool ok = part_new(&w, tp, r, 1, 0, c, GPT_RECOMPUTE_NONE, GPT_FP32, global);
	ok = part_new(&s[0], tp, r, 2, 0, c, GPT_RECOMPUTE_FULL, GPT_FP32, global) && ok;
	ok = part_new(&s[1], tp, r, 2, 1, c, GPT_RECOMPUTE_SELECTIVE, GPT_FP32, global) && ok;
	if (!ok)
		goto out;
	float want[PASSES];
	part_run(&w, want);
	int32_t in[B * T], tg[B * T];
	for (int k = 0; k < PASSES; k++) {
		batch(k, in, tg);
		gpt_forward_part(s[0].m, &s[0].hooks, 0, in, NULL, NULL);
		float got =
		    gpt_forward_part(s[1].m, &s[1].hooks, 0, NULL, gpt_stage_output(s[0].m, 0), tg);
		gpt_backward_part(s[1].m, &s[1].hooks, 0, 1.0f, NULL);
		gpt_backward_part(s[0].m, &s[0].hooks, 0, 1.0f, gpt_stage_input_grad(s[1].m));
		CHECK(same_bits(&got, &want[k], 1), "pass %d: pipelined loss %.9g vs %.9g", k,
		      (double)got, (double)want[k]);
	}
	for (int u = 1; u <= L + 1; u++) {
		const part *q = w.lay->unit_offset[u] == SIZE_MAX      ? NULL
		                : s[0].lay->unit_offset[u] != SIZE_MAX ? &s[0]
		                                                       : &s[1];
		size_t numel = w.lay->units[w.lay->unit_index[u]].numel;
		CHECK(q && same_bits(q->grads + q->lay->unit_offset[u],
		                     w.grads + w.lay->unit_offset[u], numel),
		      "unit %d: stage gradients differ from the unsplit part's", u);
	}
	size_t n0 = w.lay->units[w.lay->unit_index[0]].numel;
	double mx = 0, err = 0;
	for (size_t i = 0; i < n0; i++) {
		float sum = s[0].grads[i] + s[1].grads[s[1].lay->unit_offset[0] + i];
		mx = fmax(mx, fabs(w.grads[i]));
		err = fmax(err, fabs((double)sum - w.grads[i]));
	}
	/* the LM head's and the embeddings' shares are summed in another order: rounding */
	CHECK(mx > 0 && err <= 1e-6 * mx, "unit 0 over two stages: error %.3g of %.3g", err, mx);
	CHECK(gpt_error(s[0].m) == 0 && gpt_error(s[1].m) == 0, "gpt_error");
out:
	part_free(&w);
	part_free(&s[0]);
	part_free(&s[1]);
	free(global);
}

/* BF16 under tp: a sanity bound only (the rounding of partial sums differs from tp 1). */
static void test_tp_bf16(comm *c)
{
	vs_whole v;
	if (vs_whole_run(&v, c, GPT_RECOMPUTE_FULL, GPT_BF16)) {
		for (int k = 0; k < PASSES; k++) {
			say("  bf16 pass %d: loss %.7f, whole model %.7f\n", k, (double)v.got[k],
			    (double)v.want[k]);
			CHECK(fabsf(v.got[k] - v.want[k]) <= 1e-2f * fabsf(v.want[k]),
			      "bf16 pass %d loss %.9g vs %.9g", k, (double)v.got[k],
			      (double)v.want[k]);
		}
	}
	vs_whole_free(&v);
}

int main(void)
{
	comm *c;
	int rc = check_open("mpitest_tp", &c, NULL);
	if (rc)
		return rc;
	say("Running mpitest_tp: tp %d over %s\n", comm_size(c), comm_name(c));
	if (CHECK(cfg.num_heads % comm_size(c) == 0, "a world of %d does not divide %d heads",
	          comm_size(c), cfg.num_heads)) {
		say("tensor parallel against the whole model\n");
		test_tp_vs_whole(c);
		say("recomputation under tensor parallel\n");
		test_tp_recompute(c);
		say("pipeline stages of a tensor-parallel part\n");
		test_tp_pipeline(c);
		say("bf16 under tensor parallel\n");
		test_tp_bf16(c);
	}

	rc = check_summary(c);
	comm_free(c);
	return rc;
}
