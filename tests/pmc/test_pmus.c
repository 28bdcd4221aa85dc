/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/pmc/test_pmus.c - events as perf builds them for real machines:
 * perf's modifiers (P S W e b, group D), exclude_guest by default, one
 * event per core PMU on hybrid CPUs (cpu_core/cycles/ with the PMU type in
 * config bits 32+), system PMUs with their cpumask, scale and unit, perf
 * record's LBR and leader-sampling attributes, and the explanations of
 * open errors on bare metal and in VMs. The machines are the simulator's
 * sysfs trees (perfsys/sim) and small fake ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfsys/perfsys.h"
#include "pmc/pmc.h"
#include "tests/lib/testutil.h"

static struct hwt_psys *sim(const char *model)
{
	struct hwt_psys *ps = NULL;
	char msg[512];

	setenv("HWT_PMU_SIM", model, 1);
	assert_int_equal(hwt_psys_open_env(&ps, NULL, 0, msg, sizeof(msg)), 0);
	unsetenv("HWT_PMU_SIM");
	return ps;
}

static struct hwt_pmc_evlist *list_on(struct hwt_psys *ps, const char *spec)
{
	struct hwt_pmc_config cfg;
	struct hwt_pmc_evlist *l;
	int n;

	hwt_pmc_config_init(&cfg);
	cfg.sysfs_root = hwt_psys_sysfs_root(ps);
	cfg.psys = ps;
	assert_int_equal(hwt_pmc_evlist_alloc(&l, &cfg), 0);
	n = hwt_pmc_evlist_add(l, spec);
	if (n <= 0)
		fprintf(stderr, "%s: %s\n", spec, hwt_pmc_evlist_errmsg(l));
	assert_true(n > 0);
	return l;
}

static void test_modifiers(void **state)
{
	struct hwt_pmc_evlist *l = list_on(NULL, "cycles:P,instructions:e,branches:b,"
						 "{cycles,instructions}:SD,{r3c,r1a8}:W,"
						 "task-clock,cycles:G,cycles:H");
	const struct hwt_pmc_event *e;

	(void)state;
	assert_int_equal(hwt_pmc_evlist_count(l), 10);
	e = hwt_pmc_evlist_event(l, 0);
	assert_true(e->precise_max);
	assert_int_equal(e->attr.precise_ip, 3);
	assert_int_equal(hwt_pmc_evlist_event(l, 1)->attr.exclusive, 1);
	assert_string_equal(hwt_pmc_evlist_event(l, 2)->name, "branches:b");
	/* :S and :D on a group: the leader samples and is pinned, members
	 * are neither (the kernel refuses pinned members) */
	e = hwt_pmc_evlist_event(l, 3);
	assert_true(e->sample_read);
	assert_int_equal(e->attr.pinned, 1);
	e = hwt_pmc_evlist_event(l, 4);
	assert_false(e->sample_read);
	assert_int_equal(e->attr.pinned, 0);
	assert_int_equal(e->leader, 3);
	assert_true(hwt_pmc_evlist_event(l, 5)->weak_group);
	assert_false(hwt_pmc_evlist_event(l, 6)->weak_group);
	/* exclude_guest as perf: on unless G or H say otherwise */
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(hwt_pmc_evlist_event(l, i)->attr.exclude_guest, 1);
	e = hwt_pmc_evlist_event(l, 8);
	assert_int_equal(e->attr.exclude_guest, 0);
	assert_int_equal(e->attr.exclude_host, 1);
	e = hwt_pmc_evlist_event(l, 9);
	assert_int_equal(e->attr.exclude_guest, 1);
	assert_int_equal(e->attr.exclude_host, 0);
	hwt_pmc_evlist_free(l);
}

static void test_hybrid_expansion(void **state)
{
	struct hwt_psys *ps = sim("adl");
	struct hwt_pmc_evlist *l =
	    list_on(ps, "{cycles,instructions}:u,task-clock,cpu_atom/cycles/");
	const struct hwt_pmc_event *e;
	struct perf_event_attr a;
	struct hwt_pmc_config cfg;
	int last = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;

	(void)state;
	/* the group once per core PMU, in type order; task-clock once */
	assert_int_equal(hwt_pmc_evlist_count(l), 6);
	e = hwt_pmc_evlist_event(l, 0);
	assert_string_equal(e->name, "cpu_core/cycles/u");
	assert_int_equal(e->attr.type, PERF_TYPE_HARDWARE);
	assert_int_equal(e->attr.config, PERF_COUNT_HW_CPU_CYCLES | (4ull << 32));
	assert_int_equal(e->nr_members, 2);
	assert_string_equal(e->pmu, "cpu_core");
	assert_true(hwt_pmc_event_on_cpu(e, 0));
	e = hwt_pmc_evlist_event(l, 1);
	assert_string_equal(e->name, "cpu_core/instructions/u");
	assert_int_equal(e->leader, 0);
	e = hwt_pmc_evlist_event(l, 2);
	assert_string_equal(e->name, "cpu_atom/cycles/u");
	assert_int_equal(e->nr_members, 2);
	assert_int_equal(hwt_pmc_evlist_event(l, 3)->leader, 2);
	assert_true((e->attr.config >> 32) != 4);
	if (last > 0) {
		assert_false(hwt_pmc_event_on_cpu(e, 0));
		assert_true(hwt_pmc_event_on_cpu(e, last));
	}
	assert_string_equal(hwt_pmc_evlist_event(l, 4)->name, "task-clock");
	assert_string_equal(hwt_pmc_evlist_event(l, 4)->pmu, "");
	/* a PMU named by the user is not expanded; perf's generic names
	 * work between its slashes (so stat's names can be fed back) */
	e = hwt_pmc_evlist_event(l, 5);
	assert_string_equal(e->pmu, "cpu_atom");
	assert_int_equal(e->attr.type, PERF_TYPE_HARDWARE);
	assert_int_equal(e->attr.config, (e - 3)->attr.config);
	/* binding one attribute to the PMU of a CPU (trace's probes) */
	hwt_pmc_config_init(&cfg);
	cfg.sysfs_root = hwt_psys_sysfs_root(ps);
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_HARDWARE;
	assert_int_equal(hwt_pmc_hybrid_bind(&cfg, &a, 0, 0), 2);
	assert_int_equal(a.config >> 32, 4);
	assert_int_equal(hwt_pmc_hybrid_bind(&cfg, &a, -1, 1), 2);
	assert_int_equal(a.config >> 32, (e - 3)->attr.config >> 32);
	hwt_pmc_evlist_free(l);
	/* not hybrid: unchanged */
	hwt_pmc_config_init(&cfg);
	assert_int_equal(hwt_pmc_hybrid_bind(&cfg, &a, 0, 0), 0);
	hwt_psys_free(ps);
}

static void test_system_pmu_events(void **state)
{
	struct hwt_psys *ps = sim("skl");
	struct hwt_pmc_evlist *l = list_on(ps, "power/energy-pkg/,uncore_imc/data_reads/,cycles");
	const struct hwt_pmc_event *e;

	(void)state;
	e = hwt_pmc_evlist_event(l, 0);
	assert_true(e->system_pmu);
	assert_string_equal(e->pmu_cpus, "0");
	assert_string_equal(e->unit, "Joules");
	assert_true(e->scale > 2.328e-10 && e->scale < 2.329e-10);
	assert_true(hwt_pmc_event_on_cpu(e, 0));
	assert_false(hwt_pmc_event_on_cpu(e, 1));
	e = hwt_pmc_evlist_event(l, 1);
	assert_string_equal(e->unit, "MiB");
	assert_true(e->scale > 6.1e-5 && e->scale < 6.11e-5);
	/* skl is not hybrid: cycles stays one event, any CPU */
	e = hwt_pmc_evlist_event(l, 2);
	assert_string_equal(e->name, "cycles");
	assert_int_equal(e->attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_false(e->system_pmu);
	hwt_pmc_evlist_free(l);
	hwt_psys_free(ps);
}

static void test_sampling_attrs(void **state)
{
	struct hwt_pmc_evlist *l = list_on(NULL, "{cycles,instructions}:S,branches");
	struct perf_event_attr a;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.sample_period = 1000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD;
	a.inherit = 1;
	hwt_pmc_sample_group_attr(l, 0, &a);
	assert_true(a.sample_type & PERF_SAMPLE_READ);
	assert_int_equal(a.read_format, PERF_FORMAT_GROUP | PERF_FORMAT_ID);
	assert_int_equal(a.inherit, 0);
	assert_int_equal(a.sample_period, 1000);
	hwt_pmc_sample_group_attr(l, 1, &a);
	assert_int_equal(a.sample_period, 0); /* members do not sample */
	memset(&a, 0, sizeof(a));
	a.sample_period = 1000;
	hwt_pmc_sample_group_attr(l, 2, &a);
	assert_int_equal(a.sample_type, 0);
	/* LBR as perf: user call stack without cycles and flags, hw index */
	assert_true(hwt_pmc_lbr_attr(&a));
	assert_true(a.sample_type & PERF_SAMPLE_BRANCH_STACK);
	assert_int_equal(a.branch_sample_type,
			 PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK |
			     PERF_SAMPLE_BRANCH_NO_CYCLES | PERF_SAMPLE_BRANCH_NO_FLAGS |
			     PERF_SAMPLE_BRANCH_HW_INDEX);
	assert_true(hwt_pmc_lbr_attr_older(&a));
	assert_int_equal(a.branch_sample_type,
			 PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK);
	assert_false(hwt_pmc_lbr_attr_older(&a));
	memset(&a, 0, sizeof(a));
	a.exclude_user = 1;
	assert_false(hwt_pmc_lbr_attr(&a));
	assert_int_equal(a.sample_type, 0);
	hwt_pmc_evlist_free(l);
}

/* A machine: sysfs with or without a cpu PMU, procfs with or without the
 * hypervisor flag. */
static char *machine(bool cpu_pmu, bool vm)
{
	char *dir = hwt_test_tmpdir(), path[4096];

	snprintf(path, sizeof(path), "%s/sys/bus/event_source/devices/%s", dir,
		 cpu_pmu ? "cpu" : "software");
	{
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "mkdir -p %s %s/proc", path, dir);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(path, sizeof(path), "%s/proc/cpuinfo", dir);
	hwt_test_write_file(path, vm ? "flags\t\t: fpu sse hypervisor\n" : "flags\t\t: fpu sse\n",
			    vm ? 28 : 18);
	return dir;
}

static void test_explanations(void **state)
{
	struct hwt_pmc_evlist *l = list_on(NULL, "cycles,cycles:p,{r1a8,r2a8}");
	struct hwt_pmc_open_error oe;
	char buf[1024], sys[4200], proc[4200];
	char *vm = machine(false, true), *metal = machine(true, false);

	(void)state;
	memset(&oe, 0, sizeof(oe));
	oe.size = sizeof(oe);
	oe.err = -ENOENT;
	oe.ev = hwt_pmc_evlist_event(l, 0);
	oe.pid = 12;
	oe.cpu = -1;
	oe.paranoid = 2;
	snprintf(sys, sizeof(sys), "%s/sys", vm);
	snprintf(proc, sizeof(proc), "%s/proc", vm);
	oe.sysfs_root = sys;
	oe.procfs_root = proc;
	hwt_pmc_explain(buf, sizeof(buf), &oe);
	assert_true(hwt_test_contains(buf, "this virtual machine exposes no hardware counters"));
	snprintf(sys, sizeof(sys), "%s/sys", metal);
	snprintf(proc, sizeof(proc), "%s/proc", metal);
	hwt_pmc_explain(buf, sizeof(buf), &oe);
	assert_string_equal(buf, "event 'cycles' is not supported by this CPU's PMU (cpu): the "
				 "kernel has no such event here; pick another event from 'hwtrace "
				 "list'");
	/* precise on a counting event */
	oe.err = -EINVAL;
	oe.ev = hwt_pmc_evlist_event(l, 1);
	hwt_pmc_explain(buf, sizeof(buf), &oe);
	assert_true(hwt_test_contains(buf, "precise modifiers (:p) are for sampling"));
	/* a group member that does not fit */
	oe.ev = hwt_pmc_evlist_event(l, 3);
	hwt_pmc_explain(buf, sizeof(buf), &oe);
	assert_true(hwt_test_contains(buf, "'r2a8' cannot join its group"));
	/* Debian's paranoid 3: no ':u' advice, it would not help */
	oe.err = -EACCES;
	oe.ev = hwt_pmc_evlist_event(l, 0);
	oe.paranoid = 3;
	hwt_pmc_explain(buf, sizeof(buf), &oe);
	assert_true(hwt_test_contains(buf, "counting kernel space needs perf_event_paranoid <= 1 "
					   "but it is 3"));
	assert_false(hwt_test_contains(buf, ":u"));
	oe.paranoid = 2;
	hwt_pmc_explain(buf, sizeof(buf), &oe);
	assert_true(hwt_test_contains(buf, "or count user space only with ':u'"));
	/* the attribute as last tried (the ':u' fallback): ownership */
	{
		struct perf_event_attr a = hwt_pmc_evlist_event(l, 0)->attr;

		a.exclude_kernel = 1;
		oe.attr = &a;
		hwt_pmc_explain(buf, sizeof(buf), &oe);
		assert_true(hwt_test_contains(buf, "belongs to another user"));
		oe.attr = NULL;
	}
	hwt_test_tmpdir_remove(vm);
	hwt_test_tmpdir_remove(metal);
	hwt_pmc_evlist_free(l);
}

/* Per-CPU counters are read from their own CPU (no IPI per read), and
 * the reader's affinity is what it was afterwards. */
static void test_read_on_each_cpu(void **state)
{
	struct hwt_pmc_evlist *l = list_on(NULL, "cpu-clock");
	struct hwt_pmc_counters_config cfg;
	struct hwt_pmc_counters *c;
	struct hwt_pmc_count cnt;
	cpu_set_t before, after;
	int cpus[256], n = 0;

	(void)state;
	if (geteuid() != 0)
		hwt_test_skip("not root: CPU-wide counting needs perf_event_paranoid <= 0");
	assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
	for (int i = 0; i < CPU_SETSIZE && n < 256; i++)
		if (CPU_ISSET(i, &before))
			cpus[n++] = i;
	hwt_pmc_counters_config_init(&cfg);
	assert_int_equal(hwt_pmc_counters_open(&c, l, NULL, 0, cpus, (size_t)n, &cfg), 0);
	usleep(20000);
	assert_int_equal(hwt_pmc_counters_read(c, &cnt, 1), 0);
	assert_true(cnt.value >= 20000000ull * (uint64_t)n * 9 / 10);
	assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after));
	hwt_pmc_counters_close(c);
	hwt_pmc_evlist_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_modifiers),	      cmocka_unit_test(test_hybrid_expansion),
	    cmocka_unit_test(test_system_pmu_events), cmocka_unit_test(test_sampling_attrs),
	    cmocka_unit_test(test_explanations),      cmocka_unit_test(test_read_on_each_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
