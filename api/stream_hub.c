/*
 * stream_hub.c - streamed answers: the content-reader glue, and the
 * waiting list with its resumer thread (stream_hub.h has the design).
 *
 * Locking: the hub's mutex guards the waiting list and the stopping flag
 * only; no libmicrohttpd function is called while holding it. A
 * connection on the list is suspended, so the daemon neither reads it nor
 * frees its response until the resumer has taken it off the list and
 * resumed it.
 */
#include "stream_hub.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"

#define STREAM_BLOCK (32u * 1024) /* bytes asked of a reader at a time */

typedef struct stream_conn {
	api_stream s;
	stream_hub *hub;
	struct MHD_Connection *conn;
	struct stream_conn *next; /* on the waiting list */
} stream_conn;

struct stream_hub {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t resumer;
	stream_conn *waiting;
	bool stopping;
};

/* Take the waiting list and resume each connection on it. */
static void resume_all(stream_hub *h)
{
	pthread_mutex_lock(&h->mu);
	stream_conn *sc = h->waiting;
	h->waiting = NULL;
	pthread_mutex_unlock(&h->mu);
	while (sc) {
		stream_conn *next = sc->next; /* sc may be gone once resumed */
		MHD_resume_connection(sc->conn);
		sc = next;
	}
}

static void *resumer_main(void *arg)
{
	stream_hub *h = arg;
	pthread_mutex_lock(&h->mu);
	while (!h->stopping) {
		struct timespec at;
		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_nsec += API_STREAM_POLL_MS * 1000000L;
		at.tv_sec += at.tv_nsec / 1000000000L;
		at.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&h->cv, &h->mu, &at);
		if (h->stopping || !h->waiting)
			continue;
		pthread_mutex_unlock(&h->mu);
		resume_all(h);
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

stream_hub *stream_hub_start(void)
{
	stream_hub *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	int rc = pthread_create(&h->resumer, NULL, resumer_main, h);
	if (rc) {
		log_printf(LOG_ERROR, "could not start the stream resumer thread: %s",
		           strerror(rc));
		pthread_cond_destroy(&h->cv);
		pthread_mutex_destroy(&h->mu);
		free(h);
		return NULL;
	}
	return h;
}

void stream_hub_stop(stream_hub *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	bool was = h->stopping;
	h->stopping = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (was)
		return;
	pthread_join(h->resumer, NULL);
	resume_all(h);
}

void stream_hub_free(stream_hub *h)
{
	if (!h)
		return;
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

static bool hub_stopping(stream_hub *h)
{
	pthread_mutex_lock(&h->mu);
	bool s = h->stopping;
	pthread_mutex_unlock(&h->mu);
	return s;
}

/*
 * Whether the client closed or reset the connection: a suspended
 * connection is not watched by the daemon, so look before suspending.
 * POLLRDHUP says the peer shut its side down even when bytes wait before
 * the end: over TLS a closing client sends its close_notify alert first,
 * which a peek for the end of the stream would read instead. Bytes the
 * client sent (a pipelined request) are left where they are.
 */
static bool client_gone(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return false;
	struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
	int k;
	do
		k = poll(&p, 1, 0);
	while (k < 0 && errno == EINTR);
	return k > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* Suspend sc's connection until the resumer's next round. */
static void wait_for_data(stream_conn *sc)
{
	stream_hub *h = sc->hub;
	MHD_suspend_connection(sc->conn);
	pthread_mutex_lock(&h->mu);
	bool stopping = h->stopping;
	if (!stopping) {
		sc->next = h->waiting;
		h->waiting = sc;
	}
	pthread_mutex_unlock(&h->mu);
	if (stopping)
		MHD_resume_connection(sc->conn); /* the next read ends the stream */
}

static ssize_t on_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	stream_conn *sc = cls;
	if (hub_stopping(sc->hub))
		return MHD_CONTENT_READER_END_WITH_ERROR;
	ssize_t n = sc->s.read(sc->s.ctx, buf, max);
	if (n > 0)
		return n;
	if (n == API_STREAM_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n != API_STREAM_WAIT)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (client_gone(sc->conn))
		return MHD_CONTENT_READER_END_OF_STREAM; /* nobody reads it: end quietly */
	wait_for_data(sc);
	return 0;
}

static void on_free(void *cls)
{
	stream_conn *sc = cls;
	if (sc->s.free)
		sc->s.free(sc->s.ctx);
	free(sc);
}

struct MHD_Response *stream_response(stream_hub *h, api_req *rq)
{
	api_stream s = rq->stream;
	memset(&rq->stream, 0, sizeof(rq->stream));
	stream_conn *sc = calloc(1, sizeof(*sc));
	if (!sc) {
		if (s.free)
			s.free(s.ctx);
		return NULL;
	}
	sc->s = s;
	sc->hub = h;
	sc->conn = rq->conn;
	uint64_t size = s.size < 0 ? MHD_SIZE_UNKNOWN : (uint64_t)s.size;
	struct MHD_Response *resp =
	    MHD_create_response_from_callback(size, STREAM_BLOCK, on_read, sc, on_free);
	if (!resp) {
		on_free(sc);
		return NULL;
	}
	if (s.idle_s > 0)
		MHD_set_connection_option(rq->conn, MHD_CONNECTION_OPTION_TIMEOUT,
		                          (unsigned)s.idle_s);
	return resp;
}
