/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/ptflow/test_cli.c - the exact PT reports end to end through the
 * CLI: tests/progs/ptflow_known recorded with `hwtrace record
 * --pt=emulate`, then `report --calls`, `report`, `flame` (folded, SVG,
 * timeline JSON) and `branches` must show the counts the program is written
 * to make (leaf 1000 calls, its branch 700/300, dispatch's indirect call
 * 500/300/200 to op_a/op_b/op_c, rec 50 calls reaching rec+0 through ten
 * distinct stacks), and wrong input must give one-line errors with the
 * documented exit codes. The outputs name what they count: instructions
 * and distinct stacks (never samples), one count of functions in every
 * command, the emulator's clock and addresses said as such, "1 thread".
 * With an address filter, calls that leave the range return untraced and
 * still close their frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/testutil.h"

static char *dir;
static char pt[512], samples[512];
static bool skip;

static int setup(void **state)
{
	struct hwt_test_run r;

	(void)state;
	if (system("qemu-x86_64 --version >/dev/null 2>&1") != 0) {
		skip = true;
		return 0;
	}
	dir = hwt_test_tmpdir();
	snprintf(pt, sizeof(pt), "%s/known.hwt", dir);
	snprintf(samples, sizeof(samples), "%s/samples.hwt", dir);
	hwt_test_run(&r, "%s record --pt=emulate -o %s -- %s", hwt_test_hwtrace(), pt,
		     hwt_test_prog("ptflow_known"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s record -o %s -- /bin/true", hwt_test_hwtrace(), samples);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (dir)
		hwt_test_tmpdir_remove(dir);
	return 0;
}

static void need(void)
{
	if (skip)
		hwt_test_skip("qemu-x86_64 is not installed: the PT emulator cannot run");
}

/* The number after "key": in the JSON object of function name. */
static uint64_t json_field(const char *json, const char *name, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "{\"function\":\"%s\",", name);
	p = strstr(json, pat);
	if (!p)
		fail_msg("no row for %s", name);
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(p, pat);
	assert_non_null(p);
	return strtoull(p + strlen(pat), NULL, 10);
}

static size_t count_str(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_report_calls(void **state)
{
	struct hwt_test_run r;

	(void)state;
	need();
	hwt_test_run(&r, "%s report --calls --json -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	assert_int_equal(json_field(r.out, "leaf", "calls"), 1000);
	assert_int_equal(json_field(r.out, "leaf", "returns"), 1000);
	assert_int_equal(json_field(r.out, "dispatch", "calls"), 1000);
	assert_int_equal(json_field(r.out, "op_a", "calls"), 500);
	assert_int_equal(json_field(r.out, "op_b", "calls"), 300);
	assert_int_equal(json_field(r.out, "op_c", "calls"), 200);
	assert_int_equal(json_field(r.out, "rec", "calls"), 50);
	assert_int_equal(json_field(r.out, "work", "calls"), 1);
	assert_int_equal(json_field(r.out, "leaf", "self_insns"),
			 json_field(r.out, "leaf", "incl_insns"));
	assert_true(hwt_test_contains(r.err, "emulated PT: "));
	hwt_test_run_free(&r);

	/* Text with histograms: the table, then DTrace's quantize. */
	hwt_test_run(&r, "%s report --calls --hist -n 40 -q -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "# Calls, exact (from the decoded trace)"));
	assert_true(hwt_test_contains(r.out, "      1000          "));
	assert_true(hwt_test_contains(r.out, "@latency_ns[function]: quantize()"));
	assert_string_equal(r.err, "");
	hwt_test_run_free(&r);

	/* The perf-report view of the exact profile: all instructions. */
	hwt_test_run(&r, "%s report -q -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "of event 'instructions'"));
	assert_true(hwt_test_contains(r.out, "leaf"));
	hwt_test_run_free(&r);
}

static void test_flame(void **state)
{
	struct hwt_test_run r;
	char out[600], line[128], *text;
	uint64_t leaf_self;
	size_t len;

	(void)state;
	need();
	hwt_test_run(&r, "%s report --calls --json -q -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	leaf_self = json_field(r.out, "leaf", "self_insns");
	hwt_test_run_free(&r);

	snprintf(out, sizeof(out), "%s/f.folded", dir);
	hwt_test_run(&r, "%s flame -i %s -o %s", hwt_test_hwtrace(), pt, out);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "instructions"));
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, &len);
	snprintf(line, sizeof(line), ";main;work;leaf %" PRIu64 "\n", leaf_self);
	assert_true(hwt_test_contains(text, line));
	assert_true(hwt_test_contains(text, "ptflow_known;_start;"));
	assert_false(hwt_test_contains(text, "[unknown]"));
	free(text);

	snprintf(out, sizeof(out), "%s/f.svg", dir);
	hwt_test_run(&r, "%s flame -q -i %s -o %s", hwt_test_hwtrace(), pt, out);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, &len);
	assert_true(hwt_test_contains(text, "<svg"));
	assert_true(hwt_test_contains(text, "leaf"));
	free(text);

	/* The timeline: every call a span on its thread. */
	snprintf(out, sizeof(out), "%s/t.json", dir);
	hwt_test_run(&r, "%s flame -q -i %s -o %s", hwt_test_hwtrace(), pt, out);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, &len);
	assert_true(hwt_test_contains(text, "{\"traceEvents\":["));
	assert_int_equal(count_str(text, "\"name\":\"leaf\"}"), 1000);
	assert_int_equal(count_str(text, "\"name\":\"op_c\"}"), 200);
	free(text);

	/* Bounded: short calls merged, spans capped with a warning. */
	hwt_test_run(&r, "%s flame -q -i %s -o %s --min-call 1000000000000", hwt_test_hwtrace(), pt,
		     out);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, &len);
	assert_int_equal(count_str(text, "\"name\":\"leaf, dispatch (2000 calls)\"}"), 1);
	assert_int_equal(count_str(text, "\"name\":\"leaf\"}"), 0);
	free(text);
	hwt_test_run(&r, "%s flame -q -i %s -o %s --max-spans 10", hwt_test_hwtrace(), pt, out);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "are not in the timeline: raise --max-spans"));
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, &len);
	assert_int_equal(count_str(text, "\"ph\":\"X\""), 10);
	free(text);
}

static void test_branches(void **state)
{
	struct hwt_test_run r;

	(void)state;
	need();
	hwt_test_run(&r, "%s branches -q -i %s leaf", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, ": 1000 calls, "));
	assert_true(hwt_test_contains(r.out, "taken 300 (30.0%), not taken 700 (70.0%)") ||
		    hwt_test_contains(r.out, "taken 700 (70.0%), not taken 300 (30.0%)"));
	assert_true(hwt_test_contains(r.out, "ptflow_known.c:"));
	assert_true(hwt_test_contains(r.out, "ret\n"));
	assert_string_equal(r.err, "");
	hwt_test_run_free(&r);

	hwt_test_run(&r, "%s branches -q -i %s dispatch", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "call rax"));
	assert_true(
	    hwt_test_contains(r.out, "-> op_a 500 (50.0%), op_b 300 (30.0%), op_c 200 (20.0%)\n"));
	hwt_test_run_free(&r);

	/* One instruction and the stacks that reached it (kinst + stack()). */
	hwt_test_run(&r, "%s branches -q -i %s rec+0 --stacks +0", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "50 executions, 10 distinct stacks"));
	assert_int_equal(count_str(r.out, "\n                5\n"), 10);
	assert_int_equal(count_str(r.out, "ptflow_known`main\n"), 10);
	hwt_test_run_free(&r);

	hwt_test_run(&r, "%s branches -q --json -i %s dispatch", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "{\"branches\":{\"function\":\"dispatch\""));
	assert_true(hwt_test_contains(r.out, "\"count\":300,\"function\":\"op_b\",\"offset\":0}"));
	hwt_test_run_free(&r);
}

/* Threads: each thread's calls on its own track, counts per thread. */
static void test_threads(void **state)
{
	struct hwt_test_run r;
	char path[600], out[600], *text, *p;
	size_t len;

	(void)state;
	need();
	snprintf(path, sizeof(path), "%s/threads.hwt", dir);
	snprintf(out, sizeof(out), "%s/threads.json", dir);
	hwt_test_run(&r, "%s record --pt=emulate -o %s -- %s", hwt_test_hwtrace(), path,
		     hwt_test_prog("ptflow_threads"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s report --calls --json -q -i %s", hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 0);
	assert_int_equal(json_field(r.out, "t_a", "calls"), 300);
	assert_int_equal(json_field(r.out, "t_b", "calls"), 500);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s flame -q -i %s -o %s", hwt_test_hwtrace(), path, out);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, &len);
	assert_int_equal(count_str(text, "\"name\":\"thread_name\""), 3);
	assert_int_equal(count_str(text, "\"name\":\"t_a\"}"), 300);
	assert_int_equal(count_str(text, "\"name\":\"t_b\"}"), 500);
	/* All of t_a's spans on one thread, t_b's on another. */
	char tid_a[64] = "", tid_b[64] = "";

	for (p = text; (p = strstr(p, "\n{\"pid\":")); p++) {
		char *tid = strstr(p, "\"tid\":"), *nl = strchr(p + 1, '\n');
		char *which = NULL, key[64];

		if (!tid || (nl && tid > nl))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)strcspn(tid, ","), tid);
		if (strstr(p, "\"name\":\"t_a\"}") && (!nl || strstr(p, "\"name\":\"t_a\"}") < nl))
			which = tid_a;
		else if (strstr(p, "\"name\":\"t_b\"}") &&
			 (!nl || strstr(p, "\"name\":\"t_b\"}") < nl))
			which = tid_b;
		if (!which)
			continue;
		if (!*which)
			snprintf(which, 64, "%s", key);
		assert_string_equal(which, key);
	}
	assert_true(*tid_a && *tid_b);
	assert_string_not_equal(tid_a, tid_b);
	free(text);
}

/* The number after prefix in text (fails when absent). */
static uint64_t number_after(const char *text, const char *prefix)
{
	const char *p = strstr(text, prefix);

	if (!p)
		fail_msg("no '%s' in: %s", prefix, text);
	return strtoull(p + strlen(prefix), NULL, 10);
}

static void test_wording(void **state)
{
	struct hwt_test_run r;
	char out[600], want[512], *text;
	uint64_t insns, funcs, called, stacks;

	(void)state;
	need();
	/* The calls table: instructions, the functions that ran, calls to
	 * those called; times said to be the emulator's; columns of
	 * instructions named so. */
	hwt_test_run(&r, "%s report --calls -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	insns = number_after(r.out, "# Calls, exact (from the decoded trace): ");
	funcs = number_after(r.out, " instructions in ");
	called = number_after(r.out, " calls to ");
	assert_true(insns > 100000 && funcs >= called && called > 5);
	snprintf(
	    want, sizeof(want),
	    " functions, %" PRIu64 " calls to %" PRIu64
	    " of them (times are the PT emulator's clock, which counts instructions: not "
	    "measured)\n     CALLS     SELF INSNS     INCL INSNS  SELF TIME  INCL TIME        AVG"
	    "        MAX  FUNCTION\n",
	    number_after(r.out, " functions, "), called);
	assert_true(hwt_test_contains(r.out, want));
	assert_true(hwt_test_contains(r.out, "\n# 0 gaps (0 from lost trace, 0 bytes lost), 0 "
					     "overflows; "));
	/* The summary: the same functions, "1 thread". */
	snprintf(want, sizeof(want),
		 "hwtrace: report: emulated PT: %" PRIu64 " instructions, %" PRIu64
		 " calls, 1 thread, %" PRIu64 " functions (",
		 insns, number_after(r.out, " functions, "), funcs);
	assert_true(hwt_test_contains(r.err, want));
	hwt_test_run_free(&r);
	/* branches resolves the function of every block: the same count. */
	hwt_test_run(&r, "%s branches -i %s leaf", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), ", 1 thread, %" PRIu64 " functions (", funcs);
	assert_true(hwt_test_contains(r.err, want));
	assert_true(hwt_test_contains(r.out, "\n# addresses are the PT emulator's: where "
					     "qemu-user loaded the code (offsets and source lines "
					     "are the program's)\n"));
	hwt_test_run_free(&r);

	/* The exact profile: distinct stacks of an event, not samples; no
	 * root frame for a program traced from its exec. */
	hwt_test_run(&r, "%s report -q --stdio -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	stacks = number_after(r.out, "# Distinct stacks: ");
	snprintf(want, sizeof(want),
		 "# Distinct stacks: %" PRIu64 " of event 'instructions', exact (every event "
		 "counted, not sampled)\n# Event count: %" PRIu64 "\n",
		 stacks, insns);
	assert_true(hwt_test_contains(r.out, want));
	assert_false(hwt_test_contains(r.out, "Samples"));
	assert_false(hwt_test_contains(r.out, "[unknown]"));
	snprintf(want, sizeof(want),
		 "# distinct stacks: %" PRIu64 " (weight %" PRIu64 ", exact: every event counted, "
		 "not sampled), filtered out: 0, lost: 0, without stack: 0\n",
		 stacks, insns);
	assert_true(hwt_test_contains(r.out, want));
	assert_true(hwt_test_contains(r.out, ", unsymbolized: 0 (0.00%)"));
	hwt_test_run_free(&r);
	snprintf(out, sizeof(out), "%s/w.svg", dir);
	hwt_test_run(&r, "%s flame -i %s -o %s", hwt_test_hwtrace(), pt, out);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), ", 1 thread, %" PRIu64 " functions (", funcs);
	assert_true(hwt_test_contains(r.err, want));
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, NULL);
	snprintf(want, sizeof(want),
		 ">%" PRIu64 " instructions, exact (every one counted, not sampled), in %" PRIu64
		 " distinct stacks; filtered 0, lost 0, unsymbolized frames 0 of ",
		 insns, stacks);
	assert_true(hwt_test_contains(text, want));
	assert_true(hwt_test_contains(text, "\"unit\":\"instructions\""));
	free(text);
}

static void test_errors(void **state)
{
	struct hwt_test_run r;

	(void)state;
	need();
	hwt_test_run(&r, "%s branches -i %s nosuch", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "error: nosuch did not run in"));
	assert_int_equal(count_str(r.err, "error:"), 1);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s branches -i %s leaf+3", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "leaf+0x3 is not the start of an instruction"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s branches -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 2);
	assert_true(hwt_test_contains(r.err, "name the function"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s branches -i %s leaf --stacks xyz", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s branches -i %s main", hwt_test_hwtrace(), samples);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "holds samples, not an Intel PT trace"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s branches -i %s/none.hwt main", hwt_test_hwtrace(), dir);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "no such file"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s report --calls -i %s", hwt_test_hwtrace(), samples);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "holds samples, not an Intel PT trace"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s report --hist -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s flame -i %s -o x.svg --weight cycles", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);
	/* one wording for an unknown engine, recording or raw trace */
	hwt_test_run(&r, "%s script -i %s --engine=turbo", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 2);
	assert_true(
	    hwt_test_contains(r.err, "unknown --engine 'turbo' (use fast, libipt or ptxed)"));
	hwt_test_run_free(&r);
}

/* An address filter on work(): its 2000 calls (leaf, dispatch) leave the
 * range and return untraced (TIP.PGD at the call, TIP.PGE at the return
 * address). Each frame closes where tracing resumes: every call has its
 * return, the stack never grows, and all traced instructions are work's,
 * at depth 0; FAST and LIBIPT give the same call trace. */
static void test_filter(void **state)
{
	static const char *const engines[] = {"fast", "libipt"};
	struct hwt_test_run r;
	char path[600], out[600], folded[128], *text;
	uint64_t insns;
	size_t len;

	(void)state;
	need();
	snprintf(path, sizeof(path), "%s/filter.hwt", dir);
	hwt_test_run(&r, "%s record --pt=emulate --filter 'filter work @ %s' -o %s -- %s",
		     hwt_test_hwtrace(), hwt_test_prog("ptflow_known"), path,
		     hwt_test_prog("ptflow_known"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s report --calls --json -q -i %s", hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 0);
	assert_int_equal(json_field(r.out, "leaf", "calls"), 1000);
	assert_int_equal(json_field(r.out, "leaf", "returns"), 1000);
	assert_int_equal(json_field(r.out, "leaf", "self_insns"), 0);
	assert_int_equal(json_field(r.out, "dispatch", "calls"), 1000);
	assert_int_equal(json_field(r.out, "dispatch", "returns"), 1000);
	assert_false(hwt_test_contains(r.out, "\"op_a\""));
	assert_false(hwt_test_contains(r.out, "\"rec\""));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script -q -i %s --itrace=i | grep -c ' insn: '", hwt_test_hwtrace(),
		     path);
	assert_int_equal(r.status, 0);
	insns = strtoull(r.out, NULL, 10);
	assert_true(insns > 2000 * 3);
	hwt_test_run_free(&r);

	/* One stack: work's, with all the instructions. */
	snprintf(out, sizeof(out), "%s/filter.folded", dir);
	hwt_test_run(&r, "%s flame -q -i %s -o %s", hwt_test_hwtrace(), path, out);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, &len);
	snprintf(folded, sizeof(folded), ";work %" PRIu64 "\n", insns);
	assert_true(hwt_test_contains(text, folded));
	assert_int_equal(count_str(text, "\n"), 1);
	free(text);

	for (size_t e = 0; e < sizeof(engines) / sizeof(engines[0]); e++) {
		hwt_test_run(&r, "%s script -q -i %s --call-trace --engine=%s > %s/calls-%s",
			     hwt_test_hwtrace(), path, engines[e], dir, engines[e]);
		assert_int_equal(r.status, 0);
		hwt_test_run_free(&r);
	}
	hwt_test_run(&r, "cmp %s/calls-fast %s/calls-libipt && grep -c 'unwound' %s/calls-fast",
		     dir, dir, dir);
	assert_int_equal(r.status, 0);
	assert_int_equal(strtoull(r.out, NULL, 10), 2000);
	hwt_test_run_free(&r);
}

/* An address filter on leaf() and op_a(), which call nothing, called from
 * untraced code (work, dispatch): all traced code is at depth 0 and no call
 * is seen, so the decoder's call tree begins at a depth-0 block and goes on
 * across the returns out of them (to untraced code) and the enables. Each
 * has exactly the instructions the whole program's trace gives it, under
 * "[before the trace]"; the two are all the instructions traced. */
static void test_filter_depth0(void **state)
{
	struct hwt_test_run r;
	char path[600], out[600], want[512], *text, *whole;
	uint64_t leaf, op_a, insns;
	size_t len;

	(void)state;
	need();
	hwt_test_run(&r, "%s report --calls --json -q -i %s", hwt_test_hwtrace(), pt);
	assert_int_equal(r.status, 0);
	leaf = json_field(r.out, "leaf", "self_insns");
	op_a = json_field(r.out, "op_a", "self_insns");
	assert_int_equal(json_field(r.out, "leaf", "calls"), 1000);
	assert_int_equal(json_field(r.out, "op_a", "calls"), 500);
	assert_true(leaf > 1000 * 5);
	assert_int_equal(op_a % 500, 0);
	hwt_test_run_free(&r);

	snprintf(path, sizeof(path), "%s/leaves.hwt", dir);
	hwt_test_run(&r,
		     "%s record --pt=emulate,real --filter 'filter leaf @ %s,filter op_a @ %s' -o "
		     "%s -- %s",
		     hwt_test_hwtrace(), hwt_test_prog("ptflow_known"),
		     hwt_test_prog("ptflow_known"), path, hwt_test_prog("ptflow_known"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script -q -i %s --itrace=i | grep -c ' insn: '", hwt_test_hwtrace(),
		     path);
	assert_int_equal(r.status, 0);
	insns = strtoull(r.out, NULL, 10);
	assert_int_equal(insns, leaf + op_a);
	hwt_test_run_free(&r);

	snprintf(out, sizeof(out), "%s/leaves.folded", dir);
	hwt_test_run(&r, "%s flame -i %s -o %s", hwt_test_hwtrace(), path, out);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "%" PRIu64 " instructions, 0 calls, 1 thread, 2 functions",
		 insns);
	assert_true(hwt_test_contains(r.err, want));
	hwt_test_run_free(&r);
	text = hwt_test_read_file(out, &len);
	snprintf(want, sizeof(want),
		 "ptflow_known;[before the trace];leaf %" PRIu64
		 "\nptflow_known;[before the trace];op_a %" PRIu64 "\n",
		 leaf, op_a);
	assert_string_equal(text, want);
	free(text);
	/* The whole program's flame has the same weights for them. */
	snprintf(out, sizeof(out), "%s/whole.folded", dir);
	hwt_test_run(&r, "%s flame -q -i %s -o %s", hwt_test_hwtrace(), pt, out);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	whole = hwt_test_read_file(out, &len);
	snprintf(want, sizeof(want), ";main;work;leaf %" PRIu64 "\n", leaf);
	assert_true(hwt_test_contains(whole, want));
	snprintf(want, sizeof(want), ";main;work;dispatch;op_a %" PRIu64 "\n", op_a);
	assert_true(hwt_test_contains(whole, want));
	free(whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report_calls), cmocka_unit_test(test_flame),
	    cmocka_unit_test(test_branches),	 cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_errors),	 cmocka_unit_test(test_wording),
	    cmocka_unit_test(test_filter),	 cmocka_unit_test(test_filter_depth0),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
