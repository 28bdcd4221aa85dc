/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/pts_remap.c - different code under the same address, in
 * time: the program writes two files of raw x86-64 code into the directory
 * argv[1], maps the first at CODE_ADDR and calls it A_CALLS times, then maps
 * the second over it (MAP_FIXED) and calls that B_CALLS times. A decoder
 * must use the mapping of the time to follow both:
 *   code_a: +0 lea rax,[rdi+1]; +4 ret                     (2 insns a call)
 *   code_b: +0 jmp +5; +2 (3 bytes never run); +5 lea rax,[rdi+2]; +9 ret
 *                                                          (3 insns a call)
 * Exit status 0 when both computed what they should.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define CODE_ADDR 0x70000000ul
#define A_CALLS	  5
#define B_CALLS	  7

static const unsigned char code_a[] = {0x48, 0x8d, 0x47, 0x01, 0xc3};
static const unsigned char code_b[] = {0xeb, 0x03, 0x0f, 0x0b, 0x90, 0x48, 0x8d, 0x47, 0x02, 0xc3};

static void *map_code(const char *dir, const char *name, const unsigned char *code, size_t len)
{
	unsigned char page[4096] = {0};
	char path[4096];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (size_t i = 0; i < len; i++)
		page[i] = code[i];
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page))
		return MAP_FAILED;
	p = mmap((void *)CODE_ADDR, sizeof(page), PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
		 fd, 0);
	close(fd);
	return p;
}

int main(int argc, char **argv)
{
	long (*volatile f)(long);
	long s = 0;
	void *p;

	if (argc < 2)
		return 2;
	p = map_code(argv[1], "code_a", code_a, sizeof(code_a));
	if (p != (void *)CODE_ADDR)
		return 3;
	f = (long (*)(long))p;
	for (long i = 0; i < A_CALLS; i++)
		s += f(i);
	/* Ten thousand instructions before code_a is replaced: the decoder
	 * applies a mapping when tracing resumes from the kernel up to two
	 * MTC periods (1,344 emulated instructions) early, since the trace's
	 * time lags behind the sideband's (docs/script.md); code replaced
	 * sooner after it ran would decode with the new code. */
	for (volatile long spin = 0; spin < 2000; spin++)
		;
	p = map_code(argv[1], "code_b", code_b, sizeof(code_b));
	if (p != (void *)CODE_ADDR)
		return 4;
	f = (long (*)(long))p;
	for (long i = 0; i < B_CALLS; i++)
		s += f(i);
	/* sum(i+1, i<5) + sum(i+2, i<7) = 15 + 35 */
	return s == 50 ? 0 : 1;
}
