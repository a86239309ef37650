/*
 * routes.h - the API paths yardctl calls, in one place (see api/README.md).
 *
 * Each "{}" is filled by URL_PATH() with an escaped name or id.
 */
#ifndef YARDCTL_ROUTES_H
#define YARDCTL_ROUTES_H

#define ROUTE_WHOAMI            "/v1/whoami"
#define ROUTE_PLAN              "/v1/plan"
#define ROUTE_TENANTS           "/v1/tenants"
#define ROUTE_TENANT            "/v1/tenants/{}"
#define ROUTE_TENANT_QUOTA      "/v1/tenants/{}/quota"
#define ROUTE_TENANT_USAGE      "/v1/tenants/{}/usage"
#define ROUTE_TENANT_IDENTITY   "/v1/tenants/{}/identity"
#define ROUTE_TENANT_MEMBERS    "/v1/tenants/{}/members"
#define ROUTE_TENANT_MEMBER     "/v1/tenants/{}/members/{}"
#define ROUTE_TENANT_JOBS       "/v1/tenants/{}/jobs"
#define ROUTE_TENANT_DATASETS   "/v1/tenants/{}/datasets"
#define ROUTE_TENANT_DATASET    "/v1/tenants/{}/datasets/{}"
#define ROUTE_DATASET_VERSIONS  "/v1/tenants/{}/datasets/{}/versions"
#define ROUTE_DATASET_EXEMPTION "/v1/tenants/{}/datasets/{}/exemption"
#define ROUTE_DATASET_GRANTS    "/v1/tenants/{}/datasets/{}/grants"
#define ROUTE_DATASET_GRANT     "/v1/tenants/{}/datasets/{}/grants/{}"
#define ROUTE_DATASET_GRANT_OK  "/v1/tenants/{}/datasets/{}/grants/{}/approve"
#define ROUTE_SHARED_DATASETS   "/v1/tenants/{}/shared-datasets"
#define ROUTE_USERS             "/v1/users"
#define ROUTE_USER_TOKENS       "/v1/users/{}/tokens"
#define ROUTE_TOKEN             "/v1/tokens/{}"
#define ROUTE_JOB               "/v1/jobs/{}"
#define ROUTE_JOB_CANCEL        "/v1/jobs/{}/cancel"
#define ROUTE_JOB_EVENTS        "/v1/jobs/{}/events"
#define ROUTE_JOB_METRICS       "/v1/jobs/{}/metrics"
#define ROUTE_JOB_GOODPUT       "/v1/jobs/{}/goodput"
#define ROUTE_JOB_ETA           "/v1/jobs/{}/eta"
#define ROUTE_JOB_LOGS          "/v1/jobs/{}/logs"
#define ROUTE_JOB_ATTEMPTS      "/v1/jobs/{}/attempts"
#define ROUTE_JOB_CKPTS         "/v1/jobs/{}/checkpoints"
#define ROUTE_CHECKPOINT        "/v1/checkpoints/{}"
#define ROUTE_CKPT_LINEAGE      "/v1/checkpoints/{}/lineage"
#define ROUTE_CKPT_GRANTS       "/v1/checkpoints/{}/grants"
#define ROUTE_CKPT_GRANT        "/v1/checkpoints/{}/grants/{}"
#define ROUTE_CKPT_GRANT_OK     "/v1/checkpoints/{}/grants/{}/approve"
#define ROUTE_SHARED_CKPTS      "/v1/tenants/{}/shared-checkpoints"
#define ROUTE_AUDIT_KEY         "/v1/audit/signing-key"
#define ROUTE_AUDIT_HEAD        "/v1/audit/head"
#define ROUTE_AUDIT_HEADS       "/v1/audit/heads"
#define ROUTE_AUDIT_EXPORT      "/v1/audit/export"
#define ROUTE_AUDIT_INCLUSION   "/v1/audit/proof/inclusion"
#define ROUTE_AUDIT_CONSISTENCY "/v1/audit/proof/consistency"
#define ROUTE_REPORT            "/v1/reports/{}"
#define ROUTE_TENANT_REPORT     "/v1/tenants/{}/reports/{}"

#endif
