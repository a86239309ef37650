/*
 * h_goodput.c - GET /v1/jobs/{job}/goodput and GET /v1/tenants/{tenant}/usage:
 * where jobs' wall time went (lib/job/goodput.h), their throughput, and how
 * the throughput compares with the planner's estimate for the layout.
 *
 * One query gives each job's timeline as a JSON document (TIMELINE: its
 * submission and end, and per attempt its start, end, failure class,
 * devices, steps as [step, time, step_s, data_wait_s, saved, tokens_per_s,
 * flops_per_s, mfu] and the worker's fallbacks); goodput_compute() cuts it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "failure.h"
#include "goodput.h"
#include "handlers.h"
#include "jobspec.h"
#include "plan.h"
#include "quota.h"

/* Jobs GET /v1/tenants/{tenant}/usage sums at most, the newest first. */
#define GOODPUT_USAGE_JOBS 1000

/* The document of job j (a row of jobs); times in seconds since the epoch. */
#define TIMELINE                                                                                   \
	"json_build_object('id', j.id, 'name', j.name, 'state', j.state, 'spec', j.spec,"          \
	" 'submitted', extract(epoch FROM j.created_at),"                                          \
	" 'end', extract(epoch FROM CASE WHEN j.state IN ('succeeded', 'failed', 'cancelled')"     \
	"   THEN coalesce((SELECT max(e.at) FROM job_events e WHERE e.job_id = j.id"               \
	"     AND e.to_state = j.state), j.updated_at) ELSE clock_timestamp() END),"               \
	" 'attempts', (SELECT coalesce(json_agg(json_build_object("                                \
	"   'number', a.number, 'class', a.failure_class,"                                         \
	"   'started_at', " CLOCK_SQL_RFC3339(                                                     \
	    "coalesce(a.started_at, a.created_at)") ","                                            \
	                                            "   'ended_at', " CLOCK_SQL_RFC3339(           \
	                                                "a.ended_at") ","                          \
	                                                              "   'devices', "             \
	                                                              "coalesce(a.devices, "       \
	                                                              "j.devices),"                \
	                                                              "   'started', "             \
	                                                              "extract(epoch FROM "        \
	                                                              "coalesce(a.started_at,"     \
	                                                              "     CASE WHEN "            \
	                                                              "a.heartbeat_at IS NOT "     \
	                                                              "NULL OR a.state <> "        \
	                                                              "'starting' THEN "           \
	                                                              "a.created_at "              \
	                                                              "END)),"                     \
	                                                              "   'ended', extract(epoch " \
	                                                              "FROM a.ended_at),"          \
	                                                              "   'steps', (SELECT "       \
	                                                              "coalesce(json_agg(json_"    \
	                                                              "build_array(m.step, t.at,"  \
	                                                              "     "                      \
	                                                              "coalesce((m.data->>'step_"  \
	                                                              "s')::float8, 0),"           \
	                                                              "     "                      \
	                                                              "coalesce((m.data->>'data_"  \
	                                                              "wait_s')::float8, 0),"      \
	                                                              "     EXISTS (SELECT 1 "     \
	                                                              "FROM checkpoints c WHERE "  \
	                                                              "c.job_id = j.id AND "       \
	                                                              "c.attempt_id = a.id"        \
	                                                              "       AND c.step = "       \
	                                                              "m.step),"                   \
	                                                              "     "                      \
	                                                              "(m.data->>'tokens_per_s'):" \
	                                                              ":float8, "                  \
	                                                              "(m.data->>'flops_per_s')::" \
	                                                              "float8,"                    \
	                                                              "     "                      \
	                                                              "(m.data->>'mfu')::float8) " \
	                                                              "ORDER BY t.at, m.step), "   \
	                                                              "'[]')"                      \
	                                                              "     FROM job_metrics m "   \
	                                                              "CROSS JOIN LATERAL "        \
	                                                              "(SELECT coalesce("          \
	                                                              "       "                    \
	                                                              "(m.data->>'time_ms')::"     \
	                                                              "float8 / 1000, "            \
	                                                              "extract(epoch FROM m.at)) " \
	                                                              "AS at) t"                   \
	                                                              "     WHERE m.job_id = "     \
	                                                              "j.id AND m.attempt_id = "   \
	                                                              "a.id),"                     \
	                                                              "   'fallbacks', (SELECT "   \
	                                                              "coalesce(json_agg(extract(" \
	                                                              "epoch FROM e.at) ORDER BY " \
	                                                              "e.at), '[]')"               \
	                                                              "     FROM job_events e "    \
	                                                              "WHERE e.job_id = j.id AND " \
	                                                              "e.detail->>'kind' = "       \
	                                                              "'fallback'"                 \
	                                                              "     AND "                  \
	                                                              "e.detail->>'attempt_id' = " \
	                                                              "a.id::text)"                \
	                                                              "  ) ORDER BY a.number), "   \
	                                                              "'[]') FROM job_attempts a " \
	                                                              "WHERE a.job_id = j.id))"

/* Whether an attempt ended in a failure: its class (lib/job/failure.def) says so; "" is none. */
static bool attempt_failed(const char *cls)
{
	return failure_is_failure(failure_by_name(cls));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of the n values (sorted in place); NAN when none. */
static double median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A job's timeline document, cut. */
typedef struct job_goodput {
	goodput_result r;
	double device_seconds;
	double tokens_per_s, flops_per_s, mfu; /* medians over kept steps; NAN: none reported */
	int devices;                           /* of the last attempt */
	int attempts;
	json_t *list; /* [{number, failure_class, devices, started_at, ended_at, steps}] */
} job_goodput;

static double num(const json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : 0;
}

/* Cut the document doc. RET 0, or -1 when out of memory. */
static int cut(const json_t *doc, job_goodput *out)
{
	memset(out, 0, sizeof(*out));
	out->list = json_array();
	const json_t *attempts = json_object_get(doc, "attempts");
	size_t na = json_array_size(attempts), nsteps = 0;
	for (size_t k = 0; k < na; k++)
		nsteps += json_array_size(json_object_get(json_array_get(attempts, k), "steps"));
	size_t nfb = 0;
	for (size_t k = 0; k < na; k++)
		nfb += json_array_size(json_object_get(json_array_get(attempts, k), "fallbacks"));
	goodput_attempt *att = calloc(na ? na : 1, sizeof(*att));
	goodput_step *steps = calloc(nsteps ? nsteps : 1, sizeof(*steps));
	double *fb = calloc(nfb ? nfb : 1, sizeof(*fb));
	double *rates[3];
	for (int i = 0; i < 3; i++)
		rates[i] = calloc(nsteps ? nsteps : 1, sizeof(double));
	int rc = out->list && att && steps && fb && rates[0] && rates[1] && rates[2] ? 0 : -1;
	size_t si = 0, fi = 0, nr[3] = {0};
	const char *state = json_string_value(json_object_get(doc, "state"));
	goodput_job job = {.submitted = num(json_object_get(doc, "submitted")),
	                   .end = num(json_object_get(doc, "end")),
	                   .failed = state && strcmp(state, "failed") == 0,
	                   .attempts = att,
	                   .n_attempts = na};
	for (size_t k = 0; rc == 0 && k < na; k++) {
		const json_t *a = json_array_get(attempts, k);
		goodput_attempt *g = &att[k];
		g->started = num(json_object_get(a, "started"));
		g->ended = num(json_object_get(a, "ended"));
		const char *cls = json_string_value(json_object_get(a, "class"));
		g->failed = attempt_failed(cls);
		g->preempted = failure_by_name(cls) == FAILURE_PREEMPTED;
		out->devices = (int)num(json_object_get(a, "devices"));
		if (g->started > 0)
			out->device_seconds +=
			    out->devices * ((g->ended > 0 ? g->ended : job.end) - g->started);
		const json_t *st = json_object_get(a, "steps");
		json_array_append_new(
		    out->list,
		    json_pack("{s:O, s:O, s:i, s:O, s:O, s:i}", "number",
		              json_object_get(a, "number"), "failure_class",
		              json_object_get(a, "class"), "devices", out->devices, "started_at",
		              json_object_get(a, "started_at"), "ended_at",
		              json_object_get(a, "ended_at"), "steps", (int)json_array_size(st)));
		g->steps = &steps[si];
		for (size_t i = 0; i < json_array_size(st); i++) {
			const json_t *s = json_array_get(st, i);
			steps[si++] = (goodput_step){.step = (int)num(json_array_get(s, 0)),
			                             .time = num(json_array_get(s, 1)),
			                             .step_s = num(json_array_get(s, 2)),
			                             .data_wait = num(json_array_get(s, 3)),
			                             .saved = json_is_true(json_array_get(s, 4))};
			for (int q = 0; q < 3; q++)
				if (json_is_number(json_array_get(s, 5 + q)))
					rates[q][nr[q]++] = num(json_array_get(s, 5 + q));
		}
		g->n_steps = json_array_size(st);
		const json_t *f = json_object_get(a, "fallbacks");
		g->fallbacks = &fb[fi];
		for (size_t i = 0; i < json_array_size(f); i++)
			fb[fi++] = num(json_array_get(f, i));
		g->n_fallbacks = json_array_size(f);
	}
	if (rc == 0) {
		goodput_compute(&job, &out->r);
		out->tokens_per_s = median(rates[0], nr[0]);
		out->flops_per_s = median(rates[1], nr[1]);
		out->mfu = median(rates[2], nr[2]);
		out->attempts = (int)na;
	}
	free(att);
	free(steps);
	free(fb);
	for (int i = 0; i < 3; i++)
		free(rates[i]);
	if (rc < 0) {
		json_decref(out->list);
		out->list = NULL;
	}
	return rc;
}

static json_t *real_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* {category: seconds} of r. */
static json_t *categories(const goodput_result *r)
{
	json_t *o = json_object();
	for (int c = 0; c < GP__COUNT; c++)
		if (c != GP_GOODPUT)
			json_object_set_new(o, goodput_cat_name((goodput_cat)c),
			                    json_real(r->seconds[c]));
	return o;
}

/*
 * The planner's tokens/s for the job's layout with the configured device
 * (TRAINYARD_DEVICE_PEAK_GFLOPS, _LINK_MBPS); NAN without them.
 */
static double predicted_tokens_per_s(const ty_config *cfg, const json_t *spec_json)
{
	if (cfg->device_peak_gflops <= 0 || cfg->device_link_mbps <= 0)
		return NAN;
	jobspec s;
	verrs v;
	verrs_init(&v);
	int rc = jobspec_parse(spec_json, NULL, &s, NULL, &v);
	verrs_release(&v);
	if (rc < 0)
		return NAN;
	plan_input in;
	plan_input_from_job(&s, (double)cfg->gpu_memory_mib * 1048576.0, &in);
	in.peak_flops = cfg->device_peak_gflops * 1e9;
	in.link_bytes_per_s = cfg->device_link_mbps * 1e6;
	plan_config pc;
	plan_evaluate(&in, &s.parallel, &pc);
	return pc.tokens_per_s > 0 ? pc.tokens_per_s : NAN;
}

int h_job_goodput(api_req *rq)
{
	const char *p[] = {rq->scope.job_id};
	json_t *doc;
	int rc = api_query_json(rq, "SELECT " TIMELINE " FROM jobs j WHERE j.id = $1", 1, p, &doc);
	if (rc)
		return api_fail_db(rq, rc);
	if (!doc)
		return api_fail(rq, ERR_JOB_NOT_FOUND, "no such job");
	job_goodput g;
	if (cut(doc, &g) < 0) {
		json_decref(doc);
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	}
	double peak = rq->cfg->device_peak_gflops * 1e9;
	double mfu = isfinite(g.mfu) ? g.mfu
	             : peak > 0 && g.devices > 0 && isfinite(g.flops_per_s)
	                 ? g.flops_per_s / (peak * g.devices)
	                 : NAN;
	double predicted = predicted_tokens_per_s(rq->cfg, json_object_get(doc, "spec"));
	json_t *out = json_pack(
	    "{s:O, s:O, s:f, s:f, s:o, s:f, s:o, s:{s:i, s:i}, s:i, s:o, s:f, s:o, s:o, s:o, s:o}",
	    "job_id", json_object_get(doc, "id"), "state", json_object_get(doc, "state"),
	    "wall_seconds", g.r.total, "goodput_seconds", g.r.seconds[GP_GOODPUT],
	    "goodput_fraction",
	    real_or_null(g.r.total > 0 ? g.r.seconds[GP_GOODPUT] / g.r.total : NAN),
	    "badput_seconds_total", g.r.total - g.r.seconds[GP_GOODPUT], "badput_seconds",
	    categories(&g.r), "steps", "kept", g.r.steps_kept, "lost", g.r.steps_lost, "attempts",
	    g.attempts, "attempt_list", g.list, "device_seconds", g.device_seconds, "tokens_per_s",
	    real_or_null(g.tokens_per_s), "mfu", real_or_null(mfu), "predicted_tokens_per_s",
	    real_or_null(predicted), "scaling_efficiency",
	    real_or_null(isfinite(predicted) ? g.tokens_per_s / predicted : NAN));
	json_decref(doc);
	return api_reply(rq, 200, out);
}

int h_tenant_usage(api_req *rq)
{
	const char *days = api_query(rq, "days");
	if (days && (!*days || strspn(days, "0123456789") != strlen(days) || strlen(days) > 3 ||
	             atoi(days) < 1 || atoi(days) > 366))
		return api_fail(rq, ERR_BAD_REQUEST, "days must be 1 to 366");
	char limit[16];
	snprintf(limit, sizeof(limit), "%d", GOODPUT_USAGE_JOBS);
	const char *p[] = {rq->scope.tenant_id, days ? days : "30", limit};
	json_t *docs;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(d), '[]') FROM (SELECT " TIMELINE " AS d FROM jobs j"
	    " WHERE j.tenant_id = $1 AND j.created_at > now() - $2::int * interval '1 day'"
	    " ORDER BY j.created_at DESC LIMIT $3::int) x",
	    3, p, &docs);
	if (rc)
		return api_fail_db(rq, rc);
	goodput_result sum;
	memset(&sum, 0, sizeof(sum));
	double device_seconds = 0;
	size_t n = json_array_size(docs);
	for (size_t i = 0; i < n; i++) {
		job_goodput g;
		if (cut(json_array_get(docs, i), &g) < 0) {
			json_decref(docs);
			return api_fail(rq, ERR_INTERNAL, "out of memory");
		}
		json_decref(g.list);
		for (int c = 0; c < GP__COUNT; c++)
			sum.seconds[c] += g.r.seconds[c];
		sum.total += g.r.total;
		sum.steps_kept += g.r.steps_kept;
		sum.steps_lost += g.r.steps_lost;
		device_seconds += g.device_seconds;
	}
	json_decref(docs);
	json_t *quota;
	const char *q[] = {rq->scope.tenant_id};
	rc = api_query_json(
	    rq,
	    "SELECT json_build_object('max_gpus', k.max_gpus, 'devices_in_use', u.devices,"
	    " 'borrow_gpus', k.borrow_gpus, 'devices_borrowed', u.borrowed,"
	    " 'running_jobs', u.running_jobs, 'gpu_hours_this_month', u.month_gpu_hours,"
	    " 'max_running_jobs', k.max_running_jobs, 'gpu_hours_per_month', k.gpu_hours_per_month,"
	    " 'max_storage_bytes', k.max_storage_bytes, 'storage_bytes_used',"
	    " tenant_storage_bytes(k.tenant_id), 'storage', json_build_object('checkpoints',"
	    " s.checkpoints, 'datasets', s.datasets, 'logs', s.logs, 'code', s.code))"
	    " FROM tenants t" QUOTA_SQL_JOIN("t.id") ", tenant_storage(t.id) s WHERE t.id = $1",
	    1, q, &quota);
	if (rc)
		return api_fail_db(rq, rc);
	return api_reply(
	    rq, 200,
	    json_pack("{s:s, s:i, s:i, s:b, s:f, s:f, s:o, s:f, s:o, s:{s:i, s:i}, s:f, s:o}",
	              "tenant", rq->scope.tenant_name, "days", days ? atoi(days) : 30, "jobs",
	              (int)n, "truncated", n == GOODPUT_USAGE_JOBS, "wall_seconds", sum.total,
	              "goodput_seconds", sum.seconds[GP_GOODPUT], "goodput_fraction",
	              real_or_null(sum.total > 0 ? sum.seconds[GP_GOODPUT] / sum.total : NAN),
	              "badput_seconds_total", sum.total - sum.seconds[GP_GOODPUT], "badput_seconds",
	              categories(&sum), "steps", "kept", sum.steps_kept, "lost", sum.steps_lost,
	              "device_seconds", device_seconds, "quota", quota ? quota : json_null()));
}
