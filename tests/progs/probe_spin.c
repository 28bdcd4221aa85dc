/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* probe_spin MS: burns MS milliseconds of CPU in probe_spin_hot (and nowhere
 * else worth a sample: the CPU clock, a system call, is read once per
 * millisecond or so), for profile probes. */
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) unsigned long probe_spin_hot(double until)
{
	volatile unsigned long x = 0;

	while (cpu_ms() < until)
		for (int i = 0; i < 2000000; i++)
			x += (unsigned long)i * 2654435761u;
	return x;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 100;

	return probe_spin_hot(cpu_ms() + ms) == 1;
}
