/*
 * h_keys.c - the envelope keys over the API (keys.h): an attempt's worker
 * runtime fetches its job's data key; a tenant's owner rotates the
 * tenant's key-encryption key; the platform admin destroys a tenant's keys
 * (crypto-shredding); the platform's admins and auditors read which master
 * keys the stored keys need (a master-key rotation's progress). Each change
 * is audited, in the transaction that does it;
 * key material appears in no record and no log, and the data key only in
 * the one answer to its attempt.
 */
#include <stdio.h>

#include "handlers.h"
#include "jobdata.h"
#include "jsonx.h"
#include "keys.h"
#include "server.h"

static int keys_ready(api_req *rq)
{
	if (rq->srv->has_master)
		return 0;
	api_fail(rq, ERR_KEYS_UNAVAILABLE, "no master key is configured on this server");
	return -1;
}

/* Answer a failed key operation. */
static int key_failed(api_req *rq, int rc)
{
	if (rc == -ERR_KEYS_UNAVAILABLE)
		return api_fail(rq, ERR_KEYS_UNAVAILABLE, "the tenant's keys were destroyed");
	if (rc == -ERR_KEY_UNWRAP_FAILED)
		return api_fail(rq, ERR_KEY_UNWRAP_FAILED,
		                "a stored key did not unwrap: wrong master key, or altered rows");
	if (rc == -ERR_DATA_KEY_GENERATIONS)
		return api_fail(
		    rq, ERR_DATA_KEY_GENERATIONS,
		    "the tenant's data keys were rotated %d times, as many as a key ring "
		    "holds",
		    CRYPT_GENERATIONS_MAX - 1);
	if (rc == -ERR_MASTER_KEY_MISSING)
		return api_fail(
		    rq, ERR_MASTER_KEY_MISSING,
		    "a stored key is wrapped by a master key this server does not hold");
	return api_fail_db(rq, rc);
}

int h_attempt_key(api_req *rq)
{
	if (keys_ready(rq) < 0)
		return 0;
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		return api_fail_db(rq, rc);
	crypt_object_ctx ring = {0};
	int version = 0;
	bool rotated = false;
	rc = keys_job_data_key(rq->db, &rq->srv->master, rq->scope.tenant_id, rq->scope.job_id,
	                       &ring, &version, &rotated);
	char res[160];
	snprintf(res, sizeof(res), "job/%s/key", rq->scope.job_id);
	/* a key version that had wrapped its limit is rotated on the way: key-management says so */
	json_t *d = json_pack("{s:i, s:s, s:b, s:i}", "tenant_key_version", version, "attempt_id",
	                      rq->scope.attempt_id, "rotated", rotated, "key_generation",
	                      (int)ring.generations);
	if (rc == 0)
		rc = api_audit(rq, 200, res, d);
	json_decref(d);
	if (rc == 0)
		rc = db_commit(rq->db);
	json_t *out = rc == 0 ? json_pack("{s:s, s:s}", "tenant_id", rq->scope.tenant_id, "job_id",
	                                  rq->scope.job_id)
	                      : NULL;
	if (rc == 0 && (out == NULL || jobdata_keys_set(out, &ring) != 0))
		rc = -ERR_INTERNAL;
	crypt_object_ctx_clear(&ring);
	if (rc) {
		json_decref(out);
		return key_failed(rq, rc);
	}
	return api_reply(rq, 200, out);
}

/*
 * Rotate the tenant's KEK. The body is optional: {"data_keys": true} also
 * rotates the data keys, so that what the tenant's jobs and datasets write
 * from then on is sealed under new ones (docs/storage.md).
 */
int h_key_rotate(api_req *rq)
{
	if (keys_ready(rq) < 0)
		return 0;
	bool data_keys = false;
	if (rq->body_len > 0) {
		json_t *in;
		if (api_body_object(rq, &in) < 0)
			return 0;
		verrs v;
		verrs_init(&v);
		static const char *const fields[] = {"data_keys", NULL};
		jsonx_only_fields(in, "", fields, &v);
		jsonx_get_bool(in, "", "data_keys", false, &data_keys, &v);
		json_decref(in);
		if (verrs_count(&v))
			return api_fail_validation(rq, &v);
		verrs_release(&v);
	}
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		return api_fail_db(rq, rc);
	int version = 0;
	int64_t rewrapped = 0;
	rc = keys_rotate(rq->db, &rq->srv->master, rq->scope.tenant_id, data_keys, &version,
	                 &rewrapped);
	char res[160];
	snprintf(res, sizeof(res), "tenant/%s/keys", rq->scope.tenant_name);
	json_t *out = json_pack("{s:i, s:I, s:b}", "version", version, "rewrapped",
	                        (json_int_t)rewrapped, "data_keys", data_keys);
	if (rc == 0)
		rc = api_audit(rq, 200, res, out);
	if (rc == 0)
		rc = db_commit(rq->db);
	if (rc) {
		json_decref(out);
		return key_failed(rq, rc);
	}
	return api_reply(rq, 200, out);
}

int h_key_shred(api_req *rq)
{
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		return api_fail_db(rq, rc);
	int64_t destroyed = 0;
	rc = keys_shred(rq->db, rq->scope.tenant_id, &destroyed);
	char res[160];
	snprintf(res, sizeof(res), "tenant/%s/keys", rq->scope.tenant_name);
	json_t *d = json_pack("{s:I}", "data_keys_destroyed", (json_int_t)destroyed);
	if (rc == 0)
		rc = api_audit(rq, 204, res, d);
	json_decref(d);
	if (rc == 0)
		rc = db_commit(rq->db);
	if (rc)
		return key_failed(rq, rc);
	return api_reply(rq, 204, NULL);
}

int h_master_key_status(api_req *rq)
{
	if (keys_ready(rq) < 0)
		return 0;
	int rc = api_db(rq);
	json_t *out = NULL;
	if (rc == 0)
		rc = keys_master_status(rq->db, &rq->srv->master, keys_master_previous(), &out);
	if (rc)
		return api_fail_db(rq, rc);
	return api_reply(rq, 200, out);
}
