/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptemu_end.c - ends badly on request, after ptemu_loop(400):
 *   crash   writes through a NULL pointer at ptemu_crash_site (SIGSEGV);
 *   exec    execs /bin/true;
 *   kill    a second thread SIGKILLs the process while the main thread
 *           spins in ptemu_loop(1e12);
 *   long N  runs ptemu_loop(N) and exits 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptemu_common.h"

static void *killer(void *arg)
{
	struct timespec ts = {0, 200 * 1000 * 1000};

	(void)arg;
	nanosleep(&ts, NULL);
	kill(getpid(), SIGKILL);
	return NULL;
}

__attribute__((noinline)) static void crash(volatile int *p)
{
	__asm__ volatile(".globl ptemu_crash_site\nptemu_crash_site:\n"
			 "movl $1, (%0)\n"
			 :
			 : "r"(p)
			 : "memory");
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 2)
		return 2;
	ptemu_loop(400);
	if (!strcmp(argv[1], "crash")) {
		crash(NULL);
	} else if (!strcmp(argv[1], "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		return 3;
	} else if (!strcmp(argv[1], "kill")) {
		pthread_create(&t, NULL, killer, NULL);
		ptemu_loop(1000000000000l);
	} else if (!strcmp(argv[1], "long") && argc > 2) {
		return ptemu_loop(atol(argv[2])) == atol(argv[2]) ? 0 : 1;
	}
	return 4;
}
