/*
 * comm.c - the generic communication front (argument checks, timing,
 * error text) and the world-of-one implementation, which needs no MPI.
 */
#include "comm.h"

#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

#define COMM_MAGIC 0x636f6d6dU /* "comm" */

struct comm {
	uint32_t magic;
	const comm_ops *ops;
	int rank, size;
	double seconds;
	char err[256];
	void *impl;
};

const char *comm_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "success";
	case COMM_ERR_ARG:
		return "invalid communication argument";
	case COMM_ERR_NOMEM:
		return "out of memory";
	case COMM_ERR_FAILED:
		return "communication failed";
	default:
		return "unknown communication error";
	}
}

comm *comm_alloc(const comm_ops *ops, int rank, int size, size_t impl_size)
{
	comm *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (impl_size) {
		c->impl = calloc(1, impl_size);
		if (!c->impl) {
			free(c);
			return NULL;
		}
	}
	c->magic = COMM_MAGIC;
	c->ops = ops;
	c->rank = rank;
	c->size = size;
	return c;
}

void *comm_impl(comm *c)
{
	assert(c && c->magic == COMM_MAGIC);
	return c->impl;
}

int comm_fail(comm *c, int code, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	json_t *fields = json_pack("{s:s, s:i, s:i, s:s, s:s}", "file", file, "line", line, "rank",
	                           c->rank, "comm", c->ops->name, "error", comm_strerror(code));
	log_event(LOG_ERROR, c->err, fields);
	return code;
}

#define COMM_FAIL(c, code, ...) comm_fail((c), (code), __FILE__, __LINE__, __VA_ARGS__)

void comm_free(comm *c)
{
	if (!c)
		return;
	assert(c->magic == COMM_MAGIC);
	c->ops->release(c);
	c->magic = 0;
	free(c->impl);
	free(c);
}

int comm_rank(const comm *c)
{
	assert(c && c->magic == COMM_MAGIC);
	return c->rank;
}

int comm_size(const comm *c)
{
	assert(c && c->magic == COMM_MAGIC);
	return c->size;
}

const char *comm_name(const comm *c)
{
	assert(c && c->magic == COMM_MAGIC);
	return c->ops->name;
}

const char *comm_error(const comm *c)
{
	assert(c && c->magic == COMM_MAGIC);
	return c->err;
}

double comm_seconds(const comm *c)
{
	assert(c && c->magic == COMM_MAGIC);
	return c->seconds;
}

void comm_seconds_reset(comm *c)
{
	assert(c && c->magic == COMM_MAGIC);
	c->seconds = 0;
}

/* The counts of one call must fit MPI's int. */
static int comm_check_count(comm *c, size_t n, size_t per_rank_copies, const char *op)
{
	assert(c && c->magic == COMM_MAGIC);
	if (n > (size_t)INT_MAX || (per_rank_copies > 1 && n > (size_t)INT_MAX / per_rank_copies))
		return COMM_FAIL(c, COMM_ERR_ARG, "could not start %s: %zu elements is too many",
		                 op, n);
	return 0;
}

static int comm_check_peer(comm *c, int peer, const char *what, const char *op)
{
	assert(c && c->magic == COMM_MAGIC);
	if (peer < 0 || peer >= c->size)
		return COMM_FAIL(c, COMM_ERR_ARG,
		                 "could not start %s: %s %d is not in a world of %d", op, what,
		                 peer, c->size);
	return 0;
}

static int comm_check_idle(comm *c, const comm_request *req, const char *op)
{
	if (!req || req->c)
		return COMM_FAIL(c, COMM_ERR_ARG, "could not start %s: the request is %s", op,
		                 req ? "still active" : "missing");
	return 0;
}

/* Add the time since t0 to c's counter; RET rc. */
static int comm_timed(comm *c, double t0, int rc)
{
	c->seconds += clock_mono_s() - t0;
	return rc;
}

int comm_allreduce_sum(comm *c, float *buf, size_t n)
{
	int rc = comm_check_count(c, n, 1, "all-reduce");
	if (rc)
		return rc;
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->allreduce_sum(c, buf, n));
}

int comm_reduce_scatter_sum(comm *c, const float *send, float *recv, size_t block)
{
	int rc = comm_check_count(c, block, (size_t)c->size, "reduce-scatter");
	if (rc)
		return rc;
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->reduce_scatter_sum(c, send, recv, block));
}

int comm_allgather(comm *c, const float *send, float *recv, size_t block)
{
	int rc = comm_check_count(c, block, (size_t)c->size, "all-gather");
	if (rc)
		return rc;
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->allgather(c, send, recv, block));
}

int comm_bcast(comm *c, void *buf, size_t bytes, int root)
{
	int rc = comm_check_peer(c, root, "root", "broadcast");
	if (rc)
		return rc;
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->bcast(c, buf, bytes, root));
}

int comm_send(comm *c, const void *buf, size_t bytes, int peer, int tag)
{
	int rc = comm_check_peer(c, peer, "peer", "send");
	if (rc)
		return rc;
	if (tag < 0)
		return COMM_FAIL(c, COMM_ERR_ARG, "could not start send: tag %d is negative", tag);
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->send(c, buf, bytes, peer, tag));
}

int comm_recv(comm *c, void *buf, size_t bytes, int peer, int tag)
{
	int rc = comm_check_peer(c, peer, "peer", "receive");
	if (rc)
		return rc;
	if (tag < 0)
		return COMM_FAIL(c, COMM_ERR_ARG, "could not start receive: tag %d is negative",
		                 tag);
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->recv(c, buf, bytes, peer, tag));
}

int comm_barrier(comm *c)
{
	assert(c && c->magic == COMM_MAGIC);
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->barrier(c));
}

int comm_iallreduce_sum(comm *c, float *buf, size_t n, comm_request *req)
{
	int rc = comm_check_count(c, n, 1, "all-reduce");
	if (!rc)
		rc = comm_check_idle(c, req, "all-reduce");
	if (rc)
		return rc;
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->iallreduce_sum(c, buf, n, req));
}

int comm_ireduce_scatter_sum(comm *c, const float *send, float *recv, size_t block,
                             comm_request *req)
{
	int rc = comm_check_count(c, block, (size_t)c->size, "reduce-scatter");
	if (!rc)
		rc = comm_check_idle(c, req, "reduce-scatter");
	if (rc)
		return rc;
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->ireduce_scatter_sum(c, send, recv, block, req));
}

int comm_iallgather(comm *c, const float *send, float *recv, size_t block, comm_request *req)
{
	int rc = comm_check_count(c, block, (size_t)c->size, "all-gather");
	if (!rc)
		rc = comm_check_idle(c, req, "all-gather");
	if (rc)
		return rc;
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->iallgather(c, send, recv, block, req));
}

/* Arguments of a point-to-point transfer; RET 0 or the recorded error. */
static int comm_check_p2p(comm *c, int peer, int tag, const comm_request *req, const char *op)
{
	int rc = comm_check_peer(c, peer, "peer", op);
	if (!rc && tag < 0)
		rc = COMM_FAIL(c, COMM_ERR_ARG, "could not start %s: tag %d is negative", op, tag);
	if (!rc && req)
		rc = comm_check_idle(c, req, op);
	return rc;
}

int comm_isend(comm *c, const void *buf, size_t bytes, int peer, int tag, comm_request *req)
{
	int rc = comm_check_p2p(c, peer, tag, req, "send");
	if (rc)
		return rc;
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->isend(c, buf, bytes, peer, tag, req));
}

int comm_split(comm *c, int color, int key, comm **out)
{
	assert(c && c->magic == COMM_MAGIC);
	*out = NULL;
	if (color < 0)
		return COMM_FAIL(c, COMM_ERR_ARG, "could not split: color %d is negative", color);
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->split(c, color, key, out));
}

int comm_wait(comm_request *req)
{
	if (!req || !req->c)
		return 0;
	comm *c = req->c;
	assert(c->magic == COMM_MAGIC);
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->wait(c, req));
}

int comm_test(comm_request *req, int *done)
{
	*done = 1;
	if (!req || !req->c)
		return 0;
	comm *c = req->c;
	assert(c->magic == COMM_MAGIC);
	double t0 = clock_mono_s();
	return comm_timed(c, t0, c->ops->test(c, req, done));
}

/* ---- the world of one ---- */

static int self_allreduce_sum(comm *c, float *buf, size_t n)
{
	(void)c;
	(void)buf;
	(void)n;
	return 0;
}

static int self_copy(comm *c, const float *send, float *recv, size_t block)
{
	(void)c;
	if (send != recv && block)
		memmove(recv, send, block * sizeof(float));
	return 0;
}

static int self_bcast(comm *c, void *buf, size_t bytes, int root)
{
	(void)c;
	(void)buf;
	(void)bytes;
	(void)root;
	return 0;
}

static int self_send(comm *c, const void *buf, size_t bytes, int peer, int tag)
{
	(void)buf;
	(void)bytes;
	(void)peer;
	(void)tag;
	return COMM_FAIL(c, COMM_ERR_ARG, "could not send: a world of one has no peer");
}

static int self_recv(comm *c, void *buf, size_t bytes, int peer, int tag)
{
	(void)buf;
	(void)bytes;
	(void)peer;
	(void)tag;
	return COMM_FAIL(c, COMM_ERR_ARG, "could not receive: a world of one has no peer");
}

static int self_barrier(comm *c)
{
	(void)c;
	return 0;
}

/* Nonblocking operations complete at once; the request never becomes active. */
static int self_iallreduce_sum(comm *c, float *buf, size_t n, comm_request *req)
{
	(void)req;
	return self_allreduce_sum(c, buf, n);
}

static int self_icopy(comm *c, const float *send, float *recv, size_t block, comm_request *req)
{
	(void)req;
	return self_copy(c, send, recv, block);
}

static int self_wait(comm *c, comm_request *req)
{
	(void)c;
	req->c = NULL;
	return 0;
}

static int self_test(comm *c, comm_request *req, int *done)
{
	(void)c;
	req->c = NULL;
	*done = 1;
	return 0;
}

static void self_release(comm *c)
{
	(void)c;
}

static int self_isend(comm *c, const void *buf, size_t bytes, int peer, int tag, comm_request *req)
{
	(void)req;
	return self_send(c, buf, bytes, peer, tag);
}

static int self_split(comm *c, int color, int key, comm **out)
{
	(void)color;
	(void)key;
	char err[128];
	*out = comm_self_new(err, sizeof(err));
	return *out ? 0 : COMM_FAIL(c, COMM_ERR_NOMEM, "could not split: out of memory");
}

static const comm_ops self_ops = {
    .name = "self",
    .allreduce_sum = self_allreduce_sum,
    .reduce_scatter_sum = self_copy,
    .allgather = self_copy,
    .bcast = self_bcast,
    .send = self_send,
    .recv = self_recv,
    .barrier = self_barrier,
    .iallreduce_sum = self_iallreduce_sum,
    .ireduce_scatter_sum = self_icopy,
    .iallgather = self_icopy,
    .isend = self_isend,
    .split = self_split,
    .wait = self_wait,
    .test = self_test,
    .release = self_release,
};

comm *comm_self_new(char *err, size_t errlen)
{
	comm *c = comm_alloc(&self_ops, 0, 1, 0);
	if (!c)
		snprintf(err, errlen, "could not create the communicator: out of memory");
	return c;
}

int comm_mpi_launched(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
	                                   "PMI_SIZE", "MPI_LOCALNRANKS"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (getenv(vars[i]))
			return 1;
	return 0;
}

comm *comm_default_new(char *err, size_t errlen)
{
	return comm_mpi_launched() ? comm_mpi_new(err, errlen) : comm_self_new(err, errlen);
}
