/*
 * comm_nccl.h - the NCCL implementation of comm.h, for buffers in GPU
 * memory: every float and byte pointer given to its operations is a
 * device pointer of the rank's GPU.
 *
 * Built only where nccl.h is found (Makefile, GPU=1). Each comm has its
 * own CUDA stream: an operation first makes that stream wait for the work
 * already queued on the legacy default stream, where the device ops run,
 * so it reads finished data; a blocking operation then waits for its
 * stream, a nonblocking one records an event that comm_wait and comm_test
 * wait on or query, while the caller queues more compute.
 *
 * Point-to-point messages between two ranks arrive in the order they were
 * sent; NCCL matches no tags, so the tags are only checked (>= 0). The
 * trainer's pipeline sends each peer its messages in the order the peer
 * receives them, which is what this needs. The device to pass is
 * gpu_local_device() (device.h).
 */
#ifndef TY_COMM_NCCL_H
#define TY_COMM_NCCL_H

#include <stddef.h>

#include "comm.h"

/*
 * A world of the same ranks as boot (an MPI comm, used once to hand rank
 * 0's NCCL id to the others), on GPU device. Collective over boot.
 * RET: the comm (comm_free it before boot), or NULL with a message.
 */
comm *comm_nccl_new(comm *boot, int device, char *err, size_t errlen);

#endif
