/*
 * itest_db.c - the database connections every program opens (lib/db/db.h):
 * TCP keepalives and tcp_user_timeout are set, so that a server that
 * vanished is noticed in seconds, and a connection string's own values
 * win over them.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "itest.h"
#include "unit.h"

/* The value of option key of connection c, "" when unset. */
static void option_of(PGconn *c, const char *key, char *out, size_t outlen)
{
	PQconninfoOption *opts = PQconninfo(c);
	snprintf(out, outlen, "%s", "");
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strcmp(o->keyword, key) == 0 && o->val)
			snprintf(out, outlen, "%s", o->val);
	PQconninfoFree(opts);
}

START_TEST(connections_notice_a_vanished_server)
{
	char err[256], v[64];
	PGconn *c = db_connect(getenv("TRAINYARD_DB"), err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	const char *want[][2] = {{"keepalives", "1"},
	                         {"keepalives_idle", "5"},
	                         {"keepalives_interval", "2"},
	                         {"keepalives_count", "3"},
	                         {"tcp_user_timeout", "10000"}};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		option_of(c, want[k][0], v, sizeof(v));
		ck_assert_msg(strcmp(v, want[k][1]) == 0, "%s is \"%s\", not %s", want[k][0], v,
		              want[k][1]);
	}
	/* the server sees the socket's timeout too */
	PGresult *r = PQexec(c, "SHOW tcp_user_timeout");
	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	db_close(c);
}
END_TEST

START_TEST(the_connection_string_wins)
{
	char err[256], v[64], ci[1024];
	snprintf(ci, sizeof(ci), "%s tcp_user_timeout=3000 keepalives_idle=7",
	         getenv("TRAINYARD_DB"));
	PGconn *c = db_connect(ci, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	option_of(c, "tcp_user_timeout", v, sizeof(v));
	ck_assert_str_eq(v, "3000");
	option_of(c, "keepalives_idle", v, sizeof(v));
	ck_assert_str_eq(v, "7");
	option_of(c, "keepalives_count", v, sizeof(v));
	ck_assert_str_eq(v, "3");
	db_close(c);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("db");
	TCase *tc = tcase_create("connect");
	tcase_add_test(tc, connections_notice_a_vanished_server);
	tcase_add_test(tc, the_connection_string_wins);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
