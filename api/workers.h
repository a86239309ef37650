/*
 * workers.h - the threads that run requests.
 *
 * libmicrohttpd's polling threads read and write connections (TLS, HTTP
 * parsing) and must never wait: each serves many connections, and a
 * connection stays on the thread that accepted it for its whole life. A
 * request's pipeline waits (for the database, a pooled connection, the
 * disk), so server.c suspends the request's connection and hands the
 * pipeline to this pool, whose threads take tasks from one queue in
 * arrival order, whichever connection they came from. A request then
 * waits only for a free worker, never behind the requests of connections
 * that happen to share its polling thread.
 *
 * A task is embedded in its owner (no allocation); run() is called once,
 * on a worker thread, and owns the task from then on.
 *
 * Lifetimes: workers_start() before the daemon; workers_stop() before
 * MHD_stop_daemon(): it refuses new tasks, lets the workers finish every
 * queued one (each resumes its connection) and joins them; the polling
 * threads may still submit (and be refused) until the daemon stops, so
 * workers_free() comes after MHD_stop_daemon().
 */
#ifndef TY_WORKERS_H
#define TY_WORKERS_H

typedef struct worker_task {
	void (*run)(struct worker_task *t);
	struct worker_task *next; /* the queue's; the pool's while queued */
} worker_task;

typedef struct workers workers;

/* RET: n running workers, or NULL (reason logged). */
workers *workers_start(int n);

/* Queue t for the next free worker. RET 0, or -1 when stopping (t not taken). */
int workers_submit(workers *w, worker_task *t);

/* Refuse new tasks, run the queued ones, join the workers. Again: nothing. */
void workers_stop(workers *w);

/* Free a stopped pool (stopping it first if need be). */
void workers_free(workers *w);

#endif
