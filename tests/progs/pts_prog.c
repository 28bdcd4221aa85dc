/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/pts_prog.c - control flow the PT session tests know exactly:
 * leaf() is called LEAF_CALLS times; spin() SPIN_CALLS times, each running a
 * hand-written loop of SPIN_N iterations (its jnz is taken SPIN_N - 1 times,
 * then ret: SPIN_N taken branches per call, whatever the compiler does);
 * pts_lib_add() of libpts_lib.so is called LIB_CALLS times through the PLT;
 * pts_dl_mul() of the same library, dlopen'd from argv[1], DL_CALLS times
 * through a function pointer; then a forked child calls child_work()
 * CHILD_CALLS times and before_exec() once and execs /bin/true (the
 * emulator traces up to the execve).
 * Exit status 0 when every result is as expected.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEAF_CALLS  250
#define SPIN_CALLS  3
#define SPIN_N	    100
#define LIB_CALLS   40
#define DL_CALLS    30
#define CHILD_CALLS 17

long pts_lib_add(long a, long b);

__attribute__((noinline)) long leaf(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) void spin(long n)
{
	__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n));
}

__attribute__((noinline)) long child_work(long x)
{
	return x ^ 5;
}

__attribute__((noinline)) void before_exec(void)
{
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	long (*volatile mul)(long);
	long s = 0, want = 0;
	void *h;
	pid_t child;
	int status;

	for (long i = 0; i < LEAF_CALLS; i++) {
		s += leaf(i);
		want += i * 3 + 1;
	}
	for (int i = 0; i < SPIN_CALLS; i++)
		spin(SPIN_N);
	for (long i = 0; i < LIB_CALLS; i++) {
		s += pts_lib_add(i, 2);
		want += i + 2;
	}
	if (argc < 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h)
		return 3;
	mul = (long (*)(long))dlsym(h, "pts_dl_mul");
	if (!mul)
		return 4;
	for (long i = 0; i < DL_CALLS; i++) {
		s += mul(i);
		want += i * 7;
	}
	child = fork();
	if (child == 0) {
		long c = 0;

		for (long i = 0; i < CHILD_CALLS; i++)
			c += child_work(i);
		before_exec();
		execl("/bin/true", "true", (char *)NULL);
		_exit(c == 0 ? 9 : 8);
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return 5;
	return s == want ? 0 : 1;
}
