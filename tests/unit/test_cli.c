/*
 * test_cli.c - the parts of yardctl that need no server: argument
 * parsing, dispatch and usage errors, exit statuses from HTTP statuses and
 * error codes, URL building with escaping, table and error rendering.
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cli/args.h"
#include "../../cli/cli.h"
#include "../../cli/http.h"
#include "../../cli/output.h"
#include "../../cli/sbuf.h"
#include "../../cli/url.h"
#include "error.h"
#include "httpc.h"
#include "unit.h"

/* A writable argv built from string literals; own keeps the copies to free. */
typedef struct targv {
	int argc;
	char *argv[16];
	char *own[16];
} targv;

static void targv_init(targv *t, const char *const *args)
{
	t->argc = 0;
	while (args[t->argc] && t->argc < 15) {
		t->own[t->argc] = strdup(args[t->argc]);
		t->argv[t->argc] = t->own[t->argc];
		t->argc++;
	}
	t->own[t->argc] = t->argv[t->argc] = NULL;
}

static void targv_free(targv *t)
{
	for (int i = 0; t->own[i]; i++)
		free(t->own[i]);
}

/* Send stdout and stderr to /dev/null until quiet_end(); saved keeps the originals. */
static void quiet_begin(int saved[2])
{
	fflush(stdout);
	fflush(stderr);
	saved[0] = dup(STDOUT_FILENO);
	saved[1] = dup(STDERR_FILENO);
	int null = open("/dev/null", O_WRONLY);
	ck_assert_int_ge(null, 0);
	dup2(null, STDOUT_FILENO);
	dup2(null, STDERR_FILENO);
	close(null);
}

static void quiet_end(const int saved[2])
{
	fflush(stdout);
	fflush(stderr);
	dup2(saved[0], STDOUT_FILENO);
	dup2(saved[1], STDERR_FILENO);
	close(saved[0]);
	close(saved[1]);
}

/* ------------------------------------------------------------ global flags */

START_TEST(test_global_flags_anywhere)
{
	const char *args[] = {"yardctl", "--url",         "http://h:1", "tenant", "-o", "json",
	                      "list",    "--db=dbname=x", "--token",    "ty_t",   NULL};
	targv a;
	args_global g;
	char err[128];
	targv_init(&a, args);
	ck_assert_int_eq(args_take_global(&a.argc, a.argv, &g, err, sizeof(err)), 0);
	ck_assert_int_eq(a.argc, 3);
	ck_assert_str_eq(a.argv[1], "tenant");
	ck_assert_str_eq(a.argv[2], "list");
	ck_assert_ptr_null(a.argv[3]);
	ck_assert_str_eq(g.url, "http://h:1");
	ck_assert_str_eq(g.output, "json");
	ck_assert_str_eq(g.db, "dbname=x");
	ck_assert_str_eq(g.token, "ty_t");
	targv_free(&a);
}
END_TEST

START_TEST(test_global_flags_glued)
{
	const char *args[] = {"yardctl",        "-ojson", "--url=http://x",
	                      "--output=table", "whoami", NULL};
	targv a;
	args_global g;
	char err[128];
	targv_init(&a, args);
	ck_assert_int_eq(args_take_global(&a.argc, a.argv, &g, err, sizeof(err)), 0);
	ck_assert_int_eq(a.argc, 2);
	ck_assert_str_eq(a.argv[1], "whoami");
	ck_assert_str_eq(g.url, "http://x");
	ck_assert_str_eq(g.output, "table"); /* the last one wins */
	ck_assert_ptr_null(g.token);
	targv_free(&a);
}
END_TEST

START_TEST(test_global_flags_stop_at_dashdash)
{
	const char *args[] = {"yardctl", "job", "submit", "--", "--url", "x", NULL};
	targv a;
	args_global g;
	char err[128];
	targv_init(&a, args);
	ck_assert_int_eq(args_take_global(&a.argc, a.argv, &g, err, sizeof(err)), 0);
	ck_assert_int_eq(a.argc, 6);
	ck_assert_ptr_null(g.url);
	ck_assert_str_eq(a.argv[4], "--url");
	targv_free(&a);
}
END_TEST

START_TEST(test_global_flag_needs_value)
{
	const char *args[] = {"yardctl", "whoami", "--token", NULL};
	targv a;
	args_global g;
	char err[128];
	targv_init(&a, args);
	ck_assert_int_eq(args_take_global(&a.argc, a.argv, &g, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "option --token needs a value");
	targv_free(&a);
}
END_TEST

START_TEST(test_format_parse)
{
	cli_format f = CLI_FMT_TABLE;
	ck_assert_int_eq(args_format_parse("json", &f), 0);
	ck_assert_int_eq(f, CLI_FMT_JSON);
	ck_assert_int_eq(args_format_parse("table", &f), 0);
	ck_assert_int_eq(f, CLI_FMT_TABLE);
	ck_assert_int_eq(args_format_parse("yaml", &f), -1);
	ck_assert_int_eq(args_format_parse("", &f), -1);
}
END_TEST

START_TEST(test_ctx_token_flag_wiped)
{
	const char *args[] = {"yardctl", "--token", "ty_from_flag", "-o", "json", "whoami", NULL};
	targv a;
	cli_ctx ctx;
	targv_init(&a, args);
	setenv("TRAINYARD_TOKEN", "ty_from_env", 1);
	setenv("TRAINYARD_URL", "http://env:1", 1);
	ck_assert_int_eq(cli_ctx_init(&ctx, &a.argc, a.argv), CLI_OK);
	ck_assert_str_eq(ctx.token, "ty_from_flag");
	ck_assert_str_eq(a.own[2], "xxxxxxxxxxxx"); /* gone from the command line */
	ck_assert_str_eq(ctx.url, "http://env:1");
	ck_assert_int_eq(ctx.format, CLI_FMT_JSON);
	ck_assert_int_eq(a.argc, 2);
	cli_ctx_release(&ctx);
	ck_assert_ptr_null(ctx.token);
	targv_free(&a);
}
END_TEST

START_TEST(test_ctx_token_from_env)
{
	const char *args[] = {"yardctl", "whoami", NULL};
	targv a;
	cli_ctx ctx;
	targv_init(&a, args);
	setenv("TRAINYARD_TOKEN", "ty_from_env", 1);
	unsetenv("TRAINYARD_URL");
	ck_assert_int_eq(cli_ctx_init(&ctx, &a.argc, a.argv), CLI_OK);
	ck_assert_str_eq(ctx.token, "ty_from_env");
	ck_assert_str_eq(ctx.url, "https://127.0.0.1:8080");
	ck_assert_int_eq(ctx.format, CLI_FMT_TABLE);
	cli_ctx_release(&ctx);
	targv_free(&a);
}
END_TEST

START_TEST(test_ctx_bad_format)
{
	const char *args[] = {"yardctl", "-o", "yaml", "whoami", NULL};
	targv a;
	cli_ctx ctx;
	int saved[2];
	targv_init(&a, args);
	quiet_begin(saved);
	int rc = cli_ctx_init(&ctx, &a.argc, a.argv);
	quiet_end(saved);
	ck_assert_int_eq(rc, CLI_USAGE);
	cli_ctx_release(&ctx);
	targv_free(&a);
}
END_TEST

/* ------------------------------------------------------------ command options */

static const opt_spec specs[] = {
    {"tenant", true, true},
    {"all", false, false},
    {"limit", true, false},
    {NULL, false, false},
};

/* One args_parse() case: the arguments, then what must come out. */
typedef struct parse_case {
	const char *args[8];
	int rc;
	const char *err;    /* expected message when rc is -1 */
	const char *tenant; /* expected --tenant value */
	bool all;           /* expected --all */
	const char *limit;  /* expected --limit value, or NULL */
	int npos;           /* expected positional count */
	const char *pos0;   /* expected first positional */
	bool help;          /* expected help flag */
} parse_case;

static const parse_case parse_cases[] = {
    {{"--tenant", "t1"}, 0, NULL, "t1", false, NULL, 0, NULL, false},
    {{"--tenant=t2", "--all", "--limit", "5"}, 0, NULL, "t2", true, "5", 0, NULL, false},
    {{"f.json", "--tenant", "t"}, 0, NULL, "t", false, NULL, 1, "f.json", false},
    {{"-", "--tenant", "t"}, 0, NULL, "t", false, NULL, 1, "-", false},
    {{"--tenant", "t", "--", "--all"}, 0, NULL, "t", false, NULL, 1, "--all", false},
    {{"--tenant", "t", "--limit=", "x"}, 0, NULL, "t", false, "", 1, "x", false},
    {{"--bogus"}, -1, "unknown option \"--bogus\"", NULL, false, NULL, 0, NULL, false},
    {{"-x", "--tenant", "t"}, -1, "unknown option \"-x\"", NULL, false, NULL, 0, NULL, false},
    {{"--tenantx", "t"},
     -1,
     "unknown option \"--tenantx\"; did you mean --tenant?",
     NULL,
     false,
     NULL,
     0,
     NULL,
     false},
    {{"--lmit=5", "--tenant", "t"},
     -1,
     "unknown option \"--lmit=5\"; did you mean --limit?",
     NULL,
     false,
     NULL,
     0,
     NULL,
     false},
    {{"--frobnicate"}, -1, "unknown option \"--frobnicate\"", NULL, false, NULL, 0, NULL, false},
    {{"--limit"}, -1, "option --limit needs a value", NULL, false, NULL, 0, NULL, false},
    {{"--all=yes", "--tenant", "t"},
     -1,
     "option --all takes no value",
     NULL,
     false,
     NULL,
     0,
     NULL,
     false},
    {{"--all"}, -1, "option --tenant is required", NULL, false, NULL, 0, NULL, false},
    {{"a", "b", "--tenant", "t"},
     -1,
     "unexpected argument \"b\"",
     NULL,
     false,
     NULL,
     0,
     NULL,
     false},
    {{"--bogus", "-h"}, 0, NULL, NULL, false, NULL, 0, NULL, true},
    {{"--help"}, 0, NULL, NULL, false, NULL, 0, NULL, true},
    {{"--", "-h", "--tenant", "t"},
     -1,
     "unexpected argument \"--tenant\"",
     NULL,
     false,
     NULL,
     0,
     NULL,
     false},
};

/* Compare what args_parse() gave for case c. */
static void parse_case_check(const parse_case *c, const opt_result *o)
{
	ck_assert_int_eq(o->help, c->help);
	if (c->help)
		return;
	ck_assert_str_eq(o->val[0], c->tenant);
	ck_assert_int_eq(o->set[1], c->all);
	ck_assert_int_eq(o->set[2], c->limit != NULL);
	if (c->limit)
		ck_assert_str_eq(o->val[2], c->limit);
	ck_assert_int_eq(o->npos, c->npos);
	if (c->pos0)
		ck_assert_str_eq(o->pos[0], c->pos0);
}

START_TEST(test_parse_table)
{
	const parse_case *c = &parse_cases[_i];
	targv a;
	opt_result o;
	char err[128] = "";
	targv_init(&a, c->args);
	int rc = args_parse(specs, 0, 1, a.argc, a.argv, &o, err, sizeof(err));
	ck_assert_msg(rc == c->rc, "case %d: rc %d, want %d (%s)", _i, rc, c->rc, err);
	if (rc)
		ck_assert_str_eq(err, c->err);
	else
		parse_case_check(c, &o);
	targv_free(&a);
}
END_TEST

START_TEST(test_parse_positional_counts)
{
	const char *args[] = {"a", "b", NULL};
	targv a;
	opt_result o;
	char err[128];
	targv_init(&a, args);
	ck_assert_int_eq(args_parse(NULL, 2, 2, 2, a.argv, &o, err, sizeof(err)), 0);
	ck_assert_str_eq(o.pos[1], "b");
	ck_assert_int_eq(args_parse(NULL, 3, 3, 2, a.argv, &o, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "missing argument");
	ck_assert_int_eq(args_parse(NULL, 0, 1, 2, a.argv, &o, err, sizeof(err)), -1);
	ck_assert_int_eq(args_parse(NULL, 0, 0, 0, a.argv, &o, err, sizeof(err)), 0);
	targv_free(&a);
}
END_TEST

START_TEST(test_parse_repeated_option)
{
	static const opt_spec rep_specs[] = {
	    {"mask-pattern", true, false},
	    {"all", false, false},
	    {"limit", true, false},
	    {NULL, false, false},
	};
	const char *args[] = {"--mask-pattern",       "a=1", "--all", "--limit=5",
	                      "--mask-pattern=b=2=3", "x",   NULL};
	targv a;
	opt_result o;
	char err[128];
	targv_init(&a, args);
	ck_assert_int_eq(args_parse(rep_specs, 1, 1, a.argc, a.argv, &o, err, sizeof(err)), 0);
	ck_assert_str_eq(o.val[0], "b=2=3"); /* val[] keeps the last */
	ck_assert_int_eq(o.ngiven, 3);       /* --all takes no value: not listed */
	ck_assert_int_eq(o.given_opt[0], 0);
	ck_assert_str_eq(o.given_val[0], "a=1");
	ck_assert_int_eq(o.given_opt[1], 2);
	ck_assert_str_eq(o.given_val[1], "5");
	ck_assert_int_eq(o.given_opt[2], 0);
	ck_assert_str_eq(o.given_val[2], "b=2=3");
	ck_assert_str_eq(o.pos[0], "x");
	targv_free(&a);
}
END_TEST

START_TEST(test_parse_too_many_values)
{
	static const opt_spec one[] = {{"p", true, false}, {NULL, false, false}};
	char *argv[ARGS_MAX_GIVEN + 2];
	char arg[] = "--p=v";
	opt_result o;
	char err[128];
	for (int i = 0; i < ARGS_MAX_GIVEN + 1; i++)
		argv[i] = arg;
	argv[ARGS_MAX_GIVEN + 1] = NULL;
	ck_assert_int_eq(args_parse(one, 0, 0, ARGS_MAX_GIVEN, argv, &o, err, sizeof(err)), 0);
	ck_assert_int_eq(o.ngiven, ARGS_MAX_GIVEN);
	ck_assert_int_eq(args_parse(one, 0, 0, ARGS_MAX_GIVEN + 1, argv, &o, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "more than 64 options with values");
}
END_TEST

START_TEST(test_pair)
{
	size_t n;
	const char *v;
	ck_assert_int_eq(args_pair("employee_id=EMP-[0-9]{6}", &n, &v), 0);
	ck_assert_uint_eq(n, 11);
	ck_assert_str_eq(v, "EMP-[0-9]{6}");
	ck_assert_int_eq(args_pair("k=a=b", &n, &v), 0); /* split at the first '=' */
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v, "a=b");
	ck_assert_int_eq(args_pair("k=", &n, &v), 0);
	ck_assert_str_eq(v, "");
	ck_assert_int_eq(args_pair("noequals", &n, &v), -1);
	ck_assert_int_eq(args_pair("=x", &n, &v), -1);
	ck_assert_int_eq(args_pair("", &n, &v), -1);
}
END_TEST

START_TEST(test_numbers)
{
	long long v;
	double d;
	ck_assert_int_eq(args_int("42", 0, 100, &v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(args_int("-3", -5, 5, &v), 0);
	ck_assert_int_eq(v, -3);
	ck_assert_int_eq(args_int("101", 0, 100, &v), -1);
	ck_assert_int_eq(args_int("", 0, 100, &v), -1);
	ck_assert_int_eq(args_int("4x", 0, 100, &v), -1);
	ck_assert_int_eq(args_int("99999999999999999999", 0, 100, &v), -1);
	ck_assert_int_eq(args_double("2.5", &d), 0);
	ck_assert(d == 2.5);
	ck_assert_int_eq(args_double("1e3", &d), 0);
	ck_assert(d == 1000.0);
	ck_assert_int_eq(args_double("nan", &d), -1);
	ck_assert_int_eq(args_double("inf", &d), -1);
	ck_assert_int_eq(args_double("1,5", &d), -1);
	ck_assert_int_eq(args_double("", &d), -1);
}
END_TEST

START_TEST(test_distance)
{
	ck_assert_uint_eq(args_distance("job", "job"), 0);
	ck_assert_uint_eq(args_distance("jbo", "job"), 1); /* two neighbours swapped */
	ck_assert_uint_eq(args_distance("jo", "job"), 1);
	ck_assert_uint_eq(args_distance("jobs", "job"), 1);
	ck_assert_uint_eq(args_distance("jab", "job"), 1);
	ck_assert_uint_eq(args_distance("", "job"), 3);
	ck_assert_uint_eq(args_distance("tenant", ""), 6);
	ck_assert_uint_eq(args_distance("checkpiont", "checkpoint"), 1);
	ck_assert_uint_eq(args_distance("kitten", "sitting"), 3);
	char longer[ARGS_NEAR_LEN + 2];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	ck_assert_uint_eq(args_distance(longer, "a"), SIZE_MAX);
}
END_TEST

/* The nearest of names to word, offered in order. */
static const char *nearest(const char *word, const char *const *names)
{
	args_near n;
	args_near_init(&n, word);
	for (; *names; names++)
		args_near_offer(&n, *names);
	return n.best;
}

START_TEST(test_nearest)
{
	static const char *const top[] = {"db",  "tenant",  "quota", "token", "member",
	                                  "job", "webhook", "alert", "keys",  NULL};
	ck_assert_str_eq(nearest("jbo", top), "job");
	ck_assert_str_eq(nearest("tenants", top), "tenant");
	ck_assert_str_eq(nearest("webhooks", top), "webhook");
	ck_assert_str_eq(nearest("qouta", top), "quota");
	ck_assert_str_eq(nearest("key", top), "keys");
	ck_assert_ptr_null(nearest("frobnicate", top));
	ck_assert_ptr_null(nearest("x", top));    /* too short to be a typo of anything */
	ck_assert_ptr_null(nearest("jjbb", top)); /* 2 edits: too many for short words */
	ck_assert_ptr_null(nearest("", top));
	static const char *const tied[] = {"tokan", "token", NULL};
	ck_assert_str_eq(nearest("tokin", tied), "tokan"); /* the first of the nearest */
}
END_TEST

/* ------------------------------------------------------------ dispatch */

/* A dispatch case: the command line after "yardctl" and the exit status. */
typedef struct dispatch_case {
	const char *args[8];
	int rc;
	const char *cmd; /* ctx.cmd afterwards, or NULL */
} dispatch_case;

static const dispatch_case dispatch_cases[] = {
    {{"--help"}, CLI_OK, "yardctl"},
    {{"-h"}, CLI_OK, "yardctl"},
    {{NULL}, CLI_USAGE, "yardctl"},
    {{"frobnicate"}, CLI_USAGE, "yardctl"},
    {{"tenant"}, CLI_USAGE, "yardctl tenant"},
    {{"tenant", "--help"}, CLI_OK, "yardctl tenant"},
    {{"tenant", "drop"}, CLI_USAGE, "yardctl tenant"},
    {{"tenant", "create", "--help"}, CLI_OK, "yardctl tenant create"},
    {{"tenant", "create", "-h"}, CLI_OK, "yardctl tenant create"},
    {{"tenant", "create"}, CLI_USAGE, "yardctl tenant create"},
    {{"tenant", "list", "--bogus"}, CLI_USAGE, "yardctl tenant list"},
    {{"tenant", "show", "a", "b"}, CLI_USAGE, NULL},
    {{"quota", "set", "t"}, CLI_USAGE, "yardctl quota set"},
    {{"quota", "set", "t", "--max-gpus", "many"}, CLI_USAGE, NULL},
    {{"quota", "set", "t", "--weight", "heavy"}, CLI_USAGE, NULL},
    {{"user", "create", "u", "--platform-role", "owner"}, CLI_USAGE, NULL},
    {{"token", "create", "u", "--expires-days", "0"}, CLI_USAGE, NULL},
    {{"token", "revoke", "--help"}, CLI_OK, "yardctl token revoke"},
    {{"member", "grant", "t", "u", "boss"}, CLI_USAGE, NULL},
    {{"member", "revoke", "t"}, CLI_USAGE, NULL},
    {{"job", "list"}, CLI_USAGE, NULL},
    {{"job", "list", "--tenant", "t", "--state", "sleeping"}, CLI_USAGE, NULL},
    {{"job", "list", "--tenant", "t", "--limit", "0"}, CLI_USAGE, NULL},
    {{"job", "list", "--tenant", "t", "--limit", "201"}, CLI_USAGE, NULL},
    {{"job", "list", "--tenant", "t", "--limit", "200"}, CLI_SERVER, NULL},
    {{"job", "metrics", "j", "--after", "-1"}, CLI_USAGE, NULL},
    {{"job", "metrics", "j", "--after", "1000000000"}, CLI_USAGE, NULL},
    {{"job", "metrics", "j", "--after", "999999999", "--all"}, CLI_SERVER, NULL},
    {{"jbo", "list"}, CLI_USAGE, "yardctl"},
    {{"alert", "list", "t"}, CLI_SERVER, "yardctl alert list"},
    {{"alert", "list", "t", "--job", "j"}, CLI_SERVER, NULL},
    {{"alert", "list", "t", "--job", ""}, CLI_USAGE, NULL},
    {{"webhook", "create", "t"}, CLI_USAGE, "yardctl webhook create"},
    {{"webhook", "create", "t", "https://example.org/h", "--kind", "stalled", "--allow-private"},
     CLI_SERVER,
     NULL},
    {{"webhook", "creat", "t"}, CLI_USAGE, "yardctl webhook"},
    {{"keys", "shred", "t"}, CLI_USAGE, "yardctl keys shred"},
    {{"keys", "shred", "t", "--yes"}, CLI_SERVER, NULL},
    {{"job", "lsit"}, CLI_USAGE, "yardctl job"},
    {{"job", "submit", "f.json"}, CLI_USAGE, NULL},
    {{"job", "submit", "/nonexistent/spec.json", "--tenant", "t"}, CLI_USAGE, NULL},
    {{"job", "submit", "-", "--tenant", "t", "--idempotency-key", "a\nb"}, CLI_USAGE, NULL},
    {{"job", "events", "--help"}, CLI_OK, "yardctl job events"},
    {{"db", "--help"}, CLI_OK, "yardctl db"},
    {{"db", "migrate", "extra"}, CLI_USAGE, NULL},
    {{"bootstrap", "--name"}, CLI_USAGE, NULL},
    {{"bootstrap", "--help"}, CLI_OK, "yardctl bootstrap"},
    {{"whoami", "--help"}, CLI_OK, "yardctl whoami"},
    {{"whoami", "extra"}, CLI_USAGE, NULL},
    {{"dataset"}, CLI_USAGE, "yardctl dataset"},
    {{"dataset", "--help"}, CLI_OK, "yardctl dataset"},
    {{"dataset", "upload", "--help"}, CLI_OK, "yardctl dataset upload"},
    {{"dataset", "list"}, CLI_USAGE, "yardctl dataset list"},
    {{"dataset", "show", "t"}, CLI_USAGE, NULL},
    {{"dataset", "create", "t", "d"}, CLI_USAGE, "yardctl dataset create"},
    {{"dataset", "create", "t", "d", "--classification=secret"}, CLI_USAGE, NULL},
    {{"dataset", "create", "t", "d", "--classification=public", "--mask-pattern=noeq"},
     CLI_USAGE,
     NULL},
    {{"dataset", "create", "t", "d", "--classification=public", "--mask-pattern==x"},
     CLI_USAGE,
     NULL},
    {{"dataset", "create", "t", "d", "--classification=public", "--mask-pattern=x="},
     CLI_USAGE,
     NULL},
    {{"dataset", "create", "t", "d", "--classification=public", "--mask-pattern=a=1",
      "--mask-pattern=b"},
     CLI_USAGE,
     NULL},
    /* a command line that parses goes on to the (absent) server */
    {{"dataset", "create", "t", "d", "--classification=restricted", "--mask-pattern=a=1",
      "--mask-pattern=b=c=d"},
     CLI_SERVER,
     NULL},
    {{"dataset", "upload", "t", "d", "/dev/null"}, CLI_USAGE, NULL},
    {{"dataset", "upload", "t", "d", "/dev/null", "--format=csv"}, CLI_USAGE, NULL},
    {{"dataset", "upload", "t", "d", "/dev/null", "--format=tokens", "--no-mask"}, CLI_USAGE, NULL},
    {{"dataset", "upload", "t", "d", "/nonexistent/data.txt", "--format=text"}, CLI_USAGE, NULL},
    {{"dataset", "upload", "t", "d", "/dev/null", "--format=text", "--no-mask"}, CLI_SERVER, NULL},
    {{"dataset", "exempt", "t", "d"}, CLI_USAGE, NULL},
    {{"dataset", "exempt", "t", "d", "--reason="}, CLI_USAGE, NULL},
};

START_TEST(test_dispatch_table)
{
	const dispatch_case *c = &dispatch_cases[_i];
	targv a;
	cli_ctx ctx = {.url = "http://127.0.0.1:1", .db = "host=127.0.0.1 port=1", .page_max = 200};
	snprintf(ctx.cmd, sizeof(ctx.cmd), "yardctl");
	targv_init(&a, c->args);
	int saved[2];
	quiet_begin(saved); /* only the status and ctx.cmd matter, not the usage texts */
	int rc = cli_main(&ctx, a.argc, a.argv);
	quiet_end(saved);
	targv_free(&a);
	ck_assert_msg(rc == c->rc, "case %d (%s): exit %d, want %d", _i,
	              c->args[0] ? c->args[0] : "-", rc, c->rc);
	if (c->cmd)
		ck_assert_str_eq(ctx.cmd, c->cmd);
}
END_TEST

START_TEST(test_usage_lists_every_leaf)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cli_usage_global(f);
	fclose(f);
	const char *want[] = {"  bootstrap [--name NAME]\n",
	                      "  db migrate\n",
	                      "  db status\n",
	                      "  tenant create NAME",
	                      "  tenant list\n",
	                      "  tenant show NAME|ID\n",
	                      "  quota get TENANT\n",
	                      "  quota set TENANT",
	                      "  user create NAME",
	                      "  user list\n",
	                      "  token create USER",
	                      "  token list USER\n",
	                      "  token revoke TOKEN_ID\n",
	                      "  member grant TENANT USER ROLE\n",
	                      "  member revoke TENANT USER\n",
	                      "  member list TENANT\n",
	                      "  job submit FILE --tenant TENANT",
	                      "  job list --tenant TENANT",
	                      "  job show JOB_ID\n",
	                      "  job cancel JOB_ID\n",
	                      "  job events JOB_ID\n",
	                      "  dataset create TENANT NAME --classification C",
	                      "  dataset list TENANT\n",
	                      "  dataset show TENANT NAME\n",
	                      "  dataset upload TENANT NAME FILE --format tokens|text",
	                      "  dataset exempt TENANT NAME --reason TEXT\n",
	                      "  whoami\n",
	                      "  5  server or connection error",
	                      "--token TOKEN"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(text, want[i]), "usage lacks \"%s\"", want[i]);
	free(text);
}
END_TEST

/* ------------------------------------------------------------ rows that are one API call */

/* Every leaf of the command tree that is one API call, with its words ("tenant show"). */
typedef struct call_row {
	char words[64];
	const cli_command *row;
} call_row;

#define CALL_ROWS_MAX 128

/* Walk the rows_of a group below prefix. OUT: rows[*n..]; RET: how many leaves it saw. */
static int call_rows_walk(const cli_command *rows_of, const char *prefix, call_row *rows, int *n)
{
	int leaves = 0;
	for (const cli_command *c = rows_of; c->name; c++) {
		char words[64];
		snprintf(words, sizeof(words), "%s%s%s", prefix, *prefix ? " " : "", c->name);
		ck_assert_msg((c->run != NULL) + (c->subs != NULL) + (c->call != NULL) == 1,
		              "\"%s\": a row has one of run, subs and call", words);
		if (c->subs) {
			leaves += call_rows_walk(c->subs, words, rows, n);
			continue;
		}
		leaves++;
		if (!c->call)
			continue;
		ck_assert_int_lt(*n, CALL_ROWS_MAX);
		snprintf(rows[*n].words, sizeof(rows[*n].words), "%s", words);
		rows[(*n)++].row = c;
	}
	return leaves;
}

static int call_rows(call_row *rows)
{
	int n = 0;
	call_rows_walk(cli_top_commands, "", rows, &n);
	return n;
}

/* RET: how many times needle occurs in s. */
static int count_of(const char *s, const char *needle)
{
	int k = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		k++;
	return k;
}

/* RET: the words of a synopsis (split at spaces). */
static int words_of(const char *s)
{
	int k = 0;
	for (const char *p = s; *p; p++)
		if (*p != ' ' && (p == s || p[-1] == ' '))
			k++;
	return k;
}

/*
 * Each call row fills every "{}" of its route with one positional
 * argument, and its synopsis names exactly those arguments: no option (a
 * call row takes none) and no other word.
 */
START_TEST(test_call_rows_agree)
{
	call_row rows[CALL_ROWS_MAX];
	int n = call_rows(rows);
	ck_assert_int_ge(n, 27);
	for (int i = 0; i < n; i++) {
		const cli_call *call = rows[i].row->call;
		const char *w = rows[i].words, *syn = rows[i].row->synopsis;
		ck_assert_msg(call->route && call->route[0] == '/', "%s: route", w);
		ck_assert_msg(count_of(call->route, "{}") == call->npos,
		              "%s: route %s has %d \"{}\" for %d arguments", w, call->route,
		              count_of(call->route, "{}"), call->npos);
		ck_assert_msg(words_of(syn) == call->npos, "%s: synopsis \"%s\" for %d arguments",
		              w, syn, call->npos);
		ck_assert_msg(!strchr(syn, '-') && !strchr(syn, '['),
		              "%s: synopsis \"%s\" has options", w, syn);
		ck_assert_msg(call->cols && call->cols[0].header, "%s: no columns", w);
		ck_assert_msg(call->kind != CLI_CALL_LIST || strcmp(call->method, "GET") == 0,
		              "%s: a list is read with GET", w);
		ck_assert_msg(strcmp(call->method, "GET") == 0 ||
		                  strcmp(call->method, "POST") == 0 ||
		                  strcmp(call->method, "DELETE") == 0,
		              "%s: method %s", w, call->method);
		ck_assert_msg((call->kind == CLI_CALL_DO) == (call->done != NULL),
		              "%s: done is for DO rows alone", w);
		ck_assert_msg(call->kind == CLI_CALL_LIST || !call->all, "%s: all is for lists", w);
	}
}
END_TEST

/* Run yardctl WORDS ARGS...; OUT: what it wrote on stdout (caller frees). RET: its status. */
static int run_captured(const char *words, const char *const *args, char **out)
{
	const char *argv_s[16];
	char copy[64];
	int argc = 0;
	snprintf(copy, sizeof(copy), "%s", words);
	for (char *save, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
		argv_s[argc++] = t;
	for (int i = 0; args[i]; i++)
		argv_s[argc++] = args[i];
	argv_s[argc] = NULL;
	targv a;
	targv_init(&a, argv_s);
	cli_ctx ctx = {.url = "http://127.0.0.1:1", .db = "host=127.0.0.1 port=1"};
	snprintf(ctx.cmd, sizeof(ctx.cmd), "yardctl");
	FILE *tmp = tmpfile();
	ck_assert_ptr_nonnull(tmp);
	int saved[2];
	quiet_begin(saved);
	dup2(fileno(tmp), STDOUT_FILENO);
	int rc = cli_main(&ctx, a.argc, a.argv);
	quiet_end(saved);
	targv_free(&a);
	long len = ftell(tmp);
	ck_assert_int_ge(len, 0);
	*out = calloc(1, (size_t)len + 1);
	rewind(tmp);
	ck_assert_uint_eq(fread(*out, 1, (size_t)len, tmp), (size_t)len);
	fclose(tmp);
	return rc;
}

/*
 * Every call row as a user meets it: --help prints its usage from the row
 * (and the program's usage lists it), one argument too few or too many
 * and an empty one are usage errors, and the right count goes on to the
 * (absent) server.
 */
START_TEST(test_call_rows_run)
{
	call_row rows[CALL_ROWS_MAX];
	int n = call_rows(rows);
	char *global = NULL;
	size_t glen = 0;
	FILE *f = open_memstream(&global, &glen);
	cli_usage_global(f);
	fclose(f);
	for (int i = 0; i < n; i++) {
		const cli_command *row = rows[i].row;
		const char *w = rows[i].words;
		int npos = row->call->npos;
		char *want, *out;
		ck_assert_int_gt(asprintf(&want, "  %s%s%s\n      %s\n", w,
		                          *row->synopsis ? " " : "", row->synopsis, row->summary),
		                 0);
		ck_assert_msg(strstr(global, want), "yardctl --help lacks \"%s\"", want);
		free(want);

		const char *help[] = {"--help", NULL};
		ck_assert_int_eq(run_captured(w, help, &out), CLI_OK);
		ck_assert_int_gt(asprintf(&want, "usage: yardctl %s%s%s\n\n%s\n", w,
		                          *row->synopsis ? " " : "", row->synopsis, row->summary),
		                 0);
		ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s --help: \"%s\"", w, out);
		free(want);
		free(out);

		const char *args[ARGS_MAX_POS + 2] = {NULL};
		for (int k = 0; k < npos; k++)
			args[k] = "x";
		ck_assert_msg(run_captured(w, args, &out) == CLI_SERVER, "%s with %d arguments", w,
		              npos);
		free(out);
		args[npos] = "extra";
		ck_assert_msg(run_captured(w, args, &out) == CLI_USAGE, "%s with one too many", w);
		free(out);
		args[npos] = NULL;
		if (npos == 0)
			continue;
		args[npos - 1] = NULL;
		ck_assert_msg(run_captured(w, args, &out) == CLI_USAGE, "%s with one too few", w);
		free(out);
		args[npos - 1] = "";
		ck_assert_msg(run_captured(w, args, &out) == CLI_USAGE, "%s with an empty one", w);
		free(out);
	}
	free(global);
}
END_TEST

/* ------------------------------------------------------------ exit statuses */

START_TEST(test_exit_from_status)
{
	static const struct {
		long status;
		int rc;
	} rows[] = {
	    {0, CLI_SERVER},      {200, CLI_OK},      {201, CLI_OK},      {204, CLI_OK},
	    {302, CLI_SERVER},    {400, CLI_REFUSED}, {401, CLI_AUTH},    {403, CLI_AUTH},
	    {404, CLI_NOT_FOUND}, {405, CLI_REFUSED}, {409, CLI_REFUSED}, {413, CLI_REFUSED},
	    {415, CLI_REFUSED},   {422, CLI_REFUSED}, {429, CLI_REFUSED}, {500, CLI_SERVER},
	    {502, CLI_SERVER},    {503, CLI_SERVER},  {100, CLI_SERVER},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		ck_assert_msg(http_exit_status(rows[i].status) == rows[i].rc, "HTTP %ld",
		              rows[i].status);
}
END_TEST

START_TEST(test_exit_from_err)
{
	ck_assert_int_eq(http_exit_from_err(ERR_OK), CLI_OK);
	ck_assert_int_eq(http_exit_from_err(ERR_ADMIN_EXISTS), CLI_REFUSED);
	ck_assert_int_eq(http_exit_from_err(ERR_VALIDATION_FAILED), CLI_REFUSED);
	ck_assert_int_eq(http_exit_from_err(ERR_RATE_LIMITED), CLI_REFUSED);
	ck_assert_int_eq(http_exit_from_err(ERR_TOKEN_REVOKED), CLI_AUTH);
	ck_assert_int_eq(http_exit_from_err(ERR_GRANT_NOT_ALLOWED), CLI_AUTH);
	ck_assert_int_eq(http_exit_from_err(ERR_JOB_NOT_FOUND), CLI_NOT_FOUND);
	ck_assert_int_eq(http_exit_from_err(ERR_DB_UNAVAILABLE), CLI_SERVER);
	ck_assert_int_eq(http_exit_from_err(ERR_SCHEMA_TOO_NEW), CLI_SERVER);
	ck_assert_int_eq(http_exit_from_err(ERR_INTERNAL), CLI_SERVER);
	/* every row of the table agrees with its HTTP status */
	for (int e = 1; e < ERR__COUNT; e++)
		ck_assert_int_eq(http_exit_from_err((err_code)e),
		                 http_exit_status(err_info((err_code)e)->status));
}
END_TEST

START_TEST(test_header_value_ok)
{
	char long_key[1100];
	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	ck_assert(httpc_header_value_ok("ty_abc-DEF_123"));
	ck_assert(httpc_header_value_ok("key with spaces"));
	ck_assert(!httpc_header_value_ok(""));
	ck_assert(!httpc_header_value_ok("a\r\nX-Evil: 1"));
	ck_assert(!httpc_header_value_ok("tab\there"));
	ck_assert(!httpc_header_value_ok("caf\xc3\xa9"));
	ck_assert(!httpc_header_value_ok(long_key));
}
END_TEST

/* ------------------------------------------------------------ URLs */

START_TEST(test_url_path_escapes)
{
	char *p = URL_PATH("/v1/tenants/{}/members/{}", "a b/c?d&e#f", "caf\xc3\xa9");
	ck_assert_str_eq(p, "/v1/tenants/a%20b%2Fc%3Fd%26e%23f/members/caf%C3%A9");
	free(p);
	p = URL_PATH("/v1/jobs/{}/cancel", "..");
	ck_assert_str_eq(p,
	                 "/v1/jobs/../cancel"); /* '.' is unreserved; the server sees one segment */
	free(p);
	p = URL_PATH("/v1/jobs/{}", "3f2a-Z_9.~");
	ck_assert_str_eq(p, "/v1/jobs/3f2a-Z_9.~");
	free(p);
	p = URL_FIXED("/v1/tenants");
	ck_assert_str_eq(p, "/v1/tenants");
	free(p);
}
END_TEST

START_TEST(test_url_path_refuses)
{
	const char *one[] = {"a"}, *empty[] = {""}, *two[] = {"a", "b"};
	ck_assert_ptr_null(url_path("/v1/{}/{}", one, 1));
	ck_assert_ptr_null(url_path("/v1/{}", two, 2));
	ck_assert_ptr_null(url_path("/v1/{}", empty, 1));
	ck_assert_ptr_null(url_path("/v1/{}", NULL, 0));
}
END_TEST

START_TEST(test_url_query)
{
	sbuf b;
	sbuf_init(&b, URL_MAX);
	ck_assert_int_eq(sbuf_adds(&b, "/v1/tenants/t/jobs"), 0);
	ck_assert_int_eq(url_query_add(&b, "state", NULL), 0);
	ck_assert_str_eq(b.buf, "/v1/tenants/t/jobs");
	ck_assert_int_eq(url_query_add(&b, "state", "queued"), 0);
	ck_assert_int_eq(url_query_add(&b, "cursor", "a=b&c d"), 0);
	ck_assert_str_eq(b.buf, "/v1/tenants/t/jobs?state=queued&cursor=a%3Db%26c%20d");
	sbuf_release(&b);
}
END_TEST

START_TEST(test_url_join)
{
	char *u = url_join("http://h:8080", "/v1/whoami");
	ck_assert_str_eq(u, "http://h:8080/v1/whoami");
	free(u);
	u = url_join("http://h:8080//", "/v1/whoami");
	ck_assert_str_eq(u, "http://h:8080/v1/whoami");
	free(u);
	u = url_join("https://h/prefix/", "/v1/tenants");
	ck_assert_str_eq(u, "https://h/prefix/v1/tenants");
	free(u);
}
END_TEST

START_TEST(test_sbuf_cap)
{
	sbuf b;
	sbuf_init(&b, 8);
	ck_assert_str_eq(b.buf, "");
	ck_assert_int_eq(sbuf_adds(&b, "abcd"), 0);
	ck_assert_int_eq(sbuf_addf(&b, "%d", 123), 0);
	ck_assert_int_eq(sbuf_adds(&b, "xy"), -1); /* would be 9 bytes */
	ck_assert_str_eq(b.buf, "abcd123");
	ck_assert_int_eq(sbuf_adds(&b, "z"), 0);
	ck_assert_uint_eq(b.len, 8);
	char *s = sbuf_detach(&b);
	ck_assert_str_eq(s, "abcd123z");
	ck_assert_str_eq(b.buf, "");
	free(s);
	sbuf_release_wipe(&b);
}
END_TEST

/* ------------------------------------------------------------ output */

/* RET: what fn printed into a memory stream (caller frees). */
static char *capture_table(const table *t)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	table_print(t, f);
	fclose(f);
	return text;
}

START_TEST(test_table_aligned)
{
	table t;
	const char *h[] = {"ID", "NAME", "STATE"};
	const char *r1[] = {"1", "tiny", "queued"};
	const char *r2[] = {"22", NULL, "running"};
	const char *r3[] = {"333", "caf\xc3\xa9", "x"};
	ck_assert_int_eq(table_init(&t, 3, h), 0);
	ck_assert_int_eq(table_add(&t, r1), 0);
	ck_assert_int_eq(table_add(&t, r2), 0);
	ck_assert_int_eq(table_add(&t, r3), 0);
	char *out = capture_table(&t);
	ck_assert_str_eq(out, "ID   NAME  STATE\n"
	                      "1    tiny  queued\n"
	                      "22   -     running\n"
	                      "333  caf\xc3\xa9  x\n");
	free(out);
	table_release(&t);
}
END_TEST

START_TEST(test_table_sanitises_and_grows)
{
	table t;
	const char *evil[] = {"a\x1b[2Jb", "tab\there\n"};
	ck_assert_int_eq(table_init(&t, 2, NULL), 0);
	ck_assert_int_eq(table_add(&t, evil), 0);
	for (int i = 0; i < 100; i++) {
		const char *row[] = {"k", "v"};
		ck_assert_int_eq(table_add(&t, row), 0);
	}
	ck_assert_uint_eq(t.nrows, 101);
	char *out = capture_table(&t);
	ck_assert(strncmp(out, "a?[2Jb  tab?here?\nk       v\n", 28) == 0);
	free(out);
	table_release(&t);
}
END_TEST

START_TEST(test_table_from_json)
{
	json_t *items =
	    json_loads("[{\"id\":\"j1\",\"n\":3,\"w\":2.5,\"ok\":true,\"u\":{\"name\":\"al\"},"
	               "\"s\":\"\"},{\"id\":\"j2\",\"n\":null,\"u\":{}}]",
	               0, NULL);
	const out_col cols[] = {{"ID", "id"},       {"N", "n"}, {"W", "w"},  {"OK", "ok"},
	                        {"USER", "u.name"}, {"S", "s"}, {NULL, NULL}};
	const char *h[] = {"ID", "N", "W", "OK", "USER", "S"};
	table t;
	ck_assert_ptr_nonnull(items);
	ck_assert_int_eq(table_init(&t, 6, h), 0);
	ck_assert_int_eq(table_add_items(&t, items, cols), 0);
	char *out = capture_table(&t);
	ck_assert_str_eq(out, "ID  N  W    OK    USER  S\n"
	                      "j1  3  2.5  true  al    -\n"
	                      "j2  -  -    -     -     -\n");
	free(out);
	table_release(&t);
	json_decref(items);
}
END_TEST

START_TEST(test_cell_and_lookup)
{
	json_t *o =
	    json_loads("{\"a\":{\"b\":{\"c\":\"deep\"}},\"arr\":[1,\"x\"],\"f\":false}", 0, NULL);
	ck_assert_str_eq(json_string_value(out_lookup(o, "a.b.c")), "deep");
	ck_assert_ptr_null(out_lookup(o, "a.x.c"));
	ck_assert_ptr_null(out_lookup(o, "arr.0"));
	char *c = out_cell(out_lookup(o, "arr"));
	ck_assert_str_eq(c, "[1,\"x\"]");
	free(c);
	c = out_cell(out_lookup(o, "f"));
	ck_assert_str_eq(c, "false");
	free(c);
	c = out_cell(NULL);
	ck_assert_str_eq(c, "-");
	free(c);
	json_decref(o);
}
END_TEST

/* RET: what output_problem() printed for body (JSON text or NULL). */
static char *capture_problem(const char *body, long status)
{
	char *text = NULL;
	size_t len = 0;
	json_t *j = body ? json_loads(body, 0, NULL) : NULL;
	FILE *f = open_memstream(&text, &len);
	output_problem(f, j, status);
	fclose(f);
	json_decref(j);
	return text;
}

START_TEST(test_problem_rendering)
{
	char *out = capture_problem(
	    "{\"type\":\"urn:trainyard:error:validation_failed\",\"title\":\"t\",\"status\":422,"
	    "\"detail\":\"2 field(s) failed validation\",\"code\":\"validation_failed\","
	    "\"request_id\":\"r1\",\"errors\":[{\"pointer\":\"/parallel/global_batch\","
	    "\"code\":\"batch_mismatch\",\"message\":\"global_batch 7 is not a multiple\"},"
	    "{\"pointer\":\"/name\",\"code\":\"required\",\"message\":\"name is required\"}]}",
	    422);
	ck_assert_str_eq(out, "yardctl: 2 field(s) failed validation (validation_failed)\n"
	                      "  /parallel/global_batch: global_batch 7 is not a multiple "
	                      "(batch_mismatch)\n"
	                      "  /name: name is required (required)\n");
	free(out);
	out = capture_problem("{\"title\":\"conflict\",\"code\":\"tenant_exists\"}", 409);
	ck_assert_str_eq(out, "yardctl: conflict (tenant_exists)\n");
	free(out);
	out = capture_problem("{\"detail\":\"odd\\u001b[0m\"}", 500);
	ck_assert_str_eq(out, "yardctl: odd?[0m (HTTP 500)\n");
	free(out);
	out = capture_problem(NULL, 502);
	ck_assert_str_eq(out, "yardctl: the server answered HTTP 502\n");
	free(out);
	out = capture_problem("[1,2]", 400);
	ck_assert_str_eq(out, "yardctl: the server answered HTTP 400\n");
	free(out);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *t = tcase_create("args");
	tcase_add_test(t, test_global_flags_anywhere);
	tcase_add_test(t, test_global_flags_glued);
	tcase_add_test(t, test_global_flags_stop_at_dashdash);
	tcase_add_test(t, test_global_flag_needs_value);
	tcase_add_test(t, test_format_parse);
	tcase_add_test(t, test_ctx_token_flag_wiped);
	tcase_add_test(t, test_ctx_token_from_env);
	tcase_add_test(t, test_ctx_bad_format);
	tcase_add_loop_test(t, test_parse_table, 0,
	                    (int)(sizeof(parse_cases) / sizeof(parse_cases[0])));
	tcase_add_test(t, test_parse_positional_counts);
	tcase_add_test(t, test_parse_repeated_option);
	tcase_add_test(t, test_parse_too_many_values);
	tcase_add_test(t, test_pair);
	tcase_add_test(t, test_numbers);
	tcase_add_test(t, test_distance);
	tcase_add_test(t, test_nearest);
	suite_add_tcase(s, t);

	t = tcase_create("dispatch");
	tcase_add_loop_test(t, test_dispatch_table, 0,
	                    (int)(sizeof(dispatch_cases) / sizeof(dispatch_cases[0])));
	tcase_add_test(t, test_usage_lists_every_leaf);
	tcase_add_test(t, test_call_rows_agree);
	tcase_add_test(t, test_call_rows_run);
	suite_add_tcase(s, t);

	t = tcase_create("exit");
	tcase_add_test(t, test_exit_from_status);
	tcase_add_test(t, test_exit_from_err);
	tcase_add_test(t, test_header_value_ok);
	suite_add_tcase(s, t);

	t = tcase_create("url");
	tcase_add_test(t, test_url_path_escapes);
	tcase_add_test(t, test_url_path_refuses);
	tcase_add_test(t, test_url_query);
	tcase_add_test(t, test_url_join);
	tcase_add_test(t, test_sbuf_cap);
	suite_add_tcase(s, t);

	t = tcase_create("output");
	tcase_add_test(t, test_table_aligned);
	tcase_add_test(t, test_table_sanitises_and_grows);
	tcase_add_test(t, test_table_from_json);
	tcase_add_test(t, test_cell_and_lookup);
	tcase_add_test(t, test_problem_rendering);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
