/*
 * optim.h - the optimizer: AdamW with decoupled weight decay, the
 * learning-rate schedule, and gradient clipping by the global L2 norm.
 *
 * Everything here is a pure function of its arguments; the data-parallel
 * runtime (zero.h) owns the state (parameters, m, v) and calls it on the
 * ranges a rank owns.
 *
 * AdamW, for step t >= 1 (1-based), gradient g already unscaled and clipped:
 *   m = beta1 m + (1 - beta1) g
 *   v = beta2 v + (1 - beta2) g^2
 *   p = p - lr (m / (1 - beta1^t) / (sqrt(v / (1 - beta2^t)) + eps) + wd p)
 * where wd = weight_decay for 2-D weights (gpt_tensor.decay) and 0 for
 * biases, LayerNorm parameters (and nothing else). This is PyTorch's AdamW
 * (decay multiplied by lr, applied to the parameter before the step).
 */
#ifndef TY_OPTIM_H
#define TY_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

/* The job's training.adam_beta1, adam_beta2, adam_eps, weight_decay and grad_clip_eps. */
typedef struct adamw_config {
	float beta1;        /* 0.9 */
	float beta2;        /* 0.95 or 0.999 */
	float eps;          /* 1e-8 */
	float weight_decay; /* 0.1; only on tensors with decay */
	float clip_eps;     /* 1e-6: the clip rule's (clip_scale), applied before the update */
} adamw_config;

/* beta1 0.9, beta2 0.95, eps 1e-8, weight decay 0.1 (GPT-2 / llm.c), clip epsilon 1e-6. */
adamw_config adamw_defaults(void);

/*
 * One AdamW step over n elements. g is multiplied by grad_scale first
 * (1/loss_scale times the clip factor); decay selects the weight decay.
 * IN/OUT: p, m, v (n floats each); IN: g (n floats); t: the 1-based step.
 */
void adamw_update(const adamw_config *cfg, float *p, const float *g, float *m, float *v, size_t n,
                  float lr, float grad_scale, bool decay, int t);

typedef enum lr_decay { LR_COSINE = 0, LR_LINEAR, LR_CONSTANT } lr_decay;

/* How steps are counted (the job spec's training.lr_convention). */
typedef enum lr_convention { LR_TRAINYARD = 0, LR_LLMC, LR_NANOGPT } lr_convention;

/*
 * Learning-rate schedule, for 1-based optimizer steps s:
 *   W = warmup_steps, T = total_steps, max = max_lr, min = min_lr
 *   s <= W:   lr = max * s / W                      (linear warmup; s = W gives max)
 *   s > W:    r  = clamp((s - W) / max(T - W, 1), 0, 1)
 *     cosine:   lr = min + (max - min) (1 + cos(pi r)) / 2
 *     linear:   lr = max - (max - min) r
 *     constant: lr = max
 * so cosine reaches (max + min) / 2 at s = W + (T - W) / 2 and min at
 * s = T, staying there after. Steps s < 1 count as 0 (lr 0 with warmup).
 *
 * LR_LLMC counts as llm.c does, from step i = s - 1 = 0: the same warmup
 * (max * (i + 1) / W for i < W), then r = (i - W) / (T - W), so the first
 * step after warmup runs at max and the last (i = T - 1) stays one step
 * short of min. LR_NANOGPT is the same but for its warmup,
 * max * (i + 1) / (W + 1), which never quite reaches max.
 */
typedef struct lr_schedule {
	float max_lr;
	float min_lr;
	int warmup_steps;
	int total_steps;
	lr_decay decay;
	lr_convention convention;
} lr_schedule;

/* RET: the learning rate of step (1-based), by the formula above. */
float lr_at(const lr_schedule *s, int step);

/*
 * Gradient clipping by the global L2 norm: RET the factor the gradient is
 * multiplied by, min(1, clip / (norm + eps)); clip <= 0 disables (RET 1).
 * norm is the square root of the squared norm summed over every rank.
 * eps is 1e-6 by default (PyTorch's clip_grad_norm_); 0 is llm.c's rule
 * (clip / norm when norm > clip).
 */
float clip_scale(float norm, float clip, float eps);

#endif
