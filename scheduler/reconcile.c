/*
 * reconcile.c - follow every submitted attempt's Slurm job to its end.
 *
 * Each cycle walks the attempts the scheduler follows (followed, with a
 * Slurm id) against the cycle's snapshot of slurmctld (s->sj):
 *   pending     the job's state_reason says why Slurm holds it
 *   running     the attempt's start and nodes are recorded, the job is
 *               running; a heartbeat silent past the spec's
 *               fault_tolerance.heartbeat_timeout_s cancels it as a hang
 *   final       the attempt ends with its failure class, steps done and
 *               steps lost; the job ends, or goes back to the queue for a
 *               retry chosen by retry_decide() (retry.h)
 *   not there   slurmctld no longer holds it: sacct tells its end; one
 *               that accounting does not show ended is lost once the
 *               attempt is TRAINYARD_SCHED_LOST_S old
 * Slurm jobs are matched by id and comment together: ids repeat.
 * A job being cancelled has its Slurm job cancelled until it ends; a job
 * being preempted has it cancelled once its grace is over (preemptions.c).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attemptstate.h"
#include "db.h"
#include "failure.h"
#include "dispatch.h"
#include "jobspec.h"
#include "jobstate.h"
#include "ladder.h"
#include "log.h"
#include "retry.h"
#include "alerts.h"
#include "scheduler.h"

/* Attempts one cycle follows at most; the rest wait for the next cycle. */
#define RECONCILE_MAX 1024

typedef struct followed {
	char attempt_id[37], job_id[37];
	int number, nodes, attempts;
	uint32_t slurm_id;
	char outcome[16], failure_class[48], slurm_state[24];
	bool started;
	int silence_s; /* since the last heartbeat (or the start); -1 before both */
	int age_s;     /* since the attempt was written */
	job_state job;
	char reason[256];
	int heartbeat_timeout_s;
	bool recompute_full;
	/* its open preemption: seconds past its grace (negative: within it),
	 * and whether the grace ran out already; over_s is INT_MIN when none */
	int preempt_over_s;
	bool preempt_cancelled;
} followed;

static void followed_fill(followed *f, const PGresult *r, int i)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->attempt_id, sizeof(f->attempt_id), "%s", PQgetvalue(r, i, 0));
	snprintf(f->job_id, sizeof(f->job_id), "%s", PQgetvalue(r, i, 1));
	f->number = atoi(PQgetvalue(r, i, 2));
	f->slurm_id = (uint32_t)strtoul(PQgetvalue(r, i, 3), NULL, 10);
	snprintf(f->outcome, sizeof(f->outcome), "%s", PQgetvalue(r, i, 4));
	snprintf(f->failure_class, sizeof(f->failure_class), "%s", PQgetvalue(r, i, 5));
	f->nodes = atoi(PQgetvalue(r, i, 6));
	f->started = PQgetvalue(r, i, 7)[0] == 't';
	f->silence_s = PQgetisnull(r, i, 8) ? -1 : atoi(PQgetvalue(r, i, 8));
	f->age_s = atoi(PQgetvalue(r, i, 9));
	int st = job_state_parse(PQgetvalue(r, i, 10));
	f->job = st < 0 ? JOB_FAILED : (job_state)st;
	snprintf(f->reason, sizeof(f->reason), "%s", PQgetvalue(r, i, 11));
	f->heartbeat_timeout_s = atoi(PQgetvalue(r, i, 12));
	f->attempts = atoi(PQgetvalue(r, i, 13));
	f->recompute_full = PQgetvalue(r, i, 14)[0] == 't';
	snprintf(f->slurm_state, sizeof(f->slurm_state), "%s", PQgetvalue(r, i, 15));
	f->preempt_over_s = PQgetisnull(r, i, 16) ? INT_MIN : atoi(PQgetvalue(r, i, 16));
	f->preempt_cancelled = PQgetvalue(r, i, 17)[0] == 't';
}

/* ---- while it lives ---------------------------------------------------- */

static void set_reason(sched *s, const followed *f, const char *why)
{
	if (strcmp(f->reason, why) == 0)
		return;
	jobstate_note(s->db, f->job_id, why, JOB_STATE_ANY);
}

static void on_pending(sched *s, const followed *f, const sl_job *j)
{
	char why[256];
	snprintf(why, sizeof(why), "waiting in Slurm as job %u: %s", f->slurm_id,
	         j->reason[0] ? j->reason : "pending");
	set_reason(s, f, why);
}

static void on_running(sched *s, const followed *f, const sl_job *j)
{
	if (!f->started) {
		char start[24], id[16];
		snprintf(start, sizeof(start), "%lld",
		         (long long)(j->start ? j->start : time(NULL)));
		snprintf(id, sizeof(id), "%u", f->slurm_id);
		const char *p[] = {f->attempt_id, start, j->nodes};
		char why[320];
		snprintf(why, sizeof(why), "running as Slurm job %s on %s", id, j->nodes);
		if (db_begin(s->db) == 0) {
			int rc = db_query(
			    s->db, NULL,
			    "UPDATE job_attempts SET started_at = to_timestamp($2::bigint),"
			    " node_list = $3, slurm_state = 'running' WHERE id = $1",
			    3, p);
			/* the worker's first report may have moved it already */
			if (rc == 0 && f->job == JOB_SCHEDULED) {
				int t = jobstate_transition(s->db, f->job_id, JOB_RUNNING, why,
				                            NULL, NULL, NULL);
				rc = t == -ERR_JOB_STATE_CONFLICT ? 0 : t;
			}
			if (rc == 0)
				db_commit(s->db);
			else
				db_rollback(s->db);
		}
		return;
	}
	if (f->job == JOB_CANCELLING)
		return;
	char err[SL_ERR_MAX];
	if (f->job == JOB_PREEMPTING && f->preempt_cancelled) {
		if (sl_cancel(f->slurm_id, err) < 0) /* again, until Slurm ends it */
			log_printf(LOG_WARN, "%s", err);
		return;
	}
	if (f->job == JOB_PREEMPTING && f->preempt_over_s != INT_MIN && f->preempt_over_s >= 0) {
		preempt_cancel(s, f->attempt_id, f->slurm_id);
		return;
	}
	if (failure_by_name(f->failure_class) == FAILURE_HANG) {
		if (sl_cancel(f->slurm_id, err) < 0) /* again, until Slurm ends it */
			log_printf(LOG_WARN, "%s", err);
		return;
	}
	/* never shorter than three of the worker's heartbeat intervals */
	int timeout = f->heartbeat_timeout_s > 3 * s->cfg->heartbeat_s ? f->heartbeat_timeout_s
	                                                               : 3 * s->cfg->heartbeat_s;
	if (f->silence_s > timeout) {
		log_printf(LOG_WARN,
		           "job %s attempt %d: no heartbeat for %d s (timeout %d s); cancelling "
		           "Slurm job %u",
		           f->job_id, f->number, f->silence_s, timeout, f->slurm_id);
		const char *p[] = {f->attempt_id, failure_name(FAILURE_HANG)};
		/* the class first: the job's end then reads as a hang, not as a cancel */
		if (db_query(s->db, NULL,
		             "UPDATE job_attempts SET failure_class = $2 WHERE id = $1", 2,
		             p) == 0 &&
		    sl_cancel(f->slurm_id, err) < 0)
			log_printf(LOG_WARN, "%s", err);
		s->stats.hung++;
	}
}

/* ---- its end ------------------------------------------------------------ */

/* The class an ended attempt failed with as its report and Slurm tell it, or "". */
static const char *end_class_of(const followed *f, const sl_job *j)
{
	/* the scheduler's own verdicts, recorded before it cancelled the Slurm job */
	if (failure_by_name(f->failure_class) == FAILURE_HANG)
		return failure_name(FAILURE_HANG);
	if (failure_by_name(f->failure_class) == FAILURE_PREEMPTED)
		return failure_name(FAILURE_PREEMPTED);
	if (j->state == SL_NODE_FAIL) /* the worker saw a lost rank; Slurm knows why */
		return failure_name(FAILURE_NODE_FAILURE);
	if (strcmp(f->outcome, "succeeded") == 0)
		return "";
	if (strcmp(f->outcome, "failed") == 0 && f->failure_class[0])
		return f->failure_class;
	if (j->state == SL_COMPLETED || j->exit_code == TRAIN_ATTEMPT_OVER)
		return failure_name(FAILURE_LOST); /* the batch script ended without the report */
	return sl_failure_class(j->state);
}

/*
 * The class an ended attempt failed with, or "" when it succeeded. A job
 * being preempted that failed did so because it was stopped (killed,
 * cancelled through Slurm, stopped): preempted, unless its class says
 * retrying cannot help (a data error stays one). A job the user cancels
 * is cancelling, not preempting.
 */
static const char *end_class(const followed *f, const sl_job *j)
{
	const char *c = end_class_of(f, j);
	failure_class fc = failure_by_name(c);
	if (f->job == JOB_PREEMPTING && c[0] &&
	    (fc == FAILURE_CANCELLED || failure_retry_rule(fc) != FAILURE_RETRY_NEVER))
		return failure_name(FAILURE_PREEMPTED);
	return c;
}

/* The smallest rung of the job's fallback ladder, in ranks; *command: a command job's spec. */
static int min_rung_ranks(const json_t *spec, bool *command)
{
	jobspec js;
	verrs v;
	verrs_init(&v);
	int rc = jobspec_parse(spec, NULL, &js, NULL, &v);
	verrs_release(&v);
	*command = rc == 0 && js.kind == JOBSPEC_KIND_COMMAND;
	if (rc)
		return 1 << 30; /* a spec that no longer reads: no smaller retry */
	layout rungs[LADDER_MAX];
	int n = ladder_build(&js, rungs);
	int least = (int)layout_ranks(&rungs[0]);
	for (int i = 1; i < n; i++)
		if (layout_ranks(&rungs[i]) < least)
			least = (int)layout_ranks(&rungs[i]);
	return least;
}

/* The next attempt: nodes and overrides written to the job, backoff as not_before. */
static int queue_retry(sched *s, const followed *f, const retry_decision *d)
{
	char nodes[16], backoff[16];
	snprintf(nodes, sizeof(nodes), "%d", d->nodes);
	snprintf(backoff, sizeof(backoff), "%d", d->backoff_s);
	const char *p[] = {f->job_id, nodes, backoff, d->set_recompute_full ? "t" : "f"};
	return db_query(s->db, NULL,
	                "UPDATE jobs SET next_nodes = $2::int,"
	                " not_before = now() + $3::int * interval '1 second',"
	                " next_overrides = CASE WHEN $4::boolean AND NOT next_overrides ?"
	                "   'training.recompute=full'"
	                "   THEN next_overrides || '[\"training.recompute=full\"]'::jsonb"
	                "   ELSE next_overrides END"
	                " WHERE id = $1",
	                4, p);
}

/*
 * The job after its attempt ended with class c (inside the transaction):
 * cancelled, succeeded, failed, or queued again. The event's detail is the
 * story of every attempt so far.
 */
static int job_after(sched *s, const followed *f, const char *c, json_t *story)
{
	job_state now = f->job;
	sched_count(s->tm.ended, c[0] ? c : failure_name(FAILURE_OK), 1);
	if (job_state_final(now))
		return 0; /* the worker's finish report ended it already */
	char why[RETRY_WHY_MAX + 160];
	if (now == JOB_CANCELLING)
		return jobstate_transition(s->db, f->job_id, JOB_CANCELLED, "cancelled", NULL,
		                           story, NULL);
	if (!c[0])
		return jobstate_transition(s->db, f->job_id, JOB_SUCCEEDED, "all steps done", NULL,
		                           story, NULL);
	const char *p[] = {f->job_id};
	PGresult *r;
	int rc = db_query(s->db, &r,
	                  "SELECT spec, (spec->'fault_tolerance'->>'max_restarts')::int,"
	                  " (spec->'resources'->>'ranks_per_node')::int,"
	                  " (SELECT count(*) FROM job_attempts a WHERE a.job_id = j.id"
	                  "   AND a.failure_class = 'preempted')"
	                  " FROM jobs j WHERE id = $1",
	                  1, p);
	if (rc || PQntuples(r) != 1) {
		PQclear(r);
		return rc ? rc : -ERR_JOB_NOT_FOUND;
	}
	json_t *spec = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	retry_input in = {
	    .failure_class = c,
	    .attempts = f->attempts,
	    .max_restarts = atoi(PQgetvalue(r, 0, 1)),
	    .nodes = f->nodes,
	    .ranks_per_node = atoi(PQgetvalue(r, 0, 2)),
	    .recompute_full = f->recompute_full,
	    .requeues = atoi(PQgetvalue(r, 0, 3)),
	    .backoff_base_s = s->backoff_s,
	    .node_grace_s = s->node_grace_s,
	};
	in.min_rung_ranks = min_rung_ranks(spec, &in.own_program);
	PQclear(r);
	json_decref(spec);
	retry_decision d = retry_decide(&in);
	json_object_set_new(story, "decision", json_string(d.why));
	if (!d.retry) {
		snprintf(why, sizeof(why), "attempt %d failed (%s); %s", f->number, c, d.why);
		return jobstate_transition(s->db, f->job_id, JOB_FAILED, why, NULL, story, NULL);
	}
	json_object_set_new(story, "next",
	                    json_pack("{s:i, s:b, s:i}", "nodes", d.nodes, "recompute_full",
	                              d.set_recompute_full || f->recompute_full, "backoff_s",
	                              d.backoff_s));
	if (failure_retry_rule(failure_by_name(c)) == FAILURE_RETRY_REQUEUE)
		snprintf(why, sizeof(why), "attempt %d %s; %s", f->number, c, d.why);
	else
		snprintf(why, sizeof(why), "attempt %d failed (%s); retry %d of %d in %d s: %s",
		         f->number, c, f->attempts - in.requeues, in.max_restarts, d.backoff_s,
		         d.why);
	rc = queue_retry(s, f, &d);
	if (rc == 0)
		rc = jobstate_transition(s->db, f->job_id, JOB_QUEUED, why, NULL, story, NULL);
	if (rc == 0) {
		s->stats.retried++;
		sched_count(s->tm.retries, c, 1);
		if (f->attempts - in.requeues >= 3)
			sched_alert_job(s, f->job_id, "restarts",
			                json_pack("{s:i, s:s}", "failed_attempts", f->attempts,
			                          "last_class", c),
			                "1 hour");
	}
	return rc;
}

/* Every attempt of the job as the events tell it. OUT: a new object. */
static int story_load(sched *s, const char *job_id, json_t **out)
{
	const char *p[] = {job_id};
	PGresult *r;
	*out = NULL;
	int rc = db_query(
	    s->db, &r,
	    "SELECT json_build_object('attempts', coalesce(json_agg(json_build_object("
	    " 'attempt', number, 'slurm_job_id', slurm_job_id, 'slurm_state', slurm_state,"
	    " 'nodes', nodes, 'devices', devices, 'borrowed_devices', borrowed_devices,"
	    " 'node_list', node_list, 'config', config,"
	    " 'started_at', started_at, 'ended_at', ended_at, 'outcome', outcome,"
	    " 'failure_class', failure_class, 'steps_done', steps_done, 'steps_lost', steps_lost)"
	    " ORDER BY number), '[]'))::text FROM job_attempts WHERE job_id = $1",
	    1, p);
	if (rc == 0 && PQntuples(r) == 1)
		*out = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	PQclear(r);
	return rc ? rc : *out ? 0 : -ERR_INTERNAL;
}

/*
 * The job's state and the attempt's report again, under the job's row
 * lock: the API may have moved either since the cycle read them (the
 * worker's finish, a cancel). RET 0 or -ERR_*.
 */
static int refresh_locked(sched *s, followed *f)
{
	const char *p[] = {f->job_id, f->attempt_id};
	PGresult *r;
	int rc = db_query(s->db, &r,
	                  "SELECT j.state, a.outcome, a.failure_class FROM jobs j"
	                  " JOIN job_attempts a ON a.job_id = j.id"
	                  " WHERE j.id = $1 AND a.id = $2 FOR UPDATE OF j",
	                  2, p);
	if (rc == 0 && PQntuples(r) == 1) {
		int st = job_state_parse(PQgetvalue(r, 0, 0));
		f->job = st < 0 ? JOB_FAILED : (job_state)st;
		/* a job Slurm lost keeps what follow_one() decided */
		if (failure_by_name(f->failure_class) != FAILURE_LOST) {
			snprintf(f->outcome, sizeof(f->outcome), "%s", PQgetvalue(r, 0, 1));
			snprintf(f->failure_class, sizeof(f->failure_class), "%s",
			         PQgetvalue(r, 0, 2));
		}
	} else if (rc == 0) {
		rc = -ERR_JOB_NOT_FOUND;
	}
	PQclear(r);
	return rc;
}

/*
 * The job after f ended with class c (inside the transaction), its event
 * telling the story of every attempt so far, and of the attempt's
 * preemption when it had one (borrowed; may be NULL). RET 0 or -ERR_*.
 */
static int job_after_attempt(sched *s, const followed *f, const char *c, json_t *preemption)
{
	json_t *story = NULL;
	int rc = story_load(s, f->job_id, &story);
	if (rc == 0) {
		json_object_set_new(story, "ended_attempt", json_integer(f->number));
		if (preemption)
			json_object_set(story, "preemption", preemption);
		rc = job_after(s, f, c, story);
	}
	json_decref(story);
	return rc;
}

/* RET 0, or -1 when its end could not be recorded (logged, and noted on the job). */
static int on_final(sched *s, followed *f, const sl_job *j)
{
	int rc = db_begin(s->db);
	if (rc == 0)
		rc = refresh_locked(s, f);
	const char *c = end_class(f, j);
	const char *p[] = {f->attempt_id, f->job_id, c, sl_state_name(j->state), j->nodes};
	/* what Slurm and the reports say of the run, then its end (attemptstate.h) */
	if (rc == 0)
		rc = db_query(
		    s->db, NULL,
		    "UPDATE job_attempts a SET slurm_state = $4,"
		    " node_list = CASE WHEN $5 = '' THEN a.node_list ELSE $5 END,"
		    " steps_done = m.s,"
		    " steps_lost = CASE WHEN $3 = '' THEN 0 ELSE greatest(m.s - c.s, 0) END"
		    " FROM (SELECT coalesce(max(step), 0) AS s FROM job_metrics WHERE attempt_id = "
		    "$1) m,"
		    " (SELECT coalesce(max(step), 0) AS s FROM checkpoints WHERE job_id = $2) c"
		    " WHERE a.id = $1",
		    5, p);
	attempt_ending e = {.outcome = c[0] ? "failed" : "succeeded",
	                    .keep_outcome = true,
	                    .failure_class = c,
	                    .unfollow = true,
	                    .ended_s = j->end ? (int64_t)j->end : (int64_t)time(NULL)};
	json_t *preemption = NULL;
	if (rc == 0)
		rc = attemptstate_end(s->db, f->attempt_id, &e, NULL);
	if (rc == 0)
		rc = preempt_close(s, f->attempt_id, c, &preemption);
	if (rc == 0)
		rc = job_after_attempt(s, f, c, preemption);
	json_decref(preemption);
	if (rc == 0)
		rc = db_commit(s->db);
	if (rc) {
		db_rollback(s->db);
		sched_job_trouble(s, f->job_id, "the end of attempt %d could not be recorded",
		                  f->number);
	} else {
		s->stats.ended++;
		log_printf(LOG_INFO, "job %s attempt %d: Slurm job %u ended %s%s%s", f->job_id,
		           f->number, f->slurm_id, sl_state_name(j->state), c[0] ? ", class " : "",
		           c);
	}
	return rc ? -1 : 0;
}

/* ---- following -------------------------------------------------------- */

/*
 * The Slurm view of f: the snapshot's, or accounting's for a job
 * slurmctld no longer holds. Both are matched by the attempt's comment,
 * not by the bare id (slurm.h). slurmctld holds every live job, so one it
 * does not hold is over: accounting tells how; when it cannot (it does not
 * know the job, it still has it pending or running because slurmctld lost
 * it in a crash, or it cannot be reached), the attempt is lost once it is
 * s->lost_s (TRAINYARD_SCHED_LOST_S) old. RET 0 with *out, 1 when it is not known yet,
 * 2 when it is lost.
 */
static int slurm_view(sched *s, const followed *f, sl_job *out)
{
	const sl_job *j = sl_find(s->sj, s->n_sj, f->slurm_id, f->job_id, f->number);
	if (j) {
		*out = *j;
		return 0;
	}
	char err[SL_ERR_MAX];
	int rc = sl_job_from_accounting(f->slurm_id, f->job_id, f->number, out, err);
	if (rc < 0)
		log_printf(LOG_WARN, "%s", err);
	if (rc == 0 && sl_final(out->state))
		return 0;
	if (f->age_s < s->lost_s)
		return 1;
	memset(out, 0, sizeof(*out));
	out->id = f->slurm_id;
	out->state = SL_FAILED;
	return 2; /* lost */
}

/* f's Slurm job is gone with no end known: the attempt ends as lost. */
static int end_lost(sched *s, followed *f)
{
	if (f->slurm_id)
		log_printf(LOG_WARN,
		           "job %s attempt %d: Slurm job %u is known neither to slurmctld nor to "
		           "accounting as live or ended; it is lost",
		           f->job_id, f->number, f->slurm_id);
	else
		log_printf(LOG_WARN, "job %s attempt %d: Slurm holds no job of it; it is lost",
		           f->job_id, f->number);
	snprintf(f->failure_class, sizeof(f->failure_class), "%s", failure_name(FAILURE_LOST));
	snprintf(f->outcome, sizeof(f->outcome), "failed");
	sl_job j = {.id = f->slurm_id, .state = SL_FAILED};
	return on_final(s, f, &j);
}

static void follow_one(sched *s, followed *f)
{
	sl_job j;
	int v = slurm_view(s, f, &j);
	if (v == 1)
		return;
	if (v == 2) {
		end_lost(s, f);
		return;
	}
	if (sl_final(j.state)) {
		on_final(s, f, &j);
		return;
	}
	if (f->job == JOB_CANCELLING) {
		char err[SL_ERR_MAX];
		if (sl_cancel(f->slurm_id, err) < 0)
			log_printf(LOG_WARN, "%s", err);
		return;
	}
	if (j.state == SL_PENDING)
		on_pending(s, f, &j);
	else if (j.state == SL_RUNNING)
		on_running(s, f, &j);
}

#define FOLLOWED_SQL                                                                               \
	"SELECT a.id, a.job_id, a.number, coalesce(a.slurm_job_id, 0), a.outcome,"                 \
	" a.failure_class, a.nodes, a.started_at IS NOT NULL,"                                     \
	" extract(epoch FROM now() - coalesce(a.heartbeat_at, a.started_at))::int,"                \
	" extract(epoch FROM now() - a.created_at)::int, j.state, j.state_reason,"                 \
	" coalesce((j.spec->'fault_tolerance'->>'heartbeat_timeout_s')::int, 300), j.attempts,"    \
	" a.config->'overrides' ? 'training.recompute=full', a.slurm_state,"                       \
	" extract(epoch FROM now() - p.asked_at)::int - p.grace_s, p.outcome = 'cancelled'"        \
	" FROM job_attempts a JOIN jobs j ON j.id = a.job_id"                                      \
	" LEFT JOIN preemptions p ON p.attempt_id = a.id AND p.ended_at IS NULL"

/* OUT: *out (free()), *n: the attempts the query (FOLLOWED_SQL and a condition) names. */
static int followed_load(sched *s, const char *sql, int np, const char *const *p, followed **out,
                         int *n)
{
	PGresult *r;
	*out = NULL;
	*n = 0;
	if (db_query(s->db, &r, sql, np, p)) {
		PQclear(r);
		return -1;
	}
	int k = PQntuples(r);
	followed *fs = calloc(k ? (size_t)k : 1, sizeof(*fs));
	if (!fs) {
		PQclear(r);
		return -1;
	}
	for (int i = 0; i < k; i++)
		followed_fill(&fs[i], r, i);
	PQclear(r);
	*out = fs;
	*n = k;
	return 0;
}

int reconcile_attempt_lost(sched *s, const char *attempt_id)
{
	const char *p[] = {attempt_id};
	followed *f;
	int n;
	if (followed_load(s, FOLLOWED_SQL " WHERE a.id = $1 AND a.followed", 1, p, &f, &n) < 0)
		return -1;
	int rc = n == 1 ? end_lost(s, f) : 0;
	free(f);
	return rc;
}

/* ---- the sweep ---------------------------------------------------------- */

/*
 * Jobs the scheduler dispatched that hold devices (dispatching, scheduled,
 * running, cancelling) with no attempt it still follows, for longer than
 * TRAINYARD_SCHED_LOST_S: nothing would move them again. Each ends as its
 * last attempt did (a cancel, a retry or a failure by the normal rules),
 * or as lost. Jobs whose attempts an admin started (no nodes: the worker
 * and the API drive those) are left to them.
 */
static void sweep(sched *s)
{
	char grace[16];
	snprintf(grace, sizeof(grace), "%d", s->lost_s);
	const char *p[] = {grace};
	followed *fs;
	int n;
	if (followed_load(s,
	                  FOLLOWED_SQL " WHERE a.number = j.attempts AND a.nodes IS NOT NULL"
	                               " AND NOT a.followed"
	                               " AND job_holds_devices(j.state)"
	                               " AND j.updated_at < now() - $1::int * interval '1 second'"
	                               " LIMIT 64",
	                  1, p, &fs, &n) < 0)
		return;
	for (int i = 0; i < n; i++) {
		followed *f = &fs[i];
		int rc = db_begin(s->db);
		if (rc == 0)
			rc = refresh_locked(s, f);
		const char *c = f->failure_class[0] ? f->failure_class : failure_name(FAILURE_LOST);
		if (strcmp(f->outcome, "succeeded") == 0)
			c = "";
		if (rc == 0)
			rc = job_after_attempt(s, f, c, NULL);
		if (rc == 0)
			rc = db_commit(s->db);
		if (rc) {
			db_rollback(s->db);
			sched_job_trouble(s, f->job_id, "its ended attempt %d could not be settled",
			                  f->number);
		} else {
			log_printf(
			    LOG_WARN,
			    "job %s: attempt %d had ended without moving the job; settled (%s)",
			    f->job_id, f->number, c[0] ? c : "succeeded");
		}
	}
	free(fs);
}

/* ---- the walk ----------------------------------------------------------- */

int reconcile(sched *s)
{
	char limit[16];
	snprintf(limit, sizeof(limit), "%d", RECONCILE_MAX);
	const char *p[] = {limit};
	followed *fs;
	int n;
	if (followed_load(s,
	                  FOLLOWED_SQL " WHERE a.followed AND a.slurm_job_id IS NOT NULL"
	                               " ORDER BY a.slurm_job_id LIMIT $1",
	                  1, p, &fs, &n) < 0)
		return -1;
	for (int i = 0; i < n; i++)
		follow_one(s, &fs[i]);
	free(fs);
	/* a job that could not be recovered is noted on it; it blocks no other */
	if (dispatch_recover(s) < 0 && sched_db_lost(s))
		return -1;
	sweep(s);
	return sched_db_lost(s) ? -1 : 0;
}
