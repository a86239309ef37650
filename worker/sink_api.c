/*
 * sink_api.c - the runtime sink of one attempt: log lines into the job's
 * sealed log, everything else reported to the attempt's routes (sink.h).
 *
 * Reports wait in an outbox and go out in order: metrics batches, then
 * checkpoints, then fallback events as they came. A report the API could
 * not take for a passing reason (no answer, 5xx, 429) stays first in the
 * outbox and is tried again after a backoff (RETRY_FIRST_S doubling up to
 * RETRY_MAX_S), from the driver's ticks, so the training never waits on
 * the API for longer than one request. A report refused for good (another
 * 4xx) is dropped with a message. A 401 means the attempt has ended: the
 * outbox is dropped, nothing more is sent, and the driver is asked to stop.
 *
 * The sink also sends a heartbeat when nothing was reported for
 * heartbeat_s seconds. Every report answers the job's state; "cancelling"
 * asks the driver to stop (the launch checkpoints and exits 16), and the
 * finish then ends the attempt, which the API turns into "cancelled".
 * "preempting" (the scheduler preempts the job for another, preempt.h in
 * scheduler/) asks the same "save now" of the launch, and the attempt
 * ends in the class preempted: the scheduler requeues the job to resume
 * from that checkpoint.
 *
 * The tenant's storage quota (migrations/0014_storage_quota.sql):
 * heartbeats and metrics carry the sealed log's size on disk
 * ("log_bytes"), and their answers what the tenant may still store
 * ("storage_left"). The log takes lines up to the size it had when
 * reported plus that room; past it, one marker line says the log is
 * full and the lines after it are dropped (counted, and said when room
 * comes back). A checkpoint the API refuses with storage_quota_exceeded
 * has its files removed, the training is stopped, and the attempt ends
 * failed in the class storage_quota_exceeded (lib/job/failure.def), which the
 * scheduler does not retry.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"
#include "client.h"
#include "clock.h"
#include "crypt.h"
#include "driver.h"
#include "failure.h"
#include "sink.h"
#include "ckpt_store.h"

#define RETRY_FIRST_S  0.5
#define RETRY_MAX_S    30.0
#define SENDS_PER_TICK 8     /* reports sent by one tick at most */
#define FINISH_FLUSH_S 600.0 /* how long the end waits for the API to take the outbox */

typedef struct report {
	struct report *next;
	char what[32]; /* "/metrics", "/checkpoints", "/events" */
	json_t *body;
} report;

typedef struct api_sink {
	runtime_sink base; /* first: the runtime_sink a caller holds */
	rt_client *client;
	crypt_log_writer *log;
	ckpt_store *store; /* the encrypted store over the checkpoint directory */
	report *head, **tail;
	int heartbeat_s;
	double last_report; /* when the API last took a report (monotonic); 0: never */
	double next_try;    /* after a transient failure, not before this */
	double backoff;
	bool ended;      /* the attempt's credential was refused: nothing more is sent */
	bool stop_asked; /* runtime_request_stop() was called */
	bool cancelling; /* the job is being cancelled */
	bool preempting; /* the job is being preempted */
	int dropped;     /* reports given up */
	/* the storage quota */
	int log_size_fd;     /* the sealed log, for its size on disk; -1: none */
	long long log_sent;  /* the log's size the report in flight carries; -1: none */
	long long log_limit; /* the size the log may reach; -1: not known yet */
	long long log_lost;  /* lines dropped since the log was full */
	bool log_full;       /* the marker is written, lines are dropped */
	bool quota_refused;  /* a checkpoint was refused for the quota */
} api_sink;

/* The API's code for a checkpoint refused for the quota (lib/base/errors.def). */
#define QUOTA_CODE "storage_quota_exceeded"

/* The sealed log's bytes on disk, or -1. */
static long long log_size(const api_sink *s)
{
	struct stat st;
	if (s->log_size_fd < 0 || fstat(s->log_size_fd, &st) != 0)
		return -1;
	return (long long)st.st_size;
}

static void sleep_s(double sec)
{
	if (sec <= 0)
		return;
	struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
	nanosleep(&ts, NULL);
}

/* A message of the sink's own: on stderr, and in the sealed log while it is open. */
static void note(api_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(api_sink *s, const char *fmt, ...)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "trainyard-worker: ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", msg);
	if (s->log)
		crypt_log_append(s->log, msg, strlen(msg), NULL, 0);
}

static void ask_stop(api_sink *s, const char *why)
{
	if (s->stop_asked)
		return;
	s->stop_asked = true;
	note(s, "%s: stopping the training", why);
	runtime_request_stop();
}

/* What an answer says about the job: "cancelling" and "preempting" stop the training. */
static void took(api_sink *s, const rt_answer *a, double now)
{
	s->last_report = now;
	s->backoff = 0;
	s->next_try = 0;
	const json_t *left = json_object_get(a->body, "storage_left");
	if (json_is_integer(left) && s->log_sent >= 0)
		s->log_limit = s->log_sent + (long long)json_integer_value(left);
	const char *state = json_string_value(json_object_get(a->body, "job_state"));
	if (state && strcmp(state, "cancelling") == 0) {
		s->cancelling = true;
		ask_stop(s, "the job is being cancelled");
	} else if (state && strcmp(state, "preempting") == 0) {
		s->preempting = true;
		ask_stop(s, "the job is preempted for another: saving a checkpoint");
	}
}

enum { SENT, RETRY, DROPPED, ENDED };

/*
 * A checkpoint refused for the tenant's storage quota: its files go (the
 * API dropped its record), the training stops, the attempt ends failed.
 */
static void checkpoint_refused(api_sink *s, const json_t *body, const rt_answer *a)
{
	int step = (int)json_integer_value(json_object_get(body, "step"));
	char err[512];
	note(s, "checkpoint of step %d refused: %s", step, a->message);
	if (ckpt_step_remove(s->store, step, err, sizeof(err)) < 0)
		note(s, "could not remove the checkpoint of step %d: %s", step, err);
	else
		note(s, "the files of the checkpoint of step %d are removed", step);
	s->quota_refused = true;
	ask_stop(s, "the tenant's storage quota is used up");
}

/* One report now. RET SENT, RETRY (try again later), DROPPED or ENDED. */
static int send_report(api_sink *s, const char *what, json_t *body, double now)
{
	if (s->ended)
		return ENDED;
	/* heartbeats and metrics carry the log's size, for the tenant's storage */
	bool sized = strcmp(what, "/heartbeat") == 0 || strcmp(what, "/metrics") == 0;
	s->log_sent = sized ? log_size(s) : -1;
	json_t *own = NULL;
	if (s->log_sent >= 0) {
		if (!body)
			body = own = json_object();
		json_object_set_new(body, "log_bytes", json_integer(s->log_sent));
	}
	rt_answer a;
	int rc = rt_client_call(s->client, "POST", what, body, &a);
	int out = SENT;
	if (rc == 0) {
		took(s, &a, now);
	} else if (a.status == 401) {
		s->ended = true;
		note(s, "the API refused the attempt's credential (%s)", a.message);
		ask_stop(s, "the attempt has ended");
		out = ENDED;
	} else if (rt_answer_transient(&a)) {
		s->backoff = s->backoff > 0 ? s->backoff * 2 : RETRY_FIRST_S;
		if (s->backoff > RETRY_MAX_S)
			s->backoff = RETRY_MAX_S;
		s->next_try = now + s->backoff;
		note(s, "report %s not taken, again in %.1f s: %s", what, s->backoff, a.message);
		out = RETRY;
	} else if (strcmp(what, "/checkpoints") == 0 && strcmp(a.code, QUOTA_CODE) == 0) {
		checkpoint_refused(s, body, &a);
		out = DROPPED;
	} else {
		s->dropped++;
		note(s, "report %s refused, dropped: %s", what, a.message);
		out = DROPPED;
	}
	rt_answer_release(&a);
	json_decref(own);
	s->log_sent = -1;
	return out;
}

static void outbox_pop(api_sink *s)
{
	report *r = s->head;
	s->head = r->next;
	if (!s->head)
		s->tail = &s->head;
	json_decref(r->body);
	free(r);
}

/* Send what is waiting, at most max reports. RET true when the outbox is empty. */
static bool outbox_flush(api_sink *s, double now, int max)
{
	while (s->head && max-- > 0) {
		if (s->ended) {
			outbox_pop(s);
			continue;
		}
		if (now < s->next_try)
			return false;
		int rc = send_report(s, s->head->what, s->head->body, now);
		if (rc == RETRY)
			return false;
		outbox_pop(s);
		now = clock_mono_s();
	}
	return !s->head;
}

/* Queue body (taken) for route what, and send what is due. RET 0 or -1. */
static int outbox_add(api_sink *s, const char *what, json_t *body)
{
	report *r = body ? calloc(1, sizeof(*r)) : NULL;
	if (!r) {
		json_decref(body);
		return -1;
	}
	snprintf(r->what, sizeof(r->what), "%s", what);
	r->body = body;
	*s->tail = r;
	s->tail = &r->next;
	outbox_flush(s, clock_mono_s(), SENDS_PER_TICK);
	return 0;
}

static int as_log_line(runtime_sink *base, runtime_stream from, const char *line)
{
	(void)from;
	api_sink *s = (api_sink *)base;
	size_t n = strlen(line);
	if (!s->log)
		return -1;
	if (n > CRYPT_LOG_RECORD_MAX)
		n = CRYPT_LOG_RECORD_MAX;
	if (s->log_limit >= 0) {
		/* a record: its length word, the line, its tag */
		long long size = log_size(s), rec = 4 + (long long)n + CRYPT_TAG_LEN;
		bool fits = size >= 0 && size + rec <= s->log_limit;
		if (!fits && !s->log_full) {
			s->log_full = true;
			note(s,
			     "the tenant's storage quota is used up: the log keeps no more lines");
		}
		if (!fits) {
			s->log_lost++;
			return 0;
		}
		if (s->log_full) {
			s->log_full = false;
			note(s, "the storage quota has room again: %lld lines were not kept",
			     s->log_lost);
			s->log_lost = 0;
		}
	}
	return crypt_log_append(s->log, line, n, NULL, 0) < 0 ? -1 : 0;
}

static int as_metrics_batch(runtime_sink *base, json_t *lines)
{
	json_t *copy = json_deep_copy(lines);
	if (!copy)
		return -1;
	return outbox_add((api_sink *)base, "/metrics", json_pack("{s:o}", "steps", copy));
}

/* {step, world, shards: [{name, bytes, sha256}]} from the sealed manifest of step. */
static json_t *checkpoint_body(api_sink *s, int step)
{
	ckpt_manifest m = {0};
	char err[512];
	json_t *out = NULL;
	if (ckpt_manifest_read(s->store, step, &m, err, sizeof(err)) < 0) {
		note(s, "the manifest of step %d does not read: %s", step, err);
		goto done;
	}
	json_t *shards = json_array();
	for (int r = 0; shards && r < m.world; r++)
		json_array_append_new(shards, json_pack("{s:s, s:I, s:s}", "name", m.shards[r].name,
		                                        "bytes", (json_int_t)m.shards[r].bytes,
		                                        "sha256", m.shards[r].sha256));
	out = shards
	          ? json_pack("{s:i, s:i, s:o}", "step", m.step, "world", m.world, "shards", shards)
	          : NULL;
done:
	ckpt_manifest_release(&m);
	return out;
}

static int as_checkpoint_done(runtime_sink *base, int step, const char *manifest_path)
{
	(void)manifest_path; /* the store reads it by step, through its own name checks */
	api_sink *s = (api_sink *)base;
	json_t *body = checkpoint_body(s, step);
	if (!body)
		return -1;
	if (s->log) /* readers of the log see where its checkpoints are */
		crypt_log_sync(s->log, NULL, 0);
	return outbox_add(s, "/checkpoints", body);
}

/* fallback: a job event; the other kinds go to the sealed log as JSON lines. */
static int as_event(runtime_sink *base, const char *kind, json_t *detail)
{
	api_sink *s = (api_sink *)base;
	if (strcmp(kind, "fallback") == 0) {
		const char *reason = json_string_value(json_object_get(detail, "reason"));
		json_t *body = json_pack("{s:s, s:s, s:O}", "kind", "fallback", "reason",
		                         reason ? reason : "", "detail", detail);
		return outbox_add(s, "/events", body);
	}
	char *text = json_dumps(detail, JSON_COMPACT);
	if (!text)
		return -1;
	char line[2048];
	snprintf(line, sizeof(line), "trainyard-worker: %s %s", kind, text);
	free(text);
	return as_log_line(base, RUNTIME_STREAM_WORKER, line);
}

static void as_tick(runtime_sink *base, double now)
{
	api_sink *s = (api_sink *)base;
	if (s->ended || !outbox_flush(s, now, SENDS_PER_TICK))
		return;
	if (now >= s->next_try && (s->last_report == 0 || now - s->last_report >= s->heartbeat_s))
		send_report(s, "/heartbeat", NULL, now);
}

/*
 * A checkpoint refused for the quota fails the run, however the launches
 * ended: the refusal may come while the outbox is flushed, after the last
 * step; the worker's exit status says so too.
 */
static void quota_failed(api_sink *s, runtime_outcome *o)
{
	const char *name = failure_name(FAILURE_STORAGE_QUOTA);
	if (o->failure && strcmp(o->failure, name) == 0)
		return;
	o->result = "failed";
	o->failure = name;
	o->exit_status = failure_status(FAILURE_STORAGE_QUOTA);
	snprintf(o->message, sizeof(o->message), "a checkpoint was refused for the storage quota");
	note(s, "failed with %s: %s", name, o->message);
}

/*
 * The end: the outbox first (waiting out passing failures up to
 * FINISH_FLUSH_S), then the sealed log is closed, then the attempt ends.
 */
static int as_finish(runtime_sink *base, runtime_outcome *o)
{
	api_sink *s = (api_sink *)base;
	double deadline = clock_mono_s() + FINISH_FLUSH_S;
	while (!s->ended && !outbox_flush(s, clock_mono_s(), SENDS_PER_TICK) &&
	       clock_mono_s() < deadline) {
		sleep_s(s->next_try - clock_mono_s());
	}
	if (s->head && !s->ended)
		note(s, "the API did not take every report in %.0f s; some are lost",
		     FINISH_FLUSH_S);
	if (s->quota_refused)
		quota_failed(s, o);
	int rc = 0;
	if (s->log) {
		char err[512];
		if (crypt_log_writer_close(s->log, err, sizeof(err)) < 0) {
			fprintf(stderr, "trainyard-worker: could not close the sealed log: %s\n",
			        err);
			rc = -1;
		}
		s->log = NULL;
	}
	bool ok = strcmp(o->result, "succeeded") == 0;
	failure_class c = o->failure      ? failure_of_reason(o->failure)
	                  : s->cancelling ? FAILURE_CANCELLED
	                                  : FAILURE_STOPPED;
	if (s->preempting && !s->cancelling && c == FAILURE_STOPPED)
		c = FAILURE_PREEMPTED; /* it saved and stopped because it was asked to */
	json_t *body =
	    ok ? json_pack("{s:s, s:s}", "outcome", "succeeded", "reason", "all steps done")
	       : json_pack("{s:s, s:s, s:s}", "outcome", "failed", "reason", failure_name(c),
	                   "failure_class", failure_name(c));
	long long closed = log_size(s); /* the sealed log's size, closed */
	if (body && closed >= 0)
		json_object_set_new(body, "log_bytes", json_integer(closed));
	s->backoff = 0;
	s->next_try = 0;
	int sent = RETRY;
	while (body && !s->ended &&
	       (sent = send_report(s, "/finish", body, clock_mono_s())) == RETRY &&
	       clock_mono_s() < deadline) {
		sleep_s(s->backoff);
	}
	json_decref(body);
	if (sent != SENT) {
		fprintf(stderr, "trainyard-worker: the attempt's end was not reported\n");
		rc = -1;
	}
	return rc;
}

static void as_free(runtime_sink *base)
{
	api_sink *s = (api_sink *)base;
	while (s->head)
		outbox_pop(s);
	if (s->log)
		crypt_log_writer_free(s->log);
	if (s->log_size_fd >= 0)
		close(s->log_size_fd);
	ckpt_store_free(s->store);
	rt_client_free(s->client);
	free(s);
}

static const runtime_sink_ops api_sink_ops = {
    .log_line = as_log_line,
    .metrics_batch = as_metrics_batch,
    .checkpoint_done = as_checkpoint_done,
    .event = as_event,
    .finish = as_finish,
    .free = as_free,
    .tick = as_tick,
};

runtime_sink *sink_api_new(rt_client *client, const crypt_object_ctx *ctx, const char *ckpt_dir,
                           int log_fd, const char *log_name, int heartbeat_s, char *err,
                           size_t errlen)
{
	api_sink *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		close(log_fd);
		return NULL;
	}
	s->base.ops = &api_sink_ops;
	s->client = client;
	s->tail = &s->head;
	s->log_sent = s->log_limit = -1;
	s->log_size_fd = dup(log_fd); /* the writer owns log_fd; its size is read here */
	s->heartbeat_s = heartbeat_s > 0 ? heartbeat_s : 30;
	s->store = ckpt_store_encrypted(ckpt_dir, ctx);
	if (!s->store) {
		snprintf(err, errlen, "could not open the encrypted checkpoint store");
		close(log_fd);
		s->client = NULL;
		as_free(&s->base);
		return NULL;
	}
	char why[512];
	if (crypt_log_writer_open(log_fd, log_name, ctx, log_name, &s->log, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "could not open the sealed log \"%s\": %s", log_name, why);
		if (s->log)
			crypt_log_writer_free(s->log);
		s->log = NULL;
		s->client = NULL;
		as_free(&s->base);
		return NULL;
	}
	return &s->base;
}
