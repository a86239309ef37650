/*
 * optim.c - AdamW, the learning-rate schedule and the clip factor (optim.h).
 */
#include "optim.h"

#include <math.h>

adamw_config adamw_defaults(void)
{
	adamw_config c = {
	    .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .clip_eps = 1e-6f};
	return c;
}

void adamw_update(const adamw_config *cfg, float *p, const float *g, float *m, float *v, size_t n,
                  float lr, float grad_scale, bool decay, int t)
{
	const float b1 = cfg->beta1, b2 = cfg->beta2, eps = cfg->eps;
	const float wd = decay ? cfg->weight_decay : 0.0f;
	/* bias corrections in double: beta^t for large t is far below float's ulp at 1 */
	const float c1 = (float)(1.0 / (1.0 - pow((double)b1, (double)t)));
	const float c2 = (float)(1.0 / (1.0 - pow((double)b2, (double)t)));
#pragma omp parallel for schedule(static) if (n > 65536)
	for (size_t i = 0; i < n; i++) {
		float gi = g[i] * grad_scale;
		float mi = b1 * m[i] + (1.0f - b1) * gi;
		float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
		m[i] = mi;
		v[i] = vi;
		float step = (mi * c1) / (sqrtf(vi * c2) + eps);
		p[i] -= lr * (step + wd * p[i]);
	}
}

float lr_at(const lr_schedule *s, int step)
{
	double max = s->max_lr, min = s->min_lr;
	int w = s->warmup_steps > 0 ? s->warmup_steps : 0;
	if (step < 0)
		step = 0;
	if (step <= w) {
		if (!w)
			return (float)max;
		return (float)(max * step / (s->convention == LR_NANOGPT ? w + 1 : w));
	}
	if (s->decay == LR_CONSTANT)
		return (float)max;
	/* the 0-based conventions are one step behind in the decay */
	int past = step - w - (s->convention == LR_TRAINYARD ? 0 : 1);
	double span = s->total_steps - w > 1 ? (double)(s->total_steps - w) : 1.0;
	double r = past / span;
	if (r > 1.0)
		r = 1.0;
	if (s->decay == LR_LINEAR)
		return (float)(max - (max - min) * r);
	return (float)(min + (max - min) * 0.5 * (1.0 + cos(M_PI * r)));
}

float clip_scale(float norm, float clip, float eps)
{
	if (clip <= 0.0f || !(norm + eps > clip))
		return 1.0f;
	return clip / (norm + eps);
}
