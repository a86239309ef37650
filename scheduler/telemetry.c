/*
 * telemetry.c - the scheduler's metrics and their HTTP listener (telemetry.h).
 */
#include "telemetry.h"

#include <microhttpd.h>
#include <string.h>

#include "listen.h"
#include "log.h"

static const double cycle_buckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
/* Seconds in the queue: a second up to a day. */
static const double wait_buckets[] = {1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **state)
{
	sched_telemetry *t = cls;
	(void)version;
	(void)upload_data;
	(void)upload_size;
	(void)state;
	struct MHD_Response *resp;
	unsigned status = MHD_HTTP_OK;
	size_t len = 0;
	char *text = NULL;
	if (strcmp(url, "/metrics") != 0) {
		status = MHD_HTTP_NOT_FOUND;
	} else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else {
		process_metrics_update(&t->process);
		if (!(text = prom_render(t->reg, &len)))
			status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	if (text) {
		resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(resp, "Content-Type", PROM_CONTENT_TYPE);
	} else {
		resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
			MHD_add_response_header(resp, "Allow", "GET, HEAD");
	}
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	enum MHD_Result rc = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

int sched_telemetry_start(sched_telemetry *t, const char *listen)
{
	memset(t, 0, sizeof(*t));
	if (!(t->reg = prom_registry_new()))
		return -1;
	const char *const tenant[] = {"tenant"}, *const outcome[] = {"outcome"},
	                  *const klass[] = {"class"};
	prom_registry *r = t->reg;
	t->leader = prom_gauge(r, "trainyard_scheduler_leader",
	                       "1 while this scheduler leads (holds the lock), else 0", 0, NULL);
	t->cycles = prom_counter(r, "trainyard_scheduler_cycles_total",
	                         "Scheduling cycles run while leading, by outcome", 1, outcome);
	t->cycle_s = prom_histogram(r, "trainyard_scheduler_cycle_duration_seconds",
	                            "Time one scheduling cycle took", 0, NULL, cycle_buckets,
	                            N(cycle_buckets));
	t->admitted = prom_counter(r, "trainyard_scheduler_admitted_total",
	                           "Jobs admitted, by tenant", 1, tenant);
	t->queue_wait = prom_histogram(r, "trainyard_scheduler_queue_wait_seconds",
	                               "Time an admitted job waited in the queue since submission, "
	                               "by tenant",
	                               1, tenant, wait_buckets, N(wait_buckets));
	t->dispatched = prom_counter(r, "trainyard_scheduler_dispatches_total",
	                             "Admitted jobs handed to Slurm, by outcome", 1, outcome);
	t->ended =
	    prom_counter(r, "trainyard_scheduler_attempts_ended_total",
	                 "Attempts that ended, by failure class (ok: the job finished)", 1, klass);
	t->retries =
	    prom_counter(r, "trainyard_scheduler_retries_total",
	                 "Jobs queued again after a failed attempt, by failure class", 1, klass);
	t->rank = prom_gauge(r, "trainyard_scheduler_fair_share_rank",
	                     "Each tenant's place in the last cycle's fair-share order (1 first)",
	                     1, tenant);
	t->usage = prom_gauge(r, "trainyard_scheduler_tenant_usage_device_seconds",
	                      "Each tenant's recent device time that fair share weighs, decayed by "
	                      "the half-life",
	                      1, tenant);
	t->devices = prom_gauge(r, "trainyard_scheduler_tenant_devices_in_use",
	                        "Devices each tenant's active jobs hold, counted against its quota",
	                        1, tenant);
	t->quota = prom_gauge(r, "trainyard_scheduler_tenant_device_quota",
	                      "Each tenant's max_gpus quota", 1, tenant);
	const char *const preempted[] = {"tenant", "class", "reason"};
	t->preemptions = prom_counter(r, "trainyard_scheduler_preemptions_total",
	                              "Running jobs the scheduler asked to checkpoint and stop for "
	                              "another, by the victim's tenant and priority class, and why "
	                              "(reclaim, priority)",
	                              3, preempted);
	if (!t->leader || !t->cycles || !t->cycle_s || !t->admitted || !t->queue_wait ||
	    !t->dispatched || !t->ended || !t->retries || !t->rank || !t->usage || !t->devices ||
	    !t->quota || !t->preemptions ||
	    process_metrics_register(&t->process, r, "scheduler") < 0) {
		sched_telemetry_stop(t);
		return -1;
	}
	prom_set(t->leader, NULL, 0);
	if (!listen || !*listen)
		return 0;
	struct sockaddr_in sa;
	if (listen_parse(listen, &sa) < 0) {
		log_printf(LOG_ERROR,
		           "invalid TRAINYARD_SCHED_METRICS_LISTEN \"%s\" "
		           "(expected IPv4:port)",
		           listen);
		sched_telemetry_stop(t);
		return -1;
	}
	t->http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, t,
	                           MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	                           MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_LIMIT,
	                           64u, MHD_OPTION_END);
	if (!t->http)
		/* another scheduler on this host holds the address: go on without */
		log_printf(LOG_WARN, "could not serve metrics on %s; going on without them",
		           listen);
	else
		log_printf(LOG_INFO, "metrics on http://%s/metrics", listen);
	return 0;
}

void sched_telemetry_stop(sched_telemetry *t)
{
	if (t->http)
		MHD_stop_daemon(t->http);
	process_metrics_free(&t->process);
	prom_registry_free(t->reg);
	memset(t, 0, sizeof(*t));
}

void sched_count(prom_family *f, const char *label, double n)
{
	const char *const v[] = {label};
	prom_add(f, label ? v : NULL, n);
}

void sched_gauge(prom_family *f, const char *label, double v)
{
	const char *const l[] = {label};
	prom_set(f, label ? l : NULL, v);
}
