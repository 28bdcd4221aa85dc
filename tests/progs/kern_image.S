/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/kern_image.S - a kernel-like image for the kernel-decoding
 * tests: linked at 0xffffffff81000000 (where x86-64 kernels put their
 * text), between _stext and _etext as a kernel's text is. A system call
 * enters at entry_SYSCALL_64, which calls do_syscall_64 (a loop of three,
 * its jnz taken twice and not taken once) and returns to user space with
 * sysretq: 10 instructions per system call.
 */
	.text
	.globl _stext
_stext:
	.globl entry_SYSCALL_64
	.type entry_SYSCALL_64, @function
entry_SYSCALL_64:
	call do_syscall_64
	sysretq
	.size entry_SYSCALL_64, .-entry_SYSCALL_64
	.globl do_syscall_64
	.type do_syscall_64, @function
do_syscall_64:
	mov $3, %ecx
1:	dec %ecx
	jnz 1b
	ret
	.size do_syscall_64, .-do_syscall_64
	.globl _etext
_etext:
	.section .note.GNU-stack,"",@progbits
