/*
 * alerts.h - the alerts the scheduler raises (raise_alert(), in
 * migrations/0010_alerts.sql, which quiets repeats and queues the
 * tenants' webhooks): a running attempt that reports no step for
 * TRAINYARD_ALERT_STALL_S (stalled), a job queued again after its third
 * failed attempt or later (restarts), and a tenant that has used 90% of
 * its monthly device-hours (quota_nearly_spent). A failure to raise one
 * is logged and changes nothing else.
 */
#ifndef TY_SCHED_ALERTS_H
#define TY_SCHED_ALERTS_H

#include <jansson.h>

#include "scheduler.h"

/* Raise kind for job_id (its tenant's) with detail (taken), quiet for the interval quiet. */
void sched_alert_job(sched *s, const char *job_id, const char *kind, json_t *detail,
                     const char *quiet);
/* Raise kind for tenant_id alone. */
void sched_alert_tenant(sched *s, const char *tenant_id, const char *kind, json_t *detail,
                        const char *quiet);
/* Every running attempt silent for TRAINYARD_ALERT_STALL_S: a stalled alert. */
void sched_alert_stalls(sched *s);

#endif
