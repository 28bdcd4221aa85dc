/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_bufsize.c - buffer sizes from the caller's privilege
 * and limits (collector/bufsize.c): perf's Intel PT defaults by privilege,
 * the kernel's locked-memory accounting (perf_event_mlock_kb per CPU, then
 * RLIMIT_MEMLOCK unless CAP_IPC_LOCK), and the message that names the
 * numbers and the fixes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "collector/rec_int.h"
#include "tests/lib/testutil.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static struct hwt_coll_memlock user(unsigned ncpus, uint64_t memlock)
{
	struct hwt_coll_memlock ml = {
	    .page = 4096,
	    .ncpus = ncpus,
	    .mlock_kb = 516, /* the kernel's default */
	    .memlock = memlock,
	    .paranoid = 2,
	};

	return ml;
}

/* perf's choice for an ordinary user: 128 KiB AUX and 256 KiB data, which
 * fit the default 516 KiB per CPU without touching 'ulimit -l'. */
static void test_unprivileged_defaults(void **state)
{
	struct hwt_coll_memlock ml = user(2, 64 * KIB);
	struct hwt_coll_bufplan plan;
	char msg[768];

	(void)state;
	assert_int_equal(hwt_coll_buf_plan(&ml, 2, true, 0, 0, &plan, msg, sizeof(msg)), 0);
	assert_int_equal(plan.aux, 128 * KIB);
	assert_int_equal(plan.data, 256 * KIB);
	assert_false(plan.shrunk);
	/* Sampling keeps its 1 MiB where it fits ('ulimit -l' takes the
	 * rest: 2 x 257 pages - 2 x 129 = 256 pages = 1 MiB of 8 MiB). */
	ml.memlock = 8 * MIB;
	assert_int_equal(hwt_coll_buf_plan(&ml, 2, false, 0, 0, &plan, msg, sizeof(msg)), 0);
	assert_int_equal(plan.data, MIB);
	assert_int_equal(plan.aux, 0);
}

/* Privileged (CAP_PERFMON/CAP_SYS_ADMIN or paranoid -1): 4 MiB AUX, and
 * with CAP_IPC_LOCK no limit at all. */
static void test_privileged_defaults(void **state)
{
	struct hwt_coll_memlock ml = user(64, 64 * KIB);
	struct hwt_coll_bufplan plan;
	char msg[768];

	(void)state;
	ml.privileged = ml.unlimited = true;
	assert_int_equal(hwt_coll_buf_plan(&ml, 64, true, 0, 0, &plan, msg, sizeof(msg)), 0);
	assert_int_equal(plan.aux, 4 * MIB);
	assert_int_equal(plan.data, MIB);
	/* CAP_PERFMON without CAP_IPC_LOCK: the defaults shrink to fit. */
	ml.unlimited = false;
	assert_int_equal(hwt_coll_buf_plan(&ml, 64, true, 0, 0, &plan, msg, sizeof(msg)), 0);
	assert_true(plan.shrunk);
	assert_true((plan.data + plan.aux) / 4096 + 1 <= 129);
}

/* Many CPUs with a small 'ulimit -l': defaults halve until they fit. */
static void test_defaults_shrink(void **state)
{
	struct hwt_coll_memlock ml = user(4, 0);
	struct hwt_coll_bufplan plan;
	char msg[768];

	(void)state;
	ml.mlock_kb = 132; /* 33 pages per CPU */
	assert_int_equal(hwt_coll_buf_plan(&ml, 4, true, 0, 0, &plan, msg, sizeof(msg)), 0);
	assert_true(plan.shrunk);
	assert_int_equal(plan.data, 64 * KIB);
	assert_int_equal(plan.aux, 64 * KIB);
	assert_true(4 * ((plan.data + plan.aux) / 4096 + 1) <= 4 * 33);
}

/* Sizes the user asked for that the kernel would refuse: one line with
 * the numbers and the three fixes. */
static void test_refusal(void **state)
{
	struct hwt_coll_memlock ml = user(2, 8 * MIB);
	struct hwt_coll_bufplan plan;
	char msg[768];

	(void)state;
	assert_int_equal(hwt_coll_buf_plan(&ml, 2, true, 0, 16 * MIB, &plan, msg, sizeof(msg)),
			 -EPERM);
	assert_string_equal(msg, "2 buffers of 64 KiB data + 16 MiB AUX need 32904 KiB of locked "
				 "memory, more than this user may lock: "
				 "kernel.perf_event_mlock_kb is 516 per CPU x 2 CPUs, then 'ulimit "
				 "-l' 8 MiB (perf_event_paranoid 2, no CAP_IPC_LOCK); raise them "
				 "('sysctl -w kernel.perf_event_mlock_kb=N', 'ulimit -l N'), run "
				 "with CAP_IPC_LOCK, or choose smaller buffers with -m DATA,AUX");
	/* What fits exactly: 2 x (64 + 256 + 1) pages = 642 <= 258 + 2048. */
	assert_int_equal(
	    hwt_coll_buf_plan(&ml, 2, true, 256 * KIB, 1 * MIB, &plan, msg, sizeof(msg)), 0);
	assert_int_equal(plan.aux, MIB);
	/* Not even the smallest defaults fit. */
	ml = user(1, 0);
	ml.mlock_kb = 4;
	assert_int_equal(hwt_coll_buf_plan(&ml, 8, true, 0, 0, &plan, msg, sizeof(msg)), -EPERM);
	assert_true(hwt_test_contains(msg, "8 buffers of 64 KiB data + 16 KiB AUX need"));
	assert_true(hwt_test_contains(msg, "'ulimit -l' 0 KiB"));
	/* With CAP_IPC_LOCK anything goes. */
	ml.unlimited = true;
	assert_int_equal(hwt_coll_buf_plan(&ml, 8, true, 0, 64 * MIB, &plan, msg, sizeof(msg)), 0);
	assert_int_equal(plan.aux, 64 * MIB);
}

/* The real reading: this process's values, consistent with each other. */
static void test_read(void **state)
{
	struct hwt_coll_memlock ml;

	(void)state;
	assert_int_equal(hwt_coll_memlock_read(NULL, NULL, 3, &ml), 0);
	assert_int_equal(ml.ncpus, 3);
	assert_true(ml.page >= 4096);
	assert_true(ml.mlock_kb > 0);
	if (ml.paranoid < 0)
		assert_true(ml.privileged && ml.unlimited);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unprivileged_defaults),
	    cmocka_unit_test(test_privileged_defaults),
	    cmocka_unit_test(test_defaults_shrink),
	    cmocka_unit_test(test_refusal),
	    cmocka_unit_test(test_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
