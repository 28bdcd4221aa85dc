/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/cli/test_stat.c - `hwtrace stat` end to end on programs whose
 * counts are known: page faults of a program that touches N pages, context
 * switches of one that sleeps N times, task-clock against the CPU time the
 * program measures itself, inheritance to threads and children, attach and
 * system-wide, perf stat's layout and CSV fields, repeats and intervals, and
 * every error a user meets. Where perf is installed, the same workload runs
 * under both and the counts must agree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/testutil.h"

/* The value of event name in CSV output (-x,); fails the test if absent or
 * not a number. */
static double csv_value(const char *text, const char *name)
{
	char needle[256];
	const char *p = text;

	snprintf(needle, sizeof(needle), ",%s,", name);
	while ((p = strstr(p, needle))) {
		const char *line = p;
		char *end;
		double v;

		/* the unit field sits between value and name: back up two commas */
		while (line > text && line[-1] != '\n')
			line--;
		v = strtod(line, &end);
		if (end != line && *end == ',')
			return v;
		p++;
	}
	fprintf(stderr, "no CSV value for %s in:\n%s\n", name, text);
	fail();
	return 0;
}

static void test_page_faults_of_touched_pages(void **state)
{
	struct hwt_test_run r;
	double pf;

	(void)state;
	hwt_test_run_ok(&r, "%s stat -x, -e page-faults,minor-faults -- %s 2000",
			hwt_test_hwtrace(), hwt_test_prog("pmc_touch"));
	pf = csv_value(r.err, "page-faults");
	/* one fault per touched page, plus the loader's (about 50) */
	assert_true(pf >= 2000);
	assert_true(pf < 2000 + 400);
	assert_true(csv_value(r.err, "minor-faults") >= 2000);
	hwt_test_run_free(&r);
}

/* Whether this user may run a command under SCHED_FIFO (root or
 * CAP_SYS_NICE, and chrt installed). */
static bool fifo_works(void)
{
	static int works = -1;
	struct hwt_test_run r;

	if (works < 0) {
		hwt_test_run(&r, "chrt -f 1 true");
		works = r.status == 0;
		hwt_test_run_free(&r);
	}
	return works;
}

/*
 * The context switches STAT (hwtrace's or perf's stat command) counts for
 * pmc_sleeper N, checked against the scheduler's own count of the
 * program's main (getrusage(), which pmc_sleeper prints): exactly N
 * voluntary switches, one per sleep, and the counter covers all of main.
 * Under the default scheduler other load preempts the program at random,
 * in main and in its exec and exit, where getrusage() cannot see it (1-3
 * times in ld.so's start-up alone at a load of 8, 6 at most in 40 runs
 * beside report_samples: two runs of the same program differed by more
 * than 8 once in a CI run). Where SCHED_FIFO is allowed the whole stat
 * runs under it (chrt -f 1; the program inherits it): then only the few
 * tasks above FIFO 1 (stopper threads, threaded IRQs, watchdog daemons)
 * can preempt it, and exec and exit add no switch (none in 140 runs at
 * loads of 9-14); without it only the lower bound is exact.
 */
static void sleeper_switches(const char *stat, int n)
{
	struct hwt_test_run r;
	long vol, invol;
	double cs;

	hwt_test_run_ok(&r, "%s%s -x, -e context-switches -- %s %d 500",
			fifo_works() ? "chrt -f 1 " : "", stat, hwt_test_prog("pmc_sleeper"), n);
	cs = csv_value(r.err, "context-switches");
	assert_int_equal(sscanf(r.out, "%ld %ld", &vol, &invol), 2);
	fprintf(stderr, "%s: context-switches %.0f; main's own: %ld voluntary, %ld involuntary%s\n",
		stat, cs, vol, invol, fifo_works() ? " (SCHED_FIFO)" : "");
	assert_int_equal(vol, n);
	assert_true(cs >= (double)(vol + invol));
	if (fifo_works())
		assert_true(cs <= (double)(vol + invol + 2));
	hwt_test_run_free(&r);
}

static void test_context_switches_of_sleeper(void **state)
{
	char stat[4096];

	(void)state;
	snprintf(stat, sizeof(stat), "%s stat", hwt_test_hwtrace());
	sleeper_switches(stat, 30);
}

static void test_task_clock_matches_cpu_time(void **state)
{
	struct hwt_test_run r;
	double msec, self_ms;

	(void)state;
	/* The program burns 150 ms of CPU and prints what it used (stdout);
	 * stat's output goes to stderr. */
	hwt_test_run_ok(&r, "%s stat -x, -e task-clock -- %s 150", hwt_test_hwtrace(),
			hwt_test_prog("pmc_spin"));
	msec = csv_value(r.err, "task-clock");
	self_ms = atof(r.out) / 1e6;
	assert_true(self_ms >= 150);
	/* task-clock covers main and also exec and exit: a few ms more */
	fprintf(stderr, "task-clock %.2f ms, the program's own CPU time %.2f ms\n", msec, self_ms);
	assert_true(msec >= self_ms * 0.99);
	assert_true(msec <= self_ms * 1.10 + 10);
	hwt_test_run_free(&r);
}

static bool perf_works(void)
{
	struct hwt_test_run r;
	bool ok;

	hwt_test_run(&r, "perf stat -x, -e page-faults -- true");
	ok = r.status == 0 && hwt_test_contains(r.err, "page-faults");
	hwt_test_run_free(&r);
	return ok;
}

/* The acceptance check: same programs under perf stat and hwtrace stat. */
static void test_agrees_with_perf(void **state)
{
	struct hwt_test_run h, p;
	double hpf, ppf;
	char stat[4096];

	(void)state;
	if (!perf_works())
		hwt_test_skip("perf is not installed or cannot count page-faults here");
	/* page faults: deterministic up to the loader's few variable ones */
	hwt_test_run_ok(&h, "%s stat -x, -e page-faults -- %s 3000", hwt_test_hwtrace(),
			hwt_test_prog("pmc_touch"));
	hwt_test_run_ok(&p, "perf stat -x, -e page-faults -- %s 3000", hwt_test_prog("pmc_touch"));
	hpf = csv_value(h.err, "page-faults");
	ppf = csv_value(p.err, "page-faults");
	fprintf(stderr, "page-faults: hwtrace %.0f, perf %.0f\n", hpf, ppf);
	assert_true(fabs(hpf - ppf) <= 0.01 * ppf + 5);
	hwt_test_run_free(&h);
	hwt_test_run_free(&p);
	/* context switches: each against the program's own count */
	snprintf(stat, sizeof(stat), "%s stat", hwt_test_hwtrace());
	sleeper_switches(stat, 25);
	sleeper_switches("perf stat", 25);
	/* the same CSV shape, field for field (perf 6.1: 7 fields) */
	hwt_test_run_ok(&h, "%s stat -x, -e task-clock,page-faults -- true", hwt_test_hwtrace());
	hwt_test_run_ok(&p, "perf stat -x, -e task-clock,page-faults -- true");
	{
		int hf = 0, pf = 0;

		for (const char *c = h.err; *c; c++)
			hf += *c == ',';
		for (const char *c = p.err; *c; c++)
			pf += *c == ',';
		assert_int_equal(hf, pf);
	}
	hwt_test_run_free(&h);
	hwt_test_run_free(&p);
}

/* Tracepoints count exactly: one clock_nanosleep per sleep, one exec. */
static void test_tracepoints_exact(void **state)
{
	struct hwt_test_run r;

	(void)state;
	if (!hwt_test_have_tracefs())
		hwt_test_skip("no tracefs here (not mounted, and not root to mount it)");
	hwt_test_run_ok(&r,
			"%s stat -x, -e syscalls:sys_enter_clock_nanosleep,"
			"sched:sched_process_exec -- %s 7 100",
			hwt_test_hwtrace(), hwt_test_prog("pmc_sleeper"));
	assert_true(csv_value(r.err, "syscalls:sys_enter_clock_nanosleep") == 7);
	assert_true(csv_value(r.err, "sched:sched_process_exec") == 1);
	hwt_test_run_free(&r);
	if (!perf_works())
		return;
	hwt_test_run_ok(&r, "perf stat -x, -e syscalls:sys_enter_clock_nanosleep -- %s 7 100",
			hwt_test_prog("pmc_sleeper"));
	assert_true(csv_value(r.err, "syscalls:sys_enter_clock_nanosleep") == 7);
	hwt_test_run_free(&r);
}

static void test_inherit_threads_and_children(void **state)
{
	struct hwt_test_run r;
	double all, main_only;

	(void)state;
	/* 3 threads and 2 children touch 200 pages each */
	hwt_test_run_ok(&r, "%s stat -x, -e page-faults -- %s 3 2 200", hwt_test_hwtrace(),
			hwt_test_prog("pmc_family"));
	all = csv_value(r.err, "page-faults");
	hwt_test_run_free(&r);
	assert_true(all >= 5 * 200);
	hwt_test_run_ok(&r, "%s stat -x, -i -e page-faults -- %s 3 2 200", hwt_test_hwtrace(),
			hwt_test_prog("pmc_family"));
	main_only = csv_value(r.err, "page-faults");
	hwt_test_run_free(&r);
	assert_true(main_only < 200);
}

static void test_layout_is_perfs(void **state)
{
	struct hwt_test_run r;
	char head[512];
	const char *line;

	(void)state;
	hwt_test_run_ok(&r, "%s stat -e task-clock,page-faults,context-switches -- %s 2 100",
			hwt_test_hwtrace(), hwt_test_prog("pmc_sleeper"));
	snprintf(head, sizeof(head), "\n Performance counter stats for '%s 2 100':\n\n",
		 hwt_test_prog("pmc_sleeper"));
	assert_memory_equal(r.err, head, strlen(head));
	/* count right-aligned in 18 columns, unit in 4, name in 32, then '#' */
	line = r.err + strlen(head);
	assert_int_equal(line[18], ' ');
	assert_memory_equal(line + 19, "msec task-clock ", 16);
	assert_memory_equal(line + 56, " # ", 3);
	assert_true(hwt_test_contains(line, "CPUs utilized"));
	line = strchr(line, '\n') + 1;
	assert_memory_equal(line + 19, "     page-faults ", 17);
	assert_true(strstr(line, "/sec") != NULL);
	assert_true(hwt_test_contains(r.err, " seconds time elapsed\n\n"));
	assert_true(hwt_test_contains(r.err, " seconds user\n"));
	assert_true(hwt_test_contains(r.err, " seconds sys\n\n"));
	hwt_test_run_free(&r);
}

static void test_csv_fields(void **state)
{
	struct hwt_test_run r;
	char *save = NULL, *line;

	(void)state;
	hwt_test_run_ok(&r, "%s stat -x';' -e task-clock,page-faults -- true", hwt_test_hwtrace());
	for (line = strtok_r(r.err, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int n = 0;
		char *f[16], *s2 = NULL;

		for (char *tok = strtok_r(line, ";", &s2); tok && n < 16;
		     tok = strtok_r(NULL, ";", &s2))
			f[n++] = tok;
		/* value;unit;name;run;pct;metric;metric-unit (empty fields
		 * collapse under strtok: 6 or 7 tokens) */
		assert_true(n >= 6);
		if (!strcmp(f[2], "task-clock")) {
			assert_string_equal(f[1], "msec");
			assert_string_equal(f[4], "100.00");
			assert_string_equal(f[6], "CPUs utilized");
		} else {
			assert_string_equal(f[1], "page-faults");
			assert_string_equal(f[3], "100.00");
		}
	}
	hwt_test_run_free(&r);
}

static void test_repeat(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run_ok(&r, "%s stat -r 3 -e task-clock,page-faults -- %s 100", hwt_test_hwtrace(),
			hwt_test_prog("pmc_touch"));
	assert_true(hwt_test_contains(r.err, "100' (3 runs):\n"));
	assert_true(hwt_test_contains(r.err, " +- "));
	assert_true(hwt_test_contains(r.err, "seconds time elapsed"));
	assert_false(hwt_test_contains(r.err, "seconds user"));
	hwt_test_run_free(&r);
	/* CSV with -r adds the noise field after the name */
	hwt_test_run_ok(&r, "%s stat -r 2 -x, -e page-faults -- %s 100", hwt_test_hwtrace(),
			hwt_test_prog("pmc_touch"));
	assert_true(strstr(r.err, ",,page-faults,") != NULL);
	assert_true(strstr(r.err, "%,") != NULL);
	hwt_test_run_free(&r);
}

static void test_interval(void **state)
{
	struct hwt_test_run r;
	double last = 0;
	int lines = 0;
	char *save = NULL;
	struct timespec t0, t1;
	double whole_ms;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	hwt_test_run_ok(&r, "%s stat -I 50 -x, -e context-switches -- %s 12 10000",
			hwt_test_hwtrace(), hwt_test_prog("pmc_sleeper"));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	whole_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	for (char *l = strtok_r(r.err, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		double ts = atof(l);

		assert_true(strstr(l, ",context-switches,") != NULL);
		assert_true(ts > last);
		last = ts;
		lines++;
	}
	/* 120 ms of sleeping at 50 ms intervals: 2 full and 1 partial; a
	 * loaded machine oversleeps (7 lines in 520 ms at a load of 10), but
	 * there is no more than a line per 50 ms of the whole run, and the
	 * last one */
	fprintf(stderr, "%d lines in %.0f ms\n", lines, whole_ms);
	assert_true(lines >= 2);
	assert_true(lines <= (int)(whole_ms / 50) + 1);
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "%s stat -I 50 -e task-clock -- %s 6 10000", hwt_test_hwtrace(),
			hwt_test_prog("pmc_sleeper"));
	assert_memory_equal(r.err, "#           time             counts unit events\n", 47);
	hwt_test_run_free(&r);
}

static void test_exit_status(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "%s stat -e task-clock -- %s 1 7", hwt_test_hwtrace(),
		     hwt_test_prog("pmc_spin"));
	assert_int_equal(r.status, 7);
	assert_true(hwt_test_contains(r.err, "task-clock"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s stat -e task-clock -- sh -c 'kill -TERM $$'", hwt_test_hwtrace());
	assert_int_equal(r.status, 128 + 15);
	hwt_test_run_free(&r);
}

/* A shell function: `w N LIST PID` waits until the command LIST lists N
 * lines or more (pmc_family's threads, or the perf_event files hwtrace
 * holds: a counter per thread), or process PID is gone. */
static const char attach_wait[] =
    "w() { until [ \"$(eval \"$2\" | wc -l)\" -ge $1 ] || ! kill -0 $3; do sleep 0.01; done; }; ";

static void test_attach_pid(void **state)
{
	struct hwt_test_run r;
	char *dir;

	(void)state;
	/* 3 threads wait for the file go, then touch 200 pages each: the
	 * shell starts hwtrace once all 4 threads are there and creates go
	 * once hwtrace has a counter open on each (they count from their
	 * open). A fixed wait (hold 1 s, attach after 0.2 s) was too short
	 * for ASan's hwtrace beside other tests at a load of 10. */
	dir = hwt_test_tmpdir();
	hwt_test_run_ok(&r,
			"%s%s 3 0 200 go %s/go & P=$!; w 4 'ls /proc/$P/task' $P; "
			"%s stat -x, -e page-faults -p $P & H=$!; w 4 'ls -l /proc/$H/fd | grep "
			"perf_event' $H; "
			"touch %s/go; wait $H",
			attach_wait, hwt_test_prog("pmc_family"), dir, hwt_test_hwtrace(), dir);
	assert_true(csv_value(r.err, "page-faults") >= 600);
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
	/* hwtrace (under ASan, on a loaded machine) must attach before the
	 * process exits: it ends once hwtrace has. */
	hwt_test_run_ok(&r,
			"%ssleep 60 & S=$!; %s stat -e task-clock -p $S & H=$!; "
			"w 1 'ls -l /proc/$H/fd | grep perf_event' $H; kill $S; wait $H",
			attach_wait, hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.err, " Performance counter stats for process id '"));
	assert_false(hwt_test_contains(r.err, "seconds user"));
	hwt_test_run_free(&r);
}

static void test_sigint_ends_attach(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r,
		     "sleep 5 & S=$!; %s stat -x, -e task-clock -p $S & H=$!; sleep 0.5; "
		     "kill -INT $H; wait $H; echo rc=$?; kill $S",
		     hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.out, "rc=0"));
	assert_true(hwt_test_contains(r.err, ",task-clock,"));
	hwt_test_run_free(&r);
}

static void test_system_wide(void **state)
{
	struct hwt_test_run r;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double ms, secs, whole;
	struct timespec t0, t1;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	hwt_test_run_ok(&r, "%s stat -a -e cpu-clock -- sleep 0.5", hwt_test_hwtrace());
	clock_gettime(CLOCK_MONOTONIC, &t1);
	whole = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* counts of 1,000 ms and more have perf's thousands separators */
	for (char *c = r.err; (c = strchr(c, ',')) != NULL;)
		memmove(c, c + 1, strlen(c));
	assert_int_equal(sscanf(r.err,
				" Performance counter stats for 'system wide': %lf msec "
				"cpu-clock # %*f CPUs utilized %lf seconds time elapsed",
				&ms, &secs),
			 2);
	/* Every CPU's clock runs (idle included) while the command runs,
	 * however long a loaded machine makes the 500 ms. The counters are
	 * enabled before the elapsed time starts and read after it ends (as
	 * perf's): each CPU counts at least the time elapsed, and at most
	 * the time the whole hwtrace process took (its start and end
	 * included, which only a loaded machine makes long). A CPU not
	 * counted is below that range, one counted twice above it, unless
	 * the machine stretched hwtrace's own work to half the 500 ms. (The
	 * elapsed time once ended after the read: under a load of 12 the
	 * wait for a CPU in between left a count below 0.9 of the time.) */
	assert_true(secs >= 0.5);
	if (ms < 0.98 * 1000 * secs * (double)ncpu || ms > 1.02 * 1000 * whole * (double)ncpu)
		fail_msg("cpu-clock %.2f ms on %ld CPUs in %.3f s (hwtrace %.3f s):\n%s", ms, ncpu,
			 secs, whole, r.err);
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "%s stat -a -e cpu-clock -- true", hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.err, "stats for 'system wide':"));
	hwt_test_run_free(&r);
}

static void test_multiplexing_hardware(void **state)
{
	struct hwt_test_run r;
	char events[1024] = "";

	(void)state;
	if (!hwt_test_have_hw_event(PERF_COUNT_HW_INSTRUCTIONS))
		hwt_test_skip("no hardware counters here (the kernel opens no instructions "
			      "counter): the kernel only multiplexes hardware PMUs; "
			      "pmc_counters tests scaling with partial running time instead");
	/* 16 hardware events: more than any PMU schedules at once. */
	for (int i = 0; i < 16; i++)
		strcat(events, i ? ",instructions" : "instructions");
	hwt_test_run_ok(&r, "%s stat -e %s -- %s 100", hwt_test_hwtrace(), events,
			hwt_test_prog("pmc_spin"));
	assert_true(strstr(r.err, "%)\n") != NULL); /* "(NN.NN%)" after some line */
	hwt_test_run_free(&r);
}

/* ---- errors: one line naming cause and fix, non-zero exit ---- */

static void test_error_unknown_event(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "%s stat -e cylces -- true", hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "hwtrace: error: unknown event 'cylces'; did you mean: cycles? "
				   "('hwtrace list' shows all)\n");
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s stat -e 'page-fault' -- true", hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "did you mean: page-faults"));
	hwt_test_run_free(&r);
}

static void test_error_not_supported(void **state)
{
	struct hwt_test_run r;

	(void)state;
	if (hwt_test_have_hw_event(PERF_COUNT_HW_CPU_CYCLES))
		hwt_test_skip("this machine has hardware counters: cycles is supported");
	/* As perf stat: <not supported>, the reason on stderr, exit 0. */
	hwt_test_run(&r, "%s stat -e cycles -- true", hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "hwtrace: warning: cycles: <not supported>: event "
					     "'cycles' is not supported on this CPU/VM"));
	assert_true(hwt_test_contains(r.err, "   <not supported>      cycles "));
	hwt_test_run_free(&r);
}

static void test_error_command_not_found(void **state)
{
	struct hwt_test_run r;
	char *dir = hwt_test_tmpdir(), path[4096];

	(void)state;
	hwt_test_run(&r, "%s stat -e task-clock -- no-such-command-hwt", hwt_test_hwtrace());
	assert_int_equal(r.status, 127);
	assert_string_equal(r.err, "hwtrace: error: command 'no-such-command-hwt' not found; "
				   "check its name, or PATH\n");
	hwt_test_run_free(&r);
	/* not executable: 126, like a shell */
	snprintf(path, sizeof(path), "%s/script", dir);
	hwt_test_write_file(path, "#!/bin/sh\n", 10);
	chmod(path, 0644);
	hwt_test_run(&r, "%s stat -e task-clock -- %s", hwt_test_hwtrace(), path);
	if (geteuid() != 0 || access(path, X_OK) != 0) {
		assert_int_equal(r.status, 126);
		assert_true(hwt_test_contains(r.err, "is not an executable file"));
	}
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

static void test_error_pid_gone(void **state)
{
	struct hwt_test_run r;

	(void)state;
	/* $! of a finished, reaped job names no process any more */
	hwt_test_run(&r, "true & P=$!; wait $P; %s stat -e task-clock -p $P", hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "hwtrace: error: no process with PID "));
	assert_true(hwt_test_contains(r.err, " (it exited or never existed); check the PID with "
					     "'ps'\n"));
	hwt_test_run_free(&r);
}

static void test_error_output_not_writable(void **state)
{
	struct hwt_test_run r;
	char *dir = hwt_test_tmpdir(), marker[4096];

	(void)state;
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	hwt_test_run(&r, "%s stat -o %s/no/such/dir/out -e task-clock -- touch %s",
		     hwt_test_hwtrace(), dir, marker);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "hwtrace: error: cannot write '"));
	assert_true(hwt_test_contains(r.err, "No such file or directory; choose a writable path "
					     "with -o\n"));
	/* it failed before running anything */
	assert_int_equal(access(marker, F_OK), -1);
	hwt_test_run_free(&r);
	/* and -o to a good file works */
	hwt_test_run(&r, "%s stat -o %s/out -x, -e page-faults -- true && cat %s/out",
		     hwt_test_hwtrace(), dir, dir);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, ",page-faults,"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

static void test_error_too_many_files(void **state)
{
	struct hwt_test_run r;
	char events[2048] = "";

	(void)state;
	for (int i = 0; i < 40; i++)
		strcat(events, i ? ",cpu-clock" : "cpu-clock");
	hwt_test_run(&r, "ulimit -n 24 && %s stat -a -e %s -- true", hwt_test_hwtrace(), events);
	assert_int_equal(r.status, 1);
	assert_true(
	    hwt_test_contains(r.err, "hwtrace: error: too many open files: counting needs "));
	assert_true(hwt_test_contains(r.err, "; raise it with 'ulimit -n "));
	hwt_test_run_free(&r);
}

static void test_usage_errors(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "%s stat -e task-clock", hwt_test_hwtrace());
	assert_int_equal(r.status, 2);
	assert_true(hwt_test_contains(r.err, "nothing to count"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s stat -r 0 -- true", hwt_test_hwtrace());
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s stat -a -p 1", hwt_test_hwtrace());
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s stat -e '{task-clock' -- true", hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "missing '}'"));
	hwt_test_run_free(&r);
}

/* ---- perf_event_paranoid, as an unprivileged user ---- */

static int real_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -100;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -100;
		fclose(f);
	}
	return v;
}

/* Skips unless we can run hwtrace as nobody (root, setpriv, a path nobody
 * can reach). */
static void need_unprivileged(void)
{
	struct hwt_test_run r;

	if (geteuid() != 0)
		hwt_test_skip("needs root to switch to an unprivileged user");
	hwt_test_run(&r, "setpriv --reuid=65534 --regid=65534 --clear-groups %s --version",
		     hwt_test_hwtrace());
	if (r.status != 0) {
		hwt_test_run_free(&r);
		hwt_test_skip("cannot run hwtrace as nobody (setpriv missing or the build "
			      "directory is not readable by others)");
	}
	hwt_test_run_free(&r);
}

static void test_paranoid_system_wide(void **state)
{
	struct hwt_test_run r;
	char *dir, fake[4096];
	int level = real_paranoid();

	(void)state;
	need_unprivileged();
	if (level <= 0)
		hwt_test_skip("perf_event_paranoid is %d: unprivileged -a is allowed here", level);
	hwt_test_run(&r,
		     "cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "
		     "%s stat -a -e cpu-clock -- true",
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	{
		char want[512];

		snprintf(want, sizeof(want),
			 "hwtrace: error: cannot count 'cpu-clock' system-wide on CPU 0: "
			 "system-wide counting needs perf_event_paranoid <= 0 but it is %d; run as "
			 "root (or with CAP_PERFMON) or set it with 'sysctl -w "
			 "kernel.perf_event_paranoid=0'\n",
			 level);
		assert_string_equal(r.err, want);
	}
	hwt_test_run_free(&r);
	/* The message quotes the file the seam points at (Debian's 3). */
	dir = hwt_test_tmpdir();
	chmod(dir, 0755);
	snprintf(fake, sizeof(fake), "%s/paranoid", dir);
	hwt_test_write_file(fake, "3\n", 2);
	chmod(fake, 0644);
	hwt_test_run(&r,
		     "cd / && HWT_PERF_PARANOID_FILE=%s setpriv --reuid=65534 --regid=65534 "
		     "--clear-groups %s stat -a -e cpu-clock -- true",
		     fake, hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "needs perf_event_paranoid <= 0 but it is 3;"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

static void test_paranoid_user_only_fallback(void **state)
{
	struct hwt_test_run r;

	(void)state;
	need_unprivileged();
	if (real_paranoid() < 2)
		hwt_test_skip("perf_event_paranoid < 2: kernel counting is allowed here");
	if (real_paranoid() > 2)
		hwt_test_skip("perf_event_paranoid > 2: nothing is allowed unprivileged");
	/* Kernel space is refused at level 2: count user space only and say
	 * so with perf's ':u' suffix. */
	hwt_test_run(&r,
		     "cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "
		     "%s stat -x, -e task-clock,page-faults -- %s 300",
		     hwt_test_hwtrace(), hwt_test_prog("pmc_touch"));
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, ",task-clock:u,"));
	assert_true(csv_value(r.err, "page-faults:u") >= 300);
	hwt_test_run_free(&r);
	/* An explicit ':k' is not silently changed: it fails with the fix. */
	hwt_test_run(&r,
		     "cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "
		     "%s stat -e task-clock:k -- true",
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "counting kernel space needs perf_event_paranoid <= 1 "
					     "but it is 2"));
	hwt_test_run_free(&r);
	/* Another user's process: permission, not paranoid. */
	hwt_test_run(&r,
		     "cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "
		     "%s stat -e task-clock:u -p 1",
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "belongs to another user"));
	hwt_test_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_page_faults_of_touched_pages),
	    cmocka_unit_test(test_context_switches_of_sleeper),
	    cmocka_unit_test(test_task_clock_matches_cpu_time),
	    cmocka_unit_test(test_agrees_with_perf),
	    cmocka_unit_test(test_tracepoints_exact),
	    cmocka_unit_test(test_inherit_threads_and_children),
	    cmocka_unit_test(test_layout_is_perfs),
	    cmocka_unit_test(test_csv_fields),
	    cmocka_unit_test(test_repeat),
	    cmocka_unit_test(test_interval),
	    cmocka_unit_test(test_exit_status),
	    cmocka_unit_test(test_attach_pid),
	    cmocka_unit_test(test_sigint_ends_attach),
	    cmocka_unit_test(test_system_wide),
	    cmocka_unit_test(test_multiplexing_hardware),
	    cmocka_unit_test(test_error_unknown_event),
	    cmocka_unit_test(test_error_not_supported),
	    cmocka_unit_test(test_error_command_not_found),
	    cmocka_unit_test(test_error_pid_gone),
	    cmocka_unit_test(test_error_output_not_writable),
	    cmocka_unit_test(test_error_too_many_files),
	    cmocka_unit_test(test_usage_errors),
	    cmocka_unit_test(test_paranoid_system_wide),
	    cmocka_unit_test(test_paranoid_user_only_fallback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
