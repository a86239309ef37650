/*
 * gpt.c - the GPT-2 decoder of gpt.h: configuration checks, the parameter
 * layout, initialisation, the flat hooks and the whole-model part. The
 * model itself (activations, forward, backward) is gpt_model.c.
 *
 * Shapes: B batch, T sequence, N = B * T positions, C channels, NH heads,
 * L layers, V vocabulary, Vp padded vocabulary.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"
#include "gpt_layer.h"

const char *const gpt_layer_tensor_name[LT_COUNT] = {
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
			snprintf(name, sizeof name, "h%d.%s", l, gpt_layer_tensor_name[j]);
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
	tensor_add(out, max, &n, "lnfb", cfg->num_layers + 1, fin + C, C, 1, GPT_REPLICATED, false);
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

static size_t flat_offset(const gpt_flat *f, int unit)
{
	if (!f->unit_offset)
		return gpt_unit_offset(f->cfg, unit);
	if (f->unit_offset[unit] == SIZE_MAX) {
		fprintf(stderr, "gpt_hooks_flat: unit %d is not in the local arrays\n", unit);
		abort();
	}
	return f->unit_offset[unit];
}

static const float *flat_params(void *ctx, int unit)
{
	gpt_flat *f = ctx;
	return f->params + flat_offset(f, unit);
}

static float *flat_grads(void *ctx, int unit)
{
	gpt_flat *f = ctx;
	return f->grads + flat_offset(f, unit);
}

gpt_hooks gpt_hooks_flat(gpt_flat *flat)
{
	return (gpt_hooks){.ctx = flat, .params = flat_params, .grads = flat_grads};
}

/* --- parts -------------------------------------------------------------------- */

gpt_part gpt_part_whole(const gpt_config *cfg)
{
	return (gpt_part){.tp = 1,
	                  .tp_comm = NULL,
	                  .first_layer = 0,
	                  .num_layers = cfg->num_layers,
	                  .has_embed = true,
	                  .has_head = true,
	                  .slots = 1,
	                  .recompute = GPT_RECOMPUTE_NONE};
}
