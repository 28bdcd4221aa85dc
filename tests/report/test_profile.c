/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/report/test_profile.c - profiles and their views against
 * hand-computed ground truth: self/children percentages, perf-style caller
 * and callee call graphs (exact text), JSON with the same numbers, filters,
 * folded output (exact), folded input (round trip and every error), and
 * sample keys for aggregations over samples.
 *
 * The profile most tests use (event cpu-clock, comm prog, weight 10 each):
 *   6 x  _start > main > leaf
 *   3 x  _start > main > a > leaf
 *   1 x  _start > main > a
 * so children: _start 100%, main 100%, leaf 90%, a 40%; self: leaf 90%,
 * a 10%; 10 samples, 33 frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>

#include "tests/lib/testutil.h"
#include "tests/report/report_test.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static void add(struct hwt_rep_profile *p, const char *const *names, size_t n, int times,
		uint64_t weight)
{
	struct hwt_rep_frame fr[8];
	struct hwt_rep_sample s;

	for (size_t i = 0; i < n; i++)
		fr[i] = rt_frame(names[i], strcmp(names[i], "_start") ? "/usr/bin/prog" : LIBC,
				 HWT_REP_KIND_USER);
	memset(&s, 0, sizeof(s));
	s.event = "cpu-clock";
	s.comm = "prog";
	s.pid = s.tid = 100;
	s.cpu = 1;
	s.weight = weight;
	s.frames = fr;
	s.nframes = n;
	for (int i = 0; i < times; i++)
		assert_int_equal(hwt_rep_profile_add(p, &s), 1);
}

static struct hwt_rep_profile *ground_truth(void)
{
	static const char *const s1[] = {"leaf", "main", "_start"};
	static const char *const s2[] = {"leaf", "a", "main", "_start"};
	static const char *const s3[] = {"a", "main", "_start"};
	struct hwt_rep_profile *p;

	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	add(p, s1, 3, 6, 10);
	add(p, s2, 4, 3, 10);
	add(p, s3, 3, 1, 10);
	return p;
}

static char *render(const struct hwt_rep_profile *p, struct hwt_rep_render_config *cfg)
{
	struct hwt_buf b;

	hwt_buf_init(&b);
	assert_int_equal(hwt_rep_render(p, cfg, &b), 0);
	assert_int_equal(hwt_buf_append(&b, "", 1), 0);
	return (char *)b.data;
}

static void test_children_caller_graph(void **state)
{
	struct hwt_rep_profile *p = ground_truth();
	struct hwt_rep_render_config cfg;
	char *text;

	(void)state;
	hwt_rep_render_config_init(&cfg);
	text = render(p, &cfg);
	assert_string_equal(
	    text, "# hwtrace report\n"
		  "#\n"
		  "# Samples: 10 of event 'cpu-clock'\n"
		  "# Event count: 100\n"
		  "#\n"
		  "# Children      Self  Command  Shared Object  Symbol\n"
		  "# ........  ........  .......  .............  ......\n"
		  "#\n"
		  "   100.00%     0.00%  prog     libc.so.6      [.] _start\n"
		  "            |\n"
		  "            ---_start\n"
		  "               main\n"
		  "               |          \n"
		  "               |--60.00%--leaf\n"
		  "               |          \n"
		  "                --40.00%--a\n"
		  "                          |          \n"
		  "                           --30.00%--leaf\n"
		  "\n"
		  "   100.00%     0.00%  prog     prog           [.] main\n"
		  "            |\n"
		  "            ---main\n"
		  "               |          \n"
		  "               |--60.00%--leaf\n"
		  "               |          \n"
		  "                --40.00%--a\n"
		  "                          |          \n"
		  "                           --30.00%--leaf\n"
		  "\n"
		  "    90.00%    90.00%  prog     prog           [.] leaf\n"
		  "            |\n"
		  "            ---_start\n"
		  "               main\n"
		  "               |          \n"
		  "               |--60.00%--leaf\n"
		  "               |          \n"
		  "                --30.00%--a\n"
		  "                          leaf\n"
		  "\n"
		  "    40.00%    10.00%  prog     prog           [.] a\n"
		  "            |          \n"
		  "            |--30.00%--a\n"
		  "            |          leaf\n"
		  "            |          \n"
		  "             --10.00%--_start\n"
		  "                       main\n"
		  "                       a\n"
		  "\n"
		  "#\n"
		  "# samples: 10 (weight 100), filtered out: 0, lost: 0, without stack: 0\n"
		  "# frames: 33, unsymbolized: 0 (0.00%), truncated stacks: 0, bad input: 0\n");
	free(text);
	hwt_rep_profile_free(p);
}

static void test_self_callee_graph(void **state)
{
	struct hwt_rep_profile *p = ground_truth();
	struct hwt_rep_render_config cfg;
	char *text;

	(void)state;
	hwt_rep_render_config_init(&cfg);
	cfg.children = false;
	hwt_rep_profile_lost(p, 2);
	text = render(p, &cfg);
	assert_string_equal(
	    text, "# hwtrace report\n"
		  "#\n"
		  "# Samples: 10 of event 'cpu-clock'\n"
		  "# Event count: 100\n"
		  "#\n"
		  "# Overhead  Command  Shared Object  Symbol\n"
		  "# ........  .......  .............  ......\n"
		  "#\n"
		  "    90.00%  prog     prog           [.] leaf\n"
		  "            |\n"
		  "            ---leaf\n"
		  "               |          \n"
		  "               |--60.00%--main\n"
		  "               |          _start\n"
		  "               |          \n"
		  "                --30.00%--a\n"
		  "                          main\n"
		  "                          _start\n"
		  "\n"
		  "    10.00%  prog     prog           [.] a\n"
		  "            |\n"
		  "            ---a\n"
		  "               main\n"
		  "               _start\n"
		  "\n"
		  "#\n"
		  "# samples: 10 (weight 100), filtered out: 0, lost: 2, without stack: 0\n"
		  "# frames: 33, unsymbolized: 0 (0.00%), truncated stacks: 0, bad input: 0\n");
	free(text);

	/* No graph, sorted by another key: per-function only. */
	cfg.graph = HWT_REP_GRAPH_NONE;
	cfg.nsort = 1;
	cfg.sort[0] = HWT_REP_F_FUNCTION;
	cfg.children = true;
	text = render(p, &cfg);
	assert_true(hwt_test_contains(text, "# Children      Self  Symbol\n"
					    "# ........  ........  ......\n"
					    "#\n"
					    "   100.00%     0.00%  [.] _start\n"
					    "   100.00%     0.00%  [.] main\n"
					    "    90.00%    90.00%  [.] leaf\n"
					    "    40.00%    10.00%  [.] a\n#\n"));
	free(text);
	/* percent_limit hides entries below it; max_entries cuts the list. */
	cfg.percent_limit = 50;
	text = render(p, &cfg);
	assert_true(hwt_test_contains(text, "[.] leaf\n#\n"));
	assert_false(hwt_test_contains(text, "[.] a\n"));
	free(text);
	cfg.percent_limit = 0;
	cfg.max_entries = 1;
	text = render(p, &cfg);
	assert_true(hwt_test_contains(text, "[.] _start\n#\n"));
	assert_false(hwt_test_contains(text, "[.] main"));
	free(text);
	hwt_rep_profile_free(p);
}

/* Branches of equal weight under one node come in perf's order (perf
 * keys them by object, then symbol start, highest first): in one object
 * the function that starts higher first, whatever the names; inlined
 * frames by name, the greater first, before them; the kernel's objects
 * after the others. One sample each under main, caller graph of main. */
static void test_equal_branches_perf_order(void **state)
{
	static const struct {
		const char *fn, *obj;
		uint32_t kind;
		uint64_t start;
	} leaves[] = {
	    {"alpha", "/usr/bin/prog", HWT_REP_KIND_USER, 0x1300},
	    {"zeta", "/usr/bin/prog", HWT_REP_KIND_USER, 0x1100},
	    {"mid", "/usr/bin/prog", HWT_REP_KIND_USER, 0x1200},
	    {"k_low", "[kernel.kallsyms]", HWT_REP_KIND_KERNEL, 0xffffffff81000100ull},
	    {"k_high", "[kernel.kallsyms]", HWT_REP_KIND_KERNEL, 0xffffffff81000200ull},
	    {"inl_a", "/usr/bin/prog", HWT_REP_KIND_INLINED, 0},
	    {"inl_b", "/usr/bin/prog", HWT_REP_KIND_INLINED, 0},
	};
	/* their order as perf prints them */
	static const char *const want[] = {"--inl_b\n", "--inl_a\n",  "--alpha\n", "--mid\n",
					   "--zeta\n",	"--k_high\n", "--k_low\n"};
	struct hwt_rep_profile *p;
	struct hwt_rep_render_config cfg;
	const char *at, *entry;
	char *text;

	(void)state;
	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(leaves); i++) {
		struct hwt_rep_frame fr[2] = {
		    rt_frame(leaves[i].fn, leaves[i].obj, leaves[i].kind),
		    rt_frame("main", "/usr/bin/prog", HWT_REP_KIND_USER),
		};
		struct hwt_rep_sample s;

		fr[0].addr = leaves[i].start;
		fr[1].addr = 0x1000;
		memset(&s, 0, sizeof(s));
		s.event = "cpu-clock";
		s.comm = "prog";
		s.pid = s.tid = 100;
		s.weight = 10;
		s.frames = fr;
		s.nframes = 2;
		assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	}
	hwt_rep_render_config_init(&cfg);
	cfg.graph_limit = 0;
	text = render(p, &cfg);
	entry = strstr(text, "[.] main\n");
	assert_non_null(entry);
	at = entry;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(want); i++) {
		const char *next = strstr(at, want[i]);

		assert_non_null(next);
		/* within main's graph, after the previous one */
		assert_true(!strstr(entry + 1, "\n\n") || next < strstr(entry + 1, "\n\n"));
		at = next;
	}
	free(text);
	hwt_rep_profile_free(p);
}

static void test_json_numbers(void **state)
{
	struct hwt_rep_profile *p = ground_truth();
	struct hwt_rep_render_config cfg;
	char *dir = hwt_test_tmpdir(), *text, buf[512];
	const char *path;

	(void)state;
	hwt_rep_render_config_init(&cfg);
	cfg.format = HWT_REP_FMT_JSON;
	text = render(p, &cfg);
	path = rt_write(dir, "report.json", text, strlen(text));
	rt_json_valid(path);
	assert_string_equal(
	    rt_json_eval(path,
			 "[(e[\"function\"], e[\"object\"], e[\"self\"], e[\"children\"], "
			 "e[\"self_percent\"], e[\"children_percent\"]) for e in "
			 "d[\"events\"][0][\"entries\"]]",
			 buf, sizeof(buf)),
	    "[('_start', 'libc.so.6', 0, 100, 0.0, 100.0), ('main', 'prog', 0, 100, 0.0, 100.0), "
	    "('leaf', 'prog', 90, 90, 90.0, 90.0), ('a', 'prog', 10, 40, 10.0, 40.0)]");
	assert_string_equal(
	    rt_json_eval(path,
			 "d[\"events\"][0][\"event\"], d[\"events\"][0][\"samples\"], "
			 "d[\"events\"][0][\"weight\"], d[\"stats\"][\"frames\"]",
			 buf, sizeof(buf)),
	    "cpu-clock 10 100 33");
	/* The caller graph of "a": a > leaf (30), _start > main > a (10). */
	assert_string_equal(
	    rt_json_eval(path,
			 "[(n[\"name\"], n[\"weight\"], [c[\"name\"] for c in n[\"children\"]]) "
			 "for n in d[\"events\"][0][\"entries\"][3][\"callgraph\"][\"tree\"]]",
			 buf, sizeof(buf)),
	    "[('a', 30, ['leaf']), ('_start', 10, ['main'])]");
	free(text);
	hwt_rep_profile_free(p);
	hwt_test_tmpdir_remove(dir);
}

static void test_filters(void **state)
{
	const char *const comms[] = {"prog"};
	const int32_t pids[] = {100, 300};
	const char *const objects[] = {"libc.so.6"};
	struct hwt_rep_profile_config pc;
	struct hwt_rep_profile *p;
	struct hwt_rep_frame fr[2] = {rt_frame("write", LIBC, HWT_REP_KIND_USER),
				      rt_frame("main", "/usr/bin/prog", HWT_REP_KIND_USER)};
	struct hwt_rep_sample s;

	(void)state;
	hwt_rep_profile_config_init(&pc);
	pc.filter.comms = comms;
	pc.filter.ncomms = 1;
	pc.filter.pids = pids;
	pc.filter.npids = 2;
	pc.filter.objects = objects;
	pc.filter.nobjects = 1;
	pc.filter.time_begin = 1000;
	pc.filter.time_end = 2000;
	assert_int_equal(hwt_rep_profile_alloc(&p, &pc), 0);
	memset(&s, 0, sizeof(s));
	s.comm = "prog";
	s.pid = s.tid = 100;
	s.time = 1500;
	s.frames = fr;
	s.nframes = 2;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	s.comm = "other";
	assert_int_equal(hwt_rep_profile_add(p, &s), 0);
	s.comm = "prog";
	s.pid = 200;
	assert_int_equal(hwt_rep_profile_add(p, &s), 0);
	s.pid = 300;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	s.time = 999;
	assert_int_equal(hwt_rep_profile_add(p, &s), 0);
	s.time = 2000; /* the end is exclusive */
	assert_int_equal(hwt_rep_profile_add(p, &s), 0);
	s.time = 1999;
	s.frames = fr + 1; /* leaf in prog, not libc */
	s.nframes = 1;
	assert_int_equal(hwt_rep_profile_add(p, &s), 0);
	assert_int_equal(hwt_rep_profile_stats(p)->samples, 2);
	assert_int_equal(hwt_rep_profile_stats(p)->filtered, 5);
	hwt_rep_profile_free(p);
}

/* Kinds, unsymbolized frames and names with separators, folded exactly. */
static void test_folded_exact(void **state)
{
	struct hwt_rep_profile *p = ground_truth(), *q;
	struct hwt_rep_render_config cfg;
	struct hwt_rep_frame fr[4];
	struct hwt_rep_sample s;
	char *text, *again;
	size_t line;

	(void)state;
	hwt_rep_render_config_init(&cfg);
	cfg.format = HWT_REP_FMT_FOLDED;
	text = render(p, &cfg);
	assert_string_equal(text, "prog;_start;main;a 10\n"
				  "prog;_start;main;a;leaf 30\n"
				  "prog;_start;main;leaf 60\n");
	free(text);

	fr[0] = rt_frame("do_syscall_64", "[kernel.kallsyms]", HWT_REP_KIND_KERNEL);
	fr[1] = rt_frame(NULL, LIBC, HWT_REP_KIND_USER); /* unsymbolized: [libc.so.6] */
	fr[1].addr = 0x7f0000001234;
	fr[2] = rt_frame("ns::f(int; long)", "/usr/bin/prog", HWT_REP_KIND_INLINED);
	fr[3] = rt_frame(NULL, NULL, HWT_REP_KIND_JIT);
	memset(&s, 0, sizeof(s));
	s.comm = "prog";
	s.weight = 7;
	s.frames = fr;
	s.nframes = 4;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	assert_int_equal(hwt_rep_profile_stats(p)->unsymbolized, 2);
	text = render(p, &cfg);
	assert_string_equal(
	    text, "prog;[unknown]_[j];ns::f(int: long)_[i];[libc.so.6];do_syscall_64_[k] 7\n"
		  "prog;_start;main;a 10\n"
		  "prog;_start;main;a;leaf 30\n"
		  "prog;_start;main;leaf 60\n");
	/* Read back, written again: identical (comm becomes a plain frame). */
	assert_int_equal(hwt_rep_profile_alloc(&q, NULL), 0);
	assert_int_equal(hwt_rep_profile_add_folded(q, text, strlen(text), "x", &line), 4);
	assert_int_equal(hwt_rep_profile_stats(q)->samples, 107);
	assert_int_equal(hwt_rep_profile_stats(q)->unsymbolized, 7); /* the [unknown] frame */
	again = render(q, &cfg);
	assert_string_equal(again, text);
	free(again);
	cfg.annotate = false;
	cfg.by_comm = false;
	again = render(p, &cfg);
	assert_true(hwt_test_contains(again,
				      "[unknown];ns::f(int: long);[libc.so.6];do_syscall_64 7\n"
				      "_start;main;a 10\n"));
	free(again);
	free(text);
	hwt_rep_profile_free(q);
	hwt_rep_profile_free(p);
}

static void test_folded_errors(void **state)
{
	static const struct {
		const char *text;
		size_t line;
	} bad[] = {
	    {"a;b\n", 1},  {"a;b 3\nbad\n", 2}, {"a;;b 3\n", 1},
	    {";a 3\n", 1}, {"a; 3\n", 1},	{"a 0\n", 1},
	    {"a -3\n", 1}, {"a 3x\n", 1},	{"a 99999999999999999999\n", 1},
	    {" 5\n", 1},
	};
	struct hwt_rep_profile *p;
	size_t line;

	(void)state;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(bad); i++) {
		assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
		assert_int_equal(
		    hwt_rep_profile_add_folded(p, bad[i].text, strlen(bad[i].text), NULL, &line),
		    -HWT_EFORMAT);
		assert_int_equal(line, bad[i].line);
		assert_int_equal(hwt_rep_profile_stats(p)->bad_input, 1);
		/* Lines before the bad one are kept. */
		assert_int_equal(hwt_rep_profile_stats(p)->samples, bad[i].line == 2 ? 3 : 0);
		hwt_rep_profile_free(p);
	}
	/* Blank lines, CRLF and trailing blanks are fine; spaces in names too. */
	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	{
		const char *t = "\n a;operator new(unsigned long) 2\r\n\n b 1 \n";

		assert_int_equal(hwt_rep_profile_add_folded(p, t, strlen(t), NULL, &line), 2);
	}
	assert_int_equal(hwt_rep_profile_stats(p)->samples, 3);
	hwt_rep_profile_free(p);
}

static void test_deep_and_empty_stacks(void **state)
{
	struct hwt_rep_profile *p;
	struct hwt_rep_frame *fr = calloc(HWT_REP_MAX_DEPTH + 10, sizeof(*fr));
	struct hwt_rep_sample s;
	struct hwt_rep_render_config cfg;
	char *text;

	(void)state;
	assert_non_null(fr);
	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	for (size_t i = 0; i < HWT_REP_MAX_DEPTH + 10; i++)
		fr[i] = rt_frame(i == 0 ? "leaf" : "rec", "/bin/x", HWT_REP_KIND_USER);
	memset(&s, 0, sizeof(s));
	s.frames = fr;
	s.nframes = HWT_REP_MAX_DEPTH + 10;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	s.nframes = 0;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	assert_int_equal(hwt_rep_profile_stats(p)->truncated, 1);
	assert_int_equal(hwt_rep_profile_stats(p)->no_stack, 1);
	assert_int_equal(hwt_rep_profile_stats(p)->frames, HWT_REP_MAX_DEPTH);
	hwt_rep_render_config_init(&cfg);
	text = render(p, &cfg);
	/* Recursion counts once in children: rec is 50%, not 1023 x 50%. */
	assert_true(
	    hwt_test_contains(text, "    50.00%     0.00%  [unknown]  x              [.] rec\n"));
	assert_true(hwt_test_contains(
	    text, "    50.00%    50.00%  [unknown]  [unknown]      [.] [unknown]\n"));
	free(text);
	for (int f = HWT_REP_FMT_FOLDED; f <= HWT_REP_FMT_PPROF; f++) {
		struct hwt_buf b;

		cfg.format = (enum hwt_rep_format)f;
		hwt_buf_init(&b);
		assert_int_equal(hwt_rep_render(p, &cfg, &b), 0);
		assert_true(b.len > 0);
		hwt_buf_fini(&b);
	}
	free(fr);
	hwt_rep_profile_free(p);
}

static void test_sample_keys(void **state)
{
	const enum hwt_rep_field fields[] = {
	    HWT_REP_F_FUNCTION, HWT_REP_F_OBJECT, HWT_REP_F_COMM,  HWT_REP_F_PID,
	    HWT_REP_F_SRCLINE,	HWT_REP_F_USTACK, HWT_REP_F_KSTACK};
	struct hwt_rep_frame fr[3] = {
	    rt_frame("sys_write", "[kernel.kallsyms]", HWT_REP_KIND_KERNEL),
	    rt_frame("write", LIBC, HWT_REP_KIND_USER),
	    rt_frame("main", "/bin/p", HWT_REP_KIND_USER)};
	const uint32_t types[] = {HWT_REP_STR, HWT_REP_STACK};
	struct hwt_rep_agg_config ac;
	struct hwt_rep_dict *dict;
	struct hwt_rep_sample s;
	struct hwt_rep_val key[7];
	struct hwt_rep_agg *agg;
	const uint32_t *frames;
	enum hwt_rep_field f;
	struct hwt_buf b;

	(void)state;
	fr[0].file = "fs/read_write.c";
	fr[0].line = 652;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	memset(&s, 0, sizeof(s));
	s.comm = "p";
	s.pid = 9;
	s.frames = fr;
	s.nframes = 3;
	assert_int_equal(hwt_rep_sample_key(dict, &s, fields, 7, key), 0);
	assert_string_equal(hwt_rep_dict_str_get(dict, (uint32_t)key[0].v), "sys_write");
	assert_string_equal(hwt_rep_dict_str_get(dict, (uint32_t)key[1].v), "[kernel.kallsyms]");
	assert_string_equal(hwt_rep_dict_str_get(dict, (uint32_t)key[2].v), "p");
	assert_int_equal(key[3].type, HWT_REP_INT);
	assert_int_equal(key[3].v, 9);
	assert_string_equal(hwt_rep_dict_str_get(dict, (uint32_t)key[4].v), "fs/read_write.c:652");
	assert_int_equal(hwt_rep_dict_stack_get(dict, (uint32_t)key[5].v, &frames), 2);
	assert_string_equal(hwt_rep_frame_label(dict, frames[0]), "write");
	assert_int_equal(hwt_rep_dict_stack_get(dict, (uint32_t)key[6].v, &frames), 1);
	assert_string_equal(hwt_rep_frame_label(dict, frames[0]), "sys_write");

	/* @[comm, ustack] = count() driven from samples. */
	hwt_rep_agg_config_init(&ac);
	ac.nkeys = 2;
	ac.key_types[0] = types[0];
	ac.key_types[1] = types[1];
	assert_int_equal(hwt_rep_agg_alloc(&agg, dict, &ac), 0);
	{
		const enum hwt_rep_field kf[] = {HWT_REP_F_COMM, HWT_REP_F_USTACK};

		for (int i = 0; i < 3; i++) {
			assert_int_equal(hwt_rep_sample_key(dict, &s, kf, 2, key), 0);
			assert_int_equal(hwt_rep_agg_update(agg, key, 0, 1), 0);
		}
	}
	hwt_buf_init(&b);
	assert_int_equal(hwt_rep_agg_print(agg, HWT_REP_FMT_TEXT, &b), 0);
	assert_int_equal(hwt_buf_append(&b, "", 1), 0);
	assert_string_equal((char *)b.data, "@[key0, key1]: count()\n"
					    "\n"
					    "  p\n"
					    "              libc.so.6`write\n"
					    "              p`main\n"
					    "                3\n");
	hwt_buf_fini(&b);
	hwt_rep_agg_free(agg);
	assert_int_equal(hwt_rep_field_parse("dso", &f), 0);
	assert_int_equal(f, HWT_REP_F_OBJECT);
	assert_int_equal(hwt_rep_field_parse("nope", &f), -HWT_EINVAL);
	hwt_rep_dict_free(dict);
}

static void test_shared_dict_frame_ids(void **state)
{
	struct hwt_rep_profile_config pc;
	struct hwt_rep_profile *p;
	struct hwt_rep_dict *dict;
	struct hwt_rep_frame fr = rt_frame("f", "/bin/x", HWT_REP_KIND_USER);
	struct hwt_rep_sample s;
	uint32_t ids[2];

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	assert_int_equal(hwt_rep_dict_frame(dict, &fr, &ids[0]), 0);
	fr.function = "g";
	assert_int_equal(hwt_rep_dict_frame(dict, &fr, &ids[1]), 0);
	hwt_rep_profile_config_init(&pc);
	pc.dict = dict;
	assert_int_equal(hwt_rep_profile_alloc(&p, &pc), 0);
	memset(&s, 0, sizeof(s));
	s.frame_ids = ids;
	s.nframes = 2;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	ids[1] = 12345;
	assert_int_equal(hwt_rep_profile_add(p, &s), -HWT_EINVAL);
	assert_int_equal(hwt_rep_profile_stats(p)->bad_input, 1);
	assert_int_equal(hwt_rep_profile_stats(p)->samples, 1);
	hwt_rep_profile_free(p);
	hwt_rep_dict_free(dict);
}

/* One section per event (heavier first); pid and source-line keys: main in
 * pid 42 and main in pid 7 are separate entries (3 of 6 cycles each). */
static void test_events_and_keys(void **state)
{
	struct hwt_rep_profile *p;
	struct hwt_rep_render_config cfg;
	struct hwt_rep_frame fr[2] = {rt_frame("f", "/bin/x", HWT_REP_KIND_KERNEL),
				      rt_frame("main", "/bin/x", HWT_REP_KIND_USER)};
	struct hwt_rep_sample s;
	char *text;

	(void)state;
	fr[0].file = "f.c";
	fr[0].line = 12;
	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	memset(&s, 0, sizeof(s));
	s.frames = fr;
	s.nframes = 2;
	s.pid = 42;
	s.event = "instructions";
	s.weight = 1;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	s.event = "cycles";
	s.weight = 3;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	s.pid = 7;
	s.frames = fr + 1;
	s.nframes = 1;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	hwt_rep_render_config_init(&cfg);
	cfg.graph = HWT_REP_GRAPH_NONE;
	cfg.nsort = 3;
	cfg.sort[0] = HWT_REP_F_PID;
	cfg.sort[1] = HWT_REP_F_SRCLINE;
	cfg.sort[2] = HWT_REP_F_FUNCTION;
	text = render(p, &cfg);
	assert_string_equal(
	    text, "# hwtrace report\n"
		  "#\n"
		  "# Samples: 2 of event 'cycles'\n"
		  "# Event count: 6\n"
		  "#\n"
		  "# Children      Self      Pid:Command    Source:Line  Symbol\n"
		  "# ........  ........  .................  ...........  ......\n"
		  "#\n"
		  "    50.00%    50.00%       42:[unknown]  f.c:12       [k] f\n"
		  "    50.00%    50.00%        7:[unknown]  [unknown]    [.] main\n"
		  "    50.00%     0.00%       42:[unknown]  [unknown]    [.] main\n"
		  "\n"
		  "#\n"
		  "# Samples: 1 of event 'instructions'\n"
		  "# Event count: 1\n"
		  "#\n"
		  "# Children      Self      Pid:Command    Source:Line  Symbol\n"
		  "# ........  ........  .................  ...........  ......\n"
		  "#\n"
		  "   100.00%   100.00%       42:[unknown]  f.c:12       [k] f\n"
		  "   100.00%     0.00%       42:[unknown]  [unknown]    [.] main\n"
		  "#\n"
		  "# samples: 3 (weight 7), filtered out: 0, lost: 0, without stack: 0\n"
		  "# frames: 5, unsymbolized: 0 (0.00%), truncated stacks: 0, bad input: 0\n");
	free(text);
	/* Stack fields cannot key a report entry. */
	cfg.sort[0] = HWT_REP_F_USTACK;
	{
		struct hwt_buf b;

		hwt_buf_init(&b);
		assert_int_equal(hwt_rep_render(p, &cfg, &b), -HWT_EINVAL);
		hwt_buf_fini(&b);
	}
	hwt_rep_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_children_caller_graph),
	    cmocka_unit_test(test_self_callee_graph),
	    cmocka_unit_test(test_equal_branches_perf_order),
	    cmocka_unit_test(test_json_numbers),
	    cmocka_unit_test(test_filters),
	    cmocka_unit_test(test_folded_exact),
	    cmocka_unit_test(test_folded_errors),
	    cmocka_unit_test(test_deep_and_empty_stacks),
	    cmocka_unit_test(test_sample_keys),
	    cmocka_unit_test(test_shared_dict_frame_ids),
	    cmocka_unit_test(test_events_and_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
