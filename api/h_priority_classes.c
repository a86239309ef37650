/*
 * h_priority_classes.c - the platform's priority classes (scheduler/README.md,
 * "Borrowing and preemption"):
 *   GET    /v1/priority-classes          every class, highest value first
 *   PUT    /v1/priority-classes/{class}  define one, or change its value or description
 *   DELETE /v1/priority-classes/{class}  remove one no quota and no live job names
 * A tenant's quota lists the classes its members may choose beside the
 * default one (normal); a job takes its class's value as its priority at
 * submission, and a class's new value is written to its queued jobs.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "handlers.h"
#include "jobspec.h"
#include "server.h"

#define CLASS_COLS "name, value, description, " CLOCK_SQL_RFC3339("updated_at") " AS updated_at"

int h_priority_class_list(api_req *rq)
{
	json_t *items;
	int rc = api_query_json(rq,
	                        "SELECT coalesce(json_agg(x ORDER BY x.value DESC, x.name), '[]')"
	                        " FROM (SELECT " CLASS_COLS " FROM priority_classes) x",
	                        0, NULL, &items);
	return api_reply_items(rq, rc, items, NULL);
}

/* The route's {class}, or NULL when it is not a class name. */
static const char *class_param(api_req *rq)
{
	const char *c = route_param(&rq->params, "class");
	return c && jsonx_is_name(c) && strlen(c) <= JOBSPEC_CLASS_MAX ? c : NULL;
}

int h_priority_class_put(api_req *rq)
{
	const char *name = class_param(rq);
	json_t *in;
	if (!name)
		return api_fail(
		    rq, ERR_BAD_REQUEST,
		    "a class name is 2-%d characters of a-z, 0-9 and '-', starting with a "
		    "letter",
		    JOBSPEC_CLASS_MAX);
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"value", "description", NULL};
	jsonx_only_fields(in, "", fields, &v);
	int64_t value = 0;
	const char *desc = NULL;
	jsonx_get_int(in, "", "value", true, -1000, 1000, &value, &v);
	jsonx_get_str(in, "", "description", false, 200, &desc, &v);
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);
	char val[16];
	snprintf(val, sizeof(val), "%lld", (long long)value);
	const char *p[] = {name, val, desc};
	json_t *out = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	if (rc == 0)
		rc = api_query_json(
		    rq,
		    "WITH c AS (INSERT INTO priority_classes (name, value, description)"
		    " VALUES ($1, $2::int, coalesce($3, '')) ON CONFLICT (name) DO UPDATE"
		    " SET value = $2::int,"
		    " description = coalesce($3, priority_classes.description),"
		    " updated_at = now() RETURNING *)"
		    " SELECT row_to_json(x) FROM (SELECT " CLASS_COLS " FROM c) x",
		    3, p, &out);
	/* the queue's order follows the class's value (migrations/0028) */
	if (rc == 0)
		rc = db_query(
		    rq->db, NULL,
		    "UPDATE jobs SET priority = $2::int"
		    " WHERE priority_class = $1 AND state = 'queued' AND priority <> $2::int",
		    2, p);
	char res[96];
	snprintf(res, sizeof(res), "priority_class/%s", name);
	rc = api_audit_commit(rq, rc, 200, res, in);
	if (rc) {
		json_decref(out);
		return api_fail_db(rq, rc);
	}
	return api_reply(rq, 200, out);
}

int h_priority_class_delete(api_req *rq)
{
	const char *name = class_param(rq);
	if (!name)
		return api_fail(rq, ERR_PRIORITY_CLASS_NOT_FOUND, "no priority class of that name");
	const char *p[] = {name, JOBSPEC_CLASS_DEFAULT};
	PGresult *r = NULL;
	int rc = api_db(rq);
	if (rc == 0)
		rc = db_begin(rq->db);
	/* the class row locked, then what still names it */
	if (rc == 0)
		rc = db_query(rq->db, &r,
		              "SELECT $1 = $2 OR EXISTS (SELECT 1 FROM quotas"
		              "   WHERE $1 = ANY (priority_classes))"
		              " OR EXISTS (SELECT 1 FROM jobs WHERE priority_class = $1"
		              "   AND state NOT IN ('succeeded', 'failed', 'cancelled'))"
		              " FROM priority_classes WHERE name = $1 FOR UPDATE",
		              2, p);
	int found = rc == 0 ? PQntuples(r) : 0;
	bool used = found == 1 && PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	if (rc == 0 && (found != 1 || used)) {
		db_rollback(rq->db);
		if (found != 1)
			return api_fail(rq, ERR_PRIORITY_CLASS_NOT_FOUND,
			                "no priority class of that name");
		return api_fail(rq, ERR_PRIORITY_CLASS_IN_USE,
		                "the class %s is the default one, or a quota allows it, or a job "
		                "that has not ended has it",
		                name);
	}
	/* ended jobs that had it fall back to the default class (jobs.priority_class) */
	if (rc == 0)
		rc =
		    db_query(rq->db, NULL,
		             "UPDATE jobs SET priority_class = $2 WHERE priority_class = $1", 2, p);
	if (rc == 0)
		rc = db_query(rq->db, NULL, "DELETE FROM priority_classes WHERE name = $1", 1, p);
	char res[96];
	snprintf(res, sizeof(res), "priority_class/%s", name);
	rc = api_audit_commit(rq, rc, 204, res, NULL);
	if (rc)
		return api_fail_db(rq, rc);
	rq->status = 204;
	return 0;
}
