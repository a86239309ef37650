/*
 * zero.c - the data-parallel runtime with ZeRO stages 0-3 (zero.h).
 *
 * Coordinates. The runtime holds the units of a layout (mp.h); u is an
 * index into them (0 .. nunits-1) and id[u] its global unit id, which is
 * what the hooks name. Unit u has numel[u] elements at flat_off[u] in the
 * local flat vector. Padded to world * block[u], it sits at pad_off[u] in
 * the full padded arrays; rank r's block of it sits at shard_off[u] in the
 * shard arrays. "local" indexes a unit's elements, 0 .. numel[u].
 *
 * Segments are pieces of one tensor inside a region of its unit, each with
 * the tensor's weight-decay and owner flags. The update covers the region
 * the rank updates (every unit's elements in stage 0, its own blocks
 * otherwise); the norm covers the rank's own blocks in every stage, so
 * over the dp group each element is looked at once. Only owned tensors
 * add to the squared norm; every tensor is checked for finiteness.
 */
#include "zero.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "log.h"

#define DP_MAGIC 0x7a65726fU /* "zero" */
#define DP_ALIGN 16          /* floats: every array starts on 64 bytes */

typedef struct dp_segment {
	int unit;     /* local index */
	size_t begin; /* local */
	size_t len;
	bool decay, owner;
} dp_segment;

/* Stage 2/3 gradient scratch: global unit 0's own, and two alternating for the rest. */
enum { DP_BUF_UNIT0 = 0, DP_BUF_LAYER_A, DP_BUF_LAYER_B, DP_BUF_COUNT };

struct dp_runtime {
	uint32_t magic;
	gpt_config cfg;
	comm *c;    /* data parallel */
	comm *norm; /* the norm's group */
	comm *tie;  /* unit 0's tie, or NULL */
	adamw_config opt;
	int stage, rank, world, nunits;
	size_t nparams;
	int nglobal; /* L + 2 */
	int u0;      /* index of global unit 0, or -1 */

	/* layout, per unit (one allocation each: ids, table) */
	int *ids;   /* [nunits + nglobal] */
	int *id;    /* [nunits]: global id of unit u */
	int *index; /* [nglobal]: index of a global unit, or -1 */
	size_t *table;
	size_t *numel, *flat_off, *block, *pad_off, *shard_off;
	size_t padded_total, shard_total, max_rest_padded;

	/* float storage, carved from one arena */
	float *arena;
	float *params;     /* full padded (0-2) or shard (3) */
	float *grads;      /* full padded accumulators (0, 1) */
	float *grad_shard; /* owned gradient shard (1-3) */
	float *m, *v;      /* full padded (0) or shard (1-3) */
	float *pbuf[2];    /* stage 3: [0] global unit 0, [1] the rest */
	int pbuf_unit[2];  /* unit (index) gathered in pbuf[i], -1 none */
	float *gbuf[DP_BUF_COUNT];
	int gbuf_unit[DP_BUF_COUNT]; /* unit open in the scratch, -1 none */
	comm_request gbuf_req[DP_BUF_COUNT];

	/* stages 0, 1: a reduction per unit; all stages: the final gathers */
	comm_request *unit_req;
	bool *started;

	dp_segment *seg; /* the update's */
	int nseg;
	dp_segment *norm_seg; /* the norm's: seg itself in stages 1-3 */
	int nnorm;

	int micro_steps; /* of the current step */
	int backward;    /* backward passes completed in the current step (units[0]'s grads_done) */
	int opt_step;
	int err; /* latched */
	dp_mem_info mem;
};

#define DP_CHECK(dp) assert((dp) && (dp)->magic == DP_MAGIC)

static void dp_latch(dp_runtime *dp, int rc)
{
	if (rc && !dp->err)
		dp->err = rc;
}

static void dp_contract(dp_runtime *dp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dp_contract(dp_runtime *dp, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!dp->err)
		log_event(LOG_ERROR, msg,
		          json_pack("{s:i, s:i, s:s}", "rank", dp->rank, "zero_stage", dp->stage,
		                    "error", "hook contract violated"));
	dp_latch(dp, DP_ERR_CONTRACT);
}

dp_range dp_partition(size_t numel, int dp_size, int dp_rank)
{
	dp_range r = {0, 0};
	if (dp_size < 1 || dp_rank < 0 || dp_rank >= dp_size)
		return r;
	size_t block = numel / (size_t)dp_size + (numel % (size_t)dp_size != 0);
	size_t b = (size_t)dp_rank * block, e = b + block;
	r.begin = b < numel ? b : numel;
	r.end = e < numel ? e : numel;
	return r;
}

static size_t dp_padded(const dp_runtime *dp, int u)
{
	return dp->block[u] * (size_t)dp->world;
}

/* First local element this rank owns of unit u, and one past its last. */
static size_t dp_own_begin(const dp_runtime *dp, int u)
{
	return dp_partition(dp->numel[u], dp->world, dp->rank).begin;
}

static size_t dp_own_end(const dp_runtime *dp, int u)
{
	return dp_partition(dp->numel[u], dp->world, dp->rank).end;
}

/* Index of local element i of unit u (inside the update region) in params, in m/v, in grads. */
static size_t dp_param_index(const dp_runtime *dp, int u, size_t i)
{
	if (dp->stage < 3)
		return dp->pad_off[u] + i;
	return dp->shard_off[u] + (i - (size_t)dp->rank * dp->block[u]);
}

static size_t dp_state_index(const dp_runtime *dp, int u, size_t i)
{
	if (dp->stage == 0)
		return dp->pad_off[u] + i;
	return dp->shard_off[u] + (i - (size_t)dp->rank * dp->block[u]);
}

static float *dp_grad_at(const dp_runtime *dp, int u, size_t i)
{
	if (dp->stage == 0)
		return dp->grads + dp->pad_off[u] + i;
	return dp->grad_shard + dp->shard_off[u] + (i - (size_t)dp->rank * dp->block[u]);
}

/* RET: the index of global unit id, or -1 (a contract violation, latched). */
static int dp_unit_of(dp_runtime *dp, int id, const char *hook)
{
	DP_CHECK(dp);
	if (id >= 0 && id < dp->nglobal && dp->index[id] >= 0)
		return dp->index[id];
	dp_contract(dp, "%s hook called for unit %d, which is not one of this rank's %d units",
	            hook, id, dp->nunits);
	return -1;
}

/* Stages 2, 3: the scratch of unit u (by global id: consecutive layers alternate). */
static int dp_scratch_of(const dp_runtime *dp, int u)
{
	return dp->id[u] == 0 ? DP_BUF_UNIT0 : DP_BUF_LAYER_A + (dp->id[u] & 1);
}

/* Stage 3: the gather buffer of unit u. */
static int dp_pbuf_of(const dp_runtime *dp, int u)
{
	return dp->id[u] == 0 ? 0 : 1;
}

/* ---- creation ---- */

static int dp_layout(dp_runtime *dp, const mp_layout *lay)
{
	const int n = dp->nunits, ng = dp->nglobal;
	dp->table = calloc((size_t)n * 5, sizeof(size_t));
	dp->ids = calloc((size_t)(n + ng), sizeof(int));
	if (!dp->table || !dp->ids)
		return DP_ERR_NOMEM;
	dp->mem.bookkeeping += (size_t)n * 5 * sizeof(size_t) + (size_t)(n + ng) * sizeof(int);
	dp->id = dp->ids;
	dp->index = dp->ids + n;
	dp->numel = dp->table;
	dp->flat_off = dp->table + n;
	dp->block = dp->table + 2 * n;
	dp->pad_off = dp->table + 3 * n;
	dp->shard_off = dp->table + 4 * n;
	dp->u0 = -1;
	for (int i = 0; i < ng; i++)
		dp->index[i] = -1;
	for (int u = 0; u < n; u++) {
		const mp_unit *mu = &lay->units[u];
		if (mu->id < 0 || mu->id >= ng || dp->index[mu->id] >= 0 ||
		    (u > 0 && mu->id <= lay->units[u - 1].id) ||
		    mu->offset + mu->numel > dp->nparams)
			return DP_ERR_ARG;
		dp->id[u] = mu->id;
		dp->index[mu->id] = u;
		if (mu->id == 0)
			dp->u0 = u;
		dp->numel[u] = mu->numel;
		dp->flat_off[u] = mu->offset;
		dp->block[u] = dp_partition(mu->numel, dp->world, 0).end;
		dp->pad_off[u] = dp->padded_total;
		dp->shard_off[u] = dp->shard_total;
		dp->padded_total += dp_padded(dp, u);
		dp->shard_total += dp->block[u];
		if (mu->id != 0 && dp_padded(dp, u) > dp->max_rest_padded)
			dp->max_rest_padded = dp_padded(dp, u);
	}
	return 0;
}

/* Reserve n floats of the arena for *out, counted in *bytes; cursor in floats. */
static void dp_reserve(size_t *cursor, size_t n, size_t *bytes, size_t *slot)
{
	*slot = *cursor;
	*cursor += (n + DP_ALIGN - 1) / DP_ALIGN * DP_ALIGN;
	*bytes += n * sizeof(float);
}

static int dp_storage(dp_runtime *dp)
{
	const size_t full = dp->padded_total, shard = dp->shard_total;
	const size_t u0 = dp->u0 >= 0 ? dp_padded(dp, dp->u0) : 0, rest = dp->max_rest_padded;
	size_t cur = 0, at_params, at_grads = 0, at_gshard = 0, at_m, at_v, at_p0 = 0, at_p1 = 0;
	size_t at_g[DP_BUF_COUNT] = {0};
	dp_mem_info *mem = &dp->mem;

	dp_reserve(&cur, dp->stage < 3 ? full : shard, &mem->params, &at_params);
	if (dp->stage < 2)
		dp_reserve(&cur, full, &mem->grads, &at_grads);
	if (dp->stage >= 1)
		dp_reserve(&cur, shard, &mem->grad_shard, &at_gshard);
	dp_reserve(&cur, dp->stage == 0 ? full : shard, &mem->optimizer, &at_m);
	dp_reserve(&cur, dp->stage == 0 ? full : shard, &mem->optimizer, &at_v);
	if (dp->stage == 3) {
		dp_reserve(&cur, u0, &mem->param_gather, &at_p0);
		dp_reserve(&cur, rest, &mem->param_gather, &at_p1);
	}
	if (dp->stage >= 2) {
		dp_reserve(&cur, u0, &mem->grad_scratch, &at_g[DP_BUF_UNIT0]);
		dp_reserve(&cur, rest, &mem->grad_scratch, &at_g[DP_BUF_LAYER_A]);
		dp_reserve(&cur, rest, &mem->grad_scratch, &at_g[DP_BUF_LAYER_B]);
	}
	if (cur > SIZE_MAX / sizeof(float))
		return DP_ERR_NOMEM;
	size_t bytes = cur * sizeof(float);
	if (bytes == 0)
		bytes = DP_ALIGN * sizeof(float);
	dp->arena = aligned_alloc(DP_ALIGN * sizeof(float), bytes);
	if (!dp->arena)
		return DP_ERR_NOMEM;
	memset(dp->arena, 0, bytes);

	dp->params = dp->arena + at_params;
	dp->grads = dp->stage < 2 ? dp->arena + at_grads : NULL;
	dp->grad_shard = dp->stage >= 1 ? dp->arena + at_gshard : NULL;
	dp->m = dp->arena + at_m;
	dp->v = dp->arena + at_v;
	for (int i = 0; i < 2; i++) {
		dp->pbuf[i] = dp->stage == 3 ? dp->arena + (i ? at_p1 : at_p0) : NULL;
		dp->pbuf_unit[i] = -1;
	}
	for (int b = 0; b < DP_BUF_COUNT; b++) {
		dp->gbuf[b] = dp->stage >= 2 ? dp->arena + at_g[b] : NULL;
		dp->gbuf_unit[b] = -1;
	}
	if (dp->u0 < 0)
		dp->pbuf[0] = dp->gbuf[DP_BUF_UNIT0] = NULL; /* no unit 0: no buffer */
	return 0;
}

/*
 * Write the segments of every tensor of lay inside each unit's region:
 * [0, numel) when whole, else this rank's own block. RET the count, or -1
 * for a tensor outside its unit.
 */
static int dp_cut(const dp_runtime *dp, const mp_layout *lay, bool whole, dp_segment *out)
{
	int n = 0;
	for (int u = 0; u < dp->nunits; u++) {
		const mp_unit *mu = &lay->units[u];
		size_t rb = whole ? 0 : dp_own_begin(dp, u);
		size_t re = whole ? dp->numel[u] : dp_own_end(dp, u);
		for (int k = mu->first_tensor; k < mu->first_tensor + mu->ntensors; k++) {
			if (k < 0 || k >= lay->ntensors || lay->tensors[k].offset < mu->offset)
				return -1;
			const mp_tensor *t = &lay->tensors[k];
			size_t tb = t->offset - mu->offset, te = tb + t->numel;
			size_t b = tb > rb ? tb : rb, e = te < re ? te : re;
			if (te > mu->numel)
				return -1;
			if (b < e)
				out[n++] = (dp_segment){u, b, e - b, t->t.decay, t->owner};
		}
	}
	return n;
}

static int dp_segments(dp_runtime *dp, const mp_layout *lay)
{
	size_t count = (size_t)lay->ntensors * (dp->stage == 0 ? 2 : 1) + 1;
	dp->seg = calloc(count, sizeof(*dp->seg));
	if (!dp->seg)
		return DP_ERR_NOMEM;
	dp->mem.bookkeeping += count * sizeof(*dp->seg);
	if ((dp->nseg = dp_cut(dp, lay, dp->stage == 0, dp->seg)) < 0)
		return DP_ERR_ARG;
	dp->norm_seg = dp->stage == 0 ? dp->seg + dp->nseg : dp->seg;
	dp->nnorm = dp->stage == 0 ? dp_cut(dp, lay, false, dp->norm_seg) : dp->nseg;
	return dp->nnorm < 0 ? DP_ERR_ARG : 0;
}

static void dp_fail_msg(char *err, size_t errlen, const char *why)
{
	if (err && errlen)
		snprintf(err, errlen, "could not create the data-parallel runtime: %s", why);
}

dp_runtime *dp_new_part(const mp_layout *lay, const dp_groups *g, int zero_stage,
                        const float *init_params, const adamw_config *opt, char *err, size_t errlen)
{
	dp_runtime *dp = NULL;
	int rc;
	if (zero_stage < 0 || zero_stage > 3) {
		dp_fail_msg(err, errlen, "zero_stage must be 0, 1, 2 or 3");
		return NULL;
	}
	if (!lay || !g || !g->dp || !opt || lay->nunits < 1 || !lay->units || !lay->unit_index ||
	    lay->cfg.num_layers < 0) {
		dp_fail_msg(err, errlen, "missing layout, configuration or communicator");
		return NULL;
	}
	dp = calloc(1, sizeof(*dp));
	if (!dp) {
		rc = DP_ERR_NOMEM;
		goto fail;
	}
	dp->magic = DP_MAGIC;
	dp->cfg = lay->cfg;
	dp->c = g->dp;
	dp->norm = g->norm ? g->norm : g->dp;
	dp->tie = g->tie;
	dp->opt = *opt;
	dp->stage = zero_stage;
	dp->rank = comm_rank(g->dp);
	dp->world = comm_size(g->dp);
	dp->nunits = lay->nunits;
	dp->nglobal = gpt_num_units(&lay->cfg);
	dp->nparams = lay->nparams;
	dp->micro_steps = 1;
	dp->mem.bookkeeping = sizeof(*dp);

	if ((rc = dp_layout(dp, lay)) || (rc = dp_storage(dp)) || (rc = dp_segments(dp, lay)))
		goto fail;
	dp->unit_req = calloc((size_t)dp->nunits, sizeof(*dp->unit_req));
	dp->started = calloc((size_t)dp->nunits, sizeof(*dp->started));
	if (!dp->unit_req || !dp->started) {
		rc = DP_ERR_NOMEM;
		goto fail;
	}
	dp->mem.bookkeeping += (size_t)dp->nunits * (sizeof(*dp->unit_req) + sizeof(*dp->started));
	dp->mem.total = dp->mem.params + dp->mem.param_gather + dp->mem.grads + dp->mem.grad_shard +
	                dp->mem.grad_scratch + dp->mem.optimizer + dp->mem.bookkeeping;

	if (init_params) {
		for (int u = 0; u < dp->nunits; u++) {
			const float *src = init_params + dp->flat_off[u];
			if (dp->stage < 3) {
				memcpy(dp->params + dp->pad_off[u], src,
				       dp->numel[u] * sizeof(float));
			} else {
				size_t b = dp_own_begin(dp, u), e = dp_own_end(dp, u);
				memcpy(dp->params + dp->shard_off[u], src + b,
				       (e - b) * sizeof(float));
			}
		}
	}
	return dp;

fail:
	dp_fail_msg(err, errlen,
	            rc == DP_ERR_NOMEM ? "out of memory" : "the model layout is invalid");
	dp_free(dp);
	return NULL;
}

dp_runtime *dp_new(const gpt_config *cfg, comm *c, int zero_stage, const float *init_params,
                   const adamw_config *opt, char *err, size_t errlen)
{
	char why[256];
	if (!cfg || !c || !opt || zero_stage < 0 || zero_stage > 3) {
		dp_fail_msg(err, errlen,
		            zero_stage < 0 || zero_stage > 3
		                ? "zero_stage must be 0, 1, 2 or 3"
		                : "missing configuration or communicator");
		return NULL;
	}
	mp_layout *lay = mp_layout_new(cfg, 1, 0, 1, 0, why, sizeof(why));
	if (!lay) {
		dp_fail_msg(err, errlen, why);
		return NULL;
	}
	dp_groups g = {.dp = c, .norm = NULL, .tie = NULL};
	dp_runtime *dp = dp_new_part(lay, &g, zero_stage, init_params, opt, err, errlen);
	mp_layout_free(lay);
	return dp;
}

void dp_free(dp_runtime *dp)
{
	if (!dp)
		return;
	DP_CHECK(dp);
	/* never leave an operation writing into freed memory */
	if (dp->unit_req)
		for (int u = 0; u < dp->nunits; u++)
			comm_wait(&dp->unit_req[u]);
	for (int b = 0; b < DP_BUF_COUNT; b++)
		comm_wait(&dp->gbuf_req[b]);
	free(dp->arena);
	free(dp->table);
	free(dp->ids);
	free(dp->seg);
	free(dp->unit_req);
	free(dp->started);
	dp->magic = 0;
	free(dp);
}

/* ---- hooks ---- */

/* Call comm_test on the oldest operation in flight, so MPI progresses while we compute. */
static void dp_poke(dp_runtime *dp)
{
	int done = 0;
	if (dp->err)
		return;
	if (dp->stage < 2) {
		for (int u = dp->nunits - 1; u >= 0; u--)
			if (dp->unit_req[u].c) {
				dp_latch(dp, comm_test(&dp->unit_req[u], &done));
				return;
			}
		return;
	}
	for (int b = 0; b < DP_BUF_COUNT; b++)
		if (dp->gbuf_req[b].c)
			dp_latch(dp, comm_test(&dp->gbuf_req[b], &done));
}

static const float *dp_hook_params(void *ctx, int id)
{
	dp_runtime *dp = ctx;
	int unit = dp_unit_of(dp, id, "params");
	if (unit < 0)
		return NULL;
	if (dp->stage < 3)
		return dp->params + dp->pad_off[unit];
	int i = dp_pbuf_of(dp, unit);
	if (dp->pbuf_unit[i] != unit) {
		if (!dp->err)
			dp_latch(dp, comm_allgather(dp->c, dp->params + dp->shard_off[unit],
			                            dp->pbuf[i], dp->block[unit]));
		dp->pbuf_unit[i] = unit;
	}
	return dp->pbuf[i];
}

static float *dp_hook_grads(void *ctx, int id)
{
	dp_runtime *dp = ctx;
	int unit = dp_unit_of(dp, id, "grads");
	if (unit < 0)
		return NULL;
	if (dp->stage < 2) {
		if (dp->started[unit])
			dp_contract(
			    dp,
			    "unit %d took gradients after its reduction started (more than %d "
			    "backward passes in one step?)",
			    id, dp->micro_steps);
		return dp->grads + dp->pad_off[unit];
	}
	int b = dp_scratch_of(dp, unit);
	if (dp->gbuf_unit[b] != unit) {
		if (dp->gbuf_unit[b] >= 0)
			dp_contract(dp,
			            "unit %d asked for gradients while unit %d's are still open",
			            id, dp->id[dp->gbuf_unit[b]]);
		if (!dp->err)
			dp_latch(dp, comm_wait(&dp->gbuf_req[b]));
		memset(dp->gbuf[b], 0, dp_padded(dp, unit) * sizeof(float));
		dp->gbuf_unit[b] = unit;
	}
	return dp->gbuf[b];
}

/* Stages 0, 1: start unit u's reduction. */
static void dp_start_unit(dp_runtime *dp, int u)
{
	dp->started[u] = true;
	if (dp->err)
		return;
	float *g = dp->grads + dp->pad_off[u];
	if (dp->stage == 0)
		dp_latch(dp, comm_iallreduce_sum(dp->c, g, dp->numel[u], &dp->unit_req[u]));
	else
		dp_latch(dp, comm_ireduce_scatter_sum(dp->c, g, dp->grad_shard + dp->shard_off[u],
		                                      dp->block[u], &dp->unit_req[u]));
}

/*
 * Stages 2, 3: reduce-scatter scratch b (unit u) into the gradient shard.
 * The shard already holds earlier micro-steps' sums; adding it to this
 * rank's own block of the scratch first makes the reduce-scatter's result
 * the new running sum, with no second buffer.
 */
static void dp_reduce_scratch(dp_runtime *dp, int b, int u)
{
	float *s = dp->gbuf[b];
	float *shard = dp->grad_shard + dp->shard_off[u];
	dp->gbuf_unit[b] = -1;
	if (dp->err)
		return;
	if (dp->backward > 0) {
		float *mine = s + (size_t)dp->rank * dp->block[u];
		for (size_t i = 0; i < dp->block[u]; i++)
			mine[i] += shard[i];
	}
	dp_latch(dp, comm_ireduce_scatter_sum(dp->c, s, shard, dp->block[u], &dp->gbuf_req[b]));
}

static void dp_hook_grads_done(void *ctx, int id)
{
	dp_runtime *dp = ctx;
	int unit = dp_unit_of(dp, id, "grads_done");
	if (unit < 0)
		return;
	if (dp->stage < 2) {
		if (dp->backward == dp->micro_steps - 1 && !dp->started[unit])
			dp_start_unit(dp, unit);
	} else {
		int b = dp_scratch_of(dp, unit);
		if (dp->gbuf_unit[b] == unit)
			dp_reduce_scratch(dp, b, unit);
	}
	dp_poke(dp);
	if (unit == 0) /* the layout's first unit: the last grads_done of a backward */
		dp->backward++;
}

gpt_hooks dp_hooks(dp_runtime *dp)
{
	DP_CHECK(dp);
	gpt_hooks h = {.ctx = dp,
	               .params = dp_hook_params,
	               .grads = dp_hook_grads,
	               .grads_done = dp_hook_grads_done};
	return h;
}

/* ---- the step ---- */

int dp_begin_step(dp_runtime *dp, int micro_steps)
{
	DP_CHECK(dp);
	if (dp->err)
		return dp->err;
	if (micro_steps < 1) {
		log_printf(LOG_ERROR, "could not begin a step: %d micro-steps", micro_steps);
		return DP_ERR_ARG;
	}
	dp->micro_steps = micro_steps;
	dp->backward = 0;
	memset(dp->started, 0, (size_t)dp->nunits * sizeof(*dp->started));
	for (int b = 0; b < DP_BUF_COUNT; b++)
		dp->gbuf_unit[b] = -1;
	if (dp->grads)
		memset(dp->grads, 0, dp->padded_total * sizeof(float));
	if (dp->grad_shard)
		memset(dp->grad_shard, 0, dp->shard_total * sizeof(float));
	return 0;
}

/* Wait for every request in reqs[0..n); RET the first error, having waited for all. */
static int dp_wait_all(comm_request *reqs, int n)
{
	int first = 0;
	for (int i = 0; i < n; i++) {
		int rc = comm_wait(&reqs[i]);
		if (rc && !first)
			first = rc;
	}
	return first;
}

/* Complete the gradient reduction of the step. */
static int dp_finish_reduce(dp_runtime *dp)
{
	if (dp->stage < 2) {
		for (int u = dp->nunits - 1; u >= 0; u--)
			if (!dp->started[u])
				dp_start_unit(dp, u);
		dp_latch(dp, dp_wait_all(dp->unit_req, dp->nunits));
	} else {
		/* a unit whose grads_done never came is reduced now */
		static const int order[] = {DP_BUF_LAYER_A, DP_BUF_LAYER_B, DP_BUF_UNIT0};
		for (int k = 0; k < DP_BUF_COUNT; k++) {
			int b = order[k];
			if (dp->gbuf_unit[b] >= 0)
				dp_reduce_scratch(dp, b, dp->gbuf_unit[b]);
		}
		dp_latch(dp, dp_wait_all(dp->gbuf_req, DP_BUF_COUNT));
	}
	return dp->err;
}

static void dp_sumsq(const float *g, size_t n, double *ss, int *bad)
{
	double s = 0;
	int nb = 0;
#pragma omp parallel for reduction(+ : s, nb) schedule(static) if (n > 65536)
	for (size_t i = 0; i < n; i++) {
		float x = g[i];
		nb += !isfinite(x);
		s += (double)x * (double)x;
	}
	*ss += s;
	*bad += nb;
}

static void dp_count_bad(const float *g, size_t n, int *bad)
{
	int nb = 0;
#pragma omp parallel for reduction(+ : nb) schedule(static) if (n > 65536)
	for (size_t i = 0; i < n; i++)
		nb += !isfinite(g[i]);
	*bad += nb;
}

/*
 * This rank's part of the squared norm of grad * unscale (its own blocks
 * of owned tensors), and whether it saw a non-finite value (in any tensor).
 */
static void dp_local_norm(const dp_runtime *dp, float unscale, float pair[2])
{
	double ss = 0;
	int bad = 0;
	for (int k = 0; k < dp->nnorm; k++) {
		const dp_segment *s = &dp->norm_seg[k];
		const float *g = dp_grad_at(dp, s->unit, s->begin);
		if (s->owner)
			dp_sumsq(g, s->len, &ss, &bad);
		else
			dp_count_bad(g, s->len, &bad);
	}
	pair[0] = (float)(ss * (double)unscale * (double)unscale);
	pair[1] = bad ? 1.0f : 0.0f;
}

/* Sum the reduced gradient of unit 0 over the tie: all of it (stage 0) or the owned block. */
static int dp_tie_reduce(dp_runtime *dp)
{
	int u = dp->u0;
	if (!dp->tie || u < 0)
		return 0;
	if (dp->stage == 0)
		return comm_allreduce_sum(dp->tie, dp->grads + dp->pad_off[u], dp->numel[u]);
	return comm_allreduce_sum(dp->tie, dp->grad_shard + dp->shard_off[u], dp->block[u]);
}

static void dp_update(dp_runtime *dp, int step, float lr, float grad_scale)
{
	for (int k = 0; k < dp->nseg; k++) {
		const dp_segment *s = &dp->seg[k];
		size_t pi = dp_param_index(dp, s->unit, s->begin);
		size_t si = dp_state_index(dp, s->unit, s->begin);
		adamw_update(&dp->opt, dp->params + pi, dp_grad_at(dp, s->unit, s->begin),
		             dp->m + si, dp->v + si, s->len, lr, grad_scale, s->decay, step);
	}
}

/* All-gather every unit of a full padded array x from the owners' blocks, in place. */
static int dp_allgather_full(dp_runtime *dp, float *x)
{
	for (int u = 0; u < dp->nunits; u++) {
		float *unit = x + dp->pad_off[u];
		int rc = comm_iallgather(dp->c, unit + (size_t)dp->rank * dp->block[u], unit,
		                         dp->block[u], &dp->unit_req[u]);
		if (rc) {
			dp_wait_all(dp->unit_req, u);
			return rc;
		}
	}
	return dp_wait_all(dp->unit_req, dp->nunits);
}

/* After the owners changed their parameters, make every rank's view consistent. */
static int dp_sync_params(dp_runtime *dp)
{
	dp->pbuf_unit[0] = dp->pbuf_unit[1] = -1;
	if (dp->stage == 1 || dp->stage == 2)
		return dp_allgather_full(dp, dp->params);
	return 0;
}

static void dp_end_step(dp_runtime *dp)
{
	dp->backward = 0;
	memset(dp->started, 0, (size_t)dp->nunits * sizeof(*dp->started));
	for (int b = 0; b < DP_BUF_COUNT; b++)
		dp->gbuf_unit[b] = -1;
}

int dp_step(dp_runtime *dp, int step, float lr, float grad_clip, float grad_unscale,
            dp_step_info *out)
{
	DP_CHECK(dp);
	dp_step_info info = {.grad_norm = NAN, .clip_scale = 1.0f};
	float pair[2];
	int rc = dp->err;
	if (rc)
		goto done;
	if (step < 1) {
		log_printf(LOG_ERROR, "could not take an optimizer step: step %d is not 1-based",
		           step);
		rc = DP_ERR_ARG;
		goto done;
	}
	if ((rc = dp_finish_reduce(dp)) || (rc = dp_tie_reduce(dp)))
		goto done;
	dp_local_norm(dp, grad_unscale, pair);
	if ((rc = comm_allreduce_sum(dp->norm, pair, 2)))
		goto done;
	info.grad_norm = sqrtf(pair[0]);
	info.finite = pair[1] == 0.0f && isfinite(pair[0]);
	if (info.finite) {
		info.clip_scale = clip_scale(info.grad_norm, grad_clip, dp->opt.clip_eps);
		dp_update(dp, step, lr, grad_unscale * info.clip_scale);
		dp->opt_step = step;
		info.updated = true;
		rc = dp_sync_params(dp);
	}
done:
	dp_end_step(dp);
	if (rc != DP_ERR_ARG)
		dp_latch(dp, rc);
	if (out)
		*out = info;
	return rc;
}

/* ---- accessors, checkpoints, export ---- */

int dp_error(const dp_runtime *dp)
{
	DP_CHECK(dp);
	return dp->err;
}

int dp_stage(const dp_runtime *dp)
{
	DP_CHECK(dp);
	return dp->stage;
}

int dp_num_units(const dp_runtime *dp)
{
	DP_CHECK(dp);
	return dp->nunits;
}

int dp_opt_step(const dp_runtime *dp)
{
	DP_CHECK(dp);
	return dp->opt_step;
}

dp_range dp_owned_range(const dp_runtime *dp, int unit)
{
	DP_CHECK(dp);
	assert(unit >= 0 && unit < dp->nunits);
	dp_range r = {dp->flat_off[unit] + dp_own_begin(dp, unit),
	              dp->flat_off[unit] + dp_own_end(dp, unit)};
	return r;
}

const float *dp_owned_params(const dp_runtime *dp, int unit)
{
	DP_CHECK(dp);
	assert(unit >= 0 && unit < dp->nunits);
	return dp->params + dp_param_index(dp, unit, (size_t)dp->rank * dp->block[unit]);
}

const float *dp_owned_m(const dp_runtime *dp, int unit)
{
	DP_CHECK(dp);
	assert(unit >= 0 && unit < dp->nunits);
	return dp->m + dp_state_index(dp, unit, (size_t)dp->rank * dp->block[unit]);
}

const float *dp_owned_v(const dp_runtime *dp, int unit)
{
	DP_CHECK(dp);
	assert(unit >= 0 && unit < dp->nunits);
	return dp->v + dp_state_index(dp, unit, (size_t)dp->rank * dp->block[unit]);
}

int dp_load_shard(dp_runtime *dp, int unit, const float *params, const float *m, const float *v)
{
	DP_CHECK(dp);
	if (unit < 0 || unit >= dp->nunits || !params) {
		log_printf(LOG_ERROR, "could not load a shard: unit %d of %d%s", unit, dp->nunits,
		           params ? "" : " without parameters");
		return DP_ERR_ARG;
	}
	size_t b = (size_t)dp->rank * dp->block[unit];
	size_t n = (dp_own_end(dp, unit) - dp_own_begin(dp, unit)) * sizeof(float);
	float *pm = dp->m + dp_state_index(dp, unit, b), *pv = dp->v + dp_state_index(dp, unit, b);
	memcpy(dp->params + dp_param_index(dp, unit, b), params, n);
	if (m)
		memcpy(pm, m, n);
	else
		memset(pm, 0, n);
	if (v)
		memcpy(pv, v, n);
	else
		memset(pv, 0, n);
	return 0;
}

int dp_load_done(dp_runtime *dp, int opt_step)
{
	DP_CHECK(dp);
	int rc = dp->err;
	if (rc)
		return rc;
	dp->opt_step = opt_step;
	dp->pbuf_unit[0] = dp->pbuf_unit[1] = -1;
	if (dp->stage == 0) {
		if ((rc = dp_allgather_full(dp, dp->params)) ||
		    (rc = dp_allgather_full(dp, dp->m)) || (rc = dp_allgather_full(dp, dp->v)))
			dp_latch(dp, rc);
	} else if (dp->stage < 3) {
		if ((rc = dp_allgather_full(dp, dp->params)))
			dp_latch(dp, rc);
	}
	return rc;
}

int dp_gather_params(dp_runtime *dp, float *full_out)
{
	DP_CHECK(dp);
	if (dp->err)
		return dp->err;
	for (int u = 0; u < dp->nunits; u++) {
		const float *src = dp->params + dp->pad_off[u];
		if (dp->stage == 3) {
			int i = dp_pbuf_of(dp, u), rc;
			if (dp->pbuf_unit[i] != u) {
				rc = comm_allgather(dp->c, dp->params + dp->shard_off[u],
				                    dp->pbuf[i], dp->block[u]);
				dp->pbuf_unit[i] = rc ? -1 : u;
				if (rc) {
					dp_latch(dp, rc);
					return rc;
				}
			}
			src = dp->pbuf[i];
		}
		memcpy(full_out + dp->flat_off[u], src, dp->numel[u] * sizeof(float));
	}
	return 0;
}

void dp_memory_bytes(const dp_runtime *dp, dp_mem_info *out)
{
	DP_CHECK(dp);
	*out = dp->mem;
}

int dp_train_exit(int rc)
{
	return rc == COMM_ERR_NOMEM || rc == DP_ERR_NOMEM ? TRAIN_OOM
	       : rc == COMM_ERR_FAILED                    ? TRAIN_COMM
	                                                  : TRAIN_INTERNAL;
}
