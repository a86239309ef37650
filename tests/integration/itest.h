/*
 * itest.h - helpers for the C integration tests: HTTP calls to the API
 * under test (libcurl), direct SQL for setting up and inspecting state
 * (libpq), and the shared platform admin token.
 *
 * The tests run against the stack tests/run starts: TRAINYARD_URL,
 * TRAINYARD_DB and TRAINYARD_VAR come from its stack.env.
 */
#ifndef TY_ITEST_H
#define TY_ITEST_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>

typedef struct http_resp {
	long status;
	json_t *body; /* parsed body, or NULL (empty or not JSON) */
	char request_id[80];
	char retry_after[16];
	char content_type[80];
	bool replayed;
	double seconds; /* total time of the exchange */
} http_resp;

/*
 * One request. token may be NULL; body (JSON text) may be NULL; extra is an
 * optional NULL-terminated list of raw header lines. Caller releases resp.
 */
void http_call(const char *method, const char *path, const char *token, const char *body,
               const char *const *extra, http_resp *resp);
void http_resp_release(http_resp *r);

/* Shorthand: the status only. */
long http_status(const char *method, const char *path, const char *token, const char *body);

/* A string member of r's body, or "" when absent. */
const char *resp_str(const http_resp *r, const char *key);

/* The platform admin's token, bootstrapped once per test run (shared file). */
const char *admin_token(void);

/* A connection to the database under test (aborts the test when it fails). */
PGconn *db(void);
/* Run SQL returning the first column of the first row as a new string ("" if none). */
char *sql_value(const char *sql, int n, const char *const *params);
/* Run SQL; RET true on success. */
bool sql_ok(const char *sql, int n, const char *const *params);

/* A unique name for this run: prefix + pid + counter. */
const char *unique(const char *prefix);

/*
 * The job spec the tests submit: valid, tiny, 2 CPU ranks, on the dataset
 * "small" of its tenant (a member may name no data path). Static text.
 */
const char *spec_small(const char *name);

/* Register the dataset spec_small() names in tenant, with one version (as the admin). */
void dataset_small(const char *tenant);

#endif
