/*
 * relay.c - a launch's output into the sink (relay.h).
 */
#include "relay.h"

#include <stdio.h>
#include <string.h>

#include "classify.h"

/* The sink calls count their failures, so the driver can say the sink lost data. */
static void count(relay *r, int rc)
{
	if (rc < 0)
		r->sink_failures++;
}

int relay_init(relay *r, runtime_sink *sink, const char *ckpt_dir)
{
	memset(r, 0, sizeof(*r));
	r->sink = sink;
	r->ckpt_dir = ckpt_dir;
	r->batch = json_array();
	return r->batch ? 0 : -1;
}

void relay_release(relay *r)
{
	json_decref(r->batch);
	r->batch = NULL;
}

void relay_begin(relay *r, int launch)
{
	r->launch = launch;
	r->out.len = 0;
	r->err.len = 0;
	r->ranks_lost = 0;
	r->start_failures = 0;
	r->first_lost_rank = -1;
	r->oom_kills = 0;
}

static void send_batch(relay *r)
{
	if (json_array_size(r->batch) == 0)
		return;
	count(r, sink_metrics_batch(r->sink, r->batch));
	json_array_clear(r->batch);
}

static void on_step(relay *r, json_t *line, double now)
{
	json_t *step = json_object_get(line, "step");
	if (json_is_integer(step))
		r->last_step = (int)json_integer_value(step);
	json_object_set_new(line, "launch", json_integer(r->launch));
	if (json_array_size(r->batch) == 0)
		r->batch_since = now;
	json_array_append(r->batch, line);
	if (json_array_size(r->batch) >= RELAY_BATCH_LINES)
		send_batch(r);
}

static void on_event(relay *r, json_t *line)
{
	const char *name = json_string_value(json_object_get(line, "event"));
	json_t *step = json_object_get(line, "step");
	int s = json_is_integer(step) ? (int)json_integer_value(step) : -1;
	if (name && strcmp(name, "checkpoint") == 0 && s >= 0) {
		char path[4096 + 64];
		snprintf(path, sizeof(path), "%s/step_%08d/manifest.json", r->ckpt_dir, s);
		r->last_checkpoint = s;
		/* what was batched comes first: a checkpoint covers the steps before it */
		send_batch(r);
		count(r, sink_checkpoint_done(r->sink, s, path));
		return;
	}
	if (name && strcmp(name, "resumed") == 0 && s >= 0) {
		r->last_checkpoint = s;
		r->last_step = s;
	}
	json_object_set_new(line, "launch", json_integer(r->launch));
	count(r, sink_event(r->sink, "trainer", line));
}

/* One whole line of stdout, beyond the log: metrics when it is one. */
static void on_out_line(relay *r, const char *text, double now)
{
	if (text[0] != '{')
		return;
	json_t *line = json_loads(text, 0, NULL);
	const char *type = json_string_value(json_object_get(line, "type"));
	if (type && strcmp(type, "step") == 0)
		on_step(r, line, now);
	else if (type && strcmp(type, "event") == 0)
		on_event(r, line);
	json_decref(line);
}

/* A refused report: said in the log, the first few times. */
static void report_refused(relay *r, int rank, const char *why)
{
	if (++r->bad_reports > 20)
		return;
	char msg[512];
	snprintf(msg, sizeof(msg), "trainyard-worker: a report of rank %d is refused: %s%s", rank,
	         why, r->bad_reports == 20 ? " (no more of these are said)" : "");
	relay_worker_line(r, msg);
}

/* One report of a command job's rank (relay.h). */
static void on_report(relay *r, const char *line, double now)
{
	int rank, step;
	const char *text = program_label(line, &rank);
	char why[256];
	json_t *metrics = NULL;
	program_report kind =
	    program_report_read(r->prog, text, now, &step, &metrics, why, sizeof(why));
	if (kind == PROGRAM_REPORT_BAD) {
		report_refused(r, rank, why);
		return;
	}
	r->last_report = now;
	if (kind == PROGRAM_REPORT_PROGRESS)
		return;
	if (rank > 0) {
		json_decref(metrics);
		report_refused(r, rank, "steps and checkpoints count from rank 0 only");
		return;
	}
	if (kind == PROGRAM_REPORT_STEP) {
		on_step(r, metrics, now);
		json_decref(metrics);
		return;
	}
	char manifest[128], err[1024];
	send_batch(r); /* a checkpoint covers the steps before it */
	if (program_checkpoint(r->prog, step, manifest, sizeof(manifest), err, sizeof(err)) < 0) {
		report_refused(r, rank, err);
		return;
	}
	char path[4096 + 160];
	snprintf(path, sizeof(path), "%s/%s", r->ckpt_dir, manifest);
	r->last_checkpoint = step;
	if (step > r->last_step)
		r->last_step = step;
	count(r, sink_checkpoint_done(r->sink, step, path));
}

static void on_line(relay *r, runtime_stream from, const char *text, double now)
{
	count(r, sink_log_line(r->sink, from, text));
	if (from == RUNTIME_STREAM_OUT && r->prog)
		on_report(r, text, now);
	else if (from == RUNTIME_STREAM_OUT)
		on_out_line(r, text, now);
	else if (from == RUNTIME_STREAM_ERR) {
		int rank = -1;
		launch_line kind = launch_line_kind_rank(text, &rank);
		r->ranks_lost += kind == LAUNCH_LINE_RANK_LOST;
		r->start_failures += kind == LAUNCH_LINE_START_FAILED;
		r->oom_kills += kind == LAUNCH_LINE_OOM;
		if (kind == LAUNCH_LINE_RANK_LOST && r->first_lost_rank < 0)
			r->first_lost_rank = rank;
	}
}

static void take(relay *r, runtime_stream from, relay_line *l, double now)
{
	l->text[l->len] = '\0';
	on_line(r, from, l->text, now);
	l->len = 0;
}

void relay_feed(relay *r, runtime_stream from, const char *buf, size_t n, double now)
{
	relay_line *l = from == RUNTIME_STREAM_OUT ? &r->out : &r->err;
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			take(r, from, l, now);
			continue;
		}
		if (buf[i] == '\0')
			continue; /* a line is a C string: NUL bytes cannot travel */
		if (l->len == RELAY_LINE_MAX)
			take(r, from, l, now);
		l->text[l->len++] = buf[i];
	}
}

double relay_tick(relay *r, double now)
{
	if (json_array_size(r->batch) == 0)
		return -1;
	double due = r->batch_since + RELAY_BATCH_SECONDS;
	if (now >= due) {
		send_batch(r);
		return -1;
	}
	return due - now;
}

void relay_end(relay *r)
{
	if (r->out.len)
		take(r, RUNTIME_STREAM_OUT, &r->out, 0);
	if (r->err.len)
		take(r, RUNTIME_STREAM_ERR, &r->err, 0);
	send_batch(r);
}

void relay_worker_line(relay *r, const char *line)
{
	count(r, sink_log_line(r->sink, RUNTIME_STREAM_WORKER, line));
}
