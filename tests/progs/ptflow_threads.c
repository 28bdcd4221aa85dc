/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptflow_threads.c - per-thread ground truth for the exact PT
 * reports: two threads besides main, one calls t_a() exactly 300 times,
 * the other t_b() exactly 500 times; main calls neither.
 */
#include <pthread.h>

static volatile long sink;

__attribute__((noinline)) void t_a(long k)
{
	sink += k;
}
__attribute__((noinline)) void t_b(long k)
{
	sink ^= k;
}

static void *run_a(void *arg)
{
	for (long k = 0; k < 300; k++)
		t_a(k);
	return arg;
}

static void *run_b(void *arg)
{
	for (long k = 0; k < 500; k++)
		t_b(k);
	return arg;
}

int main(void)
{
	pthread_t a, b;

	if (pthread_create(&a, 0, run_a, 0) || pthread_create(&b, 0, run_b, 0))
		return 1;
	pthread_join(a, 0);
	pthread_join(b, 0);
	return 0;
}
