/*
 * jobdoc.h - the SQL of a job's document, the answer of GET /v1/jobs/{job}
 * and of a submission: the job's columns, its spec and, while it is
 * queued, its place in the queue. The one definition serves h_jobs.c and
 * the statement auth.c runs for routes that read the job with the
 * caller's token (ROUTE_JOB_DOC). The SQL names the job's row j and its
 * tenant's row jt.
 */
#ifndef TY_JOBDOC_H
#define TY_JOBDOC_H

#include "api.h"

/*
 * A queued job's position is counted exactly up to this many: a job with
 * more of its tenant's queued jobs at or ahead of it reads null. Counting
 * stops there, so reading a job costs the same whatever the queue's depth.
 */
#define JOB_QUEUE_POSITION_MAX 100

/* JOB_QUEUE_POSITION_MAX + 1 as SQL text: a count that reaches it means "more" */
#define JOB_QUEUE_POSITION_OVER "101"

/* clang-format off */
#define JOB_COLS                                                                                 \
	"j.id, j.tenant_id, jt.name AS tenant, j.name, j.state, j.state_reason,"                 \
	" j.submitter_id, j.priority, j.priority_class, j.preemptible, j.devices, j.attempts,"  \
	" " CLOCK_SQL_RFC3339("j.created_at") " AS created_at,"                                                 \
	" " CLOCK_SQL_RFC3339("j.updated_at") " AS updated_at,"                                                 \
	" " CLOCK_SQL_RFC3339("j.started_at") " AS started_at,"                                                 \
	" " CLOCK_SQL_RFC3339("j.finished_at") " AS finished_at"
#define JOB_FROM " FROM jobs j JOIN tenants jt ON jt.id = j.tenant_id"

/* The tenant's queued jobs ahead of j (cond), counted up to the limit, on
 * the jobs_queue index (tenant, priority DESC, created_at, id). */
#define JOB_QUEUE_AHEAD(cond)                                                                    \
	"(SELECT count(*) AS n FROM (SELECT 1 FROM jobs q WHERE q.tenant_id = j.tenant_id"       \
	" AND q.state = 'queued' AND " cond " LIMIT " JOB_QUEUE_POSITION_OVER ") s)"

/*
 * A queued job's place: its position among its tenant's queued jobs in
 * the order admission takes them (priority, then submission; the
 * jobs_queue index), counted as of this statement: those of higher
 * priority, then those of its priority submitted before it or with it
 * (the smaller id first), itself included; null past
 * JOB_QUEUE_POSITION_MAX. Then its tenant's rank in the scheduler's last
 * fair-share cycle (NULL before the scheduler ranked it), how many tenants
 * that cycle ranked, why it waits and until when. NULL for any other
 * state.
 */
#define JOB_QUEUE                                                                                \
	"CASE WHEN j.state = 'queued' THEN json_build_object("                                   \
	"'position', (SELECT nullif(least(hi.n + eq.n, " JOB_QUEUE_POSITION_OVER "), "           \
	JOB_QUEUE_POSITION_OVER ") FROM "                                                        \
	JOB_QUEUE_AHEAD("q.priority > j.priority") " hi, "                                       \
	JOB_QUEUE_AHEAD("q.priority = j.priority AND (q.created_at, q.id) <= (j.created_at, j.id)") \
	" eq),"                                                                                  \
	" 'tenant_rank', (SELECT s.rank FROM scheduler_tenants s"                                \
	"  WHERE s.tenant_id = j.tenant_id),"                                                    \
	" 'tenants_ranked', (SELECT count(*) FROM scheduler_tenants),"                           \
	" 'reason', j.state_reason,"                                                             \
	" 'not_before', " CLOCK_SQL_RFC3339("j.not_before") ") END AS queue"

/* The document of the job row j (tenant jt), as one json value. */
#define JOB_DOC "(SELECT row_to_json(x) FROM (SELECT " JOB_COLS ", " JOB_QUEUE ", j.spec) x)"
/* clang-format on */

#endif
