/*
 * mpitest_zero.c - the communication layer and the data-parallel runtime
 * (comm.h, comm_staged.h, zero.h) across ranks.
 *
 *   mpirun --allow-run-as-root --oversubscribe -np 2 build/tests/mpitest_zero
 *   build/tests/mpitest_zero                      (a world of one, no MPI)
 *
 * The model is standin.h's stand-in, which drives gpt_hooks in the order
 * gpt.h promises (forward: params 0..L+1; backward: unit 0's LM-head
 * part, then L+1 down to 1, then unit 0's embedding part, each unit
 * closed by grads_done) with standin.h's deterministic gradient.
 *
 * Every rank computes the world-of-one reference itself (its own
 * comm_self runtime processing all world * A micro-batches with
 * accumulation world * A) and compares, within standin.h's tolerance
 * (also for stage vs stage). One-rank runs of one micro-batch per step
 * match bitwise.
 *
 * Only rank 0 prints progress; every rank prints its own failures
 * (mpicheck.h). The last line is check's summary format over all ranks'
 * checks, and the exit status is non-zero when any rank failed.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "comm_staged.h"
#include "gpt.h"
#include "mpicheck.h"
#include "optim.h"
#include "standin.h"
#include "zero.h"

/* ---- the stand-in model ---- */

/* Vp 64, T 4, C 3, L 3: units of 204, 147 (odd: padding) x 3 and 6 floats. */
static const gpt_config small_cfg = {.max_seq_len = 4,
                                     .vocab_size = 50,
                                     .padded_vocab_size = 64,
                                     .num_layers = 3,
                                     .num_heads = 1,
                                     .channels = 3};

static float fake_forward(const gpt_config *cfg, const gpt_hooks *h)
{
	float sum = 0;
	for (int u = 0; u < gpt_num_units(cfg); u++) {
		const float *p = h->params(h->ctx, u);
		for (size_t i = 0; i < gpt_unit_numel(cfg, u); i++)
			sum += p[i];
	}
	return sum;
}

static void add_grads(const gpt_config *cfg, const gpt_hooks *h, int u, size_t from, size_t to,
                      float dloss, int step, int micro, const poison *bad)
{
	const float *p = h->params(h->ctx, u);
	float *g = h->grads(h->ctx, u);
	size_t off = gpt_unit_offset(cfg, u);
	for (size_t i = from; i < to; i++)
		g[i] += dloss * grad_of(p[i], off + i, step, micro);
	if (bad && bad->index >= off + from && bad->index < off + to)
		g[bad->index - off] = bad->value;
}

static void fake_backward(const gpt_config *cfg, const gpt_hooks *h, float dloss, int step,
                          int micro, const poison *bad)
{
	int L = cfg->num_layers;
	size_t n0 = gpt_unit_numel(cfg, 0);
	add_grads(cfg, h, 0, 0, n0 / 2, dloss, step, micro, bad); /* LM head: part of wte */
	for (int u = L + 1; u >= 1; u--) {
		add_grads(cfg, h, u, 0, gpt_unit_numel(cfg, u), dloss, step, micro, bad);
		h->grads_done(h->ctx, u);
	}
	add_grads(cfg, h, 0, n0 / 2, n0, dloss, step, micro, bad); /* embeddings */
	h->grads_done(h->ctx, 0);
}

/* ---- training runs ---- */

typedef struct run_spec {
	int stage;
	int accum;        /* micro-steps per rank */
	float loss_scale; /* multiplies dloss; 1 / loss_scale is passed as grad_unscale */
	float clip;
	int steps;
	int poison_rank; /* where bad is planted */
	poison bad;
} run_spec;

/*
 * One optimizer step of rank r: micro-batches r * accum .. + accum of a
 * world of `world` ranks. RET dp_step's code.
 */
static int train_step(dp_runtime *dp, const gpt_config *cfg, const run_spec *rs, int step, int r,
                      int world, dp_step_info *info)
{
	gpt_hooks h = dp_hooks(dp);
	int rc = dp_begin_step(dp, rs->accum);
	if (rc)
		return rc;
	float dloss = rs->loss_scale / (float)(rs->accum * world);
	const poison *bad = step == rs->bad.step && r == rs->poison_rank ? &rs->bad : NULL;
	for (int k = 0; k < rs->accum; k++) {
		(void)fake_forward(cfg, &h);
		fake_backward(cfg, &h, dloss, step, r * rs->accum + k, bad);
	}
	return dp_step(dp, step, lr_at(&sched, step), rs->clip, 1.0f / rs->loss_scale, info);
}

/* Train rs->steps steps from init over c; OUT: final full params, per-step infos. RET 0 or rc. */
static int run(comm *c, const gpt_config *cfg, const float *init, const run_spec *rs, float *out,
               dp_step_info *infos)
{
	char err[256];
	adamw_config opt = test_adamw();
	dp_runtime *dp = dp_new(cfg, c, rs->stage, init, &opt, err, sizeof(err));
	int rc = -1;
	if (!CHECK(dp != NULL, "dp_new stage %d: %s", rs->stage, err))
		return rc;
	for (int s = 1; s <= rs->steps; s++)
		if ((rc = train_step(dp, cfg, rs, s, comm_rank(c), comm_size(c), &infos[s - 1])))
			goto out;
	rc = dp_gather_params(dp, out);
out:
	CHECK(rc == 0, "run stage %d accum %d: rc %d", rs->stage, rs->accum, rc);
	dp_free(dp);
	return rc;
}

/* RET: the largest |a - b| / (1e-7 + 1e-6 |b|) over n; <= 1 passes. */
static double max_rel_diff(const float *a, const float *b, size_t n)
{
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]) / fmax(fabs((double)b[i]), 1e-3);
		if (!(d <= worst))
			worst = d;
	}
	return worst;
}

/* RET: whether every rank holds the same bytes as rank 0 (agreed across ranks). */
/* ---- tests ---- */

static void test_comm(comm *c)
{
	int r = comm_rank(c), P = comm_size(c);
	float buf[8], full[16], out[16];

	comm_seconds_reset(c);
	for (int i = 0; i < 8; i++)
		buf[i] = (float)(r + 1) * (float)(i + 1);
	CHECK(comm_allreduce_sum(c, buf, 8) == 0, "all-reduce: %s", comm_error(c));
	float tri = (float)(P * (P + 1) / 2);
	bool ok = true;
	for (int i = 0; i < 8; i++)
		ok = ok && buf[i] == tri * (float)(i + 1);
	CHECK(ok, "all-reduce sums");

	/* reduce-scatter, 2 floats per rank: full[k] = (r + 1) * k */
	for (int k = 0; k < 2 * P; k++)
		full[k] = (float)((r + 1) * k);
	CHECK(comm_reduce_scatter_sum(c, full, out, 2) == 0, "reduce-scatter: %s", comm_error(c));
	CHECK(out[0] == tri * (float)(2 * r) && out[1] == tri * (float)(2 * r + 1),
	      "reduce-scatter block %d: %g %g", r, out[0], out[1]);

	/* all-gather, out of place and in place */
	float mine[2] = {(float)(10 * r), (float)(10 * r + 1)};
	CHECK(comm_allgather(c, mine, out, 2) == 0, "all-gather: %s", comm_error(c));
	ok = true;
	for (int q = 0; q < P; q++)
		ok = ok && out[2 * q] == (float)(10 * q) && out[2 * q + 1] == (float)(10 * q + 1);
	CHECK(ok, "all-gather blocks");
	for (int k = 0; k < 2 * P; k++)
		full[k] = k / 2 == r ? mine[k % 2] : -1.0f;
	CHECK(comm_allgather(c, full + 2 * r, full, 2) == 0, "in-place all-gather");
	CHECK(memcmp(full, out, (size_t)(2 * P) * sizeof(float)) == 0,
	      "in-place all-gather blocks");

	/* broadcast bytes from the last rank */
	char word[8] = "";
	if (r == P - 1)
		memcpy(word, "trainyd", 8);
	CHECK(comm_bcast(c, word, 8, P - 1) == 0 && strcmp(word, "trainyd") == 0, "broadcast");
	CHECK(comm_bcast(c, word, 8, P) == COMM_ERR_ARG, "broadcast from a rank outside the world");
	CHECK(comm_barrier(c) == 0, "barrier");

	/* nonblocking variants */
	comm_request req[3] = {{0}};
	for (int i = 0; i < 8; i++)
		buf[i] = (float)(r + 1);
	for (int k = 0; k < 2 * P; k++)
		full[k] = (float)(r + k);
	float rs[2], ag[16];
	CHECK(comm_iallreduce_sum(c, buf, 8, &req[0]) == 0, "iallreduce");
	CHECK(comm_ireduce_scatter_sum(c, full, rs, 2, &req[1]) == 0, "ireduce-scatter");
	CHECK(comm_iallgather(c, mine, ag, 2, &req[2]) == 0, "iallgather");
	CHECK(comm_iallreduce_sum(c, buf, 8, P > 1 ? &req[0] : NULL) == COMM_ERR_ARG,
	      "a busy or missing request is refused");
	int done = 0;
	CHECK(comm_test(&req[0], &done) == 0, "test");
	for (int k = 0; k < 3; k++)
		CHECK(comm_wait(&req[k]) == 0 && req[k].c == NULL, "wait %d", k);
	CHECK(comm_wait(&req[0]) == 0, "waiting on an idle request");
	CHECK(buf[0] == tri && buf[7] == tri, "iallreduce result %g", buf[0]);
	float want0 = 0, want1 = 0;
	for (int q = 0; q < P; q++) {
		want0 += (float)(q + 2 * r);
		want1 += (float)(q + 2 * r + 1);
	}
	CHECK(rs[0] == want0 && rs[1] == want1, "ireduce-scatter result");
	CHECK(memcmp(ag, out, (size_t)(2 * P) * sizeof(float)) == 0, "iallgather result");

	/* point to point around the ring */
	if (P > 1) {
		int next = (r + 1) % P, prev = (r + P - 1) % P, got = -1;
		if (r == 0) {
			CHECK(comm_send(c, &r, sizeof(r), next, 7) == 0, "send");
			CHECK(comm_recv(c, &got, sizeof(got), prev, 7) == 0, "receive");
		} else {
			CHECK(comm_recv(c, &got, sizeof(got), prev, 7) == 0, "receive");
			CHECK(comm_send(c, &r, sizeof(r), next, 7) == 0, "send");
		}
		CHECK(got == prev, "ring message %d from %d", got, prev);

		/* an MPI failure comes back as a code: a message longer than the buffer */
		say("  (one logged error follows: a deliberately truncated message)\n");
		double big = 1.5;
		float small = 0;
		if (r == 1)
			CHECK(comm_send(c, &big, sizeof(big), 0, 9) == 0, "send the long message");
		if (r == 0) {
			int rc = comm_recv(c, &small, sizeof(small), 1, 9);
			CHECK(rc == COMM_ERR_FAILED, "truncation is a communication failure: %d",
			      rc);
			CHECK(strstr(comm_error(c), "receive") != NULL, "message: %s",
			      comm_error(c));
		}
		CHECK(comm_barrier(c) == 0, "the communicator works after a failed call");
	} else {
		int x = 0;
		CHECK(comm_send(c, &x, sizeof(x), 0, 1) == COMM_ERR_ARG,
		      "no peer in a world of one");
	}
	CHECK(comm_send(c, buf, 4, 0, -1) == COMM_ERR_ARG, "negative tag");
	CHECK(comm_seconds(c) > 0.0, "communication time is counted: %g", comm_seconds(c));
	comm_seconds_reset(c);
	CHECK(comm_seconds(c) == 0.0, "reset");
	CHECK(strcmp(comm_strerror(COMM_ERR_FAILED), "communication failed") == 0, "strerror");
}

/*
 * The staging of a staged comm over host memory, as a GPU's would be over
 * its device: every copy counted, every fresh host buffer filled with
 * 0xff bytes (a NaN as float) so that a result never copied out shows.
 */
typedef struct test_staging {
	size_t to_host, to_caller;
	int live; /* host buffers not yet freed */
} test_staging;

static void *ts_alloc(void *ctx, size_t bytes)
{
	void *p = malloc(bytes);
	if (p) {
		memset(p, 0xff, bytes);
		((test_staging *)ctx)->live++;
	}
	return p;
}

static void ts_free(void *ctx, void *p)
{
	((test_staging *)ctx)->live--;
	free(p);
}

static int ts_to_host(void *ctx, void *host, const void *from, size_t bytes)
{
	((test_staging *)ctx)->to_host += bytes;
	memcpy(host, from, bytes);
	return 0;
}

static int ts_to_caller(void *ctx, void *to, const void *host, size_t bytes)
{
	((test_staging *)ctx)->to_caller += bytes;
	memcpy(to, host, bytes);
	return 0;
}

/*
 * comm_staged.h over a split of c: every check of test_comm through host
 * staging buffers; a nonblocking result written only when waited for; a
 * split staged too; every host buffer freed.
 */
static void test_staged(comm *c)
{
	static test_staging t;
	static const comm_staging host = {
	    .name = "the test's memory",
	    .ctx = &t,
	    .host_alloc = ts_alloc,
	    .host_free = ts_free,
	    .to_host = ts_to_host,
	    .to_caller = ts_to_caller,
	};
	int r = comm_rank(c), P = comm_size(c);
	comm *inner = NULL, *sc;
	char err[256] = "";
	CHECK(comm_split(c, 0, r, &inner) == 0, "split for the staged comm: %s", comm_error(c));
	sc = inner ? comm_staged_new(inner, &host, err, sizeof(err)) : NULL;
	CHECK(sc != NULL, "a staged comm: %s", err);
	if (!sc)
		return;
	CHECK(comm_rank(sc) == r && comm_size(sc) == P && strcmp(comm_name(sc), "staged") == 0,
	      "its ranks are the inner comm's");
	test_comm(sc);
	CHECK(t.to_host > 0 && t.to_caller > 0,
	      "the data went through host buffers: %zu in, %zu out", t.to_host, t.to_caller);

	float v[4] = {1, 1, 1, 1};
	comm_request req = {0};
	CHECK(comm_iallreduce_sum(sc, v, 4, &req) == 0, "staged iallreduce");
	CHECK(v[0] == 1 && v[3] == 1, "the caller's buffer is untouched while in flight");
	CHECK(comm_wait(&req) == 0 && req.c == NULL, "staged wait");
	CHECK(v[0] == (float)P && v[3] == (float)P, "the result is copied out at the wait: %g",
	      v[0]);
	float rs[2] = {0, 0}, full[2 * 8];
	for (int k = 0; k < 2 * P && k < 16; k++)
		full[k] = 1;
	CHECK(comm_ireduce_scatter_sum(sc, full, rs, 2, &req) == 0, "staged ireduce-scatter");
	int done = 0, trc = 0;
	for (int i = 0; i < 100000 && !done && trc == 0; i++)
		trc = comm_test(&req, &done);
	CHECK(trc == 0, "staged test: %s", comm_error(sc));
	CHECK(done && req.c == NULL && rs[0] == (float)P && rs[1] == (float)P,
	      "a test that finds it done copies it out: %g %g", rs[0], rs[1]);

	comm *half = NULL;
	CHECK(comm_split(sc, r % 2, r, &half) == 0, "a staged comm splits");
	if (half) {
		CHECK(strcmp(comm_name(half), "staged") == 0, "into staged comms");
		float one = 1;
		CHECK(comm_allreduce_sum(half, &one, 1) == 0 && one == (float)((P - r % 2 + 1) / 2),
		      "over its own ranks: %g", one);
		comm_free(half);
	}
	comm_free(sc);
	CHECK(t.live == 0, "every host buffer was freed (%d left)", t.live);
}

/* Expected per-stage accounting (bytes) for cfg on a world of P. */
static void expected_memory(const gpt_config *cfg, int stage, int P, dp_mem_info *e)
{
	size_t full = 0, shard = 0, u0 = 0, rest = 0;
	for (int u = 0; u < gpt_num_units(cfg); u++) {
		size_t block = (gpt_unit_numel(cfg, u) + (size_t)P - 1) / (size_t)P;
		full += block * (size_t)P;
		shard += block;
		if (u == 0)
			u0 = block * (size_t)P;
		else if (block * (size_t)P > rest)
			rest = block * (size_t)P;
	}
	const size_t F = sizeof(float);
	memset(e, 0, sizeof(*e));
	e->params = (stage < 3 ? full : shard) * F;
	e->param_gather = stage == 3 ? (u0 + rest) * F : 0;
	e->grads = stage < 2 ? full * F : 0;
	e->grad_shard = stage >= 1 ? shard * F : 0;
	e->grad_scratch = stage >= 2 ? (u0 + 2 * rest) * F : 0;
	e->optimizer = 2 * (stage == 0 ? full : shard) * F;
}

static void test_memory(comm *c)
{
	/* Vp 64, T 4, C 8, L 12: unit 0 544 floats, layers 872, final LN 16 */
	gpt_config cfg = {.max_seq_len = 4,
	                  .vocab_size = 64,
	                  .padded_vocab_size = 64,
	                  .num_layers = 12,
	                  .num_heads = 2,
	                  .channels = 8};
	int P = comm_size(c);
	size_t n = gpt_num_params(&cfg);
	adamw_config opt = test_adamw();
	char err[256];
	for (int stage = 0; stage <= 3; stage++) {
		dp_runtime *dp = dp_new(&cfg, c, stage, NULL, &opt, err, sizeof(err));
		if (!CHECK(dp != NULL, "dp_new: %s", err))
			continue;
		dp_mem_info got, want;
		dp_memory_bytes(dp, &got);
		expected_memory(&cfg, stage, P, &want);
		CHECK(got.params == want.params, "stage %d params %zu, want %zu", stage, got.params,
		      want.params);
		CHECK(got.param_gather == want.param_gather,
		      "stage %d gather buffers %zu, want %zu", stage, got.param_gather,
		      want.param_gather);
		CHECK(got.grads == want.grads, "stage %d full grads %zu, want %zu", stage,
		      got.grads, want.grads);
		CHECK(got.grad_shard == want.grad_shard, "stage %d grad shard %zu, want %zu", stage,
		      got.grad_shard, want.grad_shard);
		CHECK(got.grad_scratch == want.grad_scratch, "stage %d scratch %zu, want %zu",
		      stage, got.grad_scratch, want.grad_scratch);
		CHECK(got.optimizer == want.optimizer, "stage %d m+v %zu, want %zu", stage,
		      got.optimizer, want.optimizer);
		CHECK(got.total == got.params + got.param_gather + got.grads + got.grad_shard +
		                       got.grad_scratch + got.optimizer + got.bookkeeping,
		      "stage %d total", stage);
		if (stage >= 2 && P > 1) {
			/* no full gradient array: shard + scratch is well below N floats */
			CHECK(got.grad_shard + got.grad_scratch < n * sizeof(float),
			      "stage %d gradient memory %zu >= full %zu", stage,
			      got.grad_shard + got.grad_scratch, n * sizeof(float));
		}
		if (stage == 3 && P > 1)
			CHECK(got.params + got.param_gather < n * sizeof(float),
			      "stage 3 parameter memory %zu >= full %zu",
			      got.params + got.param_gather, n * sizeof(float));
		dp_free(dp);
	}
}

/* The serial first step from init: norm and parameters, computed without the runtime. */
static void serial_first_step(const gpt_config *cfg, const float *init, int micro_total, float clip,
                              float *p1, double *norm_out)
{
	size_t n = gpt_num_params(cfg);
	double ss = 0;
	float *g = malloc(n * sizeof(float));
	float dloss = 1.0f / (float)micro_total;
	for (size_t i = 0; i < n; i++) {
		double sum = 0;
		for (int j = 0; j < micro_total; j++)
			sum += (double)dloss * grad_of(init[i], i, 1, j);
		g[i] = (float)sum;
		ss += sum * sum;
	}
	double norm = sqrt(ss);
	double cs = clip > 0 && clip / (norm + 1e-6) < 1 ? clip / (norm + 1e-6) : 1.0;
	gpt_tensor *t = calloc(GPT_MAX_TENSORS, sizeof(*t));
	int nt = gpt_tensors(cfg, t, GPT_MAX_TENSORS);
	adamw_config a = test_adamw();
	double lr = lr_at(&sched, 1);
	for (int k = 0; k < nt; k++)
		for (size_t i = t[k].offset; i < t[k].offset + t[k].numel; i++) {
			/* step 1: m^ = g, v^ = g^2, so the Adam step is g / (|g| + eps) */
			double gi = g[i] * cs;
			double upd = gi / (fabs(gi) + a.eps);
			double wd = t[k].decay ? a.weight_decay : 0.0;
			p1[i] = (float)(init[i] - lr * (upd + wd * init[i]));
		}
	*norm_out = norm;
	free(t);
	free(g);
}

static void test_equivalence(comm *c, comm *self)
{
	const gpt_config *cfg = &small_cfg;
	size_t n = gpt_num_params(cfg);
	int P = comm_size(c);
	float *init = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
	float *ref = malloc(n * sizeof(float)), *stage0 = malloc(n * sizeof(float));
	float *p1 = malloc(n * sizeof(float));
	dp_step_info info[STEPS], rinfo[STEPS];
	init_params(init, n);

	for (int accum = 1; accum <= 2; accum++) {
		/* the reference: one rank, every micro-batch, loss scale 1 */
		run_spec rref = {
		    .stage = 0, .accum = accum * P, .loss_scale = 1, .clip = 10, .steps = STEPS};
		if (run(self, cfg, init, &rref, ref, rinfo))
			continue;
		if (accum == 1) {
			/* the first step against a serial computation (one step, clip active) */
			double norm;
			run_spec one = rref;
			one.steps = 1;
			dp_step_info i1;
			serial_first_step(cfg, init, P, one.clip, p1, &norm);
			if (run(self, cfg, init, &one, got, &i1) == 0) {
				CHECK(close_rel(i1.grad_norm, norm, 1e-5),
				      "first-step norm %.9g, serial %.9g", i1.grad_norm, norm);
				CHECK(i1.clip_scale < 1.0f &&
				          fabs(i1.clip_scale - 10.0 / (norm + 1e-6)) < 1e-6,
				      "clip factor %g", i1.clip_scale);
				CHECK(tol_ratio(got, p1, n) <= 1.0,
				      "first step against the serial AdamW: worst %.3g of the "
				      "tolerance",
				      tol_ratio(got, p1, n));
			}
		}
		for (int stage = 0; stage <= 3; stage++) {
			/* loss scale 1024 with grad_unscale 1/1024: exact in binary, must cancel */
			run_spec rs = {.stage = stage,
			               .accum = accum,
			               .loss_scale = 1024,
			               .clip = 10,
			               .steps = STEPS};
			if (run(c, cfg, init, &rs, got, info))
				continue;
			double worst = tol_ratio(got, ref, n);
			say("  stage %d, %d rank(s) x %d micro-steps vs 1 x %d: max rel diff %.2g, "
			    "%.2g of tol\n",
			    stage, P, accum, accum * P, max_rel_diff(got, ref, n), worst);
			CHECK(worst <= 1.0,
			      "stage %d accum %d vs reference: worst %.3g of the tolerance", stage,
			      accum, worst);
			CHECK(norms_close(info, rinfo, STEPS, 1e-5),
			      "stage %d accum %d: grad norms match the reference", stage, accum);
			CHECK(all_applied(info, STEPS),
			      "stage %d accum %d: every step finite and applied", stage, accum);
			CHECK(same_on_all_ranks(c, got, n),
			      "stage %d: dp_gather_params differs between ranks", stage);
			if (stage == 0)
				memcpy(stage0, got, n * sizeof(float));
			else
				CHECK(tol_ratio(got, stage0, n) <= 1.0,
				      "stage %d vs stage 0: worst %.3g of the tolerance", stage,
				      tol_ratio(got, stage0, n));
		}
	}
	free(init);
	free(got);
	free(ref);
	free(stage0);
	free(p1);
}

/* A non-finite gradient on one rank: every rank skips, nothing changes, training goes on. */
static void test_skip(comm *c)
{
	const gpt_config *cfg = &small_cfg;
	size_t n = gpt_num_params(cfg);
	int P = comm_size(c), r = comm_rank(c);
	float *init = malloc(n * sizeof(float)), *before = malloc(n * sizeof(float));
	float *after = malloc(n * sizeof(float));
	init_params(init, n);
	/* unit 2, local element 1: owned by rank 0, planted by the last rank */
	size_t where = gpt_unit_offset(cfg, 2) + 1;
	static const float values[2] = {NAN, INFINITY};
	char err[256];
	for (int stage = 0; stage <= 3; stage++) {
		run_spec rs = {.stage = stage,
		               .accum = 2,
		               .loss_scale = 1,
		               .clip = 1,
		               .steps = 3,
		               .poison_rank = P - 1,
		               .bad = {where, values[stage & 1], 2}};
		adamw_config opt = test_adamw();
		dp_runtime *dp = dp_new(cfg, c, stage, init, &opt, err, sizeof(err));
		if (!CHECK(dp != NULL, "dp_new: %s", err))
			continue;
		dp_step_info info;
		int units = dp_num_units(dp);
		size_t owned = 0;
		for (int u = 0; u < units; u++) {
			dp_range rg = dp_owned_range(dp, u);
			owned += rg.end - rg.begin;
		}
		float *mv = malloc(2 * owned * sizeof(float) + 1);
		CHECK(train_step(dp, cfg, &rs, 1, r, P, &info) == 0 && info.updated, "step 1");
		CHECK(dp_gather_params(dp, before) == 0, "gather");
		size_t k = 0;
		for (int u = 0; u < units; u++) {
			dp_range rg = dp_owned_range(dp, u);
			size_t len = rg.end - rg.begin;
			memcpy(mv + k, dp_owned_m(dp, u), len * sizeof(float));
			memcpy(mv + owned + k, dp_owned_v(dp, u), len * sizeof(float));
			k += len;
		}
		int rc = train_step(dp, cfg, &rs, 2, r, P, &info);
		CHECK(rc == 0, "a skipped step is not an error: %d", rc);
		CHECK(!info.finite && !info.updated, "stage %d: rank %d did not skip", stage, r);
		CHECK(!isfinite(info.grad_norm), "the norm of a poisoned step is %g",
		      info.grad_norm);
		CHECK(dp_gather_params(dp, after) == 0 &&
		          memcmp(before, after, n * sizeof(float)) == 0,
		      "stage %d: a skipped step changed parameters", stage);
		bool same = true;
		k = 0;
		for (int u = 0; u < units; u++) {
			dp_range rg = dp_owned_range(dp, u);
			size_t len = rg.end - rg.begin;
			same = same && !memcmp(mv + k, dp_owned_m(dp, u), len * sizeof(float)) &&
			       !memcmp(mv + owned + k, dp_owned_v(dp, u), len * sizeof(float));
			k += len;
		}
		CHECK(same, "stage %d: a skipped step changed m or v", stage);
		CHECK(dp_opt_step(dp) == 1, "step count after a skip: %d", dp_opt_step(dp));
		CHECK(train_step(dp, cfg, &rs, 3, r, P, &info) == 0 && info.finite && info.updated,
		      "stage %d: the step after a skip is taken", stage);
		CHECK(dp_opt_step(dp) == 3, "step count %d", dp_opt_step(dp));
		free(mv);
		dp_free(dp);
	}
	free(init);
	free(before);
	free(after);
}

/* Owned ranges partition the vector; a checkpoint of the owned state resumes exactly. */
static void test_checkpoint(comm *c)
{
	const gpt_config *cfg = &small_cfg;
	size_t n = gpt_num_params(cfg);
	int P = comm_size(c), r = comm_rank(c);
	float *init = malloc(n * sizeof(float)), *a = malloc(n * sizeof(float));
	float *b = malloc(n * sizeof(float));
	init_params(init, n);
	char err[256];
	adamw_config opt = test_adamw();
	for (int stage = 0; stage <= 3; stage++) {
		run_spec rs = {.stage = stage, .accum = 2, .loss_scale = 1, .clip = 1, .steps = 3};
		dp_runtime *dp = dp_new(cfg, c, stage, init, &opt, err, sizeof(err));
		dp_runtime *re = dp_new(cfg, c, stage, NULL, &opt, err, sizeof(err));
		if (!CHECK(dp && re, "dp_new: %s", err)) {
			dp_free(dp);
			dp_free(re);
			continue;
		}
		dp_step_info info;
		for (int s = 1; s <= 2; s++)
			train_step(dp, cfg, &rs, s, r, P, &info);

		float covered = 0;
		bool blocks = true;
		for (int u = 0; u < dp_num_units(dp); u++) {
			dp_range rg = dp_owned_range(dp, u);
			size_t off = gpt_unit_offset(cfg, u), numel = gpt_unit_numel(cfg, u);
			size_t block = (numel + (size_t)P - 1) / (size_t)P;
			size_t want_b = off + (r * block < numel ? r * block : numel);
			size_t want_e = off + ((r + 1) * block < numel ? (r + 1) * block : numel);
			blocks = blocks && rg.begin == want_b && rg.end == want_e;
			covered += (float)(rg.end - rg.begin);
			/* the "checkpoint": what each rank would write for its range */
			CHECK(dp_load_shard(re, u, dp_owned_params(dp, u), dp_owned_m(dp, u),
			                    dp_owned_v(dp, u)) == 0,
			      "load unit %d", u);
		}
		CHECK(blocks, "stage %d: rank %d owns block %d of every unit", stage, r, r);
		comm_allreduce_sum(c, &covered, 1);
		CHECK(covered == (float)n, "owned ranges cover %g of %zu elements", covered, n);
		CHECK(dp_load_done(re, dp_opt_step(dp)) == 0 && dp_opt_step(re) == 2, "load done");
		CHECK(dp_gather_params(dp, a) == 0 && dp_gather_params(re, b) == 0 &&
		          memcmp(a, b, n * sizeof(float)) == 0,
		      "stage %d: restored parameters differ", stage);
		train_step(dp, cfg, &rs, 3, r, P, &info);
		train_step(re, cfg, &rs, 3, r, P, &info);
		CHECK(dp_gather_params(dp, a) == 0 && dp_gather_params(re, b) == 0 &&
		          memcmp(a, b, n * sizeof(float)) == 0,
		      "stage %d: a resumed run diverges", stage);
		dp_free(dp);
		dp_free(re);
	}
	free(init);
	free(a);
	free(b);
}

/*
 * The real model (gpt.c) through the runtime: 2 ranks x 1 micro-batch of
 * B sequences against 1 rank x 2. AdamW's eps is 1 here, so the update is
 * about lr * g for the model's small gradients: near-zero gradients then
 * cannot turn rounding differences into sign flips, and the same
 * 1e-7 + 1e-6 |b| bound applies.
 */
static void test_real_model(comm *c, comm *self)
{
	const gpt_config cfg = {.max_seq_len = 8,
	                        .vocab_size = 50,
	                        .padded_vocab_size = 64,
	                        .num_layers = 2,
	                        .num_heads = 2,
	                        .channels = 8};
	enum { B = 2, T = 8, RSTEPS = 3 };
	size_t n = gpt_num_params(&cfg);
	int P = comm_size(c), r = comm_rank(c);
	char err[256];
	float *init = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
	float *ref = malloc(n * sizeof(float));
	int32_t tok[8][B * T + 1];
	gpt_model *model = gpt_new(&cfg, B, T, GPT_FP32, err, sizeof(err));
	if (!CHECK(model != NULL, "gpt_new: %s", err))
		goto out;
	gpt_init_params(&cfg, init, 1234);
	for (int j = 0; j < 8; j++)
		for (int i = 0; i <= B * T; i++)
			tok[j][i] =
			    (int32_t)(mix((uint32_t)(j * 131 + i)) % (uint32_t)cfg.vocab_size);
	adamw_config opt = test_adamw();
	opt.eps = 1.0f;
	float ref_norms[RSTEPS] = {0};

	for (int pass = 0; pass < 5; pass++) {
		/* pass 0: the reference on self with P micro-steps; 1..4: stage pass-1 over c */
		comm *cc = pass ? c : self;
		int stage = pass ? pass - 1 : 0, accum = pass ? 1 : P, rank = pass ? r : 0;
		int world = pass ? P : 1;
		float norms[RSTEPS] = {0};
		dp_runtime *dp = dp_new(&cfg, cc, stage, init, &opt, err, sizeof(err));
		if (!CHECK(dp != NULL, "dp_new: %s", err))
			continue;
		gpt_hooks h = dp_hooks(dp);
		int rc = 0;
		for (int s = 1; s <= RSTEPS && !rc; s++) {
			dp_step_info info;
			dp_begin_step(dp, accum);
			for (int k = 0; k < accum; k++) {
				const int32_t *x = tok[((s - 1) * P + rank * accum + k) % 8];
				gpt_forward(model, &h, x, x + 1);
				gpt_backward(model, &h, 1.0f / (float)(accum * world));
			}
			rc = dp_step(dp, s, 1e-2f, 1.0f, 1.0f, &info);
			norms[s - 1] = info.grad_norm;
		}
		CHECK(rc == 0 && dp_gather_params(dp, pass ? got : ref) == 0, "stage %d run: %d",
		      stage, rc);
		dp_free(dp);
		if (!pass) {
			memcpy(ref_norms, norms, sizeof(norms));
			continue;
		}
		double worst = tol_ratio(got, ref, n);
		say("  gpt.c, stage %d, %d rank(s) vs 1: max rel diff %.2g, %.2g of tol\n", stage,
		    P, max_rel_diff(got, ref, n), worst);
		CHECK(worst <= 1.0, "gpt.c stage %d vs reference: worst %.3g of the tolerance",
		      stage, worst);
		bool ok = true;
		for (int s = 0; s < RSTEPS; s++)
			ok = ok && fabsf(norms[s] - ref_norms[s]) <= 1e-5f * ref_norms[s];
		CHECK(ok, "gpt.c stage %d: grad norms match the reference", stage);
		CHECK(same_on_all_ranks(c, got, n), "gpt.c stage %d: ranks differ", stage);
	}
out:
	gpt_free(model);
	free(init);
	free(got);
	free(ref);
}

/* Stage 2 keeps two layer scratch buffers: a third open unit is a contract error. */
static void test_contract(comm *self)
{
	char err[256];
	adamw_config opt = test_adamw();
	dp_runtime *dp = dp_new(&small_cfg, self, 2, NULL, &opt, err, sizeof(err));
	if (!CHECK(dp != NULL, "dp_new: %s", err))
		return;
	gpt_hooks h = dp_hooks(dp);
	dp_begin_step(dp, 1);
	say("  (one logged error follows: a deliberate hook contract violation)\n");
	h.grads(h.ctx, 4);
	h.grads(h.ctx, 3);
	h.grads(h.ctx, 2); /* unit 4 is still open in the same scratch */
	CHECK(dp_error(dp) == DP_ERR_CONTRACT, "contract error latched: %d", dp_error(dp));
	dp_step_info info;
	CHECK(dp_step(dp, 1, 0.1f, 0, 1, &info) == DP_ERR_CONTRACT && !info.updated,
	      "dp_step reports it");
	CHECK(dp_begin_step(dp, 0) != 0, "zero micro-steps are refused");
	dp_free(dp);
	CHECK(dp_new(&small_cfg, self, 4, NULL, &opt, err, sizeof(err)) == NULL &&
	          strstr(err, "zero_stage") != NULL,
	      "stage 4 refused: %s", err);
}

int main(void)
{
	comm *c, *self;
	int rc = check_open("mpitest_zero", &c, &self);
	if (rc)
		return rc;
	/* only rank 0 prints logs: the others' (of deliberate errors, too) go nowhere */
	if (my_rank != 0 && !freopen("/dev/null", "w", stderr))
		return 2;
	say("Running mpitest_zero: %d rank(s) over %s\n", comm_size(c), comm_name(c));

	say("comm (logged errors follow: deliberate bad arguments)\n");
	test_comm(c);
	say("comm through host buffers (the same deliberate errors)\n");
	test_staged(c);
	say("memory accounting\n");
	test_memory(c);
	say("equivalence with one rank\n");
	test_equivalence(c, self);
	say("non-finite gradients\n");
	test_skip(c);
	say("checkpoint ranges and resume\n");
	test_checkpoint(c);
	say("the real model\n");
	test_real_model(c, self);
	say("hook contract\n");
	test_contract(self);

	rc = check_summary(c);
	comm_free(self);
	comm_free(c);
	return rc;
}
