/*
 * telemetry.c - the API's metrics (telemetry.h).
 */
#include "telemetry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

/* Seconds: a request, a wait for a connection. */
static const double latency_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1,   0.25,   0.5,   1,    2.5,   10};

int telemetry_init(api_telemetry *t)
{
	memset(t, 0, sizeof(*t));
	if (!(t->reg = prom_registry_new()))
		return -1;
	const char *const req[] = {"route", "method", "code"};
	const char *const lat[] = {"route", "method"};
	const char *const outcome[] = {"outcome"};
	const char *const tenant_state[] = {"tenant", "state"};
	const char *const tenant[] = {"tenant"};
	const int nb = (int)(sizeof(latency_buckets) / sizeof(latency_buckets[0]));
	t->requests = prom_counter(
	    t->reg, "trainyard_http_requests_total",
	    "HTTP requests answered, by route pattern, method and status code", 3, req);
	t->latency = prom_histogram(t->reg, "trainyard_http_request_duration_seconds",
	                            "Time from a request's first byte to its answer", 2, lat,
	                            latency_buckets, nb);
	t->pool_wait =
	    prom_histogram(t->reg, "trainyard_db_pool_wait_seconds",
	                   "Time a request waited for a database connection from the pool", 0, NULL,
	                   latency_buckets, nb);
	t->processes = prom_gauge(t->reg, "trainyard_api_processes",
	                          "API processes serving the platform, as this one counts them; "
	                          "each holds its share of the rate limits and stream caps",
	                          0, NULL);
	t->audit = prom_counter(t->reg, "trainyard_audit_records_written_total",
	                        "Audit records written, by the outcome they record", 1, outcome);
	t->jobs = prom_gauge(t->reg, "trainyard_jobs", "Jobs by tenant and state", 2, tenant_state);
	t->oldest = prom_gauge(t->reg, "trainyard_queue_oldest_job_age_seconds",
	                       "Age of each tenant's oldest queued job", 1, tenant);
	t->devices = prom_gauge(t->reg, "trainyard_tenant_devices_in_use",
	                        "Devices (GPUs, or CPU ranks) held by each tenant's active jobs, "
	                        "counted against max_gpus",
	                        1, tenant);
	t->quota = prom_gauge(t->reg, "trainyard_tenant_device_quota",
	                      "Each tenant's max_gpus quota", 1, tenant);
	t->storage =
	    prom_gauge(t->reg, "trainyard_tenant_storage_bytes",
	               "Sealed bytes each tenant stores: its checkpoints, dataset versions "
	               "and logs, counted against max_storage_bytes",
	               1, tenant);
	t->storage_quota = prom_gauge(t->reg, "trainyard_tenant_storage_quota_bytes",
	                              "Each tenant's max_storage_bytes quota", 1, tenant);
	if (!t->requests || !t->latency || !t->pool_wait || !t->processes || !t->audit ||
	    !t->jobs || !t->oldest || !t->devices || !t->quota || !t->storage ||
	    !t->storage_quota || process_metrics_register(&t->process, t->reg, "api") < 0) {
		telemetry_release(t);
		return -1;
	}
	return 0;
}

void telemetry_release(api_telemetry *t)
{
	process_metrics_free(&t->process);
	prom_registry_free(t->reg);
	memset(t, 0, sizeof(*t));
}

static const char *method_label(const char *m)
{
	static const char *const known[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (m && strcmp(m, known[i]) == 0)
			return known[i];
	return "other";
}

void telemetry_request(api_telemetry *t, const char *route, const char *method, int status,
                       double seconds)
{
	char code[8];
	snprintf(code, sizeof(code), "%d", status);
	const char *r = route ? route : "unmatched";
	const char *const rv[] = {r, method_label(method), code};
	prom_add(t->requests, rv, 1);
	prom_observe(t->latency, rv, seconds);
}

/*
 * One row per tenant and state with jobs, then one per tenant with its
 * oldest queued job's age, devices held and quota, storage used
 * (tenant_storage_bytes(), migrations/0014_storage_quota.sql) and storage
 * quota (state NULL on those).
 */
#define SCRAPE_SQL                                                                                 \
	"SELECT t.name, j.state, count(*), NULL, NULL, NULL, NULL, NULL FROM jobs j"               \
	" JOIN tenants t ON t.id = j.tenant_id GROUP BY t.name, j.state"                           \
	" UNION ALL"                                                                               \
	" SELECT t.name, NULL, NULL,"                                                              \
	"  (SELECT extract(epoch FROM now() - min(q.created_at)) FROM jobs q"                      \
	"    WHERE q.tenant_id = t.id AND q.state = 'queued'),"                                    \
	"  (SELECT devices FROM tenant_quota_use(t.id)),"                                          \
	"  q.max_gpus, tenant_storage_bytes(t.id), q.max_storage_bytes"                            \
	" FROM tenants t LEFT JOIN quotas q ON q.tenant_id = t.id"

char *telemetry_scrape(api_telemetry *t, PGconn *db, size_t *len, int *db_failed)
{
	static const char sql[] = SCRAPE_SQL;
	PGresult *r = NULL;
	*db_failed = 0;
	if (db_query(db, &r, sql, 0, NULL) < 0) {
		PQclear(r);
		*db_failed = 1;
		return NULL;
	}
	prom_reset(t->jobs);
	prom_reset(t->oldest);
	prom_reset(t->devices);
	prom_reset(t->quota);
	prom_reset(t->storage);
	prom_reset(t->storage_quota);
	for (int i = 0; i < PQntuples(r); i++) {
		const char *tenant = PQgetvalue(r, i, 0);
		const char *const one[] = {tenant};
		if (!PQgetisnull(r, i, 1)) {
			const char *const ts[] = {tenant, PQgetvalue(r, i, 1)};
			prom_set(t->jobs, ts, atof(PQgetvalue(r, i, 2)));
			continue;
		}
		if (!PQgetisnull(r, i, 3))
			prom_set(t->oldest, one, atof(PQgetvalue(r, i, 3)));
		prom_set(t->devices, one, atof(PQgetvalue(r, i, 4)));
		if (!PQgetisnull(r, i, 5))
			prom_set(t->quota, one, atof(PQgetvalue(r, i, 5)));
		prom_set(t->storage, one, atof(PQgetvalue(r, i, 6)));
		if (!PQgetisnull(r, i, 7))
			prom_set(t->storage_quota, one, atof(PQgetvalue(r, i, 7)));
	}
	PQclear(r);
	process_metrics_update(&t->process);
	return prom_render(t->reg, len);
}
