/*
 * test_layout.c - the one layout type: its rules against a model, a batch
 * and the ranks there are, each with its code and field; what is unknown
 * waits; the text form the runtime hands the trainer, both ways; the JSON
 * form both ways, with the long names only, each problem as a row and
 * which fields were given.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "unit.h"

static layout grid(int dp, int tp, int pp, int micro)
{
	return (layout){.data_parallel = dp,
	                .tensor_parallel = tp,
	                .pipeline_parallel = pp,
	                .zero_stage = 1,
	                .micro_batch = micro};
}

START_TEST(a_layout_that_fits_breaks_nothing)
{
	layout l = grid(2, 4, 3, 4);
	layout_fit fit = {.heads = 12, .layers = 24, .global_batch = 64, .ranks = 24};
	layout_problem p[LAYOUT_PROBLEMS_MAX];
	ck_assert_int_eq(layout_check(&l, &fit, p), 0);
	ck_assert_int_eq(layout_ranks(&l), 24);
	ck_assert_int_eq(layout_grad_accum(&l, 64), 8);
}
END_TEST

START_TEST(every_rule_with_its_code_and_field)
{
	layout l = grid(3, 5, 7, 4); /* 105 ranks */
	layout_fit fit = {.heads = 12,
	                  .layers = 24,
	                  .global_batch = 64,
	                  .ranks = 100,
	                  .ranks_said = "the world has %lld ranks"};
	layout_problem p[LAYOUT_PROBLEMS_MAX];
	ck_assert_int_eq(layout_check(&l, &fit, p), 4);
	ck_assert_int_eq(p[0].code, ERR_F_HEADS_NOT_DIVISIBLE);
	ck_assert_str_eq(p[0].field, "tensor_parallel");
	ck_assert_str_eq(p[0].message, "heads (12) is not divisible by tensor_parallel (5)");
	ck_assert_int_eq(p[1].code, ERR_F_LAYERS_NOT_DIVISIBLE);
	ck_assert_str_eq(p[1].field, "pipeline_parallel");
	ck_assert_str_eq(p[1].message, "layers (24) is not divisible by pipeline_parallel (7)");
	ck_assert_int_eq(p[2].code, ERR_F_BATCH_MISMATCH);
	ck_assert_str_eq(p[2].message, "global_batch (64) is not micro_batch (4) x data_parallel "
	                               "(3) x a whole grad_accum");
	ck_assert_int_eq(p[3].code, ERR_F_RANKS_MISMATCH);
	ck_assert_str_eq(p[3].field, "data_parallel");
	ck_assert_str_eq(p[3].message, "data_parallel x tensor_parallel x pipeline_parallel is "
	                               "3 x 5 x 7 = 105 but the world has 100 ranks");
	ck_assert_int_eq(layout_grad_accum(&l, 64), 0);
	char err[512];
	ck_assert_int_eq(layout_check_msg(&l, &fit, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "(5); layers (24)") != NULL, "%s", err);
}
END_TEST

START_TEST(what_is_unknown_waits)
{
	layout l = grid(3, 5, 7, 4);
	layout_fit none = {0};
	layout_problem p[LAYOUT_PROBLEMS_MAX];
	ck_assert_int_eq(layout_check(&l, &none, p), 0);
	layout unread = grid(0, 0, 0, 0);
	layout_fit fit = {.heads = 12, .layers = 24, .global_batch = 64, .ranks = 100};
	ck_assert_int_eq(layout_check(&unread, &fit, p), 0);
}
END_TEST

START_TEST(text_form_both_ways)
{
	layout l = grid(2, 4, 3, 8);
	l.zero_stage = 3;
	char text[160];
	layout_format(&l, text, sizeof(text));
	ck_assert_str_eq(text, "data_parallel=2,tensor_parallel=4,pipeline_parallel=3,"
	                       "zero_stage=3,micro_batch=8");
	layout back;
	char err[256];
	ck_assert_int_eq(layout_parse(text, &back, err, sizeof(err)), 0);
	ck_assert_int_eq(back.data_parallel, 2);
	ck_assert_int_eq(back.tensor_parallel, 4);
	ck_assert_int_eq(back.pipeline_parallel, 3);
	ck_assert_int_eq(back.zero_stage, 3);
	ck_assert_int_eq(back.micro_batch, 8);
	ck_assert_int_eq(layout_parse("micro_batch=1,zero_stage=0,pipeline_parallel=1,"
	                              "tensor_parallel=1,data_parallel=5",
	                              &back, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(back.data_parallel, 5);
}
END_TEST

START_TEST(text_form_refusals)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
	    {"data_parallel=2", "tensor_parallel is missing"},
	    {"data_parallel=2,data_parallel=3", "data_parallel is given twice"},
	    {"data_parallel=0,tensor_parallel=1,pipeline_parallel=1,zero_stage=0,micro_batch=1",
	     "data_parallel must be an integer from 1 to 65536"},
	    {"data_parallel=1,tensor_parallel=1025,pipeline_parallel=1,zero_stage=0,micro_batch=1",
	     "tensor_parallel must be an integer from 1 to 1024"},
	    {"data_parallel=1,tensor_parallel=1,pipeline_parallel=1,zero_stage=4,micro_batch=1",
	     "zero_stage must be an integer from 0 to 3"},
	    {"data_parallel=1x,tensor_parallel=1", "data_parallel must be an integer"},
	    {"grad_accum=2", "\"grad_accum=2\" is not field=value of a layout"},
	    {"data_parallel", "is not field=value of a layout"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		layout l;
		char err[256] = "";
		ck_assert_int_eq(layout_parse(bad[i].text, &l, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, bad[i].why) != NULL, "%s: %s", bad[i].text, err);
	}
}
END_TEST

START_TEST(json_form_both_ways)
{
	layout l = grid(8, 4, 2, 4);
	l.zero_stage = 3;
	l.grad_accum = 16;
	json_t *o = layout_to_json(&l, LAYOUT_F_ALL);
	char *text = json_dumps(o, JSON_COMPACT);
	ck_assert_str_eq(text, "{\"data_parallel\":8,\"tensor_parallel\":4,\"pipeline_parallel\":2,"
	                       "\"zero_stage\":3,\"micro_batch\":4,\"grad_accum\":16}");
	free(text);
	layout back = {0};
	layout_read r;
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(layout_from_json(o, "", LAYOUT_F_ALL, LAYOUT_F_ALL, NULL, &back, &r, &v),
	                 0);
	ck_assert_uint_eq(verrs_count(&v), 0);
	ck_assert_uint_eq(r.given, LAYOUT_F_ALL);
	ck_assert_uint_eq(r.bad, 0);
	ck_assert_mem_eq(&back, &l, sizeof(l));
	json_decref(o);

	o = layout_to_json(&l, LAYOUT_F_SHAPE);
	text = json_dumps(o, JSON_COMPACT);
	ck_assert_str_eq(text, "{\"data_parallel\":8,\"tensor_parallel\":4,\"pipeline_parallel\":2,"
	                       "\"zero_stage\":3}");
	free(text);
	/* what is absent keeps the caller's default, and is not given */
	layout d = grid(1, 1, 1, 7);
	ck_assert_int_eq(layout_from_json(o, "/p", LAYOUT_F_ALL, 0, NULL, &d, &r, &v), 0);
	ck_assert_uint_eq(r.given, LAYOUT_F_SHAPE);
	ck_assert_int_eq(d.data_parallel, 8);
	ck_assert_int_eq(d.zero_stage, 3);
	ck_assert_int_eq(d.micro_batch, 7);
	json_decref(o);
	verrs_release(&v);
}
END_TEST

/* Read text as JSON with these rules; RET the rows as "pointer code message;...". */
static char *read_rows(const char *text, unsigned fields, unsigned required,
                       const char *const *others, layout *l, layout_read *r, int *problems)
{
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	ck_assert_msg(o != NULL, "%s: %s", text, je.text);
	verrs v;
	verrs_init(&v);
	*problems = layout_from_json(o, "/parallel", fields, required, others, l, r, &v);
	char rows[2048] = "";
	for (size_t i = 0; i < verrs_count(&v); i++) {
		json_t *row = json_array_get(v.list, i);
		size_t n = strlen(rows);
		snprintf(rows + n, sizeof(rows) - n, "%s%s %s %s", i ? ";" : "",
		         json_string_value(json_object_get(row, "pointer")),
		         json_string_value(json_object_get(row, "code")),
		         json_string_value(json_object_get(row, "message")));
	}
	verrs_release(&v);
	json_decref(o);
	return strdup(rows);
}

START_TEST(json_form_problems)
{
	static const char *const others[] = {"global_batch", NULL};
	layout l = grid(1, 1, 1, 0);
	layout_read r;
	int n;
	char *rows = read_rows("{\"data_parallel\": 0, \"tensor_parallel\": \"4\","
	                       " \"zero_stage\": 4, \"micro_batch\": null, \"grad_accum\": 2,"
	                       " \"global_batch\": 8, \"dp\": 2}",
	                       LAYOUT_F_ALL, LAYOUT_F_MICRO_BATCH, others, &l, &r, &n);
	ck_assert_str_eq(rows,
	                 "/parallel/dp unknown_field unknown field \"dp\";"
	                 "/parallel/data_parallel out_of_range data_parallel must be between 1 and "
	                 "65536;"
	                 "/parallel/tensor_parallel wrong_type tensor_parallel must be an integer;"
	                 "/parallel/zero_stage out_of_range zero_stage must be between 0 and 3;"
	                 "/parallel/micro_batch required micro_batch is required");
	free(rows);
	ck_assert_int_eq(n, 5);
	ck_assert_uint_eq(r.given, LAYOUT_F_GRAD_ACCUM);
	ck_assert_uint_eq(r.bad, LAYOUT_F_DATA_PARALLEL | LAYOUT_F_TENSOR_PARALLEL |
	                             LAYOUT_F_ZERO_STAGE | LAYOUT_F_MICRO_BATCH);
	/* a bad field keeps its default; pipeline_parallel is absent and optional */
	ck_assert_int_eq(l.data_parallel, 1);
	ck_assert_int_eq(l.tensor_parallel, 1);
	ck_assert_int_eq(l.grad_accum, 2);

	/* fields outside the set asked for are unknown, even a layout's */
	l = grid(1, 1, 1, 0);
	rows = read_rows("{\"data_parallel\": 2, \"grad_accum\": 1, \"pp\": 1}", LAYOUT_F_SHAPE,
	                 LAYOUT_F_RANKS, NULL, &l, &r, &n);
	ck_assert_str_eq(rows,
	                 "/parallel/grad_accum unknown_field unknown field \"grad_accum\";"
	                 "/parallel/pp unknown_field unknown field \"pp\";"
	                 "/parallel/tensor_parallel required tensor_parallel is required;"
	                 "/parallel/pipeline_parallel required pipeline_parallel is required");
	free(rows);
	ck_assert_int_eq(n, 4);
	ck_assert_uint_eq(r.given, LAYOUT_F_DATA_PARALLEL);
	ck_assert_uint_eq(r.bad, LAYOUT_F_TENSOR_PARALLEL | LAYOUT_F_PIPELINE_PARALLEL);
	ck_assert_int_eq(l.data_parallel, 2);

	/* the range of each field, from the one table: the largest are taken, one more is not */
	l = grid(1, 1, 1, 0);
	rows = read_rows("{\"data_parallel\": 65536, \"tensor_parallel\": 1024,"
	                 " \"pipeline_parallel\": 1024, \"zero_stage\": 3,"
	                 " \"micro_batch\": 65536, \"grad_accum\": 16777216}",
	                 LAYOUT_F_ALL, LAYOUT_F_ALL, NULL, &l, &r, &n);
	ck_assert_str_eq(rows, "");
	free(rows);
	ck_assert_int_eq(n, 0);
	rows = read_rows("{\"data_parallel\": 65537, \"tensor_parallel\": 1025,"
	                 " \"pipeline_parallel\": 1025, \"zero_stage\": -1,"
	                 " \"micro_batch\": 65537, \"grad_accum\": 16777217}",
	                 LAYOUT_F_ALL, 0, NULL, &l, &r, &n);
	ck_assert_int_eq(n, 6);
	ck_assert_uint_eq(r.bad, LAYOUT_F_ALL);
	ck_assert_msg(strstr(rows, "grad_accum must be between 1 and 16777216") != NULL, "%s",
	              rows);
	free(rows);

	/* not an object: every required field is missing */
	rows = read_rows("[1]", LAYOUT_F_ALL, LAYOUT_F_MICRO_BATCH, NULL, &l, &r, &n);
	ck_assert_str_eq(rows, "/parallel/micro_batch required micro_batch is required");
	free(rows);
	ck_assert_int_eq(n, 1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("layout");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, a_layout_that_fits_breaks_nothing);
	tcase_add_test(tc, every_rule_with_its_code_and_field);
	tcase_add_test(tc, what_is_unknown_waits);
	tcase_add_test(tc, text_form_both_ways);
	tcase_add_test(tc, text_form_refusals);
	tcase_add_test(tc, json_form_both_ways);
	tcase_add_test(tc, json_form_problems);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
