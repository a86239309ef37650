/*
 * test_webhook_addr.c - the rule against webhooks to internal addresses
 * (api/webhook_addr.h): every internal range, IPv4 and IPv6 (mapped
 * addresses included), against public ones; URLs that are not webhook
 * URLs; numeric hosts checked without a lookup, and allowed when a
 * platform admin said so.
 */
#include <check.h>
#include <string.h>

#include "unit.h"
#include "webhook_addr.h"

START_TEST(internal_ranges)
{
	const char *internal[] = {"127.0.0.1",
	                          "127.255.0.9",
	                          "10.1.2.3",
	                          "172.16.0.1",
	                          "172.31.255.255",
	                          "192.168.1.1",
	                          "169.254.169.254",
	                          "100.64.0.1",
	                          "0.0.0.0",
	                          "224.0.0.1",
	                          "255.255.255.255",
	                          "::1",
	                          "::",
	                          "fe80::1",
	                          "fd00::1",
	                          "fc00::",
	                          "::ffff:127.0.0.1",
	                          "::ffff:169.254.169.254",
	                          "ff02::1",
	                          "64:ff9b::7f00:1",
	                          "not an address"};
	const char *public_[] = {"1.1.1.1",     "8.8.8.8",         "172.32.0.1",    "100.128.0.1",
	                         "192.169.0.1", "2606:4700::1111", "::ffff:8.8.8.8"};
	for (size_t i = 0; i < sizeof(internal) / sizeof(internal[0]); i++)
		ck_assert_msg(webhook_address_internal(internal[i]), "%s is internal", internal[i]);
	for (size_t i = 0; i < sizeof(public_) / sizeof(public_[0]); i++)
		ck_assert_msg(!webhook_address_internal(public_[i]), "%s is public", public_[i]);
}
END_TEST

START_TEST(urls)
{
	ck_assert(webhook_url_ok("https://hooks.example.com/x?y=1"));
	ck_assert(webhook_url_ok("http://1.1.1.1:8080/"));
	ck_assert(webhook_url_ok("https://[2606:4700::1111]/h"));
	ck_assert(!webhook_url_ok("ftp://example.com/"));
	ck_assert(!webhook_url_ok("file:///etc/passwd"));
	ck_assert(!webhook_url_ok("https://user:pw@example.com/"));
	ck_assert(!webhook_url_ok("not a url"));
	ck_assert(!webhook_url_ok(NULL));
	char longer[WEBHOOK_URL_MAX + 32] = "https://example.com/";
	memset(longer + strlen(longer), 'a', WEBHOOK_URL_MAX);
	longer[sizeof(longer) - 1] = '\0';
	ck_assert(!webhook_url_ok(longer));

	webhook_target t;
	char why[256];
	ck_assert_int_eq(webhook_target_check("http://127.0.0.1:9/h", false, &t, why, sizeof(why)),
	                 -3);
	ck_assert_ptr_nonnull(strstr(why, "internal"));
	ck_assert_int_eq(webhook_target_check("http://[::1]/h", false, &t, why, sizeof(why)), -3);
	ck_assert_int_eq(
	    webhook_target_check("http://169.254.169.254/latest", false, &t, why, sizeof(why)), -3);
	ck_assert_int_eq(webhook_target_check("http://127.0.0.1:9/h", true, &t, why, sizeof(why)),
	                 0);
	ck_assert_str_eq(t.address, "127.0.0.1");
	ck_assert_int_eq(t.port, 9);
	ck_assert_int_eq(webhook_target_check("https://1.1.1.1/h", false, &t, why, sizeof(why)), 0);
	ck_assert_int_eq(t.port, 443);
	ck_assert_int_eq(webhook_target_check("gopher://1.1.1.1/", true, &t, why, sizeof(why)), -1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("webhook_addr");
	TCase *tc = tcase_create("rule");
	tcase_add_test(tc, internal_ranges);
	tcase_add_test(tc, urls);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
