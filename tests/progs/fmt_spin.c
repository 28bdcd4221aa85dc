/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/fmt_spin.c - a program for the format tests to record with
 * perf: it burns CPU in two nested functions for about the time given in
 * milliseconds (argv[1], default 100) and touches fresh pages, so cpu-clock
 * and page-faults samples both occur, in known functions.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long inner(unsigned long x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) static void outer(long ms)
{
	struct timespec t0, t;
	unsigned long x = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		x = inner(x);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	sink = x;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 100;
	char *mem = malloc(64 << 20);

	/* Page faults: touch 256 fresh pages. */
	if (mem)
		for (int i = 0; i < 256; i++)
			mem[(size_t)i * 4096 * 16] = (char)i;
	outer(ms);
	free(mem);
	return 0;
}
