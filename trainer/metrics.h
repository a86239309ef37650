/*
 * metrics.h - the trainer's metrics stream: one JSON object per line,
 * {"type":"step", ...} for every optimizer step and {"type":"event", ...}
 * for spikes, skipped steps, loss-scale changes, checkpoints and the end.
 * Only rank 0 writes; other ranks hold a closed stream and write nothing.
 */
#ifndef TY_METRICS_H
#define TY_METRICS_H

#include <jansson.h>
#include <stdio.h>

typedef struct metrics {
	FILE *f; /* NULL: discard */
	int own; /* close f at the end */
} metrics;

/*
 * Open the stream: path "-" is stdout, "fd:N" an inherited descriptor,
 * anything else a file (appended). path NULL or !active: discard.
 * RET 0, or -1 with a message.
 */
int metrics_open(metrics *m, const char *path, int active, char *err, size_t errlen);
void metrics_close(metrics *m);

/* Write one line: fields (stolen) plus "type" and "time_ms" (Unix epoch). Flushed at once. */
void metrics_emit(metrics *m, const char *type, json_t *fields);

#endif
