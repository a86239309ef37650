/*
 * alerts.c - the alerts the scheduler raises (alerts.h).
 */
#include "alerts.h"

#include <stdio.h>
#include <stdlib.h>

#include "db.h"
#include "log.h"

static void raise_sql(sched *s, const char *sql, const char *id, const char *kind, json_t *detail,
                      const char *quiet)
{
	char *d = json_dumps(detail ? detail : json_object(), JSON_COMPACT);
	json_decref(detail);
	const char *p[] = {id, kind, d ? d : "{}", quiet};
	if (db_query(s->db, NULL, sql, 4, p))
		log_printf(LOG_WARN, "could not raise a %s alert", kind);
	free(d);
}

void sched_alert_job(sched *s, const char *job_id, const char *kind, json_t *detail,
                     const char *quiet)
{
	raise_sql(s,
	          "SELECT raise_alert(j.tenant_id, j.id, $2, $3::jsonb, $4::interval)"
	          " FROM jobs j WHERE j.id = $1",
	          job_id, kind, detail, quiet);
}

void sched_alert_tenant(sched *s, const char *tenant_id, const char *kind, json_t *detail,
                        const char *quiet)
{
	raise_sql(s, "SELECT raise_alert($1::uuid, NULL, $2, $3::jsonb, $4::interval)", tenant_id,
	          kind, detail, quiet);
}

void sched_alert_stalls(sched *s)
{
	char stall[16];
	snprintf(stall, sizeof(stall), "%d", s->cfg->alert_stall_s);
	const char *p[] = {stall};
	if (db_query(
	        s->db, NULL,
	        "SELECT raise_alert(j.tenant_id, j.id, 'stalled',"
	        " jsonb_build_object('attempt', a.number, 'silent_s', $1::int,"
	        "  'last_step', (SELECT max(m.step) FROM job_metrics m WHERE m.attempt_id = a.id)),"
	        " interval '1 hour')"
	        " FROM job_attempts a JOIN jobs j ON j.id = a.job_id"
	        " WHERE a.state = 'running' AND a.ended_at IS NULL AND j.state = 'running'"
	        " AND coalesce((SELECT max(m.at) FROM job_metrics m WHERE m.attempt_id = a.id),"
	        "  a.started_at, a.created_at) < now() - $1::int * interval '1 second'",
	        1, p))
		log_printf(LOG_WARN, "could not look for stalled attempts");
}
