/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* pmc_spin MS [EXIT]: burns MS milliseconds of CPU time in user space, then
 * prints the CPU time main() used (ns, CLOCK_PROCESS_CPUTIME_ID, measured
 * from main's start so the pre-exec time of a launcher is not included)
 * and exits with EXIT (default 0). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long long start = cpu_ns();
	long long until = start + (argc > 1 ? atoll(argv[1]) : 100) * 1000000LL;
	volatile unsigned long x = 0;

	while (cpu_ns() < until)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
	printf("%lld\n", cpu_ns() - start);
	return argc > 2 ? atoi(argv[2]) : 0;
}
