/*
 * test_authfail.c - failed authentications counted into windows, without a
 * database: the first failure of a key opens a window and is recorded on
 * its own, the others in the window are counted, the key's next failure
 * after the close hands the count over; keys by address (IPv6 by its /64)
 * and user. And the rate limiter's give-back, which lets only failed
 * authentications use up an address's bucket.
 */
#include <check.h>
#include <string.h>

#include "authfail.h"
#include "clock.h"
#include "db.h"
#include "ratelimit.h"
#include "unit.h"

static const route whoami = {.method = "GET", .pattern = "/v1/whoami"};
static const route tenants = {.method = "GET", .pattern = "/v1/tenants"};

/* a counter whose writer never finds a window closed during the test */
static authfail *counter(db_pool **pool)
{
	*pool = db_pool_new("host=/nonexistent dbname=none connect_timeout=1", 1, 1, 10);
	ck_assert_ptr_nonnull(*pool);
	authfail *af = authfail_start(*pool, 10, NULL);
	ck_assert_ptr_nonnull(af);
	return af;
}

static authfail_event event(const char *addr, const char *user, const route *rt, err_code code)
{
	return (authfail_event){.addr = addr,
	                        .user_id = user,
	                        .user_name = user ? "alice" : NULL,
	                        .rt = rt,
	                        .code = code,
	                        .request_id = "r1"};
}

START_TEST(first_at_once_then_counted_then_handed_over)
{
	db_pool *pool;
	authfail *af = counter(&pool);
	double t = clock_mono_s() + 100000; /* far past any window the writer could close */
	authfail_batch due;
	bool has_due = true;
	authfail_event a = event("192.0.2.7", NULL, &whoami, ERR_UNAUTHENTICATED);
	ck_assert(authfail_note(af, &a, t, &due, &has_due));
	ck_assert(!has_due);
	authfail_event b = event("192.0.2.7", NULL, &tenants, ERR_UNAUTHENTICATED);
	ck_assert(!authfail_note(af, &a, t + 1, &due, &has_due));
	ck_assert(!authfail_note(af, &b, t + 2, &due, &has_due));
	ck_assert(!authfail_note(af, &a, t + 9.9, &due, &has_due));
	ck_assert(!has_due);
	/* the window (10 s) closed: the next failure hands over its three and is counted */
	ck_assert(!authfail_note(af, &b, t + 10, &due, &has_due));
	ck_assert(has_due);
	ck_assert_int_eq(due.count, 3);
	ck_assert_str_eq(due.addr, "192.0.2.7");
	ck_assert_str_eq(due.user_id, "");
	ck_assert_ptr_eq(due.routes[0], &whoami);
	ck_assert_int_eq(due.route_n[0], 2);
	ck_assert_ptr_eq(due.routes[1], &tenants);
	ck_assert_int_eq(due.route_n[1], 1);
	ck_assert_int_eq(due.codes[0], ERR_UNAUTHENTICATED);
	ck_assert_int_eq(due.code_n[0], 3);
	ck_assert(due.last >= due.first);
	/* that one opened the next window: closed with one counted */
	ck_assert(!authfail_note(af, &a, t + 21, &due, &has_due));
	ck_assert(has_due);
	ck_assert_int_eq(due.count, 1);
	authfail_stop(af);
	db_pool_free(pool);
}
END_TEST

START_TEST(keys_by_address_and_user)
{
	db_pool *pool;
	authfail *af = counter(&pool);
	double t = clock_mono_s() + 100000;
	authfail_batch due;
	bool has_due;
	authfail_event a = event("192.0.2.7", NULL, &whoami, ERR_UNAUTHENTICATED);
	authfail_event other = event("192.0.2.8", NULL, &whoami, ERR_UNAUTHENTICATED);
	authfail_event user =
	    event("192.0.2.7", "0000000a-0000-4000-8000-00000000000a", &whoami, ERR_TOKEN_REVOKED);
	ck_assert(authfail_note(af, &a, t, &due, &has_due));
	ck_assert(authfail_note(af, &other, t, &due, &has_due)); /* another address */
	ck_assert(authfail_note(af, &user, t, &due, &has_due));  /* a revoked token's user */
	ck_assert(!authfail_note(af, &user, t + 1, &due, &has_due));
	ck_assert(!authfail_note(af, &a, t + 1, &due, &has_due));
	authfail_stop(af);
	db_pool_free(pool);
}
END_TEST

START_TEST(routes_past_the_cap_are_other_routes)
{
	db_pool *pool;
	authfail *af = counter(&pool);
	double t = clock_mono_s() + 100000;
	authfail_batch due;
	bool has_due;
	route many[AUTHFAIL_ROUTES + 3];
	authfail_event e = event("192.0.2.9", NULL, &whoami, ERR_UNAUTHENTICATED);
	ck_assert(authfail_note(af, &e, t, &due, &has_due));
	for (int i = 0; i < AUTHFAIL_ROUTES + 3; i++) {
		many[i] = (route){.method = "GET", .pattern = "/v1/x"};
		e.rt = &many[i];
		ck_assert(!authfail_note(af, &e, t + 1, &due, &has_due));
	}
	ck_assert(!authfail_note(af, &e, t + 11, &due, &has_due));
	ck_assert(has_due);
	ck_assert_int_eq(due.count, AUTHFAIL_ROUTES + 3);
	ck_assert_int_eq(due.other_routes, 3);
	ck_assert_ptr_eq(due.routes[AUTHFAIL_ROUTES - 1], &many[AUTHFAIL_ROUTES - 1]);
	authfail_stop(af);
	db_pool_free(pool);
}
END_TEST

START_TEST(address_keys)
{
	char k[64];
	authfail_addr_key("127.0.0.1", k);
	ck_assert_str_eq(k, "127.0.0.1");
	authfail_addr_key("2001:db8:1:2:3:4:5:6", k);
	ck_assert_str_eq(k, "2001:db8:1:2::/64");
	authfail_addr_key("2001:db8:1:2:ffff::1", k);
	ck_assert_str_eq(k, "2001:db8:1:2::/64");
	authfail_addr_key("", k);
	ck_assert_str_eq(k, "unknown");
	authfail_addr_key(NULL, k);
	ck_assert_str_eq(k, "unknown");
}
END_TEST

/* class 2 alone, as auth.c uses it: taken before the token, given back after */
START_TEST(rate_limit_give_back)
{
	ratelimit_rate rates[] = {{100.0, 200.0}, {200.0, 400.0}, {1.0, 2.0}};
	ratelimit *rl = ratelimit_new(3, rates);
	const char *addr[] = {NULL, NULL, "192.0.2.7"};
	int retry = 0;
	for (int i = 0; i < 10; i++) { /* requests that authenticate give theirs back */
		ck_assert_int_eq(ratelimit_take(rl, addr, 100.0, &retry), RATELIMIT_ALLOWED);
		ratelimit_give(rl, addr);
	}
	ck_assert_int_eq(ratelimit_take(rl, addr, 100.0, &retry), RATELIMIT_ALLOWED);
	ck_assert_int_eq(ratelimit_take(rl, addr, 100.0, &retry), RATELIMIT_ALLOWED);
	ck_assert_int_eq(ratelimit_take(rl, addr, 100.0, &retry), 2); /* two failures spent it */
	ck_assert_int_eq(retry, 1);
	ratelimit_give(rl, addr);
	ratelimit_give(rl, addr);
	ratelimit_give(rl, addr); /* no more than the burst */
	ck_assert_int_eq(ratelimit_take(rl, addr, 100.0, &retry), RATELIMIT_ALLOWED);
	ck_assert_int_eq(ratelimit_take(rl, addr, 100.0, &retry), RATELIMIT_ALLOWED);
	ck_assert_int_eq(ratelimit_take(rl, addr, 100.0, &retry), 2);
	const char *unseen[] = {NULL, NULL, "192.0.2.99"};
	ratelimit_give(rl, unseen); /* a key without a bucket: nothing to give back */
	ratelimit_free(rl);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("authfail");
	TCase *tc = tcase_create("windows");
	tcase_add_test(tc, first_at_once_then_counted_then_handed_over);
	tcase_add_test(tc, keys_by_address_and_user);
	tcase_add_test(tc, routes_past_the_cap_are_other_routes);
	tcase_add_test(tc, address_keys);
	tcase_add_test(tc, rate_limit_give_back);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
