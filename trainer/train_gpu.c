/*
 * train_gpu.c - a run's model on a GPU (train_gpu.h).
 */
#include "train_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"

int train_gpu_open(train_gpu *g, const train_config *tc, int world, const adamw_config *adam,
                   char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	const layout *l = &tc->run;
	if (world != 1 || l->data_parallel != 1 || l->tensor_parallel != 1 ||
	    l->pipeline_parallel != 1) {
		snprintf(err, errlen,
		         "--device cuda trains on one GPU for now: the layout must be one rank "
		         "(data, tensor and pipeline parallel 1), not %d ranks as %dx%dx%d",
		         world, l->data_parallel, l->tensor_parallel, l->pipeline_parallel);
		return TRAIN_INVALID_CONFIG;
	}
	if (!(g->be = gpu_backend_load(err, errlen)) ||
	    g->be->model_fits(&tc->model, tc->precision, err, errlen) < 0)
		return TRAIN_INVALID_CONFIG;
	if (g->be->open_device(g->device, sizeof(g->device), err, errlen) < 0)
		return TRAIN_INTERNAL;
	size_t np = gpt_num_params(&tc->model), N = (size_t)l->micro_batch * tc->model.max_seq_len;
	g->in = malloc(2 * N * sizeof(int32_t));
	for (int k = 0; k < 3; k++)
		g->stage[k] = malloc(np * sizeof(float));
	if (!g->in || !g->stage[0] || !g->stage[1] || !g->stage[2]) {
		train_gpu_close(g);
		snprintf(err, errlen, "out of memory for the GPU path's host buffers");
		return TRAIN_OOM;
	}
	g->tg = g->in + N;
	g->tc = tc;
	g->adam = *adam;
	g->on = true;
	return TRAIN_OK;
}

/* A device failure: out of device memory is TRAIN_OOM, the rest TRAIN_INTERNAL. */
static int device_status(const char *err)
{
	return strstr(err, "out of memory") ? TRAIN_OOM : TRAIN_INTERNAL;
}

int train_gpu_upload(train_gpu *g, const dp_runtime *dp, char *err, size_t errlen)
{
	for (int u = 0; u < dp_num_units(dp); u++) {
		dp_range r = dp_owned_range(dp, u);
		size_t n = (r.end - r.begin) * sizeof(float);
		memcpy(g->stage[0] + r.begin, dp_owned_params(dp, u), n);
		memcpy(g->stage[1] + r.begin, dp_owned_m(dp, u), n);
		memcpy(g->stage[2] + r.begin, dp_owned_v(dp, u), n);
	}
	g->opt_step = dp_opt_step(dp);
	if (!g->model) {
		g->model = g->be->model_new(&g->tc->model, g->tc->run.micro_batch,
		                            g->tc->model.max_seq_len, g->tc->precision, g->stage[0],
		                            err, errlen);
		if (!g->model)
			return device_status(err);
	}
	const gpu_array which[3] = {GPU_PARAMS, GPU_ADAM_M, GPU_ADAM_V};
	for (int k = 0; k < 3; k++)
		if (g->be->set(g->model, which[k], g->stage[k], err, errlen) < 0)
			return TRAIN_INTERNAL;
	return TRAIN_OK;
}

int train_gpu_download(train_gpu *g, dp_runtime *dp, char *err, size_t errlen)
{
	const gpu_array which[3] = {GPU_PARAMS, GPU_ADAM_M, GPU_ADAM_V};
	for (int k = 0; k < 3; k++)
		if (g->be->get(g->model, which[k], g->stage[k], err, errlen) < 0)
			return TRAIN_INTERNAL;
	for (int u = 0; u < dp_num_units(dp); u++) {
		dp_range r = dp_owned_range(dp, u);
		if (dp_load_shard(dp, u, g->stage[0] + r.begin, g->stage[1] + r.begin,
		                  g->stage[2] + r.begin) < 0) {
			snprintf(err, errlen, "could not hand unit %d back to the host", u);
			return TRAIN_INTERNAL;
		}
	}
	if (dp_load_done(dp, g->opt_step) < 0) {
		snprintf(err, errlen, "could not hand the optimizer state back to the host");
		return TRAIN_INTERNAL;
	}
	return TRAIN_OK;
}

int train_gpu_step(train_gpu *g, int accum, train_gpu_batch_fn next, void *ctx, float lr,
                   float clip, float loss_scale, float *loss, dp_step_info *info, int *data_rc,
                   char *err, size_t errlen)
{
	const gpu_backend *be = g->be;
	be->zero_grad(g->model);
	/* the device runs ahead: the host reads the next micro-batch meanwhile */
	for (int k = 0; k < accum; k++) {
		if ((*data_rc = next(ctx, g->in, g->tg)) < 0)
			return TRAIN_DATA;
		if (be->forward(g->model, g->in, g->tg, NULL, err, errlen) < 0 ||
		    be->backward(g->model, loss_scale / (float)accum, err, errlen) < 0)
			return device_status(err);
	}
	double sq = 0.0, loss_sum = 0.0;
	if (be->step_stats(g->model, &sq, &loss_sum, err, errlen) < 0)
		return device_status(err);
	*loss = (float)(loss_sum / accum);
	memset(info, 0, sizeof(*info));
	info->grad_norm = (float)(sqrt(sq) / loss_scale);
	info->finite = isfinite(info->grad_norm) && isfinite(*loss);
	info->clip_scale = clip_scale(info->grad_norm, clip, g->adam.clip_eps);
	if (!info->finite)
		return TRAIN_OK;
	if (be->adamw(g->model, &g->adam, lr, info->clip_scale / loss_scale, g->opt_step + 1, err,
	              errlen) < 0)
		return device_status(err);
	g->opt_step++;
	info->updated = true;
	return TRAIN_OK;
}

void train_gpu_close(train_gpu *g)
{
	if (g->model)
		g->be->model_free(g->model);
	free(g->in);
	for (int k = 0; k < 3; k++)
		free(g->stage[k]);
	memset(g, 0, sizeof(*g));
}
