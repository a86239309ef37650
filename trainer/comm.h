/*
 * comm.h - the one communication interface of the trainer: every
 * collective and point-to-point transfer goes through a `comm`.
 *
 * A comm is a generic front (comm.c) over an implementation's operation
 * table (comm_ops). Two implementations exist:
 *   comm_self_new()  world size 1, no MPI call at all (a plain process);
 *   comm_mpi_new()   MPI_COMM_WORLD, duplicated, errors returned rather
 *                    than aborting (comm_mpi.c).
 * Another one (NCCL, say) plugs in by filling a comm_ops table and calling
 * comm_alloc(); training code does not change.
 *
 * Conventions for every operation:
 *   - counts are in elements of the named type (float or byte) and may be 0;
 *   - "equal blocks": reduce-scatter and all-gather move `block` floats per
 *     rank; the full buffer is size * block floats, rank r's block starts
 *     at r * block;
 *   - every rank of the world calls a collective with the same counts, in
 *     the same order (nonblocking ones too);
 *   - RET is 0 or a negative COMM_ERR_*; after an error comm_error() says
 *     what failed, and it was logged with the file and line of the call.
 *     COMM_ERR_FAILED means the transport failed (a peer died, a link is
 *     lost): the trainer maps it to its comm_failure exit status.
 *
 * Time: the front adds the wall time spent inside each call (blocking
 * operations, the start of nonblocking ones, comm_wait and comm_test) to a
 * counter, comm_seconds(). Time a nonblocking operation spends in flight
 * while the caller computes is not counted: the counter measures the
 * communication the caller waited for.
 *
 * Threads: one thread calls into a comm at a time (MPI is initialised
 * with MPI_THREAD_FUNNELED).
 */
#ifndef TY_COMM_H
#define TY_COMM_H

#include <stddef.h>
#include <stdint.h>

/* Error codes, distinct from other modules' -1: a caller can tell them apart. */
#define COMM_ERR_ARG    (-201) /* a bad argument (count too large, root out of range) */
#define COMM_ERR_NOMEM  (-202) /* out of memory */
#define COMM_ERR_FAILED (-203) /* the transport failed: a peer or a link is lost */

typedef struct comm comm;

/*
 * A nonblocking operation in flight. Owned by the caller (an array of them
 * allocated once); comm_wait() or a comm_test() that reports done makes it
 * idle again. A zeroed request is idle; waiting on an idle one returns 0.
 */
typedef struct comm_request {
	comm *c; /* NULL while idle */
	union {  /* the implementation's handle */
		void *ptr;
		int64_t word[2];
	} impl;
} comm_request;

/* RET: a static description of a COMM_ERR_* code ("communication failed"). */
const char *comm_strerror(int rc);

/*
 * The world of one: rank 0 of 1, no MPI. Reductions and gathers copy,
 * send/recv fail (there is no peer). RET: the comm (caller frees with
 * comm_free), or NULL when out of memory (err says so).
 */
comm *comm_self_new(char *err, size_t errlen);

/*
 * MPI_COMM_WORLD: initialises MPI (MPI_Init_thread, FUNNELED) unless it
 * already is, duplicates the world communicator and sets MPI_ERRORS_RETURN
 * on it. Works under mpirun and under Slurm's srun --mpi=pmix. The last
 * comm_free() of an MPI comm finalises MPI if comm_mpi_new() initialised it.
 * RET: the comm (caller frees with comm_free), or NULL with a message.
 */
comm *comm_mpi_new(char *err, size_t errlen);

/* RET: nonzero when a launcher (mpirun, srun --mpi=pmix) started this process. */
int comm_mpi_launched(void);

/* comm_mpi_new() when launched by an MPI launcher, else comm_self_new(). */
comm *comm_default_new(char *err, size_t errlen);

/* Free c (NULL is fine). Requests must be idle. */
void comm_free(comm *c);

int comm_rank(const comm *c);
int comm_size(const comm *c);
const char *comm_name(const comm *c); /* "self", "mpi" */
/* RET: the message of the last failed operation ("" when none). */
const char *comm_error(const comm *c);

/* Seconds spent in communication since creation or the last reset. */
double comm_seconds(const comm *c);
void comm_seconds_reset(comm *c);

/* Sum buf[0..n) over all ranks, in place; every rank gets the result. */
int comm_allreduce_sum(comm *c, float *buf, size_t n);
/*
 * recv[0..block) = sum over ranks of send[rank * block .. +block).
 * send holds size * block floats; send and recv must not overlap.
 */
int comm_reduce_scatter_sum(comm *c, const float *send, float *recv, size_t block);
/*
 * recv[r * block .. +block) = rank r's send[0..block), on every rank.
 * In place when send == recv + rank * block; otherwise no overlap.
 */
int comm_allgather(comm *c, const float *send, float *recv, size_t block);
/* Root's buf[0..bytes) to every rank. */
int comm_bcast(comm *c, void *buf, size_t bytes, int root);
/* Blocking point-to-point; tag >= 0. */
int comm_send(comm *c, const void *buf, size_t bytes, int peer, int tag);
int comm_recv(comm *c, void *buf, size_t bytes, int peer, int tag);
int comm_barrier(comm *c);

/*
 * A sub-communicator of c: the ranks that pass the same color (>= 0),
 * ranked by key (ties by rank in c). Collective over c. The new comm has
 * its own time counter; free it with comm_free before c.
 * OUT: *out. RET 0 or an error.
 */
int comm_split(comm *c, int color, int key, comm **out);

/*
 * Nonblocking variants: same arguments and results, plus an idle request
 * that the call makes active. The buffers belong to the operation until
 * comm_wait(req) returns (or comm_test reports done): do not read recv nor
 * write send in between. On error the request stays idle.
 */
int comm_iallreduce_sum(comm *c, float *buf, size_t n, comm_request *req);
int comm_ireduce_scatter_sum(comm *c, const float *send, float *recv, size_t block,
                             comm_request *req);
int comm_iallgather(comm *c, const float *send, float *recv, size_t block, comm_request *req);
int comm_isend(comm *c, const void *buf, size_t bytes, int peer, int tag, comm_request *req);
/* Wait for req to complete; it is idle afterwards (also on error). */
int comm_wait(comm_request *req);
/* OUT: *done 1 when req completed (it is then idle), else 0. Drives progress. */
int comm_test(comm_request *req, int *done);

/*
 * For implementations. An operation table; every entry is required. The
 * front has validated the arguments (counts fit an int, ranks in range)
 * and times the call, so an entry only moves data and reports failures
 * through comm_fail().
 */
typedef struct comm_ops {
	const char *name;
	int (*allreduce_sum)(comm *c, float *buf, size_t n);
	int (*reduce_scatter_sum)(comm *c, const float *send, float *recv, size_t block);
	int (*allgather)(comm *c, const float *send, float *recv, size_t block);
	int (*bcast)(comm *c, void *buf, size_t bytes, int root);
	int (*send)(comm *c, const void *buf, size_t bytes, int peer, int tag);
	int (*recv)(comm *c, void *buf, size_t bytes, int peer, int tag);
	int (*barrier)(comm *c);
	int (*iallreduce_sum)(comm *c, float *buf, size_t n, comm_request *req);
	int (*ireduce_scatter_sum)(comm *c, const float *send, float *recv, size_t block,
	                           comm_request *req);
	int (*iallgather)(comm *c, const float *send, float *recv, size_t block, comm_request *req);
	int (*isend)(comm *c, const void *buf, size_t bytes, int peer, int tag, comm_request *req);
	int (*split)(comm *c, int color, int key, comm **out);
	int (*wait)(comm *c, comm_request *req);
	int (*test)(comm *c, comm_request *req, int *done);
	void (*release)(comm *c); /* free the implementation's state, not c */
} comm_ops;

/*
 * Allocate a comm with impl_size zeroed bytes of implementation state.
 * RET: the comm, or NULL when out of memory.
 */
comm *comm_alloc(const comm_ops *ops, int rank, int size, size_t impl_size);
/* RET: the implementation state of c. */
void *comm_impl(comm *c);
/*
 * Record a failure: format the message into comm_error(), log it with
 * file and line, RET code (so `return comm_fail(...)` reads naturally).
 */
int comm_fail(comm *c, int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
