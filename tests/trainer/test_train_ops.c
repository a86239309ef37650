/*
 * test_train_ops.c - the model's numerics: fast ops against their
 * references, every backward against finite differences in double
 * precision, the whole model against a double-precision reference with
 * finite differences, the loss at init, determinism, bf16/fp16 rounding,
 * and the order of the parameter/gradient hooks.
 */
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "gpt.h"
#include "lowp.h"
#include "ops.h"
#include "unit.h"

/* --- helpers ------------------------------------------------------------ */

typedef struct rng {
	uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* uniform in [-a, a) */
static float rng_sym(rng *r, float a)
{
	return (float)(((double)(rng_next(r) >> 11) * 0x1p-53 * 2.0 - 1.0) * a);
}

static float *fbuf(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof *p);
	ck_assert_ptr_nonnull(p);
	return p;
}

static double *dbuf(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof *p);
	ck_assert_ptr_nonnull(p);
	return p;
}

static float *frand(size_t n, float a, rng *r)
{
	float *p = fbuf(n);
	for (size_t i = 0; i < n; i++)
		p[i] = rng_sym(r, a);
	return p;
}

static float *fcopy(const float *x, size_t n)
{
	float *p = fbuf(n);
	memcpy(p, x, n * sizeof *p);
	return p;
}

static double *to_double(const float *x, size_t n)
{
	double *p = dbuf(n);
	for (size_t i = 0; i < n; i++)
		p[i] = x[i];
	return p;
}

static int32_t *tokens(size_t n, int V, rng *r)
{
	int32_t *t = calloc(n, sizeof *t);
	ck_assert_ptr_nonnull(t);
	for (size_t i = 0; i < n; i++)
		t[i] = (int32_t)(rng_next(r) % (uint64_t)V);
	return t;
}

/* Every |got - want| <= atol + rtol |want|; infinities must match exactly. */
static void check_close(const char *what, const float *got, const float *want, size_t n, float atol,
                        float rtol)
{
	for (size_t i = 0; i < n; i++) {
		if (isinf(want[i])) {
			ck_assert_msg(got[i] == want[i], "%s[%zu]: got %g, want %g", what, i,
			              (double)got[i], (double)want[i]);
			continue;
		}
		float d = fabsf(got[i] - want[i]);
		ck_assert_msg(d <= atol + rtol * fabsf(want[i]),
		              "%s[%zu]: got %.9g, want %.9g (diff %.3g, allowed %.3g)", what, i,
		              (double)got[i], (double)want[i], (double)d,
		              (double)(atol + rtol * fabsf(want[i])));
	}
}

static void check_equal(const char *what, const float *got, const float *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(memcmp(&got[i], &want[i], sizeof(float)) == 0,
		              "%s[%zu]: got %.9g, want %.9g bit for bit", what, i, (double)got[i],
		              (double)want[i]);
}

/*
 * An analytic (float) gradient against a numeric (double) one:
 * max |a - n| <= rtol * max |n|. The numeric gradient must not be all
 * zero, or the check would prove nothing.
 */
static void check_grad(const char *what, const float *analytic, const double *numeric, size_t n,
                       double rtol)
{
	double scale = 0.0, err = 0.0;
	size_t worst = 0;
	for (size_t i = 0; i < n; i++)
		scale = fabs(numeric[i]) > scale ? fabs(numeric[i]) : scale;
	ck_assert_msg(scale > 1e-8, "%s: numeric gradient is all zero", what);
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)analytic[i] - numeric[i]);
		if (e > err) {
			err = e;
			worst = i;
		}
	}
	ck_assert_msg(err <= rtol * scale,
	              "%s: analytic %.9g vs numeric %.9g at %zu (error %.3g of max %.3g)", what,
	              (double)analytic[worst], numeric[worst], worst, err / scale, rtol);
}

/* --- double-precision forwards (for finite differences) ------------------ */

static void d_encoder(double *out, const int32_t *inp, const double *wte, const double *wpe, int B,
                      int T, int C)
{
	for (int n = 0; n < B * T; n++)
		for (int c = 0; c < C; c++)
			out[(size_t)n * C + c] =
			    wte[(size_t)inp[n] * C + c] + wpe[(size_t)(n % T) * C + c];
}

static void d_layernorm(double *out, const double *x, const double *w, const double *b, int N,
                        int C)
{
	for (int n = 0; n < N; n++) {
		const double *r = x + (size_t)n * C;
		double m = 0.0, v = 0.0;
		for (int c = 0; c < C; c++)
			m += r[c];
		m /= C;
		for (int c = 0; c < C; c++)
			v += (r[c] - m) * (r[c] - m);
		v /= C;
		double s = 1.0 / sqrt(v + (double)OPS_LN_EPS);
		for (int c = 0; c < C; c++)
			out[(size_t)n * C + c] = (r[c] - m) * s * w[c] + b[c];
	}
}

static void d_matmul(double *out, const double *x, const double *w, const double *bias, int N,
                     int C, int OC)
{
	for (int n = 0; n < N; n++)
		for (int o = 0; o < OC; o++) {
			double s = bias ? bias[o] : 0.0;
			for (int c = 0; c < C; c++)
				s += x[(size_t)n * C + c] * w[(size_t)o * C + c];
			out[(size_t)n * OC + o] = s;
		}
}

static void d_attention(double *out, const double *qkv, int B, int T, int C, int NH)
{
	int hs = C / NH;
	double scale = 1.0 / sqrt((double)hs);
	double *a = dbuf((size_t)T);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int t = 0; t < T; t++) {
				const double *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
				double mx = -INFINITY, sum = 0.0;
				for (int t2 = 0; t2 <= t; t2++) {
					const double *k =
					    qkv + ((size_t)b * T + t2) * 3 * C + C + h * hs;
					double s = 0.0;
					for (int i = 0; i < hs; i++)
						s += q[i] * k[i];
					a[t2] = s * scale;
					mx = a[t2] > mx ? a[t2] : mx;
				}
				for (int t2 = 0; t2 <= t; t2++) {
					a[t2] = exp(a[t2] - mx);
					sum += a[t2];
				}
				for (int i = 0; i < hs; i++) {
					double s = 0.0;
					for (int t2 = 0; t2 <= t; t2++)
						s += a[t2] / sum *
						     qkv[((size_t)b * T + t2) * 3 * C + 2 * C +
						         h * hs + i];
					out[((size_t)b * T + t) * C + h * hs + i] = s;
				}
			}
	free(a);
}

static void d_gelu(double *out, const double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = 0.5 * x[i] *
		         (1.0 + tanh(sqrt(2.0 / M_PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i])));
}

static void d_lmhead(double *logits, const double *x, const double *wte, int N, int C, int V,
                     int Vp)
{
	for (int n = 0; n < N; n++)
		for (int v = 0; v < Vp; v++) {
			double s = 0.0;
			for (int c = 0; c < C && v < V; c++)
				s += x[(size_t)n * C + c] * wte[(size_t)v * C + c];
			logits[(size_t)n * Vp + v] = v < V ? s : -INFINITY;
		}
}

/* Mean cross-entropy; logits v >= V are left out, whatever they hold. */
static double d_xent(const double *logits, const int32_t *targets, int N, int V, int Vp)
{
	double total = 0.0;
	for (int n = 0; n < N; n++) {
		const double *l = logits + (size_t)n * Vp;
		double mx = -INFINITY, sum = 0.0;
		for (int v = 0; v < V; v++)
			mx = l[v] > mx ? l[v] : mx;
		for (int v = 0; v < V; v++)
			sum += exp(l[v] - mx);
		total += mx + log(sum) - l[targets[n]];
	}
	return total / N;
}

/* --- finite differences over an op ----------------------------------------- */

/*
 * One op under test: up to four double inputs; forward writes nout
 * outputs; the objective is J = sum wt[i] out[i] (wt is the dout handed
 * to the float backward), except for the loss, where J is the loss.
 */
typedef struct fd_op {
	double *in[4];
	size_t n[4];
	double *wt;
	double *out;
	size_t nout;
	int d[6];
	const int32_t *tok;
	double (*objective)(struct fd_op *op); /* NULL: J = wt . out */
	void (*forward)(struct fd_op *op);
} fd_op;

static double fd_value(fd_op *op)
{
	if (op->objective)
		return op->objective(op);
	op->forward(op);
	double j = 0.0;
	for (size_t i = 0; i < op->nout; i++)
		j += op->wt[i] * op->out[i];
	return j;
}

/* dJ/d in[k], central differences, step h. */
static double *fd_gradient(fd_op *op, int k, double h)
{
	double *g = dbuf(op->n[k]);
	for (size_t i = 0; i < op->n[k]; i++) {
		double x = op->in[k][i];
		op->in[k][i] = x + h;
		double jp = fd_value(op);
		op->in[k][i] = x - h;
		double jm = fd_value(op);
		op->in[k][i] = x;
		g[i] = (jp - jm) / (2.0 * h);
	}
	return g;
}

static void fd_free(fd_op *op)
{
	for (int k = 0; k < 4; k++)
		free(op->in[k]);
	free(op->wt);
	free(op->out);
}

/* A finite difference gradient of a double forward has error O(h^2) plus
 * rounding O(1e-16 / h): far below 1e-6 here. The float backward is
 * within a few fp32 ulps of the exact gradient, so 1e-4 of the largest
 * entry separates a right backward from a wrong one by orders of
 * magnitude. */
#define FD_STEP 1e-5
#define FD_RTOL 1e-4

/* --- (1) fast ops against the references --------------------------------- */

/*
 * Tolerances. Ops that do the same float operations in the same order as
 * their reference (encoder, layernorm, residual, the bias sums) must match
 * bit for bit. sgemm sums dot products in another order: a K-term fp32
 * dot product of values in [-1, 1] is off by at most about K * 2^-24
 * times the sum of |terms| (<= K), so we allow 2e-7 * K^2, which is
 * 3e-4 for K = 40 and much more than what is seen. exp and tanh are
 * polynomial approximations within a few ulp of libm: 1e-6 absolute (and
 * relative).
 */
#define MM_ATOL(K) (2e-7f * (float)(K) * (float)(K))

START_TEST(test_ref_encoder)
{
	enum { B = 3, T = 7, C = 37, Vp = 64 };
	rng r = {1};
	int32_t *inp = tokens(B * T, 20, &r); /* 20 < Vp: tokens repeat */
	float *wte = frand((size_t)Vp * C, 1, &r), *wpe = frand((size_t)T * C, 1, &r);
	float *o1 = fbuf((size_t)B * T * C), *o2 = fbuf((size_t)B * T * C);
	encoder_forward(o1, inp, wte, wpe, B, T, C);
	encoder_forward_ref(o2, inp, wte, wpe, B, T, C);
	check_equal("encoder out", o1, o2, (size_t)B * T * C);

	float *dout = frand((size_t)B * T * C, 1, &r);
	float *dwte1 = frand((size_t)Vp * C, 1, &r), *dwpe1 = frand((size_t)T * C, 1, &r);
	float *dwte2 = fcopy(dwte1, (size_t)Vp * C), *dwpe2 = fcopy(dwpe1, (size_t)T * C);
	encoder_backward(dwte1, dwpe1, dout, inp, B, T, C);
	encoder_backward_ref(dwte2, dwpe2, dout, inp, B, T, C);
	check_equal("encoder dwte", dwte1, dwte2, (size_t)Vp * C);
	check_equal("encoder dwpe", dwpe1, dwpe2, (size_t)T * C);
	free(inp);
	free(wte);
	free(wpe);
	free(o1);
	free(o2);
	free(dout);
	free(dwte1);
	free(dwpe1);
	free(dwte2);
	free(dwpe2);
}
END_TEST

START_TEST(test_ref_layernorm)
{
	enum { N = 29, C = 67 };
	rng r = {2};
	float *x = frand((size_t)N * C, 2, &r), *w = frand(C, 1, &r), *b = frand(C, 1, &r);
	float *o1 = fbuf((size_t)N * C), *o2 = fbuf((size_t)N * C);
	float *m1 = fbuf(N), *m2 = fbuf(N), *s1 = fbuf(N), *s2 = fbuf(N);
	for (int n = 0; n < N; n++) /* rows with an offset test the centring */
		x[(size_t)n * C] += 3.0f;
	layernorm_forward(o1, m1, s1, x, w, b, N, C);
	layernorm_forward_ref(o2, m2, s2, x, w, b, N, C);
	check_equal("layernorm out", o1, o2, (size_t)N * C);
	check_equal("layernorm mean", m1, m2, N);
	check_equal("layernorm rstd", s1, s2, N);

	float *dout = frand((size_t)N * C, 1, &r);
	float *dx1 = frand((size_t)N * C, 1, &r), *dw1 = frand(C, 1, &r), *db1 = frand(C, 1, &r);
	float *dx2 = fcopy(dx1, (size_t)N * C), *dw2 = fcopy(dw1, C), *db2 = fcopy(db1, C);
	layernorm_backward(dx1, dw1, db1, dout, x, w, m1, s1, N, C);
	layernorm_backward_ref(dx2, dw2, db2, dout, x, w, m2, s2, N, C);
	check_equal("layernorm dinp", dx1, dx2, (size_t)N * C);
	check_equal("layernorm dw", dw1, dw2, C);
	check_equal("layernorm db", db1, db2, C);
	free(x);
	free(w);
	free(b);
	free(o1);
	free(o2);
	free(m1);
	free(m2);
	free(s1);
	free(s2);
	free(dout);
	free(dx1);
	free(dw1);
	free(db1);
	free(dx2);
	free(dw2);
	free(db2);
}
END_TEST

START_TEST(test_ref_matmul)
{
	enum { N = 23, C = 40, OC = 72 };
	rng r = {3};
	float *x = frand((size_t)N * C, 1, &r), *w = frand((size_t)OC * C, 1, &r);
	float *bias = frand(OC, 1, &r);
	float *o1 = fbuf((size_t)N * OC), *o2 = fbuf((size_t)N * OC);
	matmul_forward(o1, x, w, bias, N, C, OC);
	matmul_forward_ref(o2, x, w, bias, N, C, OC);
	check_close("matmul out", o1, o2, (size_t)N * OC, MM_ATOL(C), 0);
	matmul_forward(o1, x, w, NULL, N, C, OC);
	matmul_forward_ref(o2, x, w, NULL, N, C, OC);
	check_close("matmul out (no bias)", o1, o2, (size_t)N * OC, MM_ATOL(C), 0);

	float *dout = frand((size_t)N * OC, 1, &r);
	float *dx1 = frand((size_t)N * C, 1, &r), *dx2 = fcopy(dx1, (size_t)N * C);
	float *dw1 = frand((size_t)OC * C, 1, &r), *dw2 = fcopy(dw1, (size_t)OC * C);
	float *db1 = frand(OC, 1, &r), *db2 = fcopy(db1, OC);
	matmul_backward(dx1, dw1, db1, dout, x, w, N, C, OC);
	matmul_backward_ref(dx2, dw2, db2, dout, x, w, N, C, OC);
	check_close("matmul dinp", dx1, dx2, (size_t)N * C, MM_ATOL(OC), 0);
	check_close("matmul dw", dw1, dw2, (size_t)OC * C, MM_ATOL(N), 0);
	check_equal("matmul dbias", db1, db2, OC);
	free(x);
	free(w);
	free(bias);
	free(o1);
	free(o2);
	free(dout);
	free(dx1);
	free(dx2);
	free(dw1);
	free(dw2);
	free(db1);
	free(db2);
}
END_TEST

START_TEST(test_ref_attention)
{
	enum { B = 2, T = 19, C = 24, NH = 3 };
	size_t nqkv = (size_t)B * T * 3 * C, natt = (size_t)B * NH * T * T;
	rng r = {4};
	float *qkv = frand(nqkv, 2, &r);
	float *o1 = fbuf((size_t)B * T * C), *o2 = fbuf((size_t)B * T * C);
	float *a1 = frand(natt, 1, &r), *a2 = fbuf(natt);
	attention_forward(o1, a1, qkv, B, T, C, NH, GPT_FP32);
	attention_forward_ref(o2, a2, qkv, B, T, C, NH);
	/* scores: K = hs terms, then exp (a few ulp) and a T-term sum */
	check_close("attention att", a1, a2, natt, 1e-6f, 1e-5f);
	check_close("attention out", o1, o2, (size_t)B * T * C, 1e-5f, 1e-5f);

	float *dout = frand((size_t)B * T * C, 1, &r);
	float *d1 = frand(nqkv, 1, &r), *d2 = fbuf(nqkv), *scratch = frand(natt, 1, &r);
	attention_backward(d1, scratch, dout, qkv, a2, B, T, C, NH, GPT_FP32);
	attention_backward_ref(d2, dout, qkv, a2, B, T, C, NH);
	check_close("attention dqkv", d1, d2, nqkv, 1e-5f, 1e-5f);
	free(qkv);
	free(o1);
	free(o2);
	free(a1);
	free(a2);
	free(dout);
	free(d1);
	free(d2);
	free(scratch);
}
END_TEST

START_TEST(test_ref_gelu_residual)
{
	size_t n = 10007;
	rng r = {5};
	float *x = frand(n, 6, &r), *y = frand(n, 6, &r);
	x[0] = 0.0f;
	x[1] = -30.0f;
	x[2] = 30.0f;
	x[3] = 1e-6f;
	float *o1 = fbuf(n), *o2 = fbuf(n);
	gelu_forward(o1, x, n);
	gelu_forward_ref(o2, x, n);
	check_close("gelu out", o1, o2, n, 1e-6f, 1e-6f);
	float *dout = frand(n, 1, &r), *d1 = fbuf(n), *d2 = fbuf(n);
	gelu_backward(d1, x, dout, n);
	gelu_backward_ref(d2, x, dout, n);
	/* the reference's 1 + tanhf and 1 - tanhf^2 cancel near tanh = -1: for
	 * |x| up to 6 that costs it up to 0.5 |x| du 2^-23 ~ 2e-6 */
	check_close("gelu dinp", d1, d2, n, 3e-6f, 1e-6f);
	gelu_backward(dout, x, dout, n); /* in place */
	check_equal("gelu dinp in place", dout, d1, n);

	residual_forward(o1, x, y, n);
	residual_forward_ref(o2, x, y, n);
	check_equal("residual out", o1, o2, n);
	free(x);
	free(y);
	free(o1);
	free(o2);
	free(dout);
	free(d1);
	free(d2);
}
END_TEST

START_TEST(test_ref_lmhead_xent)
{
	enum { N = 21, C = 32, V = 301, Vp = 320 };
	rng r = {6};
	float *x = frand((size_t)N * C, 1, &r), *wte = frand((size_t)Vp * C, 1, &r);
	float *l1 = fbuf((size_t)N * Vp), *l2 = fbuf((size_t)N * Vp);
	int32_t *tgt = tokens(N, V, &r);
	lmhead_forward(l1, x, wte, N, C, V, Vp);
	lmhead_forward_ref(l2, x, wte, N, C, V, Vp);
	check_close("lmhead logits", l1, l2, (size_t)N * Vp, MM_ATOL(C), 0);
	for (int n = 0; n < N; n++)
		for (int v = V; v < Vp; v++)
			ck_assert_msg(isinf(l1[(size_t)n * Vp + v]) && l1[(size_t)n * Vp + v] < 0,
			              "padded logit [%d,%d] is %g, not -inf", n, v,
			              (double)l1[(size_t)n * Vp + v]);

	float *loss1 = fbuf(N), *loss2 = fbuf(N), *lse1 = fbuf(N), *lse2 = fbuf(N);
	softmax_xent_forward(loss1, lse1, l2, tgt, N, V, Vp);
	softmax_xent_forward_ref(loss2, lse2, l2, tgt, N, V, Vp);
	/* a V-term sum of exps, a few ulp each: relative 1e-6 of ~log V + |max| */
	check_close("xent lse", lse1, lse2, N, 1e-5f, 1e-6f);
	check_close("xent losses", loss1, loss2, N, 1e-5f, 1e-6f);

	float *d1 = frand((size_t)N * Vp, 1, &r), *d2 = fbuf((size_t)N * Vp);
	softmax_xent_backward(d1, l2, lse2, tgt, 0.37f, N, V, Vp);
	softmax_xent_backward_ref(d2, l2, lse2, tgt, 0.37f, N, V, Vp);
	check_close("xent dlogits", d1, d2, (size_t)N * Vp, 1e-7f, 1e-5f);
	for (int n = 0; n < N; n++)
		for (int v = V; v < Vp; v++)
			ck_assert_msg(d1[(size_t)n * Vp + v] == 0.0f, "padded dlogit is %g",
			              (double)d1[(size_t)n * Vp + v]);
	float *inplace = fcopy(l2, (size_t)N * Vp);
	softmax_xent_backward(inplace, inplace, lse2, tgt, 0.37f, N, V, Vp);
	check_equal("xent dlogits in place", inplace, d1, (size_t)N * Vp);

	float *dx1 = fbuf((size_t)N * C), *dx2 = fbuf((size_t)N * C);
	float *dw1 = frand((size_t)Vp * C, 1, &r), *dw2 = fcopy(dw1, (size_t)Vp * C);
	float *pad = fcopy(dw1 + (size_t)V * C, (size_t)(Vp - V) * C);
	lmhead_backward(dx1, dw1, d2, x, wte, N, C, V, Vp);
	lmhead_backward_ref(dx2, dw2, d2, x, wte, N, C, V, Vp);
	check_close("lmhead dinp", dx1, dx2, (size_t)N * C, 1e-5f, 1e-5f);
	check_close("lmhead dwte", dw1, dw2, (size_t)Vp * C, 1e-5f, 1e-5f);
	check_equal("lmhead dwte padding untouched", dw1 + (size_t)V * C, pad,
	            (size_t)(Vp - V) * C);
	free(x);
	free(wte);
	free(l1);
	free(l2);
	free(tgt);
	free(loss1);
	free(loss2);
	free(lse1);
	free(lse2);
	free(d1);
	free(d2);
	free(inplace);
	free(dx1);
	free(dx2);
	free(dw1);
	free(dw2);
	free(pad);
}
END_TEST

/* NaN in a logit reaches the loss; the padding never matters. */
START_TEST(test_xent_nan_inf)
{
	enum { N = 2, V = 50, Vp = 64 };
	float logits[N * Vp], loss[N], lse[N];
	int32_t tgt[N] = {3, 4};
	for (int i = 0; i < N * Vp; i++)
		logits[i] = (float)(i % 7) * 0.1f;
	logits[17] = NAN;
	logits[Vp + 60] = NAN; /* padding of row 1: ignored */
	softmax_xent_forward(loss, lse, logits, tgt, N, V, Vp);
	ck_assert_msg(isnan(loss[0]), "a NaN logit gave loss %g", (double)loss[0]);
	ck_assert_msg(isfinite(loss[1]), "a NaN in the padding gave loss %g", (double)loss[1]);
	logits[17] = INFINITY;
	softmax_xent_forward(loss, lse, logits, tgt, N, V, Vp);
	ck_assert_msg(!isfinite(loss[0]), "an infinite logit gave loss %g", (double)loss[0]);
}
END_TEST

/* The fast exp and tanh near their edges. */
START_TEST(test_fast_transcendentals)
{
	enum { N = 64 };
	float x[N], y[N], ref[N];
	for (int i = 0; i < N; i++)
		x[i] = -0.5f * (float)i * (float)i / 16.0f; /* 0 down to -124 */
	float lse = 0.0f;
	int32_t tgt = 0;
	/* exp through the softmax backward: p = exp(x - lse) with lse 0 */
	softmax_xent_backward(y, x, &lse, &tgt, 1.0f, 1, N, N);
	y[0] += 1.0f;
	for (int i = 0; i < N; i++)
		ref[i] = expf(x[i]);
	for (int i = 0; i < N; i++) {
		if (x[i] >= -87.0f)
			ck_assert_msg(fabsf(y[i] - ref[i]) <= 4.0f * FLT_EPSILON * ref[i] + 1e-38f,
			              "exp(%g): got %.9g, want %.9g", (double)x[i], (double)y[i],
			              (double)ref[i]);
		else
			ck_assert_msg(y[i] >= 0.0f && y[i] < 2e-38f, "exp(%g) gave %g",
			              (double)x[i], (double)y[i]);
	}
	float g[3], gx[3] = {-INFINITY, INFINITY, NAN};
	gelu_forward(g, gx, 3);
	ck_assert_msg(g[1] == INFINITY && isnan(g[2]), "gelu(inf) = %g, gelu(nan) = %g",
	              (double)g[1], (double)g[2]);
}
END_TEST

/*
 * The ops other than the matmuls split their work so that every output
 * element is computed by one thread in a fixed order: 1 and 3 threads
 * must give the same bits. (Matmuls are cut into one block per thread,
 * so they are reproducible only for a fixed thread count.)
 */
START_TEST(test_thread_count_independence)
{
	enum { B = 2, T = 33, C = 96, NH = 4, V = 500, Vp = 512, N = B * T };
	rng r = {7};
	int32_t *tok = tokens(N, 50, &r);
	float *x = frand((size_t)N * C, 2, &r), *w = frand(C, 1, &r), *b = frand(C, 1, &r);
	float *dout = frand((size_t)N * C, 1, &r), *qkv = frand((size_t)N * 3 * C, 2, &r);
	float *logits = frand((size_t)N * Vp, 4, &r), *big = frand((size_t)N * 4 * C, 4, &r);
	float *res[2][10];
	int threads = omp_get_max_threads();
	for (int k = 0; k < 2; k++) {
		omp_set_num_threads(k == 0 ? 1 : 3);
		float **o = res[k];
		o[0] = fbuf((size_t)Vp * C); /* dwte */
		o[1] = fbuf((size_t)T * C);  /* dwpe */
		encoder_backward(o[0], o[1], dout, tok, B, T, C);
		o[2] = fbuf((size_t)N * C); /* dinp */
		o[3] = fbuf(2 * (size_t)C); /* dw, db */
		float mean[N], rstd[N];
		layernorm_forward(o[2], mean, rstd, x, w, b, N, C);
		layernorm_backward(o[2], o[3], o[3] + C, dout, x, w, mean, rstd, N, C);
		o[4] = fbuf((size_t)N * C);          /* attention out */
		o[5] = fbuf((size_t)B * NH * T * T); /* att */
		o[6] = fbuf((size_t)N * 3 * C);      /* dqkv */
		float *scratch = fbuf((size_t)B * NH * T * T);
		attention_forward(o[4], o[5], qkv, B, T, C, NH, GPT_FP32);
		attention_backward(o[6], scratch, dout, qkv, o[5], B, T, C, NH, GPT_FP32);
		free(scratch);
		o[7] = fbuf((size_t)N * 4 * C); /* gelu backward */
		gelu_backward(o[7], big, big, (size_t)N * 4 * C);
		o[8] = fbuf(2 * (size_t)N); /* losses, lse */
		softmax_xent_forward(o[8], o[8] + N, logits, tok, N, V, Vp);
		o[9] = fbuf((size_t)N * Vp); /* dlogits */
		softmax_xent_backward(o[9], logits, o[8] + N, tok, 0.1f, N, V, Vp);
	}
	omp_set_num_threads(threads);
	size_t sizes[10] = {(size_t)Vp * C,    (size_t)T * C,     (size_t)N * C,
	                    2 * (size_t)C,     (size_t)N * C,     (size_t)B * NH * T * T,
	                    (size_t)N * 3 * C, (size_t)N * 4 * C, 2 * (size_t)N,
	                    (size_t)N * Vp};
	const char *names[10] = {"dwte", "dwpe", "ln dinp", "ln dw db", "att out",
	                         "att",  "dqkv", "gelu",    "xent",     "dlogits"};
	for (int i = 0; i < 10; i++) {
		check_equal(names[i], res[1][i], res[0][i], sizes[i]);
		free(res[0][i]);
		free(res[1][i]);
	}
	free(tok);
	free(x);
	free(w);
	free(b);
	free(dout);
	free(qkv);
	free(logits);
	free(big);
}
END_TEST

/* --- (2) each backward against finite differences -------------------------- */

static void fd_layernorm_fwd(fd_op *op)
{
	d_layernorm(op->out, op->in[0], op->in[1], op->in[2], op->d[0], op->d[1]);
}

START_TEST(test_fd_layernorm)
{
	enum { N = 4, C = 9 };
	rng r = {11};
	float *x = frand(N * C, 2, &r), *w = frand(C, 1.5f, &r), *b = frand(C, 1, &r);
	float *dout = frand(N * C, 1, &r), *out = fbuf(N * C), *mean = fbuf(N), *rstd = fbuf(N);
	float *dx = fbuf(N * C), *dw = fbuf(C), *db = fbuf(C);
	layernorm_forward(out, mean, rstd, x, w, b, N, C);
	layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, N, C);

	fd_op op = {.in = {to_double(x, N * C), to_double(w, C), to_double(b, C)},
	            .n = {N * C, C, C},
	            .wt = to_double(dout, N * C),
	            .out = dbuf(N * C),
	            .nout = N * C,
	            .d = {N, C},
	            .forward = fd_layernorm_fwd};
	const float *an[3] = {dx, dw, db};
	const char *names[3] = {"layernorm dinp", "layernorm dw", "layernorm db"};
	for (int k = 0; k < 3; k++) {
		double *g = fd_gradient(&op, k, FD_STEP);
		check_grad(names[k], an[k], g, op.n[k], FD_RTOL);
		free(g);
	}
	fd_free(&op);
	free(x);
	free(w);
	free(b);
	free(dout);
	free(out);
	free(mean);
	free(rstd);
	free(dx);
	free(dw);
	free(db);
}
END_TEST

static void fd_matmul_fwd(fd_op *op)
{
	d_matmul(op->out, op->in[0], op->in[1], op->in[2], op->d[0], op->d[1], op->d[2]);
}

START_TEST(test_fd_matmul)
{
	enum { N = 5, C = 6, OC = 7 };
	rng r = {12};
	float *x = frand(N * C, 1, &r), *w = frand(OC * C, 1, &r), *b = frand(OC, 1, &r);
	float *dout = frand(N * OC, 1, &r);
	float *dx = fbuf(N * C), *dw = fbuf(OC * C), *db = fbuf(OC);
	matmul_backward(dx, dw, db, dout, x, w, N, C, OC);

	fd_op op = {.in = {to_double(x, N * C), to_double(w, OC * C), to_double(b, OC)},
	            .n = {N * C, OC * C, OC},
	            .wt = to_double(dout, N * OC),
	            .out = dbuf(N * OC),
	            .nout = N * OC,
	            .d = {N, C, OC},
	            .forward = fd_matmul_fwd};
	const float *an[3] = {dx, dw, db};
	const char *names[3] = {"matmul dinp", "matmul dw", "matmul dbias"};
	for (int k = 0; k < 3; k++) {
		double *g = fd_gradient(&op, k, FD_STEP);
		check_grad(names[k], an[k], g, op.n[k], FD_RTOL);
		free(g);
	}
	fd_free(&op);
	free(x);
	free(w);
	free(b);
	free(dout);
	free(dx);
	free(dw);
	free(db);
}
END_TEST

static void fd_attention_fwd(fd_op *op)
{
	d_attention(op->out, op->in[0], op->d[0], op->d[1], op->d[2], op->d[3]);
}

START_TEST(test_fd_attention)
{
	enum { B = 2, T = 5, C = 8, NH = 2 };
	size_t nqkv = (size_t)B * T * 3 * C;
	rng r = {13};
	float *qkv = frand(nqkv, 1.5f, &r), *dout = frand(B * T * C, 1, &r);
	float *out = fbuf(B * T * C), *att = fbuf(B * NH * T * T);
	float *scratch = fbuf(B * NH * T * T), *dqkv = fbuf(nqkv);
	attention_forward(out, att, qkv, B, T, C, NH, GPT_FP32);
	attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH, GPT_FP32);

	fd_op op = {.in = {to_double(qkv, nqkv)},
	            .n = {nqkv},
	            .wt = to_double(dout, B * T * C),
	            .out = dbuf(B * T * C),
	            .nout = B * T * C,
	            .d = {B, T, C, NH},
	            .forward = fd_attention_fwd};
	double *g = fd_gradient(&op, 0, FD_STEP);
	check_grad("attention dqkv", dqkv, g, nqkv, FD_RTOL);
	free(g);
	fd_free(&op);
	free(qkv);
	free(dout);
	free(out);
	free(att);
	free(scratch);
	free(dqkv);
}
END_TEST

static void fd_gelu_fwd(fd_op *op)
{
	d_gelu(op->out, op->in[0], op->n[0]);
}

START_TEST(test_fd_gelu)
{
	enum { N = 41 };
	rng r = {14};
	float *x = frand(N, 4, &r), *dout = frand(N, 1, &r), *dx = fbuf(N);
	gelu_backward(dx, x, dout, N);
	fd_op op = {.in = {to_double(x, N)},
	            .n = {N},
	            .wt = to_double(dout, N),
	            .out = dbuf(N),
	            .nout = N,
	            .forward = fd_gelu_fwd};
	double *g = fd_gradient(&op, 0, FD_STEP);
	check_grad("gelu dinp", dx, g, N, FD_RTOL);
	free(g);
	fd_free(&op);
	free(x);
	free(dout);
	free(dx);
}
END_TEST

static void fd_encoder_fwd(fd_op *op)
{
	d_encoder(op->out, op->tok, op->in[0], op->in[1], op->d[0], op->d[1], op->d[2]);
}

START_TEST(test_fd_encoder)
{
	enum { B = 2, T = 4, C = 5, Vp = 6 };
	rng r = {15};
	int32_t *tok = tokens(B * T, 4, &r);
	float *wte = frand(Vp * C, 1, &r), *wpe = frand(T * C, 1, &r);
	float *dout = frand(B * T * C, 1, &r), *dwte = fbuf(Vp * C), *dwpe = fbuf(T * C);
	encoder_backward(dwte, dwpe, dout, tok, B, T, C);
	fd_op op = {.in = {to_double(wte, Vp * C), to_double(wpe, T * C)},
	            .n = {Vp * C, T * C},
	            .wt = to_double(dout, B * T * C),
	            .out = dbuf(B * T * C),
	            .nout = B * T * C,
	            .d = {B, T, C},
	            .tok = tok,
	            .forward = fd_encoder_fwd};
	double *g = fd_gradient(&op, 0, FD_STEP);
	check_grad("encoder dwte", dwte, g, Vp * C, FD_RTOL);
	free(g);
	g = fd_gradient(&op, 1, FD_STEP);
	check_grad("encoder dwpe", dwpe, g, T * C, FD_RTOL);
	free(g);
	fd_free(&op);
	free(tok);
	free(wte);
	free(wpe);
	free(dout);
	free(dwte);
	free(dwpe);
}
END_TEST

static void fd_lmhead_fwd(fd_op *op)
{
	d_lmhead(op->out, op->in[0], op->in[1], op->d[0], op->d[1], op->d[2], op->d[3]);
}

/* The LM head's objective over finite logits only (padding is -inf). */
static double fd_lmhead_objective(fd_op *op)
{
	op->forward(op);
	double j = 0.0;
	for (size_t i = 0; i < op->nout; i++)
		if (isfinite(op->out[i]))
			j += op->wt[i] * op->out[i];
	return j;
}

START_TEST(test_fd_lmhead)
{
	enum { N = 3, C = 5, V = 11, Vp = 64 };
	rng r = {16};
	float *x = frand(N * C, 1, &r), *wte = frand(Vp * C, 1, &r);
	float *dlogits = frand(N * Vp, 1, &r);
	for (int n = 0; n < N; n++) /* the backward ignores dlogits of the padding */
		for (int v = V; v < Vp; v++)
			dlogits[n * Vp + v] = 1e3f;
	float *dx = fbuf(N * C), *dwte = fbuf(Vp * C);
	lmhead_backward(dx, dwte, dlogits, x, wte, N, C, V, Vp);
	fd_op op = {.in = {to_double(x, N * C), to_double(wte, Vp * C)},
	            .n = {N * C, Vp * C},
	            .wt = to_double(dlogits, N * Vp),
	            .out = dbuf(N * Vp),
	            .nout = N * Vp,
	            .d = {N, C, V, Vp},
	            .objective = fd_lmhead_objective,
	            .forward = fd_lmhead_fwd};
	double *g = fd_gradient(&op, 0, FD_STEP);
	check_grad("lmhead dinp", dx, g, N * C, FD_RTOL);
	free(g);
	g = fd_gradient(&op, 1, FD_STEP);
	check_grad("lmhead dwte", dwte, g, Vp * C, FD_RTOL);
	free(g);
	fd_free(&op);
	free(x);
	free(wte);
	free(dlogits);
	free(dx);
	free(dwte);
}
END_TEST

static double fd_xent_objective(fd_op *op)
{
	return d_xent(op->in[0], op->tok, op->d[0], op->d[1], op->d[2]);
}

START_TEST(test_fd_xent)
{
	enum { N = 4, V = 13, Vp = 64 };
	rng r = {17};
	float *logits = frand(N * Vp, 3, &r), *loss = fbuf(N), *lse = fbuf(N);
	float *dlogits = fbuf(N * Vp);
	int32_t *tgt = tokens(N, V, &r);
	softmax_xent_forward(loss, lse, logits, tgt, N, V, Vp);
	softmax_xent_backward(dlogits, logits, lse, tgt, 1.0f / N, N, V, Vp);
	fd_op op = {.in = {to_double(logits, N * Vp)},
	            .n = {N * Vp},
	            .d = {N, V, Vp},
	            .tok = tgt,
	            .objective = fd_xent_objective};
	double *g = fd_gradient(&op, 0, FD_STEP);
	check_grad("xent dlogits", dlogits, g, N * Vp, FD_RTOL);
	for (int n = 0; n < N; n++)
		for (int v = V; v < Vp; v++)
			ck_assert(dlogits[n * Vp + v] == 0.0f);
	double mean = 0.0;
	for (int n = 0; n < N; n++)
		mean += loss[n];
	mean /= N;
	ck_assert_msg(fabs(mean - fd_xent_objective(&op)) < 1e-5, "loss %g, double %g", mean,
	              fd_xent_objective(&op));
	free(g);
	fd_free(&op);
	free(logits);
	free(loss);
	free(lse);
	free(dlogits);
	free(tgt);
}
END_TEST

/* --- the whole model --------------------------------------------------------- */

static const gpt_config tiny = {.max_seq_len = 8,
                                .vocab_size = 40,
                                .padded_vocab_size = 64,
                                .num_layers = 2,
                                .num_heads = 2,
                                .channels = 16};

/* A model and its flat parameters and gradients. */
typedef struct fixture {
	gpt_config cfg;
	int B, T;
	size_t np;
	float *params, *grads;
	int32_t *inputs, *targets;
	gpt_flat flat;
	gpt_hooks hooks;
	gpt_model *m;
} fixture;

/* GPT-2 init plus noise of size `noise`, so that no bias is 0 and no
 * LayerNorm weight is 1 (a backward that drops them would still pass). */
static void fixture_init(fixture *f, const gpt_config *cfg, int B, int T, gpt_precision prec,
                         float noise, uint64_t seed)
{
	char err[256];
	memset(f, 0, sizeof *f);
	f->cfg = *cfg;
	f->B = B;
	f->T = T;
	f->np = gpt_num_params(cfg);
	f->params = fbuf(f->np);
	f->grads = fbuf(f->np);
	gpt_init_params(cfg, f->params, seed);
	rng r = {seed + 100};
	for (size_t i = 0; i < f->np; i++)
		f->params[i] += rng_sym(&r, noise);
	f->inputs = tokens((size_t)B * T, cfg->vocab_size, &r);
	f->targets = tokens((size_t)B * T, cfg->vocab_size, &r);
	f->flat = (gpt_flat){.cfg = &f->cfg, .params = f->params, .grads = f->grads};
	f->hooks = gpt_hooks_flat(&f->flat);
	f->m = gpt_new(cfg, B, T, prec, err, sizeof err);
	ck_assert_msg(f->m != NULL, "gpt_new: %s", err);
}

static void fixture_release(fixture *f)
{
	gpt_free(f->m);
	free(f->params);
	free(f->grads);
	free(f->inputs);
	free(f->targets);
}

/* One forward and backward from zero gradients; RET the loss. */
static float fixture_step(fixture *f)
{
	memset(f->grads, 0, f->np * sizeof(float));
	float loss = gpt_forward(f->m, &f->hooks, f->inputs, f->targets);
	gpt_backward(f->m, &f->hooks, 1.0f);
	return loss;
}

/* Double precision reference of gpt_forward: the mean loss, and the
 * logits [B,T,Vp] when logits_out is not NULL. */
static double ref_model_loss(const gpt_config *cfg, const double *p, const int32_t *inp,
                             const int32_t *tgt, int B, int T, double *logits_out)
{
	int C = cfg->channels, L = cfg->num_layers, NH = cfg->num_heads;
	int V = cfg->vocab_size, Vp = cfg->padded_vocab_size, N = B * T;
	size_t NC = (size_t)N * C;
	double *res = dbuf(NC), *ln = dbuf(NC), *qkv = dbuf(3 * NC), *y = dbuf(NC);
	double *proj = dbuf(NC), *fc = dbuf(4 * NC), *g = dbuf(4 * NC);
	double *logits = dbuf((size_t)N * Vp);

	d_encoder(res, inp, p, p + (size_t)Vp * C, B, T, C);
	for (int l = 0; l < L; l++) {
		const double *u = p + gpt_unit_offset(cfg, l + 1);
		const double *ln1w = u, *ln1b = ln1w + C, *qkvw = ln1b + C,
		             *qkvb = qkvw + 3 * C * C;
		const double *apw = qkvb + 3 * C, *apb = apw + C * C, *ln2w = apb + C;
		const double *ln2b = ln2w + C, *fcw = ln2b + C, *fcb = fcw + 4 * C * C;
		const double *fpw = fcb + 4 * C, *fpb = fpw + 4 * C * C;
		d_layernorm(ln, res, ln1w, ln1b, N, C);
		d_matmul(qkv, ln, qkvw, qkvb, N, C, 3 * C);
		d_attention(y, qkv, B, T, C, NH);
		d_matmul(proj, y, apw, apb, N, C, C);
		for (size_t i = 0; i < NC; i++)
			res[i] += proj[i];
		d_layernorm(ln, res, ln2w, ln2b, N, C);
		d_matmul(fc, ln, fcw, fcb, N, C, 4 * C);
		d_gelu(g, fc, 4 * NC);
		d_matmul(proj, g, fpw, fpb, N, 4 * C, C);
		for (size_t i = 0; i < NC; i++)
			res[i] += proj[i];
	}
	const double *fin = p + gpt_unit_offset(cfg, L + 1);
	d_layernorm(ln, res, fin, fin + C, N, C);
	d_lmhead(logits, ln, p, N, C, V, Vp);
	double loss = d_xent(logits, tgt, N, V, Vp);
	if (logits_out)
		memcpy(logits_out, logits, (size_t)N * Vp * sizeof(double));
	free(res);
	free(ln);
	free(qkv);
	free(y);
	free(proj);
	free(fc);
	free(g);
	free(logits);
	return loss;
}

/*
 * (3) gpt_backward against central differences of the double reference,
 * on every tensor (a spread of entries in each: all of them would take
 * minutes under the sanitizers). The float model's loss and logits must
 * match the reference too, the padded logits are -inf, and the padded
 * rows of wte get exactly zero gradient.
 */
START_TEST(test_model_gradcheck)
{
	const gpt_config *cfg = &tiny;
	int B = 2, T = 8, N = 16, C = cfg->channels;
	int V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
	fixture f;
	/* weights of size 0.5, not GPT-2's 0.02: with tiny weights attention is
	 * nearly uniform and a wrong attention backward moves the gradients
	 * of the model by less than 1e-3 */
	fixture_init(&f, cfg, B, T, GPT_FP32, 0.5f, 21);
	float loss = fixture_step(&f);

	double *p = to_double(f.params, f.np);
	double *logits = dbuf((size_t)N * Vp);
	double ref = ref_model_loss(cfg, p, f.inputs, f.targets, B, T, logits);
	ck_assert_msg(fabs(loss - ref) < 1e-5, "loss %.9g, reference %.9g", (double)loss, ref);
	const float *lf = gpt_logits(f.m);
	for (size_t i = 0; i < (size_t)N * Vp; i++) {
		if (isinf(logits[i])) {
			ck_assert_msg(isinf(lf[i]) && lf[i] < 0, "padded logit %zu is %g", i,
			              (double)lf[i]);
			continue;
		}
		ck_assert_msg(fabs(lf[i] - logits[i]) < 1e-5, "logit %zu: %.9g, reference %.9g", i,
		              (double)lf[i], logits[i]);
	}

	for (size_t i = (size_t)V * C; i < (size_t)Vp * C; i++)
		ck_assert_msg(f.grads[i] == 0.0f, "padded wte gradient [%zu] is %g", i,
		              (double)f.grads[i]);

	gpt_tensor tensors[2 + 12 * 2 + 2];
	int nt = gpt_tensors(cfg, tensors, 2 + 12 * 2 + 2);
	ck_assert_int_eq(nt, 2 + 12 * 2 + 2);
	rng r = {22};
	for (int k = 0; k < nt; k++) {
		const gpt_tensor *t = &tensors[k];
		size_t n = t->numel, count = n < 24 ? n : 24;
		if (k == 0) /* wte: only the real vocabulary; the padding is checked above */
			n = (size_t)V * C;
		double *num = dbuf(count);
		float *an = fbuf(count);
		for (size_t j = 0; j < count; j++) {
			size_t i = t->offset + (count == n ? j : rng_next(&r) % n);
			double x = p[i];
			p[i] = x + FD_STEP;
			double jp = ref_model_loss(cfg, p, f.inputs, f.targets, B, T, NULL);
			p[i] = x - FD_STEP;
			double jm = ref_model_loss(cfg, p, f.inputs, f.targets, B, T, NULL);
			p[i] = x;
			num[j] = (jp - jm) / (2 * FD_STEP);
			an[j] = f.grads[i];
		}
		/* float activations through 2 layers are off by about 1e-6 of the
		 * tensor's largest gradient; 1e-4 leaves a wide margin and still
		 * catches a 2% error in one GELU term */
		check_grad(t->name, an, num, count, 1e-4);
		free(num);
		free(an);
	}
	free(p);
	free(logits);
	fixture_release(&f);
}
END_TEST

/* dloss scales the gradients linearly; gradients accumulate over calls. */
START_TEST(test_model_dloss_accumulate)
{
	fixture f;
	fixture_init(&f, &tiny, 2, 8, GPT_FP32, 0.05f, 23);
	fixture_step(&f);
	float *g1 = fcopy(f.grads, f.np);
	memset(f.grads, 0, f.np * sizeof(float));
	gpt_forward(f.m, &f.hooks, f.inputs, f.targets);
	gpt_backward(f.m, &f.hooks, 0.5f);
	gpt_backward(f.m, &f.hooks, 0.25f); /* again on the same forward: += */
	/* scaling by powers of two is exact, but a tensor with two terms (wte)
	 * rounds differently when added into a nonzero gradient: a few ulp of
	 * the largest gradient */
	float scale = 0.0f;
	for (size_t i = 0; i < f.np; i++)
		scale = fabsf(g1[i]) > scale ? fabsf(g1[i]) : scale;
	for (size_t i = 0; i < f.np; i++)
		ck_assert_msg(fabsf(f.grads[i] - 0.75f * g1[i]) <= 1e-6f * scale,
		              "grad %zu: %g, want %g", i, (double)f.grads[i], 0.75 * (double)g1[i]);
	free(g1);
	fixture_release(&f);
}
END_TEST

/* (4) at init the model predicts about uniformly: loss ~ ln V. */
START_TEST(test_model_init_loss)
{
	gpt_config cfg = {.max_seq_len = 32,
	                  .vocab_size = 1000,
	                  .padded_vocab_size = 1024,
	                  .num_layers = 2,
	                  .num_heads = 4,
	                  .channels = 64};
	fixture f;
	fixture_init(&f, &cfg, 4, 32, GPT_FP32, 0.0f, 24);
	float loss = gpt_forward(f.m, &f.hooks, f.inputs, f.targets);
	/* logits have std about 0.02 sqrt(C) = 0.16: loss ~ ln V + 0.013 */
	ck_assert_msg(fabs(loss - log(1000.0)) < 0.05, "loss at init %g, ln V %g", (double)loss,
	              log(1000.0));
	ck_assert_float_eq(gpt_forward(f.m, &f.hooks, f.inputs, NULL), 0.0f);
	fixture_release(&f);
}
END_TEST

/* (5) the same inputs give the same bits at a fixed thread count. */
START_TEST(test_model_determinism)
{
	gpt_config cfg = {.max_seq_len = 16,
	                  .vocab_size = 97,
	                  .padded_vocab_size = 128,
	                  .num_layers = 2,
	                  .num_heads = 4,
	                  .channels = 32};
	size_t nlogits = (size_t)3 * 16 * 128;
	fixture f;
	fixture_init(&f, &cfg, 3, 16, GPT_FP32, 0.05f, 25);
	int threads = omp_get_max_threads();
	float loss1 = fixture_step(&f);
	float *g1 = fcopy(f.grads, f.np), *l1 = fcopy(gpt_logits(f.m), nlogits);
	float loss2 = fixture_step(&f);
	ck_assert_msg(memcmp(&loss1, &loss2, sizeof loss1) == 0, "loss %.9g then %.9g",
	              (double)loss1, (double)loss2);
	check_equal("grads, second run", f.grads, g1, f.np);

	fixture f2; /* a second model over the same parameters */
	fixture_init(&f2, &cfg, 3, 16, GPT_FP32, 0.05f, 25);
	float loss3 = fixture_step(&f2);
	ck_assert(memcmp(&loss1, &loss3, sizeof loss1) == 0);
	check_equal("grads, second model", f2.grads, g1, f.np);
	check_equal("logits, second model", gpt_logits(f2.m), l1, nlogits);

	/* another thread count: matmuls are cut per thread, so only the loss
	 * must agree closely, and nothing may be left over from the last run */
	omp_set_num_threads(threads == 1 ? 2 : 1);
	float loss4 = fixture_step(&f);
	ck_assert_msg(fabsf(loss4 - loss1) < 1e-5f, "loss %.9g with another thread count, %.9g",
	              (double)loss4, (double)loss1);
	omp_set_num_threads(threads);
	free(g1);
	free(l1);
	fixture_release(&f);
	fixture_release(&f2);
}
END_TEST

/* --- (6) precision ----------------------------------------------------------- */

static float f16(float x)
{
	return lowp_round_fp16(x);
}

START_TEST(test_fp16_rounding)
{
	ck_assert_float_eq(f16(1.0f), 1.0f);
	ck_assert_float_eq(f16(65504.0f), 65504.0f);
	ck_assert_float_eq(f16(65519.0f), 65504.0f);
	ck_assert_msg(isinf(f16(65520.0f)) && f16(65520.0f) > 0, "65520 -> %g", (double)f16(65520));
	ck_assert_msg(isinf(f16(-65520.0f)) && f16(-65520.0f) < 0, "-65520 -> %g",
	              (double)f16(-65520));
	ck_assert_msg(isinf(f16(1e30f)), "1e30 must overflow to inf");
	ck_assert_msg(isinf(f16(INFINITY)) && isnan(f16(NAN)), "inf and NaN stay");
	ck_assert_uint_eq(lowp_fp16_bits(INFINITY), 0x7c00);
	ck_assert_uint_eq(lowp_fp16_bits(65504.0f), 0x7bff);
	/* ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 */
	ck_assert_float_eq(f16(1.0f + 0x1p-11f), 1.0f);
	ck_assert_float_eq(f16(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);
	ck_assert_float_eq(f16(1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);
	/* subnormals: multiples of 2^-24 below 2^-14 */
	ck_assert_float_eq(f16(0x1p-14f), 0x1p-14f);
	ck_assert_uint_eq(lowp_fp16_bits(0x1p-14f), 0x0400);
	ck_assert_float_eq(f16(0x1p-20f), 0x1p-20f);
	ck_assert_float_eq(f16(0x1p-24f), 0x1p-24f);
	ck_assert_uint_eq(lowp_fp16_bits(0x1p-24f), 0x0001);
	ck_assert_float_eq(f16(1e-8f), 0.0f);                   /* below 2^-25: to zero */
	ck_assert_float_eq(f16(3e-8f), 0x1p-24f);               /* above 2^-25: to the smallest */
	ck_assert_float_eq(f16(0x1p-25f), 0.0f);                /* the tie goes to even, zero */
	ck_assert_float_eq(f16(3 * 0x1p-25f), 0x1p-23f);        /* 1.5 units: to 2 */
	ck_assert_float_eq(f16(0x1p-14f - 0x1p-26f), 0x1p-14f); /* rounds up into normals */
	ck_assert_uint_eq(lowp_fp16_bits(-0.0f), 0x8000);
	ck_assert_float_eq(f16(6.1e-5f), 1023 * 0x1p-24f); /* just below 2^-14: largest subnormal */

	/* every half value decodes to itself */
	for (uint32_t h = 0; h < 0x10000; h++) {
		float v = lowp_fp16_to_float((uint16_t)h);
		if (isnan(v))
			continue;
		ck_assert_msg(lowp_fp16_bits(v) == h, "half 0x%04x -> %g -> 0x%04x", h, (double)v,
		              lowp_fp16_bits(v));
	}
	/* the branch-free rounding is the encoding's round trip, bit for bit */
	rng r0 = {30};
	for (int i = 0; i < 2000000; i++) {
		uint32_t u = (uint32_t)rng_next(&r0);
		if (i & 1) /* half the draws near the fp16 range */
			u = (u & 0x80000000u) | (0x32000000u + u % 0x16000000u);
		float x = lowp_from_bits(u);
		float a = lowp_round_fp16(x), b = lowp_fp16_to_float(lowp_fp16_bits(x));
		ck_assert_msg(memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)),
		              "fp16 round of %a: %a, encoding gives %a", (double)x, (double)a,
		              (double)b);
	}
#ifdef __FLT16_MAX__
	/* against the compiler's correctly rounded conversion */
	rng r = {31};
	for (int i = 0; i < 1000000; i++) {
		uint32_t u = (uint32_t)rng_next(&r);
		u = (u & 0x80000000u) | (0x30000000u + u % 0x17800000u); /* ~2^-31 .. 2^17 */
		float x = lowp_from_bits(u);
		_Float16 h = (_Float16)x;
		float want = (float)h;
		ck_assert_msg(memcmp(&want, &(float){f16(x)}, sizeof want) == 0,
		              "fp16(%a) = %a, want %a", (double)x, (double)f16(x), (double)want);
	}
#endif
}
END_TEST

/* bf16 reference: the nearer of the two neighbours, ties to the even one. */
static float bf16_nearest(float x)
{
	uint32_t u = lowp_bits(x);
	float lo = lowp_from_bits(u & 0xffff0000u),
	      hi = lowp_from_bits((u & 0xffff0000u) + 0x10000u);
	/* past the largest finite bf16 the next value up is 2^128, i.e. inf */
	double hid = isinf(hi) ? copysign(0x1p128, (double)hi) : (double)hi;
	double dl = fabs((double)x - lo), dh = fabs((double)x - hid);
	if (dl < dh)
		return lo;
	if (dh < dl)
		return hi;
	return (lowp_bits(lo) >> 16) & 1 ? hi : lo;
}

START_TEST(test_bf16_rounding)
{
	ck_assert_float_eq(lowp_round_bf16(1.0f), 1.0f);
	ck_assert_float_eq(lowp_round_bf16(1.0f + 0x1p-8f), 1.0f);               /* tie, to even */
	ck_assert_float_eq(lowp_round_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f); /* tie, up */
	ck_assert_float_eq(lowp_round_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
	ck_assert_uint_eq(lowp_bf16_bits(1.0f), 0x3f80);
	ck_assert_msg(isinf(lowp_round_bf16(FLT_MAX)), "FLT_MAX rounds up to inf in bf16");
	ck_assert_msg(isnan(lowp_round_bf16(NAN)), "NaN stays NaN");
	ck_assert_msg(isnan(lowp_round_bf16(lowp_from_bits(0x7f800001u))),
	              "a NaN with only low payload bits must not become inf");
	ck_assert_msg(isinf(lowp_round_bf16(-INFINITY)), "-inf stays");
	rng r = {32};
	for (int i = 0; i < 1000000; i++) {
		uint32_t u = (uint32_t)rng_next(&r);
		if ((u & 0x7f800000u) == 0x7f800000u)
			continue; /* inf/NaN: above */
		float x = lowp_from_bits(u), want = bf16_nearest(x), got = lowp_round_bf16(x);
		ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "bf16(%a) = %a, want %a",
		              (double)x, (double)got, (double)want);
	}
	/* the buffer forms agree with the scalar ones */
	float buf[100], out[100];
	for (int i = 0; i < 100; i++)
		buf[i] = rng_sym(&r, 1000);
	lowp_round_copy(out, buf, 100, GPT_FP16);
	for (int i = 0; i < 100; i++)
		ck_assert(out[i] == lowp_round_fp16(buf[i]));
	lowp_round_buf(buf, 100, GPT_BF16);
	for (int i = 0; i < 100; i++)
		ck_assert(buf[i] == lowp_round_bf16(buf[i]) && buf[i] != 0.0f);
}
END_TEST

/* BF16 and FP16 runs follow the FP32 one loosely and are not the same. */
START_TEST(test_model_lowp)
{
	gpt_config cfg = {.max_seq_len = 16,
	                  .vocab_size = 97,
	                  .padded_vocab_size = 128,
	                  .num_layers = 2,
	                  .num_heads = 4,
	                  .channels = 32};
	fixture f32;
	fixture_init(&f32, &cfg, 2, 16, GPT_FP32, 0.05f, 26);
	float l32 = fixture_step(&f32);
	gpt_precision precs[2] = {GPT_BF16, GPT_FP16};
	for (int k = 0; k < 2; k++) {
		fixture f;
		fixture_init(&f, &cfg, 2, 16, precs[k], 0.05f, 26);
		float l = fixture_step(&f);
		/* bf16 keeps 8 bits: per-value error 2^-9; the loss moves by ~1e-3 */
		ck_assert_msg(fabsf(l - l32) < 0.02f, "precision %d: loss %.9g, fp32 %.9g",
		              (int)precs[k], (double)l, (double)l32);
		/* the logits were stored in the format, and they are not fp32's */
		const float *lg = gpt_logits(f.m), *lg32 = gpt_logits(f32.m);
		int differ = 0;
		for (int i = 0; i < 2 * 16 * cfg.padded_vocab_size; i++) {
			ck_assert_msg(lowp_round(lg[i], precs[k]) == lg[i],
			              "precision %d: logit %d = %a is not in the format",
			              (int)precs[k], i, (double)lg[i]);
			differ += lg[i] != lg32[i];
		}
		ck_assert_msg(differ > 2 * 16 * cfg.vocab_size / 2,
		              "precision %d: only %d logits differ from fp32", (int)precs[k],
		              differ);
		double dot = 0, n1 = 0, n2 = 0;
		for (size_t i = 0; i < f.np; i++) {
			dot += (double)f.grads[i] * f32.grads[i];
			n1 += (double)f.grads[i] * f.grads[i];
			n2 += (double)f32.grads[i] * f32.grads[i];
		}
		double cosine = dot / sqrt(n1 * n2);
		ck_assert_msg(cosine > 0.99, "precision %d: gradient cosine %g", (int)precs[k],
		              cosine);
		fixture_release(&f);
	}

	/* fp16 overflow reaches the loss, so a loss-scaling trainer can see it */
	fixture f16m;
	fixture_init(&f16m, &cfg, 2, 16, GPT_FP16, 0.05f, 26);
	for (size_t i = 0; i < (size_t)cfg.padded_vocab_size * cfg.channels; i++)
		f16m.params[i] *= 1e7f; /* wte entries far beyond 65504 */
	float l = fixture_step(&f16m);
	ck_assert_msg(!isfinite(l), "fp16 overflow gave a finite loss %g", (double)l);
	memcpy(f32.params, f16m.params, f32.np * sizeof(float));
	ck_assert_msg(isfinite(fixture_step(&f32)), "the same weights in fp32 must be finite");
	fixture_release(&f16m);
	fixture_release(&f32);
}
END_TEST

/* --- (7) the hook order -------------------------------------------------------- */

/*
 * A recorder that also behaves like a ZeRO-3 runtime: params(u) copies
 * the unit into one shared buffer (unit 0 into its own) and poisons the
 * previous copy with NaN, and grads(u) hands out a private buffer per
 * unit that is folded into the flat gradients and poisoned at
 * grads_done(u). A model that kept a pointer too long would see NaN.
 */
typedef struct recorder {
	const gpt_config *cfg;
	const float *params;
	float *grads;
	float *pbuf0, *pbuf; /* unit 0; the other units */
	float **gbuf;        /* per unit, while open */
	char log[256][8];
	int n;
} recorder;

static void rec_log(recorder *r, char kind, int unit)
{
	ck_assert_int_lt(r->n, 256);
	snprintf(r->log[r->n++], sizeof r->log[0], "%c%d", kind, unit);
}

static const float *rec_params(void *ctx, int unit)
{
	recorder *r = ctx;
	rec_log(r, 'P', unit);
	size_t n = gpt_unit_numel(r->cfg, unit);
	float *dst = unit == 0 ? r->pbuf0 : r->pbuf;
	if (unit != 0) /* pbuf holds a layer, the largest of units 1 .. L+1 */
		for (size_t i = 0; i < gpt_unit_numel(r->cfg, 1); i++)
			r->pbuf[i] = NAN;
	memcpy(dst, r->params + gpt_unit_offset(r->cfg, unit), n * sizeof(float));
	return dst;
}

static float *rec_grads(void *ctx, int unit)
{
	recorder *r = ctx;
	rec_log(r, 'G', unit);
	if (!r->gbuf[unit])
		r->gbuf[unit] = fbuf(gpt_unit_numel(r->cfg, unit));
	return r->gbuf[unit];
}

static void rec_done(void *ctx, int unit)
{
	recorder *r = ctx;
	rec_log(r, 'D', unit);
	size_t n = gpt_unit_numel(r->cfg, unit);
	float *g = r->gbuf[unit];
	ck_assert_ptr_nonnull(g);
	float *dst = r->grads + gpt_unit_offset(r->cfg, unit);
	for (size_t i = 0; i < n; i++) {
		dst[i] += g[i];
		g[i] = NAN;
	}
	free(g);
	r->gbuf[unit] = NULL;
}

START_TEST(test_hook_order)
{
	const gpt_config *cfg = &tiny;
	int L = cfg->num_layers;
	fixture f;
	fixture_init(&f, cfg, 2, 8, GPT_FP32, 0.05f, 27);
	float want_loss = fixture_step(&f);

	recorder r = {.cfg = cfg, .params = f.params};
	r.grads = fbuf(f.np);
	r.pbuf0 = fbuf(gpt_unit_numel(cfg, 0));
	r.pbuf = fbuf(gpt_unit_numel(cfg, 1));
	r.gbuf = calloc((size_t)L + 2, sizeof *r.gbuf);
	ck_assert_ptr_nonnull(r.gbuf);
	gpt_hooks h = {.ctx = &r, .params = rec_params, .grads = rec_grads, .grads_done = rec_done};
	float loss = gpt_forward(f.m, &h, f.inputs, f.targets);
	gpt_backward(f.m, &h, 1.0f);

	const char *want[] = {/* forward */
	                      "P0", "P1", "P2", "P3", "P0",
	                      /* backward: LM head, final LayerNorm, layers, embeddings */
	                      "P0", "G0", "P3", "G3", "D3", "P2", "G2", "D2", "P1", "G1", "D1",
	                      "P0", "G0", "D0"};
	int nwant = (int)(sizeof want / sizeof want[0]);
	char got[1024] = "";
	for (int i = 0; i < r.n; i++) {
		strcat(got, r.log[i]);
		strcat(got, " ");
	}
	ck_assert_msg(r.n == nwant, "%d hook calls, want %d: %s", r.n, nwant, got);
	for (int i = 0; i < nwant; i++)
		ck_assert_msg(strcmp(r.log[i], want[i]) == 0, "call %d is %s, want %s: %s", i,
		              r.log[i], want[i], got);
	ck_assert_msg(memcmp(&loss, &want_loss, sizeof loss) == 0, "loss %g vs %g", (double)loss,
	              (double)want_loss);
	check_equal("grads through the recorder", r.grads, f.grads, f.np);

	/* grads_done may be NULL */
	h.grads_done = NULL;
	r.n = 0;
	gpt_forward(f.m, &h, f.inputs, f.targets);
	gpt_backward(f.m, &h, 1.0f);
	ck_assert_int_eq(r.n, nwant - L - 2);
	for (int u = 0; u < L + 2; u++)
		free(r.gbuf[u]);
	free(r.gbuf);
	free(r.grads);
	free(r.pbuf0);
	free(r.pbuf);
	fixture_release(&f);
}
END_TEST

/* --- layout, config, init ------------------------------------------------------ */

START_TEST(test_layout)
{
	gpt_config cfg = {.max_seq_len = 1024,
	                  .vocab_size = 50257,
	                  .padded_vocab_size = 50304,
	                  .num_layers = 12,
	                  .num_heads = 12,
	                  .channels = 768};
	char err[256];
	ck_assert_int_eq(gpt_config_check(&cfg, err, sizeof err), 0);
	ck_assert_int_eq(gpt_num_units(&cfg), 14);
	/* GPT-2 124M: 124,475,904 parameters with the padded vocabulary */
	ck_assert_uint_eq(gpt_num_params(&cfg), 124475904u);
	static gpt_tensor t[GPT_MAX_TENSORS];
	int n = gpt_tensors(&cfg, t, GPT_MAX_TENSORS);
	ck_assert_int_eq(n, 2 + 12 * 12 + 2);
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		ck_assert_uint_eq(t[i].offset, off);
		off += t[i].numel;
		ck_assert_uint_ge(t[i].offset, gpt_unit_offset(&cfg, t[i].unit));
		ck_assert_uint_le(t[i].offset + t[i].numel, gpt_unit_offset(&cfg, t[i].unit) +
		                                                gpt_unit_numel(&cfg, t[i].unit));
	}
	ck_assert_uint_eq(off, gpt_num_params(&cfg));
	ck_assert_str_eq(t[0].name, "wte");
	ck_assert_str_eq(t[1].name, "wpe");
	ck_assert_str_eq(t[2 + 12 + 2].name, "h1.qkvw");
	ck_assert_uint_eq(t[2 + 12 + 2].numel, 3u * 768 * 768);
	ck_assert(t[2 + 12 + 2].decay && !t[2 + 12 + 3].decay);
	ck_assert_str_eq(t[n - 1].name, "lnfb");
	ck_assert_int_eq(t[n - 1].unit, 13);
	ck_assert_int_eq(gpt_tensors(&cfg, t, 3), n); /* counts past max */
	/* 6N + 6LCT */
	ck_assert(fabs(gpt_flops_per_token(&cfg, 64) - (6.0 * 124475904.0 + 6.0 * 12 * 768 * 64)) <
	          1.0);
}
END_TEST

START_TEST(test_config_check)
{
	char err[256];
	gpt_config c = tiny;
	c.num_heads = 3;
	ck_assert_int_eq(gpt_config_check(&c, err, sizeof err), -1);
	ck_assert_str_eq(err, "num_heads 3 does not divide channels 16");
	c = tiny;
	c.padded_vocab_size = 96;
	ck_assert_int_eq(gpt_config_check(&c, err, sizeof err), -1);
	ck_assert_str_eq(err, "padded_vocab_size 96 is not a multiple of 64");
	c = tiny;
	c.vocab_size = 65;
	ck_assert_int_eq(gpt_config_check(&c, err, sizeof err), -1);
	ck_assert_str_eq(err, "padded_vocab_size 64 is smaller than vocab_size 65");
	c = tiny;
	c.num_layers = 0;
	ck_assert_int_eq(gpt_config_check(&c, err, sizeof err), -1);
	ck_assert_str_eq(err, "num_layers must be positive, not 0");
	c = tiny;
	c.num_layers = 1025;
	ck_assert_int_eq(gpt_config_check(&c, err, sizeof err), -1);
	ck_assert_ptr_null(gpt_new(&tiny, 1, 9, GPT_FP32, err, sizeof err));
	ck_assert_str_eq(err, "sequence length 9 exceeds max_seq_len 8");
	ck_assert_ptr_null(gpt_new(&tiny, 0, 8, GPT_FP32, err, sizeof err));
	gpt_free(NULL);
}
END_TEST

START_TEST(test_init_params)
{
	gpt_config cfg = {.max_seq_len = 64,
	                  .vocab_size = 1000,
	                  .padded_vocab_size = 1024,
	                  .num_layers = 4,
	                  .num_heads = 4,
	                  .channels = 64};
	size_t np = gpt_num_params(&cfg), C = 64;
	float *a = fbuf(np), *b = fbuf(np);
	gpt_init_params(&cfg, a, 7);
	int threads = omp_get_max_threads();
	omp_set_num_threads(1);
	gpt_init_params(&cfg, b, 7);
	omp_set_num_threads(threads);
	check_equal("init with one thread", b, a, np);
	gpt_init_params(&cfg, b, 8);
	ck_assert(memcmp(a, b, np * sizeof(float)) != 0);
	/* a value pinned down, so the stream cannot change unnoticed */
	uint32_t first = lowp_bits(a[0]);
	gpt_init_params(&cfg, b, 7);
	ck_assert_uint_eq(lowp_bits(b[0]), first);

	gpt_tensor t[2 + 12 * 4 + 2];
	int n = gpt_tensors(&cfg, t, 2 + 12 * 4 + 2);
	for (int k = 0; k < n; k++) {
		const float *x = a + t[k].offset;
		size_t len = t[k].numel;
		if (k == 0) {
			for (size_t i = 1000 * C; i < len; i++)
				ck_assert(x[i] == 0.0f); /* padded rows */
			len = 1000 * C;
		}
		double s = 0, s2 = 0;
		for (size_t i = 0; i < len; i++) {
			s += x[i];
			s2 += (double)x[i] * x[i];
		}
		double mean = s / len, sd = sqrt(s2 / len - mean * mean);
		const char *nm = strchr(t[k].name, '.') ? strchr(t[k].name, '.') + 1 : t[k].name;
		double want_sd = 0.02;
		if (!strcmp(nm, "attprojw") || !strcmp(nm, "fcprojw"))
			want_sd = 0.02 / sqrt(8.0);
		if (t[k].decay || k < 2)
			ck_assert_msg(
			    fabs(sd - want_sd) < 0.05 * want_sd && fabs(mean) < 0.1 * want_sd,
			    "%s: mean %g sd %g, want sd %g", t[k].name, mean, sd, want_sd);
		else if (nm[strlen(nm) - 1] == 'w')
			ck_assert_msg(s == (double)len && sd == 0, "%s: not all 1", t[k].name);
		else
			ck_assert_msg(s2 == 0, "%s: not all 0", t[k].name);
	}
	free(a);
	free(b);
}
END_TEST

/* Tokens outside the vocabulary are a broken contract: the model stops. */
START_TEST(test_bad_token)
{
	fixture f;
	fixture_init(&f, &tiny, 2, 8, GPT_FP32, 0.0f, 28);
	f.inputs[3] = tiny.vocab_size;
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr)); /* the expected message */
	gpt_forward(f.m, &f.hooks, f.inputs, f.targets);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_ops");
	TCase *ref = tcase_create("reference");
	tcase_set_timeout(ref, 60);
	tcase_add_test(ref, test_ref_encoder);
	tcase_add_test(ref, test_ref_layernorm);
	tcase_add_test(ref, test_ref_matmul);
	tcase_add_test(ref, test_ref_attention);
	tcase_add_test(ref, test_ref_gelu_residual);
	tcase_add_test(ref, test_ref_lmhead_xent);
	tcase_add_test(ref, test_xent_nan_inf);
	tcase_add_test(ref, test_fast_transcendentals);
	tcase_add_test(ref, test_thread_count_independence);
	suite_add_tcase(s, ref);

	TCase *fd = tcase_create("finite differences");
	tcase_set_timeout(fd, 60);
	tcase_add_test(fd, test_fd_layernorm);
	tcase_add_test(fd, test_fd_matmul);
	tcase_add_test(fd, test_fd_attention);
	tcase_add_test(fd, test_fd_gelu);
	tcase_add_test(fd, test_fd_encoder);
	tcase_add_test(fd, test_fd_lmhead);
	tcase_add_test(fd, test_fd_xent);
	suite_add_tcase(s, fd);

	TCase *model = tcase_create("model");
	tcase_set_timeout(model, 120);
	tcase_add_test(model, test_model_gradcheck);
	tcase_add_test(model, test_model_dloss_accumulate);
	tcase_add_test(model, test_model_init_loss);
	tcase_add_test(model, test_model_determinism);
	tcase_add_test(model, test_model_lowp);
	tcase_add_test(model, test_hook_order);
	tcase_add_test(model, test_layout);
	tcase_add_test(model, test_config_check);
	tcase_add_test(model, test_init_params);
	suite_add_tcase(s, model);

	TCase *contract = tcase_create("contract");
	tcase_add_test_raise_signal(contract, test_bad_token, SIGABRT);
	suite_add_tcase(s, contract);

	TCase *prec = tcase_create("precision");
	tcase_set_timeout(prec, 60);
	tcase_add_test(prec, test_fp16_rounding);
	tcase_add_test(prec, test_bf16_rounding);
	suite_add_tcase(s, prec);
	return s;
}

UNIT_MAIN()
