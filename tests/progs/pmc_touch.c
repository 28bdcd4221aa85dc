/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* pmc_touch PAGES: maps PAGES fresh anonymous pages and writes one byte to
 * each, so the kernel takes at least PAGES page faults (THP is disabled for
 * the mapping so that one fault cannot fill many pages). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long pages = argc > 1 ? atol(argv[1]) : 1000;
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *p;

	p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return 1;
	madvise((void *)p, (size_t)(pages * psz), MADV_NOHUGEPAGE);
	for (long i = 0; i < pages; i++)
		p[i * psz] = 1;
	return 0;
}
