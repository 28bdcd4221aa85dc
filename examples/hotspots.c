/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * examples/hotspots.c - a small program with two hot paths, for trying
 * hwtrace: most of its time goes to checksum() through parse_records() (about
 * 60% on the development VM), the rest to compress_block() through
 * write_output() -> flush(). With -O2, GCC clones both hot functions
 * (checksum.constprop.0): the samples name the clones. scripts/demo.sh builds it with frame
 * pointers, records it with `hwtrace record -g` and shows what `hwtrace script` makes of it.
 *
 *   gcc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
 *       -o hotspots examples/hotspots.c
 *   hwtrace record -g -- ./hotspots 2
 *   hwtrace script | head -20
 *
 * usage: hotspots [SECONDS of CPU time, default 1]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BLOCK 4096

/* Each function keeps its frame (a volatile local, and work after every
 * call), so frame-pointer call chains show every caller. */
__attribute__((noinline)) static uint32_t checksum(const uint8_t *p, size_t n)
{
	volatile uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

__attribute__((noinline)) static size_t compress_block(const uint8_t *p, size_t n)
{
	volatile size_t runs = 0;

	for (size_t i = 1; i < n; i++)
		runs += p[i] != p[i - 1];
	return runs;
}

__attribute__((noinline)) static uint32_t parse_records(const uint8_t *buf)
{
	uint32_t h = 0;

	for (int i = 0; i < 6; i++)
		h += checksum(buf, BLOCK);
	return h;
}

__attribute__((noinline)) static size_t flush(const uint8_t *buf)
{
	size_t n = compress_block(buf, BLOCK);

	return n + 1;
}

__attribute__((noinline)) static size_t write_output(const uint8_t *buf)
{
	size_t n = 0;

	/* As many blocks as parse_records() checksums; compress_block's loop
	 * is the cheaper one. */
	for (int i = 0; i < 6; i++)
		n += flush(buf);
	return n;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 1.0;
	static uint8_t buf[BLOCK];
	uint64_t total = 0;

	for (int i = 0; i < BLOCK; i++)
		buf[i] = (uint8_t)(i * 7 / 5);
	while (cpu_seconds() < limit) {
		for (int i = 0; i < 50; i++) {
			total += parse_records(buf);
			total += write_output(buf);
		}
	}
	printf("done: %llu\n", (unsigned long long)total);
	return 0;
}
