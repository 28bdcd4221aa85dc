/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_memfd.h - gives fuzz input a file name: the bytes go into
 * a memfd (a regular file in memory), opened by the code under test through
 * /proc/self/fd/N exactly as it would open a trace on disk.
 */
#ifndef HWT_TESTS_FUZZ_MEMFD_H
#define HWT_TESTS_FUZZ_MEMFD_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Returns the fd (close it when done) and the path in path, or -1. */
static inline int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t cap)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < size) {
		ssize_t k = write(fd, data + done, size - done);

		if (k <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)k;
	}
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

#endif
