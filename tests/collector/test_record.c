/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_record.c - `hwtrace record` and `hwtrace script` on
 * programs whose behaviour is known (tests/progs/rec_*.c):
 *
 *  - rec_hot spends 75% of its CPU time in hot_a (main -> path_a -> hot_a)
 *    and 25% in hot_b (main -> path_b -> middle_b -> hot_b): `record -F 999
 *    -g` then `script` must give about 999 samples per CPU second, split
 *    75/25 within 6 points, with those exact call chains;
 *  - the file: metadata (event, build-ids equal to readelf's, vDSO image,
 *    times), one stream per CPU, nothing lost, read back by the session;
 *  - perf.data recorded by perf itself: our script names the same function
 *    for every sample as `perf script`;
 *  - threads and a forked child: each one's function, thread names, and
 *    the child's samples symbolized through the mappings it inherited;
 *  - attach (-p) to a running process (synthesized mappings), system-wide
 *    (-a), per-thread buffers, -c periods, context switches;
 *  - SIGTERM and SIGINT stop cleanly with the file written; an old output
 *    becomes .old; a tiny buffer loses records and says so everywhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ctype.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/collector/script_parse.h"
#include "tests/lib/testutil.h"

static char *dir;

static int setup(void **state)
{
	(void)state;
	dir = hwt_test_tmpdir();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(dir);
	return 0;
}

static const char *path_in(const char *name)
{
	static char p[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

/* Runs `hwtrace script -q -i file ARGS` and parses its samples. */
static size_t script(const char *file, const char *args, struct sp_sample **out)
{
	struct hwt_test_run r;
	size_t n;

	hwt_test_run(&r, "%s script -q -i %s %s", hwt_test_hwtrace(), file, args ? args : "");
	if (r.status != 0)
		fail_msg("script failed (%d): %s", r.status, r.err);
	n = sp_parse(r.out, out);
	hwt_test_run_free(&r);
	return n;
}

static size_t count_sym(const struct sp_sample *s, size_t n, const char *sym)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += !strcmp(s[i].sym, sym);
	return k;
}

static void test_hotspots(void **state)
{
	const char *file = path_in("hot.hwt"), *prog = hwt_test_prog("rec_hot");
	static const char *const chain_a[] = {"hot_a", "path_a", "main"};
	static const char *const chain_b[] = {"hot_b", "middle_b", "path_b", "main"};
	struct hwt_test_run r;
	struct sp_sample *s;
	size_t n, a, b, mine = 0, good_a = 0, good_b = 0;
	char real[PATH_MAX];
	double share;

	(void)state;
	hwt_test_run(&r, "%s record -F 999 -g -o %s -- %s 1.0", hwt_test_hwtrace(), file, prog);
	assert_int_equal(r.status, 0);
	/* The summary line: samples, nothing lost, the file. */
	assert_true(hwt_test_contains(r.err, " samples of "));
	assert_true(hwt_test_contains(r.err, ", 0 lost; "));
	assert_true(hwt_test_contains(r.err, file));
	hwt_test_run_free(&r);

	n = script(file, NULL, &s);
	assert_non_null(realpath(prog, real));
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s[i].comm, "rec_hot"))
			continue;
		mine++;
		assert_string_equal(s[i].event, "cpu-clock");
		assert_int_equal(s[i].period, 1001001); /* 1e9 / 999, in ns */
		if (i)
			assert_true(s[i].time >= s[i - 1].time); /* time order */
		if (!strcmp(s[i].sym, "hot_a")) {
			assert_string_equal(s[i].obj, real);
			good_a += sp_chain_is(&s[i], chain_a, 3);
		} else if (!strcmp(s[i].sym, "hot_b")) {
			good_b += sp_chain_is(&s[i], chain_b, 4);
		}
	}
	a = count_sym(s, n, "hot_a");
	b = count_sym(s, n, "hot_b");
	print_message("rec_hot: %zu samples, hot_a %zu, hot_b %zu, right chains %zu/%zu\n", mine, a,
		      b, good_a, good_b);
	/* 1.0 s of CPU at 999 Hz (cpu-clock counts the task's CPU time). */
	assert_true(mine >= 850 && mine <= 1100);
	/* Nearly all of it in the two hot functions, 75/25 within 6 points. */
	assert_true(a + b >= mine * 95 / 100);
	share = (double)a / (double)(a + b);
	assert_true(share >= 0.69 && share <= 0.81);
	/* The right callers: every sample after the prologue has the full
	 * chain (a sample on a function's first instruction, before its
	 * frame exists, can skip one caller). */
	assert_true(good_a >= a * 97 / 100);
	assert_true(good_b >= b * 97 / 100);
	free(s);
}

/* Build-id as readelf prints it, as metadata bytes. */
static int readelf_id(const char *path, uint8_t *id)
{
	struct hwt_test_run r;
	const char *p;
	int n = 0;

	hwt_test_run(&r, "readelf -n '%s'", path);
	p = strstr(r.out, "Build ID: ");
	if (p)
		for (p += 10;
		     n < 64 && isxdigit((unsigned char)p[0]) && sscanf(p, "%2hhx", &id[n]) == 1;
		     p += 2)
			n++;
	hwt_test_run_free(&r);
	return n;
}

static void test_file_contents(void **state)
{
	const char *file = path_in("hot.hwt"), *prog = hwt_test_prog("rec_hot");
	struct hwt_fmt_session *sess;
	const struct hwt_fmt_meta *m;
	const struct hwt_fmt_reader *rd;
	struct hwt_fmt_session_stats st;
	struct hwt_fmt_record rec;
	char key[PATH_MAX + 16], real[PATH_MAX];
	uint8_t id[64];
	uint64_t samples = 0;
	int idn, err;

	(void)state;
	/* (recorded by test_hotspots) */
	assert_int_equal(hwt_fmt_session_open(&sess, file, NULL, NULL), 0);
	assert_int_equal(hwt_fmt_session_kind(sess), HWT_FMT_KIND_HWT);
	rd = hwt_fmt_session_reader(sess);
	assert_true(hwt_fmt_reader_info(rd)->indexed);
	/* One RECORDS stream per online CPU. */
	assert_int_equal(hwt_fmt_reader_nstreams(rd), (size_t)sysconf(_SC_NPROCESSORS_ONLN));
	assert_int_equal(hwt_fmt_reader_nlost(rd), 0);
	/* Metadata */
	m = hwt_fmt_session_meta_find(sess, "event.0.name");
	assert_non_null(m);
	assert_true(!strcmp(m->v.str, "cpu-clock") || !strcmp(m->v.str, "cycles"));
	m = hwt_fmt_session_meta_find(sess, HWT_META_TARGET);
	assert_non_null(m);
	assert_true(hwt_test_contains(m->v.str, "rec_hot 1.0"));
	assert_non_null(hwt_fmt_session_meta_find(sess, HWT_META_KERNEL));
	assert_non_null(hwt_fmt_session_meta_find(sess, HWT_META_CPU_VENDOR));
	m = hwt_fmt_session_meta_find(sess, HWT_META_VDSO_IMAGE);
	assert_non_null(m);
	assert_true(m->len >= 4096 && !memcmp(m->v.bytes, "\177ELF", 4));
	assert_non_null(realpath(prog, real));
	snprintf(key, sizeof(key), "buildid.%s", real);
	m = hwt_fmt_session_meta_find(sess, key);
	assert_non_null(m);
	idn = readelf_id(prog, id);
	assert_int_equal(m->len, idn);
	assert_memory_equal(m->v.bytes, id, (size_t)idn);
	m = hwt_fmt_session_meta_find(sess, HWT_META_TIME_START);
	assert_non_null(m);
	assert_true(hwt_fmt_session_meta_find(sess, HWT_META_TIME_END)->v.u64 > m->v.u64);
	/* Every record parses; the event is known for each sample. */
	while ((err = hwt_fmt_session_next(sess, &rec, NULL)) == 0) {
		if (rec.type == PERF_RECORD_SAMPLE) {
			samples++;
			assert_int_equal(rec.event, 0);
		}
	}
	assert_int_equal(err, -HWT_EEOS);
	hwt_fmt_session_stats(sess, &st);
	assert_int_equal(st.bad_records, 0);
	assert_int_equal(st.lost_records, 0);
	assert_int_equal(hwt_fmt_session_meta_find(sess, "record.samples")->v.u64, samples);
	hwt_fmt_session_close(sess);
	/* hwtrace info reads it too. */
	{
		struct hwt_test_run r;

		hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
		assert_int_equal(r.status, 0);
		assert_true(hwt_test_contains(r.out, "lost       nothing"));
		assert_true(hwt_test_contains(r.out, "cpu0"));
		hwt_test_run_free(&r);
	}
}

/* perf's own recording: we name the same function for every sample. */
static void test_perf_data(void **state)
{
	const char *file = path_in("perf.data");
	struct hwt_test_run r;
	struct sp_sample *s;
	size_t n, k = 0, same = 0;
	const char *line;

	(void)state;
	hwt_test_run(&r, "perf record -q -g -F 999 -o %s -- %s 0.3", file,
		     hwt_test_prog("rec_hot"));
	if (r.status != 0) {
		hwt_test_run_free(&r);
		hwt_test_skip("perf record does not work here");
	}
	hwt_test_run_free(&r);
	n = script(file, NULL, &s);
	hwt_test_run(&r, "perf script -i %s -G -F ip,sym 2>/dev/null", file);
	assert_int_equal(r.status, 0);
	for (line = r.out; line && *line && k < n; k++) {
		unsigned long long ip;
		char sym[128] = "[unknown]";

		if (sscanf(line, " %llx %127s", &ip, sym) >= 1)
			same += !strcmp(sym, s[k].sym) ||
				(!strcmp(sym, "[unknown]") && !strcmp(s[k].sym, "[unknown]"));
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	print_message("perf.data: %zu samples, %zu named alike\n", n, same);
	assert_int_equal(k, n);
	assert_true(n >= 200);
	assert_true(same >= n * 99 / 100);
	assert_true(count_sym(s, n, "hot_a") > count_sym(s, n, "hot_b"));
	hwt_test_run_free(&r);
	free(s);
}

static void test_threads_and_fork(void **state)
{
	const char *file = path_in("family.hwt");
	struct hwt_test_run r;
	struct sp_sample *s;
	size_t n, ta = 0, tb = 0, ch = 0, child_chain = 0, comm_b = 0;
	unsigned main_pid = 0;

	(void)state;
	hwt_test_run(&r, "%s record -q -F 999 -g -o %s -- %s 0.3", hwt_test_hwtrace(), file,
		     hwt_test_prog("rec_family"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	n = script(file, NULL, &s);
	for (size_t i = 0; i < n; i++) {
		comm_b += !strcmp(s[i].comm, "worker-b");
		if (!strcmp(s[i].sym, "spin_thread_a")) {
			ta++;
			assert_string_equal(s[i].comm, "worker-a");
			main_pid = s[i].pid;
			assert_true(s[i].tid != s[i].pid);
		} else if (!strcmp(s[i].sym, "spin_thread_b")) {
			tb++;
			assert_string_equal(s[i].comm, "worker-b");
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(s[i].sym, "spin_child")) {
			static const char *const chain[] = {"spin_child", "main"};

			ch++;
			/* the forked child: its own pid, the parent's code */
			assert_true(s[i].pid != main_pid);
			assert_string_equal(s[i].comm, "rec_family");
			child_chain += sp_chain_is(&s[i], chain, 2);
		}
	}
	print_message("family: worker-a %zu, worker-b %zu, child %zu\n", ta, tb, ch);
	/* 0.3 s of CPU each at 999 Hz */
	assert_true(ta >= 240 && ta <= 340);
	assert_true(tb >= 240 && tb <= 340);
	assert_true(ch >= 240 && ch <= 340);
	assert_true(child_chain >= ch * 97 / 100);
	free(s);
	/* --pid / --comm filter the output */
	n = script(file, "--comm worker-b", &s);
	assert_int_equal(n, comm_b);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(s[i].comm, "worker-b");
	free(s);
}

static void test_per_thread_and_period(void **state)
{
	const char *file = path_in("pt.hwt");
	struct hwt_test_run r;
	struct sp_sample *s;
	size_t n, mine = 0;

	(void)state;
	/* -c: cpu-clock counts nanoseconds: a sample every 2 ms. */
	hwt_test_run(&r, "%s record -q --per-thread -e cpu-clock -c 2000000 -o %s -- %s 0.5",
		     hwt_test_hwtrace(), file, hwt_test_prog("rec_hot"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "per-thread"));
	assert_true(hwt_test_contains(r.out, "  tid"));
	hwt_test_run_free(&r);
	n = script(file, NULL, &s);
	for (size_t i = 0; i < n; i++) {
		mine += !strcmp(s[i].comm, "rec_hot");
		assert_int_equal(s[i].period, 2000000);
		assert_int_equal(s[i].nframes, 0); /* no -g: no chains */
	}
	/* 0.5 s / 2 ms */
	assert_true(mine >= 200 && mine <= 275);
	free(s);
}

static void test_attach(void **state)
{
	const char *file = path_in("attach.hwt");
	struct hwt_test_run r;
	struct sp_sample *s;
	size_t n;

	(void)state;
	/* The program has run (exec, mmaps) before we attach: its mappings
	 * come from /proc, as synthesized records. */
	hwt_test_run(&r,
		     "%s 1.2 & p=$!; sleep 0.3; %s record -q -F 499 -g -p $p -o %s; "
		     "echo status=$?",
		     hwt_test_prog("rec_hot"), hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "status=0"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "synthesized"));
	hwt_test_run_free(&r);
	n = script(file, NULL, &s);
	print_message("attach: %zu samples, hot_a %zu\n", n, count_sym(s, n, "hot_a"));
	assert_true(n >= 150);
	assert_true(count_sym(s, n, "hot_a") + count_sym(s, n, "hot_b") >= n * 9 / 10);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(s[i].comm, "rec_hot");
	free(s);
}

static void test_system_wide(void **state)
{
	const char *file = path_in("system.hwt");
	struct hwt_test_run r;
	struct sp_sample *s;
	size_t n;

	(void)state;
	hwt_test_run(&r, "%s record -q -a -F 199 -g -o %s -- %s 0.4", hwt_test_hwtrace(), file,
		     hwt_test_prog("rec_hot"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	n = script(file, NULL, &s);
	print_message("system-wide: %zu samples, hot_a %zu\n", n, count_sym(s, n, "hot_a"));
	/* rec_hot's 0.4 s at 199 Hz, and whatever else ran */
	assert_true(count_sym(s, n, "hot_a") >= 40);
	free(s);
}

/* Shell: waits until process $1 has used $2 more clock ticks (1/100 s) of
 * CPU time than when called, or has ended, or 60 s have passed. A window
 * of wall time gives a recording however much CPU the machine's load and
 * the sanitizers left it (at load 20, under ASan, 0.6 s gave fewer than
 * 20 samples); one of the recorded program's CPU time gives it its
 * samples (499 Hz: a tick of CPU is about 5 of them). */
#define WAIT_CPU                                                                                   \
	"waitcpu() { s=$(awk '{print $14+$15}' /proc/$1/stat) || return; i=0; "                    \
	"while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); "                                         \
	"n=$(awk '{print $14+$15}' /proc/$1/stat 2>/dev/null) || return; "                         \
	"[ $((n - s)) -ge $2 ] && return; done; }; "

static void test_signals(void **state)
{
	const char *file = path_in("term.hwt");
	struct hwt_test_run r;
	struct sp_sample *s;
	size_t n;

	(void)state;
	/* SIGTERM to hwtrace: forwarded to the command, which dies of it; the
	 * file is complete and the exit status is the command's. The command
	 * is recorded from its exec: 0.3 s of its CPU time is about 150
	 * samples. */
	hwt_test_run(&r,
		     WAIT_CPU "%s record -F 499 -o %s -- %s 100 & p=$!; "
			      "i=0; until c=$(pgrep -P $p) || [ $i -ge 600 ]; do sleep 0.05; "
			      "i=$((i+1)); done; waitcpu $c 30; "
			      "kill -TERM $p; wait $p; echo status=$?",
		     hwt_test_hwtrace(), file, hwt_test_prog("rec_hot"));
	assert_true(hwt_test_contains(r.out, "status=143"));
	assert_true(hwt_test_contains(r.err, " samples of "));
	hwt_test_run_free(&r);
	n = script(file, NULL, &s);
	assert_true(n >= 20);
	assert_true(count_sym(s, n, "hot_a") > 0);
	free(s);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "index      present"));
	hwt_test_run_free(&r);
	/* SIGINT ends an attach (nothing to forward to). The attach is done
	 * while the program runs on: its samples are those of the CPU time it
	 * used after that, so the window is 0.6 s of its CPU time. */
	hwt_test_run(&r,
		     WAIT_CPU "%s 30 & c=$!; sleep 0.2; %s record -q -F 499 -p $c -o %s & p=$!; "
			      "waitcpu $c 60; kill -INT $p; wait $p; echo status=$?; kill $c",
		     hwt_test_prog("rec_hot"), hwt_test_hwtrace(), path_in("int.hwt"));
	assert_true(hwt_test_contains(r.out, "status=0"));
	hwt_test_run_free(&r);
	n = script(path_in("int.hwt"), NULL, &s);
	assert_true(n >= 20);
	assert_true(count_sym(s, n, "hot_a") > 0);
	free(s);
}

static void test_old_output(void **state)
{
	const char *file = path_in("old.hwt");
	struct hwt_test_run r;
	char old[PATH_MAX];
	struct stat st;

	(void)state;
	hwt_test_write_file(file, "previous", 8);
	hwt_test_run(&r, "cd %s && %s record -q -F 99 -o old.hwt -- true", dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	snprintf(old, sizeof(old), "%s.old", file);
	assert_int_equal(stat(old, &st), 0);
	assert_int_equal(st.st_size, 8);
	assert_int_equal(stat(file, &st), 0);
	assert_true(st.st_size > 64);
	/* The default name, in the current directory. */
	hwt_test_run(&r, "cd %s && %s record -q -F 99 -- true && ls", dir, hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.out, "hwtrace.hwt\n"));
	hwt_test_run_free(&r);
}

static void test_switch_events(void **state)
{
	const char *file = path_in("switch.hwt");
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r,
		     "%s record -q --switch-events -F 99 -o %s -- sh -c 'sleep 0.05; sleep "
		     "0.05'",
		     hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "SWITCH "));
	/* sh forks and execs sleep twice: followed through inheritance */
	assert_true(hwt_test_contains(r.out, "FORK "));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script -i %s --show-sideband", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "SWITCH OUT"));
	assert_true(hwt_test_contains(r.out, "COMM EXEC: sleep"));
	hwt_test_run_free(&r);
}

/* A one-page buffer cannot keep up with deep chains at a high rate: the
 * loss is counted by the kernel, and shown by record, info and script. */
static void test_lost(void **state)
{
	const char *file = path_in("lost.hwt");
	struct hwt_test_run r;
	unsigned long long lost = 0;
	const char *p;

	(void)state;
	hwt_test_run(&r, "%s record -F 20000 -g -m 1 -o %s -- %s 0.5 2", hwt_test_hwtrace(), file,
		     hwt_test_prog("rec_load"));
	assert_int_equal(r.status, 0);
	p = strstr(r.err, " samples of ");
	assert_non_null(p);
	p = strstr(p, " in ");
	assert_non_null(p);
	assert_int_equal(sscanf(strstr(p, "s, ") + 3, "%llu lost", &lost), 1);
	print_message("lost with a one-page buffer: %llu\n", lost);
	if (!lost) {
		hwt_test_run_free(&r);
		hwt_test_skip("the machine was fast enough that a one-page buffer lost nothing");
	}
	assert_true(hwt_test_contains(r.err, "were lost (the ring buffers overflowed)"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "records (kernel ring buffer overflow)"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script -i %s", hwt_test_hwtrace(), file);
	{
		char want[64];

		snprintf(want, sizeof(want), "lost while recording: %llu records", lost);
		assert_true(hwt_test_contains(r.err, want));
	}
	hwt_test_run_free(&r);
}

/* nm's address of sym in prog. */
static uint64_t nm_addr(const char *prog, const char *sym)
{
	struct hwt_test_run r;
	unsigned long long a = 0;

	hwt_test_run(&r, "nm '%s' | awk '$3 == \"%s\" {print $1}'", prog, sym);
	assert_int_equal(sscanf(r.out, "%llx", &a), 1);
	hwt_test_run_free(&r);
	return a;
}

static void put64(uint8_t **p, uint64_t v)
{
	hwt_put_le64(*p, v);
	*p += 8;
}

/* LBR call stacks cannot be recorded here; a file holding one (as the
 * kernel writes it: the kernel part of the chain by frame pointers, the
 * user part as the LBR's call sites) must be printed as one chain. */
static void test_lbr_rendering(void **state)
{
	const char *file = path_in("lbr.hwt"), *prog = hwt_test_prog("rec_hot");
	const uint64_t base = 0x555555554000ull, id = 42;
	struct hwt_fmt_writer *w;
	struct perf_event_attr attr;
	uint8_t rec[512], *p, ids[8];
	char real[PATH_MAX];
	struct sp_sample *s;
	size_t n, len;
	struct stat st;
	int sid;

	(void)state;
	assert_non_null(realpath(prog, real));
	assert_int_equal(stat(real, &st), 0);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = PERF_COUNT_HW_CPU_CYCLES;
	attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			   PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			   PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_BRANCH_STACK;
	attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK;
	attr.sample_id_all = 1;
	assert_int_equal(hwt_fmt_writer_open(&w, file, NULL), 0);
	hwt_put_le64(ids, id);
	hwt_fmt_writer_meta_u64(w, HWT_META_EVENT_COUNT, 1);
	hwt_fmt_writer_meta_bytes(w, "event.0.attr", &attr, sizeof(attr));
	hwt_fmt_writer_meta_str(w, "event.0.name", "cycles");
	hwt_fmt_writer_meta_bytes(w, "event.0.ids", ids, 8);
	sid = hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 0, -1, "cpu0");
	assert_true(sid >= 0);
	/* MMAP2 of the whole program at base (trailer: pid/tid, time, cpu, id) */
	p = rec + 8;
	hwt_put_le32(p, 77);
	hwt_put_le32(p + 4, 77);
	p += 8;
	put64(&p, base);
	put64(&p, ((uint64_t)st.st_size + 4095) & ~4095ull);
	put64(&p, 0);
	memset(p, 0, 24);
	p += 24;
	hwt_put_le32(p, PROT_READ | PROT_EXEC);
	hwt_put_le32(p + 4, MAP_PRIVATE);
	p += 8;
	len = strlen(real) + 1;
	memset(p, 0, (len + 7) & ~(size_t)7);
	memcpy(p, real, len);
	p += (len + 7) & ~(size_t)7;
	hwt_put_le32(p, 77);
	hwt_put_le32(p + 4, 77);
	p += 8;
	put64(&p, 1000);
	put64(&p, 0);
	put64(&p, id);
	hwt_put_le32(rec, PERF_RECORD_MMAP2);
	hwt_put_le16(rec + 4, PERF_RECORD_MISC_USER);
	hwt_put_le16(rec + 6, (uint16_t)(p - rec));
	assert_int_equal(hwt_fmt_writer_records(w, (uint32_t)sid, rec, (size_t)(p - rec)), 0);
	/* The sample: in hot_b; the chain as the kernel gives it with LBR
	 * (a kernel part, then the user marker and the ip); the call stack
	 * in the branch entries: call sites in middle_b, path_b, main. */
	p = rec + 8;
	put64(&p, id);
	put64(&p, base + nm_addr(prog, "hot_b") + 8);
	hwt_put_le32(p, 77);
	hwt_put_le32(p + 4, 77);
	p += 8;
	put64(&p, 2000);
	put64(&p, 0);
	put64(&p, 100000);
	put64(&p, 2);
	put64(&p, (uint64_t)PERF_CONTEXT_USER);
	put64(&p, base + nm_addr(prog, "hot_b") + 8);
	put64(&p, 3);
	{
		const char *callers[] = {"middle_b", "path_b", "main"};

		for (int i = 0; i < 3; i++) {
			put64(&p, base + nm_addr(prog, callers[i]) + 4);	       /* from */
			put64(&p, base + nm_addr(prog, i ? callers[i - 1] : "hot_b")); /* to */
			put64(&p, 0);
		}
	}
	hwt_put_le32(rec, PERF_RECORD_SAMPLE);
	hwt_put_le16(rec + 4, PERF_RECORD_MISC_USER);
	hwt_put_le16(rec + 6, (uint16_t)(p - rec));
	assert_int_equal(hwt_fmt_writer_records(w, (uint32_t)sid, rec, (size_t)(p - rec)), 0);
	assert_int_equal(hwt_fmt_writer_close(w), 0);

	n = script(file, NULL, &s);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].sym, "hot_b");
	assert_string_equal(s[0].event, "cycles");
	{
		static const char *const chain[] = {"hot_b", "middle_b", "path_b", "main"};

		assert_int_equal(s[0].nframes, 4);
		assert_true(sp_chain_is(&s[0], chain, 4));
	}
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hotspots),
	    cmocka_unit_test(test_file_contents),
	    cmocka_unit_test(test_perf_data),
	    cmocka_unit_test(test_threads_and_fork),
	    cmocka_unit_test(test_per_thread_and_period),
	    cmocka_unit_test(test_attach),
	    cmocka_unit_test(test_system_wide),
	    cmocka_unit_test(test_signals),
	    cmocka_unit_test(test_old_output),
	    cmocka_unit_test(test_switch_events),
	    cmocka_unit_test(test_lost),
	    cmocka_unit_test(test_lbr_rendering),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
