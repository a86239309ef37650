/*
 * plan.c - the capacity planner (plan.h): memory, FLOPs, communication and
 * step time of a parallel layout, the ranking of every layout, and the
 * fallback ladder. docs/plan.md derives each formula.
 *
 * Names in the formulas: s sequence length, b micro-batch, h d_model,
 * a heads, L layers, V padded vocabulary, m micro-batches per step
 * (grad_accum), t tensor, p pipeline, d data parallel.
 */
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static double padded_vocab(const jobspec_model *m)
{
	return (double)((m->vocab_size + PLAN_VOCAB_PAD - 1) / PLAN_VOCAB_PAD * PLAN_VOCAB_PAD);
}

double plan_params(const jobspec_model *m)
{
	double h = m->d_model;
	return (padded_vocab(m) + m->seq_len) * h + m->layers * (12 * h * h + 13 * h) + 2 * h;
}

double plan_stage_params(const jobspec_model *m, int tp, int pp, int stage)
{
	double h = m->d_model;
	/* split over tp: qkv, attention projection, both MLP matrices, qkv and fc biases */
	double per_layer = (12 * h * h + 7 * h) / tp + 6 * h;
	double psi = (double)m->layers / pp * per_layer;
	if (stage == 0)
		psi += (padded_vocab(m) + m->seq_len) * h; /* wte, wpe */
	if (stage == pp - 1) {
		psi += 2 * h; /* final LayerNorm */
		if (pp > 1)
			psi += padded_vocab(m) * h; /* the LM head's copy of the tied wte */
	}
	return psi;
}

static bool is_mixed(jobspec_precision p)
{
	return p != JOBSPEC_PRECISION_FP32;
}

void plan_model_states(double psi, int dp, int zero_stage, jobspec_precision p, plan_memory *out)
{
	bool mixed = is_mixed(p);
	double param_b = mixed ? PLAN_MIXED_PARAM_BYTES : PLAN_FP32_PARAM_BYTES;
	double grad_b = mixed ? PLAN_MIXED_GRAD_BYTES : PLAN_FP32_GRAD_BYTES;
	double optim_b = mixed ? PLAN_MIXED_OPTIM_BYTES : PLAN_FP32_OPTIM_BYTES;
	out->params = param_b * psi / (zero_stage >= 3 ? dp : 1);
	out->grads = grad_b * psi / (zero_stage >= 2 ? dp : 1);
	out->optimizer = optim_b * psi / (zero_stage >= 1 ? dp : 1);
}

double plan_layer_activations(const jobspec_model *m, int b, int tp, jobspec_recompute r,
                              jobspec_precision p)
{
	double s = m->seq_len, h = m->d_model, a = m->heads;
	double sbh = s * b * h, bytes;
	switch (r) {
	case JOBSPEC_RECOMPUTE_FULL:
		bytes = PLAN_ACT_FULL * sbh;
		break;
	case JOBSPEC_RECOMPUTE_SELECTIVE:
		bytes = sbh / tp * PLAN_ACT_LINEAR;
		break;
	default:
		bytes = sbh / tp * (PLAN_ACT_LINEAR + PLAN_ACT_SCORES * a * s / h);
		break;
	}
	return is_mixed(p) ? bytes : bytes * PLAN_ACT_FP32_MULT;
}

int plan_in_flight(int pp, int stage, int m)
{
	int n = pp - stage;
	return n < m ? n : m;
}

double plan_bubble(int pp, int m)
{
	return (double)(pp - 1) / (double)(m + pp - 1);
}

double plan_flops_per_token(const jobspec_model *m, jobspec_recompute r)
{
	double attention = 6.0 * m->layers * (double)m->d_model * m->seq_len;
	double f = 6.0 * plan_params(m) + attention;
	if (r == JOBSPEC_RECOMPUTE_FULL)
		return f + f / 3;
	if (r == JOBSPEC_RECOMPUTE_SELECTIVE)
		return f + attention / 3;
	return f;
}

/* "80" or "93.2": GiB to one decimal, without a trailing ".0". */
static void gib_text(char *out, size_t n, double bytes)
{
	snprintf(out, n, "%.1f", bytes / GIB);
	size_t len = strlen(out);
	if (len > 2 && strcmp(out + len - 2, ".0") == 0)
		out[len - 2] = '\0';
}

/* Memory of one device of pipeline stage `stage`. */
static plan_memory stage_memory(const plan_input *in, const layout *l, int stage, int m)
{
	plan_memory mem = {0};
	const jobspec_model *mod = &in->model;
	double psi = plan_stage_params(mod, l->tensor_parallel, l->pipeline_parallel, stage);
	plan_model_states(psi, l->data_parallel, l->zero_stage, in->precision, &mem);
	double layers = (double)mod->layers / l->pipeline_parallel;
	mem.activations = layers *
	                  plan_layer_activations(mod, in->micro_batch, l->tensor_parallel,
	                                         in->recompute, in->precision) *
	                  plan_in_flight(l->pipeline_parallel, stage, m);
	if (stage == l->pipeline_parallel - 1)
		mem.activations +=
		    PLAN_LOGIT_BYTES * mod->seq_len * in->micro_batch * padded_vocab(mod);
	mem.total = mem.params + mem.grads + mem.optimizer + mem.activations;
	return mem;
}

/* The fullest stage. OUT: *stage. */
static plan_memory peak_memory(const plan_input *in, const layout *l, int m, int *stage)
{
	plan_memory best = {0};
	*stage = 0;
	for (int k = 0; k < l->pipeline_parallel; k++) {
		plan_memory mem = stage_memory(in, l, k, m);
		if (k == 0 || mem.total > best.total) {
			best = mem;
			*stage = k;
		}
	}
	return best;
}

static plan_comm comm_bytes(const plan_input *in, const layout *l, int stage, int m)
{
	plan_comm c = {0};
	const jobspec_model *mod = &in->model;
	double elem = is_mixed(in->precision) ? 2 : 4;
	double bsh = (double)in->micro_batch * mod->seq_len * mod->d_model;
	int d = l->data_parallel, t = l->tensor_parallel, p = l->pipeline_parallel;
	if (d > 1) {
		double psi = plan_stage_params(mod, t, p, stage);
		/* all-reduce once per step (0, 1); reduce-scatter per micro-batch, then an
		 * all-gather (2); all-gather forward and backward, reduce-scatter, per
		 * micro-batch (3). m = 1 gives the ZeRO paper's 2, 2, 2 and 3 psi. */
		double rounds = l->zero_stage <= 1 ? 2 : l->zero_stage == 2 ? m + 1 : 3.0 * m;
		c.dp = rounds * psi * (d - 1) / d * elem;
	}
	if (t > 1) {
		int n = in->recompute == JOBSPEC_RECOMPUTE_FULL ? PLAN_TP_COLLECTIVES_FULL
		                                                : PLAN_TP_COLLECTIVES;
		c.tp = (double)mod->layers / p * m * n * 2.0 * (t - 1) / t * bsh * elem;
	}
	if (p > 1)
		c.pp = 2.0 * m * bsh * elem; /* activations forward, their gradients back */
	return c;
}

static void estimate_time(const plan_input *in, plan_config *out)
{
	if (!(in->peak_flops > 0) || !(in->link_bytes_per_s > 0))
		return;
	const layout *l = &out->layout;
	double devices = (double)layout_ranks(l);
	double compute = out->flops_per_step / (devices * in->peak_flops * PLAN_COMPUTE_EFFICIENCY);
	double in_pipeline = (out->comm.tp + out->comm.pp) / in->link_bytes_per_s;
	double dp = out->comm.dp / in->link_bytes_per_s;
	out->step_seconds = (compute + in_pipeline) / (1 - out->bubble) + dp;
	out->tokens_per_s = (double)in->global_batch * in->model.seq_len / out->step_seconds;
}

static plan_verdict refuse(plan_config *out, plan_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static plan_verdict refuse(plan_config *out, plan_verdict v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
	out->verdict = v;
	out->fits = false;
	return v;
}

/* The rules a layout must obey before it is worth estimating (layout.h). */
static plan_verdict check_shape(const plan_input *in, const layout *l, plan_config *out)
{
	if (l->data_parallel < 1 || l->tensor_parallel < 1 || l->pipeline_parallel < 1 ||
	    l->zero_stage < 0 || l->zero_stage > LAYOUT_ZERO_STAGE_MAX || l->micro_batch < 1)
		return refuse(
		    out, PLAN_BAD_LAYOUT,
		    "parallel degrees and micro_batch must be at least 1 and zero_stage 0 "
		    "to %d",
		    LAYOUT_ZERO_STAGE_MAX);
	layout_fit fit = {
	    .heads = in->model.heads,
	    .layers = in->model.layers,
	    .global_batch = in->global_batch,
	    .ranks = in->devices,
	    .ranks_said = "there are %lld devices",
	};
	layout_problem p[LAYOUT_PROBLEMS_MAX];
	if (layout_check(l, &fit, p) == 0)
		return PLAN_FITS;
	/* the first broken rule, as the refusal */
	plan_verdict v = p[0].code == ERR_F_HEADS_NOT_DIVISIBLE    ? PLAN_HEADS_NOT_DIVISIBLE
	                 : p[0].code == ERR_F_LAYERS_NOT_DIVISIBLE ? PLAN_LAYERS_NOT_DIVISIBLE
	                 : p[0].code == ERR_F_BATCH_MISMATCH       ? PLAN_BATCH_MISMATCH
	                                                           : PLAN_RANKS_MISMATCH;
	return refuse(out, v, "%s", p[0].message);
}

plan_verdict plan_evaluate(const plan_input *in, const layout *candidate, plan_config *out)
{
	memset(out, 0, sizeof(*out));
	out->layout = *candidate;
	layout *l = &out->layout;
	l->micro_batch = in->micro_batch;
	plan_verdict v = check_shape(in, l, out);
	if (v != PLAN_FITS)
		return v;
	int m = layout_grad_accum(l, in->global_batch), stage;
	l->grad_accum = m;
	out->memory = peak_memory(in, l, m, &stage);
	out->flops_per_step = plan_flops_per_token(&in->model, in->recompute) * in->global_batch *
	                      (double)in->model.seq_len;
	out->comm = comm_bytes(in, l, stage, m);
	out->bubble = plan_bubble(l->pipeline_parallel, m);
	estimate_time(in, out);
	if (out->memory.total > in->device_memory_bytes) {
		char need[32], have[32], states[32], acts[32];
		gib_text(need, sizeof(need), out->memory.total);
		gib_text(have, sizeof(have), in->device_memory_bytes);
		gib_text(states, sizeof(states), out->memory.total - out->memory.activations);
		gib_text(acts, sizeof(acts), out->memory.activations);
		return refuse(out, PLAN_OUT_OF_MEMORY,
		              "needs %s GiB per device (model states %s GiB, activations %s GiB), "
		              "devices have %s GiB",
		              need, states, acts, have);
	}
	out->fits = true;
	return PLAN_FITS;
}

/* Better first: faster, then smaller, lower stage, less model parallel. */
static int rank_cmp(const void *pa, const void *pb)
{
	const plan_config *a = pa, *b = pb;
	if (a->tokens_per_s != b->tokens_per_s)
		return a->tokens_per_s > b->tokens_per_s ? -1 : 1;
	if (a->memory.total != b->memory.total)
		return a->memory.total < b->memory.total ? -1 : 1;
	if (a->layout.zero_stage != b->layout.zero_stage)
		return a->layout.zero_stage - b->layout.zero_stage;
	if (a->layout.tensor_parallel != b->layout.tensor_parallel)
		return a->layout.tensor_parallel - b->layout.tensor_parallel;
	return a->layout.pipeline_parallel - b->layout.pipeline_parallel;
}

static int list_push(plan_list *l, size_t *cap, const plan_config *c)
{
	if (l->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		plan_config *items = realloc(l->items, ncap * sizeof(*items));
		if (!items)
			return -1;
		l->items = items;
		*cap = ncap;
	}
	l->items[l->n++] = *c;
	return 0;
}

int plan_enumerate(const plan_input *in, plan_list *out)
{
	const jobspec_model *m = &in->model;
	size_t cap = 0;
	out->items = NULL;
	out->n = 0;
	/* the candidates: the degrees that divide the devices, the heads and the
	 * layers; plan_evaluate() holds each to every rule of layout.h */
	for (int tp = 1; tp <= m->heads && tp <= in->devices; tp++) {
		if (m->heads % tp || in->devices % tp)
			continue;
		for (int pp = 1; pp <= m->layers && pp <= in->devices / tp; pp++) {
			if (m->layers % pp || (in->devices / tp) % pp)
				continue;
			int64_t dp = in->devices / tp / pp;
			if (dp > LAYOUT_DATA_PARALLEL_MAX)
				continue;
			for (int z = 0; z <= (dp > 1 ? 3 : 0); z++) {
				layout l = {.data_parallel = (int)dp,
				            .tensor_parallel = tp,
				            .pipeline_parallel = pp,
				            .zero_stage = z};
				plan_config c;
				if (plan_evaluate(in, &l, &c) != PLAN_FITS)
					continue;
				if (list_push(out, &cap, &c) < 0) {
					plan_list_release(out);
					return -ERR_INTERNAL;
				}
			}
		}
	}
	if (out->n > 1)
		qsort(out->items, out->n, sizeof(*out->items), rank_cmp);
	return 0;
}

void plan_list_release(plan_list *l)
{
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

static int smallest_prime_factor(int n)
{
	for (int f = 2; f * f <= n; f++)
		if (n % f == 0)
			return f;
	return n;
}

/* The next smaller layout of the ladder. RET: false when there is none. */
static bool ladder_step(layout *l)
{
	if (l->data_parallel > 1)
		l->data_parallel /= smallest_prime_factor(l->data_parallel);
	else if (l->pipeline_parallel > 1)
		l->pipeline_parallel /= smallest_prime_factor(l->pipeline_parallel);
	else if (l->tensor_parallel > 1)
		l->tensor_parallel /= smallest_prime_factor(l->tensor_parallel);
	else
		return false;
	return true;
}

int plan_fallback_ladder(const plan_input *in, const layout *from, plan_config *out, int cap)
{
	layout l = *from;
	plan_input sub = *in;
	int n = 0;
	if (from->zero_stage < 0 || from->zero_stage > 3)
		return 0;
	while (n < cap && ladder_step(&l)) {
		sub.devices = layout_ranks(&l);
		int last = l.data_parallel > 1 ? 3 : from->zero_stage;
		for (l.zero_stage = from->zero_stage; l.zero_stage <= last; l.zero_stage++)
			if (plan_evaluate(&sub, &l, &out[n]) == PLAN_FITS) {
				n++;
				break;
			}
		l.zero_stage = from->zero_stage;
	}
	return n;
}

void plan_input_from_job(const jobspec *s, double device_memory_bytes, plan_input *in)
{
	const layout *p = &s->parallel;
	*in = (plan_input){
	    .model = s->model,
	    .global_batch = s->global_batch,
	    .micro_batch = p->micro_batch,
	    .precision = s->training.precision,
	    .recompute = s->training.recompute,
	    .devices = layout_ranks(p),
	    .device_memory_bytes = device_memory_bytes,
	};
}

/* Add a does_not_fit row at pointer when layout p does not fit. RET: rows added. */
static int check_layout_fits(const plan_input *job, const layout *p, const char *pointer, verrs *v)
{
	plan_input in = *job;
	in.micro_batch = p->micro_batch;
	in.devices = layout_ranks(p);
	plan_config c;
	if (plan_evaluate(&in, p, &c) != PLAN_OUT_OF_MEMORY)
		return 0;
	verrs_add(v, pointer, ERR_F_DOES_NOT_FIT, "%s", c.reason);
	return 1;
}

int plan_check_job(const jobspec *s, double device_memory_bytes, verrs *v)
{
	plan_input in;
	plan_input_from_job(s, device_memory_bytes, &in);
	int rows = check_layout_fits(&in, &s->parallel, "/parallel", v);
	for (int i = 0; i < s->n_fallback; i++) {
		char ptr[64];
		snprintf(ptr, sizeof(ptr), "/fault_tolerance/fallback/%d", i);
		rows += check_layout_fits(&in, &s->fallback[i], ptr, v);
	}
	return rows;
}

const char *plan_verdict_name(plan_verdict v)
{
	static const char *const names[] = {
	    [PLAN_FITS] = "fits",
	    [PLAN_BAD_LAYOUT] = "bad_layout",
	    [PLAN_RANKS_MISMATCH] = "ranks_mismatch",
	    [PLAN_HEADS_NOT_DIVISIBLE] = "heads_not_divisible_by_tp",
	    [PLAN_LAYERS_NOT_DIVISIBLE] = "layers_not_divisible_by_pp",
	    [PLAN_BATCH_MISMATCH] = "batch_mismatch",
	    [PLAN_OUT_OF_MEMORY] = "does_not_fit",
	};
	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "bad_layout";
}
