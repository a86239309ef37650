/*
 * sink.h - where the worker runtime sends what a job's launches produce.
 *
 * The driver never writes files or talks to the API itself: every line of
 * output, every batch of metrics, every checkpoint, every event of its own
 * and the outcome go through one runtime_sink. The file sink (sink_file.c)
 * writes local files; the API sink (sink_api.c) reports to the platform.
 *
 * An implementation embeds `runtime_sink` as its first member and sets ops.
 * Every call returns 0, or a negative value when the sink could not take the
 * data; the driver reports a failing sink on stderr and carries on (the
 * training must not stop because a log could not be written).
 */
#ifndef TY_WORKER_SINK_H
#define TY_WORKER_SINK_H

#include <jansson.h>

/* Where a log line came from. */
typedef enum runtime_stream {
	RUNTIME_STREAM_OUT,    /* the launch's stdout (rank 0's metrics, forwarded) */
	RUNTIME_STREAM_ERR,    /* the launch's stderr (every rank's messages, the launcher's) */
	RUNTIME_STREAM_WORKER, /* the driver's own messages */
} runtime_stream;

/* How the whole run ended: what finish() receives. */
typedef struct runtime_outcome {
	const char *result;  /* "succeeded", "failed" or "stopped" */
	const char *failure; /* the failure class ("data_error", ...); NULL unless failed */
	int exit_status;     /* trainyard-worker's exit status */
	int launches;        /* launches started */
	int restarts;        /* launches after the first (fallbacks) */
	int last_step;       /* the last step any launch reported; 0: none */
	int last_checkpoint; /* the newest checkpoint step known; 0: none */
	char message[512];   /* why, in words; "" on success */
} runtime_outcome;

typedef struct runtime_sink runtime_sink;

typedef struct runtime_sink_ops {
	/* One line without its newline (NUL-terminated, at most RELAY_LINE_MAX bytes). */
	int (*log_line)(runtime_sink *s, runtime_stream from, const char *line);
	/* A JSON array of step objects (borrowed), oldest first, at least one. */
	int (*metrics_batch)(runtime_sink *s, json_t *lines);
	/* The trainer completed the checkpoint of step; its manifest is at manifest_path. */
	int (*checkpoint_done)(runtime_sink *s, int step, const char *manifest_path);
	/* A runtime event: kind "launch", "launch_end", "fallback", "trainer"; detail borrowed. */
	int (*event)(runtime_sink *s, const char *kind, json_t *detail);
	/*
	 * The last call before free: the outcome of the whole run. A sink that
	 * learnt of a failure the launches did not show (a checkpoint refused
	 * for the quota) makes o that failure, exit status included: the
	 * driver exits with what o says after this call.
	 */
	int (*finish)(runtime_sink *s, runtime_outcome *o);
	void (*free)(runtime_sink *s);
	/*
	 * The sink's own timers (heartbeats, retries); may be NULL. now: monotonic
	 * seconds. Called at least every 200 ms while a launch runs, and before each.
	 */
	void (*tick)(runtime_sink *s, double now);
} runtime_sink_ops;

struct runtime_sink {
	const runtime_sink_ops *ops;
};

/* The calls, through the table; each returns what the implementation returned. */
int sink_log_line(runtime_sink *s, runtime_stream from, const char *line);
int sink_metrics_batch(runtime_sink *s, json_t *lines);
int sink_checkpoint_done(runtime_sink *s, int step, const char *manifest_path);
int sink_event(runtime_sink *s, const char *kind, json_t *detail);
int sink_finish(runtime_sink *s, runtime_outcome *o);
void sink_tick(runtime_sink *s, double now); /* nothing when the sink has no tick */
void sink_free(runtime_sink *s);             /* NULL is fine */

/*
 * The file sink. metrics_path: step objects, one JSON line each. log_path:
 * every log line as it came. events_path: checkpoints, events and the
 * outcome as JSON lines {"kind":..., "time_ms":..., ...}; NULL sends them
 * to the log file. Files are appended to and flushed after every call.
 * RET the sink (sink_free() it), or NULL with a message in err.
 */
runtime_sink *sink_file_new(const char *metrics_path, const char *log_path, const char *events_path,
                            char *err, size_t errlen);

/*
 * The API sink of one attempt (sink_api.c): log lines into the sealed log
 * log_path (object name log_name) of ctx's job; metrics, checkpoints (their
 * manifests read from the encrypted store over ckpt_dir), fallback events
 * and the end as reports to the attempt's routes through client, retried
 * with backoff while the API is unreachable; a heartbeat when nothing was
 * reported for heartbeat_s seconds. A report that answers job_state
 * "cancelling", or a credential refused as ended, asks the driver to stop
 * (runtime_request_stop). log_fd is the sealed log log_name, opened
 * read-write beneath the tenant's directory (tenantfs.h), taken over
 * (closed on failure too). Takes client when it succeeds; ctx is copied.
 * RET the sink, or NULL with a message in err.
 */
struct rt_client;
struct crypt_object_ctx;
runtime_sink *sink_api_new(struct rt_client *client, const struct crypt_object_ctx *ctx,
                           const char *ckpt_dir, int log_fd, const char *log_name, int heartbeat_s,
                           char *err, size_t errlen);

#endif
