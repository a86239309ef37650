/*
 * routes.c - the route table: every route of the API, its permission and
 * the scope the permission is checked in. Nothing reaches a handler
 * without passing auth_check() against its row (public rows excepted).
 * tests/unit/test_openapi.c checks this table against api/openapi.json, and
 * tests/unit/test_router.c checks its invariants.
 */
#include "handlers.h"
#include "router.h"

#define PUB ROUTE_PUBLIC

/* clang-format off */
static const route table[] = {
	/* method  pattern                                permission            scope           audit action      flags handler */
	{"GET",    "/healthz",                            PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             PUB, h_healthz},
	{"GET",    "/readyz",                             PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             PUB, h_readyz},
	{"GET",    "/v1/openapi.json",                    PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             PUB, h_openapi},
	{"GET",    "/v1/whoami",                          PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             0,   h_whoami},

	{"POST",   "/v1/tenants",                         PERM_TENANT_CREATE,   SCOPE_PLATFORM, "tenant.create",  0,   h_tenant_create},
	{"GET",    "/v1/tenants",                         PERM_AUTHENTICATED,   SCOPE_PLATFORM, NULL,             0,   h_tenant_list},
	{"GET",    "/v1/tenants/{tenant}",                PERM_TENANT_READ,     SCOPE_TENANT,   NULL,             0,   h_tenant_get},
	{"GET",    "/v1/tenants/{tenant}/quota",          PERM_QUOTA_READ,      SCOPE_TENANT,   NULL,             0,   h_quota_get},
	{"PUT",    "/v1/tenants/{tenant}/quota",          PERM_QUOTA_WRITE,     SCOPE_TENANT,   "quota.update",   0,   h_quota_put},
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
	{"GET",    "/v1/jobs/{job}",                      PERM_JOB_READ,        SCOPE_JOB,      NULL,             0,   h_job_get},
	{"POST",   "/v1/jobs/{job}/cancel",               PERM_JOB_CANCEL,      SCOPE_JOB,      "job.cancel",     0,   h_job_cancel},
	{"GET",    "/v1/jobs/{job}/events",               PERM_JOB_READ,        SCOPE_JOB,      NULL,             0,   h_job_events},
};
/* clang-format on */

const route *routes_table(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}
