/*
 * server.c - libmicrohttpd glue and the request pipeline.
 *
 * One api_req lives from the first callback of a request to MHD's
 * completion notice. The pipeline is: route match, body limits,
 * authentication and authorisation (auth.c), the handler, the audit record
 * of a refused mutation, the response, and one log line. A handler may
 * leave a stream (api.h) instead of a body: stream_hub.c sends it.
 */
#include "server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "auditseq.h"
#include "auth.h"
#include "authfail.h"
#include "clock.h"
#include "followers.h"
#include "report_slots.h"
#include "hex.h"
#include "listen.h"
#include "log.h"
#include "peers.h"
#include "readcache.h"
#include "stream_hub.h"
#include "token.h"
#include "webhook_send.h"
#include "workers.h"

/* What a worker runs (workers.h): a pipeline past its route, or an upload's finish. */
typedef enum { STEP_NONE, STEP_PIPELINE, STEP_UPLOAD_FINISH } req_step;

typedef struct req_slot {
	api_req rq;
	double start; /* clock_mono_s() */
	worker_task task;
	req_step step;  /* handed to a worker, its connection suspended */
	bool step_done; /* the worker ran it and resumed the connection: answer */
	bool answered;
	bool uploading;     /* a ROUTE_UPLOAD route: the body goes to rq.upload as it arrives */
	bool upload_failed; /* answered once the rest of the body is read */
	unsigned long long upload_failed_at; /* bytes in when it failed */
} req_slot;

static bool request_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > REQUEST_ID_MAX)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static void set_request_id(api_req *rq)
{
	const char *given = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "X-Request-Id");
	if (given && request_id_ok(given)) {
		snprintf(rq->request_id, sizeof(rq->request_id), "%s", given);
		return;
	}
	unsigned char raw[12];
	if (RAND_bytes(raw, sizeof(raw)) != 1)
		memset(raw, 0, sizeof(raw));
	hex_encode(raw, sizeof(raw), rq->request_id);
}

/* Logs and audit rows are JSON and UTF-8 text: show other bytes as '?'. */
static void set_path_shown(api_req *rq)
{
	size_t i = 0;
	for (const char *p = rq->path; *p && i + 1 < sizeof(rq->path_shown); p++, i++)
		rq->path_shown[i] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
	rq->path_shown[i] = '\0';
}

/* RET: whether addr is one of the comma-separated addresses of list. */
static bool address_listed(const char *list, const char *addr)
{
	size_t n = strlen(addr);
	for (const char *p = list; *p;) {
		p += strspn(p, " ,");
		size_t k = strcspn(p, " ,");
		if (k == n && k > 0 && strncmp(p, addr, n) == 0)
			return true;
		p += k;
	}
	return false;
}

/* Keeps the value of the last X-Forwarded-For header line in *cls. */
static enum MHD_Result last_forwarded(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
	(void)kind;
	if (key && value && strcasecmp(key, "X-Forwarded-For") == 0)
		*(const char **)cls = value;
	return MHD_YES;
}

/*
 * The client behind a trusted load balancer: the last entry of the last
 * X-Forwarded-For line (the one the balancer added, as a line of its own
 * or appended to the client's; the entries before it are the client's to
 * write), when it is an IP address. RET whether it was taken.
 */
static bool forwarded_client(api_req *rq)
{
	const char *xff = NULL;
	MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, last_forwarded, &xff);
	if (!xff)
		return false;
	const char *last = strrchr(xff, ',');
	last = last ? last + 1 : xff;
	last += strspn(last, " \t");
	char addr[sizeof(rq->client_addr)];
	size_t k = strcspn(last, " \t");
	if (k == 0 || k >= sizeof(addr))
		return false;
	memcpy(addr, last, k);
	addr[k] = '\0';
	unsigned char bin[sizeof(struct in6_addr)];
	if (inet_pton(AF_INET, addr, bin) != 1 && inet_pton(AF_INET6, addr, bin) != 1)
		return false;
	memcpy(rq->client_addr, addr, k + 1);
	return true;
}

static void set_client_addr(api_req *rq)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	rq->client_addr[0] = '\0';
	if (!ci || !ci->client_addr)
		return;
	const struct sockaddr *sa = ci->client_addr;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
		          rq->client_addr, sizeof(rq->client_addr));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
		          rq->client_addr, sizeof(rq->client_addr));
	if (rq->cfg->trusted_proxies[0] &&
	    address_listed(rq->cfg->trusted_proxies, rq->client_addr))
		forwarded_client(rq);
}

int api_db(api_req *rq)
{
	if (rq->db)
		return 0;
	double t0 = clock_mono_s();
	int rc = db_acquire(rq->srv->pool, &rq->db);
	prom_observe(rq->srv->tm.pool_wait, NULL, clock_mono_s() - t0);
	return rc;
}

/* A route whose requests are recorded (every change, and the reads auditors ask about). */
static bool is_audited(const api_req *rq)
{
	return rq->rt && rq->rt->action != NULL;
}

static bool is_mutation(const api_req *rq)
{
	return rq->rt && strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0;
}

/* A refused or failed request to an audited route still leaves a record (best effort). */
static void audit_refusal(api_req *rq)
{
	if (!is_audited(rq) || rq->audited || rq->error == ERR_DB_UNAVAILABLE || rq->status < 400 ||
	    !rq->who.authenticated)
		return;
	if (api_db(rq) < 0)
		return;
	db_rollback(rq->db);
	json_t *d = json_pack("{s:s}", "code", err_info(rq->error)->code);
	audit_record a = api_audit_record(
	    rq, rq->rt->action, rq->status == 403 || rq->status == 404 ? "denied" : "failure",
	    rq->status);
	a.detail = d;
	if (api_audit_write(rq, &a) < 0)
		log_printf(LOG_ERROR, "could not write the audit record of a refused request");
	json_decref(d);
}

/*
 * A change made here (committed by now, or failed: either way the read
 * cache cannot tell) drops the answers it may touch before it is answered,
 * so the caller's next read sees it: its tenant's, or every answer when it
 * has no tenant (tokens, users, tenants). PostgreSQL's notification tells
 * the other API processes, a moment later (readcache.h).
 */
static void reads_forget(const api_req *rq)
{
	if (rq->scope.tenant_id[0])
		readcache_drop_tenant(rq->srv->reads, rq->scope.tenant_id);
	else
		readcache_drop_all(rq->srv->reads);
}

/* What every request ends with, after its handler (or its upload's finish) returned rc. */
static void end_pipeline(api_req *rq, int rc)
{
	if (rc < 0 && rq->error == ERR_OK && rq->status == 0)
		api_fail(rq, rc, "the request could not be completed");
	if (rq->db)
		db_rollback(rq->db); /* a handler that failed mid-transaction */
	audit_refusal(rq);
	if (is_mutation(rq))
		reads_forget(rq);
}

/* The checks before authentication: route, body. RET true to go on, false answered. */
static bool pipeline_route(api_req *rq)
{
	const api_server *s = rq->srv;
	route_match m =
	    router_match(s->routes, s->n_routes, rq->method, rq->path, &rq->rt, &rq->params);
	if (m != ROUTE_FOUND) {
		rq->rt = NULL;
		if (m == ROUTE_BAD_METHOD) {
			router_allow(s->routes, s->n_routes, rq->path, rq->allow,
			             sizeof(rq->allow));
			api_fail(rq, ERR_METHOD_NOT_ALLOWED, "%s is not allowed on %s", rq->method,
			         rq->path_shown);
		} else {
			api_fail(rq, ERR_NOT_FOUND, "no route for %s", rq->path_shown);
		}
		return false;
	}
	if (rq->body_too_large) {
		api_fail(rq, ERR_BODY_TOO_LARGE, "the body exceeds %d bytes", rq->cfg->body_limit);
		return false;
	}
	if (rq->body_len > 0 && !(rq->rt->flags & ROUTE_UPLOAD)) {
		const char *ct = api_header(rq, "Content-Type");
		if (!ct || strncasecmp(ct, "application/json", 16) != 0 ||
		    (ct[16] != '\0' && ct[16] != ';')) {
			api_fail(rq, ERR_UNSUPPORTED_MEDIA, "send the body as application/json");
			return false;
		}
		if (api_body_parse(rq) < 0)
			return false;
	}
	return true;
}

/* The rest, once pipeline_route() passed: authentication, the handler, the end. */
static void pipeline_rest(api_req *rq)
{
	if (!(rq->rt->flags & ROUTE_PUBLIC) && auth_check(rq) < 0)
		return;
	int rc = rq->rt->handler(rq);
	if (rc == 0 && rq->upload.feed && rq->status == 0 && rq->error == ERR_OK)
		return; /* an upload under way: its finish ends the pipeline */
	end_pipeline(rq, rc);
}

static void run_pipeline(api_req *rq)
{
	if (pipeline_route(rq))
		pipeline_rest(rq);
}

/*
 * Whether rq's pipeline runs on its connection's polling thread: it
 * cannot wait. A route answered from memory, or a job's answer in the
 * read cache; every other request waits for the database at least once.
 */
static bool runs_here(api_req *rq)
{
	return (rq->rt->flags & ROUTE_MEMORY) || auth_cached(rq);
}

/*
 * The request's log line and metrics, once it is answered, or, when the
 * client left while a worker ran it (the answer never queued), once the
 * connection ends: what ran is logged either way, "sent": false then.
 */
static void log_request(const req_slot *slot)
{
	const api_req *rq = &slot->rq;
	json_t *f = json_pack("{s:s, s:s, s:s, s:i, s:f}", "request_id", rq->request_id, "method",
	                      rq->method, "path", rq->path_shown, "status", rq->status,
	                      "latency_ms", (clock_mono_s() - slot->start) * 1e3);
	if (rq->rt)
		json_object_set_new(f, "route", json_string(rq->rt->pattern));
	if (rq->who.authenticated)
		json_object_set_new(f, "user", json_string(rq->who.user_name));
	if (rq->scope.tenant_name[0])
		json_object_set_new(f, "tenant", json_string(rq->scope.tenant_name));
	if (rq->error != ERR_OK)
		json_object_set_new(f, "code", json_string(err_info(rq->error)->code));
	if (rq->client_addr[0])
		json_object_set_new(f, "client", json_string(rq->client_addr));
	if (rq->cached)
		json_object_set_new(f, "cached", json_true());
	if (!slot->answered)
		json_object_set_new(f, "sent", json_false());
	log_event(rq->status >= 500 ? LOG_ERROR : LOG_INFO, "request", f);
	telemetry_request(&rq->srv->tm, rq->rt ? rq->rt->pattern : NULL, rq->method, rq->status,
	                  clock_mono_s() - slot->start);
}

/* The response carrying rq's body: a stream, raw bytes, JSON, a problem or nothing. */
static struct MHD_Response *body_response(api_req *rq)
{
	if (rq->stream.read && rq->error == ERR_OK) {
		const char *stype = rq->stream.content_type;
		struct MHD_Response *sr = stream_response(rq->srv->hub, rq);
		if (sr) {
			MHD_add_response_header(sr, "Content-Type", stype);
			return sr;
		}
		api_fail(rq, ERR_INTERNAL, "out of memory");
	}
	struct MHD_Response *resp;
	const char *ctype = rq->raw_type ? rq->raw_type : "application/json";
	if (rq->error != ERR_OK) {
		json_decref(rq->out);
		rq->out = api_problem_json(rq);
		ctype = "application/problem+json";
	}
	if (rq->raw_owned && rq->error == ERR_OK) {
		resp = MHD_create_response_from_buffer(rq->raw_len, rq->raw_owned,
		                                       MHD_RESPMEM_MUST_FREE);
		rq->raw_owned = NULL; /* MHD frees it */
		MHD_add_response_header(resp, "Content-Type", ctype);
	} else if (rq->raw && rq->error == ERR_OK) {
		resp = MHD_create_response_from_buffer(rq->raw_len, (void *)(uintptr_t)rq->raw,
		                                       MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(resp, "Content-Type", ctype);
	} else if (rq->out) {
		char *text = json_dumps(rq->out, JSON_COMPACT);
		size_t n = text ? strlen(text) : 0;
		resp = MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(resp, "Content-Type", ctype);
	} else {
		resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	}
	return resp;
}

/*
 * The headers every answer carries, whatever its route, status or body
 * (problems, streams, 404 and 405 included). Every answer may hold a
 * secret or a tenant's data, so none is stored by a cache; no answer but
 * the web view's own files (h_ui.c, which sets rq->csp) is a page, so a
 * browser may not sniff its type, frame it, run or load anything from it,
 * or pass its address on.
 */
static const char *const security_headers[][2] = {
    {"Cache-Control", "no-store"},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"},
    {"Referrer-Policy", "no-referrer"},
};

static enum MHD_Result send_response(req_slot *slot)
{
	api_req *rq = &slot->rq;
	struct MHD_Response *resp = body_response(rq);
	MHD_add_response_header(resp, "X-Request-Id", rq->request_id);
	for (size_t i = 0; i < sizeof(security_headers) / sizeof(security_headers[0]); i++)
		MHD_add_response_header(
		    resp, security_headers[i][0],
		    rq->csp && strcmp(security_headers[i][0], "Content-Security-Policy") == 0
		        ? rq->csp
		        : security_headers[i][1]);
	if (rq->retry_after[0])
		MHD_add_response_header(resp, "Retry-After", rq->retry_after);
	if (rq->allow[0])
		MHD_add_response_header(resp, "Allow", rq->allow);
	if (rq->replayed)
		MHD_add_response_header(resp, "Idempotency-Replayed", "true");
	enum MHD_Result r = MHD_queue_response(rq->conn, (unsigned)rq->status, resp);
	MHD_destroy_response(resp);
	slot->answered = true;
	log_request(slot);
	return r;
}

/* RET: whether method and url name a ROUTE_UPLOAD route. */
static bool is_upload(const api_server *s, const char *method, const char *url)
{
	const route *rt;
	route_params p;
	return router_match(s->routes, s->n_routes, method, url, &rt, &p) == ROUTE_FOUND &&
	       (rt->flags & ROUTE_UPLOAD);
}

static void release_db(api_req *rq)
{
	if (rq->db) {
		db_release(rq->srv->pool, rq->db);
		rq->db = NULL;
	}
}

/*
 * After an upload failed, the rest of its body is read and dropped before
 * the answer goes out (up to this much more): a connection closed on
 * unread bytes is reset, and the client may never see the answer.
 */
#define UPLOAD_DRAIN_MAX (16ull << 20)

/*
 * A refusal before the body: answered at once when the client waits for
 * it (Expect: 100-continue: the body is never sent) or announced a body
 * too large to drain; otherwise once the body it is already sending has
 * been read.
 */
static bool refuse_at_once(struct MHD_Connection *conn, const char *content_length)
{
	const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Expect");
	return (expect && strcasecmp(expect, "100-continue") == 0) ||
	       (content_length && strtoull(content_length, NULL, 10) > UPLOAD_DRAIN_MAX);
}

static enum MHD_Result upload_refused(req_slot *slot, const char *content_length)
{
	if (refuse_at_once(slot->rq.conn, content_length))
		return send_response(slot);
	slot->upload_failed = true;
	slot->upload_failed_at = 0;
	return MHD_YES;
}

/*
 * The headers of an upload are in: authenticate and run the handler now,
 * before a byte of the body is read, and refuse it then if it must be.
 */
static enum MHD_Result upload_begin(req_slot *slot, const char *content_length)
{
	api_req *rq = &slot->rq;
	slot->uploading = true;
	run_pipeline(rq);
	release_db(rq);
	if (rq->status != 0 || rq->error != ERR_OK || !rq->upload.feed)
		return upload_refused(slot, content_length);
	if (content_length && strtoull(content_length, NULL, 10) > rq->upload.limit) {
		api_fail(rq, ERR_BODY_TOO_LARGE, "the upload exceeds %llu bytes", rq->upload.limit);
		end_pipeline(rq, 0);
		release_db(rq);
		return upload_refused(slot, content_length);
	}
	return MHD_YES;
}

/*
 * A step's work, on a worker (or, while the workers stop, on the polling
 * thread): everything up to the answer, which goes out on the
 * connection's polling thread once the connection is resumed.
 */
static void step_work(req_slot *slot)
{
	api_req *rq = &slot->rq;
	if (slot->step == STEP_UPLOAD_FINISH)
		end_pipeline(rq, rq->upload.finish(rq));
	else
		pipeline_rest(rq);
	release_db(rq);
	slot->step_done = true;
}

static void step_run(worker_task *t)
{
	req_slot *slot = (req_slot *)(void *)((char *)t - offsetof(req_slot, task));
	struct MHD_Connection *conn = slot->rq.conn;
	step_work(slot);
	MHD_resume_connection(conn); /* the daemon may answer and free slot from here on */
}

/*
 * Hand step to a worker, the connection suspended until it is done: the
 * daemon then calls on_request() again, which answers. While the
 * workers stop, the step runs here and is answered at once.
 */
static enum MHD_Result step_defer(req_slot *slot, req_step step)
{
	slot->step = step;
	slot->step_done = false;
	slot->task.run = step_run;
	MHD_suspend_connection(slot->rq.conn);
	if (workers_submit(slot->rq.srv->workers, &slot->task) == 0)
		return MHD_YES;
	MHD_resume_connection(slot->rq.conn);
	step_work(slot);
	return send_response(slot);
}

/* A piece of an upload's body, or (*upload_size 0) its end. */
static enum MHD_Result upload_step(req_slot *slot, const char *upload, size_t *upload_size)
{
	api_req *rq = &slot->rq;
	int rc = 0;
	size_t n = *upload_size;
	*upload_size = 0;
	rq->upload.received += n;
	if (n > 0 && slot->upload_failed) {
		if (rq->upload.received - slot->upload_failed_at <= UPLOAD_DRAIN_MAX)
			return MHD_YES; /* dropped */
	} else if (n > 0) {
		if (rq->upload.received > rq->upload.limit)
			api_fail(rq, ERR_BODY_TOO_LARGE, "the upload exceeds %llu bytes",
			         rq->upload.limit);
		else
			rc = rq->upload.feed(rq, upload, n);
		if (rq->status == 0 && rc == 0)
			return MHD_YES;
		end_pipeline(rq, rc);
		release_db(rq);
		slot->upload_failed = true;
		slot->upload_failed_at = rq->upload.received;
		return MHD_YES; /* answered once the rest is read */
	} else if (!slot->upload_failed) {
		return step_defer(slot, STEP_UPLOAD_FINISH);
	}
	return send_response(slot);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	(void)version;
	api_server *s = cls;
	req_slot *slot = *con_cls;
	if (!slot) {
		slot = calloc(1, sizeof(*slot));
		if (!slot)
			return MHD_NO;
		slot->start = clock_mono_s();
		api_req *rq = &slot->rq;
		rq->srv = s;
		rq->cfg = s->cfg;
		rq->conn = conn;
		rq->method = method;
		rq->path = url;
		set_request_id(rq);
		set_path_shown(rq);
		set_client_addr(rq);
		*con_cls = slot;
		const char *cl =
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
		if (is_upload(s, method, url))
			return upload_begin(slot, cl);
		if (cl && strtoull(cl, NULL, 10) > (unsigned long long)s->cfg->body_limit) {
			/*
			 * An announced oversized body: refused before a byte is read when
			 * the client waits for the answer (or the body is too large to
			 * drain), else once the body it is already sending is read and
			 * dropped, so that no reset (over TLS, of the whole answer)
			 * takes the 413 away, as for uploads
			 */
			if (!refuse_at_once(conn, cl)) {
				rq->body_too_large = true;
				return MHD_YES;
			}
			api_fail(rq, ERR_BODY_TOO_LARGE, "the body exceeds %d bytes",
			         s->cfg->body_limit);
			return send_response(slot);
		}
		return MHD_YES;
	}
	api_req *rq = &slot->rq;
	if (slot->answered) {
		*upload_size = 0; /* discard the rest of a refused body */
		return MHD_YES;
	}
	if (slot->step_done)
		return send_response(slot);
	if (slot->uploading)
		return upload_step(slot, upload, upload_size);
	if (*upload_size > 0) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (rq->body_too_large || rq->body_len + n > (size_t)s->cfg->body_limit) {
			rq->body_too_large = true;
			return MHD_YES;
		}
		char *nb = realloc(rq->body, rq->body_len + n + 1);
		if (!nb)
			return MHD_NO;
		memcpy(nb + rq->body_len, upload, n);
		rq->body = nb;
		rq->body_len += n;
		rq->body[rq->body_len] = '\0';
		return MHD_YES;
	}
	if (!pipeline_route(rq))
		return send_response(slot); /* refused before any wait */
	if (!runs_here(rq))
		return step_defer(slot, STEP_PIPELINE);
	pipeline_rest(rq);
	release_db(rq);
	return send_response(slot);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	req_slot *slot = *con_cls;
	if (!slot)
		return;
	if (slot->step_done && !slot->answered)
		log_request(slot); /* ran, but the client was gone before its answer */
	api_req *rq = &slot->rq;
	if (rq->db)
		db_release(rq->srv->pool, rq->db);
	if (rq->stream.free)
		rq->stream.free(rq->stream.ctx); /* a stream left behind by a problem answer */
	if (rq->upload.release)
		rq->upload.release(rq->upload.ctx); /* finished, refused or cut off */
	json_decref(rq->out);
	json_decref(rq->field_errors);
	json_decref(rq->body_json);
	free(rq->raw_owned);
	free(rq->body);
	free(slot);
	*con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	log_printf(LOG_WARN, "http: %s", buf);
}

/* Free what server_start() made beside the daemon (a stopped hub, the followers' slots...). */
static void parts_free(api_server *s)
{
	peers_stop(s->peers); /* deletes its row: the pool is still open */
	s->peers = NULL;
	workers_free(s->workers);
	s->workers = NULL;
	stream_hub_free(s->hub);
	s->hub = NULL;
	followers_free(s->followers);
	s->followers = NULL;
	report_slots_free(s->reports);
	s->reports = NULL;
	readcache_free(s->reads);
	s->reads = NULL;
	auditseq_stop(s->auditseq);
	s->auditseq = NULL;
	authfail_stop(s->authfail); /* writes the failures it counted: the pool is still open */
	s->authfail = NULL;
	ratelimit_free(s->rl);
	s->rl = NULL;
	telemetry_release(&s->tm);
	webhook_sender_stop(s->hooks);
	s->hooks = NULL;
}

/* The count of live API processes changed or was renewed: hold this one's share. */
static void on_peers(void *arg, int live)
{
	api_server *s = arg;
	ratelimit_share(s->rl, live);
	followers_share(s->followers, live);
	report_slots_share(s->reports, live);
	prom_set(s->tm.processes, NULL, live);
}

/* The daemon's polling threads: TRAINYARD_IO_THREADS, or one per CPU. */
static unsigned io_threads(const ty_config *cfg)
{
	long n = cfg->io_threads > 0 ? cfg->io_threads : sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1u : (unsigned)n;
}

int server_start(api_server *s, const ty_config *cfg, db_pool *pool)
{
	struct sockaddr_in sa;
	if (listen_parse(cfg->listen, &sa) < 0) {
		log_printf(LOG_ERROR, "invalid TRAINYARD_LISTEN \"%s\" (expected IPv4:port)",
		           cfg->listen);
		return -1;
	}
	char terr[512];
	if (api_tls_load(cfg, &sa, &s->tls, terr, sizeof(terr)) < 0) {
		log_printf(LOG_ERROR, "%s", terr);
		return -1;
	}
	s->cfg = cfg;
	s->pool = pool;
	s->routes = routes_table(&s->n_routes);
	/* class 0 per API token (or attempt credential), class 1 per user, class 2 per
	 * client address for failed authentications (auth.c) */
	const ratelimit_rate rates[] = {{cfg->rate_rps, cfg->rate_burst},
	                                {cfg->rate_user_rps, cfg->rate_user_burst},
	                                {cfg->rate_anon_rps, cfg->rate_anon_burst}};
	s->rl = ratelimit_new(3, rates);
	s->followers = followers_new(cfg->log_followers, cfg->log_followers_per_tenant,
	                             cfg->log_followers_per_user, cfg->log_followers_per_token);
	s->reports = report_slots_new(cfg->report_streams, cfg->report_streams_per_tenant);
	s->reads = readcache_new(cfg->read_cache_ms, cfg->db, cfg->db_retry_ms);
	s->auditseq = auditseq_start(cfg, s->has_audit_key ? &s->audit_key : NULL);
	int tm = telemetry_init(&s->tm);
	s->authfail = tm == 0 ? authfail_start(pool, cfg->auth_fail_audit_s, s->tm.audit) : NULL;
	if (!s->authfail)
		tm = -1;
	if (s->has_master && !(s->hooks = webhook_sender_start(cfg, &s->master)))
		tm = -1;
	if (tm == 0 && s->rl && s->followers && s->reports &&
	    !(s->peers = peers_start(pool, cfg->listen, on_peers, s)))
		tm = -1;
	s->workers = s->rl && s->followers && s->reports && s->reads && s->auditseq && tm == 0
	                 ? workers_start(cfg->threads)
	                 : NULL;
	s->hub = s->workers ? stream_hub_start() : NULL;
	if (!s->hub) {
		parts_free(s);
		api_tls_release(&s->tls);
		return -1;
	}
	/* suspend/resume: a streamed answer waiting for data holds no thread (stream_hub.h) */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
	                 MHD_ALLOW_SUSPEND_RESUME | (s->tls.on ? MHD_USE_TLS : 0);
	struct MHD_OptionItem tls_options[] = {
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls.key},
	    {MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls.cert},
	    {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)API_TLS_PRIORITIES},
	    {MHD_OPTION_END, 0, NULL},
	};
	if (!s->tls.on)
		tls_options[0].option = MHD_OPTION_END;
	s->daemon = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE,
	    io_threads(cfg), MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	    MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_CONNECTION_LIMIT, 1024u,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_ARRAY, tls_options, MHD_OPTION_END);
	if (!s->daemon) {
		log_printf(LOG_ERROR, "could not listen on %s%s", cfg->listen,
		           s->tls.on ? " with TLS (is the certificate the key's?)" : "");
		stream_hub_stop(s->hub);
		parts_free(s);
		api_tls_release(&s->tls);
		return -1;
	}
	peers_listening(s->peers); /* a crashed predecessor here no longer counts */
	log_event(LOG_INFO, "listening",
	          json_pack("{s:s, s:i, s:i, s:s}", "listen", cfg->listen, "threads", cfg->threads,
	                    "io_threads", (int)io_threads(cfg), "scheme",
	                    s->tls.on ? "https" : "http"));
	return 0;
}

void server_stop(api_server *s)
{
	/* no connection may stay suspended past here: streams waiting for data, requests queued */
	stream_hub_stop(s->hub);
	workers_stop(s->workers);
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	s->daemon = NULL;
	parts_free(s); /* after the daemon: its streams have given their slots */
	api_tls_release(&s->tls);
}
