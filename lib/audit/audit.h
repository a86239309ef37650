/*
 * audit.h - the audit log writer.
 *
 * audit_write() runs inside the caller's transaction, so a change and its
 * record commit together or not at all. Denials are written in a
 * transaction of their own by the API's authorisation step.
 * Every record joins the verifiable log (auditlog.h): a trigger queues it
 * in the same transaction, and the sequencer gives it its place in the
 * Merkle tree.
 */
#ifndef TY_AUDIT_H
#define TY_AUDIT_H

#include <jansson.h>
#include <libpq-fe.h>

typedef struct audit_record {
	const char *actor_id;    /* user id, or NULL (bootstrap, anonymous) */
	const char *actor_name;  /* user name, or "" */
	const char *actor_role;  /* the platform role acted with: "admin", "auditor", or NULL */
	const char *tenant_id;   /* tenant id, or NULL for platform actions */
	const char *action;      /* e.g. "job.submit", "member.grant", "authz.deny" */
	const char *resource;    /* e.g. "job/<id>", "tenant/<name>" */
	const char *outcome;     /* "success", "denied" or "failure" */
	int status;              /* HTTP status answered */
	const char *request_id;  /* X-Request-Id */
	const char *client_addr; /* peer address */
	const json_t *detail;    /* borrowed; never a secret; may be NULL */
} audit_record;

/* RET 0 or -ERR_* from db_query. */
int audit_write(PGconn *c, const audit_record *a);

#endif
