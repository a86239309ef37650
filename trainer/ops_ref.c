/*
 * ops_ref.c - plain single-threaded references of the ops in ops.h.
 *
 * Naive loops written straight from the formulas, fp32 like the fast
 * ops, for the unit tests to compare the fast versions against. Nothing
 * here is meant to be fast and the model never calls it.
 */
#include <math.h>

#include "ops.h"

void encoder_forward_ref(float *out, const int32_t *inp, const float *wte, const float *wpe, int B,
                         int T, int C)
{
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++) {
			const float *e = wte + (size_t)inp[b * T + t] * C;
			const float *p = wpe + (size_t)t * C;
			float *o = out + ((size_t)b * T + t) * C;
			for (int c = 0; c < C; c++)
				o[c] = e[c] + p[c];
		}
}

void encoder_backward_ref(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B,
                          int T, int C)
{
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++) {
			const float *d = dout + ((size_t)b * T + t) * C;
			float *de = dwte + (size_t)inp[b * T + t] * C;
			float *dp = dwpe + (size_t)t * C;
			for (int c = 0; c < C; c++) {
				de[c] += d[c];
				dp[c] += d[c];
			}
		}
}

void layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, int N, int C)
{
	for (int n = 0; n < N; n++) {
		const float *x = inp + (size_t)n * C;
		float m = 0.0f;
		for (int c = 0; c < C; c++)
			m += x[c];
		m /= (float)C;
		float v = 0.0f;
		for (int c = 0; c < C; c++)
			v += (x[c] - m) * (x[c] - m);
		v /= (float)C;
		float s = 1.0f / sqrtf(v + OPS_LN_EPS);
		for (int c = 0; c < C; c++)
			out[(size_t)n * C + c] = (x[c] - m) * s * w[c] + b[c];
		mean[n] = m;
		rstd[n] = s;
	}
}

void layernorm_backward_ref(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C)
{
	for (int n = 0; n < N; n++) {
		const float *x = inp + (size_t)n * C;
		const float *d = dout + (size_t)n * C;
		float dmean = 0.0f, dnorm_mean = 0.0f;
		for (int c = 0; c < C; c++) {
			float norm = (x[c] - mean[n]) * rstd[n];
			dmean += w[c] * d[c];
			dnorm_mean += w[c] * d[c] * norm;
		}
		dmean /= (float)C;
		dnorm_mean /= (float)C;
		for (int c = 0; c < C; c++) {
			float norm = (x[c] - mean[n]) * rstd[n];
			dinp[(size_t)n * C + c] +=
			    (w[c] * d[c] - dmean - norm * dnorm_mean) * rstd[n];
		}
	}
	for (int c = 0; c < C; c++) {
		float sw = 0.0f, sb = 0.0f;
		for (int n = 0; n < N; n++) {
			size_t i = (size_t)n * C + c;
			sw += (inp[i] - mean[n]) * rstd[n] * dout[i];
			sb += dout[i];
		}
		dw[c] += sw;
		db[c] += sb;
	}
}

void matmul_forward_ref(float *out, const float *inp, const float *w, const float *bias, int N,
                        int C, int OC)
{
	for (int n = 0; n < N; n++)
		for (int o = 0; o < OC; o++) {
			float s = bias ? bias[o] : 0.0f;
			for (int c = 0; c < C; c++)
				s += inp[(size_t)n * C + c] * w[(size_t)o * C + c];
			out[(size_t)n * OC + o] = s;
		}
}

void matmul_backward_ref(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                         const float *w, int N, int C, int OC)
{
	for (int n = 0; n < N; n++)
		for (int c = 0; c < C; c++) {
			float s = 0.0f;
			for (int o = 0; o < OC; o++)
				s += dout[(size_t)n * OC + o] * w[(size_t)o * C + c];
			dinp[(size_t)n * C + c] = s;
		}
	for (int o = 0; o < OC; o++)
		for (int c = 0; c < C; c++) {
			float s = 0.0f;
			for (int n = 0; n < N; n++)
				s += dout[(size_t)n * OC + o] * inp[(size_t)n * C + c];
			dw[(size_t)o * C + c] += s;
		}
	if (dbias)
		for (int o = 0; o < OC; o++) {
			float s = 0.0f;
			for (int n = 0; n < N; n++)
				s += dout[(size_t)n * OC + o];
			dbias[o] += s;
		}
}

void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C, int NH)
{
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int t = 0; t < T; t++) {
				const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
				float *a = att + (((size_t)b * NH + h) * T + t) * T;
				float max = -INFINITY;
				for (int t2 = 0; t2 <= t; t2++) {
					const float *k =
					    qkv + ((size_t)b * T + t2) * 3 * C + C + h * hs;
					float s = 0.0f;
					for (int i = 0; i < hs; i++)
						s += q[i] * k[i];
					a[t2] = s * scale;
					if (a[t2] > max)
						max = a[t2];
				}
				float sum = 0.0f;
				for (int t2 = 0; t2 <= t; t2++) {
					a[t2] = expf(a[t2] - max);
					sum += a[t2];
				}
				for (int t2 = 0; t2 < T; t2++)
					a[t2] = t2 <= t ? a[t2] / sum : 0.0f;
				float *o = out + ((size_t)b * T + t) * C + h * hs;
				for (int i = 0; i < hs; i++) {
					float s = 0.0f;
					for (int t2 = 0; t2 <= t; t2++)
						s += a[t2] * qkv[((size_t)b * T + t2) * 3 * C +
						                 2 * C + h * hs + i];
					o[i] = s;
				}
			}
}

void attention_backward_ref(float *dqkv, const float *dout, const float *qkv, const float *att,
                            int B, int T, int C, int NH)
{
	int hs = C / NH;
	float scale = 1.0f / sqrtf((float)hs);
	for (size_t i = 0; i < (size_t)B * T * 3 * C; i++)
		dqkv[i] = 0.0f;
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int t = 0; t < T; t++) {
				const float *a = att + (((size_t)b * NH + h) * T + t) * T;
				const float *d = dout + ((size_t)b * T + t) * C + h * hs;
				const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
				float *dq = dqkv + ((size_t)b * T + t) * 3 * C + h * hs;
				/* da[t2] = d . v[t2], the gradient of a[t2]; the
				 * softmax backward needs dot = sum_t2 a[t2] da[t2]. */
				float dot = 0.0f;
				for (int t2 = 0; t2 <= t; t2++) {
					const float *v =
					    qkv + ((size_t)b * T + t2) * 3 * C + 2 * C + h * hs;
					float g = 0.0f;
					for (int i = 0; i < hs; i++)
						g += d[i] * v[i];
					dot += a[t2] * g;
				}
				for (int t2 = 0; t2 <= t; t2++) {
					size_t row2 = ((size_t)b * T + t2) * 3 * C;
					const float *k = qkv + row2 + C + h * hs;
					const float *v = qkv + row2 + 2 * C + h * hs;
					float *dk = dqkv + row2 + C + h * hs;
					float *dv = dqkv + row2 + 2 * C + h * hs;
					float g = 0.0f;
					for (int i = 0; i < hs; i++)
						g += d[i] * v[i];
					float ds = a[t2] * (g - dot) * scale;
					for (int i = 0; i < hs; i++) {
						dq[i] += ds * k[i];
						dk[i] += ds * q[i];
						dv[i] += a[t2] * d[i];
					}
				}
			}
}

void gelu_forward_ref(float *out, const float *inp, size_t N)
{
	const float s = sqrtf(2.0f / (float)M_PI);
	for (size_t i = 0; i < N; i++) {
		float x = inp[i];
		out[i] = 0.5f * x * (1.0f + tanhf(s * (x + 0.044715f * x * x * x)));
	}
}

void gelu_backward_ref(float *dinp, const float *inp, const float *dout, size_t N)
{
	const float s = sqrtf(2.0f / (float)M_PI);
	for (size_t i = 0; i < N; i++) {
		float x = inp[i];
		float th = tanhf(s * (x + 0.044715f * x * x * x));
		float du = s * (1.0f + 3.0f * 0.044715f * x * x);
		float g = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
		dinp[i] = g * dout[i];
	}
}

void residual_forward_ref(float *out, const float *a, const float *b, size_t N)
{
	for (size_t i = 0; i < N; i++)
		out[i] = a[i] + b[i];
}

void lmhead_forward_ref(float *logits, const float *inp, const float *wte, int N, int C, int V,
                        int Vp)
{
	for (int n = 0; n < N; n++)
		for (int v = 0; v < Vp; v++) {
			float s = 0.0f;
			if (v < V)
				for (int c = 0; c < C; c++)
					s += inp[(size_t)n * C + c] * wte[(size_t)v * C + c];
			logits[(size_t)n * Vp + v] = v < V ? s : -INFINITY;
		}
}

void lmhead_backward_ref(float *dinp, float *dwte, const float *dlogits, const float *inp,
                         const float *wte, int N, int C, int V, int Vp)
{
	for (int n = 0; n < N; n++)
		for (int c = 0; c < C; c++) {
			float s = 0.0f;
			for (int v = 0; v < V; v++)
				s += dlogits[(size_t)n * Vp + v] * wte[(size_t)v * C + c];
			dinp[(size_t)n * C + c] = s;
		}
	for (int v = 0; v < V; v++)
		for (int c = 0; c < C; c++) {
			float s = 0.0f;
			for (int n = 0; n < N; n++)
				s += dlogits[(size_t)n * Vp + v] * inp[(size_t)n * C + c];
			dwte[(size_t)v * C + c] += s;
		}
}

void softmax_xent_forward_ref(float *losses, float *lse, const float *logits,
                              const int32_t *targets, int N, int V, int Vp)
{
	for (int n = 0; n < N; n++) {
		const float *l = logits + (size_t)n * Vp;
		float max = -INFINITY;
		for (int v = 0; v < V; v++)
			if (l[v] > max)
				max = l[v];
		float sum = 0.0f;
		for (int v = 0; v < V; v++)
			sum += expf(l[v] - max);
		lse[n] = max + logf(sum);
		losses[n] = lse[n] - l[targets[n]];
	}
}

void softmax_xent_backward_ref(float *dlogits, const float *logits, const float *lse,
                               const int32_t *targets, float dscale, int N, int V, int Vp)
{
	for (int n = 0; n < N; n++)
		for (int v = 0; v < Vp; v++) {
			size_t i = (size_t)n * Vp + v;
			if (v >= V) {
				dlogits[i] = 0.0f;
				continue;
			}
			float p = expf(logits[i] - lse[n]);
			dlogits[i] = (p - (v == targets[n] ? 1.0f : 0.0f)) * dscale;
		}
}
