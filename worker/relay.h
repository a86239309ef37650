/*
 * relay.h - one launch's output, line by line, into the sink.
 *
 * Every line of the launch's stdout and stderr goes to the sink's log.
 * Lines of stdout that are the trainer's metrics (worker/metrics.h) are
 * read as well:
 *   - {"type":"step"} objects are batched, with "launch": N added, and go
 *     to metrics_batch() once RELAY_BATCH_LINES are waiting or the oldest
 *     has waited RELAY_BATCH_SECONDS, and at the end of the launch;
 *   - {"type":"event","event":"checkpoint","step":S} is checkpoint_done()
 *     with DIR/step_%08d/manifest.json;
 *   - other trainer events go to event("trainer", the line's object).
 * Lines of stderr are checked for a launcher's report of a rank ended by a
 * signal, or of ranks it could not start (classify.h).
 *
 * For a command job (relay.prog set) stdout is the ranks' report channel
 * instead (sdk/README.md), each line labelled by the launcher with its
 * rank: rank 0's steps are batched as above, its checkpoints sealed
 * (program_checkpoint()) before checkpoint_done(); any report from any
 * rank is a heartbeat. Other ranks' steps and checkpoints, and lines that
 * are no report, are logged and otherwise dropped. A line longer than RELAY_LINE_MAX bytes is
 * passed on in pieces of that size.
 *
 * The relay also keeps what the driver needs to know about progress: the
 * last step reported and the newest checkpoint (written, or resumed from).
 */
#ifndef TY_WORKER_RELAY_H
#define TY_WORKER_RELAY_H

#include <jansson.h>

#include "program.h"
#include "sink.h"

#define RELAY_LINE_MAX      65536
#define RELAY_BATCH_LINES   64
#define RELAY_BATCH_SECONDS 2.0

typedef struct relay_line {
	char text[RELAY_LINE_MAX + 1];
	size_t len;
} relay_line;

typedef struct relay {
	runtime_sink *sink;   /* borrowed */
	const char *ckpt_dir; /* borrowed */
	int launch;           /* the launch being relayed, 1-based */
	relay_line out, err;  /* the partial last line of each stream */
	json_t *batch;        /* step objects not yet sent */
	double batch_since;   /* when the oldest of them came (monotonic seconds) */
	int last_step;        /* the last step reported; 0: none */
	int last_checkpoint;  /* the newest checkpoint written or resumed from; 0: none */
	int ranks_lost;       /* this launch's stderr lines that report a rank lost */
	int start_failures;   /* ... and those that report ranks it could not start */
	int sink_failures;    /* sink calls that failed */
	/*
	 * A command job's (program.h; NULL for the trainer): stdout carries
	 * the ranks' reports, each line labelled with its rank.
	 */
	program *prog;
	double last_report;  /* when a rank last reported (monotonic s): its heartbeat */
	int first_lost_rank; /* the rank the launcher said ended first; -1: none */
	int oom_kills;       /* the launcher's reports of a rank killed for memory */
	int bad_reports;     /* report lines refused */
} relay;

/* A relay into sink, for checkpoints under ckpt_dir. RET 0, or -1 out of memory. */
int relay_init(relay *r, runtime_sink *sink, const char *ckpt_dir);
void relay_release(relay *r);

/* Start relaying launch number n (1-based): partial lines and the launcher's reports reset. */
void relay_begin(relay *r, int launch);

/*
 * Take bytes the launch wrote on one stream; now: monotonic seconds.
 * Complete lines are handled at once, the rest waits for more.
 */
void relay_feed(relay *r, runtime_stream from, const char *buf, size_t n, double now);

/* Send the batch if it is due at now. RET: seconds until it is due, or -1 when empty. */
double relay_tick(relay *r, double now);

/* The launch is over: its unterminated last lines are taken, the batch is sent. */
void relay_end(relay *r);

/* One of the driver's own lines, to the log. */
void relay_worker_line(relay *r, const char *line);

#endif
