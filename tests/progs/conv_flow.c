/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/conv_flow.c - control flow the convert tests know exactly, to
 * check that perf's own Intel PT decoder, reading what `hwtrace convert`
 * wrote, sees the run the emulator traced:
 *
 *   - main calls conv_mid() CONV_MID_CALLS times; each conv_mid() call calls
 *     conv_leaf() CONV_LEAF_PER_MID times, and main calls conv_leaf() itself
 *     on every fourth round: conv_leaf() runs CONV_LEAF_CALLS times;
 *   - conv_loop(n), written in assembly so its instructions are known, runs
 *     3n + 2 instructions and takes n branches (n - 1 times its jne, once
 *     its ret); main calls it once with n = CONV_LOOP_N.
 *
 * Trip counts come through volatile variables so the compiler cannot unroll
 * or fold the loops. With an argument R, all of it runs R times (a longer
 * trace; the counts above times R). Exit status 0 when every result is as
 * expected.
 */
#include <stdlib.h>

#define CONV_MID_CALLS	  100
#define CONV_LEAF_PER_MID 3
#define CONV_LEAF_CALLS	  (CONV_MID_CALLS * CONV_LEAF_PER_MID + CONV_MID_CALLS / 4)
#define CONV_LOOP_N	  1000

long conv_loop(long n);
__asm__(".text\n"
	".globl conv_loop\n"
	".type conv_loop, @function\n"
	"conv_loop:\n"
	"	xor %eax, %eax\n"
	"1:	add $1, %rax\n"
	"	cmp %rdi, %rax\n"
	"	jne 1b\n"
	"	ret\n"
	".size conv_loop, .-conv_loop\n");

static volatile int mid_calls = CONV_MID_CALLS;
static volatile int leaf_per_mid = CONV_LEAF_PER_MID;
static volatile long loop_n = CONV_LOOP_N;
static volatile long leaf_count;

__attribute__((noinline, noclone)) long conv_leaf(long x)
{
	leaf_count++;
	return x * 3 + 1;
}

__attribute__((noinline, noclone)) long conv_mid(long x)
{
	long s = 0;

	for (int i = 0; i < leaf_per_mid; i++)
		s += conv_leaf(x + i);
	return s;
}

int main(int argc, char **argv)
{
	long acc = 0, rounds = argc > 1 ? atol(argv[1]) : 1;

	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < mid_calls; i++) {
			acc += conv_mid(i);
			if (i % 4 == 0)
				acc += conv_leaf(i);
		}
		if (conv_loop(loop_n) != CONV_LOOP_N)
			return 1;
	}
	return leaf_count == CONV_LEAF_CALLS * rounds && acc != 0 ? 0 : 2;
}
