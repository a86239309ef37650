/*
 * test_gpu_ops.cu - each GPU op of trainer/gpu/ops_gpu.h against its CPU
 * reference (trainer/ops_ref.c, trainer/optim.c) on the same random
 * inputs, at the shapes of GPT-2 124M (C 768, 4C, V 50257 padded to 50304)
 * and at odd ones that do not fill a block. Bounds: forward outputs and
 * losses within 1e-5 relative to the tensor's largest magnitude; gradients
 * that sum over many rows (dw, db) within 1e-4 of it, since the two sum in
 * other orders; AdamW's parameters and moments within 1e-6 after three
 * steps; the squared norm within 1e-10 of a sequential double sum (which
 * itself rounds n times), and the same bits twice. Prints one TAP line per
 * check; exits 1 when one fails, 0 with a "skipped" line when there is no
 * GPU.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "ops.h"
#include "optim.h"
}
#include "gpu/ops_gpu.h"

static int failed, passed;

static float *dev(const float *h, size_t n)
{
	float *d = NULL;
	if (cudaMalloc(&d, n * sizeof(float) + 1) != cudaSuccess) {
		fprintf(stderr, "cudaMalloc of %zu floats failed\n", n);
		exit(2);
	}
	if (h)
		cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
	else
		cudaMemset(d, 0, n * sizeof(float));
	return d;
}

static float *host(const float *d, size_t n)
{
	float *h = (float *)malloc(n * sizeof(float) + 1);
	cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
	return h;
}

static float *randn(size_t n, unsigned *seed, float scale)
{
	float *x = (float *)malloc(n * sizeof(float) + 1);
	for (size_t i = 0; i < n; i++) {
		*seed = *seed * 1664525u + 1013904223u;
		x[i] = ((float)(*seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
	}
	return x;
}

/* The largest |a - b| over the largest |a|: the tensor's relative error. */
static void compare(const char *what, const float *want, const float *d_got, size_t n, double bound)
{
	char err[256];
	if (gpu_sync(err, sizeof(err)) < 0) {
		printf("not ok - %s: %s\n", what, err);
		failed++;
		return;
	}
	float *got = host(d_got, n);
	double diff = 0, mag = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)want[i] - (double)got[i]);
		if (!(d <= diff))
			diff = d; /* NaN counts */
		if (fabs((double)want[i]) > mag)
			mag = fabs((double)want[i]);
	}
	double rel = mag > 0 ? diff / mag : diff;
	bool ok = rel <= bound;
	printf("%s - %s (relative error %.2e, bound %.0e)\n", ok ? "ok" : "not ok", what, rel,
	       bound);
	ok ? passed++ : failed++;
	free(got);
}

static void check_layernorm(int N, int C, unsigned seed)
{
	char what[128];
	float *x = randn((size_t)N * C, &seed, 3.0f), *w = randn(C, &seed, 1.0f),
	      *b = randn(C, &seed, 1.0f), *dout = randn((size_t)N * C, &seed, 1.0f);
	float *out = (float *)calloc((size_t)N * C, 4), *mean = (float *)calloc(N, 4),
	      *rstd = (float *)calloc(N, 4), *dinp = (float *)calloc((size_t)N * C, 4),
	      *dw = (float *)calloc(C, 4), *db = (float *)calloc(C, 4);
	layernorm_forward_ref(out, mean, rstd, x, w, b, N, C);
	layernorm_backward_ref(dinp, dw, db, dout, x, w, mean, rstd, N, C);
	float *dx = dev(x, (size_t)N * C), *dwt = dev(w, C), *dbs = dev(b, C),
	      *ddout = dev(dout, (size_t)N * C), *dout_ = dev(NULL, (size_t)N * C),
	      *dmean = dev(NULL, N), *drstd = dev(NULL, N), *ddinp = dev(NULL, (size_t)N * C),
	      *ddw = dev(NULL, C), *ddb = dev(NULL, C);
	gpu_layernorm_forward(dout_, dmean, drstd, dx, dwt, dbs, N, C);
	snprintf(what, sizeof(what), "layernorm forward [%d,%d]", N, C);
	compare(what, out, dout_, (size_t)N * C, 1e-5);
	snprintf(what, sizeof(what), "layernorm rstd [%d]", N);
	compare(what, rstd, drstd, N, 1e-5);
	gpu_layernorm_backward(ddinp, ddw, ddb, ddout, dx, dwt, dmean, drstd, N, C);
	snprintf(what, sizeof(what), "layernorm backward dinp [%d,%d]", N, C);
	compare(what, dinp, ddinp, (size_t)N * C, 1e-5);
	snprintf(what, sizeof(what), "layernorm backward dw [%d]", C);
	compare(what, dw, ddw, C, 1e-4);
	snprintf(what, sizeof(what), "layernorm backward db [%d]", C);
	compare(what, db, ddb, C, 1e-4);
	float *all[] = {x, w, b, dout, out, mean, rstd, dinp, dw, db};
	for (float *p : all)
		free(p);
	float *dall[] = {dx, dwt, dbs, ddout, dout_, dmean, drstd, ddinp, ddw, ddb};
	for (float *p : dall)
		cudaFree(p);
}

static void check_gelu(size_t n, unsigned seed)
{
	char what[128];
	float *x = randn(n, &seed, 4.0f), *g = randn(n, &seed, 1.0f);
	float *out = (float *)calloc(n, 4), *dinp = (float *)calloc(n, 4),
	      *res = (float *)calloc(n, 4);
	gelu_forward_ref(out, x, n);
	gelu_backward_ref(dinp, x, g, n);
	residual_forward_ref(res, x, g, n);
	float *dx = dev(x, n), *dg = dev(g, n), *dout = dev(NULL, n), *ddinp = dev(NULL, n),
	      *dres = dev(NULL, n);
	gpu_gelu_forward(dout, dx, n);
	snprintf(what, sizeof(what), "gelu forward [%zu]", n);
	compare(what, out, dout, n, 1e-5);
	gpu_gelu_backward(ddinp, dx, dg, n);
	snprintf(what, sizeof(what), "gelu backward [%zu]", n);
	compare(what, dinp, ddinp, n, 1e-5);
	gpu_residual_forward(dres, dx, dg, n);
	snprintf(what, sizeof(what), "residual [%zu]", n);
	compare(what, res, dres, n, 1e-6);
	float *all[] = {x, g, out, dinp, res};
	for (float *p : all)
		free(p);
	float *dall[] = {dx, dg, dout, ddinp, dres};
	for (float *p : dall)
		cudaFree(p);
}

static void check_xent(int N, int V, int Vp, unsigned seed)
{
	char what[128];
	float *logits = randn((size_t)N * Vp, &seed, 8.0f);
	int32_t *t = (int32_t *)malloc(N * sizeof(int32_t));
	for (int n = 0; n < N; n++) {
		seed = seed * 1664525u + 1013904223u;
		t[n] = (int32_t)((seed >> 8) % (unsigned)V);
	}
	float *losses = (float *)calloc(N, 4), *lse = (float *)calloc(N, 4),
	      *dl = (float *)calloc((size_t)N * Vp, 4);
	softmax_xent_forward_ref(losses, lse, logits, t, N, V, Vp);
	softmax_xent_backward_ref(dl, logits, lse, t, 1.0f / N, N, V, Vp);
	float *dlog = dev(logits, (size_t)N * Vp), *dlosses = dev(NULL, N), *dlse = dev(NULL, N),
	      *ddl = dev(NULL, (size_t)N * Vp);
	int32_t *dt = NULL;
	cudaMalloc(&dt, N * sizeof(int32_t));
	cudaMemcpy(dt, t, N * sizeof(int32_t), cudaMemcpyHostToDevice);
	gpu_softmax_xent_forward(dlosses, dlse, dlog, dt, N, V, Vp);
	snprintf(what, sizeof(what), "softmax cross-entropy losses [%d of %d/%d]", N, V, Vp);
	compare(what, losses, dlosses, N, 1e-5);
	gpu_softmax_xent_backward(ddl, dlog, dlse, dt, 1.0f / N, N, V, Vp);
	snprintf(what, sizeof(what), "softmax cross-entropy dlogits [%d,%d]", N, Vp);
	compare(what, dl, ddl, (size_t)N * Vp, 1e-5);
	free(logits), free(t), free(losses), free(lse), free(dl);
	cudaFree(dlog), cudaFree(dlosses), cudaFree(dlse), cudaFree(ddl), cudaFree(dt);
}

static void check_matmul(int N, int C, int OC, unsigned seed)
{
	char what[128];
	float *x = randn((size_t)N * C, &seed, 1.0f), *w = randn((size_t)OC * C, &seed, 0.05f),
	      *b = randn(OC, &seed, 0.1f), *dout = randn((size_t)N * OC, &seed, 1.0f);
	float *out = (float *)calloc((size_t)N * OC, 4), *dinp = (float *)calloc((size_t)N * C, 4),
	      *dw = randn((size_t)OC * C, &seed, 0.01f), *db = randn(OC, &seed, 0.01f);
	float *dx = dev(x, (size_t)N * C), *dwt = dev(w, (size_t)OC * C), *dbs = dev(b, OC),
	      *ddout = dev(dout, (size_t)N * OC), *dout_ = dev(NULL, (size_t)N * OC),
	      *ddinp = dev(NULL, (size_t)N * C), *ddw = dev(dw, (size_t)OC * C), *ddb = dev(db, OC);
	matmul_forward_ref(out, x, w, b, N, C, OC);
	matmul_backward_ref(dinp, dw, db, dout, x, w, N, C, OC);
	int rc = gpu_matmul_forward(dout_, dx, dwt, dbs, N, C, OC);
	snprintf(what, sizeof(what), "matmul forward with bias [%d,%d] x [%d,%d]^T%s", N, C, OC, C,
	         rc ? ": cuBLASLt refused it" : "");
	compare(what, out, dout_, (size_t)N * OC, rc ? -1.0 : 1e-5);
	rc = gpu_matmul_backward(ddinp, ddw, ddb, ddout, dx, dwt, N, C, OC);
	snprintf(what, sizeof(what), "matmul backward dinp [%d,%d]%s", N, C,
	         rc ? ": cuBLASLt refused it" : "");
	compare(what, dinp, ddinp, (size_t)N * C, rc ? -1.0 : 1e-5);
	snprintf(what, sizeof(what), "matmul backward dw [%d,%d] (accumulated)", OC, C);
	compare(what, dw, ddw, (size_t)OC * C, 1e-4);
	snprintf(what, sizeof(what), "matmul backward dbias [%d] (accumulated)", OC);
	compare(what, db, ddb, OC, 1e-4);
	float *all[] = {x, w, b, dout, out, dinp, dw, db};
	for (float *p : all)
		free(p);
	float *dall[] = {dx, dwt, dbs, ddout, dout_, ddinp, ddw, ddb};
	for (float *p : dall)
		cudaFree(p);
}

static void check_attention(int B, int T, int C, int NH, unsigned seed)
{
	char what[128];
	size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
	float *qkv = randn(nq, &seed, 1.0f), *out = (float *)calloc(no, 4),
	      *att = (float *)calloc(na, 4);
	attention_forward_ref(out, att, qkv, B, T, C, NH);
	float *dqkv = dev(qkv, nq), *dout = dev(NULL, no), *datt = dev(NULL, na);
	gpu_attention_forward(dout, datt, dqkv, B, T, C, NH);
	snprintf(what, sizeof(what), "attention forward out [%d,%d,%d], %d heads", B, T, C, NH);
	compare(what, out, dout, no, 1e-5);
	snprintf(what, sizeof(what), "attention forward probabilities [%d,%d,%d,%d]", B, NH, T, T);
	compare(what, att, datt, na, 1e-5);
	float *grad = randn(no, &seed, 1.0f), *dx = (float *)calloc(nq, 4);
	attention_backward_ref(dx, grad, qkv, att, B, T, C, NH);
	float *dgrad = dev(grad, no), *ddx = dev(NULL, nq), *dscratch = dev(NULL, na);
	gpu_attention_backward(ddx, dscratch, dgrad, dqkv, datt, B, T, C, NH);
	snprintf(what, sizeof(what), "attention backward dqkv [%d,%d,%d]", B, T, 3 * C);
	compare(what, dx, ddx, nq, 1e-5);
	free(qkv), free(out), free(att), free(grad), free(dx);
	cudaFree(dqkv), cudaFree(dout), cudaFree(datt), cudaFree(dgrad), cudaFree(ddx),
	    cudaFree(dscratch);
}

static void check_adamw(size_t n, int t, unsigned seed)
{
	char what[128];
	float *p = randn(n, &seed, 1.0f), *g = randn(n, &seed, 0.1f), *m = randn(n, &seed, 0.01f);
	float *v = randn(n, &seed, 0.001f);
	for (size_t i = 0; i < n; i++)
		v[i] = fabsf(v[i]);
	float *dp = dev(p, n), *dg = dev(g, n), *dm = dev(m, n), *dv = dev(v, n);
	adamw_config cfg = adamw_defaults();
	for (int step = t; step < t + 3; step++) {
		adamw_update(&cfg, p, g, m, v, n, 6e-4f, 0.5f, true, step);
		gpu_adamw_update(dp, dg, dm, dv, n, 6e-4f, cfg.beta1, cfg.beta2, cfg.eps,
		                 cfg.weight_decay, 0.5f, step);
	}
	snprintf(what, sizeof(what), "AdamW, 3 steps from step %d: parameters [%zu]", t, n);
	compare(what, p, dp, n, 1e-6);
	snprintf(what, sizeof(what), "AdamW: first moments [%zu]", n);
	compare(what, m, dm, n, 1e-6);
	snprintf(what, sizeof(what), "AdamW: second moments [%zu]", n);
	compare(what, v, dv, n, 1e-6);
	free(p), free(g), free(m), free(v);
	cudaFree(dp), cudaFree(dg), cudaFree(dm), cudaFree(dv);
}

static void check_sumsq(size_t n, unsigned seed)
{
	float *x = randn(n, &seed, 2.0f);
	double want = 0.0, got[2] = {0, 0}, *dout, *dscratch;
	for (size_t i = 0; i < n; i++)
		want += (double)x[i] * (double)x[i];
	float *dx = dev(x, n);
	cudaMalloc(&dout, sizeof(double));
	cudaMalloc(&dscratch, GPU_SUMSQ_BLOCKS * sizeof(double));
	for (int k = 0; k < 2; k++) {
		gpu_sumsq(dout, dscratch, dx, n);
		cudaMemcpy(&got[k], dout, sizeof(double), cudaMemcpyDeviceToHost);
	}
	double rel = fabs(got[0] - want) / want;
	bool ok = rel <= 1e-10 && memcmp(&got[0], &got[1], sizeof(double)) == 0;
	printf("%s - squared norm [%zu] (relative error %.2e, bound 1e-10; the same bits twice)\n",
	       ok ? "ok" : "not ok", n, rel);
	ok ? passed++ : failed++;
	free(x);
	cudaFree(dx), cudaFree(dout), cudaFree(dscratch);
}

static int32_t *dev_tokens(const int32_t *h, size_t n)
{
	int32_t *d = NULL;
	if (cudaMalloc(&d, n * sizeof(int32_t)) != cudaSuccess) {
		fprintf(stderr, "cudaMalloc of %zu tokens failed\n", n);
		exit(2);
	}
	cudaMemcpy(d, h, n * sizeof(int32_t), cudaMemcpyHostToDevice);
	return d;
}

/*
 * The embeddings and the LM head. Tokens repeat (V small against B*T), so
 * wte rows sum several positions. The logits' padded columns must be -inf
 * and are compared apart from the real ones.
 */
static void check_embed_head(int B, int T, int C, int V, int Vp, unsigned seed)
{
	char what[128];
	int N = B * T;
	size_t NC = (size_t)N * C, NV = (size_t)N * Vp;
	int32_t *tok = (int32_t *)malloc((size_t)N * sizeof(int32_t));
	for (int i = 0; i < N; i++) {
		seed = seed * 1664525u + 1013904223u;
		tok[i] = (int32_t)((seed >> 8) % (unsigned)V);
	}
	float *wte = randn((size_t)Vp * C, &seed, 1.0f), *wpe = randn((size_t)T * C, &seed, 1.0f);
	float *dout = randn(NC, &seed, 1.0f), *x = randn(NC, &seed, 1.0f);
	float *dlog = randn(NV, &seed, 1.0f);
	for (int n = 0; n < N; n++)
		for (int v = V; v < Vp; v++)
			dlog[(size_t)n * Vp + v] = 0.0f; /* as softmax_xent_backward leaves them */
	float *out = (float *)calloc(NC, 4), *dwte = (float *)calloc((size_t)Vp * C, 4),
	      *dwpe = (float *)calloc((size_t)T * C, 4), *logits = (float *)calloc(NV, 4),
	      *dx = (float *)calloc(NC, 4), *dwte2 = (float *)calloc((size_t)Vp * C, 4);
	encoder_forward_ref(out, tok, wte, wpe, B, T, C);
	encoder_backward_ref(dwte, dwpe, dout, tok, B, T, C);
	lmhead_forward_ref(logits, x, wte, N, C, V, Vp);
	lmhead_backward_ref(dx, dwte2, dlog, x, wte, N, C, V, Vp);

	int32_t *d_tok = dev_tokens(tok, (size_t)N);
	float *d_wte = dev(wte, (size_t)Vp * C), *d_wpe = dev(wpe, (size_t)T * C),
	      *d_dout = dev(dout, NC), *d_x = dev(x, NC), *d_dlog = dev(dlog, NV),
	      *d_out = dev(NULL, NC), *d_dwte = dev(NULL, (size_t)Vp * C),
	      *d_dwpe = dev(NULL, (size_t)T * C), *d_logits = dev(NULL, NV), *d_dx = dev(NULL, NC),
	      *d_dwte2 = dev(NULL, (size_t)Vp * C);
	gpu_encoder_forward(d_out, d_tok, d_wte, d_wpe, B, T, C);
	snprintf(what, sizeof(what), "encoder forward [%d,%d,%d]", B, T, C);
	compare(what, out, d_out, NC, 1e-6);
	int32_t *bk = (int32_t *)malloc((3 * (size_t)N + 1) * sizeof(int32_t)),
	        *count = (int32_t *)malloc((size_t)V * sizeof(int32_t));
	int nb = gpu_token_buckets(bk, tok, N, V, count);
	int32_t *d_bk = dev_tokens(bk, 3 * (size_t)N + 1);
	gpu_encoder_backward(d_dwte, d_dwpe, d_dout, d_bk, nb, B, T, C);
	snprintf(what, sizeof(what), "encoder backward dwte [%d,%d]", Vp, C);
	compare(what, dwte, d_dwte, (size_t)Vp * C, 1e-5);
	snprintf(what, sizeof(what), "encoder backward dwpe [%d,%d]", T, C);
	compare(what, dwpe, d_dwpe, (size_t)T * C, 1e-5);

	int bad = gpu_lmhead_forward(d_logits, d_x, d_wte, N, C, V, Vp);
	float *got = host(d_logits, NV);
	int pad_ok = !bad;
	for (int n = 0; n < N; n++)
		for (int v = 0; v < Vp; v++) {
			size_t i = (size_t)n * Vp + v;
			if (v >= V) {
				pad_ok &= isinf(got[i]) && got[i] < 0;
				got[i] = logits[i] = 0.0f; /* compared: the real columns */
			}
		}
	printf("%s - lmhead padded logits are -inf [%d,%d..%d]\n", pad_ok ? "ok" : "not ok", N,
	       V, Vp);
	pad_ok ? passed++ : failed++;
	cudaMemcpy(d_logits, got, NV * sizeof(float), cudaMemcpyHostToDevice);
	snprintf(what, sizeof(what), "lmhead forward [%d,%d]", N, V);
	compare(what, logits, d_logits, NV, 1e-5);
	if (gpu_lmhead_backward(d_dx, d_dwte2, d_dlog, d_x, d_wte, N, C, V, Vp) < 0)
		printf("not ok - lmhead backward refused\n"), failed++;
	snprintf(what, sizeof(what), "lmhead backward dinp [%d,%d]", N, C);
	compare(what, dx, d_dx, NC, 1e-5);
	snprintf(what, sizeof(what), "lmhead backward dwte [%d,%d]", Vp, C);
	compare(what, dwte2, d_dwte2, (size_t)Vp * C, 1e-4);
	free(tok);
	free(got);
	float *all[] = {wte, wpe, dout, x, dlog, out, dwte, dwpe, logits, dx, dwte2};
	for (float *q : all)
		free(q);
	float *dall[] = {d_wte, d_wpe, d_dout, d_x, d_dlog, d_out, d_dwte, d_dwpe, d_logits, d_dx,
	                 d_dwte2};
	for (float *q : dall)
		cudaFree(q);
	cudaFree(d_tok);
}

/*
 * The encoder backward's host half, which runs without a device: the
 * buckets of a batch hold every position once, grouped by token in
 * increasing token order, positions increasing within a token.
 */
static void check_token_buckets(void)
{
	const int N = 4096, V = 97;
	int32_t *tok = (int32_t *)malloc(N * sizeof(int32_t)),
	        *bk = (int32_t *)malloc((3 * N + 1) * sizeof(int32_t)),
	        *count = (int32_t *)malloc(V * sizeof(int32_t));
	unsigned seed = 99;
	for (int i = 0; i < N; i++) {
		seed = seed * 1664525u + 1013904223u;
		tok[i] = (int32_t)((seed >> 8) % 61u) * 3 % V; /* not every token appears */
	}
	int nb = gpu_token_buckets(bk, tok, N, V, count);
	const int32_t *order = bk, *btok = bk + N, *start = bk + 2 * N;
	bool ok = nb > 0 && nb <= V && start[0] == 0 && start[nb] == N;
	int at = 0;
	for (int k = 0; ok && k < nb; k++) {
		ok = (k == 0 || btok[k] > btok[k - 1]) && start[k + 1] > start[k];
		for (int v = 0, want = 0; ok && v < N; v++) /* the positions of btok[k], in order */
			if (tok[v] == btok[k]) {
				ok = order[start[k] + want] == v;
				want++;
				at++;
			}
	}
	ok = ok && at == N;
	printf("%s - token buckets of %d positions: %d distinct tokens, each position once, in "
	       "order\n",
	       ok ? "ok" : "not ok", N, nb);
	ok ? passed++ : failed++;
	free(tok);
	free(bk);
	free(count);
}

int main(void)
{
	int n = 0;
	check_token_buckets();
	if (failed)
		return 1;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("# skipped: no CUDA device here (cudaGetDeviceCount: %d)\n", n);
		return 0;
	}
	cudaDeviceProp p;
	cudaGetDeviceProperties(&p, 0);
	printf("# device 0: %s, sm_%d%d\n", p.name, p.major, p.minor);
	check_layernorm(64, 768, 1);
	check_layernorm(7, 333, 2);
	check_gelu((size_t)64 * 3072, 3);
	check_gelu(1001, 4);
	check_xent(32, 50257, 50304, 5);
	check_xent(5, 300, 320, 6);
	check_matmul(256, 768, 2304, 11); /* the qkv projection of GPT-2 124M */
	check_matmul(37, 129, 65, 12);
	check_attention(2, 256, 768, 12, 13); /* GPT-2 124M's heads */
	check_attention(1, 37, 96, 3, 14);
	check_embed_head(4, 64, 768, 50257, 50304, 15); /* GPT-2 124M's vocabulary */
	check_embed_head(3, 5, 33, 40, 64, 16);         /* every token many times */
	check_adamw((size_t)124439808, 1, 7); /* GPT-2 124M's parameters */
	check_adamw(1001, 5000, 8);
	check_sumsq((size_t)124439808, 9);
	check_sumsq(77, 10);
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
