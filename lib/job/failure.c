/*
 * failure.c - the rows of failure.def, looked up (failure.h).
 */
#include "failure.h"

#include <string.h>

typedef struct row {
	const char *name;
	bool failure;
	int status; /* -1: none */
	failure_class exits_as;
	bool fallback;
	failure_retry retry;
	const char *doc;
} row;

static const row rows[FAILURE__COUNT] = {
#define EXIT(e, n, f, st, fb, rt, d)  [FAILURE_##e] = {n, f, st, FAILURE_##e, fb, rt, d},
#define CLASS(e, n, f, as, fb, rt, d) [FAILURE_##e] = {n, f, -1, FAILURE_##as, fb, rt, d},
#include "failure.def"
#undef EXIT
#undef CLASS
};

static const row *row_of(failure_class f)
{
	return (unsigned)f < FAILURE__COUNT ? &rows[f] : NULL;
}

const char *failure_name(failure_class f)
{
	const row *r = row_of(f);
	return r ? r->name : "unknown";
}

const char *failure_doc(failure_class f)
{
	const row *r = row_of(f);
	return r ? r->doc : "";
}

failure_class failure_by_name(const char *name)
{
	for (int i = 0; name && i < FAILURE__COUNT; i++)
		if (strcmp(rows[i].name, name) == 0)
			return (failure_class)i;
	return FAILURE_NONE;
}

failure_class failure_of_reason(const char *reason)
{
	failure_class f = failure_by_name(reason);
	return f == FAILURE_NONE ? FAILURE_FAILED : f;
}

bool failure_is_failure(failure_class f)
{
	const row *r = row_of(f);
	return r && r->failure;
}

int failure_status(failure_class f)
{
	const row *r = row_of(f);
	const row *as = r ? row_of(r->exits_as) : NULL;
	return as ? as->status : -1;
}

bool failure_is_exit(failure_class f)
{
	const row *r = row_of(f);
	return r && r->status >= 0;
}

bool failure_falls_back(failure_class f)
{
	const row *r = row_of(f);
	return r && r->fallback;
}

failure_retry failure_retry_rule(failure_class f)
{
	const row *r = row_of(f);
	return r ? r->retry : FAILURE_RETRY_SAME;
}

const char *failure_retry_text(failure_retry r)
{
	switch (r) {
	case FAILURE_RETRY_NEVER:
		return "none";
	case FAILURE_RETRY_SAME:
		return "the same configuration";
	case FAILURE_RETRY_FEWER_NODES:
		return "one node fewer";
	case FAILURE_RETRY_RECOMPUTE:
		return "training.recompute=full, once";
	case FAILURE_RETRY_REQUEUE:
		return "requeued at once, not counted as a restart";
	}
	return "";
}

const char *train_exit_name(int status)
{
	for (int i = 0; i < FAILURE__COUNT; i++)
		if (rows[i].status == status && status >= 0)
			return rows[i].name;
	return "unknown";
}
