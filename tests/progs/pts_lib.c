/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/pts_lib.c - a shared library the PT session tests call
 * through the PLT (linked) or dlopen (loaded at run time).
 */
__attribute__((noinline)) long pts_lib_add(long a, long b)
{
	return a + b;
}

__attribute__((noinline)) long pts_dl_mul(long a)
{
	return a * 7;
}
