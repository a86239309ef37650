/*
 * authz.c - the permission table and the decision function.
 */
#include "authz.h"

#include <stdint.h>
#include <string.h>

/* A role's permissions, a bit each. */
typedef uint64_t perm_bits;
_Static_assert(PERM__COUNT < 64, "a permission is a bit of perm_bits");

#define P(x) ((perm_bits)1 << PERM_##x)
#define READS                                                                                      \
	(P(TENANT_READ) | P(QUOTA_READ) | P(MEMBER_READ) | P(JOB_READ) | P(DATASET_READ) |         \
	 P(CODE_READ))

/* The one permission table of trainyard. */
static const perm_bits role_perms[ROLE__COUNT] = {
    [ROLE_NONE] = 0,
    [ROLE_ADMIN] = (((perm_bits)1 << PERM__COUNT) - 1) & ~P(ATTEMPT_REPORT),
    [ROLE_PLATFORM_AUDITOR] = P(AUTHENTICATED) | READS | P(TENANT_LIST_ALL) | P(USER_READ) |
                              P(AUDIT_READ) | P(METRICS_READ),
    [ROLE_OWNER] = P(AUTHENTICATED) | READS | P(MEMBER_WRITE) | P(JOB_SUBMIT) | P(JOB_CANCEL) |
                   P(AUDIT_READ) | P(CHECKPOINT_DOWNLOAD) | P(KEY_ROTATE) | P(DATASET_WRITE) |
                   P(DATASET_GRANT) | P(CHECKPOINT_GRANT) | P(WEBHOOK_MANAGE) | P(CODE_WRITE) |
                   P(CODE_GRANT),
    [ROLE_EDITOR] = P(AUTHENTICATED) | READS | P(JOB_SUBMIT) | P(JOB_CANCEL) |
                    P(CHECKPOINT_DOWNLOAD) | P(DATASET_WRITE) | P(CODE_WRITE),
    [ROLE_VIEWER] = P(AUTHENTICATED) | READS,
    [ROLE_TENANT_AUDITOR] = P(AUTHENTICATED) | READS | P(AUDIT_READ),
    [ROLE_SELF] = P(AUTHENTICATED) | P(USER_READ) | P(TOKEN_MANAGE),
    [ROLE_ATTEMPT] = P(ATTEMPT_REPORT),
};

static const char *const role_names[ROLE__COUNT] = {
    [ROLE_NONE] = "none",
    [ROLE_ADMIN] = "admin",
    [ROLE_PLATFORM_AUDITOR] = "auditor",
    [ROLE_OWNER] = "owner",
    [ROLE_EDITOR] = "editor",
    [ROLE_VIEWER] = "viewer",
    [ROLE_TENANT_AUDITOR] = "auditor",
    [ROLE_SELF] = "self",
    [ROLE_ATTEMPT] = "attempt",
};

static const char *const perm_names[PERM__COUNT] = {
    [PERM_AUTHENTICATED] = "authenticated",
    [PERM_TENANT_CREATE] = "tenant.create",
    [PERM_TENANT_LIST_ALL] = "tenant.list_all",
    [PERM_TENANT_READ] = "tenant.read",
    [PERM_QUOTA_READ] = "quota.read",
    [PERM_QUOTA_WRITE] = "quota.write",
    [PERM_MEMBER_READ] = "member.read",
    [PERM_MEMBER_WRITE] = "member.write",
    [PERM_USER_CREATE] = "user.create",
    [PERM_USER_READ] = "user.read",
    [PERM_TOKEN_MANAGE] = "token.manage",
    [PERM_JOB_SUBMIT] = "job.submit",
    [PERM_JOB_READ] = "job.read",
    [PERM_JOB_CANCEL] = "job.cancel",
    [PERM_AUDIT_READ] = "audit.read",
    [PERM_JOB_DISPATCH] = "job.dispatch",
    [PERM_CHECKPOINT_DOWNLOAD] = "checkpoint.download",
    [PERM_KEY_ROTATE] = "key.rotate",
    [PERM_KEY_SHRED] = "key.shred",
    [PERM_ATTEMPT_REPORT] = "attempt.report",
    [PERM_DATASET_READ] = "dataset.read",
    [PERM_DATASET_WRITE] = "dataset.write",
    [PERM_DATASET_EXEMPT] = "dataset.exempt",
    [PERM_DATASET_GRANT] = "dataset.grant",
    [PERM_DATASET_APPROVE] = "dataset.approve",
    [PERM_CHECKPOINT_GRANT] = "checkpoint.grant",
    [PERM_CHECKPOINT_APPROVE] = "checkpoint.approve",
    [PERM_TENANT_IDENTITY] = "tenant.identity",
    [PERM_METRICS_READ] = "metrics.read",
    [PERM_WEBHOOK_MANAGE] = "webhook.manage",
    [PERM_CODE_READ] = "code.read",
    [PERM_CODE_WRITE] = "code.write",
    [PERM_CODE_GRANT] = "code.grant",
    [PERM_CODE_APPROVE] = "code.approve",
    [PERM_PRIORITY_CLASS_WRITE] = "priority_class.write",
};

static const char *const scope_names[SCOPE__COUNT] = {
    [SCOPE_PLATFORM] = "platform", [SCOPE_TENANT] = "tenant", [SCOPE_JOB] = "job",
    [SCOPE_USER] = "user",         [SCOPE_TOKEN] = "token",   [SCOPE_CHECKPOINT] = "checkpoint",
    [SCOPE_ATTEMPT] = "attempt",
};

bool authz_role_has(role r, perm p)
{
	if ((int)r < 0 || r >= ROLE__COUNT || (int)p < 0 || p >= PERM__COUNT)
		return false;
	return (role_perms[r] >> p) & 1u;
}

/* Permissions of every effective role of s in scope sc, or-ed together. */
static perm_bits effective(const authz_subject *s, scope sc)
{
	perm_bits bits = 0;
	if (s->platform == ROLE_ADMIN || s->platform == ROLE_PLATFORM_AUDITOR)
		bits |= role_perms[s->platform];
	if (sc == SCOPE_TENANT || sc == SCOPE_JOB || sc == SCOPE_CHECKPOINT) {
		if (s->tenant >= ROLE_OWNER && s->tenant <= ROLE_TENANT_AUDITOR)
			bits |= role_perms[s->tenant];
	}
	if ((sc == SCOPE_USER || sc == SCOPE_TOKEN) && s->self)
		bits |= role_perms[ROLE_SELF];
	if (sc == SCOPE_ATTEMPT && s->attempt)
		bits |= role_perms[ROLE_ATTEMPT];
	if (s->platform == ROLE_NONE && sc == SCOPE_PLATFORM)
		bits |= P(AUTHENTICATED);
	return bits;
}

authz_result authz_decide(const authz_subject *s, perm p, scope sc)
{
	if ((int)p < 0 || p >= PERM__COUNT || (int)sc < 0 || sc >= SCOPE__COUNT)
		return AUTHZ_DENY_FORBIDDEN;
	perm_bits bits = effective(s, sc);
	if ((bits >> p) & 1u)
		return AUTHZ_ALLOW;
	/*
	 * A scoped resource the caller has no relation to at all answers like
	 * a missing one, so names and ids of other tenants never leak.
	 */
	if (sc != SCOPE_PLATFORM && bits == 0)
		return AUTHZ_DENY_HIDDEN;
	return AUTHZ_DENY_FORBIDDEN;
}

bool authz_can_grant(const authz_subject *s, role target)
{
	if (target < ROLE_OWNER || target > ROLE_TENANT_AUDITOR)
		return false;
	perm_bits bits = effective(s, SCOPE_TENANT);
	if (!((bits >> PERM_MEMBER_WRITE) & 1u))
		return false;
	return (role_perms[target] & ~bits) == 0;
}

const char *role_name(role r)
{
	return ((int)r >= 0 && r < ROLE__COUNT) ? role_names[r] : "none";
}

const char *perm_name(perm p)
{
	return ((int)p >= 0 && p < PERM__COUNT) ? perm_names[p] : "unknown";
}

const char *scope_name(scope sc)
{
	return ((int)sc >= 0 && sc < SCOPE__COUNT) ? scope_names[sc] : "unknown";
}

role role_parse_tenant(const char *s)
{
	for (int r = ROLE_OWNER; r <= ROLE_TENANT_AUDITOR; r++)
		if (strcmp(s, role_names[r]) == 0)
			return (role)r;
	return ROLE_NONE;
}

role role_parse_platform(const char *s)
{
	if (strcmp(s, "admin") == 0)
		return ROLE_ADMIN;
	if (strcmp(s, "auditor") == 0)
		return ROLE_PLATFORM_AUDITOR;
	return ROLE_NONE;
}
