/*
 * train_gpu.c - a run's model on a GPU (train_gpu.h).
 */
#include "train_gpu.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_staged.h"
#include "failure.h"

/* A comm failure as a train_exit, its message in err. */
static int comm_exit(comm *c, int rc, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", comm_error(c));
	return dp_train_exit(rc);
}

/*
 * Whether every rank of world has a GPU of its own: no two ranks of one
 * node (a hash of its host name) on the same device. Every rank gets the
 * same answer, from an all-reduce of each rank's pair. Two nodes whose
 * names hash alike can only make it say no, and the staged comm is right
 * either way. RET 1, 0, or a negative COMM_ERR_*.
 */
static int own_devices(comm *world, int device)
{
	int P = comm_size(world), r = comm_rank(world);
	float *pairs = calloc(2 * (size_t)P, sizeof(float));
	if (!pairs)
		return COMM_ERR_NOMEM;
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const char *p = host; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	pairs[2 * r] = (float)(h & 0xfffffu); /* 20 bits: exact in a float */
	pairs[2 * r + 1] = (float)device;
	int rc = comm_allreduce_sum(world, pairs, 2 * (size_t)P), own = 1;
	for (int a = 0; rc == 0 && a < P; a++)
		for (int b = a + 1; b < P; b++)
			if (pairs[2 * a] == pairs[2 * b] && pairs[2 * a + 1] == pairs[2 * b + 1])
				own = 0;
	free(pairs);
	return rc ? rc : own;
}

/*
 * A comm for device buffers over the ranks of world that share color
 * (ordered by key): NCCL where every rank has a GPU of its own (own) and
 * the backend has it, made over a host comm of those ranks that *boot
 * keeps (NCCL's must outlive it), else through host memory
 * (comm_staged.h) over MPI. Collective over world. RET a train_exit.
 */
static int device_comm(train_gpu *g, comm *world, int color, int key, int device, int own,
                       comm **out, comm **boot, char *err, size_t errlen)
{
	comm *inner = NULL;
	int rc = comm_split(world, color, key, &inner);
	if (rc)
		return comm_exit(world, rc, err, errlen);
	if (own && g->be->nccl_new) {
		*boot = inner;
		*out = g->be->nccl_new(inner, device, err, errlen);
		return *out ? TRAIN_OK : TRAIN_COMM;
	}
	*out = comm_staged_new(inner, g->be->staging(), err, errlen);
	return *out ? TRAIN_OK : TRAIN_OOM;
}

/*
 * The groups of the grid (mp_group_split) on the device: the
 * data-parallel one (gradients), the tensor one (inside the model), the
 * pipeline one (between stages) and the tie; and the data-parallel one on
 * the host (the upload's sums). Every rank makes every split of a width
 * above 1, as the CPU runtime does. Collective over world. RET a train_exit.
 */
static int device_groups(train_gpu *g, comm *world, int device, char *err, size_t errlen)
{
	comm **dev[MP_GROUPS] = {
	    [MP_TP] = &g->tp_dev, [MP_DP] = &g->dev, [MP_PP] = &g->pp_dev, [MP_TIE] = &g->tie_dev};
	int own = own_devices(world, device), rc = TRAIN_OK;
	if (own < 0)
		return comm_exit(world, own, err, errlen);
	for (int k = 0; rc == TRAIN_OK && k < MP_GROUPS; k++) {
		mp_split sp = mp_group_split(&g->grid, (mp_group)k);
		if (sp.width == 1)
			continue;
		rc = device_comm(g, world, sp.color, sp.key, device, own, dev[k], &g->boot[k], err,
		                 errlen);
		if (rc == TRAIN_OK && !sp.member) { /* a middle stage: no tie */
			comm_free(*dev[k]);
			comm_free(g->boot[k]);
			*dev[k] = g->boot[k] = NULL;
		}
		if (rc == TRAIN_OK && k == MP_DP) {
			int src = comm_split(world, sp.color, sp.key, &g->host_dp);
			if (src)
				rc = comm_exit(world, src, err, errlen);
		}
	}
	return rc;
}

/*
 * The units of this rank's layout over its P data-parallel peers: each
 * one's place in the local flat arrays and its padded block
 * (dp_partition's); under ZeRO 1 to 3 where the block lands in the shard
 * and the owned pieces, one tensor each, in flat order (the CPU runtime's
 * update segments); and the norm's pieces, the owned range of the tensors
 * its tensor rank owns (mp.h), where the gradient keeps them (the shard,
 * or the flat array). RET 0, or -1 out of memory.
 */
static int units_cut(train_gpu *g, int P, int rank, int stage)
{
	const mp_layout *lay = g->lay;
	int U = lay->nunits;
	bool sharded = P > 1 && stage >= 1;
	gpu_shard_piece *pc = calloc((size_t)lay->ntensors + 1, sizeof(*pc));
	gpu_shard_piece *norm = calloc((size_t)lay->ntensors + 1, sizeof(*norm));
	g->unit_off = calloc((size_t)U, sizeof(size_t));
	g->unit_numel = calloc((size_t)U, sizeof(size_t));
	g->unit_block = calloc((size_t)U, sizeof(size_t));
	g->unit_at = calloc((size_t)U, sizeof(size_t));
	g->unit_req = calloc((size_t)U, sizeof(comm_request));
	if (!pc || !norm || !g->unit_off || !g->unit_numel || !g->unit_block || !g->unit_at ||
	    !g->unit_req) {
		free(pc);
		free(norm);
		return -1;
	}
	int n = 0, nn = 0;
	size_t at = 0, reach = lay->nparams;
	for (int u = 0; u < U; u++) {
		const mp_unit *un = &lay->units[u];
		size_t off = un->offset, numel = un->numel;
		dp_range own = dp_partition(numel, P, rank);
		g->unit_off[u] = off;
		g->unit_numel[u] = numel;
		g->unit_block[u] = (numel + (size_t)P - 1) / (size_t)P;
		g->unit_at[u] = at;
		if (off + (size_t)P * g->unit_block[u] > reach)
			reach = off + (size_t)P * g->unit_block[u];
		for (int k = un->first_tensor; k < un->first_tensor + un->ntensors; k++) {
			const mp_tensor *t = &lay->tensors[k];
			size_t tb = t->offset - off, te = tb + t->numel;
			size_t b = tb > own.begin ? tb : own.begin, e = te < own.end ? te : own.end;
			if (b >= e)
				continue;
			gpu_shard_piece piece = {off + b, sharded ? at + (b - own.begin) : off + b,
			                         e - b, t->t.decay};
			if (sharded)
				pc[n++] = piece;
			if (t->owner)
				norm[nn++] = piece;
		}
		at += g->unit_block[u];
	}
	g->nunits = U;
	g->sharded = sharded;
	g->zero = P > 1 ? stage : 0;
	g->shard = (gpu_shard){.size = at,
	                       .reach = reach,
	                       .npieces = n,
	                       .pieces = pc,
	                       .unit_grads = sharded && stage >= 2,
	                       .unit_params = sharded && stage == 3};
	g->part.shard = sharded ? &g->shard : NULL;
	g->part.nnorm = nn;
	g->part.norm = norm;
	return 0;
}

/* ZeRO 2 and 3: the buffer of unit u, of the three: unit 0's, and two the others take in turn. */
static int buf_of(int u)
{
	return u == 0 ? 0 : 1 + (u & 1);
}

/* The layout's index of unit u (the hooks name units by their ids; the tables are the layout's). */
static int at_of(const train_gpu *g, int u)
{
	return g->lay->unit_index[u];
}

/*
 * The device buffers of ZeRO 2 (gradients) and 3 (gradients and
 * parameters), each the padded size (P blocks) of the largest unit it
 * takes. RET 0, or -1 out of device memory.
 */
static int unit_buffers(train_gpu *g, int P)
{
	for (int i = 0; i < g->nunits; i++) {
		size_t n = (size_t)P * g->unit_block[i];
		int b = buf_of(g->lay->units[i].id);
		if (n > g->buf_len[b])
			g->buf_len[b] = n;
	}
	size_t layers = g->buf_len[1] > g->buf_len[2] ? g->buf_len[1] : g->buf_len[2];
	g->buf_len[1] = g->buf_len[2] = layers;
	const gpu_vectors *v = g->be->vectors();
	for (int b = 0; b < 3; b++) {
		g->gbuf_unit[b] = g->pbuf_unit[b] = -1;
		if (!(g->gbuf[b] = v->alloc(g->buf_len[b])))
			return -1;
		if (g->zero == 3 && !(g->pbuf[b] = v->alloc(g->buf_len[b])))
			return -1;
	}
	return 0;
}

int train_gpu_open(train_gpu *g, const train_config *tc, comm *world, const mp_grid *grid,
                   const adamw_config *adam, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	const layout *l = &tc->run;
	char why[256];
	layout_device dev = tc->precision == GPT_FP32 ? LAYOUT_GPU_FP32 : LAYOUT_GPU_16BIT;
	if (!layout_on_device(l, dev, why, sizeof(why))) {
		snprintf(err, errlen, "--device cuda trains %s", why);
		return TRAIN_INVALID_CONFIG;
	}
	if (!(g->be = gpu_backend_load(err, errlen)) ||
	    g->be->model_fits(&tc->model, l->tensor_parallel, l->pipeline_parallel, tc->precision,
	                      err, errlen) < 0)
		return TRAIN_INVALID_CONFIG;
	g->grid = *grid;
	if (!(g->lay = mp_layout_new(&tc->model, grid->tp, grid->tp_rank, grid->pp, grid->pp_rank,
	                             err, errlen)))
		return strstr(err, "out of memory") ? TRAIN_OOM : TRAIN_INVALID_CONFIG;
	int device = g->be->open_device(g->device, sizeof(g->device), err, errlen);
	if (device < 0) {
		train_gpu_close(g);
		return TRAIN_INTERNAL;
	}
	size_t np = g->lay->nparams;
	for (int k = 0; k < 3; k++)
		g->stage[k] = malloc(np * sizeof(float));
	if (!g->stage[0] || !g->stage[1] || !g->stage[2]) {
		train_gpu_close(g);
		snprintf(err, errlen, "out of memory for the GPU path's host buffers");
		return TRAIN_OOM;
	}
	g->tc = tc;
	g->adam = *adam;
	g->host = world;
	g->on = true;
	int rc = grid->world > 1 ? device_groups(g, world, device, err, errlen) : TRAIN_OK;
	if (rc == TRAIN_OK && grid->world > 1 &&
	    units_cut(g, grid->dp, grid->dp_rank, l->zero_stage) < 0) {
		snprintf(err, errlen, "out of memory for the GPU path's unit tables");
		rc = TRAIN_OOM;
	}
	if (rc == TRAIN_OK && g->zero >= 2 && unit_buffers(g, grid->dp) < 0) {
		snprintf(err, errlen, "out of device memory for ZeRO %d's unit buffers", g->zero);
		rc = TRAIN_OOM;
	}
	/* the model's part: the layout's, its tensor group, the stage's slots */
	g->part.slice = mp_layout_part(g->lay);
	g->part.slice.tp_comm = g->tp_dev;
	g->part.slice.slots = pipe_slots(grid->pp, grid->pp_rank, l->grad_accum);
	if (rc != TRAIN_OK)
		train_gpu_close(g);
	return rc;
}

/* A device failure: out of device memory is TRAIN_OOM, the rest TRAIN_INTERNAL. */
static int device_status(const char *err)
{
	return strstr(err, "out of memory") ? TRAIN_OOM : TRAIN_INTERNAL;
}

/*
 * Where unit u's owned range r is in the host stage of array k (0 params,
 * 1 m, 2 v): the flat range, or its shard's (the moments under ZeRO 1-3,
 * the parameters under ZeRO 3), as the device keeps it.
 */
static size_t stage_at(const train_gpu *g, int k, int u, dp_range r)
{
	bool shard = k == 0 ? g->zero == 3 : g->sharded;
	return shard ? g->unit_at[u] : r.begin;
}

static void set_hooks(train_gpu *g);
static int pipe_open(train_gpu *g);

int train_gpu_upload(train_gpu *g, const dp_runtime *dp, char *err, size_t errlen)
{
	/*
	 * Each rank owns a range of every unit (checkpoints write it); the
	 * device holds all the parameters (but under ZeRO 3: its own, in the
	 * shard's layout), and the moments of all (ZeRO 0) or of its own
	 * ranges, in the shard's layout (ZeRO 1-3).
	 */
	size_t np = g->lay->nparams;
	int P = g->grid.dp, rc;
	int gathered = g->zero == 3 ? 0 : g->sharded ? 1 : 3; /* arrays assembled whole */
	for (int k = 0; P > 1 && k < 3; k++)
		memset(g->stage[k], 0, np * sizeof(float));
	for (int u = 0; u < dp_num_units(dp); u++) {
		dp_range r = dp_owned_range(dp, u);
		size_t n = (r.end - r.begin) * sizeof(float);
		memcpy(g->stage[0] + stage_at(g, 0, u, r), dp_owned_params(dp, u), n);
		memcpy(g->stage[1] + stage_at(g, 1, u, r), dp_owned_m(dp, u), n);
		memcpy(g->stage[2] + stage_at(g, 2, u, r), dp_owned_v(dp, u), n);
	}
	/* the ranges are disjoint: their sum over the data-parallel group is the whole */
	for (int k = 0; P > 1 && k < gathered; k++)
		if ((rc = comm_allreduce_sum(g->host_dp, g->stage[k], np)))
			return comm_exit(g->host_dp, rc, err, errlen);
	g->opt_step = dp_opt_step(dp);
	if (!g->model) {
		g->model = g->be->model_new(&g->tc->model, g->tc->run.micro_batch,
		                            g->tc->model.max_seq_len, g->tc->precision, g->stage[0],
		                            &g->part, err, errlen);
		if (!g->model)
			return device_status(err);
		set_hooks(g);
		if (pipe_open(g) < 0) {
			snprintf(err, errlen, "out of device memory for the pipeline's buffers");
			return TRAIN_OOM;
		}
	}
	for (int b = 0; b < 3; b++) /* the parameters change: nothing gathered holds */
		g->pbuf_unit[b] = -1;
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
		if (dp_load_shard(dp, u, g->stage[0] + stage_at(g, 0, u, r),
		                  g->stage[1] + stage_at(g, 1, u, r),
		                  g->stage[2] + stage_at(g, 2, u, r)) < 0) {
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

/* A failure inside a hook, kept for reduce_grads (hooks return none). */
static void latch(train_gpu *g, int rc)
{
	if (rc && !g->reduce_rc)
		g->reduce_rc = rc;
}

/*
 * ZeRO 2: where unit u's gradients of this backward go. A buffer another
 * unit had is taken back once its reduce-scatter is done, and zeroed
 * (padding included) in stream order before the backward writes it.
 */
static float *unit_buffer(void *ctx, int u)
{
	train_gpu *g = ctx;
	int b = buf_of(u);
	if (g->gbuf_unit[b] != u) {
		latch(g, comm_wait(&g->gbuf_req[b]));
		g->be->vectors()->zero(g->gbuf[b],
		                       (size_t)comm_size(g->dev) * g->unit_block[at_of(g, u)]);
		g->gbuf_unit[b] = u;
	}
	return g->gbuf[b];
}

/*
 * ZeRO 3: unit u's parameters, all-gathered from the owners' shards into
 * its buffer unless the buffer holds them already (the model asks for a
 * unit more than once; an update or an upload makes every buffer stale).
 */
static const float *unit_gathered(void *ctx, int u)
{
	train_gpu *g = ctx;
	int b = buf_of(u);
	if (g->pbuf_unit[b] != u) {
		int i = at_of(g, u);
		const float *mine = g->be->params(g->model) + g->unit_at[i];
		int rc = comm_allgather(g->dev, mine, g->pbuf[b], g->unit_block[i]);
		latch(g, rc);
		g->pbuf_unit[b] = rc ? -1 : u;
	}
	return g->pbuf[b];
}

/*
 * The model ended unit u's gradients of a backward: their sum over the
 * data-parallel ranks starts, behind the backward's kernels, while the
 * rest of it runs. ZeRO 0: an all-reduce in place (the same gradient on
 * every rank); ZeRO 1: a reduce-scatter into the owners' shards (the
 * padded block reads into the next unit, whose part is summed into a
 * padding no one reads); both in the step's last backward only. ZeRO 2,
 * in every backward: the unit's buffer reduce-scattered into the shard,
 * the shard's earlier sums first added to this rank's own block, as the
 * CPU runtime does. A failure to start is kept for reduce_grads.
 */
static void unit_reduce(void *ctx, int u)
{
	train_gpu *g = ctx;
	int i = at_of(g, u);
	float *shard = g->sharded ? g->be->grad_shard(g->model) + g->unit_at[i] : NULL;
	size_t block = g->unit_block[i];
	if (g->zero >= 2) {
		int b = buf_of(u);
		if (g->gbuf_unit[b] == u) {
			if (g->backward > 0)
				g->be->vectors()->add(
				    g->gbuf[b] + (size_t)comm_rank(g->dev) * block, shard, block);
			g->gbuf_unit[b] = -1;
			latch(g, comm_ireduce_scatter_sum(g->dev, g->gbuf[b], shard, block,
			                                  &g->gbuf_req[b]));
		}
	} else if (g->backward == g->accum - 1) {
		float *grads = g->be->grads(g->model) + g->unit_off[i];
		latch(g,
		      shard
		          ? comm_ireduce_scatter_sum(g->dev, grads, shard, block, &g->unit_req[i])
		          : comm_iallreduce_sum(g->dev, grads, g->unit_numel[i], &g->unit_req[i]));
	}
	if (i == 0) /* the layout's first unit: the last one a backward ends */
		g->backward++;
}

/* The model's hooks, as the run's ZeRO stage needs them (none on one rank). */
static void set_hooks(train_gpu *g)
{
	gpt_hooks h = {.ctx = g};
	if (g->dev) {
		h.params = g->zero == 3 ? unit_gathered : NULL;
		h.grads = g->zero >= 2 ? unit_buffer : NULL;
		h.grads_done = unit_reduce;
	}
	g->be->set_hooks(g->model, &h);
}

/* The units' reductions complete (those that started). RET a train_exit. */
static int reduce_grads(train_gpu *g, char *err, size_t errlen)
{
	int rc = g->reduce_rc;
	g->reduce_rc = 0;
	for (int u = 0; u < g->nunits; u++)
		latch(g, comm_wait(&g->unit_req[u]));
	for (int b = 0; b < 3; b++)
		latch(g, comm_wait(&g->gbuf_req[b]));
	rc = rc ? rc : g->reduce_rc;
	g->reduce_rc = 0;
	return rc ? comm_exit(g->dev, rc, err, errlen) : TRAIN_OK;
}

/*
 * The step's unscaled gradient norm and the mean loss of the
 * data-parallel replicas, in one all-reduce over the world: with several
 * ranks each one's norm is of its pieces (units_cut), summed as the CPU
 * runtime sums it; the loss lives on the last stage, where a tensor
 * group's ranks have the same one and its rank 0 counts it, as on the
 * CPU. RET a train_exit.
 */
static int norm_and_loss(train_gpu *g, int accum, float loss_scale, float *norm, float *loss,
                         char *err, size_t errlen)
{
	int rc;
	bool several = g->grid.world > 1;
	double sq = 0.0, loss_sum = 0.0;
	if (g->be->step_stats(g->model, &sq, &loss_sum, err, errlen) < 0)
		return device_status(err);
	double unscale = 1.0 / loss_scale;
	bool counts = g->grid.pp_rank == g->grid.pp - 1 && g->grid.tp_rank == 0;
	float pair[2] = {several ? (float)(sq * unscale * unscale) : 0.0f,
	                 counts ? (float)(loss_sum / accum) : 0.0f};
	if (several && (rc = comm_allreduce_sum(g->host, pair, 2)))
		return comm_exit(g->host, rc, err, errlen);
	*norm = several ? sqrtf(pair[0]) : (float)(sqrt(sq) / loss_scale);
	*loss = pair[1] / (float)g->grid.dp;
	return TRAIN_OK;
}

/*
 * ZeRO 1 and 2, after the owners' update: the parameters all-gathered in place.
 * A unit's padded blocks reach into the next one, so the units go last
 * first: what a block carries past its unit's end is the next unit's
 * gathered values. Then the 16-bit weights follow. RET a train_exit.
 */
static int gather_params(train_gpu *g, char *err, size_t errlen)
{
	if (g->zero == 3) { /* gathered as the model asks: what the buffers hold is stale */
		for (int b = 0; b < 3; b++)
			g->pbuf_unit[b] = -1;
		return TRAIN_OK;
	}
	float *params = g->be->params(g->model);
	int rank = comm_rank(g->dev), rc;
	for (int u = g->nunits - 1; u >= 0; u--) {
		float *unit = params + g->unit_off[u];
		if ((rc = comm_allgather(g->dev, unit + (size_t)rank * g->unit_block[u], unit,
		                         g->unit_block[u])))
			return comm_exit(g->dev, rc, err, errlen);
	}
	return g->be->params_sync(g->model, err, errlen) < 0 ? device_status(err) : TRAIN_OK;
}

/*
 * The device model as the pipeline's (pipeline.h): a failed micro-batch
 * leaves its message in g->fail; the losses stay on the device (step_stats).
 */
static int dev_forward(void *ctx, int slot, const int32_t *inputs, const float *x,
                       const int32_t *targets, float *loss)
{
	train_gpu *g = ctx;
	*loss = 0;
	return g->be->forward(g->model, slot, inputs, x, targets, g->fail, sizeof(g->fail)) < 0
	           ? PIPE_ERR_MODEL
	           : 0;
}

static const float *dev_output(void *ctx, int slot)
{
	train_gpu *g = ctx;
	return g->be->stage_output(g->model, slot);
}

static int dev_backward(void *ctx, int slot, float dloss, const float *dy)
{
	train_gpu *g = ctx;
	return g->be->backward(g->model, slot, dloss, dy, g->fail, sizeof(g->fail)) < 0
	           ? PIPE_ERR_MODEL
	           : 0;
}

static const float *dev_input_grad(void *ctx)
{
	train_gpu *g = ctx;
	return g->be->stage_input_grad(g->model);
}

/* The step's micro-batches, a failure kept (train_gpu_step's next). */
static int dev_next(void *ctx, int32_t *inputs, int32_t *targets)
{
	train_gpu *g = ctx;
	int rc = g->next(g->next_ctx, inputs, targets);
	if (rc < 0)
		g->data_rc = rc;
	return rc;
}

/* The schedule over the model's slots, its receive buffers device vectors. RET 0 or -1. */
static int pipe_open(train_gpu *g)
{
	const gpu_vectors *v = g->be->vectors();
	g->pipe_ops = (pipe_model_ops){dev_forward,    dev_output, dev_backward,
	                               dev_input_grad, v->alloc,   v->free};
	g->pipe = (pipeline){.ops = &g->pipe_ops,
	                     .model_ctx = g,
	                     .pp = g->pp_dev,
	                     .stage = g->grid.pp_rank,
	                     .stages = g->grid.pp,
	                     .slots = g->part.slice.slots,
	                     .B = g->tc->run.micro_batch,
	                     .T = g->tc->model.max_seq_len,
	                     .C = g->tc->model.channels,
	                     .next_batch = dev_next,
	                     .ctx = g};
	return pipe_init(&g->pipe);
}

/*
 * Pipeline: the first and last stage's copies of the tied embedding (unit
 * 0) take the sum of both gradients, after the data-parallel reduction, so
 * both take the same update (the CPU runtime's tie). RET a train_exit.
 */
static int tie_reduce(train_gpu *g, char *err, size_t errlen)
{
	if (!g->tie_dev)
		return TRAIN_OK;
	int i = at_of(g, 0), rc;
	float *grad = g->sharded ? g->be->grad_shard(g->model) + g->unit_at[i]
	                         : g->be->grads(g->model) + g->unit_off[i];
	size_t n = g->sharded ? g->unit_block[i] : g->unit_numel[i];
	if ((rc = comm_allreduce_sum(g->tie_dev, grad, n)))
		return comm_exit(g->tie_dev, rc, err, errlen);
	return TRAIN_OK;
}

/* A micro-batch's failure as a train_exit: the data's, the model's or a transfer's. */
static int pipe_failure(train_gpu *g, int rc, int *data_rc, char *err, size_t errlen)
{
	char ignored[256];
	reduce_grads(g, ignored, sizeof(ignored)); /* nothing may stay in flight */
	if (g->data_rc) {
		*data_rc = g->data_rc;
		return TRAIN_DATA;
	}
	if (rc != PIPE_ERR_MODEL)
		return comm_exit(g->pp_dev, rc, err, errlen);
	int tp_rc = g->be->comm_error(g->model);
	snprintf(err, errlen, "%s", g->fail);
	return tp_rc ? comm_exit(g->tp_dev, tp_rc, err, errlen) : device_status(err);
}

int train_gpu_step(train_gpu *g, int accum, train_gpu_batch_fn next, void *ctx, float lr,
                   float clip, float loss_scale, float *loss, dp_step_info *info, int *data_rc,
                   char *err, size_t errlen)
{
	const gpu_backend *be = g->be;
	int P = g->grid.dp, rc;
	comm *groups[] = {g->dev, g->tp_dev, g->pp_dev, g->tie_dev};
	for (size_t k = 0; k < sizeof(groups) / sizeof(groups[0]); k++)
		if (groups[k]) /* their clocks count this step's transfers */
			comm_seconds_reset(groups[k]);
	be->zero_grad(g->model);
	/*
	 * The device runs ahead: the host reads the next micro-batch meanwhile.
	 * The backward starts each unit's reduction as it ends the unit (the
	 * model's hooks, set_hooks).
	 */
	g->accum = accum;
	g->backward = 0;
	g->next = next;
	g->next_ctx = ctx;
	g->data_rc = 0;
	double ignored_loss;
	if ((rc = pipe_step(&g->pipe, accum, loss_scale / (float)(accum * P), &ignored_loss)))
		return pipe_failure(g, rc, data_rc, err, errlen);
	memset(info, 0, sizeof(*info));
	if ((rc = reduce_grads(g, err, errlen)) != TRAIN_OK ||
	    (rc = tie_reduce(g, err, errlen)) != TRAIN_OK ||
	    (rc = norm_and_loss(g, accum, loss_scale, &info->grad_norm, loss, err, errlen)) !=
	        TRAIN_OK)
		return rc;
	info->finite = isfinite(info->grad_norm) && isfinite(*loss);
	info->clip_scale = clip_scale(info->grad_norm, clip, g->adam.clip_eps);
	if (!info->finite)
		return TRAIN_OK;
	if (be->adamw(g->model, &g->adam, lr, info->clip_scale / loss_scale, g->opt_step + 1, err,
	              errlen) < 0)
		return device_status(err);
	if (g->sharded && (rc = gather_params(g, err, errlen)) != TRAIN_OK)
		return rc;
	g->opt_step++;
	info->updated = true;
	return TRAIN_OK;
}

/* A comm's seconds, or 0 without it. */
static double seconds_of(const comm *c)
{
	return c ? comm_seconds(c) : 0.0;
}

void train_gpu_comm_seconds(const train_gpu *g, double *tp, double *pp, double *dp)
{
	*tp = seconds_of(g->tp_dev);
	*pp = seconds_of(g->pp_dev);
	*dp = seconds_of(g->dev) + seconds_of(g->tie_dev);
}

size_t train_gpu_bytes(const train_gpu *g)
{
	size_t n = g->model ? g->be->model_bytes(g->model) : 0;
	for (int b = 0; b < 3; b++)
		n += ((g->gbuf[b] ? 1 : 0) + (g->pbuf[b] ? 1 : 0)) * g->buf_len[b] * sizeof(float);
	return n;
}

void train_gpu_close(train_gpu *g)
{
	pipe_release(&g->pipe);
	if (g->model)
		g->be->model_free(g->model);
	comm_free(g->dev);
	comm_free(g->tp_dev);
	comm_free(g->pp_dev);
	comm_free(g->tie_dev);
	for (int k = 0; k < MP_GROUPS; k++)
		comm_free(g->boot[k]);
	comm_free(g->host_dp);
	mp_layout_free(g->lay);
	for (int k = 0; k < 3; k++)
		free(g->stage[k]);
	for (int b = 0; b < 3 && g->be; b++) {
		g->be->vectors()->free(g->gbuf[b]);
		g->be->vectors()->free(g->pbuf[b]);
	}
	free(g->unit_off);
	free(g->unit_numel);
	free(g->unit_req);
	free(g->unit_block);
	free(g->unit_at);
	free((void *)g->shard.pieces);
	free((void *)g->part.norm);
	memset(g, 0, sizeof(*g));
}
