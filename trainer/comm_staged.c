/*
 * comm_staged.c - comm.h through host memory over an inner comm
 * (comm_staged.h).
 *
 * Blocking operations share one host buffer of the comm's, grown as
 * needed; each nonblocking operation has a buffer of its own for as long
 * as it is in flight, since several may be.
 */
#include "comm_staged.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct staged_state {
	comm *inner;
	const comm_staging *s;
	void *buf; /* the blocking operations' host buffer */
	size_t cap;
} staged_state;

/* A nonblocking operation in flight: request.impl.ptr. */
typedef struct staged_op {
	comm_request inner;
	void *host;      /* its own host buffer */
	void *to;        /* where the result goes, NULL for a send */
	const void *out; /* the host bytes to copy there */
	size_t bytes;
} staged_op;

#define FAIL(c, code, ...) comm_fail((c), (code), __FILE__, __LINE__, __VA_ARGS__)

static staged_state *st(comm *c)
{
	return comm_impl(c);
}

/* The inner comm's failure rc, recorded on c with the inner message. */
static int inner_failed(comm *c, int rc)
{
	return FAIL(c, rc, "%s", comm_error(st(c)->inner));
}

static int copy_failed(comm *c, const char *dir, size_t bytes)
{
	return FAIL(c, COMM_ERR_FAILED, "could not copy %zu bytes %s %s", bytes, dir,
	            st(c)->s->name);
}

/* The comm's host buffer, at least bytes long. RET it, or NULL after recording the failure. */
static void *host_buf(comm *c, size_t bytes)
{
	staged_state *x = st(c);
	if (bytes <= x->cap && x->buf)
		return x->buf;
	void *p = x->s->host_alloc(x->s->ctx, bytes ? bytes : 1);
	if (!p) {
		FAIL(c, COMM_ERR_NOMEM, "could not stage %zu bytes in host memory", bytes);
		return NULL;
	}
	if (x->buf)
		x->s->host_free(x->s->ctx, x->buf);
	x->buf = p;
	x->cap = bytes;
	return p;
}

static int in(comm *c, void *host, const void *from, size_t bytes)
{
	const comm_staging *s = st(c)->s;
	return bytes == 0 || s->to_host(s->ctx, host, from, bytes) == 0
	           ? 0
	           : copy_failed(c, "to the host from", bytes);
}

static int out(comm *c, void *to, const void *host, size_t bytes)
{
	const comm_staging *s = st(c)->s;
	return bytes == 0 || s->to_caller(s->ctx, to, host, bytes) == 0
	           ? 0
	           : copy_failed(c, "from the host to", bytes);
}

static int staged_allreduce_sum(comm *c, float *buf, size_t n)
{
	size_t bytes = n * sizeof(float);
	float *h = host_buf(c, bytes);
	int rc = h ? in(c, h, buf, bytes) : COMM_ERR_NOMEM;
	if (rc == 0 && (rc = comm_allreduce_sum(st(c)->inner, h, n)))
		return inner_failed(c, rc);
	return rc ? rc : out(c, buf, h, bytes);
}

static int staged_reduce_scatter_sum(comm *c, const float *send, float *recv, size_t block)
{
	size_t P = (size_t)comm_size(c), bytes = block * sizeof(float);
	float *h = host_buf(c, (P + 1) * bytes); /* the full send, then the block received */
	int rc = h ? in(c, h, send, P * bytes) : COMM_ERR_NOMEM;
	if (rc == 0 && (rc = comm_reduce_scatter_sum(st(c)->inner, h, h + P * block, block)))
		return inner_failed(c, rc);
	return rc ? rc : out(c, recv, h + P * block, bytes);
}

static int staged_allgather(comm *c, const float *send, float *recv, size_t block)
{
	size_t P = (size_t)comm_size(c), r = (size_t)comm_rank(c), bytes = block * sizeof(float);
	float *h = host_buf(c, P * bytes);
	/* this rank's block in its place, gathered in place whatever the caller's layout */
	int rc = h ? in(c, h + r * block, send, bytes) : COMM_ERR_NOMEM;
	if (rc == 0 && (rc = comm_allgather(st(c)->inner, h + r * block, h, block)))
		return inner_failed(c, rc);
	return rc ? rc : out(c, recv, h, P * bytes);
}

static int staged_bcast(comm *c, void *buf, size_t bytes, int root)
{
	void *h = host_buf(c, bytes);
	int rc = !h ? COMM_ERR_NOMEM : comm_rank(c) == root ? in(c, h, buf, bytes) : 0;
	if (rc == 0 && (rc = comm_bcast(st(c)->inner, h, bytes, root)))
		return inner_failed(c, rc);
	return rc || comm_rank(c) == root ? rc : out(c, buf, h, bytes);
}

static int staged_send(comm *c, const void *buf, size_t bytes, int peer, int tag)
{
	void *h = host_buf(c, bytes);
	int rc = h ? in(c, h, buf, bytes) : COMM_ERR_NOMEM;
	if (rc == 0 && (rc = comm_send(st(c)->inner, h, bytes, peer, tag)))
		return inner_failed(c, rc);
	return rc;
}

static int staged_recv(comm *c, void *buf, size_t bytes, int peer, int tag)
{
	void *h = host_buf(c, bytes);
	int rc = h ? 0 : COMM_ERR_NOMEM;
	if (rc == 0 && (rc = comm_recv(st(c)->inner, h, bytes, peer, tag)))
		return inner_failed(c, rc);
	return rc ? rc : out(c, buf, h, bytes);
}

static int staged_barrier(comm *c)
{
	int rc = comm_barrier(st(c)->inner);
	return rc ? inner_failed(c, rc) : 0;
}

/* ---- nonblocking: a host buffer each, copied out when done ----------------------------- */

/*
 * A new operation with a host buffer of bytes, whose in_bytes from `from`
 * are copied in at byte offset at. OUT *out. RET 0, or the failure (recorded).
 */
static int op_new(comm *c, size_t bytes, size_t at, const void *from, size_t in_bytes,
                  staged_op **out)
{
	const comm_staging *s = st(c)->s;
	staged_op *op = calloc(1, sizeof(*op));
	*out = NULL;
	if (op)
		op->host = s->host_alloc(s->ctx, bytes ? bytes : 1);
	if (!op || !op->host) {
		free(op);
		return FAIL(c, COMM_ERR_NOMEM, "could not stage %zu bytes in host memory", bytes);
	}
	int rc = in(c, (char *)op->host + at, from, in_bytes);
	if (rc) {
		s->host_free(s->ctx, op->host);
		free(op);
		return rc;
	}
	*out = op;
	return 0;
}

static void op_free(comm *c, staged_op *op)
{
	const comm_staging *s = st(c)->s;
	s->host_free(s->ctx, op->host);
	free(op);
}

/*
 * Start op (its inner request begun with rc) on req, its result the bytes
 * at out copied to `to` when done (to NULL: none); or free it. RET 0 or the failure.
 */
static int op_started(comm *c, staged_op *op, int rc, void *to, const void *out, size_t bytes,
                      comm_request *req)
{
	if (rc) {
		op_free(c, op);
		return inner_failed(c, rc);
	}
	op->to = to;
	op->out = out;
	op->bytes = bytes;
	req->impl.ptr = op;
	req->c = c;
	return 0;
}

static int staged_iallreduce_sum(comm *c, float *buf, size_t n, comm_request *req)
{
	size_t bytes = n * sizeof(float);
	staged_op *op;
	int rc = op_new(c, bytes, 0, buf, bytes, &op);
	if (rc)
		return rc;
	rc = comm_iallreduce_sum(st(c)->inner, op->host, n, &op->inner);
	return op_started(c, op, rc, buf, op->host, bytes, req);
}

static int staged_ireduce_scatter_sum(comm *c, const float *send, float *recv, size_t block,
                                      comm_request *req)
{
	size_t P = (size_t)comm_size(c), bytes = block * sizeof(float);
	staged_op *op; /* the full send, then the block received */
	int rc = op_new(c, (P + 1) * bytes, 0, send, P * bytes, &op);
	if (rc)
		return rc;
	float *h = op->host;
	rc = comm_ireduce_scatter_sum(st(c)->inner, h, h + P * block, block, &op->inner);
	return op_started(c, op, rc, recv, h + P * block, bytes, req);
}

static int staged_iallgather(comm *c, const float *send, float *recv, size_t block,
                             comm_request *req)
{
	size_t P = (size_t)comm_size(c), r = (size_t)comm_rank(c), bytes = block * sizeof(float);
	staged_op *op; /* this rank's block in its place, gathered in place */
	int rc = op_new(c, P * bytes, r * bytes, send, bytes, &op);
	if (rc)
		return rc;
	float *h = op->host;
	rc = comm_iallgather(st(c)->inner, h + r * block, h, block, &op->inner);
	return op_started(c, op, rc, recv, h, P * bytes, req);
}

static int staged_isend(comm *c, const void *buf, size_t bytes, int peer, int tag,
                        comm_request *req)
{
	staged_op *op;
	int rc = op_new(c, bytes, 0, buf, bytes, &op);
	if (rc)
		return rc;
	rc = comm_isend(st(c)->inner, op->host, bytes, peer, tag, &op->inner);
	return op_started(c, op, rc, NULL, NULL, 0, req);
}

/* op's inner request is done (with rc): copy its result out, free it, idle req. */
static int op_finish(comm *c, comm_request *req, int rc)
{
	staged_op *op = req->impl.ptr;
	req->c = NULL;
	req->impl.ptr = NULL;
	if (rc)
		rc = inner_failed(c, rc);
	else if (op->to)
		rc = out(c, op->to, op->out, op->bytes);
	op_free(c, op);
	return rc;
}

static int staged_wait(comm *c, comm_request *req)
{
	staged_op *op = req->impl.ptr;
	return op_finish(c, req, comm_wait(&op->inner));
}

static int staged_test(comm *c, comm_request *req, int *done)
{
	staged_op *op = req->impl.ptr;
	*done = 0;
	int rc = comm_test(&op->inner, done);
	if (rc || *done) {
		*done = 1;
		return op_finish(c, req, rc);
	}
	return 0;
}

static int staged_split(comm *c, int color, int key, comm **out_comm)
{
	comm *sub = NULL;
	int rc = comm_split(st(c)->inner, color, key, &sub);
	if (rc)
		return inner_failed(c, rc);
	char err[256];
	*out_comm = comm_staged_new(sub, st(c)->s, err, sizeof(err));
	return *out_comm ? 0 : FAIL(c, COMM_ERR_NOMEM, "could not split: %s", err);
}

static void staged_release(comm *c)
{
	staged_state *x = st(c);
	if (x->buf)
		x->s->host_free(x->s->ctx, x->buf);
	comm_free(x->inner);
}

static const comm_ops staged_ops = {
    .name = "staged",
    .allreduce_sum = staged_allreduce_sum,
    .reduce_scatter_sum = staged_reduce_scatter_sum,
    .allgather = staged_allgather,
    .bcast = staged_bcast,
    .send = staged_send,
    .recv = staged_recv,
    .barrier = staged_barrier,
    .iallreduce_sum = staged_iallreduce_sum,
    .ireduce_scatter_sum = staged_ireduce_scatter_sum,
    .iallgather = staged_iallgather,
    .isend = staged_isend,
    .split = staged_split,
    .wait = staged_wait,
    .test = staged_test,
    .release = staged_release,
};

comm *comm_staged_new(comm *inner, const comm_staging *s, char *err, size_t errlen)
{
	if (!inner || !s || !s->host_alloc || !s->host_free || !s->to_host || !s->to_caller) {
		err_printf(err, errlen,
		           "a staged comm needs an inner comm and a whole staging table");
		comm_free(inner);
		return NULL;
	}
	comm *c = comm_alloc(&staged_ops, comm_rank(inner), comm_size(inner), sizeof(staged_state));
	if (!c) {
		err_printf(err, errlen, "out of memory for a staged comm");
		comm_free(inner);
		return NULL;
	}
	staged_state *x = comm_impl(c);
	x->inner = inner;
	x->s = s;
	return c;
}
