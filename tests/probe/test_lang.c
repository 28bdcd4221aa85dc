/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/probe/test_lang.c - the one-liner language without the kernel:
 * probe descriptions split into their parts, every kind of error at its
 * exact line and column, types and builtins checked against the probes of
 * a clause, and the runtime driven with synthetic hits whose results are
 * computed by hand (counts, sums, thread-local latency, predicates,
 * strings, faults, printf text, exit(), tracepoint fields read from raw
 * records described by a fake tracefs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/hwt.h"
#include "probe/probe.h"
#include "report/report.h"
#include "tests/lib/testutil.h"

/* A fake tracefs with one tracepoint, test:ev:
 *   int val @8, char name[8] @12, __data_loc char[] path @20, u64 big @24 */
static char *tracefs;

static const char ev_format[] =
    "name: ev\n"
    "ID: 4242\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:int val;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield:char name[8];\toffset:12;\tsize:8;\tsigned:0;\n"
    "\tfield:__data_loc char[] path;\toffset:20;\tsize:4;\tsigned:0;\n"
    "\tfield:u64 big;\toffset:24;\tsize:8;\tsigned:0;\n"
    "\n"
    "print fmt: \"val=%d\", REC->val\n";

static int setup(void **state)
{
	char path[512];

	(void)state;
	tracefs = hwt_test_tmpdir();
	snprintf(path, sizeof(path), "%s/events", tracefs);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/events/test", tracefs);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/events/test/ev", tracefs);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/events/test/ev/format", tracefs);
	hwt_test_write_file(path, ev_format, strlen(ev_format));
	snprintf(path, sizeof(path), "%s/events/test/ev/id", tracefs);
	hwt_test_write_file(path, "4242\n", 5);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(tracefs);
	return 0;
}

static struct hwt_buf captured;

static int capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	return hwt_buf_append(&captured, text, len);
}

static void config(struct hwt_probe_config *cfg)
{
	hwt_probe_config_init(cfg);
	cfg->tracefs_root = tracefs;
	cfg->output = capture;
}

static struct hwt_probe_prog *compile_ok(const char *text)
{
	struct hwt_probe_config cfg;
	struct hwt_probe_prog *prog = NULL;
	struct hwt_probe_diag diag;
	int err;

	config(&cfg);
	err = hwt_probe_prog_alloc(&prog, text, &cfg, &diag);
	if (err < 0) {
		fprintf(stderr, "program: %s\nerror %d at %d:%d: %s\n", text, err, diag.line,
			diag.column, diag.msg);
		fail();
	}
	return prog;
}

static void test_probe_descriptions(void **state)
{
	struct hwt_probe_prog *prog;
	struct hwt_probe_info in;

	(void)state;
	prog = compile_ok(
	    "uprobe:/bin/true:main+0x10, uretprobe:/bin/true:main, "
	    "u:libc:malloc, kprobe:do_sys_openat2+8, kretprobe:vfs_read "
	    "{ @ = count() }\n"
	    "profile:hz:99, profile:ms:5, software:page-faults:10, software:minor-faults,"
	    " test:ev, tracepoint:test:ev { @p = count() }\n"
	    "pt:libc.so.6:malloc:entry, pt:/bin/x:f:return, pt:/bin/x:f+4,"
	    " uprobe:/bin/x:ns::f { @q = count() } BEGIN, END { }");
	/* test:ev and tracepoint:test:ev are written differently: two probes */
	assert_int_equal(hwt_probe_prog_nprobes(prog), 17);
	assert_int_equal(hwt_probe_prog_probe(prog, 0, &in), 0);
	assert_int_equal(in.kind, HWT_PROBE_UPROBE);
	assert_string_equal(in.object, "/bin/true");
	assert_string_equal(in.func, "main");
	assert_int_equal(in.offset, 16);
	assert_int_equal(in.line, 1);
	assert_int_equal(in.column, 1);
	hwt_probe_prog_probe(prog, 1, &in);
	assert_int_equal(in.kind, HWT_PROBE_URETPROBE);
	assert_int_equal(in.offset, 0);
	assert_int_equal(in.column, 29);
	hwt_probe_prog_probe(prog, 2, &in);
	assert_int_equal(in.kind, HWT_PROBE_UPROBE);
	assert_string_equal(in.object, "libc");
	assert_string_equal(in.func, "malloc");
	hwt_probe_prog_probe(prog, 3, &in);
	assert_int_equal(in.kind, HWT_PROBE_KPROBE);
	assert_string_equal(in.func, "do_sys_openat2");
	assert_int_equal(in.offset, 8);
	hwt_probe_prog_probe(prog, 4, &in);
	assert_int_equal(in.kind, HWT_PROBE_KRETPROBE);
	hwt_probe_prog_probe(prog, 5, &in);
	assert_int_equal(in.kind, HWT_PROBE_PROFILE);
	assert_true(in.freq);
	assert_int_equal(in.period, 99);
	assert_int_equal(in.line, 2);
	hwt_probe_prog_probe(prog, 6, &in);
	assert_false(in.freq);
	assert_int_equal(in.period, 5000000);
	hwt_probe_prog_probe(prog, 7, &in);
	assert_int_equal(in.kind, HWT_PROBE_SOFTWARE);
	assert_string_equal(in.event, "page-faults");
	assert_int_equal(in.period, 10);
	hwt_probe_prog_probe(prog, 8, &in);
	assert_int_equal(in.period, 1); /* every event by default */
	hwt_probe_prog_probe(prog, 9, &in);
	assert_int_equal(in.kind, HWT_PROBE_TRACEPOINT);
	assert_string_equal(in.subsys, "test");
	assert_string_equal(in.event, "ev");
	hwt_probe_prog_probe(prog, 10, &in);
	assert_int_equal(in.kind, HWT_PROBE_TRACEPOINT);
	hwt_probe_prog_probe(prog, 11, &in);
	assert_int_equal(in.kind, HWT_PROBE_PT_ENTRY);
	assert_string_equal(in.object, "libc.so.6");
	assert_string_equal(in.func, "malloc");
	assert_int_equal(in.line, 3);
	hwt_probe_prog_probe(prog, 12, &in);
	assert_int_equal(in.kind, HWT_PROBE_PT_RETURN);
	hwt_probe_prog_probe(prog, 13, &in);
	assert_int_equal(in.kind, HWT_PROBE_PT_INSN);
	assert_string_equal(in.func, "f");
	assert_int_equal(in.offset, 4);
	hwt_probe_prog_probe(prog, 14, &in);
	assert_string_equal(in.func, "ns::f"); /* C++ names keep their "::" */
	hwt_probe_prog_probe(prog, 15, &in);
	assert_int_equal(in.kind, HWT_PROBE_BEGIN);
	hwt_probe_prog_probe(prog, 16, &in);
	assert_int_equal(in.kind, HWT_PROBE_END);
	assert_true(hwt_probe_prog_has_pt(prog));
	assert_int_equal(hwt_probe_prog_probe(prog, 17, &in), -HWT_EINVAL);
	hwt_probe_prog_free(prog);
}

struct bad {
	const char *text;
	int err;
	int line, column;
	const char *msg; /* a part of the message */
};

static const struct bad bad_programs[] = {
    {"", -HWT_EPARSE, 1, 1, "empty program"},
    {"BEGIN { @x = count( }", -HWT_EPARSE, 1, 21, "expected an expression, found '}'"},
    {"BEGIN { @x = count() ", -HWT_EPARSE, 1, 22, "expected '}' to close the actions"},
    {"BEGIN { self->x = }", -HWT_EPARSE, 1, 19, "expected an expression"},
    {"BEGIN /1 { }", -HWT_EPARSE, 1, 10, "expected '/' to close the predicate"},
    {"BEGIN { @x = count() @y = count() }", -HWT_EPARSE, 1, 22, "expected ';' or '}'"},
    {"BEGIN {\n  @x = count(\n}", -HWT_EPARSE, 3, 1, "expected an expression"},
    {"BEGIN { \"open }", -HWT_EPARSE, 1, 9, "string not closed"},
    {"BEGIN { printf(\"open) }", -HWT_EPARSE, 1, 16, "string not closed"},
    {"BEGIN { x }", -HWT_EPARSE, 1, 9, "expected a statement"},
    {"BEGIN ] { }", -HWT_EPARSE, 1, 7, "expected '{' to open the actions"},
    {"BEGIN { @x = count(); } #", -HWT_ENOEVENT, 1, 25, "unknown probe '#'"},
    {"BEGIN { @x = count(); } ,", -HWT_EPARSE, 1, 25, "expected a probe"},
    {"foo { }", -HWT_ENOEVENT, 1, 1, "unknown probe 'foo'"},
    {"a:b:c:d { }", -HWT_ENOEVENT, 1, 1, "unknown probe 'a:b:c:d'"},
    {"BEGIN /foo == 1/ { }", -HWT_EINVAL, 1, 8, "unknown variable 'foo'"},
    {"BEGIN /pdi == 1/ { }", -HWT_EINVAL, 1, 8, "did you mean 'pid'"},
    {"BEGIN /self->ts/ { }", -HWT_EINVAL, 1, 8,
     "unknown variable 'self->ts': no clause assigns it"},
    {"BEGIN /$pid/ { }", -HWT_EINVAL, 1, 8,
     "unknown variable '$pid': nothing in this clause assigns it"},
    {"BEGIN { @x = count(); @x = sum(1) }", -HWT_EINVAL, 1, 28, "used with two functions"},
    {"BEGIN { @x[1] = count(); @x = count() }", -HWT_EINVAL, 1, 26, "used with 1 keys and with 0"},
    {"BEGIN { @x[1] = count(); @x[comm] = count() }", -HWT_EINVAL, 1, 29, "key 1 of @x"},
    {"BEGIN { @x = sum(comm) }", -HWT_EINVAL, 1, 18, "sum() wants an integer"},
    {"BEGIN { @x = count(1) }", -HWT_EINVAL, 1, 14, "count() takes no arguments"},
    {"BEGIN { @x = mean(1) }", -HWT_EINVAL, 1, 14, "unknown aggregating function 'mean'"},
    {"BEGIN { @x = lquantize(1, 10, 0, 1) }", -HWT_EINVAL, 1, 27, "lquantize wants low < high"},
    {"BEGIN { @x = lquantize(1, 0, pid, 1) }", -HWT_EINVAL, 1, 27, "must be constant"},
    {"BEGIN { printf(\"%d %d\\n\", 1) }", -HWT_EINVAL, 1, 16, "wants more arguments"},
    {"BEGIN { printf(\"%d\\n\", 1, 2) }", -HWT_EINVAL, 1, 27, "2 arguments, and the format uses 1"},
    {"BEGIN { printf(\"%s\\n\", 1) }", -HWT_EINVAL, 1, 24, "argument 1 is an integer"},
    {"BEGIN { printf(\"%q\\n\", 1) }", -HWT_EINVAL, 1, 16, "bad conversion"},
    {"BEGIN { printf(pid) }", -HWT_EPARSE, 1, 16, "format string first"},
    {"BEGIN { self->x = 1; self->x = comm }", -HWT_EINVAL, 1, 32, "holds an integer elsewhere"},
    {"BEGIN { self->s = ustack }", -HWT_EINVAL, 1, 19, "a stack can only key an aggregation"},
    {"BEGIN /comm + 1/ { }", -HWT_EINVAL, 1, 13, "must be integers"},
    {"BEGIN /comm/ { }", -HWT_EINVAL, 1, 8, "a predicate must be an integer"},
    {"BEGIN { print(@nope) }", -HWT_EINVAL, 1, 15,
     "@nope is printed or cleared but never assigned"},
    {"uretprobe:/bin/true:main+4 { }", -HWT_EPARSE, 1, 1, "a return probe fires when FUNC returns"},
    {"uprobe:/bin/true { }", -HWT_EPARSE, 1, 1, "wants uprobe:PATH:FUNC"},
    {"uprobe:/bin/true:main+zz { }", -HWT_EPARSE, 1, 1, "bad offset"},
    {"uprobe:/bin/true:main { @ = sum(retval) }", -HWT_EINVAL, 1, 33,
     "'retval' is not available at a uprobe"},
    {"profile:hz:99 { @ = sum(arg0) }", -HWT_EINVAL, 1, 25,
     "'arg0' is not available at a profile probe"},
    {"pt:/bin/x:f:entry { @ = sum(arg0) }", -HWT_EINVAL, 1, 29, "PT records control flow"},
    {"pt:/bin/x:f { }", -HWT_EPARSE, 1, 1, "say which probe"},
    {"profile:hz:0 { }", -HWT_EPARSE, 1, 1, "wants profile:hz:N"},
    {"profile:hz:1000000 { }", -HWT_EINVAL, 1, 1, "at most 100000 Hz"},
    {"profile:weeks:2 { }", -HWT_EPARSE, 1, 1, "unknown unit"},
    {"software:cycles { }", -HWT_EINVAL, 1, 1, "not a software event"},
    {"software:nosuchevent { }", -HWT_ENOEVENT, 1, 1, "nosuchevent"},
    {"BEGIN { @x = count() }\n  test:nope { }", -HWT_ENOEVENT, 2, 3, "unknown probe 'test:nope'"},
    {"test:ev { @ = sum(args->nope) }", -HWT_EINVAL, 1, 19,
     "tracepoint test:ev has no field 'nope'; its fields are: val, name, path, big"},
    {"uprobe:/bin/true:main { @ = sum(args->val) }", -HWT_EINVAL, 1, 33, "needs a tracepoint"},
    {"test:ev { @ = sum(args->name) }", -HWT_EINVAL, 1, 19,
     "sum() wants an integer, and this is a string"},
    {"BEGIN /1 / 0 == 0/ { }", -HWT_EPARSE, 1, 12, "expected '{'"},
    {"BEGIN { @x = count(); exit(1) }", -HWT_EPARSE, 1, 28, "exit() takes no arguments"},
    {"BEGIN { @x = count(((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))"
     ")))))))))))))))))))))))))))))))) }",
     -HWT_ETOOBIG, 1, 0, "nested too deeply"},
};

static void test_errors_point_at_the_place(void **state)
{
	(void)state;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(bad_programs); i++) {
		const struct bad *b = &bad_programs[i];
		struct hwt_probe_config cfg;
		struct hwt_probe_prog *prog = NULL;
		struct hwt_probe_diag diag;
		int err;

		config(&cfg);
		err = hwt_probe_prog_alloc(&prog, b->text, &cfg, &diag);
		if (err != b->err || diag.line != b->line ||
		    (b->column && diag.column != b->column) || !strstr(diag.msg, b->msg)) {
			fprintf(stderr,
				"program: %s\n  want %d at %d:%d '%s'\n  got  %d at %d:%d '%s'\n",
				b->text, b->err, b->line, b->column, b->msg, err, diag.line,
				diag.column, diag.msg);
			fail();
		}
		assert_null(prog);
	}
}

static void test_unknown_tracepoint_suggests(void **state)
{
	struct hwt_probe_config cfg;
	struct hwt_probe_prog *prog = NULL;
	struct hwt_probe_diag diag;

	(void)state;
	config(&cfg);
	assert_int_equal(hwt_probe_prog_alloc(&prog, "test:eb { }", &cfg, &diag), -HWT_ENOEVENT);
	assert_non_null(strstr(diag.msg, "did you mean: test:ev"));
	/* no tracefs at all */
	cfg.tracefs_root = "/nonexistent-tracefs";
	assert_true(hwt_probe_prog_alloc(&prog, "test:ev { }", &cfg, &diag) < 0);
	assert_null(prog);
}

/* ------------------------------------------------------------------------ */
/* Runtime                                                                   */

struct run {
	struct hwt_probe_prog *prog;
	struct hwt_probe_rt *rt;
};

static void run_open(struct run *r, const char *text)
{
	struct hwt_probe_config cfg;

	config(&cfg);
	r->prog = compile_ok(text);
	assert_int_equal(hwt_probe_rt_alloc(&r->rt, r->prog, &cfg), 0);
	captured.len = 0;
}

static void run_close(struct run *r)
{
	hwt_probe_rt_free(r->rt);
	hwt_probe_prog_free(r->prog);
}

static int64_t agg(struct run *r, const char *name, const int64_t *key, size_t n)
{
	int64_t v = -12345;

	if (hwt_probe_rt_agg_value(r->rt, name, key, n, &v) < 0) {
		fprintf(stderr, "no value for @%s\n", name);
		fail();
	}
	return v;
}

static void fire(struct run *r, size_t probe, int32_t tid, uint64_t time, uint64_t a0, uint64_t a1,
		 uint64_t ret)
{
	struct hwt_probe_hit h;

	memset(&h, 0, sizeof(h));
	h.pid = 100;
	h.tid = tid;
	h.cpu = 0;
	h.time = time;
	h.has_regs = true;
	h.regs[0] = a0;
	h.regs[1] = a1;
	h.regs[HWT_PROBE_REG_RETVAL] = ret;
	h.comm = "app";
	assert_int_equal(hwt_probe_rt_fire(r->rt, probe, &h), 0);
}

static void test_counts_sums_and_latency(void **state)
{
	struct hwt_probe_stats st;
	struct run r;
	int64_t k2 = 2, k1 = 1;

	(void)state;
	run_open(&r, "uprobe:/bin/app:f { @c = count(); @s = sum(arg0); @m[arg1] = count(); "
		     "@lo = min(arg0); @hi = max(arg0); @av = avg(arg0); self->ts = nsecs }\n"
		     "uretprobe:/bin/app:f /self->ts/ { @lat = quantize(nsecs - self->ts); "
		     "@tot = sum(nsecs - self->ts); @r = sum(retval); self->ts = 0 }");
	fire(&r, 0, 1, 100, 5, 2, 0);
	fire(&r, 0, 2, 200, 7, 2, 0);
	fire(&r, 0, 3, 300, 9, 1, 0);
	fire(&r, 1, 1, 1100, 0, 0, 40);	  /* tid 1: 1000 ns */
	fire(&r, 1, 4, 1200, 0, 0, 1000); /* tid 4 never entered: filtered */
	fire(&r, 1, 2, 3200, 0, 0, 2);	  /* tid 2: 3000 ns */
	fire(&r, 1, 1, 4000, 0, 0, 1000); /* tid 1 again: self->ts was deleted */
	assert_int_equal(agg(&r, "c", NULL, 0), 3);
	assert_int_equal(agg(&r, "s", NULL, 0), 21);
	assert_int_equal(agg(&r, "m", &k2, 1), 2);
	assert_int_equal(agg(&r, "m", &k1, 1), 1);
	assert_int_equal(agg(&r, "lo", NULL, 0), 5);
	assert_int_equal(agg(&r, "hi", NULL, 0), 9);
	assert_int_equal(agg(&r, "av", NULL, 0), 7);
	assert_int_equal(agg(&r, "lat", NULL, 0), 2); /* histogram: total count */
	assert_int_equal(agg(&r, "tot", NULL, 0), 4000);
	assert_int_equal(agg(&r, "r", NULL, 0), 42);
	hwt_probe_rt_stats(r.rt, &st);
	assert_int_equal(st.hits, 7);
	assert_int_equal(st.filtered, 2);
	assert_int_equal(st.faults, 0);
	run_close(&r);
}

static void test_printed_layout(void **state)
{
	struct hwt_buf out;
	struct run r;

	(void)state;
	run_open(&r, "uprobe:/bin/app:f { @calls = count(); @by[comm, arg0] = sum(arg1) }");
	fire(&r, 0, 1, 1, 3, 10, 0);
	fire(&r, 0, 1, 2, 3, 5, 0);
	fire(&r, 0, 1, 3, 12, 1, 0);
	hwt_buf_init(&out);
	assert_int_equal(hwt_probe_rt_print(r.rt, HWT_REP_FMT_TEXT, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_string_equal((char *)out.data, "@calls: count()\n"
					      "  3\n"
					      "\n"
					      "@by[comm, arg0]: sum()\n"
					      "  app  12   1\n"
					      "  app   3  15\n");
	out.len = 0;
	assert_int_equal(hwt_probe_rt_print(r.rt, HWT_REP_FMT_JSON, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_non_null(strstr((char *)out.data, "{\"aggregations\": [{"));
	assert_non_null(strstr((char *)out.data, "\"name\":\"calls\""));
	assert_non_null(strstr((char *)out.data, "\"stats\": {\"hits\": 3, \"filtered\": 0"));
	hwt_buf_fini(&out);
	run_close(&r);
}

static void test_expressions_and_strings(void **state)
{
	struct run r;
	int64_t k;

	(void)state;
	run_open(&r, "uprobe:/bin/app:f { @e[comm == \"app\" ? 1 : 0] = count(); "
		     "@n[comm != \"app\"] = count(); "
		     "@x = sum((arg0 << 4) + (arg1 & 0xf) - -3 * 2 % 5 + (arg0 > 2 && arg1 < 9) + "
		     "(!arg0 || ~arg1 == -10) + (arg0 ^ 1) + (arg0 | 8) + (arg0 >> 1)); "
		     "this->t = arg0 * 10; @t = sum(this->t / 5) }");
	fire(&r, 0, 1, 1, 3, 9, 0);
	k = 1;
	assert_int_equal(agg(&r, "e", &k, 1), 1);
	k = 0;
	assert_int_equal(agg(&r, "n", &k, 1), 1);
	/* 48 + 9 - (-3*2 % 5 = -1) + 0 + 1 + 2 + 11 + 1 */
	assert_int_equal(agg(&r, "x", NULL, 0), 48 + 9 + 1 + 0 + 1 + 2 + 11 + 1);
	assert_int_equal(agg(&r, "t", NULL, 0), 6);
	run_close(&r);
}

static void test_faults_are_counted(void **state)
{
	struct hwt_probe_stats st;
	struct run r;
	int64_t v;

	(void)state;
	run_open(&r, "uprobe:/bin/app:f { @x = sum(100 / arg0); @y = sum(arg0 % arg1) }");
	fire(&r, 0, 1, 1, 0, 0, 0);
	fire(&r, 0, 1, 2, 4, 3, 0);
	hwt_probe_rt_stats(r.rt, &st);
	assert_int_equal(st.faults, 1);
	assert_int_equal(agg(&r, "x", NULL, 0), 25);
	assert_int_equal(agg(&r, "y", NULL, 0), 1);
	/* INT64_MIN / -1 overflows: a fault too, not a crash */
	fire(&r, 0, 1, 3, (uint64_t)INT64_MIN, 0, 0);
	hwt_probe_rt_stats(r.rt, &st);
	assert_int_equal(st.faults, 2);
	assert_int_equal(hwt_probe_rt_agg_value(r.rt, "nope", NULL, 0, &v), -HWT_ENOSYM);
	run_close(&r);
}

static void test_printf_exit_begin_end(void **state)
{
	struct hwt_probe_stats st;
	struct run r;

	(void)state;
	run_open(&r,
		 "BEGIN { printf(\"start %s|%5d|%-3x|%c|%%|%05u\\n\", \"go\", 42, 255, 65, 7) }\n"
		 "uprobe:/bin/app:f { @c = count(); printf(\"f(%d) tid=%d\\n\", arg0, tid) }\n"
		 "uprobe:/bin/app:f /arg0 == 2/ { exit() }\n"
		 "END { printf(\"end %d\\n\", 1) }");
	assert_int_equal(hwt_probe_rt_begin(r.rt), 0);
	assert_int_equal(hwt_probe_rt_begin(r.rt), 0); /* once */
	for (uint64_t i = 0; i < 5; i++)
		fire(&r, 1, 7, 10 + i, i, 0, 0); /* probe 0 is BEGIN */
	assert_true(hwt_probe_rt_exited(r.rt));
	assert_int_equal(hwt_probe_rt_end(r.rt), 0);
	assert_int_equal(hwt_buf_append(&captured, "", 1), 0);
	assert_string_equal((char *)captured.data, "start go|   42|ff |A|%|00007\n"
						   "f(0) tid=7\n"
						   "f(1) tid=7\n"
						   "f(2) tid=7\n"
						   "end 1\n");
	assert_int_equal(agg(&r, "c", NULL, 0), 3);
	hwt_probe_rt_stats(r.rt, &st);
	assert_int_equal(st.hits, 3); /* BEGIN and END are not hits */
	run_close(&r);
}

/* A raw tracepoint record of test:ev: val, name, path (data_loc), big. */
static size_t make_raw(uint8_t *raw, int32_t val, const char *name, const char *path)
{
	size_t plen = strlen(path) + 1;

	memset(raw, 0, 64);
	hwt_put_le16(raw, 4242);
	hwt_put_le32(raw + 8, (uint32_t)val);
	memcpy(raw + 12, name, strlen(name) < 8 ? strlen(name) : 8);
	hwt_put_le32(raw + 20, (uint32_t)(plen << 16 | 32));
	hwt_put_le64(raw + 24, 1ull << 40);
	memcpy(raw + 32, path, plen);
	return 32 + plen;
}

static void test_tracepoint_fields(void **state)
{
	uint8_t raw[64];
	struct hwt_probe_hit h;
	struct run r;

	(void)state;
	run_open(&r, "test:ev { @v = sum(args->val); @b = max(args->big); "
		     "@n[args->name, args.path] = count() }\n"
		     "test:ev /args->name == \"abcdefgh\"/ { @long = count() }");
	memset(&h, 0, sizeof(h));
	h.pid = h.tid = 5;
	h.raw = raw;
	h.raw_size = (uint32_t)make_raw(raw, -7, "cat", "/etc/x");
	assert_int_equal(hwt_probe_rt_fire(r.rt, 0, &h), 0);
	/* a name that fills its 8 bytes without a NUL */
	h.raw_size = (uint32_t)make_raw(raw, 20, "abcdefgh", "/p");
	assert_int_equal(hwt_probe_rt_fire(r.rt, 0, &h), 0);
	assert_int_equal(agg(&r, "v", NULL, 0), 13);
	assert_int_equal(agg(&r, "b", NULL, 0), 1ll << 40);
	assert_int_equal(agg(&r, "long", NULL, 0), 1);
	/* a record too short for the fields reads them as 0 and "" */
	h.raw_size = 10;
	assert_int_equal(hwt_probe_rt_fire(r.rt, 0, &h), 0);
	assert_int_equal(agg(&r, "v", NULL, 0), 13);
	{
		struct hwt_buf out;

		hwt_buf_init(&out);
		assert_int_equal(hwt_probe_rt_print(r.rt, HWT_REP_FMT_TEXT, &out), 0);
		assert_int_equal(hwt_buf_append(&out, "", 1), 0);
		assert_non_null(strstr((char *)out.data, "@n[name, path]: count()\n"));
		assert_non_null(strstr((char *)out.data, "  cat       /etc/x  1\n"));
		assert_non_null(strstr((char *)out.data, "  abcdefgh  /p      1\n"));
		assert_non_null(strstr((char *)out.data, "                    1\n"));
		hwt_buf_fini(&out);
	}
	run_close(&r);
}

static void test_thread_locals_many_threads(void **state)
{
	struct hwt_probe_stats st;
	struct run r;

	(void)state;
	/* 5000 threads enter, then return in reverse order: every latency
	 * is matched to its own thread, and the table empties again. */
	run_open(&r, "uprobe:/bin/app:f { self->ts = nsecs; self->n += 1 }\n"
		     "uretprobe:/bin/app:f /self->ts/ { @tot = sum(nsecs - self->ts); "
		     "@n = sum(self->n); self->ts = 0; self->n = 0 }");
	for (int32_t t = 1; t <= 5000; t++)
		fire(&r, 0, t, 1000 + (uint64_t)t, 0, 0, 0);
	for (int32_t t = 5000; t >= 1; t--)
		fire(&r, 1, t, 100000 + 2 * (uint64_t)t, 0, 0, 0);
	/* sum over t of (100000 + 2t) - (1000 + t) = 5000*99000 + sum(t) */
	assert_int_equal(agg(&r, "tot", NULL, 0), 5000ll * 99000 + 5000ll * 5001 / 2);
	assert_int_equal(agg(&r, "n", NULL, 0), 5000);
	for (int32_t t = 1; t <= 5000; t += 7)
		fire(&r, 1, t, 200000, 0, 0, 0);
	hwt_probe_rt_stats(r.rt, &st);
	assert_int_equal(st.filtered, (5000 + 6) / 7);
	run_close(&r);
}

/* The kprobe PMU's attributes, against a fake sysfs that has one, and the
 * clear refusal where the real kernel has none. */
static void test_kprobe_attr(void **state)
{
	char *sys = hwt_test_tmpdir(), path[512];
	struct hwt_probe_config cfg;
	struct hwt_probe_prog *prog;
	struct hwt_probe_diag diag;
	struct perf_event_attr attr;
	char *sym = NULL;
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/bus", sys);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/bus/event_source", sys);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices", sys);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/kprobe", sys);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/kprobe/format", sys);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/kprobe/type", sys);
	hwt_test_write_file(path, "6\n", 2);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/kprobe/format/retprobe", sys);
	hwt_test_write_file(path, "config:0\n", 9);

	prog = compile_ok(
	    "kprobe:do_sys_openat2+8 { @a = sum(arg1) } kretprobe:vfs_read { @ = count() }");
	config(&cfg);
	cfg.sysfs_root = sys;
	assert_int_equal(hwt_probe_live_attr(prog, 0, &cfg, &attr, &sym, &diag), 0);
	assert_int_equal(attr.type, 6);
	assert_int_equal(attr.config, 0);
	assert_string_equal(sym, "do_sys_openat2");
	assert_int_equal(attr.config2, 8);
	assert_true(attr.sample_type & PERF_SAMPLE_REGS_INTR); /* kernel registers */
	free(sym);
	assert_int_equal(hwt_probe_live_attr(prog, 1, &cfg, &attr, &sym, &diag), 0);
	assert_int_equal(attr.config, 1); /* format/retprobe: config:0 */
	assert_string_equal(sym, "vfs_read");
	free(sym);
	sym = NULL;

	/* this machine: no kprobe PMU, and the message says so */
	if (!stat("/sys/bus/event_source/devices/kprobe", &st)) {
		hwt_probe_prog_free(prog);
		hwt_test_tmpdir_remove(sys);
		hwt_test_skip("this kernel has a kprobe PMU; its absence cannot be shown here");
		return;
	}
	config(&cfg);
	assert_int_equal(hwt_probe_live_attr(prog, 0, &cfg, &attr, &sym, &diag), -HWT_ENOTSUP);
	assert_null(sym);
	assert_non_null(strstr(diag.msg,
			       "this kernel has no kprobe PMU "
			       "(/sys/bus/event_source/devices/kprobe missing); kprobes need "
			       "CONFIG_KPROBE_EVENTS"));
	assert_int_equal(diag.column, 1);
	hwt_probe_prog_free(prog);
	hwt_test_tmpdir_remove(sys);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probe_descriptions),
	    cmocka_unit_test(test_errors_point_at_the_place),
	    cmocka_unit_test(test_unknown_tracepoint_suggests),
	    cmocka_unit_test(test_counts_sums_and_latency),
	    cmocka_unit_test(test_printed_layout),
	    cmocka_unit_test(test_expressions_and_strings),
	    cmocka_unit_test(test_faults_are_counted),
	    cmocka_unit_test(test_printf_exit_begin_end),
	    cmocka_unit_test(test_tracepoint_fields),
	    cmocka_unit_test(test_thread_locals_many_threads),
	    cmocka_unit_test(test_kprobe_attr),
	};
	int rc = cmocka_run_group_tests(tests, setup, teardown);

	hwt_buf_fini(&captured);
	return rc;
}
