/*
 * model_lowp.cu - the model's layers in bf16 or fp16 (model_gpu.h), the
 * CPU model's order with fused ops:
 *
 *   forward, per layer (ln1 made by the step before):
 *     qkv  = ln1 @ qkvw^T + qkvb                 GEMM, bias epilogue
 *     atty = attention(qkv)                      fused kernel, lse kept
 *     proj = atty @ projw^T + projb              GEMM, bias epilogue
 *     res2 = res + proj; ln2 = LN(res2)          one kernel
 *     fchg = gelu(ln2 @ fcw^T + fcb), fch = pre  GEMM, GELU_AUX_BIAS
 *     proj = fchg @ fcpw^T + fcpb                GEMM, bias epilogue
 *     res3 = res2 + proj; next ln1 (or lnf)      one kernel
 *   then logits = lnf @ wte^T and the classifier, which leaves each row's
 *   unit gradient in place; the backward scales it by dloss / N in the
 *   LM head's GEMMs (alpha).
 *
 * The backward mirrors it; the gradient of fc's pre-activation comes out
 * of the fc-projection's GEMM through the DGELU epilogue. The residual
 * stream's gradient is fp32 (m->dres) with a 16-bit copy for the GEMMs.
 * LayerNorm weights and the encoder are read in fp32 from the master
 * weights; GEMMs read the 16-bit working copy.
 */
#include <cuda_runtime.h>
#include <string.h>

#include "attention_flash.h"
#include "model_gpu_int.h"
#include "ops_lowp.h"

/* The layer's 16-bit weights (lw) and fp32 weights (pw) and gradients (gw). */
typedef struct layer_ptrs {
	void *lw[P_COUNT];
	float *pw[P_COUNT], *gw[P_COUNT];
} layer_ptrs;

/* What layer_ptrs_of fills besides the fp32 weights. */
enum { LP_LOW = 1, LP_GRADS = 2 };

/*
 * Layer l's pointers: its fp32 weights, and as want says its 16-bit ones
 * and (in the backward, which asks where they go) its gradients.
 */
static void layer_ptrs_of(gpu_model *m, int l, int want, layer_ptrs *lp)
{
	const float *p = gpu_unit_params(m, l + 1);
	memset(lp, 0, sizeof(*lp));
	gpu_unit_tensors(m, (void *)p, sizeof(float), (void **)lp->pw);
	if (want & LP_LOW)
		gpu_unit_tensors(m, (void *)gpu_unit_low(m, l + 1, p), 2, lp->lw);
	if (want & LP_GRADS)
		gpu_unit_tensors(m, gpu_unit_grads(m, l + 1), sizeof(float), (void **)lp->gw);
}

static int layer_forward(gpu_model *m, int l)
{
	int B = m->B, T = m->T, N = m->N, C = m->C, NH = m->NH;
	gpu_lowp f = m->fmt;
	layer_ptrs p;
	layer_ptrs_of(m, l, LP_LOW, &p);
	acts *a = &m->cur.layer[l];
	if (gpu_lowp_matmul_forward(a->qkv, NULL, a->ln1, p.lw[P_QKVW], p.lw[P_QKVB], N, C, 3 * C,
	                            3 * C, f) < 0)
		return -1;
	gpu_flash_attention_forward(a->atty, a->att, a->qkv, B, T, C, NH, f);
	if (gpu_lowp_matmul_forward(m->proj, NULL, a->atty, p.lw[P_PROJW], p.lw[P_PROJB], N, C, C,
	                            C, f) < 0)
		return -1;
	gpu_residual_layernorm_forward(a->res2, a->ln2, a->ln2_mean, a->ln2_rstd, layer_input(m, l),
	                               m->proj, p.pw[P_LN2W], p.pw[P_LN2B], N, C, f);
	if (gpu_lowp_matmul_forward(a->fchg, a->fch, a->ln2, p.lw[P_FCW], p.lw[P_FCB], N, C, 4 * C,
	                            4 * C, f) < 0 ||
	    gpu_lowp_matmul_forward(m->proj, NULL, a->fchg, p.lw[P_FCPW], p.lw[P_FCPB], N, 4 * C, C,
	                            C, f) < 0)
		return -1;
	/* the residual add and the next LayerNorm: layer l + 1's ln1, or the final one */
	float *w, *b, *mean, *rstd;
	void *out;
	if (l + 1 < m->L) {
		layer_ptrs next;
		layer_ptrs_of(m, l + 1, 0, &next); /* its LayerNorm alone */
		acts *n = &m->cur.layer[l + 1];
		w = next.pw[P_LN1W];
		b = next.pw[P_LN1B];
		out = n->ln1;
		mean = n->ln1_mean;
		rstd = n->ln1_rstd;
	} else {
		w = (float *)gpu_unit_params(m, m->L + 1);
		b = w + C;
		out = m->cur.lnf;
		mean = m->cur.lnf_mean;
		rstd = m->cur.lnf_rstd;
	}
	gpu_residual_layernorm_forward(a->res3, out, mean, rstd, a->res2, m->proj, w, b, N, C, f);
	return 0;
}

/* m->dres (and its 16-bit copy): the gradient of layer l's output on entry, of its input on return. */
static int layer_backward(gpu_model *m, int l)
{
	int B = m->B, T = m->T, N = m->N, C = m->C, NH = m->NH;
	gpu_lowp f = m->fmt;
	layer_ptrs p;
	layer_ptrs_of(m, l, LP_LOW | LP_GRADS, &p);
	acts *a = &m->cur.layer[l];
	float *cs = m->colsum;
	if (gpu_lowp_matmul_backward(m->dbt4c, p.gw[P_FCPW], p.gw[P_FCPB], cs, m->dres_low, a->fchg,
	                             p.lw[P_FCPW], a->fch, 1.0f, N, 4 * C, C, C, f) < 0 ||
	    gpu_lowp_matmul_backward(m->dbtc, p.gw[P_FCW], p.gw[P_FCB], cs, m->dbt4c, a->ln2,
	                             p.lw[P_FCW], NULL, 1.0f, N, C, 4 * C, 4 * C, f) < 0)
		return -1;
	gpu_lowp_layernorm_backward(m->dres, m->dres_low, p.gw[P_LN2W], p.gw[P_LN2B], cs, m->dbtc,
	                            a->res2, p.pw[P_LN2W], a->ln2_mean, a->ln2_rstd, N, C, f);
	if (gpu_lowp_matmul_backward(m->dbtc, p.gw[P_PROJW], p.gw[P_PROJB], cs, m->dres_low,
	                             a->atty, p.lw[P_PROJW], NULL, 1.0f, N, C, C, C, f) < 0)
		return -1;
	gpu_flash_attention_backward(m->dqkv, m->datt, m->dbtc, a->qkv, a->atty, a->att, B, T, C, NH,
	                             f);
	if (gpu_lowp_matmul_backward(m->dbtc, p.gw[P_QKVW], p.gw[P_QKVB], cs, m->dqkv, a->ln1,
	                             p.lw[P_QKVW], NULL, 1.0f, N, C, 3 * C, 3 * C, f) < 0)
		return -1;
	gpu_lowp_layernorm_backward(m->dres, m->dres_low, p.gw[P_LN1W], p.gw[P_LN1B], cs, m->dbtc,
	                            layer_input(m, l), p.pw[P_LN1W], a->ln1_mean, a->ln1_rstd, N, C,
	                            f);
	return 0;
}

int lowp_model_forward(gpu_model *m)
{
	int N = m->N, C = m->C;
	gpu_lowp f = m->fmt;
	layer_ptrs first;
	layer_ptrs_of(m, 0, 0, &first);
	acts *a0 = &m->cur.layer[0];
	/* m->cur.enc is in place; layer 0's LayerNorm is the only one without a residual add */
	gpu_residual_layernorm_forward(m->cur.enc, a0->ln1, a0->ln1_mean, a0->ln1_rstd, m->cur.enc, NULL,
	                               first.pw[P_LN1W], first.pw[P_LN1B], N, C, f);
	for (int l = 0; l < m->L; l++)
		if (layer_forward(m, l) < 0)
			return -1;
	/* the LM head over wte's V real rows (the working copy's first rows) */
	const void *wte = gpu_unit_low(m, 0, gpu_unit_params(m, 0));
	if (gpu_lowp_matmul_forward(m->cur.logits, NULL, m->cur.lnf, wte, NULL, N, C, m->V, m->Vp, f) < 0)
		return -1;
	gpu_lowp_classifier(m->cur.logits, m->cur.dev_losses, m->cur.lse, m->cur.targets, N, m->V, m->Vp, f);
	return 0;
}

int lowp_model_backward(gpu_model *m, float dloss)
{
	int N = m->N, C = m->C;
	gpu_lowp f = m->fmt;
	/* the logits hold softmax - onehot: the loss's gradient is that times dloss / N */
	const void *wte = gpu_unit_low(m, 0, gpu_unit_params(m, 0));
	if (gpu_lowp_matmul_backward(m->dbtc, gpu_unit_grads(m, 0), NULL, NULL, m->cur.logits, m->cur.lnf,
	                             wte, NULL, dloss / (float)N, N, C, m->V, m->Vp, f) < 0)
		return -1;
	cudaMemsetAsync(m->dres, 0, (size_t)N * C * sizeof(float));
	const float *w = gpu_unit_params(m, m->L + 1);
	float *g = gpu_unit_grads(m, m->L + 1);
	gpu_lowp_layernorm_backward(m->dres, m->dres_low, g, g + C, m->colsum, m->dbtc,
	                            layer_input(m, m->L), w, m->cur.lnf_mean, m->cur.lnf_rstd, N, C, f);
	unit_done(m, m->L + 1);
	for (int l = m->L - 1; l >= 0; l--) {
		if (layer_backward(m, l) < 0)
			return -1;
		unit_done(m, l + 1);
	}
	return 0;
}
