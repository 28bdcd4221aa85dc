/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptemu_common.h - the exactly known loop the PT emulator tests
 * look for: ptemu_loop(n) runs the three instructions between the global
 * labels ptemu_loop_body and ptemu_loop_end n times, and the conditional
 * branch at ptemu_loop_jcc is taken n-1 times and not taken once.
 */
#ifndef PTEMU_COMMON_H
#define PTEMU_COMMON_H

__attribute__((noinline, used)) static long ptemu_loop(long n)
{
	long r = 0;

	__asm__ volatile(".globl ptemu_loop_body\n"
			 "ptemu_loop_body:\n"
			 "1: add $1, %0\n"
			 "   dec %1\n"
			 ".globl ptemu_loop_jcc\n"
			 "ptemu_loop_jcc:\n"
			 "   jnz 1b\n"
			 ".globl ptemu_loop_end\n"
			 "ptemu_loop_end:\n"
			 : "+r"(r), "+r"(n)
			 :
			 : "cc");
	return r;
}

#endif
