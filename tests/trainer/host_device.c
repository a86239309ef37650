/*
 * host_device.c - a stand-in for the GPU backend (trainer/gpu_backend.h)
 * on the CPU, for what a machine without a GPU can check of the trainer's
 * device path: the same table, loaded the same way (TRAINYARD_GPU_BACKEND),
 * its "device" arrays in host memory and its model the trainer's own CPU
 * model (gpt.h), which trainyard-train exports to it (-rdynamic).
 *
 * What it checks is the path around the device: the upload and download
 * of the runtime's state, checkpoints and resumes through them, data
 * parallel ranks summing their gradients on a staged comm (its staging is
 * a copy of host memory), ZeRO's shards (gpu_shard), tensor parallel
 * ranks' local layout and their group's comm (gpu_part: the CPU model's
 * part sums over it), the loss and the norm. The CUDA kernels are not
 * in it: tests/gpu/run checks them on a GPU. Built as
 * build/tests/libty-hostdevice.so; used by tests/trainer/train_device.sh.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_staged.h"
#include "gpu_backend.h"
#include "mp.h"

struct gpu_model {
	gpt_config cfg;
	gpt_model *m;
	mp_layout *lay; /* the part's local layout (mp.h) */
	gpt_flat flat;
	gpt_hooks flat_hooks; /* over the flat arrays */
	gpt_hooks hooks;      /* the same, and each unit's end told to done */
	gpt_hooks bh;         /* the caller's (gpu_model_set_hooks) */
	bool unit_grads;      /* ZeRO 2, 3: no gradient array */
	bool unit_params;     /* ZeRO 3: the parameters of the shard alone */
	size_t np;
	float *arr[4]; /* gpu_array */
	double loss_sum;
	gpu_shard_piece *pieces; /* ZeRO 1 (gpu_shard); grad_shard NULL: not sharded */
	int npieces;
	gpu_shard_piece *norm; /* gpu_part's; NULL: the whole gradient */
	int nnorm;
	size_t shard_size;
	float *grad_shard;
	gpt_tensor *tensors;
	int ntensors;
};

static int open_device(char *desc, size_t desclen, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	snprintf(desc, desclen, "a CPU stand-in for a GPU (tests/trainer/host_device.c)");
	return 0;
}

/* The device model's rule for a tensor-parallel part (model_gpu.h); the rest fits the CPU's. */
static int model_fits(const gpt_config *cfg, int tp, int pp, gpt_precision precision, char *err,
                      size_t errlen)
{
	(void)cfg;
	if ((tp > 1 || pp > 1) && precision != GPT_FP32) {
		snprintf(
		    err, errlen,
		    "tensor and pipeline parallel on the GPU train in fp32 so far, not in bf16 "
		    "or fp16");
		return -1;
	}
	return 0;
}

static void model_free(gpu_model *g)
{
	if (!g)
		return;
	gpt_free(g->m);
	mp_layout_free(g->lay);
	for (int k = 0; k < 4; k++)
		free(g->arr[k]);
	free(g->pieces);
	free(g->norm);
	free(g->grad_shard);
	free(g->tensors);
	free(g);
}

/* Floats of the "device" array which (model_gpu.h's gpu_array). */
static size_t array_len(const gpu_model *g, gpu_array which)
{
	bool moment = which == GPU_ADAM_M || which == GPU_ADAM_V;
	if (which == GPU_GRADS && g->unit_grads)
		return 0;
	if (which == GPU_PARAMS && g->unit_params)
		return g->shard_size;
	return g->grad_shard && moment ? g->shard_size : g->np;
}

/* The model's hooks: the flat arrays', and each unit's end told as the device tells it. */
static const float *unit_params(void *ctx, int u)
{
	gpu_model *g = ctx;
	if (g->unit_params)
		return g->bh.params(g->bh.ctx, u);
	return g->flat_hooks.params(g->flat_hooks.ctx, u);
}

static float *unit_grads(void *ctx, int u)
{
	gpu_model *g = ctx;
	if (g->bh.grads)
		return g->bh.grads(g->bh.ctx, u);
	return g->flat_hooks.grads(g->flat_hooks.ctx, u);
}

static void unit_done(void *ctx, int u)
{
	gpu_model *g = ctx;
	if (g->bh.grads_done)
		g->bh.grads_done(g->bh.ctx, u);
}

static gpu_shard_piece *pieces_copy(const gpu_shard_piece *pieces, int n)
{
	gpu_shard_piece *c = malloc(((size_t)n + 1) * sizeof(*c));
	if (c && n)
		memcpy(c, pieces, (size_t)n * sizeof(*c));
	return c;
}

static gpu_model *model_new(const gpt_config *cfg, int B, int T, gpt_precision precision,
                            const float *params, const gpu_part *part, char *err, size_t errlen)
{
	gpu_model *g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	g->cfg = *cfg;
	gpt_part gp = part ? part->slice : gpt_part_whole(cfg);
	int tp = gp.tp, pp = cfg->num_layers / gp.num_layers;
	if (model_fits(cfg, tp, pp, precision, err, errlen) < 0) {
		free(g);
		return NULL;
	}
	g->lay = mp_layout_new(cfg, tp, tp > 1 ? comm_rank(gp.tp_comm) : 0, pp,
	                       gp.first_layer / gp.num_layers, err, errlen);
	if (!g->lay) {
		free(g);
		return NULL;
	}
	g->np = g->lay->nparams;
	const gpu_shard *shard = part ? part->shard : NULL;
	bool sharded = shard != NULL;
	if (sharded) {
		g->npieces = shard->npieces;
		g->unit_grads = shard->unit_grads || shard->unit_params;
		g->unit_params = shard->unit_params;
		g->shard_size = shard->size;
		g->pieces = pieces_copy(shard->pieces, shard->npieces);
		g->grad_shard = calloc(shard->size + 1, sizeof(float));
	}
	if (part && part->norm) {
		g->nnorm = part->nnorm;
		g->norm = pieces_copy(part->norm, part->nnorm);
	}
	for (int k = 0; k < 4; k++) {
		bool flat =
		    (k == GPU_PARAMS && !g->unit_params) || (k == GPU_GRADS && !g->unit_grads);
		size_t n = sharded && flat ? shard->reach : array_len(g, (gpu_array)k);
		g->arr[k] = calloc(n + 1, sizeof(float));
	}
	g->tensors = calloc(GPT_MAX_TENSORS, sizeof(gpt_tensor));
	g->m = gpt_new_part(cfg, &gp, B, T, precision, err, errlen);
	if (!g->m || !g->arr[0] || !g->arr[1] || !g->arr[2] || !g->arr[3] || !g->tensors ||
	    (sharded && (!g->pieces || !g->grad_shard)) || (part && part->norm && !g->norm)) {
		if (g->m)
			snprintf(err, errlen, "out of memory");
		model_free(g);
		return NULL;
	}
	g->ntensors = g->lay->ntensors; /* their local pieces, for the update */
	for (int k = 0; k < g->ntensors; k++) {
		g->tensors[k] = g->lay->tensors[k].t;
		g->tensors[k].offset = g->lay->tensors[k].offset;
		g->tensors[k].numel = g->lay->tensors[k].numel;
	}
	memcpy(g->arr[GPU_PARAMS], params, array_len(g, GPU_PARAMS) * sizeof(float));
	g->flat = (gpt_flat){.cfg = &g->cfg,
	                     .params = g->arr[GPU_PARAMS],
	                     .grads = g->arr[GPU_GRADS],
	                     .unit_offset = g->lay->unit_offset};
	g->flat_hooks = gpt_hooks_flat(&g->flat);
	g->hooks = (gpt_hooks){g, unit_params, unit_grads, unit_done};
	return g;
}

static size_t model_bytes(const gpu_model *g)
{
	size_t arrays =
	    array_len(g, GPU_PARAMS) + array_len(g, GPU_GRADS) + 2 * array_len(g, GPU_ADAM_M);
	return (arrays + (g->grad_shard ? g->shard_size : 0)) * sizeof(float) +
	       gpt_activation_bytes(g->m);
}

static int forward(gpu_model *g, int slot, const int32_t *inputs, const float *x,
                   const int32_t *targets, char *err, size_t errlen)
{
	if (g->unit_params && !g->bh.params) {
		snprintf(err, errlen, "a model sharded by unit (ZeRO 3) needs its caller's hooks");
		return -1;
	}
	bool last = g->lay->has_head;
	float l = gpt_forward_part(g->m, &g->hooks, slot, inputs, x, last ? targets : NULL);
	if (gpt_error(g->m)) {
		snprintf(err, errlen, "the forward pass failed: the tensor group's all-reduce");
		return -1;
	}
	g->loss_sum += l; /* 0 but on the last stage */
	return 0;
}

static const float *stage_output(const gpu_model *g, int slot)
{
	return gpt_stage_output(g->m, slot);
}

static const float *stage_input_grad(const gpu_model *g)
{
	return gpt_stage_input_grad(g->m);
}

static int backward(gpu_model *g, int slot, float dloss, const float *dy, char *err, size_t errlen)
{
	if ((g->unit_grads && !g->bh.grads) || (g->unit_params && !g->bh.params)) {
		snprintf(err, errlen,
		         "a model sharded by unit (ZeRO 2, 3) needs its caller's hooks");
		return -1;
	}
	gpt_backward_part(g->m, &g->hooks, slot, dloss, dy);
	if (gpt_error(g->m)) {
		snprintf(err, errlen, "the backward pass failed: the tensor group's all-reduce");
		return -1;
	}
	return 0;
}

static int comm_error_of(const gpu_model *g)
{
	return gpt_error(g->m);
}

static void set_hooks(gpu_model *g, const gpt_hooks *hooks)
{
	if (hooks)
		g->bh = *hooks;
	else
		memset(&g->bh, 0, sizeof(g->bh));
}

static void zero_grad(gpu_model *g)
{
	memset(g->arr[GPU_GRADS], 0, array_len(g, GPU_GRADS) * sizeof(float));
	g->loss_sum = 0;
}

static float *grads(gpu_model *g)
{
	return g->unit_grads ? NULL : g->arr[GPU_GRADS];
}

static float *grad_shard(gpu_model *g)
{
	return g->grad_shard;
}

static float *params(gpu_model *g)
{
	return g->arr[GPU_PARAMS];
}

static int params_sync(gpu_model *g, char *err, size_t errlen)
{
	(void)g; /* fp32 only: nothing derives from the parameters */
	(void)err;
	(void)errlen;
	return 0;
}

static double sumsq_of(const float *x, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	return s;
}

static int step_stats(gpu_model *g, double *sumsq, double *loss_sum, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	const float *grad = g->grad_shard ? g->grad_shard : g->arr[GPU_GRADS];
	double s = g->norm ? 0 : sumsq_of(grad, g->grad_shard ? g->shard_size : g->np);
	for (int k = 0; k < g->nnorm; k++) /* piece by piece, as the device sums them */
		s += sumsq_of(grad + g->norm[k].at, g->norm[k].n);
	*sumsq = s;
	*loss_sum = g->loss_sum;
	g->loss_sum = 0;
	return 0;
}

static int adamw(gpu_model *g, const adamw_config *a, float lr, float grad_scale, int t, char *err,
                 size_t errlen)
{
	(void)err;
	(void)errlen;
	for (int k = 0; k < g->npieces; k++) {
		const gpu_shard_piece *pc = &g->pieces[k];
		size_t p = g->unit_params ? pc->at : pc->flat;
		adamw_update(a, g->arr[GPU_PARAMS] + p, g->grad_shard + pc->at,
		             g->arr[GPU_ADAM_M] + pc->at, g->arr[GPU_ADAM_V] + pc->at, pc->n, lr,
		             grad_scale, pc->decay, t);
	}
	for (int i = 0; !g->grad_shard && i < g->ntensors; i++) {
		const gpt_tensor *x = &g->tensors[i];
		adamw_update(a, g->arr[GPU_PARAMS] + x->offset, g->arr[GPU_GRADS] + x->offset,
		             g->arr[GPU_ADAM_M] + x->offset, g->arr[GPU_ADAM_V] + x->offset,
		             x->numel, lr, grad_scale, x->decay, t);
	}
	return 0;
}

static int get(gpu_model *g, gpu_array which, float *host, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	memcpy(host, g->arr[which], array_len(g, which) * sizeof(float));
	return 0;
}

static int set(gpu_model *g, gpu_array which, const float *host, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	memcpy(g->arr[which], host, array_len(g, which) * sizeof(float));
	return 0;
}

/* The staging of host "device" memory: plain copies. */
static void *host_alloc(void *ctx, size_t bytes)
{
	(void)ctx;
	return malloc(bytes);
}

static void host_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static int host_copy(void *ctx, void *to, const void *from, size_t bytes)
{
	(void)ctx;
	memcpy(to, from, bytes);
	return 0;
}

/* The stand-in's "device" vectors: host memory. */
static float *vec_alloc(size_t n)
{
	return calloc(n ? n : 1, sizeof(float));
}

static void vec_free(float *x)
{
	free(x);
}

static void vec_zero(float *x, size_t n)
{
	memset(x, 0, n * sizeof(float));
}

static void vec_add(float *y, const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] += x[i];
}

static const gpu_vectors *vectors(void)
{
	static const gpu_vectors v = {vec_alloc, vec_free, vec_zero, vec_add};
	return &v;
}

static const comm_staging *staging(void)
{
	static const comm_staging host = {
	    .name = "the stand-in's memory",
	    .host_alloc = host_alloc,
	    .host_free = host_free,
	    .to_host = host_copy,
	    .to_caller = host_copy,
	};
	return &host;
}

const gpu_backend *ty_gpu_backend(void);

const gpu_backend *ty_gpu_backend(void)
{
	static const gpu_backend table = {
	    .abi = GPU_BACKEND_ABI,
	    .open_device = open_device,
	    .model_fits = model_fits,
	    .model_new = model_new,
	    .model_free = model_free,
	    .model_bytes = model_bytes,
	    .forward = forward,
	    .stage_output = stage_output,
	    .backward = backward,
	    .stage_input_grad = stage_input_grad,
	    .comm_error = comm_error_of,
	    .set_hooks = set_hooks,
	    .zero_grad = zero_grad,
	    .grads = grads,
	    .grad_shard = grad_shard,
	    .params = params,
	    .params_sync = params_sync,
	    .step_stats = step_stats,
	    .adamw = adamw,
	    .get = get,
	    .set = set,
	    .staging = staging,
	    .vectors = vectors,
	};
	return &table;
}
