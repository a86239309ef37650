/*
 * test_openapi.c - the embedded OpenAPI document against the route table
 * and the error table: one operation per route and no other, the same
 * permission and scope, public routes without security, the error answers
 * an authenticated or scoped route can give, request bodies of mutations,
 * unique operation ids, path parameters, and the problem code enums.
 * The server's own error answers on each operation come from the route
 * table (api/openapi_errors.h): run with --write-doc FILE to write the
 * missing ones into the document (`make openapi`).
 */
#include <check.h>
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "authz.h"
#include "embedded.h"
#include "error.h"
#include "openapi_errors.h"
#include "router.h"
#include "unit.h"

static const char *const http_methods[] = {"get",   "put",   "post",    "delete", "head",
                                           "patch", "trace", "options", NULL};

static json_t *doc;

static void load_doc(void)
{
	const embedded_file *f = embedded_find("api/openapi.json");
	ck_assert_msg(f != NULL, "api/openapi.json is not embedded");
	json_error_t e;
	doc = json_loadb(f->data, f->len, JSON_REJECT_DUPLICATES, &e);
	ck_assert_msg(doc != NULL, "api/openapi.json line %d: %s", e.line, e.text);
	ck_assert(json_is_object(doc));
}

static void free_doc(void)
{
	json_decref(doc);
	doc = NULL;
}

static bool in_list(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

/* RET: the node at the local reference ref ("#/a/b"), or NULL. */
static json_t *pointer_get(const char *ref)
{
	if (strncmp(ref, "#/", 2) != 0)
		return NULL;
	json_t *node = doc;
	const char *p = ref + 2;
	while (node && *p) {
		char key[256];
		size_t n = 0;
		for (; *p && *p != '/'; p++) {
			char c = *p;
			if (c == '~' && (p[1] == '0' || p[1] == '1'))
				c = *++p == '0' ? '~' : '/';
			if (n + 1 >= sizeof(key))
				return NULL;
			key[n++] = c;
		}
		key[n] = '\0';
		if (*p == '/')
			p++;
		node = json_object_get(node, key);
	}
	return node;
}

/* RET: node with its "$ref" chain followed, or NULL for a dangling one. */
static json_t *deref(json_t *node)
{
	for (int hops = 0; hops < 8; hops++) {
		json_t *ref = json_object_get(node, "$ref");
		if (!json_is_string(ref))
			return node;
		node = pointer_get(json_string_value(ref));
	}
	return NULL;
}

/* RET: the operation of route r in the document, or NULL. */
static json_t *operation(const route *r)
{
	char m[16];
	size_t i;
	for (i = 0; r->method[i] && i + 1 < sizeof(m); i++)
		m[i] = (char)tolower((unsigned char)r->method[i]);
	m[i] = '\0';
	return json_object_get(json_object_get(json_object_get(doc, "paths"), r->pattern), m);
}

static const route *table(size_t *n)
{
	const route *rt = routes_table(n);
	ck_assert_uint_gt(*n, 20);
	return rt;
}

/* RET: true when the operation documents status (a string such as "404"). */
static bool has_response(json_t *op, const char *status)
{
	return json_object_get(json_object_get(op, "responses"), status) != NULL;
}

static bool is_public(const route *r)
{
	return (r->flags & ROUTE_PUBLIC) != 0;
}

START_TEST(document_header)
{
	ck_assert_str_eq(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
	json_t *info = json_object_get(doc, "info");
	ck_assert_str_eq(json_string_value(json_object_get(info, "title")), "trainyard API");
	ck_assert_str_eq(json_string_value(json_object_get(info, "version")), "1");
	json_t *srv = json_array_get(json_object_get(doc, "servers"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(srv, "url")), "http://127.0.0.1:8080");
	json_t *bearer = pointer_get("#/components/securitySchemes/bearer");
	ck_assert_ptr_nonnull(bearer);
	ck_assert_str_eq(json_string_value(json_object_get(bearer, "type")), "http");
	ck_assert_str_eq(json_string_value(json_object_get(bearer, "scheme")), "bearer");
	json_t *sec = json_object_get(doc, "security");
	ck_assert_msg(json_array_size(sec) == 1 &&
	                  json_is_array(json_object_get(json_array_get(sec, 0), "bearer")),
	              "the global security must be [{\"bearer\": []}]");
}
END_TEST

/* Every route has its operation, and every operation is a route. */
START_TEST(operations_are_the_routes)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(json_is_object(operation(&rt[i])), "%s %s has no operation",
		              rt[i].method, rt[i].pattern);

	json_t *paths = json_object_get(doc, "paths");
	ck_assert(json_is_object(paths));
	static const char *const item_fields[] = {"parameters", "summary", "description", "servers",
	                                          NULL};
	size_t ops = 0;
	const char *path, *key;
	json_t *item, *v;
	json_object_foreach (paths, path, item) {
		json_object_foreach (item, key, v) {
			if (!in_list(key, http_methods)) {
				ck_assert_msg(in_list(key, item_fields), "%s: unexpected member %s",
				              path, key);
				continue;
			}
			bool found = false;
			for (size_t i = 0; i < n && !found; i++)
				found = strcmp(rt[i].pattern, path) == 0 &&
				        strcasecmp(rt[i].method, key) == 0;
			ck_assert_msg(found, "%s %s is documented but is not a route", key, path);
			ops++;
		}
	}
	ck_assert_uint_eq(ops, n);
}
END_TEST

START_TEST(permission_and_scope)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++) {
		json_t *op = operation(&rt[i]);
		ck_assert_ptr_nonnull(op);
		const char *doc_perm = json_string_value(json_object_get(op, "x-permission"));
		const char *doc_scope = json_string_value(json_object_get(op, "x-scope"));
		ck_assert_msg(doc_perm && strcmp(doc_perm, perm_name(rt[i].permission)) == 0,
		              "%s %s: x-permission %s, route %s", rt[i].method, rt[i].pattern,
		              doc_perm ? doc_perm : "(none)", perm_name(rt[i].permission));
		ck_assert_msg(doc_scope && strcmp(doc_scope, scope_name(rt[i].scope)) == 0,
		              "%s %s: x-scope %s, route %s", rt[i].method, rt[i].pattern,
		              doc_scope ? doc_scope : "(none)", scope_name(rt[i].scope));
	}
}
END_TEST

START_TEST(public_routes_need_no_token)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++) {
		json_t *sec = json_object_get(operation(&rt[i]), "security");
		if (is_public(&rt[i]))
			ck_assert_msg(json_is_array(sec) && json_array_size(sec) == 0,
			              "public %s %s needs \"security\": []", rt[i].method,
			              rt[i].pattern);
		else
			ck_assert_msg(sec == NULL, "%s %s must keep the global security",
			              rt[i].method, rt[i].pattern);
	}
}
END_TEST

/* The answers auth_check() can give before any handler runs. */
START_TEST(auth_error_responses)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++) {
		if (is_public(&rt[i]))
			continue;
		json_t *op = operation(&rt[i]);
		ck_assert_msg(has_response(op, "401"), "%s %s: no 401", rt[i].method,
		              rt[i].pattern);
		ck_assert_msg(has_response(op, "429"), "%s %s: no 429", rt[i].method,
		              rt[i].pattern);
		if (rt[i].scope != SCOPE_PLATFORM || rt[i].permission != PERM_AUTHENTICATED)
			ck_assert_msg(has_response(op, "404") || has_response(op, "403"),
			              "%s %s: no 404 or 403", rt[i].method, rt[i].pattern);
		if (rt[i].scope != SCOPE_PLATFORM)
			ck_assert_msg(has_response(op, "404"), "%s %s: a scoped route answers 404",
			              rt[i].method, rt[i].pattern);
	}
}
END_TEST

/* The answers the server gives around every handler: one rule, api/openapi_errors.c. */
START_TEST(server_errors_listed)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++) {
		openapi_error e[OPENAPI_ERRORS_MAX];
		size_t ne = openapi_route_errors(&rt[i], e);
		json_t *op = operation(&rt[i]);
		for (size_t k = 0; k < ne; k++)
			ck_assert_msg(has_response(op, e[k].status), "%s %s: no %s (make openapi)",
			              rt[i].method, rt[i].pattern, e[k].status);
	}
}
END_TEST

/* Every parameter says what it is, the shared ones included. */
START_TEST(parameters_described)
{
	const char *path;
	json_t *item;
	json_object_foreach (json_object_get(doc, "paths"), path, item) {
		const char *method;
		json_t *op;
		json_object_foreach (item, method, op) {
			json_t *params = json_object_get(op, "parameters");
			size_t k;
			json_t *p;
			json_array_foreach (params, k, p) {
				json_t *d = deref(p);
				ck_assert_msg(
				    json_string_length(json_object_get(d, "description")) > 0,
				    "%s %s: parameter %s has no description", method, path,
				    json_string_value(json_object_get(d, "name")));
			}
		}
	}
}
END_TEST

/* Every status is a number with a description; errors are problems. */
START_TEST(responses_well_formed)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++) {
		json_t *responses = json_object_get(operation(&rt[i]), "responses");
		ck_assert_msg(json_object_size(responses) > 0, "%s %s: no responses", rt[i].method,
		              rt[i].pattern);
		int success = 0;
		const char *status;
		json_t *resp;
		json_object_foreach (responses, status, resp) {
			ck_assert_msg(strlen(status) == 3 && strspn(status, "0123456789") == 3,
			              "%s %s: status %s", rt[i].method, rt[i].pattern, status);
			json_t *r = deref(resp);
			ck_assert_msg(r != NULL, "%s %s %s: dangling $ref", rt[i].method,
			              rt[i].pattern, status);
			ck_assert_msg(json_is_string(json_object_get(r, "description")),
			              "%s %s %s: no description", rt[i].method, rt[i].pattern,
			              status);
			if (status[0] == '2') {
				success++;
				continue;
			}
			json_t *pj = json_object_get(json_object_get(r, "content"),
			                             "application/problem+json");
			json_t *schema = deref(json_object_get(pj, "schema"));
			ck_assert_msg(
			    schema && schema == pointer_get("#/components/schemas/Problem"),
			    "%s %s %s: not a Problem", rt[i].method, rt[i].pattern, status);
		}
		ck_assert_msg(success == 1, "%s %s: %d success statuses", rt[i].method,
		              rt[i].pattern, success);
		if (strcmp(rt[i].method, "DELETE") == 0) {
			json_t *ok = deref(json_object_get(responses, "204"));
			ck_assert_msg(ok && !json_object_get(ok, "content"),
			              "%s %s: a DELETE answers 204 without a body", rt[i].method,
			              rt[i].pattern);
		}
	}
}
END_TEST

static bool body_optional(const route *r)
{
	size_t n = strlen(r->pattern);
	bool cancel = n >= 7 && strcmp(r->pattern + n - 7, "/cancel") == 0;
	bool token_create =
	    strcmp(r->method, "POST") == 0 && strcmp(r->pattern, "/v1/users/{user}/tokens") == 0;
	bool no_body =
	    strcmp(r->method, "POST") == 0 &&
	    (strcmp(r->pattern, "/v1/jobs/{job}/attempts") == 0 ||
	     strcmp(r->pattern, "/internal/v1/attempts/{attempt}/heartbeat") == 0 ||
	     strcmp(r->pattern, "/internal/v1/attempts/{attempt}/key") == 0 ||
	     strcmp(r->pattern, "/internal/v1/attempts/{attempt}/datasets/{version}/key") == 0 ||
	     strcmp(r->pattern, "/v1/tenants/{tenant}/keys/rotate") == 0 ||
	     strcmp(r->pattern, "/v1/audit/heads") == 0 ||
	     strcmp(r->pattern, "/v1/tenants/{tenant}/datasets/{dataset}/grants/{grant}/approve") ==
	         0 ||
	     strcmp(r->pattern, "/v1/checkpoints/{checkpoint}/grants/{grant}/approve") == 0 ||
	     strcmp(r->pattern, "/v1/tenants/{tenant}/code/{code}/grants/{grant}/approve") == 0 ||
	     strcmp(r->pattern, "/internal/v1/attempts/{attempt}/init/key") == 0 ||
	     strcmp(r->pattern, "/internal/v1/attempts/{attempt}/code/key") == 0);
	return strcmp(r->method, "DELETE") == 0 || cancel || token_create || no_body;
}

START_TEST(mutations_document_their_body)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++) {
		json_t *op = operation(&rt[i]);
		json_t *body = json_object_get(op, "requestBody");
		if (strcmp(rt[i].method, "GET") == 0 && !(rt[i].flags & ROUTE_COMPUTE)) {
			ck_assert_msg(body == NULL, "%s %s: a read takes no body", rt[i].method,
			              rt[i].pattern);
			continue;
		}
		if (body_optional(&rt[i])) {
			json_t *req = json_object_get(deref(body), "required");
			ck_assert_msg(body == NULL || !json_is_true(req),
			              "%s %s: the body is optional", rt[i].method, rt[i].pattern);
		} else {
			ck_assert_msg(body != NULL, "%s %s: no requestBody", rt[i].method,
			              rt[i].pattern);
			ck_assert_msg(json_is_true(json_object_get(deref(body), "required")),
			              "%s %s: the body is required", rt[i].method, rt[i].pattern);
		}
		if (body == NULL)
			continue;
		if (rt[i].flags & ROUTE_UPLOAD) {
			/* a streamed upload: raw media types, and the answers a body can get */
			json_t *content = json_object_get(deref(body), "content");
			ck_assert_msg(json_object_get(content, "application/json") == NULL &&
			                  json_object_size(content) > 0,
			              "%s %s: an upload names its raw media types", rt[i].method,
			              rt[i].pattern);
			static const char *const upload_errors[] = {"413", "415", "422", NULL};
			for (size_t k = 0; upload_errors[k]; k++)
				ck_assert_msg(has_response(op, upload_errors[k]), "%s %s: no %s",
				              rt[i].method, rt[i].pattern, upload_errors[k]);
			continue;
		}
		json_t *media =
		    json_object_get(json_object_get(deref(body), "content"), "application/json");
		json_t *schema = deref(json_object_get(media, "schema"));
		ck_assert_msg(json_is_object(schema), "%s %s: no application/json schema",
		              rt[i].method, rt[i].pattern);
		/* one object, or one of several objects (a job spec's kinds), each strict */
		json_t *alts = json_object_get(schema, "oneOf");
		size_t na = alts ? json_array_size(alts) : 1;
		for (size_t k = 0; k < na; k++) {
			json_t *one = alts ? deref(json_array_get(alts, k)) : schema;
			ck_assert_msg(json_is_false(json_object_get(one, "additionalProperties")),
			              "%s %s: the body schema must refuse unknown fields",
			              rt[i].method, rt[i].pattern);
		}
		static const char *const body_errors[] = {"400", "413", "415", "422", NULL};
		for (size_t k = 0; body_errors[k]; k++)
			ck_assert_msg(has_response(op, body_errors[k]), "%s %s: no %s",
			              rt[i].method, rt[i].pattern, body_errors[k]);
	}
}
END_TEST

static bool camel_case(const char *s)
{
	if (!s || !islower((unsigned char)s[0]))
		return false;
	for (size_t i = 0; s[i]; i++)
		if (!isalnum((unsigned char)s[i]))
			return false;
	return true;
}

START_TEST(operation_ids_unique)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++) {
		const char *id =
		    json_string_value(json_object_get(operation(&rt[i]), "operationId"));
		ck_assert_msg(camel_case(id), "%s %s: operationId \"%s\"", rt[i].method,
		              rt[i].pattern, id ? id : "(none)");
		ck_assert_msg(json_is_string(json_object_get(operation(&rt[i]), "summary")),
		              "%s %s: no summary", rt[i].method, rt[i].pattern);
		for (size_t j = 0; j < i; j++) {
			const char *other =
			    json_string_value(json_object_get(operation(&rt[j]), "operationId"));
			ck_assert_msg(strcmp(id, other) != 0, "operationId %s used twice", id);
		}
	}
}
END_TEST

/* Add the path parameters of list (path item or operation level) to names. */
static void path_params(json_t *list, json_t *names, const char *where)
{
	size_t i;
	json_t *p;
	json_array_foreach (list, i, p) {
		json_t *param = deref(p);
		ck_assert_msg(param != NULL, "%s: dangling parameter $ref", where);
		const char *in = json_string_value(json_object_get(param, "in"));
		if (!in || strcmp(in, "path") != 0)
			continue;
		const char *name = json_string_value(json_object_get(param, "name"));
		ck_assert_msg(name != NULL, "%s: a path parameter without a name", where);
		ck_assert_msg(json_is_true(json_object_get(param, "required")),
		              "%s: path parameter %s must be required", where, name);
		ck_assert_msg(json_object_get(names, name) == NULL,
		              "%s: path parameter %s declared twice", where, name);
		json_object_set_new(names, name, json_true());
	}
}

START_TEST(path_parameters_match_placeholders)
{
	size_t n;
	const route *rt = table(&n);
	for (size_t i = 0; i < n; i++) {
		json_t *item = json_object_get(json_object_get(doc, "paths"), rt[i].pattern);
		json_t *names = json_object();
		path_params(json_object_get(item, "parameters"), names, rt[i].pattern);
		path_params(json_object_get(operation(&rt[i]), "parameters"), names, rt[i].pattern);
		size_t placeholders = 0;
		for (const char *p = strchr(rt[i].pattern, '{'); p; p = strchr(p + 1, '{')) {
			char name[64];
			size_t len = strcspn(p + 1, "}");
			ck_assert_uint_lt(len, sizeof(name));
			memcpy(name, p + 1, len);
			name[len] = '\0';
			ck_assert_msg(json_object_get(names, name) != NULL,
			              "%s %s: {%s} is not declared", rt[i].method, rt[i].pattern,
			              name);
			placeholders++;
		}
		ck_assert_msg(json_object_size(names) == placeholders,
		              "%s %s: declares path parameters it does not have", rt[i].method,
		              rt[i].pattern);
		json_decref(names);
	}
}
END_TEST

/* The enum en equals the codes of kind in the error table, "ok" left out. */
static void check_enum(json_t *en, err_kind kind, const char *what)
{
	ck_assert_msg(json_is_array(en), "%s: no enum", what);
	size_t want = 0;
	for (int e = 0; e < ERR__COUNT; e++) {
		const err_info_t *info = err_info((err_code)e);
		if (info->kind != kind || strcmp(info->code, "ok") == 0)
			continue;
		want++;
		bool found = false;
		size_t i;
		json_t *v;
		json_array_foreach (en, i, v) {
			found = found || (json_is_string(v) &&
			                  strcmp(json_string_value(v), info->code) == 0);
		}
		ck_assert_msg(found, "%s: %s is missing", what, info->code);
	}
	size_t i;
	json_t *v;
	json_array_foreach (en, i, v) {
		ck_assert_msg(json_is_string(v), "%s: entry %zu is not a string", what, i);
		int e = err_from_string(json_string_value(v));
		ck_assert_msg(e > 0 && err_info((err_code)e)->kind == kind, "%s: %s is not a code",
		              what, json_string_value(v));
	}
	ck_assert_uint_eq(json_array_size(en), want);
}

START_TEST(problem_codes_are_the_error_table)
{
	json_t *problem = pointer_get("#/components/schemas/Problem");
	ck_assert_ptr_nonnull(problem);
	json_t *props = json_object_get(problem, "properties");
	static const char *const members[] = {"type",       "title",  "status", "detail",
	                                      "request_id", "errors", "code",   NULL};
	for (size_t i = 0; members[i]; i++)
		ck_assert_msg(json_object_get(props, members[i]) != NULL, "Problem has no %s",
		              members[i]);
	check_enum(json_object_get(deref(json_object_get(props, "code")), "enum"), ERR_KIND_REQ,
	           "Problem.code");
	json_t *row = deref(json_object_get(json_object_get(props, "errors"), "items"));
	ck_assert_ptr_nonnull(row);
	json_t *row_props = json_object_get(row, "properties");
	ck_assert_ptr_nonnull(json_object_get(row_props, "pointer"));
	ck_assert_ptr_nonnull(json_object_get(row_props, "message"));
	check_enum(json_object_get(deref(json_object_get(row_props, "code")), "enum"),
	           ERR_KIND_FIELD, "Problem.errors[].code");
}
END_TEST

/* Every local $ref in the document points at something. */
static void refs_resolve(json_t *node, int depth)
{
	ck_assert_int_lt(depth, 64);
	const char *key;
	json_t *v;
	size_t i;
	if (json_is_object(node)) {
		json_t *ref = json_object_get(node, "$ref");
		if (json_is_string(ref))
			ck_assert_msg(pointer_get(json_string_value(ref)) != NULL,
			              "dangling $ref %s", json_string_value(ref));
		json_object_foreach (node, key, v)
			refs_resolve(v, depth + 1);
	} else if (json_is_array(node)) {
		json_array_foreach (node, i, v)
			refs_resolve(v, depth + 1);
	}
}

START_TEST(references_resolve)
{
	refs_resolve(doc, 0);
	static const char *const schemas[] = {
	    "Tenant",       "Quota",          "QuotaUpdate", "Member",
	    "MemberGrant",  "User",           "UserCreate",  "Token",
	    "TokenCreated", "TokenCreate",    "Job",         "JobSummary",
	    "JobEvent",     "JobSpec",        "Whoami",      "Problem",
	    "JobSpecTrain", "JobSpecCommand", NULL};
	for (size_t i = 0; schemas[i]; i++) {
		char ref[96];
		snprintf(ref, sizeof(ref), "#/components/schemas/%s", schemas[i]);
		ck_assert_msg(pointer_get(ref) != NULL, "no schema %s", schemas[i]);
	}
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("openapi");
	TCase *tc = tcase_create("document");
	tcase_add_checked_fixture(tc, load_doc, free_doc);
	tcase_add_test(tc, document_header);
	tcase_add_test(tc, operations_are_the_routes);
	tcase_add_test(tc, permission_and_scope);
	tcase_add_test(tc, public_routes_need_no_token);
	tcase_add_test(tc, auth_error_responses);
	tcase_add_test(tc, server_errors_listed);
	tcase_add_test(tc, parameters_described);
	tcase_add_test(tc, responses_well_formed);
	tcase_add_test(tc, mutations_document_their_body);
	tcase_add_test(tc, operation_ids_unique);
	tcase_add_test(tc, path_parameters_match_placeholders);
	tcase_add_test(tc, problem_codes_are_the_error_table);
	tcase_add_test(tc, references_resolve);
	suite_add_tcase(s, tc);
	return s;
}

/* status keys in numeric order */
static int by_status(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The responses of op with the server's error answers on r added, in status order. */
static json_t *with_server_errors(json_t *responses, const route *r)
{
	openapi_error e[OPENAPI_ERRORS_MAX];
	size_t ne = openapi_route_errors(r, e);
	for (size_t k = 0; k < ne; k++) {
		if (json_object_get(responses, e[k].status))
			continue;
		char ref[96];
		snprintf(ref, sizeof(ref), "#/components/responses/%s", e[k].response);
		json_object_set_new(responses, e[k].status, json_pack("{s:s}", "$ref", ref));
	}
	const char *keys[64];
	size_t nk = 0;
	const char *status;
	json_t *v;
	json_object_foreach (responses, status, v)
		if (nk < 64)
			keys[nk++] = status;
	qsort(keys, nk, sizeof(keys[0]), by_status);
	json_t *sorted = json_object();
	for (size_t k = 0; k < nk; k++)
		json_object_set(sorted, keys[k], json_object_get(responses, keys[k]));
	return sorted;
}

/* --write-doc FILE: FILE with every operation's server error answers listed. */
static int write_doc(const char *path)
{
	json_error_t e;
	json_t *d = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
	if (!d) {
		fprintf(stderr, "%s line %d: %s\n", path, e.line, e.text);
		return 1;
	}
	size_t n;
	const route *rt = routes_table(&n);
	for (size_t i = 0; i < n; i++) {
		doc = d;
		json_t *op = operation(&rt[i]);
		if (!op)
			continue; /* the test names the missing operation */
		json_object_set_new(op, "responses",
		                    with_server_errors(json_object_get(op, "responses"), &rt[i]));
	}
	doc = NULL;
	char *text = json_dumps(d, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	json_decref(d);
	FILE *f = fopen(path, "w");
	if (!text || !f || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0) {
		fprintf(stderr, "could not write \"%s\"\n", path);
		free(text);
		return 1;
	}
	free(text);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-doc") == 0)
		return write_doc(argv[2]);
	SRunner *sr = srunner_create(make_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
