/*
 * test_gpu_attention.cu - the fused 16-bit attention
 * (trainer/gpu/attention_flash.h) against the CPU's fp32 attention
 * (attention_forward_ref / attention_backward_ref, trainer/ops_ref.c), in
 * bf16 and fp16, at GPT-2's heads (hs 64), at hs 32 with T = 37 (not a
 * multiple of the 64-row tile) and at hs 128 with T = 200. The inputs
 * (qkv, dout: uniform in [-1, 1]) are rounded to the 16-bit type first,
 * so both sides start from the same values; what differs is what the
 * kernel rounds on the way: the probabilities P and score gradients dS
 * (inputs of the tensor-core products), out and dqkv themselves.
 *
 * Bounds, relative to the tensor's largest magnitude, with u the unit
 * roundoff (2^-8 for bf16's 8 significant bits, 2^-11 for fp16's 11):
 * out = sum P v / l with each P off by at most u, so by at most u max|v|,
 * plus u |out| for its own rounding: 2u in all (7.8e-3 bf16, 9.8e-4 fp16)
 * and max|out| is about max|v| (the first rows attend to one or two
 * keys); bounds 2e-2 and 4e-3 leave a factor 2.5 to 4. dq, dk and dv
 * (each part against its own largest magnitude) sum up to T terms whose
 * P or dS carries a rounding of u, and the softmax backward's delta comes
 * from the rounded out; the roundings are random in sign, so the errors
 * grow like a few u, not like T u. Bounds 5e-2 and 1e-2 (13u bf16, 20u
 * fp16) leave room for sums that cancel and for the tensor cores' order.
 * lse within 1e-3 absolute of a double log-sum-exp of the scaled scores:
 * a product of two 16-bit values is exact in fp32 and the sums are fp32,
 * so only fp32 rounding separates them (about 1e-6). The backward run
 * twice gives the same bits (no atomics), and dqkv is filled with NaN
 * before each run, so an element the kernels fail to write shows. Prints
 * one TAP line per check; exits 1 when one fails, 0 with a "skipped" line
 * when there is no GPU.
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
}
#include "gpu/attention_flash.h"
#include "gpu/ops_gpu.h"

static int failed, passed;

static void report(bool ok, const char *fmt_line, const char *what, double err, double bound)
{
	printf("%s - %s (%s %.2e, bound %.0e)\n", ok ? "ok" : "not ok", what, fmt_line, err, bound);
	ok ? passed++ : failed++;
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

static gpt_precision prec_of(gpu_lowp fmt)
{
	return fmt == GPU_FP16 ? GPT_FP16 : GPT_BF16;
}

/* x rounded in place to the 16-bit type, so the CPU sees what the GPU gets. */
static void round_to(float *x, size_t n, gpu_lowp fmt)
{
	for (size_t i = 0; i < n; i++)
		x[i] = lowp_round(x[i], prec_of(fmt));
}

static void *dev16(const float *x, size_t n, gpu_lowp fmt)
{
	void *d = NULL;
	if (cudaMalloc(&d, n * 2 + 2) != cudaSuccess) {
		fprintf(stderr, "cudaMalloc of %zu 16-bit values failed\n", n);
		exit(2);
	}
	if (!x) {
		cudaMemset(d, 0xff, n * 2); /* NaN in both formats */
		return d;
	}
	uint16_t *h = (uint16_t *)malloc(n * 2 + 2);
	for (size_t i = 0; i < n; i++)
		h[i] = fmt == GPU_FP16 ? lowp_fp16_bits(x[i]) : lowp_bf16_bits(x[i]);
	cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice);
	free(h);
	return d;
}

static float *devf(size_t n)
{
	float *d = NULL;
	if (cudaMalloc(&d, n * sizeof(float) + 1) != cudaSuccess) {
		fprintf(stderr, "cudaMalloc of %zu floats failed\n", n);
		exit(2);
	}
	cudaMemset(d, 0xff, n * sizeof(float));
	return d;
}

/* The n 16-bit values at d as floats; NULL (and a "not ok" line) when a kernel failed. */
static float *host16(const void *d, size_t n, gpu_lowp fmt, const char *what, uint16_t **bits)
{
	char err[256];
	if (gpu_sync(err, sizeof(err)) < 0) {
		printf("not ok - %s: %s\n", what, err);
		failed++;
		return NULL;
	}
	uint16_t *h = (uint16_t *)malloc(n * 2 + 2);
	cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost);
	float *x = (float *)malloc(n * sizeof(float) + 1);
	for (size_t i = 0; i < n; i++)
		x[i] = fmt == GPU_FP16 ? lowp_fp16_to_float(h[i]) : lowp_bf16_to_float(h[i]);
	if (bits)
		*bits = h;
	else
		free(h);
	return x;
}

/*
 * The largest |want - got| over the largest |want| of the n values at
 * stride apart (a part of dqkv), NaN counting as infinitely far.
 */
static double rel_error(const float *want, const float *got, size_t n, size_t stride, size_t width)
{
	double diff = 0, mag = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < width; j++) {
			size_t k = i * stride + j;
			double d = fabs((double)want[k] - (double)got[k]);
			if (!(d <= diff))
				diff = d;
			if (fabs((double)want[k]) > mag)
				mag = fabs((double)want[k]);
		}
	return mag > 0 ? diff / mag : diff;
}

/* The log-sum-exp of row t's scaled scores (keys t2 <= t) of head h, batch b, in double. */
static double lse_row(const float *qkv, int b, int t, int h, int T, int C, int NH)
{
	int hs = C / NH;
	double scale = 1.0 / sqrt((double)hs), mx = -INFINITY, sum = 0;
	const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
	double *s = (double *)malloc(((size_t)t + 1) * sizeof(double));
	for (int t2 = 0; t2 <= t; t2++) {
		const float *k = qkv + ((size_t)b * T + t2) * 3 * C + C + h * hs;
		double dot = 0;
		for (int i = 0; i < hs; i++)
			dot += (double)q[i] * k[i];
		s[t2] = dot * scale;
		mx = fmax(mx, s[t2]);
	}
	for (int t2 = 0; t2 <= t; t2++)
		sum += exp(s[t2] - mx);
	free(s);
	return mx + log(sum);
}

static void check_lse(const float *qkv, const float *d_lse, int B, int T, int C, int NH,
                      const char *name)
{
	char what[160], err[256];
	snprintf(what, sizeof(what), "%s lse [%d,%d,%d]", name, B, NH, T);
	if (gpu_sync(err, sizeof(err)) < 0) {
		printf("not ok - %s: %s\n", what, err);
		failed++;
		return;
	}
	size_t n = (size_t)B * NH * T;
	float *got = (float *)malloc(n * sizeof(float) + 1);
	cudaMemcpy(got, d_lse, n * sizeof(float), cudaMemcpyDeviceToHost);
	double diff = 0;
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int t = 0; t < T; t++) {
				double want = lse_row(qkv, b, t, h, T, C, NH);
				double d = fabs(want - got[((size_t)b * NH + h) * T + t]);
				if (!(d <= diff))
					diff = d;
			}
	report(diff <= 1e-3, "absolute error", what, diff, 1e-3);
	free(got);
}

static void check_flash(int B, int T, int C, int NH, gpu_lowp fmt, unsigned seed)
{
	const char *name = fmt == GPU_FP16 ? "fp16" : "bf16";
	double out_bound = fmt == GPU_FP16 ? 4e-3 : 2e-2,
	       grad_bound = fmt == GPU_FP16 ? 1e-2 : 5e-2;
	char what[160];
	size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
	float *qkv = randn(nq, &seed, 1.0f), *dout = randn(no, &seed, 1.0f);
	round_to(qkv, nq, fmt);
	round_to(dout, no, fmt);
	float *out = (float *)calloc(no, 4), *att = (float *)calloc(na, 4),
	      *dqkv = (float *)calloc(nq, 4);
	attention_forward_ref(out, att, qkv, B, T, C, NH);
	attention_backward_ref(dqkv, dout, qkv, att, B, T, C, NH);

	void *d_qkv = dev16(qkv, nq, fmt), *d_dout = dev16(dout, no, fmt);
	void *d_out = dev16(NULL, no, fmt), *d_dqkv = dev16(NULL, nq, fmt);
	float *d_lse = devf((size_t)B * NH * T), *d_delta = devf((size_t)B * NH * T);
	gpu_flash_attention_forward(d_out, d_lse, d_qkv, B, T, C, NH, fmt);
	snprintf(what, sizeof(what), "%s flash attention forward out [%d,%d,%d], %d heads", name, B,
	         T, C, NH);
	float *got = host16(d_out, no, fmt, what, NULL);
	if (got) {
		double e = rel_error(out, got, no, 1, 1);
		report(e <= out_bound, "relative error", what, e, out_bound);
		free(got);
	}
	check_lse(qkv, d_lse, B, T, C, NH, name);

	uint16_t *bits[2] = {NULL, NULL};
	for (int run = 0; run < 2; run++) {
		cudaMemset(d_dqkv, 0xff, nq * 2); /* NaN: every element must be written */
		gpu_flash_attention_backward(d_dqkv, d_delta, d_dout, d_qkv, d_out, d_lse, B, T, C,
		                             NH, fmt);
		snprintf(what, sizeof(what), "%s flash attention backward [%d,%d,%d] (run %d)",
		         name, B, T, 3 * C, run + 1);
		got = host16(d_dqkv, nq, fmt, what, &bits[run]);
		if (!got)
			break;
		for (int part = 0; run == 0 && part < 3; part++) {
			snprintf(what, sizeof(what), "%s flash attention backward d%c [%d,%d,%d]",
			         name, "qkv"[part], B, T, C);
			double e = rel_error(dqkv + part * C, got + part * C, (size_t)B * T,
			                     3 * (size_t)C, C);
			report(e <= grad_bound, "relative error", what, e, grad_bound);
		}
		free(got);
	}
	if (bits[0] && bits[1]) {
		bool same = memcmp(bits[0], bits[1], nq * 2) == 0;
		printf("%s - %s flash attention backward [%d,%d,%d]: the same bits twice\n",
		       same ? "ok" : "not ok", name, B, T, 3 * C);
		same ? passed++ : failed++;
	}
	free(bits[0]), free(bits[1]);
	free(qkv), free(dout), free(out), free(att), free(dqkv);
	cudaFree(d_qkv), cudaFree(d_dout), cudaFree(d_out), cudaFree(d_dqkv), cudaFree(d_lse),
	    cudaFree(d_delta);
}

static void check_fits(void)
{
	bool ok = gpu_flash_attention_fits(768, 12) && !gpu_flash_attention_fits(768, 7) &&
	          gpu_flash_attention_fits(256, 2) && !gpu_flash_attention_fits(512, 2) &&
	          !gpu_flash_attention_fits(72, 3);
	printf(
	    "%s - flash attention takes hs 64 and 128, refuses 768 over 7 heads, hs 256, hs 24\n",
	    ok ? "ok" : "not ok");
	ok ? passed++ : failed++;
}

int main(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("# skipped: no CUDA device here (cudaGetDeviceCount: %d)\n", n);
		return 0;
	}
	cudaDeviceProp p;
	cudaGetDeviceProperties(&p, 0);
	printf("# device 0: %s, sm_%d%d\n", p.name, p.major, p.minor);
	check_fits();
	gpu_lowp fmts[] = {GPU_BF16, GPU_FP16};
	for (gpu_lowp fmt : fmts) {
		check_flash(2, 256, 768, 12, fmt, 21); /* GPT-2 124M's heads */
		check_flash(1, 37, 96, 3, fmt, 22);    /* hs 32, one partial tile */
		check_flash(1, 200, 256, 2, fmt, 23);  /* hs 128, the last tile partial */
	}
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
