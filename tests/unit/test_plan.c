/*
 * test_plan.c - the capacity planner against worked examples: the ZeRO
 * paper's 7.5B model on 64 GPUs, Korthikanti et al.'s activation formulas
 * for a GPT-3 175B layer, the 1F1B bubble and in-flight micro-batches, the
 * trainer's parameter and FLOP counts; then layouts: refusals with their
 * reasons, the ranking, the fallback ladder and the submit-time check.
 *
 * Every expected number is worked out by hand in the comment beside it.
 * Byte counts of whole elements are exact in a double, so they are
 * compared exactly; the paper's figures are compared to its rounding.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "unit.h"

/* A layout by its degrees and ZeRO stage (the planner sets micro_batch and grad_accum). */
#define LAYOUT(dp, tp, pp, z)                                                                      \
	((layout){.data_parallel = (dp),                                                           \
	          .tensor_parallel = (tp),                                                         \
	          .pipeline_parallel = (pp),                                                       \
	          .zero_stage = (z)})

#define GB  1e9
#define GIB (1024.0 * 1024.0 * 1024.0)

static const jobspec_model gpt2_124m = {"gpt2-124m", 12, 768, 12, 50257, 1024};
static const jobspec_model gpt2_350m = {"gpt2-350m", 24, 1024, 16, 50257, 1024};
static const jobspec_model gpt2_1558m = {"gpt2-1558m", 48, 1600, 25, 50257, 1024};
/* GPT-3 175B (Brown et al. 2020; Korthikanti et al. 2022, table 3) */
static const jobspec_model gpt3_175b = {"", 96, 12288, 96, 50257, 2048};

/* ------------------------------------------------------------ formulas */

/*
 * ZeRO paper, figure 1: Psi = 7.5B, Nd = 64, K = 12. Per device:
 * (2 + 2 + K) Psi = 120 GB; 2 Psi + 2 Psi + K Psi / Nd = 31.4 GB;
 * 2 Psi + (2 + K) Psi / Nd = 16.6 GB; (2 + 2 + K) Psi / Nd = 1.9 GB.
 * The paper rounds to 0.1 GB: the tolerance is half of that.
 */
START_TEST(zero_paper_figure_1)
{
	static const double paper[] = {120.0, 31.4, 16.6, 1.9};
	static const double exact[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
	for (int stage = 0; stage < 4; stage++) {
		plan_memory m = {0};
		plan_model_states(7.5e9, 64, stage, JOBSPEC_PRECISION_BF16, &m);
		double total = m.params + m.grads + m.optimizer;
		ck_assert_msg(fabs(total / GB - paper[stage]) <= 0.05, "stage %d: %.4f GB", stage,
		              total / GB);
		ck_assert_double_eq_tol(total, exact[stage], 1);
	}
	/* stage 2 keeps 2 Psi of parameters whole and shards the gradients */
	plan_memory m = {0};
	plan_model_states(7.5e9, 64, 2, JOBSPEC_PRECISION_FP16, &m);
	ck_assert_double_eq_tol(m.params, 15e9, 1);
	ck_assert_double_eq_tol(m.grads, 15e9 / 64, 1);
	ck_assert_double_eq_tol(m.optimizer, 90e9 / 64, 1);
}
END_TEST

/* fp32: 4 Psi + 4 Psi + 8 Psi; stage 1 over 64: 8 Psi + 8 Psi / 64. */
START_TEST(zero_fp32_constants)
{
	plan_memory m = {0};
	plan_model_states(7.5e9, 64, 0, JOBSPEC_PRECISION_FP32, &m);
	ck_assert_double_eq_tol(m.params + m.grads + m.optimizer, 120e9, 1);
	plan_model_states(7.5e9, 64, 1, JOBSPEC_PRECISION_FP32, &m);
	ck_assert_double_eq_tol(m.params + m.grads + m.optimizer, 60.9375e9, 1);
	plan_model_states(7.5e9, 64, 3, JOBSPEC_PRECISION_FP32, &m);
	ck_assert_double_eq_tol(m.params, 30e9 / 64, 1);
}
END_TEST

/*
 * Korthikanti et al. 2022, table 2, for a GPT-3 175B layer: s = 2048,
 * b = 1, h = 12288, a = 96, t = 8. s b h = 25,165,824 and 5 a s / h = 80.
 *   no parallelism           s b h (34 + 80)        = 2,868,903,936 bytes
 *   tensor + sequence par.   s b h / 8 (34 + 80)    =   358,612,992
 *   ... + selective          s b h / 8 x 34         =   106,954,752
 *   full recompute           2 s b h                =    50,331,648
 */
START_TEST(korthikanti_gpt3_layer)
{
	const jobspec_model *m = &gpt3_175b;
	jobspec_precision bf16 = JOBSPEC_PRECISION_BF16;
	ck_assert_double_eq(plan_layer_activations(m, 1, 1, JOBSPEC_RECOMPUTE_NONE, bf16),
	                    2868903936.0);
	ck_assert_double_eq(plan_layer_activations(m, 1, 8, JOBSPEC_RECOMPUTE_NONE, bf16),
	                    358612992.0);
	ck_assert_double_eq(plan_layer_activations(m, 1, 8, JOBSPEC_RECOMPUTE_SELECTIVE, bf16),
	                    106954752.0);
	ck_assert_double_eq(plan_layer_activations(m, 1, 8, JOBSPEC_RECOMPUTE_FULL, bf16),
	                    50331648.0);
	/* selective recompute keeps 34 / 114 of it: the paper's "about 70% less" */
	double ratio = plan_layer_activations(m, 1, 8, JOBSPEC_RECOMPUTE_SELECTIVE, bf16) /
	               plan_layer_activations(m, 1, 8, JOBSPEC_RECOMPUTE_NONE, bf16);
	ck_assert_double_eq_tol(ratio, 34.0 / 114.0, 1e-12);
	/* linear in b; fp32 doubles the 16-bit constants */
	ck_assert_double_eq(plan_layer_activations(m, 4, 8, JOBSPEC_RECOMPUTE_SELECTIVE, bf16),
	                    4 * 106954752.0);
	ck_assert_double_eq(
	    plan_layer_activations(m, 1, 8, JOBSPEC_RECOMPUTE_NONE, JOBSPEC_PRECISION_FP32),
	    717225984.0);
}
END_TEST

/* Under 1F1B the first stage holds p micro-batches of L / p layers: L layers' worth. */
START_TEST(first_stage_holds_every_layer)
{
	plan_input in = {.model = gpt3_175b,
	                 .global_batch = 64,
	                 .micro_batch = 1,
	                 .precision = JOBSPEC_PRECISION_BF16,
	                 .recompute = JOBSPEC_RECOMPUTE_SELECTIVE,
	                 .devices = 64,
	                 .device_memory_bytes = 1e15};
	layout l = LAYOUT(1, 8, 8, 1);
	plan_config c;
	ck_assert_int_eq(plan_evaluate(&in, &l, &c), PLAN_FITS);
	ck_assert_int_eq(c.layout.grad_accum, 64);
	/* stage 0 is the fullest: 96 x 106,954,752 = 10,267,656,192 bytes */
	ck_assert_double_eq(c.memory.activations, 10267656192.0);
}
END_TEST

START_TEST(bubble_and_in_flight)
{
	ck_assert_double_eq(plan_bubble(1, 8), 0.0);
	ck_assert_double_eq_tol(plan_bubble(4, 8), 3.0 / 11.0, 1e-15);
	ck_assert_double_eq_tol(plan_bubble(8, 1), 7.0 / 8.0, 1e-15);
	ck_assert_double_eq_tol(plan_bubble(2, 8), 1.0 / 9.0, 1e-15);
	static const int want_m8[] = {4, 3, 2, 1}, want_m2[] = {2, 2, 2, 1};
	for (int k = 0; k < 4; k++) {
		ck_assert_int_eq(plan_in_flight(4, k, 8), want_m8[k]);
		ck_assert_int_eq(plan_in_flight(4, k, 2), want_m2[k]);
	}
}
END_TEST

/*
 * The trainer's layout (trainer/gpt.c): gpt2-124m has Vp = 50304 and
 * (50304 + 1024) 768 + 12 (12 768^2 + 13 768) + 2 768 = 124,475,904
 * parameters (llm.c's count). GPT-3 175B: 174,604,836,864.
 */
START_TEST(parameter_counts)
{
	ck_assert_double_eq(plan_params(&gpt2_124m), 124475904.0);
	ck_assert_double_eq(plan_params(&gpt3_175b), 174604836864.0);
	ck_assert_double_eq(plan_stage_params(&gpt2_124m, 1, 1, 0), 124475904.0);
	/* two stages: the last holds the tied LM head's own copy of wte */
	double both =
	    plan_stage_params(&gpt2_124m, 1, 2, 0) + plan_stage_params(&gpt2_124m, 1, 2, 1);
	ck_assert_double_eq(both, 124475904.0 + 50304.0 * 768);
	/* tp 2: each rank half of 12 h^2 + 7 h per layer, all of the 6 h replicated */
	double h = 768;
	ck_assert_double_eq(plan_stage_params(&gpt2_124m, 2, 1, 0),
	                    (50304 + 1024) * h + 12 * ((12 * h * h + 7 * h) / 2 + 6 * h) + 2 * h);
}
END_TEST

/*
 * 6 N + 6 L h s per token (trainer/gpt.c gpt_flops_per_token): gpt2-124m,
 * 6 x 124,475,904 + 6 x 12 x 768 x 1024 = 803,478,528. Full recompute
 * adds a third (1,071,304,704); selective a third of the attention term
 * (822,352,896).
 */
START_TEST(flops_per_token)
{
	ck_assert_double_eq(plan_flops_per_token(&gpt2_124m, JOBSPEC_RECOMPUTE_NONE), 803478528.0);
	ck_assert_double_eq(plan_flops_per_token(&gpt2_124m, JOBSPEC_RECOMPUTE_FULL), 1071304704.0);
	ck_assert_double_eq(plan_flops_per_token(&gpt2_124m, JOBSPEC_RECOMPUTE_SELECTIVE),
	                    822352896.0);
}
END_TEST

/* ------------------------------------------------------------ layouts */

/* The founding example: gpt2-350m, dp8 x tp4 x pp2, ZeRO-3, micro 4, global 256, bf16. */
static plan_input founding_input(double memory)
{
	return (plan_input){.model = gpt2_350m,
	                    .global_batch = 256,
	                    .micro_batch = 4,
	                    .precision = JOBSPEC_PRECISION_BF16,
	                    .recompute = JOBSPEC_RECOMPUTE_NONE,
	                    .devices = 64,
	                    .device_memory_bytes = memory,
	                    .peak_flops = 1e15,
	                    .link_bytes_per_s = 1e11};
}

/*
 * Stage 0 of the founding layout holds 12 layers of (12 h^2 + 7 h) / 4 + 6 h
 * = 3,153,664 and the embeddings (50304 + 1024) 1024: Psi = 90,403,840.
 * ZeRO-3 over 8: 2 Psi / 8 + 2 Psi / 8 + 12 Psi / 8 = 180,807,680 bytes.
 * A layer's activations: s b h / 4 (34 + 5 a s / h) = 1,048,576 x 114 =
 * 119,537,664; 12 layers x 2 in flight: 2,868,903,936. Total 3,049,711,616.
 */
START_TEST(founding_example_fits)
{
	plan_input in = founding_input(80 * GIB);
	layout l = LAYOUT(8, 4, 2, 3);
	plan_config c;
	ck_assert_int_eq(plan_evaluate(&in, &l, &c), PLAN_FITS);
	ck_assert(c.fits);
	ck_assert_str_eq(c.reason, "");
	ck_assert_int_eq(c.layout.grad_accum, 8);
	ck_assert_double_eq(c.memory.params, 22600960.0);
	ck_assert_double_eq(c.memory.grads, 22600960.0);
	ck_assert_double_eq(c.memory.optimizer, 135605760.0);
	ck_assert_double_eq(c.memory.activations, 2868903936.0);
	ck_assert_double_eq(c.memory.total, 3049711616.0);
	ck_assert_double_eq_tol(c.bubble, 1.0 / 9.0, 1e-15);
	/* 256 x 1024 tokens x (6 N + 6 L h s) */
	double per_token = 6.0 * plan_params(&gpt2_350m) + 6.0 * 24 * 1024 * 1024;
	ck_assert_double_eq_tol(c.flops_per_step, per_token * 256 * 1024, 1);
	/* ZeRO-3: 3 m Psi (d-1)/d elements of 2 bytes, m = 8 */
	ck_assert_double_eq_tol(c.comm.dp, 3.0 * 8 * 90403840.0 * 7 / 8 * 2, 1);
	/* tp: 12 layers x 8 micro-batches x 4 all-reduces x 2 (3/4) x b s h x 2 bytes */
	ck_assert_double_eq_tol(c.comm.tp, 12.0 * 8 * 4 * 1.5 * 4194304 * 2, 1);
	ck_assert_double_eq_tol(c.comm.pp, 2.0 * 8 * 4194304 * 2, 1);
	ck_assert(c.step_seconds > 0 && c.tokens_per_s > 0);
	ck_assert_double_eq_tol(c.tokens_per_s * c.step_seconds, 256.0 * 1024, 1e-6);
}
END_TEST

START_TEST(refusals_carry_a_reason)
{
	plan_input in = founding_input(80 * GIB);
	plan_config c;
	layout ranks = LAYOUT(8, 4, 1, 0);
	ck_assert_int_eq(plan_evaluate(&in, &ranks, &c), PLAN_RANKS_MISMATCH);
	ck_assert(!c.fits);
	ck_assert_str_eq(
	    c.reason, "data_parallel x tensor_parallel x pipeline_parallel is 8 x 4 x 1 = 32 but "
	              "there are 64 devices");

	layout heads = LAYOUT(2, 32, 1, 0); /* 16 heads */
	ck_assert_int_eq(plan_evaluate(&in, &heads, &c), PLAN_HEADS_NOT_DIVISIBLE);
	ck_assert_str_eq(c.reason, "heads (16) is not divisible by tensor_parallel (32)");

	layout layers = LAYOUT(4, 1, 16, 0); /* 24 layers */
	ck_assert_int_eq(plan_evaluate(&in, &layers, &c), PLAN_LAYERS_NOT_DIVISIBLE);
	ck_assert_str_eq(c.reason, "layers (24) is not divisible by pipeline_parallel (16)");

	layout batch = LAYOUT(64, 1, 1, 0); /* 4 x 64 = 256 divides; micro 8 does not */
	in.micro_batch = 8;
	ck_assert_int_eq(plan_evaluate(&in, &batch, &c), PLAN_BATCH_MISMATCH);
	ck_assert_str_eq(c.reason, "global_batch (256) is not micro_batch (8) x data_parallel (64) "
	                           "x a whole grad_accum");

	layout zero = LAYOUT(64, 1, 1, 4);
	ck_assert_int_eq(plan_evaluate(&in, &zero, &c), PLAN_BAD_LAYOUT);
	ck_assert_str_eq(plan_verdict_name(PLAN_OUT_OF_MEMORY), "does_not_fit");
}
END_TEST

/*
 * gpt2-1558m in fp32 on one 8 GiB device: 16 bytes x 1,557,686,400
 * parameters alone are 24.9 GB, 23.2 GiB, before any activation.
 */
START_TEST(out_of_memory_names_the_estimate)
{
	plan_input in = {.model = gpt2_1558m,
	                 .global_batch = 8,
	                 .micro_batch = 1,
	                 .precision = JOBSPEC_PRECISION_FP32,
	                 .devices = 1,
	                 .device_memory_bytes = 8 * GIB};
	layout l = LAYOUT(1, 1, 1, 0);
	plan_config c;
	ck_assert_double_eq(plan_params(&gpt2_1558m), 1557686400.0);
	ck_assert_int_eq(plan_evaluate(&in, &l, &c), PLAN_OUT_OF_MEMORY);
	ck_assert(!c.fits);
	ck_assert_double_eq(c.memory.params + c.memory.grads + c.memory.optimizer,
	                    16 * 1557686400.0);
	ck_assert_msg(strstr(c.reason, "devices have 8 GiB") != NULL, "%s", c.reason);
	ck_assert_msg(strncmp(c.reason, "needs ", 6) == 0, "%s", c.reason);
	ck_assert_msg(strstr(c.reason, "model states 23.2 GiB") != NULL, "%s", c.reason);
	/* the same job fits once the device has room */
	in.device_memory_bytes = 80 * GIB;
	ck_assert_int_eq(plan_evaluate(&in, &l, &c), PLAN_FITS);
	ck_assert_str_eq(c.reason, "");
}
END_TEST

/*
 * gpt2-350m (16 heads, 24 layers) on 8 devices, global 64 = micro 8 x 8,
 * memory to spare: the (tp, pp) pairs with tp pp | 8 are (1,1) (1,2) (1,4)
 * (1,8) (2,1) (2,2) (2,4) (4,1) (4,2) (8,1); six leave dp > 1 and get
 * stages 0-3, four leave dp = 1 and get stage 0: 28 layouts.
 */
START_TEST(enumerate_lists_every_layout)
{
	plan_input in = {.model = gpt2_350m,
	                 .global_batch = 64,
	                 .micro_batch = 8,
	                 .precision = JOBSPEC_PRECISION_BF16,
	                 .devices = 8,
	                 .device_memory_bytes = 1e12,
	                 .peak_flops = 1e15,
	                 .link_bytes_per_s = 5e10};
	plan_list list;
	ck_assert_int_eq(plan_enumerate(&in, &list), 0);
	ck_assert_uint_eq(list.n, 28);
	for (size_t i = 0; i < list.n; i++) {
		const plan_config *c = &list.items[i];
		const layout *l = &c->layout;
		ck_assert(c->fits);
		ck_assert_int_eq(l->data_parallel * l->tensor_parallel * l->pipeline_parallel, 8);
		ck_assert(l->zero_stage == 0 || l->data_parallel > 1);
		if (i > 0)
			ck_assert(list.items[i - 1].tokens_per_s >= c->tokens_per_s);
	}
	/*
	 * With one micro-batch per step, stages 0-2 all send 2 Psi: pure data
	 * parallel is fastest, stage 2 the smallest of the three and so first;
	 * stage 3 sends 3 Psi and ranks below them.
	 */
	for (int z = 0; z < 3; z++) {
		const layout *l = &list.items[z].layout;
		ck_assert_int_eq(l->data_parallel, 8);
		ck_assert_int_eq(l->zero_stage, 2 - z);
		ck_assert_double_eq(list.items[z].tokens_per_s, list.items[0].tokens_per_s);
	}
	size_t z3 = 3;
	while (z3 < list.n &&
	       !(list.items[z3].layout.data_parallel == 8 && list.items[z3].layout.zero_stage == 3))
		z3++;
	ck_assert_uint_lt(z3, list.n);
	ck_assert(list.items[z3].tokens_per_s < list.items[2].tokens_per_s);
	/* the slowest: tp 8 pays 4 all-reduces per layer over the link */
	ck_assert_int_eq(list.items[list.n - 1].layout.tensor_parallel, 8);
	plan_list_release(&list);
	ck_assert_ptr_null(list.items);
}
END_TEST

/* A tight device drops the layouts that do not fit, and only those. */
START_TEST(enumerate_keeps_only_what_fits)
{
	plan_input in = founding_input(80 * GIB);
	in.model = gpt2_1558m; /* 25 heads: tp 1, 5, 25; 48 layers */
	in.devices = 8;
	in.global_batch = 64;
	in.micro_batch = 1; /* 48 layers of 0.37 GB of activations on the first stage */
	in.precision = JOBSPEC_PRECISION_FP32;
	plan_list all, tight;
	ck_assert_int_eq(plan_enumerate(&in, &all), 0);
	in.device_memory_bytes = 24 * GIB;
	ck_assert_int_eq(plan_enumerate(&in, &tight), 0);
	ck_assert_uint_gt(tight.n, 0);
	ck_assert_uint_lt(tight.n, all.n);
	size_t fitting = 0;
	for (size_t i = 0; i < all.n; i++) {
		plan_config c;
		ck_assert_int_eq(all.items[i].layout.tensor_parallel, 1);
		plan_evaluate(&in, &all.items[i].layout, &c);
		fitting += c.fits;
		ck_assert(c.fits == (all.items[i].memory.total <= 24 * GIB));
	}
	ck_assert_uint_eq(fitting, tight.n);
	for (size_t i = 0; i < tight.n; i++)
		ck_assert(tight.items[i].memory.total <= 24 * GIB);
	plan_list_release(&all);
	plan_list_release(&tight);
}
END_TEST

/*
 * From the founding layout (64 devices): dp 4, 2, 1, then pp 1, then tp 2
 * and 1, each fitting 80 GiB at ZeRO-3, grad_accum growing to keep 256.
 */
START_TEST(fallback_ladder_shrinks_dp_then_pp_then_tp)
{
	plan_input in = founding_input(80 * GIB);
	layout from = LAYOUT(8, 4, 2, 3);
	plan_config out[JOBSPEC_MAX_FALLBACK];
	static const int want[][5] = {
	    {4, 4, 2, 3, 16}, {2, 4, 2, 3, 32}, {1, 4, 2, 3, 64},
	    {1, 4, 1, 3, 64}, {1, 2, 1, 3, 64}, {1, 1, 1, 3, 64},
	};
	int n = plan_fallback_ladder(&in, &from, out, JOBSPEC_MAX_FALLBACK);
	ck_assert_int_eq(n, 6);
	for (int i = 0; i < n; i++) {
		const layout *l = &out[i].layout;
		ck_assert_msg(l->data_parallel == want[i][0] && l->tensor_parallel == want[i][1] &&
		                  l->pipeline_parallel == want[i][2] && l->zero_stage == want[i][3],
		              "rung %d: dp%d tp%d pp%d z%d", i, l->data_parallel,
		              l->tensor_parallel, l->pipeline_parallel, l->zero_stage);
		ck_assert_int_eq(out[i].layout.grad_accum, want[i][4]);
		ck_assert(out[i].fits);
	}
	ck_assert_int_eq(plan_fallback_ladder(&in, &from, out, 2), 2);
}
END_TEST

/*
 * On 4 GiB devices: dp 4 needs 361.6 MB of model states plus 2.87 GB of
 * activations, dp 2 3.59 GB, both below 4 GiB (4.29 GB); dp 1 needs
 * 4.31 GB and the smaller ones more: two rungs.
 */
START_TEST(fallback_ladder_lists_only_what_fits)
{
	plan_input in = founding_input(4 * GIB);
	layout from = LAYOUT(8, 4, 2, 3);
	plan_config out[JOBSPEC_MAX_FALLBACK];
	int n = plan_fallback_ladder(&in, &from, out, JOBSPEC_MAX_FALLBACK);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(out[0].layout.data_parallel, 4);
	ck_assert_int_eq(out[1].layout.data_parallel, 2);
	/* a stage that no longer fits moves up: dp 4 at ZeRO-0 needs 2.87 GB +
	 * 16 x 90,403,840 = 4.32 GB, at ZeRO-1 2.87 GB + 7 Psi = 3.50 GB */
	from.zero_stage = 0;
	n = plan_fallback_ladder(&in, &from, out, JOBSPEC_MAX_FALLBACK);
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(out[0].layout.data_parallel, 4);
	ck_assert_int_eq(out[0].layout.zero_stage, 1);
}
END_TEST

/* ------------------------------------------------------------ jobs */

#define FOUNDING_JOB                                                                               \
	"{\"name\": \"gpt2-350m dp8 tp4 pp2\", \"model\": {\"preset\": \"gpt2-350m\"},"            \
	" \"data\": {\"train\": \"owt/train_*.bin\"},"                                             \
	" \"parallel\": {\"data_parallel\": 8, \"tensor_parallel\": 4, \"pipeline_parallel\": 2,"  \
	"  \"zero_stage\": 3, \"micro_batch\": 4, \"global_batch\": 256},"                         \
	" \"resources\": {\"nodes\": 8, \"gpus_per_node\": 8},"                                    \
	" \"training\": {\"steps\": 10000, \"precision\": \"bf16\"}%s}"

static void job_parse(const char *extra, jobspec *s)
{
	char text[2048];
	snprintf(text, sizeof(text), FOUNDING_JOB, extra);
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	ck_assert_msg(j != NULL, "%s", e.text);
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(jobspec_parse(j, NULL, s, NULL, &v), 0);
	verrs_release(&v);
	json_decref(j);
}

static const char *row_str(const verrs *v, size_t i, const char *key)
{
	return json_string_value(json_object_get(json_array_get(v->list, i), key));
}

START_TEST(job_check_refuses_what_cannot_fit)
{
	jobspec s;
	job_parse("", &s);
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(plan_check_job(&s, 80 * GIB, &v), 0);
	ck_assert_uint_eq(verrs_count(&v), 0);
	/* 3,049,711,616 bytes are 2.8 GiB */
	ck_assert_int_eq(plan_check_job(&s, 2 * GIB, &v), 1);
	ck_assert_str_eq(row_str(&v, 0, "pointer"), "/parallel");
	ck_assert_str_eq(row_str(&v, 0, "code"), "does_not_fit");
	ck_assert_str_eq(row_str(&v, 0, "message"),
	                 "needs 2.8 GiB per device (model states 0.2 GiB, activations 2.7 GiB), "
	                 "devices have 2 GiB");
	verrs_release(&v);
}
END_TEST

/* A fallback that would not fit is refused at its own pointer. */
START_TEST(job_check_looks_at_fallbacks)
{
	jobspec s;
	job_parse(", \"fault_tolerance\": {\"fallback\": [{\"data_parallel\": 4,"
	          " \"tensor_parallel\": 4, \"pipeline_parallel\": 2}, {\"data_parallel\": 1,"
	          " \"tensor_parallel\": 1, \"pipeline_parallel\": 1, \"zero_stage\": 0}]}",
	          &s);
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(plan_check_job(&s, 4 * GIB, &v), 1);
	ck_assert_str_eq(row_str(&v, 0, "pointer"), "/fault_tolerance/fallback/1");
	ck_assert_str_eq(row_str(&v, 0, "code"), "does_not_fit");
	verrs_release(&v);
}
END_TEST

/* The plan request reads its model like the job spec does. */
START_TEST(model_section_shared_with_jobspec)
{
	json_error_t e;
	json_t *j = json_loads("{\"model\": {\"preset\": \"gpt2-124m\", \"layers\": 6}}", 0, &e);
	jobspec_model m;
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(jobspec_model_parse(j, &m, &v), 0);
	ck_assert_int_eq(m.layers, 6);
	ck_assert_int_eq(m.d_model, 768);
	ck_assert_int_eq(m.vocab_size, 50257);
	json_decref(j);
	j = json_loads("{\"model\": {\"preset\": \"gpt9\", \"heads\": 0}}", 0, &e);
	ck_assert_int_eq(jobspec_model_parse(j, &m, &v), -ERR_VALIDATION_FAILED);
	ck_assert_uint_eq(verrs_count(&v), 2);
	ck_assert_str_eq(row_str(&v, 0, "pointer"), "/model/preset");
	ck_assert_str_eq(row_str(&v, 1, "pointer"), "/model/heads");
	json_decref(j);
	j = json_loads("{}", 0, &e);
	ck_assert_int_eq(jobspec_model_parse(j, &m, &v), -ERR_VALIDATION_FAILED);
	ck_assert_str_eq(row_str(&v, 2, "code"), "required");
	json_decref(j);
	verrs_release(&v);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("plan");
	TCase *f = tcase_create("formulas");
	tcase_add_test(f, zero_paper_figure_1);
	tcase_add_test(f, zero_fp32_constants);
	tcase_add_test(f, korthikanti_gpt3_layer);
	tcase_add_test(f, first_stage_holds_every_layer);
	tcase_add_test(f, bubble_and_in_flight);
	tcase_add_test(f, parameter_counts);
	tcase_add_test(f, flops_per_token);
	suite_add_tcase(s, f);
	TCase *l = tcase_create("layouts");
	tcase_add_test(l, founding_example_fits);
	tcase_add_test(l, refusals_carry_a_reason);
	tcase_add_test(l, out_of_memory_names_the_estimate);
	tcase_add_test(l, enumerate_lists_every_layout);
	tcase_add_test(l, enumerate_keeps_only_what_fits);
	tcase_add_test(l, fallback_ladder_shrinks_dp_then_pp_then_tp);
	tcase_add_test(l, fallback_ladder_lists_only_what_fits);
	suite_add_tcase(s, l);
	TCase *j = tcase_create("jobs");
	tcase_add_test(j, job_check_refuses_what_cannot_fit);
	tcase_add_test(j, job_check_looks_at_fallbacks);
	tcase_add_test(j, model_section_shared_with_jobspec);
	suite_add_tcase(s, j);
	return s;
}

UNIT_MAIN()
