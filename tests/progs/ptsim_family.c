/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptsim_family.c - threads, a fork and a dlopen with known
 * counts, for recording with the simulated intel_pt PMU: main dlopens
 * argv[1] (libpts_lib.so) and calls its pts_dl_mul() MAIN_MULS times after
 * starting two threads; thread k (1, 2) runs ptemu_loop(LOOP + k) and calls
 * pts_dl_mul() MAIN_MULS + k times; a forked child runs
 * ptemu_loop(CHILD_LOOP) and calls it CHILD_MULS times; main runs
 * ptemu_loop(LOOP) and waits for all. Exit status 0 when every result is
 * as expected.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptemu_common.h"

#define LOOP	   20000
#define CHILD_LOOP 30000
#define MAIN_MULS  10
#define CHILD_MULS 33

static long (*volatile mul)(long);

static long muls(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += mul(i);
	return s;
}

static void *worker(void *arg)
{
	long k = (long)(intptr_t)arg;

	return (void *)(intptr_t)(ptemu_loop(LOOP + k) + muls(MAIN_MULS + k));
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	void *lib;
	long total = 0, want = 0;
	int status;
	pid_t pid;

	if (argc < 2 || !(lib = dlopen(argv[1], RTLD_NOW)))
		return 2;
	mul = (long (*)(long))dlsym(lib, "pts_dl_mul");
	if (!mul)
		return 2;
	for (int k = 1; k <= 2; k++)
		pthread_create(&t[k - 1], NULL, worker, (void *)(intptr_t)k);
	pid = fork();
	if (pid == 0)
		_exit(ptemu_loop(CHILD_LOOP) == CHILD_LOOP && muls(CHILD_MULS) == 7 * 33 * 32 / 2
			  ? 0
			  : 1);
	total += ptemu_loop(LOOP) + muls(MAIN_MULS);
	want += LOOP + 7 * MAIN_MULS * (MAIN_MULS - 1) / 2;
	for (int k = 1; k <= 2; k++) {
		void *r;

		pthread_join(t[k - 1], &r);
		total += (long)(intptr_t)r;
		want += LOOP + k + 7 * (MAIN_MULS + k) * (MAIN_MULS + k - 1) / 2;
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return total == want ? 0 : 1;
}
