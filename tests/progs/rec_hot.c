/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/rec_hot.c - a program with known hot spots for the sampling
 * tests: of its CPU time, 75% is spent in hot_a (called main -> path_a ->
 * hot_a) and 25% in hot_b (main -> path_b -> middle_b -> hot_b). Both run
 * the same loop; hot_a is given three times the work. It runs until it has
 * used SECONDS of CPU time (default 1), so the number of samples does not
 * depend on the machine's speed.
 *
 * usage: rec_hot [SECONDS]
 */
#include <stdlib.h>
#include <time.h>

#define UNIT 20000

static volatile unsigned long sink;

/* After each call, so that no call becomes a tail jump: every function of
 * a path keeps its frame, as the tests expect to see it in call chains. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* The accumulator lives on the stack (volatile): GCC gives a leaf function
 * that needs no stack no frame pointer, even with -fno-omit-frame-pointer
 * -mno-omit-leaf-frame-pointer, and its caller would then be missing from
 * frame-pointer call chains. */
__attribute__((noinline)) void hot_a(unsigned long n)
{
	volatile unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	sink = x;
}

__attribute__((noinline)) void hot_b(unsigned long n)
{
	volatile unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	sink = x;
}

__attribute__((noinline)) void path_a(void)
{
	hot_a(3 * UNIT);
	KEEP_FRAME();
}

__attribute__((noinline)) void middle_b(void)
{
	hot_b(UNIT);
	KEEP_FRAME();
}

__attribute__((noinline)) void path_b(void)
{
	middle_b();
	KEEP_FRAME();
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 1.0;

	while (cpu_seconds() < limit) {
		for (int i = 0; i < 16; i++) {
			path_a();
			path_b();
		}
	}
	return 0;
}
