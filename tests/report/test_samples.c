/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/report/test_samples.c - reports and flame graphs of recordings of
 * samples, against perf on the same perf.data and against the known hot
 * spots of tests/progs/rec_hot.c (75% of its CPU time in hot_a, reached
 * main -> path_a -> hot_a; 25% in hot_b, main -> path_b -> middle_b ->
 * hot_b):
 *
 *   - `hwtrace report --no-children` and `perf report --stdio --no-children`
 *     (and both with children) list the same entries above 1% with the same
 *     percentages, to display rounding (tests/report/perf_compare.py), and
 *     the same call graphs line for line in both orders, with sort keys and
 *     filters (perf_compare.py graphs), on perf.data files, pipes, -z and
 *     two events;
 *   - `hwtrace flame -o x.folded` holds exactly the stacks `perf script`
 *     shows, folded by perf_compare.py (one stated exception, see there);
 *   - on hwtrace's own .hwt of rec_hot the time goes to the right
 *     functions with the right call chains; filters, sort keys, graphs,
 *     JSON, pipes, perf record -z, several events, inline expansion, the
 *     caches (results equal with and without), the sampled-stack Chrome
 *     trace, icicle and differential graphs (colours of known changes);
 *   - errors are one line and exit 1.
 * The main recordings (perf and hwtrace, with and without -g) are made once
 * per run (group setup); cases that need another kind (a perf pipe, -z,
 * two events, the inline program, no samples, emulated PT) make a short
 * one each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "tests/lib/testutil.h"
#include "tests/report/report_test.h"

struct fixture {
	char *dir;
	char perf[4096]; /* perf record -g of rec_hot */
	char own[4096];	 /* hwtrace record -g of rec_hot */
	char flat[4096]; /* hwtrace record of rec_hot without -g */
	char cmp[4096];	 /* tests/report/perf_compare.py */
	bool have_perf;
};

static struct fixture fx;

static int setup(void **state)
{
	struct hwt_test_run r;

	(void)state;
	fx.dir = hwt_test_tmpdir();
	snprintf(fx.perf, sizeof(fx.perf), "%s/hot.data", fx.dir);
	snprintf(fx.own, sizeof(fx.own), "%s/hot.hwt", fx.dir);
	snprintf(fx.flat, sizeof(fx.flat), "%s/flat.hwt", fx.dir);
	snprintf(fx.cmp, sizeof(fx.cmp), "%s/tests/report/perf_compare.py", hwt_test_source_dir());
	hwt_test_run(&r, "perf record -q -g -F 999 -o %s -- %s 0.6", fx.perf,
		     hwt_test_prog("rec_hot"));
	fx.have_perf = r.status == 0;
	if (!fx.have_perf)
		fprintf(stderr, "perf record failed (%d): %s\n", r.status, r.err);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s record -q -g -F 999 -o %s -- %s 0.6", hwt_test_hwtrace(), fx.own,
		     hwt_test_prog("rec_hot"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s record -q -F 999 -o %s -- %s 0.2", hwt_test_hwtrace(), fx.flat,
		     hwt_test_prog("rec_hot"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(fx.dir); /* frees it */
	fx.dir = NULL;
	return 0;
}

static void need_perf(void)
{
	if (!fx.have_perf)
		hwt_test_skip("perf record does not work here");
}

/* True when a line of text matches the extended regular expression re
 * (column widths follow the longest value, as perf's do, so tests match
 * columns by pattern, not by a fixed number of spaces). */
static bool has_line(const char *text, const char *re)
{
	regex_t rx;
	bool found;

	assert_int_equal(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB | REG_NEWLINE), 0);
	found = regexec(&rx, text, 0, NULL, 0) == 0;
	regfree(&rx);
	return found;
}

/* Runs a command that must succeed; its stdout stays in *r. */
#define RUN_OK(r, ...)                                                                             \
	do {                                                                                       \
		hwt_test_run((r), __VA_ARGS__);                                                    \
		if ((r)->status != 0)                                                              \
			fprintf(stderr, "failed (%d): %s%s\n", (r)->status, (r)->out, (r)->err);   \
		assert_int_equal((r)->status, 0);                                                  \
	} while (0)

/* ------------------------------------------------------------------------ */

static void test_report_matches_perf(void **state)
{
	struct hwt_test_run r;

	(void)state;
	need_perf();
	/* --no-children: the self percentages of every entry above 1%. */
	RUN_OK(&r,
	       "perf report -i %s --stdio --no-children > %s/p.nc 2>/dev/null && "
	       "%s report -q -i %s --stdio --no-children > %s/h.nc && "
	       "python3 %s report %s/p.nc %s/h.nc 1",
	       fx.perf, fx.dir, hwt_test_hwtrace(), fx.perf, fx.dir, fx.cmp, fx.dir, fx.dir);
	fprintf(stderr, "%s", r.out);
	assert_true(hwt_test_contains(r.out, "[.] hot_a"));
	assert_true(hwt_test_contains(r.out, "[.] hot_b"));
	hwt_test_run_free(&r);
	/* Children (the default with call chains): both columns. */
	RUN_OK(&r,
	       "perf report -i %s --stdio > %s/p.ch 2>/dev/null && "
	       "%s report -q -i %s > %s/h.ch && python3 %s report %s/p.ch %s/h.ch 1",
	       fx.perf, fx.dir, hwt_test_hwtrace(), fx.perf, fx.dir, fx.cmp, fx.dir, fx.dir);
	fprintf(stderr, "%s", r.out);
	assert_true(hwt_test_contains(r.out, "[.] path_a"));
	assert_true(hwt_test_contains(r.out, "[.] main"));
	hwt_test_run_free(&r);
}

static void test_folded_matches_perf_script(void **state)
{
	struct hwt_test_run r;

	(void)state;
	need_perf();
	RUN_OK(&r,
	       "perf script -i %s -F comm,ip,sym,symoff,dso > %s/p.script 2>/dev/null && "
	       "%s flame -q -i %s -o %s/h.folded && python3 %s stacks %s/p.script %s/h.folded",
	       fx.perf, fx.dir, hwt_test_hwtrace(), fx.perf, fx.dir, fx.cmp, fx.dir, fx.dir);
	fprintf(stderr, "%s", r.out);
	assert_true(hwt_test_contains(r.out, "identical multisets"));
	hwt_test_run_free(&r);
}

/* The share of hwtrace's own recording that each hot spot got, with its
 * call chain. */
static void test_own_recording(void **state)
{
	char json[4200], buf[1024];
	struct hwt_test_run r;
	double a, b;

	(void)state;
	snprintf(json, sizeof(json), "%s/own.json", fx.dir);
	RUN_OK(&r, "%s report -q -i %s --no-children --json -o %s", hwt_test_hwtrace(), fx.own,
	       json);
	hwt_test_run_free(&r);
	/* One python for all the checks (each start costs half a second of
	 * CPU here): the two shares, the callers of each hot spot (callee
	 * graph: exactly its path) and whether the stats add up. */
	{
		char hot_a_path[256], hot_b_path[256], stats_ok[16];
		const char *v = rt_json_eval(
		    json,
		    "(lambda E, cg: \"%.4f %.4f %s %s %s\" % (E(\"hot_a\")[\"self_percent\"], "
		    "E(\"hot_b\")[\"self_percent\"], cg(\"hot_a\"), cg(\"hot_b\"), "
		    "d[\"stats\"][\"samples\"] == "
		    "d[\"events\"][0][\"samples\"] and d[\"stats\"][\"lost\"] == 0 and "
		    "d[\"stats\"][\"filtered\"] == 0))"
		    "((lambda n: [e for e in d[\"events\"][0][\"entries\"] if e[\"function\"] == "
		    "n][0]), "
		    "(lambda n: (lambda t: \",\".join([t[\"name\"], t[\"children\"][0][\"name\"], "
		    "t[\"children\"][0][\"children\"][0][\"name\"]]))([e for e in "
		    "d[\"events\"][0][\"entries\"] "
		    "if e[\"function\"] == n][0][\"callgraph\"][\"tree\"][0])))",
		    buf, sizeof(buf));

		assert_int_equal(
		    sscanf(v, "%lf %lf %255s %255s %15s", &a, &b, hot_a_path, hot_b_path, stats_ok),
		    5);
		fprintf(stderr, "own recording: hot_a %.2f%%, hot_b %.2f%%\n", a, b);
		/* 75/25 of the program's own time, within a few points; a
		 * loaded machine adds kernel samples (interrupts, reschedules:
		 * 11% in one CI-like run), so the split is checked between
		 * the two and their sum only loosely. */
		assert_true(a + b > 75);
		assert_true(a / (a + b) > 0.67 && a / (a + b) < 0.83);
		assert_string_equal(hot_a_path, "hot_a,path_a,main");
		assert_string_equal(hot_b_path, "hot_b,middle_b,path_b");
		/* The stats say what was kept. */
		assert_string_equal(stats_ok, "True");
	}

	/* Children: main and path_a hold their callees' time. */
	RUN_OK(&r, "%s report -q -i %s -g caller", hwt_test_hwtrace(), fx.own);
	assert_true(has_line(r.out, "^# Children      Self  Command +Shared Object +Symbol$"));
	assert_true(hwt_test_contains(r.out, "[.] main\n"));
	assert_true(hwt_test_contains(r.out, "--path_a\n"));
	assert_true(hwt_test_contains(r.out, "# samples: "));
	hwt_test_run_free(&r);
}

static void test_filters_and_sorts(void **state)
{
	char json[4200], buf[1024], want[128];
	struct hwt_test_run r;
	unsigned long long t0, t1, all, part;
	int pid;

	(void)state;
	snprintf(json, sizeof(json), "%s/f.json", fx.dir);
	/* The process's pid, the number of samples and the time span, from
	 * script (a line per sample with -G). */
	RUN_OK(&r,
	       "%s script -q -G -i %s | awk 'NR==1{split($2,p,\"/\"); f=$4} {t=$4} "
	       "END{print p[1], NR, f, t}' | tr -d ':'",
	       hwt_test_hwtrace(), fx.own);
	{
		double a, b;

		assert_int_equal(sscanf(r.out, "%d %llu %lf %lf", &pid, &all, &a, &b), 4);
		t0 = (unsigned long long)(a * 1e6);
		t1 = (unsigned long long)(b * 1e6);
	}
	hwt_test_run_free(&r);

	/* (rec_hot has one thread: its tid is its pid) */
	RUN_OK(&r,
	       "%s report -q -i %s --pid %d --tid %d --comm rec_hot --dso rec_hot -s function "
	       "--no-children -g none --json -o %s",
	       hwt_test_hwtrace(), fx.own, pid, pid, json);
	hwt_test_run_free(&r);
	/* Only samples whose leaf is in rec_hot: its functions only; the
	 * others are counted as filtered out, none lost. */
	snprintf(want, sizeof(want), "(['hot_a', 'hot_b'], %llu)", all);
	assert_string_equal(rt_json_eval(json,
					 "(sorted(set(e[\"function\"] for e in d[\"events\"][0]"
					 "[\"entries\"]) - {\"main\", \"path_a\", \"path_b\", "
					 "\"middle_b\", \"cpu_seconds\", \"_start\"}), "
					 "d[\"stats\"][\"samples\"] + d[\"stats\"][\"filtered\"])",
					 buf, sizeof(buf)),
			    want);

	/* Nothing matches: not an error, everything counted as filtered. */
	hwt_test_run(&r, "%s report -i %s --tid %d --json -o %s", hwt_test_hwtrace(), fx.own,
		     pid + 1, json);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "the filters rejected all"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s report -i %s --comm nosuch --json -o %s", hwt_test_hwtrace(), fx.own,
		     json);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "the filters rejected all"));
	hwt_test_run_free(&r);
	snprintf(want, sizeof(want), "(0, %llu)", all);
	assert_string_equal(rt_json_eval(json,
					 "(d[\"stats\"][\"samples\"], d[\"stats\"][\"filtered\"])",
					 buf, sizeof(buf)),
			    want);

	/* A time window: the first half of the recording keeps about half;
	 * the rest is counted as filtered out. */
	RUN_OK(&r, "%s report -q -i %s --time %llu.%06llu,%llu.%06llu --json -o %s",
	       hwt_test_hwtrace(), fx.own, t0 / 1000000, t0 % 1000000, ((t0 + t1) / 2) / 1000000,
	       ((t0 + t1) / 2) % 1000000, json);
	hwt_test_run_free(&r);
	{
		unsigned long long filtered;

		assert_int_equal(sscanf(rt_json_eval(json,
						     "\"%d %d\" % (d[\"stats\"][\"samples\"], "
						     "d[\"stats\"][\"filtered\"])",
						     buf, sizeof(buf)),
					"%llu %llu", &part, &filtered),
				 2);
		fprintf(stderr, "time window: %llu of %llu samples\n", part, all);
		assert_true(part > all / 4 && part < all * 3 / 4);
		assert_int_equal(filtered, all - part);
	}

	/* Sort keys: pid and cpu columns as perf prints them ("%7d:comm",
	 * "%03d"), srcline names hot_a's loop. */
	RUN_OK(&r, "%s report -q -i %s -s pid,cpu --no-children -g none", hwt_test_hwtrace(),
	       fx.own);
	assert_true(has_line(r.out, "^# Overhead +Pid:Command  CPU$"));
	snprintf(buf, sizeof(buf), "^ +[0-9.]+%%  %7d:rec_hot  00[01]$", pid);
	assert_true(has_line(r.out, buf));
	hwt_test_run_free(&r);
	RUN_OK(&r, "%s report -q -i %s -s srcline --no-children -g none -n 2", hwt_test_hwtrace(),
	       fx.own);
	assert_true(hwt_test_contains(r.out, "rec_hot.c:"));
	hwt_test_run_free(&r);
	RUN_OK(&r, "%s report -q -i %s -s object,event --no-children -g none", hwt_test_hwtrace(),
	       fx.own);
	assert_true(has_line(r.out, "^# Overhead  Shared Object +Event$"));
	assert_true(has_line(r.out, "^ +[0-9.]+%  rec_hot +cpu-clock$"));
	hwt_test_run_free(&r);
}

/* The objects perf names for each function of data's call chains, for
 * perf_compare.py graphs --objects (equal branches into different objects
 * come in an order perf does not define). */
#define OBJECTS_CMD                                                                                \
	"perf report -i %s --stdio --children -s dso,sym -g none > %s/p.obj 2>/dev/null && "
/* perf's frames of the same data, for perf_compare.py graphs --plus0 (the
 * names perf gives return addresses right after a function's last call). */
#define PLUS0_CMD "perf script -i %s -F ip,sym,symoff,dso > %s/p.plus0 2>/dev/null && "

/* hwtrace report and perf report of the same perf.data (`hw` options to
 * hwtrace, `pf` to perf) agree on every entry at or above min percent and
 * on its call graph, line for line (graph branches under 1% hidden on
 * both sides; equal branches in perf's order, see perf_compare.py graphs).
 * Short recordings compare from 2%: ld.so's start-up can reach 1% there,
 * where the two name a return address after a last call differently (see
 * perf_compare.py). */
static void graphs_agree(const char *data, const char *hw, const char *pf, const char *what,
			 int min)
{
	struct hwt_test_run r;

	hwt_test_run(&r,
		     OBJECTS_CMD PLUS0_CMD
		     "perf report -i %s --stdio %s > %s/p.g 2>/dev/null && "
		     "%s report -q -i %s --graph-limit 1 %s > %s/h.g && "
		     "python3 %s graphs --objects %s/p.obj --plus0 %s/p.plus0 "
		     "%s/p.g %s/h.g %d",
		     data, fx.dir, data, fx.dir, data, pf, fx.dir, hwt_test_hwtrace(), data, hw,
		     fx.dir, fx.cmp, fx.dir, fx.dir, fx.dir, fx.dir, min);
	fprintf(stderr, "%s: %s", what, r.out);
	if (r.status != 0)
		fprintf(stderr, "%s", r.err);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "ok: "));
	hwt_test_run_free(&r);
}

struct mode {
	const char *hw, *pf; /* hwtrace report options, perf report's */
};

/* graphs_agree() for many modes at once: one shell and one python for all
 * of them (each start costs more than the reports). */
static void modes_agree(const char *data, const struct mode *modes, size_t n, const char *tag)
{
	struct hwt_buf cmd, cmp;
	struct hwt_test_run r;

	hwt_buf_init(&cmd);
	hwt_buf_init(&cmp);
	assert_int_equal(hwt_buf_printf(&cmd, OBJECTS_CMD PLUS0_CMD, data, fx.dir, data, fx.dir),
			 0);
	assert_int_equal(hwt_buf_printf(&cmp,
					"python3 %s graphs --objects %s/p.obj --plus0 %s/p.plus0",
					fx.cmp, fx.dir, fx.dir),
			 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(
		    hwt_buf_printf(&cmd,
				   "perf report -i %s --stdio %s > %s/p.%s%zu 2>/dev/null && "
				   "%s report -q -i %s --graph-limit 1 %s > %s/%s%zu && ",
				   data, modes[i].pf, fx.dir, tag, i, hwt_test_hwtrace(), data,
				   modes[i].hw, fx.dir, tag, i),
		    0);
		assert_int_equal(
		    hwt_buf_printf(&cmp, " %s/p.%s%zu %s/%s%zu 1", fx.dir, tag, i, fx.dir, tag, i),
		    0);
		fprintf(stderr, "%s%zu: hwtrace report %s | perf report %s\n", tag, i, modes[i].hw,
			modes[i].pf);
	}
	assert_int_equal(hwt_buf_append(&cmp, "", 1), 0);
	hwt_test_run(&r, "%.*s%s", (int)cmd.len, (const char *)cmd.data, (const char *)cmp.data);
	fprintf(stderr, "%s%s", r.out, r.err);
	assert_int_equal(r.status, 0);
	for (size_t i = 0; i < n; i++) {
		char want[64];

		snprintf(want, sizeof(want), "%s%zu: ok: ", tag, i);
		assert_true(hwt_test_contains(r.out, want));
	}
	hwt_test_run_free(&r);
	hwt_buf_fini(&cmd);
	hwt_buf_fini(&cmp);
}

/* Call graphs in both orders, with and without children, and the sort
 * keys perf has (dso = object, sym = function, comm), against perf. (Flat
 * reports: test_two_events.) */
static void test_graphs_match_perf(void **state)
{
	static const struct mode modes[] = {
	    {"--children -g caller", "--children -g graph,1,caller"},
	    {"--children -g callee", "--children -g graph,1,callee"},
	    {"--no-children -g caller", "--no-children -g graph,1,caller"},
	    {"--no-children -g callee", "--no-children -g graph,1,callee"},
	    {"-s object", "-g graph,1,caller -s dso"},
	    {"-s comm", "-g graph,1,caller -s comm"},
	    {"-s function", "-g graph,1,caller -s sym"},
	    {"-s function -g callee", "-g graph,1,callee -s sym"},
	    {"--no-children -s function -g caller", "--no-children -g graph,1,caller -s sym"},
	    {"--no-children -s object,function -g caller",
	     "--no-children -g graph,1,caller -s dso,sym"},
	    /* perf's pid is the thread: the same for one-thread rec_hot */
	    {"--no-children -s pid,cpu,object -g caller",
	     "--no-children -g graph,1,caller -s pid,cpu,dso"},
	};

	struct hwt_test_run r;

	(void)state;
	need_perf();
	modes_agree(fx.perf, modes, HWT_ARRAY_SIZE(modes), "mode");
	/* Without children the entries come in perf's order too, those of
	 * equal shares by their keys (entries of addresses without a symbol
	 * left out: see perf_compare.py). */
	RUN_OK(
	    &r,
	    "perf report -i %s --stdio --no-children -g none 2>/dev/null | grep '%%' | "
	    "grep -v '^#' | sed 's/ *$//' | grep -v -E '\\] "
	    "(0x[0-9a-f]+|[0-9a-f]{16}|\\[.*\\]|@plt)$' "
	    "> %s/p.order && %s report -q -i %s --no-children -g none | grep '%%' | grep -v '^#' | "
	    "grep -v -E '\\] (0x[0-9a-f]+|[0-9a-f]{16}|\\[.*\\]|@plt)$' > %s/h.order && "
	    "diff %s/p.order %s/h.order && wc -l < %s/h.order",
	    fx.perf, fx.dir, hwt_test_hwtrace(), fx.perf, fx.dir, fx.dir, fx.dir, fx.dir);
	fprintf(stderr, "entry order as perf's: %s", r.out);
	/* rec_hot's own two functions at least; samples elsewhere (the
	 * kernel, ld.so) come and go with the machine's load, so more lines
	 * are compared when there are, never required. */
	assert_true(atoi(r.out) >= 2);
	hwt_test_run_free(&r);
}

/* The filters against perf's: --comm/--pid/--tid/--dso (perf: --comms,
 * --pid, --tid, --dsos) with shares of every sample by default, of the
 * kept ones with --percentage relative; a one-value dso or comm filter
 * drops that column; --time keeps a window. Without children: with them,
 * perf's --dsos hides entries of other objects while hwtrace filters
 * samples by the leaf's object (docs/report.md). */
static void test_filters_match_perf(void **state)
{
	char pid[32], t0[32], t1[32], mid[32], hw[8][160], pf[8][160];
	struct mode modes[8];
	struct hwt_test_run r;
	size_t n = 0;

	(void)state;
	need_perf();
	RUN_OK(
	    &r,
	    "perf script -i %s -F pid,time 2>/dev/null | tr -d ':' | "
	    "awk 'NR==1{p=$1; f=$2} {t=$2} END{printf \"%%s %%s %%s %%.6f\\n\", p, f, t, (f+t)/2}'",
	    fx.perf);
	assert_int_equal(sscanf(r.out, "%31s %31s %31s %31s", pid, t0, t1, mid), 4);
	hwt_test_run_free(&r);
#define MODE(H, P, ...)                                                                            \
	do {                                                                                       \
		snprintf(hw[n], sizeof(hw[n]), "--no-children " H, __VA_ARGS__);                   \
		snprintf(pf[n], sizeof(pf[n]), "--no-children " P, __VA_ARGS__);                   \
		modes[n].hw = hw[n];                                                               \
		modes[n].pf = pf[n];                                                               \
		n++;                                                                               \
	} while (0)
	MODE("-g none --dso %s", "-g none --dsos %s", "rec_hot");
	MODE("-g none --percentage relative --dso %s", "-g none --percentage relative --dsos %s",
	     "rec_hot");
	MODE("-g caller --comm %s", "-g graph,1,caller --comms %s", "rec_hot");
	MODE("-g callee --comm rec_hot,%s --dso %s",
	     "-g graph,1,callee --comms rec_hot,%s --dsos %s", "nosuch", "rec_hot");
	MODE("-g callee --pid %s", "-g graph,1,callee --pid %s", pid);
	MODE("-g caller --tid %s", "-g graph,1,caller --tid %s", pid);
	MODE("-g callee --time %s,%s", "-g graph,1,callee --time %s,%s", t0, mid);
	MODE("-g none -s object --time %s,%s", "-g none -s dso --time %s,%s", mid, t1);
#undef MODE
	modes_agree(fx.perf, modes, n, "filter");
}

/* perf.data in pipe mode on stdin, and compressed (perf record -z): the
 * same report as perf's of the same bytes. */
static void test_pipe_and_compressed(void **state)
{
	char data[4200];
	struct hwt_test_run r;

	(void)state;
	need_perf();
	snprintf(data, sizeof(data), "%s/pipe.data", fx.dir);
	RUN_OK(&r,
	       "perf record -q -g -F 999 -o - -- %s 0.3 2>/dev/null > %s && "
	       "%s report -q -i - --no-children -g none -s function < %s",
	       hwt_test_prog("rec_hot"), data, hwt_test_hwtrace(), data);
	assert_true(hwt_test_contains(r.out, "[.] hot_a\n"));
	assert_true(hwt_test_contains(r.out, "[.] hot_b\n"));
	hwt_test_run_free(&r);
	graphs_agree(data, "--no-children -g callee", "--no-children -g graph,1,callee", "pipe", 2);
	/* stdin itself, as perf record | hwtrace report -i - (and flame):
	 * the same output as from the file */
	RUN_OK(&r,
	       "cat %s | %s report -q -i - --graph-limit 1 > %s/h.stdin && "
	       "%s report -q -i %s --graph-limit 1 | cmp - %s/h.stdin && "
	       "cat %s | %s flame -q -i - -o - --format folded > %s/f.stdin && "
	       "%s flame -q -i %s -o - --format folded | cmp - %s/f.stdin",
	       data, hwt_test_hwtrace(), fx.dir, hwt_test_hwtrace(), data, fx.dir, data,
	       hwt_test_hwtrace(), fx.dir, hwt_test_hwtrace(), data, fx.dir);
	hwt_test_run_free(&r);

	snprintf(data, sizeof(data), "%s/z.data", fx.dir);
	RUN_OK(&r,
	       "perf record -q -z -g -F 999 -o %s -- %s 0.3 2>/dev/null && "
	       "%s flame -q -i %s -o - --format folded",
	       data, hwt_test_prog("rec_hot"), hwt_test_hwtrace(), data);
	assert_true(hwt_test_contains(r.out, "rec_hot;__libc_start_call_main;main;path_a;hot_a "));
	assert_true(
	    hwt_test_contains(r.out, "rec_hot;__libc_start_call_main;main;path_b;middle_b;hot_b "));
	hwt_test_run_free(&r);
	graphs_agree(data, "--children -g caller", "--children -g graph,1,caller", "perf record -z",
		     2);
	/* and its folded stacks are perf script's */
	RUN_OK(&r,
	       "perf script -i %s -F comm,ip,sym,symoff,dso > %s/z.script 2>/dev/null && "
	       "%s flame -q -i %s -o %s/z.folded && python3 %s stacks %s/z.script %s/z.folded",
	       data, fx.dir, hwt_test_hwtrace(), data, fx.dir, fx.cmp, fx.dir, fx.dir);
	fprintf(stderr, "perf record -z, folded: %s", r.out);
	assert_true(hwt_test_contains(r.out, "identical multisets"));
	hwt_test_run_free(&r);
}

/* Two events: one section each, as perf report prints them; against perf
 * on a perf.data of two events. */
static void test_two_events(void **state)
{
	char data[4200], buf[256];
	struct hwt_test_run r;

	(void)state;
	RUN_OK(&r,
	       "%s record -q -g -e cpu-clock,page-faults -F 999 -o %s/two.hwt -- %s 0.2 && "
	       "%s report -q -i %s/two.hwt -g none",
	       hwt_test_hwtrace(), fx.dir, hwt_test_prog("rec_hot"), hwt_test_hwtrace(), fx.dir);
	assert_true(hwt_test_contains(r.out, "of event 'cpu-clock'"));
	assert_true(hwt_test_contains(r.out, "of event 'page-faults'"));
	hwt_test_run_free(&r);
	snprintf(data, sizeof(data), "%s/two.json", fx.dir);
	RUN_OK(&r, "%s report -q -i %s/two.hwt -g none --json -o %s", hwt_test_hwtrace(), fx.dir,
	       data);
	hwt_test_run_free(&r);
	assert_string_equal(
	    rt_json_eval(data, "sorted(e[\"event\"] for e in d[\"events\"])", buf, sizeof(buf)),
	    "['cpu-clock', 'page-faults']");
	/* The samples of the sections add up to the stats' count. */
	assert_string_equal(rt_json_eval(data,
					 "sum(e[\"samples\"] for e in d[\"events\"]) == "
					 "d[\"stats\"][\"samples\"]",
					 buf, sizeof(buf)),
			    "True");

	need_perf();
	snprintf(data, sizeof(data), "%s/two.data", fx.dir);
	RUN_OK(&r, "perf record -q -g -e cpu-clock,page-faults -F 999 -o %s -- %s 0.2 2>&1", data,
	       hwt_test_prog("rec_hot"));
	hwt_test_run_free(&r);
	/* Entries only: page faults happen in ld.so's start-up, where perf
	 * names a return address after a last call by the next symbol
	 * (_dl_start_user) and hwtrace by the caller (_start): see
	 * perf_compare.py. */
	graphs_agree(data, "--no-children -g none", "--no-children -g none", "two events", 1);
}

/* --inline: the loop inlined into outer shows as mix [i] under outer. */
static void test_inline(void **state)
{
	struct hwt_test_run r;

	(void)state;
	RUN_OK(&r,
	       "%s record -q -g -F 999 -o %s/inl.hwt -- %s 0.3 && "
	       "%s flame -q -i %s/inl.hwt -o - --format folded | sort -t' ' -k2 -nr | head -1",
	       hwt_test_hwtrace(), fx.dir, hwt_test_prog("rep_inline"), hwt_test_hwtrace(), fx.dir);
	assert_true(hwt_test_contains(r.out, "rep_inline;__libc_start_call_main;main;outer "));
	hwt_test_run_free(&r);
	RUN_OK(&r,
	       "%s flame -q --inline -i %s/inl.hwt -o - --format folded | sort -t' ' -k2 -nr | "
	       "head -1",
	       hwt_test_hwtrace(), fx.dir);
	assert_true(
	    hwt_test_contains(r.out, "rep_inline;__libc_start_call_main;main;outer;mix_[i] "));
	hwt_test_run_free(&r);
	RUN_OK(&r, "%s report -q --inline -i %s/inl.hwt --no-children -g none -n 1",
	       hwt_test_hwtrace(), fx.dir);
	assert_true(hwt_test_contains(r.out, "[i] mix\n"));
	hwt_test_run_free(&r);
	/* mix's frame (ld.so, which has inline records too, may come
	 * first: a sample during start-up) and the frame it is inlined in. */
	RUN_OK(&r, "%s script -q --inline -i %s/inl.hwt | grep -m1 -A1 ' mix (inlined)$'",
	       hwt_test_hwtrace(), fx.dir);
	assert_true(hwt_test_contains(r.out, " mix (inlined)\n"));
	assert_true(hwt_test_contains(r.out, " outer+0x"));
	hwt_test_run_free(&r);
}

/* The caches change nothing: a profile built with them equals one built
 * resolving every address every time (folded text, with inline frames and
 * lines too). */
static void folded_of(const char *path, bool no_cache, bool inl, struct hwt_buf *out,
		      struct hwt_rep_samples_stats *st)
{
	struct hwt_rep_samples_config cfg;
	struct hwt_rep_render_config rc;
	struct hwt_fmt_session *s;
	struct hwt_rep_samples *rs;
	struct hwt_rep_profile *p;

	assert_int_equal(hwt_fmt_session_open(&s, path, NULL, NULL), 0);
	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	hwt_rep_samples_config_init(&cfg);
	cfg.no_cache = no_cache;
	cfg.inline_frames = inl;
	cfg.srclines = inl;
	assert_int_equal(hwt_rep_samples_alloc(&rs, s, hwt_rep_profile_dict(p), &cfg), 0);
	assert_true(hwt_rep_samples_load(rs, p, NULL, NULL) > 0);
	hwt_rep_samples_stats(rs, st);
	hwt_rep_render_config_init(&rc);
	rc.format = HWT_REP_FMT_FOLDED;
	rc.count_samples = true;
	hwt_buf_init(out);
	assert_int_equal(hwt_rep_render(p, &rc, out), 0);
	hwt_rep_samples_free(rs);
	hwt_rep_profile_free(p);
	hwt_fmt_session_close(s);
}

static void test_cache_equivalence(void **state)
{
	const char *files[] = {fx.own, fx.perf};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		for (int inl = 0; inl < 2; inl++) {
			struct hwt_rep_samples_stats a, b;
			struct hwt_buf x, y;

			if (i == 1 && !fx.have_perf)
				continue;
			folded_of(files[i], false, inl, &x, &a);
			folded_of(files[i], true, inl, &y, &b);
			assert_true(x.len > 0);
			assert_int_equal(x.len, y.len);
			assert_memory_equal(x.data, y.data, x.len);
			assert_int_equal(a.samples, b.samples);
			assert_int_equal(a.frames, b.frames);
			/* Each distinct address was symbolized once with the
			 * caches, once per frame without. */
			assert_true(a.resolved < a.frames / 4);
			if (inl)
				assert_true(b.resolved <= b.frames - b.unmapped);
			else
				assert_int_equal(b.resolved, b.frames - b.unmapped);
			fprintf(stderr, "%s%s: %llu frames, %llu symbolized with caches\n",
				files[i], inl ? " (inline, lines)" : "",
				(unsigned long long)a.frames, (unsigned long long)a.resolved);
			hwt_buf_fini(&x);
			hwt_buf_fini(&y);
		}
	}
}

/* Every output format of flame from a recording; the Chrome trace of
 * sampled stacks; the differential graph of two recordings. */
static void test_flame_outputs(void **state)
{
	char path[4200], buf[1024];
	struct hwt_test_run r;
	double share;

	(void)state;
	RUN_OK(&r,
	       "cd %s && %s flame -i %s -o g.svg && %s flame -i %s -o g.html && "
	       "%s flame -i %s -o g.pb.gz && %s flame -i %s -o g.json",
	       fx.dir, hwt_test_hwtrace(), fx.own, hwt_test_hwtrace(), fx.own, hwt_test_hwtrace(),
	       fx.own, hwt_test_hwtrace(), fx.own);
	assert_true(hwt_test_contains(r.err, "g.svg: "));
	assert_true(hwt_test_contains(r.err, " samples (0 filtered out, 0 lost), "));
	hwt_test_run_free(&r);
	snprintf(path, sizeof(path), "%s/g.svg", fx.dir);
	{
		char *svg = hwt_test_read_file(path, NULL);

		assert_non_null(svg);
		assert_true(hwt_test_contains(svg, "hot_a"));
		assert_true(hwt_test_contains(svg, "path_b"));
		free(svg);
	}
	snprintf(path, sizeof(path), "%s/g.json", fx.dir);
	/* (rt_json_eval parses it with python's json: a strict parser) */
	/* Spans of a thread nest (each is inside or apart from every other
	 * one), and hot_a holds about 3/4 of hot_a + hot_b's time. Times are
	 * microseconds with three decimals: compared as integer ns, since
	 * ts + dur in floating point can differ from the next span's ts in
	 * the last bit where the two are equal. */
	assert_string_equal(
	    rt_json_eval(path,
			 "(lambda X: len(X) > 100 and all(not (a[1] < b[1] < a[1]+a[2] "
			 "< b[1]+b[2]) for a in X for b in X if a[0]==b[0]))([(e[\"tid\"], "
			 "round(e[\"ts\"]*1000), round(e[\"dur\"]*1000)) for e in "
			 "d[\"traceEvents\"] if e[\"ph\"]==\"X\" and e[\"name\"] in "
			 "(\"hot_a\",\"hot_b\",\"path_a\",\"path_b\",\"main\")][:400])",
			 buf, sizeof(buf)),
	    "True");
	assert_string_equal(rt_json_eval(path,
					 "[e[\"args\"][\"name\"] for e in d[\"traceEvents\"] if "
					 "e[\"ph\"]==\"M\"]",
					 buf, sizeof(buf)),
			    "['rec_hot']");
	share =
	    atof(rt_json_eval(path,
			      "(lambda s: s(\"hot_a\")/(s(\"hot_a\")+s(\"hot_b\")))(lambda n: "
			      "sum(e[\"dur\"] for e in d[\"traceEvents\"] if e[\"ph\"]==\"X\" and "
			      "e[\"name\"]==n))",
			      buf, sizeof(buf)));
	fprintf(stderr, "chrome trace: hot_a holds %.1f%% of hot_a + hot_b\n", 100 * share);
	assert_true(share > 0.62 && share < 0.85);

	/* pprof reads back (python's gzip) with our names in it. */
	snprintf(path, sizeof(path), "%s/g.pb.gz", fx.dir);
	RUN_OK(&r,
	       "python3 -c 'import gzip,sys; b=gzip.open(sys.argv[1]).read(); print(b\"hot_a\" in "
	       "b)' %s",
	       path);
	assert_string_equal(r.out, "True\n");
	hwt_test_run_free(&r);

	/* Icicle: the root at the top, above hot_a; the other way round
	 * without it. */
	RUN_OK(&r,
	       "cd %s && %s flame -q -i %s --icicle -o ic.svg && %s flame -q -i %s -o fl.svg && "
	       "for f in ic fl; do for n in all hot_a; do grep -o \"<title>$n ([^<]*</title><rect "
	       "[^>]*>\" $f.svg | head -1 | sed 's/.* y=\"\\([0-9]*\\)\".*/\\1/'; done; done | tr "
	       "'\\n' ' '",
	       fx.dir, hwt_test_hwtrace(), fx.own, hwt_test_hwtrace(), fx.own);
	{
		int ic_all, ic_a, fl_all, fl_a;

		assert_int_equal(sscanf(r.out, "%d %d %d %d", &ic_all, &ic_a, &fl_all, &fl_a), 4);
		fprintf(stderr,
			"icicle: all at y=%d, hot_a at y=%d; flame: all at y=%d, hot_a at y=%d\n",
			ic_all, ic_a, fl_all, fl_a);
		assert_true(ic_all < ic_a);
		assert_true(fl_all > fl_a);
	}
	hwt_test_run_free(&r);

	/* Differential graphs, whose colours are known: a recording against
	 * itself changes nothing (every frame grey); rep_inline's against
	 * rec_hot's without normalizing (about half the samples): the root
	 * shrank (blue), outer grew from nothing (red). */
	RUN_OK(&r,
	       "cd %s && %s flame -q -i %s --diff %s -o same.svg && grep -o '<title>[^<]*</title>"
	       "<rect [^>]*>' same.svg | grep -o 'fill=\"[^\"]*\"' | sort | uniq -c",
	       fx.dir, hwt_test_hwtrace(), fx.own, fx.own);
	assert_true(hwt_test_contains(r.out, "fill=\"rgb(225,225,225)\""));
	assert_int_equal(strchr(r.out, '\n') - r.out + 1, (long)strlen(r.out)); /* one colour */
	hwt_test_run_free(&r);
	RUN_OK(
	    &r,
	    "cd %s && (test -f inl.hwt || %s record -q -g -F 999 -o inl.hwt -- %s 0.3) && "
	    "%s flame -q -i inl.hwt --diff %s --no-normalize -o grew.svg && for n in all outer; do "
	    "grep -o \"<title>$n ([^<]*</title><rect [^>]*>\" grew.svg | head -1 | "
	    "grep -o 'fill=\"[^\"]*\"'; done",
	    fx.dir, hwt_test_hwtrace(), hwt_test_prog("rep_inline"), hwt_test_hwtrace(), fx.own);
	{
		int r1, g1, b1, r2, g2, b2;

		assert_int_equal(sscanf(r.out, "fill=\"rgb(%d,%d,%d)\"\nfill=\"rgb(%d,%d,%d)\"",
					&r1, &g1, &b1, &r2, &g2, &b2),
				 6);
		assert_true(b1 == 255 && r1 < 255 && g1 < 255); /* all: blue */
		assert_true(r2 == 255 && g2 < 100 && b2 < 100); /* outer: red */
	}
	hwt_test_run_free(&r);

	/* Differential: the own recording against the perf one (or itself). */
	RUN_OK(&r, "cd %s && %s flame -i %s --diff %s -o d.html", fx.dir, hwt_test_hwtrace(),
	       fx.own, fx.have_perf ? fx.perf : fx.own);
	hwt_test_run_free(&r);
	snprintf(path, sizeof(path), "%s/d.html", fx.dir);
	{
		char *html = hwt_test_read_file(path, NULL);

		assert_non_null(html);
		assert_true(hwt_test_contains(html, "Differential"));
		free(html);
	}
}

/* One-line errors, exit 1. */
static void test_errors(void **state)
{
	static const char garbage[] = "this is not a recording of anything at all, just text\n";
	char bad[4200];
	struct hwt_test_run r;
	struct {
		const char *cmd;
		const char *msg;
	} cases[] = {
	    {"report -i missing.hwt", "missing.hwt: no such file (check the path, or record one "
				      "with 'hwtrace record')"},
	    {"flame -i missing.hwt -o x.svg", "missing.hwt: no such file"},
	    {"report -i bad.hwt", "bad.hwt is not a hwtrace or perf.data recording (unknown "
				  "format at offset 0)"},
	    {"flame -i bad.hwt -o x.folded", "bad.hwt is not a hwtrace or perf.data recording "
					     "(unknown format at offset 0)"},
	    {"report -i .", ". is a directory without a 'data' file (give a recording, or the "
			    "directory perf record --kcore wrote)"},
	    {"report -i empty.hwt", "holds no samples ("},
	    {"report -i flat.hwt -g caller", "event 'cpu-clock' was recorded without call "
					     "chains, so it has no call graph: record with -g, "
					     "or report with -g none (or --no-children)"},
	};

	(void)state;
	snprintf(bad, sizeof(bad), "%s/bad.hwt", fx.dir);
	hwt_test_write_file(bad, garbage, sizeof(garbage) - 1);
	/* A recording in which the event never fired (with -c, as perf, no
	 * period in the samples: else the kernel samples a software event at
	 * every hit). */
	RUN_OK(&r, "%s record -q -e page-faults -c 1000000000 -o %s/empty.hwt -- true",
	       hwt_test_hwtrace(), fx.dir);
	hwt_test_run_free(&r);
	/* An Intel PT trace (emulated) is not samples: report gives the exact
	 * profile from the decoded trace (tests/ptflow check its numbers). */
	hwt_test_run(&r, "%s record -q --pt=emulate -o %s/pt.hwt -- true", hwt_test_hwtrace(),
		     fx.dir);
	if (r.status == 0) {
		struct hwt_test_run e;

		hwt_test_run(&e, "cd %s && %s report -i pt.hwt --stdio", fx.dir,
			     hwt_test_hwtrace());
		assert_int_equal(e.status, 0);
		assert_true(hwt_test_contains(e.err, "(exact, from Intel PT)"));
		hwt_test_run_free(&e);
	} else {
		fprintf(stderr,
			"no PT recording (the emulator did not run: %s): that case untested\n",
			r.err);
	}
	hwt_test_run_free(&r);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(cases); i++) {
		hwt_test_run(&r, "cd %s && %s %s", fx.dir, hwt_test_hwtrace(), cases[i].cmd);
		if (r.status != 1 || !hwt_test_contains(r.err, cases[i].msg))
			fprintf(stderr, "%s: %d: %s", cases[i].cmd, r.status, r.err);
		assert_int_equal(r.status, 1);
		assert_true(hwt_test_contains(r.err, cases[i].msg));
		assert_true(hwt_test_contains(r.err, "hwtrace: error: "));
		/* one line */
		assert_int_equal(strchr(r.err, '\n') - r.err + 1, (long)strlen(r.err));
		assert_string_equal(r.out, "");
		hwt_test_run_free(&r);
	}
	/* Without call chains the default is a flat profile, as perf's. */
	RUN_OK(&r, "%s report -q -i %s/flat.hwt", hwt_test_hwtrace(), fx.dir);
	assert_true(has_line(r.out, "^# Overhead  Command +Shared Object +Symbol$"));
	assert_true(hwt_test_contains(r.out, "[.] hot_a\n"));
	assert_false(hwt_test_contains(r.out, "---"));
	hwt_test_run_free(&r);
	/* The default input: hwtrace.hwt, else perf.data. */
	if (fx.have_perf) {
		RUN_OK(&r,
		       "mkdir -p %s/d && cp %s %s/d/perf.data && cd %s/d && %s report -q "
		       "--no-children -g none -n 1",
		       fx.dir, fx.perf, fx.dir, fx.dir, hwt_test_hwtrace());
		assert_true(hwt_test_contains(r.out, "[.] hot_a\n"));
		hwt_test_run_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report_matches_perf),
	    cmocka_unit_test(test_folded_matches_perf_script),
	    cmocka_unit_test(test_own_recording),
	    cmocka_unit_test(test_filters_and_sorts),
	    cmocka_unit_test(test_graphs_match_perf),
	    cmocka_unit_test(test_filters_match_perf),
	    cmocka_unit_test(test_pipe_and_compressed),
	    cmocka_unit_test(test_two_events),
	    cmocka_unit_test(test_inline),
	    cmocka_unit_test(test_cache_equivalence),
	    cmocka_unit_test(test_flame_outputs),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
