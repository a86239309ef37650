/*
 * jobdata.h - what the read routes need to open a job's encrypted files
 * (h_logs.c, h_download.c): the job's object context, from its existing
 * data key ring (reading never makes a key), and the answer to a failure;
 * and the one form in which an attempt is handed a key ring.
 */
#ifndef TY_JOBDATA_H
#define TY_JOBDATA_H

#include <libpq-fe.h>

#include "api.h"
#include "crypt.h"

/*
 * Fill *ctx (the caller clears it: crypt_object_ctx_clear) with the job's
 * data key ring, read on connection c; *version, when not NULL, the tenant key
 * version that wraps it. RET 0; -ERR_KEYS_UNAVAILABLE (no master
 * key on this server, or the job has no data key); -ERR_KEY_UNWRAP_FAILED;
 * -ERR_DB_UNAVAILABLE; -ERR_INTERNAL.
 */
int jobdata_ctx(const api_server *s, PGconn *c, const char *tenant_id, const char *job_id,
                crypt_object_ctx *ctx, int *version);

/*
 * Record a read of the job's data (the route's action: log.read,
 * checkpoint.download) before any of it is sent: no read without its
 * record. detail is the record's (it gains job_id, the scope's unless it
 * names one, and, with a key, tenant_key_version: version > 0). RET 0, or
 * -1 answered.
 */
int jobdata_audit(api_req *rq, const char *resource, json_t *detail, int version);

/*
 * Put a data key ring into an answer to an attempt: "keys", the ring's
 * text (crypt_object_ctx_init_text: every generation, oldest first; the
 * last seals), and "key_generation", the newest. RET 0 or -ERR_INTERNAL.
 */
int jobdata_keys_set(json_t *answer, const crypt_object_ctx *ring);

/* Answer a failed jobdata_ctx(). RET 0. */
int jobdata_fail(api_req *rq, int rc);

#endif
