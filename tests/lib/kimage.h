/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/kimage.h - the kernel's half for tests, without a kernel to
 * read: a kernel-like image (an ELF linked at kernel addresses, e.g.
 * tests/progs/kern_image) turned into what /proc shows of a kernel (a
 * kcore-format copy: an ELF core file with a PT_LOAD per executable
 * segment; kallsyms text), and an emulated user-space recording rewritten
 * as if the CPU had traced the kernel too: at each system call the trace
 * enters the image's entry_SYSCALL_64, runs do_syscall_64 and returns with
 * sysretq (tests/progs/kern_image.S: 10 instructions, TNT taken, taken,
 * not taken, taken).
 */
#ifndef HWT_TESTS_KIMAGE_H
#define HWT_TESTS_KIMAGE_H

#include <stddef.h>
#include <stdint.h>

/* The kcore-format copy of elf's executable segments (malloc'd into *out)
 * and its symbols as kallsyms text ("ADDR T NAME\n", malloc'd into *syms).
 * Returns 0 or a negative error. */
int kimage_read(const char *elf, uint8_t **kcore, size_t *kcore_len, char **syms);

/* The address of name in kallsyms text (0: not there). */
uint64_t kimage_sym(const char *syms, const char *name);

/* Writes dir/kcore, dir/kallsyms and an empty dir/modules for elf: a /proc
 * to capture from. Returns 0 or a negative error. */
int kimage_proc(const char *elf, const char *dir);

struct kinject_result {
	uint64_t syscalls; /* kernel entries injected */
	uint64_t streams;  /* AUX streams rewritten */
};

/* Rewrites the per-thread recording in (as `record --pt=emulate` writes
 * it) as out, in which each system call (a TIP.PGD without FUP) is a far
 * branch into elf's entry_SYSCALL_64, the kernel's packets, and a TIP back
 * to the user code (in place of the TIP.PGE); IP packets are written whole
 * (sign-extended 48 bits), so the rest decodes as before. The metadata says
 * the kernel was traced (pt.config.kernel 1) and, with KINJECT_CODE in
 * with_kernel, holds the kernel's code and symbols (kernel.kcore,
 * kernel.kallsyms) as the recorder captures them; KINJECT_MODULE lists
 * do_syscall_64 as a function of kernel module kern_mod in them
 * ("... do_syscall_64 [kern_mod]", as kallsyms lists a module's). Returns
 * 0, or a negative error with a line in why. */
enum { KINJECT_CODE = 1, KINJECT_MODULE = 2 };
int kinject_write(const char *in, const char *out, const char *elf, int with_kernel,
		  struct kinject_result *res, char *why, size_t whylen);

#endif
