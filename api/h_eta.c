/*
 * h_eta.c - GET /v1/jobs/{job}/eta: when a queued job should start
 * (lib/job/eta.h), from its tenant's quota, the running jobs' expected ends
 * and the jobs queued ahead of it.
 *
 * A running job's end is its pace so far carried to its last step, within
 * its time limit (eta_running_end). A queued job's run time is its time
 * limit times the tenant's usual share of it: the median, over its last
 * 50 finished attempts, of run time over time limit (1 without history).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "eta.h"
#include "handlers.h"
#include "quota.h"

#define ETA_SQL                                                                                    \
	"WITH j AS (SELECT * FROM jobs WHERE id = $1)"                                             \
	" SELECT json_build_object('state', j.state, 'now', extract(epoch FROM "                   \
	"clock_timestamp()),"                                                                      \
	" 'max_gpus', k.max_gpus, 'max_running_jobs', k.max_running_jobs,"                         \
	" 'borrow_gpus', k.borrow_gpus, 'state_reason', j.state_reason,"                           \
	" 'gpu_hours_per_month', k.gpu_hours_per_month, 'month_gpu_hours', u.month_gpu_hours,"     \
	" 'ratio', (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x.r) FROM ("                \
	"   SELECT extract(epoch FROM a.ended_at - a.started_at)"                                  \
	"     / (60 * (f.spec->'resources'->>'time_limit_minutes')::float8) AS r"                  \
	"   FROM job_attempts a JOIN jobs f ON f.id = a.job_id WHERE f.tenant_id = j.tenant_id"    \
	"   AND a.failure_class = '' AND a.started_at IS NOT NULL AND a.ended_at IS NOT NULL"      \
	"   ORDER BY a.ended_at DESC LIMIT 50) x),"                                                \
	" 'running', (SELECT coalesce(json_agg(json_build_array("                                  \
	"   extract(epoch FROM coalesce(a.started_at, a.created_at, r.updated_at)),"               \
	"   coalesce((SELECT max(m.step) FROM job_metrics m WHERE m.attempt_id = a.id), 0),"       \
	"   (r.spec->'training'->>'steps')::int,"                                                  \
	"   60 * (r.spec->'resources'->>'time_limit_minutes')::float8, h.devices, h.borrowed)),"   \
	"   '[]')"                                                                                 \
	"   FROM job_devices_held h JOIN jobs r ON r.id = h.job_id"                                \
	"   LEFT JOIN job_attempts a ON a.job_id = r.id AND a.number = r.attempts"                 \
	"   WHERE h.tenant_id = j.tenant_id),"                                                     \
	" 'queue', (SELECT coalesce(json_agg(json_build_array(q.devices,"                          \
	"   60 * (q.spec->'resources'->>'time_limit_minutes')::float8,"                            \
	"   coalesce(extract(epoch FROM q.not_before), 0),"                                        \
	"   (q.spec->'resources'->>'gpus_per_node')::int > 0)"                                     \
	"   ORDER BY q.priority DESC, q.created_at, q.id), '[]')"                                  \
	"   FROM jobs q WHERE q.tenant_id = j.tenant_id AND q.state = 'queued'"                    \
	"   AND (q.priority > j.priority OR (q.priority = j.priority"                              \
	"   AND (q.created_at, q.id) <= (j.created_at, j.id)))))"                                  \
	" FROM j" QUOTA_SQL_JOIN("j.tenant_id")

static double num(const json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : 0;
}

/* seconds since the epoch as shown (clock.h). */
static json_t *timestamp(double t)
{
	char buf[CLOCK_RFC3339_SIZE];
	return json_string(clock_rfc3339(t, buf));
}

int h_job_eta(api_req *rq)
{
	const char *p[] = {rq->scope.job_id};
	json_t *doc;
	int rc = api_query_json(rq, ETA_SQL, 1, p, &doc);
	if (rc)
		return api_fail_db(rq, rc);
	if (!doc)
		return api_fail(rq, ERR_JOB_NOT_FOUND, "no such job");
	const char *state = json_string_value(json_object_get(doc, "state"));
	const json_t *run = json_object_get(doc, "running"), *queue = json_object_get(doc, "queue");
	double now = num(json_object_get(doc, "now"));
	double ratio = json_is_number(json_object_get(doc, "ratio"))
	                   ? num(json_object_get(doc, "ratio"))
	                   : 1.0;
	if (!(ratio > 0.01))
		ratio = 0.01;
	if (ratio > 1)
		ratio = 1;
	size_t nr = json_array_size(run), nq = json_array_size(queue);
	eta_running *r = calloc(nr ? nr : 1, sizeof(*r));
	eta_queued *q = calloc(nq ? nq : 1, sizeof(*q));
	if (!r || !q) {
		free(r);
		free(q);
		json_decref(doc);
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < nr; i++) {
		const json_t *x = json_array_get(run, i);
		r[i] = (eta_running){
		    eta_running_end(num(json_array_get(x, 0)), now, (int)num(json_array_get(x, 1)),
		                    (int)num(json_array_get(x, 2)), num(json_array_get(x, 3))),
		    (int)num(json_array_get(x, 4)), (int)num(json_array_get(x, 5))};
	}
	for (size_t i = 0; i < nq; i++) {
		const json_t *x = json_array_get(queue, i);
		q[i] = (eta_queued){.devices = (int)num(json_array_get(x, 0)),
		                    .gpu = json_is_true(json_array_get(x, 3)),
		                    .duration = num(json_array_get(x, 1)) * ratio,
		                    .not_before = num(json_array_get(x, 2))};
	}
	bool queued = state && strcmp(state, "queued") == 0;
	eta_input in = {.now = now,
	                .limits = {(int64_t)num(json_object_get(doc, "max_gpus")),
	                           (int64_t)num(json_object_get(doc, "max_running_jobs")),
	                           (int64_t)num(json_object_get(doc, "gpu_hours_per_month")),
	                           (int64_t)num(json_object_get(doc, "borrow_gpus"))},
	                .month_gpu_hours = num(json_object_get(doc, "month_gpu_hours")),
	                .running = r,
	                .n_running = nr,
	                .queue = q,
	                .n_queue = nq};
	double start = queued ? eta_start(&in) : -1;
	free(r);
	free(q);
	const char *why = !queued ? "the job is not queued"
	                  : start < 0
	                      ? "the job cannot start within its tenant's quota as it stands"
	                      : NULL;
	const char *waiting = json_string_value(json_object_get(doc, "state_reason"));
	json_t *out = json_pack(
	    "{s:s, s:s, s:o, s:o, s:i, s:i, s:f, s:s*, s:s*}", "job_id", rq->scope.job_id, "state",
	    state ? state : "", "eta", start >= 0 ? timestamp(start) : json_null(), "eta_seconds",
	    start >= 0 ? json_real(start - now) : json_null(), "queued_ahead",
	    queued && nq > 0 ? (int)nq - 1 : 0, "running", (int)nr, "duration_ratio", ratio,
	    "reason", why, "waiting", queued && waiting && waiting[0] ? waiting : NULL);
	json_decref(doc);
	return api_reply(rq, 200, out);
}
