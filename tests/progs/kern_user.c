/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/kern_user.c - user code around system calls, for the
 * kernel-decoding tests: ask_kernel() makes SYSCALLS getppid calls, each
 * followed by ptemu_loop(10), so the user code after every kernel entry is
 * known exactly.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "ptemu_common.h"

#define SYSCALLS 25

__attribute__((noinline)) static long ask_kernel(int n)
{
	long s = 0;

	for (int i = 0; i < n; i++) {
		s += syscall(SYS_getppid) > 0;
		s += ptemu_loop(10);
	}
	return s;
}

int main(void)
{
	return ask_kernel(SYSCALLS) == SYSCALLS * 11 ? 0 : 1;
}
