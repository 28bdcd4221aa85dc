/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptemu_filter.c - control flow the address-filter tests know
 * exactly. filt_work(n), in assembly so its instructions are known, leaves
 * and re-enters its own range every way a branch can:
 *
 *   filt_work:   push %rbx; mov %rdi,%rbx                      (2, once)
 *   1:           call filt_helper      direct call out, ret back in
 *                lea filt_helper(%rip),%rax
 *   filt_mid:    call *%rax            indirect call out, ret back in
 *                mov $39,%eax; syscall getpid: the kernel and back
 *                test $1,%bl
 *                jnz filt_side         odd %rbx: a jcc out; filt_side
 *   filt_back:   dec %rbx                jumps back here (direct jmp in)
 *   filt_last:   jnz 1b
 *                pop %rbx; jmp filt_tail  a direct jmp out (tail call)
 *
 * 9 instructions per iteration, 4 more per call: a trace filtered to
 * filt_work (`filter filt_work @ PROG`) holds FILT_CALLS * (4 + 9 *
 * FILT_N) instructions, all of them in filt_work. The labels filt_mid and
 * filt_last cut basic blocks: a range [filt_mid, filt_last) is entered and
 * left by falling through from one instruction to the next as well.
 * Exit status 0 when every result is as expected.
 */
#define FILT_N	   10
#define FILT_CALLS 3

long filt_work(long n);
long filt_count;

__asm__(".text\n"
	".globl filt_work\n"
	".type filt_work, @function\n"
	"filt_work:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"1:	call filt_helper\n"
	"	lea filt_helper(%rip), %rax\n"
	".globl filt_mid\n"
	"filt_mid:\n"
	"	call *%rax\n"
	"	mov $39, %eax\n"
	"	syscall\n"
	"	test $1, %bl\n"
	"	jnz filt_side\n"
	".globl filt_back\n"
	"filt_back:\n"
	"	dec %rbx\n"
	".globl filt_last\n"
	"filt_last:\n"
	"	jnz 1b\n"
	"	pop %rbx\n"
	"	jmp filt_tail\n"
	".size filt_work, .-filt_work\n"
	".globl filt_side\n"
	".type filt_side, @function\n"
	"filt_side:\n"
	"	nop\n"
	"	jmp filt_back\n"
	".size filt_side, .-filt_side\n"
	".globl filt_helper\n"
	".type filt_helper, @function\n"
	"filt_helper:\n"
	"	incq filt_count(%rip)\n"
	"	ret\n"
	".size filt_helper, .-filt_helper\n"
	".globl filt_tail\n"
	".type filt_tail, @function\n"
	"filt_tail:\n"
	"	mov filt_count(%rip), %rax\n"
	"	ret\n"
	".size filt_tail, .-filt_tail\n");

int main(void)
{
	long r = 0;

	for (int i = 0; i < FILT_CALLS; i++)
		r = filt_work(FILT_N);
	return r == 2L * FILT_N * FILT_CALLS ? 0 : 1;
}
