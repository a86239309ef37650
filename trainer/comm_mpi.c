/*
 * comm_mpi.c - the MPI implementation of comm.h over a duplicate of
 * MPI_COMM_WORLD with MPI_ERRORS_RETURN, so a failed call comes back as
 * a code (MPI_CHECK) instead of aborting every rank.
 */
#include "comm.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(MPI_Request) <= sizeof(((comm_request *)0)->impl),
               "comm_request cannot hold an MPI_Request");

typedef struct mpi_state {
	MPI_Comm world;
} mpi_state;

/* Live MPI comms, and whether comm_mpi_new() initialised MPI (then it finalises). */
static int mpi_live;
static int mpi_we_initialised;

/* Byte transfers larger than an int can count are split into chunks of this size. */
#define MPI_CHUNK ((size_t)1 << 30)

static MPI_Comm mpi_world(comm *c)
{
	return ((mpi_state *)comm_impl(c))->world;
}

/* Map an MPI error to a COMM_ERR_* code; RET the code after recording it. */
static int mpi_fail(comm *c, int mpi_rc, const char *op, const char *call, const char *file,
                    int line)
{
	char text[MPI_MAX_ERROR_STRING] = "";
	int len = 0, cls = MPI_ERR_OTHER, code = COMM_ERR_FAILED;
	MPI_Error_string(mpi_rc, text, &len);
	MPI_Error_class(mpi_rc, &cls);
	switch (cls) {
	case MPI_ERR_ARG:
	case MPI_ERR_COUNT:
	case MPI_ERR_TAG:
	case MPI_ERR_RANK:
	case MPI_ERR_ROOT:
	case MPI_ERR_BUFFER:
	case MPI_ERR_TYPE:
	case MPI_ERR_OP:
		code = COMM_ERR_ARG;
		break;
	case MPI_ERR_NO_MEM:
		code = COMM_ERR_NOMEM;
		break;
	default:
		break;
	}
	return comm_fail(c, code, file, line, "could not %s: %s (%s)", op, text, call);
}

#define MPI_CHECK(c, op, call)                                                                     \
	do {                                                                                       \
		int mpi_rc_ = (call);                                                              \
		if (mpi_rc_ != MPI_SUCCESS)                                                        \
			return mpi_fail((c), mpi_rc_, (op), #call, __FILE__, __LINE__);            \
	} while (0)

static MPI_Request *mpi_req(comm_request *req)
{
	return (MPI_Request *)(void *)&req->impl;
}

static int mpi_allreduce_sum(comm *c, float *buf, size_t n)
{
	MPI_CHECK(c, "all-reduce",
	          MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, mpi_world(c)));
	return 0;
}

static int mpi_reduce_scatter_sum(comm *c, const float *send, float *recv, size_t block)
{
	MPI_CHECK(
	    c, "reduce-scatter",
	    MPI_Reduce_scatter_block(send, recv, (int)block, MPI_FLOAT, MPI_SUM, mpi_world(c)));
	return 0;
}

/* MPI_IN_PLACE when the caller's block already sits at its place in recv. */
static const void *mpi_gather_send(comm *c, const float *send, const float *recv, size_t block)
{
	return send == recv + (size_t)comm_rank(c) * block ? MPI_IN_PLACE : (const void *)send;
}

static int mpi_allgather(comm *c, const float *send, float *recv, size_t block)
{
	MPI_CHECK(c, "all-gather",
	          MPI_Allgather(mpi_gather_send(c, send, recv, block), (int)block, MPI_FLOAT, recv,
	                        (int)block, MPI_FLOAT, mpi_world(c)));
	return 0;
}

static int mpi_bcast(comm *c, void *buf, size_t bytes, int root)
{
	for (size_t off = 0; off < bytes; off += MPI_CHUNK) {
		size_t n = bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK;
		MPI_CHECK(c, "broadcast",
		          MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, mpi_world(c)));
	}
	return 0;
}

static int mpi_send(comm *c, const void *buf, size_t bytes, int peer, int tag)
{
	size_t off = 0;
	do {
		size_t n = bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK;
		MPI_CHECK(
		    c, "send",
		    MPI_Send((const char *)buf + off, (int)n, MPI_BYTE, peer, tag, mpi_world(c)));
		off += n;
	} while (off < bytes);
	return 0;
}

static int mpi_recv(comm *c, void *buf, size_t bytes, int peer, int tag)
{
	size_t off = 0;
	do {
		size_t n = bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK;
		MPI_CHECK(c, "receive",
		          MPI_Recv((char *)buf + off, (int)n, MPI_BYTE, peer, tag, mpi_world(c),
		                   MPI_STATUS_IGNORE));
		off += n;
	} while (off < bytes);
	return 0;
}

static int mpi_barrier(comm *c)
{
	MPI_CHECK(c, "synchronise at a barrier", MPI_Barrier(mpi_world(c)));
	return 0;
}

static int mpi_iallreduce_sum(comm *c, float *buf, size_t n, comm_request *req)
{
	MPI_CHECK(c, "start an all-reduce",
	          MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, mpi_world(c),
	                         mpi_req(req)));
	req->c = c;
	return 0;
}

static int mpi_ireduce_scatter_sum(comm *c, const float *send, float *recv, size_t block,
                                   comm_request *req)
{
	MPI_CHECK(c, "start a reduce-scatter",
	          MPI_Ireduce_scatter_block(send, recv, (int)block, MPI_FLOAT, MPI_SUM,
	                                    mpi_world(c), mpi_req(req)));
	req->c = c;
	return 0;
}

static int mpi_iallgather(comm *c, const float *send, float *recv, size_t block, comm_request *req)
{
	MPI_CHECK(c, "start an all-gather",
	          MPI_Iallgather(mpi_gather_send(c, send, recv, block), (int)block, MPI_FLOAT, recv,
	                         (int)block, MPI_FLOAT, mpi_world(c), mpi_req(req)));
	req->c = c;
	return 0;
}

/* A nonblocking transfer is one MPI request: at most MPI_CHUNK bytes. */
static int mpi_check_bytes(comm *c, size_t bytes, const char *op)
{
	if (bytes > MPI_CHUNK)
		return comm_fail(c, COMM_ERR_ARG, __FILE__, __LINE__,
		                 "could not start a nonblocking %s of %zu bytes (at most %zu)", op,
		                 bytes, MPI_CHUNK);
	return 0;
}

static int mpi_isend(comm *c, const void *buf, size_t bytes, int peer, int tag, comm_request *req)
{
	int rc = mpi_check_bytes(c, bytes, "send");
	if (rc)
		return rc;
	MPI_CHECK(c, "start a send",
	          MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, mpi_world(c), mpi_req(req)));
	req->c = c;
	return 0;
}

static const comm_ops mpi_ops;

static int mpi_split(comm *c, int color, int key, comm **out)
{
	MPI_Comm sub = MPI_COMM_NULL;
	int rank = 0, size = 0;
	MPI_CHECK(c, "split the communicator", MPI_Comm_split(mpi_world(c), color, key, &sub));
	if (MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
	    MPI_Comm_rank(sub, &rank) != MPI_SUCCESS || MPI_Comm_size(sub, &size) != MPI_SUCCESS) {
		MPI_Comm_free(&sub);
		return comm_fail(c, COMM_ERR_FAILED, __FILE__, __LINE__,
		                 "could not set up a split communicator");
	}
	*out = comm_alloc(&mpi_ops, rank, size, sizeof(mpi_state));
	if (!*out) {
		MPI_Comm_free(&sub);
		return comm_fail(c, COMM_ERR_NOMEM, __FILE__, __LINE__,
		                 "could not split the communicator: out of memory");
	}
	((mpi_state *)comm_impl(*out))->world = sub;
	mpi_live++;
	return 0;
}

static int mpi_wait(comm *c, comm_request *req)
{
	req->c = NULL; /* idle whatever the outcome */
	MPI_CHECK(c, "complete a nonblocking operation", MPI_Wait(mpi_req(req), MPI_STATUS_IGNORE));
	return 0;
}

static int mpi_test(comm *c, comm_request *req, int *done)
{
	*done = 0;
	int rc = MPI_Test(mpi_req(req), done, MPI_STATUS_IGNORE);
	if (rc != MPI_SUCCESS) {
		req->c = NULL;
		*done = 1;
		return mpi_fail(c, rc, "test a nonblocking operation", "MPI_Test", __FILE__,
		                __LINE__);
	}
	if (*done)
		req->c = NULL;
	return 0;
}

static void mpi_release(comm *c)
{
	mpi_state *st = comm_impl(c);
	int finalized = 0;
	MPI_Finalized(&finalized);
	if (!finalized && st->world != MPI_COMM_NULL)
		MPI_Comm_free(&st->world);
	if (--mpi_live == 0 && mpi_we_initialised && !finalized) {
		MPI_Finalize();
		mpi_we_initialised = 0;
	}
}

static const comm_ops mpi_ops = {
    .name = "mpi",
    .allreduce_sum = mpi_allreduce_sum,
    .reduce_scatter_sum = mpi_reduce_scatter_sum,
    .allgather = mpi_allgather,
    .bcast = mpi_bcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .barrier = mpi_barrier,
    .iallreduce_sum = mpi_iallreduce_sum,
    .ireduce_scatter_sum = mpi_ireduce_scatter_sum,
    .iallgather = mpi_iallgather,
    .isend = mpi_isend,
    .split = mpi_split,
    .wait = mpi_wait,
    .test = mpi_test,
    .release = mpi_release,
};

/* Before a comm exists, errors go to err. RET -1 when rc is not MPI_SUCCESS. */
static int mpi_init_check(int rc, const char *what, char *err, size_t errlen)
{
	if (rc == MPI_SUCCESS)
		return 0;
	char text[MPI_MAX_ERROR_STRING] = "";
	int len = 0;
	MPI_Error_string(rc, text, &len);
	snprintf(err, errlen, "could not %s: %s", what, text);
	return -1;
}

comm *comm_mpi_new(char *err, size_t errlen)
{
	int initialised = 0, finalized = 0, provided = 0, rank = 0, size = 0;
	MPI_Comm world = MPI_COMM_NULL;
	comm *c = NULL;

	MPI_Finalized(&finalized);
	if (finalized) {
		snprintf(err, errlen, "could not start MPI: it was already finalised");
		return NULL;
	}
	MPI_Initialized(&initialised);
	if (!initialised) {
		if (mpi_init_check(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided),
		                   "initialise MPI", err, errlen))
			return NULL;
		mpi_we_initialised = 1;
	}
	if (mpi_init_check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
	                   "set the MPI error handler", err, errlen) ||
	    mpi_init_check(MPI_Comm_dup(MPI_COMM_WORLD, &world), "duplicate MPI_COMM_WORLD", err,
	                   errlen) ||
	    mpi_init_check(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN),
	                   "set the MPI error handler", err, errlen) ||
	    mpi_init_check(MPI_Comm_rank(world, &rank), "read the MPI rank", err, errlen) ||
	    mpi_init_check(MPI_Comm_size(world, &size), "read the MPI world size", err, errlen))
		goto fail;
	c = comm_alloc(&mpi_ops, rank, size, sizeof(mpi_state));
	if (!c) {
		snprintf(err, errlen, "could not create the communicator: out of memory");
		goto fail;
	}
	((mpi_state *)comm_impl(c))->world = world;
	mpi_live++;
	return c;

fail:
	if (world != MPI_COMM_NULL)
		MPI_Comm_free(&world);
	if (mpi_live == 0 && mpi_we_initialised) {
		MPI_Finalize();
		mpi_we_initialised = 0;
	}
	return NULL;
}
