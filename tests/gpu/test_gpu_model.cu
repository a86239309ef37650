/*
 * test_gpu_model.cu - the whole model on the GPU (trainer/gpu/model_gpu.h)
 * against the CPU model and optimizer the trainer runs (trainer/gpt.h,
 * optim.h), fp32, then bf16 and fp16 against it, a resume, and the speed
 * of GPT-2 124M:
 *
 *   parity   10 steps of a small GPT-2 (4 layers, C 256, V 1000 padded to
 *            1024, B 4, T 128) from the same weights on the same batches,
 *            with clipping and AdamW: each step's loss within 1e-5
 *            relative; the first step's gradient, tensor by tensor, within
 *            1e-4 of the tensor's largest magnitude; the weights after 10
 *            steps within 1e-4.
 *   16-bit   the same 10 steps in bf16 and in fp16 (loss scale 1024):
 *            each loss within 0.05 of the fp32 loss.
 *   resume   fp32 and bf16: 10 steps in one go against 5, the weights and moments copied
 *            out to host memory (a checkpoint's content), a new model
 *            from them, 5 more: the same bits.
 *   speed    GPT-2 124M, B 16, T 1024, bf16 then fp32: tokens/s and MFU over 5 timed steps
 *            after 2, MFU against PEAK_TFLOPS (default 989, an H100's or
 *            H200's dense bf16 peak, the figure llm.c reports against).
 *
 * Prints TAP-style lines; exits 1 when a check fails, 0 with a "skipped"
 * line when there is no CUDA device. `--no-speed` leaves the timing out.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "gpt.h"
#include "optim.h"
}
#include "gpu/model_gpu.h"

static int failed, passed;

static void result(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s - ", ok ? "ok" : "not ok");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	ok ? passed++ : failed++;
}

static void die(const char *what, const char *err)
{
	printf("not ok - %s: %s\n", what, err);
	printf("# %d passed, %d failed\n", passed, failed + 1);
	exit(1);
}

/* Batches of random tokens for step s (1-based), the same on both sides. */
static void batch(int32_t *inp, int32_t *tgt, int N, int V, int s)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(s + 1);
	for (int i = 0; i <= N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int32_t t = (int32_t)(x % (uint64_t)V);
		if (i < N)
			inp[i] = t;
		if (i > 0)
			tgt[i - 1] = t;
	}
}

typedef struct step_config {
	adamw_config adam;
	lr_schedule sched;
	float clip;
} step_config;

static step_config step_defaults(int steps)
{
	step_config sc;
	sc.adam = adamw_defaults();
	sc.sched = (lr_schedule){.max_lr = 1e-3f,
	                         .min_lr = 1e-4f,
	                         .warmup_steps = 2,
	                         .total_steps = steps,
	                         .decay = LR_COSINE,
	                         .convention = LR_TRAINYARD};
	sc.clip = 1.0f;
	return sc;
}

/* One CPU step as the trainer takes it on one rank. RET the loss. */
static float cpu_step(gpt_model *m, const gpt_config *cfg, float *p, float *g, float *am,
                      float *av, const gpt_tensor *t, int nt, const step_config *sc,
                      const int32_t *inp, const int32_t *tgt, int s)
{
	size_t np = gpt_num_params(cfg);
	gpt_flat flat = {.cfg = cfg, .params = p, .grads = g, .unit_offset = NULL};
	gpt_hooks h = gpt_hooks_flat(&flat);
	memset(g, 0, np * sizeof *g);
	float loss = gpt_forward(m, &h, inp, tgt);
	gpt_backward(m, &h, 1.0f);
	double sq = 0.0;
	for (size_t i = 0; i < np; i++)
		sq += (double)g[i] * g[i];
	float scale = clip_scale((float)sqrt(sq), sc->clip, 1e-6f);
	for (int k = 0; k < nt; k++)
		adamw_update(&sc->adam, p + t[k].offset, g + t[k].offset, am + t[k].offset,
		             av + t[k].offset, t[k].numel, lr_at(&sc->sched, s), scale, t[k].decay,
		             s);
	return loss;
}

/*
 * One GPU step, the same arithmetic, the way train_gpu_step takes it (the
 * loss stays on the device until the step's one wait); fp16 with a fixed
 * loss scale, as the trainer's scaler starts. RET the loss.
 */
static float gpu_step(gpu_model *m, gpt_precision prec, const step_config *sc,
                      const int32_t *inp, const int32_t *tgt, int s)
{
	char err[256];
	double sq = 0.0, loss = 0.0;
	float scale = prec == GPT_FP16 ? 1024.0f : 1.0f;
	gpu_model_zero_grad(m);
	if (gpu_model_forward(m, inp, tgt, NULL, err, sizeof err) < 0 ||
	    gpu_model_backward(m, scale, err, sizeof err) < 0 ||
	    gpu_model_step_stats(m, &sq, &loss, err, sizeof err) < 0)
		die("a GPU step", err);
	float norm = (float)(sqrt(sq) / scale);
	if (!isfinite(norm))
		die("a GPU step", "the gradient is not finite");
	if (gpu_model_adamw(m, &sc->adam, lr_at(&sc->sched, s),
	                    clip_scale(norm, sc->clip, 1e-6f) / scale, s, err, sizeof err) < 0)
		die("a GPU step", err);
	return (float)loss;
}

static const char *prec_name(gpt_precision p)
{
	return p == GPT_BF16 ? "bf16" : p == GPT_FP16 ? "fp16" : "fp32";
}

/* The largest |a - b| over the largest |a| of n floats. */
static double rel_error(const float *a, const float *b, size_t n)
{
	double diff = 0, mag = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]);
		if (!(d <= diff))
			diff = d;
		mag = fmax(mag, fabs((double)a[i]));
	}
	return mag > 0 ? diff / mag : diff;
}

static float *alloc_floats(size_t n)
{
	float *p = (float *)calloc(n, sizeof(float));
	if (!p)
		die("host memory", "out of memory");
	return p;
}

#define STEPS 10
static const gpt_config parity_cfg = {.max_seq_len = 128,
                                      .vocab_size = 1000,
                                      .padded_vocab_size = 1024,
                                      .num_layers = 4,
                                      .num_heads = 4,
                                      .channels = 256};

/* fp32 on the GPU against the CPU; cpu_loss [STEPS] gets the CPU's losses. */
static void check_parity(float *cpu_loss)
{
	const gpt_config cfg = parity_cfg;
	const int B = 4, T = 128, N = B * T;
	char err[256];
	size_t np = gpt_num_params(&cfg);
	int nt = 2 + 12 * cfg.num_layers + 2;
	gpt_tensor *t = (gpt_tensor *)calloc((size_t)nt, sizeof *t);
	gpt_tensors(&cfg, t, nt);
	float *p = alloc_floats(np), *g = alloc_floats(np), *am = alloc_floats(np),
	      *av = alloc_floats(np), *got = alloc_floats(np);
	gpt_init_params(&cfg, p, 42);
	int32_t *inp = (int32_t *)malloc(N * sizeof(int32_t)),
	        *tgt = (int32_t *)malloc(N * sizeof(int32_t));

	gpu_model *gm = gpu_model_new(&cfg, B, T, GPT_FP32, p, NULL, err, sizeof err);
	gpt_model *cm = gpt_new(&cfg, B, T, GPT_FP32, err, sizeof err);
	if (!gm || !cm)
		die("the parity models", err);
	step_config sc = step_defaults(STEPS);
	double worst_loss = 0;
	for (int s = 1; s <= STEPS; s++) {
		batch(inp, tgt, N, cfg.vocab_size, s);
		float lg = gpu_step(gm, GPT_FP32, &sc, inp, tgt, s);
		float lc = cpu_step(cm, &cfg, p, g, am, av, t, nt, &sc, inp, tgt, s);
		cpu_loss[s - 1] = lc;
		double rel = fabs((double)lg - lc) / fabs((double)lc);
		worst_loss = fmax(worst_loss, rel);
		result(rel <= 1e-5, "step %d loss: GPU %.7f, CPU %.7f (relative %.1e, bound 1e-5)", s,
		       lg, lc, rel);
		if (s == 1) {
			/* the gradient of step 1, still in both models */
			if (gpu_model_get(gm, GPU_GRADS, got, err, sizeof err) < 0)
				die("copying the gradients", err);
			double worst = 0;
			const char *where = "";
			for (int k = 0; k < nt; k++) {
				double r = rel_error(g + t[k].offset, got + t[k].offset, t[k].numel);
				if (r > worst) {
					worst = r;
					where = t[k].name;
				}
			}
			result(worst <= 1e-4,
			       "step 1 gradients, every tensor: worst relative %.1e (%s), bound 1e-4",
			       worst, where);
		}
	}
	if (gpu_model_get(gm, GPU_PARAMS, got, err, sizeof err) < 0)
		die("copying the weights", err);
	double r = rel_error(p, got, np);
	result(r <= 1e-4, "weights after %d steps: relative %.1e, bound 1e-4", STEPS, r);
	printf("# parity: worst loss difference %.1e over %d steps\n", worst_loss, STEPS);
	gpu_model_free(gm);
	gpt_free(cm);
	free(t);
	free(p);
	free(g);
	free(am);
	free(av);
	free(got);
	free(inp);
	free(tgt);
}

/*
 * The same 10 steps in a 16-bit precision: each loss within 0.05 of the
 * fp32 loss (about 0.7% of the first loss, ln 1000: bf16 keeps 8
 * significant bits, so each activation carries up to 0.4% error, and the
 * errors of 4 layers average out rather than add). Finite throughout.
 */
static void check_lowp(gpt_precision prec, const float *cpu_loss)
{
	const gpt_config cfg = parity_cfg;
	const int B = 4, T = 128, N = B * T;
	char err[256];
	size_t np = gpt_num_params(&cfg);
	float *p = alloc_floats(np);
	gpt_init_params(&cfg, p, 42);
	int32_t *inp = (int32_t *)malloc(N * sizeof(int32_t)),
	        *tgt = (int32_t *)malloc(N * sizeof(int32_t));
	gpu_model *gm = gpu_model_new(&cfg, B, T, prec, p, NULL, err, sizeof err);
	if (!gm)
		die("the 16-bit model", err);
	step_config sc = step_defaults(STEPS);
	double worst = 0;
	for (int s = 1; s <= STEPS; s++) {
		batch(inp, tgt, N, cfg.vocab_size, s);
		float l = gpu_step(gm, prec, &sc, inp, tgt, s);
		double d = fabs((double)l - cpu_loss[s - 1]);
		if (!(d <= worst))
			worst = d;
		result(d <= 0.05, "%s step %d loss: %.5f, fp32 %.5f (difference %.4f, bound 0.05)",
		       prec_name(prec), s, l, cpu_loss[s - 1], d);
	}
	printf("# %s: worst loss difference from fp32 %.4f over %d steps\n", prec_name(prec), worst,
	       STEPS);
	gpu_model_free(gm);
	free(p);
	free(inp);
	free(tgt);
}

static void check_resume(gpt_precision prec)
{
	const gpt_config cfg = {.max_seq_len = 64,
	                        .vocab_size = 500,
	                        .padded_vocab_size = 512,
	                        .num_layers = 2,
	                        .num_heads = 4,
	                        .channels = 128};
	const int B = 4, T = 64, N = B * T;
	char err[256];
	size_t np = gpt_num_params(&cfg);
	float *init = alloc_floats(np), *a = alloc_floats(np), *b = alloc_floats(np);
	float *state[3] = {alloc_floats(np), alloc_floats(np), alloc_floats(np)};
	gpt_init_params(&cfg, init, 7);
	int32_t *inp = (int32_t *)malloc(N * sizeof(int32_t)),
	        *tgt = (int32_t *)malloc(N * sizeof(int32_t));
	step_config sc = step_defaults(10);

	gpu_model *m = gpu_model_new(&cfg, B, T, prec, init, NULL, err, sizeof err);
	if (!m)
		die("the resume model", err);
	for (int s = 1; s <= 10; s++) {
		batch(inp, tgt, N, cfg.vocab_size, s);
		gpu_step(m, prec, &sc, inp, tgt, s);
	}
	gpu_model_get(m, GPU_PARAMS, a, err, sizeof err);
	gpu_model_free(m);

	m = gpu_model_new(&cfg, B, T, prec, init, NULL, err, sizeof err);
	for (int s = 1; s <= 5; s++) {
		batch(inp, tgt, N, cfg.vocab_size, s);
		gpu_step(m, prec, &sc, inp, tgt, s);
	}
	const gpu_array kept[3] = {GPU_PARAMS, GPU_ADAM_M, GPU_ADAM_V};
	for (int k = 0; k < 3; k++)
		gpu_model_get(m, kept[k], state[k], err, sizeof err);
	gpu_model_free(m);
	m = gpu_model_new(&cfg, B, T, prec, state[0], NULL, err, sizeof err);
	if (!m || gpu_model_set(m, GPU_ADAM_M, state[1], err, sizeof err) < 0 ||
	    gpu_model_set(m, GPU_ADAM_V, state[2], err, sizeof err) < 0)
		die("the resumed model", err);
	for (int s = 6; s <= 10; s++) {
		batch(inp, tgt, N, cfg.vocab_size, s);
		gpu_step(m, prec, &sc, inp, tgt, s);
	}
	gpu_model_get(m, GPU_PARAMS, b, err, sizeof err);
	gpu_model_free(m);
	result(memcmp(a, b, np * sizeof(float)) == 0,
	       "%s: 10 steps, and 5 + resume from copied-out state + 5: the same bits",
	       prec_name(prec));
	free(init);
	free(a);
	free(b);
	for (int k = 0; k < 3; k++)
		free(state[k]);
	free(inp);
	free(tgt);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void time_124m(gpt_precision prec, double peak_tflops)
{
	const gpt_config cfg = {.max_seq_len = 1024,
	                        .vocab_size = 50257,
	                        .padded_vocab_size = 50304,
	                        .num_layers = 12,
	                        .num_heads = 12,
	                        .channels = 768};
	const int B = 16, T = 1024, N = B * T, WARM = 2, TIMED = 5;
	char err[256];
	size_t np = gpt_num_params(&cfg);
	float *init = alloc_floats(np);
	gpt_init_params(&cfg, init, 1);
	int32_t *inp = (int32_t *)malloc(N * sizeof(int32_t)),
	        *tgt = (int32_t *)malloc(N * sizeof(int32_t));
	gpu_model *m = gpu_model_new(&cfg, B, T, prec, init, NULL, err, sizeof err);
	if (!m)
		die("the 124M model", err);
	step_config sc = step_defaults(WARM + TIMED);
	double t0 = 0;
	for (int s = 1; s <= WARM + TIMED; s++) {
		if (s == WARM + 1) {
			cudaDeviceSynchronize();
			t0 = now();
		}
		batch(inp, tgt, N, cfg.vocab_size, s);
		gpu_step(m, prec, &sc, inp, tgt, s);
	}
	cudaDeviceSynchronize();
	double secs = (now() - t0) / TIMED;
	double tok_s = N / secs;
	double mfu = tok_s * gpt_flops_per_token(&cfg, T) / (peak_tflops * 1e12);
	printf("# trainyard, GPT-2 124M, B=%d, T=%d, %s: %.0f tokens/s, MFU %.1f%% of %.0f TFLOP/s "
	       "(6N+6LCT FLOPs per token, N %zu); %.1f ms a step, %.1f GiB of device memory\n",
	       B, T, prec_name(prec), tok_s, mfu * 100, peak_tflops, np, secs * 1e3,
	       gpu_model_bytes(m) / 1073741824.0);
	gpu_model_free(m);
	free(init);
	free(inp);
	free(tgt);
}

int main(int argc, char **argv)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("# skipped: no CUDA device here (cudaGetDeviceCount: %d)\n", n);
		return 0;
	}
	bool speed = !(argc > 1 && strcmp(argv[1], "--no-speed") == 0);
	const char *peak = getenv("PEAK_TFLOPS");
	cudaDeviceProp p;
	cudaGetDeviceProperties(&p, 0);
	printf("# device 0: %s, sm_%d%d\n", p.name, p.major, p.minor);
	float cpu_loss[STEPS];
	check_parity(cpu_loss);
	check_lowp(GPT_BF16, cpu_loss);
	check_lowp(GPT_FP16, cpu_loss);
	check_resume(GPT_FP32);
	check_resume(GPT_BF16);
	if (speed) {
		time_124m(GPT_BF16, peak ? atof(peak) : 989.0);
		time_124m(GPT_FP32, peak ? atof(peak) : 989.0);
	}
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
