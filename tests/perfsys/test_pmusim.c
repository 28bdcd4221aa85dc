/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/perfsys/test_pmusim.c - the simulated PMU's kernel rules, at the
 * system-call layer: what perf_event_open returns for each case the kernel
 * refuses (x86_pmu_event_init, x86_pmu_hw_config, validate_group,
 * uncore_pmu_event_init, perf_ibs_init, perf_event_open's own checks), the
 * machine's sysfs tree, and deterministic counts with multiplexing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfsys/perfsys.h"
#include "tests/lib/testutil.h"

static struct hwt_psys *sim(const char *model, const char *paranoid)
{
	struct hwt_psys *ps = NULL;
	char msg[512];

	setenv("HWT_PMU_SIM", model, 1);
	if (paranoid)
		setenv("HWT_PMU_SIM_PARANOID", paranoid, 1);
	else
		unsetenv("HWT_PMU_SIM_PARANOID");
	assert_int_equal(hwt_psys_open_env(&ps, NULL, 0, msg, sizeof(msg)), 0);
	assert_non_null(ps);
	unsetenv("HWT_PMU_SIM");
	unsetenv("HWT_PMU_SIM_PARANOID");
	return ps;
}

static void hw(struct perf_event_attr *a, uint32_t type, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = type;
	a->config = config;
	a->disabled = 1;
	a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
}

static uint32_t pmu_type(struct hwt_psys *ps, const char *pmu)
{
	char path[4096], *text;
	uint32_t t;

	snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/type", hwt_psys_sysfs_root(ps),
		 pmu);
	text = hwt_test_read_file(path, NULL);
	assert_non_null(text);
	t = (uint32_t)atoi(text);
	free(text);
	return t;
}

static int ncpus(int *last)
{
	int n = (int)sysconf(_SC_NPROCESSORS_ONLN);

	*last = n - 1;
	return n;
}

static void test_unknown_model(void **state)
{
	struct hwt_psys *ps = NULL;
	char msg[512];

	(void)state;
	setenv("HWT_PMU_SIM", "p4", 1);
	assert_int_equal(hwt_psys_open_env(&ps, NULL, 0, msg, sizeof(msg)), -HWT_EINVAL);
	assert_null(ps);
	assert_string_equal(msg, "HWT_PMU_SIM=p4: no such simulated machine; use skl, adl or amd");
	unsetenv("HWT_PMU_SIM");
}

static void test_sysfs_tree(void **state)
{
	struct hwt_psys *ps = sim("adl", NULL);
	char path[4096], *text;
	int last, n = ncpus(&last);

	(void)state;
	assert_string_equal(hwt_psys_name(ps), "adl");
	assert_int_equal(pmu_type(ps, "cpu_core"), PERF_TYPE_RAW);
	/* cpu_core on the first half, cpu_atom on the rest */
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/cpu_atom/cpus",
		 hwt_psys_sysfs_root(ps));
	text = hwt_test_read_file(path, NULL);
	assert_non_null(text);
	assert_int_equal(atoi(text), n > 1 ? n / 2 : 0);
	free(text);
	/* this machine's software PMU is there, as it is */
	assert_int_equal(pmu_type(ps, "software"), PERF_TYPE_SOFTWARE);
	text = hwt_test_read_file(hwt_psys_paranoid_path(ps), NULL);
	assert_non_null(text);
	free(text);
	snprintf(path, sizeof(path), "%s/sys/kernel/nmi_watchdog", hwt_psys_procfs_root(ps));
	text = hwt_test_read_file(path, NULL);
	assert_string_equal(text, "1\n");
	free(text);
	hwt_psys_free(ps);
}

static void test_core_rules(void **state)
{
	struct hwt_psys *ps = sim("adl", NULL);
	uint32_t atom = pmu_type(ps, "cpu_atom");
	struct perf_event_attr a;
	int last, fd, fd2;

	(void)state;
	if (ncpus(&last) < 2) {
		hwt_psys_free(ps);
		hwt_test_skip("one online CPU: no CPU for cpu_atom apart from cpu_core");
	}
	/* A generic event names no PMU: cpu_core, ENOENT on an atom CPU. */
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, last, -1, 0), -ENOENT);
	/* With cpu_atom's type in bits 32+ it opens there, not on CPU 0. */
	a.config |= (uint64_t)atom << 32;
	fd = hwt_psys_event_open(ps, &a, -1, last, -1, 0);
	assert_true(fd >= 0);
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, 0, -1, 0), -ENOENT);
	/* precise on a counting event: EINVAL; a group member pinned: EINVAL;
	 * two hardware PMUs in a group: EINVAL */
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	a.precise_ip = 1;
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -EINVAL);
	a.precise_ip = 0;
	a.pinned = 1;
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, last, fd, 0), -EINVAL);
	a.pinned = 0;
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, last, fd, 0), -ENOENT);
	hw(&a, PERF_TYPE_HARDWARE,
	   PERF_COUNT_HW_INSTRUCTIONS | ((uint64_t)pmu_type(ps, "cpu_core") << 32));
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, 0, fd, 0), -EINVAL);
	/* a member of cpu_atom joins */
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS | ((uint64_t)atom << 32));
	fd2 = hwt_psys_event_open(ps, &a, -1, last, fd, 0);
	assert_true(fd2 >= 0);
	/* unknown generic event: EINVAL; stalled cycles on Intel: ENOENT */
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_MAX);
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -EINVAL);
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND);
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -ENOENT);
	assert_int_equal(hwt_psys_close(ps, fd2), 0);
	assert_int_equal(hwt_psys_close(ps, fd), 0);
	hwt_psys_free(ps);
}

static void test_group_validation_and_multiplexing(void **state)
{
	struct hwt_psys *ps = sim("skl", NULL);
	struct perf_event_attr a;
	int fds[6], lead, g[4];
	uint64_t v[3];

	(void)state;
	/* validate_group: 4 general counters (+3 fixed) on an empty PMU */
	hw(&a, PERF_TYPE_RAW, 0x01a8);
	lead = hwt_psys_event_open(ps, &a, 0, -1, -1, 0);
	assert_true(lead >= 0);
	a.disabled = 0;
	for (int i = 0; i < 3; i++) {
		g[i] = hwt_psys_event_open(ps, &a, 0, -1, lead, 0);
		assert_true(g[i] >= 0);
	}
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, lead, 0), -EINVAL);
	/* ref-cycles takes fixed counter 2 only: it still fits */
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES);
	a.disabled = 0;
	g[3] = hwt_psys_event_open(ps, &a, 0, -1, lead, 0);
	assert_true(g[3] >= 0);
	for (int i = 0; i < 4; i++)
		hwt_psys_close(ps, g[i]);
	hwt_psys_close(ps, lead);
	/* Six singletons on four counters rotate: each runs 4/6 of the
	 * time; counts are 1% of 3 GHz per ns running. */
	for (int i = 0; i < 6; i++) {
		hw(&a, PERF_TYPE_RAW, 0x01a8 + ((uint64_t)i << 8));
		fds[i] = hwt_psys_event_open(ps, &a, 0, -1, -1, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(hwt_psys_ioctl(ps, fds[i], PERF_EVENT_IOC_ENABLE, 0), 0);
	}
	for (volatile int i = 0; i < 20000000; i++)
		;
	for (int i = 0; i < 6; i++) {
		assert_int_equal(hwt_psys_read(ps, fds[i], v, sizeof(v)), (ssize_t)sizeof(v));
		assert_true(v[1] > 0);
		/* running = 4/6 of enabled, to a ns of rounding */
		assert_true(llabs((long long)(v[2] * 6) - (long long)(v[1] * 4)) <= 6);
		assert_true(llabs((long long)v[0] - (long long)((double)v[2] * 0.03)) <= 1);
	}
	/* one closed: five on four, each 4/5 */
	hwt_psys_close(ps, fds[5]);
	assert_int_equal(hwt_psys_read(ps, fds[0], v, sizeof(v)), (ssize_t)sizeof(v));
	for (int i = 0; i < 5; i++)
		hwt_psys_close(ps, fds[i]);
	hwt_psys_free(ps);
}

static void test_system_pmu_rules(void **state)
{
	struct hwt_psys *ps = sim("skl", NULL);
	struct perf_event_attr a;
	int last, fd;
	uint64_t v[3];

	(void)state;
	ncpus(&last);
	hw(&a, pmu_type(ps, "power"), 0x02);
	/* uncore_pmu_event_init / RAPL: no task, no sampling, no exclude */
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -EINVAL);
	a.exclude_kernel = 1;
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, 0, -1, 0), -EINVAL);
	a.exclude_kernel = 0;
	a.sample_period = 1000;
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, 0, -1, 0), -EINVAL);
	a.sample_period = 0;
	a.config = 0x7f; /* no such event */
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, 0, -1, 0), -EINVAL);
	/* Opened on the last CPU, it counts on the cpumask CPU: 15 W */
	a.config = 0x02;
	a.disabled = 0;
	fd = hwt_psys_event_open(ps, &a, -1, last, -1, 0);
	assert_true(fd >= 0);
	usleep(50000);
	assert_int_equal(hwt_psys_read(ps, fd, v, sizeof(v)), (ssize_t)sizeof(v));
	assert_true(v[2] > 40000000);
	/* counts of 2^-32 J per ns of 15 W */
	assert_true(llabs((long long)v[0] - (long long)((double)v[2] * 15.0 * 4294967296.0 / 1e9)) <
		    (long long)v[0] / 1000);
	hwt_psys_close(ps, fd);
	hwt_psys_free(ps);
}

static void test_amd_and_paranoid(void **state)
{
	struct hwt_psys *ps = sim("amd", NULL);
	struct perf_event_attr a;
	int fd;

	(void)state;
	/* No PEBS: precise instructions are EOPNOTSUPP; precise cycles go to
	 * IBS, which refuses privilege filters. */
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
	a.precise_ip = 1;
	a.sample_period = 100000;
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -EOPNOTSUPP);
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	a.precise_ip = 2;
	a.sample_period = 100000;
	a.exclude_kernel = 1;
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -EINVAL);
	a.exclude_kernel = 0;
	fd = hwt_psys_event_open(ps, &a, 0, -1, -1, 0);
	assert_true(fd >= 0);
	hwt_psys_close(ps, fd);
	/* no branch stacks on Zen 3 */
	hw(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	a.sample_period = 100000;
	a.sample_type = PERF_SAMPLE_BRANCH_STACK;
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -EOPNOTSUPP);
	hwt_psys_free(ps);

	/* perf_event_paranoid as an unprivileged user meets it */
	ps = sim("skl", "2");
	hw(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -EACCES);
	a.exclude_kernel = 1;
	fd = hwt_psys_event_open(ps, &a, 0, -1, -1, 0);
	assert_true(fd >= 0);
	hwt_psys_close(ps, fd);
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, 0, -1, 0), -EACCES);
	/* pid 1 is not ours: ptrace's check */
	assert_int_equal(hwt_psys_event_open(ps, &a, 1, -1, -1, 0), -EACCES);
	hwt_psys_free(ps);
	ps = sim("skl", "3");
	assert_int_equal(hwt_psys_event_open(ps, &a, 0, -1, -1, 0), -EACCES);
	hwt_psys_free(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unknown_model),
	    cmocka_unit_test(test_sysfs_tree),
	    cmocka_unit_test(test_core_rules),
	    cmocka_unit_test(test_group_validation_and_multiplexing),
	    cmocka_unit_test(test_system_pmu_rules),
	    cmocka_unit_test(test_amd_and_paranoid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
