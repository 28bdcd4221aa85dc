/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/pmc/test_counters.c - counting through the library: page faults of
 * this test touching known pages, enable/disable, scaling when an event is
 * enabled longer than it runs (a real kernel case here: a per-thread event
 * bound to one CPU while the thread alternates CPUs), the scaling rule
 * itself, the paranoid reader, and the one-line explanations of open errors.
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pmc/pmc.h"
#include "tests/lib/testutil.h"

static struct hwt_pmc_evlist *list_of(const char *spec)
{
	struct hwt_pmc_evlist *l;

	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	assert_true(hwt_pmc_evlist_add(l, spec) > 0);
	return l;
}

static void touch_pages(long n)
{
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)(n * psz), PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	madvise((void *)p, (size_t)(n * psz), MADV_NOHUGEPAGE);
	for (long i = 0; i < n; i++)
		p[i * psz] = 1;
	munmap((void *)p, (size_t)(n * psz));
}

static void test_count_self_page_faults(void **state)
{
	struct hwt_pmc_evlist *l = list_of("page-faults,task-clock");
	struct hwt_pmc_counters_config cfg;
	struct hwt_pmc_counters *c;
	struct hwt_pmc_count cnt[2], before[2];
	int self = 0; /* pid 0: the calling thread */

	(void)state;
	hwt_pmc_counters_config_init(&cfg);
	cfg.start_disabled = true;
	assert_int_equal(hwt_pmc_counters_open(&c, l, &self, 1, NULL, 0, &cfg), 0);
	assert_int_equal(hwt_pmc_counters_nr_fds(c), 2);
	assert_true(hwt_pmc_counters_fd(c, 0, 0, 0) >= 0);
	assert_int_equal(hwt_pmc_counters_fd(c, 2, 0, 0), -1);
	/* disabled: touching counts nothing, and it never ran */
	touch_pages(100);
	assert_int_equal(hwt_pmc_counters_read(c, before, 2), 0);
	assert_int_equal(before[0].value, 0);
	assert_true(before[0].flags & HWT_PMC_COUNT_NOT_COUNTED);
	assert_int_equal(hwt_pmc_counters_enable(c), 0);
	touch_pages(1000);
	assert_int_equal(hwt_pmc_counters_disable(c), 0);
	assert_int_equal(hwt_pmc_counters_read(c, cnt, 2), 0);
	assert_true(cnt[0].value >= 1000);
	/* plus a few of our own (many more under ASan: its shadow pages) */
	assert_true(cnt[0].value < 2 * 1000);
	assert_true(cnt[0].scaled == (double)cnt[0].value);
	assert_false(cnt[0].flags & (HWT_PMC_COUNT_SCALED | HWT_PMC_COUNT_NOT_COUNTED));
	assert_true(cnt[1].value > 0);
	assert_int_equal(cnt[1].enabled, cnt[1].running);
	/* disabled again: nothing more */
	touch_pages(500);
	assert_int_equal(hwt_pmc_counters_read(c, before, 2), 0);
	assert_int_equal(before[0].value, cnt[0].value);
	assert_int_equal(hwt_pmc_counters_read(c, before, 1), -HWT_EINVAL);
	hwt_pmc_counters_close(c);
	hwt_pmc_evlist_free(l);
}

static void burn_ms(long ms)
{
	struct timespec a, b;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

/* The kernel's time_enabled/time_running for real: task-clock opened on
 * this thread but only on CPU 0 is enabled whenever the thread runs and
 * running only while it runs on CPU 0. We run ~60 ms on each CPU, so it
 * runs about half of the time, and scaling estimates the whole. */
static void test_scaling_partial_running(void **state)
{
	struct hwt_pmc_evlist *l = list_of("task-clock");
	struct hwt_pmc_counters_config cfg;
	struct hwt_pmc_counters *c;
	struct hwt_pmc_count cnt, whole;
	struct hwt_pmc_counters *cw;
	cpu_set_t old;
	int self = 0, cpu0 = 0;
	double pct;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		hwt_test_skip("needs two CPUs to run on one while counting on the other");
	assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
	if (!CPU_ISSET(0, &old) || !CPU_ISSET(1, &old))
		hwt_test_skip("CPUs 0 and 1 are not both allowed");
	hwt_pmc_counters_config_init(&cfg);
	pin(1);
	assert_int_equal(hwt_pmc_counters_open(&c, l, &self, 1, &cpu0, 1, &cfg), 0);
	assert_int_equal(hwt_pmc_counters_open(&cw, l, &self, 1, NULL, 0, &cfg), 0);
	burn_ms(60);
	pin(0);
	burn_ms(60);
	pin(1);
	assert_int_equal(hwt_pmc_counters_read(c, &cnt, 1), 0);
	assert_int_equal(hwt_pmc_counters_read(cw, &whole, 1), 0);
	sched_setaffinity(0, sizeof(old), &old);
	pct = 100.0 * (double)cnt.running / (double)cnt.enabled;
	fprintf(stderr,
		"cpu0-only task-clock: value %llu ns, enabled %llu, running %llu (%.1f%%), "
		"scaled %.0f; unbound %llu\n",
		(unsigned long long)cnt.value, (unsigned long long)cnt.enabled,
		(unsigned long long)cnt.running, pct, cnt.scaled, (unsigned long long)whole.value);
	assert_true(cnt.flags & HWT_PMC_COUNT_SCALED);
	assert_true(pct > 25 && pct < 75);
	/* the estimate is value * enabled / running, and near the whole */
	assert_true(cnt.scaled > (double)cnt.value * 1.3);
	assert_true(cnt.scaled > 0.7 * (double)whole.value &&
		    cnt.scaled < 1.3 * (double)whole.value);
	hwt_pmc_counters_close(c);
	hwt_pmc_counters_close(cw);
	hwt_pmc_evlist_free(l);
}

static void test_scale_rule(void **state)
{
	struct hwt_pmc_count c, d, prev;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.value = 1000;
	c.enabled = 400;
	c.running = 100;
	hwt_pmc_count_scale(&c);
	assert_true(c.scaled == 4000.0);
	assert_true(c.flags & HWT_PMC_COUNT_SCALED);
	c.running = 400;
	hwt_pmc_count_scale(&c);
	assert_true(c.scaled == 1000.0);
	assert_false(c.flags & HWT_PMC_COUNT_SCALED);
	c.running = 0;
	hwt_pmc_count_scale(&c);
	assert_true(c.scaled == 0);
	assert_true(c.flags & HWT_PMC_COUNT_NOT_COUNTED);
	/* deltas for intervals */
	memset(&prev, 0, sizeof(prev));
	prev.value = 600;
	prev.enabled = 200;
	prev.running = 100;
	c.value = 1000;
	c.enabled = 400;
	c.running = 200;
	c.flags = HWT_PMC_COUNT_USER_ONLY;
	hwt_pmc_count_delta(&c, &prev, &d);
	assert_int_equal(d.value, 400);
	assert_true(d.scaled == 800.0);
	assert_true(d.flags & HWT_PMC_COUNT_USER_ONLY);
	assert_true(d.flags & HWT_PMC_COUNT_SCALED);
}

static void test_unsupported_and_gone(void **state)
{
	struct hwt_pmc_evlist *l = list_of("task-clock,instructions,page-faults");
	struct hwt_pmc_counters_config cfg;
	struct hwt_pmc_counters *c = NULL;
	struct hwt_pmc_count cnt[3];
	char msg[512];
	int self = 0, gone = 0x3ffffff0; /* above pid_max: no such thread */
	int err;

	(void)state;
	hwt_pmc_counters_config_init(&cfg);
	cfg.errmsg = msg;
	cfg.errmsg_len = sizeof(msg);
	err = hwt_pmc_counters_open(&c, l, &self, 1, NULL, 0, &cfg);
	if (err == 0) {
		hwt_pmc_counters_close(c);
		c = NULL;
	} else {
		/* no hardware counters (a VM): the explicit event fails */
		assert_int_equal(err, -HWT_ENOTSUP);
		assert_true(hwt_test_contains(msg, "event 'instructions' is not supported"));
		cfg.skip_unsupported = true;
		assert_int_equal(hwt_pmc_counters_open(&c, l, &self, 1, NULL, 0, &cfg), 0);
		assert_int_equal(hwt_pmc_counters_read(c, cnt, 3), 0);
		assert_true(cnt[1].flags & HWT_PMC_COUNT_NOT_SUPPORTED);
		assert_false(cnt[2].flags & HWT_PMC_COUNT_NOT_SUPPORTED);
		hwt_pmc_counters_close(c);
	}
	/* every thread gone */
	cfg.skip_unsupported = true;
	err = hwt_pmc_counters_open(&c, l, &gone, 1, NULL, 0, &cfg);
	assert_int_equal(err, -ESRCH);
	assert_true(hwt_test_contains(msg, "is gone"));
	/* one gone among live ones is skipped */
	{
		int two[2] = {gone, 0};

		assert_int_equal(hwt_pmc_counters_open(&c, l, two, 2, NULL, 0, &cfg), 0);
		assert_int_equal(hwt_pmc_counters_fd(c, 0, 0, 0), -1);
		assert_true(hwt_pmc_counters_fd(c, 0, 0, 1) >= 0);
		hwt_pmc_counters_close(c);
	}
	assert_int_equal(hwt_pmc_counters_open(&c, l, NULL, 0, NULL, 0, &cfg), -HWT_EINVAL);
	hwt_pmc_evlist_free(l);
}

static void test_paranoid_read(void **state)
{
	char *dir = hwt_test_tmpdir(), path[4096];
	int level = 99;

	(void)state;
	snprintf(path, sizeof(path), "%s/p", dir);
	hwt_test_write_file(path, "-1\n", 3);
	assert_int_equal(hwt_pmc_paranoid_read(path, &level), 0);
	assert_int_equal(level, -1);
	hwt_test_write_file(path, "junk\n", 5);
	assert_int_equal(hwt_pmc_paranoid_read(path, &level), -HWT_EFORMAT);
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(hwt_pmc_paranoid_read(path, &level), -ENOENT);
	assert_int_equal(hwt_pmc_paranoid_read(NULL, &level), 0);
	hwt_test_tmpdir_remove(dir);
}

static void test_explain(void **state)
{
	struct hwt_pmc_evlist *l = list_of("cycles,cycles:u");
	const struct hwt_pmc_event *k = hwt_pmc_evlist_event(l, 0);
	const struct hwt_pmc_event *u = hwt_pmc_evlist_event(l, 1);
	char buf[512];

	(void)state;
	/* what each case needs */
	assert_int_equal(hwt_pmc_paranoid_needed(&k->attr, -1, 0), 0);
	assert_int_equal(hwt_pmc_paranoid_needed(&k->attr, 123, -1), 1);
	assert_int_equal(hwt_pmc_paranoid_needed(&u->attr, 123, -1), 2);
	/* Debian's level 3 refuses even user-space counting */
	hwt_pmc_explain_open_error(buf, sizeof(buf), -EACCES, u, 123, -1, 3, 1);
	assert_string_equal(buf,
			    "cannot count 'cycles:u' for thread 123: counting needs "
			    "perf_event_paranoid <= 2 but it is 3; run as root (or with "
			    "CAP_PERFMON) or set it with 'sysctl -w kernel.perf_event_paranoid=2'");
	hwt_pmc_explain_open_error(buf, sizeof(buf), -EACCES, k, 123, -1, 2, 1);
	assert_string_equal(buf,
			    "cannot count 'cycles' for thread 123: counting kernel space "
			    "needs perf_event_paranoid <= 1 but it is 2; run as root (or with "
			    "CAP_PERFMON) or set it with 'sysctl -w kernel.perf_event_paranoid=1', "
			    "or count user space only with ':u'");
	hwt_pmc_explain_open_error(buf, sizeof(buf), -EPERM, k, -1, 3, 1, 1);
	assert_true(hwt_test_contains(buf, "system-wide on CPU 3: system-wide counting needs "
					   "perf_event_paranoid <= 0 but it is 1"));
	/* allowed by paranoid, still denied: ownership */
	hwt_pmc_explain_open_error(buf, sizeof(buf), -EACCES, u, 1, -1, 2, 1);
	assert_true(hwt_test_contains(buf, "belongs to another user"));
	hwt_pmc_explain_open_error(buf, sizeof(buf), -EACCES, u, 1, -1, INT_MIN, 1);
	assert_true(hwt_test_contains(buf, "belongs to another user"));
	hwt_pmc_explain_open_error(buf, sizeof(buf), -ENOENT, k, 1, -1, 2, 1);
	assert_true(hwt_test_contains(buf, "not supported on this CPU/VM"));
	hwt_pmc_explain_open_error(buf, sizeof(buf), -EMFILE, k, -1, 0, 2, 4096);
	assert_true(hwt_test_contains(buf, "needs 4096 file descriptors"));
	assert_true(hwt_test_contains(buf, "'ulimit -n 4160'"));
	hwt_pmc_explain_open_error(buf, sizeof(buf), -ESRCH, k, 77, -1, 2, 1);
	assert_string_equal(buf, "process 77 is gone (it exited or never existed); check the PID "
				 "with 'ps'");
	hwt_pmc_explain_open_error(buf, sizeof(buf), -EBUSY, k, 77, -1, 2, 1);
	assert_true(hwt_test_contains(buf, "busy"));
	hwt_pmc_explain_open_error(buf, sizeof(buf), -EINVAL, k, 77, -1, 2, 1);
	assert_true(hwt_test_contains(buf, "rejected"));
	hwt_pmc_evlist_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_count_self_page_faults),
	    cmocka_unit_test(test_scaling_partial_running),
	    cmocka_unit_test(test_scale_rule),
	    cmocka_unit_test(test_unsupported_and_gone),
	    cmocka_unit_test(test_paranoid_read),
	    cmocka_unit_test(test_explain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
