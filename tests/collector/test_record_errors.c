/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_record_errors.c - every error a user of `hwtrace
 * record` and `hwtrace script` meets is one line that names the cause and
 * the fix, with a non-zero exit and no file left behind: an event the
 * CPU/VM lacks, an unknown event, a PID that is gone, a command that is not
 * found or not executable, an output that cannot be written or is a device,
 * too many open files for -a, perf_event_paranoid (as an unprivileged
 * user), LBR call stacks where there are none, usage mistakes, and script
 * on a missing, damaged or foreign file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/lib/testutil.h"

static char *dir;

static int setup(void **state)
{
	(void)state;
	dir = hwt_test_tmpdir();
	chmod(dir, 0777); /* the unprivileged cases write here too */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(dir);
	return 0;
}

/* The one error line (the default-event notice may precede it). */
static const char *error_line(const char *err)
{
	const char *e = strstr(err, "hwtrace: error: ");

	assert_non_null(e);
	/* exactly one line from there on */
	assert_ptr_equal(strchr(e, '\n'), e + strlen(e) - 1);
	return e;
}

static bool exists(const char *name)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0;
}

static void test_event_not_supported(void **state)
{
	struct hwt_test_run r;

	(void)state;
	if (hwt_test_have_hw_event(PERF_COUNT_HW_CPU_CYCLES))
		hwt_test_skip("this machine has a cycles counter: nothing to refuse");
	hwt_test_run(&r, "cd %s && %s record -e cycles -o ns.hwt -- true", dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_string_equal(
	    error_line(r.err),
	    "hwtrace: error: event 'cycles' is not supported on this CPU/VM: this virtual "
	    "machine exposes no hardware counters (no virtual PMU); enable one in the "
	    "hypervisor (KVM/QEMU: -cpu host; VMware: virtualize CPU performance counters) "
	    "or pick a software event from 'hwtrace list'\n");
	hwt_test_run_free(&r);
	assert_false(exists("ns.hwt"));
	/* Without -e: cpu-clock instead, said in one line. */
	hwt_test_run(&r, "cd %s && %s record -o def.hwt -- true", dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err,
				      "hwtrace: no hardware cycle counter here (a VM "
				      "without a virtual PMU?): sampling cpu-clock instead\n"));
	hwt_test_run_free(&r);
	/* LBR call stacks need an Intel PMU. */
	hwt_test_run(&r, "cd %s && %s record --call-graph lbr -o lbr.hwt -- true", dir,
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(error_line(r.err), "LBR call stacks are not available"));
	assert_true(hwt_test_contains(r.err, "use -g for frame-pointer call chains"));
	hwt_test_run_free(&r);
}

static void test_unknown_event(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "cd %s && %s record -e cpu-clokc -o u.hwt -- true", dir,
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "hwtrace: error: unknown event 'cpu-clokc'; did you mean: "
				   "cpu-clock? ('hwtrace list' shows all)\n");
	hwt_test_run_free(&r);
	assert_false(exists("u.hwt"));
}

static void test_pid_gone(void **state)
{
	struct hwt_test_run r;
	int pid;

	(void)state;
	/* A PID that existed a moment ago. */
	hwt_test_run(&r, "sh -c 'echo $$'");
	pid = atoi(r.out);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "cd %s && %s record -e cpu-clock -p %d -o gone.hwt", dir,
		     hwt_test_hwtrace(), pid);
	assert_int_equal(r.status, 1);
	{
		char want[256];

		snprintf(want, sizeof(want),
			 "hwtrace: error: no process with PID %d (it exited or never existed); "
			 "check the PID with 'ps'\n",
			 pid);
		assert_string_equal(r.err, want);
		hwt_test_run_free(&r);
		/* The default event too: the one real error, not first a note
		 * on which event it would have sampled. */
		hwt_test_run(&r, "cd %s && %s record -p %d -o gone.hwt", dir, hwt_test_hwtrace(),
			     pid);
		assert_int_equal(r.status, 1);
		assert_string_equal(r.err, want);
	}
	hwt_test_run_free(&r);
	assert_false(exists("gone.hwt"));
}

static void test_command(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "cd %s && %s record -e cpu-clock -o nf.hwt -- no-such-command-x", dir,
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 127);
	assert_string_equal(r.err, "hwtrace: error: command 'no-such-command-x' not found; check "
				   "its name, or PATH\n");
	hwt_test_run_free(&r);
	assert_false(exists("nf.hwt"));
	/* The default event, and --pt=emulate: the same one line. */
	hwt_test_run(&r, "cd %s && %s record -o nf.hwt -- no-such-command-x", dir,
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 127);
	assert_string_equal(r.err, "hwtrace: error: command 'no-such-command-x' not found; check "
				   "its name, or PATH\n");
	hwt_test_run_free(&r);
	if (system("qemu-x86_64 --version >/dev/null 2>&1") == 0) {
		hwt_test_run(&r, "cd %s && %s record --pt=emulate -o nf.hwt -- no-such-command-x",
			     dir, hwt_test_hwtrace());
		assert_int_equal(r.status, 127);
		assert_string_equal(r.err, "hwtrace: error: command 'no-such-command-x' not found; "
					   "check its name, or PATH\n");
		hwt_test_run_free(&r);
	}
	assert_false(exists("nf.hwt"));
	{
		char txt[PATH_MAX];

		snprintf(txt, sizeof(txt), "%s/notes.txt", dir);
		hwt_test_write_file(txt, "text\n", 5);
		chmod(txt, 0644);
		hwt_test_run(&r, "cd %s && %s record -e cpu-clock -o nx.hwt -- ./notes.txt", dir,
			     hwt_test_hwtrace());
		assert_int_equal(r.status, 126);
		assert_string_equal(r.err,
				    "hwtrace: error: cannot run './notes.txt': it is not an "
				    "executable file (check its permissions, e.g. chmod +x)\n");
		hwt_test_run_free(&r);
		assert_false(exists("nx.hwt"));
		/* Executable, but not a program. */
		chmod(txt, 0755);
		{
			static const char junk[] = "\x01\x02 not a script, not ELF\n";

			hwt_test_write_file(txt, junk, sizeof(junk) - 1);
		}
		hwt_test_run(&r, "cd %s && %s record -e cpu-clock -o nx.hwt -- ./notes.txt", dir,
			     hwt_test_hwtrace());
		assert_int_equal(r.status, 1);
		assert_string_equal(r.err,
				    "hwtrace: error: cannot execute './notes.txt': it is not "
				    "a program this machine can run (Exec format error)\n");
		hwt_test_run_free(&r);
		assert_false(exists("nx.hwt"));
	}
	/* The command's exit status is ours, as with perf record. */
	hwt_test_run(&r, "cd %s && %s record -q -e cpu-clock -o st.hwt -- sh -c 'exit 7'", dir,
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 7);
	assert_string_equal(r.err, "");
	hwt_test_run_free(&r);
	assert_true(exists("st.hwt"));
}

static void test_output(void **state)
{
	struct hwt_test_run r;
	struct stat st;

	(void)state;
	hwt_test_run(&r, "%s record -e cpu-clock -o /nonexistent-dir/x.hwt -- true",
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "hwtrace: error: cannot write '/nonexistent-dir/x.hwt': No such "
				   "file or directory; choose a writable path with -o\n");
	hwt_test_run_free(&r);
	/* A device is refused and left alone. */
	hwt_test_run(&r, "%s record -e cpu-clock -o /dev/null -- true", hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "hwtrace: error: '/dev/null' is not a regular file: give the "
				   "path of a trace file to write with -o\n");
	hwt_test_run_free(&r);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0666);
	/* The command was never released: nothing ran. */
	hwt_test_run(&r,
		     "cd %s && %s record -e cpu-clock -o /nonexistent-dir/x.hwt -- "
		     "touch ran-anyway",
		     dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	hwt_test_run_free(&r);
	assert_false(exists("ran-anyway"));
}

static void test_too_many_files(void **state)
{
	struct hwt_test_run r;

	(void)state;
	/* 8 events x 2+ CPUs with the limit at 12 (soft and hard). */
	hwt_test_run(&r,
		     "cd %s && ulimit -n 12 && %s record -a -e "
		     "cpu-clock,task-clock,page-faults,cs,minor-faults,major-faults,"
		     "cpu-migrations,alignment-faults -o mf.hwt -- true",
		     dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(error_line(r.err), "hwtrace: error: too many open files: "
							 "recording needs "));
	assert_true(hwt_test_contains(r.err, "and the limit is 12; raise it with 'ulimit -n "));
	hwt_test_run_free(&r);
	assert_false(exists("mf.hwt"));
}

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

static void test_paranoid(void **state)
{
	struct hwt_test_run r;
	char want[512], fake[PATH_MAX];
	int level = real_paranoid();

	(void)state;
	need_unprivileged();
	if (level < 1)
		hwt_test_skip("perf_event_paranoid is %d: unprivileged recording is allowed here",
			      level);
	/* System-wide needs 0. */
	hwt_test_run(&r,
		     "cd %s && setpriv --reuid=65534 --regid=65534 --clear-groups %s record "
		     "-a -e cpu-clock -o sw.hwt -- true",
		     dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want),
		 "hwtrace: error: cannot sample 'cpu-clock' system-wide on CPU 0: system-wide "
		 "recording needs perf_event_paranoid <= 0 but it is %d; run as root (or with "
		 "CAP_PERFMON) or set it with 'sysctl -w kernel.perf_event_paranoid=0'\n",
		 level);
	assert_string_equal(r.err, want);
	hwt_test_run_free(&r);
	assert_false(exists("sw.hwt"));
	/* The message quotes the level of the file the seam names. */
	snprintf(fake, sizeof(fake), "%s/paranoid", dir);
	hwt_test_write_file(fake, "3\n", 2);
	chmod(fake, 0644);
	hwt_test_run(&r,
		     "cd %s && HWT_PERF_PARANOID_FILE=%s setpriv --reuid=65534 --regid=65534 "
		     "--clear-groups %s record -a -e cpu-clock -o sw.hwt -- true",
		     dir, fake, hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.err, "needs perf_event_paranoid <= 0 but it is 3;"));
	hwt_test_run_free(&r);
	if (level != 2)
		return;
	/* Level 2: user space is allowed; kernel space asked for explicitly is
	 * refused with the fix, else recording falls back to user space and
	 * says so. */
	hwt_test_run(&r,
		     "cd %s && setpriv --reuid=65534 --regid=65534 --clear-groups %s record "
		     "-e cpu-clock:k -o k.hwt -- true",
		     dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "recording kernel space needs perf_event_paranoid "
					     "<= 1 but it is 2;"));
	assert_true(hwt_test_contains(r.err, "or record user space only with ':u'\n"));
	hwt_test_run_free(&r);
	hwt_test_run(&r,
		     "cd %s && setpriv --reuid=65534 --regid=65534 --clear-groups %s record "
		     "-e cpu-clock -g -o user.hwt -- %s 0.2",
		     dir, hwt_test_hwtrace(), hwt_test_prog("rec_hot"));
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "hwtrace: perf_event_paranoid is 2: recording user "
					     "space only for 'cpu-clock'\n"));
	hwt_test_run_free(&r);
	/* ... and no kernel frame is in it */
	hwt_test_run(&r, "cd %s && %s script -q -i user.hwt", dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "hot_a"));
	assert_false(hwt_test_contains(r.out, "[kernel.kallsyms]"));
	hwt_test_run_free(&r);
	/* Another user's process: permission, not paranoid. */
	hwt_test_run(&r,
		     "cd %s && setpriv --reuid=65534 --regid=65534 --clear-groups %s record "
		     "-e cpu-clock:u -p 1 -o p1.hwt",
		     dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "belongs to another user"));
	hwt_test_run_free(&r);
}

static void test_usage(void **state)
{
	static const struct {
		const char *args, *msg;
	} cases[] = {
	    {"", "nothing to record: give a command after '--', -p PID or -a"},
	    {"-F 0 -- true", "-F needs a positive frequency or 'max', not '0'"},
	    {"-c 0 -- true", "-c needs a positive count, not '0'"},
	    {"-c 10 -F 10 -- true", "give either -c or -F, not both"},
	    {"-a -p 1", "-p and -a exclude each other"},
	    {"-p 1 -- true", "give either -p or a command, not both"},
	    {"-p x1", "-p takes PIDs separated by commas, not 'x1'"},
	    {"--call-graph dwarf,70000 -- true",
	     "--call-graph takes fp, dwarf[,SIZE] or lbr, not 'dwarf,70000' (SIZE: stack bytes "
	     "per sample, a multiple of 8 up to 65528)"},
	    {"--call-graph frames -- true",
	     "--call-graph takes fp, dwarf[,SIZE] or lbr, not 'frames' (SIZE: stack bytes "
	     "per sample, a multiple of 8 up to 65528)"},
	    {"-m 0 -- true", "-m takes PAGES or SIZE[,AUX] (e.g. 256, 1M, 512K,16M), not '0'"},
	    {"-z 30 -- true", "-z takes a level from 1 to 19"},
	    {"-S -- true", "-S and --filter are for Intel PT (--pt)"},
	    {"--bogus -- true", "unknown option '--bogus'"},
	    {"--pt=emulate -g -- true",
	     "--pt=emulate takes only TERMS, --filter, -o and -q besides the command"},
	};
	struct hwt_test_run r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[512];

		hwt_test_run(&r, "cd %s && %s record %s", dir, hwt_test_hwtrace(), cases[i].args);
		snprintf(want, sizeof(want), "hwtrace record: %s (see 'hwtrace record --help')\n",
			 cases[i].msg);
		if (r.status != 2 || strcmp(r.err, want))
			fail_msg("record %s: status %d, stderr '%s'", cases[i].args, r.status,
				 r.err);
		hwt_test_run_free(&r);
	}
	hwt_test_run(&r, "%s record --help", hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "usage: hwtrace record"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script --help", hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "usage: hwtrace script"));
	hwt_test_run_free(&r);
}

static void test_script_files(void **state)
{
	struct hwt_test_run r;
	char path[PATH_MAX];

	(void)state;
	hwt_test_run(&r, "cd %s && %s script", dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "hwtrace: error: hwtrace.hwt: no such file (check the path, or "
				   "record one with 'hwtrace record')\n");
	hwt_test_run_free(&r);
	snprintf(path, sizeof(path), "%s/text.txt", dir);
	hwt_test_write_file(path, "this is not a trace at all, just some text\n", 43);
	hwt_test_run(&r, "%s script -i %s", hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(error_line(r.err), "is not a hwtrace or perf.data recording "
							 "(unknown format at offset 0)"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script extra-arg", hwt_test_hwtrace());
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);
	/* A PT trace goes to the PT recording mode (cli/script_ptrec.c):
	 * these bytes hold no PSB, which is a counted gap, not a failure. */
	{
		struct hwt_fmt_writer *w;
		uint8_t pt[64] = {0x02, 0x82};
		int sid;

		snprintf(path, sizeof(path), "%s/pt.hwt", dir);
		assert_int_equal(hwt_fmt_writer_open(&w, path, NULL), 0);
		sid = hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, 0, -1, "pt.cpu0");
		assert_true(sid >= 0);
		assert_int_equal(hwt_fmt_writer_aux(w, (uint32_t)sid, 0, pt, sizeof(pt)), 0);
		assert_int_equal(hwt_fmt_writer_close(w), 0);
		hwt_test_run(&r, "%s script -i %s", hwt_test_hwtrace(), path);
		assert_int_equal(r.status, 0);
		assert_true(hwt_test_contains(r.out, "no sync: no synchronization point (PSB)"));
		assert_true(hwt_test_contains(r.err, "1 gap (0 from lost trace, "));
		hwt_test_run_free(&r);
	}
	/* A recording cut short inside its last chunk of records (the
	 * recorder was killed while writing it): what is complete is read,
	 * the rest is reported. 1.2 s: records chunks are written once
	 * their first bytes are 0.5 s old (the writer's flush_ms), so the
	 * first one, with the command's COMM and MMAPs, is before the cut. */
	hwt_test_run(&r, "cd %s && %s record -q -e cpu-clock -F 999 -g -o cut.hwt -- %s 1.2", dir,
		     hwt_test_hwtrace(), hwt_test_prog("rec_hot"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	{
		struct hwt_fmt_reader *rd;
		const struct hwt_fmt_chunk *last = NULL;
		char want[256];
		uint64_t off = 0, cut;
		size_t nrec = 0;

		snprintf(path, sizeof(path), "%s/cut.hwt", dir);
		assert_int_equal(hwt_fmt_reader_open(&rd, path, NULL, &off), 0);
		for (size_t i = 0; i < hwt_fmt_reader_nchunks(rd); i++)
			if (hwt_fmt_reader_chunk(rd, i)->type == HWT_FMT_CHUNK_RECORDS) {
				last = hwt_fmt_reader_chunk(rd, i);
				nrec++;
			}
		assert_true(nrec >= 2);
		cut = last->file_offset + HWT_FMT_CHUNK_HEADER_SIZE + last->comp_size / 2;
		hwt_test_run(&r,
			     "cd %s && head -c %llu cut.hwt > cut2.hwt && %s script -i cut2.hwt",
			     dir, (unsigned long long)cut, hwt_test_hwtrace());
		snprintf(want, sizeof(want), "it ends inside a chunk at offset %llu (the last %llu",
			 (unsigned long long)last->file_offset,
			 (unsigned long long)(cut - last->file_offset));
		hwt_fmt_reader_close(rd);
		assert_int_equal(r.status, 0);
		assert_true(hwt_test_contains(r.out, "rec_hot"));
		assert_true(hwt_test_contains(r.err, "warning: cut2.hwt did not end cleanly"));
		assert_true(hwt_test_contains(r.err, want));
		hwt_test_run_free(&r);
	}
	/* A damaged byte in a chunk: the checksum catches it. */
	hwt_test_run(&r,
		     "cd %s && cp cut.hwt bad.hwt && printf 'XXXX' | dd of=bad.hwt bs=1 "
		     "seek=3000 conv=notrunc 2>/dev/null && %s script -q -i bad.hwt >/dev/null",
		     dir, hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.err, "bad.hwt"));
	assert_true(hwt_test_contains(r.err, "at offset"));
	hwt_test_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_event_not_supported),
	    cmocka_unit_test(test_unknown_event),
	    cmocka_unit_test(test_pid_gone),
	    cmocka_unit_test(test_command),
	    cmocka_unit_test(test_output),
	    cmocka_unit_test(test_too_many_files),
	    cmocka_unit_test(test_paranoid),
	    cmocka_unit_test(test_usage),
	    cmocka_unit_test(test_script_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
