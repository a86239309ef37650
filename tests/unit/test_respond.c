/*
 * test_respond.c - answers as handlers leave them: a body is kept, 204 has
 * none, and any other status whose body could not be built becomes 500
 * internal rather than an empty success.
 */
#include <check.h>
#include <string.h>

#include "api.h"
#include "log.h"
#include "unit.h"

static api_req req(void)
{
	api_req rq;
	memset(&rq, 0, sizeof(rq));
	strcpy(rq.request_id, "req-test");
	return rq;
}

START_TEST(body_kept)
{
	api_req rq = req();
	ck_assert_int_eq(api_reply(&rq, 201, json_pack("{s:i}", "n", 1)), 0);
	ck_assert_int_eq(rq.status, 201);
	ck_assert_int_eq(rq.error, ERR_OK);
	ck_assert_int_eq(json_integer_value(json_object_get(rq.out, "n")), 1);
	json_decref(rq.out);
}
END_TEST

START_TEST(no_content)
{
	api_req rq = req();
	ck_assert_int_eq(api_reply(&rq, 204, NULL), 0);
	ck_assert_int_eq(rq.status, 204);
	ck_assert_int_eq(rq.error, ERR_OK);
	ck_assert_ptr_null(rq.out);
}
END_TEST

START_TEST(lost_body_is_internal)
{
	log_set_level(LOG_ERROR + 1); /* the error line is expected */
	api_req rq = req();
	rq.out = json_object(); /* an earlier answer's body is dropped */
	/* a json_pack() with a NULL string member gives NULL */
	ck_assert_int_eq(api_reply(&rq, 200, json_pack("{s:s}", "name", (const char *)NULL)), 0);
	ck_assert_int_eq(rq.status, 500);
	ck_assert_int_eq(rq.error, ERR_INTERNAL);
	ck_assert_ptr_null(rq.out);
	ck_assert_ptr_nonnull(strstr(rq.detail, "req-test"));
	log_set_level(LOG_INFO);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("respond");
	TCase *tc = tcase_create("reply");
	tcase_add_test(tc, body_kept);
	tcase_add_test(tc, no_content);
	tcase_add_test(tc, lost_body_is_internal);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
