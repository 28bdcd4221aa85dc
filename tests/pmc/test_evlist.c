/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/pmc/test_evlist.c - event specs to perf_event_attr: perf's generic
 * names and modifiers, raw codes, groups, tracepoints (ids from tracefs),
 * sysfs PMU terms (against a fake sysfs), errors with suggestions, and
 * hardware encodings for Intel models forced with LIBPFM_FORCE_PMU, checked
 * against libpfm4's raw tables (pfm_get_event_encoding) and against the
 * event/umask codes of Intel's SDM event tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pmc/pmc.h"
#include "tests/lib/testutil.h"

#include <perfmon/pfmlib_perf_event.h>

static struct hwt_pmc_evlist *parse_ok(const char *spec, int want)
{
	struct hwt_pmc_evlist *l;
	int n;

	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	n = hwt_pmc_evlist_add(l, spec);
	if (n != want)
		fprintf(stderr, "'%s': %d (%s)\n", spec, n, hwt_pmc_evlist_errmsg(l));
	assert_int_equal(n, want);
	return l;
}

static void test_generic(void **state)
{
	struct hwt_pmc_evlist *l = parse_ok("cycles,instructions:u,task-clock,faults,cs:k,"
					    "L1-dcache-load-misses,branch-misses:ppp",
					    7);
	const struct hwt_pmc_event *e;

	(void)state;
	e = hwt_pmc_evlist_event(l, 0);
	assert_int_equal(e->attr.type, PERF_TYPE_HARDWARE);
	assert_int_equal(e->attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_string_equal(e->name, "cycles");
	assert_int_equal(e->attr.exclude_kernel, 0);
	assert_int_equal(e->leader, 0);
	assert_int_equal(e->nr_members, 1);
	e = hwt_pmc_evlist_event(l, 1);
	assert_int_equal(e->attr.config, PERF_COUNT_HW_INSTRUCTIONS);
	assert_int_equal(e->attr.exclude_kernel, 1);
	assert_int_equal(e->attr.exclude_user, 0);
	assert_int_equal(e->attr.exclude_hv, 1);
	assert_true(e->user_mods);
	assert_string_equal(e->name, "instructions:u");
	e = hwt_pmc_evlist_event(l, 2);
	assert_int_equal(e->attr.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(e->attr.config, PERF_COUNT_SW_TASK_CLOCK);
	assert_string_equal(e->unit, "msec");
	assert_true(e->scale == 1e-6);
	e = hwt_pmc_evlist_event(l, 3);
	assert_int_equal(e->attr.config, PERF_COUNT_SW_PAGE_FAULTS);
	assert_string_equal(e->unit, "");
	e = hwt_pmc_evlist_event(l, 4);
	assert_int_equal(e->attr.config, PERF_COUNT_SW_CONTEXT_SWITCHES);
	assert_int_equal(e->attr.exclude_user, 1);
	assert_int_equal(e->attr.exclude_kernel, 0);
	e = hwt_pmc_evlist_event(l, 5);
	assert_int_equal(e->attr.type, PERF_TYPE_HW_CACHE);
	assert_int_equal(e->attr.config, PERF_COUNT_HW_CACHE_L1D |
					     (PERF_COUNT_HW_CACHE_OP_READ << 8) |
					     (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
	e = hwt_pmc_evlist_event(l, 6);
	assert_int_equal(e->attr.precise_ip, 3);
	hwt_pmc_evlist_free(l);
}

static void test_raw_and_groups(void **state)
{
	struct hwt_pmc_evlist *l = parse_ok("r1a8:u,{task-clock,page-faults,cs}:u,cpu-clock", 5);
	const struct hwt_pmc_event *e;

	(void)state;
	e = hwt_pmc_evlist_event(l, 0);
	assert_int_equal(e->attr.type, PERF_TYPE_RAW);
	assert_int_equal(e->attr.config, 0x1a8);
	assert_int_equal(e->attr.exclude_kernel, 1);
	for (int i = 1; i <= 3; i++) {
		e = hwt_pmc_evlist_event(l, (size_t)i);
		assert_int_equal(e->leader, 1);
		assert_int_equal(e->nr_members, i == 1 ? 3 : 0);
		assert_int_equal(e->attr.exclude_kernel, 1);
	}
	assert_string_equal(hwt_pmc_evlist_event(l, 2)->name, "page-faults:u");
	e = hwt_pmc_evlist_event(l, 4);
	assert_int_equal(e->leader, 4);
	/* a second add continues the indexes (groups keep their leader) */
	assert_int_equal(hwt_pmc_evlist_add(l, "{cycles,instructions}"), 2);
	assert_int_equal(hwt_pmc_evlist_event(l, 6)->leader, 5);
	assert_int_equal(hwt_pmc_evlist_count(l), 7);
	hwt_pmc_evlist_free(l);
}

static void expect_error(const char *spec, int err, const char *msg_part)
{
	struct hwt_pmc_evlist *l;

	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	assert_int_equal(hwt_pmc_evlist_add(l, "task-clock"), 1);
	assert_int_equal(hwt_pmc_evlist_add(l, spec), err);
	if (!hwt_test_contains(hwt_pmc_evlist_errmsg(l), msg_part))
		fprintf(stderr, "'%s' -> '%s'\n", spec, hwt_pmc_evlist_errmsg(l));
	assert_true(hwt_test_contains(hwt_pmc_evlist_errmsg(l), msg_part));
	/* a failed add appends nothing */
	assert_int_equal(hwt_pmc_evlist_count(l), 1);
	hwt_pmc_evlist_free(l);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("cylces", -HWT_ENOEVENT, "did you mean: cycles?");
	expect_error("instrutions:u", -HWT_ENOEVENT, "did you mean: instructions?");
	expect_error("task-clock,bogus_event_xyz", -HWT_ENOEVENT,
		     "unknown event 'bogus_event_xyz'");
	expect_error("cycles:q", -HWT_EPARSE, "unknown modifier ':q'");
	expect_error("{cycles,instructions", -HWT_EPARSE, "missing '}'");
	expect_error("{cycles,{instructions}}", -HWT_EPARSE, "cannot nest");
	expect_error("{}", -HWT_EPARSE, "empty");
	expect_error("cycles,", -HWT_EPARSE, "ends with ','");
	expect_error("", -HWT_EPARSE, "empty event list");
	expect_error(",cycles", -HWT_EPARSE, "empty event name");
	expect_error("nosuchpmu/config=1/", -HWT_ENOEVENT, "no PMU named 'nosuchpmu'");
	expect_error("{cycles}:z", -HWT_EPARSE, "unknown group modifier");
}

static void test_suggest(void **state)
{
	char buf[256];

	(void)state;
	assert_true(hwt_pmc_suggest(NULL, "task-clok", buf, sizeof(buf), 3) >= 1);
	assert_memory_equal(buf, "task-clock", 10);
	assert_int_equal(hwt_pmc_suggest(NULL, "zzzzzzzzzzzzzzzzzz", buf, sizeof(buf), 3), 0);
	assert_string_equal(buf, "");
}

static void test_tracepoint(void **state)
{
	struct hwt_pmc_config cfg;
	struct hwt_pmc_evlist *l;
	char path[512], id[32];
	FILE *f;

	(void)state;
	if (!hwt_test_have_tracefs())
		hwt_test_skip("no tracefs here (not mounted, and not root to mount it)");
	hwt_pmc_config_init(&cfg);
	assert_int_equal(hwt_pmc_evlist_alloc(&l, &cfg), 0);
	if (hwt_pmc_evlist_add(l, "sched:sched_switch") != 1)
		fail_msg("sched:sched_switch: %s", hwt_pmc_evlist_errmsg(l));
	/* the id is the one tracefs shows */
	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/sched/sched_switch/id");
	f = fopen(path, "r");
	if (!f) {
		snprintf(path, sizeof(path),
			 "/sys/kernel/debug/tracing/events/sched/sched_switch/id");
		f = fopen(path, "r");
	}
	assert_non_null(f);
	assert_non_null(fgets(id, sizeof(id), f));
	fclose(f);
	assert_int_equal(hwt_pmc_evlist_event(l, 0)->attr.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(hwt_pmc_evlist_event(l, 0)->attr.config, strtoull(id, NULL, 10));
	/* globs expand, sorted */
	assert_true(hwt_pmc_evlist_add(l, "sched:sched_wakeup*") >= 2);
	assert_string_equal(hwt_pmc_evlist_event(l, 1)->name, "sched:sched_wakeup");
	/* a misspelt tracepoint gets tracepoint suggestions */
	assert_int_equal(hwt_pmc_evlist_add(l, "sched:sched_swich"), -HWT_ENOEVENT);
	assert_true(hwt_test_contains(hwt_pmc_evlist_errmsg(l), "sched:sched_switch"));
	assert_int_equal(hwt_pmc_evlist_add(l, "nosuchsubsys:*"), -HWT_ENOEVENT);
	hwt_pmc_evlist_free(l);
}

/* A fake sysfs with one PMU "fakepmu" whose format puts event in bits
 * 0-7, umask in 8-15 and a flag in config1 bit 3, and an alias. */
static char *fake_sysfs(void)
{
	char *dir = hwt_test_tmpdir(), p[4096];
	static const char *const dirs[] = {
	    "bus",
	    "bus/event_source",
	    "bus/event_source/devices",
	    "bus/event_source/devices/fakepmu",
	    "bus/event_source/devices/fakepmu/format",
	    "bus/event_source/devices/fakepmu/events",
	};

	for (size_t i = 0; i < HWT_ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
#define W(rel, text)                                                                               \
	do {                                                                                       \
		snprintf(p, sizeof(p), "%s/bus/event_source/devices/fakepmu/%s", dir, rel);        \
		hwt_test_write_file(p, text, strlen(text));                                        \
	} while (0)
	W("type", "42\n");
	W("format/event", "config:0-7\n");
	W("format/umask", "config:8-15\n");
	W("format/flag", "config1:3\n");
	W("format/split", "config:16-17,20-21\n");
	W("events/loads", "event=0xd0,umask=0x81\n");
#undef W
	return dir;
}

static void test_sysfs_terms(void **state)
{
	struct hwt_pmc_config cfg;
	struct hwt_pmc_evlist *l;
	char *dir = fake_sysfs();
	const struct hwt_pmc_event *e;

	(void)state;
	hwt_pmc_config_init(&cfg);
	cfg.sysfs_root = dir;
	assert_int_equal(hwt_pmc_evlist_alloc(&l, &cfg), 0);
	assert_int_equal(hwt_pmc_evlist_add(l, "fakepmu/event=0x3c,umask=2,flag/u,"
					       "fakepmu/loads/,fakepmu/split=0xf/"),
			 3);
	e = hwt_pmc_evlist_event(l, 0);
	assert_int_equal(e->attr.type, 42);
	assert_int_equal(e->attr.config, 0x023c);
	assert_int_equal(e->attr.config1, 1u << 3);
	assert_int_equal(e->attr.exclude_kernel, 1);
	assert_int_equal(hwt_pmc_evlist_event(l, 1)->attr.config, 0x81d0);
	/* 4 bits split over 16-17 and 20-21 */
	assert_int_equal(hwt_pmc_evlist_event(l, 2)->attr.config, (3u << 16) | (3u << 20));
	assert_int_equal(hwt_pmc_evlist_add(l, "fakepmu/nosuch=1/"), -HWT_ENOEVENT);
	/* inside a group the terms keep their commas too */
	assert_int_equal(hwt_pmc_evlist_add(l, "{fakepmu/event=1,umask=2/,fakepmu/loads/}:u"), 2);
	assert_int_equal(hwt_pmc_evlist_event(l, 3)->attr.config, 0x0201);
	assert_int_equal(hwt_pmc_evlist_event(l, 4)->leader, 3);
	assert_int_equal(hwt_pmc_evlist_event(l, 4)->attr.exclude_kernel, 1);
	assert_int_equal(hwt_pmc_pmu_type(&cfg, "fakepmu"), 42);
	assert_int_equal(hwt_pmc_pmu_type(&cfg, "nope"), -ENOENT);
	hwt_pmc_evlist_free(l);
	hwt_test_tmpdir_remove(dir);
}

/* Hardware encodings under LIBPFM_FORCE_PMU (set in main before libpfm4
 * initialises). Each is checked twice: against libpfm4's raw encoding of
 * the same string (pfm_get_event_encoding: the PERFEVTSEL value, whose
 * USR/OS/INT/EN bits perf expresses in exclude_* instead), and against the
 * event select / umask published in Intel's SDM (vol. 3B, chapter 19). */
struct enc_case {
	const char *spec;
	uint64_t sdm; /* event | umask << 8 | cmask << 24 | inv << 23 | edge << 18 */
	int exclude_kernel, exclude_user;
};

static const struct enc_case icx_cases[] = {
    {"INST_RETIRED:ANY_P", 0x00c0, 0, 0},
    {"icx::BR_MISP_RETIRED:ALL_BRANCHES", 0x00c5, 0, 0},
    {"icx::BR_MISP_RETIRED:ALL_BRANCHES:u", 0x00c5, 1, 0},
    {"BR_INST_RETIRED:ALL_BRANCHES:k", 0x00c4, 0, 1},
    {"LONGEST_LAT_CACHE:MISS", 0x412e, 0, 0},
    {"CPU_CLK_UNHALTED:THREAD_P", 0x003c, 0, 0},
    {"MEM_LOAD_RETIRED:L3_MISS", 0x20d1, 0, 0},
    {"INST_RETIRED:ANY_P:c=2:e", 0x00c0 | (2u << 24) | (1u << 18), 0, 0},
    {"INST_RETIRED:ANY_P:c=1:i", 0x00c0 | (1u << 24) | (1u << 23), 0, 0},
};

#define X86_USR (1ull << 16)
#define X86_OS	(1ull << 17)
#define X86_INT (1ull << 20)
#define X86_EN	(1ull << 22)

static void check_encodings(const char *pmu, const struct enc_case *cases, size_t n)
{
	struct hwt_pmc_evlist *l;

	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		const struct hwt_pmc_event *e;
		uint64_t *codes = NULL, raw;
		char *fstr = NULL, full[256];
		int idx, count = 0;

		snprintf(full, sizeof(full), "%s%s%s", strstr(cases[i].spec, "::") ? "" : pmu,
			 strstr(cases[i].spec, "::") ? "" : "::", cases[i].spec);
		assert_int_equal(hwt_pmc_evlist_add(l, cases[i].spec), 1);
		e = hwt_pmc_evlist_event(l, hwt_pmc_evlist_count(l) - 1);
		assert_int_equal(e->source, HWT_PMC_SRC_PFM);
		assert_int_equal(e->attr.type, PERF_TYPE_RAW);
		assert_int_equal(
		    pfm_get_event_encoding(full, PFM_PLM0 | PFM_PLM3, &fstr, &idx, &codes, &count),
		    PFM_SUCCESS);
		assert_true(count >= 1);
		raw = codes[0] & ~(X86_USR | X86_OS | X86_INT | X86_EN);
		fprintf(stderr, "%-40s attr.config %#llx  libpfm4 raw %#llx  SDM %#llx\n", full,
			(unsigned long long)e->attr.config, (unsigned long long)codes[0],
			(unsigned long long)cases[i].sdm);
		assert_int_equal(e->attr.config, raw);
		assert_int_equal(e->attr.config, cases[i].sdm);
		assert_int_equal(e->attr.exclude_kernel, cases[i].exclude_kernel);
		assert_int_equal(e->attr.exclude_user, cases[i].exclude_user);
		/* the canonical name is libpfm4's fully qualified one */
		assert_memory_equal(e->canon, full, strcspn(full, ":") + 2);
		free(codes);
		free(fstr);
	}
	hwt_pmc_evlist_free(l);
}

static void test_forced_icx(void **state)
{
	struct hwt_pmc_evlist *l;

	(void)state;
	check_encodings("icx", icx_cases, HWT_ARRAY_SIZE(icx_cases));
	/* a wrong unit mask names the valid ones */
	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	assert_int_equal(hwt_pmc_evlist_add(l, "INST_RETIRED:ANYP"), -HWT_EPARSE);
	assert_true(hwt_test_contains(hwt_pmc_evlist_errmsg(l), "INST_RETIRED takes: "));
	assert_true(hwt_test_contains(hwt_pmc_evlist_errmsg(l), "ANY_P"));
	/* a typo in a libpfm4 name gets libpfm4 suggestions */
	assert_int_equal(hwt_pmc_evlist_add(l, "INST_RETIRD:ANY_P"), -HWT_ENOEVENT);
	assert_true(hwt_test_contains(hwt_pmc_evlist_errmsg(l), "INST_RETIRED"));
	/* perf's generic names still win over libpfm4's */
	assert_int_equal(hwt_pmc_evlist_add(l, "cycles"), 1);
	assert_int_equal(hwt_pmc_evlist_event(l, 0)->attr.type, PERF_TYPE_HARDWARE);
	hwt_pmc_evlist_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generic),    cmocka_unit_test(test_raw_and_groups),
	    cmocka_unit_test(test_errors),     cmocka_unit_test(test_suggest),
	    cmocka_unit_test(test_tracepoint), cmocka_unit_test(test_sysfs_terms),
	    cmocka_unit_test(test_forced_icx),
	};

	/* libpfm4 reads this once, when pmc initialises it. */
	setenv("LIBPFM_FORCE_PMU", "icx", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
