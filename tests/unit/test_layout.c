/*
 * test_layout.c - the one layout type: its rules against a model, a batch
 * and the ranks there are, each with its code and field; what is unknown
 * waits; the text form the runtime hands the trainer, both ways.
 */
#include <check.h>
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

static Suite *make_suite(void)
{
	Suite *s = suite_create("layout");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, a_layout_that_fits_breaks_nothing);
	tcase_add_test(tc, every_rule_with_its_code_and_field);
	tcase_add_test(tc, what_is_unknown_waits);
	tcase_add_test(tc, text_form_both_ways);
	tcase_add_test(tc, text_form_refusals);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
