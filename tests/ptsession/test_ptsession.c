/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/ptsession/test_ptsession.c - PT recordings decoded with their
 * sideband, against control flow known from the program: tests/progs/
 * pts_prog.c is recorded once with `hwtrace record --pt=emulate` and its
 * exact call, return, branch and instruction counts per function are checked
 * in `script --itrace` and `--flow` output and through the ptsession API
 * (including the PLT call into a shared library, the dlopen'd library, the
 * forked child, and the instruction total the emulator counted); code
 * replaced at the same address over time (pts_remap); the recording
 * rewritten per CPU with switch records decodes to the same flow; parallel
 * and libipt decoding equal the sequential fast decode; pid and time
 * filters; damaged recordings give counted gaps and one error line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/pkt.h"
#include "ptsession/ptsession.h"
#include "tests/lib/ptsplit.h"
#include "tests/lib/testutil.h"

static char *dir;
static char trace[512];
static bool recorded;
static uint64_t emu_insns; /* the emulator's own instruction count */
static const char *skip_reason;

static int setup(void **state)
{
	struct hwt_test_run r;
	const char *p;

	(void)state;
	dir = hwt_test_tmpdir();
	if (system("qemu-x86_64 --version >/dev/null 2>&1") != 0) {
		skip_reason = "qemu-x86_64 is not installed (Debian package qemu-user)";
		return 0;
	}
	snprintf(trace, sizeof(trace), "%s/p.hwt", dir);
	hwt_test_run(&r, "%s record --pt=emulate -o %s -- %s %s/progs/libpts_lib.so",
		     hwt_test_hwtrace(), trace, hwt_test_prog("pts_prog"), hwt_test_binary_dir());
	if (r.status != 0) {
		/* qemu is here: the recording failing is hwtrace's failure. */
		fprintf(stderr, "record --pt=emulate failed: %s", r.err);
		hwt_test_run_free(&r);
		return -1;
	}
	/* "... 2 threads, 127998 instructions, ..." */
	p = strstr(r.err, " threads, ");
	if (!p)
		p = strstr(r.err, " thread, ");
	if (p)
		emu_insns = strtoull(strchr(p, ',') + 2, NULL, 10);
	hwt_test_run_free(&r);
	recorded = true;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(dir);
	return 0;
}

static bool need_recording(void)
{
	if (!recorded)
		hwt_test_skip("%s", skip_reason ? skip_reason : "no recording");
	return recorded;
}

/* Lines of text that contain every one of the needles (NULL-terminated). */
static unsigned count_lines(const char *text, ...)
{
	unsigned n = 0;

	for (const char *l = text; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char *line = strndup(l, len);
		bool all = true;
		va_list ap;
		const char *needle;

		va_start(ap, text);
		while ((needle = va_arg(ap, const char *)))
			all &= strstr(line, needle) != NULL;
		va_end(ap);
		n += all;
		free(line);
		l = e ? e + 1 : NULL;
	}
	return n;
}

static void script(struct hwt_test_run *r, const char *opts)
{
	hwt_test_run(r, "%s script -q -i %s %s", hwt_test_hwtrace(), trace, opts);
	if (r->status != 0)
		fprintf(stderr, "script %s: %s\n", opts, r->err);
	assert_int_equal(r->status, 0);
}

/* --itrace=c / r / b / i: exact counts per function. */
static void test_itrace_counts(void **state)
{
	struct hwt_test_run r;

	(void)state;
	if (!need_recording())
		return;
	script(&r, "--itrace=c");
	assert_int_equal(count_lines(r.out, "call: ", "=> ", " leaf+0x0 (", NULL), 250);
	assert_int_equal(count_lines(r.out, "call: ", " pts_lib_add@plt+0x0 (", NULL), 40);
	assert_int_equal(count_lines(r.out, "call: ", " pts_dl_mul+0x0 (", "libpts_lib.so)", NULL),
			 30);
	assert_int_equal(count_lines(r.out, "call: ", " child_work+0x0 (", NULL), 17);
	assert_int_equal(count_lines(r.out, "call: ", " before_exec+0x0 (", NULL), 1);
	assert_int_equal(count_lines(r.out, "call: ", " spin+0x0 (", NULL), 3);
	assert_int_equal(count_lines(r.out, "return: ", NULL), 0);
	assert_int_equal(count_lines(r.out, "branch: ", NULL), 0);
	/* comm, pid/tid and time on every line */
	assert_int_equal(count_lines(r.out, "pts_prog ", " leaf+0x0 (", ".", NULL), 250);
	hwt_test_run_free(&r);

	script(&r, "--itrace=r");
	assert_int_equal(count_lines(r.out, "return: ", " leaf+0x", NULL), 250);
	assert_int_equal(count_lines(r.out, "return: ", " spin+0x5 (", NULL), 3);
	assert_int_equal(count_lines(r.out, "return: ", " child_work+0x", NULL), 17);
	assert_int_equal(count_lines(r.out, "call: ", NULL), 0);
	hwt_test_run_free(&r);

	/* spin: jnz taken 99 times then ret, per call. */
	script(&r, "--itrace=b");
	assert_int_equal(count_lines(r.out, "branch: ", " spin+0x3 (", "=> ", " spin+0x0 (", NULL),
			 3 * 99);
	assert_int_equal(count_lines(r.out, "branch: ", " spin+0x5 (", NULL), 3);
	/* The PLT stub jumps into the library (the first call via the lazy
	 * resolver): one taken branch to pts_lib_add per call. */
	assert_int_equal(
	    count_lines(r.out, "branch: ", "=> ", " pts_lib_add+0x0 (", "libpts_lib.so)", NULL),
	    40);
	hwt_test_run_free(&r);

	/* spin: dec, jnz per iteration, then ret. */
	script(&r, "--itrace=i --tid 0 --comm nosuchcomm");
	assert_int_equal(count_lines(r.out, "insn: ", NULL), 0);
	hwt_test_run_free(&r);
	script(&r, "--itrace=i");
	assert_int_equal(count_lines(r.out, "insn: ", " spin+0x0 (", NULL), 300);
	assert_int_equal(count_lines(r.out, "insn: ", " spin+0x3 (", NULL), 300);
	assert_int_equal(count_lines(r.out, "insn: ", " spin+0x5 (", NULL), 3);
	assert_int_equal(count_lines(r.out, "insn: ", " leaf+0x", NULL), 2 * 250);
	if (emu_insns)
		assert_int_equal(count_lines(r.out, "insn: ", NULL), emu_insns);
	hwt_test_run_free(&r);
}

/* The child's trace is its own process (fork copies the image). */
static void test_fork_pid_filter(void **state)
{
	struct hwt_test_run r;
	char opts[128], *p;
	long child;

	(void)state;
	if (!need_recording())
		return;
	script(&r, "--itrace=c");
	p = strstr(r.out, " child_work+0x0 (");
	assert_non_null(p);
	/* streams in the order their threads started: the parent first */
	assert_true(strstr(r.out, " leaf+0x0 (") < p);
	while (p > r.out && p[-1] != '\n')
		p--;
	/* "        pts_prog  30873/30873  ..." */
	child = strtol(strchr(p + strspn(p, " "), ' '), NULL, 10);
	assert_true(child > 0);
	hwt_test_run_free(&r);

	snprintf(opts, sizeof(opts), "--itrace=c --pid %ld", child);
	script(&r, opts);
	assert_int_equal(count_lines(r.out, " child_work+0x0 (", NULL), 17);
	assert_int_equal(count_lines(r.out, " leaf+0x0 (", NULL), 0);
	assert_int_equal(count_lines(r.out, "call: ", NULL),
			 count_lines(r.out, "call: ", "/", NULL)); /* all symbolized lines */
	hwt_test_run_free(&r);
}

/* --flow: calls and returns by depth, with durations and instructions. */
static void test_flow(void **state)
{
	struct hwt_test_run r;
	const char *a, *b;
	size_t ia = 0, ib = 0;

	(void)state;
	if (!need_recording())
		return;
	script(&r, "--flow");
	assert_int_equal(count_lines(r.out, "-> leaf (", NULL), 250);
	assert_int_equal(count_lines(r.out, "<- leaf (", " ns, 2 insns", NULL), 250);
	assert_int_equal(count_lines(r.out, "-> spin (", NULL), 3);
	assert_int_equal(count_lines(r.out, "<- spin (", ", 201 insns", NULL), 3);
	assert_int_equal(count_lines(r.out, "-> child_work (", NULL), 17);
	assert_int_equal(count_lines(r.out, "-> pts_dl_mul (", NULL), 30);
	/* leaf is one level (two spaces) below main: count the indentation
	 * between the time's ": " and the arrow. */
	a = strstr(r.out, "-> main (");
	b = strstr(r.out, "-> leaf (");
	assert_non_null(a);
	assert_non_null(b);
	while (a[-1] == ' ') {
		a--;
		ia++;
	}
	while (b[-1] == ' ') {
		b--;
		ib++;
	}
	assert_int_equal(ib, ia + 2);
	hwt_test_run_free(&r);
}

/* Every engine prints the same instructions, as many as the emulator ran
 * (the time column aside: each engine times a block at its start, and
 * libipt's blocks run longer); the engines with call stacks print the same
 * flow, and the ptxed engine, which has none, refuses --flow. */
static void test_engines_print_the_same(void **state)
{
	static const char *const engines[] = {"fast", "libipt", "ptxed"};
	struct hwt_test_run r;

	(void)state;
	if (!need_recording())
		return;
	for (size_t e = 0; e < HWT_ARRAY_SIZE(engines); e++) {
		hwt_test_run(&r,
			     "%s script -q -i %s --itrace=i --engine=%s | awk '{$3 = \"\"; print}' "
			     "> %s/insns-%s",
			     hwt_test_hwtrace(), trace, engines[e], dir, engines[e]);
		assert_int_equal(r.status, 0);
		hwt_test_run_free(&r);
	}
	hwt_test_run(&r,
		     "cmp %s/insns-fast %s/insns-libipt && cmp %s/insns-fast %s/insns-ptxed && "
		     "grep -c ' insn: ' %s/insns-fast",
		     dir, dir, dir, dir, dir);
	assert_int_equal(r.status, 0);
	if (emu_insns)
		assert_int_equal(strtoull(r.out, NULL, 10), emu_insns);
	hwt_test_run_free(&r);
	hwt_test_run(&r,
		     "%s script -q -i %s --flow > %s/flow-fast && %s script -q -i %s --flow "
		     "--engine libipt | cmp %s/flow-fast -",
		     hwt_test_hwtrace(), trace, dir, hwt_test_hwtrace(), trace, dir);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script -q -i %s --flow --engine ptxed", hwt_test_hwtrace(), trace);
	assert_int_equal(r.status, 2);
	assert_true(hwt_test_contains(r.err, "without call stacks"));
	hwt_test_run_free(&r);
}

/* Different code at the same address over time (pts_remap): each call is
 * decoded with the mapping of its time, through the context hook, also on
 * two threads; and symbolized with that mapping's object. */
/* From `hwtrace -v`'s stderr: how many segments the fast engine decoded
 * (fails the test when the line is missing). */
static long fast_segments(const char *err)
{
	const char *p = strstr(err, "PT decoding: ");
	long segs, by_ipt;

	assert_non_null(p);
	assert_int_equal(
	    sscanf(p, "PT decoding: %ld segments, %ld of them by libipt", &segs, &by_ipt), 2);
	assert_true(by_ipt <= segs);
	return segs - by_ipt;
}

static void test_remap(void **state)
{
	struct hwt_test_run r, r2;
	char path[600], code[600], opts[700];
	uint64_t insns = 0;
	const char *p;

	(void)state;
	if (!need_recording())
		return;
	snprintf(path, sizeof(path), "%s/remap.hwt", dir);
	snprintf(code, sizeof(code), "%s/code", dir);
	hwt_test_run(&r, "mkdir -p %s && %s record --pt=emulate -o %s -- %s %s", code,
		     hwt_test_hwtrace(), path, hwt_test_prog("pts_remap"), code);
	assert_int_equal(r.status, 0);
	p = strstr(r.err, " thread, ");
	assert_non_null(p);
	insns = strtoull(p + 9, NULL, 10);
	assert_true(insns > 0);
	hwt_test_run_free(&r);

	hwt_test_run(&r, "%s -v script -i %s --itrace=ie", hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "code and thread by time (context hook)"));
	snprintf(opts, sizeof(opts), "(%s/code_a)", code);
	assert_int_equal(count_lines(r.out, "insn:         70000000 ", opts, NULL), 5);
	assert_int_equal(count_lines(r.out, "insn:         70000004 ", opts, NULL), 5);
	snprintf(opts, sizeof(opts), "(%s/code_b)", code);
	assert_int_equal(count_lines(r.out, "insn:         70000000 ", opts, NULL), 7);
	assert_int_equal(count_lines(r.out, "insn:         70000005 ", opts, NULL), 7);
	assert_int_equal(count_lines(r.out, "insn:         70000009 ", opts, NULL), 7);
	assert_int_equal(count_lines(r.out, "insn:         70000002 ", NULL), 0);
	assert_int_equal(count_lines(r.out, "insn: ", NULL), insns);
	assert_int_equal(count_lines(r.out, "decode error", NULL), 0);
	hwt_test_run_free(&r);

	snprintf(opts, sizeof(opts), "-q -i %s --itrace=bcre", path);
	hwt_test_run(&r, "%s script %s", hwt_test_hwtrace(), opts);
	hwt_test_run(&r2, "%s script %s --threads 2", hwt_test_hwtrace(), opts);
	assert_int_equal(r.status, 0);
	assert_int_equal(r2.status, 0);
	assert_string_equal(r.out, r2.out);
	hwt_test_run_free(&r);
	hwt_test_run_free(&r2);

	/* The fast engine leaves a segment whose time span has two images
	 * to libipt (here the only one: the trace is shorter than a PSB
	 * period): the same instructions as libipt's alone. */
	snprintf(opts, sizeof(opts), "-i %s --itrace=ie", path);
	hwt_test_run(&r, "%s -v script %s", hwt_test_hwtrace(), opts);
	hwt_test_run(&r2, "%s script %s --engine libipt", hwt_test_hwtrace(), opts);
	assert_int_equal(r.status, 0);
	assert_int_equal(r2.status, 0);
	assert_string_equal(r.out, r2.out);
	assert_int_equal(fast_segments(r.err), 0);
	hwt_test_run_free(&r);
	hwt_test_run_free(&r2);
}

/* A switch record, in the test. */
static void switch_in(struct hwt_fmt_writer *w, int swst, uint32_t pid, uint64_t time, uint32_t cpu)
{
	assert_int_equal(ptsplit_switch_in(w, swst, pid, time, cpu), 0);
}

/* The per-thread recording rewritten as a per-CPU one (the parent's PT on
 * CPU 0, the child's on CPU 1, SWITCH_CPU_WIDE records saying who ran
 * where, pt.config.per_thread = 0): the threads now come from the switch
 * timeline through the context hook, and the flow is the same. */
static void make_per_cpu(const char *in, const char *out, bool migrate)
{
	struct hwt_fmt_session *s;
	struct hwt_fmt_writer *w;
	uint64_t start[2] = {0}, last;
	uint32_t pid[2] = {0};
	int swst, aux[2];
	uint8_t buf[65536];
	uint32_t nstart;

	assert_int_equal(ptsplit_copy(in, out, &s, &w, &swst, pid, start, 2, &last, &nstart), 0);
	assert_int_equal(nstart, 2);
	switch_in(w, swst, pid[0], start[0], 0);
	switch_in(w, swst, pid[1], start[1], 1);
	/* migrate: the parent also runs on CPU 1, after every other record
	 * (no trace left then: the flow is the same, the thread counts as
	 * one that ran on two CPUs). */
	if (migrate)
		switch_in(w, swst, pid[0], last + 1000000, 1);
	for (size_t a = 0; a < hwt_fmt_session_naux(s); a++) {
		const struct hwt_fmt_aux_stream *as = hwt_fmt_session_aux(s, a);
		const struct hwt_fmt_aux_segment *g = hwt_fmt_session_aux_segment(s, a, 0);
		int64_t n;
		size_t cpu = (uint32_t)as->tid == pid[0] ? 0 : 1;

		aux[cpu] =
		    hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, (int32_t)cpu, -1, "pt.cpu");
		assert_true(aux[cpu] >= 0);
		assert_int_equal(as->nsegments, 1);
		n = hwt_fmt_session_aux_read(s, a, 0, 0, buf, sizeof(buf));
		assert_true(n > 0 && (uint64_t)n == g->size);
		assert_int_equal(hwt_fmt_writer_aux(w, (uint32_t)aux[cpu], 0, buf, (size_t)n), 0);
	}
	assert_int_equal(hwt_fmt_writer_close(w), 0);
	hwt_fmt_session_close(s);
}

static void test_per_cpu(void **state)
{
	struct hwt_test_run r, t;
	char path[600];

	(void)state;
	if (!need_recording())
		return;
	snprintf(path, sizeof(path), "%s/percpu.hwt", dir);
	make_per_cpu(trace, path, false);
	hwt_test_run(&r, "%s -v script -i %s --itrace=bcre", hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "PT stream 0 (cpu 0): code and thread by time"));
	assert_true(hwt_test_contains(r.err, "2 PT stream(s) (per CPU)"));
	assert_int_equal(count_lines(r.out, "call: ", " leaf+0x0 (", NULL), 250);
	assert_int_equal(count_lines(r.out, "call: ", " child_work+0x0 (", NULL), 17);
	assert_int_equal(count_lines(r.out, "decode error", NULL), 0);
	/* the same lines as the per-thread recording, thread for thread */
	script(&t, "--itrace=bcre");
	assert_string_equal(r.out, t.out);
	hwt_test_run_free(&t);
	/* ... and as libipt alone, the fast engine taking the segments
	 * without a switch */
	assert_true(fast_segments(r.err) > 0);
	hwt_test_run(&t, "%s script -i %s --itrace=bcre --engine libipt", hwt_test_hwtrace(), path);
	assert_int_equal(t.status, 0);
	assert_string_equal(r.out, t.out);
	hwt_test_run_free(&r);
	hwt_test_run_free(&t);
}

/* A thread that ran on two CPUs: the reports say that its call stack
 * restarts on each CPU's trace (here nothing of it is traced on the second
 * one, so the flow and the counts are the same as without). */
static void test_per_cpu_migrated(void **state)
{
	struct hwt_test_run r, t;
	char path[600], plain[600];

	(void)state;
	if (!need_recording())
		return;
	snprintf(path, sizeof(path), "%s/migrated.hwt", dir);
	snprintf(plain, sizeof(plain), "%s/percpu2.hwt", dir);
	make_per_cpu(trace, path, true);
	make_per_cpu(trace, plain, false);
	/* The same lines; the migrated one's (the CPUs decoded together)
	 * in time order across the two threads. */
	hwt_test_run(&r, "%s script -i %s --itrace=bcre | sort", hwt_test_hwtrace(), path);
	hwt_test_run(&t, "%s script -i %s --itrace=bcre | sort", hwt_test_hwtrace(), plain);
	assert_int_equal(r.status, 0);
	assert_int_equal(t.status, 0);
	assert_true(count_lines(r.out, " call: ", NULL) > 1000);
	assert_string_equal(r.out, t.out);
	hwt_test_run_free(&r);
	hwt_test_run_free(&t);
	hwt_test_run(&r, "%s script -i %s --itrace=bcre --ns | awk '{print $3}' | LC_ALL=C sort -c",
		     hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_lines(r.err, "1 thread(s) ran on more than one CPU",
				     "decoded together in time order", NULL),
			 1);
	hwt_test_run_free(&r);
	hwt_test_run(&t, "%s script -i %s --itrace=bcre --ns | awk '{print $3}' | LC_ALL=C sort -c",
		     hwt_test_hwtrace(), plain);
	assert_int_not_equal(t.status, 0); /* stream after stream */
	assert_int_equal(count_lines(t.err, "ran on more than one CPU", NULL), 0);
	hwt_test_run_free(&t);
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), path);
	hwt_test_run(&t, "%s report -i %s --calls", hwt_test_hwtrace(), plain);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, t.out);
	assert_int_equal(count_lines(r.err, "warning: ", NULL), 0);
	hwt_test_run_free(&r);
	hwt_test_run_free(&t);
}

/* A one-thread recording rewritten as a per-CPU one in which the thread
 * moves: the PT from a third of the way to two thirds (cut at PSBs) runs
 * on CPU 1, the rest on CPU 0, with the packets a preemption writes at the
 * cuts and the switch records (tests/lib/ptsplit.h). Returns the
 * instructions the emulator counted. */
static uint64_t make_split_cpu(const char *out)
{
	char in[600], why[256];
	struct hwt_test_run r;
	uint64_t insns;
	const char *p;

	snprintf(in, sizeof(in), "%s/one.hwt", dir);
	hwt_test_run(&r, "%s record --pt=emulate,psb_period=0 -o %s -- %s 1", hwt_test_hwtrace(),
		     in, hwt_test_prog("conv_long"));
	assert_int_equal(r.status, 0);
	p = strstr(r.err, " thread, ");
	assert_non_null(p);
	insns = strtoull(p + 9, NULL, 10);
	hwt_test_run_free(&r);
	if (ptsplit_write(in, out, 3, 2, why, sizeof(why)) != 0)
		fail_msg("%s", why);
	return insns;
}

/* The instructions a script run reports in its summary line. */
static unsigned long long summary_insns(const struct hwt_test_run *r)
{
	const char *p = strstr(r->err, " bytes: ");

	assert_non_null(p);
	return strtoull(p + 8, NULL, 10);
}

/* A thread whose trace continues on another CPU and comes back: the CPUs'
 * streams are decoded together in time order and its call stack carries
 * over, so every view is the one of the same trace recorded per thread:
 * the same records in the same order, the same stacks and counts. Only
 * times may differ, at the cuts: the decoder stamps the last blocks before
 * a PSB (one thread) or a disable (split) with a time read after them,
 * which the split recording's switch then bounds. */
static void test_split_cpu(void **state)
{
	static const struct {
		const char *view, *untimed;
	} views[] = {
	    {"script --itrace=bcre", "awk '{$3 = \"\"; print}'"},
	    {"script --flow",
	     "sed -E 's/^( *[^ ]+ +[^ ]+ +)[0-9.]+:/\\1/; s/\\) [0-9.]+ [nu]s, /) /'"},
	    {"report --calls", "awk '{print $1, $2, $3, $NF}'"},
	    {"flame -o - --format folded", "cat"},
	    {"flame -o - --format chrome", "grep -o '\"name\":\"[^\"]*\"'"},
	    {"branches cmp_entry", "cat"},
	    /* A time window across both cuts: the lanes stop early. */
	    {"script --itrace=cr --time 1.0002,1.0006", "awk '{$3 = \"\"; print}'"},
	};
	struct hwt_test_run r, t;
	char path[600], one[600];
	unsigned long long decoded;
	uint64_t insns;

	(void)state;
	if (!need_recording())
		return;
	snprintf(path, sizeof(path), "%s/split.hwt", dir);
	snprintf(one, sizeof(one), "%s/one.hwt", dir);
	insns = make_split_cpu(path);

	hwt_test_run(&r, "%s script -i %s --itrace=c", hwt_test_hwtrace(), path);
	hwt_test_run(&t, "%s script -i %s --itrace=c", hwt_test_hwtrace(), one);
	assert_int_equal(r.status, 0);
	assert_int_equal(t.status, 0);
	assert_true(count_lines(t.out, "call: ", NULL) > 1000);
	assert_int_equal(count_lines(r.err, "2 PT stream(s) (per CPU)", NULL), 1);
	assert_int_equal(count_lines(r.err, "1 thread(s) ran on more than one CPU",
				     "decoded together in time order", NULL),
			 1);
	/* Nothing lost, nothing counted twice. (The per-thread decode
	 * follows direct branches a few instructions past the emulator's
	 * end.) */
	decoded = summary_insns(&r);
	assert_int_equal(decoded, summary_insns(&t));
	assert_true(decoded >= insns && decoded - insns < 100);
	assert_int_equal(count_lines(r.out, "decode error", NULL), 0);
	hwt_test_run_free(&r);
	hwt_test_run_free(&t);

	for (size_t i = 0; i < HWT_ARRAY_SIZE(views); i++) {
		hwt_test_run(&r, "%s %s -i %s > %s/view && %s < %s/view", hwt_test_hwtrace(),
			     views[i].view, path, dir, views[i].untimed, dir);
		hwt_test_run(&t, "%s %s -i %s > %s/view && %s < %s/view", hwt_test_hwtrace(),
			     views[i].view, one, dir, views[i].untimed, dir);
		assert_int_equal(r.status, 0);
		assert_int_equal(t.status, 0);
		assert_true(strlen(t.out) > 500);
		if (strcmp(r.out, t.out))
			fail_msg("hwtrace %s: the split recording's output differs", views[i].view);
		assert_int_equal(count_lines(r.err, "warning: ", NULL), 0);
		hwt_test_run_free(&r);
		hwt_test_run_free(&t);
	}
}

/* flame weighted by instructions takes calls and returns in batches
 * without their times; a time window needs every record's time, so it
 * takes records: the same stacks either way, the dlopen'd library's
 * function (mapped after the trace began) named, with one stack line. */
static void test_flame_batches(void **state)
{
	struct hwt_test_run r, t;
	char line[160];

	(void)state;
	if (!need_recording())
		return;
	hwt_test_run(&r, "%s flame -q -i %s -o - --format folded", hwt_test_hwtrace(), trace);
	hwt_test_run(&t, "%s flame -q -i %s -o - --format folded --time 0,999999999",
		     hwt_test_hwtrace(), trace);
	assert_int_equal(r.status, 0);
	assert_int_equal(t.status, 0);
	assert_true(strlen(r.out) > 500);
	assert_string_equal(r.out, t.out);
	assert_int_equal(count_lines(r.out, ";main;pts_dl_mul ", NULL), 1);
	assert_int_equal(count_lines(r.out, ";main;leaf ", NULL), 1);
	hwt_test_run_free(&t);
	/* leaf's instructions: LEAF_CALLS calls, the same count each, all
	 * its own (the calls table counts them from the records). */
	hwt_test_run(&t, "%s report --calls -q -i %s", hwt_test_hwtrace(), trace);
	assert_int_equal(t.status, 0);
	{
		const char *p = strstr(t.out, " leaf\n");
		const char *b = p;
		unsigned long long calls, self;

		assert_non_null(p);
		while (b > t.out && b[-1] != '\n')
			b--;
		assert_int_equal(sscanf(b, "%llu %llu", &calls, &self), 2);
		assert_int_equal(calls, 250);
		assert_int_equal(self % 250, 0);
		snprintf(line, sizeof(line), ";main;leaf %llu\n", self);
		assert_true(hwt_test_contains(r.out, line));
	}
	hwt_test_run_free(&r);
	hwt_test_run_free(&t);
}

/* The traced program is gone, then replaced by another file: it is named
 * once, its code gives decode-error gaps, and the rest (the libraries)
 * still decodes. */
static void test_missing_binary(void **state)
{
	struct hwt_test_run r;
	char app[600];

	(void)state;
	if (!need_recording())
		return;
	snprintf(app, sizeof(app), "%s/app", dir);
	hwt_test_run(
	    &r,
	    "cp %s %s && %s record --pt=emulate -o %s/app.hwt -- %s %s/progs/libpts_lib.so "
	    "&& rm %s",
	    hwt_test_prog("pts_prog"), app, hwt_test_hwtrace(), dir, app, hwt_test_binary_dir(),
	    app);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);

	hwt_test_run(&r, "%s script -i %s/app.hwt --itrace=ce", hwt_test_hwtrace(), dir);
	assert_int_equal(r.status, 0);
	assert_int_equal(
	    count_lines(r.err, app, "No such file or directory", "cannot be decoded", NULL), 1);
	assert_int_equal(count_lines(r.err, "warning: ", NULL), 1);
	assert_true(count_lines(r.out, "decode error: no memory mapped", NULL) > 0);
	assert_int_equal(count_lines(r.out, " leaf+0x0 (", NULL), 0);
	/* the shared library's code still decodes */
	assert_true(count_lines(r.out, "call: ", "libc.so", NULL) > 0);
	hwt_test_run_free(&r);

	/* Another, smaller file at its path: not the recorded code. */
	hwt_test_run(&r, "printf 'not the program' > %s && %s script -i %s/app.hwt --itrace=ce",
		     app, hwt_test_hwtrace(), dir);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_lines(r.err, app, "changed since the recording", NULL), 1);
	assert_int_equal(count_lines(r.out, " leaf+0x0 (", NULL), 0);
	assert_true(count_lines(r.out, "decode error: no memory mapped", NULL) > 0);
	hwt_test_run_free(&r);
}

/* --- the API --------------------------------------------------------------- */

struct counts {
	struct hwt_pts *pts;
	uint64_t calls_leaf, rets_leaf, calls_child, records, insn_sum;
	int32_t parent_pid, child_pid;
	uint64_t hash;
	/* Order-free: the sum of the records' hashes and their number,
	 * switch records left out. */
	uint64_t xsum, xrecords;
};

static bool is_func(struct hwt_pts *pts, int32_t pid, uint64_t time, uint64_t ip, const char *name)
{
	struct hwt_pts_sym sym;

	return hwt_pts_symbolize(pts, pid, time, ip, &sym) == 0 && !strcmp(sym.function, name) &&
	       sym.offset == 0;
}

static int count_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct counts *c = ctx;
	uint64_t v[6] = {rec->type,  (uint64_t)rec->pid << 32 | (uint32_t)rec->tid,
			 rec->insns, rec->time,
			 rec->depth, 0};

	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		v[5] = rec->u.block.ip ^ (uint64_t)rec->u.block.ninsn << 48;
		c->insn_sum += rec->u.block.ninsn;
		break;
	case HWT_DEC_REC_CALL:
		v[5] = rec->u.call.to;
		if (is_func(c->pts, rec->pid, rec->time, rec->u.call.to, "leaf")) {
			c->calls_leaf++;
			c->parent_pid = rec->pid;
		}
		if (is_func(c->pts, rec->pid, rec->time, rec->u.call.to, "child_work")) {
			c->calls_child++;
			c->child_pid = rec->pid;
		}
		break;
	case HWT_DEC_REC_RETURN:
		v[5] = rec->u.ret.func;
		c->rets_leaf += rec->u.ret.func &&
				is_func(c->pts, rec->pid, rec->time, rec->u.ret.func, "leaf");
		break;
	default:
		break;
	}
	for (size_t i = 0; i < 6; i++)
		c->hash = (c->hash ^ v[i]) * 0x100000001b3ull;
	c->records++;
	if (rec->type != HWT_DEC_REC_SWITCH) {
		uint64_t h = 0xcbf29ce484222325ull;
		uint64_t w[3] = {rec->flags, 0, 0};

		if (rec->type == HWT_DEC_REC_RETURN) {
			w[1] = rec->u.ret.insns;
			w[2] = rec->u.ret.call_tsc;
		}
		for (size_t i = 0; i < 6; i++)
			h = (h ^ v[i]) * 0x100000001b3ull;
		for (size_t i = 0; i < 3; i++)
			h = (h ^ w[i]) * 0x100000001b3ull;
		c->xsum += h;
		c->xrecords++;
	}
	return 0;
}

static void decode(const char *path, struct hwt_pts_config *cfg, struct counts *c,
		   struct hwt_pts_stats *st)
{
	struct hwt_fmt_session *s;
	struct hwt_dec_sink sink = {sizeof(sink), 0, count_rec, c, NULL, NULL, NULL};
	uint64_t off = 0;

	memset(c, 0, sizeof(*c));
	c->hash = 0xcbf29ce484222325ull;
	assert_int_equal(hwt_fmt_session_open(&s, path, NULL, &off), 0);
	assert_true(hwt_pts_session_has_pt(s));
	assert_int_equal(hwt_pts_open(&c->pts, s, cfg, &off), 0);
	assert_int_equal(hwt_pts_add_sink(c->pts, &sink), 0);
	assert_int_equal(hwt_pts_run(c->pts), 0);
	assert_int_equal(hwt_pts_run(c->pts), -HWT_EINVAL); /* once */
	hwt_pts_stats(c->pts, st);
	hwt_pts_close(c->pts);
	c->pts = NULL;
	hwt_fmt_session_close(s);
}

static void test_api(void **state)
{
	struct hwt_pts_config cfg;
	struct hwt_pts_stats st;
	struct counts c;

	(void)state;
	if (!need_recording())
		return;
	hwt_pts_config_init(&cfg);
	decode(trace, &cfg, &c, &st);
	assert_int_equal(c.calls_leaf, 250);
	assert_int_equal(c.rets_leaf, 250);
	assert_int_equal(c.calls_child, 17);
	assert_true(c.parent_pid > 0 && c.child_pid > 0 && c.parent_pid != c.child_pid);
	assert_true(st.emulated);
	assert_false(st.per_cpu);
	assert_int_equal(st.streams, 2);
	assert_int_equal(st.streams_decoded, 2);
	assert_int_equal(st.dec.gaps, 0);
	assert_int_equal(st.lost_gaps, 0);
	assert_int_equal(st.read_errors, 0);
	assert_int_equal(st.missing_objects, 0);
	assert_int_equal(st.dec.insns, c.insn_sum);
	if (emu_insns)
		assert_int_equal(st.dec.insns, emu_insns);

	/* pid filter through the API: only the child's stream. */
	cfg.pids = &c.child_pid;
	cfg.npids = 1;
	{
		struct counts c2;
		struct hwt_pts_stats st2;

		decode(trace, &cfg, &c2, &st2);
		assert_int_equal(c2.calls_child, 17);
		assert_int_equal(c2.calls_leaf, 0);
		assert_int_equal(st2.streams_decoded, 1);
	}
}

/* Stitching through the API. Forced on a per-CPU recording where no
 * thread moves, it delivers the records of decoding each CPU alone (merged
 * by time, plus a switch record at each run), also with parallel segments;
 * on a recording where a thread moves it closes the returns into frames
 * entered on the other CPU, which a decode without it leaves unknown. */
static void test_stitch_api(void **state)
{
	struct hwt_pts_config cfg;
	struct hwt_pts_stats off_st, on_st, st;
	struct counts off, on, c;
	char path[600], split[600], one[600];

	(void)state;
	if (!need_recording())
		return;
	snprintf(path, sizeof(path), "%s/percpu3.hwt", dir);
	make_per_cpu(trace, path, false);
	hwt_pts_config_init(&cfg);
	cfg.stitch = HWT_PTS_STITCH_OFF;
	decode(path, &cfg, &off, &off_st);
	assert_false(off_st.stitched);
	cfg.stitch = HWT_PTS_STITCH_ON;
	decode(path, &cfg, &on, &on_st);
	assert_true(on_st.stitched);
	assert_true(off.xrecords > 1000);
	assert_int_equal(on.xrecords, off.xrecords);
	assert_int_equal(on.xsum, off.xsum);
	assert_int_equal(on.calls_leaf, 250);
	assert_int_equal(on_st.dec.insns, off_st.dec.insns);
	assert_int_equal(on_st.dec.unknown_returns, off_st.dec.unknown_returns);
	cfg.threads = 2;
	decode(path, &cfg, &c, &st);
	assert_int_equal(c.xsum, off.xsum);
	assert_int_equal(c.records, on.records);
	assert_int_equal(c.hash, on.hash); /* the same merged order */
	cfg.threads = 1;
	cfg.stitch = HWT_PTS_STITCH_ON + 1;
	{
		struct hwt_fmt_session *s;
		struct hwt_pts *pts = NULL;
		uint64_t o = 0;

		assert_int_equal(hwt_fmt_session_open(&s, path, NULL, &o), 0);
		assert_int_equal(hwt_pts_open(&pts, s, &cfg, &o), -HWT_EINVAL);
		assert_null(pts);
		hwt_fmt_session_close(s);
	}

	snprintf(split, sizeof(split), "%s/split2.hwt", dir);
	snprintf(one, sizeof(one), "%s/one.hwt", dir);
	make_split_cpu(split);
	hwt_pts_config_init(&cfg);
	decode(one, &cfg, &c, &st);
	decode(split, &cfg, &on, &on_st);
	assert_true(on_st.stitched); /* automatically: a thread moved */
	assert_int_equal(on_st.migrated_threads, 1);
	assert_true(on_st.stitched_returns > 0);
	assert_int_equal(on_st.dec.insns, st.dec.insns);
	assert_int_equal(on_st.dec.unknown_returns, st.dec.unknown_returns);
	cfg.stitch = HWT_PTS_STITCH_OFF;
	decode(split, &cfg, &off, &off_st);
	assert_false(off_st.stitched);
	assert_int_equal(off_st.dec.insns, st.dec.insns);
	/* Returns on CPU 1 into frames entered on CPU 0. */
	assert_true(off_st.dec.unknown_returns > st.dec.unknown_returns);
}

/* threads=2 and the libipt engine give the records of the sequential fast
 * decode, record for record. */
static void test_parallel_engines(void **state)
{
	struct hwt_pts_config cfg;
	struct hwt_pts_stats st;
	struct counts seq, par, ipt;
	struct hwt_test_run a, b;

	(void)state;
	if (!need_recording())
		return;
	hwt_pts_config_init(&cfg);
	decode(trace, &cfg, &seq, &st);
	cfg.threads = 2;
	decode(trace, &cfg, &par, &st);
	cfg.threads = 1;
	cfg.engine = HWT_DEC_ENGINE_LIBIPT;
	decode(trace, &cfg, &ipt, &st);
	assert_true(seq.records > 1000);
	assert_int_equal(par.records, seq.records);
	assert_int_equal(par.hash, seq.hash);
	assert_int_equal(ipt.records, seq.records);
	assert_int_equal(ipt.hash, seq.hash);

	script(&a, "--itrace=bcre");
	script(&b, "--itrace=bcre --threads 2");
	assert_string_equal(a.out, b.out);
	hwt_test_run_free(&b);
	script(&b, "--itrace=bcre --engine libipt");
	assert_string_equal(a.out, b.out);
	hwt_test_run_free(&a);
	hwt_test_run_free(&b);
}

/* --time: a range of the run keeps only the records inside it (at the
 * resolution of the trace's timing packets). */
static void test_time_filter(void **state)
{
	struct hwt_test_run r;
	char opts[128];
	const char *p;
	double t0;

	(void)state;
	if (!need_recording())
		return;
	script(&r, "--itrace=c --ns");
	/* The child's first call: every leaf call of the parent came long
	 * before the fork. */
	p = strstr(r.out, " child_work+0x0 (");
	assert_non_null(p);
	while (p > r.out && p[-1] != '\n')
		p--;
	/* "COMM PID/TID TIME: call: ..." */
	p = strchr(strchr(p, '/'), ' ');
	t0 = strtod(p, NULL);
	assert_true(t0 > 0);
	hwt_test_run_free(&r);
	snprintf(opts, sizeof(opts), "--itrace=c --time %.9f,", t0);
	script(&r, opts);
	assert_int_equal(count_lines(r.out, " leaf+0x0 (", NULL), 0);
	assert_int_equal(count_lines(r.out, " spin+0x0 (", NULL), 0);
	assert_int_equal(count_lines(r.out, " child_work+0x0 (", NULL), 17);
	hwt_test_run_free(&r);
	snprintf(opts, sizeof(opts), "--itrace=c --time ,%.9f", t0 - 1e-9);
	script(&r, opts);
	assert_int_equal(count_lines(r.out, " leaf+0x0 (", NULL), 250);
	assert_int_equal(count_lines(r.out, " spin+0x0 (", NULL), 3);
	assert_int_equal(count_lines(r.out, " child_work+0x0 (", NULL), 0);
	hwt_test_run_free(&r);
}

/* The file offset of the middle of the payload of the largest AUX chunk
 * (whose header is at *chunk). */
static uint64_t aux_middle(const char *path, uint32_t *raw, uint64_t *chunk)
{
	struct hwt_fmt_reader *rd;
	uint64_t best = 0;

	*raw = 0;
	assert_int_equal(hwt_fmt_reader_open(&rd, path, NULL, NULL), 0);
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(rd); i++) {
		const struct hwt_fmt_chunk *k = hwt_fmt_reader_chunk(rd, i);

		if (k->type == HWT_FMT_CHUNK_AUX && k->raw_size > *raw) {
			*raw = k->raw_size;
			*chunk = k->file_offset;
			best = k->file_offset + HWT_FMT_CHUNK_HEADER_SIZE + k->comp_size / 2;
		}
	}
	hwt_fmt_reader_close(rd);
	assert_true(best > 0);
	return best;
}

/* A damaged AUX chunk: its bytes are one counted gap, the rest decodes, and
 * one warning says the file is damaged in the words of every command
 * (exit 0: something was read). A file cut inside the
 * AUX data (a recorder killed): the data the AUX records announced but that
 * never reached the file are counted gaps, one per stream. Never a crash. */
static void test_damaged(void **state)
{
	struct hwt_test_run r;
	char want[256];
	uint64_t mid, chunk = 0;
	uint32_t raw;
	const char *last;

	(void)state;
	if (!need_recording())
		return;
	mid = aux_middle(trace, &raw, &chunk);
	hwt_test_run(&r,
		     "cd %s && cp p.hwt bad.hwt && printf 'XXXXXXXX' | dd of=bad.hwt bs=1 "
		     "seek=%" PRIu64 " conv=notrunc 2>/dev/null && %s script -i bad.hwt "
		     "--itrace=ce",
		     dir, mid, hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	last = r.err + strlen(r.err) - 1;
	while (last > r.err && last[-1] != '\n')
		last--;
	snprintf(want, sizeof(want),
		 "hwtrace: warning: bad.hwt is damaged: 1 chunk(s) failed their checks and were "
		 "skipped (the first at offset %" PRIu64 ": checksum mismatch); everything else "
		 "in it is read\n",
		 chunk);
	assert_string_equal(last, want);
	snprintf(want, sizeof(want), "(offset 0, %" PRIu32 " bytes)", raw);
	assert_int_equal(count_lines(r.out, "trace lost", want, NULL), 1);
	assert_int_equal(count_lines(r.out, "trace lost", NULL), 1);
	/* the other stream (the child) still decodes */
	assert_int_equal(count_lines(r.out, " child_work+0x0 (", NULL), 17);
	assert_int_equal(count_lines(r.out, " leaf+0x0 (", NULL), 0);
	hwt_test_run_free(&r);

	hwt_test_run(&r,
		     "cd %s && head -c %" PRIu64 " p.hwt > cut.hwt && %s script -i cut.hwt "
		     "--itrace=ce",
		     dir, mid, hwt_test_hwtrace());
	/* The sideband precedes the trace in the file, so it is all there;
	 * the trace the AUX records announce is not: two lost-trace gaps, no
	 * instruction, so the line is an error and the exit status 1. */
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want),
		 "hwtrace: error: cut.hwt did not end cleanly (its recorder was stopped before it "
		 "closed the file: killed, out of memory or a power cut): it ends inside a chunk "
		 "at offset %" PRIu64 " (the last %" PRIu64 " bytes cannot be read); nothing in "
		 "it could be read (record it again)\n",
		 chunk, mid - chunk);
	assert_true(hwt_test_contains(r.err, want));
	snprintf(want, sizeof(want), "(offset 0, %" PRIu32 " bytes)", raw);
	assert_int_equal(count_lines(r.out, "trace lost", want, NULL), 1);
	assert_int_equal(count_lines(r.out, "trace lost", NULL), 2);
	assert_true(hwt_test_contains(r.err, " 2 gaps (2 from lost trace, "));
	hwt_test_run_free(&r);

	/* Cuts anywhere: a result or one error line, never a crash. */
	for (uint64_t cut = 0; cut < mid; cut += 211) {
		hwt_test_run(&r,
			     "cd %s && head -c %" PRIu64 " p.hwt > cut.hwt && %s script -q "
			     "-i cut.hwt --itrace=e",
			     dir, cut, hwt_test_hwtrace());
		assert_true(r.status == 0 || r.status == 1);
		if (r.status == 1)
			assert_true(hwt_test_contains(r.err, "hwtrace: error: "));
		hwt_test_run_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_itrace_counts),
	    cmocka_unit_test(test_fork_pid_filter),
	    cmocka_unit_test(test_flow),
	    cmocka_unit_test(test_engines_print_the_same),
	    cmocka_unit_test(test_remap),
	    cmocka_unit_test(test_per_cpu),
	    cmocka_unit_test(test_per_cpu_migrated),
	    cmocka_unit_test(test_split_cpu),
	    cmocka_unit_test(test_flame_batches),
	    cmocka_unit_test(test_missing_binary),
	    cmocka_unit_test(test_api),
	    cmocka_unit_test(test_parallel_engines),
	    cmocka_unit_test(test_stitch_api),
	    cmocka_unit_test(test_time_filter),
	    cmocka_unit_test(test_damaged),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
