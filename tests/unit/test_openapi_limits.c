/*
 * test_openapi_limits.c - the limits and enums api/openapi.json gives a
 * job spec are the ones the code enforces. Every field of the JobSpec
 * schema is tried in jobspec_parse() at each bound it documents (accepted)
 * and just past it (refused at its pointer), every enum value is accepted
 * and another refused, every object refuses unknown fields as the code
 * does; the plan request's layout limits are the job spec's, and its own
 * the planner's constants; docs/jobspec.md gives the layout's ranges of
 * lib/job/layout.h.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attemptstate.h"
#include "embedded.h"
#include "jobspec.h"
#include "jobstate.h"
#include "layout.h"
#include "plan.h"
#include "unit.h"

static json_t *doc;
static int tried; /* bounds and values tried, so a walk that finds nothing fails */

static const char base_spec[] =
    "{\"name\":\"limits\",\"model\":{\"layers\":2,\"d_model\":64,\"heads\":2,\"vocab_size\":256,"
    "\"seq_len\":32},\"data\":{\"train\":\"d/x_*.bin\",\"val\":\"d/v.bin\"},"
    "\"parallel\":{\"data_parallel\":1,\"tensor_parallel\":1,\"pipeline_parallel\":1,"
    "\"zero_stage\":0,\"micro_batch\":1,\"global_batch\":1},"
    "\"resources\":{\"nodes\":1,\"gpus_per_node\":0,\"ranks_per_node\":1,"
    "\"time_limit_minutes\":60,\"partition\":\"p\"},"
    "\"training\":{\"steps\":100000000,\"lr\":0.001,\"warmup_steps\":0,\"schedule\":\"cosine\","
    "\"precision\":\"fp32\",\"recompute\":\"none\",\"grad_clip\":1,\"weight_decay\":0.1,"
    "\"seed\":1},\"checkpoint\":{\"every_steps\":5,\"keep\":3},"
    "\"fault_tolerance\":{\"max_restarts\":3,\"heartbeat_timeout_s\":300,\"fallback\":[]}}";

static void load_doc(void)
{
	const embedded_file *f = embedded_find("api/openapi.json");
	ck_assert_ptr_nonnull(f);
	doc = json_loadb(f->data, f->len, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	tried = 0;
}

static void free_doc(void)
{
	json_decref(doc);
	doc = NULL;
}

static json_t *schema(const char *name)
{
	return json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
	                       name);
}

/* The node a local $ref names, or node itself. */
static json_t *deref(json_t *node)
{
	const char *ref = json_string_value(json_object_get(node, "$ref"));
	if (!ref)
		return node;
	ck_assert(strncmp(ref, "#/components/schemas/", 21) == 0);
	json_t *s = schema(ref + 21);
	ck_assert_msg(s != NULL, "dangling %s", ref);
	return deref(s);
}

/* Replace the value at the JSON pointer ptr of spec (its parents exist). */
static void set_at(json_t *spec, const char *ptr, json_t *value)
{
	char path[256];
	snprintf(path, sizeof(path), "%s", ptr);
	char *last = strrchr(path, '/');
	*last = '\0';
	json_t *parent = spec;
	for (char *seg = path[0] ? strtok(path + 1, "/") : NULL; seg; seg = strtok(NULL, "/"))
		parent = json_is_array(parent) ? json_array_get(parent, (size_t)atoi(seg))
		                               : json_object_get(parent, seg);
	ck_assert_msg(parent != NULL, "no parent for %s", ptr);
	if (json_is_array(parent))
		json_array_set_new(parent, (size_t)atoi(last + 1), value);
	else
		json_object_set_new(parent, last + 1, value);
}

/* Parse base with the value at ptr (stolen). RET the codes of the rows at ptr, space-separated. */
static void codes_at(json_t *base, const char *ptr, json_t *value, char *out, size_t n)
{
	json_t *spec = json_deep_copy(base);
	set_at(spec, ptr, value);
	jobspec js;
	verrs v;
	verrs_init(&v);
	jobspec_parse(spec, NULL, &js, NULL, &v);
	size_t i, used = 0;
	json_t *row;
	out[0] = '\0';
	json_array_foreach (v.list, i, row) {
		if (strcmp(json_string_value(json_object_get(row, "pointer")), ptr) != 0)
			continue;
		used += (size_t)snprintf(out + used, n - used, "%s ",
		                         json_string_value(json_object_get(row, "code")));
	}
	verrs_release(&v);
	json_decref(spec);
	tried++;
}

/* Whether codes holds a refusal of the value itself (not a rule between fields). */
static bool refused(const char *codes)
{
	return strstr(codes, "out_of_range") || strstr(codes, "invalid_value") ||
	       strstr(codes, "wrong_type") || strstr(codes, "unknown_field") ||
	       strstr(codes, "unknown_preset");
}

static void expect_ok(json_t *base, const char *ptr, json_t *value, const char *what)
{
	char codes[512];
	char *shown = json_dumps(value, JSON_ENCODE_ANY);
	codes_at(base, ptr, value, codes, sizeof(codes));
	ck_assert_msg(!refused(codes), "%s = %.60s (%s): refused: %s", ptr, shown, what, codes);
	free(shown);
}

static void expect_refused(json_t *base, const char *ptr, json_t *value, const char *what)
{
	char codes[512];
	char *shown = json_dumps(value, JSON_ENCODE_ANY);
	codes_at(base, ptr, value, codes, sizeof(codes));
	ck_assert_msg(refused(codes), "%s = %.60s (%s): accepted", ptr, shown, what);
	free(shown);
}

static json_t *string_of(size_t n)
{
	char *s = malloc(n + 1);
	memset(s, 'a', n);
	s[n] = '\0';
	json_t *j = json_string(s);
	free(s);
	return j;
}

static json_t *item_template(json_t *items);

/* Try every bound and value of the field at ptr, schema s, in spec base. */
static void try_field(json_t *base, const char *ptr, json_t *s)
{
	s = deref(s);
	json_t *alt;
	size_t i;
	json_array_foreach (json_object_get(s, "oneOf"), i, alt)
		try_field(base, ptr, alt);
	const char *type = json_string_value(json_object_get(s, "type"));
	json_t *en = json_object_get(s, "enum");
	json_t *v;
	json_array_foreach (en, i, v)
		expect_ok(base, ptr, json_deep_copy(v), "an enum value");
	if (en)
		expect_refused(base, ptr, json_string("no-such-value"), "outside the enum");
	json_t *min = json_object_get(s, "minimum"), *max = json_object_get(s, "maximum");
	bool integer = type && strcmp(type, "integer") == 0;
	if (integer && min) {
		json_int_t m = json_integer_value(min);
		expect_ok(base, ptr, json_integer(m), "its minimum");
		expect_refused(base, ptr, json_integer(m - 1), "below its minimum");
	}
	if (integer && max) {
		json_int_t m = json_integer_value(max);
		expect_ok(base, ptr, json_integer(m), "its maximum");
		expect_refused(base, ptr, json_integer(m + 1), "above its maximum");
	}
	if (type && strcmp(type, "number") == 0) {
		if (min) {
			expect_ok(base, ptr, json_real(json_number_value(min)), "its minimum");
			expect_refused(base, ptr, json_real(json_number_value(min) - 1), "below");
		}
		if (max) {
			expect_ok(base, ptr, json_real(json_number_value(max)), "its maximum");
			expect_refused(base, ptr, json_real(json_number_value(max) * 2 + 1),
			               "above");
		}
	}
	json_t *maxlen = json_object_get(s, "maxLength");
	if (type && strcmp(type, "string") == 0 && maxlen) {
		size_t n = (size_t)json_integer_value(maxlen);
		expect_ok(base, ptr, string_of(n), "its longest");
		expect_refused(base, ptr, string_of(n + 1), "one character longer");
	}
	if (type && strcmp(type, "object") == 0) {
		ck_assert_msg(json_is_false(json_object_get(s, "additionalProperties")),
		              "%s: the schema must refuse unknown fields, as the code does", ptr);
		char sub[256];
		snprintf(sub, sizeof(sub), "%s/no_such_field", ptr);
		expect_refused(base, sub, json_integer(1), "an unknown field");
		const char *key;
		json_t *prop;
		json_object_foreach (json_object_get(s, "properties"), key, prop) {
			snprintf(sub, sizeof(sub), "%s/%s", ptr, key);
			try_field(base, sub, prop);
		}
	}
	if (type && strcmp(type, "array") == 0) {
		json_t *items = json_object_get(s, "items");
		json_t *maxitems = json_object_get(s, "maxItems");
		if (maxitems) {
			json_int_t n = json_integer_value(maxitems);
			json_t *full = json_array(), *over = json_array();
			for (json_int_t k = 0; k <= n; k++) {
				if (k < n)
					json_array_append_new(full, item_template(items));
				json_array_append_new(over, item_template(items));
			}
			expect_ok(base, ptr, full, "its most items");
			expect_refused(base, ptr, over, "one item more");
		}
		/* the fields of an item, in an array of one */
		json_t *one = json_deep_copy(base);
		json_t *arr = json_array();
		json_array_append_new(arr, item_template(items));
		set_at(one, ptr, arr);
		char sub[256];
		snprintf(sub, sizeof(sub), "%s/0", ptr);
		try_field(one, sub, items);
		json_decref(one);
	}
}

/* An item of the array schema items with its required fields at their minimum (or 1). */
static json_t *item_template(json_t *items)
{
	json_t *s = deref(items);
	json_t *o = json_object();
	size_t i;
	json_t *name;
	json_array_foreach (json_object_get(s, "required"), i, name) {
		json_t *p = deref(
		    json_object_get(json_object_get(s, "properties"), json_string_value(name)));
		json_t *min = json_object_get(p, "minimum");
		json_int_t v = min && json_integer_value(min) > 1 ? json_integer_value(min) : 1;
		json_object_set_new(o, json_string_value(name), json_integer(v));
	}
	return o;
}

START_TEST(job_spec_limits_are_the_codes)
{
	json_t *base = json_loads(base_spec, 0, NULL);
	ck_assert_ptr_nonnull(base);
	jobspec js;
	verrs v;
	verrs_init(&v);
	ck_assert_int_eq(jobspec_parse(base, NULL, &js, NULL, &v), 0);
	verrs_release(&v);
	json_t *s = schema(
	    "JobSpecTrain"); /* the trainer's kind; the command kind's rules are test_jobspec.c's */
	ck_assert_ptr_nonnull(s);
	ck_assert(json_is_false(json_object_get(s, "additionalProperties")));
	const char *key;
	json_t *prop;
	json_object_foreach (json_object_get(s, "properties"), key, prop) {
		char ptr[64];
		snprintf(ptr, sizeof(ptr), "/%s", key);
		try_field(base, ptr, prop);
	}
	ck_assert_int_gt(tried, 150);
	json_decref(base);
}
END_TEST

/* The integer bounds of schema name's property prop. */
static void bounds(const char *name, const char *path, json_int_t want_min, json_int_t want_max)
{
	json_t *s = deref(schema(name));
	char copy[128];
	snprintf(copy, sizeof(copy), "%s", path);
	for (char *seg = strtok(copy, "."); seg; seg = strtok(NULL, "."))
		s = deref(json_object_get(json_object_get(s, "properties"), seg));
	ck_assert_msg(s != NULL, "%s.%s is missing", name, path);
	ck_assert_msg(json_integer_value(json_object_get(s, "minimum")) == want_min &&
	                  json_integer_value(json_object_get(s, "maximum")) == want_max,
	              "%s.%s: %lld..%lld, the code: %lld..%lld", name, path,
	              (long long)json_integer_value(json_object_get(s, "minimum")),
	              (long long)json_integer_value(json_object_get(s, "maximum")),
	              (long long)want_min, (long long)want_max);
}

START_TEST(plan_request_limits_are_the_codes)
{
	bounds("PlanRequest", "parallel.data_parallel", 1, LAYOUT_DATA_PARALLEL_MAX);
	bounds("PlanRequest", "parallel.tensor_parallel", 1, LAYOUT_DEGREE_MAX);
	bounds("PlanRequest", "parallel.pipeline_parallel", 1, LAYOUT_DEGREE_MAX);
	bounds("PlanRequest", "parallel.zero_stage", 0, LAYOUT_ZERO_STAGE_MAX);
	bounds("PlanRequest", "micro_batch", 1, LAYOUT_MICRO_BATCH_MAX);
	bounds("PlanRequest", "global_batch", 1, LAYOUT_BATCH_MAX);
	bounds("PlanRequest", "devices", 1, PLAN_DEVICES_MAX);
	bounds("PlanRequest", "max_configs", 1, PLAN_CONFIGS_MAX);
	bounds("JobSpecParallel", "data_parallel", 1, LAYOUT_DATA_PARALLEL_MAX);
	bounds("JobSpecParallel", "tensor_parallel", 1, LAYOUT_DEGREE_MAX);
	bounds("JobSpecFallbackLayout", "pipeline_parallel", 1, LAYOUT_DEGREE_MAX);
	json_t *s = deref(schema("PlanRequest"));
	json_t *props = json_object_get(s, "properties");
	ck_assert(json_number_value(json_object_get(deref(json_object_get(props, "peak_flops")),
	                                            "maximum")) == PLAN_FLOPS_MAX);
	ck_assert(
	    json_number_value(json_object_get(deref(json_object_get(props, "link_bytes_per_s")),
	                                      "maximum")) == PLAN_LINK_MAX);
	ck_assert(
	    json_number_value(json_object_get(deref(json_object_get(props, "device_memory_bytes")),
	                                      "maximum")) == PLAN_BYTES_MAX);
}
END_TEST

/* The enum at node holds exactly the n names. */
static void enum_is(json_t *node, const char *what, const char *const *names, int n)
{
	json_t *en = json_object_get(deref(node), "enum");
	ck_assert_msg(json_is_array(en), "%s has no enum", what);
	ck_assert_msg(json_array_size(en) == (size_t)n, "%s: %zu values, the code has %d", what,
	              json_array_size(en), n);
	for (int i = 0; i < n; i++) {
		bool found = false;
		size_t k;
		json_t *v;
		json_array_foreach (en, k, v)
			found = found || strcmp(json_string_value(v), names[i]) == 0;
		ck_assert_msg(found, "%s lacks %s", what, names[i]);
	}
}

START_TEST(state_enums_are_the_state_machines)
{
	const char *names[16];
	for (int i = 0; i < JOB_STATE__COUNT; i++)
		names[i] = job_state_name((job_state)i);
	enum_is(schema("JobState"), "JobState", names, JOB_STATE__COUNT);
	for (int i = 0; i < ATTEMPT_STATE__COUNT; i++)
		names[i] = attempt_state_name((attempt_state)i);
	enum_is(json_object_get(json_object_get(schema("Attempt"), "properties"), "state"),
	        "Attempt.state", names, ATTEMPT_STATE__COUNT);
}
END_TEST

/* docs/jobspec.md's row of field says min..max. */
static void doc_range(const char *doc_text, const char *field, long long min, long long max)
{
	char head[64], range[64];
	snprintf(head, sizeof(head), "\n| `%s`", field);
	snprintf(range, sizeof(range), " %lld..%lld ", min, max);
	const char *row = strstr(doc_text, head);
	ck_assert_msg(row != NULL, "docs/jobspec.md has no row for %s", field);
	const char *end = strchr(row + 1, '\n');
	char line[256];
	snprintf(line, sizeof(line), "%.*s", (int)(end ? end - row : 200), row + 1);
	ck_assert_msg(strstr(line, range) != NULL, "docs/jobspec.md: %s, not%s", line, range);
}

START_TEST(job_spec_reference_has_the_layout_ranges)
{
	char *text = unit_read_file(SOURCE_DIR "/docs/jobspec.md");
	ck_assert_ptr_nonnull(text);
	doc_range(text, "data_parallel", 1, LAYOUT_DATA_PARALLEL_MAX);
	doc_range(text, "tensor_parallel", 1, LAYOUT_DEGREE_MAX);
	doc_range(text, "pipeline_parallel", 1, LAYOUT_DEGREE_MAX);
	doc_range(text, "zero_stage", 0, LAYOUT_ZERO_STAGE_MAX);
	doc_range(text, "micro_batch", 1, LAYOUT_MICRO_BATCH_MAX);
	doc_range(text, "global_batch", 1, LAYOUT_BATCH_MAX);
	free(text);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("openapi_limits");
	TCase *tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, load_doc, free_doc);
	tcase_add_test(tc, job_spec_limits_are_the_codes);
	tcase_add_test(tc, plan_request_limits_are_the_codes);
	tcase_add_test(tc, job_spec_reference_has_the_layout_ranges);
	tcase_add_test(tc, state_enums_are_the_state_machines);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
