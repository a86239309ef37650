/*
 * telemetry.h - the API's metrics, served by GET /metrics in Prometheus'
 * text format: what the request pipeline counts as requests go by
 * (requests and their latency by route, the wait for a database
 * connection, audit records written), and the state of the job queue,
 * read from the database at each scrape. Labels are routes (the pattern,
 * never a path with ids in it), methods, status codes, tenants' names and
 * job states: no user or job id.
 */
#ifndef TY_TELEMETRY_H
#define TY_TELEMETRY_H

#include <libpq-fe.h>
#include <stddef.h>

#include "process_metrics.h"
#include "prom.h"

typedef struct api_telemetry {
	prom_registry *reg;
	prom_family *requests;      /* trainyard_http_requests_total{route,method,code} */
	prom_family *latency;       /* trainyard_http_request_duration_seconds{route,method} */
	prom_family *pool_wait;     /* trainyard_db_pool_wait_seconds */
	prom_family *processes;     /* trainyard_api_processes (peers.h) */
	prom_family *audit;         /* trainyard_audit_records_written_total{outcome} */
	prom_family *jobs;          /* trainyard_jobs{tenant,state} */
	prom_family *oldest;        /* trainyard_queue_oldest_job_age_seconds{tenant} */
	prom_family *devices;       /* trainyard_tenant_devices_in_use{tenant} */
	prom_family *quota;         /* trainyard_tenant_device_quota{tenant} */
	prom_family *storage;       /* trainyard_tenant_storage_bytes{tenant} */
	prom_family *storage_quota; /* trainyard_tenant_storage_quota_bytes{tenant} */
	process_metrics process;    /* process_*, trainyard_build_info */
} api_telemetry;

/* Register every family. RET 0, or -1 when out of memory. */
int telemetry_init(api_telemetry *t);
void telemetry_release(api_telemetry *t);

/* One answered request: route NULL when none matched. */
void telemetry_request(api_telemetry *t, const char *route, const char *method, int status,
                       double seconds);

/*
 * The queue's gauges from the database (one query), then the whole
 * exposition. RET malloc'ed text (*len bytes), or NULL: *db_failed says
 * whether the query failed (else out of memory).
 */
char *telemetry_scrape(api_telemetry *t, PGconn *db, size_t *len, int *db_failed);

#endif
