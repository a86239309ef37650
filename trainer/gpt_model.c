/*
 * gpt_model.c - the model of gpt.h: activations, forward and backward over
 * the ops of ops.h, for the whole model or a part of it (gpt_part).
 *
 * Shapes: B batch, T sequence, N = B * T positions, C channels, NH heads,
 * L layers, V vocabulary, Vp padded vocabulary. A part computes Ll layers
 * with Cl = C / tp local channels and NHl = NH / tp local heads (head
 * size C / NH as in the whole model).
 *
 * One allocation (gpt_new_part) holds, per slot, every activation the
 * backward needs, plus the gradient scratch of one layer at a time: the
 * backward walks the layers down with a single running residual gradient,
 * so activation gradients cost a few [N, 4C] buffers, not a copy of the
 * forward. Parameters and gradients come from the caller's hooks, one
 * unit at a time, in the order gpt.h documents.
 *
 * Recomputation changes only which per-layer activations a slot keeps:
 * those it drops live in one layer-sized working set and are computed
 * again, by the same calls on the same inputs, right before the backward
 * that reads them. The results are therefore the same bits.
 *
 * Tensor parallel: the QKV and first MLP matmuls are column parallel (each
 * rank computes its heads' q, k, v and its slice of the MLP's hidden
 * units); the attention and MLP projections are row parallel (each rank
 * sums over its slice of the input channels, an all-reduce adds the
 * partial sums, then the replicated bias is added). In the backward the
 * input gradients of the column-parallel matmuls are partial in the same
 * way and are all-reduced before their LayerNorm's backward.
 *
 * Precision: in BF16 and FP16 mode every matmul reads a rounded copy of
 * its weight and bias (made into scratch right before the matmul) and an
 * input that was rounded when it was stored; gradients that feed a
 * matmul are rounded the same way. Arithmetic stays fp32 throughout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"
#include "gpt_layer.h"
#include "layout.h"
#include "lowp.h"
#include "ops.h"

/* A broken caller contract (not a runtime condition): say where, and stop. */
#define GPT_CHECK(cond, ...)                                                                       \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* The activations of one layer that its backward reads. */
enum layer_act {
	A_LN1,      /* [N,C] */
	A_LN1_MEAN, /* [N] */
	A_LN1_RSTD, /* [N] */
	A_QKV,      /* [N,3Cl] */
	A_ATTY,     /* [N,Cl] attention output, before attproj */
	A_ATT,      /* [B,NHl,T,T] attention probabilities */
	A_RES2,     /* [N,C] residual after attention */
	A_LN2,      /* [N,C] */
	A_LN2_MEAN, /* [N] */
	A_LN2_RSTD, /* [N] */
	A_FCH,      /* [N,4Cl] fc output, GELU input */
	A_FCHG,     /* [N,4Cl] GELU output */
	A_RES3,     /* [N,C] residual after the MLP: the layer's output */
	A_COUNT
};

/* What one micro-batch in flight keeps. */
typedef struct slot {
	int32_t *inputs, *targets;  /* [N] copies for the backward */
	float *in;                  /* [N,C] stage input: the embeddings' output, or x */
	float *act[A_COUNT];        /* [Ll, ...] each, for the activations kept per layer */
	float *lnf;                 /* [N,C] (last stage, as all below) */
	float *lnf_mean, *lnf_rstd; /* [N] */
	float *logits;              /* [N,Vp] */
	float *lse;                 /* [N] log-sum-exp of each row of logits */
	float *losses;              /* [N] */
	bool have_forward, have_targets;
} slot;

struct gpt_model {
	gpt_config cfg;
	gpt_part part;
	int B, T;
	int Cl, NHl; /* local channels and heads */
	gpt_precision prec;
	size_t loff[LT_COUNT]; /* local tensor offsets inside a layer unit */
	void *mem;             /* the one allocation everything below lives in */
	size_t bytes;          /* its size */
	int error;             /* first failed all-reduce (COMM_ERR_*), or 0 */
	slot *slots;           /* [part.slots] */
	float *work[A_COUNT];  /* one layer of each activation that slots do not keep */

	/* scratch of the backward, shared by the slots */
	float *proj;    /* [N,C] attproj / fcproj output before its residual add */
	float *dres;    /* [N,C] the running residual gradient */
	float *dbtc;    /* [N,C] */
	float *dqkv;    /* [N,3Cl] */
	float *dbt4c;   /* [N,4Cl] */
	float *datt;    /* [B,NHl,T,T] */
	float *dlogits; /* [N,Vp] (last stage) */
	float *wlow;    /* rounded weight copy (BF16/FP16 only) */
	float *blow;    /* rounded bias copy (BF16/FP16 only) */
};

/* Floats of activation k for one layer. */
static size_t act_numel(const gpt_model *m, int k)
{
	size_t N = (size_t)m->B * m->T, C = (size_t)m->cfg.channels, Cl = (size_t)m->Cl;
	switch (k) {
	case A_LN1_MEAN:
	case A_LN1_RSTD:
	case A_LN2_MEAN:
	case A_LN2_RSTD:
		return N;
	case A_QKV:
		return 3 * N * Cl;
	case A_ATTY:
		return N * Cl;
	case A_ATT:
		return (size_t)m->B * m->NHl * m->T * m->T;
	case A_FCH:
	case A_FCHG:
		return 4 * N * Cl;
	default: /* LayerNorm outputs, residuals */
		return N * C;
	}
}

/* Whether a slot keeps activation k of every layer (else the working set has it). */
static bool act_kept(const gpt_model *m, int k)
{
	switch (m->part.recompute) {
	case GPT_RECOMPUTE_SELECTIVE:
		return k != A_ATT;
	case GPT_RECOMPUTE_FULL:
		return k == A_RES3;
	default:
		return true;
	}
}

#define CARVE_ALIGN 16 /* floats: 64 bytes */

/* The next count floats of the block at base, 64-byte aligned; with base
 * NULL only counts (*used grows either way). */
static float *carve(float *base, size_t *used, size_t count)
{
	float *p = base && count ? base + *used : NULL;
	*used += (count + CARVE_ALIGN - 1) / CARVE_ALIGN * CARVE_ALIGN;
	return p;
}

/* Point every buffer of m into base (NULL: just count). RET floats needed. */
static size_t model_layout(gpt_model *m, float *base)
{
	const gpt_part *pt = &m->part;
	size_t C = (size_t)m->cfg.channels, Cl = (size_t)m->Cl, Ll = (size_t)pt->num_layers;
	size_t N = (size_t)m->B * m->T, NC = N * C;
	size_t V = (size_t)m->cfg.vocab_size, Vp = (size_t)m->cfg.padded_vocab_size;
	size_t head = pt->has_head ? 1 : 0;
	size_t wmax = 4 * Cl * C > head * V * C ? 4 * Cl * C : head * V * C;
	size_t bmax = 4 * Cl > C ? 4 * Cl : C;
	bool lowp = m->prec != GPT_FP32;
	size_t u = 0;

	for (int i = 0; i < pt->slots; i++) {
		slot *s = &m->slots[i];
		/* token ids share the block: int32_t is as large as float */
		s->inputs = (int32_t *)carve(base, &u, pt->has_embed ? N : 0);
		s->targets = (int32_t *)carve(base, &u, head * N);
		s->in = carve(base, &u, NC);
		for (int k = 0; k < A_COUNT; k++)
			s->act[k] = carve(base, &u, act_kept(m, k) ? Ll * act_numel(m, k) : 0);
		s->lnf = carve(base, &u, head * NC);
		s->lnf_mean = carve(base, &u, head * N);
		s->lnf_rstd = carve(base, &u, head * N);
		s->logits = carve(base, &u, head * N * Vp);
		s->lse = carve(base, &u, head * N);
		s->losses = carve(base, &u, head * N);
	}
	for (int k = 0; k < A_COUNT; k++)
		m->work[k] = carve(base, &u, act_kept(m, k) ? 0 : act_numel(m, k));
	m->proj = carve(base, &u, NC);
	m->dres = carve(base, &u, NC);
	m->dbtc = carve(base, &u, NC);
	m->dqkv = carve(base, &u, 3 * N * Cl);
	m->dbt4c = carve(base, &u, 4 * N * Cl);
	m->datt = carve(base, &u, act_numel(m, A_ATT));
	m->dlogits = carve(base, &u, head * N * Vp);
	m->wlow = carve(base, &u, lowp ? wmax : 0);
	m->blow = carve(base, &u, lowp ? bmax : 0);
	return u;
}

/* RET 0, or -1 with a message when part does not fit cfg. */
static int part_check(const gpt_config *cfg, const gpt_part *pt, char *err, size_t errlen)
{
	int L = cfg->num_layers;
	if (pt->tp < 1) {
		snprintf(err, errlen, "tensor_parallel must be at least 1, not %d", pt->tp);
		return -1;
	}
	layout l = {.tensor_parallel = pt->tp};
	layout_fit fit = {.heads = cfg->num_heads};
	if (layout_check_msg(&l, &fit, err, errlen) < 0)
		return -1;
	if (pt->tp > 1 && (!pt->tp_comm || comm_size(pt->tp_comm) != pt->tp)) {
		snprintf(err, errlen, "tensor_parallel %d needs a tensor group of %d ranks", pt->tp,
		         pt->tp);
		return -1;
	}
	if (pt->first_layer < 0 || pt->num_layers < 1 || pt->first_layer > L - pt->num_layers) {
		snprintf(err, errlen, "layers %d .. %d are outside the model's 0 .. %d",
		         pt->first_layer, pt->first_layer + pt->num_layers - 1, L - 1);
		return -1;
	}
	if (pt->has_embed && pt->first_layer != 0) {
		snprintf(err, errlen, "a part with the embeddings must start at layer 0, not %d",
		         pt->first_layer);
		return -1;
	}
	if (pt->has_head && pt->first_layer + pt->num_layers != L) {
		snprintf(err, errlen, "a part with the LM head must end at layer %d, not %d", L - 1,
		         pt->first_layer + pt->num_layers - 1);
		return -1;
	}
	if (pt->slots < 1) {
		snprintf(err, errlen, "a part needs at least one slot, not %d", pt->slots);
		return -1;
	}
	if (pt->recompute != GPT_RECOMPUTE_NONE && pt->recompute != GPT_RECOMPUTE_SELECTIVE &&
	    pt->recompute != GPT_RECOMPUTE_FULL) {
		snprintf(err, errlen, "unknown recompute mode %d", (int)pt->recompute);
		return -1;
	}
	return 0;
}

/* Local tensor offsets of a layer unit: the cumulative local sizes (mp.h's rule). */
static void local_offsets(const gpt_config *cfg, int tp, size_t loff[LT_COUNT])
{
	gpt_tensor t[2 + LT_COUNT]; /* wte, wpe, then layer 0 */
	gpt_tensors(cfg, t, 2 + LT_COUNT);
	size_t o = 0;
	for (int j = 0; j < LT_COUNT; j++) {
		GPT_CHECK(strcmp(t[2 + j].name + 3, gpt_layer_tensor_name[j]) == 0,
		          "layer tensor %d is %s, not %s", j, t[2 + j].name,
		          gpt_layer_tensor_name[j]);
		loff[j] = o;
		o += gpt_tensor_local_numel(&t[2 + j], tp);
	}
}

gpt_model *gpt_new_part(const gpt_config *cfg, const gpt_part *part, int B, int T,
                        gpt_precision precision, char *err, size_t errlen)
{
	if (gpt_config_check(cfg, err, errlen) != 0 || part_check(cfg, part, err, errlen) != 0)
		return NULL;
	if (B <= 0 || T <= 0) {
		snprintf(err, errlen, "batch size %d and sequence length %d must be positive", B,
		         T);
		return NULL;
	}
	if (T > cfg->max_seq_len) {
		snprintf(err, errlen, "sequence length %d exceeds max_seq_len %d", T,
		         cfg->max_seq_len);
		return NULL;
	}
	if ((size_t)B * T * cfg->num_heads > (size_t)1 << 30) {
		snprintf(err, errlen, "batch size %d times sequence length %d is too large", B, T);
		return NULL;
	}
	if (precision != GPT_FP32 && precision != GPT_BF16 && precision != GPT_FP16) {
		snprintf(err, errlen, "unknown precision %d", (int)precision);
		return NULL;
	}

	gpt_model *m = calloc(1, sizeof *m);
	slot *slots = calloc((size_t)part->slots, sizeof *slots);
	if (!m || !slots) {
		free(m);
		free(slots);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->cfg = *cfg;
	m->part = *part;
	if (part->tp == 1)
		m->part.tp_comm = NULL;
	m->B = B;
	m->T = T;
	m->Cl = cfg->channels / part->tp;
	m->NHl = cfg->num_heads / part->tp;
	m->prec = precision;
	m->slots = slots;
	local_offsets(cfg, part->tp, m->loff);
	size_t total = model_layout(m, NULL);
	m->bytes = total * sizeof(float);
	m->mem = aligned_alloc(CARVE_ALIGN * sizeof(float), m->bytes);
	if (!m->mem) {
		snprintf(err, errlen, "out of memory allocating %zu MiB of activations",
		         m->bytes >> 20);
		free(slots);
		free(m);
		return NULL;
	}
	model_layout(m, m->mem);
	return m;
}

gpt_model *gpt_new(const gpt_config *cfg, int B, int T, gpt_precision precision, char *err,
                   size_t errlen)
{
	gpt_part whole = gpt_part_whole(cfg);
	return gpt_new_part(cfg, &whole, B, T, precision, err, errlen);
}

void gpt_free(gpt_model *m)
{
	if (!m)
		return;
	free(m->mem);
	free(m->slots);
	free(m);
}

size_t gpt_activation_bytes(const gpt_model *m)
{
	return m->bytes;
}

int gpt_error(const gpt_model *m)
{
	return m->error;
}

const float *gpt_logits(const gpt_model *m)
{
	return m->slots[0].logits;
}

static slot *slot_of(const gpt_model *m, int i)
{
	GPT_CHECK(i >= 0 && i < m->part.slots, "slot %d is outside 0 .. %d", i, m->part.slots - 1);
	return &m->slots[i];
}

/* The output of local layer l (its RES3, kept in every mode); l -1: the stage input. */
static float *layer_output(const gpt_model *m, const slot *s, int l)
{
	return l < 0 ? s->in : s->act[A_RES3] + (size_t)l * act_numel(m, A_RES3);
}

const float *gpt_stage_output(const gpt_model *m, int i)
{
	const slot *s = slot_of(m, i);
	GPT_CHECK(s->have_forward, "gpt_stage_output of slot %d before its forward", i);
	return layer_output(m, s, m->part.num_layers - 1);
}

const float *gpt_stage_input_grad(const gpt_model *m)
{
	return m->dres;
}

/* a[k]: activation k of local layer l of slot s, kept or in the working set. */
static void layer_acts(const gpt_model *m, const slot *s, int l, float *a[A_COUNT])
{
	for (int k = 0; k < A_COUNT; k++)
		a[k] = act_kept(m, k) ? s->act[k] + (size_t)l * act_numel(m, k) : m->work[k];
}

/* Pointers to the tensors of a layer unit. */
static void layer_params(const gpt_model *m, const float *unit, const float *t[LT_COUNT])
{
	for (int j = 0; j < LT_COUNT; j++)
		t[j] = unit + m->loff[j];
}

static void layer_grads(const gpt_model *m, float *unit, float *t[LT_COUNT])
{
	for (int j = 0; j < LT_COUNT; j++)
		t[j] = unit + m->loff[j];
}

/* Sum buf [n] over the tensor group; after a failure, nothing more (gpt_error). */
static void tp_allreduce(gpt_model *m, float *buf, size_t n)
{
	if (m->part.tp == 1 || m->error)
		return;
	int rc = comm_allreduce_sum(m->part.tp_comm, buf, n);
	if (rc)
		m->error = rc;
}

/* The copy of w [n] a matmul reads: w itself in FP32, else rounded into dst. */
static const float *lowp_operand(const gpt_model *m, float *dst, const float *w, size_t n)
{
	if (m->prec == GPT_FP32)
		return w;
	lowp_round_copy(dst, w, n, m->prec);
	return dst;
}

/* out [N,OC] += b [OC] on every row. */
static void add_bias(float *out, const float *b, int N, int OC)
{
#pragma omp parallel for
	for (int n = 0; n < N; n++)
		for (int o = 0; o < OC; o++)
			out[(size_t)n * OC + o] += b[o];
}

/*
 * out [N,OC] = inp @ w^T + b, with rounded operands and a rounded result.
 * row_parallel (under tp > 1): inp and w hold this rank's slice of the C
 * input channels, so the product is a partial sum; it is all-reduced over
 * the tensor group and the (replicated) bias added after that.
 */
static void mm_forward(gpt_model *m, float *out, const float *inp, const float *w, const float *b,
                       int N, int C, int OC, bool row_parallel)
{
	w = lowp_operand(m, m->wlow, w, (size_t)OC * C);
	b = lowp_operand(m, m->blow, b, (size_t)OC);
	if (row_parallel && m->part.tp > 1) {
		matmul_forward(out, inp, w, NULL, N, C, OC);
		tp_allreduce(m, out, (size_t)N * OC);
		add_bias(out, b, N, OC);
	} else {
		matmul_forward(out, inp, w, b, N, C, OC);
	}
	lowp_round_buf(out, (size_t)N * OC, m->prec);
}

/*
 * matmul_backward; dout is rounded in place first, as a matmul input.
 * col_parallel (under tp > 1): w holds this rank's slice of the OC output
 * rows, so dinp is a partial sum, all-reduced over the tensor group.
 */
static void mm_backward(gpt_model *m, float *dinp, float *dw, float *db, float *dout,
                        const float *inp, const float *w, int N, int C, int OC, bool col_parallel)
{
	lowp_round_buf(dout, (size_t)N * OC, m->prec);
	w = lowp_operand(m, m->wlow, w, (size_t)OC * C);
	matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC);
	if (col_parallel)
		tp_allreduce(m, dinp, (size_t)N * C);
	lowp_round_buf(dinp, (size_t)N * C, m->prec);
}

static void check_tokens(const int32_t *tok, size_t n, int V, const char *what)
{
	for (size_t i = 0; i < n; i++)
		GPT_CHECK(tok[i] >= 0 && tok[i] < V,
		          "%s token %d at position %zu is outside [0, %d)", what, (int)tok[i], i,
		          V);
}

/* One layer's forward from its input res into the activations a. */
static void layer_forward(gpt_model *m, const float *const p[LT_COUNT], float *const a[A_COUNT],
                          const float *res)
{
	int B = m->B, T = m->T, N = B * T, C = m->cfg.channels, Cl = m->Cl;
	size_t NC = (size_t)N * C, NCl = (size_t)N * Cl;
	gpt_precision prec = m->prec;

	layernorm_forward(a[A_LN1], a[A_LN1_MEAN], a[A_LN1_RSTD], res, p[LT_LN1W], p[LT_LN1B], N,
	                  C);
	lowp_round_buf(a[A_LN1], NC, prec);
	mm_forward(m, a[A_QKV], a[A_LN1], p[LT_QKVW], p[LT_QKVB], N, C, 3 * Cl, false);
	attention_forward(a[A_ATTY], a[A_ATT], a[A_QKV], B, T, Cl, m->NHl, prec);
	lowp_round_buf(a[A_ATTY], NCl, prec);
	mm_forward(m, m->proj, a[A_ATTY], p[LT_ATTPROJW], p[LT_ATTPROJB], N, Cl, C, true);
	residual_forward(a[A_RES2], res, m->proj, NC);
	lowp_round_buf(a[A_RES2], NC, prec);

	layernorm_forward(a[A_LN2], a[A_LN2_MEAN], a[A_LN2_RSTD], a[A_RES2], p[LT_LN2W], p[LT_LN2B],
	                  N, C);
	lowp_round_buf(a[A_LN2], NC, prec);
	mm_forward(m, a[A_FCH], a[A_LN2], p[LT_FCW], p[LT_FCB], N, C, 4 * Cl, false);
	gelu_forward(a[A_FCHG], a[A_FCH], 4 * NCl);
	lowp_round_buf(a[A_FCHG], 4 * NCl, prec);
	mm_forward(m, m->proj, a[A_FCHG], p[LT_FCPROJW], p[LT_FCPROJB], N, 4 * Cl, C, true);
	residual_forward(a[A_RES3], a[A_RES2], m->proj, NC);
	lowp_round_buf(a[A_RES3], NC, prec);
}

float gpt_forward_part(gpt_model *m, const gpt_hooks *h, int slot_index, const int32_t *inputs,
                       const float *x, const int32_t *targets)
{
	const gpt_config *cfg = &m->cfg;
	const gpt_part *pt = &m->part;
	slot *s = slot_of(m, slot_index);
	int B = m->B, T = m->T, N = B * T;
	int C = cfg->channels, L = cfg->num_layers;
	int V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
	size_t NC = (size_t)N * C;
	gpt_precision prec = m->prec;

	if (pt->has_embed) {
		GPT_CHECK(inputs, "the first stage's forward needs inputs");
		check_tokens(inputs, (size_t)N, V, "input");
		memcpy(s->inputs, inputs, (size_t)N * sizeof *inputs);
	} else {
		GPT_CHECK(x, "a stage without the embeddings needs its input x");
	}
	s->have_forward = true;
	s->have_targets = pt->has_head && targets != NULL;
	if (s->have_targets) {
		check_tokens(targets, (size_t)N, V, "target");
		memcpy(s->targets, targets, (size_t)N * sizeof *targets);
	}

	if (pt->has_embed) {
		const float *emb = h->params(h->ctx, 0);
		encoder_forward(s->in, inputs, emb, emb + (size_t)Vp * C, B, T, C);
		lowp_round_buf(s->in, NC, prec);
	} else {
		memcpy(s->in, x, NC * sizeof *x);
	}

	for (int l = 0; l < pt->num_layers; l++) {
		const float *p[LT_COUNT];
		float *a[A_COUNT];
		layer_params(m, h->params(h->ctx, pt->first_layer + l + 1), p);
		layer_acts(m, s, l, a);
		layer_forward(m, p, a, layer_output(m, s, l - 1));
	}
	if (!pt->has_head)
		return 0.0f;

	const float *fin = h->params(h->ctx, L + 1);
	layernorm_forward(s->lnf, s->lnf_mean, s->lnf_rstd, layer_output(m, s, pt->num_layers - 1),
	                  fin, fin + C, N, C);
	lowp_round_buf(s->lnf, NC, prec);

	const float *emb = h->params(h->ctx, 0);
	const float *wte = lowp_operand(m, m->wlow, emb, (size_t)V * C);
	lmhead_forward(s->logits, s->lnf, wte, N, C, V, Vp);
	lowp_round_buf(s->logits, (size_t)N * Vp, prec);

	if (!s->have_targets)
		return 0.0f;
	softmax_xent_forward(s->losses, s->lse, s->logits, s->targets, N, V, Vp);
	double sum = 0.0;
	for (int n = 0; n < N; n++)
		sum += s->losses[n];
	return (float)(sum / N);
}

/* One layer's backward: m->dres is the gradient of its output on entry, of its input res on
 * return. Recomputes first what the slot did not keep. */
static void layer_backward(gpt_model *m, const float *const p[LT_COUNT], float *const g[LT_COUNT],
                           float *const a[A_COUNT], const float *res)
{
	int B = m->B, T = m->T, N = B * T, C = m->cfg.channels, Cl = m->Cl;
	size_t NCl = (size_t)N * Cl;
	gpt_precision prec = m->prec;

	if (m->part.recompute == GPT_RECOMPUTE_FULL)
		layer_forward(m, p, a, res);

	/* MLP: dres is the gradient of res3, and so of res2 too */
	mm_backward(m, m->dbt4c, g[LT_FCPROJW], g[LT_FCPROJB], m->dres, a[A_FCHG], p[LT_FCPROJW], N,
	            4 * Cl, C, false);
	gelu_backward(m->dbt4c, a[A_FCH], m->dbt4c, 4 * NCl);
	mm_backward(m, m->dbtc, g[LT_FCW], g[LT_FCB], m->dbt4c, a[A_LN2], p[LT_FCW], N, C, 4 * Cl,
	            true);
	layernorm_backward(m->dres, g[LT_LN2W], g[LT_LN2B], m->dbtc, a[A_RES2], p[LT_LN2W],
	                   a[A_LN2_MEAN], a[A_LN2_RSTD], N, C);

	/* attention: dres is now the gradient of res2, and so of res */
	mm_backward(m, m->dbtc, g[LT_ATTPROJW], g[LT_ATTPROJB], m->dres, a[A_ATTY], p[LT_ATTPROJW],
	            N, Cl, C, false);
	if (m->part.recompute == GPT_RECOMPUTE_SELECTIVE)
		/* the probabilities again; the output (kept as A_ATTY) goes to scratch */
		attention_forward(m->proj, a[A_ATT], a[A_QKV], B, T, Cl, m->NHl, prec);
	attention_backward(m->dqkv, m->datt, m->dbtc, a[A_QKV], a[A_ATT], B, T, Cl, m->NHl, prec);
	mm_backward(m, m->dbtc, g[LT_QKVW], g[LT_QKVB], m->dqkv, a[A_LN1], p[LT_QKVW], N, C, 3 * Cl,
	            true);
	layernorm_backward(m->dres, g[LT_LN1W], g[LT_LN1B], m->dbtc, res, p[LT_LN1W], a[A_LN1_MEAN],
	                   a[A_LN1_RSTD], N, C);
}

void gpt_backward_part(gpt_model *m, const gpt_hooks *h, int slot_index, float dloss,
                       const float *dy)
{
	const gpt_config *cfg = &m->cfg;
	const gpt_part *pt = &m->part;
	slot *s = slot_of(m, slot_index);
	int B = m->B, T = m->T, N = B * T;
	int C = cfg->channels, L = cfg->num_layers;
	int V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
	size_t NC = (size_t)N * C;
	gpt_precision prec = m->prec;

	GPT_CHECK(s->have_forward, "the backward of slot %d needs its forward", slot_index);
	if (pt->has_head) {
		GPT_CHECK(s->have_targets, "gpt_backward needs a forward with targets");
		/* the loss and the LM head (unit 0) */
		softmax_xent_backward(m->dlogits, s->logits, s->lse, s->targets, dloss / (float)N,
		                      N, V, Vp);
		lowp_round_buf(m->dlogits, (size_t)N * Vp, prec);
		const float *emb = h->params(h->ctx, 0);
		const float *wte = lowp_operand(m, m->wlow, emb, (size_t)V * C);
		float *demb = h->grads(h->ctx, 0);
		lmhead_backward(m->dbtc, demb, m->dlogits, s->lnf, wte, N, C, V, Vp);
		lowp_round_buf(m->dbtc, NC, prec);

		/* final LayerNorm (unit L + 1) */
		const float *fin = h->params(h->ctx, L + 1);
		float *dfin = h->grads(h->ctx, L + 1);
		memset(m->dres, 0, NC * sizeof(float));
		layernorm_backward(m->dres, dfin, dfin + C, m->dbtc,
		                   layer_output(m, s, pt->num_layers - 1), fin, s->lnf_mean,
		                   s->lnf_rstd, N, C);
		if (h->grads_done)
			h->grads_done(h->ctx, L + 1);
	} else {
		GPT_CHECK(dy, "a stage without the LM head needs the gradient dy of its output");
		memcpy(m->dres, dy, NC * sizeof *dy);
	}

	for (int l = pt->num_layers - 1; l >= 0; l--) {
		int unit = pt->first_layer + l + 1;
		const float *p[LT_COUNT];
		float *g[LT_COUNT];
		float *a[A_COUNT];
		layer_params(m, h->params(h->ctx, unit), p);
		layer_grads(m, h->grads(h->ctx, unit), g);
		layer_acts(m, s, l, a);
		layer_backward(m, p, g, a, layer_output(m, s, l - 1));
		if (h->grads_done)
			h->grads_done(h->ctx, unit);
	}

	if (pt->has_embed) {
		/* embeddings (unit 0 again): the encoder's backward reads no
		 * parameters, but the unit is announced in the documented order */
		lowp_round_buf(m->dres, NC, prec);
		(void)h->params(h->ctx, 0);
		float *demb = h->grads(h->ctx, 0);
		encoder_backward(demb, demb + (size_t)Vp * C, m->dres, s->inputs, B, T, C);
		if (h->grads_done)
			h->grads_done(h->ctx, 0);
	} else if (pt->has_head && h->grads_done) {
		h->grads_done(h->ctx, 0); /* the LM head's share of unit 0 is complete */
	}
}

float gpt_forward(gpt_model *m, const gpt_hooks *h, const int32_t *inputs, const int32_t *targets)
{
	GPT_CHECK(m->part.has_embed && m->part.has_head, "gpt_forward needs a whole model");
	return gpt_forward_part(m, h, 0, inputs, NULL, targets);
}

void gpt_backward(gpt_model *m, const gpt_hooks *h, float dloss)
{
	GPT_CHECK(m->part.has_embed && m->part.has_head, "gpt_backward needs a whole model");
	gpt_backward_part(m, h, 0, dloss, NULL);
}
