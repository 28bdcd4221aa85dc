/*
 * tests/progs/rec_load.c - a load for the recorder's stress test and
 * benchmark: THREADS threads (default 2) run for SECONDS of wall time
 * (default 10) through a recursion of varying depth (up to 40 frames), so
 * that samples carry long call chains, and each thread allocates and frees
 * now and then (mmap/munmap traffic for the sideband).
 *
 * usage: rec_load [SECONDS] [THREADS]
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 10;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long leaf(unsigned long x0)
{
	volatile unsigned long x = x0; /* a stack frame, so a frame pointer */

	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) unsigned long descend(int depth, unsigned long x)
{
	if (depth == 0)
		return leaf(x);
	return descend(depth - 1, x + (unsigned long)depth) ^ 1;
}

static void *worker(void *arg)
{
	unsigned long x = (unsigned long)(size_t)arg;
	double end = now() + seconds;
	int n = 0;

	/* The clock is read after every descent: under a heavy sampling load
	 * the program still ends on time. */
	while (now() < end) {
		x = descend((int)((x >> 7) % 40), x);
		if (++n % 10000 == 0)
			free(malloc(1u << 20)); /* large: an mmap and a munmap */
	}
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[64];

	if (argc > 1)
		seconds = atof(argv[1]);
	if (threads < 1 || threads > 64)
		threads = 2;
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(size_t)(i + 1));
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
