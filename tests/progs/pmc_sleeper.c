/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* pmc_sleeper N [USEC]: sleeps N times (default 1000 us each); each sleep
 * blocks, so the task is switched out at least N times. Prints the
 * voluntary and involuntary context switches of its main (getrusage: the
 * scheduler's own counts) to stdout, "VOLUNTARY INVOLUNTARY". */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	long us = argc > 2 ? atol(argv[2]) : 1000;
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	struct rusage r0, r1;

	getrusage(RUSAGE_SELF, &r0);
	for (int i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	getrusage(RUSAGE_SELF, &r1);
	printf("%ld %ld\n", r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw);
	return 0;
}
