/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/report/test_cli_report.c - `hwtrace report --folded-in`: exact
 * output for a hand-computed profile, JSON that python3 parses into the
 * same numbers, and exit codes and one-line errors for bad use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/lib/testutil.h"
#include "tests/report/report_test.h"

static const char gt[] =
    "prog;_start;main;leaf 60\nprog;_start;main;a;leaf 30\nprog;_start;main;a 10\n";

static void test_report_text_and_json(void **state)
{
	char *dir = hwt_test_tmpdir(), buf[256];
	struct hwt_test_run run;
	const char *in = rt_write(dir, "gt.folded", gt, strlen(gt));
	char out[4096];

	(void)state;
	hwt_test_run(&run, "%s report --folded-in %s --no-children -n 1 --event cycles",
		     hwt_test_hwtrace(), in);
	assert_int_equal(run.status, 0);
	assert_string_equal(
	    run.out, "# hwtrace report\n"
		     "#\n"
		     "# Samples: 100 of event 'cycles'\n"
		     "# Event count: 100\n"
		     "#\n"
		     "# Overhead  Symbol\n"
		     "# ........  ......\n"
		     "#\n"
		     /* The chain starts with the entry itself: perf leaves that
		      * name out when the sort keys start with the function. */
		     "    90.00%  [.] leaf\n"
		     "            |          \n"
		     "            |--60.00%--main\n"
		     "            |          _start\n"
		     "            |          prog\n"
		     "            |          \n"
		     "             --30.00%--a\n"
		     "                       main\n"
		     "                       _start\n"
		     "                       prog\n"
		     "\n"
		     "#\n"
		     "# samples: 100 (weight 100), filtered out: 0, lost: 0, without stack: 0\n"
		     "# frames: 430, unsymbolized: 0 (0.00%), truncated stacks: 0, bad input: 0\n");
	hwt_test_run_free(&run);

	/* -g none, a limit: only entries of at least 50% children, no graphs. */
	hwt_test_run(&run, "%s report --folded-in %s -g none --percent-limit 50",
		     hwt_test_hwtrace(), in);
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.out, "#\n   100.00%     0.00%  [.] _start\n"
					       "   100.00%     0.00%  [.] main\n"
					       "   100.00%     0.00%  [.] prog\n"
					       "    90.00%    90.00%  [.] leaf\n#\n"));
	hwt_test_run_free(&run);

	snprintf(out, sizeof(out), "%s/r.json", dir);
	hwt_test_run(&run, "%s report --folded-in %s --json -o %s", hwt_test_hwtrace(), in, out);
	assert_int_equal(run.status, 0);
	hwt_test_run_free(&run);
	rt_json_valid(out);
	assert_string_equal(
	    rt_json_eval(out,
			 "[(e[\"function\"], e[\"self\"], e[\"children\"]) for e in "
			 "d[\"events\"][0][\"entries\"]]",
			 buf, sizeof(buf)),
	    "[('_start', 0, 100), ('main', 0, 100), ('prog', 0, 100), ('leaf', 90, 90), "
	    "('a', 10, 40)]");
	hwt_test_tmpdir_remove(dir);
}

static void test_report_errors(void **state)
{
	static const struct {
		const char *args;
		int status;
		const char *msg;
	} cases[] = {
	    {"-i %s.missing.hwt", 1,
	     ".missing.hwt: no such file (check the path, or record one with 'hwtrace record')"},
	    {"-i %s --folded-in %s", 2, "give either -i FILE or --folded-in FILE, not both"},
	    {"--folded-in %s -g sideways", 2, "-g takes caller, callee or none"},
	    {"--folded-in %s -s function,stack", 2, "bad --sort"},
	    {"--folded-in %s --percent-limit 101", 2, "--percent-limit takes 0 to 100"},
	    {"--folded-in %s --percentage some", 2,
	     "--percentage takes absolute or relative, not 'some'"},
	    {"--folded-in %s trace.data", 2,
	     "unexpected argument 'trace.data' (the recording is given with -i)"},
	    {"--folded-in %s.missing", 1, "cannot read"},
	};
	char *dir = hwt_test_tmpdir();
	const char *in = rt_write(dir, "gt.folded", gt, strlen(gt));
	const char *bad = rt_write(dir, "bad.folded", "a;b 1\na;b x\n", 12);
	struct hwt_test_run run;

	(void)state;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(cases); i++) {
		char args[4096];
		size_t len = 0;

		/* "%s" in a case stands for the input file. */
		for (const char *a = cases[i].args; *a && len + 1 < sizeof(args);) {
			if (a[0] == '%' && a[1] == 's') {
				len += (size_t)snprintf(args + len, sizeof(args) - len, "%s", in);
				a += 2;
			} else {
				args[len++] = *a++;
			}
		}
		args[len] = '\0';
		hwt_test_run(&run, "%s report %s", hwt_test_hwtrace(), args);
		assert_int_equal(run.status, cases[i].status);
		assert_true(hwt_test_contains(run.err, cases[i].msg));
		/* one line */
		assert_int_equal(strchr(run.err, '\n') - run.err + 1, (long)strlen(run.err));
		hwt_test_run_free(&run);
	}
	hwt_test_run(&run, "%s report --folded-in %s", hwt_test_hwtrace(), bad);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "bad.folded:2: not a folded stack line"));
	assert_string_equal(run.out, "");
	hwt_test_run_free(&run);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report_text_and_json),
	    cmocka_unit_test(test_report_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
