/*
 * comm_staged.h - comm.h for buffers another comm cannot reach, moved
 * through host memory: every operation copies what it sends into a host
 * buffer, runs on an inner comm (MPI) over host buffers, and copies what
 * it received back.
 *
 * This is the communicator of ranks that share one GPU, where NCCL cannot
 * run (it wants a device of its own per rank): the caller's pointers are
 * device pointers and a comm_staging table copies between device and host
 * (gpu/staging_cuda.c). comm_name() says "staged". With a table that copies host memory, the same
 * code runs, and is tested, on a CPU (tests/trainer/mpitest_zero.c).
 *
 * A blocking operation copies in, waits for the inner one and copies out
 * before it returns. A nonblocking one copies in, starts the inner one on
 * a host buffer of its own and copies out in comm_wait (or the comm_test
 * that finds it done): until then the caller's receive buffer is not
 * written. A broadcast copies in on the root only, a receive copies nothing
 * in. Errors of the inner comm come back as its codes, with its message.
 */
#ifndef TY_COMM_STAGED_H
#define TY_COMM_STAGED_H

#include <stddef.h>

#include "comm.h"

/*
 * How the caller's memory and host memory meet. Every entry is required;
 * the table and its ctx outlive every comm made with them.
 */
typedef struct comm_staging {
	const char *name; /* the caller's memory, in messages: "the GPU" */
	void *ctx;
	/* bytes of host memory for the inner comm (pinned, for a GPU); NULL when out of memory */
	void *(*host_alloc)(void *ctx, size_t bytes);
	void (*host_free)(void *ctx, void *p);
	/* copy bytes between the caller's memory and host memory; RET 0, or -1 (a device error) */
	int (*to_host)(void *ctx, void *host, const void *from, size_t bytes);
	int (*to_caller)(void *ctx, void *to, const void *host, size_t bytes);
} comm_staging;

/*
 * A comm of inner's ranks over s, which takes inner over: comm_free()
 * frees it, and comm_split() wraps inner's split the same way.
 * RET: the comm, or NULL with a message (inner is then freed too).
 */
comm *comm_staged_new(comm *inner, const comm_staging *s, char *err, size_t errlen);

#endif
