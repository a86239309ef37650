/*
 * telemetry.h - the scheduler's metrics, served in Prometheus' text format
 * at GET /metrics on its own listen address (TRAINYARD_SCHED_METRICS_LISTEN;
 * empty: none). Every scheduler serves them, the one that leads and those
 * waiting to; trainyard_scheduler_leader tells them apart.
 *
 * Counted as the leader works: cycles and their duration, admissions and
 * each admitted job's wait in the queue per tenant, dispatches by outcome,
 * attempts ended by failure class, retries by class, preemptions by
 * the victim's tenant, class and reason. Set at each cycle
 * from what admission computed: each tenant's fair-share rank, decayed
 * usage, devices in use and device quota. Labels are tenant names,
 * outcomes and classes: no user or job id.
 */
#ifndef TY_SCHED_TELEMETRY_H
#define TY_SCHED_TELEMETRY_H

#include "process_metrics.h"
#include "prom.h"

typedef struct sched_telemetry {
	prom_registry *reg;
	prom_family *leader, *cycles, *cycle_s, *admitted, *queue_wait, *dispatched, *ended,
	    *retries, *rank, *usage, *devices, *quota, *preemptions;
	process_metrics process; /* process_*, trainyard_build_info */
	struct MHD_Daemon *http; /* NULL: not serving */
} sched_telemetry;

/* Register the families; serve them on listen unless it is "". RET 0, or -1 (logged). */
int sched_telemetry_start(sched_telemetry *t, const char *listen);
void sched_telemetry_stop(sched_telemetry *t);

/* Shorthands for the families that take one label (NULL: none). */
void sched_count(prom_family *f, const char *label, double n);
void sched_gauge(prom_family *f, const char *label, double v);

#endif
