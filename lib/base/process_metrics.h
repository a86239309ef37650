/*
 * process_metrics.h - the metrics every trainyard program exports about
 * itself, named as Prometheus' client libraries name them, so that
 * dashboards and alerts written for any exporter work on ours:
 * process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds (read from /proc/self at each scrape), and
 * trainyard_build_info{program, version, revision} = 1.
 */
#ifndef TY_PROCESS_METRICS_H
#define TY_PROCESS_METRICS_H

#include <pthread.h>
#include <stdbool.h>

#include "prom.h"

typedef struct process_metrics {
	prom_family *cpu, *resident, *virtual_bytes, *open_fds, *max_fds, *start, *build;
	pthread_mutex_t mu;
	bool mu_ready;
	double cpu_counted; /* CPU seconds already added to the counter */
} process_metrics;

/* Register the families in r for program ("api", "scheduler"). RET 0, or -1. */
int process_metrics_register(process_metrics *m, prom_registry *r, const char *program);

/* Read /proc/self into the families: call before each rendering. Thread-safe. */
void process_metrics_update(process_metrics *m);

void process_metrics_free(process_metrics *m);

#endif
