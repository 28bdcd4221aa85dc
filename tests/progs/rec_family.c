/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/rec_family.c - threads and a forked child, each burning CPU in
 * its own function, for the sampling tests: thread "worker-a" runs
 * spin_thread_a, thread "worker-b" runs spin_thread_b, a forked child
 * (no exec: it runs the parent's code through the mappings it inherited)
 * runs spin_child, and main waits. Each spins for SECONDS of its own CPU
 * time (default 0.4).
 *
 * usage: rec_family [SECONDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double limit = 0.4;
static volatile unsigned long sink;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define SPIN(name)                                                                                 \
	__attribute__((noinline)) void name(void)                                                  \
	{                                                                                          \
		volatile unsigned long x = sink;                                                   \
		while (thread_cpu() < limit)                                                       \
			for (int i = 0; i < 100000; i++)                                           \
				x = x * 6364136223846793005ul + 1442695040888963407ul;             \
		sink = x;                                                                          \
	}

SPIN(spin_thread_a)
SPIN(spin_thread_b)
SPIN(spin_child)

static void *run_a(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker-a");
	spin_thread_a();
	return NULL;
}

static void *run_b(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker-b");
	spin_thread_b();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	pid_t child;

	if (argc > 1)
		limit = atof(argv[1]);
	child = fork();
	if (child == 0) {
		spin_child();
		_exit(0);
	}
	pthread_create(&a, NULL, run_a, NULL);
	pthread_create(&b, NULL, run_b, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	waitpid(child, NULL, 0);
	return 0;
}
