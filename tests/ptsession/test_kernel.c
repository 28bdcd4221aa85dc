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
#include <sys/stat.h>

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

/* `report --calls` of a recording with n system calls' kernel trace whose
 * user code alone is user_total instructions: no gaps, do_syscall_64
 * called n times with 8 instructions of its own (mov, 3 x (dec, jnz),
 * ret), 10 kernel instructions per system call in all. Returns the
 * report (the caller frees it). */
static char *kernel_report(const char *file, unsigned long long n, unsigned long long user_total)
{
	struct hwt_test_run r;
	unsigned long long calls, self, incl;
	char *out;

	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	assert_true(
	    hwt_test_contains(r.err, " 0 gaps (0 from lost trace, 0 bytes lost), 0 overflows"));
	assert_true(calls_of(r.out, "do_syscall_64", &calls, &self, &incl));
	assert_int_equal(calls, n);
	assert_int_equal(self, 8 * n);
	assert_int_equal(total_insns(r.out), user_total + 10 * n);
	out = strdup(r.out);
	assert_non_null(out);
	hwt_test_run_free(&r);
	return out;
}

/* The recordings every test reads: the user-only one (the ground truth
 * for the user code), the same with kernel trace and the kernel's code,
 * with kernel trace but no code, and with do_syscall_64 a module's
 * function; n system calls. */
static struct {
	char *dir;
	char user[4096], kern[4096], nok[4096], mod[4096];
	unsigned long long n;
} K;

static int setup(void **state)
{
	struct kinject_result res, res2;
	struct hwt_test_run r;
	char why[512];

	(void)state;
	if (system("qemu-x86_64 --version >/dev/null 2>&1"))
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user): the user "
			      "code's trace comes from the PT emulator");
	K.dir = hwt_test_tmpdir();
	snprintf(K.user, sizeof(K.user), "%s/user.hwt", K.dir);
	snprintf(K.kern, sizeof(K.kern), "%s/kernel.hwt", K.dir);
	snprintf(K.nok, sizeof(K.nok), "%s/nocode.hwt", K.dir);
	snprintf(K.mod, sizeof(K.mod), "%s/module.hwt", K.dir);
	hwt_test_run(&r, "%s record -q --pt=emulate -o %s -- %s", hwt_test_hwtrace(), K.user,
		     hwt_test_prog("kern_user"));
	if (r.status != 0)
		return -1;
	hwt_test_run_free(&r);
	if (kinject_write(K.user, K.kern, hwt_test_prog("kern_image"), KINJECT_CODE, &res, why,
			  sizeof(why)) != 0 ||
	    kinject_write(K.user, K.mod, hwt_test_prog("kern_image"), KINJECT_CODE | KINJECT_MODULE,
			  &res2, why, sizeof(why)) != 0 ||
	    kinject_write(K.user, K.nok, hwt_test_prog("kern_image"), 0, &res2, why, sizeof(why)) !=
		0 ||
	    res2.syscalls != res.syscalls) {
		fprintf(stderr, "kinject_write: %s\n", why);
		return -1;
	}
	K.n = res.syscalls;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (K.dir)
		hwt_test_tmpdir_remove(K.dir);
	return 0;
}

static void test_kernel_decoded(void **state)
{
	struct hwt_test_run r;
	unsigned long long calls, self, incl, user_total, user_ask, n = K.n;
	char *report;
	const char *user = K.user, *kern = K.kern, *nok = K.nok;

	(void)state;
	/* ask_kernel()'s 25, and the program's start and end */
	assert_true(n >= 25);

	/* the user-only trace: the ground truth for the user code */
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), user);
	assert_int_equal(r.status, 0);
	user_total = total_insns(r.out);
	assert_true(calls_of(r.out, "ask_kernel", &calls, &self, &user_ask));
	assert_int_equal(calls, 1);
	hwt_test_run_free(&r);

	/* user and kernel, with the kernel's code recorded: every user
	 * instruction, and 10 kernel ones per system call */
	report = kernel_report(kern, n, user_total);
	assert_true(calls_of(report, "ptemu_loop", &calls, &self, &incl));
	assert_int_equal(calls, 25);
	assert_int_equal(self, 25 * 32);
	/* ask_kernel now holds its 25 system calls' kernel code */
	assert_true(calls_of(report, "ask_kernel", &calls, &self, &incl));
	assert_int_equal(incl, user_ask + 25 * 10);
	free(report);

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
}

/* The count on the line after the key line that contains key, or -1. */
static long long count_after(const char *out, const char *key)
{
	const char *p = strstr(out, key);
	long long v;

	if (!p || !(p = strchr(p, '\n')) || sscanf(p + 1, " %lld", &v) != 1)
		return -1;
	return v;
}

/* pt: probes on kernel functions: every system call's kernel entry fires
 * them, in the process that made it, with its kernel and user stacks. */
static void test_kernel_probes(void **state)
{
	struct hwt_test_run r;
	char want[256];
	long long n = (long long)K.n;

	(void)state;
	/* the kernel under each of its names (hwtrace's, vmlinux, perf's) */
	hwt_test_run(&r,
		     "%s trace -i %s 'pt:kernel:do_syscall_64:entry { @e[pid == tid, comm, func] = "
		     "count(); @k[kstack] = count(); @u[ustack] = count() } "
		     "pt:vmlinux:do_syscall_64:return { @r = count() } "
		     "pt:[kernel.kallsyms]:do_syscall_64+5 { @dec = count() } "
		     "pt:kernel:do_syscall_64+0 { @first = count() } "
		     "pt:kern_user:ask_kernel:entry { @user[kstack] = count() }'",
		     hwt_test_hwtrace(), K.kern);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "  1  kern_user  do_syscall_64  %lld\n", n);
	assert_true(hwt_test_contains(r.out, want));
	assert_int_equal(count_after(r.out, "@r: count()"), n);
	/* do_syscall_64's loop runs three times a call */
	assert_int_equal(count_after(r.out, "@dec: count()"), 3 * n);
	assert_int_equal(count_after(r.out, "@first: count()"), n);
	/* kstack: do_syscall_64 called from the entry code, no user frames */
	{
		const char *k = strstr(r.out, "@k[kstack]: count()");
		const char *u = strstr(r.out, "@u[ustack]: count()");
		long long v = 0;

		assert_non_null(k);
		assert_non_null(u);
		assert_int_equal(sscanf(k,
					"@k[kstack]: count()\n\n [kernel.kallsyms]`do_syscall_64\n "
					"[kernel.kallsyms]`%*s %lld",
					&v),
				 1);
		assert_int_equal(v, n);
		/* ustack: the user code that made the call; ask_kernel's 25 */
		assert_true(hwt_test_contains(u, "kern_user`ask_kernel\n"));
		assert_int_equal(count_after(u, "kern_user`_start"), 25);
	}
	/* a user function's probe on the same recording still fires, with an
	 * empty kstack */
	assert_true(hwt_test_contains(r.out, "@user[kstack]: count()\n\n                1\n"));
	hwt_test_run_free(&r);

	/* a kernel module's function, by the module's name (and as the
	 * kernel's) */
	hwt_test_run(&r,
		     "%s trace -i %s 'pt:kern_mod:do_syscall_64:entry { @m = count() } "
		     "pt:kernel:do_syscall_64:return { @k = count() }'",
		     hwt_test_hwtrace(), K.mod);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_after(r.out, "@m: count()"), n);
	assert_int_equal(count_after(r.out, "@k: count()"), n);
	hwt_test_run_free(&r);
}

/* perf record --kcore's directory: DIR/data (here the kernel recording
 * converted to perf.data, which has no place for the kernel's code) and
 * DIR/kcore_dir/{kcore,kallsyms}: the kernel's code and symbols come from the
 * directory, as from a hwtrace recording's metadata. */
static void test_perf_kcore_dir(void **state)
{
	char dir[4200], data[4300], kdir[4300];
	struct hwt_test_run r;
	unsigned long long calls, self, incl, user_total;
	char *report;

	(void)state;
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), K.user);
	assert_int_equal(r.status, 0);
	user_total = total_insns(r.out);
	hwt_test_run_free(&r);
	snprintf(dir, sizeof(dir), "%s/perf-kcore", K.dir);
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(kdir, sizeof(kdir), "%s/kcore_dir", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	hwt_test_run(&r, "%s convert -q -i %s -o %s", hwt_test_hwtrace(), K.kern, data);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);

	/* without kcore_dir the kernel's code is missing: gaps */
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), dir);
	assert_int_equal(r.status, 0);
	assert_false(hwt_test_contains(r.err, " 0 gaps (0 from lost trace"));
	assert_false(calls_of(r.out, "do_syscall_64", &calls, &self, &incl));
	hwt_test_run_free(&r);

	/* with it: every user instruction and the kernel's, as from the
	 * hwtrace recording */
	assert_int_equal(mkdir(kdir, 0755), 0);
	assert_int_equal(kimage_proc(hwt_test_prog("kern_image"), kdir), 0);
	report = kernel_report(dir, K.n, user_total);
	free(report);
	hwt_test_run(&r, "%s script -i %s --itrace=c", hwt_test_hwtrace(), dir);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "=> ffffffff81000008 do_syscall_64+0x0 "
					     "([kernel.kallsyms])"));
	hwt_test_run_free(&r);

	/* perf record --threads' data files are not read: said */
	hwt_test_run(&r, "touch %s/data.0 %s/data.1 && %s report -i %s --calls", dir, dir,
		     hwt_test_hwtrace(), dir);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "the 2 data.N files of perf record --threads are "
					     "not read"));
	hwt_test_run_free(&r);

	/* a directory perf did not write */
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), kdir);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "is a directory without a 'data' file"));
	hwt_test_run_free(&r);
}

/* End to end: `record --pt` on the simulated intel_pt PMU of a machine
 * whose kernel is the image (HWT_PT_SIM=kernel=DIR: its /proc has the
 * image's kcore and kallsyms) traces the kernel and writes its code into
 * the recording through the recorder's own capture; the emulator's trace
 * of the program, given its kernel entries (kinject, keeping the
 * recording's own copy of the kernel), decodes the kernel's code from
 * that copy. */
static void test_kernel_recorded(void **state)
{
	char proc[4200], rec[4200], out[4200], why[512];
	struct kinject_result res;
	struct hwt_test_run r;
	unsigned long long user_total;

	(void)state;
	snprintf(proc, sizeof(proc), "%s/proc", K.dir);
	snprintf(rec, sizeof(rec), "%s/sim.hwt", K.dir);
	snprintf(out, sizeof(out), "%s/simk.hwt", K.dir);
	assert_int_equal(mkdir(proc, 0755), 0);
	assert_int_equal(kimage_proc(hwt_test_prog("kern_image"), proc), 0);
	hwt_test_run(&r, "HWT_PT_SIM=wait,kernel=%s %s record --pt --per-thread -o %s -- %s", proc,
		     hwt_test_hwtrace(), rec, hwt_test_prog("kern_user"));
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "hwtrace: recorded the kernel's code for decoding: "));
	assert_true(hwt_test_contains(r.err, "/proc/kcore, kallsyms and the modules' list\n"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), rec);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "  pt.config.kernel       = 1\n"));
	assert_true(hwt_test_contains(r.out, "  kernel.kcore           = <"));
	assert_true(hwt_test_contains(r.out, "  kernel.kallsyms        = <"));
	hwt_test_run_free(&r);
	/* 0: the recording's own copy of the kernel, not kinject's */
	assert_int_equal(
	    kinject_write(rec, out, hwt_test_prog("kern_image"), 0, &res, why, sizeof(why)), 0);
	assert_true(res.syscalls >= 25);

	/* the user code as recorded, and with 10 kernel instructions per
	 * system call, decoded from the recorded copy */
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), rec);
	assert_int_equal(r.status, 0);
	user_total = total_insns(r.out);
	hwt_test_run_free(&r);
	free(kernel_report(out, res.syscalls, user_total));

	/* and the kernel probes on it */
	hwt_test_run(&r,
		     "%s trace -i %s 'pt:kernel:do_syscall_64:entry { @e = count() } "
		     "pt:kernel:do_syscall_64+5 { @dec = count() }'",
		     hwt_test_hwtrace(), out);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_after(r.out, "@e: count()"), (long long)res.syscalls);
	assert_int_equal(count_after(r.out, "@dec: count()"), 3 * (long long)res.syscalls);
	hwt_test_run_free(&r);
}

/* Each refusal: one line naming the cause and the fix, non-zero exit. */
static void test_kernel_probe_errors(void **state)
{
	static const struct {
		const char *file, *probe, *msg;
	} cases[] = {
	    {"kern", "pt:kernel:do_sys_open:entry",
	     "function 'do_sys_open' is not in the recording's kernel symbols (kallsyms); on "
	     "the recorded machine, 'grep -w do_sys_open /proc/kallsyms' lists it"},
	    {"kern", "pt:kernel:do_syscall_64+3",
	     "offset 3 is inside an instruction of do_syscall_64 (the nearest start at +0 or "
	     "+5"},
	    {"kern", "pt:kernel:do_syscall_64+10",
	     "offset 10 is past the end of do_syscall_64 (10 bytes)"},
	    {"nok", "pt:kernel:do_syscall_64:entry",
	     "the recording holds no copy of the kernel's code (kernel.kcore), so its kernel "
	     "trace cannot be decoded: record as root"},
	    {"user", "pt:vmlinux:do_syscall_64:return",
	     "the recording traced user space only: record the kernel too"},
	    {"mod", "pt:kern_mod:entry_SYSCALL_64:entry",
	     "no object 'kern_mod' was mapped in the recording"},
	    {"kern", "pt:kmod:do_syscall_64:entry",
	     "no object 'kmod' was mapped in the recording (give its path or basename as the "
	     "traced process mapped it, or 'kernel' for the kernel's functions)"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hwt_test_run r;
		const char *file = !strcmp(cases[i].file, "kern")  ? K.kern
				   : !strcmp(cases[i].file, "nok") ? K.nok
				   : !strcmp(cases[i].file, "mod") ? K.mod
								   : K.user;

		hwt_test_run(&r, "%s trace -i %s '%s { @ = count() }'", hwt_test_hwtrace(), file,
			     cases[i].probe);
		if (r.status == 0 || !hwt_test_contains(r.err, cases[i].msg))
			fail_msg("%s over %s: status %d, stderr:\n%s", cases[i].probe, file,
				 r.status, r.err);
		/* one line, and the program with a caret under the probe */
		assert_true(hwt_test_contains(r.err, "hwtrace: error: "));
		hwt_test_run_free(&r);
	}
	/* live: the recording to make, and the live probe that counts the
	 * same */
	{
		struct hwt_test_run r;

		hwt_test_run(&r, "%s trace 'pt:kernel:do_syscall_64:entry { @ = count() }' -- true",
			     hwt_test_hwtrace());
		assert_int_not_equal(r.status, 0);
		assert_true(hwt_test_contains(
		    r.err,
		    "pt:kernel:do_syscall_64:entry fires from Intel PT recordings, not live: "
		    "record the kernel with 'hwtrace record --pt -o FILE -- CMD' as root"));
		assert_true(hwt_test_contains(r.err, "live, kprobe:do_syscall_64 counts the same"));
		hwt_test_run_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernel_decoded),	cmocka_unit_test(test_kernel_probes),
	    cmocka_unit_test(test_kernel_probe_errors), cmocka_unit_test(test_kernel_recorded),
	    cmocka_unit_test(test_perf_kcore_dir),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
