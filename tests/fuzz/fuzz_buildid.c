/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_buildid.c - the build-id reader on any bytes: as a file
 * (ELF header, program and section headers, notes, all read with pread and
 * checked against the file's size) and as a buffer of notes. No crash, no
 * read past the input, a length within the caller's buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t id[64], small[8];
	char path[64];
	int fd, n;

	n = hwt_sym_build_id_notes(data, size, id, sizeof(id));
	if (n > (int)sizeof(id))
		abort();
	n = hwt_sym_build_id_notes(data, size, small, sizeof(small));
	if (n > (int)sizeof(small))
		abort();
	fd = memfd_create("buildid", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = hwt_sym_build_id_read(path, id, sizeof(id));
		if (n > (int)sizeof(id))
			abort();
		n = hwt_sym_build_id_read(path, small, sizeof(small));
		if (n > (int)sizeof(small))
			abort();
	}
	close(fd);
	return 0;
}
