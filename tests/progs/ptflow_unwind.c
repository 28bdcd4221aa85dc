/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptflow_unwind.c - frames left without their returns, in the
 * middle of a call stack (tests/ptflow): main calls top, top calls mid,
 * mid calls down(4) (five nested down frames) and the innermost jumps back
 * into mid (__builtin_longjmp: no return instruction, no libc, no system
 * call). mid then calls leaf 50 times and returns to top: that return goes
 * back over the five down frames, to a frame two calls below main. top
 * then calls leaf 100 times and returns to main.
 * Exit status 0.
 */
static void *jb[5];
static volatile long sink;

__attribute__((noinline)) static void down(int n)
{
	if (n == 0)
		__builtin_longjmp(jb, 1);
	down(n - 1);
	sink++;
}

__attribute__((noinline)) static long leaf(long x)
{
	return x * 3 + sink;
}

__attribute__((noinline)) static long mid(void)
{
	long s = 0;

	if (__builtin_setjmp(jb) == 0)
		down(4);
	for (int i = 0; i < 50; i++)
		s += leaf(i);
	return s;
}

__attribute__((noinline)) static long top(void)
{
	long s = mid();

	for (int i = 0; i < 100; i++)
		s += leaf(i);
	return s;
}

int main(void)
{
	sink = top() & 0;
	return (int)sink;
}
