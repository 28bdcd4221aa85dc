/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* probe_hop THREADS HOPS [STR]: THREADS threads (0: the main thread
 * alone) each call probe_hop_call(i) HOPS times; inside it the thread moves itself to another CPU
 * (sched_setaffinity), so every entry and its return run on different
 * CPUs (with two or more online CPUs). probe_hop_name(STR) is called once
 * per thread with a string argument (default "hop-string"), for str().
 * Thread-local variables set at entry must be seen at the return on the
 * other CPU: the tests know every count. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

static int ncpu;
static int hops;
static const char *name = "hop-string";

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

__attribute__((noinline)) int probe_hop_call(int i)
{
	/* entered on CPU i % ncpu; return on the next one */
	pin((i + 1) % ncpu);
	return i;
}

__attribute__((noinline)) size_t probe_hop_name(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

static void *run(void *arg)
{
	volatile long sum = 0;

	(void)arg;
	sum += (long)probe_hop_name(name);
	for (int i = 0; i < hops; i++) {
		pin(i % ncpu);
		sum += probe_hop_call(i);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t t[64];

	hops = argc > 2 ? atoi(argv[2]) : 10;
	if (argc > 3)
		name = argv[3];
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	if (threads > 64)
		threads = 64;
	if (!threads)
		run(NULL);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, run, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
