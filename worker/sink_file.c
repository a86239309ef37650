/*
 * sink_file.c - the runtime sink that writes local files: the metrics as
 * JSON lines, the log as it came, and checkpoints, events and the outcome
 * as JSON lines (sink.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "sink.h"

typedef struct file_sink {
	runtime_sink base;            /* first: the runtime_sink a caller holds */
	FILE *metrics, *log, *events; /* events may be log */
} file_sink;

/* 9 significant digits: the trainer's own, exact for its float values */
#define JSON_LINE_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(9))

static int put_line(FILE *f, const char *text)
{
	if (fputs(text, f) == EOF || fputc('\n', f) == EOF || fflush(f) == EOF)
		return -1;
	return 0;
}

static int put_json(FILE *f, const json_t *j)
{
	char *text = json_dumps(j, JSON_LINE_FLAGS);
	if (!text)
		return -1;
	int rc = put_line(f, text);
	free(text);
	return rc;
}

/* One events line: kind and time first, then the fields of detail (borrowed, may be NULL). */
static int put_event(file_sink *fs, const char *kind, json_t *detail)
{
	json_t *line =
	    json_pack("{s:s, s:I}", "kind", kind, "time_ms", (json_int_t)clock_epoch_ms());
	if (!line)
		return -1;
	if (detail && json_object_update(line, detail) < 0) {
		json_decref(line);
		return -1;
	}
	int rc = put_json(fs->events, line);
	json_decref(line);
	return rc;
}

static int fs_log_line(runtime_sink *s, runtime_stream from, const char *line)
{
	(void)from;
	return put_line(((file_sink *)s)->log, line);
}

static int fs_metrics_batch(runtime_sink *s, json_t *lines)
{
	file_sink *fs = (file_sink *)s;
	size_t i;
	json_t *step;
	json_array_foreach (lines, i, step) {
		if (put_json(fs->metrics, step) < 0)
			return -1;
	}
	return 0;
}

static int fs_checkpoint_done(runtime_sink *s, int step, const char *manifest_path)
{
	json_t *d = json_pack("{s:i, s:s}", "step", step, "manifest", manifest_path);
	int rc = d ? put_event((file_sink *)s, "checkpoint_done", d) : -1;
	json_decref(d);
	return rc;
}

static int fs_event(runtime_sink *s, const char *kind, json_t *detail)
{
	return put_event((file_sink *)s, kind, detail);
}

static int fs_finish(runtime_sink *s, runtime_outcome *o)
{
	json_t *d = json_pack("{s:s, s:s?, s:i, s:i, s:i, s:i, s:i, s:s}", "result", o->result,
	                      "failure", o->failure, "exit", o->exit_status, "launches",
	                      o->launches, "restarts", o->restarts, "last_step", o->last_step,
	                      "last_checkpoint", o->last_checkpoint, "message", o->message);
	int rc = d ? put_event((file_sink *)s, "finish", d) : -1;
	json_decref(d);
	return rc;
}

static void fs_free(runtime_sink *s)
{
	file_sink *fs = (file_sink *)s;
	if (fs->events && fs->events != fs->log)
		fclose(fs->events);
	if (fs->log)
		fclose(fs->log);
	if (fs->metrics)
		fclose(fs->metrics);
	free(fs);
}

static const runtime_sink_ops file_sink_ops = {
    .log_line = fs_log_line,
    .metrics_batch = fs_metrics_batch,
    .checkpoint_done = fs_checkpoint_done,
    .event = fs_event,
    .finish = fs_finish,
    .free = fs_free,
};

static FILE *open_append(const char *path, const char *what, char *err, size_t errlen)
{
	FILE *f = fopen(path, "a");
	if (!f)
		snprintf(err, errlen, "could not open %s file \"%s\": %s", what, path,
		         strerror(errno));
	return f;
}

runtime_sink *sink_file_new(const char *metrics_path, const char *log_path, const char *events_path,
                            char *err, size_t errlen)
{
	file_sink *fs = calloc(1, sizeof(*fs));
	if (!fs) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fs->base.ops = &file_sink_ops;
	fs->metrics = open_append(metrics_path, "metrics", err, errlen);
	fs->log = fs->metrics ? open_append(log_path, "log", err, errlen) : NULL;
	fs->events = !fs->log      ? NULL
	             : events_path ? open_append(events_path, "events", err, errlen)
	                           : fs->log;
	if (!fs->events) {
		fs_free(&fs->base);
		return NULL;
	}
	return &fs->base;
}
