/*
 * cmd_job.c - yardctl job submit | list | show | cancel | events | metrics | logs | attempt.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "http.h"
#include "httpc.h"
#include "jobstate.h"
#include "page.h"
#include "routes.h"
#include "sbuf.h"
#include "url.h"

/* Largest spec file read, the API's largest body limit. */
#define SPEC_MAX (64u << 20)
/* Largest step --after takes: the API's (api/openapi.json, parameter AfterStep). */
#define STEP_MAX 999999999LL

static const out_col job_fields[] = {
    {"id", "id"},
    {"name", "name"},
    {"tenant", "tenant"},
    {"state", "state"},
    {"state_reason", "state_reason"},
    {"queue_position", "queue.position"},
    {"tenant_rank", "queue.tenant_rank"},
    {"not_before", "queue.not_before"},
    {"eta", "eta.eta"}, /* GET /v1/jobs/{job}/eta, put beside the job by job_show */
    {"priority", "priority"},
    {"devices", "devices"},
    {"attempts", "attempts"},
    {"submitter_id", "submitter_id"},
    {"created_at", "created_at"},
    {"updated_at", "updated_at"},
    {"started_at", "started_at"},
    {"finished_at", "finished_at"},
    /* GET /v1/jobs/{job}/goodput, put beside the job by job_show */
    {"wall_s", "goodput.wall_seconds"},
    {"goodput_s", "goodput.goodput_seconds"},
    {"goodput_fraction", "goodput.goodput_fraction"},
    {"badput_queueing_s", "goodput.badput_seconds.queueing"},
    {"badput_startup_s", "goodput.badput_seconds.startup"},
    {"badput_data_wait_s", "goodput.badput_seconds.data_wait"},
    {"badput_checkpoint_s", "goodput.badput_seconds.checkpoint"},
    {"badput_lost_s", "goodput.badput_seconds.lost"},
    {"badput_recovery_s", "goodput.badput_seconds.recovery"},
    {"badput_fallback_s", "goodput.badput_seconds.fallback"},
    {"badput_overhead_s", "goodput.badput_seconds.overhead"},
    {"steps_kept", "goodput.steps.kept"},
    {"steps_lost", "goodput.steps.lost"},
    {"tokens_per_s", "goodput.tokens_per_s"},
    {"mfu", "goodput.mfu"},
    {"scaling_efficiency", "goodput.scaling_efficiency"},
    {NULL, NULL},
};

static const out_col job_cols[] = {
    {"ID", "id"},           {"NAME", "name"},          {"STATE", "state"},
    {"DEVICES", "devices"}, {"CREATED", "created_at"}, {NULL, NULL},
};

static const out_col event_cols[] = {
    {"ID", "id"},         {"AT", "at"},          {"FROM", "from_state"}, {"TO", "to_state"},
    {"REASON", "reason"}, {"ACTOR", "actor_id"}, {NULL, NULL},
};

static const out_col metric_cols[] = {
    {"STEP", "step"},
    {"ATTEMPT", "attempt"},
    {"AT", "at"},
    {"LOSS", "data.loss"},
    {"LR", "data.lr"},
    {"GRAD_NORM", "data.grad_norm"},
    {"TOKENS/S", "data.tokens_per_s"},
    {NULL, NULL},
};

static const out_col attempt_fields[] = {
    {"id", "id"},       {"job_id", "job_id"},         {"number", "number"},
    {"state", "state"}, {"expires_at", "expires_at"}, {"credential", "credential"},
    {NULL, NULL},
};

/* Read all of f into b. RET 0, or -1 (read error or larger than b allows). */
static int read_all(FILE *f, sbuf *b)
{
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (sbuf_add(b, chunk, n))
			return -1;
	return ferror(f) ? -1 : 0;
}

/* Read the spec from file ("-": stdin) into b. RET: CLI_OK, or CLI_USAGE after saying why. */
static int spec_read(const char *file, sbuf *b)
{
	bool is_stdin = strcmp(file, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(file, "rb");
	if (!f) {
		fprintf(stderr, "yardctl: could not open \"%s\": %s\n", file, strerror(errno));
		return CLI_USAGE;
	}
	int rc = read_all(f, b);
	if (rc)
		fprintf(stderr, "yardctl: could not read \"%s\": %s\n", file,
		        ferror(f) ? strerror(errno) : "larger than 64 MiB");
	if (!is_stdin)
		fclose(f);
	return rc ? CLI_USAGE : CLI_OK;
}

/* Print the new job: its id alone, or the whole answer as JSON. */
static int submitted_print(const cli_ctx *ctx, const json_t *job)
{
	const char *id = json_string_value(json_object_get(job, "id"));
	if (ctx->format == CLI_FMT_JSON) {
		output_json(stdout, job);
		return CLI_OK;
	}
	if (!id) {
		fprintf(stderr, "yardctl: the server's answer holds no job id\n");
		return CLI_SERVER;
	}
	printf("%s\n", id);
	return CLI_OK;
}

enum { OPT_SUBMIT_TENANT, OPT_IDEMPOTENCY_KEY };
static const opt_spec submit_opts[] = {
    {"tenant", true, true},
    {"idempotency-key", true, false},
    {NULL, false, false},
};

static int job_submit(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	sbuf spec;
	json_t *job = NULL;
	int rc = args_parse_cmd(ctx, self, submit_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *key = o.val[OPT_IDEMPOTENCY_KEY];
	if (key && (!httpc_header_value_ok(key) || strlen(key) > 255))
		return args_usage_error(ctx, self,
		                        "the idempotency key is 1-255 printable characters");
	char *path = URL_PATH(ROUTE_TENANT_JOBS, o.val[OPT_SUBMIT_TENANT]);
	if (!path)
		return cmd_bad_path();
	sbuf_init(&spec, SPEC_MAX);
	rc = spec_read(o.pos[0], &spec);
	if (rc == CLI_OK) {
		http_request req = {.method = "POST",
		                    .path = path,
		                    .body = spec.buf,
		                    .body_len = spec.len,
		                    .idempotency_key = key};
		rc = http_call(ctx, &req, &job);
	}
	if (rc == CLI_OK)
		rc = submitted_print(ctx, job);
	json_decref(job);
	sbuf_release(&spec);
	free(path);
	return rc;
}

enum { OPT_LIST_TENANT, OPT_STATE, OPT_LIMIT, OPT_ALL };
static const opt_spec list_opts[] = {
    {"tenant", true, true}, {"state", true, false}, {"limit", true, false},
    {"all", false, false},  {NULL, false, false},
};

/* The list path with its query. OUT: *path (caller frees). RET 0, or -1 with msg. */
static int list_path(const cli_ctx *ctx, const opt_result *o, char **path, char *msg, size_t msglen)
{
	long long limit;
	sbuf b;
	*path = NULL;
	snprintf(msg, msglen, "--state names a job state (queued, running, ...)");
	if (o->set[OPT_STATE] && job_state_parse(o->val[OPT_STATE]) < 0)
		return -1;
	if (o->set[OPT_LIMIT] && cmd_limit(ctx, o->val[OPT_LIMIT], &limit, msg, msglen))
		return -1;
	snprintf(msg, msglen, "the tenant is empty or too long");
	char *base = URL_PATH(ROUTE_TENANT_JOBS, o->val[OPT_LIST_TENANT]);
	if (!base)
		return -1;
	sbuf_init(&b, URL_MAX);
	int rc = sbuf_adds(&b, base) || url_query_add(&b, "state", o->val[OPT_STATE]) ||
	         url_query_add(&b, "limit", o->val[OPT_LIMIT]);
	free(base);
	if (rc) {
		sbuf_release(&b);
		return -1;
	}
	*path = sbuf_detach(&b);
	return *path ? 0 : -1;
}

static int job_list(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	char *path;
	char msg[128];
	int rc = args_parse_cmd(ctx, self, list_opts, 0, 0, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (list_path(ctx, &o, &path, msg, sizeof(msg)))
		return args_usage_error(ctx, self, msg);
	return cmd_list(ctx, path, o.set[OPT_ALL], job_cols);
}

/* Add the answer of GET path to job as its member name, when the server gives one. */
static void job_add(const cli_ctx *ctx, json_t *job, const char *name, char *path)
{
	json_t *answer = NULL;
	if (path && http_json(ctx, "GET", path, NULL, &answer) == CLI_OK)
		json_object_set(job, name, answer);
	json_decref(answer);
	free(path);
}

/* The job, with its estimated start ("eta") and where its time went ("goodput"). */
static int job_show(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	int rc = args_parse_cmd(ctx, self, NULL, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	char *path = URL_PATH(ROUTE_JOB, o.pos[0]);
	json_t *job = NULL;
	rc = path ? http_json(ctx, "GET", path, NULL, &job) : cmd_bad_path();
	free(path);
	if (rc == CLI_OK) {
		job_add(ctx, job, "eta", URL_PATH(ROUTE_JOB_ETA, o.pos[0]));
		job_add(ctx, job, "goodput", URL_PATH(ROUTE_JOB_GOODPUT, o.pos[0]));
		rc = output_object(ctx, job, job_fields);
	}
	if (rc == CLI_OK && ctx->format == CLI_FMT_TABLE) {
		printf("\n");
		output_json_block(stdout, "spec", json_object_get(job, "spec"));
	}
	json_decref(job);
	return rc;
}

enum { OPT_FOLLOW };
static const opt_spec logs_opts[] = {
    {"follow", false, false},
    {NULL, false, false},
};

/*
 * Say on stderr that job id answered an empty log, and why: its state
 * (GET /v1/jobs/{job}), when the server tells it.
 */
static void job_no_log(const cli_ctx *ctx, const char *id)
{
	json_t *job = NULL;
	char *path = URL_PATH(ROUTE_JOB, id), phrase[64];
	int state = -1;
	if (path && http_json(ctx, "GET", path, NULL, &job) == CLI_OK) {
		const char *name = json_string_value(json_object_get(job, "state"));
		state = name ? job_state_parse(name) : -1;
	}
	free(path);
	json_decref(job);
	if (state < 0)
		fprintf(stderr, "yardctl: job %s has no log yet\n", id);
	else if (job_state_final((job_state)state))
		fprintf(stderr, "yardctl: job %s has no log: it %s\n", id,
		        job_state_phrase((job_state)state, NULL, phrase, sizeof(phrase)));
	else
		fprintf(stderr, "yardctl: job %s has no log yet: it %s\n", id,
		        job_state_phrase((job_state)state, NULL, phrase, sizeof(phrase)));
}

static int job_logs(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	static char follow[] = "--follow";
	for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-f") == 0)
			argv[i] = follow; /* the short spelling, as tail has it */
	opt_result o;
	int rc = args_parse_cmd(ctx, self, logs_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	char *path = URL_PATH(ROUTE_JOB_LOGS, o.pos[0]);
	if (!path)
		return cmd_bad_path();
	sbuf url;
	sbuf_init(&url, 4096);
	rc = sbuf_adds(&url, path) || (o.set[OPT_FOLLOW] && url_query_add(&url, "follow", "1"));
	free(path);
	bool empty = false;
	rc = rc ? CLI_USAGE : http_stream(ctx, url.buf, stdout, &empty);
	sbuf_release(&url);
	if (rc == CLI_OK && empty)
		job_no_log(ctx, o.pos[0]); /* not an error: the log is there, with no line yet */
	return rc;
}

enum { OPT_AFTER, OPT_METRICS_ALL };
static const opt_spec metrics_opts[] = {
    {"after", true, false},
    {"all", false, false},
    {NULL, false, false},
};

static int job_metrics(cli_ctx *ctx, const cli_command *self, int argc, char **argv)
{
	opt_result o;
	long long after = -1;
	json_t *answer = NULL;
	int rc = args_parse_cmd(ctx, self, metrics_opts, 1, 1, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.set[OPT_AFTER] && args_int(o.val[OPT_AFTER], 0, STEP_MAX, &after))
		return args_usage_error(ctx, self, "--after needs a step number, 0 to 999999999");
	char *path = URL_PATH(ROUTE_JOB_METRICS, o.pos[0]);
	if (!path)
		return cmd_bad_path();
	rc = page_fetch_after(ctx, path, "step", after, o.set[OPT_METRICS_ALL], &answer);
	free(path);
	if (rc == CLI_OK)
		rc = output_list(ctx, answer, json_object_get(answer, "items"), metric_cols);
	json_decref(answer);
	return rc;
}

const cli_command job_commands[] = {
    {"submit", "FILE --tenant TENANT [--idempotency-key KEY]",
     "submit the job spec in FILE ('-': stdin) and print the new job's id alone",
     "A retry with the same --idempotency-key and spec returns the first job.\n", job_submit, NULL,
     NULL},
    {"list", "--tenant TENANT [--state STATE] [--limit N] [--all]",
     "list a tenant's jobs, newest first",
     "Shows one page (the server's default size, or N: 1 to TRAINYARD_PAGE_MAX, 200\n"
     "unless set otherwise); --all follows every page.\n",
     job_list, NULL, NULL},
    {"show", "JOB_ID", "show a job and its spec", NULL, job_show, NULL, NULL},
    {"cancel", "JOB_ID", "cancel a job that has not finished", NULL, NULL, NULL,
     CMD_DO("POST", ROUTE_JOB_CANCEL, 1, "cancel requested", job_fields)},
    {"events", "JOB_ID", "list a job's state changes", NULL, NULL, NULL,
     CMD_LIST(ROUTE_JOB_EVENTS, 1, event_cols, true)},
    {"metrics", "JOB_ID [--after STEP] [--all]", "list a job's per-step metrics, in step order",
     "Shows one page (the server's TRAINYARD_PAGE_MAX steps) from the first step, or\n"
     "from the step after STEP; --all asks for the next pages until the last step.\n",
     job_metrics, NULL, NULL},
    {"logs", "JOB_ID [--follow|-f]", "print a job's decrypted log, every attempt in order",
     "--follow (-f) keeps printing lines as the job writes them, until it ends.\n"
     "A job with no log line yet (queued, say) prints nothing on stdout, says so on\n"
     "stderr, and exits 0: the log is there, empty.\n",
     job_logs, NULL, NULL},
    {"attempt", "JOB_ID", "start an attempt of a queued job and print its credential",
     "The credential is shown once: hand it to the attempt's worker runtime only.\n", NULL, NULL,
     CMD_SHOW("POST", ROUTE_JOB_ATTEMPTS, 1, attempt_fields)},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
