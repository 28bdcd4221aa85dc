/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/unw_prog.c - call stacks that frame pointers cannot give,
 * for the --call-graph dwarf tests (built -O2 -fomit-frame-pointer). Each
 * phase spends its time in one leaf function, reached by a known chain:
 *
 *   chain   main -> c1 -> c2 -> c3 -> c4 -> leaf_chain
 *   qsort   main -> run_qsort -> qsort (libc, its own frames) -> cmp_slow
 *   recurse main -> run_rec -> rec x5 -> leaf_rec
 *   signal  main -> victim, interrupted every 2 ms of CPU by SIGPROF:
 *           __restore_rt -> on_prof -> sig_work (most of the time)
 *   lib     main -> unw_lib_outer -> lib_leaf (libunw_lib.so)
 *   nocfi   main -> nocfi_leaf (assembly without CFI: the stack ends there,
 *           marked truncated)
 *
 * Usage: unw_prog SECONDS_PER_PHASE [PHASE...] (all phases by default).
 * Phases last that much CPU time (not wall time), so that a loaded machine
 * still gives each phase its samples.
 * Every function is noinline and does work after its call, so that
 * neither inlining nor tail calls remove a frame.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "unw_lib.h"

#define KEEP() __asm__ volatile("" ::: "memory")

static volatile unsigned long sink;
static volatile sig_atomic_t stop_victim;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- chain --- */
__attribute__((noinline, noclone)) static unsigned long leaf_chain(unsigned long n)
{
	unsigned long x = 1;

	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757ull + 3037000493ull;
	return x;
}

__attribute__((noinline, noclone)) static unsigned long c4(unsigned long n)
{
	unsigned long r = leaf_chain(n);
	KEEP();
	return r ^ 4;
}

__attribute__((noinline, noclone)) static unsigned long c3(unsigned long n)
{
	unsigned long r = c4(n);
	KEEP();
	return r ^ 3;
}

__attribute__((noinline, noclone)) static unsigned long c2(unsigned long n)
{
	unsigned long r = c3(n);
	KEEP();
	return r ^ 2;
}

__attribute__((noinline, noclone)) static unsigned long c1(unsigned long n)
{
	unsigned long r = c2(n);
	KEEP();
	return r ^ 1;
}

/* --- qsort: the comparator is called by libc --- */
__attribute__((noinline, noclone)) static int cmp_slow(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	unsigned long h = 0;

	for (int i = 0; i < 200; i++) /* make the comparator the hot spot */
		h += (x ^ (unsigned long)i) * 0x9e3779b97f4a7c15ull;
	sink += h;
	return x < y ? -1 : x > y;
}

__attribute__((noinline, noclone)) static void run_qsort(unsigned *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (unsigned)(i * 2654435761u);
	qsort(v, n, sizeof(*v), cmp_slow);
	KEEP();
}

/* --- recursion --- */
__attribute__((noinline, noclone)) static unsigned long leaf_rec(unsigned long n)
{
	unsigned long x = 7;

	for (unsigned long i = 0; i < n; i++)
		x = (x << 7) ^ (x >> 3) ^ i;
	return x;
}

__attribute__((noinline, noclone)) static unsigned long rec(int depth, unsigned long n)
{
	unsigned long r = depth ? rec(depth - 1, n) : leaf_rec(n);
	KEEP();
	return r + (unsigned long)depth;
}

__attribute__((noinline, noclone)) static unsigned long run_rec(unsigned long n)
{
	unsigned long r = rec(4, n); /* rec x5: depths 4..0 */
	KEEP();
	return r;
}

/* --- a signal handler interrupting victim --- */
__attribute__((noinline, noclone)) static void sig_work(void)
{
	unsigned long x = 3;

	for (unsigned long i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink += x;
}

__attribute__((noinline, noclone)) static void on_prof(int sig)
{
	(void)sig;
	sig_work();
	KEEP();
}

__attribute__((noinline, noclone)) static void victim(double secs)
{
	double end = now() + secs;
	unsigned long x = 0;

	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i * 3;
	sink += x;
}

/* --- code without CFI: GCC writes none for top-level assembly --- */
__asm__(".text\n"
	".globl nocfi_leaf\n"
	".type nocfi_leaf, @function\n"
	"nocfi_leaf:\n"
	"	mov %rdi, %rcx\n"
	"	xor %eax, %eax\n"
	"1:	add %rcx, %rax\n"
	"	dec %rcx\n"
	"	jnz 1b\n"
	"	ret\n"
	".size nocfi_leaf, .-nocfi_leaf\n");
unsigned long nocfi_leaf(unsigned long n);

static int want(int argc, char **argv, const char *phase)
{
	if (argc <= 2)
		return 1;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], phase))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.3, end;

	if (want(argc, argv, "chain"))
		for (end = now() + secs; now() < end;)
			sink += c1(200000);
	if (want(argc, argv, "qsort")) {
		static unsigned v[4096];

		for (end = now() + secs; now() < end;)
			run_qsort(v, sizeof(v) / sizeof(v[0]));
	}
	if (want(argc, argv, "recurse"))
		for (end = now() + secs; now() < end;)
			sink += run_rec(200000);
	if (want(argc, argv, "signal")) {
		struct sigaction sa;
		struct itimerval it = {{0, 2000}, {0, 2000}};

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_prof;
		sigaction(SIGPROF, &sa, NULL);
		setitimer(ITIMER_PROF, &it, NULL);
		victim(secs);
		memset(&it, 0, sizeof(it));
		setitimer(ITIMER_PROF, &it, NULL);
		signal(SIGPROF, SIG_IGN);
	}
	if (want(argc, argv, "lib"))
		for (end = now() + secs; now() < end;)
			sink += unw_lib_outer(200000);
	if (want(argc, argv, "nocfi"))
		for (end = now() + secs; now() < end;)
			sink += nocfi_leaf(200000);
	printf("%lu\n", (unsigned long)sink);
	return 0;
}
