/*
 * h_webhooks.c - a tenant's webhooks and alerts:
 *   POST   /v1/tenants/{tenant}/webhooks                       create (the secret, once)
 *   GET    /v1/tenants/{tenant}/webhooks                       list (never a secret)
 *   DELETE /v1/tenants/{tenant}/webhooks/{webhook}             delete
 *   GET    /v1/tenants/{tenant}/webhooks/{webhook}/deliveries  what was sent, and how it went
 *   GET    /v1/tenants/{tenant}/alerts[?job=ID]                the alerts raised
 *
 * A webhook's secret is 32 random bytes shown once as "whsec_" and 64 hex
 * digits; the server keeps them wrapped by the master key (context
 * "webhook-secret|<id>|v1"; the row names the key by its id, for a
 * master-key rotation). webhook_send.c delivers and signs with it.
 * Its URL must pass api/webhook_addr.h's rule, which only a platform admin
 * may waive for a webhook (allow_private), say for a receiver inside the
 * cluster's network. A tenant has at most TRAINYARD_WEBHOOKS_PER_TENANT
 * webhooks (deleted ones not counted); one more answers 409
 * webhook_limit_reached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "crypt.h"
#include "handlers.h"
#include "hex.h"
#include "server.h"
#include "webhook_addr.h"

static const char *const alert_kinds[] = {
    "loss_spike", "non_finite", "stalled", "slow_steps", "restarts", "quota_nearly_spent", NULL};

#define WEBHOOK_COLS                                                                               \
	"w.id, w.url, w.kinds, w.allow_private, " CLOCK_SQL_RFC3339(                               \
	    "w.created_at") " AS created_at,"                                                      \
	                    " (SELECT u.name FROM users u WHERE u.id = w.created_by) AS "          \
	                    "created_by"

/* Check the body: url (required), kinds (optional list), allow_private (optional). */
static int webhook_body(api_req *rq, const json_t *in, const char **url, json_t **kinds,
                        bool *allow_private)
{
	static const char *const fields[] = {"url", "kinds", "allow_private", NULL};
	verrs v;
	verrs_init(&v);
	jsonx_only_fields(in, "", fields, &v);
	*url = NULL;
	*kinds = NULL;
	*allow_private = false;
	jsonx_get_str(in, "", "url", true, WEBHOOK_URL_MAX, url, &v);
	jsonx_get_bool(in, "", "allow_private", false, allow_private, &v);
	const json_t *k = json_object_get(in, "kinds");
	if (k && !json_is_null(k)) {
		if (!json_is_array(k) || json_array_size(k) == 0)
			verrs_add(&v, "/kinds", ERR_F_WRONG_TYPE, "kinds is a list of alert kinds");
		for (size_t i = 0; json_is_array(k) && i < json_array_size(k); i++) {
			const char *s = json_string_value(json_array_get(k, i));
			if (!s || jsonx_enum_index(s, alert_kinds) < 0)
				verrs_add(&v, "/kinds", ERR_F_INVALID_VALUE,
				          "kinds holds loss_spike, non_finite, stalled, slow_steps,"
				          " restarts or quota_nearly_spent");
		}
		*kinds = (json_t *)k;
	}
	if (*url && !webhook_url_ok(*url))
		verrs_add(&v, "/url", ERR_F_WEBHOOK_URL,
		          "url is an http or https URL with a host, no user name or password");
	if (*allow_private && rq->who.platform != ROLE_ADMIN)
		verrs_add(&v, "/allow_private", ERR_F_WEBHOOK_ADDRESS,
		          "only a platform admin may allow a webhook internal addresses");
	if (verrs_count(&v) == 0 && *url) {
		webhook_target t;
		char why[320];
		if (webhook_target_check(*url, *allow_private, &t, why, sizeof(why)) < 0)
			verrs_add(&v, "/url", ERR_F_WEBHOOK_ADDRESS, "%s", why);
	}
	if (verrs_count(&v)) {
		api_fail_validation(rq, &v);
		return -1;
	}
	verrs_release(&v);
	return 0;
}

/*
 * Whether the route's tenant has room for one more webhook, counted under a
 * lock on the tenant's row, so that concurrent creations cannot pass
 * TRAINYARD_WEBHOOKS_PER_TENANT. Inside the caller's transaction.
 * RET 0, -ERR_WEBHOOK_LIMIT_REACHED, or a database error.
 */
static int webhook_room(api_req *rq)
{
	char cap[16];
	snprintf(cap, sizeof(cap), "%d", rq->cfg->webhooks_per_tenant);
	const char *p[] = {rq->scope.tenant_id, cap};
	PGresult *r = NULL;
	int rc = db_query(rq->db, &r,
	                  "SELECT (SELECT count(*) FROM webhooks w WHERE w.tenant_id = t.id"
	                  " AND w.deleted_at IS NULL) < $2::int FROM tenants t WHERE t.id = $1"
	                  " FOR NO KEY UPDATE",
	                  2, p);
	if (rc)
		return rc;
	bool room = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return room ? 0 : -ERR_WEBHOOK_LIMIT_REACHED;
}

int h_webhook_create(api_req *rq)
{
	if (!rq->srv->has_master)
		return api_fail(rq, ERR_KEYS_UNAVAILABLE,
		                "no master key is configured: webhook secrets cannot be kept");
	json_t *in, *out = NULL;
	if (api_body_object(rq, &in) < 0)
		return 0;
	const char *url;
	json_t *kinds;
	bool allow_private;
	if (webhook_body(rq, in, &url, &kinds, &allow_private) < 0) {
		json_decref(in);
		return 0;
	}
	crypt_key secret;
	unsigned char sealed[CRYPT_WRAPPED_LEN];
	char id[37] = "", context[128], shown[6 + 2 * CRYPT_KEY_LEN + 1] = "whsec_",
	     sealed_hex[2 * CRYPT_WRAPPED_LEN + 3] = "\\x";
	json_t *idj = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = api_query_json(rq, "SELECT json_build_object('id', gen_random_uuid())", 0,
		                    NULL, &idj);
	if (rc == 0)
		snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(idj, "id")));
	json_decref(idj);
	if (rc == 0 && (crypt_key_generate(&secret) < 0 ||
	                crypt_context(context, sizeof(context), "webhook-secret", id, 1) < 0 ||
	                crypt_wrap(&rq->srv->master, context, &secret, sealed) < 0))
		rc = -ERR_INTERNAL;
	if (rc == 0) {
		hex_encode(secret.bytes, CRYPT_KEY_LEN, shown + 6);
		hex_encode(sealed, CRYPT_WRAPPED_LEN, sealed_hex + 2);
	}
	crypt_key_clear(&secret);
	char *kinds_text = kinds ? json_dumps(kinds, JSON_COMPACT) : NULL;
	char master_id[CRYPT_KEY_ID_LEN + 1]; /* names the key for a master-key rotation */
	crypt_key_id(&rq->srv->master, master_id);
	const char *p[] = {id,
	                   rq->scope.tenant_id,
	                   url,
	                   sealed_hex,
	                   kinds_text,
	                   allow_private ? "t" : "f",
	                   rq->who.user_id,
	                   master_id};
	if (rc == 0 && (rc = db_begin(rq->db)) == 0 && (rc = webhook_room(rq)) == 0)
		rc = api_query_json(
		    rq,
		    "WITH w AS (INSERT INTO webhooks (id, tenant_id, url, secret_sealed, kinds,"
		    " allow_private, created_by, secret_master_key_id)"
		    " VALUES ($1, $2, $3, $4::bytea,"
		    " (SELECT array_agg(x) FROM jsonb_array_elements_text($5::jsonb) x), $6, $7,"
		    " $8)"
		    " RETURNING *) SELECT row_to_json(x) FROM (SELECT " WEBHOOK_COLS " FROM w) x",
		    8, p, &out);
	free(kinds_text);
	char res[160];
	snprintf(res, sizeof(res), "tenant/%s/webhooks/%s", rq->scope.tenant_name, id);
	rc = api_audit_commit(rq, rc, 201, res,
	                      json_pack("{s:s, s:b}", "url", url, "allow_private", allow_private));
	json_decref(in);
	if (rc) {
		json_decref(out);
		memset(shown, 0, sizeof(shown));
		if (rc == -ERR_WEBHOOK_LIMIT_REACHED)
			return api_fail(
			    rq, rc,
			    "the tenant has %d webhooks, as many as allowed: delete one "
			    "first",
			    rq->cfg->webhooks_per_tenant);
		return api_fail_db(rq, rc);
	}
	json_object_set_new(out, "secret", json_string(shown)); /* this once */
	memset(shown, 0, sizeof(shown));
	return api_reply(rq, 201, out);
}

int h_webhook_list(api_req *rq)
{
	const char *p[] = {rq->scope.tenant_id};
	json_t *items;
	int rc = api_query_json(rq,
	                        "SELECT coalesce(json_agg(x ORDER BY x.created_at), '[]') FROM"
	                        " (SELECT " WEBHOOK_COLS " FROM webhooks w WHERE w.tenant_id = $1"
	                        " AND w.deleted_at IS NULL) x",
	                        1, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}

/* The webhook of the route's {webhook} param in the tenant, as an id ("" when none). */
static const char *webhook_param(api_req *rq)
{
	const char *w = route_param(&rq->params, "webhook");
	return w && jsonx_is_uuid(w) ? w : "";
}

int h_webhook_delete(api_req *rq)
{
	const char *w = webhook_param(rq);
	const char *p[] = {w, rq->scope.tenant_id};
	json_t *gone = NULL;
	int rc = *w ? api_db(rq) : 0;
	if (*w && rc == 0 && (rc = db_begin(rq->db)) == 0)
		rc = api_query_json(
		    rq,
		    "UPDATE webhooks SET deleted_at = clock_timestamp() WHERE id = $1"
		    " AND tenant_id = $2 AND deleted_at IS NULL"
		    " RETURNING json_build_object('id', id)",
		    2, p, &gone);
	if (rc == 0 && !gone) {
		if (rq->db)
			db_rollback(rq->db);
		return api_fail(rq, ERR_WEBHOOK_NOT_FOUND, "no such webhook of this tenant");
	}
	json_decref(gone);
	char res[160];
	snprintf(res, sizeof(res), "tenant/%s/webhooks/%s", rq->scope.tenant_name, w);
	rc = api_audit_commit(rq, rc, 204, res, NULL);
	if (rc)
		return api_fail_db(rq, rc);
	rq->status = 204;
	return 0;
}

int h_webhook_deliveries(api_req *rq)
{
	const char *w = webhook_param(rq);
	const char *p[] = {w, rq->scope.tenant_id};
	json_t *items = NULL;
	int rc =
	    *w ? api_query_json(
	             rq,
	             "SELECT CASE WHEN EXISTS (SELECT 1 FROM webhooks WHERE id = $1"
	             " AND tenant_id = $2) THEN (SELECT coalesce(json_agg(x ORDER BY x.id DESC),"
	             " '[]') FROM (SELECT d.id, d.alert_id, a.kind, d.state, d.attempts,"
	             " d.last_status, d.last_error, " CLOCK_SQL_RFC3339(
	                 "d.next_at") " AS next_at, " CLOCK_SQL_RFC3339("d.delivered_at") " AS "
	                                                                                  "delivere"
	                                                                                  "d_at "
	                                                                                  "FROM "
	                                                                                  "webhook_"
	                                                                                  "deliveri"
	                                                                                  "es d"
	                                                                                  " JOIN "
	                                                                                  "alerts "
	                                                                                  "a ON "
	                                                                                  "a.id = "
	                                                                                  "d.alert_"
	                                                                                  "id"
	                                                                                  " WHERE "
	                                                                                  "d."
	                                                                                  "webhook_"
	                                                                                  "id = $1 "
	                                                                                  "ORDER "
	                                                                                  "BY d.id "
	                                                                                  "DESC"
	                                                                                  " LIMIT "
	                                                                                  "200) x) "
	                                                                                  "END",
	             2, p, &items)
	       : 0;
	if (rc)
		return api_fail_db(rq, rc);
	if (!items)
		return api_fail(rq, ERR_WEBHOOK_NOT_FOUND, "no such webhook of this tenant");
	return api_reply_items(rq, 0, items, NULL);
}

int h_alert_list(api_req *rq)
{
	const char *job = api_query(rq, "job");
	if (job && !jsonx_is_uuid(job))
		return api_fail(rq, ERR_BAD_REQUEST, "job must be a job's id");
	const char *p[] = {rq->scope.tenant_id, job};
	json_t *items;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(x ORDER BY x.created_at DESC), '[]') FROM (SELECT a.id,"
	    " a.job_id, a.kind, a.detail, " CLOCK_SQL_RFC3339(
	        "a.created_at") " AS created_at FROM alerts a"
	                        " WHERE a.tenant_id = $1 AND ($2::uuid IS NULL OR a.job_id = "
	                        "$2::uuid)"
	                        " ORDER BY a.created_at DESC LIMIT 200) x",
	    2, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}
