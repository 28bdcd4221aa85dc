/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/sym_lib.c - a shared library for the symbolizer tests: an
 * exported function with an inlined static helper, and a local one.
 */
#include "sym_lib.h"

static inline __attribute__((always_inline)) int lib_scale(int v)
{
	return v * 5 - 2;
}

static __attribute__((noinline)) int lib_local(int v)
{
	int s = 0;
	for (int i = 0; i < v; i++)
		s += lib_scale(i);
	return s;
}

int lib_compute(int n)
{
	return lib_local(n) + lib_scale(n);
}
