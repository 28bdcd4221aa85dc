/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/cli/test_list.c - `hwtrace list`: exact lines for perf's software
 * events, libpfm4 events of Intel models forced with LIBPFM_FORCE_PMU, and
 * uprobe/kprobe/Intel PT presence and capabilities from a fake sysfs, and
 * generic hardware and cache events marked exactly when this machine
 * cannot open them (checked against `hwtrace stat -e EVENT`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/lib/testutil.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define HEAD "\nList of pre-defined events (to be used in -e):\n\n"

static void expect(const char *env, const char *args, const char *want)
{
	struct hwt_test_run r;

	hwt_test_run(&r, "%s %s list %s", env, hwt_test_hwtrace(), args);
	assert_int_equal(r.status, 0);
	if (strcmp(r.out, want))
		fprintf(stderr, "got:\n%s\nwant:\n%s\n", r.out, want);
	assert_string_equal(r.out, want);
	hwt_test_run_free(&r);
}

static void test_software(void **state)
{
	(void)state;
	expect("", "software",
	       HEAD "  alignment-faults                                   [Software event]\n"
		    "  bpf-output                                         [Software event]\n"
		    "  cgroup-switches                                    [Software event]\n"
		    "  context-switches OR cs                             [Software event]\n"
		    "  cpu-clock                                          [Software event]\n"
		    "  cpu-migrations OR migrations                       [Software event]\n"
		    "  dummy                                              [Software event]\n"
		    "  emulation-faults                                   [Software event]\n"
		    "  major-faults                                       [Software event]\n"
		    "  minor-faults                                       [Software event]\n"
		    "  page-faults OR faults                              [Software event]\n"
		    "  task-clock                                         [Software event]\n");
	/* a substring selects across classes */
	expect("HWT_TRACEFS_ROOT=/nonexistent", "clock",
	       HEAD "  cpu-clock                                          [Software event]\n"
		    "  task-clock                                         [Software event]\n");
}

static void test_forced_pmu(void **state)
{
	(void)state;
	expect("LIBPFM_FORCE_PMU=icx HWT_TRACEFS_ROOT=/nonexistent", "--no-desc icx::INST_RETIRED",
	       HEAD
	       "icx: Intel IcelakeX; modifiers: :e :i :c=N :intx :intxcp :u :k :period=N :freq=N "
	       ":precise=N :excl :mg :mh :cpu=N :pinned\n"
	       "  (libpfm4 events: icx::EVENT:UMASK:MODIFIER..., or EVENT:UMASK)\n"
	       "  icx::INST_RETIRED\n"
	       "       :STALL_CYCLES\n"
	       "       :ANY_P\n"
	       "       :PREC_DIST\n"
	       "       :ANY\n"
	       "       :NOP\n");
	expect("LIBPFM_FORCE_PMU=skl HWT_TRACEFS_ROOT=/nonexistent", "skl::BR_MISP_RETIRED",
	       HEAD
	       "skl: Intel Skylake; modifiers: :e :i :c=N :t :intx :intxcp :u :k :period=N :freq=N "
	       ":precise=N :excl :mg :mh :cpu=N :pinned\n"
	       "  (libpfm4 events: skl::EVENT:UMASK:MODIFIER..., or EVENT:UMASK)\n"
	       "  skl::BR_MISP_RETIRED\n"
	       "       [Mispredicted retired branches (Precise Event)]\n"
	       "       :CONDITIONAL                    All mispredicted macro conditional branch "
	       "instructions\n"
	       "       :COND                           All mispredicted macro conditional branch "
	       "instructions\n"
	       "       :ALL_BRANCHES (default)         All mispredicted macro branches "
	       "(architectural event)\n"
	       "       :NEAR_TAKEN                     Number of near branch instructions retired "
	       "that were mispredicted and taken\n"
	       "       :NEAR_CALL                      Counts both taken and not taken retired "
	       "mispredicted direct and indirect near calls, including both register and memory "
	       "indirect.\n"
	       "       :RET                            This event counts the number of "
	       "mispredicted ret instructions retired.\n"
	       "       :NEAR_RETURN                    This event counts the number of "
	       "mispredicted ret instructions retired.\n");
}

static void mkdirs(const char *root, const char *rel)
{
	char p[4096], *s;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
}

static void put(const char *root, const char *rel, const char *text)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	hwt_test_write_file(p, text, strlen(text));
}

static void test_probes_and_pt(void **state)
{
	char *dir = hwt_test_tmpdir(), env[4200];

	(void)state;
	/* a machine with kprobes and Intel PT but no uprobes */
	mkdirs(dir, "bus/event_source/devices/kprobe");
	put(dir, "bus/event_source/devices/kprobe/type", "6\n");
	mkdirs(dir, "bus/event_source/devices/intel_pt/caps");
	put(dir, "bus/event_source/devices/intel_pt/type", "9\n");
	put(dir, "bus/event_source/devices/intel_pt/caps/psb_cyc", "1\n");
	put(dir, "bus/event_source/devices/intel_pt/caps/mtc", "1\n");
	put(dir, "bus/event_source/devices/intel_pt/caps/ip_filtering", "1\n");
	put(dir, "bus/event_source/devices/intel_pt/caps/num_address_ranges", "2\n");
	snprintf(env, sizeof(env), "HWT_SYSFS_ROOT=%s HWT_TRACEFS_ROOT=/nonexistent", dir);
	expect(env, "probe",
	       HEAD "  uprobe                                             [Dynamic probe PMU: not "
		    "available on this kernel]\n"
		    "  kprobe                                             [Dynamic probe PMU: "
		    "available (PMU type 6): dynamic kernel probes]\n");
	expect(env, "intel_pt",
	       HEAD "  intel_pt                                           [Intel PT: available "
		    "(PMU type 9); capabilities: "
		    "ip_filtering=1 mtc=1 num_address_ranges=2 psb_cyc=1]\n");
	/* the real machine (a VM without PT here) */
	{
		struct hwt_test_run r;
		struct stat st;

		hwt_test_run(&r, "%s list intel_pt", hwt_test_hwtrace());
		assert_int_equal(r.status, 0);
		if (stat("/sys/bus/event_source/devices/intel_pt", &st) != 0)
			assert_true(
			    hwt_test_contains(r.out, "[Intel PT: not available on this machine"));
		else
			assert_true(hwt_test_contains(r.out, "[Intel PT: available (PMU type "));
		hwt_test_run_free(&r);
	}
	hwt_test_tmpdir_remove(dir);
}

static void test_no_match(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "%s list zzqqxx", hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "hwtrace: error: no event matches 'zzqqxx'; try 'hwtrace list' "
				   "without a pattern\n");
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s list a b", hwt_test_hwtrace());
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);
}

/* Each generic hardware event, and some cache events: list marks the ones
 * this machine cannot open, and exactly those stat cannot count
 * (<not supported>). */
static void test_hardware_marks(void **state)
{
	static const char *const kinds[] = {"hardware", "cache"};
	int checked = 0;

	(void)state;
	for (size_t k = 0; k < NELEM(kinds); k++) {
		struct hwt_test_run r;
		char *copy, *save = NULL;
		int n = 0;

		hwt_test_run(&r, "HWT_TRACEFS_ROOT=/nonexistent %s list %s", hwt_test_hwtrace(),
			     kinds[k]);
		assert_int_equal(r.status, 0);
		copy = strdup(r.out);
		for (char *l = strtok_r(copy, "\n", &save); l && n < 12;
		     l = strtok_r(NULL, "\n", &save)) {
			const char *tag = strchr(l, '[');
			char name[128];
			bool plain, marked, counted;
			struct hwt_test_run s;

			if (!tag || sscanf(l, " %127s", name) != 1)
				continue;
			plain = !strcmp(tag, "[Hardware event]") ||
				!strcmp(tag, "[Hardware cache event]");
			marked = !strcmp(tag, "[Hardware event: not supported here]") ||
				 !strcmp(tag, "[Hardware cache event: not supported here]") ||
				 hwt_test_contains(tag, "event: not permitted here "
							"(kernel.perf_event_paranoid)]");
			if (!plain && !marked)
				fail_msg("unexpected list line: %s", l);
			/* stat goes on past an event that does not open, as
			 * perf stat: it prints <not supported> and exits 0. */
			hwt_test_run(&s, "%s stat -x, -e %s -- true", hwt_test_hwtrace(), name);
			counted = s.status == 0 && !hwt_test_contains(s.out, "<not supported>") &&
				  !hwt_test_contains(s.err, "<not supported>");
			if (counted != plain)
				fail_msg("list says '%s', stat -e %s exits %d: %s%s", l, name,
					 s.status, s.out, s.err);
			hwt_test_run_free(&s);
			n++;
			checked++;
		}
		free(copy);
		hwt_test_run_free(&r);
	}
	assert_true(checked >= 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_software),   cmocka_unit_test(test_hardware_marks),
	    cmocka_unit_test(test_forced_pmu), cmocka_unit_test(test_probes_and_pt),
	    cmocka_unit_test(test_no_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
