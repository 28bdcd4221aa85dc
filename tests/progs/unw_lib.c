/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/unw_lib.c - the shared library of unw_prog: a call from the
 * program into it (through the PLT) and two frames inside it, built
 * -O2 -fomit-frame-pointer like the program.
 */
#include "unw_lib.h"

volatile unsigned long unw_lib_sink;

__attribute__((noinline, noclone)) static unsigned long lib_leaf(unsigned long n)
{
	unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		x = x * 31 + i;
	unw_lib_sink += x;
	return x;
}

__attribute__((noinline)) unsigned long unw_lib_outer(unsigned long n)
{
	unsigned long r = lib_leaf(n);

	__asm__ volatile("" ::: "memory"); /* no tail call: keep this frame */
	return r + 1;
}
