/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptflow_known.c - a program whose call counts and branch
 * outcomes the exact PT reports (tests/ptflow) know in advance:
 *
 *   work() is called once from main and calls
 *     leaf() exactly 1000 times; leaf's `if` is true for 700 of its 1000
 *       calls (k % 10 < 7), so its conditional branch goes one way 700
 *       times and the other way 300 times;
 *     dispatch() 1000 times, which calls through a function pointer:
 *       op_a 500 times, op_b 300 times, op_c 200 times (table pattern of
 *       ten entries: 5 a, 3 b, 2 c);
 *   rec(9) is called 5 times from main: 10 calls each (depths 1..10), so
 *     rec is called 50 times and nests 10 deep.
 *
 * Everything is noinline and the table volatile so that the compiler keeps
 * each call and branch. Exit status 0 when the results are as expected.
 */
#define LEAF_CALLS 1000

static volatile long sink;

__attribute__((noinline)) long leaf(long k)
{
	if (k % 10 < 7)
		sink += k;
	return sink;
}

__attribute__((noinline)) long op_a(long x)
{
	return x + 1;
}
__attribute__((noinline)) long op_b(long x)
{
	return x * 3;
}
__attribute__((noinline)) long op_c(long x)
{
	return x - 7;
}

static long (*volatile table[10])(long) = {op_a, op_a, op_a, op_a, op_a,
					   op_b, op_b, op_b, op_c, op_c};

__attribute__((noinline)) long dispatch(long k)
{
	return table[k % 10](k);
}

__attribute__((noinline)) long work(void)
{
	long acc = 0;

	for (long k = 0; k < LEAF_CALLS; k++) {
		acc += leaf(k);
		acc += dispatch(k);
	}
	return acc;
}

__attribute__((noinline)) long rec(long n)
{
	if (n <= 0)
		return 1;
	return rec(n - 1) + 1;
}

int main(void)
{
	long r = 0;

	work();
	for (int i = 0; i < 5; i++)
		r += rec(9);
	return r == 50 ? 0 : 1;
}
