/*
 * respond.c - answers: success bodies and problem+json (RFC 9457) errors.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "log.h"

int api_reply(api_req *rq, int status, json_t *body)
{
	if (!body && status != 204) {
		/* the body could not be built (json_pack() or a JSON query failed) */
		log_printf(LOG_ERROR, "request %s: a %d answer lost its body", rq->request_id,
		           status);
		return api_fail(rq, ERR_INTERNAL, "internal error; request id %s", rq->request_id);
	}
	json_decref(rq->out);
	rq->out = body;
	rq->status = status;
	rq->error = ERR_OK;
	return 0;
}

int api_reply_items(api_req *rq, int rc, json_t *items, json_t *next)
{
	if (rc) {
		json_decref(items);
		json_decref(next);
		return api_fail_db(rq, rc);
	}
	return api_reply(
	    rq, 200,
	    json_pack("{s:o, s:o}", "items", items, "next_cursor", next ? next : json_null()));
}

int api_fail(api_req *rq, int e, const char *fmt, ...)
{
	if (e < 0)
		e = -e;
	const err_info_t *info = err_info((err_code)e);
	rq->error = (err_code)e;
	rq->status = info->status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rq->detail, sizeof(rq->detail), fmt, ap);
	va_end(ap);
	/* details may quote the request: keep them valid JSON text */
	for (char *p = rq->detail; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	json_decref(rq->out);
	rq->out = NULL;
	return 0;
}

int api_fail_validation(api_req *rq, verrs *v)
{
	json_decref(rq->field_errors);
	rq->field_errors = v->list;
	v->list = NULL;
	return api_fail(rq, ERR_VALIDATION_FAILED, "%zu field(s) failed validation",
	                json_array_size(rq->field_errors));
}

int api_fail_db(api_req *rq, int rc)
{
	if (rc == -ERR_DB_UNAVAILABLE)
		return api_fail(rq, rc, "the database is unavailable; retry later");
	if (rc >= 0 || rc == -ERR_INTERNAL || -rc >= ERR__COUNT)
		return api_fail(rq, ERR_INTERNAL, "internal error; request id %s", rq->request_id);
	return api_fail(rq, rc, "%s", err_info((err_code)-rc)->doc);
}

int api_fail_storage(api_req *rq, int rc, int e, err_code missing, const char *what,
                     const char *name, const char *why)
{
	if (rc == -ERR_STORAGE_IO && e == ENOENT)
		return api_fail(rq, missing, "the %s's file \"%s\" is no longer in storage", what,
		                name);
	log_event(LOG_ERROR, "tenant storage refused",
	          json_pack("{s:s, s:s, s:s}", "request_id", rq->request_id, "tenant_id",
	                    rq->scope.tenant_id, "reason", why ? why : ""));
	if (rc == -ERR_STORAGE_UNSAFE)
		return api_fail(rq, ERR_STORAGE_UNSAFE,
		                "the %s's file \"%s\" is not a plain file of its tenant in storage "
		                "(a link, a FIFO or another owner's): refused",
		                what, name);
	return api_fail(rq, ERR_STORAGE_IO, "the %s's file \"%s\" could not be read", what, name);
}

json_t *api_problem_json(const api_req *rq)
{
	const err_info_t *info = err_info(rq->error);
	char type[96];
	snprintf(type, sizeof(type), "urn:trainyard:error:%s", info->code);
	json_t *p =
	    json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "type", type, "title", info->doc, "status",
	              rq->status, "detail", rq->detail[0] ? rq->detail : info->doc, "code",
	              info->code, "request_id", rq->request_id);
	if (rq->field_errors)
		json_object_set(p, "errors", rq->field_errors);
	return p;
}
