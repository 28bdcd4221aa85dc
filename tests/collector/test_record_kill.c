/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_record_kill.c - bounded loss: `hwtrace record -F 999
 * -g` of a long program (tests/progs/rec_phases.c: 64 phases of 100 ms of
 * CPU time, each in its own function, each logging when it ended) is
 * killed with SIGKILL at several moments (three recordings at once, killed
 * 2, 3.5 and 5 s after they started). In each file, every phase that ended
 * longer ago than the flush interval (1 s) before the kill must be there,
 * read by every command: info says the recording did not end cleanly and
 * the span it covers, report, script, flame, trace and convert show the
 * phase's function, each with the one warning every command gives for
 * such a file. And SIGTERM or SIGHUP to the recorder end the recording
 * cleanly (the file is closed, the command's samples are there). The same
 * SIGKILL for an Intel PT recording (the simulated intel_pt PMU): its AUX
 * data is flushed by time too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/lib/testutil.h"

#define NKILL	 3
#define FLUSH_NS 1000000000ull /* the writer's flush interval (format.h) */
#define NPHASES	 64

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Starts `hwtrace record ... -o out -- rec_phases > log` and returns its
 * PID (the recorder's: exec, no shell in between). */
static pid_t start_record_as(const char *out, const char *log, bool pt)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		if (pt) {
			/* Intel PT through the simulated PMU: the recorder's
			 * own AUX path, fed by the emulator as it runs. */
			setenv("HWT_PT_SIM", "1", 1);
			execl(hwt_test_hwtrace(), "hwtrace", "record", "-q", "--pt", "-o", out,
			      "--", hwt_test_prog("rec_phases"), (char *)NULL);
		} else {
			execl(hwt_test_hwtrace(), "hwtrace", "record", "-q", "-F", "999", "-g",
			      "-o", out, "--", hwt_test_prog("rec_phases"), (char *)NULL);
		}
		_exit(127);
	}
	return pid;
}

static pid_t start_record(const char *out, const char *log)
{
	return start_record_as(out, log, false);
}

/* The phase function's name: phase_00 .. phase_77 (two octal digits). */
static void phase_name(int k, char *buf, size_t len)
{
	snprintf(buf, len, "phase_%d%d", (k / 8) % 8, k % 8);
}

/* Phases of log that ended before cutoff (CLOCK_MONOTONIC ns): how many
 * (they are logged in order, so phases 0..n-1). */
static int phases_before(const char *log, uint64_t cutoff)
{
	char *text = hwt_test_read_file(log, NULL);
	int n = 0;

	if (!text)
		return 0; /* not created yet */
	for (const char *l = text; *l;) {
		int k;
		unsigned long long t;

		if (sscanf(l, "%d %llu", &k, &t) == 2 && t < cutoff && k == n)
			n++;
		l = strchr(l, '\n');
		if (!l)
			break;
		l++;
	}
	free(text);
	return n;
}

/* out holds every phase 0..n-1. */
static void expect_phases(const char *what, const char *out, int n)
{
	for (int k = 0; k < n; k++) {
		char name[32];

		phase_name(k, name, sizeof(name));
		if (!hwt_test_contains(out, name))
			fail_msg("%s: %s is missing (phases 0..%d ended before the kill "
				 "minus the flush interval)",
				 what, name, n - 1);
	}
}

/* stderr holds the one warning every command gives for a recording that
 * did not end cleanly (format/damage.c), whole on its line, maybe among
 * summary lines. */
static void expect_warning(const char *what, const char *err, const char *file)
{
	char head[512], *line;
	const char *p, *e;
	size_t len;
	bool ok;

	snprintf(head, sizeof(head),
		 "hwtrace: warning: %s did not end cleanly (its recorder was stopped before it "
		 "closed the file: killed, out of memory or a power cut)",
		 file);
	p = strstr(err, head);
	if (!p)
		fail_msg("%s: no warning that the recording did not end cleanly: %s", what, err);
	e = strchr(p, '\n');
	len = e ? (size_t)(e - p) : strlen(p);
	line = strndup(p, len);
	ok = len > strlen("; everything in it is read") &&
	     (!strcmp(line + len - strlen("; everything in it is read"),
		      "; everything in it is read") ||
	      !strcmp(line + len - strlen("; everything else in it is read"),
		      "; everything else in it is read"));
	if (!ok)
		fail_msg("%s: the warning ends in another way: %s", what, line);
	free(line);
}

static void check_file(const char *dir, int i, int n)
{
	struct hwt_test_run r;
	const char *h = hwt_test_hwtrace();
	char file[64], *folded;

	snprintf(file, sizeof(file), "k%d.hwt", i);
	hwt_test_run(&r, "cd %s && %s info %s", dir, h, file);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "ended      not cleanly: the recorder did not close "
					     "the file"));
	assert_true(hwt_test_contains(r.out, "\nspan       ") &&
		    hwt_test_contains(r.out, " s: the first and last records' times)"));
	expect_warning("info", r.err, file);
	hwt_test_run_free(&r);

	hwt_test_run(&r,
		     "cd %s && %s report -q -i %s --stdio --no-children -g none -s function "
		     "--percent-limit 0",
		     dir, h, file);
	assert_int_equal(r.status, 0);
	expect_phases("report", r.out, n);
	expect_warning("report", r.err, file);
	hwt_test_run_free(&r);

	hwt_test_run(&r, "cd %s && %s script -q -i %s", dir, h, file);
	assert_int_equal(r.status, 0);
	expect_phases("script", r.out, n);
	expect_warning("script", r.err, file);
	hwt_test_run_free(&r);

	hwt_test_run(&r, "cd %s && %s flame -q -i %s -o %s.folded", dir, h, file, file);
	assert_int_equal(r.status, 0);
	expect_warning("flame", r.err, file);
	hwt_test_run_free(&r);
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s.folded", dir, file);
		folded = hwt_test_read_file(path, NULL);
		assert_non_null(folded);
		expect_phases("flame", folded, n);
		free(folded);
	}

	hwt_test_run(&r, "cd %s && %s trace -i %s 'profile:hz:99 { @[func] = count() }'", dir, h,
		     file);
	assert_int_equal(r.status, 0);
	expect_phases("trace", r.out, n);
	expect_warning("trace", r.err, file);
	hwt_test_run_free(&r);

	/* convert: a killed recording converts whole (what it holds); the
	 * perf.data it writes holds the phases too. */
	hwt_test_run(&r, "cd %s && %s convert -q -i %s -o %s.data && %s script -q -i %s.data", dir,
		     h, file, file, h, file);
	if (r.status == 0) {
		expect_phases("convert", r.out, n);
		expect_warning("convert", r.err, file);
	} else {
		/* Killed while writing a chunk: convert fails on a copy that
		 * is not whole, in the same words. */
		assert_true(hwt_test_contains(r.err, "it ends inside a chunk at offset"));
	}
	hwt_test_run_free(&r);
}

static void test_sigkill(void **state)
{
	static const unsigned kill_ms[NKILL] = {2000, 3500, 5000};
	char *dir = hwt_test_tmpdir();
	char out[NKILL][4096], log[NKILL][4096];
	uint64_t t0, killed_at[NKILL];
	pid_t pid[NKILL];
	int total = 0;

	(void)state;
	for (int i = 0; i < NKILL; i++) {
		snprintf(out[i], sizeof(out[i]), "%s/k%d.hwt", dir, i);
		snprintf(log[i], sizeof(log[i]), "%s/k%d.log", dir, i);
	}
	t0 = now_ns();
	for (int i = 0; i < NKILL; i++)
		pid[i] = start_record(out[i], log[i]);
	for (int i = 0; i < NKILL; i++) {
		uint64_t at = t0 + (uint64_t)kill_ms[i] * 1000000ull, now = now_ns();
		int status;

		if (at > now) {
			struct timespec d = {(time_t)((at - now) / 1000000000ull),
					     (long)((at - now) % 1000000000ull)};

			nanosleep(&d, NULL);
		}
		killed_at[i] = now_ns();
		assert_int_equal(kill(pid[i], SIGKILL), 0);
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		/* Killed, not ended early (a recorder that failed to start
		 * would have exited). */
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	for (int i = 0; i < NKILL; i++) {
		int n = phases_before(log[i], killed_at[i] - FLUSH_NS);

		fprintf(stderr,
			"recording %d: killed after %u ms, %d phase(s) ended more than "
			"1 s before\n",
			i, kill_ms[i], n);
		assert_true(n < NPHASES); /* the program was still running */
		check_file(dir, i, n);
		total += n;
	}
	/* The test says something: some phases were old enough. */
	assert_true(total > 0);
	hwt_test_tmpdir_remove(dir);
}

/* The same for Intel PT (its AUX data): `record --pt` on the simulated
 * intel_pt PMU, killed once the program has run a few phases under the
 * emulator. Every phase that ended more than the flush interval before the
 * kill is decoded whole from the trace: report --calls counts one call of
 * its function, with the warning. */
static void test_sigkill_pt(void **state)
{
	char *dir = hwt_test_tmpdir();
	char out[4096], log[4096], calls[64];
	struct hwt_test_run r;
	uint64_t killed_at;
	int status, n;
	pid_t pid;

	(void)state;
	hwt_test_need_qemu();
	snprintf(out, sizeof(out), "%s/pt.hwt", dir);
	snprintf(log, sizeof(log), "%s/pt.log", dir);
	pid = start_record_as(out, log, true);
	/* until two phases ended more than a flush interval ago */
	for (int tries = 0;
	     tries < 600 && phases_before(log, now_ns() - FLUSH_NS - 200000000ull) < 2; tries++)
		usleep(100000);
	killed_at = now_ns();
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	n = phases_before(log, killed_at - FLUSH_NS);
	fprintf(stderr, "PT recording: %d phase(s) ended more than 1 s before the kill\n", n);
	assert_true(n >= 2 && n < NPHASES);
	hwt_test_run(&r, "cd %s && %s report --calls -i pt.hwt", dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	expect_warning("report --calls", r.err, "pt.hwt");
	for (int k = 0; k < n; k++) {
		char name[32];
		const char *p;

		phase_name(k, name, sizeof(name));
		/* "CALLS SELF-INSNS INCL-INSNS ... phase_KK": one call that
		 * returned (a call open across a gap has no inclusive count;
		 * the trace the kill cut off ends in a gap, after these) */
		snprintf(calls, sizeof(calls), "  %s\n", name);
		p = strstr(r.out, calls);
		if (!p)
			fail_msg("report --calls: %s is missing:\n%s", name, r.out);
		while (p > r.out && p[-1] != '\n')
			p--;
		{
			long long ncalls, self, incl;

			assert_int_equal(sscanf(p, "%lld %lld %lld", &ncalls, &self, &incl), 3);
			assert_int_equal(ncalls, 1);
			assert_true(self > 0 && incl >= self);
		}
	}
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* SIGTERM and SIGHUP to the recorder: the recording ends cleanly at once,
 * the command was stopped, and its samples are in a closed file. */
static void test_stop_signals(void **state)
{
	static const int sigs[] = {SIGTERM, SIGHUP};
	char *dir = hwt_test_tmpdir();

	(void)state;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(sigs); i++) {
		char out[4096], log[4096];
		struct hwt_fmt_reader *rd;
		struct hwt_test_run r;
		int status, n;
		pid_t pid;

		snprintf(out, sizeof(out), "%s/s%zu.hwt", dir, i);
		snprintf(log, sizeof(log), "%s/s%zu.log", dir, i);
		pid = start_record(out, log);
		/* Until the program has logged a phase: it runs. */
		for (int tries = 0; tries < 300 && phases_before(log, UINT64_MAX) < 1; tries++)
			usleep(100000);
		assert_int_equal(kill(pid, sigs[i]), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		n = phases_before(log, UINT64_MAX);
		assert_true(n >= 1 && n < NPHASES);
		assert_int_equal(hwt_fmt_reader_open(&rd, out, NULL, NULL), 0);
		assert_true(hwt_fmt_reader_info(rd)->closed);
		assert_true(hwt_fmt_reader_info(rd)->indexed);
		hwt_fmt_reader_close(rd);
		hwt_test_run(&r, "%s report -q -i %s --stdio --no-children -g none -s function",
			     hwt_test_hwtrace(), out);
		assert_int_equal(r.status, 0);
		assert_string_equal(r.err, "");
		expect_phases(i ? "report after SIGHUP" : "report after SIGTERM", r.out, 1);
		hwt_test_run_free(&r);
	}
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sigkill),
	    cmocka_unit_test(test_sigkill_pt),
	    cmocka_unit_test(test_stop_signals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
