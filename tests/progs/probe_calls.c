/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* probe_calls CALLS [NAPS NAP_US [WRITES]]: the probe tests' workload, whose
 * every count is known:
 *   - probe_work(i, 7) is called CALLS times, i = 0..CALLS-1, and returns
 *     3 * i + 7 (so sum(arg0) = CALLS*(CALLS-1)/2, max(retval) = 3*CALLS+4);
 *   - probe_nap(NAP_US) is called NAPS times and sleeps NAP_US microseconds;
 *   - write(2) to /dev/null is made exactly WRITES times (nothing else is
 *     written: the program prints nothing).
 * Built with frame pointers so that ustack walks are complete. */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) int probe_work(int x, int y)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + y;
}

__attribute__((noinline)) void probe_nap(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) int probe_outer(int i)
{
	return probe_work(i, 7);
}

int main(int argc, char **argv)
{
	int calls = argc > 1 ? atoi(argv[1]) : 10;
	int naps = argc > 2 ? atoi(argv[2]) : 0;
	long nap_us = argc > 3 ? atol(argv[3]) : 1000;
	int writes = argc > 4 ? atoi(argv[4]) : 0;
	volatile long sum = 0;
	int fd;

	for (int i = 0; i < calls; i++)
		sum += probe_outer(i);
	for (int i = 0; i < naps; i++)
		probe_nap(nap_us);
	if (writes > 0) {
		fd = open("/dev/null", O_WRONLY);
		for (int i = 0; i < writes; i++)
			if (write(fd, "x", 1) != 1)
				return 1;
		close(fd);
	}
	return sum == 0 && calls > 1;
}
