/*
 * model_gpu.cu - the whole model on one GPU (model_gpu.h): its memory,
 * the fp32 layers (gpt_model.c's, op for op, with the device ops), the
 * batch's way in and the optimizer step. The 16-bit layers are
 * model_lowp.cu's.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_flash.h"
#include "model_gpu_int.h"
#include "ops_lowp.h"

static int cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
	return -1;
}

void gpu_unit_tensors(const gpu_model *m, void *unit, size_t elem, void *t[P_COUNT])
{
	/* the pieces of tensor rank of tp (gpt_split): qkv and fc by rows, the projections by columns */
	size_t C = (size_t)m->C, Cl = (size_t)m->Cl;
	const size_t numel[P_COUNT] = {C,      C, 3 * Cl * C, 3 * Cl, C * Cl,     C,
	                               C,      C, 4 * Cl * C, 4 * Cl, 4 * Cl * C, C};
	char *p = (char *)unit;
	for (int k = 0; k < P_COUNT; k++) {
		t[k] = p;
		p += numel[k] * elem;
	}
}

void gpu_layer_tensors(const gpu_model *m, void *base, size_t elem, int l, void *t[P_COUNT])
{
	gpu_unit_tensors(m, (char *)base + m->unit_off[l + 1] * elem, elem, t);
}

float *gpu_unit_grads(const gpu_model *m, int u)
{
	if (m->hooks.grads)
		return m->hooks.grads(m->hooks.ctx, u);
	return m->arr[GPU_GRADS] + m->unit_off[u];
}

const float *gpu_unit_params(const gpu_model *m, int u)
{
	if (m->unit_params)
		return m->hooks.params(m->hooks.ctx, u);
	return m->arr[GPU_PARAMS] + m->unit_off[u];
}

const void *gpu_unit_low(const gpu_model *m, int u, const float *p)
{
	if (!m->unit_params)
		return (const char *)m->wlow + 2 * m->unit_off[u];
	void *slot = m->low_slot[u == 0 ? 0 : 1 + (u & 1)];
	gpu_lowp_from_f32(slot, p, m->unit_len[u], m->fmt);
	return slot;
}

void gpu_tp_allreduce(gpu_model *m, float *buf, size_t n)
{
	if (m->tp == 1 || m->tp_error)
		return;
	int rc = comm_allreduce_sum(m->tp_comm, buf, n);
	if (rc)
		m->tp_error = rc;
}

void gpu_model_set_hooks(gpu_model *m, const gpt_hooks *hooks)
{
	if (hooks)
		m->hooks = *hooks;
	else
		memset(&m->hooks, 0, sizeof(m->hooks));
}

/* Layer l's parameters (gpu_unit_params: ZeRO 3 gathers the unit). */
static void layer_params(const gpu_model *m, int l, float *t[P_COUNT])
{
	gpu_unit_tensors(m, (void *)gpu_unit_params(m, l + 1), sizeof(float), (void **)t);
}

/*
 * Carve the activations and scratch out of one allocation (or count them
 * with base NULL). A 16-bit model's activations take 2 bytes (LOW), its
 * residual stream, statistics and scratch 4 (F32); see acts.
 */
static size_t carve_all(gpu_model *m, char *base)
{
	size_t used = 0, N = (size_t)m->N, NC = N * m->C, NH = (size_t)m->NHl, T = (size_t)m->T;
	size_t NCl = N * m->Cl; /* a tensor rank's heads and MLP slice */
	bool low = m->fmt != GPU_NO_LOWP;
	size_t LOW = low ? 2 : sizeof(float), F32 = sizeof(float);
	/* fp32 keeps the probabilities [B,NHl,T,T]; 16-bit only the log-sum-exp [B,NHl,T] */
	size_t att = (size_t)m->B * NH * T * (low ? 1 : T);
#define TAKE(dst, count, esz)                                                                      \
	do {                                                                                       \
		if (base)                                                                          \
			(dst) = (float *)(base + used);                                            \
		used += ((count) * (esz) + 255) / 256 * 256;                                      \
	} while (0)
	for (int s = 0; s < m->nslots; s++) {
		slot_state *st = &m->slot[s];
		st->layer = m->layers + (size_t)s * m->nl;
		TAKE(st->enc, NC, F32);
		for (int l = 0; l < m->nl; l++) {
			acts *a = &st->layer[l];
			TAKE(a->ln1, NC, LOW);
			TAKE(a->ln1_mean, N, F32);
			TAKE(a->ln1_rstd, N, F32);
			TAKE(a->qkv, 3 * NCl, LOW);
			TAKE(a->atty, NCl, LOW);
			TAKE(a->att, att, F32);
			TAKE(a->res2, NC, F32);
			TAKE(a->ln2, NC, LOW);
			TAKE(a->ln2_mean, N, F32);
			TAKE(a->ln2_rstd, N, F32);
			TAKE(a->fch, 4 * NCl, LOW);
			TAKE(a->fchg, 4 * NCl, LOW);
			TAKE(a->res3, NC, F32);
		}
		size_t head = m->has_head ? 1 : 0; /* the final LayerNorm, the logits, the losses */
		TAKE(st->lnf, head * NC, LOW);
		TAKE(st->lnf_mean, head * N, F32);
		TAKE(st->lnf_rstd, head * N, F32);
		TAKE(st->logits, head * N * m->Vp, LOW);
		TAKE(st->dev_losses, head * N, F32);
		TAKE(st->lse, head * N, F32);
	}
	TAKE(m->proj, NC, LOW);
	TAKE(m->dres, NC, F32);
	TAKE(m->dbtc, NC, LOW);
	TAKE(m->dbt4c, 4 * NCl, LOW);
	TAKE(m->dqkv, 3 * NCl, LOW);
	TAKE(m->datt, att, F32);
	TAKE(m->dres_low, low ? NC : 0, LOW);
	TAKE(m->colsum, low ? GPU_COL_SCRATCH(N, 4 * (size_t)m->C) : 0, F32);
#undef TAKE
	if (base) {
		m->sumsq = (double *)(base + used);
		m->loss_acc = m->sumsq + 1; /* beside the norm: the step reads both in one copy */
	}
	used += (2 + GPU_SUMSQ_BLOCKS) * sizeof(double);
	return used;
}

/*
 * A row-parallel matmul (the projections): out [N,OC] = inp [N,C] @ w^T +
 * b, where under tensor parallel inp and w are this rank's slice of the
 * input channels, so the product is summed over the tensor group before
 * the (replicated) bias is added, as the CPU model does. RET 0 or -1.
 */
static int row_parallel_forward(gpu_model *m, float *out, const float *inp, const float *w,
                                const float *b, int N, int C, int OC)
{
	if (m->tp == 1)
		return gpu_matmul_forward(out, inp, w, b, N, C, OC);
	if (gpu_matmul_forward(out, inp, w, NULL, N, C, OC) < 0)
		return -1;
	gpu_tp_allreduce(m, out, (size_t)N * OC);
	gpu_add_bias(out, b, N, OC);
	return 0;
}

/* The stage's layer j (local; the model's first + j). */
static int layer_forward(gpu_model *m, int j)
{
	int B = m->B, T = m->T, N = m->N, C = m->C, Cl = m->Cl;
	size_t NC = (size_t)N * C, NCl = (size_t)N * Cl;
	float *p[P_COUNT];
	layer_params(m, m->first + j, p);
	acts *a = &m->cur.layer[j];
	const float *res = layer_input(m, j);
	gpu_layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, res, p[P_LN1W], p[P_LN1B], N, C);
	if (gpu_matmul_forward(a->qkv, a->ln1, p[P_QKVW], p[P_QKVB], N, C, 3 * Cl) < 0)
		return -1;
	gpu_attention_forward(a->atty, a->att, a->qkv, B, T, Cl, m->NHl);
	if (row_parallel_forward(m, m->proj, a->atty, p[P_PROJW], p[P_PROJB], N, Cl, C) < 0)
		return -1;
	gpu_residual_forward(a->res2, res, m->proj, NC);
	gpu_layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, p[P_LN2W], p[P_LN2B], N, C);
	if (gpu_matmul_forward(a->fch, a->ln2, p[P_FCW], p[P_FCB], N, C, 4 * Cl) < 0)
		return -1;
	gpu_gelu_forward(a->fchg, a->fch, 4 * NCl);
	if (row_parallel_forward(m, m->proj, a->fchg, p[P_FCPW], p[P_FCPB], N, 4 * Cl, C) < 0)
		return -1;
	gpu_residual_forward(a->res3, a->res2, m->proj, NC);
	return 0;
}

/*
 * m->dres: the gradient of layer l's output on entry, of its input on
 * return. Under tensor parallel the input gradients of the column-parallel
 * matmuls (QKV, the first of the MLP) are partial sums over this rank's
 * rows, summed over the tensor group before their LayerNorm's backward.
 */
static int layer_backward(gpu_model *m, int j)
{
	int B = m->B, T = m->T, N = m->N, C = m->C, Cl = m->Cl, l = m->first + j;
	size_t NC = (size_t)N * C;
	float *p[P_COUNT], *g[P_COUNT];
	layer_params(m, l, p);
	gpu_unit_tensors(m, gpu_unit_grads(m, l + 1), sizeof(float), (void **)g);
	acts *a = &m->cur.layer[j];
	if (gpu_matmul_backward(m->dbt4c, g[P_FCPW], g[P_FCPB], m->dres, a->fchg, p[P_FCPW], N,
	                        4 * Cl, C) < 0)
		return -1;
	gpu_gelu_backward(m->dbt4c, a->fch, m->dbt4c, (size_t)4 * N * Cl);
	if (gpu_matmul_backward(m->dbtc, g[P_FCW], g[P_FCB], m->dbt4c, a->ln2, p[P_FCW], N, C,
	                        4 * Cl) < 0)
		return -1;
	gpu_tp_allreduce(m, m->dbtc, NC);
	gpu_layernorm_backward(m->dres, g[P_LN2W], g[P_LN2B], m->dbtc, a->res2, p[P_LN2W],
	                       a->ln2_mean, a->ln2_rstd, N, C);
	if (gpu_matmul_backward(m->dbtc, g[P_PROJW], g[P_PROJB], m->dres, a->atty, p[P_PROJW], N,
	                        Cl, C) < 0)
		return -1;
	gpu_attention_backward(m->dqkv, m->datt, m->dbtc, a->qkv, a->att, B, T, Cl, m->NHl);
	if (gpu_matmul_backward(m->dbtc, g[P_QKVW], g[P_QKVB], m->dqkv, a->ln1, p[P_QKVW], N, C,
	                        3 * Cl) < 0)
		return -1;
	gpu_tp_allreduce(m, m->dbtc, NC);
	gpu_layernorm_backward(m->dres, g[P_LN1W], g[P_LN1B], m->dbtc, layer_input(m, j),
	                       p[P_LN1W], a->ln1_mean, a->ln1_rstd, N, C);
	return 0;
}

/*
 * The fp32 stage's forward after its input: its layers, then on the last
 * stage the final LayerNorm, the LM head and the losses.
 */
static int fp32_forward(gpu_model *m, char *err, size_t errlen)
{
	int N = m->N, C = m->C;
	for (int j = 0; j < m->nl; j++)
		if (layer_forward(m, j) < 0) {
			snprintf(err, errlen, "cuBLASLt refused a matmul of layer %d", m->first + j);
			return -1;
		}
	if (!m->has_head)
		return 0;
	const float *fin = gpu_unit_params(m, m->L + 1);
	gpu_layernorm_forward(m->cur.lnf, m->cur.lnf_mean, m->cur.lnf_rstd, layer_input(m, m->nl), fin,
	                      fin + C, N, C);
	const float *wte = gpu_unit_params(m, 0); /* the LM head */
	if (gpu_lmhead_forward(m->cur.logits, m->cur.lnf, wte, N, C, m->V, m->Vp) < 0) {
		snprintf(err, errlen, "cuBLASLt refused the LM head");
		return -1;
	}
	gpu_softmax_xent_forward(m->cur.dev_losses, m->cur.lse, m->cur.logits, m->cur.targets, N, m->V, m->Vp);
	return 0;
}

/* The stage's layers' backward, last first, each unit's end told as it comes. */
static int fp32_layers_backward(gpu_model *m, char *err, size_t errlen)
{
	for (int j = m->nl - 1; j >= 0; j--) {
		if (layer_backward(m, j) < 0) {
			snprintf(err, errlen, "cuBLASLt refused a matmul of layer %d's backward",
			         m->first + j);
			return -1;
		}
		unit_done(m, m->first + j + 1);
	}
	return 0;
}

/*
 * The fp32 stage's backward from the loss (last stage) or from dy, the
 * gradient of its output, down to its input's gradient in m->dres.
 */
static int fp32_backward(gpu_model *m, float dloss, const float *dy, char *err, size_t errlen)
{
	int N = m->N, C = m->C;
	if (!m->has_head) {
		cudaMemcpyAsync(m->dres, dy, (size_t)N * C * sizeof(float), cudaMemcpyDeviceToDevice);
		return fp32_layers_backward(m, err, errlen);
	}
	const float *wte = gpu_unit_params(m, 0);
	float *dwte = gpu_unit_grads(m, 0);
	/* the loss and the LM head; the logits' buffer takes their gradient */
	gpu_softmax_xent_backward(m->cur.logits, m->cur.logits, m->cur.lse, m->cur.targets, dloss / (float)N, N,
	                          m->V, m->Vp);
	if (gpu_lmhead_backward(m->dbtc, dwte, m->cur.logits, m->cur.lnf, wte, N, C, m->V, m->Vp) < 0) {
		snprintf(err, errlen, "cuBLASLt refused the LM head's backward");
		return -1;
	}
	const float *fin = gpu_unit_params(m, m->L + 1);
	float *dfin = gpu_unit_grads(m, m->L + 1);
	cudaMemsetAsync(m->dres, 0, (size_t)N * C * sizeof(float));
	gpu_layernorm_backward(m->dres, dfin, dfin + C, m->dbtc, layer_input(m, m->nl), fin,
	                       m->cur.lnf_mean, m->cur.lnf_rstd, N, C);
	unit_done(m, m->L + 1);
	return fp32_layers_backward(m, err, errlen);
}

/*
 * A launch error now (a kernel's own failure shows at the step's one
 * copy), or a failed all-reduce of the tensor group.
 */
static int launched(const gpu_model *m, const char *what, char *err, size_t errlen)
{
	if (m->tp_error) {
		snprintf(err, errlen, "%s: the tensor group's all-reduce: %s", what,
		         comm_error(m->tp_comm));
		return -1;
	}
	cudaError_t e = cudaPeekAtLastError();
	return e == cudaSuccess ? 0 : cuda_fail(e, what, err, errlen);
}

/* The device spans of the tensors for gpu_adamw_flat (gpt_tensors' order is the flat order). */
static int upload_spans(gpu_model *m)
{
	gpu_span *h = (gpu_span *)calloc((size_t)m->ntensors, sizeof(*h));
	if (!h)
		return -1;
	for (int k = 0; k < m->ntensors; k++) {
		h[k].begin = m->tensors[k].offset;
		h[k].decay = m->tensors[k].decay;
	}
	cudaError_t e = cudaMalloc((void **)&m->spans, (size_t)m->ntensors * sizeof(*h));
	if (e == cudaSuccess)
		e = cudaMemcpy(m->spans, h, (size_t)m->ntensors * sizeof(*h), cudaMemcpyHostToDevice);
	free(h);
	return e == cudaSuccess ? 0 : -1;
}

/* The stage's pinned tokens: inputs [N], targets [N], buckets [3N + 1]. */
static size_t stage_ints(const gpu_model *m)
{
	return 5 * (size_t)m->N + 1;
}

/* Make slot k's activations and tokens the ones the layers read and write. */
static void bind_slot(gpu_model *m, int k)
{
	m->cur = m->slot[k];
}

static gpu_lowp lowp_of(gpt_precision precision)
{
	return precision == GPT_BF16 ? GPU_BF16 : precision == GPT_FP16 ? GPU_FP16 : GPU_NO_LOWP;
}

extern "C" {

int gpu_model_fits(const gpt_config *cfg, int tp, int pp, gpt_precision precision, char *err,
                   size_t errlen)
{
	if (precision != GPT_FP32 && precision != GPT_BF16 && precision != GPT_FP16) {
		snprintf(err, errlen, "unknown precision %d", (int)precision);
		return -1;
	}
	if (tp < 1 || cfg->num_heads % tp) {
		snprintf(err, errlen, "tensor_parallel %d does not divide the %d heads", tp,
		         cfg->num_heads);
		return -1;
	}
	if (pp < 1 || cfg->num_layers % pp) {
		snprintf(err, errlen, "pipeline_parallel %d does not divide the %d layers", pp,
		         cfg->num_layers);
		return -1;
	}
	if ((tp > 1 || pp > 1) && precision != GPT_FP32) {
		snprintf(err, errlen,
		         "tensor and pipeline parallel on the GPU train in fp32 so far, not in bf16 "
		         "or fp16");
		return -1;
	}
	if (lowp_of(precision) == GPU_NO_LOWP)
		return 0;
	if (!gpu_flash_attention_fits(cfg->channels, cfg->num_heads)) {
		snprintf(err, errlen,
		         "bf16 and fp16 on the GPU take attention heads of 16, 32, ... 128 "
		         "channels (the fused attention kernel's), not %d / %d",
		         cfg->channels, cfg->num_heads);
		return -1;
	}
	if (cfg->channels % 8) {
		snprintf(err, errlen,
		         "bf16 and fp16 on the GPU take d_model a multiple of 8 (16-byte rows for "
		         "the GEMMs), not %d",
		         cfg->channels);
		return -1;
	}
	return 0;
}

/* Whether unit u is the stage's (gpt.h's units: 0 on either end, L + 1 on the last). */
static bool unit_here(const gpu_model *m, int u)
{
	if (u == 0)
		return m->has_embed || m->has_head;
	if (u == m->L + 1)
		return m->has_head;
	return u - 1 >= m->first && u - 1 < m->first + m->nl;
}

/* ZeRO 3, 16-bit: the values slot k of the 16-bit copy holds (unit 0, the largest other). */
static size_t low_slot_len(const gpu_model *m, int k)
{
	size_t n = 0;
	for (int u = k == 0 ? 0 : 1; u < (k == 0 ? 1 : m->L + 2); u++)
		if (unit_here(m, u) && m->unit_len[u] > n)
			n = m->unit_len[u];
	return n;
}

/* Floats of the device array which. */
static size_t array_len(const gpu_model *m, gpu_array which)
{
	bool moment = which == GPU_ADAM_M || which == GPU_ADAM_V;
	if (which == GPU_GRADS && m->unit_grads)
		return 0;
	if (which == GPU_PARAMS && m->unit_params)
		return m->shard_size;
	return m->grad_shard && moment ? m->shard_size : m->np;
}

/* Floats allocated for the device array which (the padded blocks' reach). */
static size_t array_alloc(const gpu_model *m, gpu_array which)
{
	bool flat = (which == GPU_PARAMS && !m->unit_params) ||
	            (which == GPU_GRADS && !m->unit_grads);
	return m->grad_shard && flat ? m->reach : array_len(m, which);
}

/* pieces[0 .. n) copied, with room for one (a rank may own none); NULL out of memory. */
static gpu_shard_piece *pieces_copy(const gpu_shard_piece *pieces, int n)
{
	gpu_shard_piece *c = (gpu_shard_piece *)malloc(((size_t)n + 1) * sizeof(*c));
	if (c && n)
		memcpy(c, pieces, (size_t)n * sizeof(*c));
	return c;
}

/* The shard's tables on the host, and its device arrays. RET a CUDA error. */
static cudaError_t shard_new(gpu_model *m, const gpu_shard *sh)
{
	m->npieces = sh->npieces;
	m->unit_grads = sh->unit_grads || sh->unit_params;
	m->unit_params = sh->unit_params;
	m->shard_size = sh->size;
	m->reach = sh->reach;
	if (!(m->pieces = pieces_copy(sh->pieces, sh->npieces)))
		return cudaErrorMemoryAllocation;
	const gpu_span two[2] = {{0, 0}, {0, 1}};
	cudaError_t e = cudaMalloc((void **)&m->decay_span, sizeof(two));
	if (e == cudaSuccess)
		e = cudaMemcpy(m->decay_span, two, sizeof(two), cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&m->grad_shard, (sh->size ? sh->size : 1) * sizeof(float));
	if (e == cudaSuccess)
		e = cudaMemset(m->grad_shard, 0, (sh->size ? sh->size : 1) * sizeof(float));
	return e;
}

/* The norm's pieces (gpu_part), on the host, and their sums' device array. RET a CUDA error. */
static cudaError_t norm_new(gpu_model *m, const gpu_shard_piece *norm, int n)
{
	m->nnorm = n;
	m->norm = pieces_copy(norm, n);
	m->piece_sq_host = (double *)calloc((size_t)n + 1, sizeof(double));
	if (!m->norm || !m->piece_sq_host)
		return cudaErrorMemoryAllocation;
	return cudaMalloc((void **)&m->piece_sq, ((size_t)n + 1) * sizeof(double));
}

/*
 * The local layout of the part (mp.h): the stage's units in order, each
 * one's offset and length (an absent unit's offset SIZE_MAX), and its
 * tensors, kept in m->tensors with their local offset (the optimizer's
 * spans) and their tensor rank's piece's size in place of the whole.
 * RET the local parameter count.
 */
static size_t local_layout(gpu_model *m)
{
	size_t at = 0;
	int k = 0, kept = 0;
	for (int u = 0; u < m->L + 2; u++) {
		bool here = unit_here(m, u);
		m->unit_off[u] = here ? at : SIZE_MAX;
		for (; k < m->ntensors && m->tensors[k].unit == u; k++) {
			if (!here)
				continue;
			gpt_tensor t = m->tensors[k];
			t.offset = at;
			t.numel = gpt_tensor_local_numel(&t, m->tp);
			at += t.numel;
			m->tensors[kept++] = t;
		}
		m->unit_len[u] = here ? at - m->unit_off[u] : 0;
	}
	m->ntensors = kept;
	return at;
}

/* Whether the part is one the device model takes. RET 0, or -1 with the reason. */
static int part_fits(const gpt_config *cfg, const gpt_part *p, char *err, size_t errlen)
{
	if (p->tp > 1 && (!p->tp_comm || comm_size(p->tp_comm) != p->tp)) {
		snprintf(err, errlen, "tensor_parallel %d needs a tensor group of %d ranks", p->tp,
		         p->tp);
		return -1;
	}
	if (p->num_layers < 1 || p->first_layer < 0 ||
	    p->first_layer + p->num_layers > cfg->num_layers || p->slots < 1 ||
	    (p->first_layer > 0 && p->has_embed) ||
	    (p->first_layer + p->num_layers < cfg->num_layers && p->has_head)) {
		snprintf(err, errlen, "a stage of layers %d .. %d in %d slots does not fit the model",
		         p->first_layer, p->first_layer + p->num_layers - 1, p->slots);
		return -1;
	}
	if (p->recompute != GPT_RECOMPUTE_NONE) {
		snprintf(err, errlen, "activation recomputation is not on the GPU yet");
		return -1;
	}
	return 0;
}

gpu_model *gpu_model_new(const gpt_config *cfg, int B, int T, gpt_precision precision,
                         const float *params, const gpu_part *part, char *err, size_t errlen)
{
	if (gpt_config_check(cfg, err, errlen) < 0)
		return NULL;
	gpt_part whole = gpt_part_whole(cfg), sl = part ? part->slice : whole;
	if (part_fits(cfg, &sl, err, errlen) < 0)
		return NULL;
	if (B < 1 || T < 1 || T > cfg->max_seq_len) {
		snprintf(err, errlen, "B %d and T %d do not fit the model (T at most %d)", B, T,
		         cfg->max_seq_len);
		return NULL;
	}
	int pp = cfg->num_layers / sl.num_layers; /* a stage's share of the layers */
	if (gpu_model_fits(cfg, sl.tp, pp, precision, err, errlen) < 0)
		return NULL;
	gpu_lowp fmt = lowp_of(precision);
	gpu_model *m = (gpu_model *)calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "out of host memory");
		return NULL;
	}
	m->cfg = *cfg;
	m->fmt = fmt;
	m->B = B;
	m->T = T;
	m->N = B * T;
	m->C = cfg->channels;
	m->NH = cfg->num_heads;
	m->L = cfg->num_layers;
	m->V = cfg->vocab_size;
	m->Vp = cfg->padded_vocab_size;
	m->tp = sl.tp;
	m->tp_comm = m->tp > 1 ? sl.tp_comm : NULL;
	m->Cl = m->C / m->tp;
	m->NHl = m->NH / m->tp;
	m->first = sl.first_layer;
	m->nl = sl.num_layers;
	m->has_embed = sl.has_embed;
	m->has_head = sl.has_head;
	m->nslots = sl.slots;
	m->ntensors = 2 + 12 * m->L + 2;
	m->tensors = (gpt_tensor *)calloc((size_t)m->ntensors, sizeof *m->tensors);
	m->unit_off = (size_t *)calloc((size_t)m->L + 2, sizeof(size_t));
	m->unit_len = (size_t *)calloc((size_t)m->L + 2, sizeof(size_t));
	m->slot = (slot_state *)calloc((size_t)m->nslots, sizeof *m->slot);
	m->layers = (acts *)calloc((size_t)m->nslots * m->nl, sizeof *m->layers);
	m->losses = (float *)malloc((size_t)m->N * sizeof(float));
	m->count = (int32_t *)malloc((size_t)m->V * sizeof(int32_t));
	if (!m->tensors || !m->unit_off || !m->unit_len || !m->slot || !m->layers || !m->losses ||
	    !m->count) {
		snprintf(err, errlen, "out of host memory");
		gpu_model_free(m);
		return NULL;
	}
	gpt_tensors(cfg, m->tensors, m->ntensors);
	m->np = local_layout(m);
	const gpu_shard *shard = part ? part->shard : NULL;
	cudaError_t e = shard ? shard_new(m, shard) : cudaSuccess;
	if (e == cudaSuccess && part && part->norm)
		e = norm_new(m, part->norm, part->nnorm);
	for (int k = 0; k < 4 && e == cudaSuccess; k++) {
		size_t n = array_alloc(m, (gpu_array)k);
		e = cudaMalloc((void **)&m->arr[k], (n ? n : 1) * sizeof(float));
		if (e == cudaSuccess)
			e = cudaMemset(m->arr[k], 0, (n ? n : 1) * sizeof(float));
	}
	if (e == cudaSuccess && fmt != GPU_NO_LOWP && !m->unit_params)
		e = cudaMalloc(&m->wlow, m->np * 2);
	for (int k = 0; k < 3 && e == cudaSuccess && fmt != GPU_NO_LOWP && m->unit_params; k++)
		e = cudaMalloc(&m->low_slot[k], 2 * low_slot_len(m, k));
	m->block_bytes = carve_all(m, NULL);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&m->ints, m->nslots * stage_ints(m) * sizeof(int32_t));
	if (e == cudaSuccess)
		e = cudaMallocHost((void **)&m->staging, 2 * stage_ints(m) * sizeof(int32_t));
	cudaEvent_t *ev = (cudaEvent_t *)calloc(2, sizeof(cudaEvent_t));
	m->staged = ev;
	if (!ev)
		e = cudaErrorMemoryAllocation;
	for (int k = 0; k < 2 && e == cudaSuccess; k++)
		e = cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming);
	if (e == cudaSuccess)
		e = cudaMalloc(&m->block, m->block_bytes);
	if (e == cudaSuccess)
		e = cudaMemset(m->block, 0, m->block_bytes);
	if (e == cudaSuccess && upload_spans(m) < 0)
		e = cudaErrorMemoryAllocation;
	if (e != cudaSuccess) {
		cuda_fail(e, "could not set the model up on the GPU", err, errlen);
		gpu_model_free(m);
		return NULL;
	}
	for (int k = 0; k < m->nslots; k++) {
		slot_state *st = &m->slot[k];
		st->inputs = m->ints + (size_t)k * stage_ints(m);
		st->targets = st->inputs + m->N;
		st->buckets = st->inputs + 2 * (size_t)m->N;
	}
	carve_all(m, (char *)m->block);
	bind_slot(m, 0);
	if (gpu_model_set(m, GPU_PARAMS, params, err, errlen) < 0) {
		gpu_model_free(m);
		return NULL;
	}
	return m;
}

void gpu_model_free(gpu_model *m)
{
	if (!m)
		return;
	for (int k = 0; k < 4; k++)
		cudaFree(m->arr[k]);
	cudaFree(m->wlow);
	for (int k = 0; k < 3; k++)
		cudaFree(m->low_slot[k]);
	cudaFree(m->grad_shard);
	cudaFree(m->piece_sq);
	cudaFree(m->decay_span);
	free(m->pieces);
	free(m->norm);
	free(m->piece_sq_host);
	cudaFree(m->ints);
	cudaFree(m->block);
	cudaFree(m->spans);
	cudaFreeHost(m->staging);
	if (m->staged) {
		cudaEvent_t *ev = (cudaEvent_t *)m->staged;
		for (int k = 0; k < 2; k++)
			if (ev[k])
				cudaEventDestroy(ev[k]);
		free(ev);
	}
	free(m->tensors);
	free(m->unit_off);
	free(m->unit_len);
	free(m->slot);
	free(m->layers);
	free(m->losses);
	free(m->count);
	free(m);
}

size_t gpu_model_bytes(const gpu_model *m)
{
	size_t arrays = 0;
	for (int k = 0; k < 4; k++)
		arrays += array_alloc(m, (gpu_array)k) * sizeof(float);
	for (int k = 0; k < 3; k++)
		arrays += m->low_slot[k] ? 2 * low_slot_len(m, k) : 0;
	return arrays + m->shard_size * sizeof(float) + (m->wlow ? m->np * 2 : 0) +
	       m->nslots * stage_ints(m) * sizeof(int32_t) + m->block_bytes;
}

/*
 * The batch to the device without waiting for it: the tokens and their
 * buckets go into one half of the pinned staging area (waiting only for
 * that half's copy of two micro-batches ago) and are copied in stream
 * order, after the work that still reads the previous batch.
 */
static int put_batch(gpu_model *m, int slot, const int32_t *inputs, const int32_t *targets,
                     char *err, size_t errlen)
{
	int N = m->N;
	for (int n = 0; n < N; n++)
		if (inputs[n] < 0 || inputs[n] >= m->V ||
		    (targets && (targets[n] < 0 || targets[n] >= m->V))) {
			snprintf(err, errlen, "a token at position %d is outside 0 .. %d", n,
			         m->V - 1);
			return -1;
		}
	cudaEvent_t *ev = (cudaEvent_t *)m->staged;
	int k = m->next_stage;
	m->next_stage ^= 1;
	cudaError_t e = cudaEventSynchronize(ev[k]);
	if (e != cudaSuccess)
		return cuda_fail(e, "the GPU failed", err, errlen);
	int32_t *h = m->staging + (size_t)k * stage_ints(m);
	memcpy(h, inputs, (size_t)N * sizeof(int32_t));
	if (targets)
		memcpy(h + N, targets, (size_t)N * sizeof(int32_t));
	m->slot[slot].nbuckets = gpu_token_buckets(h + 2 * N, inputs, N, m->V, m->count);
	e = cudaMemcpyAsync(m->slot[slot].inputs, h, stage_ints(m) * sizeof(int32_t),
	                    cudaMemcpyHostToDevice, 0);
	if (e == cudaSuccess)
		e = cudaEventRecord(ev[k], 0);
	return e == cudaSuccess ? 0 : cuda_fail(e, "could not copy the batch to the GPU", err, errlen);
}

/*
 * gpu_model_forward_slot, and on the last stage with loss the mean loss
 * read back into *loss (a wait) instead of added to the step's.
 */
static int forward_slot(gpu_model *m, int slot, const int32_t *inputs, const float *x,
                        const int32_t *targets, float *loss, char *err, size_t errlen)
{
	int N = m->N, C = m->C;
	if (m->unit_params && !m->hooks.params) {
		snprintf(err, errlen, "a model sharded by unit (ZeRO 3) needs its caller's hooks");
		return -1;
	}
	if (slot < 0 || slot >= m->nslots || (!m->has_embed && !x) || (m->has_head && !targets)) {
		snprintf(err, errlen, "a forward needs a slot of %d, %s", m->nslots,
		         m->has_embed ? "the targets on the last stage"
		                      : "the previous stage's output");
		return -1;
	}
	if (put_batch(m, slot, inputs, targets, err, errlen) < 0)
		return -1;
	bind_slot(m, slot);
	if (m->has_embed) {
		const float *wte = gpu_unit_params(m, 0);
		gpu_encoder_forward(m->cur.enc, m->cur.inputs, wte, wte + (size_t)m->Vp * C, m->B, m->T, C);
	} else {
		cudaMemcpyAsync(m->cur.enc, x, (size_t)N * C * sizeof(float), cudaMemcpyDeviceToDevice);
	}
	if (m->fmt == GPU_NO_LOWP) {
		if (fp32_forward(m, err, errlen) < 0)
			return -1;
	} else if (lowp_model_forward(m) < 0) {
		snprintf(err, errlen, "cuBLASLt refused a 16-bit matmul of the forward");
		return -1;
	}
	if (!loss || !m->has_head) {
		if (m->has_head)
			gpu_loss_mean_add(m->loss_acc, m->cur.dev_losses, N);
		return launched(m, "the forward failed on the GPU", err, errlen);
	}
	if (launched(m, "the forward failed", err, errlen) < 0)
		return -1;
	cudaError_t e =
	    cudaMemcpy(m->losses, m->cur.dev_losses, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return cuda_fail(e, "the forward failed on the GPU", err, errlen);
	double sum = 0.0;
	for (int n = 0; n < N; n++)
		sum += m->losses[n];
	*loss = (float)(sum / N);
	return 0;
}

int gpu_model_forward_slot(gpu_model *m, int slot, const int32_t *inputs, const float *x,
                           const int32_t *targets, char *err, size_t errlen)
{
	return forward_slot(m, slot, inputs, x, targets, NULL, err, errlen);
}

int gpu_model_forward(gpu_model *m, const int32_t *inputs, const int32_t *targets, float *loss,
                      char *err, size_t errlen)
{
	return forward_slot(m, 0, inputs, NULL, targets, loss, err, errlen);
}

const float *gpu_model_stage_output(const gpu_model *m, int slot)
{
	return m->slot[slot].layer[m->nl - 1].res3;
}

const float *gpu_model_stage_input_grad(const gpu_model *m)
{
	return m->dres;
}

int gpu_model_backward_slot(gpu_model *m, int slot, float dloss, const float *dy, char *err,
                            size_t errlen)
{
	int C = m->C, rc = 0;
	if ((m->unit_grads && !m->hooks.grads) || (m->unit_params && !m->hooks.params)) {
		snprintf(err, errlen, "a model sharded by unit (ZeRO 2, 3) needs its caller's hooks");
		return -1;
	}
	if (slot < 0 || slot >= m->nslots || (!m->has_head && !dy)) {
		snprintf(err, errlen, "slot %d of %d%s", slot, m->nslots,
		         m->has_head ? "" : ", the next stage's gradient");
		return -1;
	}
	bind_slot(m, slot);
	if (m->fmt == GPU_NO_LOWP) {
		rc = fp32_backward(m, dloss, dy, err, errlen);
	} else if (lowp_model_backward(m, dloss) < 0) {
		snprintf(err, errlen, "cuBLASLt refused a 16-bit matmul of the backward");
		rc = -1;
	}
	if (rc == 0 && m->has_embed) {
		float *dwte = gpu_unit_grads(m, 0);
		gpu_encoder_backward(dwte, dwte + (size_t)m->Vp * C, m->dres, m->cur.buckets, m->cur.nbuckets,
		                     m->B, m->T, C);
	}
	if (rc == 0 && (m->has_embed || m->has_head))
		unit_done(m, 0);
	return rc == 0 ? launched(m, "the backward failed on the GPU", err, errlen) : rc;
}

int gpu_model_backward(gpu_model *m, float dloss, char *err, size_t errlen)
{
	return gpu_model_backward_slot(m, 0, dloss, NULL, err, errlen);
}

void gpu_model_zero_grad(gpu_model *m)
{
	cudaMemsetAsync(m->arr[GPU_GRADS], 0, array_len(m, GPU_GRADS) * sizeof(float));
	cudaMemsetAsync(m->loss_acc, 0, sizeof(double));
}

int gpu_model_comm_error(const gpu_model *m)
{
	return m->tp_error;
}

float *gpu_model_grads(gpu_model *m)
{
	return m->unit_grads ? NULL : m->arr[GPU_GRADS];
}

float *gpu_model_grad_shard(gpu_model *m)
{
	return m->grad_shard;
}

float *gpu_model_params(gpu_model *m)
{
	return m->arr[GPU_PARAMS];
}

int gpu_model_params_sync(gpu_model *m, char *err, size_t errlen)
{
	if (!m->wlow)
		return 0;
	gpu_lowp_from_f32(m->wlow, m->arr[GPU_PARAMS], m->np, m->fmt);
	return launched(m, "the 16-bit copy of the weights failed on the GPU", err, errlen);
}

int gpu_model_grad_sumsq(gpu_model *m, double *sumsq, char *err, size_t errlen)
{
	double loss_sum;
	return gpu_model_step_stats(m, sumsq, &loss_sum, err, errlen);
}

int gpu_model_step_stats(gpu_model *m, double *sumsq, double *loss_sum, char *err, size_t errlen)
{
	/* the norm's pieces are in the shard when the model is sharded, else in the gradient */
	const float *g = m->grad_shard ? m->grad_shard : m->arr[GPU_GRADS];
	if (!m->norm)
		gpu_sumsq(m->sumsq, m->sumsq + 2, g, m->grad_shard ? m->shard_size : m->np);
	for (int k = 0; k < m->nnorm; k++)
		gpu_sumsq(m->piece_sq + k, m->sumsq + 2, g + m->norm[k].at, m->norm[k].n);
	double pair[2];
	cudaError_t e = cudaMemcpy(pair, m->sumsq, sizeof(pair), cudaMemcpyDeviceToHost);
	if (e == cudaSuccess && m->nnorm)
		e = cudaMemcpy(m->piece_sq_host, m->piece_sq, (size_t)m->nnorm * sizeof(double),
		               cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return cuda_fail(e, "the step failed on the GPU", err, errlen);
	cudaMemsetAsync(m->loss_acc, 0, sizeof(double));
	if (m->norm) { /* piece by piece, in flat order */
		pair[0] = 0;
		for (int k = 0; k < m->nnorm; k++)
			pair[0] += m->piece_sq_host[k];
	}
	*sumsq = pair[0];
	*loss_sum = pair[1];
	return 0;
}

int gpu_model_adamw(gpu_model *m, const adamw_config *a, float lr, float grad_scale, int t,
                    char *err, size_t errlen)
{
	gpu_adamw_args args = {lr, a->beta1, a->beta2, a->eps, a->weight_decay, grad_scale, t};
	if (!m->grad_shard)
		gpu_adamw_flat(m->arr[GPU_PARAMS], m->wlow, m->arr[GPU_GRADS], m->arr[GPU_ADAM_M],
		               m->arr[GPU_ADAM_V], m->np, m->spans, m->ntensors, &args, m->fmt);
	for (int k = 0; k < m->npieces; k++) { /* a piece is of one tensor: one span */
		const gpu_shard_piece *pc = &m->pieces[k];
		void *low = m->wlow ? (char *)m->wlow + 2 * pc->flat : NULL; /* 16-bit values */
		size_t p = m->unit_params ? pc->at : pc->flat;
		gpu_adamw_flat(m->arr[GPU_PARAMS] + p, low, m->grad_shard + pc->at,
		               m->arr[GPU_ADAM_M] + pc->at, m->arr[GPU_ADAM_V] + pc->at, pc->n,
		               m->decay_span + (pc->decay ? 1 : 0), 1, &args, m->fmt);
	}
	return launched(m, "the optimizer step failed on the GPU", err, errlen);
}

int gpu_model_get(gpu_model *m, gpu_array which, float *host, char *err, size_t errlen)
{
	cudaError_t e = cudaMemcpy(host, m->arr[which], array_len(m, which) * sizeof(float),
	                           cudaMemcpyDeviceToHost);
	return e == cudaSuccess ? 0 : cuda_fail(e, "could not copy from the GPU", err, errlen);
}

int gpu_model_set(gpu_model *m, gpu_array which, const float *host, char *err, size_t errlen)
{
	cudaError_t e = cudaMemcpy(m->arr[which], host, array_len(m, which) * sizeof(float),
	                           cudaMemcpyHostToDevice);
	if (e == cudaSuccess && which == GPU_PARAMS && m->wlow) {
		gpu_lowp_from_f32(m->wlow, m->arr[GPU_PARAMS], m->np, m->fmt);
		e = cudaDeviceSynchronize();
	}
	return e == cudaSuccess ? 0 : cuda_fail(e, "could not copy to the GPU", err, errlen);
}

} /* extern "C" */
