/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptemu_flow.c - control flow the PT emulator tests know
 * exactly: a loop with a known trip count (ptemu_loop), recursion
 * (fib(FIB_N) makes FIB_CALLS calls), calls through function pointers
 * (each handler called a known number of times), calls through the PLT
 * (strlen, abs from libc), a switch compiled to a jump table, setjmp and
 * longjmp, a signal handler entered from raise(), and a fault (SIGSEGV)
 * caught by a handler that siglongjmps out.
 * Exit status 0 when every result is as expected.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "ptemu_common.h"

#define LOOP_N	    1000
#define FIB_N	    15	/* fib(15) = 610 with 1973 calls */
#define FPTR_ROUNDS 100 /* handlers h0, h1, h2 called 100 times each */

__attribute__((noinline)) long fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static long h0(long x)
{
	return x + 1;
}
__attribute__((noinline)) static long h1(long x)
{
	return x * 2;
}
__attribute__((noinline)) static long h2(long x)
{
	return x - 3;
}
static long (*volatile handlers[3])(long) = {h0, h1, h2};

/* Dense switch: a jump table at -O1 and above. */
__attribute__((noinline)) long jtab(int k)
{
	switch (k) {
	case 0:
		return 11;
	case 1:
		return 23;
	case 2:
		return 37;
	case 3:
		return 41;
	case 4:
		return 53;
	case 5:
		return 67;
	case 6:
		return 71;
	case 7:
		return 89;
	default:
		return -1;
	}
}

static jmp_buf jb;
static sigjmp_buf segv_jb;
static volatile int usr1_count;

__attribute__((noinline)) static void jumper(int depth)
{
	if (depth == 0)
		longjmp(jb, 7);
	jumper(depth - 1);
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_jb, 1);
}

int main(int argc, char **argv)
{
	long sum = 0;
	volatile int *null_ptr = NULL;
	int bad = 0;

	(void)argv;
	if (ptemu_loop(LOOP_N) != LOOP_N)
		bad |= 1;
	if (fib(FIB_N) != 610)
		bad |= 2;
	for (int i = 0; i < FPTR_ROUNDS * 3; i++)
		sum += handlers[i % 3](i);
	for (int i = 0; i < 80; i++)
		sum += jtab(i % 8);
	sum += (long)strlen(argv[0]) + abs(argc - 5);
	if (setjmp(jb) == 0) {
		jumper(5);
		bad |= 4;
	}
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	if (usr1_count != 1)
		bad |= 8;
	signal(SIGSEGV, on_segv);
	if (sigsetjmp(segv_jb, 1) == 0) {
		*null_ptr = 1;
		bad |= 16;
	}
	return bad ? bad : (int)(sum & 0);
}
