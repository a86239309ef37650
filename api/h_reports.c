/*
 * h_reports.c - evidence reports from the audit log (lib/audit/report.h,
 * docs/audit.md): GET /v1/reports/{kind} for the platform (all tenants,
 * or ?tenant=) and GET /v1/tenants/{tenant}/reports/{kind} for one
 * tenant's owners and auditors. A report is computed from a tree head
 * signed for it, read on a connection of its own and streamed as it is
 * made; the request joins the log as an audit.report record after it. A
 * report holds a slot (report_slots.h) from before its head until its
 * stream is freed: past the server's or its tenant's share the request
 * answers 429 rate_limited with Retry-After, before any connection of its
 * own is opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditverify.h"
#include "clock.h"
#include "db.h"
#include "handlers.h"
#include "hex.h"
#include "jsonx.h"
#include "log.h"
#include "report.h"
#include "report_slots.h"
#include "server.h"

/* Bytes a stream read gathers before it sends. */
#define REPORT_CHUNK 32768

typedef struct report_stream {
	report_run run;
	report_out out;
	size_t sent;
	bool over;
	report_slot slot;
	char request_id[REQUEST_ID_MAX + 1];
} report_stream;

static void report_stream_free(void *ctx)
{
	report_stream *s = ctx;
	report_run_release(&s->run);
	report_out_release(&s->out);
	report_slot_give(&s->slot);
	free(s);
}

static ssize_t report_stream_read(void *ctx, char *buf, size_t max)
{
	report_stream *s = ctx;
	if (s->sent == s->out.len) {
		s->sent = s->out.len = 0;
		if (s->over)
			return API_STREAM_END;
		int rc = report_run_step(&s->run, &s->out, REPORT_CHUNK);
		if (rc < 0) {
			log_printf(LOG_ERROR, "report %s cut off: %s", s->request_id,
			           s->run.problem);
			return API_STREAM_ABORT;
		}
		s->over = rc == 0;
		if (s->out.len == 0)
			return s->over ? API_STREAM_END : 0;
	}
	size_t n = s->out.len - s->sent < max ? s->out.len - s->sent : max;
	memcpy(buf, s->out.buf + s->sent, n);
	s->sent += n;
	return (ssize_t)n;
}

/* A time argument: absent (*t unchanged), or RFC 3339. RET 0, or -1 answered. */
static int time_arg(api_req *rq, const char *name, double *t)
{
	const char *v = api_query(rq, name);
	if (v && report_time_parse(v, t) < 0)
		return api_fail(rq, ERR_REPORT_PARAM_INVALID,
		                "%s must be an RFC 3339 time (2026-12-04T08:00:00Z) or a date "
		                "(2026-12-04)",
		                name),
		       -1;
	return 0;
}

/* The kind, format and period of the query. RET 0, or -1 answered. */
static int params_parse(api_req *rq, report_params *p)
{
	const char *kind = route_param(&rq->params, "kind");
	p->kind = report_kind_find(kind);
	if (!p->kind)
		return api_fail(rq, ERR_REPORT_KIND_UNKNOWN, "%s",
		                err_info(ERR_REPORT_KIND_UNKNOWN)->doc),
		       -1;
	const char *f = api_query(rq, "format");
	if (f && report_format_parse(f, &p->format) < 0)
		return api_fail(rq, ERR_REPORT_PARAM_INVALID, "format must be csv, json or html"),
		       -1;
	double now = clock_epoch_s(), to = now, from;
	if (time_arg(rq, "to", &to) < 0)
		return -1;
	from = to - REPORT_PERIOD_DAYS * 86400.0;
	if (time_arg(rq, "from", &from) < 0)
		return -1;
	if (from > to)
		return api_fail(rq, ERR_REPORT_RANGE_INVALID, "from must not be after to"), -1;
	if (!p->kind->at_time && to - from > REPORT_PERIOD_MAX_DAYS * 86400.0)
		return api_fail(rq, ERR_REPORT_RANGE_INVALID,
		                "a report covers at most %d days: ask for a shorter period",
		                REPORT_PERIOD_MAX_DAYS),
		       -1;
	report_time_format(from, p->from);
	report_time_format(to, p->to);
	report_time_format(now, p->generated_at);
	return 0;
}

/* ?tenant= on the platform route: a tenant's name or id. RET 0, or -1 answered. */
static int tenant_arg(api_req *rq, report_params *p)
{
	const char *v = api_query(rq, "tenant");
	if (!v)
		return 0;
	const char *q[] = {v, jsonx_is_uuid(v) ? v : NULL};
	PGresult *r;
	int rc = api_db(rq);
	if (rc == 0)
		rc =
		    db_query(rq->db, &r,
		             "SELECT id, name FROM tenants WHERE name = $1 OR id = $2::uuid", 2, q);
	if (rc)
		return api_fail_db(rq, rc), -1;
	bool found = PQntuples(r) == 1;
	if (found) {
		snprintf(p->tenant_id, sizeof(p->tenant_id), "%s", PQgetvalue(r, 0, 0));
		snprintf(p->tenant_name, sizeof(p->tenant_name), "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	if (!found)
		return api_fail(rq, ERR_TENANT_NOT_FOUND, "%s",
		                err_info(ERR_TENANT_NOT_FOUND)->doc),
		       -1;
	return 0;
}

/* The record of the report's request, after the head it was computed from. */
static int audit_report(api_req *rq, const report_params *p)
{
	json_t *d = json_pack("{s:s, s:s, s:s, s:I, s:s?}", "kind", p->kind->name, "from", p->from,
	                      "to", p->to, "head_size", (json_int_t)p->head.size, "tenant",
	                      p->tenant_id[0] ? p->tenant_name : NULL);
	char res[96];
	snprintf(res, sizeof(res), "report/%s", p->kind->name);
	int rc = api_audit(rq, 200, res, d);
	json_decref(d);
	return rc;
}

/* Stream the report of p, holding a slot of key's share. RET 0 (answered). */
static int report(api_req *rq, report_params *p, const char *key)
{
	if (!rq->srv->has_audit_key)
		return api_fail(rq, ERR_AUDIT_KEY_UNAVAILABLE, "%s",
		                err_info(ERR_AUDIT_KEY_UNAVAILABLE)->doc);
	report_slot slot;
	if (report_slot_take(rq, key, &slot) < 0)
		return 0;
	if (api_audit_head_now(rq, &p->head) < 0) {
		report_slot_give(&slot);
		return 0;
	}
	p->head_verified = auditverify_head_signed(&p->head, rq->srv->audit_key.pub);
	hex_encode(rq->srv->audit_key.pub, AUDIT_KEY_LEN, p->public_key);
	int rc = api_db(rq);
	if (rc == 0)
		rc = audit_report(rq, p);
	if (rc) {
		report_slot_give(&slot);
		return api_fail_db(rq, rc);
	}
	report_stream *s = calloc(1, sizeof(*s));
	char err[512];
	PGconn *c = s ? db_connect(rq->cfg->db, err, sizeof(err)) : NULL;
	if (!c) {
		free(s);
		report_slot_give(&slot);
		return api_fail(rq, ERR_DB_UNAVAILABLE, "the report could not open its connection");
	}
	s->slot = slot; /* report_stream_free gives it back */
	snprintf(s->request_id, sizeof(s->request_id), "%s", rq->request_id);
	if (report_run_begin(&s->run, c, p, &s->out) < 0 || s->out.oom) {
		log_printf(LOG_ERROR, "report %s: %s", rq->request_id, s->run.problem);
		report_stream_free(s);
		return api_fail(rq, ERR_DB_UNAVAILABLE, "the report could not begin");
	}
	rq->status = 200;
	rq->stream = (api_stream){.read = report_stream_read,
	                          .free = report_stream_free,
	                          .ctx = s,
	                          .content_type = report_format_type(p->format),
	                          .size = API_STREAM_SIZE_UNKNOWN};
	return 0;
}

int h_report(api_req *rq)
{
	report_params p = {0};
	if (params_parse(rq, &p) < 0 || tenant_arg(rq, &p) < 0)
		return 0;
	return report(rq, &p, REPORT_SLOTS_PLATFORM);
}

int h_tenant_report(api_req *rq)
{
	report_params p = {0};
	if (params_parse(rq, &p) < 0)
		return 0;
	const char *v = api_query(rq, "tenant");
	if (v && strcmp(v, rq->scope.tenant_name) != 0 && strcmp(v, rq->scope.tenant_id) != 0)
		return api_fail(rq, ERR_REPORT_PARAM_INVALID,
		                "tenant names another tenant than the path's");
	snprintf(p.tenant_id, sizeof(p.tenant_id), "%s", rq->scope.tenant_id);
	snprintf(p.tenant_name, sizeof(p.tenant_name), "%s", rq->scope.tenant_name);
	return report(rq, &p, rq->scope.tenant_id);
}
