/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/rec_load.c - a load for the recorder's stress test and
 * benchmark: THREADS threads (default 2) run for SECONDS of wall time
 * (default 10) through a recursion of varying depth (up to 40 frames), so
 * that samples carry long call chains, and each thread allocates and frees
 * now and then (mmap/munmap traffic for the sideband).
 *
 * With -n ITERATIONS instead of SECONDS, each thread does a fixed amount
 * of work (ITERATIONS descents) instead, for benchmarks that measure how
 * much a recorder slows the program down; the program then prints its own
 * CPU time ("cpu U S", user and system seconds) on stderr.
 *
 * usage: rec_load [SECONDS | -n ITERATIONS] [THREADS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double seconds = 10;
static long iterations; /* > 0: fixed work instead of a duration */
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long leaf(unsigned long x0)
{
	volatile unsigned long x = x0; /* a stack frame, so a frame pointer */

	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) unsigned long descend(int depth, unsigned long x)
{
	if (depth == 0)
		return leaf(x);
	return descend(depth - 1, x + (unsigned long)depth) ^ 1;
}

static void *worker(void *arg)
{
	unsigned long x = (unsigned long)(size_t)arg;
	double end = now() + seconds;
	long n = 0;

	/* The clock is read after every descent: under a heavy sampling load
	 * the program still ends on time. */
	while (iterations ? n < iterations : now() < end) {
		x = descend((int)((x >> 7) % 40), x);
		if (++n % 10000 == 0)
			free(malloc(1u << 20)); /* large: an mmap and a munmap */
	}
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[64];
	struct rusage ru;

	if (argc > 2 && !strcmp(argv[1], "-n")) {
		iterations = atol(argv[2]);
		threads = argc > 3 ? atoi(argv[3]) : 2;
	} else if (argc > 1) {
		seconds = atof(argv[1]);
	}
	if (threads < 1 || threads > 64)
		threads = 2;
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(size_t)(i + 1));
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	if (iterations && getrusage(RUSAGE_SELF, &ru) == 0)
		fprintf(stderr, "cpu %.3f %.3f\n",
			(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
			(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	return 0;
}
