/*
 * model_gpu.cu - the whole model on one GPU (model_gpu.h). The layer
 * forward and backward are gpt_model.c's, op for op, with the device ops.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_gpu.h"
#include "ops_gpu.h"

/* A layer's parameters, in gpt.h's order within its unit. */
enum { P_LN1W, P_LN1B, P_QKVW, P_QKVB, P_PROJW, P_PROJB,
       P_LN2W, P_LN2B, P_FCW,  P_FCB,  P_FCPW,  P_FCPB, P_COUNT };

/* A layer's activations kept for the backward. */
typedef struct acts {
	float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *res2, *ln2, *ln2_mean, *ln2_rstd;
	float *fch, *fchg, *res3;
} acts;

struct gpu_model {
	gpt_config cfg;
	int B, T, N, C, NH, L, V, Vp;
	size_t np;
	float *arr[4]; /* gpu_array */
	gpt_tensor *tensors;
	int ntensors;
	int32_t *inputs, *targets; /* device [N] */
	float *losses;             /* host [N] */
	void *block;               /* every activation and scratch buffer */
	size_t block_bytes;
	float *enc, *lnf, *lnf_mean, *lnf_rstd, *logits, *dev_losses, *lse;
	acts *layer; /* [L] */
	float *proj, *dres, *dbtc, *dbt4c, *dqkv, *datt;
	double *sumsq; /* [1 + GPU_SUMSQ_BLOCKS] */
};

static int cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
	return -1;
}

/* The pointers of layer l's parameters (or gradients) in the flat array base. */
static void layer_tensors(const gpu_model *m, float *base, int l, float *t[P_COUNT])
{
	size_t C = (size_t)m->C;
	const size_t numel[P_COUNT] = {C,     C, 3 * C * C, 3 * C, C * C,     C,
	                               C,     C, 4 * C * C, 4 * C, 4 * C * C, C};
	float *p = base + gpt_unit_offset(&m->cfg, l + 1);
	for (int k = 0; k < P_COUNT; k++) {
		t[k] = p;
		p += numel[k];
	}
}

/* Carve the activations and scratch out of one allocation (or count them with base NULL). */
static size_t carve_all(gpu_model *m, char *base)
{
	size_t used = 0, N = (size_t)m->N, NC = N * m->C, NH = (size_t)m->NH, T = (size_t)m->T;
	size_t att = (size_t)m->B * NH * T * T;
#define TAKE(dst, count)                                                                           \
	do {                                                                                       \
		if (base)                                                                          \
			(dst) = (float *)(base + used);                                            \
		used += ((count) * sizeof(float) + 255) / 256 * 256;                              \
	} while (0)
	TAKE(m->enc, NC);
	for (int l = 0; l < m->L; l++) {
		acts *a = &m->layer[l];
		TAKE(a->ln1, NC);
		TAKE(a->ln1_mean, N);
		TAKE(a->ln1_rstd, N);
		TAKE(a->qkv, 3 * NC);
		TAKE(a->atty, NC);
		TAKE(a->att, att);
		TAKE(a->res2, NC);
		TAKE(a->ln2, NC);
		TAKE(a->ln2_mean, N);
		TAKE(a->ln2_rstd, N);
		TAKE(a->fch, 4 * NC);
		TAKE(a->fchg, 4 * NC);
		TAKE(a->res3, NC);
	}
	TAKE(m->lnf, NC);
	TAKE(m->lnf_mean, N);
	TAKE(m->lnf_rstd, N);
	TAKE(m->logits, N * m->Vp);
	TAKE(m->dev_losses, N);
	TAKE(m->lse, N);
	TAKE(m->proj, NC);
	TAKE(m->dres, NC);
	TAKE(m->dbtc, NC);
	TAKE(m->dbt4c, 4 * NC);
	TAKE(m->dqkv, 3 * NC);
	TAKE(m->datt, att);
#undef TAKE
	if (base)
		m->sumsq = (double *)(base + used);
	used += (1 + GPU_SUMSQ_BLOCKS) * sizeof(double);
	return used;
}

/* The residual stream entering layer l (l == L: the final LayerNorm's input). */
static const float *layer_input(const gpu_model *m, int l)
{
	return l == 0 ? m->enc : m->layer[l - 1].res3;
}

static int layer_forward(gpu_model *m, int l)
{
	int B = m->B, T = m->T, N = m->N, C = m->C, NH = m->NH;
	size_t NC = (size_t)N * C;
	float *p[P_COUNT];
	layer_tensors(m, m->arr[GPU_PARAMS], l, p);
	acts *a = &m->layer[l];
	const float *res = layer_input(m, l);
	gpu_layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, res, p[P_LN1W], p[P_LN1B], N, C);
	if (gpu_matmul_forward(a->qkv, a->ln1, p[P_QKVW], p[P_QKVB], N, C, 3 * C) < 0)
		return -1;
	gpu_attention_forward(a->atty, a->att, a->qkv, B, T, C, NH);
	if (gpu_matmul_forward(m->proj, a->atty, p[P_PROJW], p[P_PROJB], N, C, C) < 0)
		return -1;
	gpu_residual_forward(a->res2, res, m->proj, NC);
	gpu_layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, p[P_LN2W], p[P_LN2B], N, C);
	if (gpu_matmul_forward(a->fch, a->ln2, p[P_FCW], p[P_FCB], N, C, 4 * C) < 0)
		return -1;
	gpu_gelu_forward(a->fchg, a->fch, 4 * NC);
	if (gpu_matmul_forward(m->proj, a->fchg, p[P_FCPW], p[P_FCPB], N, 4 * C, C) < 0)
		return -1;
	gpu_residual_forward(a->res3, a->res2, m->proj, NC);
	return 0;
}

/* m->dres: the gradient of layer l's output on entry, of its input on return. */
static int layer_backward(gpu_model *m, int l)
{
	int B = m->B, T = m->T, N = m->N, C = m->C, NH = m->NH;
	float *p[P_COUNT], *g[P_COUNT];
	layer_tensors(m, m->arr[GPU_PARAMS], l, p);
	layer_tensors(m, m->arr[GPU_GRADS], l, g);
	acts *a = &m->layer[l];
	if (gpu_matmul_backward(m->dbt4c, g[P_FCPW], g[P_FCPB], m->dres, a->fchg, p[P_FCPW], N,
	                        4 * C, C) < 0)
		return -1;
	gpu_gelu_backward(m->dbt4c, a->fch, m->dbt4c, (size_t)4 * N * C);
	if (gpu_matmul_backward(m->dbtc, g[P_FCW], g[P_FCB], m->dbt4c, a->ln2, p[P_FCW], N, C,
	                        4 * C) < 0)
		return -1;
	gpu_layernorm_backward(m->dres, g[P_LN2W], g[P_LN2B], m->dbtc, a->res2, p[P_LN2W],
	                       a->ln2_mean, a->ln2_rstd, N, C);
	if (gpu_matmul_backward(m->dbtc, g[P_PROJW], g[P_PROJB], m->dres, a->atty, p[P_PROJW], N,
	                        C, C) < 0)
		return -1;
	gpu_attention_backward(m->dqkv, m->datt, m->dbtc, a->qkv, a->att, B, T, C, NH);
	if (gpu_matmul_backward(m->dbtc, g[P_QKVW], g[P_QKVB], m->dqkv, a->ln1, p[P_QKVW], N, C,
	                        3 * C) < 0)
		return -1;
	gpu_layernorm_backward(m->dres, g[P_LN1W], g[P_LN1B], m->dbtc, layer_input(m, l),
	                       p[P_LN1W], a->ln1_mean, a->ln1_rstd, N, C);
	return 0;
}

extern "C" {

gpu_model *gpu_model_new(const gpt_config *cfg, int B, int T, const float *params, char *err,
                         size_t errlen)
{
	if (gpt_config_check(cfg, err, errlen) < 0)
		return NULL;
	if (B < 1 || T < 1 || T > cfg->max_seq_len) {
		snprintf(err, errlen, "B %d and T %d do not fit the model (T at most %d)", B, T,
		         cfg->max_seq_len);
		return NULL;
	}
	gpu_model *m = (gpu_model *)calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "out of host memory");
		return NULL;
	}
	m->cfg = *cfg;
	m->B = B;
	m->T = T;
	m->N = B * T;
	m->C = cfg->channels;
	m->NH = cfg->num_heads;
	m->L = cfg->num_layers;
	m->V = cfg->vocab_size;
	m->Vp = cfg->padded_vocab_size;
	m->np = gpt_num_params(cfg);
	m->ntensors = 2 + 12 * m->L + 2;
	m->tensors = (gpt_tensor *)calloc((size_t)m->ntensors, sizeof *m->tensors);
	m->layer = (acts *)calloc((size_t)m->L, sizeof *m->layer);
	m->losses = (float *)malloc((size_t)m->N * sizeof(float));
	if (!m->tensors || !m->layer || !m->losses) {
		snprintf(err, errlen, "out of host memory");
		gpu_model_free(m);
		return NULL;
	}
	gpt_tensors(cfg, m->tensors, m->ntensors);
	cudaError_t e = cudaSuccess;
	for (int k = 0; k < 4 && e == cudaSuccess; k++) {
		e = cudaMalloc((void **)&m->arr[k], m->np * sizeof(float));
		if (e == cudaSuccess)
			e = cudaMemset(m->arr[k], 0, m->np * sizeof(float));
	}
	m->block_bytes = carve_all(m, NULL);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&m->inputs, 2 * (size_t)m->N * sizeof(int32_t));
	if (e == cudaSuccess)
		e = cudaMalloc(&m->block, m->block_bytes);
	if (e == cudaSuccess)
		e = cudaMemcpy(m->arr[GPU_PARAMS], params, m->np * sizeof(float),
		               cudaMemcpyHostToDevice);
	if (e != cudaSuccess) {
		cuda_fail(e, "could not set the model up on the GPU", err, errlen);
		gpu_model_free(m);
		return NULL;
	}
	m->targets = m->inputs + m->N;
	carve_all(m, (char *)m->block);
	return m;
}

void gpu_model_free(gpu_model *m)
{
	if (!m)
		return;
	for (int k = 0; k < 4; k++)
		cudaFree(m->arr[k]);
	cudaFree(m->inputs);
	cudaFree(m->block);
	free(m->tensors);
	free(m->layer);
	free(m->losses);
	free(m);
}

size_t gpu_model_bytes(const gpu_model *m)
{
	return 4 * m->np * sizeof(float) + 2 * (size_t)m->N * sizeof(int32_t) + m->block_bytes;
}

int gpu_model_forward(gpu_model *m, const int32_t *inputs, const int32_t *targets, float *loss,
                      char *err, size_t errlen)
{
	int N = m->N, C = m->C;
	for (int n = 0; n < N; n++)
		if (inputs[n] < 0 || inputs[n] >= m->V || targets[n] < 0 || targets[n] >= m->V) {
			snprintf(err, errlen, "a token at position %d is outside 0 .. %d", n,
			         m->V - 1);
			return -1;
		}
	cudaError_t e = cudaMemcpy(m->inputs, inputs, (size_t)N * sizeof(int32_t),
	                           cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMemcpy(m->targets, targets, (size_t)N * sizeof(int32_t),
		               cudaMemcpyHostToDevice);
	if (e != cudaSuccess)
		return cuda_fail(e, "could not copy the batch to the GPU", err, errlen);
	const float *wte = m->arr[GPU_PARAMS];
	gpu_encoder_forward(m->enc, m->inputs, wte, wte + (size_t)m->Vp * C, m->B, m->T, C);
	for (int l = 0; l < m->L; l++)
		if (layer_forward(m, l) < 0) {
			snprintf(err, errlen, "cuBLASLt refused a matmul of layer %d", l);
			return -1;
		}
	const float *fin = m->arr[GPU_PARAMS] + gpt_unit_offset(&m->cfg, m->L + 1);
	gpu_layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, layer_input(m, m->L), fin, fin + C,
	                      N, C);
	if (gpu_lmhead_forward(m->logits, m->lnf, wte, N, C, m->V, m->Vp) < 0) {
		snprintf(err, errlen, "cuBLASLt refused the LM head");
		return -1;
	}
	gpu_softmax_xent_forward(m->dev_losses, m->lse, m->logits, m->targets, N, m->V, m->Vp);
	e = cudaMemcpy(m->losses, m->dev_losses, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return cuda_fail(e, "the forward failed on the GPU", err, errlen);
	double sum = 0.0;
	for (int n = 0; n < N; n++)
		sum += m->losses[n];
	*loss = (float)(sum / N);
	return 0;
}

int gpu_model_backward(gpu_model *m, float dloss, char *err, size_t errlen)
{
	int N = m->N, C = m->C;
	const float *wte = m->arr[GPU_PARAMS];
	float *dwte = m->arr[GPU_GRADS];
	/* the loss and the LM head; the logits' buffer takes their gradient */
	gpu_softmax_xent_backward(m->logits, m->logits, m->lse, m->targets, dloss / (float)N, N,
	                          m->V, m->Vp);
	if (gpu_lmhead_backward(m->dbtc, dwte, m->logits, m->lnf, wte, N, C, m->V, m->Vp) < 0) {
		snprintf(err, errlen, "cuBLASLt refused the LM head's backward");
		return -1;
	}
	size_t fin = gpt_unit_offset(&m->cfg, m->L + 1);
	cudaMemsetAsync(m->dres, 0, (size_t)N * C * sizeof(float));
	gpu_layernorm_backward(m->dres, m->arr[GPU_GRADS] + fin, m->arr[GPU_GRADS] + fin + C, m->dbtc,
	                       layer_input(m, m->L), m->arr[GPU_PARAMS] + fin, m->lnf_mean,
	                       m->lnf_rstd, N, C);
	for (int l = m->L - 1; l >= 0; l--)
		if (layer_backward(m, l) < 0) {
			snprintf(err, errlen, "cuBLASLt refused a matmul of layer %d's backward", l);
			return -1;
		}
	gpu_encoder_backward(dwte, dwte + (size_t)m->Vp * C, m->dres, m->inputs, m->B, m->T, C);
	return gpu_sync(err, errlen);
}

void gpu_model_zero_grad(gpu_model *m)
{
	cudaMemsetAsync(m->arr[GPU_GRADS], 0, m->np * sizeof(float));
}

int gpu_model_grad_sumsq(gpu_model *m, double *sumsq, char *err, size_t errlen)
{
	gpu_sumsq(m->sumsq, m->sumsq + 1, m->arr[GPU_GRADS], m->np);
	cudaError_t e = cudaMemcpy(sumsq, m->sumsq, sizeof(double), cudaMemcpyDeviceToHost);
	return e == cudaSuccess ? 0 : cuda_fail(e, "the gradient norm failed", err, errlen);
}

int gpu_model_adamw(gpu_model *m, const adamw_config *a, float lr, float grad_scale, int t,
                    char *err, size_t errlen)
{
	for (int k = 0; k < m->ntensors; k++) {
		const gpt_tensor *x = &m->tensors[k];
		size_t o = x->offset;
		gpu_adamw_update(m->arr[GPU_PARAMS] + o, m->arr[GPU_GRADS] + o, m->arr[GPU_ADAM_M] + o,
		                 m->arr[GPU_ADAM_V] + o, x->numel, lr, a->beta1, a->beta2, a->eps,
		                 x->decay ? a->weight_decay : 0.0f, grad_scale, t);
	}
	return gpu_sync(err, errlen);
}

int gpu_model_get(gpu_model *m, gpu_array which, float *host, char *err, size_t errlen)
{
	cudaError_t e =
	    cudaMemcpy(host, m->arr[which], m->np * sizeof(float), cudaMemcpyDeviceToHost);
	return e == cudaSuccess ? 0 : cuda_fail(e, "could not copy from the GPU", err, errlen);
}

int gpu_model_set(gpu_model *m, gpu_array which, const float *host, char *err, size_t errlen)
{
	cudaError_t e =
	    cudaMemcpy(m->arr[which], host, m->np * sizeof(float), cudaMemcpyHostToDevice);
	return e == cudaSuccess ? 0 : cuda_fail(e, "could not copy to the GPU", err, errlen);
}

} /* extern "C" */
