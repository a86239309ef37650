/*
 * h_users.c - users and their API tokens.
 *
 * A token's secret appears in exactly one answer, the one creating it; it
 * is never stored (only its SHA-256), logged or audited.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "handlers.h"
#include "server.h"
#include "users.h"

#define USER_SQL                                                                                   \
	"SELECT u.id, u.name, u.email, b.role AS platform_role, " CLOCK_SQL_RFC3339(               \
	    "u.created_at") " AS created_at FROM users u LEFT JOIN role_bindings b ON b.user_id "  \
	                    "= u.id"                                                               \
	                    " AND b.tenant_id IS NULL"
#define TOKEN_SQL                                                                                             \
	"SELECT id, user_id, name, " CLOCK_SQL_RFC3339(                                                       \
	    "created_at") " AS "                                                                              \
	                  "created_at,"                                                                       \
	                  " " CLOCK_SQL_RFC3339(                                                              \
	                      "expir"                                                                         \
	                      "es_"                                                                           \
	                      "at") " AS expires_at, " CLOCK_SQL_RFC3339("revoked_at") " AS "                 \
	                                                                               "revoked_"             \
	                                                                               "at,"                  \
	                                                                               " " CLOCK_SQL_RFC3339( \
	                                                                                   "last_"            \
	                                                                                   "used_"            \
	                                                                                   "at") " AS "       \
	                                                                                         "last_"      \
	                                                                                         "used_"      \
	                                                                                         "at "        \
	                                                                                         "FROM "      \
	                                                                                         "api_"       \
	                                                                                         "tokens"

int h_user_create(api_req *rq)
{
	json_t *in;
	if (api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"name", "email", "platform_role", NULL};
	jsonx_only_fields(in, "", fields, &v);
	const char *name = NULL, *email = "", *prole = NULL;
	role platform = ROLE_NONE;
	if (jsonx_get_str(in, "", "name", true, 63, &name, &v) > 0 && !jsonx_is_name(name))
		verrs_add(
		    &v, "/name", ERR_F_INVALID_VALUE,
		    "name must be 2-63 characters of a-z, 0-9 and '-', starting with a letter");
	if (jsonx_get_str(in, "", "email", false, 254, &email, &v) > 0 && !strchr(email, '@'))
		verrs_add(&v, "/email", ERR_F_INVALID_VALUE, "email must contain '@'");
	if (jsonx_get_str(in, "", "platform_role", false, 16, &prole, &v) > 0 &&
	    (platform = role_parse_platform(prole)) == ROLE_NONE)
		verrs_add(&v, "/platform_role", ERR_F_INVALID_VALUE,
		          "platform_role must be admin or auditor");
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);

	char id[UUID_STR_LEN + 1];
	json_t *u = NULL;
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)) ||
	    (rc = store_user_create(rq->db, name, email, platform, rq->who.user_id, id)))
		goto fail;
	const char *p[] = {id};
	if ((rc = api_query_json(rq, "SELECT row_to_json(x) FROM (" USER_SQL " WHERE u.id = $1) x",
	                         1, p, &u)))
		goto fail;
	char res[64];
	snprintf(res, sizeof(res), "user/%s", id);
	json_t *d = json_pack("{s:s, s:s?}", "name", name, "platform_role", prole);
	rc = api_audit(rq, 201, res, d);
	json_decref(d);
	if (rc || (rc = db_commit(rq->db)))
		goto fail;
	json_decref(in);
	return api_reply(rq, 201, u);
fail:
	json_decref(u);
	json_decref(in);
	if (rc == -ERR_USER_EXISTS)
		return api_fail(rq, rc, "a user with this name already exists");
	return api_fail_db(rq, rc);
}

int h_user_list(api_req *rq)
{
	json_t *items;
	int rc = api_query_json(
	    rq, "SELECT coalesce(json_agg(x ORDER BY x.name), '[]') FROM (" USER_SQL ") x", 0, NULL,
	    &items);
	return api_reply_items(rq, rc, items, NULL);
}

int h_token_create(api_req *rq)
{
	json_t *in = NULL;
	if (rq->body_len > 0 && api_body_object(rq, &in) < 0)
		return 0;
	verrs v;
	verrs_init(&v);
	static const char *const fields[] = {"name", "expires_in_days", NULL};
	const char *name = "";
	int64_t days = rq->cfg->token_ttl_days;
	if (in) {
		jsonx_only_fields(in, "", fields, &v);
		jsonx_get_str(in, "", "name", false, 100, &name, &v);
		jsonx_get_int(in, "", "expires_in_days", false, 1, 3650, &days, &v);
	}
	if (verrs_count(&v)) {
		json_decref(in);
		return api_fail_validation(rq, &v);
	}
	verrs_release(&v);

	store_token t;
	json_t *out = NULL;
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)) ||
	    (rc = store_token_room(rq->db, rq->scope.user_id, rq->cfg->tokens_per_user)) ||
	    (rc = store_token_create(rq->db, rq->scope.user_id, rq->who.token_id, name, (int)days,
	                             &t)))
		goto fail;
	const char *p[] = {t.id};
	if ((rc = api_query_json(rq, "SELECT row_to_json(x) FROM (" TOKEN_SQL " WHERE id = $1) x",
	                         1, p, &out)))
		goto fail;
	char res[64];
	snprintf(res, sizeof(res), "token/%s", t.id);
	json_t *d = json_pack("{s:s, s:I, s:s}", "user_id", rq->scope.user_id, "expires_in_days",
	                      (json_int_t)days, "parent_token_id", rq->who.token_id);
	rc = api_audit(rq, 201, res, d);
	json_decref(d);
	if (rc || (rc = db_commit(rq->db)))
		goto fail;
	json_object_set_new(out, "token", json_string(t.secret));
	OPENSSL_cleanse(t.secret, sizeof(t.secret));
	json_decref(in);
	return api_reply(rq, 201, out);
fail:
	OPENSSL_cleanse(t.secret, sizeof(t.secret));
	json_decref(out);
	json_decref(in);
	if (rc == -ERR_TOKEN_LIMIT_REACHED)
		return api_fail(rq, rc,
		                "the user holds %d live tokens, as many as allowed: revoke one "
		                "(DELETE /v1/tokens/{token_id}) or let one expire first",
		                rq->cfg->tokens_per_user);
	return api_fail_db(rq, rc);
}

int h_token_list(api_req *rq)
{
	const char *p[] = {rq->scope.user_id};
	json_t *items;
	int rc = api_query_json(
	    rq,
	    "SELECT coalesce(json_agg(x ORDER BY x.created_at DESC), '[]') FROM (" TOKEN_SQL
	    " WHERE user_id = $1) x",
	    1, p, &items);
	return api_reply_items(rq, rc, items, NULL);
}

int h_token_revoke(api_req *rq)
{
	const char *p[] = {rq->scope.token_id};
	int rc = api_db(rq);
	if (rc || (rc = db_begin(rq->db)))
		return api_fail_db(rq, rc);
	rc = db_query(
	    rq->db, NULL,
	    "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1", 1, p);
	char res[64];
	snprintf(res, sizeof(res), "token/%s", rq->scope.token_id);
	if (rc || (rc = api_audit(rq, 204, res, NULL)) || (rc = db_commit(rq->db)))
		return api_fail_db(rq, rc);
	return api_reply(rq, 204, NULL);
}
