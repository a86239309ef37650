/*
 * stopsig.h - how a long-running program hears it should stop: SIGINT and
 * SIGTERM are counted (without SA_RESTART, so a blocking pause() or poll()
 * returns at once), and SIGPIPE is ignored (a peer that went away is an
 * error of the write, not the end of the program). The API server, the
 * scheduler and the worker runtime install it at start and read the count
 * from their main loops.
 */
#ifndef TY_STOPSIG_H
#define TY_STOPSIG_H

/* Install the handlers. Call once at start, before threads are made. */
void stopsig_install(void);

/* RET: the stop signals received so far, at most 100 (each may mean more haste). */
int stopsig_count(void);

/* Ask for a stop from inside the program: counts as one signal when none came yet. */
void stopsig_request(void);

#endif
