/*
 * jobdata.c - a job's object context for the read routes (jobdata.h).
 */
#include "jobdata.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "server.h"

int jobdata_ctx(const api_server *s, PGconn *c, const char *tenant_id, const char *job_id,
                crypt_object_ctx *ctx, int *version)
{
	if (!s->has_master)
		return -ERR_KEYS_UNAVAILABLE;
	int v = 0;
	int rc = keys_job_data_key_existing(c, &s->master, tenant_id, job_id, ctx, &v);
	if (version)
		*version = rc == 0 ? v : 0;
	return rc;
}

int jobdata_keys_set(json_t *answer, const crypt_object_ctx *ring)
{
	char *text = crypt_object_ctx_text(ring);
	int rc = text && json_object_set_new(answer, "keys", json_string(text)) == 0 &&
	                 json_object_set_new(answer, "key_generation",
	                                     json_integer(ring->generations)) == 0
	             ? 0
	             : -ERR_INTERNAL;
	if (text)
		OPENSSL_cleanse(text, strlen(text));
	free(text);
	return rc;
}

int jobdata_fail(api_req *rq, int rc)
{
	if (rc == -ERR_KEYS_UNAVAILABLE)
		return api_fail(rq, ERR_KEYS_UNAVAILABLE,
		                rq->srv->has_master ? "the job's data key is unavailable: its "
		                                      "tenant's keys were destroyed"
		                                    : "no master key is configured on this server");
	if (rc == -ERR_KEY_UNWRAP_FAILED)
		return api_fail(rq, ERR_KEY_UNWRAP_FAILED,
		                "a stored key did not unwrap: wrong master key, or altered rows");
	return api_fail_db(rq, rc);
}

int jobdata_audit(api_req *rq, const char *resource, json_t *detail, int version)
{
	if (!json_object_get(detail, "job_id"))
		json_object_set_new(detail, "job_id", json_string(rq->scope.job_id));
	if (version > 0)
		json_object_set_new(detail, "tenant_key_version", json_integer(version));
	int rc = api_db(rq);
	if (rc == 0)
		rc = api_audit(rq, 200, resource, detail);
	json_decref(detail);
	if (rc)
		return api_fail_db(rq, rc), -1;
	return 0;
}
