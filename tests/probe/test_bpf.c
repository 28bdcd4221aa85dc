/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/probe/test_bpf.c - the BPF back end of `hwtrace trace` against the
 * sampling path (--no-bpf), on programs whose counts are known
 * (tests/progs/probe_calls.c, probe_hop.c, probe_spin.c, pmc_touch.c):
 * every example of docs/trace.md gives the same aggregations on both paths
 * (exact ones equal, timing ones within their noise); a program the
 * verifier refuses, a construct with no BPF form and a user without BPF
 * rights fall back to the sampling path with one line saying why;
 * thread-local variables survive CPU migrations; stack keys equal the
 * sampling path's; a full aggregation drops and counts the same updates on
 * both paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <bpf/bpf.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/testutil.h"

/* BPF works here: root, and the kernel makes maps. */
static bool bpf_works(void)
{
	int fd;

	if (geteuid() != 0)
		return false;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "hwt_test", 4, 8, 1, NULL);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

#define NEED_BPF()                                                                                 \
	do {                                                                                       \
		if (!bpf_works()) {                                                                \
			hwt_test_skip("BPF needs root and a kernel with BPF (bpf(2) refused)");    \
			return;                                                                    \
		}                                                                                  \
	} while (0)

struct both {
	struct hwt_test_run bpf, smp;
};

/* Runs `hwtrace trace OPTS ARGS` on both paths; both must succeed. */
static void run_both(struct both *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void run_both(struct both *b, const char *fmt, ...)
{
	char args[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	hwt_test_run(&b->bpf, "%s trace %s", hwt_test_hwtrace(), args);
	hwt_test_run(&b->smp, "%s trace --no-bpf %s", hwt_test_hwtrace(), args);
	if (b->bpf.status || b->smp.status) {
		fprintf(stderr, "failed: %s\nBPF (%d):\n%s%s\nsampling (%d):\n%s%s\n", args,
			b->bpf.status, b->bpf.out, b->bpf.err, b->smp.status, b->smp.out,
			b->smp.err);
		fail();
	}
}

static void both_free(struct both *b)
{
	hwt_test_run_free(&b->bpf);
	hwt_test_run_free(&b->smp);
}

/* Both paths printed the same thing, and the BPF run took the BPF path. */
static void assert_same(const struct both *b)
{
	if (strcmp(b->bpf.out, b->smp.out)) {
		fprintf(stderr, "BPF:\n%s\nsampling:\n%s\n", b->bpf.out, b->smp.out);
		fail();
	}
	if (hwt_test_contains(b->bpf.err, "sampling path")) {
		fprintf(stderr, "a probe fell back: %s\n", b->bpf.err);
		fail();
	}
}

/* The value printed under "@name: func()" for an aggregation without
 * keys. */
static long long scalar(const char *out, const char *name)
{
	char needle[128];
	const char *p;

	snprintf(needle, sizeof(needle), "@%s: ", name);
	p = strstr(out, needle);
	if (!p || !(p = strchr(p, '\n'))) {
		fprintf(stderr, "no @%s in:\n%s\n", name, out);
		fail();
	}
	return strtoll(p + 1, NULL, 10);
}

/* docs/trace.md: calls of a function, and the sum of its first argument */
static void test_doc_calls_and_sum(void **state)
{
	const char *p = hwt_test_prog("probe_calls");
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b, "'uprobe:%s:probe_work { @calls = count(); @a = sum(arg0) }' -- %s 3000", p,
		 p);
	assert_same(&b);
	assert_int_equal(scalar(b.bpf.out, "calls"), 3000);
	assert_int_equal(scalar(b.bpf.out, "a"), 3000 * 2999 / 2);
	both_free(&b);

	/* every aggregating function, keys of integers, strings and names */
	run_both(&b,
		 "'uprobe:%s:probe_work { @c = count(); @mn = min(arg0 - 100); @mx = max(arg0); "
		 "@av = avg(arg0); @sd = stddev(arg0 * 1000003); @q = quantize(arg0 - 150); "
		 "@lq = lquantize(arg0, 10, 190, 20); @k[arg0 %% 7, arg1] = count(); "
		 "@n[probe, func, comm] = sum(arg0); @t[arg0 > 99 ? \"big\" : \"small\"] = "
		 "count() }' -- %s 300",
		 p, p);
	assert_same(&b);
	assert_true(hwt_test_contains(b.bpf.out, "@t[arg0 > 99 ? \"big\" : \"small\"]: count()\n"
						 "  small  100\n  big    200\n"));
	both_free(&b);
}

/* docs/trace.md: latency histogram of a function (entry/return with a
 * thread-local); timing, so both paths must see every call in buckets at
 * or above the sleep */
static void test_doc_latency(void **state)
{
	const char *p = hwt_test_prog("probe_calls");
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b,
		 "--json 'uprobe:%s:probe_nap { self->ts = nsecs } uretprobe:%s:probe_nap "
		 "/self->ts/ { @ns = quantize(nsecs - self->ts); self->ts = 0 }' -- %s 0 6 1100",
		 p, p, p);
	for (int i = 0; i < 2; i++) {
		const char *out = i ? b.smp.out : b.bpf.out;
		const char *q = strstr(out, "\"buckets\":[");

		assert_non_null(q);
		/* 1.1 ms is in [2^20, 2^21): nothing below 2^20 */
		assert_true(hwt_test_contains(out, "\"value\":6,\"count\":6"));
		assert_false(hwt_test_contains(q, "{\"low\":524288,"));
		assert_false(hwt_test_contains(q, "{\"low\":262144,"));
	}
	both_free(&b);
}

/* docs/trace.md: return values by caller stack; stack keys equal the
 * sampling path's at an entry uprobe, a return probe and a tracepoint */
static void test_doc_retval_stacks(void **state)
{
	const char *p = hwt_test_prog("probe_calls");
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b, "'uretprobe:%s:probe_work { @[retval, ustack] = count() }' -- %s 20", p, p);
	assert_same(&b);
	assert_true(hwt_test_contains(b.bpf.out, "  64\n              probe_calls`probe_outer\n"
						 "              probe_calls`main\n"));
	both_free(&b);

	run_both(&b,
		 "'uprobe:%s:probe_work { @e[ustack] = count() } "
		 "sched:sched_process_exit /pid == $target/ { @k[kstack] = count() }' -- %s 7",
		 p, p);
	assert_same(&b);
	/* at a function's first instruction: the caller comes from [sp] */
	assert_true(hwt_test_contains(b.bpf.out, "              probe_calls`probe_work\n"
						 "              probe_calls`probe_outer\n"
						 "              probe_calls`main\n"));
	assert_true(hwt_test_contains(b.bpf.out, "[kernel.kallsyms]`"));
	both_free(&b);
}

/* docs/trace.md: writes of one process by file descriptor and size */
static void test_doc_tracepoint(void **state)
{
	const char *p = hwt_test_prog("probe_calls");
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b,
		 "'syscalls:sys_enter_write /pid == $target/ { @[args->fd] = sum(args->count); "
		 "@w[comm] = count() }' -- %s 0 0 0 29",
		 p);
	assert_same(&b);
	assert_true(hwt_test_contains(b.bpf.out, "@w[comm]: count()\n  probe_calls  29\n"));
	both_free(&b);

	/* a __data_loc string; the launched command's exec itself is seen
	 * (the sampling path's event, enabled at that exec, misses it now
	 * and then under load: BPF only) */
	hwt_test_run(&b.bpf,
		     "%s trace 'sched:sched_process_exec { @x[args->filename] = count() }' -- %s 1",
		     hwt_test_hwtrace(), p);
	assert_int_equal(b.bpf.status, 0);
	assert_true(hwt_test_contains(b.bpf.out, "probe_calls  1\n"));
	hwt_test_run_free(&b.bpf);
}

/* docs/trace.md: where a program spends its CPU (sampled: within noise) */
static void test_doc_profile(void **state)
{
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b,
		 "'profile:hz:499 /pid == $target/ { @all = count() } profile:hz:499 "
		 "/pid == $target && func == \"probe_spin_hot\"/ { @hot = count() }' -- %s 300",
		 hwt_test_prog("probe_spin"));
	for (int i = 0; i < 2; i++) {
		const char *out = i ? b.smp.out : b.bpf.out;
		long long all = scalar(out, "all"), hot = scalar(out, "hot");

		fprintf(stderr, "%s: %lld of %lld samples in probe_spin_hot\n",
			i ? "sampling" : "BPF", hot, all);
		assert_true(all >= 50);
		assert_true(hot * 10 >= all * 9);
	}
	both_free(&b);
}

/* docs/trace.md: page faults by stack (a launched command here) */
static void test_doc_page_faults(void **state)
{
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b,
		 "'software:page-faults /pid == $target/ { @pf = count(); @[ustack] = count() }' "
		 "-- %s 2000",
		 hwt_test_prog("pmc_touch"));
	for (int i = 0; i < 2; i++) {
		long long pf = scalar(i ? b.smp.out : b.bpf.out, "pf");

		/* one fault per touched page, plus the loader's */
		assert_true(pf >= 2000 && pf < 2400);
	}
	assert_true(hwt_test_contains(b.bpf.out, "pmc_touch`"));
	both_free(&b);
}

/* docs/trace.md: printf, BEGIN/END, exit() */
static void test_doc_printf_exit(void **state)
{
	const char *p = hwt_test_prog("probe_calls");
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b,
		 "'BEGIN { printf(\"go\\n\") } uprobe:%s:probe_work /arg0 > 100/ "
		 "{ printf(\"%%d work(%%d) %%s %%-6s|\\n\", tid == $target, arg0, func, comm); "
		 "exit() } END { printf(\"end\\n\") }' -- %s 100000",
		 p, p);
	assert_same(&b);
	assert_string_equal(b.bpf.out, "go\n1 work(101) probe_work probe_calls|\nend\n");
	both_free(&b);
}

/* A program the verifier refuses runs on the sampling path, with the
 * verifier's reason (here a tracepoint format whose field lies past what
 * BPF may read: the verifier is real, the format file is a test's). */
static void test_verifier_rejection_falls_back(void **state)
{
	char *dir = hwt_test_tmpdir(), path[512], *fmt;
	const char *evs[] = {"syscalls/sys_enter_write", "sched/sched_process_exec",
			     "sched/sched_process_fork"};
	struct hwt_test_run r;
	size_t len;

	(void)state;
	if (!bpf_works()) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("BPF needs root and a kernel with BPF");
		return;
	}
	for (size_t i = 0; i < 3; i++) {
		char *p;

		snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/format", evs[i]);
		fmt = hwt_test_read_file(path, &len);
		if (!fmt) {
			hwt_test_tmpdir_remove(dir);
			hwt_test_skip("no tracefs at /sys/kernel/tracing");
			return;
		}
		snprintf(path, sizeof(path), "mkdir -p %s/events/%s", dir, evs[i]);
		assert_int_equal(system(path), 0);
		snprintf(path, sizeof(path), "%s/events/%s/format", dir, evs[i]);
		if (!i) {
			/* sys_enter_write's count at offset 9000 */
			char *out = malloc(len + 8);

			assert_non_null(p = strstr(fmt, "count;\toffset:32;"));
			p += strlen("count;\toffset:");
			len = (size_t)snprintf(out, len + 8, "%.*s9000%s", (int)(p - fmt), fmt,
					       p + 2);
			free(fmt);
			fmt = out;
		}
		hwt_test_write_file(path, fmt, len);
		free(fmt);
	}
	hwt_test_run(&r,
		     "HWT_TRACEFS_ROOT=%s %s trace -v 'syscalls:sys_enter_write /pid == $target/ "
		     "{ @w = count(); @c = sum(args->count) }' -- %s 0 0 0 7",
		     dir, hwt_test_hwtrace(), hwt_test_prog("probe_calls"));
	fprintf(stderr, "%.400s\n", r.err);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "syscalls:sys_enter_write runs on the sampling path: "
					     "the BPF verifier rejected its tracepoint program: "
					     "invalid bpf_context access off=9000"));
	assert_true(
	    hwt_test_contains(r.err, "the BPF verifier's log for syscalls:sys_enter_write"));
	/* the sampling path counted: the field past the record reads 0 */
	assert_int_equal(scalar(r.out, "w"), 7);
	assert_int_equal(scalar(r.out, "c"), 0);
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* A construct with no BPF form (a string longer than strsize) falls back,
 * with the probes that share its thread variables; output unchanged. */
static void test_no_bpf_form_falls_back_together(void **state)
{
	const char *p = hwt_test_prog("probe_calls");
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b,
		 "-x strsize=16 'uprobe:%s:probe_work { self->s = \"a string of 24 bytes.\"; "
		 "@e = count() } uretprobe:%s:probe_work /self->s != \"\"/ { @r = count(); "
		 "self->s = \"\" } uprobe:%s:probe_outer { @o[arg0 %% 2] = count() }' -- %s 50",
		 p, p, p, p);
	assert_string_equal(b.bpf.out, b.smp.out);
	assert_int_equal(scalar(b.bpf.out, "r"), 50);
	assert_true(hwt_test_contains(b.bpf.err, "probe_work runs on the sampling path: no BPF "
						 "form for a string of 21 bytes"));
	assert_true(hwt_test_contains(b.bpf.err, "uretprobe:"));
	assert_true(
	    hwt_test_contains(b.bpf.err, "it shares self-> variables or maps with uprobe:"));
	/* the third probe stays on BPF */
	assert_false(hwt_test_contains(b.bpf.err, "probe_outer runs on the sampling path"));
	both_free(&b);
}

/* A user without BPF rights gets the sampling path and one line. */
static void test_no_permission_falls_back(void **state)
{
	struct hwt_test_run r;

	(void)state;
	NEED_BPF();
	if (access("/usr/bin/setpriv", X_OK)) {
		hwt_test_skip("no setpriv to run as an unprivileged user");
		return;
	}
	hwt_test_run(&r,
		     "setpriv --reuid=65534 --regid=65534 --clear-groups %s trace "
		     "'software:page-faults /pid == $target/ { @[comm] = count() }' -- %s 3",
		     hwt_test_hwtrace(), hwt_test_prog("probe_calls"));
	if (r.status && hwt_test_contains(r.err, "perf_event_paranoid")) {
		hwt_test_run_free(&r);
		hwt_test_skip("perf_event_paranoid forbids an unprivileged user's events");
		return;
	}
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "software:page-faults runs on the sampling path: no "
					     "permission to use BPF"));
	assert_true(hwt_test_contains(r.out, "  probe_calls  "));
	hwt_test_run_free(&r);
}

/* self-> variables set on one CPU are read on another: every return sees
 * its entry, on both paths. */
static void test_thread_locals_across_migrations(void **state)
{
	const char *p = hwt_test_prog("probe_hop");
	struct both b;

	(void)state;
	NEED_BPF();
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		hwt_test_skip("one CPU online: nothing migrates");
		return;
	}
	run_both(&b,
		 "'uprobe:%s:probe_hop_call { self->ts = nsecs; self->cpu = cpu + 1 } "
		 "uretprobe:%s:probe_hop_call /self->ts/ { @n = count(); "
		 "@moved[cpu + 1 != self->cpu] = count(); self->ts = 0; self->cpu = 0 }' "
		 "-- %s 0 300",
		 p, p, p);
	assert_same(&b);
	assert_int_equal(scalar(b.bpf.out, "n"), 300);
	assert_true(hwt_test_contains(b.bpf.out, "@moved[cpu + 1 != self->cpu]: count()\n"
						 "  1  300\n"));
	both_free(&b);
}

/* str() of a uprobe's char * argument: BPF reads the string at the hit;
 * the sampling path cannot and says so. */
static void test_str_of_an_argument(void **state)
{
	const char *p = hwt_test_prog("probe_hop");
	struct hwt_test_run r;

	(void)state;
	NEED_BPF();
	hwt_test_run(&r,
		     "%s trace 'uprobe:%s:probe_hop_name { @[str(arg0)] = count(); "
		     "printf(\"<%%s> <%%.3s>\\n\", str(arg0), str(arg0, 3)) }' -- %s 0 1 "
		     "some-argument-text",
		     hwt_test_hwtrace(), p, p);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "<some-argument-text> <som>\n\n@[str(arg0)]: count()\n"
				   "  some-argument-text  1\n");
	hwt_test_run_free(&r);
	hwt_test_run(&r,
		     "%s trace --no-bpf 'uprobe:%s:probe_hop_name { @[str(arg0)] = count() }' "
		     "-- %s 0 1",
		     hwt_test_hwtrace(), p, p);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "needs the BPF path (str() reads the traced task's "
					     "memory at the hit): --no-bpf cannot run it"));
	hwt_test_run_free(&r);
}

/* interval probes (a CPU's timer on BPF, hwtrace's timer on the sampling
 * path), a plain map read and written, if, exit(). */
static void test_interval_and_maps(void **state)
{
	struct both b;

	(void)state;
	NEED_BPF();
	run_both(&b, "'interval:ms:20 { @t = @t + 1; if (@t >= 3) { exit(); } else { "
		     "@s[\"x\"] = \"y\"; } } END { printf(\"end %%d\\n\", @t); }'");
	assert_same(&b);
	assert_string_equal(b.bpf.out, "end 3\n\n@t: 3\n\n@s[x]: y\n");
	both_free(&b);
}

/* An interval fires on one CPU, once a period, also when every CPU is
 * busy (one timer a CPU fired N times a period there, and two CPUs raced
 * past exit(): the CI saw @t reach 4 for 3). */
static void test_interval_one_cpu_under_load(void **state)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	pid_t spin[64];
	struct hwt_test_run r;
	int nspin = 0;

	(void)state;
	NEED_BPF();
	for (long c = 0; c < n && nspin < 64; c++) {
		pid_t pid = fork();

		if (pid == 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET((int)c, &set);
			sched_setaffinity(0, sizeof(set), &set);
			alarm(30); /* never outlives a killed test */
			for (;;)
				;
		}
		if (pid > 0)
			spin[nspin++] = pid;
	}
	hwt_test_run(&r,
		     "%s trace 'interval:ms:20 { @c[cpu] = count(); @n = @n + 1; if (@n >= 10) "
		     "{ exit(); } }'",
		     hwt_test_hwtrace());
	for (int i = 0; i < nspin; i++) {
		kill(spin[i], SIGKILL);
		waitpid(spin[i], NULL, 0);
	}
	if (r.status)
		fprintf(stderr, "%s%s", r.out, r.err);
	assert_int_equal(r.status, 0);
	/* one row: the one CPU's count is every tick */
	if (!hwt_test_contains(r.out, "@c[cpu]: count()\n  ") ||
	    !hwt_test_contains(r.out, "  10\n\n@n: 10\n")) {
		fprintf(stderr, "%s", r.out);
		fail();
	}
	hwt_test_run_free(&r);
}

/* A full aggregation keeps its first keys and counts the rest, the same
 * on both paths, and says so after the aggregations. */
static void test_full_map_drops_and_counts(void **state)
{
	const char *p = hwt_test_prog("probe_calls");
	struct both b;

	(void)state;
	NEED_BPF();
	/* 16 bytes a key (8 + 8): 100 keys */
	run_both(&b, "-x aggsize=1600 'uprobe:%s:probe_work { @[arg0] = count() }' -- %s 500", p,
		 p);
	assert_same(&b);
	assert_true(hwt_test_contains(b.bpf.out, "\n  99  1\n"));
	assert_false(hwt_test_contains(b.bpf.out, "\n  100  1\n"));
	for (int i = 0; i < 2; i++)
		assert_true(hwt_test_contains(i ? b.smp.err : b.bpf.err,
					      "@: 400 updates dropped: it holds at most 100 keys; "
					      "raise -x aggsize"));
	both_free(&b);
}

/* -v names each probe's path. */
static void test_verbose_paths(void **state)
{
	const char *p = hwt_test_prog("probe_calls");
	struct hwt_test_run r;

	(void)state;
	NEED_BPF();
	hwt_test_run(&r,
		     "%s trace -v 'uprobe:%s:probe_work { @a[arg0 %% 3] = count() } "
		     "uprobe:%s:probe_outer { @b = count() }' -- %s 30",
		     hwt_test_hwtrace(), p, p, p);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "probe_work: BPF (a program of "));
	assert_true(hwt_test_contains(r.err, "probe_outer: counter (its clauses only count"));
	hwt_test_run_free(&r);
	hwt_test_run(
	    &r, "%s trace -v --no-bpf 'uprobe:%s:probe_work { @a[arg0 %% 3] = count() }' -- %s 3",
	    hwt_test_hwtrace(), p, p);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "probe_work: sampling (--no-bpf"));
	hwt_test_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_doc_calls_and_sum),
	    cmocka_unit_test(test_doc_latency),
	    cmocka_unit_test(test_doc_retval_stacks),
	    cmocka_unit_test(test_doc_tracepoint),
	    cmocka_unit_test(test_doc_profile),
	    cmocka_unit_test(test_doc_page_faults),
	    cmocka_unit_test(test_doc_printf_exit),
	    cmocka_unit_test(test_verifier_rejection_falls_back),
	    cmocka_unit_test(test_no_bpf_form_falls_back_together),
	    cmocka_unit_test(test_no_permission_falls_back),
	    cmocka_unit_test(test_thread_locals_across_migrations),
	    cmocka_unit_test(test_str_of_an_argument),
	    cmocka_unit_test(test_interval_and_maps),
	    cmocka_unit_test(test_interval_one_cpu_under_load),
	    cmocka_unit_test(test_full_map_drops_and_counts),
	    cmocka_unit_test(test_verbose_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
