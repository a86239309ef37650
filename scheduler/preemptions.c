/*
 * preemptions.c - the cycle's side of preemption (the rule is preempt.h):
 * victims asked to checkpoint and stop for a waiting job, their grace
 * period kept, and each preemption's record closed when its attempt ends.
 *
 * Asking is a move of the victim's job from running to preempting (a job
 * event), a preemptions row and an audit record (job.preempt), in one
 * transaction. The worker runtime learns it from the answer to its next
 * report (job_state "preempting"), stops the launch with SIGUSR1, the
 * trainer saves at its next step boundary and exits, and the attempt ends
 * in the class preempted. An attempt still running TRAINYARD_PREEMPT_GRACE_S
 * after the ask is cancelled through Slurm (outcome cancelled; it loses
 * the steps since its last checkpoint). Either way the job is requeued
 * (failure.def: preempted requeues, not counted as a restart) with its
 * original submission time, and resumes from its last checkpoint.
 * Closing the record writes the progress lost, an audit record
 * (job.preempted) and the requeue event's detail.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "db.h"
#include "failure.h"
#include "jobstate.h"
#include "log.h"
#include "preempt.h"
#include "scheduler.h"

/* What candidates_load() reads of each, beside the rule's fields. */
typedef struct candidate_info {
	char tenant_name[64], klass[40];
} candidate_info;

/*
 * Every running attempt that preemption could free: jobs running or
 * preempting, their current attempt started and followed.
 */
#define CANDIDATES_SQL                                                                             \
	"SELECT j.id, a.id, j.tenant_id, t.name, a.devices, a.borrowed_devices, j.priority,"       \
	" j.priority_class, (j.spec->'resources'->>'ranks_per_node')::int,"                        \
	" (j.spec->'resources'->>'gpus_per_node')::int, coalesce(a.node_list, ''),"                \
	" j.preemptible, j.state = 'preempting', extract(epoch FROM now() - a.started_at),"        \
	" greatest(coalesce((SELECT max(m.step) FROM job_metrics m WHERE m.attempt_id = a.id), 0)" \
	"   - coalesce((SELECT max(c.step) FROM checkpoints c WHERE c.job_id = j.id), 0), 0)"      \
	" FROM jobs j JOIN job_attempts a ON a.job_id = j.id AND a.number = j.attempts"            \
	" JOIN tenants t ON t.id = j.tenant_id"                                                    \
	" WHERE j.state IN ('running', 'preempting') AND a.followed"                               \
	" AND a.started_at IS NOT NULL AND a.state <> 'ended' ORDER BY j.id"

static int candidates_load(sched *s, const admit_cluster *room, preempt_candidate **out,
                           candidate_info **info, int *n)
{
	PGresult *r;
	*out = NULL;
	*info = NULL;
	*n = 0;
	if (db_query(s->db, &r, CANDIDATES_SQL, 0, NULL)) {
		PQclear(r);
		return -1;
	}
	int k = PQntuples(r);
	preempt_candidate *c = calloc(k ? (size_t)k : 1, sizeof(*c));
	candidate_info *ci = calloc(k ? (size_t)k : 1, sizeof(*ci));
	if (!c || !ci) {
		free(c);
		free(ci);
		PQclear(r);
		return -1;
	}
	for (int i = 0; i < k; i++) {
		preempt_candidate *x = &c[i];
		snprintf(x->job_id, sizeof(x->job_id), "%s", PQgetvalue(r, i, 0));
		snprintf(x->attempt_id, sizeof(x->attempt_id), "%s", PQgetvalue(r, i, 1));
		snprintf(x->tenant_id, sizeof(x->tenant_id), "%s", PQgetvalue(r, i, 2));
		snprintf(ci[i].tenant_name, sizeof(ci[i].tenant_name), "%s", PQgetvalue(r, i, 3));
		x->devices = atoi(PQgetvalue(r, i, 4));
		x->borrowed = atoi(PQgetvalue(r, i, 5));
		x->priority = atoi(PQgetvalue(r, i, 6));
		snprintf(ci[i].klass, sizeof(ci[i].klass), "%s", PQgetvalue(r, i, 7));
		x->cpus_per_node = atoi(PQgetvalue(r, i, 8));
		x->gpus_per_node = atoi(PQgetvalue(r, i, 9));
		x->n_nodes = sl_nodes_in(room, PQgetvalue(r, i, 10), x->node, ADMIT_MAX_NODES);
		x->preemptible = PQgetvalue(r, i, 11)[0] == 't';
		x->preempting = PQgetvalue(r, i, 12)[0] == 't';
		x->run_s = atof(PQgetvalue(r, i, 13));
		x->unsaved = atoi(PQgetvalue(r, i, 14));
	}
	PQclear(r);
	*out = c;
	*info = ci;
	*n = k;
	return 0;
}

/*
 * Ask victim c to checkpoint and stop for job j of tenant t, in one
 * transaction. RET 0; 1 when c's job moved meanwhile (nothing done);
 * -1 when the database failed.
 */
static int ask_one(sched *s, const preempt_candidate *c, const candidate_info *ci,
                   const admit_job *j, const admit_tenant *t)
{
	const char *why_name = preempt_reason_name(c->taken);
	int grace = s->cfg->preempt_grace_s;
	char why[256];
	snprintf(why, sizeof(why),
	         "preempting for job %s of tenant %s (%s): checkpoint and stop within %d s", j->id,
	         t->name,
	         c->taken == PREEMPT_RECLAIM ? "it takes back its guaranteed devices"
	                                     : "a higher priority class waits",
	         grace);
	json_t *d =
	    json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s, s:i, s:i, s:i}", "attempt_id",
	              c->attempt_id, "beneficiary_job_id", j->id, "beneficiary_tenant", t->name,
	              "reason", why_name, "borrowed_devices", c->borrowed, "grace_s", grace,
	              "priority_class", ci->klass, "priority", c->priority, "beneficiary_priority",
	              j->priority, "steps_unsaved", c->unsaved);
	if (!d)
		return -1;
	char grace_s[16], borrowed[16];
	snprintf(grace_s, sizeof(grace_s), "%d", grace);
	snprintf(borrowed, sizeof(borrowed), "%d", c->borrowed);
	const char *p[] = {c->job_id, c->attempt_id, c->tenant_id, ci->klass, j->id,
	                   t->id,     why_name,      borrowed,     grace_s};
	char resource[64];
	snprintf(resource, sizeof(resource), "job/%s", c->job_id);
	audit_record a = {.actor_name = "scheduler",
	                  .tenant_id = c->tenant_id,
	                  .action = "job.preempt",
	                  .resource = resource,
	                  .outcome = "success",
	                  .status = 0,
	                  .detail = d};
	int rc = db_begin(s->db);
	if (rc == 0)
		rc = jobstate_transition(s->db, c->job_id, JOB_PREEMPTING, why, NULL, d, NULL);
	if (rc == 0)
		rc = db_query(
		    s->db, NULL,
		    "INSERT INTO preemptions (job_id, attempt_id, tenant_id, priority_class,"
		    " beneficiary_job_id, beneficiary_tenant_id, reason, borrowed_devices,"
		    " grace_s) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::int, $9::int)",
		    9, p);
	if (rc == 0)
		rc = audit_write(s->db, &a);
	if (rc == 0)
		rc = db_commit(s->db);
	json_decref(d);
	if (rc) {
		db_rollback(s->db);
		if (rc == -ERR_JOB_STATE_CONFLICT || rc == -ERR_JOB_NOT_FOUND)
			return 1;
		sched_job_trouble(s, c->job_id, "its preemption could not be recorded");
		return -1;
	}
	const char *const labels[] = {ci->tenant_name, ci->klass, why_name};
	prom_add(s->tm.preemptions, labels, 1);
	log_printf(LOG_INFO, "job %s (tenant %s, class %s): preempting for job %s of %s (%s)",
	           c->job_id, ci->tenant_name, ci->klass, j->id, t->name, why_name);
	return 0;
}

/* The reason of a job that waits for the jobs preempted for it. */
static void waiting_reason(admit_job *j, int victims, bool reclaim)
{
	snprintf(j->reason, sizeof(j->reason),
	         "%s: %d job(s) preempted for it are checkpointing and stopping",
	         reclaim ? "waiting for borrowed devices to return"
	                 : "waiting for lower-priority jobs to stop",
	         victims);
}

/*
 * Why no victim would do: when some job holds borrowed devices it could
 * take back, or runs at a lower priority, but is too young to preempt,
 * the reason says when it may be.
 */
static void young_reason(admit_job *j, const char *tenant_id, const preempt_candidate *c, int n,
                         int min_run_s)
{
	double soonest = -1;
	bool reclaim = false;
	for (int i = 0; i < n; i++) {
		if (preempt_eligible(&c[i], j, tenant_id, 0) == PREEMPT_NONE ||
		    c[i].run_s >= min_run_s)
			continue;
		double left = min_run_s - c[i].run_s;
		if (soonest < 0 || left < soonest) {
			soonest = left;
			reclaim = preempt_eligible(&c[i], j, tenant_id, 0) == PREEMPT_RECLAIM;
		}
	}
	if (soonest >= 0)
		snprintf(j->reason, sizeof(j->reason),
		         "%s: the jobs holding them have run less than "
		         "TRAINYARD_PREEMPT_MIN_RUN_S; the first may be preempted in %.0f s",
		         reclaim ? "waiting for borrowed devices to return"
		                 : "waiting for lower-priority jobs to stop",
		         soonest);
}

/* Ask the victims preempt_plan() marked for j. RET 0, or -1 when the database failed. */
static int ask_victims(sched *s, preempt_candidate *c, const candidate_info *ci, int nc,
                       admit_job *j, const admit_tenant *t)
{
	int asked = 0, rc = 0;
	bool reclaim = false;
	for (int k = 0; k < nc && rc == 0; k++) {
		if (c[k].taken == PREEMPT_NONE || c[k].preempting)
			continue;
		int one = ask_one(s, &c[k], &ci[k], j, t);
		if (one < 0)
			rc = -1;
		if (one == 0) {
			asked++;
			reclaim = reclaim || c[k].taken == PREEMPT_RECLAIM;
		}
		c[k].preempting = true;
	}
	if (asked > 0)
		waiting_reason(j, asked, reclaim);
	return rc;
}

int preempt_for_waiting(sched *s, admit_tenant *ts, int n, admit_cluster *room)
{
	bool any = false;
	for (int i = 0; i < n && !any; i++)
		any =
		    ts[i].next < ts[i].n_jobs && ts[i].jobs[ts[i].next].wait == ADMIT_WAIT_CLUSTER;
	if (!any)
		return 0;
	preempt_candidate *c;
	candidate_info *ci;
	int nc;
	if (candidates_load(s, room, &c, &ci, &nc) < 0)
		return -1;
	int rc = 0, min_run = s->cfg->preempt_min_run_s;
	bool *planned = calloc((size_t)n, sizeof(*planned));
	if (!planned)
		rc = -1;
	/* waiting jobs in admission's order: priority first, then fair share */
	for (int pass = 0; pass < n && rc == 0; pass++) {
		admit_tenant *t = NULL;
		for (int i = 0; i < n; i++) {
			admit_tenant *x = &ts[i];
			if (x->next >= x->n_jobs || x->jobs[x->next].wait != ADMIT_WAIT_CLUSTER ||
			    planned[i])
				continue;
			if (!t || admit_goes_before(x, t))
				t = x;
		}
		if (!t)
			break;
		planned[t - ts] = true;
		admit_job *j = &t->jobs[t->next];
		if (j->waiting_on > 0) {
			waiting_reason(j, j->waiting_on, j->borrowed == 0);
		} else if (preempt_plan(room, j, t->id, c, nc, min_run) == 0) {
			young_reason(j, t->id, c, nc, min_run);
		} else {
			rc = ask_victims(s, c, ci, nc, j, t);
		}
		snprintf(t->reason, sizeof(t->reason), "%s", j->reason);
	}
	free(planned);
	free(c);
	free(ci);
	return rc;
}

int preempt_cancel(sched *s, const char *attempt_id, uint32_t slurm_id)
{
	const char *p[] = {attempt_id, failure_name(FAILURE_PREEMPTED)};
	/* the class first: the attempt's end then reads as preempted, not cancelled */
	int rc = db_begin(s->db);
	if (rc == 0)
		rc = db_query(s->db, NULL,
		              "UPDATE preemptions SET outcome = 'cancelled'"
		              " WHERE attempt_id = $1 AND ended_at IS NULL",
		              1, p);
	if (rc == 0)
		rc = db_query(s->db, NULL,
		              "UPDATE job_attempts SET failure_class = $2 WHERE id = $1", 2, p);
	if (rc == 0)
		rc = db_commit(s->db);
	if (rc) {
		db_rollback(s->db);
		return -1;
	}
	char err[SL_ERR_MAX];
	log_printf(LOG_WARN, "attempt %s: its preemption's grace is over; cancelling Slurm job %u",
	           attempt_id, slurm_id);
	if (sl_cancel(slurm_id, err) < 0)
		log_printf(LOG_WARN, "%s", err);
	return 0;
}

/*
 * checkpointed: it saved after the ask and ended preempted; cancelled
 * (set by preempt_cancel): the grace ran out; finished: anything else (it
 * succeeded, failed for good, or died before it saved).
 */
int preempt_close(sched *s, const char *attempt_id, const char *klass, json_t **detail)
{
	*detail = NULL;
	const char *p[] = {attempt_id, klass};
	PGresult *r;
	int rc = db_query(
	    s->db, &r,
	    "WITH p AS (UPDATE preemptions p SET ended_at = now(),"
	    " outcome = CASE WHEN p.outcome <> '' THEN p.outcome"
	    "   WHEN $2 = 'preempted' AND EXISTS (SELECT 1 FROM checkpoints c"
	    "     WHERE c.attempt_id = p.attempt_id AND c.created_at >= p.asked_at)"
	    "   THEN 'checkpointed' ELSE 'finished' END,"
	    " steps_done = a.steps_done, steps_lost = a.steps_lost"
	    " FROM job_attempts a WHERE a.id = p.attempt_id AND p.attempt_id = $1"
	    " AND p.ended_at IS NULL RETURNING p.*)"
	    " SELECT json_build_object('preemption_id', p.id, 'attempt_id', p.attempt_id,"
	    " 'tenant', t.name, 'priority_class', p.priority_class,"
	    " 'beneficiary_job_id', p.beneficiary_job_id, 'beneficiary_tenant', b.name,"
	    " 'reason', p.reason, 'borrowed_devices', p.borrowed_devices, 'grace_s', p.grace_s,"
	    " 'grace_used_s', round(extract(epoch FROM p.ended_at - p.asked_at)::numeric, 3),"
	    " 'outcome', p.outcome, 'steps_done', p.steps_done, 'steps_lost', p.steps_lost)::text,"
	    " p.job_id, p.tenant_id FROM p JOIN tenants t ON t.id = p.tenant_id"
	    " LEFT JOIN tenants b ON b.id = p.beneficiary_tenant_id",
	    2, p);
	if (rc || PQntuples(r) != 1) {
		PQclear(r);
		return rc;
	}
	json_t *d = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	char resource[64];
	snprintf(resource, sizeof(resource), "job/%s", PQgetvalue(r, 0, 1));
	audit_record a = {.actor_name = "scheduler",
	                  .tenant_id = PQgetvalue(r, 0, 2),
	                  .action = "job.preempted",
	                  .resource = resource,
	                  .outcome = "success",
	                  .status = 0,
	                  .detail = d};
	rc = d ? audit_write(s->db, &a) : -ERR_INTERNAL;
	PQclear(r);
	if (rc)
		json_decref(d);
	else
		*detail = d;
	return rc;
}
