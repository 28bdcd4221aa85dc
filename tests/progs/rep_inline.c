/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/rep_inline.c - a hot loop in an inlined function, for the
 * report tests of inline expansion: all the CPU time is spent in mix(),
 * which is always inlined into outer() (called main -> outer). Without
 * inline expansion a profile names outer; with it, mix (inlined) under
 * outer. Runs until it has used SECONDS of CPU time (default 0.3).
 *
 * usage: rep_inline [SECONDS]
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	return x;
}

__attribute__((noinline)) void outer(void)
{
	volatile unsigned long x = sink; /* a frame, so a frame pointer */

	x = mix(x, 200000);
	sink = x;
	__asm__ volatile("" ::: "memory");
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 0.3;

	while (cpu_seconds() < limit) {
		for (int i = 0; i < 16; i++)
			outer();
	}
	return 0;
}
