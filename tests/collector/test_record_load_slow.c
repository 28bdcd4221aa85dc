/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_record_load_slow.c (label `slow`) - the recorder at
 * the kernel's highest sampling rate with call chains on a two-thread
 * workload for 60 s on both cores; see load_check.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/collector/load_check.h"

static void test_load_60s(void **state)
{
	(void)state;
	load_run(60);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_load_60s),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
