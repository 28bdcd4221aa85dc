/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/ptsession/test_kernel.c - kernel code decoded from the recording's
 * copy of it (ptsession/pts_kern.c). A user program's emulated trace is
 * rewritten as a CPU tracing user and kernel would have written it: each of
 * its system calls enters a kernel-like image (tests/progs/kern_image.S,
 * at kernel addresses: 10 instructions, a loop of three) and comes back
 * (tests/lib/kimage.c). With the image's kcore-format copy and kallsyms in
 * the recording, as `record --pt` captures them, script, report --calls
 * and branches give the kernel's and the user's code exactly; without it,
 * the trace breaks at the first kernel entry (what every recording did
 * before).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/kimage.h"
#include "tests/lib/testutil.h"

static bool calls_of(const char *report, const char *func, unsigned long long *calls,
		     unsigned long long *self, unsigned long long *incl)
{
	for (const char *p = report; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char name[128];

		if (sscanf(p, "%llu %llu %llu %*s %*s %*s %*s %127s", calls, self, incl, name) ==
			4 &&
		    !strcmp(name, func))
			return true;
	}
	return false;
}

static unsigned long long total_insns(const char *report)
{
	const char *p = strstr(report, "# Calls, exact (from the decoded trace): ");
	unsigned long long i;

	assert_non_null(p);
	assert_int_equal(
	    sscanf(p, "# Calls, exact (from the decoded trace): %llu instructions", &i), 1);
	return i;
}

static void test_kernel_decoded(void **state)
{
	char *dir = hwt_test_tmpdir(), user[4096], kern[4096], nok[4096], why[512];
	struct kinject_result res, res2;
	struct hwt_test_run r;
	unsigned long long calls, self, incl, user_total, user_ask, n;

	(void)state;
	if (system("qemu-x86_64 --version >/dev/null 2>&1")) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user): the user "
			      "code's trace comes from the PT emulator");
	}
	snprintf(user, sizeof(user), "%s/user.hwt", dir);
	snprintf(kern, sizeof(kern), "%s/kernel.hwt", dir);
	snprintf(nok, sizeof(nok), "%s/nocode.hwt", dir);
	hwt_test_run(&r, "%s record -q --pt=emulate -o %s -- %s", hwt_test_hwtrace(), user,
		     hwt_test_prog("kern_user"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	assert_int_equal(
	    kinject_write(user, kern, hwt_test_prog("kern_image"), 1, &res, why, sizeof(why)), 0);
	assert_int_equal(
	    kinject_write(user, nok, hwt_test_prog("kern_image"), 0, &res2, why, sizeof(why)), 0);
	n = res.syscalls;
	/* ask_kernel()'s 25, and the program's start and end */
	assert_true(n >= 25);
	assert_int_equal(res2.syscalls, n);

	/* the user-only trace: the ground truth for the user code */
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), user);
	assert_int_equal(r.status, 0);
	user_total = total_insns(r.out);
	assert_true(calls_of(r.out, "ask_kernel", &calls, &self, &user_ask));
	assert_int_equal(calls, 1);
	hwt_test_run_free(&r);

	/* user and kernel, with the kernel's code recorded */
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), kern);
	assert_int_equal(r.status, 0);
	assert_true(
	    hwt_test_contains(r.err, " 0 gaps (0 from lost trace, 0 bytes lost), 0 overflows"));
	assert_true(calls_of(r.out, "do_syscall_64", &calls, &self, &incl));
	assert_int_equal(calls, n);
	assert_int_equal(self, 8 * n); /* mov, 3 x (dec, jnz), ret */
	assert_true(calls_of(r.out, "ptemu_loop", &calls, &self, &incl));
	assert_int_equal(calls, 25);
	assert_int_equal(self, 25 * 32);
	/* ask_kernel now holds its 25 system calls' kernel code */
	assert_true(calls_of(r.out, "ask_kernel", &calls, &self, &incl));
	assert_int_equal(incl, user_ask + 25 * 10);
	/* every user instruction, and 10 kernel ones per system call */
	assert_int_equal(total_insns(r.out), user_total + 10 * n);
	hwt_test_run_free(&r);

	/* kinst's kernel half: every instruction of do_syscall_64, its
	 * branch taken twice and not taken once per call */
	hwt_test_run(&r, "%s branches -i %s do_syscall_64", hwt_test_hwtrace(), kern);
	assert_int_equal(r.status, 0);
	{
		char want[128];

		snprintf(want, sizeof(want), "taken %llu (66.7%%), not taken %llu (33.3%%)", 2 * n,
			 n);
		assert_true(hwt_test_contains(r.out, want));
		snprintf(want, sizeof(want),
			 "# do_syscall_64 in [kernel.kallsyms] at "
			 "0xffffffff81000008 (10 bytes): %llu calls",
			 n);
		assert_true(hwt_test_contains(r.out, want));
	}
	hwt_test_run_free(&r);

	/* script names kernel functions from the recorded kallsyms */
	hwt_test_run(&r, "%s script -i %s --itrace=c", hwt_test_hwtrace(), kern);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "=> ffffffff81000008 do_syscall_64+0x0 "
					     "([kernel.kallsyms])"));
	hwt_test_run_free(&r);

	/* the same trace without the kernel's code: it breaks at the first
	 * kernel entry, and the user code after it is lost too */
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), nok);
	assert_false(hwt_test_contains(r.err, " 0 gaps (0 from lost trace"));
	assert_true(total_insns(r.out) < user_total);
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernel_decoded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
