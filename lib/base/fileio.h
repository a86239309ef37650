/*
 * fileio.h - positioned reads and writes that carry on across short
 * transfers and EINTR: the one loop the encrypted logs, the checkpoint
 * store and the trainer's shards use.
 */
#ifndef TY_FILEIO_H
#define TY_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* Write all n bytes at off. RET 0, or -1 with errno (EIO when the file took nothing). */
int fileio_pwrite_all(int fd, const void *buf, size_t n, off_t off);

/*
 * Read up to n bytes at off. RET the bytes read, fewer than n only at the
 * end of the file; or -1 with errno.
 */
ssize_t fileio_pread_all(int fd, void *buf, size_t n, off_t off);

#endif
