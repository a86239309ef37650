/*
 * test_train_optim.c - AdamW, the learning-rate schedule and the clip
 * factor against numbers worked out by hand (the derivations are in the
 * comments). Float arithmetic agrees with them to about 1e-7 relative,
 * except v: 1 - 0.999f is 0.00099999 in float, 1.3e-5 relative off, which
 * the bias correction (computed from the same float beta2) cancels.
 */
#include <check.h>
#include <math.h>

#include "optim.h"
#include "unit.h"

#define TOL 1e-6

/*
 * beta1 0.9, beta2 0.999, eps 1e-8, weight decay 0.1, lr 0.01, p0 = 1,
 * gradients 0.5 then -0.25.
 * Step 1: m = 0.1 * 0.5 = 0.05, v = 0.001 * 0.25 = 0.00025;
 *   m^ = 0.05 / 0.1 = 0.5, v^ = 0.00025 / 0.001 = 0.25, sqrt(v^) = 0.5,
 *   Adam step 0.5 / (0.5 + 1e-8) = 0.99999998;
 *   decayed p1 = 1 - 0.01 (0.99999998 + 0.1 * 1) = 0.989;
 *   undecayed p1 = 1 - 0.01 * 0.99999998 = 0.99.
 * Step 2: m = 0.9 * 0.05 + 0.1 * -0.25 = 0.02,
 *   v = 0.999 * 0.00025 + 0.001 * 0.0625 = 0.00031225;
 *   m^ = 0.02 / (1 - 0.81) = 0.1052632, v^ = 0.00031225 / (1 - 0.998001) = 0.1562031,
 *   sqrt(v^) = 0.3952254, step = 0.2663370;
 *   decayed p2 = 0.989 - 0.01 (0.2663370 + 0.1 * 0.989) = 0.9853476;
 *   undecayed p2 = 0.99 - 0.01 * 0.2663370 = 0.9873366.
 */
START_TEST(adamw_two_steps)
{
	adamw_config c = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.1f};
	float p[2] = {1.0f, 1.0f}, m[2] = {0}, v[2] = {0};
	float g1 = 0.5f, g2 = -0.25f;

	adamw_update(&c, &p[0], &g1, &m[0], &v[0], 1, 0.01f, 1.0f, true, 1);
	adamw_update(&c, &p[1], &g1, &m[1], &v[1], 1, 0.01f, 1.0f, false, 1);
	ck_assert_double_eq_tol(m[0], 0.05, TOL);
	ck_assert_double_eq_tol(v[0], 0.00025, 1e-8);
	ck_assert_double_eq_tol(p[0], 0.989, TOL);
	ck_assert_double_eq_tol(p[1], 0.99, TOL);

	adamw_update(&c, &p[0], &g2, &m[0], &v[0], 1, 0.01f, 1.0f, true, 2);
	adamw_update(&c, &p[1], &g2, &m[1], &v[1], 1, 0.01f, 1.0f, false, 2);
	ck_assert_double_eq_tol(m[0], 0.02, TOL);
	ck_assert_double_eq_tol(v[0], 0.00031225, 1e-8);
	ck_assert_double_eq_tol(p[0], 0.9853476, TOL);
	ck_assert_double_eq_tol(p[1], 0.9873366, TOL);
}
END_TEST

/* grad_scale multiplies the gradient before anything else: g 1 at scale 0.5 is g 0.5. */
START_TEST(adamw_grad_scale)
{
	adamw_config c = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.1f};
	float p = 1.0f, m = 0, v = 0, g = 1.0f;
	adamw_update(&c, &p, &g, &m, &v, 1, 0.01f, 0.5f, true, 1);
	ck_assert_double_eq_tol(m, 0.05, TOL);
	ck_assert_double_eq_tol(v, 0.00025, 1e-8);
	ck_assert_double_eq_tol(p, 0.989, TOL);
}
END_TEST

/*
 * Decay is decoupled and only where asked: with a zero gradient Adam's
 * step is 0 / (0 + eps) = 0, so a decayed weight 2 becomes
 * 2 - 0.01 * 0.1 * 2 = 1.998 and a bias or LayerNorm value stays 2.
 */
START_TEST(adamw_decay_only_where_asked)
{
	adamw_config c = adamw_defaults();
	ck_assert_float_eq(c.weight_decay, 0.1f);
	float p[4] = {2, 2, -2, -2}, m[4] = {0}, v[4] = {0}, g[4] = {0};
	adamw_update(&c, p, g, m, v, 2, 0.01f, 1.0f, true, 1);
	adamw_update(&c, p + 2, g + 2, m + 2, v + 2, 2, 0.01f, 1.0f, false, 1);
	ck_assert_double_eq_tol(p[0], 1.998, TOL);
	ck_assert_double_eq_tol(p[1], 1.998, TOL);
	ck_assert_float_eq(p[2], -2.0f);
	ck_assert_float_eq(p[3], -2.0f);
}
END_TEST

/*
 * max 6e-4, min 6e-5, warmup 10, total 110 (100 decay steps):
 *   step 1: 6e-4 * 1/10 = 6e-5; step 5: 3e-4; step 10: the peak 6e-4;
 *   cosine step 35: r = 0.25, 6e-5 + 5.4e-4 (1 + cos(pi/4)) / 2 = 5.209188e-4;
 *   cosine step 60: r = 0.5, the midpoint (6e-4 + 6e-5) / 2 = 3.3e-4;
 *   step 110 and after: 6e-5;
 *   linear step 35: 6e-4 - 5.4e-4 * 0.25 = 4.65e-4; step 60: 3.3e-4;
 *   constant: 6e-4 after warmup.
 */
START_TEST(lr_schedule_points)
{
	lr_schedule s = {.max_lr = 6e-4f,
	                 .min_lr = 6e-5f,
	                 .warmup_steps = 10,
	                 .total_steps = 110,
	                 .decay = LR_COSINE};
	ck_assert_double_eq_tol(lr_at(&s, 1), 6e-5, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 5), 3e-4, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 10), 6e-4, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 35), 5.209188e-4, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 60), 3.3e-4, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 110), 6e-5, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 500), 6e-5, 1e-10);
	ck_assert(lr_at(&s, 11) < 6e-4f && lr_at(&s, 11) > 5.99e-4f);

	s.decay = LR_LINEAR;
	ck_assert_double_eq_tol(lr_at(&s, 10), 6e-4, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 35), 4.65e-4, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 60), 3.3e-4, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 110), 6e-5, 1e-10);

	s.decay = LR_CONSTANT;
	ck_assert_double_eq_tol(lr_at(&s, 5), 3e-4, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 100), 6e-4, 1e-10);

	/* no warmup: step 1 is already on the decay curve, r = 1/100 */
	s.decay = LR_COSINE;
	s.warmup_steps = 0;
	s.total_steps = 100;
	double r = 0.01, want = 6e-5 + 5.4e-4 * (1 + cos(M_PI * r)) / 2;
	ck_assert_double_eq_tol(lr_at(&s, 1), want, 1e-10);
	ck_assert_double_eq_tol(lr_at(&s, 50), 3.3e-4, 1e-10);
}
END_TEST

/*
 * The 0-based conventions, against the formulas as llm.c's and nanoGPT's
 * training loops state them for their step i = 0, 1, ...:
 *   llm.c:   i < W: max (i + 1) / W;      else min + (max - min) (1 + cos(pi (i - W) / (T - W))) /
 * 2 nanoGPT: i < W: max (i + 1) / (W + 1); else the same decay (our step s is i + 1). Spot values:
 * the first step after warmup is at the peak exactly; the last (i = 109) one step short of the
 * floor.
 */
START_TEST(lr_schedule_zero_based)
{
	lr_schedule s = {.max_lr = 6e-4f,
	                 .min_lr = 6e-5f,
	                 .warmup_steps = 10,
	                 .total_steps = 110,
	                 .decay = LR_COSINE,
	                 .convention = LR_LLMC};
	const double max = 6e-4, min = 6e-5, W = 10, T = 110;
	for (int i = 0; i < 110; i++) {
		double decay = min + (max - min) * (1 + cos(M_PI * (i - W) / (T - W))) / 2;
		s.convention = LR_LLMC;
		double want = i < W ? max * (i + 1) / W : decay;
		ck_assert_double_eq_tol(lr_at(&s, i + 1), want, 1e-10);
		s.convention = LR_NANOGPT;
		want = i < W ? max * (i + 1) / (W + 1) : decay;
		ck_assert_double_eq_tol(lr_at(&s, i + 1), want, 1e-10);
	}
	s.convention = LR_LLMC;
	ck_assert_double_eq_tol(lr_at(&s, 11), 6e-4, 1e-10);
	ck_assert(lr_at(&s, 110) > 6e-5f + 1e-9f);
	ck_assert_double_eq_tol(lr_at(&s, 111), 6e-5, 1e-10);
	s.convention = LR_TRAINYARD;
	ck_assert(lr_at(&s, 11) < 6e-4f);
	ck_assert_double_eq_tol(lr_at(&s, 110), 6e-5, 1e-10);
	s.convention = LR_NANOGPT;
	ck_assert_double_eq_tol(lr_at(&s, 10), 6e-4 * 10 / 11, 1e-10);

	/* linear decays by the same ratio */
	s.convention = LR_LLMC;
	s.decay = LR_LINEAR;
	ck_assert_double_eq_tol(lr_at(&s, 36), 6e-4 - 5.4e-4 * 0.25, 1e-10);
}
END_TEST

/*
 * Gradient (3, 4): norm 5. Clip 1: factor 1 / (5 + 1e-6) = 0.19999996, so
 * the clipped gradient is (0.6, 0.8), norm 1. Clip 10 or 0: factor 1. With
 * epsilon 0 (llm.c's rule) the factor is exactly 1/5, and 0.1 makes it
 * 1 / 5.1; a norm of 0 is never divided by.
 */
START_TEST(clip_by_global_norm)
{
	float g[2] = {3.0f, 4.0f};
	float norm = sqrtf(g[0] * g[0] + g[1] * g[1]);
	ck_assert_float_eq(norm, 5.0f);
	float s = clip_scale(norm, 1.0f, 1e-6f);
	ck_assert_double_eq_tol(s, 0.19999996, 1e-8);
	ck_assert_double_eq_tol(g[0] * s, 0.6, TOL);
	ck_assert_double_eq_tol(g[1] * s, 0.8, TOL);
	ck_assert_float_eq(clip_scale(norm, 10.0f, 1e-6f), 1.0f);
	ck_assert_float_eq(clip_scale(norm, 0.0f, 1e-6f), 1.0f);
	ck_assert_float_eq(clip_scale(norm, -1.0f, 1e-6f), 1.0f);
	ck_assert_float_eq(clip_scale(0.0f, 1.0f, 1e-6f), 1.0f);
	ck_assert_float_eq(clip_scale(norm, 1.0f, 0.0f), 0.2f);
	ck_assert_float_eq(clip_scale(norm, 1.0f, 0.1f), 1.0f / 5.1f);
	ck_assert_float_eq(clip_scale(0.0f, 1.0f, 0.0f), 1.0f);
	ck_assert_float_eq(clip_scale(NAN, 1.0f, 1e-6f), 1.0f);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_optim");
	TCase *tc = tcase_create("optim");
	tcase_add_test(tc, adamw_two_steps);
	tcase_add_test(tc, adamw_grad_scale);
	tcase_add_test(tc, adamw_decay_only_where_asked);
	tcase_add_test(tc, lr_schedule_points);
	tcase_add_test(tc, lr_schedule_zero_based);
	tcase_add_test(tc, clip_by_global_norm);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
