/*
 * trainer.c - the training loop.
 *
 * Ranks form a dp x tp x pp grid (mp.h) with a communicator per group.
 * Per optimizer step s (1-based):
 *   dp_begin_step; the step's micro-batches through the pipeline stages
 *   (pipeline.h: 1F1B; with one stage, forward and backward per
 *   micro-batch), dloss = loss_scale / (micro-batches * dp); the mean loss
 *   over the data-parallel replicas; dp_step (reduce, tie the embedding
 *   copies, global norm over every rank, finiteness agreed by all, clip,
 *   AdamW); loss scaling and spike detection; one metrics line; a
 *   checkpoint every checkpoint.every_steps, at the end, on SIGTERM/SIGUSR1
 *   and at --stop-after.
 *
 * Checkpoints are layout-free (train_ckpt.h): a resume reads every shard
 * and takes what it holds now, so a checkpoint of one (dp, tp, pp,
 * zero_stage) resumes under another.
 */
#include "trainer.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ckpt.h"
#include "clock.h"
#include "comm.h"
#include "data.h"
#include "failure.h"
#include "gpt.h"
#include "llmc.h"
#include "metrics.h"
#include "mp.h"
#include "numerics.h"
#include "optim.h"
#include "pipeline.h"
#include "ckpt_store.h"
#include "train_ckpt.h"
#include "train_gpu.h"
#include "zero.h"

/* Consecutive non-finite steps after which the run gives up. */
#define MAX_BAD_STEPS 25

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* The communicators of a rank: the world and its groups (mp.h's mp_group). */
enum { G_TP = MP_TP, G_DP = MP_DP, G_PP = MP_PP, G_TIE = MP_TIE, G_COUNT = MP_GROUPS };

typedef struct run {
	const train_config *tc;
	const train_options *o;
	comm *c; /* the world */
	int rank, world;
	mp_grid grid;
	mp_layout *lay;
	comm *g[G_COUNT]; /* NULL: not formed (a width of 1; G_TIE on middle stages) */
	dp_runtime *dp;
	gpt_model *model;
	pipeline pipe;
	data_loader *data;
	ckpt_store *store;
	metrics met;
	loss_scaler scaler;
	spike_detector spikes;
	lr_schedule sched;
	int step;          /* last completed step */
	int skipped;       /* steps skipped in all */
	int bad_in_a_row;  /* consecutive non-finite steps */
	json_t *from_grid; /* the grid of the checkpoint resumed from, or NULL */
	train_gpu gpu;     /* --device cuda: the model there, gpu.on */
	bool data_failed;  /* next_batch failed: the step's failure is the data error */
	char err[1024];
} run;

/* Print a failure on rank 0 (others too when only they know). */
static int fail(run *r, int status, const char *what)
{
	fprintf(stderr, "trainyard-train[%d]: %s: %s\n", r->rank, what, r->err);
	return status;
}

/* dp_train_exit() and restore() tell these codes from err_codes (error.h) */
_Static_assert(-COMM_ERR_ARG > ERR__COUNT && -COMM_ERR_FAILED > ERR__COUNT &&
                   -DP_ERR_ARG > ERR__COUNT && -DP_ERR_CONTRACT > ERR__COUNT,
               "COMM_ERR_* and DP_ERR_* must lie outside the err_code space");

/* ---- checkpoints ---------------------------------------------------- */

static json_t *state_json(const run *r)
{
	data_position p = data_tell(r->data);
	layout grid = {.data_parallel = r->grid.dp,
	               .tensor_parallel = r->grid.tp,
	               .pipeline_parallel = r->grid.pp,
	               .zero_stage = dp_stage(r->dp)};
	return json_pack("{s:i, s:i, s:i, s:f, s:i, s:{s:I, s:I, s:I}, s:o}", "step", r->step,
	                 "opt_step", dp_opt_step(r->dp), "skipped", r->skipped, "loss_scale",
	                 (double)r->scaler.scale, "good_steps", r->scaler.good_steps, "data",
	                 "epoch", (json_int_t)p.epoch, "cursor", (json_int_t)p.cursor, "sequences",
	                 (json_int_t)p.sequences, "grid", layout_to_json(&grid, LAYOUT_F_SHAPE));
}

static int write_shard(run *r, ckpt_shard_info *info)
{
	train_shard sh;
	json_t *st = state_json(r);
	char *state = json_dumps(st, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(st);
	if (!state || train_shard_from_dp(&sh, r->lay, r->dp) < 0) {
		free(state);
		snprintf(r->err, sizeof(r->err), "out of memory preparing a checkpoint");
		return -1;
	}
	int rc = train_shard_write(&sh, state, r->store, r->step, r->rank, r->world, info, r->err,
	                           sizeof(r->err));
	train_shard_release(&sh);
	free(state);
	return rc;
}

/* The state on the GPU back into the host copies a checkpoint or an export reads. */
static int from_device(run *r)
{
	if (!r->gpu.on)
		return 0;
	int rc = train_gpu_download(&r->gpu, r->dp, r->err, sizeof(r->err));
	if (rc != TRAIN_OK)
		fprintf(stderr, "trainyard-train[%d]: %s\n", r->rank, r->err);
	return rc == TRAIN_OK ? 0 : -1;
}

/* Every rank writes its shard; rank 0 writes the manifest last, then prunes. */
static int checkpoint(run *r)
{
	if (from_device(r) < 0)
		return -1;
	ckpt_shard_info mine;
	memset(&mine, 0, sizeof(mine));
	float ok = write_shard(r, &mine) == 0 ? 1.0f : 0.0f;
	if (ok == 0.0f)
		fprintf(stderr, "trainyard-train[%d]: could not write checkpoint shard: %s\n",
		        r->rank, r->err);
	float all = ok;
	int rc = comm_allreduce_sum(r->c, &all, 1);
	if (rc < 0)
		return rc;
	if (all < (float)r->world) {
		snprintf(r->err, sizeof(r->err), "a rank could not write its shard of step %d",
		         r->step);
		return -1;
	}
	ckpt_shard_info *infos = NULL;
	if (r->rank == 0) {
		infos = calloc((size_t)r->world, sizeof(*infos));
		if (!infos)
			return DP_ERR_NOMEM;
		infos[0] = mine;
		for (int k = 1; k < r->world && rc == 0; k++)
			rc = comm_recv(r->c, &infos[k], sizeof(infos[k]), k, 7);
		if (rc == 0)
			rc = ckpt_manifest_write(r->store, r->step, r->world, r->tc->normalized,
			                         infos, r->world, r->err, sizeof(r->err));
		int removed = 0;
		if (rc == 0 && ckpt_prune(r->store, r->tc->spec.checkpoint.keep, &removed, r->err,
		                          sizeof(r->err)) < 0)
			fprintf(stderr, "trainyard-train: could not prune checkpoints: %s\n",
			        r->err);
		free(infos);
	} else {
		rc = comm_send(r->c, &mine, sizeof(mine), 0, 7);
	}
	int brc = comm_barrier(r->c);
	if (rc == 0 && brc < 0)
		rc = brc;
	if (rc == 0)
		metrics_emit(&r->met, "event",
		             json_pack("{s:s, s:i, s:i}", "event", "checkpoint", "step", r->step,
		                       "world", r->world));
	return rc;
}

static int agree_min(void *ctx, int ok)
{
	run *r = ctx;
	float v = ok ? 0.0f : 1.0f;
	if (comm_allreduce_sum(r->c, &v, 1) < 0)
		return 0;
	return v == 0.0f;
}

static void on_refused(void *ctx, int step, int code, const char *why)
{
	run *r = ctx;
	(void)code;
	if (r->rank == 0)
		fprintf(stderr, "trainyard-train: refusing checkpoint of step %d: %s\n", step, why);
	metrics_emit(&r->met, "event",
	             json_pack("{s:s, s:i, s:s}", "event", "checkpoint_refused", "step", step,
	                       "reason", why));
}

/* What a rank restores: per local unit, its owned range, the runs of it, the arrays. */
typedef struct restore_plan {
	int nunits;
	dp_range *range;
	mp_run **want;
	size_t *nwant, *filled;
	float **dst[TS_SECTIONS];
} restore_plan;

static void plan_release(restore_plan *p)
{
	for (int u = 0; u < p->nunits; u++) {
		if (p->want)
			free(p->want[u]);
		for (int k = 0; k < TS_SECTIONS; k++)
			if (p->dst[k])
				free(p->dst[k][u]);
	}
	free(p->range);
	free(p->want);
	free(p->nwant);
	free(p->filled);
	for (int k = 0; k < TS_SECTIONS; k++)
		free(p->dst[k]);
}

static int plan_init(run *r, restore_plan *p)
{
	int n = dp_num_units(r->dp);
	memset(p, 0, sizeof(*p));
	p->nunits = n;
	p->range = calloc((size_t)n, sizeof(*p->range));
	p->want = calloc((size_t)n, sizeof(*p->want));
	p->nwant = calloc((size_t)n, sizeof(*p->nwant));
	p->filled = calloc((size_t)n, sizeof(*p->filled));
	int ok = p->range && p->want && p->nwant && p->filled;
	for (int k = 0; k < TS_SECTIONS; k++)
		ok = (p->dst[k] = calloc((size_t)n, sizeof(float *))) && ok;
	for (int u = 0; ok && u < n; u++) {
		dp_range g = dp_owned_range(r->dp, u);
		p->range[u] = g;
		p->nwant[u] = mp_runs(r->lay, g.begin, g.end, false, NULL, 0);
		ok = (p->want[u] = malloc((p->nwant[u] + 1) * sizeof(mp_run))) != NULL;
		if (ok)
			mp_runs(r->lay, g.begin, g.end, false, p->want[u], p->nwant[u]);
		for (int k = 0; k < TS_SECTIONS; k++)
			ok = ok && (p->dst[k][u] = calloc(g.end - g.begin + 1, sizeof(float)));
	}
	return ok ? 0 : -ERR_INTERNAL;
}

/* Take from shard k of m what this rank restores. OUT: *state from shard 0. */
static int take_shard(run *r, const ckpt_manifest *m, int k, restore_plan *p, json_t **state)
{
	train_shard sh;
	int rc = train_shard_read(&sh, r->store, m, k, gpt_num_params(&r->tc->model), k == 0,
	                          r->err, sizeof(r->err));
	if (rc < 0)
		return rc;
	for (int u = 0; u < p->nunits; u++) {
		float *dst[TS_SECTIONS] = {p->dst[0][u], p->dst[1][u], p->dst[2][u]};
		p->filled[u] +=
		    train_shard_fill(&sh, p->want[u], p->nwant[u], p->range[u].begin, dst);
	}
	if (k == 0) {
		json_error_t je;
		*state = json_loads(sh.state, 0, &je);
		if (!*state) {
			snprintf(r->err, sizeof(r->err), "checkpoint state is not JSON: %s",
			         je.text);
			rc = -ERR_CHECKPOINT_CORRUPT;
		}
	}
	train_shard_release(&sh);
	return rc;
}

/*
 * The layout a checkpoint's state says it was written under, by the
 * layout's names (layout.h); a checkpoint written before them named the
 * degrees dp, tp and pp. RET: a new object, or NULL when the state has no
 * grid (or memory ran out).
 */
static json_t *state_grid(const json_t *state)
{
	static const char *const old_names[][2] = {
	    {"dp", "data_parallel"}, {"tp", "tensor_parallel"}, {"pp", "pipeline_parallel"}};
	const json_t *g = json_object_get(state, "grid");
	if (!json_is_object(g))
		return NULL;
	json_t *named = json_object();
	const char *k;
	json_t *x;
	json_object_foreach ((json_t *)g, k, x) {
		for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++)
			if (strcmp(k, old_names[i][0]) == 0)
				k = old_names[i][1];
		json_object_set(named, k, x);
	}
	return named;
}

/* Apply the state JSON of a checkpoint. RET 0 or an error. OUT: *opt_step. */
static int apply_state(run *r, const ckpt_manifest *m, json_t *state, int *opt_step)
{
	json_t *d = json_object_get(state, "data");
	data_position p = {
	    .epoch = (uint64_t)json_integer_value(json_object_get(d, "epoch")),
	    .cursor = (uint64_t)json_integer_value(json_object_get(d, "cursor")),
	    .sequences = (uint64_t)json_integer_value(json_object_get(d, "sequences")),
	};
	r->step = (int)json_integer_value(json_object_get(state, "step"));
	r->skipped = (int)json_integer_value(json_object_get(state, "skipped"));
	*opt_step = (int)json_integer_value(json_object_get(state, "opt_step"));
	r->scaler.scale = (float)json_real_value(json_object_get(state, "loss_scale"));
	r->scaler.good_steps = (int)json_integer_value(json_object_get(state, "good_steps"));
	r->from_grid = state_grid(state);
	if (r->step != m->step) {
		snprintf(r->err, sizeof(r->err), "checkpoint state says step %d, manifest %d",
		         r->step, m->step);
		return -ERR_CHECKPOINT_CORRUPT;
	}
	if (data_seek(r->data, p) < 0) {
		snprintf(r->err, sizeof(r->err), "%s", data_error(r->data));
		return -ERR_CHECKPOINT_CORRUPT;
	}
	return 0;
}

/* Restore model, optimizer, scaler and data position from manifest m. */
static int restore(run *r, const ckpt_manifest *m)
{
	restore_plan p;
	json_t *state = NULL;
	int rc = plan_init(r, &p), opt_step = 0;
	for (int k = 0; rc == 0 && k < m->world; k++)
		rc = take_shard(r, m, k, &p, &state);
	for (int u = 0; rc == 0 && u < p.nunits; u++) {
		size_t need = p.range[u].end - p.range[u].begin;
		if (p.filled[u] != need) {
			snprintf(
			    r->err, sizeof(r->err),
			    "the checkpoint of step %d holds %zu of the %zu elements this rank "
			    "needs of unit %d",
			    m->step, p.filled[u], need, r->lay->units[u].id);
			rc = -ERR_CHECKPOINT_CORRUPT;
			break;
		}
		rc = dp_load_shard(r->dp, u, p.dst[0][u], p.dst[1][u], p.dst[2][u]);
	}
	if (rc == 0)
		rc = apply_state(r, m, state, &opt_step);
	/* collective: every rank calls it, whatever happened locally */
	float bad = rc == 0 ? 0.0f : 1.0f;
	int crc = comm_allreduce_sum(r->c, &bad, 1);
	if (rc == 0 && crc == 0 && bad == 0.0f)
		rc = dp_load_done(r->dp, opt_step);
	else if (rc == 0)
		rc = crc ? crc : -ERR_CHECKPOINT_CORRUPT;
	json_decref(state);
	plan_release(&p);
	return rc;
}

/* Resume from the newest checkpoint that verifies. RET a train_exit. */
static int resume(run *r)
{
	if (!r->store || r->o->no_resume)
		return TRAIN_OK;
	ckpt_find_opts fo = {.part = r->rank,
	                     .parts = r->world,
	                     .agree = agree_min,
	                     .refused = on_refused,
	                     .ctx = r};
	ckpt_manifest m;
	memset(&m, 0, sizeof(m));
	int rc = ckpt_find_valid(r->store, &fo, &m, r->err, sizeof(r->err));
	if (rc == -ERR_CHECKPOINT_NOT_FOUND) {
		ckpt_manifest_release(&m);
		return TRAIN_OK; /* nothing to resume: a fresh start */
	}
	if (rc < 0) {
		ckpt_manifest_release(&m);
		return fail(r, TRAIN_CKPT_CORRUPT, "no checkpoint can be resumed");
	}
	json_t *was = json_object_get(m.config, "model");
	if (!json_equal(was, json_object_get(r->tc->normalized, "model"))) {
		ckpt_manifest_release(&m);
		snprintf(r->err, sizeof(r->err),
		         "the checkpoints to resume are of another model than the job spec's");
		return fail(r, TRAIN_INVALID_CONFIG, "cannot resume");
	}
	rc = restore(r, &m);
	int step = m.step, world = m.world;
	ckpt_manifest_release(&m);
	if (rc < 0)
		return fail(r, rc == -ERR_INTERNAL ? TRAIN_OOM : TRAIN_CKPT_CORRUPT,
		            "could not restore the checkpoint");
	metrics_emit(&r->met, "event",
	             json_pack("{s:s, s:i, s:i, s:O*}", "event", "resumed", "step", step,
	                       "from_world", world, "from_grid", r->from_grid));
	return TRAIN_OK;
}

/* ---- one step ------------------------------------------------------- */

typedef struct step_result {
	float loss;
	dp_step_info info;
	double seconds, comm_s, data_s;
	double tp_s, bubble_s, dp_s; /* tensor-parallel, pipeline and data-parallel communication */
	float lr;
} step_result;

static double group_seconds(const run *r, int g)
{
	return r->g[g] ? comm_seconds(r->g[g]) : 0.0;
}

static void reset_seconds(run *r)
{
	comm_seconds_reset(r->c);
	for (int g = 0; g < G_COUNT; g++)
		if (r->g[g])
			comm_seconds_reset(r->g[g]);
}

/* The pipeline's data source: the loader's next micro-batch. */
static int next_batch(void *ctx, int32_t *inputs, int32_t *targets)
{
	run *r = ctx;
	int rc = data_next(r->data, inputs, targets);
	if (rc < 0) {
		r->data_failed = true;
		snprintf(r->err, sizeof(r->err), "%s", data_error(r->data));
	}
	return rc;
}

/* A step on the GPU (train_gpu.h): the data-parallel ranks sum their gradients there. */
static int train_step_gpu(run *r, int s, step_result *out)
{
	const train_config *tc = r->tc;
	double t0 = clock_mono_s(), d0 = data_wait_seconds(r->data);
	int data_rc = 0;
	memset(out, 0, sizeof(*out));
	out->lr = lr_at(&r->sched, s);
	comm_seconds_reset(r->c);
	int rc = train_gpu_step(&r->gpu, tc->run.grad_accum, next_batch, r, out->lr,
	                        (float)tc->spec.training.grad_clip, r->scaler.scale, &out->loss,
	                        &out->info, &data_rc, r->err, sizeof(r->err));
	if (rc == TRAIN_DATA)
		return fail(r, TRAIN_DATA, "could not read training data");
	if (rc != TRAIN_OK)
		return fail(r, rc, "the step failed on the GPU");
	out->seconds = clock_mono_s() - t0;
	train_gpu_comm_seconds(&r->gpu, &out->tp_s, &out->bubble_s, &out->dp_s);
	out->comm_s = comm_seconds(r->c) + out->tp_s + out->bubble_s + out->dp_s;
	out->data_s = data_wait_seconds(r->data) - d0;
	return TRAIN_OK;
}

static int train_step(run *r, int s, step_result *out)
{
	const train_config *tc = r->tc;
	if (r->gpu.on)
		return train_step_gpu(r, s, out);
	double t0 = clock_mono_s(), d0 = data_wait_seconds(r->data);
	reset_seconds(r);
	int rc = dp_begin_step(r->dp, tc->run.grad_accum);
	if (rc < 0)
		return dp_train_exit(rc);
	float dloss = r->scaler.scale / (float)(tc->run.grad_accum * r->grid.dp);
	double loss_sum = 0;
	if ((rc = pipe_step(&r->pipe, tc->run.grad_accum, dloss, &loss_sum)) < 0) {
		if (r->data_failed) /* pipe_step passed on next_batch's code */
			return fail(r, TRAIN_DATA, "could not read training data");
		snprintf(r->err, sizeof(r->err), "%s", "a pipeline transfer failed");
		return fail(r, dp_train_exit(rc), "the step failed");
	}
	/* the loss lives on the last stage: one copy per data-parallel replica */
	bool counts = r->grid.pp_rank == r->grid.pp - 1 && r->grid.tp_rank == 0;
	float loss = counts ? (float)(loss_sum / tc->run.grad_accum) : 0.0f;
	if ((rc = comm_allreduce_sum(r->c, &loss, 1)) < 0)
		return dp_train_exit(rc);
	out->loss = loss / (float)r->grid.dp;
	out->lr = lr_at(&r->sched, s);
	float clip = (float)tc->spec.training.grad_clip;
	rc = dp_step(r->dp, dp_opt_step(r->dp) + 1, out->lr, clip, 1.0f / r->scaler.scale,
	             &out->info);
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "%s", comm_error(r->c));
		return fail(r, dp_train_exit(rc), "the optimizer step failed");
	}
	out->seconds = clock_mono_s() - t0;
	out->tp_s = group_seconds(r, G_TP);
	out->bubble_s = group_seconds(r, G_PP);
	out->dp_s = group_seconds(r, G_DP) + group_seconds(r, G_TIE);
	out->comm_s = comm_seconds(r->c) + out->tp_s + out->bubble_s + out->dp_s;
	out->data_s = data_wait_seconds(r->data) - d0;
	return TRAIN_OK;
}

/* A JSON number, or null for what JSON cannot hold (NaN, Inf). */
static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static void report_step(run *r, int s, const step_result *sr)
{
	const train_config *tc = r->tc;
	double tokens = (double)tc->spec.global_batch * tc->model.max_seq_len;
	double flops = gpt_flops_per_token(&tc->model, tc->model.max_seq_len) * tokens;
	double fps = flops / sr->seconds;
	json_t *f = json_object();
	json_object_set_new(f, "step", json_integer(s));
	json_object_set_new(f, "loss", num(sr->loss));
	json_object_set_new(f, "lr", num(sr->lr));
	json_object_set_new(f, "grad_norm", num(sr->info.grad_norm));
	json_object_set_new(f, "tokens_per_s", num(tokens / sr->seconds));
	json_object_set_new(f, "flops_per_s", num(fps));
	if (r->o->peak_flops > 0)
		json_object_set_new(f, "mfu", num(fps / (r->o->peak_flops * r->world)));
	json_object_set_new(f, "step_s", num(sr->seconds));
	json_object_set_new(f, "compute_s", num(sr->seconds - sr->comm_s - sr->data_s));
	json_object_set_new(f, "comm_s", num(sr->comm_s));
	json_object_set_new(f, "tp_comm_s", num(sr->tp_s));
	json_object_set_new(f, "pp_bubble_s", num(sr->bubble_s));
	json_object_set_new(f, "dp_comm_s", num(sr->dp_s));
	json_object_set_new(f, "data_wait_s", num(sr->data_s));
	json_object_set_new(f, "loss_scale", num(r->scaler.scale));
	json_object_set_new(f, "skipped_steps", json_integer(r->skipped + !sr->info.updated));
	json_object_set_new(f, "updated", json_boolean(sr->info.updated));
	metrics_emit(&r->met, "step", f);
}

/* Numerics after a step: skip accounting, loss scale, spikes. RET a train_exit. */
static int after_step(run *r, int s, const step_result *sr)
{
	bool finite = sr->info.finite && isfinite(sr->loss);
	if (!finite) {
		r->skipped++;
		r->bad_in_a_row++;
		metrics_emit(&r->met, "event",
		             json_pack("{s:s, s:i, s:o, s:o, s:o}", "event", "skip", "step", s,
		                       "loss", num(sr->loss), "grad_norm", num(sr->info.grad_norm),
		                       "loss_scale", num(r->scaler.scale)));
	} else {
		r->bad_in_a_row = 0;
		double z;
		if (spike_add(&r->spikes, sr->loss, &z))
			metrics_emit(&r->met, "event",
			             json_pack("{s:s, s:i, s:f, s:f}", "event", "spike", "step", s,
			                       "loss", (double)sr->loss, "z", z));
	}
	float before = r->scaler.scale;
	if (loss_scaler_update(&r->scaler, finite))
		metrics_emit(&r->met, "event",
		             json_pack("{s:s, s:i, s:f, s:f}", "event", "loss_scale", "step", s,
		                       "from", (double)before, "to", (double)r->scaler.scale));
	if (r->bad_in_a_row >= MAX_BAD_STEPS) {
		snprintf(r->err, sizeof(r->err),
		         "%d steps in a row had a non-finite loss or gradient", r->bad_in_a_row);
		return fail(r, TRAIN_NUMERIC, "giving up");
	}
	return TRAIN_OK;
}

/* ---- setup ---------------------------------------------------------- */

/* Form the groups of the grid (mp.h). RET 0 or a COMM_ERR_*. */
static int form_groups(run *r)
{
	int rc;
	for (int k = 0; k < G_COUNT; k++) {
		mp_split sp = mp_group_split(&r->grid, (mp_group)k);
		/* every rank calls every split with width > 1 (widths are the same everywhere) */
		if (sp.width == 1)
			continue;
		if ((rc = comm_split(r->c, sp.color, sp.key, &r->g[k])) < 0)
			return rc;
		if (!sp.member) {
			comm_free(r->g[k]);
			r->g[k] = NULL;
		}
	}
	return 0;
}

static adamw_config run_adamw(const train_config *tc)
{
	const jobspec_training *t = &tc->spec.training;
	adamw_config a = adamw_defaults();
	a.beta1 = (float)t->adam_beta1;
	a.beta2 = (float)t->adam_beta2;
	a.eps = (float)t->adam_eps;
	a.weight_decay = (float)t->weight_decay;
	a.clip_eps = (float)t->grad_clip_eps;
	return a;
}

/* --device cuda: check the run fits, load the backend, open the GPU. RET a train_exit. */
static int open_device(run *r)
{
	if (!r->o->cuda)
		return TRAIN_OK;
	adamw_config a = run_adamw(r->tc);
	int rc = train_gpu_open(&r->gpu, r->tc, r->c, &r->grid, &a, r->err, sizeof(r->err));
	if (rc != TRAIN_OK)
		return fail(r, rc, "cannot train on a GPU");
	metrics_emit(&r->met, "event",
	             json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "event", "device", "kind", "cuda",
	                       "name", r->gpu.device, "comm",
	                       r->gpu.dev ? comm_name(r->gpu.dev) : "none", "tp_comm",
	                       r->gpu.tp_dev ? comm_name(r->gpu.tp_dev) : "none", "pp_comm",
	                       r->gpu.pp_dev ? comm_name(r->gpu.pp_dev) : "none"));
	return TRAIN_OK;
}

static int setup_parallel(run *r, const float *init)
{
	const train_config *tc = r->tc;
	const mp_grid *g = &r->grid;
	int rc = form_groups(r);
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "%s", comm_error(r->c));
		return fail(r, dp_train_exit(rc), "could not form the parallel groups");
	}
	r->lay =
	    mp_layout_new(&tc->model, g->tp, g->tp_rank, g->pp, g->pp_rank, r->err, sizeof(r->err));
	if (!r->lay)
		return fail(r, strstr(r->err, "out of memory") ? TRAIN_OOM : TRAIN_INVALID_CONFIG,
		            "invalid parallel layout");
	float *local = malloc((r->lay->nparams ? r->lay->nparams : 1) * sizeof(float));
	if (!local) {
		snprintf(r->err, sizeof(r->err), "out of memory for the initial parameters");
		return fail(r, TRAIN_OOM, "setup");
	}
	mp_extract(r->lay, init, local);
	adamw_config opt = run_adamw(tc);
	dp_groups groups = {.dp = r->g[G_DP] ? r->g[G_DP] : r->c, .norm = r->c, .tie = r->g[G_TIE]};
	if (!r->g[G_DP] && r->world > 1) {
		/* a data-parallel width of 1 inside a bigger world: ZeRO over this rank alone */
		if (!(r->g[G_DP] = comm_self_new(r->err, sizeof(r->err)))) {
			free(local);
			return fail(r, TRAIN_OOM, "could not form the parallel groups");
		}
		groups.dp = r->g[G_DP];
	}
	r->dp =
	    dp_new_part(r->lay, &groups, tc->run.zero_stage, local, &opt, r->err, sizeof(r->err));
	free(local);
	if (!r->dp)
		return fail(r, strstr(r->err, "out of memory") ? TRAIN_OOM : TRAIN_INVALID_CONFIG,
		            "could not set up data parallel");
	if (r->gpu.on)
		return TRAIN_OK; /* the model is the GPU's (train_gpu_upload after the resume) */
	gpt_part part = mp_layout_part(r->lay);
	part.tp_comm = r->g[G_TP];
	part.slots = pipe_slots(g->pp, g->pp_rank, tc->run.grad_accum);
	part.recompute = (gpt_recompute)tc->spec.training.recompute;
	int B = tc->run.micro_batch, T = tc->model.max_seq_len;
	r->model = gpt_new_part(&tc->model, &part, B, T, tc->precision, r->err, sizeof(r->err));
	if (!r->model)
		return fail(r, strstr(r->err, "out of memory") ? TRAIN_OOM : TRAIN_INVALID_CONFIG,
		            "could not allocate the model");
	r->pipe = (pipeline){.model = r->model,
	                     .hooks = dp_hooks(r->dp),
	                     .pp = r->g[G_PP],
	                     .stage = g->pp_rank,
	                     .stages = g->pp,
	                     .slots = part.slots,
	                     .B = B,
	                     .T = T,
	                     .C = tc->model.channels,
	                     .next_batch = next_batch,
	                     .ctx = r};
	if (pipe_init(&r->pipe) < 0) {
		snprintf(r->err, sizeof(r->err), "out of memory for the pipeline buffers");
		return fail(r, TRAIN_OOM, "setup");
	}
	return TRAIN_OK;
}

/*
 * The whole model's initial weights, unit-major: an llm.c model file
 * (--init-from), the newest checkpoint of another run (--init-ckpt: the
 * weights alone, the optimizer starts afresh at step 0), or the spec's
 * seed. OUT *init (caller frees). RET a train_exit.
 */
static int initial_params(run *r, float **init)
{
	const train_config *tc = r->tc;
	size_t n = gpt_num_params(&tc->model);
	*init = NULL;
	if (tc->spec.training.init_from[0] && !r->o->init_ckpt) {
		snprintf(
		    r->err, sizeof(r->err),
		    "the spec names training.init_from \"%s\": the worker runtime fetches that "
		    "checkpoint and names it with --init-ckpt",
		    tc->spec.training.init_from);
		return fail(r, TRAIN_INVALID_CONFIG, "could not take the initial weights");
	}
	if (r->o->init_from) {
		if (llmc_read_for(r->o->init_from, &tc->model, init, r->err, sizeof(r->err)) < 0)
			return fail(r, TRAIN_INVALID_CONFIG, "could not import weights");
		return TRAIN_OK;
	}
	if (!(*init = malloc(n * sizeof(float)))) {
		snprintf(r->err, sizeof(r->err), "out of memory for the initial parameters");
		return fail(r, TRAIN_OOM, "setup");
	}
	if (!r->o->init_ckpt) {
		gpt_init_params(&tc->model, *init, (uint64_t)tc->spec.training.seed);
		return TRAIN_OK;
	}
	ckpt_store *st = r->o->init_encrypt
	                     ? ckpt_store_encrypted(r->o->init_ckpt, r->o->init_encrypt)
	                     : ckpt_store_dir(r->o->init_ckpt);
	ckpt_manifest m;
	int rc = st ? train_ckpt_params(st, json_object_get(tc->normalized, "model"), n, *init, &m,
	                                r->err, sizeof(r->err))
	            : -ERR_INTERNAL;
	if (!st)
		memset(&m, 0, sizeof(m));
	int step = m.step, world = m.world;
	ckpt_manifest_release(&m);
	if (st)
		ckpt_store_free(st);
	if (rc < 0) {
		free(*init);
		*init = NULL;
		return fail(r,
		            rc == -ERR_INTERNAL           ? TRAIN_OOM
		            : rc == -ERR_INVALID_ARGUMENT ? TRAIN_INVALID_CONFIG
		                                          : TRAIN_CKPT_CORRUPT,
		            "could not take the initial weights from the checkpoint");
	}
	metrics_emit(&r->met, "event",
	             json_pack("{s:s, s:i, s:i}", "event", "initialized", "from_step", step,
	                       "from_world", world));
	return TRAIN_OK;
}

static int setup(run *r)
{
	const train_config *tc = r->tc;
	const jobspec *spec = &tc->spec;
	if (mp_grid_init(&r->grid, r->world, r->rank, tc->run.data_parallel,
	                 tc->run.tensor_parallel, tc->run.pipeline_parallel, r->err,
	                 sizeof(r->err)) < 0)
		return fail(r, TRAIN_INVALID_CONFIG, "invalid parallel layout");
	if (gpt_config_check(&tc->model, r->err, sizeof(r->err)) < 0)
		return fail(r, TRAIN_INVALID_CONFIG, "invalid model");
	if (r->o->threads > 0) {
		omp_set_num_threads(r->o->threads);
		openblas_set_num_threads(r->o->threads);
	}
	int rc = open_device(r);
	if (rc != TRAIN_OK)
		return rc;
	float *init = NULL;
	rc = initial_params(r, &init);
	if (rc != TRAIN_OK)
		return rc;
	rc = setup_parallel(r, init);
	free(init);
	if (rc != TRAIN_OK)
		return rc;
	if (!spec->data.train[0]) {
		/* the worker runtime unseals a registered dataset and names its shards here */
		snprintf(r->err, sizeof(r->err),
		         "the spec names data.dataset \"%s\": datasets are read by the worker "
		         "runtime, the trainer reads data.train paths only",
		         spec->data.dataset);
		return fail(r, TRAIN_DATA, "could not open data");
	}
	int B = tc->run.micro_batch, T = tc->model.max_seq_len;
	data_config dc = {.root = r->o->data_root,
	                  .pattern = spec->data.train,
	                  .vocab_size = tc->model.vocab_size,
	                  .B = B,
	                  .T = T,
	                  .dp_rank = r->grid.dp_rank,
	                  .dp_size = r->grid.dp,
	                  .accum_steps = tc->run.grad_accum,
	                  .seed = (uint64_t)spec->training.seed,
	                  .shuffle = spec->data.shuffle,
	                  .prefetch = true};
	rc = data_open(&dc, &r->data, r->err, sizeof(r->err));
	if (rc < 0)
		return fail(r, rc == -ERR_INTERNAL ? TRAIN_OOM : TRAIN_DATA, "could not open data");
	r->sched = (lr_schedule){
	    .max_lr = (float)spec->training.lr,
	    .min_lr = (float)(spec->training.lr * spec->training.min_lr_fraction),
	    .warmup_steps = spec->training.warmup_steps,
	    .total_steps = spec->training.steps,
	    .decay = spec->training.schedule == JOBSPEC_SCHEDULE_LINEAR     ? LR_LINEAR
	             : spec->training.schedule == JOBSPEC_SCHEDULE_CONSTANT ? LR_CONSTANT
	                                                                    : LR_COSINE,
	    .convention = spec->training.lr_convention == JOBSPEC_LR_LLMC      ? LR_LLMC
	                  : spec->training.lr_convention == JOBSPEC_LR_NANOGPT ? LR_NANOGPT
	                                                                       : LR_TRAINYARD,
	};
	loss_scaler_init(&r->scaler, tc->precision == GPT_FP16,
	                 r->o->loss_scale > 0 ? (float)r->o->loss_scale : 65536.0f, 1000);
	spike_init(&r->spikes, 100, 20, 6.0);
	if (r->o->ckpt_dir) {
		r->store = r->o->encrypt ? ckpt_store_encrypted(r->o->ckpt_dir, r->o->encrypt)
		                         : ckpt_store_dir(r->o->ckpt_dir);
		if (!r->store || ckpt_store_mkdir(r->store, "", r->err, sizeof(r->err)) < 0)
			return fail(r, TRAIN_INVALID_CONFIG,
			            "could not use the checkpoint directory");
	}
	return TRAIN_OK;
}

static void teardown(run *r)
{
	if (r->gpu.on)
		train_gpu_close(&r->gpu);
	data_close(r->data);
	pipe_release(&r->pipe);
	gpt_free(r->model);
	dp_free(r->dp);
	mp_layout_free(r->lay);
	for (int g = 0; g < G_COUNT; g++)
		comm_free(r->g[g]);
	json_decref(r->from_grid);
	if (r->store)
		ckpt_store_free(r->store);
	metrics_close(&r->met);
}

/* Assemble the whole model on every rank from the owners' copies, and write it on rank 0. */
static int export_weights(run *r)
{
	if (from_device(r) < 0)
		return fail(r, TRAIN_INTERNAL, "could not export weights");
	size_t n = gpt_num_params(&r->tc->model);
	float *full = calloc(n, sizeof(float));
	float *local = malloc((r->lay->nparams ? r->lay->nparams : 1) * sizeof(float));
	int rc = full && local ? 0 : DP_ERR_NOMEM;
	if (rc == 0)
		rc = dp_gather_params(r->dp, local);
	/* each element has one owner in a replica: summing replica 0's zeros-and-owned is exact */
	if (rc == 0 && r->grid.dp_rank == 0)
		mp_insert_owned(r->lay, local, full);
	if (rc == 0 && r->world > 1)
		rc = comm_allreduce_sum(r->c, full, n);
	free(local);
	if (rc < 0) {
		free(full);
		snprintf(r->err, sizeof(r->err), "could not assemble the weights");
		return fail(r, dp_train_exit(rc), "could not export weights");
	}
	if (r->rank == 0 &&
	    llmc_write(r->o->export_path, &r->tc->model, full, r->err, sizeof(r->err)) < 0) {
		free(full);
		return fail(r, TRAIN_INTERNAL, "could not export weights");
	}
	free(full);
	return TRAIN_OK;
}

/* Whether any rank was asked to stop (collective). */
static bool stop_requested(run *r)
{
	float v = stop_signal ? 1.0f : 0.0f;
	if (comm_allreduce_sum(r->c, &v, 1) < 0)
		return true;
	return v > 0.0f;
}

static int loop(run *r)
{
	const jobspec *spec = &r->tc->spec;
	int taken = 0;
	while (r->step < spec->training.steps) {
		if (r->o->stop_after >= 0 && taken >= r->o->stop_after)
			break;
		int s = r->step + 1;
		step_result sr;
		int rc = train_step(r, s, &sr);
		if (rc != TRAIN_OK)
			return rc;
		r->step = s;
		taken++;
		report_step(r, s, &sr);
		if ((rc = after_step(r, s, &sr)) != TRAIN_OK)
			return rc;
		bool stop = stop_requested(r);
		bool due = s % spec->checkpoint.every_steps == 0 || s == spec->training.steps ||
		           stop || (r->o->stop_after >= 0 && taken >= r->o->stop_after);
		if (r->store && due && (rc = checkpoint(r)) != 0)
			return fail(r, rc == COMM_ERR_FAILED ? TRAIN_COMM : TRAIN_INTERNAL,
			            "could not write a checkpoint");
		if (stop) {
			metrics_emit(&r->met, "event",
			             json_pack("{s:s, s:i, s:i}", "event", "stopped", "step", s,
			                       "signal", (int)stop_signal));
			return TRAIN_STOPPED;
		}
	}
	return TRAIN_OK;
}

/* Cap this rank's address space, so a run that needs more fails as out of memory. */
static int limit_memory(size_t bytes)
{
	struct rlimit rl;
	if (bytes == 0 || getrlimit(RLIMIT_AS, &rl) < 0)
		return 0;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < bytes ? rl.rlim_max : bytes;
	return setrlimit(RLIMIT_AS, &rl);
}

/* After setup and resume: the state onto the GPU. RET a train_exit. */
static int to_device(run *r)
{
	if (!r->gpu.on)
		return TRAIN_OK;
	int rc = train_gpu_upload(&r->gpu, r->dp, r->err, sizeof(r->err));
	if (rc != TRAIN_OK)
		return fail(r, rc, "could not set the model up on the GPU");
	metrics_emit(&r->met, "event",
	             json_pack("{s:s, s:I}", "event", "device_model", "bytes",
	                       (json_int_t)train_gpu_bytes(&r->gpu)));
	return TRAIN_OK;
}

int train_run(const train_config *tc, const train_options *o)
{
	if (limit_memory(o->memory_limit) < 0) {
		fprintf(stderr, "trainyard-train: could not set the memory limit: %s\n",
		        strerror(errno));
		return TRAIN_INTERNAL;
	}
	run r;
	memset(&r, 0, sizeof(r));
	r.tc = tc;
	r.o = o;
	r.c = comm_default_new(r.err, sizeof(r.err));
	if (!r.c) {
		fprintf(stderr, "trainyard-train: could not start communication: %s\n", r.err);
		return TRAIN_COMM;
	}
	r.rank = comm_rank(r.c);
	r.world = comm_size(r.c);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	int rc;
	if (metrics_open(&r.met, o->metrics, r.rank == 0, r.err, sizeof(r.err)) < 0)
		rc = fail(&r, TRAIN_USAGE, "metrics");
	else if ((rc = setup(&r)) == TRAIN_OK && (rc = resume(&r)) == TRAIN_OK &&
	         (rc = to_device(&r)) == TRAIN_OK)
		rc = loop(&r);
	if (rc == TRAIN_OK && o->export_path)
		rc = export_weights(&r);
	metrics_emit(&r.met, "event",
	             json_pack("{s:s, s:i, s:i, s:s}", "event", "end", "step", r.step, "exit", rc,
	                       "status", train_exit_name(rc)));
	teardown(&r);
	comm_free(r.c);
	return rc;
}
