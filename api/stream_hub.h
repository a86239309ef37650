/*
 * stream_hub.h - streamed answers (api_stream in api.h) over libmicrohttpd.
 *
 * The daemon runs a pool of polling threads, each serving many
 * connections, so a content reader must never sleep: a reader with
 * nothing to send yet answers API_STREAM_WAIT, and its connection is
 * suspended (MHD_suspend_connection) and put on the hub's waiting list.
 * One resumer thread wakes every API_STREAM_POLL_MS, takes the list and
 * resumes each connection, whose reader is then asked again. A waiting
 * stream costs a list entry, not a thread. Before a connection is
 * suspended, its socket is peeked: a client that went away ends the
 * stream there.
 *
 * Lifetimes: the hub lives from stream_hub_start() (before the daemon)
 * to stream_hub_stop() (before MHD_stop_daemon: it resumes every waiting
 * connection, since the daemon may not stop with suspended ones, and
 * makes every later read end the stream) and stream_hub_free() (after).
 */
#ifndef TY_STREAM_HUB_H
#define TY_STREAM_HUB_H

#include <microhttpd.h>

#include "api.h"

typedef struct stream_hub stream_hub;

/* RET: a running hub, or NULL (reason logged). */
stream_hub *stream_hub_start(void);
void stream_hub_stop(stream_hub *h);
void stream_hub_free(stream_hub *h);

/*
 * The response for rq->stream, which it takes over: rq->stream is
 * cleared, and on failure the stream is freed. Sets the connection's idle
 * limit to the stream's. RET: the response, or NULL when out of memory.
 */
struct MHD_Response *stream_response(stream_hub *h, api_req *rq);

#endif
