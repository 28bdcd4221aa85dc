/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* pmc_sleeper N [USEC]: sleeps N times (default 1000 us each); each sleep
 * blocks, so the task is switched out at least N times. */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	long us = argc > 2 ? atol(argv[2]) : 1000;
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	for (int i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	return 0;
}
