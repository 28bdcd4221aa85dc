/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/probe/test_offline.c - one-liners over recordings: profile probes
 * over a perf.data of a spinning program give the same per-function
 * counts as perf report, a tracepoint probe over a recording of N writes
 * counts N, probes that match nothing or only exist live are refused with
 * the reason, corrupt files are errors; pt: probes over an emulated PT
 * recording fire exactly as often as the program calls, returns and runs
 * the instruction, with exact stacks and durations; and the PT flow hook
 * fires pt: probes at exactly the decoded calls, returns and instructions
 * it is given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/probe.h"
#include "report/report.h"
#include "symbolize/symbolize.h"
#include "tests/lib/testutil.h"

static char *tmp;

static int setup(void **state)
{
	(void)state;
	tmp = hwt_test_tmpdir();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(tmp);
	return 0;
}

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

static bool perf_records(const char *args, const char *out)
{
	struct hwt_test_run r;
	bool ok;

	hwt_test_run(&r, "perf record -q %s -o %s -- %s 2>&1", args, out, "true");
	ok = r.status == 0;
	hwt_test_run_free(&r);
	return ok;
}

/* The count of a function's row (the number before "[.] name"). */
static long long row_count(const char *text, const char *marker)
{
	const char *p = strstr(text, marker), *line;

	if (!p)
		return 0;
	for (line = p; line > text && line[-1] != '\n'; line--)
		;
	return strtoll(line, NULL, 10);
}

static void test_profile_over_perf_data(void **state)
{
	struct hwt_test_run r, pr, ps;
	char data[512];
	long long hot, n, perf_hot, perf_n;

	(void)state;
	snprintf(data, sizeof(data), "%s/spin.data", tmp);
	if (!perf_records("-e cpu-clock", data)) {
		hwt_test_skip("perf record does not work here");
		return;
	}
	hwt_test_run(&r, "perf record -q -e cpu-clock -F 999 -o %s -- %s 150 2>&1", data,
		     hwt_test_prog("probe_spin"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r,
		     "%s trace -i %s 'profile:hz:99 { @n = count() } "
		     "profile:hz:99 /func == \"probe_spin_hot\"/ { @hot = count() }'",
		     hwt_test_hwtrace(), data);
	assert_int_equal(r.status, 0);
	n = scalar(r.out, "n");
	hot = scalar(r.out, "hot");
	/* ground truth: perf's own reading of the same file */
	hwt_test_run(&ps, "perf script -i %s -F ip 2>/dev/null | wc -l", data);
	hwt_test_run(&pr, "perf report -i %s --stdio --sort sym -F sample,sym 2>/dev/null", data);
	perf_n = strtoll(ps.out, NULL, 10);
	perf_hot = row_count(pr.out, "[.] probe_spin_hot");
	fprintf(stderr,
		"perf.data: %lld samples (perf: %lld), %lld in probe_spin_hot (perf: %lld)\n", n,
		perf_n, hot, perf_hot);
	assert_true(n >= 50);
	assert_int_equal(n, perf_n);
	assert_int_equal(hot, perf_hot);
	hwt_test_run_free(&r);
	hwt_test_run_free(&pr);
	hwt_test_run_free(&ps);
}

static void test_tracepoint_over_perf_data(void **state)
{
	struct hwt_test_run r;
	char data[512];

	(void)state;
	snprintf(data, sizeof(data), "%s/write.data", tmp);
	if (geteuid() != 0 || !perf_records("-e syscalls:sys_enter_write", data)) {
		hwt_test_skip("perf record of tracepoints does not work here");
		return;
	}
	hwt_test_run(&r, "perf record -q -e syscalls:sys_enter_write -o %s -- %s 0 0 0 25 2>&1",
		     data, hwt_test_prog("probe_calls"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r,
		     "%s trace -i %s 'syscalls:sys_enter_write /comm == \"probe_calls\"/ "
		     "{ @writes = count(); @bytes = sum(args->count) }'",
		     hwt_test_hwtrace(), data);
	assert_int_equal(r.status, 0);
	assert_int_equal(scalar(r.out, "writes"), 25);
	assert_int_equal(scalar(r.out, "bytes"), 25);
	hwt_test_run_free(&r);

	/* a profile probe matches nothing here: say what the file holds */
	hwt_test_run(&r, "%s trace -i %s 'profile:hz:99 { @ = count() }'", hwt_test_hwtrace(),
		     data);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err,
				      "profile:hz:99 matches no event of the recording, which "
				      "holds: syscalls:sys_enter_write"));
	hwt_test_run_free(&r);

	/* uprobes only exist live */
	hwt_test_run(&r, "%s trace -i %s 'uprobe:%s:probe_work { @ = count() }'",
		     hwt_test_hwtrace(), data, hwt_test_prog("probe_calls"));
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "is a live probe"));
	hwt_test_run_free(&r);
}

static void test_bad_files(void **state)
{
	struct hwt_test_run r;
	char path[512];

	(void)state;
	hwt_test_run(&r, "%s trace -i %s/none.data 'profile:hz:99 { @ = count() }'",
		     hwt_test_hwtrace(), tmp);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "no such file"));
	hwt_test_run_free(&r);

	snprintf(path, sizeof(path), "%s/garbage.data", tmp);
	hwt_test_write_file(path, "PERFILE2 this is not a perf.data file at all", 44);
	hwt_test_run(&r, "%s trace -i %s 'profile:hz:99 { @ = count() }'", hwt_test_hwtrace(),
		     path);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "hwtrace: error: "));
	hwt_test_run_free(&r);

	/* -i with a target is a usage error */
	hwt_test_run(&r, "%s trace -i %s 'profile:hz:99 { @ = count() }' -- true",
		     hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);
}

static void test_pt_recording(void **state)
{
	struct hwt_test_run r;
	char path[512], data[512];

	(void)state;
	hwt_test_need_qemu();
	snprintf(path, sizeof(path), "%s/calls.hwt", tmp);
	/* cyc: cycle-accurate timing, so that call durations are exact
	 * (the emulated clock ticks once per instruction). */
	hwt_test_run(&r, "%s record --pt=emulate,cyc -o %s -- %s 100 2>&1", hwt_test_hwtrace(),
		     path, hwt_test_prog("probe_calls"));
	if (r.status != 0)
		fprintf(stderr, "%s", r.out);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	/* probe_work(i, 7) is called exactly 100 times, from probe_outer;
	 * its second instruction (lea; add; ret) is at +3; it returns 3i+7,
	 * so the sum of arg0 over entries is 0+1+...+99. */
	hwt_test_run(&r,
		     "%s trace -i %s 'pt:probe_calls:probe_work:entry { @calls = count(); "
		     "@s[ustack] = count(); self->t = nsecs } "
		     "pt:probe_calls:probe_work:return /self->t/ { @rets = count(); "
		     "@ns = max(nsecs - self->t); self->t = 0 } "
		     "pt:probe_calls:probe_work+3 { @insn = count(); @f[func] = count() } "
		     "pt:probe_calls:probe_outer:entry { @outer = count() }'",
		     hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 0);
	assert_int_equal(scalar(r.out, "calls"), 100);
	assert_int_equal(scalar(r.out, "rets"), 100);
	assert_int_equal(scalar(r.out, "insn"), 100);
	assert_int_equal(scalar(r.out, "outer"), 100);
	/* The exact stack of every call: probe_work <- probe_outer <- main. */
	assert_true(hwt_test_contains(r.out, "probe_calls`probe_work\n"
					     "              probe_calls`probe_outer\n"
					     "              probe_calls`main\n"));
	assert_true(hwt_test_contains(r.out, "  probe_work  100\n"));
	/* Three instructions at one emulated cycle each (2.1 GHz): PT times
	 * them by packet, so at most a few ns (often 0: the call is direct
	 * and the return one TNT bit, maybe in the packet of the call). A
	 * time missing at entry or return would give a huge or negative
	 * difference. */
	assert_true(scalar(r.out, "ns") >= 0 && scalar(r.out, "ns") < 100);
	hwt_test_run_free(&r);

	/* A function the object does not have, an object never mapped. */
	hwt_test_run(&r, "%s trace -i %s 'pt:probe_calls:no_such_fn:entry { @ = count() }'",
		     hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "no_such_fn"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s trace -i %s 'pt:libnothere.so:f:entry { @ = count() }'",
		     hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "libnothere.so"));
	hwt_test_run_free(&r);

	/* An offset inside an instruction (lea is 3 bytes) or past the end. */
	hwt_test_run(&r, "%s trace -i %s 'pt:probe_calls:probe_work+4 { @ = count() }'",
		     hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "inside an instruction of probe_work (the nearest "
					     "start at +3 or +5"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s trace -i %s 'pt:probe_calls:probe_work+64 { @ = count() }'",
		     hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "past the end of probe_work"));
	hwt_test_run_free(&r);

	/* A recording without PT refuses pt: probes, naming the fix. */
	snprintf(data, sizeof(data), "%s/nopt.hwt", tmp);
	hwt_test_run(&r, "%s record -e page-faults -c 1 -o %s -- %s 10 2>&1", hwt_test_hwtrace(),
		     data, hwt_test_prog("probe_calls"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s trace -i %s 'pt:probe_calls:probe_work:entry { @ = count() }'",
		     hwt_test_hwtrace(), data);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "--pt=emulate"));
	hwt_test_run_free(&r);
}

/* The PT flow hook, fed the events a decoder would give for a run of
 * probe_calls mapped at a known base. */
static void test_pt_flow_hook(void **state)
{
	const char *prog = hwt_test_prog("probe_calls");
	const uint64_t base = 0x555555554000ull;
	struct hwt_probe_config cfg;
	struct hwt_probe_prog *p = NULL;
	struct hwt_probe_rt *rt = NULL;
	struct hwt_probe_diag diag;
	struct hwt_sym_cache *cache;
	struct hwt_sym_obj *obj;
	struct hwt_sym_def def;
	uint64_t work, work_size, outer, mainf;
	char text[2048];
	struct stat st;
	int64_t v;

	(void)state;
	assert_int_equal(stat(prog, &st), 0);
	assert_int_equal(hwt_sym_cache_alloc(NULL, &cache), 0);
	assert_int_equal(hwt_sym_obj_open(cache, prog, NULL, 0, &obj), 0);
	assert_int_equal(hwt_sym_find(obj, "probe_work", &def, 1), 1);
	work = base + def.file_offset;
	work_size = def.size;
	assert_true(work_size >= 5); /* lea; ret at -O1 */
	assert_int_equal(hwt_sym_find(obj, "probe_outer", &def, 1), 1);
	outer = base + def.file_offset;
	assert_int_equal(hwt_sym_find(obj, "main", &def, 1), 1);
	mainf = base + def.file_offset;
	hwt_sym_cache_free(cache);

	snprintf(text, sizeof(text),
		 "pt:probe_calls:probe_work:entry { @entries = count(); self->t = nsecs; "
		 "@s[ustack] = count() }\n"
		 "pt:probe_calls:probe_work:return /self->t/ { @ns = sum(nsecs - self->t); "
		 "@rets = count(); self->t = 0 }\n"
		 "pt:%s:probe_work+3 { @insn = count(); @f[func] = count() }",
		 prog);
	hwt_probe_config_init(&cfg);
	assert_int_equal(hwt_probe_prog_alloc(&p, text, &cfg, &diag), 0);
	assert_int_equal(hwt_probe_rt_alloc(&rt, p, &cfg), 0);
	/* before the sideband: the object was never mapped */
	assert_int_equal(hwt_probe_pt_resolve(rt, &diag), -HWT_ENOEVENT);
	assert_true(strstr(diag.msg, "no object 'probe_calls' was mapped") != NULL);
	assert_int_equal(hwt_probe_rt_mmap(rt, 42, base, (uint64_t)st.st_size + 0x10000, 0, prog),
			 0);
	assert_int_equal(hwt_probe_pt_resolve(rt, &diag), 3);
	{
		struct hwt_probe_pt_watch w[4];

		assert_int_equal(hwt_probe_pt_watches(rt, w, 4), 3);
		assert_int_equal(w[0].kind, HWT_PROBE_FLOW_CALL);
		assert_int_equal(w[0].lo, work);
		assert_int_equal(w[1].kind, HWT_PROBE_FLOW_RETURN);
		assert_int_equal(w[1].hi - w[1].lo, work_size);
		assert_int_equal(w[2].kind, HWT_PROBE_FLOW_INSN);
		assert_int_equal(w[2].lo, work + 3);
		assert_int_equal(w[2].pid, 42);
	}

	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t stack[3] = {work, outer + 8, mainf + 16};
		struct hwt_probe_flow f = {HWT_PROBE_FLOW_CALL, 42,   42,    0,
					   1000 * (i + 1),	work, stack, 3};

		assert_int_equal(hwt_probe_pt_flow(rt, &f), 1);
		f.kind = HWT_PROBE_FLOW_INSN;
		f.ip = work + 3;
		f.time += 5;
		assert_int_equal(hwt_probe_pt_flow(rt, &f), 1);
		f.kind = HWT_PROBE_FLOW_RETURN;
		f.ip = work + work_size; /* past its end: another function's return */
		assert_int_equal(hwt_probe_pt_flow(rt, &f), 0);
		f.kind = HWT_PROBE_FLOW_INSN;
		f.ip = work + 5; /* not the probed instruction */
		assert_int_equal(hwt_probe_pt_flow(rt, &f), 0);
		f.kind = HWT_PROBE_FLOW_CALL;
		f.ip = work + 1; /* not an entry */
		assert_int_equal(hwt_probe_pt_flow(rt, &f), 0);
		f.pid = 43; /* another process, where nothing is mapped */
		f.ip = work;
		assert_int_equal(hwt_probe_pt_flow(rt, &f), 0);
		f.pid = 42;
		f.kind = HWT_PROBE_FLOW_RETURN;
		f.ip = work + work_size - 1; /* its ret: the last byte */
		f.time = 1000 * (i + 1) + 37;
		assert_int_equal(hwt_probe_pt_flow(rt, &f), 1);
	}
	assert_int_equal(hwt_probe_rt_agg_value(rt, "entries", NULL, 0, &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(hwt_probe_rt_agg_value(rt, "rets", NULL, 0, &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(hwt_probe_rt_agg_value(rt, "insn", NULL, 0, &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(hwt_probe_rt_agg_value(rt, "ns", NULL, 0, &v), 0);
	assert_int_equal(v, 37 * 1000);
	{
		struct hwt_buf out;

		hwt_buf_init(&out);
		assert_int_equal(hwt_probe_rt_print(rt, HWT_REP_FMT_TEXT, &out), 0);
		assert_int_equal(hwt_buf_append(&out, "", 1), 0);
		assert_non_null(strstr((char *)out.data, "              probe_calls`probe_work\n"
							 "              probe_calls`probe_outer\n"
							 "              probe_calls`main\n"
							 "             1000\n"));
		assert_non_null(strstr((char *)out.data, "  probe_work  1000\n"));
		hwt_buf_fini(&out);
	}
	hwt_probe_rt_free(rt);
	hwt_probe_prog_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_profile_over_perf_data),
	    cmocka_unit_test(test_tracepoint_over_perf_data),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_pt_recording),
	    cmocka_unit_test(test_pt_flow_hook),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
