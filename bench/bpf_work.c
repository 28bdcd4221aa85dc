/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* bench/bpf_work.c - the workload of bench_bpf.sh, whose every count is
 * known:
 *   bpf_work getppid N   N getppid(2) system calls (a tracepoint per call)
 *   bpf_work calls N     N calls of bpf_work_call(i, i % 4), which returns
 *                        i & 255 after a little work (uprobes, uretprobes)
 * Built with frame pointers, the call not inlined. */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) long bpf_work_call(long i, long k)
{
	volatile long x = i;

	for (int j = 0; j < 8; j++)
		x += j * k;
	return i & 255;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;
	volatile long sum = 0;

	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "getppid")) {
		for (long i = 0; i < n; i++)
			sum += syscall(SYS_getppid);
	} else if (!strcmp(argv[1], "calls")) {
		for (long i = 0; i < n; i++)
			sum += bpf_work_call(i, i % 4);
	} else {
		return 2;
	}
	return sum < 0;
}
