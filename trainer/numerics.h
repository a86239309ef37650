/*
 * numerics.h - the numerical safety the trainer applies every step:
 * dynamic loss scaling for fp16 and loss-spike detection.
 *
 * Loss scaler (fp16 only; other precisions keep scale 1): the loss is
 * multiplied by `scale` before backward. A step whose gradients are not
 * finite is skipped and the scale halves (not below min_scale); after
 * `growth_interval` good steps in a row it doubles (not above max_scale).
 *
 * Spike detector: a loss whose z-score against the previous `window`
 * finite losses exceeds `threshold` is a spike (reported as an event; the
 * step is still taken). It needs at least min_history losses first.
 */
#ifndef TY_NUMERICS_H
#define TY_NUMERICS_H

#include <stdbool.h>

typedef struct loss_scaler {
	bool enabled;
	float scale;
	float min_scale, max_scale;
	int growth_interval;
	int good_steps; /* finite steps since the last change */
} loss_scaler;

void loss_scaler_init(loss_scaler *s, bool enabled, float initial, int growth_interval);
/* Record a step's outcome. RET: true when the scale changed. */
bool loss_scaler_update(loss_scaler *s, bool finite);

#define SPIKE_WINDOW_MAX 256

typedef struct spike_detector {
	int window, min_history;
	double threshold;
	double losses[SPIKE_WINDOW_MAX];
	int n, next;
} spike_detector;

void spike_init(spike_detector *d, int window, int min_history, double threshold);
/* Add a finite loss. RET: true when it is a spike; OUT: *z its z-score. */
bool spike_add(spike_detector *d, double loss, double *z);

#endif
