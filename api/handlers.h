/*
 * handlers.h - every route handler. Each takes the authorised request,
 * answers through api_reply()/api_fail() and returns 0 (or a negative
 * err_code the server turns into a problem answer).
 */
#ifndef TY_HANDLERS_H
#define TY_HANDLERS_H

#include "api.h"
#include "auditlog.h"

/* h_meta.c */
int h_healthz(api_req *rq);
int h_readyz(api_req *rq);
int h_openapi(api_req *rq);
int h_metrics(api_req *rq);
int h_ui(api_req *rq);
int h_whoami(api_req *rq);

/* h_plan.c */
int h_plan(api_req *rq);

/* h_tenants.c */
int h_tenant_create(api_req *rq);
int h_tenant_list(api_req *rq);
int h_tenant_get(api_req *rq);
int h_quota_get(api_req *rq);
int h_quota_put(api_req *rq);
/* h_priority_classes.c: the platform's priority classes (scheduler/README.md) */
int h_priority_class_list(api_req *rq);
int h_priority_class_put(api_req *rq);
int h_priority_class_delete(api_req *rq);

/* h_members.c */
int h_member_list(api_req *rq);
int h_member_put(api_req *rq);
int h_member_delete(api_req *rq);

/* h_users.c */
int h_user_create(api_req *rq);
int h_user_list(api_req *rq);
int h_token_create(api_req *rq);
int h_token_list(api_req *rq);
int h_token_revoke(api_req *rq);

/* h_jobs.c */
int h_job_submit(api_req *rq);
int h_job_list(api_req *rq);
int h_job_get(api_req *rq);
int h_job_cancel(api_req *rq);
int h_job_events(api_req *rq);

/* h_attempts.c */
int h_attempt_create(api_req *rq);
int h_attempt_get(api_req *rq);
int h_attempt_heartbeat(api_req *rq);
int h_attempt_metrics(api_req *rq);
int h_attempt_checkpoint(api_req *rq);
int h_attempt_event(api_req *rq);
int h_attempt_finish(api_req *rq);

/* h_keys.c */
int h_attempt_key(api_req *rq);
int h_key_rotate(api_req *rq);
int h_key_shred(api_req *rq);
int h_master_key_status(api_req *rq);

/*
 * h_code.c, h_datasets.c, h_dataset_upload.c, h_registry_grants.c: the code
 * bundle and dataset registries (docs/own-code.md, docs/datasets.md)
 */
/* How sensitive data or code is, least first (NULL-terminated): datasets', code bundles'. */
extern const char *const api_classifications[];

int h_code_create(api_req *rq);
int h_code_list(api_req *rq);
int h_code_get(api_req *rq);
int h_code_version_create(api_req *rq);
int h_code_files(api_req *rq);
int h_code_grant_create(api_req *rq);
int h_code_grant_list(api_req *rq);
int h_code_grant_approve(api_req *rq);
int h_code_grant_revoke(api_req *rq);
int h_shared_code(api_req *rq);
int h_dataset_create(api_req *rq);
int h_dataset_list(api_req *rq);
int h_dataset_get(api_req *rq);
int h_dataset_exempt(api_req *rq);
int h_dataset_version_create(api_req *rq);
int h_attempt_dataset_key(api_req *rq);
int h_dataset_grant_create(api_req *rq);
int h_dataset_grant_list(api_req *rq);
int h_dataset_grant_approve(api_req *rq);
int h_dataset_grant_revoke(api_req *rq);
int h_shared_datasets(api_req *rq);
int h_dataset_derived(api_req *rq);

/* h_identity.c: the Unix user a tenant's attempts run as (docs/identity.md) */
int h_identity_get(api_req *rq);
int h_identity_put(api_req *rq);

/* h_checkpoint_grants.c, h_download.c, jobinit.c: sharing checkpoints, starting from one */
int h_checkpoint_grant_create(api_req *rq);
int h_checkpoint_grant_list(api_req *rq);
int h_checkpoint_grant_approve(api_req *rq);
int h_checkpoint_grant_revoke(api_req *rq);
int h_shared_checkpoints(api_req *rq);
int h_shared_checkpoint_download(api_req *rq);
int h_attempt_init_key(api_req *rq);
int h_attempt_code_key(api_req *rq); /* jobcode.c */
int h_attempt_init_file(api_req *rq);

/* h_results.c */
int h_job_metrics(api_req *rq);
int h_job_goodput(api_req *rq);
int h_job_eta(api_req *rq);
int h_webhook_create(api_req *rq);
int h_webhook_list(api_req *rq);
int h_webhook_delete(api_req *rq);
int h_webhook_deliveries(api_req *rq);
int h_alert_list(api_req *rq);
int h_tenant_usage(api_req *rq);
int h_job_checkpoints(api_req *rq);
int h_checkpoint_get(api_req *rq);
int h_checkpoint_lineage(api_req *rq);

/* h_logs.c, h_download.c: a job's encrypted files, decrypted and streamed */
int h_job_logs(api_req *rq);

/* h_audit.c: the verifiable audit log */
int h_audit_key(api_req *rq);
int h_audit_head(api_req *rq);
int h_audit_head_create(api_req *rq);
int h_audit_inclusion(api_req *rq);
int h_audit_consistency(api_req *rq);
int h_audit_export(api_req *rq);
/*
 * Sequence whatever is queued, then sign a head of the whole log (or find
 * the newest, when it already covers it). OUT: *h. RET 0 or answered (-1).
 */
int api_audit_head_now(api_req *rq, auditlog_head *h);

/* h_reports.c: evidence reports from the audit log (lib/audit/report.h) */
int h_report(api_req *rq);
int h_tenant_report(api_req *rq);
int h_checkpoint_download(api_req *rq);

#endif
