/*
 * reshard.c - offline resharding of a checkpoint (reshard.h).
 */
#include "reshard.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "failure.h"
#include "mp.h"
#include "ckpt_store.h"
#include "train_ckpt.h"

typedef struct reshard {
	const train_config *tc;
	const reshard_options *o;
	ckpt_store *src, *dst;
	ckpt_manifest m;
	train_shard *shards; /* [m.world] */
	json_t *state;       /* of shard 0, with the new grid */
	char err[1024];
} reshard;

static int say(reshard *r, int status, const char *what)
{
	fprintf(stderr, "trainyard-train reshard: %s: %s\n", what, r->err);
	return status;
}

static int find_source(reshard *r)
{
	int rc;
	if (r->o->step > 0) {
		rc = ckpt_manifest_read(r->src, r->o->step, &r->m, r->err, sizeof(r->err));
		if (rc == 0)
			rc = ckpt_verify(r->src, &r->m, 0, 1, r->err, sizeof(r->err));
	} else {
		rc = ckpt_find_valid(r->src, NULL, &r->m, r->err, sizeof(r->err));
	}
	if (rc == -ERR_CHECKPOINT_NOT_FOUND)
		return say(r, TRAIN_CKPT_CORRUPT, "no checkpoint to reshard");
	if (rc < 0)
		return say(r, TRAIN_CKPT_CORRUPT, "the checkpoint cannot be read");
	json_t *was = json_object_get(r->m.config, "model");
	if (!json_equal(was, json_object_get(r->tc->normalized, "model"))) {
		snprintf(r->err, sizeof(r->err), "the checkpoint in \"%s\" is of another model",
		         r->o->from);
		return say(r, TRAIN_INVALID_CONFIG, "cannot reshard");
	}
	return TRAIN_OK;
}

static int read_source(reshard *r)
{
	size_t nparams = gpt_num_params(&r->tc->model);
	r->shards = calloc((size_t)r->m.world, sizeof(*r->shards));
	if (!r->shards) {
		snprintf(r->err, sizeof(r->err), "out of memory");
		return say(r, TRAIN_OOM, "cannot read the checkpoint");
	}
	for (int k = 0; k < r->m.world; k++) {
		int rc = train_shard_read(&r->shards[k], r->src, &r->m, k, nparams, k == 0, r->err,
		                          sizeof(r->err));
		if (rc < 0)
			return say(r, rc == -ERR_INTERNAL ? TRAIN_OOM : TRAIN_CKPT_CORRUPT,
			           "cannot read the checkpoint");
	}
	json_error_t je;
	r->state = json_loads(r->shards[0].state, 0, &je);
	if (!json_is_object(r->state)) {
		snprintf(r->err, sizeof(r->err), "the checkpoint state is not a JSON object");
		return say(r, TRAIN_CKPT_CORRUPT, "cannot read the checkpoint");
	}
	const layout *p = &r->tc->run;
	json_object_set_new(r->state, "grid", layout_to_json(p, LAYOUT_F_SHAPE));
	return TRAIN_OK;
}

/* Write target rank `rank`'s shard. */
static int write_rank(reshard *r, const mp_grid *g, const char *state, ckpt_shard_info *info)
{
	mp_layout *lay = mp_layout_new(&r->tc->model, g->tp, g->tp_rank, g->pp, g->pp_rank, r->err,
	                               sizeof(r->err));
	if (!lay)
		return say(r, TRAIN_INVALID_CONFIG, "invalid parallel layout");
	train_shard out;
	int rc = train_shard_for_rank(&out, lay, g->dp, g->dp_rank, r->shards, r->m.world, r->err,
	                              sizeof(r->err));
	mp_layout_free(lay);
	if (rc < 0)
		return say(r, rc == -ERR_INTERNAL ? TRAIN_OOM : TRAIN_CKPT_CORRUPT,
		           "cannot collect a shard");
	rc = train_shard_write(&out, state, r->dst, r->m.step, g->rank, g->world, info, r->err,
	                       sizeof(r->err));
	train_shard_release(&out);
	return rc < 0 ? say(r, TRAIN_INTERNAL, "cannot write a shard") : TRAIN_OK;
}

static int write_target(reshard *r)
{
	const layout *p = &r->tc->run;
	int world = (int)layout_ranks(p);
	ckpt_shard_info *infos = calloc((size_t)world, sizeof(*infos));
	char *state = json_dumps(r->state, JSON_COMPACT | JSON_REAL_PRECISION(17));
	int rc = infos && state ? TRAIN_OK : TRAIN_OOM;
	if (rc != TRAIN_OK)
		snprintf(r->err, sizeof(r->err), "out of memory");
	for (int rank = 0; rc == TRAIN_OK && rank < world; rank++) {
		mp_grid g;
		if (mp_grid_init(&g, world, rank, p->data_parallel, p->tensor_parallel,
		                 p->pipeline_parallel, r->err, sizeof(r->err)) < 0)
			rc = say(r, TRAIN_INVALID_CONFIG, "invalid parallel layout");
		else
			rc = write_rank(r, &g, state, &infos[rank]);
	}
	if (rc == TRAIN_OK && ckpt_manifest_write(r->dst, r->m.step, world, r->tc->normalized,
	                                          infos, world, r->err, sizeof(r->err)) < 0)
		rc = say(r, TRAIN_INTERNAL, "cannot write the manifest");
	if (rc == TRAIN_OK)
		printf("resharded step %d from %d shards to %d (dp %d x tp %d x pp %d, ZeRO %d) "
		       "in %s\n",
		       r->m.step, r->m.world, world, p->data_parallel, p->tensor_parallel,
		       p->pipeline_parallel, p->zero_stage, r->o->to);
	free(infos);
	free(state);
	return rc;
}

int reshard_run(const train_config *target, const reshard_options *o)
{
	reshard r;
	memset(&r, 0, sizeof(r));
	r.tc = target;
	r.o = o;
	r.src = ckpt_store_dir(o->from);
	r.dst = ckpt_store_dir(o->to);
	int rc;
	if (!r.src || !r.dst) {
		snprintf(r.err, sizeof(r.err), "out of memory");
		rc = say(&r, TRAIN_OOM, "cannot open the checkpoint directories");
	} else if (ckpt_store_mkdir(r.dst, "", r.err, sizeof(r.err)) < 0) {
		rc = say(&r, TRAIN_INVALID_CONFIG, "cannot use the target directory");
	} else if ((rc = find_source(&r)) == TRAIN_OK && (rc = read_source(&r)) == TRAIN_OK) {
		rc = write_target(&r);
	}
	for (int k = 0; r.shards && k < r.m.world; k++)
		train_shard_release(&r.shards[k]);
	free(r.shards);
	json_decref(r.state);
	ckpt_manifest_release(&r.m);
	if (r.src)
		ckpt_store_free(r.src);
	if (r.dst)
		ckpt_store_free(r.dst);
	return rc;
}
