/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_ptemu_slow.c - a 10^8-instruction run of the PT
 * emulator (ctest label `slow`, from the file name): ptemu_loop(33,333,333) emulated and its
 * PT decoded whole with libipt. Every instruction and every iteration of
 * the labelled loop must come back, with no decode error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/collector/ptemu_check.h"
#include "tests/lib/testutil.h"

#define LOOPS 33333333l /* 3 instructions each: 10^8 */

static void test_1e8(void **state)
{
	const char *prog = hwt_test_prog("ptemu_end");
	const char *argv[] = {prog, "long", "33333333", NULL};
	struct hwt_ptemu_result res;
	struct hwt_ptemu_config cfg;
	struct hwt_ptemu_sink sink;
	struct dec_result d;
	struct cap c;

	(void)state;
	if (system("qemu-x86_64 --version >/dev/null 2>&1") != 0)
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	/* As cap_run() but without ground-truth files (10^8 entries). */
	memset(&c, 0, sizeof(c));
	hwt_buf_init(&c.recs);
	hwt_ptemu_config_init(&cfg);
	cfg.argv = argv;
	c.terms = cfg.terms;
	memset(&sink, 0, sizeof(sink));
	sink.ctx = &c;
	sink.records = cap_records;
	sink.stream = cap_stream_new;
	sink.aux = cap_aux;
	assert_int_equal(hwt_ptemu_run(&cfg, &sink, &res), 0);
	assert_int_equal(res.exit_status, 0);
	assert_int_equal(res.nthreads, 1);
	assert_true(res.insns >= 3 * LOOPS);
	fprintf(stderr, "%llu instructions, %llu PT bytes, %.2f s emulated\n",
		(unsigned long long)res.insns, (unsigned long long)res.bytes, res.seconds);

	memset(&d, 0, sizeof(d));
	d.w[0].ip = cap_bias(&c, prog) + sym_addr(prog, "ptemu_loop_jcc", NULL);
	d.nw = 1;
	cap_decode(&c, 0, &d);
	assert_int_equal(d.errors, 0);
	assert_int_equal(d.insns, res.insns);
	assert_int_equal(d.w[0].count, LOOPS + 400); /* and ptemu_loop(400) */
	assert_int_equal(d.w[0].taken, LOOPS - 1 + 399);
	hwt_buf_fini(&d.events);
	hwt_ptemu_result_fini(&res);
	cap_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_1e8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
