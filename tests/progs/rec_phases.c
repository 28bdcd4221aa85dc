/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/rec_phases.c - a long run in 64 phases for the bounded-loss
 * test (tests/collector/test_record_kill.c): phase K spins in its own
 * function phase_KK for 100 ms of CPU time, then prints "K T" on standard
 * output, T being CLOCK_MONOTONIC in nanoseconds when the phase ended. The
 * test kills the recorder with SIGKILL and checks that every phase that
 * ended longer ago than the flush interval shows in the file. The program
 * ends with its parent (the recorder): PR_SET_PDEATHSIG.
 *
 * usage: rec_phases
 */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static unsigned long long ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Spins for 100 ms of this thread's CPU time, inlined: the samples fall
 * in the phase's own function. */
static inline __attribute__((always_inline)) void spin(void)
{
	unsigned long long end = ns(CLOCK_THREAD_CPUTIME_ID) + 100000000ull;

	while (ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			sink = sink * 2862933555777941757ul + 3037000493ul;
}

#define PHASE(k)                                                                                   \
	__attribute__((noinline)) void phase_##k(void)                                             \
	{                                                                                          \
		spin();                                                                            \
		__asm__ volatile("" ::: "memory");                                                 \
	}
#define PHASES8(d)                                                                                 \
	PHASE(d##0)                                                                                \
	PHASE(d##1) PHASE(d##2) PHASE(d##3) PHASE(d##4) PHASE(d##5) PHASE(d##6) PHASE(d##7)
PHASES8(0)
PHASES8(1)
PHASES8(2)
PHASES8(3)
PHASES8(4)
PHASES8(5)
PHASES8(6)
PHASES8(7)

#define REF8(d)                                                                                    \
	phase_##d##0, phase_##d##1, phase_##d##2, phase_##d##3, phase_##d##4, phase_##d##5,        \
	    phase_##d##6, phase_##d##7

static void (*const phases[64])(void) = {REF8(0), REF8(1), REF8(2), REF8(3),
					 REF8(4), REF8(5), REF8(6), REF8(7)};

int main(void)
{
	pid_t parent = getppid();

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		return 1; /* the recorder is gone already */
	for (int k = 0; k < 64; k++) {
		phases[k]();
		printf("%d %llu\n", k, ns(CLOCK_MONOTONIC));
		fflush(stdout);
	}
	return 0;
}
