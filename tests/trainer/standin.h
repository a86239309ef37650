/*
 * standin.h - the stand-in model's arithmetic shared by mpitest_zero.c
 * (the whole model) and mpitest_zero_part.c (a rank's slice of it), and
 * the helpers that compare its runs (mix is mpicheck.h's).
 *
 * The stand-in drives gpt_hooks in the order gpt.h promises with a
 * deterministic gradient per element, micro-batch and step that depends
 * on the parameters:
 *   g_i = dloss (s_i (1 + 0.25 sin(7 p_i)) + 0.5 (p_i - t_i(step, micro)))
 * with i the element's global index, s_i = +-1 fixed per element and
 * |t| <= 0.2, |p| small, so every summed gradient stays at least
 * 0.25 dloss away from zero. That matters for the tolerances: Adam divides
 * by sqrt(v), so a gradient near zero would turn a rounding difference
 * into a sign difference.
 *
 * Tolerance for a distributed run against the reference (tol_ratio):
 * per element |a - b| <= 1e-7 + 1e-6 |b|. The runs do the same float
 * arithmetic except the order in which micro-batch and rank contributions
 * are summed (and, in stages 2 and 3, where the running sum is added),
 * which perturbs each gradient by a few ulps (~1e-7 relative); Adam's
 * normalised step passes that on about unchanged and lr ~1e-2 shrinks it.
 * Observed: under 10% of the bound after 4 steps, while a wrong sum, a
 * missed micro-batch, a missed clip or a stale all-gather moves
 * parameters by 100 to 1e5 times the bound. Norms match to 1e-5 relative.
 */
#ifndef TY_STANDIN_H
#define TY_STANDIN_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "mpicheck.h"
#include "optim.h"
#include "zero.h"

#define STEPS 4

/*
 * A planted non-finite gradient: the flat index in the parameters the
 * stand-in sees (a part's local index; SIZE_MAX: none), at one step
 * (0: none).
 */
typedef struct poison {
	size_t index;
	float value;
	int step;
} poison;

static float target(int step, int micro, size_t i)
{
	uint32_t h = mix((uint32_t)i * 2654435761U ^ mix((uint32_t)(step * 977 + micro)));
	return 0.4f * ((float)(h & 0xffffff) / (float)0xffffff) - 0.2f;
}

static float sign_of(size_t i)
{
	return (mix((uint32_t)i + 12345U) & 1) ? 1.0f : -1.0f;
}

/* The gradient of global element i at parameter p, per unit dloss. */
static float grad_of(float p, size_t i, int step, int micro)
{
	return sign_of(i) * (1.0f + 0.25f * sinf(7.0f * p)) + 0.5f * (p - target(step, micro, i));
}

static void init_params(float *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = 0.1f * sinf(1.7f * (float)i + 0.3f);
}

static const lr_schedule sched = {
    .max_lr = 1e-2f, .min_lr = 1e-3f, .warmup_steps = 2, .total_steps = STEPS, .decay = LR_COSINE};

static adamw_config test_adamw(void)
{
	adamw_config a = adamw_defaults();
	return a;
}

/* RET: the largest |a - b| / (1e-7 + 1e-6 |b|) over n; <= 1 passes. */
static double tol_ratio(const float *a, const float *b, size_t n)
{
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]) / (1e-7 + 1e-6 * fabs((double)b[i]));
		if (!(d <= worst))
			worst = d; /* NaN sticks */
	}
	return worst;
}

static bool close_rel(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

/* RET: whether every step's grad norm of a is within rel of b's. */
static bool norms_close(const dp_step_info *a, const dp_step_info *b, int steps, double rel)
{
	bool ok = true;
	for (int k = 0; k < steps; k++)
		ok = ok && close_rel(a[k].grad_norm, b[k].grad_norm, rel);
	return ok;
}

/* RET: whether every step was finite and applied. */
static bool all_applied(const dp_step_info *info, int steps)
{
	bool ok = true;
	for (int k = 0; k < steps; k++)
		ok = ok && info[k].finite && info[k].updated;
	return ok;
}

/* RET: whether every rank holds the same bytes as rank 0 (agreed across ranks). */
static bool same_on_all_ranks(comm *c, const float *x, size_t n)
{
	float *scratch = malloc(n * sizeof(float) + 1);
	if (!scratch)
		return false;
	memcpy(scratch, x, n * sizeof(float));
	float differs = 1.0f;
	if (comm_bcast(c, scratch, n * sizeof(float), 0) == 0) {
		differs = memcmp(scratch, x, n * sizeof(float)) ? 1.0f : 0.0f;
		if (comm_allreduce_sum(c, &differs, 1))
			differs = 1.0f;
	}
	free(scratch);
	return differs == 0.0f;
}

#endif
