/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/ptprint/test_realpt_slow.c - `hwtrace script --itrace=i` and
 * `--flow` on the real hardware traces of tests/data/real-pt print the
 * same with every engine, and the instructions are exactly those libipt's
 * ptxed lists for the trace (ptxed-insn.txt.zst, the ground truth): the
 * FAST and LIBIPT engines' cached basic blocks and the PTXED engine's
 * libipt blocks (which run on across direct calls and jumps) expand to the
 * same instructions. The PTXED engine has no call stacks, so --flow with it
 * is refused with the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/testutil.h"

static const char *const engines[] = {"fast", "libipt", "ptxed"};

/* Runs script on trace NAME with opts into TMP/out-ENGINE. */
static void script(const char *tmp, const char *name, const char *opts, const char *engine)
{
	struct hwt_test_run r;

	hwt_test_run(&r,
		     "cd '%s/real-pt/%s' && '%s' script --pt trace.pt $(cat raw.args) %s "
		     "--engine=%s > '%s/out-%s'",
		     hwt_test_testdata(), name, hwt_test_hwtrace(), opts, engine, tmp, engine);
	if (r.status)
		fprintf(stderr, "%s\n", r.err);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
}

static void same_files(const char *tmp, const char *a, const char *b)
{
	struct hwt_test_run r;

	hwt_test_run(&r, "cmp '%s/out-%s' '%s/out-%s'", tmp, a, tmp, b);
	if (r.status)
		fprintf(stderr, "%s: %s differs from %s\n%s", tmp, b, a, r.out);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
}

static void check_trace(const char *name, unsigned long long ptxed_insns)
{
	char *tmp = hwt_test_tmpdir();
	struct hwt_test_run r;

	for (size_t e = 0; e < sizeof(engines) / sizeof(engines[0]); e++)
		script(tmp, name, "--itrace=i", engines[e]);
	same_files(tmp, "fast", "libipt");
	same_files(tmp, "fast", "ptxed");
	/* ptxed's instruction addresses, in order, are ours */
	hwt_test_run(&r,
		     "zstdcat '%s/real-pt/%s/ptxed-insn.txt.zst' | sed -n "
		     "'s/^0*\\([0-9a-f][0-9a-f]*\\)  .*/\\1/p' > '%s/want' && "
		     "awk '/: insn: /{print $NF}' '%s/out-fast' > '%s/got' && cmp '%s/want' "
		     "'%s/got' && wc -l < '%s/got'",
		     hwt_test_testdata(), name, tmp, tmp, tmp, tmp, tmp, tmp);
	if (r.status)
		fprintf(stderr, "%s: %s%s", name, r.out, r.err);
	assert_int_equal(r.status, 0);
	assert_int_equal(strtoull(r.out, NULL, 10), ptxed_insns);
	hwt_test_run_free(&r);

	/* the flow: the same from both engines with call stacks */
	script(tmp, name, "--flow", "fast");
	script(tmp, name, "--flow", "libipt");
	same_files(tmp, "fast", "libipt");
	hwt_test_run(&r,
		     "cd '%s/real-pt/%s' && '%s' script --pt trace.pt $(cat raw.args) --flow "
		     "--engine=ptxed",
		     hwt_test_testdata(), name, hwt_test_hwtrace());
	assert_int_equal(r.status, 2);
	assert_true(hwt_test_contains(r.err, "without call stacks"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(tmp);
}

/* The instruction counts are those of tests/data/README.md's table. */
static void test_avscript_32(void **state)
{
	(void)state;
	check_trace("avscript_32", 1091780);
}

static void test_dyn_test(void **state)
{
	(void)state;
	check_trace("dyn_test", 731);
}

static void test_icelake_tip(void **state)
{
	(void)state;
	check_trace("icelake_tip", 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_avscript_32),
	    cmocka_unit_test(test_dyn_test),
	    cmocka_unit_test(test_icelake_tip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
