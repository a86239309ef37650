/*
 * comm_nccl.c - comm.h over NCCL (comm_nccl.h).
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_nccl.h"

typedef struct nccl_state {
	ncclComm_t nc;
	cudaStream_t stream;
	cudaEvent_t ready; /* recorded on the default stream before each operation */
	float *one;        /* a device float for the barrier */
	int device;
} nccl_state;

_Static_assert(sizeof(cudaEvent_t) <= sizeof(((comm_request *)0)->impl),
               "a CUDA event must fit a comm_request");

static nccl_state *st(comm *c)
{
	return (nccl_state *)comm_impl(c);
}

#define NCCL_FAIL(c, what, r)                                                                      \
	comm_fail((c), COMM_ERR_FAILED, __FILE__, __LINE__, "%s: %s", (what), ncclGetErrorString(r))
#define CUDA_FAIL(c, what, e)                                                                      \
	comm_fail((c), COMM_ERR_FAILED, __FILE__, __LINE__, "%s: %s", (what), cudaGetErrorString(e))

/* Make the comm's stream wait for the compute queued so far. */
static int order_after_compute(comm *c)
{
	nccl_state *s = st(c);
	cudaError_t e = cudaEventRecord(s->ready, 0);
	if (e == cudaSuccess)
		e = cudaStreamWaitEvent(s->stream, s->ready, 0);
	return e == cudaSuccess ? 0 : CUDA_FAIL(c, "could not order the transfer", e);
}

/* Wait for the stream; a failure of a peer shows as the communicator's error. */
static int finish(comm *c, const char *what)
{
	nccl_state *s = st(c);
	cudaError_t e = cudaStreamSynchronize(s->stream);
	if (e != cudaSuccess)
		return CUDA_FAIL(c, what, e);
	ncclResult_t async = ncclSuccess;
	if (ncclCommGetAsyncError(s->nc, &async) != ncclSuccess || async != ncclSuccess)
		return NCCL_FAIL(c, what, async);
	return 0;
}

/* Record the end of the operation just queued into req. */
static int to_request(comm *c, comm_request *req)
{
	cudaEvent_t ev;
	cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
	if (e == cudaSuccess)
		e = cudaEventRecord(ev, st(c)->stream);
	if (e != cudaSuccess)
		return CUDA_FAIL(c, "could not track the transfer", e);
	memcpy(&req->impl, &ev, sizeof ev);
	return 0;
}

/* Queue one operation (r is NCCL's answer); blocking when req is NULL. */
static int queued(comm *c, ncclResult_t r, const char *what, comm_request *req)
{
	if (r != ncclSuccess)
		return NCCL_FAIL(c, what, r);
	return req ? to_request(c, req) : finish(c, what);
}

static int nc_allreduce(comm *c, float *buf, size_t n, comm_request *req)
{
	if (order_after_compute(c) < 0)
		return COMM_ERR_FAILED;
	return queued(c, ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, st(c)->nc, st(c)->stream),
	              "all-reduce", req);
}

static int nc_reduce_scatter(comm *c, const float *send, float *recv, size_t block,
                             comm_request *req)
{
	if (order_after_compute(c) < 0)
		return COMM_ERR_FAILED;
	return queued(
	    c, ncclReduceScatter(send, recv, block, ncclFloat, ncclSum, st(c)->nc, st(c)->stream),
	    "reduce-scatter", req);
}

/* In place when send == recv + rank * block: NCCL's own rule for in-place all-gather. */
static int nc_allgather(comm *c, const float *send, float *recv, size_t block, comm_request *req)
{
	if (order_after_compute(c) < 0)
		return COMM_ERR_FAILED;
	return queued(c, ncclAllGather(send, recv, block, ncclFloat, st(c)->nc, st(c)->stream),
	              "all-gather", req);
}

static int nc_send(comm *c, const void *buf, size_t bytes, int peer, comm_request *req)
{
	if (order_after_compute(c) < 0)
		return COMM_ERR_FAILED;
	return queued(c, ncclSend(buf, bytes, ncclChar, peer, st(c)->nc, st(c)->stream), "send",
	              req);
}

static int nc_recv(comm *c, void *buf, size_t bytes, int peer, comm_request *req)
{
	if (order_after_compute(c) < 0)
		return COMM_ERR_FAILED;
	return queued(c, ncclRecv(buf, bytes, ncclChar, peer, st(c)->nc, st(c)->stream), "recv",
	              req);
}

static int op_allreduce_sum(comm *c, float *buf, size_t n)
{
	return nc_allreduce(c, buf, n, NULL);
}

static int op_reduce_scatter_sum(comm *c, const float *send, float *recv, size_t block)
{
	return nc_reduce_scatter(c, send, recv, block, NULL);
}

static int op_allgather(comm *c, const float *send, float *recv, size_t block)
{
	return nc_allgather(c, send, recv, block, NULL);
}

static int op_bcast(comm *c, void *buf, size_t bytes, int root)
{
	if (order_after_compute(c) < 0)
		return COMM_ERR_FAILED;
	return queued(c, ncclBroadcast(buf, buf, bytes, ncclChar, root, st(c)->nc, st(c)->stream),
	              "broadcast", NULL);
}

static int op_send(comm *c, const void *buf, size_t bytes, int peer, int tag)
{
	(void)tag;
	return nc_send(c, buf, bytes, peer, NULL);
}

static int op_recv(comm *c, void *buf, size_t bytes, int peer, int tag)
{
	(void)tag;
	return nc_recv(c, buf, bytes, peer, NULL);
}

static int op_barrier(comm *c)
{
	return nc_allreduce(c, st(c)->one, 1, NULL);
}

static int op_iallreduce_sum(comm *c, float *buf, size_t n, comm_request *req)
{
	return nc_allreduce(c, buf, n, req);
}

static int op_ireduce_scatter_sum(comm *c, const float *send, float *recv, size_t block,
                                  comm_request *req)
{
	return nc_reduce_scatter(c, send, recv, block, req);
}

static int op_iallgather(comm *c, const float *send, float *recv, size_t block, comm_request *req)
{
	return nc_allgather(c, send, recv, block, req);
}

static int op_isend(comm *c, const void *buf, size_t bytes, int peer, int tag, comm_request *req)
{
	(void)tag;
	return nc_send(c, buf, bytes, peer, req);
}

static cudaEvent_t req_event(const comm_request *req)
{
	cudaEvent_t ev;
	memcpy(&ev, &req->impl, sizeof ev);
	return ev;
}

static int op_wait(comm *c, comm_request *req)
{
	cudaEvent_t ev = req_event(req);
	cudaError_t e = cudaEventSynchronize(ev);
	cudaEventDestroy(ev);
	if (e != cudaSuccess)
		return CUDA_FAIL(c, "a transfer failed", e);
	ncclResult_t async = ncclSuccess;
	if (ncclCommGetAsyncError(st(c)->nc, &async) != ncclSuccess || async != ncclSuccess)
		return NCCL_FAIL(c, "a transfer failed", async);
	return 0;
}

static int op_test(comm *c, comm_request *req, int *done)
{
	cudaError_t e = cudaEventQuery(req_event(req));
	if (e == cudaErrorNotReady) {
		*done = 0;
		return 0;
	}
	*done = 1;
	return op_wait(c, req);
}

static void op_release(comm *c)
{
	nccl_state *s = st(c);
	if (s->nc)
		ncclCommDestroy(s->nc);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	if (s->ready)
		cudaEventDestroy(s->ready);
	cudaFree(s->one);
}

static int op_split(comm *c, int color, int key, comm **out);

static const comm_ops nccl_ops = {
    .name = "nccl",
    .allreduce_sum = op_allreduce_sum,
    .reduce_scatter_sum = op_reduce_scatter_sum,
    .allgather = op_allgather,
    .bcast = op_bcast,
    .send = op_send,
    .recv = op_recv,
    .barrier = op_barrier,
    .iallreduce_sum = op_iallreduce_sum,
    .ireduce_scatter_sum = op_ireduce_scatter_sum,
    .iallgather = op_iallgather,
    .isend = op_isend,
    .split = op_split,
    .wait = op_wait,
    .test = op_test,
    .release = op_release,
};

/*
 * A comm around the NCCL communicator nc (owned from here on), with its
 * stream, event and barrier float. RET the comm, or NULL with a message.
 */
static comm *wrap(ncclComm_t nc, int device, char *err, size_t errlen)
{
	int rank = 0, size = 0;
	ncclCommUserRank(nc, &rank);
	ncclCommCount(nc, &size);
	comm *c = comm_alloc(&nccl_ops, rank, size, sizeof(nccl_state));
	if (!c) {
		ncclCommDestroy(nc);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	nccl_state *s = st(c);
	s->nc = nc;
	s->device = device;
	cudaError_t e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
	if (e == cudaSuccess)
		e = cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&s->one, sizeof(float));
	if (e != cudaSuccess) {
		snprintf(err, errlen, "could not set up the NCCL communicator: %s",
		         cudaGetErrorString(e));
		comm_free(c);
		return NULL;
	}
	return c;
}

static int op_split(comm *c, int color, int key, comm **out)
{
	ncclComm_t nc = NULL;
	ncclResult_t r = ncclCommSplit(st(c)->nc, color, key, &nc, NULL);
	if (r != ncclSuccess)
		return NCCL_FAIL(c, "could not split the communicator", r);
	char err[256];
	*out = wrap(nc, st(c)->device, err, sizeof err);
	if (!*out)
		return comm_fail(c, COMM_ERR_NOMEM, __FILE__, __LINE__, "%s", err);
	return 0;
}

comm *comm_nccl_new(comm *boot, int device, char *err, size_t errlen)
{
	cudaError_t e = cudaSetDevice(device);
	if (e != cudaSuccess) {
		snprintf(err, errlen, "could not use CUDA device %d: %s", device,
		         cudaGetErrorString(e));
		return NULL;
	}
	ncclUniqueId id;
	memset(&id, 0, sizeof id);
	if (comm_rank(boot) == 0) {
		ncclResult_t r = ncclGetUniqueId(&id);
		if (r != ncclSuccess)
			/* the others still wait for the id: an all-zero one fails their init */
			snprintf(err, errlen, "could not make an NCCL id: %s",
			         ncclGetErrorString(r));
	}
	if (comm_bcast(boot, &id, sizeof id, 0) < 0) {
		snprintf(err, errlen, "could not hand out the NCCL id: %s", comm_error(boot));
		return NULL;
	}
	ncclComm_t nc = NULL;
	ncclResult_t r = ncclCommInitRank(&nc, comm_size(boot), id, comm_rank(boot));
	if (r != ncclSuccess) {
		snprintf(err, errlen, "could not start NCCL on device %d: %s", device,
		         ncclGetErrorString(r));
		return NULL;
	}
	return wrap(nc, device, err, errlen);
}
