/*
 * routes.c - the route table: every route of the API, its permission and
 * the scope the permission is checked in. Nothing reaches a handler
 * without passing auth_check() against its row (public rows excepted).
 * A row with an audit action writes an audit record under that name:
 * every change, and the reads an auditor asks about (logs, checkpoint
 * downloads, reports); a refused request to it is recorded too.
 * tests/unit/test_openapi.c checks this table against api/openapi.json, and
 * tests/unit/test_router.c checks its invariants.
 */
#include "handlers.h"
#include "router.h"

#define PUB ROUTE_PUBLIC
#define CMP ROUTE_COMPUTE
#define DOC ROUTE_JOB_DOC
#define UPL ROUTE_UPLOAD
#define MEM (ROUTE_PUBLIC | ROUTE_MEMORY)

/* clang-format off */
static const route table[] = {
	/* method  pattern                                permission            scope           audit action      flags handler */
	{"GET",    "/healthz",                            PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             MEM, h_healthz},
	{"GET",    "/readyz",                             PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             PUB, h_readyz},
	{"GET",    "/v1/openapi.json",                    PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             MEM, h_openapi},
	{"GET",    "/metrics",                            PERM_METRICS_READ,    SCOPE_PLATFORM, NULL,             0,   h_metrics},
	{"GET",    "/ui",                                 PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             MEM, h_ui},
	{"GET",    "/ui/app.js",                          PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             MEM, h_ui},
	{"GET",    "/ui/app.css",                         PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             MEM, h_ui},
	{"GET",    "/v1/whoami",                          PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             0,   h_whoami},
	{"POST",   "/v1/plan",                            PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             CMP, h_plan},

	{"POST",   "/v1/tenants",                         PERM_TENANT_CREATE,   SCOPE_PLATFORM, "tenant.create",  0,   h_tenant_create},
	{"GET",    "/v1/tenants",                         PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             0,   h_tenant_list},
	{"GET",    "/v1/tenants/{tenant}",                PERM_TENANT_READ,     SCOPE_TENANT,   NULL,             0,   h_tenant_get},
	{"GET",    "/v1/tenants/{tenant}/quota",          PERM_QUOTA_READ,      SCOPE_TENANT,   NULL,             0,   h_quota_get},
	{"GET",    "/v1/tenants/{tenant}/usage",          PERM_QUOTA_READ,      SCOPE_TENANT,   NULL,             0,   h_tenant_usage},
	{"GET",    "/v1/tenants/{tenant}/alerts",         PERM_JOB_READ,        SCOPE_TENANT,   NULL,             0,   h_alert_list},
	{"POST",   "/v1/tenants/{tenant}/webhooks",       PERM_WEBHOOK_MANAGE,  SCOPE_TENANT,   "webhook.create", 0,   h_webhook_create},
	{"GET",    "/v1/tenants/{tenant}/webhooks",       PERM_WEBHOOK_MANAGE,  SCOPE_TENANT,   NULL,             0,   h_webhook_list},
	{"DELETE", "/v1/tenants/{tenant}/webhooks/{webhook}", PERM_WEBHOOK_MANAGE, SCOPE_TENANT, "webhook.delete", 0, h_webhook_delete},
	{"GET",    "/v1/tenants/{tenant}/webhooks/{webhook}/deliveries", PERM_WEBHOOK_MANAGE, SCOPE_TENANT, NULL, 0, h_webhook_deliveries},
	{"PUT",    "/v1/tenants/{tenant}/quota",          PERM_QUOTA_WRITE,     SCOPE_TENANT,   "quota.update",   0,   h_quota_put},
	{"GET",    "/v1/priority-classes",                PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             0,   h_priority_class_list},
	{"PUT",    "/v1/priority-classes/{class}",        PERM_PRIORITY_CLASS_WRITE, SCOPE_PLATFORM, "priority_class.put", 0, h_priority_class_put},
	{"DELETE", "/v1/priority-classes/{class}",        PERM_PRIORITY_CLASS_WRITE, SCOPE_PLATFORM, "priority_class.delete", 0, h_priority_class_delete},
	{"POST",   "/v1/tenants/{tenant}/keys/rotate",    PERM_KEY_ROTATE,      SCOPE_TENANT,   "key.rotate",     0,   h_key_rotate},
	{"DELETE", "/v1/tenants/{tenant}/keys",           PERM_KEY_SHRED,       SCOPE_TENANT,   "key.shred",      0,   h_key_shred},
	{"GET",    "/v1/keys/master",                     PERM_METRICS_READ,    SCOPE_PLATFORM, NULL,             0,   h_master_key_status},
	{"GET",    "/v1/tenants/{tenant}/identity",       PERM_TENANT_READ,     SCOPE_TENANT,   NULL,             0,   h_identity_get},
	{"PUT",    "/v1/tenants/{tenant}/identity",       PERM_TENANT_IDENTITY, SCOPE_TENANT,   "tenant.identity", 0,  h_identity_put},
	{"GET",    "/v1/tenants/{tenant}/members",        PERM_MEMBER_READ,     SCOPE_TENANT,   NULL,             0,   h_member_list},
	{"PUT",    "/v1/tenants/{tenant}/members/{user}", PERM_MEMBER_WRITE,    SCOPE_TENANT,   "member.grant",   0,   h_member_put},
	{"DELETE", "/v1/tenants/{tenant}/members/{user}", PERM_MEMBER_WRITE,    SCOPE_TENANT,   "member.revoke",  0,   h_member_delete},

	{"POST",   "/v1/users",                           PERM_USER_CREATE,     SCOPE_PLATFORM, "user.create",    0,   h_user_create},
	{"GET",    "/v1/users",                           PERM_USER_READ,       SCOPE_PLATFORM, NULL,             0,   h_user_list},
	{"POST",   "/v1/users/{user}/tokens",             PERM_TOKEN_MANAGE,    SCOPE_USER,     "token.create",   0,   h_token_create},
	{"GET",    "/v1/users/{user}/tokens",             PERM_TOKEN_MANAGE,    SCOPE_USER,     NULL,             0,   h_token_list},
	{"DELETE", "/v1/tokens/{token_id}",               PERM_TOKEN_MANAGE,    SCOPE_TOKEN,    "token.revoke",   0,   h_token_revoke},

	{"POST",   "/v1/tenants/{tenant}/jobs",           PERM_JOB_SUBMIT,      SCOPE_TENANT,   "job.submit",     0,   h_job_submit},
	{"GET",    "/v1/tenants/{tenant}/jobs",           PERM_JOB_READ,        SCOPE_TENANT,   NULL,             0,   h_job_list},
	{"GET",    "/v1/jobs/{job}",                      PERM_JOB_READ,        SCOPE_JOB,      NULL,             DOC, h_job_get},
	{"POST",   "/v1/jobs/{job}/cancel",               PERM_JOB_CANCEL,      SCOPE_JOB,      "job.cancel",     0,   h_job_cancel},
	{"GET",    "/v1/jobs/{job}/events",               PERM_JOB_READ,        SCOPE_JOB,      NULL,             0,   h_job_events},
	{"GET",    "/v1/jobs/{job}/metrics",              PERM_JOB_READ,        SCOPE_JOB,      NULL,             0,   h_job_metrics},
	{"GET",    "/v1/jobs/{job}/goodput",              PERM_JOB_READ,        SCOPE_JOB,      NULL,             0,   h_job_goodput},
	{"GET",    "/v1/jobs/{job}/eta",                  PERM_JOB_READ,        SCOPE_JOB,      NULL,             0,   h_job_eta},
	{"GET",    "/v1/jobs/{job}/checkpoints",          PERM_JOB_READ,        SCOPE_JOB,      NULL,             0,   h_job_checkpoints},
	{"GET",    "/v1/checkpoints/{checkpoint}",        PERM_JOB_READ,        SCOPE_CHECKPOINT, NULL,           0,   h_checkpoint_get},
	{"GET",    "/v1/checkpoints/{checkpoint}/lineage", PERM_JOB_READ,       SCOPE_CHECKPOINT, NULL,           0,   h_checkpoint_lineage},
	{"GET",    "/v1/jobs/{job}/logs",                 PERM_JOB_READ,        SCOPE_JOB,      "log.read",       0,   h_job_logs},
	{"GET",    "/v1/checkpoints/{checkpoint}/download", PERM_CHECKPOINT_DOWNLOAD, SCOPE_CHECKPOINT, "checkpoint.download", 0, h_checkpoint_download},
	{"POST",   "/v1/jobs/{job}/attempts",             PERM_JOB_DISPATCH,    SCOPE_JOB,      "attempt.create", 0,   h_attempt_create},

	/* sharing checkpoints with other tenants (docs/datasets.md) */
	{"POST",   "/v1/checkpoints/{checkpoint}/grants", PERM_CHECKPOINT_GRANT, SCOPE_CHECKPOINT, "checkpoint.grant", 0, h_checkpoint_grant_create},
	{"GET",    "/v1/checkpoints/{checkpoint}/grants", PERM_JOB_READ,        SCOPE_CHECKPOINT, NULL,           0,   h_checkpoint_grant_list},
	{"POST",   "/v1/checkpoints/{checkpoint}/grants/{grant}/approve", PERM_CHECKPOINT_APPROVE, SCOPE_CHECKPOINT, "checkpoint.grant.approve", 0, h_checkpoint_grant_approve},
	{"DELETE", "/v1/checkpoints/{checkpoint}/grants/{grant}", PERM_CHECKPOINT_GRANT, SCOPE_CHECKPOINT, "checkpoint.grant.revoke", 0, h_checkpoint_grant_revoke},
	{"GET",    "/v1/tenants/{tenant}/shared-checkpoints", PERM_JOB_READ,    SCOPE_TENANT,   NULL,             0,   h_shared_checkpoints},
	{"GET",    "/v1/tenants/{tenant}/shared-checkpoints/{checkpoint}/download", PERM_CHECKPOINT_DOWNLOAD, SCOPE_TENANT, "checkpoint.download", 0, h_shared_checkpoint_download},

	/* the code bundle registry (docs/own-code.md) */
	{"POST",   "/v1/tenants/{tenant}/code",           PERM_CODE_WRITE,      SCOPE_TENANT,   "code.create",    0,   h_code_create},
	{"GET",    "/v1/tenants/{tenant}/code",           PERM_CODE_READ,       SCOPE_TENANT,   NULL,             0,   h_code_list},
	{"GET",    "/v1/tenants/{tenant}/code/{code}",    PERM_CODE_READ,       SCOPE_TENANT,   NULL,             0,   h_code_get},
	{"POST",   "/v1/tenants/{tenant}/code/{code}/versions", PERM_CODE_WRITE, SCOPE_TENANT, "code.version.create", UPL, h_code_version_create},
	{"GET",    "/v1/tenants/{tenant}/code/{code}/versions/{version}/files", PERM_CODE_READ, SCOPE_TENANT, NULL, 0, h_code_files},
	{"POST",   "/v1/tenants/{tenant}/code/{code}/grants", PERM_CODE_GRANT, SCOPE_TENANT,   "code.grant",     0,   h_code_grant_create},
	{"GET",    "/v1/tenants/{tenant}/code/{code}/grants", PERM_CODE_READ,  SCOPE_TENANT,   NULL,             0,   h_code_grant_list},
	{"POST",   "/v1/tenants/{tenant}/code/{code}/grants/{grant}/approve", PERM_CODE_APPROVE, SCOPE_TENANT, "code.grant.approve", 0, h_code_grant_approve},
	{"DELETE", "/v1/tenants/{tenant}/code/{code}/grants/{grant}", PERM_CODE_GRANT, SCOPE_TENANT, "code.grant.revoke", 0, h_code_grant_revoke},
	{"GET",    "/v1/tenants/{tenant}/shared-code",    PERM_CODE_READ,       SCOPE_TENANT,   NULL,             0,   h_shared_code},
	/* the dataset registry (docs/datasets.md) */
	{"POST",   "/v1/tenants/{tenant}/datasets",       PERM_DATASET_WRITE,   SCOPE_TENANT,   "dataset.create", 0,   h_dataset_create},
	{"GET",    "/v1/tenants/{tenant}/datasets",       PERM_DATASET_READ,    SCOPE_TENANT,   NULL,             0,   h_dataset_list},
	{"GET",    "/v1/tenants/{tenant}/datasets/{dataset}", PERM_DATASET_READ, SCOPE_TENANT,  NULL,             0,   h_dataset_get},
	{"POST",   "/v1/tenants/{tenant}/datasets/{dataset}/versions", PERM_DATASET_WRITE, SCOPE_TENANT, "dataset.version.create", UPL, h_dataset_version_create},
	{"PUT",    "/v1/tenants/{tenant}/datasets/{dataset}/exemption", PERM_DATASET_EXEMPT, SCOPE_TENANT, "dataset.exempt", 0, h_dataset_exempt},
	{"POST",   "/v1/tenants/{tenant}/datasets/{dataset}/grants", PERM_DATASET_GRANT, SCOPE_TENANT, "dataset.grant", 0, h_dataset_grant_create},
	{"GET",    "/v1/tenants/{tenant}/datasets/{dataset}/grants", PERM_DATASET_READ, SCOPE_TENANT, NULL,   0,   h_dataset_grant_list},
	{"POST",   "/v1/tenants/{tenant}/datasets/{dataset}/grants/{grant}/approve", PERM_DATASET_APPROVE, SCOPE_TENANT, "dataset.grant.approve", 0, h_dataset_grant_approve},
	{"DELETE", "/v1/tenants/{tenant}/datasets/{dataset}/grants/{grant}", PERM_DATASET_GRANT, SCOPE_TENANT, "dataset.grant.revoke", 0, h_dataset_grant_revoke},
	{"GET",    "/v1/tenants/{tenant}/datasets/{dataset}/derived", PERM_DATASET_READ, SCOPE_TENANT, NULL, 0,   h_dataset_derived},
	{"GET",    "/v1/tenants/{tenant}/shared-datasets", PERM_DATASET_READ,   SCOPE_TENANT,   NULL,             0,   h_shared_datasets},

	/* the verifiable audit log (docs/audit.md) */
	{"GET",    "/v1/audit/signing-key",               PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             0,   h_audit_key},
	{"GET",    "/v1/audit/head",                      PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             0,   h_audit_head},
	{"POST",   "/v1/audit/heads",                     PERM_AUDIT_READ,      SCOPE_PLATFORM, "audit.head",     0,   h_audit_head_create},
	{"GET",    "/v1/audit/proof/inclusion",           PERM_AUDIT_READ,      SCOPE_PLATFORM, NULL,             0,   h_audit_inclusion},
	{"GET",    "/v1/audit/proof/consistency",         PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             0,   h_audit_consistency},
	{"GET",    "/v1/audit/export",                    PERM_AUDIT_READ,      SCOPE_PLATFORM, NULL,             0,   h_audit_export},
	{"GET",    "/v1/reports/{kind}",                  PERM_AUDIT_READ,      SCOPE_PLATFORM, "audit.report",   0,   h_report},
	{"GET",    "/v1/tenants/{tenant}/reports/{kind}", PERM_AUDIT_READ,      SCOPE_TENANT,   "audit.report",   0,   h_tenant_report},

	/* the worker runtime of an attempt, with the attempt's credential only */
	{"GET",    "/internal/v1/attempts/{attempt}",     PERM_ATTEMPT_REPORT,  SCOPE_ATTEMPT,  NULL,             0,   h_attempt_get},
	{"POST",   "/internal/v1/attempts/{attempt}/key", PERM_ATTEMPT_REPORT,  SCOPE_ATTEMPT,  "key.release",    0,   h_attempt_key},
	{"POST",   "/internal/v1/attempts/{attempt}/datasets/{version}/key", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, "dataset.read", 0, h_attempt_dataset_key},
	{"POST",   "/internal/v1/attempts/{attempt}/init/key", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, "checkpoint.read", 0, h_attempt_init_key},
	{"POST",   "/internal/v1/attempts/{attempt}/code/key", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, "code.read", 0, h_attempt_code_key},
	{"GET",    "/internal/v1/attempts/{attempt}/init/files/{file}", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, NULL, 0, h_attempt_init_file},
	{"POST",   "/internal/v1/attempts/{attempt}/heartbeat", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, "attempt.heartbeat", 0, h_attempt_heartbeat},
	{"POST",   "/internal/v1/attempts/{attempt}/metrics", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, "attempt.metrics", 0,  h_attempt_metrics},
	{"POST",   "/internal/v1/attempts/{attempt}/checkpoints", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, "checkpoint.register", 0, h_attempt_checkpoint},
	{"POST",   "/internal/v1/attempts/{attempt}/events", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, "attempt.event", 0,    h_attempt_event},
	{"POST",   "/internal/v1/attempts/{attempt}/finish", PERM_ATTEMPT_REPORT, SCOPE_ATTEMPT, "attempt.finish", 0,   h_attempt_finish},
};
/* clang-format on */

const route *routes_table(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}
