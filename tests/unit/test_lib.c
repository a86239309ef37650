/*
 * test_lib.c - small shared pieces: token secrets, the job state table,
 * strict JSON intake, names, the rate limiter, and how timestamps are shown.
 */
#include <check.h>
#include <string.h>

#include "attemptstate.h"
#include "clock.h"
#include "hex.h"
#include "jobstate.h"
#include "jsonx.h"
#include "followers.h"
#include "peers.h"
#include "ratelimit.h"
#include "token.h"
#include "unit.h"

/* One format for every timestamp shown: milliseconds, truncated, UTC. */
START_TEST(timestamps_shown)
{
	char b[CLOCK_RFC3339_SIZE];
	ck_assert_str_eq(clock_rfc3339(0, b), "1970-01-01T00:00:00.000Z");
	ck_assert_str_eq(clock_rfc3339(1796223845.1239, b), "2026-12-02T15:04:05.123Z");
	ck_assert_str_eq(clock_rfc3339(1796223845.9999, b), "2026-12-02T15:04:05.999Z");
	ck_assert_str_eq(clock_rfc3339(-0.5, b), "1969-12-31T23:59:59.500Z");
	ck_assert_uint_eq(strlen(clock_rfc3339(clock_epoch_s(), b)), 24);
}
END_TEST

START_TEST(token_secrets)
{
	char a[TOKEN_SECRET_LEN + 1], b[TOKEN_SECRET_LEN + 1];
	ck_assert_int_eq(token_generate(a), 0);
	ck_assert_int_eq(token_generate(b), 0);
	ck_assert_uint_eq(strlen(a), TOKEN_SECRET_LEN);
	ck_assert(token_well_formed(a));
	ck_assert_str_ne(a, b);
	char bad[TOKEN_SECRET_LEN + 1];
	memcpy(bad, a, sizeof(bad));
	bad[10] = '*';
	ck_assert(!token_well_formed(bad));
	ck_assert(!token_well_formed("ty_short"));
	ck_assert(!token_well_formed(a + 1));
	unsigned char ha[TOKEN_HASH_LEN], hb[TOKEN_HASH_LEN], ha2[TOKEN_HASH_LEN];
	token_hash(a, ha);
	token_hash(b, hb);
	token_hash(a, ha2);
	ck_assert(token_equal_ct(ha, ha2, TOKEN_HASH_LEN));
	ck_assert(!token_equal_ct(ha, hb, TOKEN_HASH_LEN));
	/* SHA-256("abc") */
	unsigned char h[TOKEN_HASH_LEN];
	char hex[2 * TOKEN_HASH_LEN + 1];
	token_hash("abc", h);
	hex_encode(h, sizeof(h), hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(job_state_table)
{
	/* every pair against the documented machine */
	static const char *const allowed[] = {"queued>dispatching",
	                                      "queued>cancelled",
	                                      "queued>failed",
	                                      "dispatching>scheduled",
	                                      "dispatching>queued",
	                                      "dispatching>cancelling",
	                                      "dispatching>failed",
	                                      "scheduled>running",
	                                      "scheduled>queued",
	                                      "scheduled>cancelling",
	                                      "scheduled>failed",
	                                      "scheduled>succeeded",
	                                      "running>succeeded",
	                                      "running>failed",
	                                      "running>queued",
	                                      "running>cancelling",
	                                      "cancelling>cancelled",
	                                      "cancelling>succeeded",
	                                      "cancelling>failed",
	                                      "running>preempting",
	                                      "preempting>queued",
	                                      "preempting>succeeded",
	                                      "preempting>failed",
	                                      "preempting>cancelling",
	                                      NULL};
	for (int f = 0; f < JOB_STATE__COUNT; f++)
		for (int t = 0; t < JOB_STATE__COUNT; t++) {
			char pair[64];
			snprintf(pair, sizeof(pair), "%s>%s", job_state_name((job_state)f),
			         job_state_name((job_state)t));
			bool want = jsonx_enum_index(pair, allowed) >= 0;
			ck_assert_msg(job_transition_allowed((job_state)f, (job_state)t) == want,
			              "%s", pair);
		}
	for (int s = 0; s < JOB_STATE__COUNT; s++) {
		ck_assert_int_eq(job_state_parse(job_state_name((job_state)s)), s);
		bool final = s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
		ck_assert(job_state_final((job_state)s) == final);
	}
	ck_assert_int_eq(job_state_parse("paused"), -1);
	ck_assert(!job_transition_allowed((job_state)-1, JOB_QUEUED));
}
END_TEST

START_TEST(job_state_phrases)
{
	/* every state reads as English after "the job", with and without an adverb */
	static const char *const want[JOB_STATE__COUNT] = {
	    [JOB_QUEUED] = "is already queued",
	    [JOB_DISPATCHING] = "is already being dispatched",
	    [JOB_SCHEDULED] = "is already scheduled",
	    [JOB_RUNNING] = "is already running",
	    [JOB_PREEMPTING] = "is already being preempted",
	    [JOB_CANCELLING] = "is already cancelling",
	    [JOB_SUCCEEDED] = "has already succeeded",
	    [JOB_FAILED] = "has already failed",
	    [JOB_CANCELLED] = "has already been cancelled",
	};
	char buf[64];
	for (int s = 0; s < JOB_STATE__COUNT; s++)
		ck_assert_str_eq(job_state_phrase((job_state)s, "already", buf, sizeof(buf)),
		                 want[s]);
	ck_assert_str_eq(job_state_phrase(JOB_SUCCEEDED, NULL, buf, sizeof(buf)), "has succeeded");
	ck_assert_str_eq(job_state_phrase(JOB_QUEUED, "", buf, sizeof(buf)), "is queued");
	ck_assert_str_eq(job_state_phrase((job_state)-1, NULL, buf, sizeof(buf)),
	                 "is in an unknown state");
	ck_assert_str_eq(job_state_phrase(JOB_CANCELLED, "already", buf, 8), "has alr");
}
END_TEST

START_TEST(attempt_state_table)
{
	/* every pair against the documented machine (attemptstate.h) */
	static const char *const allowed[] = {"starting>running", "starting>ended", "running>ended",
	                                      NULL};
	for (int f = 0; f < ATTEMPT_STATE__COUNT; f++)
		for (int t = 0; t < ATTEMPT_STATE__COUNT; t++) {
			char pair[64];
			snprintf(pair, sizeof(pair), "%s>%s", attempt_state_name((attempt_state)f),
			         attempt_state_name((attempt_state)t));
			bool want = jsonx_enum_index(pair, allowed) >= 0;
			ck_assert_msg(
			    attempt_transition_allowed((attempt_state)f, (attempt_state)t) == want,
			    "%s", pair);
		}
	for (int s = 0; s < ATTEMPT_STATE__COUNT; s++)
		ck_assert_int_eq(attempt_state_parse(attempt_state_name((attempt_state)s)), s);
	ck_assert_int_eq(attempt_state_parse("lost"), -1);
	ck_assert(!attempt_transition_allowed((attempt_state)-1, ATTEMPT_ENDED));
}
END_TEST

static int parse(const char *text, json_t **out)
{
	jsonx_limits lim = {4, 3};
	char msg[128];
	return jsonx_parse(text, strlen(text), &lim, out, msg, sizeof(msg));
}

START_TEST(json_intake)
{
	json_t *j;
	ck_assert_int_eq(parse("{\"a\":[1,2,3]}", &j), 0);
	json_decref(j);
	ck_assert_int_eq(parse("{\"a\":[1,2,3,4]}", &j), -ERR_JSON_TOO_LARGE);
	ck_assert_ptr_null(j);
	ck_assert_int_eq(parse("[[[[1]]]]", &j), 0);
	json_decref(j);
	ck_assert_int_eq(parse("[[[[[1]]]]]", &j), -ERR_JSON_TOO_DEEP);
	ck_assert_int_eq(parse("{\"s\":\"[[[[[[[[\"}", &j), 0); /* brackets in strings don't nest */
	json_decref(j);
	ck_assert_int_eq(parse("{\"s\":\"\\\"[[[[[[\"}", &j), 0);
	json_decref(j);
	ck_assert_int_eq(parse("{\"a\":1,\"a\":2}", &j), -ERR_DUPLICATE_KEY);
	ck_assert_int_eq(parse("{\"a\":1} x", &j), -ERR_INVALID_JSON);
	ck_assert_int_eq(parse("", &j), -ERR_INVALID_JSON);
	ck_assert_int_eq(parse("{\"a\":\"\\ud800\"}", &j), -ERR_INVALID_JSON);
	ck_assert_int_eq(parse("{\"a\":99999999999999999999999}", &j), -ERR_INVALID_JSON);
}
END_TEST

START_TEST(json_fields)
{
	json_t *o =
	    json_pack("{s:i, s:s, s:f, s:{}, s:s}", "n", 5, "s", "x", "f", 1.5, "o", "a/b~c", "z");
	verrs v;
	verrs_init(&v);
	int64_t n = 0;
	double f = 0;
	const char *s = NULL;
	const json_t *obj = NULL;
	ck_assert_int_eq(jsonx_get_int(o, "/p", "n", true, 0, 10, &n, &v), 1);
	ck_assert_int_eq(n, 5);
	ck_assert_int_eq(jsonx_get_int(o, "/p", "n", true, 6, 10, &n, &v), -1);
	ck_assert_int_eq(jsonx_get_int(o, "/p", "s", true, 0, 10, &n, &v), -1);
	ck_assert_int_eq(jsonx_get_int(o, "/p", "missing", false, 0, 10, &n, &v), 0);
	ck_assert_int_eq(jsonx_get_int(o, "/p", "missing", true, 0, 10, &n, &v), -1);
	ck_assert_int_eq(jsonx_get_num(o, "/p", "f", true, 0, 2, &f, &v), 1);
	ck_assert_int_eq(jsonx_get_num(o, "/p", "n", true, 0, 10, &f, &v),
	                 1); /* ints are numbers */
	ck_assert_int_eq(jsonx_get_str(o, "/p", "s", true, 10, &s, &v), 1);
	ck_assert_int_eq(jsonx_get_obj(o, "/p", "o", true, &obj, &v), 1);
	ck_assert_int_eq(jsonx_get_obj(o, "/p", "s", true, &obj, &v), -1);
	static const char *const allowed[] = {"n", "s", "f", "o", NULL};
	ck_assert_int_eq(jsonx_only_fields(o, "/p", allowed, &v), 1);
	static const char *const want[][2] = {
	    {"out_of_range", "/p/n"}, {"wrong_type", "/p/s"},          {"required", "/p/missing"},
	    {"wrong_type", "/p/s"},   {"unknown_field", "/p/a~1b~0c"},
	};
	ck_assert_uint_eq(verrs_count(&v), 5);
	for (size_t i = 0; i < 5; i++) {
		json_t *row = json_array_get(v.list, i);
		ck_assert_str_eq(json_string_value(json_object_get(row, "code")), want[i][0]);
		ck_assert_str_eq(json_string_value(json_object_get(row, "pointer")), want[i][1]);
	}
	verrs_release(&v);
	json_decref(o);
}
END_TEST

/* A long multi-byte key cut by the pointer's size limit still yields its row. */
START_TEST(json_rows_survive_truncation)
{
	char key[400] = "";
	for (int i = 0; i < 130; i++)
		strcat(key, "\xc3\xa9"); /* 'e' with an accent, two bytes */
	json_t *o = json_object();
	json_object_set_new(o, key, json_true());
	verrs v;
	verrs_init(&v);
	static const char *const none[] = {NULL};
	ck_assert_int_eq(jsonx_only_fields(o, "/spec", none, &v), 1);
	ck_assert_uint_eq(verrs_count(&v), 1);
	json_t *row = json_array_get(v.list, 0);
	ck_assert_str_eq(json_string_value(json_object_get(row, "code")), "unknown_field");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(row, "pointer")), "/spec/"));
	verrs_release(&v);
	json_decref(o);
}
END_TEST

START_TEST(names_and_ids)
{
	ck_assert(jsonx_is_name("acme"));
	ck_assert(jsonx_is_name("team-42"));
	ck_assert(!jsonx_is_name("a"));
	ck_assert(!jsonx_is_name("Acme"));
	ck_assert(!jsonx_is_name("4cme"));
	ck_assert(!jsonx_is_name("acme-"));
	ck_assert(!jsonx_is_name("ac me"));
	ck_assert(!jsonx_is_name("abcdef12-3456-4789-8abc-def012345678")); /* UUID-shaped */
	ck_assert(jsonx_is_uuid("abcdef12-3456-4789-8abc-def012345678"));
	ck_assert(!jsonx_is_uuid("abcdef12-3456-4789-8abc-def01234567"));
	ck_assert(!jsonx_is_uuid("abcdef12-3456-4789-8abc-def0123456789"));
	ck_assert(!jsonx_is_uuid("abcdef12x3456-4789-8abc-def012345678"));
}
END_TEST

/* take KEY... at time T from a one-class limiter: true when allowed */
static bool take1(ratelimit *rl, const char *key, double t, int *retry)
{
	const char *keys[] = {key};
	return ratelimit_take(rl, keys, t, retry) == RATELIMIT_ALLOWED;
}

START_TEST(rate_limit_buckets)
{
	ratelimit_rate rate = {2.0, 3.0};
	ratelimit *rl = ratelimit_new(1, &rate);
	int retry = 0;
	for (int i = 0; i < 3; i++)
		ck_assert(take1(rl, "tok-a", 100.0, &retry));
	ck_assert(!take1(rl, "tok-a", 100.0, &retry));
	ck_assert_int_ge(retry, 1);
	ck_assert(take1(rl, "tok-b", 100.0, &retry)); /* another token is separate */
	ck_assert(take1(rl, "tok-a", 100.5, &retry)); /* 0.5 s refills one */
	ck_assert(!take1(rl, "tok-a", 100.5, &retry));
	ck_assert(take1(rl, "tok-a", 110.0, &retry)); /* refill caps at burst */
	ck_assert(take1(rl, "tok-a", 110.0, &retry));
	ck_assert(take1(rl, "tok-a", 110.0, &retry));
	ck_assert(!take1(rl, "tok-a", 110.0, &retry));
	ratelimit_free(rl);
}
END_TEST

/* Class 0 per token (burst 3), class 1 per user (burst 4, 1/s): the user's tokens share class 1. */
START_TEST(rate_limit_classes)
{
	ratelimit_rate rates[] = {{10.0, 3.0}, {1.0, 4.0}};
	ratelimit *rl = ratelimit_new(2, rates);
	int retry = 0;
	const char *a[] = {"tok-a", "user-u"}, *b[] = {"tok-b", "user-u"};
	const char *c[] = {"tok-c", "user-v"}, *solo[] = {"tok-d", NULL};
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(ratelimit_take(rl, a, 100.0, &retry), RATELIMIT_ALLOWED);
	ck_assert_int_eq(ratelimit_take(rl, a, 100.0, &retry), 0); /* tok-a's bucket */
	ck_assert_int_eq(ratelimit_take(rl, b, 100.0, &retry), RATELIMIT_ALLOWED);
	/* user-u has spent its 4: a fresh token of the user does not help */
	ck_assert_int_eq(ratelimit_take(rl, b, 100.0, &retry), 1);
	ck_assert_int_eq(retry, 1);
	/* a second later the user has one again */
	ck_assert_int_eq(ratelimit_take(rl, b, 101.0, &retry), RATELIMIT_ALLOWED);
	ck_assert_int_eq(ratelimit_take(rl, b, 101.0, &retry), 1);
	ck_assert_int_eq(ratelimit_take(rl, c, 101.0, &retry),
	                 RATELIMIT_ALLOWED); /* another user */
	for (int i = 0; i < 3; i++)          /* a NULL key leaves the user class out */
		ck_assert_int_eq(ratelimit_take(rl, solo, 101.0, &retry), RATELIMIT_ALLOWED);
	ck_assert_int_eq(ratelimit_take(rl, solo, 101.0, &retry), 0);
	/* tok-a has refilled, its user has not */
	ck_assert_int_eq(ratelimit_take(rl, a, 101.0, &retry), 1);
	/* a refusal takes nothing: tok-d's empty bucket leaves user-w's 4 whole */
	const char *d[] = {"tok-d", "user-w"}, *e[] = {"tok-e", "user-w"};
	ck_assert_int_eq(ratelimit_take(rl, d, 101.0, &retry), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(ratelimit_take(rl, e, 101.0, &retry), RATELIMIT_ALLOWED);
	const char *f[] = {"tok-f", "user-w"};
	ck_assert_int_eq(ratelimit_take(rl, f, 101.0, &retry), RATELIMIT_ALLOWED);
	ck_assert_int_eq(ratelimit_take(rl, f, 101.0, &retry), 1);
	ratelimit_free(rl);
	ck_assert_ptr_null(ratelimit_new(0, rates));
}
END_TEST

/* Two processes share the platform's rates (peers.h): each holds half. */
START_TEST(rate_limit_share)
{
	ratelimit_rate rate = {4.0, 6.0};
	ratelimit *rl = ratelimit_new(1, &rate);
	int retry = 0;
	ratelimit_share(rl, 2);
	for (int i = 0; i < 3; i++) /* half the burst */
		ck_assert(take1(rl, "tok-a", 100.0, &retry));
	ck_assert(!take1(rl, "tok-a", 100.0, &retry));
	ck_assert(!take1(rl, "tok-a", 100.25, &retry)); /* half the refill: 2 a second */
	ck_assert(take1(rl, "tok-a", 100.5, &retry));
	ck_assert(!take1(rl, "tok-a", 100.5, &retry));
	/* alone again: the whole rate, the bucket refilled up to the whole burst */
	ratelimit_share(rl, 1);
	ck_assert(take1(rl, "tok-a", 102.0, &retry));
	for (int i = 0; i < 5; i++)
		ck_assert(take1(rl, "tok-a", 102.0, &retry));
	ck_assert(!take1(rl, "tok-a", 102.0, &retry));
	/* a full bucket is cut down to the new share at its next take */
	ck_assert(take1(rl, "tok-b", 110.0, &retry));
	ratelimit_share(rl, 3);
	ck_assert(take1(rl, "tok-b", 120.0, &retry));
	ck_assert(take1(rl, "tok-b", 120.0, &retry));
	ck_assert(!take1(rl, "tok-b", 120.0, &retry));
	/* a share smaller than one request still lets one through */
	ratelimit_share(rl, 100);
	ck_assert(take1(rl, "tok-c", 130.0, &retry));
	ck_assert(!take1(rl, "tok-c", 130.0, &retry));
	ratelimit_free(rl);
	ck_assert_int_eq(peers_cap(8, 2), 4);
	ck_assert_int_eq(peers_cap(8, 3), 2);
	ck_assert_int_eq(peers_cap(1, 2), 1);
	ck_assert_int_eq(peers_cap(5, 1), 5);
	ck_assert_int_eq(peers_cap(5, 0), 5);
}
END_TEST

/* Two processes share the platform's follower caps: each holds half. */
START_TEST(follower_caps_shared)
{
	followers *f = followers_new(8, 4, 8, 2);
	ck_assert_ptr_nonnull(f);
	followers_share(f, 2);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-1"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-1"), FOLLOWERS_TOKEN_FULL);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-2"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-3"), FOLLOWERS_TENANT_FULL);
	ck_assert_int_eq(followers_take(f, "tenant-b", "tok-4"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-c", "tok-5"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-d", "tok-6"), FOLLOWERS_SERVER_FULL);
	followers_share(f, 1); /* the other process is gone: the whole caps */
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-1"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-3"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-3"), FOLLOWERS_TENANT_FULL);
	followers_free(f);
}
END_TEST

/* 4 slots, 2 per tenant, 4 per user (never reached: no user given), 1 per token */
START_TEST(follower_shares)
{
	followers *f = followers_new(4, 2, 4, 1);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-1"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-1"), FOLLOWERS_TOKEN_FULL);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-2"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-3"), FOLLOWERS_TENANT_FULL);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-1"), FOLLOWERS_TOKEN_FULL);
	/* tenant A holds its share: tenant B still follows */
	ck_assert_int_eq(followers_take(f, "tenant-b", "tok-4"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-c", "tok-5"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-d", "tok-6"), FOLLOWERS_SERVER_FULL);
	ck_assert_int_eq(followers_take(f, "tenant-b", "tok-7"), FOLLOWERS_SERVER_FULL);
	/* a slot given back is free again, the token's and the tenant's too */
	followers_give(f, "tenant-a", "tok-1");
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-3"), FOLLOWERS_TAKEN);
	followers_give(f, "tenant-a", "tok-3");
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-1"), FOLLOWERS_TAKEN);
	followers_give(f, "tenant-a", "tok-1");
	followers_give(f, "tenant-a", "tok-2");
	followers_give(f, "tenant-b", "tok-4");
	followers_give(f, "tenant-c", "tok-5");
	for (int i = 0; i < 2; i++) /* all free: the tenant's share is whole again */
		ck_assert_int_eq(followers_take(f, "tenant-a", i ? "tok-9" : "tok-8"),
		                 FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take(f, "tenant-a", "tok-10"), FOLLOWERS_TENANT_FULL);
	followers_free(f);
}
END_TEST

/* 8 slots, 8 per tenant, 3 per user over all of the user's tokens, 2 per token */
START_TEST(follower_user_share)
{
	followers *f = followers_new(8, 8, 3, 2);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(followers_take_user(f, "tenant-a", "user-1", "tok-1"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take_user(f, "tenant-a", "user-1", "tok-1"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take_user(f, "tenant-a", "user-1", "tok-1"),
	                 FOLLOWERS_TOKEN_FULL);
	ck_assert_int_eq(followers_take_user(f, "tenant-a", "user-1", "tok-2"), FOLLOWERS_TAKEN);
	/* the user holds 3: another token of the user's makes no room, nor another tenant */
	ck_assert_int_eq(followers_take_user(f, "tenant-a", "user-1", "tok-3"),
	                 FOLLOWERS_USER_FULL);
	ck_assert_int_eq(followers_take_user(f, "tenant-b", "user-1", "tok-4"),
	                 FOLLOWERS_USER_FULL);
	/* the token's share and the user's both full: the token's is named */
	ck_assert_int_eq(followers_take_user(f, "tenant-a", "user-1", "tok-1"),
	                 FOLLOWERS_TOKEN_FULL);
	/* another user of the same tenant still follows */
	ck_assert_int_eq(followers_take_user(f, "tenant-a", "user-2", "tok-5"), FOLLOWERS_TAKEN);
	/* a slot given back is the user's again, whichever token takes it */
	followers_give_user(f, "tenant-a", "user-1", "tok-1");
	ck_assert_int_eq(followers_take_user(f, "tenant-a", "user-1", "tok-3"), FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take_user(f, "tenant-b", "user-1", "tok-4"),
	                 FOLLOWERS_USER_FULL);
	followers_give_user(f, "tenant-a", "user-1", "tok-1");
	followers_give_user(f, "tenant-a", "user-1", "tok-2");
	followers_give_user(f, "tenant-a", "user-1", "tok-3");
	for (int i = 0; i < 3; i++) /* all the user's given back: its share is whole again */
		ck_assert_int_eq(
		    followers_take_user(f, "tenant-b", "user-1", i < 2 ? "tok-4" : "tok-6"),
		    FOLLOWERS_TAKEN);
	ck_assert_int_eq(followers_take_user(f, "tenant-b", "user-1", "tok-7"),
	                 FOLLOWERS_USER_FULL);
	followers_free(f);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("lib");
	TCase *tc = tcase_create("pieces");
	tcase_add_test(tc, token_secrets);
	tcase_add_test(tc, timestamps_shown);
	tcase_add_test(tc, job_state_table);
	tcase_add_test(tc, job_state_phrases);
	tcase_add_test(tc, attempt_state_table);
	tcase_add_test(tc, json_intake);
	tcase_add_test(tc, json_fields);
	tcase_add_test(tc, json_rows_survive_truncation);
	tcase_add_test(tc, names_and_ids);
	tcase_add_test(tc, rate_limit_buckets);
	tcase_add_test(tc, rate_limit_classes);
	tcase_add_test(tc, rate_limit_share);
	tcase_add_test(tc, follower_shares);
	tcase_add_test(tc, follower_caps_shared);
	tcase_add_test(tc, follower_user_share);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
