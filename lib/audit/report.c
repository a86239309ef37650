/*
 * report.c - the report kinds, their queries, and the run that streams a
 * report's rows (report.h). The writers are in report_fmt.c.
 */
#include "clock.h"
#include "report.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A time column as RFC 3339 UTC with milliseconds. */

/* The records of the head, the period and the tenant; t the record's tenant. */
#define LOGGED                                                                                     \
	" FROM audit_log a JOIN audit_leaves l ON l.id = a.id"                                     \
	" LEFT JOIN tenants t ON t.id = a.tenant_id"                                               \
	" WHERE l.seq < $1 AND a.at >= $2 AND a.at < $3"                                           \
	" AND ($4::uuid IS NULL OR a.tenant_id = $4)"

/*
 * The same, where a tenant's report also takes the records that name it in
 * one of the detail members of the list ("a.detail->>'x', ..."): another
 * tenant's read of its dataset, checkpoint or code, a grant to it.
 */
#define LOGGED_OR(members)                                                                         \
	" FROM audit_log a JOIN audit_leaves l ON l.id = a.id"                                     \
	" LEFT JOIN tenants t ON t.id = a.tenant_id"                                               \
	" WHERE l.seq < $1 AND a.at >= $2 AND a.at < $3"                                           \
	" AND ($4::uuid IS NULL OR a.tenant_id = $4 OR $4::text IN (" members "))"
#define GRANTEE "a.detail->>'grantee_tenant_id'"

/*
 * Roles at the moment $3, replayed from the log: the newest grant or
 * revocation of each (tenant, user) - tr - and each user's platform role
 * - pr (users are made with it, or the bootstrap makes an admin).
 */
#define TENANT_ROLES                                                                               \
	"tr AS (SELECT * FROM (SELECT DISTINCT ON (a.tenant_id, x.uid) a.tenant_id, x.uid,"        \
	" a.action, a.detail->>'to' AS role, a.actor_name, a.at, l.seq"                            \
	" FROM audit_log a JOIN audit_leaves l ON l.id = a.id"                                     \
	" CROSS JOIN LATERAL (SELECT coalesce(a.detail->>'user_id',"                               \
	" split_part(a.resource, '/', 4)) AS uid) x"                                               \
	" WHERE a.action IN ('member.grant', 'member.revoke') AND a.outcome = 'success'"           \
	" AND l.seq < $1 AND a.at <= $3 AND ($4::uuid IS NULL OR a.tenant_id = $4)"                \
	" ORDER BY a.tenant_id, x.uid, l.seq DESC) g WHERE g.action = 'member.grant')"
#define PLATFORM_ROLES                                                                             \
	"pr AS (SELECT DISTINCT ON (x.uid) x.uid, CASE WHEN a.action = 'platform.bootstrap'"       \
	" THEN 'admin' ELSE a.detail->>'platform_role' END AS role, a.actor_name, a.at, l.seq"     \
	" FROM audit_log a JOIN audit_leaves l ON l.id = a.id"                                     \
	" CROSS JOIN LATERAL (SELECT split_part(a.resource, '/', 2) AS uid) x"                     \
	" WHERE ((a.action = 'user.create' AND a.detail->>'platform_role' IS NOT NULL)"            \
	" OR a.action = 'platform.bootstrap') AND a.outcome = 'success'"                           \
	" AND l.seq < $1 AND a.at <= $3 AND $4::uuid IS NULL ORDER BY x.uid, l.seq DESC)"

/* ---- access-review ----------------------------------------------------------------------- */

/* clang-format off */
static const report_column tenant_role_cols[] = {
	{"tenant", RT_TEXT}, {"user", RT_TEXT}, {"role", RT_TEXT}, {"granted_by", RT_TEXT},
	{"granted_at", RT_TIME}, {NULL, 0},
};
static const report_column platform_role_cols[] = {
	{"user", RT_TEXT}, {"role", RT_TEXT}, {"granted_by", RT_TEXT}, {"granted_at", RT_TIME},
	{NULL, 0},
};
static const report_column token_cols[] = {
	{"user", RT_TEXT}, {"tokens", RT_INT}, {"oldest_age_days", RT_INT},
	{"next_expiry", RT_TIME}, {"last_used", RT_TIME}, {NULL, 0},
};
static const report_column idle_cols[] = {
	{"user", RT_TEXT}, {"last_used", RT_TIME}, {"roles", RT_TEXT}, {NULL, 0},
};

static const report_section access_review[] = {
	{"tenant-roles", "Tenant roles held", tenant_role_cols,
	 "WITH " TENANT_ROLES
	 " SELECT coalesce(tn.name, ''), coalesce(u.name, tr.uid), tr.role, tr.actor_name,"
	 " " CLOCK_SQL_RFC3339("tr.at") ", ARRAY[tr.seq] FROM tr"
	 " LEFT JOIN tenants tn ON tn.id = tr.tenant_id LEFT JOIN users u ON u.id::text = tr.uid"
	 " ORDER BY 1, 2",
	 false},
	{"platform-roles", "Platform admins and auditors", platform_role_cols,
	 "WITH " PLATFORM_ROLES
	 " SELECT coalesce(u.name, pr.uid), pr.role, pr.actor_name, " CLOCK_SQL_RFC3339("pr.at") ","
	 " ARRAY[pr.seq] FROM pr LEFT JOIN users u ON u.id::text = pr.uid ORDER BY 2, 1",
	 true},
	/* a token's record: its creation (or an operator's issue), or the bootstrap that made it */
	{"tokens", "API tokens live at the time", token_cols,
	 "WITH " TENANT_ROLES
	 " SELECT u.name, count(DISTINCT k.id),"
	 " floor(extract(epoch FROM $3 - min(k.created_at)) / 86400)::bigint,"
	 " " CLOCK_SQL_RFC3339("min(k.expires_at)") ", " CLOCK_SQL_RFC3339("max(k.last_used_at)") ","
	 " array_remove(array_agg(DISTINCT l.seq), NULL)"
	 " FROM api_tokens k JOIN users u ON u.id = k.user_id"
	 " LEFT JOIN audit_log a ON a.action IN ('token.create', 'token.issue')"
	 " AND a.outcome = 'success'"
	 " AND a.resource = 'token/' || k.id"
	 " LEFT JOIN audit_log b ON b.action = 'platform.bootstrap'"
	 " AND b.detail->>'token_id' = k.id::text"
	 " LEFT JOIN audit_leaves l ON l.id = coalesce(a.id, b.id) AND l.seq < $1"
	 " WHERE k.created_at <= $3 AND (k.revoked_at IS NULL OR k.revoked_at > $3)"
	 " AND k.expires_at > $3"
	 " AND ($4::uuid IS NULL OR k.user_id::text IN (SELECT uid FROM tr))"
	 " GROUP BY u.name ORDER BY u.name",
	 false},
	{"idle-users", "Users holding roles whose tokens went unused for 90 days", idle_cols,
	 "WITH " TENANT_ROLES ", " PLATFORM_ROLES ","
	 " held AS (SELECT uid, coalesce(tn.name, '') || ':' || tr.role AS what, seq FROM tr"
	 " LEFT JOIN tenants tn ON tn.id = tr.tenant_id"
	 " UNION ALL SELECT uid, 'platform:' || role, seq FROM pr)"
	 " SELECT u.name, " CLOCK_SQL_RFC3339("max(k.last_used_at)") ", string_agg(DISTINCT h.what, ' '),"
	 " array_agg(DISTINCT h.seq)"
	 " FROM held h JOIN users u ON u.id::text = h.uid"
	 " LEFT JOIN api_tokens k ON k.user_id = u.id AND k.last_used_at <= $3"
	 " WHERE u.created_at <= $3 - interval '90 days'"
	 " GROUP BY u.name HAVING coalesce(max(k.last_used_at), '-infinity')"
	 " < $3 - interval '90 days' ORDER BY u.name",
	 false},
};

/* ---- the kinds over a period ------------------------------------------------------------- */

static const report_column change_cols[] = {
	{"at", RT_TIME}, {"actor", RT_TEXT}, {"actor_role", RT_TEXT}, {"tenant", RT_TEXT},
	{"action", RT_TEXT}, {"subject", RT_TEXT}, {"from", RT_TEXT}, {"to", RT_TEXT}, {NULL, 0},
};
static const report_column grant_cols[] = {
	{"at", RT_TIME}, {"actor", RT_TEXT}, {"tenant", RT_TEXT}, {"action", RT_TEXT},
	{"dataset", RT_TEXT}, {"grantee", RT_TEXT}, {"expires_at_or_reason", RT_TEXT}, {NULL, 0},
};
static const report_column code_grant_cols[] = {
	{"at", RT_TIME}, {"actor", RT_TEXT}, {"tenant", RT_TEXT}, {"action", RT_TEXT},
	{"bundle", RT_TEXT}, {"grantee", RT_TEXT}, {"expires_at", RT_TEXT}, {NULL, 0},
};
static const report_section permission_changes[] = {
	{"changes", "Grants, revocations, platform roles and quotas", change_cols,
	 "SELECT " CLOCK_SQL_RFC3339("x.at") ", x.actor_name, x.actor_role, x.tenant, x.action,"
	 " CASE WHEN x.action = 'quota.update' THEN 'quota' ELSE coalesce(u.name, x.uid) END,"
	 " coalesce(x.detail->>'from', ''),"
	 " CASE x.action WHEN 'quota.update' THEN x.detail::text"
	 " WHEN 'platform.bootstrap' THEN 'admin'"
	 " WHEN 'user.create' THEN x.detail->>'platform_role'"
	 " WHEN 'member.revoke' THEN 'none' ELSE coalesce(x.detail->>'to', '') END,"
	 " ARRAY[x.seq] FROM (SELECT a.*, l.seq, coalesce(t.name, '') AS tenant,"
	 " CASE WHEN a.action LIKE 'member.%'"
	 " THEN coalesce(a.detail->>'user_id', split_part(a.resource, '/', 4))"
	 " ELSE split_part(a.resource, '/', 2) END AS uid" LOGGED
	 " AND a.outcome = 'success' AND (a.action IN ('member.grant', 'member.revoke',"
	 " 'quota.update', 'platform.bootstrap') OR (a.action = 'user.create'"
	 " AND a.detail->>'platform_role' IS NOT NULL))) x"
	 " LEFT JOIN users u ON u.id::text = x.uid ORDER BY x.seq",
	 false},
	{"datasets", "Dataset grants, approvals, revocations and masking exemptions", grant_cols,
	 "SELECT " CLOCK_SQL_RFC3339("a.at") ", a.actor_name, coalesce(t.name, ''), a.action,"
	 " split_part(a.resource, '/', 2), coalesce(a.detail->>'grantee', ''),"
	 " coalesce(a.detail->>'expires_at', a.detail->>'reason', ''), ARRAY[l.seq]"
	 LOGGED_OR(GRANTEE) " AND a.outcome = 'success' AND a.action IN"
	 " ('dataset.grant', 'dataset.grant.approve', 'dataset.grant.revoke', 'dataset.exempt')"
	 " ORDER BY l.seq",
	 false},
	{"checkpoints", "Checkpoint grants, approvals and revocations", grant_cols,
	 "SELECT " CLOCK_SQL_RFC3339("a.at") ", a.actor_name, coalesce(t.name, ''), a.action,"
	 " split_part(a.resource, '/', 2), coalesce(a.detail->>'grantee', ''),"
	 " coalesce(a.detail->>'expires_at', ''), ARRAY[l.seq]"
	 LOGGED_OR(GRANTEE) " AND a.outcome = 'success' AND a.action IN"
	 " ('checkpoint.grant', 'checkpoint.grant.approve', 'checkpoint.grant.revoke')"
	 " ORDER BY l.seq",
	 false},
	{"code", "Code bundle grants, approvals and revocations", code_grant_cols,
	 "SELECT " CLOCK_SQL_RFC3339("a.at") ", a.actor_name, coalesce(t.name, ''), a.action,"
	 " split_part(a.resource, '/', 2), coalesce(a.detail->>'grantee', ''),"
	 " coalesce(a.detail->>'expires_at', ''), ARRAY[l.seq]"
	 LOGGED_OR(GRANTEE) " AND a.outcome = 'success' AND a.action IN"
	 " ('code.grant', 'code.grant.approve', 'code.grant.revoke')"
	 " ORDER BY l.seq",
	 false},
};

/* The routes that read a tenant's data: a refusal of one is data access refused. */
#define DATA_LOGS     "'/v1/jobs/{job}/logs'"
#define DATA_DOWNLOAD                                                                              \
	"'/v1/checkpoints/{checkpoint}/download',"                                                 \
	" '/v1/tenants/{tenant}/shared-checkpoints/{checkpoint}/download'"

static const report_column access_cols[] = {
	{"at", RT_TIME}, {"actor", RT_TEXT}, {"tenant", RT_TEXT}, {"action", RT_TEXT},
	{"job", RT_TEXT}, {"file", RT_TEXT}, {"key_version", RT_INT}, {"outcome", RT_TEXT},
	{NULL, 0},
};
static const report_section data_access[] = {
	{"access", "Log reads, checkpoint downloads, data keys, dataset versions, code versions and checkpoints to start from released to attempts",
	 access_cols,
	 "SELECT " CLOCK_SQL_RFC3339("a.at") ", a.actor_name, coalesce(t.name, ''),"
	 " CASE WHEN a.detail->>'route' = " DATA_LOGS " THEN 'log.read'"
	 " WHEN a.detail->>'route' IN (" DATA_DOWNLOAD ") THEN 'checkpoint.download'"
	 " ELSE a.action END,"
	 " coalesce(a.detail->>'job_id', CASE WHEN a.resource LIKE 'job/%'"
	 " THEN split_part(a.resource, '/', 2) END, ''), coalesce(a.detail->>'file',"
	 " CASE WHEN a.action IN ('dataset.read', 'checkpoint.read', 'code.read')"
	 " THEN a.resource END, ''),"
	 " a.detail->>'tenant_key_version', a.outcome, ARRAY[l.seq]"
	 LOGGED_OR("a.detail->>'dataset_tenant_id', a.detail->>'checkpoint_tenant_id',"
	           " a.detail->>'code_tenant_id'")
	 " AND (a.action IN ('log.read', 'checkpoint.download', 'key.release', 'dataset.read',"
	 " 'checkpoint.read', 'code.read')"
	 " OR (a.action = 'authz.deny'"
	 " AND a.detail->>'route' IN (" DATA_LOGS ", " DATA_DOWNLOAD ")))"
	 " ORDER BY l.seq",
	 false},
};

static const report_column denial_cols[] = {
	{"actor", RT_TEXT}, {"tenant", RT_TEXT}, {"route", RT_TEXT}, {"denials", RT_INT},
	{"failed_authentications", RT_INT}, {"first", RT_TIME}, {"last", RT_TIME}, {NULL, 0},
};
/*
 * A record stands for detail->>'count' failed authentications (1 without
 * it), or, when it counted a window of them (api/authfail.h), for those in
 * detail->'routes', each route's count, from detail->>'first' on.
 */
static const report_section denials[] = {
	{"denials", "Denied requests and failed authentications", denial_cols,
	 "SELECT coalesce(nullif(a.actor_name, ''), '(unauthenticated)'), coalesce(t.name, ''),"
	 " coalesce(r.route, a.action), sum(r.n), coalesce(sum(r.n) FILTER (WHERE a.status = 401), 0),"
	 " " CLOCK_SQL_RFC3339("min(coalesce((a.detail->>'first')::timestamptz, a.at))") ","
	 " " CLOCK_SQL_RFC3339("max(coalesce((a.detail->>'last')::timestamptz, a.at))") ","
	 " array_agg(DISTINCT l.seq ORDER BY l.seq)"
	 " FROM audit_log a JOIN audit_leaves l ON l.id = a.id"
	 " LEFT JOIN tenants t ON t.id = a.tenant_id"
	 " CROSS JOIN LATERAL (SELECT (a.detail->>'method') || ' ' || (a.detail->>'route') AS route,"
	 " coalesce((a.detail->>'count')::bigint, 1) AS n"
	 " WHERE jsonb_typeof(a.detail->'routes') IS DISTINCT FROM 'object'"
	 " UNION ALL SELECT e.key, e.value::bigint FROM jsonb_each_text(CASE"
	 " WHEN jsonb_typeof(a.detail->'routes') = 'object' THEN a.detail->'routes' END) e) r"
	 " WHERE l.seq < $1 AND a.at >= $2 AND a.at < $3"
	 " AND ($4::uuid IS NULL OR a.tenant_id = $4)"
	 " AND a.outcome = 'denied' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
	 false},
};

static const report_column key_cols[] = {
	{"at", RT_TIME}, {"actor", RT_TEXT}, {"tenant", RT_TEXT}, {"action", RT_TEXT},
	{"outcome", RT_TEXT}, {"key_version", RT_INT}, {"rewrapped", RT_INT},
	{"data_keys_destroyed", RT_INT}, {NULL, 0},
};
static const report_section key_management[] = {
	/* a data key released to an attempt rotates the tenant's key once it wrapped its limit */
	{"keys", "Key rotations, re-wraps and shreds", key_cols,
	 "SELECT " CLOCK_SQL_RFC3339("a.at") ", a.actor_name, coalesce(t.name, ''),"
	 " CASE a.action WHEN 'key.release' THEN 'key.release (rotated)' ELSE a.action END,"
	 " a.outcome, coalesce(a.detail->>'version', a.detail->>'tenant_key_version'),"
	 " a.detail->>'rewrapped', a.detail->>'data_keys_destroyed', ARRAY[l.seq]" LOGGED
	 " AND (a.action IN ('key.rotate', 'key.shred', 'key.master_rewrap', 'key.master_retire')"
	 " OR (a.action = 'key.release' AND a.detail->>'rotated' = 'true')) ORDER BY l.seq",
	 false},
};

static const report_column admin_cols[] = {
	{"at", RT_TIME}, {"actor", RT_TEXT}, {"tenant", RT_TEXT}, {"action", RT_TEXT},
	{"resource", RT_TEXT}, {"outcome", RT_TEXT}, {"status", RT_INT}, {NULL, 0},
};
static const report_section admin_actions[] = {
	{"actions", "Everything done with platform-admin rights", admin_cols,
	 "SELECT " CLOCK_SQL_RFC3339("a.at") ", a.actor_name, coalesce(t.name, ''), a.action, a.resource,"
	 " a.outcome, a.status, ARRAY[l.seq]" LOGGED " AND a.actor_role = 'admin' ORDER BY l.seq",
	 false},
};
/* clang-format on */

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const report_kind kinds[] = {
    {"access-review", "Access review",
     "Who holds which role in which tenant at a moment, who granted it and when, their live "
     "tokens, the platform's admins and auditors, and users idle for 90 days.",
     true, access_review, N(access_review)},
    {"permission-changes", "Permission changes",
     "Grants, revocations, platform roles and quota changes in the period, with their actor; "
     "dataset, checkpoint and code bundle grants and masking exemptions.",
     false, permission_changes, N(permission_changes)},
    {"data-access", "Data access",
     "Log reads, checkpoint downloads, and the data keys, dataset versions, code versions and "
     "checkpoints to start from fetched by job attempts, with the tenant key version used.",
     false, data_access, N(data_access)},
    {"denials", "Denials",
     "Denied requests and failed authentications, grouped by actor, tenant and route.", false,
     denials, N(denials)},
    {"key-management", "Key management",
     "Tenant key rotations (with the data keys re-wrapped) and key shreds.", false, key_management,
     N(key_management)},
    {"admin-actions", "Admin actions", "Everything done with platform-admin rights.", false,
     admin_actions, N(admin_actions)},
};

const report_kind *report_kinds(size_t *n)
{
	*n = sizeof(kinds) / sizeof(kinds[0]);
	return kinds;
}

const report_kind *report_kind_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

int report_format_parse(const char *name, report_format *f)
{
	static const char *const names[] = {
	    [REPORT_JSON] = "json", [REPORT_CSV] = "csv", [REPORT_HTML] = "html"};
	for (int i = 0; i < 3; i++)
		if (strcmp(name, names[i]) == 0) {
			*f = (report_format)i;
			return 0;
		}
	return -1;
}

const char *report_format_type(report_format f)
{
	return f == REPORT_CSV    ? "text/csv; charset=utf-8"
	       : f == REPORT_HTML ? "text/html; charset=utf-8"
	                          : "application/json";
}

/* ---- times ------------------------------------------------------------------------------- */

/* n digits at *s into *v. RET 0 or -1. */
static int digits(const char **s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*s)++) {
		if (!isdigit((unsigned char)**s))
			return -1;
		*v = *v * 10 + (**s - '0');
	}
	return 0;
}

static int expect(const char **s, char c)
{
	if (**s != c)
		return -1;
	(*s)++;
	return 0;
}

int report_time_parse(const char *s, double *t)
{
	struct tm tm = {0};
	int y, mo, d, h = 0, mi = 0, sec = 0;
	double frac = 0;
	if (digits(&s, 4, &y) || expect(&s, '-') || digits(&s, 2, &mo) || expect(&s, '-') ||
	    digits(&s, 2, &d))
		return -1;
	long offset = 0;
	if (*s) {
		if ((*s != 'T' && *s != 't' && *s != ' ') || (s++, digits(&s, 2, &h)) ||
		    expect(&s, ':') || digits(&s, 2, &mi) || expect(&s, ':') || digits(&s, 2, &sec))
			return -1;
		if (*s == '.') {
			double scale = 0.1;
			if (!isdigit((unsigned char)s[1]))
				return -1;
			for (s++; isdigit((unsigned char)*s); s++, scale /= 10)
				frac += (*s - '0') * scale;
		}
		int oh, om;
		if (*s == 'Z' || *s == 'z') {
			s++;
		} else if (*s == '+' || *s == '-') {
			int sign = *s++ == '-' ? -1 : 1;
			if (digits(&s, 2, &oh) || expect(&s, ':') || digits(&s, 2, &om) ||
			    oh > 23 || om > 59)
				return -1;
			offset = sign * (oh * 3600L + om * 60L);
		} else {
			return -1;
		}
		if (*s)
			return -1;
	}
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
	    mi > 59 || sec > 60)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	time_t e = timegm(&tm);
	if (e == (time_t)-1)
		return -1;
	struct tm back;
	gmtime_r(&e, &back);
	if (back.tm_mday != d) /* 29 February of a common year */
		return -1;
	*t = (double)e - (double)offset + frac;
	return 0;
}

void report_time_format(double t, char out[32])
{
	time_t s = (time_t)floor(t);
	int ms = (int)((t - (double)s) * 1000.0);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (tm.tm_year + 1900) % 10000,
	         (tm.tm_mon + 1) % 100, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	         ms < 0     ? 0
	         : ms > 999 ? 999
	                    : ms);
}

/* ---- the output -------------------------------------------------------------------------- */

void report_out_add(report_out *o, const char *s, size_t n)
{
	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 16384;
		while (o->len + n + 1 > cap)
			cap *= 2;
		char *nb = realloc(o->buf, cap);
		if (!nb) {
			o->oom = true;
			return;
		}
		o->buf = nb;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

void report_out_adds(report_out *o, const char *s)
{
	report_out_add(o, s, strlen(s));
}

void report_out_release(report_out *o)
{
	free(o->buf);
	*o = (report_out){0};
}

/* ---- the run ----------------------------------------------------------------------------- */

static int problem(report_run *r, const char *what)
{
	const char *e = r->c ? PQerrorMessage(r->c) : "";
	snprintf(r->problem, sizeof(r->problem), "%s: %.*s", what, (int)strcspn(e, "\n"), e);
	return -1;
}

static bool included(const report_run *r, int i)
{
	return !(r->p.kind->sections[i].platform_only && r->p.tenant_id[0]);
}

/* Send the query of section i. RET 0 or -1. */
static int section_query(report_run *r, int i)
{
	static const Oid types[] = {20 /* int8 */, 1184 /* timestamptz */, 1184, 2950 /* uuid */};
	char size[24];
	snprintf(size, sizeof(size), "%lld", (long long)r->p.head.size);
	const char *v[] = {size, r->p.from, r->p.to, r->p.tenant_id[0] ? r->p.tenant_id : NULL};
	if (!PQsendQueryParams(r->c, r->p.kind->sections[i].sql, 4, types, v, NULL, NULL, 0) ||
	    !PQsetSingleRowMode(r->c))
		return problem(r, "the report's query could not be sent");
	r->querying = true;
	r->rows = r->records = 0;
	return 0;
}

int report_run_begin(report_run *r, PGconn *c, const report_params *p, report_out *o)
{
	memset(r, 0, sizeof(*r));
	r->c = c;
	r->p = *p;
	r->section = -1;
	PGresult *res = PQexec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	PQclear(res);
	if (!ok)
		return problem(r, "the report's transaction could not begin");
	report_fmt_begin(o, &r->p);
	return 0;
}

/* Count the records of a row's "{1,2,3}". */
static int64_t seq_count(const char *seqs)
{
	if (!seqs || strcmp(seqs, "{}") == 0)
		return 0;
	int64_t n = 1;
	for (; *seqs; seqs++)
		n += *seqs == ',';
	return n;
}

/* Read the current section's next row into o. RET 1 a row, 0 the section's end, -1. */
static int next_row(report_run *r, report_out *o)
{
	const report_section *s = &r->p.kind->sections[r->section];
	PGresult *res = PQgetResult(r->c);
	if (!res)
		return problem(r, "the report's query ended early");
	ExecStatusType st = PQresultStatus(res);
	if (st == PGRES_SINGLE_TUPLE) {
		int nf = PQnfields(res);
		const char *vals[16];
		for (int i = 0; i < nf - 1 && i < 16; i++)
			vals[i] = PQgetisnull(res, 0, i) ? NULL : PQgetvalue(res, 0, i);
		const char *seqs = PQgetvalue(res, 0, nf - 1);
		report_fmt_row(o, &r->p, s, vals, seqs, r->rows == 0);
		r->rows++;
		r->records += seq_count(seqs);
		PQclear(res);
		return 1;
	}
	PQclear(res);
	if (st != PGRES_TUPLES_OK)
		return problem(r, "the report's query failed");
	while ((res = PQgetResult(r->c)))
		PQclear(res);
	r->querying = false;
	report_fmt_section_end(o, &r->p, s, r->rows, r->records);
	return 0;
}

int report_run_step(report_run *r, report_out *o, size_t want)
{
	if (r->done)
		return 0;
	while (o->len < want && !o->oom) {
		if (r->querying) {
			int rc = next_row(r, o);
			if (rc < 0)
				return -1;
			if (rc == 0)
				return 1; /* one section at a time */
			continue;
		}
		int next = r->section + 1;
		while (next < r->p.kind->nsections && !included(r, next))
			next++;
		if (next >= r->p.kind->nsections) {
			report_fmt_end(o, &r->p);
			PGresult *res = PQexec(r->c, "COMMIT");
			PQclear(res);
			r->done = true;
			return 0;
		}
		report_fmt_section_begin(o, &r->p, &r->p.kind->sections[next], r->section < 0);
		r->section = next;
		if (section_query(r, next) < 0)
			return -1;
	}
	if (o->oom) {
		snprintf(r->problem, sizeof(r->problem), "out of memory");
		return -1;
	}
	return 1;
}

void report_run_release(report_run *r)
{
	if (r->c)
		PQfinish(r->c);
	r->c = NULL;
}
