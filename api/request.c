/*
 * request.c - reading a request: body JSON, query arguments, headers, and
 * the database helpers handlers share (row JSON, audit).
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "audit.h"
#include "server.h"

int api_body_parse(api_req *rq)
{
	if (rq->body_len == 0 || rq->body_json)
		return 0;
	jsonx_limits lim = {rq->cfg->json_max_depth, rq->cfg->json_max_array};
	char msg[200];
	int rc = jsonx_parse(rq->body, rq->body_len, &lim, &rq->body_json, msg, sizeof(msg));
	if (rc < 0)
		return api_fail(rq, rc, "%s", msg), -1;
	return 0;
}

int api_body_object(api_req *rq, json_t **out)
{
	*out = NULL;
	if (rq->body_len == 0)
		return api_fail(rq, ERR_INVALID_JSON, "a JSON object body is required"), -1;
	if (api_body_parse(rq) < 0)
		return -1;
	if (!json_is_object(rq->body_json))
		return api_fail(rq, ERR_INVALID_JSON, "the body must be a JSON object"), -1;
	*out = json_incref(rq->body_json);
	return 0;
}

const char *api_query(api_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *api_header(api_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

int api_query_json(api_req *rq, const char *sql, int n, const char *const *params, json_t **out)
{
	*out = NULL;
	int rc = api_db(rq);
	if (rc)
		return rc;
	PGresult *r;
	rc = db_query(rq->db, &r, sql, n, params);
	if (rc == 0 && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) {
		json_error_t e;
		*out = json_loads(PQgetvalue(r, 0, 0), 0, &e);
		if (!*out)
			rc = -ERR_INTERNAL;
	}
	PQclear(r);
	return rc;
}

int api_reply_row(api_req *rq, const char *sql, int n, const char *const *params, err_code missing)
{
	int rc = api_db(rq);
	if (rc)
		return api_fail_db(rq, rc);
	PGresult *r;
	rc = db_query(rq->db, &r, sql, n, params);
	if (rc) {
		PQclear(r);
		return api_fail_db(rq, rc);
	}
	if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0)) {
		PQclear(r);
		return api_fail(rq, missing, "%s", err_info(missing)->doc);
	}
	size_t len = (size_t)PQgetlength(r, 0, 0);
	rq->raw_owned = malloc(len + 1);
	if (!rq->raw_owned) {
		PQclear(r);
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	}
	memcpy(rq->raw_owned, PQgetvalue(r, 0, 0), len + 1);
	PQclear(r);
	rq->raw_len = len;
	rq->status = 200;
	return 0;
}

audit_record api_audit_record(const api_req *rq, const char *action, const char *outcome,
                              int status)
{
	return (audit_record){
	    .actor_id = rq->who.user_id[0] ? rq->who.user_id : NULL,
	    .actor_name = rq->who.user_name,
	    .actor_role = rq->who.platform == ROLE_ADMIN              ? "admin"
	                  : rq->who.platform == ROLE_PLATFORM_AUDITOR ? "auditor"
	                                                              : NULL,
	    .tenant_id = rq->scope.tenant_id[0] ? rq->scope.tenant_id : NULL,
	    .action = action,
	    .resource = rq->path_shown,
	    .outcome = outcome,
	    .status = status,
	    .request_id = rq->request_id,
	    .client_addr = rq->client_addr,
	};
}

int api_audit_write(api_req *rq, const audit_record *a)
{
	int rc = audit_write(rq->db, a);
	if (rc == 0) {
		const char *const outcome[] = {a->outcome};
		prom_add(rq->srv->tm.audit, outcome, 1);
	}
	return rc;
}

int api_audit(api_req *rq, int status, const char *resource, const json_t *detail)
{
	audit_record a = api_audit_record(rq, rq->rt->action, "success", status);
	a.resource = resource;
	a.detail = detail;
	int rc = api_audit_write(rq, &a);
	if (rc == 0)
		rq->audited = true;
	return rc;
}

int api_audit_commit(api_req *rq, int rc, int status, const char *resource, json_t *detail)
{
	if (rc == 0)
		rc = api_audit(rq, status, resource, detail);
	json_decref(detail);
	return rc == 0 ? db_commit(rq->db) : rc;
}
