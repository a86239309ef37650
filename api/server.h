/*
 * server.h - the HTTP server: libmicrohttpd glue and the request pipeline
 * (route -> authenticate -> rate limit -> authorise -> handler -> log).
 */
#ifndef TY_SERVER_H
#define TY_SERVER_H

#include "api.h"
#include "auditsign.h"
#include "crypt.h"
#include "ratelimit.h"
#include "telemetry.h"
#include "tls.h"

struct api_server {
	const ty_config *cfg;
	crypt_key master;          /* wraps the tenants' keys (crypt.h, keys.h) */
	bool has_master;           /* false: no master key configured; key routes answer 503 */
	audit_signer audit_key;    /* signs the audit log's tree heads (auditsign.h) */
	bool has_audit_key;        /* false: TRAINYARD_AUDIT_KEY_FILE unset; no head is signed */
	struct auditseq *auditseq; /* the audit log's sequencer thread (auditseq.h) */
	db_pool *pool;
	ratelimit *rl;
	struct authfail *authfail; /* failed authentications counted per address (authfail.h) */
	const route *routes;
	size_t n_routes;
	struct MHD_Daemon *daemon;
	struct workers *workers;      /* the threads that run requests (workers.h) */
	api_tls tls;                  /* HTTPS, or plain HTTP on loopback (tls.h) */
	struct stream_hub *hub;       /* streamed answers waiting for data (stream.c) */
	struct followers *followers;  /* the slots of GET /v1/jobs/{job}/logs?follow=1 (h_logs.c) */
	struct report_slots *reports; /* slots of streamed reports, exports (report_slots.h) */
	struct readcache *reads;      /* job answers served from memory (readcache.h) */
	api_telemetry tm;             /* the metrics of GET /metrics (telemetry.h) */
	struct peers *peers;          /* the API processes sharing the limits (peers.h) */
	struct webhook_sender
	    *hooks; /* delivers alerts (webhook_send.h); NULL without a master key */
};

/* Start listening on cfg->listen. RET 0, or -1 with the reason logged. */
int server_start(api_server *s, const ty_config *cfg, db_pool *pool);
void server_stop(api_server *s);

/* Get rq's pooled connection, acquiring it on first use. RET 0 or -ERR_DB_UNAVAILABLE. */
int api_db(api_req *rq);

#endif
