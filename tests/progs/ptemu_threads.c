/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptemu_threads.c - three threads run ptemu_loop with the
 * distinct trip counts 3001, 3002 and 3003; the main thread runs 3000.
 */
#include <pthread.h>
#include <stdint.h>

#include "ptemu_common.h"

static void *worker(void *arg)
{
	return (void *)(intptr_t)ptemu_loop((long)(intptr_t)arg);
}

int main(void)
{
	pthread_t t[3];
	long total = 0;

	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(3001 + i));
	total += ptemu_loop(3000);
	for (int i = 0; i < 3; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (long)(intptr_t)r;
	}
	return total == 3000 + 3001 + 3002 + 3003 ? 0 : 1;
}
