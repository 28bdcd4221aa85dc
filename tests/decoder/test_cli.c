/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/decoder/test_cli.c - `hwtrace script --pt` on synthetic programs
 * with known control flow (tests/lib/ptsynth.c): the views count what the
 * program did, engines and thread counts print the same, and bad command
 * lines and inputs give the documented exit codes and messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ptsynth.h"
#include "tests/lib/testutil.h"

struct fixture {
	char *dir;
	char code[512], pt[512], raw[2048];
	struct ptsynth w;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct ptsynth_config c;

	if (!f)
		return -1;
	ptsynth_config_init(&c);
	c.seed = 21;
	c.insns = 30000;
	c.syscall_ppm = 20000;
	c.interrupt_ppm = 10000;
	c.psb_period = 1024;
	if (ptsynth_generate(&c, &f->w) < 0)
		return -1;
	f->dir = hwt_test_tmpdir();
	snprintf(f->code, sizeof(f->code), "%s/code.bin", f->dir);
	snprintf(f->pt, sizeof(f->pt), "%s/trace.pt", f->dir);
	hwt_test_write_file(f->code, f->w.code, f->w.code_size);
	hwt_test_write_file(f->pt, f->w.pt, f->w.pt_len);
	snprintf(f->raw, sizeof(f->raw),
		 "--raw %s:0x%" PRIx64 " --pt %s --mtc-freq 3 "
		 "--cpuid-0x15.eax %u --cpuid-0x15.ebx %u",
		 f->code, f->w.base, f->pt, f->w.cpuid_0x15_eax, f->w.cpuid_0x15_ebx);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	hwt_test_tmpdir_remove(f->dir);
	ptsynth_free(&f->w);
	free(f);
	return 0;
}

/* Lines of text containing needle. */
static uint64_t count_lines(const char *text, const char *needle)
{
	uint64_t n = 0;

	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);

		if (memmem(l, len, needle, strlen(needle)))
			n++;
		l += len + (nl ? 1 : 0);
	}
	return n;
}

static uint64_t stat_field(const char *out, const char *name)
{
	const char *p = strstr(out, name);
	uint64_t v;

	assert_non_null(p);
	assert_int_equal(sscanf(p + strlen(name), "%" SCNu64, &v), 1);
	return v;
}

static void test_views_count_the_program(void **state)
{
	static const char *const engines[] = {"fast", "libipt", "ptxed"};
	struct fixture *f = *state;
	const struct ptsynth_truth *t = &f->w.truth;
	struct hwt_test_run run;

	hwt_test_run(&run, "'%s' script %s --stat --itrace=", hwt_test_hwtrace(), f->raw);
	assert_int_equal(run.status, 0);
	assert_int_equal(stat_field(run.out, "insns: "), t->insns);
	assert_int_equal(stat_field(run.out, "calls: "), t->calls);
	assert_int_equal(stat_field(run.out, "returns: "), t->returns);
	assert_int_equal(stat_field(run.out, "gaps: "), 0);
	hwt_test_run_free(&run);

	/* Every engine prints every instruction. */
	for (size_t e = 0; e < sizeof(engines) / sizeof(engines[0]); e++) {
		hwt_test_run(&run, "'%s' script %s --itrace=i --engine=%s", hwt_test_hwtrace(),
			     f->raw, engines[e]);
		assert_int_equal(run.status, 0);
		assert_int_equal(count_lines(run.out, ": insn: "), t->insns);
		hwt_test_run_free(&run);
	}

	hwt_test_run(&run, "'%s' script %s --itrace=cr", hwt_test_hwtrace(), f->raw);
	assert_int_equal(run.status, 0);
	assert_int_equal(count_lines(run.out, ": call: "), t->calls);
	assert_int_equal(count_lines(run.out, ": return: "), t->returns);
	hwt_test_run_free(&run);

	/* Taken branches (perf's 'b'), each with its kind: the
	 * conditionals that went to their target among them. */
	hwt_test_run(&run, "'%s' script %s --itrace=b", hwt_test_hwtrace(), f->raw);
	assert_int_equal(run.status, 0);
	assert_int_equal(count_lines(run.out, " jcc"), t->cond_to_target);
	assert_int_equal(count_lines(run.out, ": branch: "), count_lines(run.out, " => "));
	hwt_test_run_free(&run);

	/* ptxed's output, by ptxed's loop: one line per instruction. */
	hwt_test_run(&run, "'%s' script %s --format=ptxed --no-inst", hwt_test_hwtrace(), f->raw);
	assert_int_equal(run.status, 0);
	assert_int_equal(count_lines(run.out, "0000000000"), t->insns);
	hwt_test_run_free(&run);
}

/* --flow: calls and returns indented by depth, paired. */
static void test_flow(void **state)
{
	struct fixture *f = *state;
	const struct ptsynth_truth *t = &f->w.truth;
	struct hwt_test_run run;
	size_t min_col = SIZE_MAX, max_col = 0;

	hwt_test_run(&run, "'%s' script %s --flow", hwt_test_hwtrace(), f->raw);
	assert_int_equal(run.status, 0);
	assert_int_equal(count_lines(run.out, "-> "), t->calls);
	assert_int_equal(count_lines(run.out, "<- "), t->returns);
	assert_true(t->max_depth >= 3);
	/* Calls are indented two columns per level. */
	for (const char *l = run.out; *l; l = strchr(l, '\n') + 1) {
		const char *c = strstr(l, "-> ");

		if (c && c < strchr(l, '\n')) {
			size_t col = (size_t)(c - l);

			min_col = col < min_col ? col : min_col;
			max_col = col > max_col ? col : max_col;
		}
	}
	assert_int_equal(max_col - min_col, 2 * (t->max_depth - 1));
	assert_true(count_lines(run.out, " insns") > 0);
	/* without a time conversion, durations in TSC ticks; every frame
	 * known (the program's calls and returns pair up) */
	assert_true(count_lines(run.out, " tsc, ") > 0);
	assert_int_equal(count_lines(run.out, "[frame from before the trace]"), 0);
	hwt_test_run_free(&run);

	/* With a time conversion: durations in time units, times in s. */
	hwt_test_run(&run, "'%s' script %s --flow --time-conv 10,1000,5000000000",
		     hwt_test_hwtrace(), f->raw);
	assert_int_equal(run.status, 0);
	assert_true(count_lines(run.out, " ns,") + count_lines(run.out, " us,") > 0);
	assert_true(count_lines(run.out, "         5.") > 0);
	hwt_test_run_free(&run);
}

/* Same records from every engine path and thread count. */
static void test_engines_and_threads_agree(void **state)
{
	struct fixture *f = *state;
	struct hwt_test_run a, b, c, d;

	hwt_test_run(&a, "'%s' script %s --format=records", hwt_test_hwtrace(), f->raw);
	hwt_test_run(&b, "'%s' script %s --format=records --engine=libipt", hwt_test_hwtrace(),
		     f->raw);
	hwt_test_run(&c, "'%s' script %s --format=records -j2", hwt_test_hwtrace(), f->raw);
	hwt_test_run(&d, "'%s' script %s --format=records --engine=libipt --threads=3",
		     hwt_test_hwtrace(), f->raw);
	assert_int_equal(a.status, 0);
	assert_true(count_lines(a.out, " block ") > 1000);
	assert_string_equal(a.out, b.out);
	assert_string_equal(a.out, c.out);
	assert_string_equal(a.out, d.out);
	hwt_test_run_free(&a);
	hwt_test_run_free(&b);
	hwt_test_run_free(&c);
	hwt_test_run_free(&d);
}

/* Damage: gaps, no failure. */
static void test_corrupt_input(void **state)
{
	struct fixture *f = *state;
	struct hwt_test_run run;
	char bad[600];
	uint8_t *copy = malloc(f->w.pt_len);

	assert_non_null(copy);
	memcpy(copy, f->w.pt, f->w.pt_len);
	for (size_t i = 100; i < f->w.pt_len; i += 997)
		copy[i] = 0xd9;
	snprintf(bad, sizeof(bad), "%s/bad.pt", f->dir);
	hwt_test_write_file(bad, copy, f->w.pt_len);
	free(copy);
	hwt_test_run(&run, "'%s' script --raw %s:0x%" PRIx64 " --pt %s --itrace=e --stat",
		     hwt_test_hwtrace(), f->code, f->w.base, bad);
	assert_int_equal(run.status, 0);
	/* Four segments, three of them damaged so that decoding fails. */
	if (count_lines(run.out, ": decode error: ") < 3)
		fprintf(stderr, "%s", run.out);
	assert_true(count_lines(run.out, ": decode error: ") >= 3);
	assert_true(stat_field(run.out, "gaps: ") >= 3);
	assert_true(stat_field(run.out, "insns: ") > 0);
	hwt_test_run_free(&run);

	/* --quiet, as ptxed's: the errors and the summary, no branch lines
	 * (the default views list every taken branch). */
	hwt_test_run(&run, "'%s' script --raw %s:0x%" PRIx64 " --pt %s --stat --quiet",
		     hwt_test_hwtrace(), f->code, f->w.base, bad);
	assert_int_equal(run.status, 0);
	assert_true(count_lines(run.out, ": decode error: ") >= 3);
	assert_int_equal(count_lines(run.out, ": branch: "), 0);
	assert_true(stat_field(run.out, "insns: ") > 0);
	hwt_test_run_free(&run);
	hwt_test_run(&run, "'%s' script --raw %s:0x%" PRIx64 " --pt %s --stat", hwt_test_hwtrace(),
		     f->code, f->w.base, bad);
	assert_int_equal(run.status, 0);
	assert_true(count_lines(run.out, ": branch: ") > 0);
	hwt_test_run_free(&run);
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	struct hwt_test_run run;

	/* Without --pt, script reads a recording (sample mode). */
	hwt_test_run(&run, "'%s' script -i /nonexistent/x.hwt", hwt_test_hwtrace());
	assert_int_equal(run.status, 1);
	assert_non_null(strstr(run.err, "/nonexistent/x.hwt"));
	hwt_test_run_free(&run);

	hwt_test_run(&run, "'%s' script --pt --help", hwt_test_hwtrace());
	assert_int_equal(run.status, 0);
	assert_non_null(strstr(run.out, "usage: hwtrace script --pt"));
	hwt_test_run_free(&run);

	/* Usage errors: exit 2 with a message. */
	const char *const bad[] = {
	    "--raw nonum", "--cpu 6", "--bogus", "--time-conv 1,2", "--engine=turbo", "--itrace=z",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hwt_test_run(&run, "'%s' script --pt %s %s", hwt_test_hwtrace(), f->pt, bad[i]);
		if (run.status != 2)
			fprintf(stderr, "%s: status %d\n%s", bad[i], run.status, run.err);
		assert_int_equal(run.status, 2);
		assert_true(run.err_len > 0);
		if (!strcmp(bad[i], "--engine=turbo"))
			assert_non_null(strstr(
			    run.err, "unknown --engine 'turbo' (use fast, libipt or ptxed)"));
		hwt_test_run_free(&run);
	}

	/* Files that cannot be read: exit 1 naming the file. */
	hwt_test_run(&run, "'%s' script --pt %s/missing.pt --raw %s:0x1000", hwt_test_hwtrace(),
		     f->dir, f->code);
	assert_int_equal(run.status, 1);
	assert_non_null(strstr(run.err, "missing.pt"));
	hwt_test_run_free(&run);
	/* A missing --raw file: the decoder checks its files only when it
	 * first reads code; script checks the ones the user named before
	 * decoding, for one line with the cause and the fix, and nothing
	 * decoded. */
	hwt_test_run(&run, "'%s' script --pt %s --raw %s/missing.bin:0x1000 --stat",
		     hwt_test_hwtrace(), f->pt, f->dir);
	assert_int_equal(run.status, 1);
	{
		char want[1200];

		snprintf(want, sizeof(want),
			 "hwtrace: error: script: cannot map --raw '%s/missing.bin' at 0x1000: No "
			 "such file or directory; check the path\n",
			 f->dir);
		assert_string_equal(run.err, want);
	}
	assert_int_equal(run.out_len, 0);
	hwt_test_run_free(&run);
	hwt_test_run(&run, "'%s' script --pt %s --elf %s", hwt_test_hwtrace(), f->pt, f->code);
	assert_int_equal(run.status, 1);
	assert_true(run.err_len > 0);
	hwt_test_run_free(&run);

	/* No code at all: a usage error. */
	hwt_test_run(&run, "'%s' script --pt %s --stat", hwt_test_hwtrace(), f->pt);
	assert_int_equal(run.status, 2);
	assert_non_null(strstr(run.err, "--raw"));
	hwt_test_run_free(&run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_views_count_the_program),
	    cmocka_unit_test(test_flow),
	    cmocka_unit_test(test_engines_and_threads_agree),
	    cmocka_unit_test(test_corrupt_input),
	    cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
