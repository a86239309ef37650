/*
 * trainer.c - the training loop.
 *
 * Per optimizer step s (1-based):
 *   dp_begin_step; A micro-steps of data_next, gpt_forward, gpt_backward
 *   (dloss = loss_scale / (A * world)); the mean loss over ranks; dp_step
 *   (reduce, global norm, finiteness agreed by every rank, clip, AdamW);
 *   loss scaling and spike detection; one metrics line; a checkpoint every
 *   checkpoint.every_steps, at the end, on SIGTERM/SIGUSR1 and at
 *   --stop-after.
 *
 * Checkpoint shard sections, per rank: "ranges" (u64 begin/end per unit),
 * "params", "adam_m", "adam_v" (the owned ranges concatenated, fp32) and
 * "state" (JSON: step, optimizer step, loss scaler, data position). A
 * resume reads every shard and keeps what it owns now, so a checkpoint of
 * one data-parallel width or ZeRO stage resumes under another.
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
#include <time.h>

#include "ckpt.h"
#include "comm.h"
#include "data.h"
#include "exitcode.h"
#include "gpt.h"
#include "llmc.h"
#include "metrics.h"
#include "numerics.h"
#include "optim.h"
#include "stream.h"
#include "zero.h"

/* Consecutive non-finite steps after which the run gives up. */
#define MAX_BAD_STEPS 25

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

typedef struct run {
	const train_config *tc;
	const train_options *o;
	comm *c;
	int rank, world;
	dp_runtime *dp;
	gpt_model *model;
	data_loader *data;
	ckpt_store *store;
	metrics met;
	loss_scaler scaler;
	spike_detector spikes;
	lr_schedule sched;
	int step;         /* last completed step */
	int skipped;      /* steps skipped in all */
	int bad_in_a_row; /* consecutive non-finite steps */
	int32_t *inputs, *targets;
	char err[1024];
} run;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Print a failure on rank 0 (others too when only they know). */
static int fail(run *r, int status, const char *what)
{
	fprintf(stderr, "trainyard-train[%d]: %s: %s\n", r->rank, what, r->err);
	return status;
}

static int comm_status(int rc)
{
	return rc == COMM_ERR_NOMEM || rc == DP_ERR_NOMEM ? TRAIN_OOM
	       : rc == COMM_ERR_FAILED                    ? TRAIN_COMM
	                                                  : TRAIN_INTERNAL;
}

/* ---- checkpoints ---------------------------------------------------- */

static json_t *state_json(const run *r)
{
	data_position p = data_tell(r->data);
	return json_pack("{s:i, s:i, s:i, s:f, s:i, s:{s:I, s:I, s:I}}", "step", r->step,
	                 "opt_step", dp_opt_step(r->dp), "skipped", r->skipped, "loss_scale",
	                 (double)r->scaler.scale, "good_steps", r->scaler.good_steps, "data",
	                 "epoch", (json_int_t)p.epoch, "cursor", (json_int_t)p.cursor, "sequences",
	                 (json_int_t)p.sequences);
}

/* Concatenate the owned ranges of every unit of which (0 params, 1 m, 2 v). */
static float *owned_concat(const run *r, int which, size_t *n)
{
	int units = dp_num_units(r->dp);
	size_t total = 0;
	for (int u = 0; u < units; u++) {
		dp_range g = dp_owned_range(r->dp, u);
		total += g.end - g.begin;
	}
	float *buf = malloc((total ? total : 1) * sizeof(float));
	if (!buf)
		return NULL;
	size_t at = 0;
	for (int u = 0; u < units; u++) {
		dp_range g = dp_owned_range(r->dp, u);
		const float *src = which == 0   ? dp_owned_params(r->dp, u)
		                   : which == 1 ? dp_owned_m(r->dp, u)
		                                : dp_owned_v(r->dp, u);
		if (g.end > g.begin)
			memcpy(buf + at, src, (g.end - g.begin) * sizeof(float));
		at += g.end - g.begin;
	}
	*n = total;
	return buf;
}

static int write_shard(run *r, ckpt_shard_info *info)
{
	int units = dp_num_units(r->dp);
	uint64_t *ranges = malloc((size_t)units * 2 * sizeof(uint64_t));
	size_t n;
	float *p = owned_concat(r, 0, &n), *m = owned_concat(r, 1, &n), *v = owned_concat(r, 2, &n);
	json_t *st = state_json(r);
	char *state = json_dumps(st, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(st);
	int rc = -1;
	ckpt_writer *w = NULL;
	if (!ranges || !p || !m || !v || !state) {
		snprintf(r->err, sizeof(r->err), "out of memory preparing a checkpoint");
		goto out;
	}
	for (int u = 0; u < units; u++) {
		dp_range g = dp_owned_range(r->dp, u);
		ranges[2 * u] = g.begin;
		ranges[2 * u + 1] = g.end;
	}
	if ((rc = ckpt_shard_begin(r->store, r->step, r->rank, r->world, &w, r->err,
	                           sizeof(r->err))) < 0)
		goto out;
	ckpt_put(w, "ranges", ranges, (size_t)units * 2 * sizeof(uint64_t));
	ckpt_put(w, "params", p, n * sizeof(float));
	ckpt_put(w, "adam_m", m, n * sizeof(float));
	ckpt_put(w, "adam_v", v, n * sizeof(float));
	ckpt_put(w, "state", state, strlen(state));
	rc = ckpt_shard_commit(w, info, r->err, sizeof(r->err));
out:
	free(ranges);
	free(p);
	free(m);
	free(v);
	free(state);
	return rc;
}

/* Every rank writes its shard; rank 0 writes the manifest last, then prunes. */
static int checkpoint(run *r)
{
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

/* Copy the part of a shard's ranges that this rank owns now. */
static void take_owned(run *r, const uint64_t *ranges, const float *src[3], float **dst[3],
                       int units)
{
	size_t at = 0;
	for (int u = 0; u < units; u++) {
		size_t b = ranges[2 * u], e = ranges[2 * u + 1];
		dp_range mine = dp_owned_range(r->dp, u);
		size_t lo = b > mine.begin ? b : mine.begin, hi = e < mine.end ? e : mine.end;
		for (int k = 0; k < 3; k++)
			if (hi > lo)
				memcpy(dst[k][u] + (lo - mine.begin), src[k] + at + (lo - b),
				       (hi - lo) * sizeof(float));
		at += e - b;
	}
}

static int read_state(run *r, ckpt_reader *rd, json_t **state)
{
	uint64_t n = 0;
	if (ckpt_get_size(rd, "state", &n) < 0 || n > (1u << 20)) {
		snprintf(r->err, sizeof(r->err), "checkpoint shard has no state section");
		return CKPT_ERR_CORRUPT;
	}
	char *text = calloc(n + 1, 1);
	int rc = text ? ckpt_get(rd, "state", text, n, r->err, sizeof(r->err)) : CKPT_ERR_NOMEM;
	json_error_t je;
	*state = rc == 0 ? json_loads(text, 0, &je) : NULL;
	free(text);
	if (rc == 0 && !*state) {
		snprintf(r->err, sizeof(r->err), "checkpoint state is not JSON: %s", je.text);
		rc = CKPT_ERR_CORRUPT;
	}
	return rc;
}

/* Read one shard and copy what this rank owns. OUT: *state from shard 0. */
static int load_shard(run *r, const ckpt_manifest *m, int k, float **dst[3], json_t **state)
{
	int units = dp_num_units(r->dp);
	ckpt_reader *rd = NULL;
	int rc = ckpt_shard_open(r->store, m->step, k, m->world, m->shards[k].sha256, &rd, r->err,
	                         sizeof(r->err));
	if (rc < 0)
		return rc;
	uint64_t rbytes = 0, pbytes = 0;
	ckpt_get_size(rd, "ranges", &rbytes);
	ckpt_get_size(rd, "params", &pbytes);
	uint64_t *ranges = malloc(rbytes ? rbytes : 1);
	float *src[3] = {malloc(pbytes ? pbytes : 1), malloc(pbytes ? pbytes : 1),
	                 malloc(pbytes ? pbytes : 1)};
	if (!ranges || !src[0] || !src[1] || !src[2]) {
		rc = CKPT_ERR_NOMEM;
		goto out;
	}
	if (rbytes != (uint64_t)units * 2 * sizeof(uint64_t)) {
		snprintf(r->err, sizeof(r->err),
		         "checkpoint of step %d has %llu ranges but the model has %d units",
		         m->step, (unsigned long long)(rbytes / 16), units);
		rc = CKPT_ERR_CORRUPT;
		goto out;
	}
	if ((rc = ckpt_get(rd, "ranges", ranges, rbytes, r->err, sizeof(r->err))) ||
	    (rc = ckpt_get(rd, "params", src[0], pbytes, r->err, sizeof(r->err))) ||
	    (rc = ckpt_get(rd, "adam_m", src[1], pbytes, r->err, sizeof(r->err))) ||
	    (rc = ckpt_get(rd, "adam_v", src[2], pbytes, r->err, sizeof(r->err))))
		goto out;
	uint64_t sum = 0;
	for (int u = 0; u < units; u++) {
		size_t lo = gpt_unit_offset(&r->tc->model, u);
		size_t hi = lo + gpt_unit_numel(&r->tc->model, u);
		if (ranges[2 * u + 1] < ranges[2 * u] ||
		    (ranges[2 * u + 1] > ranges[2 * u] &&
		     (ranges[2 * u] < lo || ranges[2 * u + 1] > hi))) {
			snprintf(r->err, sizeof(r->err),
			         "checkpoint range of unit %d is out of bounds", u);
			rc = CKPT_ERR_CORRUPT;
			goto out;
		}
		sum += ranges[2 * u + 1] - ranges[2 * u];
	}
	if (sum * sizeof(float) != pbytes) {
		snprintf(r->err, sizeof(r->err), "checkpoint sections disagree with their ranges");
		rc = CKPT_ERR_CORRUPT;
		goto out;
	}
	take_owned(r, ranges, (const float **)src, dst, units);
	if (k == 0)
		rc = read_state(r, rd, state);
out:
	ckpt_shard_close(rd);
	free(ranges);
	for (int i = 0; i < 3; i++)
		free(src[i]);
	return rc;
}

/* Restore model, optimizer, scaler and data position from manifest m. */
static int restore(run *r, const ckpt_manifest *m)
{
	int units = dp_num_units(r->dp), rc = 0;
	float **dst[3];
	json_t *state = NULL;
	for (int k = 0; k < 3; k++) {
		dst[k] = calloc((size_t)units, sizeof(float *));
		for (int u = 0; dst[k] && u < units; u++) {
			dp_range g = dp_owned_range(r->dp, u);
			dst[k][u] = calloc(g.end - g.begin + 1, sizeof(float));
			if (!dst[k][u])
				rc = CKPT_ERR_NOMEM;
		}
		if (!dst[k])
			rc = CKPT_ERR_NOMEM;
	}
	for (int k = 0; rc == 0 && k < m->world; k++)
		rc = load_shard(r, m, k, dst, &state);
	for (int u = 0; rc == 0 && u < units; u++)
		rc = dp_load_shard(r->dp, u, dst[0][u], dst[1][u], dst[2][u]);
	int opt_step = 0;
	if (rc == 0) {
		json_t *d = json_object_get(state, "data");
		data_position p = {
		    .epoch = (uint64_t)json_integer_value(json_object_get(d, "epoch")),
		    .cursor = (uint64_t)json_integer_value(json_object_get(d, "cursor")),
		    .sequences = (uint64_t)json_integer_value(json_object_get(d, "sequences")),
		};
		r->step = (int)json_integer_value(json_object_get(state, "step"));
		r->skipped = (int)json_integer_value(json_object_get(state, "skipped"));
		opt_step = (int)json_integer_value(json_object_get(state, "opt_step"));
		r->scaler.scale = (float)json_real_value(json_object_get(state, "loss_scale"));
		r->scaler.good_steps =
		    (int)json_integer_value(json_object_get(state, "good_steps"));
		if (r->step != m->step) {
			snprintf(r->err, sizeof(r->err),
			         "checkpoint state says step %d, manifest %d", r->step, m->step);
			rc = CKPT_ERR_CORRUPT;
		} else if ((rc = data_seek(r->data, p)) < 0) {
			snprintf(r->err, sizeof(r->err), "%s", data_error(r->data));
		}
	}
	/* collective: every rank calls it, whatever happened locally */
	float bad = rc == 0 ? 0.0f : 1.0f;
	int crc = comm_allreduce_sum(r->c, &bad, 1);
	if (rc == 0 && crc == 0 && bad == 0.0f)
		rc = dp_load_done(r->dp, opt_step);
	else if (rc == 0)
		rc = crc ? crc : CKPT_ERR_CORRUPT;
	json_decref(state);
	for (int k = 0; k < 3; k++) {
		for (int u = 0; dst[k] && u < units; u++)
			free(dst[k][u]);
		free(dst[k]);
	}
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
	if (rc == CKPT_ERR_NOTFOUND) {
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
		         "the checkpoints in \"%s\" are of another model than the job spec's",
		         r->o->ckpt_dir);
		return fail(r, TRAIN_INVALID_CONFIG, "cannot resume");
	}
	rc = restore(r, &m);
	int step = m.step, world = m.world;
	ckpt_manifest_release(&m);
	if (rc < 0)
		return fail(r, rc == CKPT_ERR_NOMEM ? TRAIN_OOM : TRAIN_CKPT_CORRUPT,
		            "could not restore the checkpoint");
	metrics_emit(
	    &r->met, "event",
	    json_pack("{s:s, s:i, s:i}", "event", "resumed", "step", step, "from_world", world));
	return TRAIN_OK;
}

/* ---- one step ------------------------------------------------------- */

typedef struct step_result {
	float loss;
	dp_step_info info;
	double seconds, comm_s, data_s;
	float lr;
} step_result;

static int train_step(run *r, int s, step_result *out)
{
	const train_config *tc = r->tc;
	double t0 = now(), d0 = data_wait_seconds(r->data);
	comm_seconds_reset(r->c);
	gpt_hooks hooks = dp_hooks(r->dp);
	int rc = dp_begin_step(r->dp, tc->grad_accum);
	if (rc < 0)
		return comm_status(rc);
	float dloss = r->scaler.scale / (float)(tc->grad_accum * r->world);
	float loss_sum = 0;
	for (int k = 0; k < tc->grad_accum; k++) {
		if ((rc = data_next(r->data, r->inputs, r->targets)) < 0) {
			snprintf(r->err, sizeof(r->err), "%s", data_error(r->data));
			return fail(r, TRAIN_DATA, "could not read training data");
		}
		loss_sum += gpt_forward(r->model, &hooks, r->inputs, r->targets);
		gpt_backward(r->model, &hooks, dloss);
	}
	float loss = loss_sum / (float)tc->grad_accum;
	if ((rc = comm_allreduce_sum(r->c, &loss, 1)) < 0)
		return comm_status(rc);
	out->loss = loss / (float)r->world;
	out->lr = lr_at(&r->sched, s);
	float clip = (float)tc->spec.training.grad_clip;
	rc = dp_step(r->dp, dp_opt_step(r->dp) + 1, out->lr, clip, 1.0f / r->scaler.scale,
	             &out->info);
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "%s", comm_error(r->c));
		return fail(r, comm_status(rc), "the optimizer step failed");
	}
	out->seconds = now() - t0;
	out->comm_s = comm_seconds(r->c);
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

static int setup(run *r)
{
	const train_config *tc = r->tc;
	const jobspec *spec = &tc->spec;
	if (spec->parallel.tensor_parallel != 1 || spec->parallel.pipeline_parallel != 1) {
		snprintf(r->err, sizeof(r->err),
		         "tensor_parallel and pipeline_parallel must be 1: this trainer runs data "
		         "parallel only");
		return fail(r, TRAIN_INVALID_CONFIG, "invalid parallel layout");
	}
	if (tc->data_parallel != r->world) {
		snprintf(r->err, sizeof(r->err),
		         "parallel.data_parallel is %d but the world has %d ranks",
		         tc->data_parallel, r->world);
		return fail(r, TRAIN_INVALID_CONFIG, "invalid parallel layout");
	}
	if (gpt_config_check(&tc->model, r->err, sizeof(r->err)) < 0)
		return fail(r, TRAIN_INVALID_CONFIG, "invalid model");
	if (r->o->threads > 0) {
		omp_set_num_threads(r->o->threads);
		openblas_set_num_threads(r->o->threads);
	}
	float *init = NULL;
	if (r->o->init_from) {
		gpt_config fcfg;
		if (llmc_read(r->o->init_from, &fcfg, &init, r->err, sizeof(r->err)) < 0)
			return fail(r, TRAIN_INVALID_CONFIG, "could not import weights");
		if (memcmp(&fcfg, &tc->model, sizeof(fcfg)) != 0) {
			free(init);
			snprintf(r->err, sizeof(r->err),
			         "the weights of \"%s\" are for another model than the job spec's",
			         r->o->init_from);
			return fail(r, TRAIN_INVALID_CONFIG, "could not import weights");
		}
	} else {
		init = malloc(gpt_num_params(&tc->model) * sizeof(float));
		if (!init) {
			snprintf(r->err, sizeof(r->err),
			         "out of memory for the initial parameters");
			return fail(r, TRAIN_OOM, "setup");
		}
		gpt_init_params(&tc->model, init, (uint64_t)spec->training.seed);
	}
	adamw_config opt = adamw_defaults();
	opt.weight_decay = (float)spec->training.weight_decay;
	r->dp = dp_new(&tc->model, r->c, tc->zero_stage, init, &opt, r->err, sizeof(r->err));
	free(init);
	if (!r->dp)
		return fail(r, strstr(r->err, "out of memory") ? TRAIN_OOM : TRAIN_INVALID_CONFIG,
		            "could not set up data parallel");
	int B = tc->micro_batch, T = tc->model.max_seq_len;
	r->model = gpt_new(&tc->model, B, T, tc->precision, r->err, sizeof(r->err));
	if (!r->model)
		return fail(r, strstr(r->err, "out of memory") ? TRAIN_OOM : TRAIN_INVALID_CONFIG,
		            "could not allocate the model");
	r->inputs = malloc((size_t)B * T * sizeof(int32_t));
	r->targets = malloc((size_t)B * T * sizeof(int32_t));
	if (!r->inputs || !r->targets) {
		snprintf(r->err, sizeof(r->err), "out of memory for a batch");
		return fail(r, TRAIN_OOM, "setup");
	}
	data_config dc = {.pattern = spec->data.train,
	                  .vocab_size = tc->model.vocab_size,
	                  .B = B,
	                  .T = T,
	                  .dp_rank = r->rank,
	                  .dp_size = r->world,
	                  .accum_steps = tc->grad_accum,
	                  .seed = (uint64_t)spec->training.seed,
	                  .shuffle = true,
	                  .prefetch = true};
	int rc = data_open(&dc, &r->data, r->err, sizeof(r->err));
	if (rc < 0)
		return fail(r, rc == DATA_ERR_NOMEM ? TRAIN_OOM : TRAIN_DATA,
		            "could not open data");
	r->sched = (lr_schedule){
	    .max_lr = (float)spec->training.lr,
	    .min_lr = (float)spec->training.lr * 0.1f,
	    .warmup_steps = spec->training.warmup_steps,
	    .total_steps = spec->training.steps,
	    .decay = spec->training.schedule == JOBSPEC_SCHEDULE_LINEAR     ? LR_LINEAR
	             : spec->training.schedule == JOBSPEC_SCHEDULE_CONSTANT ? LR_CONSTANT
	                                                                    : LR_COSINE,
	};
	loss_scaler_init(&r->scaler, tc->precision == GPT_FP16,
	                 r->o->loss_scale > 0 ? (float)r->o->loss_scale : 65536.0f, 1000);
	spike_init(&r->spikes, 100, 20, 6.0);
	if (r->o->ckpt_dir) {
		r->store = ckpt_store_dir(r->o->ckpt_dir);
		if (!r->store || ckpt_store_mkdir(r->store, "", r->err, sizeof(r->err)) < 0)
			return fail(r, TRAIN_INVALID_CONFIG,
			            "could not use the checkpoint directory");
	}
	return TRAIN_OK;
}

static void teardown(run *r)
{
	data_close(r->data);
	gpt_free(r->model);
	dp_free(r->dp);
	free(r->inputs);
	free(r->targets);
	if (r->store)
		ckpt_store_free(r->store);
	metrics_close(&r->met);
}

static int export_weights(run *r)
{
	size_t n = gpt_num_params(&r->tc->model);
	float *full = malloc(n * sizeof(float));
	if (!full) {
		snprintf(r->err, sizeof(r->err), "out of memory for the export");
		return fail(r, TRAIN_OOM, "could not export weights");
	}
	int rc = dp_gather_params(r->dp, full);
	if (rc == 0 && r->rank == 0 &&
	    llmc_write(r->o->export_path, &r->tc->model, full, r->err, sizeof(r->err)) < 0) {
		free(full);
		return fail(r, TRAIN_INTERNAL, "could not export weights");
	}
	free(full);
	return rc < 0 ? comm_status(rc) : TRAIN_OK;
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

int train_run(const train_config *tc, const train_options *o)
{
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
	else if ((rc = setup(&r)) == TRAIN_OK && (rc = resume(&r)) == TRAIN_OK)
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
