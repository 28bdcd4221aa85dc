/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/ptshape_work.c - the two workloads of the PT decode benchmark table
 * (bench_ptflame.sh), at the extremes of what a PT decoder sees:
 *
 *   calls N   call-heavy: small functions calling small functions, a call
 *             or return every 3-4 instructions, stacks 2-6 deep, some
 *             calls through a function pointer (TIP);
 *   loops N   loop-heavy: nested counted loops over an array, a call only
 *             per outer iteration (long runs of TNT bits).
 *
 * N is in millions of instructions, roughly (-O2 on x86-64): `calls 100`
 * and `loops 100` each run about 10^8.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static NOINLINE uint64_t leaf_add(uint64_t a)
{
	return a + 3;
}

static NOINLINE uint64_t leaf_xor(uint64_t a)
{
	return a ^ 0x55;
}

static NOINLINE uint64_t mid1(uint64_t a)
{
	return leaf_add(a) + leaf_xor(a);
}

static NOINLINE uint64_t mid2(uint64_t a)
{
	return leaf_xor(mid1(a));
}

static uint64_t (*const table[])(uint64_t) = {leaf_add, leaf_xor, mid1, mid2};

static NOINLINE uint64_t deep(uint64_t a, int d)
{
	if (d == 0)
		return table[a & 3](a);
	return deep(a + 1, d - 1) + 1;
}

static void calls(uint64_t rounds)
{
	uint64_t acc = 0;

	/* About 60 instructions per round. */
	for (uint64_t i = 0; i < rounds; i++) {
		acc += mid2(i);
		acc += deep(i, (int)(i & 3));
		acc += table[(i >> 2) & 3](acc);
	}
	sink = acc;
}

/* noclone: the filter shapes of bench_ptflame.sh name it (gcc -O2 would
 * otherwise clone it as row_sum.constprop.0). */
static NOINLINE __attribute__((noclone)) uint64_t row_sum(const uint32_t *row, int n)
{
	uint64_t s = 0;

	for (int j = 0; j < n; j++)
		s += row[j] & 7 ? row[j] : 1;
	return s;
}

static void loops(uint64_t rounds)
{
	static uint32_t m[64][256];
	uint64_t acc = 0;

	for (int i = 0; i < 64; i++)
		for (int j = 0; j < 256; j++)
			m[i][j] = (uint32_t)(i * 31 + j * 7);
	/* About 1,000 instructions per round: one call, a loop of 256. */
	for (uint64_t r = 0; r < rounds; r++)
		acc += row_sum(m[r & 63], 256);
	sink = acc;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 0) : 100;

	if (argc < 2) {
		fprintf(stderr, "usage: ptshape_work calls|loops [MILLIONS]\n");
		return 2;
	}
	if (argv[1][0] == 'c')
		calls(n * 16000);
	else
		loops(n * 1000);
	return 0;
}
