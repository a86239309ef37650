/*
 * audit.c - insert one audit_log row.
 */
#include "audit.h"

#include <stdio.h>
#include <stdlib.h>

#include "db.h"

int audit_write(PGconn *c, const audit_record *a)
{
	char status[16];
	snprintf(status, sizeof(status), "%d", a->status);
	char *d = a->detail ? json_dumps(a->detail, JSON_COMPACT) : NULL;
	const char *p[] = {
	    a->actor_id,  a->actor_name ? a->actor_name : "", a->tenant_id,
	    a->action,    a->resource ? a->resource : "",     a->outcome,
	    status,       a->request_id ? a->request_id : "", a->client_addr ? a->client_addr : "",
	    d ? d : "{}", a->actor_role ? a->actor_role : ""};
	int rc =
	    db_query(c, NULL,
	             "INSERT INTO audit_log (actor_id, actor_name, tenant_id, action, resource,"
	             " outcome, status, request_id, client_addr, detail, actor_role)"
	             " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11)",
	             11, p);
	free(d);
	return rc;
}
