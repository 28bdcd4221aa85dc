/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_record_load.c - the recorder at the kernel's highest
 * sampling rate with call chains on a two-thread workload for 8 s (the
 * 60 s run is test_record_load_slow.c, label `slow`); see load_check.h.
 * Not under ASan's label exclusion: it only runs hwtrace as a program.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/collector/load_check.h"

static void test_load(void **state)
{
	(void)state;
	load_run(8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
