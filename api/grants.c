/*
 * grants.c - the checks every kind of grant shares (grants.h).
 */
#include "grants.h"

#include <string.h>
#include <time.h>

#include "api.h"
#include "report.h"

void grant_body_check(const json_t *in, const char *const *fields, const char **tenant,
                      const char **expires, verrs *v)
{
	const char *known[8] = {"tenant", "expires_at"};
	size_t n = 2;
	for (size_t i = 0; fields && fields[i] && n + 1 < sizeof(known) / sizeof(known[0]); i++)
		known[n++] = fields[i];
	known[n] = NULL;
	jsonx_only_fields(in, "", known, v);
	if (jsonx_get_str(in, "", "tenant", true, 63, tenant, v) > 0 && !jsonx_is_name(*tenant))
		verrs_add(v, "/tenant", ERR_F_INVALID_VALUE, "tenant is a tenant's name");
	double t = 0, now = (double)time(NULL);
	if (jsonx_get_str(in, "", "expires_at", true, 64, expires, v) > 0 &&
	    (report_time_parse(*expires, &t) < 0 || t <= now || t > now + GRANT_DAYS_MAX * 86400.0))
		verrs_add(v, "/expires_at", ERR_F_INVALID_VALUE,
		          "expires_at is an RFC 3339 time in the next %d days", GRANT_DAYS_MAX);
}

bool grant_approved_at_once(const char *cls, bool by_admin)
{
	return strcmp(cls, "public") == 0 || strcmp(cls, "internal") == 0 || by_admin;
}
