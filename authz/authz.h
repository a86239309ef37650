/*
 * authz.h - roles, permissions and the one decision every request passes.
 *
 * Pure C, no I/O: the API resolves who the caller is and which tenant a
 * route touches, then asks authz_decide(). The permission table lives in
 * authz.c and nowhere else.
 *
 * Effective roles of a caller on a request are up to three: its platform
 * role (admin, auditor), its role in the request's tenant (owner, editor,
 * viewer, auditor), and the pseudo-role "self" when the route names the
 * caller's own user. A permission is granted when any of them holds it.
 * A job attempt's worker runtime is no user: its credential holds the
 * pseudo-role "attempt" on routes that name that attempt, and nothing else
 * anywhere; no user role, the platform admin's included, holds
 * attempt.report.
 */
#ifndef TY_AUTHZ_H
#define TY_AUTHZ_H

#include <stdbool.h>

typedef enum role {
	ROLE_NONE = 0,
	ROLE_ADMIN,            /* platform: everything */
	ROLE_PLATFORM_AUDITOR, /* platform: read everything, change nothing */
	ROLE_OWNER,            /* tenant: run the tenant, manage members */
	ROLE_EDITOR,           /* tenant: submit and cancel jobs */
	ROLE_VIEWER,           /* tenant: read */
	ROLE_TENANT_AUDITOR,   /* tenant: read, including the audit log */
	ROLE_SELF,             /* pseudo-role: the route names the caller */
	ROLE_ATTEMPT,          /* pseudo-role: the caller is the job attempt the route names */
	ROLE__COUNT
} role;

typedef enum perm {
	PERM_AUTHENTICATED = 0, /* any valid token */
	PERM_TENANT_CREATE,
	PERM_TENANT_LIST_ALL,
	PERM_TENANT_READ,
	PERM_QUOTA_READ,
	PERM_QUOTA_WRITE,
	PERM_MEMBER_READ,
	PERM_MEMBER_WRITE,
	PERM_USER_CREATE,
	PERM_USER_READ,
	PERM_TOKEN_MANAGE,
	PERM_JOB_SUBMIT,
	PERM_JOB_READ,
	PERM_JOB_CANCEL,
	PERM_AUDIT_READ,
	PERM_JOB_DISPATCH,        /* start an attempt of a job (the scheduler's right) */
	PERM_CHECKPOINT_DOWNLOAD, /* read a checkpoint's decrypted bytes */
	PERM_KEY_ROTATE,          /* rotate a tenant's key-encryption key */
	PERM_KEY_SHRED,           /* destroy a tenant's keys: its data becomes unreadable */
	PERM_ATTEMPT_REPORT,   /* the worker runtime of an attempt: its key, heartbeats, results */
	PERM_DATASET_READ,     /* see a tenant's datasets and their versions */
	PERM_DATASET_WRITE,    /* register datasets, upload versions */
	PERM_DATASET_EXEMPT,   /* let a restricted dataset take unmasked data (with a reason) */
	PERM_DATASET_GRANT,    /* grant another tenant read of a dataset, revoke it */
	PERM_DATASET_APPROVE,  /* put a grant of a confidential or restricted dataset in force */
	PERM_CHECKPOINT_GRANT, /* grant another tenant a checkpoint, revoke it */
	PERM_CHECKPOINT_APPROVE, /* put a confidential or restricted checkpoint's grant in force */
	PERM_TENANT_IDENTITY,    /* map a tenant to the Unix user its attempts run as */
	PERM_METRICS_READ,       /* scrape the operational metrics (GET /metrics) */
	PERM_WEBHOOK_MANAGE, /* create, list and delete a tenant's webhooks, read their deliveries
	                      */
	PERM_CODE_READ,      /* see a tenant's code bundles and their versions */
	PERM_CODE_WRITE,     /* register code bundles, upload versions */
	PERM_CODE_GRANT,     /* grant another tenant the running of a code bundle, revoke it */
	PERM_CODE_APPROVE,   /* put a grant of a confidential or restricted bundle in force */
	PERM_PRIORITY_CLASS_WRITE, /* define, change and remove priority classes (platform) */
	PERM__COUNT
} perm;

/* Which resource a route's permission is checked against. */
typedef enum scope {
	SCOPE_PLATFORM = 0, /* no tenant: platform roles only */
	SCOPE_TENANT,       /* {tenant} in the path */
	SCOPE_JOB,          /* {job} in the path; its tenant is the scope */
	SCOPE_USER,         /* {user} in the path; "self" applies to the caller */
	SCOPE_TOKEN,        /* {token_id} in the path; "self" applies to its owner */
	SCOPE_CHECKPOINT,   /* {checkpoint} in the path; its job's tenant is the scope */
	SCOPE_ATTEMPT,      /* {attempt} in the path; "attempt" applies to its credential */
	SCOPE__COUNT
} scope;

typedef enum authz_result {
	AUTHZ_ALLOW = 0,
	AUTHZ_DENY_HIDDEN,   /* the caller may not even know it exists: answer 404 */
	AUTHZ_DENY_FORBIDDEN /* visible, but not this action: answer 403 */
} authz_result;

typedef struct authz_subject {
	role platform; /* ROLE_NONE, ROLE_ADMIN or ROLE_PLATFORM_AUDITOR */
	role tenant;   /* role in the scope's tenant, or ROLE_NONE */
	bool self;     /* the scope's user is the caller */
	bool attempt;  /* the caller is the attempt the scope names (an attempt credential) */
} authz_subject;

/* RET: true when role r holds permission p. */
bool authz_role_has(role r, perm p);

/* RET: the decision for subject s asking permission p in scope sc. */
authz_result authz_decide(const authz_subject *s, perm p, scope sc);

/*
 * RET: true when s may grant or revoke the tenant role target: it needs the
 * member-management permission and every permission target holds.
 */
bool authz_can_grant(const authz_subject *s, role target);

/* Names as they appear in the API and the database. */
const char *role_name(role r);
const char *perm_name(perm p);
const char *scope_name(scope sc);
/* RET: the tenant role named s (owner, editor, viewer, auditor) or ROLE_NONE. */
role role_parse_tenant(const char *s);
/* RET: the platform role named s (admin, auditor) or ROLE_NONE. */
role role_parse_platform(const char *s);

#endif
