/*
 * test_readcache.c - the read cache's rules, without a database: an entry
 * is served only to its token and job, while live, younger than its time
 * to live and before the token expires; drops by tenant and in full; a
 * result older than a drop is never kept.
 */
#include <check.h>
#include <string.h>
#include <time.h>

#include "readcache.h"
#include "unit.h"

#define HASH_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HASH_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define JOB_1  "11111111-1111-4111-8111-111111111111"
#define JOB_2  "22222222-2222-4222-8222-222222222222"
#define TEN_X  "0000000a-0000-4000-8000-00000000000a"
#define TEN_Y  "0000000b-0000-4000-8000-00000000000b"
#define DOC    "{\"id\":\"" JOB_1 "\",\"state\":\"queued\"}"

static double in_an_hour(void)
{
	return (double)time(NULL) + 3600;
}

/* Keep the answer of (hash, job in tenant) taken at gen. */
static void put(readcache *rc, uint64_t gen, const char *hash, const char *job, const char *tenant,
                double expires)
{
	api_principal who = {.authenticated = true, .platform = ROLE_NONE};
	strcpy(who.user_id, "33333333-3333-4333-8333-333333333333");
	strcpy(who.user_name, "alice");
	api_scope sc = {.tenant_role = ROLE_EDITOR};
	strcpy(sc.tenant_id, tenant);
	strcpy(sc.tenant_name, "acme");
	strcpy(sc.job_id, job);
	readcache_put(rc, gen, hash, &who, &sc, expires, DOC, strlen(DOC));
}

static bool get(readcache *rc, const char *hash, const char *job)
{
	api_principal who;
	api_scope sc;
	char *doc = NULL;
	size_t len = 0;
	bool hit = readcache_get(rc, hash, job, &who, &sc, &doc, &len);
	if (hit) {
		ck_assert_uint_eq(len, strlen(DOC));
		ck_assert_str_eq(doc, DOC);
		ck_assert_str_eq(who.user_name, "alice");
		ck_assert(who.authenticated);
		ck_assert_str_eq(sc.job_id, job);
		ck_assert_int_eq(sc.tenant_role, ROLE_EDITOR);
	}
	free(doc);
	return hit;
}

static readcache *live_cache(int ttl_ms)
{
	readcache *rc = readcache_new(ttl_ms, NULL, 0);
	ck_assert_ptr_nonnull(rc);
	readcache_set_live(rc, true);
	return rc;
}

START_TEST(served_to_its_token_and_job_only)
{
	readcache *rc = live_cache(60000);
	ck_assert(!get(rc, HASH_A, JOB_1));
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	ck_assert(get(rc, HASH_A, JOB_1));
	ck_assert(get(rc, HASH_A, JOB_1)); /* again: a hit does not use it up */
	ck_assert(!get(rc, HASH_B, JOB_1));
	ck_assert(!get(rc, HASH_A, JOB_2));
	readcache_free(rc);
}
END_TEST

START_TEST(not_served_unless_live)
{
	readcache *rc = readcache_new(60000, NULL, 0);
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	ck_assert_msg(!get(rc, HASH_A, JOB_1), "kept before the cache was live");
	readcache_set_live(rc, true);
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	ck_assert(get(rc, HASH_A, JOB_1));
	readcache_set_live(rc, false); /* the listener lost its connection */
	ck_assert(!get(rc, HASH_A, JOB_1));
	readcache_set_live(rc, true); /* and back: what was kept is gone */
	ck_assert(!get(rc, HASH_A, JOB_1));
	readcache_free(rc);
}
END_TEST

START_TEST(off_when_ttl_is_zero)
{
	readcache *rc = live_cache(0);
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	ck_assert(!get(rc, HASH_A, JOB_1));
	readcache_free(rc);
}
END_TEST

START_TEST(ages_out)
{
	readcache *rc = live_cache(50);
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	ck_assert(get(rc, HASH_A, JOB_1));
	nanosleep(&(struct timespec){0, 80 * 1000000L}, NULL);
	ck_assert_msg(!get(rc, HASH_A, JOB_1), "served past its time to live");
	readcache_free(rc);
}
END_TEST

START_TEST(not_past_the_tokens_expiry)
{
	readcache *rc = live_cache(60000);
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, (double)time(NULL) - 1);
	ck_assert(!get(rc, HASH_A, JOB_1));
	readcache_free(rc);
}
END_TEST

START_TEST(drops_by_tenant_and_in_full)
{
	readcache *rc = live_cache(60000);
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	put(rc, readcache_gen(rc), HASH_A, JOB_2, TEN_Y, in_an_hour());
	readcache_notified(rc, TEN_X);
	ck_assert_msg(!get(rc, HASH_A, JOB_1), "tenant X's job survived its drop");
	ck_assert_msg(get(rc, HASH_A, JOB_2), "tenant Y's job went with tenant X's");
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	readcache_notified(rc, "*");
	ck_assert(!get(rc, HASH_A, JOB_1));
	ck_assert(!get(rc, HASH_A, JOB_2));
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	readcache_notified(rc, "not a tenant id");
	ck_assert_msg(!get(rc, HASH_A, JOB_1), "a payload it cannot read must drop everything");
	readcache_free(rc);
}
END_TEST

START_TEST(a_result_older_than_a_drop_is_not_kept)
{
	readcache *rc = live_cache(60000);
	uint64_t gen = readcache_gen(rc); /* the statement starts */
	readcache_drop_tenant(rc, TEN_Y); /* a change arrives meanwhile */
	put(rc, gen, HASH_A, JOB_1, TEN_X, in_an_hour());
	ck_assert(!get(rc, HASH_A, JOB_1));
	put(rc, readcache_gen(rc), HASH_A, JOB_1, TEN_X, in_an_hour());
	ck_assert(get(rc, HASH_A, JOB_1));
	readcache_free(rc);
}
END_TEST

START_TEST(large_documents_are_not_kept)
{
	readcache *rc = live_cache(60000);
	char *big = malloc(READCACHE_DOC_MAX + 2);
	memset(big, 'x', READCACHE_DOC_MAX + 1);
	big[READCACHE_DOC_MAX + 1] = '\0';
	api_principal who = {.authenticated = true};
	api_scope sc = {0};
	strcpy(sc.tenant_id, TEN_X);
	strcpy(sc.job_id, JOB_1);
	readcache_put(rc, readcache_gen(rc), HASH_A, &who, &sc, in_an_hour(), big,
	              READCACHE_DOC_MAX + 1);
	char *doc = NULL;
	size_t len;
	ck_assert(!readcache_get(rc, HASH_A, JOB_1, &who, &sc, &doc, &len));
	free(big);
	readcache_free(rc);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("readcache");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, served_to_its_token_and_job_only);
	tcase_add_test(tc, not_served_unless_live);
	tcase_add_test(tc, off_when_ttl_is_zero);
	tcase_add_test(tc, ages_out);
	tcase_add_test(tc, not_past_the_tokens_expiry);
	tcase_add_test(tc, drops_by_tenant_and_in_full);
	tcase_add_test(tc, a_result_older_than_a_drop_is_not_kept);
	tcase_add_test(tc, large_documents_are_not_kept);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
