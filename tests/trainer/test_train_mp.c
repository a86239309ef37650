/*
 * test_train_mp.c - the rank grid and the local layouts (mp.h), and the
 * layout-free checkpoint contents built on them (train_ckpt.h).
 *
 * The layout tests mark every element of the whole model with its own
 * index, cut it into every rank's local slice, and check the slices
 * against the split rules (gpt.h): which elements each rank holds, that
 * the owners cover every element exactly once, and that the runs of
 * mp_runs say the same as mp_extract.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "mp.h"
#include "train_ckpt.h"
#include "unit.h"

/* 3 layers, 32 channels, 4 heads, T 8, V 61 (padded 64). */
static gpt_config small(int layers)
{
	return (gpt_config){.max_seq_len = 8,
	                    .vocab_size = 61,
	                    .padded_vocab_size = 64,
	                    .num_layers = layers,
	                    .num_heads = 4,
	                    .channels = 32};
}

START_TEST(grid_positions)
{
	mp_grid g;
	char err[256];
	int seen[24] = {0};
	for (int r = 0; r < 24; r++) {
		ck_assert_int_eq(mp_grid_init(&g, 24, r, 3, 2, 4, err, sizeof(err)), 0);
		ck_assert_int_eq(mp_grid_rank(&g, g.dp_rank, g.tp_rank, g.pp_rank), r);
		ck_assert_int_lt(g.tp_rank, 2);
		ck_assert_int_lt(g.dp_rank, 3);
		ck_assert_int_lt(g.pp_rank, 4);
		seen[(g.pp_rank * 3 + g.dp_rank) * 2 + g.tp_rank]++;
	}
	for (int r = 0; r < 24; r++)
		ck_assert_int_eq(seen[r], 1);
	/* tensor peers are adjacent */
	mp_grid_init(&g, 24, 5, 3, 2, 4, err, sizeof(err));
	ck_assert_int_eq(g.tp_rank, 1);
	ck_assert_int_eq(g.dp_rank, 2);
	ck_assert_int_eq(g.pp_rank, 0);
	ck_assert_int_eq(mp_grid_init(&g, 6, 0, 2, 2, 2, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "2 x 2 x 2 = 8 but the world has 6 ranks"));
	ck_assert_int_eq(mp_grid_init(&g, 4, 0, 0, 2, 2, err, sizeof(err)), -1);
}
END_TEST

START_TEST(layout_refuses_bad_grids)
{
	gpt_config cfg = small(3);
	char err[256];
	ck_assert_ptr_null(mp_layout_new(&cfg, 3, 0, 1, 0, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "heads (4) is not divisible by tensor_parallel (3)"));
	ck_assert_ptr_null(mp_layout_new(&cfg, 1, 0, 2, 0, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "layers (3) is not divisible by pipeline_parallel (2)"));
	ck_assert_ptr_null(mp_layout_new(&cfg, 2, 2, 1, 0, err, sizeof(err)));
}
END_TEST

/* The whole model with element i holding i. */
static float *indexed(const gpt_config *cfg)
{
	size_t n = gpt_num_params(cfg);
	float *g = malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		g[i] = (float)i; /* exact: the models here are below 2^24 elements */
	return g;
}

/* Every (tp, pp) split: owners cover each element once; extract agrees with the runs. */
static void check_cover(int layers, int tp, int pp)
{
	gpt_config cfg = small(layers);
	size_t n = gpt_num_params(&cfg);
	float *global = indexed(&cfg);
	unsigned char *owned = calloc(n, 1);
	float *back = calloc(n, sizeof(float));
	char err[256];
	for (int s = 0; s < pp; s++)
		for (int t = 0; t < tp; t++) {
			mp_layout *lay = mp_layout_new(&cfg, tp, t, pp, s, err, sizeof(err));
			ck_assert_msg(lay != NULL, "%s", err);
			float *local = malloc(lay->nparams * sizeof(float));
			mp_extract(lay, global, local);
			size_t nr = mp_runs(lay, 0, lay->nparams, false, NULL, 0);
			mp_run *runs = malloc((nr + 1) * sizeof(*runs));
			ck_assert_uint_eq(mp_runs(lay, 0, lay->nparams, false, runs, nr), nr);
			size_t covered = 0;
			for (size_t k = 0; k < nr; k++) {
				if (k > 0) /* increasing, and merged where contiguous */
					ck_assert(runs[k].local ==
					          runs[k - 1].local + runs[k - 1].n);
				/* counted in plain C, asserted once: a check per element is slow */
				size_t differ = 0;
				for (size_t i = 0; i < runs[k].n; i++)
					differ +=
					    local[runs[k].local + i] != (float)(runs[k].global + i);
				ck_assert_msg(differ == 0,
				              "run %zu (tp %d, pp %d): %zu elements differ", k, t,
				              s, differ);
				covered += runs[k].n;
			}
			ck_assert_uint_eq(covered, lay->nparams);
			/* owned runs mark the owners; mp_insert_owned writes exactly them */
			size_t no = mp_runs(lay, 0, lay->nparams, true, runs, nr);
			for (size_t k = 0; k < no; k++)
				for (size_t i = 0; i < runs[k].n; i++)
					owned[runs[k].global + i]++;
			mp_insert_owned(lay, local, back);
			free(runs);
			free(local);
			mp_layout_free(lay);
		}
	size_t first_bad = n, bad = 0;
	for (size_t i = 0; i < n; i++)
		if (owned[i] != 1 || back[i] != global[i]) {
			bad++;
			if (first_bad == n)
				first_bad = i;
		}
	ck_assert_msg(bad == 0,
	              "%zu elements not owned once or not written back (tp %d, pp %d), the "
	              "first %zu: %d owners, %g for %g",
	              bad, tp, pp, first_bad, first_bad < n ? owned[first_bad] : 0,
	              first_bad < n ? (double)back[first_bad] : 0.0,
	              first_bad < n ? (double)global[first_bad] : 0.0);
	free(owned);
	free(back);
	free(global);
}

START_TEST(owners_cover_every_element_once)
{
	check_cover(4, 1, 1);
	check_cover(4, 2, 1);
	check_cover(4, 4, 1);
	check_cover(4, 1, 2);
	check_cover(4, 2, 2);
	check_cover(4, 4, 4);
}
END_TEST

/* The pieces follow the split rules: heads for QKV, columns for the row-parallel weights. */
START_TEST(pieces_follow_the_split_rules)
{
	gpt_config cfg = small(2);
	size_t C = 32;
	float *global = indexed(&cfg);
	char err[256];
	mp_layout *lay = mp_layout_new(&cfg, 2, 1, 2, 1, err, sizeof(err));
	ck_assert_ptr_nonnull(lay);
	ck_assert(!lay->has_embed && lay->has_head);
	ck_assert_int_eq(lay->first_layer, 1);
	/* units: 0 (the tied head), layer 1 (unit 2), the final LayerNorm (unit 3) */
	ck_assert_int_eq(lay->nunits, 3);
	ck_assert_int_eq(lay->units[0].id, 0);
	ck_assert_int_eq(lay->units[1].id, 2);
	ck_assert_int_eq(lay->units[2].id, 3);
	ck_assert_int_eq(lay->unit_index[1], -1);
	float *local = malloc(lay->nparams * sizeof(float));
	mp_extract(lay, global, local);
	for (int i = 0; i < lay->ntensors; i++) {
		const mp_tensor *t = &lay->tensors[i];
		const float *p = local + t->offset;
		if (t->t.unit == 0)
			ck_assert_msg(!t->owner, "the last stage's copy of %s is not the owner",
			              t->t.name);
		if (strstr(t->t.name, "qkvw")) {
			ck_assert_uint_eq(t->numel, 3 * (C / 2) * C);
			/* q rows 16..31, then k rows 48..63, then v rows 80..95 */
			ck_assert_float_eq(p[0], (float)(t->t.offset + 16 * C));
			ck_assert_float_eq(p[16 * C], (float)(t->t.offset + 48 * C));
			ck_assert_float_eq(p[32 * C + 5], (float)(t->t.offset + 80 * C + 5));
		} else if (strstr(t->t.name, "attprojw")) {
			ck_assert_uint_eq(t->numel, C * C / 2);
			/* row 3, local column 2 is global column 18 */
			ck_assert_float_eq(p[3 * 16 + 2], (float)(t->t.offset + 3 * C + 18));
		} else if (strstr(t->t.name, "fcprojw")) {
			ck_assert_float_eq(p[1 * 64], (float)(t->t.offset + 1 * 4 * C + 64));
		} else if (strstr(t->t.name, "fcb")) {
			ck_assert_float_eq(p[0], (float)(t->t.offset + 64));
		} else if (strstr(t->t.name, "ln1w")) {
			ck_assert_uint_eq(t->numel, C);
			ck_assert(!t->owner); /* tensor rank 1's replica */
		}
	}
	free(local);
	free(global);
	mp_layout_free(lay);
}
END_TEST

/* A shard of runs fills wanted runs from anywhere inside them, and only what it holds. */
START_TEST(shard_fill_intersects_runs)
{
	uint64_t ranges[] = {10, 20, 30, 35};
	size_t at[] = {0, 10};
	float data[3][15];
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 15; i++)
			data[k][i] = (float)(100 * k + i);
	train_shard s = {
	    .ranges = ranges, .nruns = 2, .at = at, .sec = {data[0], data[1], data[2]}, .n = 15};
	float out[3][40] = {{0}};
	float *dst[3] = {out[0], out[1], out[2]};
	/* global [15, 33) into local 100.. (base 100) */
	mp_run want = {15, 100, 18};
	ck_assert_uint_eq(train_shard_fill(&s, &want, 1, 100, dst), 5 + 3);
	ck_assert_float_eq(out[0][0], 5.0f);    /* global 15 */
	ck_assert_float_eq(out[1][4], 109.0f);  /* global 19 */
	ck_assert_float_eq(out[0][5], 0.0f);    /* global 20: not held */
	ck_assert_float_eq(out[2][15], 210.0f); /* global 30 */
	ck_assert_float_eq(out[0][17], 12.0f);  /* global 32 */
	mp_run none = {20, 0, 10};
	ck_assert_uint_eq(train_shard_fill(&s, &none, 1, 0, dst), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("train_mp");
	TCase *tc = tcase_create("mp");
	tcase_add_test(tc, grid_positions);
	tcase_add_test(tc, layout_refuses_bad_grids);
	tcase_add_test(tc, owners_cover_every_element_once);
	tcase_add_test(tc, pieces_follow_the_split_rules);
	tcase_add_test(tc, shard_fill_intersects_runs);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
