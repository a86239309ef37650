/*
 * h_meta.c - health, readiness, the OpenAPI document, whoami.
 */
#include <microhttpd.h>
#include <string.h>

#include "embedded.h"
#include "handlers.h"
#include "server.h"

int h_healthz(api_req *rq)
{
	return api_reply(rq, 200, json_pack("{s:s}", "status", "ok"));
}

int h_readyz(api_req *rq)
{
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_query(rq->db, NULL, "SELECT 1", 0, NULL);
	if (rc)
		return api_fail(rq, ERR_DB_UNAVAILABLE, "the database is not reachable");
	return api_reply(rq, 200, json_pack("{s:s}", "status", "ready"));
}

int h_openapi(api_req *rq)
{
	const embedded_file *f = embedded_find("api/openapi.json");
	if (!f)
		return api_fail(rq, ERR_INTERNAL, "the OpenAPI document is missing");
	rq->status = 200;
	rq->raw = f->data; /* served byte for byte as kept in the repository */
	rq->raw_len = f->len;
	return 0;
}

int h_metrics(api_req *rq)
{
	int rc = api_db(rq);
	if (rc < 0)
		return api_fail(rq, ERR_DB_UNAVAILABLE, "the database is not available");
	size_t len = 0;
	int db_failed = 0;
	char *text = telemetry_scrape(&rq->srv->tm, rq->db, &len, &db_failed);
	if (!text)
		return db_failed
		           ? api_fail(rq, ERR_DB_UNAVAILABLE, "the job queue could not be read")
		           : api_fail(rq, ERR_INTERNAL, "out of memory rendering the metrics");
	rq->status = 200;
	rq->raw_owned = text;
	rq->raw_len = len;
	rq->raw_type = PROM_CONTENT_TYPE;
	return 0;
}

int h_whoami(api_req *rq)
{
	const char *p[] = {rq->who.user_id};
	json_t *m;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(x ORDER BY x.tenant), '[]') FROM ("
	    " SELECT t.id AS tenant_id, t.name AS tenant, b.role FROM role_bindings b"
	    " JOIN tenants t ON t.id = b.tenant_id WHERE b.user_id = $1) x",
	    1, p, &m);
	if (rc)
		return api_fail_db(rq, rc);
	json_t *out = json_pack("{s:{s:s, s:s}, s:s, s:o}", "user", "id", rq->who.user_id, "name",
	                        rq->who.user_name, "token_id", rq->who.token_id, "memberships",
	                        m ? m : json_array());
	json_object_set_new(
	    out, "platform_role",
	    rq->who.platform == ROLE_NONE ? json_null() : json_string(role_name(rq->who.platform)));
	return api_reply(rq, 200, out);
}
