/*
 * fileio.c - see fileio.h.
 */
#include "fileio.h"

#include <errno.h>
#include <unistd.h>

int fileio_pwrite_all(int fd, const void *buf, size_t n, off_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k =
		    pwrite(fd, (const unsigned char *)buf + done, n - done, off + (off_t)done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -1;
		}
		done += (size_t)k;
	}
	return 0;
}

ssize_t fileio_pread_all(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(fd, (unsigned char *)buf + got, n - got, off + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}
