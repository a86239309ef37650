/*
 * gpt.c - the GPT-2 decoder of gpt.h: layout, initialisation, forward and
 * backward over the ops of ops.h.
 *
 * Shapes: B batch, T sequence, N = B * T positions, C channels, NH heads,
 * L layers, V vocabulary, Vp padded vocabulary.
 *
 * One allocation (gpt_new) holds every activation the backward needs, per
 * layer, plus the gradient scratch of one layer at a time: the backward
 * walks the layers down with a single running residual gradient, so
 * activation gradients cost a few [N, 4C] buffers, not a copy of the
 * forward. Parameters and gradients come from the caller's hooks, one
 * unit at a time, in the order gpt.h documents.
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

/* The tensors of one layer unit, in layout order. */
enum layer_tensor {
	LT_LN1W,
	LT_LN1B,
	LT_QKVW,
	LT_QKVB,
	LT_ATTPROJW,
	LT_ATTPROJB,
	LT_LN2W,
	LT_LN2B,
	LT_FCW,
	LT_FCB,
	LT_FCPROJW,
	LT_FCPROJB,
	LT_COUNT
};

static const char *const layer_tensor_name[LT_COUNT] = {
    "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw",  "fcprojb",
};

static size_t layer_tensor_numel(int tensor, size_t C)
{
	switch (tensor) {
	case LT_QKVW:
		return 3 * C * C;
	case LT_QKVB:
		return 3 * C;
	case LT_ATTPROJW:
		return C * C;
	case LT_FCW:
	case LT_FCPROJW:
		return 4 * C * C;
	case LT_FCB:
		return 4 * C;
	default: /* LayerNorm weights and biases, attprojb, fcprojb */
		return C;
	}
}

/* off[j]: first float of tensor j inside a layer unit. */
static void layer_offsets(size_t C, size_t off[LT_COUNT])
{
	size_t o = 0;
	for (int j = 0; j < LT_COUNT; j++) {
		off[j] = o;
		o += layer_tensor_numel(j, C);
	}
}

int gpt_config_check(const gpt_config *cfg, char *err, size_t errlen)
{
	const struct {
		const char *name;
		int value;
	} fields[] = {
	    {"max_seq_len", cfg->max_seq_len},
	    {"vocab_size", cfg->vocab_size},
	    {"padded_vocab_size", cfg->padded_vocab_size},
	    {"num_layers", cfg->num_layers},
	    {"num_heads", cfg->num_heads},
	    {"channels", cfg->channels},
	};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (fields[i].value <= 0) {
			snprintf(err, errlen, "%s must be positive, not %d", fields[i].name,
			         fields[i].value);
			return -1;
		}
	if (cfg->num_layers > (GPT_MAX_TENSORS - 4) / LT_COUNT) {
		snprintf(err, errlen, "num_layers %d exceeds the limit of %d", cfg->num_layers,
		         (GPT_MAX_TENSORS - 4) / LT_COUNT);
		return -1;
	}
	if (cfg->channels % cfg->num_heads != 0) {
		snprintf(err, errlen, "num_heads %d does not divide channels %d", cfg->num_heads,
		         cfg->channels);
		return -1;
	}
	if (cfg->padded_vocab_size < cfg->vocab_size) {
		snprintf(err, errlen, "padded_vocab_size %d is smaller than vocab_size %d",
		         cfg->padded_vocab_size, cfg->vocab_size);
		return -1;
	}
	if (cfg->padded_vocab_size % 64 != 0) {
		snprintf(err, errlen, "padded_vocab_size %d is not a multiple of 64",
		         cfg->padded_vocab_size);
		return -1;
	}
	if (cfg->channels > (1 << 20)) {
		snprintf(err, errlen, "channels %d exceeds the limit of %d", cfg->channels,
		         1 << 20);
		return -1;
	}
	return 0;
}

int gpt_num_units(const gpt_config *cfg)
{
	return cfg->num_layers + 2;
}

size_t gpt_unit_numel(const gpt_config *cfg, int unit)
{
	size_t C = (size_t)cfg->channels;
	if (unit == 0)
		return ((size_t)cfg->padded_vocab_size + (size_t)cfg->max_seq_len) * C;
	if (unit == cfg->num_layers + 1)
		return 2 * C;
	return 12 * C * C + 13 * C;
}

size_t gpt_unit_offset(const gpt_config *cfg, int unit)
{
	if (unit == 0)
		return 0;
	return gpt_unit_numel(cfg, 0) + (size_t)(unit - 1) * gpt_unit_numel(cfg, 1);
}

size_t gpt_num_params(const gpt_config *cfg)
{
	return gpt_unit_offset(cfg, cfg->num_layers + 1) + gpt_unit_numel(cfg, cfg->num_layers + 1);
}

/* Shape and tensor-parallel split of layer tensor j (gpt.h, gpt_split). */
static void layer_tensor_shape(int j, size_t C, size_t *rows, size_t *cols, gpt_split *split)
{
	*cols = 1;
	*split = GPT_REPLICATED;
	switch (j) {
	case LT_QKVW:
		*cols = C;
		/* fall through */
	case LT_QKVB:
		*rows = 3 * C;
		*split = GPT_SPLIT_QKV;
		break;
	case LT_ATTPROJW:
		*rows = C;
		*cols = C;
		*split = GPT_SPLIT_COLS;
		break;
	case LT_FCW:
		*cols = C;
		/* fall through */
	case LT_FCB:
		*rows = 4 * C;
		*split = GPT_SPLIT_ROWS;
		break;
	case LT_FCPROJW:
		*rows = C;
		*cols = 4 * C;
		*split = GPT_SPLIT_COLS;
		break;
	default: /* LayerNorms, attprojb, fcprojb */
		*rows = C;
		break;
	}
}

size_t gpt_tensor_local_numel(const gpt_tensor *t, int tp)
{
	return t->split == GPT_REPLICATED || tp <= 1 ? t->numel : t->numel / (size_t)tp;
}

/* Append one tensor to out when there is room; *n counts them all. */
static void tensor_add(gpt_tensor *out, int max, int *n, const char *name, int unit, size_t offset,
                       size_t rows, size_t cols, gpt_split split, bool decay)
{
	if (*n < max) {
		gpt_tensor *t = &out[*n];
		snprintf(t->name, sizeof t->name, "%s", name);
		t->unit = unit;
		t->offset = offset;
		t->numel = rows * cols;
		t->rows = rows;
		t->cols = cols;
		t->split = split;
		t->decay = decay;
	}
	(*n)++;
}

/* Fills at most max entries; returns how many tensors the model has. */
int gpt_tensors(const gpt_config *cfg, gpt_tensor *out, int max)
{
	size_t C = (size_t)cfg->channels;
	size_t wte = (size_t)cfg->padded_vocab_size * C;
	size_t off[LT_COUNT];
	int n = 0;

	layer_offsets(C, off);
	tensor_add(out, max, &n, "wte", 0, 0, (size_t)cfg->padded_vocab_size, C, GPT_REPLICATED,
	           true);
	tensor_add(out, max, &n, "wpe", 0, wte, (size_t)cfg->max_seq_len, C, GPT_REPLICATED, true);
	for (int l = 0; l < cfg->num_layers; l++) {
		size_t base = gpt_unit_offset(cfg, l + 1);
		for (int j = 0; j < LT_COUNT; j++) {
			char name[32];
			snprintf(name, sizeof name, "h%d.%s", l, layer_tensor_name[j]);
			bool decay =
			    j == LT_QKVW || j == LT_ATTPROJW || j == LT_FCW || j == LT_FCPROJW;
			size_t rows, cols;
			gpt_split split;
			layer_tensor_shape(j, C, &rows, &cols, &split);
			tensor_add(out, max, &n, name, l + 1, base + off[j], rows, cols, split,
			           decay);
		}
	}
	size_t fin = gpt_unit_offset(cfg, cfg->num_layers + 1);
	tensor_add(out, max, &n, "lnfw", cfg->num_layers + 1, fin, C, 1, GPT_REPLICATED, false);
	tensor_add(out, max, &n, "lnfb", cfg->num_layers + 1, fin + C, C, 1, GPT_REPLICATED,
	           false);
	return n;
}

/* --- initialisation ------------------------------------------------------ */

/* splitmix64 (Steele, Lea, Flood 2014): a tiny, well-mixed 64-bit generator. */
static uint64_t splitmix64_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* Uniform in (-1, 1), 53 random bits. */
static double uniform_pm1(uint64_t *state)
{
	return ((double)(splitmix64_next(state) >> 11) + 0.5) * 0x1p-52 - 1.0;
}

/* Each chunk of the flat array draws from its own stream, so the values
 * depend only on the seed and the position, never on the thread count. */
#define INIT_CHUNK 4096

/* out [n] = standard normal draws (Marsaglia's polar method), stream k. */
static void normal_fill(float *out, size_t n, uint64_t seed, size_t k)
{
	uint64_t state = seed ^ (0xd1b54a32d192ed03u * (uint64_t)(k + 1));
	for (size_t i = 0; i < n; i += 2) {
		double u, v, s;
		do {
			u = uniform_pm1(&state);
			v = uniform_pm1(&state);
			s = u * u + v * v;
		} while (s >= 1.0 || s == 0.0);
		double f = sqrt(-2.0 * log(s) / s);
		out[i] = (float)(u * f);
		if (i + 1 < n)
			out[i + 1] = (float)(v * f);
	}
}

static void fill_value(float *x, size_t n, float value)
{
	for (size_t i = 0; i < n; i++)
		x[i] = value;
}

static void scale_values(float *x, size_t n, float s)
{
	for (size_t i = 0; i < n; i++)
		x[i] *= s;
}

void gpt_init_params(const gpt_config *cfg, float *params, uint64_t seed)
{
	size_t n = gpt_num_params(cfg);
	size_t nchunks = (n + INIT_CHUNK - 1) / INIT_CHUNK;
	size_t C = (size_t)cfg->channels;
	size_t V = (size_t)cfg->vocab_size, Vp = (size_t)cfg->padded_vocab_size;
	const float std = 0.02f;
	const float resid_std = 0.02f / sqrtf(2.0f * (float)cfg->num_layers);

#pragma omp parallel for schedule(static)
	for (size_t k = 0; k < nchunks; k++) {
		size_t i0 = k * INIT_CHUNK;
		normal_fill(params + i0, n - i0 < INIT_CHUNK ? n - i0 : INIT_CHUNK, seed, k);
	}

	/* wte: padded rows zero (they never get a gradient); wpe */
	scale_values(params, V * C, std);
	fill_value(params + V * C, (Vp - V) * C, 0.0f);
	scale_values(params + Vp * C, (size_t)cfg->max_seq_len * C, std);

	size_t off[LT_COUNT];
	layer_offsets(C, off);
	for (int l = 0; l < cfg->num_layers; l++) {
		float *u = params + gpt_unit_offset(cfg, l + 1);
		for (int j = 0; j < LT_COUNT; j++) {
			float *x = u + off[j];
			size_t len = layer_tensor_numel(j, C);
			switch (j) {
			case LT_LN1W:
			case LT_LN2W:
				fill_value(x, len, 1.0f);
				break;
			case LT_QKVW:
			case LT_FCW:
				scale_values(x, len, std);
				break;
			case LT_ATTPROJW:
			case LT_FCPROJW:
				scale_values(x, len, resid_std);
				break;
			default: /* biases */
				fill_value(x, len, 0.0f);
				break;
			}
		}
	}
	float *fin = params + gpt_unit_offset(cfg, cfg->num_layers + 1);
	fill_value(fin, C, 1.0f);
	fill_value(fin + C, C, 0.0f);
}

double gpt_flops_per_token(const gpt_config *cfg, int T)
{
	double N = (double)gpt_num_params(cfg);
	return 6.0 * N + 6.0 * cfg->num_layers * (double)cfg->channels * T;
}

/* --- flat hooks ----------------------------------------------------------- */

static const float *flat_params(void *ctx, int unit)
{
	gpt_flat *f = ctx;
	return f->params + gpt_unit_offset(f->cfg, unit);
}

static float *flat_grads(void *ctx, int unit)
{
	gpt_flat *f = ctx;
	return f->grads + gpt_unit_offset(f->cfg, unit);
}

gpt_hooks gpt_hooks_flat(gpt_flat *flat)
{
	return (gpt_hooks){.ctx = flat, .params = flat_params, .grads = flat_grads};
}

/* --- the model -------------------------------------------------------------- */

struct gpt_model {
	gpt_config cfg;
	int B, T;
	gpt_precision prec;
	size_t loff[LT_COUNT]; /* tensor offsets inside a layer unit */
	void *mem;             /* the one allocation everything below lives in */

	/* forward activations, kept for the backward */
	float *encoded;             /* [B,T,C] */
	float *ln1;                 /* [L,B,T,C] */
	float *ln1_mean, *ln1_rstd; /* [L,B,T] */
	float *qkv;                 /* [L,B,T,3C] */
	float *atty;                /* [L,B,T,C] attention output, before attproj */
	float *att;                 /* [L,B,NH,T,T] attention probabilities */
	float *res2;                /* [L,B,T,C] residual after attention */
	float *ln2;                 /* [L,B,T,C] */
	float *ln2_mean, *ln2_rstd; /* [L,B,T] */
	float *fch;                 /* [L,B,T,4C] fc output, GELU input */
	float *fchg;                /* [L,B,T,4C] GELU output */
	float *res3;                /* [L,B,T,C] residual after the MLP */
	float *lnf;                 /* [B,T,C] */
	float *lnf_mean, *lnf_rstd; /* [B,T] */
	float *logits;              /* [B,T,Vp] */
	float *lse;                 /* [B,T] log-sum-exp of each row of logits */
	float *losses;              /* [B,T] */
	int32_t *inputs;            /* [B,T] copies for the backward */
	int32_t *targets;           /* [B,T] */

	/* scratch */
	float *proj;    /* [B,T,C] attproj / fcproj output before its residual add */
	float *dres;    /* [B,T,C] the running residual gradient */
	float *dbtc;    /* [B,T,C] */
	float *dqkv;    /* [B,T,3C] */
	float *dbt4c;   /* [B,T,4C] */
	float *datt;    /* [B,NH,T,T] */
	float *dlogits; /* [B,T,Vp] */
	float *wlow;    /* [max(V*C, 4C*C)] rounded weight copy (BF16/FP16 only) */
	float *blow;    /* [4C] rounded bias copy (BF16/FP16 only) */

	bool have_targets; /* the last forward computed a loss */
};

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
	size_t L = (size_t)m->cfg.num_layers, C = (size_t)m->cfg.channels;
	size_t N = (size_t)m->B * m->T, NH = (size_t)m->cfg.num_heads;
	size_t V = (size_t)m->cfg.vocab_size, Vp = (size_t)m->cfg.padded_vocab_size;
	size_t att = N * NH * (size_t)m->T;
	size_t wmax = V * C > 4 * C * C ? V * C : 4 * C * C;
	bool lowp = m->prec != GPT_FP32;
	size_t u = 0;

	m->encoded = carve(base, &u, N * C);
	m->ln1 = carve(base, &u, L * N * C);
	m->ln1_mean = carve(base, &u, L * N);
	m->ln1_rstd = carve(base, &u, L * N);
	m->qkv = carve(base, &u, L * N * 3 * C);
	m->atty = carve(base, &u, L * N * C);
	m->att = carve(base, &u, L * att);
	m->res2 = carve(base, &u, L * N * C);
	m->ln2 = carve(base, &u, L * N * C);
	m->ln2_mean = carve(base, &u, L * N);
	m->ln2_rstd = carve(base, &u, L * N);
	m->fch = carve(base, &u, L * N * 4 * C);
	m->fchg = carve(base, &u, L * N * 4 * C);
	m->res3 = carve(base, &u, L * N * C);
	m->lnf = carve(base, &u, N * C);
	m->lnf_mean = carve(base, &u, N);
	m->lnf_rstd = carve(base, &u, N);
	m->logits = carve(base, &u, N * Vp);
	m->lse = carve(base, &u, N);
	m->losses = carve(base, &u, N);
	/* token ids share the block: int32_t is as large as float */
	m->inputs = (int32_t *)carve(base, &u, N);
	m->targets = (int32_t *)carve(base, &u, N);
	m->proj = carve(base, &u, N * C);
	m->dres = carve(base, &u, N * C);
	m->dbtc = carve(base, &u, N * C);
	m->dqkv = carve(base, &u, N * 3 * C);
	m->dbt4c = carve(base, &u, N * 4 * C);
	m->datt = carve(base, &u, att);
	m->dlogits = carve(base, &u, N * Vp);
	m->wlow = carve(base, &u, lowp ? wmax : 0);
	m->blow = carve(base, &u, lowp ? 4 * C : 0);
	return u;
}

gpt_model *gpt_new(const gpt_config *cfg, int B, int T, gpt_precision precision, char *err,
                   size_t errlen)
{
	if (gpt_config_check(cfg, err, errlen) != 0)
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
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->cfg = *cfg;
	m->B = B;
	m->T = T;
	m->prec = precision;
	layer_offsets((size_t)cfg->channels, m->loff);
	size_t total = model_layout(m, NULL);
	m->mem = aligned_alloc(CARVE_ALIGN * sizeof(float), total * sizeof(float));
	if (!m->mem) {
		snprintf(err, errlen, "out of memory allocating %zu MiB of activations",
		         total * sizeof(float) >> 20);
		free(m);
		return NULL;
	}
	model_layout(m, m->mem);
	return m;
}

void gpt_free(gpt_model *m)
{
	if (!m)
		return;
	free(m->mem);
	free(m);
}

const float *gpt_logits(const gpt_model *m)
{
	return m->logits;
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

/* The copy of w [n] a matmul reads: w itself in FP32, else rounded into dst. */
static const float *lowp_operand(const gpt_model *m, float *dst, const float *w, size_t n)
{
	if (m->prec == GPT_FP32)
		return w;
	lowp_round_copy(dst, w, n, m->prec);
	return dst;
}

/* out [N,OC] = inp @ w^T + b, with rounded operands and a rounded result. */
static void mm_forward(gpt_model *m, float *out, const float *inp, const float *w, const float *b,
                       int N, int C, int OC)
{
	w = lowp_operand(m, m->wlow, w, (size_t)OC * C);
	b = lowp_operand(m, m->blow, b, (size_t)OC);
	matmul_forward(out, inp, w, b, N, C, OC);
	lowp_round_buf(out, (size_t)N * OC, m->prec);
}

/* matmul_backward; dout is rounded in place first, as a matmul input. */
static void mm_backward(gpt_model *m, float *dinp, float *dw, float *db, float *dout,
                        const float *inp, const float *w, int N, int C, int OC)
{
	lowp_round_buf(dout, (size_t)N * OC, m->prec);
	w = lowp_operand(m, m->wlow, w, (size_t)OC * C);
	matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC);
	lowp_round_buf(dinp, (size_t)N * C, m->prec);
}

static void check_tokens(const int32_t *tok, size_t n, int V, const char *what)
{
	for (size_t i = 0; i < n; i++)
		GPT_CHECK(tok[i] >= 0 && tok[i] < V,
		          "%s token %d at position %zu is outside [0, %d)", what, (int)tok[i], i,
		          V);
}

float gpt_forward(gpt_model *m, const gpt_hooks *h, const int32_t *inputs, const int32_t *targets)
{
	const gpt_config *cfg = &m->cfg;
	int B = m->B, T = m->T, N = B * T;
	int C = cfg->channels, L = cfg->num_layers, NH = cfg->num_heads;
	int V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
	size_t NC = (size_t)N * C, att = (size_t)B * NH * T * T;
	gpt_precision prec = m->prec;

	check_tokens(inputs, (size_t)N, V, "input");
	memcpy(m->inputs, inputs, (size_t)N * sizeof *inputs);
	m->have_targets = targets != NULL;
	if (targets) {
		check_tokens(targets, (size_t)N, V, "target");
		memcpy(m->targets, targets, (size_t)N * sizeof *targets);
	}

	const float *emb = h->params(h->ctx, 0);
	encoder_forward(m->encoded, inputs, emb, emb + (size_t)Vp * C, B, T, C);
	lowp_round_buf(m->encoded, NC, prec);

	const float *res = m->encoded;
	for (int l = 0; l < L; l++) {
		const float *p[LT_COUNT];
		layer_params(m, h->params(h->ctx, l + 1), p);
		float *ln1 = m->ln1 + l * NC, *qkv = m->qkv + l * 3 * NC;
		float *atty = m->atty + l * NC, *res2 = m->res2 + l * NC;
		float *ln2 = m->ln2 + l * NC, *fch = m->fch + l * 4 * NC;
		float *fchg = m->fchg + l * 4 * NC, *res3 = m->res3 + l * NC;

		layernorm_forward(ln1, m->ln1_mean + (size_t)l * N, m->ln1_rstd + (size_t)l * N,
		                  res, p[LT_LN1W], p[LT_LN1B], N, C);
		lowp_round_buf(ln1, NC, prec);
		mm_forward(m, qkv, ln1, p[LT_QKVW], p[LT_QKVB], N, C, 3 * C);
		attention_forward(atty, m->att + l * att, qkv, B, T, C, NH, prec);
		lowp_round_buf(atty, NC, prec);
		mm_forward(m, m->proj, atty, p[LT_ATTPROJW], p[LT_ATTPROJB], N, C, C);
		residual_forward(res2, res, m->proj, NC);
		lowp_round_buf(res2, NC, prec);

		layernorm_forward(ln2, m->ln2_mean + (size_t)l * N, m->ln2_rstd + (size_t)l * N,
		                  res2, p[LT_LN2W], p[LT_LN2B], N, C);
		lowp_round_buf(ln2, NC, prec);
		mm_forward(m, fch, ln2, p[LT_FCW], p[LT_FCB], N, C, 4 * C);
		gelu_forward(fchg, fch, 4 * NC);
		lowp_round_buf(fchg, 4 * NC, prec);
		mm_forward(m, m->proj, fchg, p[LT_FCPROJW], p[LT_FCPROJB], N, 4 * C, C);
		residual_forward(res3, res2, m->proj, NC);
		lowp_round_buf(res3, NC, prec);
		res = res3;
	}

	const float *fin = h->params(h->ctx, L + 1);
	layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, res, fin, fin + C, N, C);
	lowp_round_buf(m->lnf, NC, prec);

	emb = h->params(h->ctx, 0);
	const float *wte = lowp_operand(m, m->wlow, emb, (size_t)V * C);
	lmhead_forward(m->logits, m->lnf, wte, N, C, V, Vp);
	lowp_round_buf(m->logits, (size_t)N * Vp, prec);

	if (!targets)
		return 0.0f;
	softmax_xent_forward(m->losses, m->lse, m->logits, m->targets, N, V, Vp);
	double sum = 0.0;
	for (int n = 0; n < N; n++)
		sum += m->losses[n];
	return (float)(sum / N);
}

void gpt_backward(gpt_model *m, const gpt_hooks *h, float dloss)
{
	const gpt_config *cfg = &m->cfg;
	int B = m->B, T = m->T, N = B * T;
	int C = cfg->channels, L = cfg->num_layers, NH = cfg->num_heads;
	int V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
	size_t NC = (size_t)N * C, att = (size_t)B * NH * T * T;
	gpt_precision prec = m->prec;

	GPT_CHECK(m->have_targets, "gpt_backward needs a forward with targets");

	/* the loss and the LM head (unit 0) */
	softmax_xent_backward(m->dlogits, m->logits, m->lse, m->targets, dloss / (float)N, N, V,
	                      Vp);
	lowp_round_buf(m->dlogits, (size_t)N * Vp, prec);
	const float *emb = h->params(h->ctx, 0);
	const float *wte = lowp_operand(m, m->wlow, emb, (size_t)V * C);
	float *demb = h->grads(h->ctx, 0);
	lmhead_backward(m->dbtc, demb, m->dlogits, m->lnf, wte, N, C, V, Vp);
	lowp_round_buf(m->dbtc, NC, prec);

	/* final LayerNorm (unit L + 1) */
	const float *fin = h->params(h->ctx, L + 1);
	float *dfin = h->grads(h->ctx, L + 1);
	const float *res_last = L > 0 ? m->res3 + (size_t)(L - 1) * NC : m->encoded;
	memset(m->dres, 0, NC * sizeof(float));
	layernorm_backward(m->dres, dfin, dfin + C, m->dbtc, res_last, fin, m->lnf_mean,
	                   m->lnf_rstd, N, C);
	if (h->grads_done)
		h->grads_done(h->ctx, L + 1);

	for (int l = L - 1; l >= 0; l--) {
		const float *p[LT_COUNT];
		float *g[LT_COUNT];
		layer_params(m, h->params(h->ctx, l + 1), p);
		layer_grads(m, h->grads(h->ctx, l + 1), g);
		const float *res = l > 0 ? m->res3 + (size_t)(l - 1) * NC : m->encoded;
		const float *ln1 = m->ln1 + l * NC, *qkv = m->qkv + l * 3 * NC;
		const float *atty = m->atty + l * NC, *res2 = m->res2 + l * NC;
		const float *ln2 = m->ln2 + l * NC, *fch = m->fch + l * 4 * NC;
		const float *fchg = m->fchg + l * 4 * NC;

		/* MLP: dres is the gradient of res3, and so of res2 too */
		mm_backward(m, m->dbt4c, g[LT_FCPROJW], g[LT_FCPROJB], m->dres, fchg, p[LT_FCPROJW],
		            N, 4 * C, C);
		gelu_backward(m->dbt4c, fch, m->dbt4c, 4 * NC);
		mm_backward(m, m->dbtc, g[LT_FCW], g[LT_FCB], m->dbt4c, ln2, p[LT_FCW], N, C,
		            4 * C);
		layernorm_backward(m->dres, g[LT_LN2W], g[LT_LN2B], m->dbtc, res2, p[LT_LN2W],
		                   m->ln2_mean + (size_t)l * N, m->ln2_rstd + (size_t)l * N, N, C);

		/* attention: dres is now the gradient of res2, and so of res */
		mm_backward(m, m->dbtc, g[LT_ATTPROJW], g[LT_ATTPROJB], m->dres, atty,
		            p[LT_ATTPROJW], N, C, C);
		attention_backward(m->dqkv, m->datt, m->dbtc, qkv, m->att + l * att, B, T, C, NH,
		                   prec);
		mm_backward(m, m->dbtc, g[LT_QKVW], g[LT_QKVB], m->dqkv, ln1, p[LT_QKVW], N, C,
		            3 * C);
		layernorm_backward(m->dres, g[LT_LN1W], g[LT_LN1B], m->dbtc, res, p[LT_LN1W],
		                   m->ln1_mean + (size_t)l * N, m->ln1_rstd + (size_t)l * N, N, C);
		if (h->grads_done)
			h->grads_done(h->ctx, l + 1);
	}

	/* embeddings (unit 0 again): the encoder's backward reads no
	 * parameters, but the unit is announced in the documented order */
	lowp_round_buf(m->dres, NC, prec);
	(void)h->params(h->ctx, 0);
	demb = h->grads(h->ctx, 0);
	encoder_backward(demb, demb + (size_t)Vp * C, m->dres, m->inputs, B, T, C);
	if (h->grads_done)
		h->grads_done(h->ctx, 0);
}
