/*
 * numerics.c - loss scaling and spike detection.
 */
#include "numerics.h"

#include <math.h>

void loss_scaler_init(loss_scaler *s, bool enabled, float initial, int growth_interval)
{
	s->enabled = enabled;
	s->scale = enabled ? initial : 1.0f;
	s->min_scale = 1.0f;
	s->max_scale = 16777216.0f; /* 2^24 */
	s->growth_interval = growth_interval > 0 ? growth_interval : 2000;
	s->good_steps = 0;
}

bool loss_scaler_update(loss_scaler *s, bool finite)
{
	if (!s->enabled)
		return false;
	float before = s->scale;
	if (!finite) {
		s->scale = fmaxf(s->min_scale, s->scale * 0.5f);
		s->good_steps = 0;
	} else if (++s->good_steps >= s->growth_interval) {
		s->scale = fminf(s->max_scale, s->scale * 2.0f);
		s->good_steps = 0;
	}
	return s->scale != before;
}

void spike_init(spike_detector *d, int window, int min_history, double threshold)
{
	d->window = window < 2 ? 2 : window > SPIKE_WINDOW_MAX ? SPIKE_WINDOW_MAX : window;
	d->min_history = min_history < 2 ? 2 : min_history;
	d->threshold = threshold;
	d->n = 0;
	d->next = 0;
}

bool spike_add(spike_detector *d, double loss, double *z)
{
	*z = 0;
	bool spike = false;
	if (d->n >= d->min_history) {
		double mean = 0, var = 0;
		for (int i = 0; i < d->n; i++)
			mean += d->losses[i];
		mean /= d->n;
		for (int i = 0; i < d->n; i++)
			var += (d->losses[i] - mean) * (d->losses[i] - mean);
		double sd = sqrt(var / (d->n - 1));
		/* a flat history has no spread: any clear rise is then a spike */
		double floor = fmax(1e-12, 1e-4 * fabs(mean));
		*z = (loss - mean) / (sd > floor ? sd : floor);
		spike = *z > d->threshold;
	}
	d->losses[d->next] = loss;
	d->next = (d->next + 1) % d->window;
	if (d->n < d->window)
		d->n++;
	return spike;
}
