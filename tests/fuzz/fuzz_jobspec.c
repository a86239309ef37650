/*
 * fuzz_jobspec.c - libFuzzer target for the job spec validator.
 *
 * The input goes through jsonx_parse() as a request body does, then through
 * jobspec_parse() without a quota, with a roomy one and with one nothing
 * fits. Invariants checked on every input:
 *   - RET is 0 exactly when the call added no rows, else validation_failed;
 *   - normalized is present exactly when the spec is valid;
 *   - every row is {pointer, code, message} with a per-field code;
 *   - a quota only adds problems, and the empty quota fits nothing;
 *   - a valid spec's numbers agree (ranks, grad_accum, devices), and its
 *     normal form is valid and normalizes to itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__,         \
			        __LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rows(const verrs *v)
{
	size_t i;
	const json_t *row;
	json_array_foreach (v->list, i, row) {
		const char *p = json_string_value(json_object_get(row, "pointer"));
		const char *code = json_string_value(json_object_get(row, "code"));
		const char *msg = json_string_value(json_object_get(row, "message"));
		CHECK(p && code && msg && msg[0]);
		CHECK(p[0] == '\0' || p[0] == '/');
		int e = err_from_string(code);
		CHECK(e >= 0 && err_info((err_code)e)->kind == ERR_KIND_FIELD);
	}
}

static void check_values(const jobspec *s)
{
	const layout *p = &s->parallel;
	CHECK(jobspec_ranks(s) ==
	      (int64_t)p->data_parallel * p->tensor_parallel * p->pipeline_parallel);
	CHECK(jobspec_devices(s) >= 1);
	CHECK(p->grad_accum >= 1);
	CHECK((int64_t)p->grad_accum * p->micro_batch * p->data_parallel == s->global_batch);
	CHECK(s->model.heads > 0 && s->model.d_model % s->model.heads == 0);
	CHECK(s->training.warmup_steps <= s->training.steps);
	CHECK(s->checkpoint.every_steps <= s->training.steps);
	CHECK(s->n_fallback >= 0 && s->n_fallback <= JOBSPEC_MAX_FALLBACK);
	CHECK(!s->fallback_auto || s->n_fallback == 0);
	int64_t prev = jobspec_ranks(s);
	for (int i = 0; i < s->n_fallback; i++) {
		const layout *f = &s->fallback[i];
		int64_t r = (int64_t)f->data_parallel * f->tensor_parallel * f->pipeline_parallel;
		CHECK(r < prev);
		CHECK((int64_t)f->grad_accum * f->micro_batch * f->data_parallel ==
		      s->global_batch);
		prev = r;
	}
}

/* RET: the number of rows one jobspec_parse() call added, after checking it. */
static size_t parse_once(const json_t *in, const quota_limits *q, jobspec *s, json_t **norm)
{
	verrs v;
	verrs_init(&v);
	int rc = jobspec_parse(in, q, s, norm, &v);
	size_t rows = verrs_count(&v);
	CHECK(rc == 0 || rc == -ERR_VALIDATION_FAILED);
	CHECK((rc == 0) == (rows == 0));
	CHECK((*norm != NULL) == (rc == 0));
	check_rows(&v);
	verrs_release(&v);
	return rows;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const jsonx_limits limits = {16, 256};
	static const quota_limits roomy = {64, 4, 5000};
	static const quota_limits none = {0, 0, 0};
	json_t *in = NULL;
	char msg[256];
	if (jsonx_parse((const char *)data, size, &limits, &in, msg, sizeof(msg)) != 0)
		return 0;

	jobspec s, s2;
	json_t *norm = NULL, *norm2 = NULL, *nq = NULL;
	size_t bare = parse_once(in, NULL, &s, &norm);
	size_t with = parse_once(in, &roomy, &s2, &nq);
	CHECK(with >= bare);
	json_decref(nq);
	CHECK(parse_once(in, &none, &s2, &nq) > 0);

	if (norm) {
		check_values(&s);
		CHECK(parse_once(norm, NULL, &s2, &norm2) == 0);
		CHECK(json_equal(norm, norm2));
		CHECK(jobspec_ranks(&s) == jobspec_ranks(&s2));
	}
	json_decref(norm2);
	json_decref(norm);
	json_decref(in);
	return 0;
}
