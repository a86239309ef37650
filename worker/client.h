/*
 * client.h - the worker runtime's HTTP client for its attempt's routes
 * (/internal/v1/attempts/{attempt}...), over libcurl.
 *
 * The client holds the attempt credential in memory only: it goes into the
 * Authorization header of each request, which is wiped after the request,
 * and it is wiped when the client is freed. Nothing here prints it.
 *
 * One client is used from one thread. The caller runs
 * curl_global_init() once before the first client.
 */
#ifndef TY_WORKER_CLIENT_H
#define TY_WORKER_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define RT_CLIENT_ANSWER_MAX (4u << 20) /* bytes of an answer */
#define RT_CLIENT_TIMEOUT_S  20L        /* one request, from connect to the last byte */
#define RT_CLIENT_CONNECT_S  5L
#define RT_CLIENT_TOKEN_MAX  256

typedef struct rt_client rt_client;

/*
 * A client for attempt attempt_id at base_url (http or https; an https
 * server verified against ca_file, TRAINYARD_CA_FILE, when not NULL or
 * empty). token: the attempt credential, copied (the caller wipes its own
 * copy).
 * RET the client, or NULL with a message in err.
 */
rt_client *rt_client_new(const char *base_url, const char *ca_file, const char *attempt_id,
                         const char *token, char *err, size_t errlen);
void rt_client_free(rt_client *c); /* wipes the credential; NULL is fine */

/* What one request came to. */
typedef struct rt_answer {
	long status;       /* the HTTP status; 0: no answer (connection refused, timeout...) */
	json_t *body;      /* the JSON answer, or NULL (json_decref it) */
	char code[64];     /* the error code of a failure answer ("attempt_ended"), or "" */
	char message[512]; /* why, in words, for a failure or no answer */
} rt_answer;

/*
 * Send method to the attempt's route what ("" for the attempt itself,
 * "/metrics", ...) with body (borrowed, may be NULL) as JSON.
 * OUT *a (rt_answer_release it). RET 0 when the server answered 2xx,
 * -1 otherwise (a->status says whether it answered at all).
 */
int rt_client_call(rt_client *c, const char *method, const char *what, const json_t *body,
                   rt_answer *a);
void rt_answer_release(rt_answer *a);

/*
 * GET the attempt's route what, a file: a 2xx answer is written to to as
 * it arrives (no time limit while it keeps coming), any other is read as
 * a problem into *a. RET 0 when all of a 2xx answer was written, -1
 * otherwise (rt_answer_release *a either way).
 */
int rt_client_fetch(rt_client *c, const char *what, FILE *to, rt_answer *a);

/* Whether a failed call is worth trying again: no answer, 5xx (but keys_unavailable), 429. */
bool rt_answer_transient(const rt_answer *a);

#endif
