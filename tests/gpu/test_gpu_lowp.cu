/*
 * test_gpu_lowp.cu - the mixed-precision ops of trainer/gpu/ops_lowp.h
 * and the flat AdamW against their CPU references (trainer/ops_ref.c,
 * optim.c), in bf16 and in fp16, at GPT-2 124M's widths and at odd ones.
 *
 * The inputs are rounded to the 16-bit format on the host first, so the
 * CPU reference sees exactly what the GPU sees; what differs is then
 * only the GPU's rounding of its 16-bit outputs and the order of its
 * fp32 sums. Bounds, relative to the tensor's largest magnitude:
 *   16-bit outputs    half an ulp of the format at the largest value,
 *                     doubled for the sums before it: 8e-3 bf16 (8
 *                     significant bits), 1e-3 fp16 (11 bits);
 *   fp32 outputs      1e-5 (rows, statistics, losses), 1e-4 for the
 *                     weight gradients, which sum N rows in another order;
 *   AdamW             1e-6 after three steps, and the 16-bit copy the
 *                     rounding of the fp32 weights, bit for bit.
 * Prints TAP-style lines; exits 1 when one fails, 0 with a "skipped" line
 * when there is no CUDA device.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "lowp.h"
#include "ops.h"
#include "optim.h"
}
#include "gpu/ops_gpu.h"
#include "gpu/ops_lowp.h"

static int failed, passed;

typedef struct fmt_info {
	gpu_lowp fmt;
	gpt_precision prec;
	const char *name;
	double bound; /* a 16-bit output's */
} fmt_info;

static const fmt_info formats[] = {
    {GPU_BF16, GPT_BF16, "bf16", 8e-3},
    {GPU_FP16, GPT_FP16, "fp16", 1e-3},
};

static void *dmalloc(size_t bytes)
{
	void *d = NULL;
	if (cudaMalloc(&d, bytes + 16) != cudaSuccess) {
		fprintf(stderr, "cudaMalloc of %zu bytes failed\n", bytes);
		exit(2);
	}
	cudaMemset(d, 0, bytes + 16);
	return d;
}

static float *dev32(const float *h, size_t n)
{
	float *d = (float *)dmalloc(n * sizeof(float));
	if (h)
		cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
	return d;
}

/* n values of x, already representable, as the format's bits on the device. */
static void *dev16(const float *x, size_t n, const fmt_info *f)
{
	uint16_t *h = (uint16_t *)malloc(n * 2 + 2);
	for (size_t i = 0; i < n; i++)
		h[i] = f->fmt == GPU_BF16 ? lowp_bf16_bits(x[i]) : lowp_fp16_bits(x[i]);
	void *d = dmalloc(n * 2);
	cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice);
	free(h);
	return d;
}

static float *host32(const float *d, size_t n)
{
	float *h = (float *)malloc(n * sizeof(float) + 4);
	cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
	return h;
}

static float *host16(const void *d, size_t n, const fmt_info *f)
{
	uint16_t *b = (uint16_t *)malloc(n * 2 + 2);
	float *h = (float *)malloc(n * sizeof(float) + 4);
	cudaMemcpy(b, d, n * 2, cudaMemcpyDeviceToHost);
	for (size_t i = 0; i < n; i++)
		h[i] = f->fmt == GPU_BF16 ? lowp_bf16_to_float(b[i]) : lowp_fp16_to_float(b[i]);
	free(b);
	return h;
}

/* Random values in [-scale, scale], rounded to the format when f is given. */
static float *randv(size_t n, unsigned *seed, float scale, const fmt_info *f)
{
	float *x = (float *)malloc(n * sizeof(float) + 4);
	for (size_t i = 0; i < n; i++) {
		*seed = *seed * 1664525u + 1013904223u;
		x[i] = ((float)(*seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
		if (f)
			x[i] = lowp_round(x[i], f->prec);
	}
	return x;
}

static bool device_ok(const char *what)
{
	cudaError_t e = cudaDeviceSynchronize();
	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e == cudaSuccess)
		return true;
	printf("not ok - %s: %s\n", what, cudaGetErrorString(e));
	failed++;
	return false;
}

/* want against got (host, freed here): the largest |difference| over the largest |want|. */
static void compare(const char *what, const float *want, float *got, size_t n, double bound)
{
	double diff = 0, mag = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)want[i] - (double)got[i]);
		if (!(d <= diff))
			diff = d; /* NaN counts */
		mag = fmax(mag, fabs((double)want[i]));
	}
	double rel = mag > 0 ? diff / mag : diff;
	bool ok = rel <= bound;
	printf("%s - %s (relative error %.2e, bound %.0e)\n", ok ? "ok" : "not ok", what, rel,
	       bound);
	ok ? passed++ : failed++;
	free(got);
}

static void check_layernorm(const fmt_info *f, int N, int C, unsigned seed)
{
	char what[160];
	size_t NC = (size_t)N * C;
	float *res = randv(NC, &seed, 2.0f, NULL), *add = randv(NC, &seed, 1.0f, f),
	      *w = randv(C, &seed, 1.0f, NULL), *b = randv(C, &seed, 0.5f, NULL);
	float *sum = (float *)malloc(NC * 4), *out = (float *)malloc(NC * 4),
	      *mean = (float *)malloc(N * 4), *rstd = (float *)malloc(N * 4);
	for (size_t i = 0; i < NC; i++)
		sum[i] = res[i] + add[i];
	layernorm_forward_ref(out, mean, rstd, sum, w, b, N, C);
	float *d_res = dev32(res, NC), *d_sum = dev32(NULL, NC), *d_w = dev32(w, C),
	      *d_b = dev32(b, C), *d_mean = dev32(NULL, N), *d_rstd = dev32(NULL, N);
	void *d_add = dev16(add, NC, f), *d_out = dmalloc(NC * 2);
	gpu_residual_layernorm_forward(d_sum, d_out, d_mean, d_rstd, d_res, d_add, d_w, d_b, N, C,
	                               f->fmt);
	if (!device_ok("residual + layernorm forward"))
		return;
	snprintf(what, sizeof what, "%s residual + layernorm forward [%d,%d]: the sum", f->name, N,
	         C);
	compare(what, sum, host32(d_sum, NC), NC, 1e-6);
	snprintf(what, sizeof what, "%s residual + layernorm forward [%d,%d]: out", f->name, N, C);
	compare(what, out, host16(d_out, NC, f), NC, f->bound);
	snprintf(what, sizeof what, "%s layernorm mean and rstd [%d]", f->name, N);
	compare(what, mean, host32(d_mean, N), N, 1e-5);
	compare(what, rstd, host32(d_rstd, N), N, 1e-5);

	/* backward: dres and the weights' gradients start nonzero (they accumulate) */
	float *dout = randv(NC, &seed, 1.0f, f), *dres = randv(NC, &seed, 1.0f, NULL),
	      *dw = randv(C, &seed, 1.0f, NULL), *db = randv(C, &seed, 1.0f, NULL);
	float *d_dres = dev32(dres, NC), *d_dw = dev32(dw, C), *d_db = dev32(db, C),
	      *d_scr = dev32(NULL, GPU_COL_SCRATCH(N, C));
	void *d_dout = dev16(dout, NC, f), *d_low = dmalloc(NC * 2);
	layernorm_backward_ref(dres, dw, db, dout, sum, w, mean, rstd, N, C);
	gpu_lowp_layernorm_backward(d_dres, d_low, d_dw, d_db, d_scr, d_dout, d_sum, d_w, d_mean,
	                            d_rstd, N, C, f->fmt);
	if (!device_ok("layernorm backward"))
		return;
	snprintf(what, sizeof what, "%s layernorm backward [%d,%d]: dres", f->name, N, C);
	compare(what, dres, host32(d_dres, NC), NC, 1e-5);
	snprintf(what, sizeof what, "%s layernorm backward [%d,%d]: dres's 16-bit copy", f->name, N,
	         C);
	compare(what, dres, host16(d_low, NC, f), NC, f->bound);
	snprintf(what, sizeof what, "%s layernorm backward [%d]: dw, db", f->name, C);
	compare(what, dw, host32(d_dw, C), C, 1e-4);
	compare(what, db, host32(d_db, C), C, 1e-4);
	free(res), free(add), free(w), free(b), free(sum), free(out), free(mean), free(rstd);
	free(dout), free(dres), free(dw), free(db);
	cudaFree(d_res), cudaFree(d_sum), cudaFree(d_w), cudaFree(d_b), cudaFree(d_mean);
	cudaFree(d_rstd), cudaFree(d_add), cudaFree(d_out), cudaFree(d_dres), cudaFree(d_dw);
	cudaFree(d_db), cudaFree(d_scr), cudaFree(d_dout), cudaFree(d_low);
}

static void check_classifier(const fmt_info *f, int N, int V, int Vp, unsigned seed)
{
	char what[160];
	size_t NV = (size_t)N * Vp;
	float *logits = randv(NV, &seed, 4.0f, f);
	int32_t *tg = (int32_t *)malloc(N * sizeof(int32_t));
	for (int n = 0; n < N; n++) {
		seed = seed * 1664525u + 1013904223u;
		tg[n] = (int32_t)((seed >> 8) % (unsigned)V);
	}
	float *ref = (float *)malloc(NV * 4), *losses = (float *)malloc(N * 4),
	      *lse = (float *)malloc(N * 4), *dl = (float *)malloc(NV * 4);
	memcpy(ref, logits, NV * 4);
	for (int n = 0; n < N; n++)
		for (int v = V; v < Vp; v++)
			ref[(size_t)n * Vp + v] = -INFINITY; /* as the CPU's LM head pads */
	softmax_xent_forward_ref(losses, lse, ref, tg, N, V, Vp);
	softmax_xent_backward_ref(dl, ref, lse, tg, 1.0f, N, V, Vp);
	for (int n = 0; n < N; n++) /* the GPU leaves the padding as it was */
		for (int v = V; v < Vp; v++)
			dl[(size_t)n * Vp + v] = logits[(size_t)n * Vp + v];
	void *d_logits = dev16(logits, NV, f);
	int32_t *d_tg = (int32_t *)dmalloc(N * sizeof(int32_t));
	cudaMemcpy(d_tg, tg, N * sizeof(int32_t), cudaMemcpyHostToDevice);
	float *d_losses = dev32(NULL, N), *d_lse = dev32(NULL, N);
	gpu_lowp_classifier(d_logits, d_losses, d_lse, d_tg, N, V, Vp, f->fmt);
	if (!device_ok("classifier"))
		return;
	snprintf(what, sizeof what, "%s classifier [%d,%d of %d]: losses", f->name, N, V, Vp);
	compare(what, losses, host32(d_losses, N), N, 1e-5);
	snprintf(what, sizeof what, "%s classifier: log-sum-exp", f->name);
	compare(what, lse, host32(d_lse, N), N, 1e-5);
	snprintf(what, sizeof what, "%s classifier: the gradient in place, padding untouched",
	         f->name);
	compare(what, dl, host16(d_logits, NV, f), NV, f->bound);
	free(logits), free(tg), free(ref), free(losses), free(lse), free(dl);
	cudaFree(d_logits), cudaFree(d_tg), cudaFree(d_losses), cudaFree(d_lse);
}

static float gelu1(float x)
{
	float y;
	gelu_forward_ref(&y, &x, 1);
	return y;
}

static void check_matmul(const fmt_info *f, int N, int C, int OC, bool gelu, unsigned seed)
{
	char what[200];
	const char *kind = gelu ? "with GELU" : "with bias";
	float *inp = randv((size_t)N * C, &seed, 1.0f, f), *w = randv((size_t)OC * C, &seed, 0.1f, f),
	      *bias = randv(OC, &seed, 0.5f, f);
	float *pre = (float *)malloc((size_t)N * OC * 4), *out = (float *)malloc((size_t)N * OC * 4);
	matmul_forward_ref(pre, inp, w, bias, N, C, OC);
	for (size_t i = 0; i < (size_t)N * OC; i++)
		out[i] = gelu ? gelu1(pre[i]) : pre[i];
	void *d_inp = dev16(inp, (size_t)N * C, f), *d_w = dev16(w, (size_t)OC * C, f),
	     *d_bias = dev16(bias, OC, f), *d_out = dmalloc((size_t)N * OC * 2),
	     *d_pre = gelu ? dmalloc((size_t)N * OC * 2) : NULL;
	int rc = gpu_lowp_matmul_forward(d_out, d_pre, d_inp, d_w, d_bias, N, C, OC, OC, f->fmt);
	snprintf(what, sizeof what, "%s matmul forward %s [%d,%d] x [%d,%d]^T: cuBLASLt took it",
	         f->name, kind, N, C, OC, C);
	printf("%s - %s\n", rc == 0 ? "ok" : "not ok", what);
	rc == 0 ? passed++ : failed++;
	if (rc < 0 || !device_ok("matmul forward"))
		return;
	snprintf(what, sizeof what, "%s matmul forward %s [%d,%d,%d]: out", f->name, kind, N, C, OC);
	compare(what, out, host16(d_out, (size_t)N * OC, f), (size_t)N * OC, f->bound);
	if (gelu) {
		snprintf(what, sizeof what, "%s matmul forward [%d,%d,%d]: the pre-activation kept",
		         f->name, N, C, OC);
		compare(what, pre, host16(d_pre, (size_t)N * OC, f), (size_t)N * OC, f->bound);
		/* the backward then reads the GPU's rounded pre-activation */
		float *rounded = host16(d_pre, (size_t)N * OC, f);
		memcpy(pre, rounded, (size_t)N * OC * 4);
		free(rounded);
	}

	/* backward of a layer whose input came through GELU: dinp = (dout @ w) * gelu'(pre) */
	const float alpha = 0.5f;
	float *dout = randv((size_t)N * OC, &seed, 1.0f, f), *dw = randv((size_t)OC * C, &seed, 1.0f,
	                                                               NULL),
	      *db = randv(OC, &seed, 1.0f, NULL);
	float *dinp = (float *)malloc((size_t)N * C * 4), *dw0 = (float *)calloc((size_t)OC * C, 4),
	      *db0 = (float *)calloc(OC, 4);
	float *dw_in = (float *)malloc((size_t)OC * C * 4), *db_in = (float *)malloc(OC * 4);
	memcpy(dw_in, dw, (size_t)OC * C * 4);
	memcpy(db_in, db, OC * 4);
	/* with GELU, the layer's input is the pre-activation's image: use inp as pre [N,C] */
	float *gpre = gelu ? randv((size_t)N * C, &seed, 2.0f, f) : NULL;
	matmul_backward_ref(dinp, dw0, db0, dout, inp, w, N, C, OC);
	if (gelu) {
		float *g = (float *)malloc((size_t)N * C * 4);
		gelu_backward_ref(g, gpre, dinp, (size_t)N * C);
		memcpy(dinp, g, (size_t)N * C * 4);
		free(g);
	}
	for (size_t i = 0; i < (size_t)N * C; i++)
		dinp[i] *= alpha;
	for (size_t i = 0; i < (size_t)OC * C; i++)
		dw[i] += alpha * dw0[i];
	for (int o = 0; o < OC; o++)
		db[o] += alpha * db0[o];
	void *d_dout = dev16(dout, (size_t)N * OC, f), *d_dinp = dmalloc((size_t)N * C * 2),
	     *d_gpre = gelu ? dev16(gpre, (size_t)N * C, f) : NULL;
	float *d_dw = dev32(dw_in, (size_t)OC * C), *d_db = dev32(db_in, OC),
	      *d_scr = dev32(NULL, GPU_COL_SCRATCH(N, OC));
	rc = gpu_lowp_matmul_backward(d_dinp, d_dw, d_db, d_scr, d_dout, d_inp, d_w, d_gpre, alpha, N,
	                              C, OC, OC, f->fmt);
	snprintf(what, sizeof what, "%s matmul backward %s [%d,%d,%d]: cuBLASLt took it", f->name,
	         gelu ? "through DGELU" : "", N, C, OC);
	printf("%s - %s\n", rc == 0 ? "ok" : "not ok", what);
	rc == 0 ? passed++ : failed++;
	if (rc < 0 || !device_ok("matmul backward"))
		return;
	snprintf(what, sizeof what, "%s matmul backward [%d,%d,%d]: dinp%s", f->name, N, C, OC,
	         gelu ? " times gelu'" : "");
	compare(what, dinp, host16(d_dinp, (size_t)N * C, f), (size_t)N * C, f->bound);
	snprintf(what, sizeof what, "%s matmul backward [%d,%d,%d]: dw accumulated", f->name, N, C,
	         OC);
	compare(what, dw, host32(d_dw, (size_t)OC * C), (size_t)OC * C, 1e-4);
	snprintf(what, sizeof what, "%s matmul backward [%d,%d,%d]: dbias accumulated", f->name, N,
	         C, OC);
	compare(what, db, host32(d_db, OC), OC, 1e-4);
	free(inp), free(w), free(bias), free(pre), free(out), free(dout), free(dw), free(db);
	free(dinp), free(dw0), free(db0), free(dw_in), free(db_in), free(gpre);
	cudaFree(d_inp), cudaFree(d_w), cudaFree(d_bias), cudaFree(d_out), cudaFree(d_pre);
	cudaFree(d_dout), cudaFree(d_dinp), cudaFree(d_gpre), cudaFree(d_dw), cudaFree(d_db);
	cudaFree(d_scr);
}

/* Two tensors, the second with weight decay, three steps: as adamw_update per tensor. */
static void check_adamw(const fmt_info *f, unsigned seed)
{
	const size_t n1 = 1000, n = 70001;
	adamw_config cfg = adamw_defaults();
	cfg.weight_decay = 0.1f;
	float *p = randv(n, &seed, 1.0f, NULL), *m = (float *)calloc(n, 4),
	      *v = (float *)calloc(n, 4);
	float *d_p = dev32(p, n), *d_m = dev32(NULL, n), *d_v = dev32(NULL, n),
	      *d_g = dev32(NULL, n);
	void *d_low = dmalloc(n * 2);
	gpu_span spans[2] = {{0, 0}, {n1, 1}};
	gpu_span *d_spans = (gpu_span *)dmalloc(sizeof spans);
	cudaMemcpy(d_spans, spans, sizeof spans, cudaMemcpyHostToDevice);
	for (int t = 1; t <= 3; t++) {
		float *g = randv(n, &seed, 1.0f, NULL);
		cudaMemcpy(d_g, g, n * 4, cudaMemcpyHostToDevice);
		adamw_update(&cfg, p, g, m, v, n1, 1e-3f, 0.5f, false, t);
		adamw_update(&cfg, p + n1, g + n1, m + n1, v + n1, n - n1, 1e-3f, 0.5f, true, t);
		gpu_adamw_args a = {1e-3f, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, 0.5f, t};
		gpu_adamw_flat(d_p, d_low, d_g, d_m, d_v, n, d_spans, 2, &a, f->fmt);
		free(g);
	}
	if (!device_ok("flat AdamW"))
		return;
	char what[120];
	snprintf(what, sizeof what, "%s flat AdamW, 2 tensors, 3 steps: weights", f->name);
	float *got = host32(d_p, n);
	float *rounded = (float *)malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		rounded[i] = lowp_round(got[i], f->prec);
	compare(what, p, got, n, 1e-6);
	snprintf(what, sizeof what, "%s flat AdamW: moments", f->name);
	compare(what, m, host32(d_m, n), n, 1e-6);
	compare(what, v, host32(d_v, n), n, 1e-6);
	float *low = host16(d_low, n, f);
	bool same = memcmp(low, rounded, n * 4) == 0;
	printf("%s - %s flat AdamW: the 16-bit copy is the new weights rounded, bit for bit\n",
	       same ? "ok" : "not ok", f->name);
	same ? passed++ : failed++;
	free(p), free(m), free(v), free(rounded), free(low);
	cudaFree(d_p), cudaFree(d_m), cudaFree(d_v), cudaFree(d_g), cudaFree(d_low);
	cudaFree(d_spans);
}

int main(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("# skipped: no CUDA device here (cudaGetDeviceCount: %d)\n", n);
		return 0;
	}
	for (int k = 0; k < 2; k++) {
		const fmt_info *f = &formats[k];
		check_layernorm(f, 64, 768, 1);
		check_layernorm(f, 7, 333, 2);
		check_classifier(f, 16, 50257, 50304, 3);
		check_classifier(f, 5, 300, 320, 4);
		check_matmul(f, 256, 768, 3072, true, 5);
		check_matmul(f, 256, 768, 2304, false, 6);
		check_matmul(f, 37, 96, 200, false, 7);
		check_adamw(f, 8);
	}
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
