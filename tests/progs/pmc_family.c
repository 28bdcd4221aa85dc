/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* pmc_family THREADS CHILDREN PAGES: starts THREADS threads and CHILDREN
 * forked processes; each touches PAGES fresh pages. Counting with inherit
 * must see all of them: at least (THREADS + CHILDREN) * PAGES faults.
 * With "hold MS" as 4th and 5th arguments every thread and child first
 * sleeps MS milliseconds, so that an attach test can find them all; with
 * "go FILE" each waits until FILE exists (the test creates it once it has
 * attached). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long pages;
static long hold_ms;
static const char *go_file;

static void touch(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *p;

	if (hold_ms) {
		struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	while (go_file && access(go_file, F_OK)) {
		struct timespec ts = {0, 1000000};

		nanosleep(&ts, NULL);
	}
	p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	madvise((void *)p, (size_t)(pages * psz), MADV_NOHUGEPAGE);
	for (long i = 0; i < pages; i++)
		p[i * psz] = 1;
}

static void *thread_main(void *arg)
{
	(void)arg;
	touch();
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	int children = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t tid[64];

	pages = argc > 3 ? atol(argv[3]) : 100;
	if (argc > 5 && !strcmp(argv[4], "hold"))
		hold_ms = atol(argv[5]);
	if (argc > 5 && !strcmp(argv[4], "go"))
		go_file = argv[5];
	if (threads > 64)
		threads = 64;
	for (int i = 0; i < children; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			touch();
			_exit(0);
		}
	}
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, thread_main, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	while (wait(NULL) > 0)
		;
	return 0;
}
