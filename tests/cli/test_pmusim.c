/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/cli/test_pmusim.c - stat, record, trace and list on the simulated
 * PMUs (HWT_PMU_SIM=skl|adl|amd, perfsys/sim.c), one test per finding of
 * issue 15. The simulator keeps the kernel's rules and counts at known
 * rates (skl: 3 GHz, IPC 2; adl: cpu_core 4 GHz IPC 2 on the first half
 * of the CPUs, cpu_atom 2.5 GHz IPC 1 on the rest; r..a8 raw events at 1%
 * of the cycles; IMC reads 4096 MiB/s; RAPL package 15 W), so counts are
 * checked against those rates times the time the kernel reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/testutil.h"

/* One CSV line of stat -x, (value,unit,name,run,pct,metric,unit). */
struct csv {
	char value[64], unit[32];
	double run, pct;
	bool counted, supported;
	double v;
};

static bool csv_find(const char *text, const char *name, struct csv *c)
{
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		char buf[1024], *f[8] = {0}, *p;
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		int k = 0;

		if (n < sizeof(buf)) {
			memcpy(buf, line, n);
			buf[n] = '\0';
			/* strtok would merge empty fields: split by hand */
			for (p = buf, f[k++] = buf; *p && k < 8; p++) {
				if (*p == ',') {
					*p = '\0';
					f[k++] = p + 1;
				}
			}
			if (k >= 5 && !strcmp(f[2], name)) {
				memset(c, 0, sizeof(*c));
				snprintf(c->value, sizeof(c->value), "%.63s", f[0]);
				snprintf(c->unit, sizeof(c->unit), "%.31s", f[1]);
				c->run = atof(f[3]);
				c->pct = atof(f[4]);
				c->supported = strcmp(f[0], "<not supported>") != 0;
				c->counted = c->supported && strcmp(f[0], "<not counted>") != 0;
				c->v = atof(f[0]);
				return true;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

static struct csv csv_get(const char *text, const char *name)
{
	struct csv c;

	if (!csv_find(text, name, &c)) {
		fprintf(stderr, "no CSV line for %s in:\n%s\n", name, text);
		fail();
	}
	return c;
}

/* Counts per ns of running time: the simulator's rate. */
static double rate(const struct csv *c)
{
	/* value is scaled to the enabled time; pct = running / enabled */
	return c->v / (c->run * 100.0 / c->pct);
}

static double rate_of(const char *text, const char *name)
{
	struct csv c = csv_get(text, name);

	return rate(&c);
}

static void assert_near(double got, double want, double rel)
{
	if (fabs(got - want) > fabs(want) * rel) {
		fprintf(stderr, "got %.6g, want %.6g (+-%.1f%%)\n", got, want, rel * 100);
		fail();
	}
}

static int online_cpus(int *first, int *last)
{
	char *text = hwt_test_read_file("/sys/devices/system/cpu/online", NULL);
	int n = 0, a = -1, b = -1;
	char *p = text;

	/* "0-1" or "0,1": the first and last, and how many */
	while (p && *p && *p != '\n') {
		int lo = (int)strtol(p, &p, 10), hi = lo;

		if (*p == '-')
			hi = (int)strtol(p + 1, &p, 10);
		if (a < 0)
			a = lo;
		b = hi;
		n += hi - lo + 1;
		if (*p == ',')
			p++;
	}
	free(text);
	*first = a;
	*last = b;
	return n;
}

/* adl puts cpu_core on the first half of the CPUs and cpu_atom on the
 * rest: the first and the last CPU are one of each. */
static void hybrid_cpus(int *core, int *atom)
{
	if (online_cpus(core, atom) < 2)
		hwt_test_skip("one online CPU: a hybrid machine needs two to put one core type "
			      "on each");
}

/* ---- 1. hybrid CPUs ---------------------------------------------------- */

static void test_hybrid_stat_command(void **state)
{
	struct hwt_test_run r;
	struct csv cy, in, other;
	int core, atom;

	(void)state;
	hybrid_cpus(&core, &atom);
	/* On an E-core: cpu_atom counts everything, cpu_core ran never. */
	hwt_test_run_ok(
	    &r, "taskset -c %d env HWT_PMU_SIM=adl %s stat -x, -e cycles,instructions -- %s 100",
	    atom, hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	cy = csv_get(r.err, "cpu_atom/cycles/");
	in = csv_get(r.err, "cpu_atom/instructions/");
	assert_true(cy.counted && in.counted);
	assert_true(cy.run >= 100e6);
	assert_near(rate(&cy), 2.5, 0.01);
	assert_near(in.v / cy.v, 1.0, 0.01); /* Gracemont's IPC in the model */
	other = csv_get(r.err, "cpu_core/cycles/");
	assert_true(other.supported && !other.counted);
	assert_near(other.pct, 0.0, 0.0001);
	assert_false(hwt_test_contains(r.err, "not supported"));
	hwt_test_run_free(&r);
	/* On a P-core: the other way round, at cpu_core's rates. */
	hwt_test_run_ok(
	    &r, "taskset -c %d env HWT_PMU_SIM=adl %s stat -x, -e cycles,instructions -- %s 100",
	    core, hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	cy = csv_get(r.err, "cpu_core/cycles/");
	in = csv_get(r.err, "cpu_core/instructions/");
	assert_near(rate(&cy), 4.0, 0.01);
	assert_near(in.v / cy.v, 2.0, 0.01);
	assert_false(csv_get(r.err, "cpu_atom/cycles/").counted);
	hwt_test_run_free(&r);
	/* The table names both PMUs as perf does, IPC per PMU. */
	hwt_test_run_ok(&r,
			"taskset -c %d env HWT_PMU_SIM=adl %s stat -e cycles,instructions -- %s 20",
			core, hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	assert_true(hwt_test_contains(r.err, "      cpu_core/cycles/ "));
	assert_true(hwt_test_contains(r.err, "<not counted>      cpu_atom/cycles/ "));
	assert_true(hwt_test_contains(r.err, "cpu_core/instructions/           #    2.00  insn per "
					     "cycle"));
	hwt_test_run_free(&r);
}

static void test_hybrid_stat_system_wide(void **state)
{
	struct hwt_test_run r;
	struct csv cc, ca, ic, ia;
	int core, atom;

	(void)state;
	hybrid_cpus(&core, &atom);
	hwt_test_run_ok(&r, "HWT_PMU_SIM=adl %s stat -a -x, -e cycles,instructions -- sleep 0.2",
			hwt_test_hwtrace());
	cc = csv_get(r.err, "cpu_core/cycles/");
	ca = csv_get(r.err, "cpu_atom/cycles/");
	ic = csv_get(r.err, "cpu_core/instructions/");
	ia = csv_get(r.err, "cpu_atom/instructions/");
	/* Every CPU counts on its own PMU: nothing refused, nothing scaled. */
	assert_true(cc.counted && ca.counted && ic.counted && ia.counted);
	assert_near(cc.pct, 100.0, 0.0001);
	assert_near(rate(&cc), 4.0, 0.01);
	assert_near(rate(&ca), 2.5, 0.01);
	assert_near(ic.v / cc.v, 2.0, 0.01);
	assert_near(ia.v / ca.v, 1.0, 0.01);
	/* each PMU's time is its CPUs' (a CPU each here): about the wall time */
	assert_true(cc.run > 0.15e9 && ca.run > 0.15e9);
	hwt_test_run_free(&r);
}

static void test_hybrid_record(void **state)
{
	struct hwt_test_run r;
	char *dir = hwt_test_tmpdir();
	int core, atom;

	(void)state;
	hybrid_cpus(&core, &atom);
	for (int k = 0; k < 2; k++) {
		int cpu = k ? atom : core;
		const char *ev = k ? "cpu_atom/cycles/:" : "cpu_core/cycles/:";
		char want[64];
		size_t n = 0;

		hwt_test_run_ok(
		    &r,
		    "taskset -c %d env HWT_PMU_SIM=adl %s record -q -e cycles -o %s/h.hwt -- %s "
		    "100",
		    cpu, hwt_test_hwtrace(), dir, hwt_test_prog("pmc_spin"));
		hwt_test_run_free(&r);
		hwt_test_run_ok(&r, "%s script -i %s/h.hwt", hwt_test_hwtrace(), dir);
		snprintf(want, sizeof(want), "[%03d]", cpu);
		for (const char *p = r.out; (p = strstr(p, ev)); p++)
			n++;
		/* 100 ms at 4000 Hz: hundreds of samples, all of this PMU */
		assert_true(n > 100);
		assert_true(hwt_test_contains(r.out, want));
		assert_false(hwt_test_contains(r.out, k ? "cpu_core/" : "cpu_atom/"));
		hwt_test_run_free(&r);
	}
	/* -c and -F on either core type (each failed at the first E-core):
	 * a period of 10^5 cycles over 100 ms of spinning (4 GHz P-cores,
	 * 2.5 GHz E-cores in the simulator) gives thousands of samples, 1000
	 * Hz about a hundred, all of the PMU of the CPU. */
	for (int k = 0; k < 4; k++) {
		int cpu = k & 1 ? atom : core;
		const char *ev = k & 1 ? "cpu_atom/cycles/:" : "cpu_core/cycles/:";
		size_t n = 0;

		hwt_test_run_ok(&r,
				"taskset -c %d env HWT_PMU_SIM=adl %s record -q -e cycles %s -o "
				"%s/p.hwt -- %s 100",
				cpu, hwt_test_hwtrace(), k < 2 ? "-c 100000" : "-F 1000", dir,
				hwt_test_prog("pmc_spin"));
		hwt_test_run_free(&r);
		hwt_test_run_ok(&r, "%s script -i %s/p.hwt", hwt_test_hwtrace(), dir);
		for (const char *p = r.out; (p = strstr(p, ev)); p++)
			n++;
		if (k < 2)
			assert_true(n > 1000);
		else
			assert_true(n >= 50 && n <= 200);
		assert_false(hwt_test_contains(r.out, k & 1 ? "cpu_core/" : "cpu_atom/"));
		hwt_test_run_free(&r);
	}
	/* The default event: cycles:P on the PMU of the CPU. */
	hwt_test_run_ok(&r, "taskset -c %d env HWT_PMU_SIM=adl %s record -q -o %s/d.hwt -- %s 30",
			atom, hwt_test_hwtrace(), dir, hwt_test_prog("pmc_spin"));
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "%s report -i %s/d.hwt", hwt_test_hwtrace(), dir);
	assert_true(hwt_test_contains(r.out, "of event 'cpu_atom/cycles/P'"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

static void test_hybrid_trace_and_list(void **state)
{
	struct hwt_test_run r;
	int core, atom;
	long long ns;
	double count;
	const char *at;

	(void)state;
	hybrid_cpus(&core, &atom);
	hwt_test_run_ok(
	    &r,
	    "taskset -c %d env HWT_PMU_SIM=adl %s trace 'hardware:instructions { @ = count(); }' "
	    "-- %s 100",
	    atom, hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	/* pmc_spin prints its CPU time first; the map follows */
	ns = atoll(r.out);
	at = strstr(r.out, "@: count()");
	assert_non_null(at);
	count = atof(at + strlen("@: count()"));
	/* 2.5 instructions per ns on cpu_atom, plus exec and exit */
	assert_true(count >= (double)ns * 2.5 * 0.99);
	assert_true(count <= (double)ns * 2.5 * 1.3);
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "HWT_PMU_SIM=adl %s list cycles", hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.out, "cpu_core/cpu-cycles/"));
	assert_true(hwt_test_contains(r.out, "cpu_atom/cpu-cycles/"));
	hwt_test_run_free(&r);
}

/* ---- 2. failures that do not kill the run ------------------------------ */

static void test_not_supported_counts_the_rest(void **state)
{
	struct hwt_test_run r;
	struct csv p, in, tc;

	(void)state;
	hwt_test_run_ok(&r,
			"HWT_PMU_SIM=skl %s stat -x, -e cycles:p,instructions,task-clock -- %s 50",
			hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	p = csv_get(r.err, "cycles:p");
	in = csv_get(r.err, "instructions");
	tc = csv_get(r.err, "task-clock");
	assert_false(p.supported);
	assert_true(in.counted && tc.counted);
	/* 3 GHz x IPC 2 per ns of task time */
	assert_near(in.v / (tc.v * 1e6), 6.0, 0.02);
	/* the reason, with the fix, on stderr */
	assert_true(hwt_test_contains(r.err, "cycles:p: <not supported>: 'cycles:p': precise "
					     "modifiers (:p) are for sampling"));
	hwt_test_run_free(&r);
	/* On bare metal an event the CPU lacks is not blamed on a VM. */
	hwt_test_run_ok(
	    &r, "HWT_PMU_SIM=skl %s stat -x, -e stalled-cycles-frontend,instructions -- true",
	    hwt_test_hwtrace());
	assert_false(csv_get(r.err, "stalled-cycles-frontend").supported);
	assert_true(hwt_test_contains(r.err, "not supported by this CPU's PMU (cpu)"));
	assert_false(hwt_test_contains(r.err, "VM"));
	assert_false(hwt_test_contains(r.err, "virtual"));
	hwt_test_run_free(&r);
}

static void test_not_supported_on_this_machine(void **state)
{
	struct hwt_test_run r;
	char *cpuinfo = hwt_test_read_file("/proc/cpuinfo", NULL);
	bool vm = cpuinfo && strstr(cpuinfo, " hypervisor");

	(void)state;
	free(cpuinfo);
	/* The real kernel: a cycles counter or not, the run goes on. */
	hwt_test_run_ok(&r, "%s stat -x, -e cycles,task-clock -- true", hwt_test_hwtrace());
	assert_true(csv_get(r.err, "task-clock").counted);
	if (!csv_get(r.err, "cycles").supported) {
		assert_true(hwt_test_contains(r.err, "cycles: <not supported>: "));
		assert_true(hwt_test_contains(r.err, vm ? "this virtual machine exposes no "
							  "hardware counters"
							: "is not supported"));
	} else {
		assert_true(csv_get(r.err, "cycles").v > 0);
	}
	hwt_test_run_free(&r);
}

static void test_group_not_counted(void **state)
{
	struct hwt_test_run r;
	static const char *const members[] = {"cycles", "r1a8", "r2a8", "r3a8", "r4a8"};

	(void)state;
	/* Five events that fit an empty PMU (cycles on its fixed counter)
	 * but not one whose fixed cycles counter the NMI watchdog holds. */
	hwt_test_run_ok(
	    &r,
	    "HWT_PMU_SIM=skl %s stat -x, -e '{cycles,r1a8,r2a8,r3a8,r4a8}',instructions -- %s 30",
	    hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	for (size_t i = 0; i < 5; i++) {
		struct csv c = csv_get(r.err, members[i]);

		assert_true(c.supported && !c.counted);
		assert_near(c.pct, 0.0, 0.0001); /* perf: 0.00, not 100.00 */
	}
	assert_true(csv_get(r.err, "instructions").counted);
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "HWT_PMU_SIM=skl %s stat -e '{cycles,r1a8,r2a8,r3a8,r4a8}' -- %s 10",
			hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	assert_true(hwt_test_contains(r.err, "<not counted>      r4a8"));
	assert_true(hwt_test_contains(r.err,
				      "Some events weren't counted. Try disabling the NMI "
				      "watchdog:\n\techo 0 > /proc/sys/kernel/nmi_watchdog\n"));
	hwt_test_run_free(&r);
	/* Without the watchdog the group fits and counts, with no hint. */
	hwt_test_run_ok(
	    &r,
	    "HWT_PMU_SIM=skl HWT_PMU_SIM_WATCHDOG=0 %s stat -x, -e '{cycles,r1a8,r2a8,r3a8,r4a8}' "
	    "-- %s 30",
	    hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	for (size_t i = 0; i < 5; i++)
		assert_true(csv_get(r.err, members[i]).counted);
	assert_near(csv_get(r.err, "r1a8").v / csv_get(r.err, "cycles").v, 0.01, 0.01);
	assert_false(hwt_test_contains(r.err, "NMI watchdog"));
	hwt_test_run_free(&r);
}

static void test_multiplexing_and_weak_groups(void **state)
{
	struct hwt_test_run r;
	char name[8];

	(void)state;
	/* Six general-counter events on four counters: each runs 4/6 of
	 * the time, and scaling gives back the full-time estimate. */
	hwt_test_run_ok(&r,
			"HWT_PMU_SIM=skl %s stat -x, -e r1a8,r2a8,r3a8,r4a8,r5a8,r6a8 -- %s 100",
			hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	for (int i = 1; i <= 6; i++) {
		struct csv c;

		snprintf(name, sizeof(name), "r%da8", i);
		c = csv_get(r.err, name);
		assert_near(c.pct, 100.0 * 4 / 6, 0.001);
		assert_near(rate(&c), 0.03, 0.01);
	}
	hwt_test_run_free(&r);
	/* A group of five on four counters: the fifth is refused ... */
	hwt_test_run_ok(&r, "HWT_PMU_SIM=skl %s stat -x, -e '{r1a8,r2a8,r3a8,r4a8,r5a8}' -- %s 30",
			hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	assert_false(csv_get(r.err, "r5a8").supported);
	assert_true(hwt_test_contains(r.err, "cannot join its group"));
	hwt_test_run_free(&r);
	/* ... unless weak (:W): then each counts on its own, multiplexed. */
	hwt_test_run_ok(&r,
			"HWT_PMU_SIM=skl %s stat -x, -e '{r1a8,r2a8,r3a8,r4a8,r5a8}:W' -- %s 30",
			hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	for (int i = 1; i <= 5; i++) {
		struct csv c;

		snprintf(name, sizeof(name), "r%da8:W", i);
		c = csv_get(r.err, name);
		assert_true(c.counted);
		assert_near(c.pct, 80.0, 0.001);
	}
	hwt_test_run_free(&r);
	/* {...}:D pins the leader only (a pinned member is EINVAL). */
	hwt_test_run_ok(&r, "HWT_PMU_SIM=skl %s stat -x, -e '{cycles,instructions}:D' -- %s 20",
			hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	assert_true(csv_get(r.err, "cycles:D").counted);
	assert_true(csv_get(r.err, "instructions:D").counted);
	hwt_test_run_free(&r);
}

/* ---- 3. system PMUs ------------------------------------------------------ */

static void test_system_pmus(void **state)
{
	struct hwt_test_run r;
	struct csv imc, pkg;

	(void)state;
	hwt_test_run_ok(
	    &r,
	    "HWT_PMU_SIM=skl %s stat -a -x, -e uncore_imc/data_reads/,power/energy-pkg/ -- "
	    "sleep 0.3",
	    hwt_test_hwtrace());
	imc = csv_get(r.err, "uncore_imc/data_reads/");
	pkg = csv_get(r.err, "power/energy-pkg/");
	assert_string_equal(imc.unit, "MiB");
	assert_string_equal(pkg.unit, "Joules");
	/* Counted once, on the cpumask CPU: the model's 4096 MiB/s and 15 W,
	 * not that times the number of CPUs. */
	assert_near(imc.v / (imc.run / 1e9), 4096.0, 0.02);
	assert_near(pkg.v / (pkg.run / 1e9), 15.0, 0.02);
	hwt_test_run_free(&r);
	/* One task cannot be counted by a package's PMU: said, not fatal. */
	hwt_test_run_ok(&r, "HWT_PMU_SIM=skl %s stat -x, -e power/energy-pkg/,task-clock -- true",
			hwt_test_hwtrace());
	assert_false(csv_get(r.err, "power/energy-pkg/").supported);
	assert_true(csv_get(r.err, "task-clock").counted);
	assert_true(hwt_test_contains(r.err, "cannot count one task; count it system-wide with "
					     "-a"));
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "HWT_PMU_SIM=skl %s list energy-pkg", hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.out, "power/energy-pkg/"));
	assert_true(hwt_test_contains(r.out, "in Joules"));
	hwt_test_run_free(&r);
}

/* ---- 4. exclude_guest, paranoid and ownership --------------------------- */

static void test_exclude_guest_as_perf(void **state)
{
	struct hwt_test_run r;
	double g, h, s;

	(void)state;
	/* The simulated host runs a guest: a CPU's cycles without
	 * exclude_guest count it too (x1.25). cycles, cpu/event=0x3c/ and
	 * cycles:H all exclude it, as perf's do; cycles:G does not. */
	hwt_test_run_ok(
	    &r, "HWT_PMU_SIM=skl %s stat -a -x, -e cycles,cpu/event=0x3c/,cycles:G -- sleep 0.1",
	    hwt_test_hwtrace());
	h = rate_of(r.err, "cycles");
	s = rate_of(r.err, "cpu/event=0x3c/");
	g = rate_of(r.err, "cycles:G");
	assert_near(h, 3.0, 0.01);
	assert_near(s, 3.0, 0.01);
	/* :G counts guest only (exclude_host): the model does not split
	 * host from guest time, only adds the guest's share when asked */
	assert_near(g, 3.75, 0.01);
	hwt_test_run_free(&r);
}

static void test_paranoid_and_ownership(void **state)
{
	struct hwt_test_run r;

	(void)state;
	/* Debian's level 3: nothing helps but privileges; no ':u' advice. */
	hwt_test_run(&r, "HWT_PMU_SIM=skl HWT_PMU_SIM_PARANOID=3 %s stat -e cycles:k -- true",
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "but it is 3; run as root (or with CAP_PERFMON)"));
	assert_false(hwt_test_contains(r.err, "':u'"));
	hwt_test_run_free(&r);
	/* Level 2: an explicit :k gets the paranoid fix with ':u' ... */
	hwt_test_run(&r, "HWT_PMU_SIM=skl HWT_PMU_SIM_PARANOID=2 %s stat -e cycles:k -- true",
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "counting kernel space needs perf_event_paranoid <= 1 "
					     "but it is 2"));
	assert_true(hwt_test_contains(r.err, "or count user space only with ':u'"));
	hwt_test_run_free(&r);
	/* ... plain cycles falls back to user space, at the model's 80% ... */
	hwt_test_run_ok(&r, "HWT_PMU_SIM=skl HWT_PMU_SIM_PARANOID=2 %s stat -x, -e cycles -- %s 50",
			hwt_test_hwtrace(), hwt_test_prog("pmc_spin"));
	assert_near(rate_of(r.err, "cycles:u"), 3.0 * 0.8, 0.01);
	hwt_test_run_free(&r);
	/* ... and another user's process is about ownership, not paranoid. */
	hwt_test_run(&r, "HWT_PMU_SIM=skl HWT_PMU_SIM_PARANOID=2 %s stat -e cycles -p 1",
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "belongs to another user"));
	assert_false(hwt_test_contains(r.err, "perf_event_paranoid <="));
	hwt_test_run_free(&r);
	/* Level 1: system-wide needs 0. */
	hwt_test_run(&r, "HWT_PMU_SIM=skl HWT_PMU_SIM_PARANOID=1 %s stat -a -e cycles -- true",
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "system-wide counting needs perf_event_paranoid <= 0 "
					     "but it is 1"));
	hwt_test_run_free(&r);
}

/* ---- 6. record -------------------------------------------------------- */

static void test_record_precise_groups_lbr(void **state)
{
	struct hwt_test_run r;
	char *dir = hwt_test_tmpdir();

	(void)state;
	/* The default event is cycles:P, as perf's. */
	hwt_test_run_ok(&r, "HWT_PMU_SIM=skl %s record -q -o %s/p.hwt -- %s 30", hwt_test_hwtrace(),
			dir, hwt_test_prog("pmc_spin"));
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "%s report -i %s/p.hwt", hwt_test_hwtrace(), dir);
	assert_true(hwt_test_contains(r.out, "of event 'cycles:P'"));
	hwt_test_run_free(&r);
	/* Leader sampling: only the leader samples; the group opens as one. */
	hwt_test_run_ok(
	    &r, "HWT_PMU_SIM=skl %s record -q -e '{cycles,instructions}:S' -o %s/s.hwt -- %s 50",
	    hwt_test_hwtrace(), dir, hwt_test_prog("pmc_spin"));
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "%s script -i %s/s.hwt", hwt_test_hwtrace(), dir);
	assert_true(hwt_test_contains(r.out, " cycles:S:"));
	assert_false(hwt_test_contains(r.out, " instructions:S:"));
	hwt_test_run_free(&r);
	/* LBR call stacks are user-space only: a kernel-only event gets
	 * frame pointers, with a warning, as perf does. */
	hwt_test_run_ok(
	    &r, "HWT_PMU_SIM=skl %s record -e cycles:k --call-graph lbr -o %s/l.hwt -- %s 20",
	    hwt_test_hwtrace(), dir, hwt_test_prog("pmc_spin"));
	assert_true(hwt_test_contains(r.err, "frame-pointer call chains instead"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* ---- 7. AMD IBS ---------------------------------------------------------- */

static void test_amd_ibs(void **state)
{
	struct hwt_test_run r;
	char *dir = hwt_test_tmpdir();

	(void)state;
	/* Precise cycles go to IBS, which takes no privilege filter. */
	hwt_test_run(&r, "HWT_PMU_SIM=amd %s record -e cycles:ppu -o %s/a.hwt -- true",
		     hwt_test_hwtrace(), dir);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "precise cycles (:p) are taken by IBS, which cannot "
					     "filter privilege levels"));
	hwt_test_run_free(&r);
	/* Nor the user-space-only fallback at perf_event_paranoid 2. */
	hwt_test_run(&r,
		     "HWT_PMU_SIM=amd HWT_PMU_SIM_PARANOID=2 %s record -e cycles:pp -o %s/a.hwt -- "
		     "true",
		     hwt_test_hwtrace(), dir);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "taken by IBS"));
	hwt_test_run_free(&r);
	/* Without filters IBS samples. */
	hwt_test_run_ok(&r, "HWT_PMU_SIM=amd %s record -q -e cycles:pp -o %s/a.hwt -- %s 20",
			hwt_test_hwtrace(), dir, hwt_test_prog("pmc_spin"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hybrid_stat_command),
	    cmocka_unit_test(test_hybrid_stat_system_wide),
	    cmocka_unit_test(test_hybrid_record),
	    cmocka_unit_test(test_hybrid_trace_and_list),
	    cmocka_unit_test(test_not_supported_counts_the_rest),
	    cmocka_unit_test(test_not_supported_on_this_machine),
	    cmocka_unit_test(test_group_not_counted),
	    cmocka_unit_test(test_multiplexing_and_weak_groups),
	    cmocka_unit_test(test_system_pmus),
	    cmocka_unit_test(test_exclude_guest_as_perf),
	    cmocka_unit_test(test_paranoid_and_ownership),
	    cmocka_unit_test(test_record_precise_groups_lbr),
	    cmocka_unit_test(test_amd_ibs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
