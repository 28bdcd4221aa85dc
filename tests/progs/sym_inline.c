/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/sym_inline.c - a program for the symbolizer tests: forced and
 * natural inlining (three levels deep), static functions, a recursive
 * function, a function split into hot and cold parts, and a loop whose lines
 * get discriminators. Built -O2 -g as PIE and non-PIE, stripped with separate
 * debug files, and with compressed debug sections.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sym_lib.h"

volatile int sink;

static inline __attribute__((always_inline)) int leaf_add(int a, int b)
{
	sink = a;
	return a * 3 + b;
}

static inline __attribute__((always_inline)) int middle(int x)
{
	int r = leaf_add(x, 7);
	sink = r;
	return leaf_add(r, x) + 1;
}

static __attribute__((noinline)) int outer_static(int x)
{
	int s = 0;
	for (int i = 0; i < x; i++)
		s += middle(i) ^ (i & 3 ? i : -i);
	return s;
}

static int small_helper(int v)
{
	/* small enough for gcc to inline naturally at -O2 */
	return v * v + 1;
}

__attribute__((noinline)) int recurse(int n)
{
	if (n <= 1)
		return small_helper(n);
	return recurse(n - 1) + small_helper(n);
}

__attribute__((noinline)) int maybe_fail(int x)
{
	if (__builtin_expect(x == 12345, 0)) {
		fprintf(stderr, "unlikely path %d\n", x);
		abort();
	}
	return x + small_helper(x);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	int total = outer_static(n) + recurse(n % 20) + maybe_fail(n) + lib_compute(n);

	printf("%d\n", total);
	return 0;
}
