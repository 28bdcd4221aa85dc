/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/convert/test_convert.c - `hwtrace convert` checked by an independent
 * decoder: programs with exactly known control flow (tests/progs/
 * conv_flow.c) are traced with the PT emulator, converted to perf.data, and
 * Linux perf's own Intel PT decoder (not libipt) must see exactly the known
 * calls, branches and instructions, with no decode error, and agree call for
 * call and branch for branch with `hwtrace script --pt` on the same PT
 * bytes. Also: our perf.data reader reads the file back (events, AUXTRACE
 * data byte for byte), a recording of samples converts for perf report, and
 * the CLI's errors (missing, foreign, truncated input; unwritable output).
 * Parts that need qemu-user or perf are skipped with the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/format.h"
#include "symbolize/symbolize.h"
#include "tests/lib/testutil.h"

/* What tests/progs/conv_flow.c does (keep in step with it). */
#define MID_CALLS  100
#define LEAF_CALLS (MID_CALLS * 3 + MID_CALLS / 4)
#define LOOP_N	   1000

static bool have_perf(void)
{
	return system("perf version >/dev/null 2>&1") == 0;
}

static bool have_qemu(void)
{
	return system("qemu-x86_64 --version >/dev/null 2>&1") == 0;
}

/* Records prog (with the shell words args) with the emulator into path,
 * with `--pt=emulate,TERMS` when terms is not empty; returns the
 * instruction count the recorder printed ("N thread(s), M instructions"; N
 * in *threads when not NULL), or skips the test when emulation is
 * unavailable. */
static uint64_t record_pt_threads(const char *dir, const char *path, const char *prog,
				  const char *args, const char *terms, unsigned int *threads);

/* The same for a one-thread program. */
static uint64_t record_pt_args(const char *dir, const char *path, const char *prog,
			       const char *args)
{
	unsigned int threads = 0;
	uint64_t n = record_pt_threads(dir, path, prog, args, "", &threads);

	assert_int_equal(threads, 1);
	return n;
}

static uint64_t record_pt(const char *dir, const char *path, const char *prog)
{
	return record_pt_args(dir, path, prog, "");
}

static uint64_t record_pt_threads(const char *dir, const char *path, const char *prog,
				  const char *args, const char *terms, unsigned int *threads)
{
	struct hwt_test_run run;
	unsigned long long insns = 0;
	const char *p;

	if (!have_qemu()) {
		hwt_test_tmpdir_remove((char *)dir);
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	}
	hwt_test_run(&run, "%s record --pt=emulate%s%s -o %s -- %s %s", hwt_test_hwtrace(),
		     *terms ? "," : "", terms, path, hwt_test_prog(prog), args);
	/* qemu is here and the plugin is built with the tree: a failure is
	 * hwtrace's, and fails the test. */
	if (run.status != 0)
		fprintf(stderr, "%s", run.err);
	assert_int_equal(run.status, 0);
	p = strstr(run.err, " thread");
	assert_non_null(p);
	while (p > run.err && p[-1] >= '0' && p[-1] <= '9')
		p--;
	assert_int_equal(sscanf(p, "%u", threads), 1);
	p = strstr(p, ", ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, ", %llu instructions", &insns), 1);
	hwt_test_run_free(&run);
	return insns;
}

static void convert_ok(const char *in, const char *out)
{
	struct hwt_test_run run;
	struct stat st;

	hwt_test_run(&run, "%s convert %s -o %s", hwt_test_hwtrace(), in, out);
	if (run.status)
		fprintf(stderr, "%s", run.err);
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.err, "decode with: perf script"));
	hwt_test_run_free(&run);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

/* Lines of text that contain every one of the NULL-terminated needles. */
static uint64_t count_lines(const char *text, ...)
{
	uint64_t n = 0;

	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char line[1024];
		const char *needle;
		bool all = true;
		va_list ap;

		snprintf(line, sizeof(line), "%.*s",
			 (int)(len < sizeof(line) ? len : sizeof(line) - 1), l);
		va_start(ap, text);
		while ((needle = va_arg(ap, const char *)))
			all = all && strstr(line, needle);
		va_end(ap);
		n += all;
		l = e ? e + 1 : l + len;
	}
	return n;
}

/* perf script -F flags,ip,sym,addr lines: "FLAGS  IP SYM => ADDR SYM".
 * Counts the lines whose flags are exactly flags and whose source and
 * target symbols are src and dst (NULL: any). */
static uint64_t count_branches(const char *text, const char *flags, const char *src,
			       const char *dst)
{
	uint64_t n = 0;

	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char line[1024], fl[64] = "", ssym[256] = "", dsym[256] = "";
		unsigned long long from, to;
		char *arrow;

		snprintf(line, sizeof(line), "%.*s",
			 (int)(len < sizeof(line) ? len : sizeof(line) - 1), l);
		l = e ? e + 1 : l + len;
		arrow = strstr(line, "=>");
		if (!arrow)
			continue;
		*arrow = '\0';
		/* Flags are words before the first hex number. */
		{
			char *p = line;
			size_t fn = 0;

			while (*p == ' ')
				p++;
			while (*p && !(sscanf(p, "%llx %255s", &from, ssym) == 2 &&
				       strspn(p, "0123456789abcdef") == strcspn(p, " "))) {
				size_t w = strcspn(p, " ");

				fn += (size_t)snprintf(fl + fn, sizeof(fl) - fn, "%s%.*s",
						       fn ? " " : "", (int)w, p);
				p += w;
				while (*p == ' ')
					p++;
			}
			if (!*p)
				continue;
		}
		if (sscanf(arrow + 2, "%llx %255s", &to, dsym) < 1)
			continue;
		if ((!flags || !strcmp(fl, flags)) && (!src || !strcmp(ssym, src)) &&
		    (!dst || !strcmp(dsym, dst)))
			n++;
	}
	return n;
}

static void perf_script(struct hwt_test_run *run, const char *file, const char *args)
{
	hwt_test_run(run, "perf script -i %s %s", file, args);
	if (run->status)
		fprintf(stderr, "perf script %s: %s", args, run->err);
	assert_int_equal(run->status, 0);
	/* perf reports decode errors as samples and summarises them on
	 * stderr: neither may appear. */
	assert_false(hwt_test_contains(run->out, "instruction trace error"));
	assert_false(hwt_test_contains(run->err, "instruction trace error"));
}

/* perf's decoder sees exactly the known flow of the dynamically linked
 * program: call counts per function, the taken branches and the
 * instructions of the assembly loop, every instruction the emulator ran,
 * and no decode error; in the emulator's default shape and in the shape of
 * the real traces (MODE.TSX, PIP and VMCS in every PSB+, a PSB every 256
 * bytes, PSB+ runs while packet generation is off). */
static void check_known_flow(const char *terms)
{
	char *dir = hwt_test_tmpdir(), hwt[512], data[512];
	struct hwt_test_run run;
	uint64_t insns;
	unsigned int threads = 0;

	if (!have_perf()) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("perf is not installed (Debian package linux-perf)");
	}
	snprintf(hwt, sizeof(hwt), "%s/flow.hwt", dir);
	snprintf(data, sizeof(data), "%s/flow.perf.data", dir);
	insns = record_pt_threads(dir, hwt, "conv_flow", "", terms, &threads);
	assert_int_equal(threads, 1);
	convert_ok(hwt, data);

	perf_script(&run, data, "--itrace=e");
	assert_string_equal(run.out, "");
	hwt_test_run_free(&run);

	/* Calls: "call  IP SYM => ADDR SYM". */
	perf_script(&run, data, "--itrace=c -F flags,ip,sym,addr");
	assert_int_equal(count_branches(run.out, "call", "main", "conv_mid"), MID_CALLS);
	assert_int_equal(count_branches(run.out, "call", NULL, "conv_mid"), MID_CALLS);
	assert_int_equal(count_branches(run.out, "call", "conv_mid", "conv_leaf"), MID_CALLS * 3);
	assert_int_equal(count_branches(run.out, "call", "main", "conv_leaf"), MID_CALLS / 4);
	assert_int_equal(count_branches(run.out, "call", NULL, "conv_leaf"), LEAF_CALLS);
	assert_int_equal(count_branches(run.out, "call", NULL, "conv_loop"), 1);
	assert_int_equal(count_branches(run.out, "call", "conv_leaf", NULL), 0);
	hwt_test_run_free(&run);

	/* Taken branches out of conv_loop: its jne 999 times, its ret once;
	 * conv_mid's loop branches back twice per call. */
	perf_script(&run, data, "--itrace=b -F flags,ip,sym,addr");
	assert_int_equal(count_branches(run.out, "jcc", "conv_loop", "conv_loop"), LOOP_N - 1);
	assert_int_equal(count_branches(run.out, "return", "conv_loop", "main"), 1);
	assert_int_equal(count_branches(run.out, NULL, "conv_loop", NULL), LOOP_N);
	assert_int_equal(count_branches(run.out, "return", "conv_leaf", NULL), LEAF_CALLS);
	assert_int_equal(count_branches(run.out, "return", "conv_mid", "main"), MID_CALLS);
	hwt_test_run_free(&run);

	/* Every instruction: conv_loop runs 3n + 2, the whole run what the
	 * emulator counted. */
	perf_script(&run, data, "--itrace=i1i -F ip,sym");
	assert_int_equal(count_lines(run.out, " conv_loop", NULL), 3 * LOOP_N + 2);
	assert_int_equal(count_lines(run.out, "", NULL), insns);
	hwt_test_run_free(&run);

	/* Samples carry the thread and the emulated clock (one second after
	 * zero at the start). */
	perf_script(&run, data, "--itrace=c -F comm,tid,time");
	assert_true(hwt_test_contains(run.out, "conv_flow"));
	assert_true(hwt_test_contains(run.out, " 1.0000"));
	hwt_test_run_free(&run);
	hwt_test_tmpdir_remove(dir);
}

static void test_perf_decodes_known_flow(void **state)
{
	(void)state;
	check_known_flow("");
}

static void test_perf_decodes_real_shape(void **state)
{
	(void)state;
	check_known_flow("real");
}

/* The instruction addresses of function sym in prog, in order (nm for its
 * extent, objdump for its instructions); returns how many (at most cap). */
static size_t insn_addrs(const char *prog, const char *sym, uint64_t *a, size_t cap)
{
	struct hwt_test_run run;
	unsigned long long start = 0, size = 0;
	size_t n = 0;
	const char *p;

	hwt_test_run(&run, "nm -S --defined-only %s | grep ' %s$'", prog, sym);
	assert_int_equal(run.status, 0);
	assert_int_equal(sscanf(run.out, "%llx %llx", &start, &size), 2);
	hwt_test_run_free(&run);
	hwt_test_run(&run,
		     "objdump -d --no-show-raw-insn --start-address=0x%llx "
		     "--stop-address=0x%llx %s",
		     start, start + size, prog);
	assert_int_equal(run.status, 0);
	/* Instruction lines: "    1129:\tpush   %rbx". */
	for (const char *l = run.out; *l && n < cap;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		unsigned long long addr;

		p = l + strspn(l, " ");
		if (p > l && sscanf(p, "%llx:", &addr) == 1 && addr >= start && addr < start + size)
			a[n++] = addr;
	}
	hwt_test_run_free(&run);
	return n;
}

/* Hex addresses from lines of text: the first hex word after `after` on
 * each line that has it (after "" : the line's first word). */
static size_t text_addrs(const char *text, const char *after, uint64_t *a, size_t cap)
{
	size_t n = 0;

	for (const char *l = text; *l && n < cap;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		const char *p = *after ? strstr(l, after) : l;
		const char *e = strchr(l, '\n');
		unsigned long long v;

		if (p && (!e || p < e) && sscanf(p + strlen(after), " %llx", &v) == 1)
			a[n++] = v;
	}
	return n;
}

/* An address filter on one function (tests/progs/ptemu_filter.c: filt_work
 * leaves and re-enters its range by direct and indirect calls, a jcc and a
 * direct jmp, and calls getpid inside it): hwtrace decodes exactly the
 * instructions of filt_work the program ran, in order, from the emulator's
 * default shape and the real ones (with kAFL's VM entries: a PSB+ with a
 * FUP, then TIP.PGE at the same IP); the converted perf.data carries the filter
 * (AUXTRACE_INFO's filter string) and perf's decoder gives the same
 * sequence with no error, but for one quirk of perf 6.1: a conditional
 * branch that leaves the range is reported at its target's address
 * (intel_pt_walk_tip sets the IP to the target before taking the branch's
 * `from`). Without the filter string perf reports an error at each jcc
 * out ("Trace doesn't match instruction"). */
static void check_filter(const char *shape)
{
	char *dir = hwt_test_tmpdir(), hwt[512], data[512], terms[1024];
	const char *prog = hwt_test_prog("ptemu_filter");
	enum { N = 10, CALLS = 3, MAXI = 4096 };
	uint64_t A[16], *want = calloc(MAXI, 8), *got = calloc(MAXI, 8), bias, side[4];
	size_t nw = 0, n;
	struct hwt_test_run run;

	assert_non_null(want);
	assert_non_null(got);
	if (!have_perf()) {
		free(want);
		free(got);
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("perf is not installed (Debian package linux-perf)");
	}
	/* push mov | call lea call* mov syscall test jnz dec jnz | pop jmp */
	assert_int_equal(insn_addrs(prog, "filt_work", A, 16), 13);
	assert_int_equal(insn_addrs(prog, "filt_side", side, 4), 2);
	for (int c = 0; c < CALLS; c++) {
		want[nw++] = A[0];
		want[nw++] = A[1];
		for (int i = N; i > 0; i--)
			for (int k = 2; k <= 10; k++)
				want[nw++] = A[k];
		want[nw++] = A[11];
		want[nw++] = A[12];
	}
	snprintf(hwt, sizeof(hwt), "%s/filt.hwt", dir);
	snprintf(data, sizeof(data), "%s/filt.perf.data", dir);
	snprintf(terms, sizeof(terms), "'%sfilter=filter filt_work @ %s'", shape, prog);
	record_pt_threads(dir, hwt, "ptemu_filter", "", terms, &(unsigned int){0});

	hwt_test_run(&run, "%s script -i %s --itrace=i", hwt_test_hwtrace(), hwt);
	assert_int_equal(run.status, 0);
	n = text_addrs(run.out, "insn:", got, MAXI);
	hwt_test_run_free(&run);
	assert_int_equal(n, nw);
	bias = got[0] - want[0];
	assert_int_equal(bias % 4096, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(got[i] - bias, want[i]);

	convert_ok(hwt, data);
	perf_script(&run, data, "--itrace=e");
	assert_string_equal(run.out, "");
	hwt_test_run_free(&run);
	perf_script(&run, data, "--itrace=i1i -F ip");
	n = text_addrs(run.out, "", got, MAXI);
	hwt_test_run_free(&run);
	assert_int_equal(n, nw);
	for (size_t i = 0; i < n; i++) {
		/* The jnz out (odd %rbx: every other iteration) at filt_side. */
		bool jcc_out = want[i] == A[8] && i + 1 < nw && want[i + 1] == A[9] &&
			       (((i - 2) % (9 * N + 4)) / 9) % 2 == 1;

		assert_int_equal(got[i] - bias, jcc_out ? side[0] : want[i]);
	}
	free(want);
	free(got);
	hwt_test_tmpdir_remove(dir);
}

static void test_perf_decodes_filter(void **state)
{
	(void)state;
	check_filter("");
	check_filter("real,vmentry,");
}

/* Several threads, and a forked process: one AUX queue per thread, each
 * decoded by perf without error, every instruction of every thread. */
static void test_threads_and_fork(void **state)
{
	static const struct {
		const char *prog;
		unsigned int threads, pids;
	} progs[] = {{"ptemu_threads", 4, 1}, {"ptemu_fork", 2, 2}};
	char *dir = hwt_test_tmpdir(), hwt[512], data[512];
	struct hwt_test_run run;

	(void)state;
	if (!have_perf()) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("perf is not installed (Debian package linux-perf)");
	}
	for (size_t i = 0; i < HWT_ARRAY_SIZE(progs); i++) {
		unsigned int threads = 0, tids = 0, pids = 0;
		char seen_tid[64][16], seen_pid[64][16];
		uint64_t insns;

		snprintf(hwt, sizeof(hwt), "%s/%s.hwt", dir, progs[i].prog);
		snprintf(data, sizeof(data), "%s/%s.perf.data", dir, progs[i].prog);
		insns = record_pt_threads(dir, hwt, progs[i].prog, "", "", &threads);
		assert_int_equal(threads, progs[i].threads);
		convert_ok(hwt, data);
		perf_script(&run, data, "--itrace=e");
		assert_string_equal(run.out, "");
		hwt_test_run_free(&run);
		perf_script(&run, data, "--itrace=i1i -F pid,tid");
		assert_int_equal(count_lines(run.out, "", NULL), insns);
		/* Distinct threads and processes among the samples. */
		for (const char *l = run.out; *l;) {
			char pid[16], tid[16];
			bool have;

			if (sscanf(l, " %15[0-9]/%15[0-9]", pid, tid) == 2) {
				have = false;
				for (unsigned int k = 0; k < tids; k++)
					have |= !strcmp(seen_tid[k], tid);
				if (!have && tids < 64)
					strcpy(seen_tid[tids++], tid);
				have = false;
				for (unsigned int k = 0; k < pids; k++)
					have |= !strcmp(seen_pid[k], pid);
				if (!have && pids < 64)
					strcpy(seen_pid[pids++], pid);
			}
			l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l);
		}
		assert_int_equal(tids, progs[i].threads);
		assert_int_equal(pids, progs[i].pids);
		hwt_test_run_free(&run);
	}
	hwt_test_tmpdir_remove(dir);
}

/* Copies an emulated recording into a new .hwt laid out as a per-CPU
 * recording is (the AUX stream on CPU 0, tid -1), as hardware recordings
 * by default are: the converted file then says per-CPU buffers, perf
 * finds the thread from ITRACE_START, and the known calls come out the
 * same. */
static void test_per_cpu_layout(void **state)
{
	char *dir = hwt_test_tmpdir(), hwt[512], cpu[512], data[512];
	struct hwt_fmt_writer *w;
	struct hwt_fmt_session *s;
	struct hwt_fmt_record rec;
	struct hwt_test_run run;
	int sb, aux;

	(void)state;
	if (!have_perf()) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("perf is not installed (Debian package linux-perf)");
	}
	snprintf(hwt, sizeof(hwt), "%s/t.hwt", dir);
	snprintf(cpu, sizeof(cpu), "%s/cpu.hwt", dir);
	snprintf(data, sizeof(data), "%s/cpu.perf.data", dir);
	record_pt(dir, hwt, "conv_flow");

	assert_int_equal(hwt_fmt_session_open(&s, hwt, NULL, NULL), 0);
	assert_int_equal(hwt_fmt_writer_open(&w, cpu, NULL), 0);
	for (size_t i = 0; i < hwt_fmt_session_nmeta(s); i++) {
		const struct hwt_fmt_meta *m = hwt_fmt_session_meta(s, i);

		if (m->type == HWT_FMT_META_U64)
			assert_int_equal(hwt_fmt_writer_meta_u64(w, m->key, m->v.u64), 0);
		else if (m->type == HWT_FMT_META_STR)
			assert_int_equal(hwt_fmt_writer_meta_str(w, m->key, m->v.str), 0);
		else if (m->type == HWT_FMT_META_BYTES)
			assert_int_equal(hwt_fmt_writer_meta_bytes(w, m->key, m->v.bytes, m->len),
					 0);
	}
	assert_int_equal(hwt_fmt_writer_meta_u64(w, "pt.config.per_thread", 0), 0);
	sb = hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 0, -1, "sideband.cpu0");
	aux = hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, 0, -1, "pt.cpu0");
	assert_true(sb >= 0 && aux >= 0);
	while (hwt_fmt_session_next(s, &rec, NULL) == 0)
		assert_int_equal(hwt_fmt_writer_records(w, (uint32_t)sb, rec.raw, rec.size), 0);
	assert_int_equal(hwt_fmt_session_naux(s), 1);
	for (size_t g = 0; g < hwt_fmt_session_aux(s, 0)->nsegments; g++) {
		const struct hwt_fmt_aux_segment *sg = hwt_fmt_session_aux_segment(s, 0, g);
		uint8_t *b = malloc(sg->size);

		assert_non_null(b);
		assert_int_equal(hwt_fmt_session_aux_read(s, 0, g, 0, b, sg->size),
				 (int64_t)sg->size);
		assert_int_equal(hwt_fmt_writer_aux(w, (uint32_t)aux, sg->aux_offset, b, sg->size),
				 0);
		free(b);
	}
	assert_int_equal(hwt_fmt_writer_close(w), 0);
	hwt_fmt_session_close(s);

	convert_ok(cpu, data);
	assert_int_equal(hwt_fmt_session_open(&s, data, NULL, NULL), 0);
	{
		const struct hwt_fmt_meta *m =
		    hwt_fmt_session_meta_find(s, HWT_META_PERF_AUXTRACE_INFO);

		assert_non_null(m);
		assert_int_equal(hwt_le64(m->v.bytes + 16 + 8 * 9), 1); /* per-cpu mmaps */
		assert_int_equal(hwt_fmt_session_aux(s, 0)->cpu, 0);
		assert_int_equal(hwt_fmt_session_aux(s, 0)->tid, -1);
	}
	hwt_fmt_session_close(s);
	perf_script(&run, data, "--itrace=e");
	assert_string_equal(run.out, "");
	hwt_test_run_free(&run);
	perf_script(&run, data, "--itrace=c -F flags,ip,sym,addr");
	assert_int_equal(count_branches(run.out, "call", "main", "conv_mid"), MID_CALLS);
	assert_int_equal(count_branches(run.out, "call", NULL, "conv_leaf"), LEAF_CALLS);
	hwt_test_run_free(&run);
	/* The thread came from ITRACE_START: every sample has the comm. */
	perf_script(&run, data, "--itrace=c -F comm,cpu");
	assert_true(count_lines(run.out, "", NULL) > LEAF_CALLS);
	assert_int_equal(count_lines(run.out, "conv_flow", "[000]", NULL),
			 count_lines(run.out, "", NULL));
	hwt_test_run_free(&run);
	hwt_test_tmpdir_remove(dir);
}

/* Reads stream 0 of a session's AUX data whole. */
static uint8_t *aux_all(struct hwt_fmt_session *s, size_t *len)
{
	const struct hwt_fmt_aux_stream *st = hwt_fmt_session_aux(s, 0);
	uint8_t *buf = NULL;
	size_t n = 0;

	for (size_t g = 0; g < st->nsegments; g++) {
		const struct hwt_fmt_aux_segment *sg = hwt_fmt_session_aux_segment(s, 0, g);

		buf = realloc(buf, n + sg->size);
		assert_non_null(buf);
		assert_int_equal(hwt_fmt_session_aux_read(s, 0, g, 0, buf + n, sg->size),
				 (int64_t)sg->size);
		n += sg->size;
	}
	*len = n;
	return buf;
}

struct calls {
	uint64_t from, to, n;
};

/* Adds one call to a small multiset. */
static void calls_add(struct calls *c, size_t *nc, size_t cap, uint64_t from, uint64_t to)
{
	for (size_t i = 0; i < *nc; i++)
		if (c[i].from == from && c[i].to == to) {
			c[i].n++;
			return;
		}
	assert_true(*nc < cap);
	c[*nc].from = from;
	c[*nc].to = to;
	c[(*nc)++].n = 1;
}

/* perf's decoder and hwtrace's (`script --pt`, on the AUX bytes read back
 * from the converted file by our perf.data reader) agree on the static
 * program: the same calls, from and to the same addresses, the same
 * number of taken branches of each kind, the same instruction count. */
static void test_perf_agrees_with_script_pt(void **state)
{
	char *dir = hwt_test_tmpdir(), hwt[512], data[512], pt[512];
	const char *prog = hwt_test_prog("conv_flow_static");
	struct calls *pc = calloc(4096, sizeof(*pc)), *hc = calloc(4096, sizeof(*hc));
	size_t npc = 0, nhc = 0, len;
	struct hwt_fmt_session *s;
	struct hwt_test_run run;
	unsigned long long hins = 0;
	uint64_t insns, perf_calls = 0;
	uint8_t *bytes;
	const char *p;

	(void)state;
	assert_non_null(pc);
	assert_non_null(hc);
	if (!have_perf()) {
		free(pc);
		free(hc);
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("perf is not installed (Debian package linux-perf)");
	}
	snprintf(hwt, sizeof(hwt), "%s/st.hwt", dir);
	snprintf(data, sizeof(data), "%s/st.perf.data", dir);
	snprintf(pt, sizeof(pt), "%s/st.pt", dir);
	insns = record_pt(dir, hwt, "conv_flow_static");
	convert_ok(hwt, data);

	assert_int_equal(hwt_fmt_session_open(&s, data, NULL, NULL), 0);
	assert_int_equal(hwt_fmt_session_naux(s), 1);
	bytes = aux_all(s, &len);
	hwt_fmt_session_close(s);
	hwt_test_write_file(pt, bytes, len);
	free(bytes);

	perf_script(&run, data, "--itrace=c -F flags,ip,addr");
	for (const char *l = run.out; *l;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		unsigned long long from, to;

		/* "  call  FROM =>  TO"; syscalls are "tr end  syscall". */
		if (sscanf(l, " call %llx => %llx", &from, &to) == 2) {
			calls_add(pc, &npc, 4096, from, to);
			perf_calls++;
		}
	}
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s script --pt %s --elf %s --cpu 6/85/4 --itrace=c", hwt_test_hwtrace(),
		     pt, prog);
	assert_int_equal(run.status, 0);
	for (const char *l = run.out; (p = strstr(l, ": call: ")); l = p + 8) {
		unsigned long long from, to;

		assert_int_equal(sscanf(p, ": call: %llx => %llx", &from, &to), 2);
		calls_add(hc, &nhc, 4096, from, to);
	}
	hwt_test_run_free(&run);
	assert_true(perf_calls > LEAF_CALLS + MID_CALLS);
	assert_int_equal(npc, nhc);
	for (size_t i = 0; i < npc; i++) {
		bool found = false;

		for (size_t j = 0; j < nhc && !found; j++)
			if (hc[j].from == pc[i].from && hc[j].to == pc[i].to) {
				assert_int_equal(hc[j].n, pc[i].n);
				found = true;
			}
		assert_true(found);
	}

	/* Taken branches by kind. perf: call, jcc, jmp, return, and
	 * "tr end syscall" for a syscall (the kernel is not traced);
	 * hwtrace: call + call-indirect, jcc, jmp + jmp-indirect, ret,
	 * far-call. */
	{
		uint64_t pcall, pjcc, pjmp, pret, psys;
		uint64_t hcall, hjcc, hjmp, hret, hsys;

		perf_script(&run, data, "--itrace=b -F flags,ip,addr");
		pcall = count_lines(run.out, "  call ", NULL);
		pjcc = count_lines(run.out, "  jcc ", NULL);
		pjmp = count_lines(run.out, "  jmp ", NULL);
		pret = count_lines(run.out, "  return ", NULL);
		psys = count_lines(run.out, "tr end  syscall", NULL);
		hwt_test_run_free(&run);
		hwt_test_run(&run, "%s script --pt %s --elf %s --cpu 6/85/4 --itrace=b",
			     hwt_test_hwtrace(), pt, prog);
		assert_int_equal(run.status, 0);
		/* " call" matches call and call-indirect, not far-call. */
		hcall = count_lines(run.out, " call", NULL);
		hjcc = count_lines(run.out, " jcc", NULL);
		hjmp = count_lines(run.out, " jmp", NULL);
		hret = count_lines(run.out, " ret", NULL);
		hsys = count_lines(run.out, " far-call", NULL);
		hwt_test_run_free(&run);
		assert_int_equal(pcall, hcall);
		assert_int_equal(pjcc, hjcc);
		assert_int_equal(pjmp, hjmp);
		assert_int_equal(pret, hret);
		assert_int_equal(psys, hsys);
		assert_true(psys > 0 && pjcc >= LOOP_N - 1);
	}

	/* Instructions: both decoders, and the emulator. */
	perf_script(&run, data, "--itrace=i1i -F ip");
	assert_int_equal(count_lines(run.out, "", NULL), insns);
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s script --pt %s --elf %s --cpu 6/85/4 --stat", hwt_test_hwtrace(), pt,
		     prog);
	assert_int_equal(run.status, 0);
	p = strstr(run.out, "insns: ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "insns: %llu", &hins), 1);
	assert_int_equal(hins, insns);
	hwt_test_run_free(&run);
	free(pc);
	free(hc);
	hwt_test_tmpdir_remove(dir);
}

/* Our own perf.data reader reads what convert wrote: the intel_pt event
 * and the dummy:u event that took the sideband over, the AUXTRACE_INFO
 * record naming the PT event's type, every sideband record, and the AUX
 * bytes identical to the recording's (plus perf's zero padding to 8). */
static void test_readback(void **state)
{
	char *dir = hwt_test_tmpdir(), hwt[512], data[512];
	struct hwt_fmt_session *a, *b;
	const struct hwt_fmt_meta *m;
	const struct hwt_fmt_evlist *ev;
	struct hwt_fmt_record rec;
	struct hwt_fmt_session_stats sa, sb;
	uint64_t na = 0, nb = 0, dummy_records = 0;
	uint8_t *x, *y;
	size_t lx, ly;

	(void)state;
	snprintf(hwt, sizeof(hwt), "%s/r.hwt", dir);
	snprintf(data, sizeof(data), "%s/r.perf.data", dir);
	record_pt(dir, hwt, "conv_flow");
	convert_ok(hwt, data);
	assert_int_equal(hwt_fmt_session_open(&a, hwt, NULL, NULL), 0);
	assert_int_equal(hwt_fmt_session_open(&b, data, NULL, NULL), 0);
	assert_int_equal(hwt_fmt_session_kind(b), HWT_FMT_KIND_PERF_FILE);

	ev = hwt_fmt_session_evlist(b);
	assert_int_equal(hwt_fmt_evlist_count(ev), 2);
	assert_string_equal(hwt_fmt_evlist_event(ev, 0)->name, "intel_pt//u (emulated)");
	assert_int_equal(hwt_fmt_evlist_event(ev, 0)->attr.type,
			 hwt_fmt_evlist_event(hwt_fmt_session_evlist(a), 0)->attr.type);
	assert_false(hwt_fmt_evlist_event(ev, 0)->attr.mmap2);
	assert_string_equal(hwt_fmt_evlist_event(ev, 1)->name, "dummy:u");
	assert_int_equal(hwt_fmt_evlist_event(ev, 1)->attr.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(hwt_fmt_evlist_event(ev, 1)->attr.config, PERF_COUNT_SW_DUMMY);
	assert_true(hwt_fmt_evlist_event(ev, 1)->attr.mmap2);

	m = hwt_fmt_session_meta_find(b, HWT_META_PERF_AUXTRACE_INFO);
	assert_non_null(m);
	assert_true(m->len >= 16 + 17 * 8);
	assert_int_equal(hwt_le32(m->v.bytes + 8), HWT_FMT_PERF_AUXTRACE_INTEL_PT);
	assert_int_equal(hwt_le64(m->v.bytes + 16), hwt_fmt_evlist_event(ev, 0)->attr.type);
	assert_int_equal(hwt_le64(m->v.bytes + 16 + 8), 31);		 /* time_shift */
	assert_int_equal(hwt_le64(m->v.bytes + 16 + 8 * 2), 1022611261); /* time_mult */
	assert_int_equal(hwt_le64(m->v.bytes + 16 + 8 * 9), 0);		 /* per-thread */
	assert_int_equal(hwt_le64(m->v.bytes + 16 + 8 * 12), 168);	 /* TSC:CTC n */
	assert_int_equal(hwt_le64(m->v.bytes + 16 + 8 * 13), 2);	 /* TSC:CTC d */
	m = hwt_fmt_session_meta_find(b, HWT_META_CPU_MODEL);
	assert_non_null(m);
	assert_int_equal(m->v.u64, 85);
	m = hwt_fmt_session_meta_find(b, HWT_META_TIME_MULT); /* TIME_CONV */
	assert_non_null(m);
	assert_int_equal(m->v.u64, 1022611261);
	/* The emulator records no build-ids: convert reads them from the
	 * mapped files, as perf record lists them. */
	{
		char key[600];
		uint8_t id[20];
		int n = hwt_sym_build_id_read(hwt_test_prog("conv_flow"), id, sizeof(id));

		assert_true(n > 0);
		snprintf(key, sizeof(key), HWT_META_BUILDID_PREFIX "%s",
			 hwt_test_prog("conv_flow"));
		m = hwt_fmt_session_meta_find(b, key);
		assert_non_null(m);
		assert_int_equal(m->len, n);
		assert_memory_equal(m->v.bytes, id, (size_t)n);
	}

	while (hwt_fmt_session_next(a, &rec, NULL) == 0)
		na++;
	while (hwt_fmt_session_next(b, &rec, NULL) == 0) {
		if (rec.type == 71) /* AUXTRACE, delivered as a record */
			continue;
		nb++;
		dummy_records += rec.event == 1;
		if (rec.type == PERF_RECORD_MMAP2 || rec.type == PERF_RECORD_COMM)
			assert_int_equal(rec.event, 1);
		if (rec.type == PERF_RECORD_ITRACE_START || rec.type == PERF_RECORD_AUX)
			assert_int_equal(rec.event, 0);
	}
	assert_int_equal(na, nb);
	assert_true(dummy_records >= 4);
	hwt_fmt_session_stats(b, &sb);
	hwt_fmt_session_stats(a, &sa);
	assert_int_equal(sb.bad_records, 0);
	assert_int_equal(sa.bad_records, 0);

	assert_int_equal(hwt_fmt_session_naux(b), 1);
	assert_int_equal(hwt_fmt_session_aux(b, 0)->tid, hwt_fmt_session_aux(a, 0)->tid);
	assert_int_equal(hwt_fmt_session_aux(b, 0)->cpu, -1);
	x = aux_all(a, &lx);
	y = aux_all(b, &ly);
	assert_true(ly >= lx && ly - lx < 8);
	assert_memory_equal(x, y, lx);
	for (size_t i = lx; i < ly; i++)
		assert_int_equal(y[i], 0);
	free(x);
	free(y);
	hwt_fmt_session_close(a);
	hwt_fmt_session_close(b);
	hwt_test_tmpdir_remove(dir);
}

/* A trace of several AUX records (the emulator announces one per 4 MB):
 * every AUXTRACE record after the first begins at a PSB, so no packet
 * spans two records (perf's decoder reported bad packets at such splits),
 * the bytes are the recording's, and perf decodes it without errors. */
static void test_records_at_psb(void **state)
{
	static const uint8_t psb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};
	char *dir = hwt_test_tmpdir(), hwt[512], data[512];
	struct hwt_fmt_session_config cfg;
	struct hwt_fmt_session *a, *b;
	struct hwt_fmt_record rec;
	struct hwt_test_run run;
	uint64_t nrec = 0;
	uint8_t *x, *y;
	size_t lx, ly;

	(void)state;
	snprintf(hwt, sizeof(hwt), "%s/long.hwt", dir);
	snprintf(data, sizeof(data), "%s/long.perf.data", dir);
	record_pt_args(dir, hwt, "conv_long", "30");
	convert_ok(hwt, data);
	hwt_fmt_session_config_init(&cfg);
	cfg.load_aux = true;
	assert_int_equal(hwt_fmt_session_open(&b, data, &cfg, NULL), 0);
	while (hwt_fmt_session_next(b, &rec, NULL) == 0) {
		if (rec.type != 71)
			continue;
		assert_non_null(rec.u.auxtrace.data);
		assert_true(rec.u.auxtrace.size >= 16);
		if (nrec++)
			assert_memory_equal(rec.u.auxtrace.data, psb, sizeof(psb));
	}
	assert_true(nrec >= 2);
	hwt_fmt_session_close(b);
	assert_int_equal(hwt_fmt_session_open(&a, hwt, NULL, NULL), 0);
	assert_int_equal(hwt_fmt_session_open(&b, data, NULL, NULL), 0);
	x = aux_all(a, &lx);
	y = aux_all(b, &ly);
	assert_true(lx > (4u << 20));
	assert_true(ly >= lx && ly - lx < 8);
	assert_memory_equal(x, y, lx);
	free(x);
	free(y);
	hwt_fmt_session_close(a);
	hwt_fmt_session_close(b);
	if (system("perf --version >/dev/null 2>&1") == 0) {
		hwt_test_run(&run, "perf script -i %s --itrace=e 2>&1", data);
		assert_int_equal(run.status, 0);
		assert_false(hwt_test_contains(run.out, "instruction trace error"));
		hwt_test_run_free(&run);
	} else {
		fprintf(stderr, "perf is not installed: the perf decode check is skipped\n");
	}
	hwt_test_tmpdir_remove(dir);
}

/* A recording of samples converts record for record: the same sample IPs
 * in the same order through our reader, and perf report counts them all. */
static void test_samples(void **state)
{
	char *dir = hwt_test_tmpdir(), hwt[512], data[512];
	struct hwt_fmt_session *a, *b;
	struct hwt_fmt_record rec;
	struct hwt_test_run run;
	uint64_t *ips = NULL, n = 0, k = 0;
	char want[64];

	(void)state;
	snprintf(hwt, sizeof(hwt), "%s/s.hwt", dir);
	snprintf(data, sizeof(data), "%s/s.perf.data", dir);
	hwt_test_run(&run, "%s record -e cpu-clock -F 2000 -o %s -- %s", hwt_test_hwtrace(), hwt,
		     hwt_test_prog("rec_hot"));
	assert_int_equal(run.status, 0);
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s convert -i %s -o %s", hwt_test_hwtrace(), hwt, data);
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.err, "read with: perf report"));
	hwt_test_run_free(&run);

	assert_int_equal(hwt_fmt_session_open(&a, hwt, NULL, NULL), 0);
	assert_int_equal(hwt_fmt_session_open(&b, data, NULL, NULL), 0);
	while (hwt_fmt_session_next(a, &rec, NULL) == 0) {
		if (rec.type != PERF_RECORD_SAMPLE)
			continue;
		ips = realloc(ips, (n + 1) * sizeof(*ips));
		assert_non_null(ips);
		ips[n++] = rec.u.sample.ip;
	}
	assert_true(n > 100);
	while (hwt_fmt_session_next(b, &rec, NULL) == 0) {
		if (rec.type != PERF_RECORD_SAMPLE)
			continue;
		assert_true(k < n);
		assert_int_equal(rec.u.sample.ip, ips[k]);
		k++;
	}
	assert_int_equal(k, n);
	hwt_fmt_session_close(a);
	hwt_fmt_session_close(b);

	if (have_perf()) {
		hwt_test_run(&run, "perf report -i %s --stdio --sort sym 2>/dev/null", data);
		assert_int_equal(run.status, 0);
		snprintf(want, sizeof(want), "# Samples: %" PRIu64 " ", n);
		if (n >= 1000)
			snprintf(want, sizeof(want), "# Samples: %" PRIu64 "K ", n / 1000);
		assert_true(hwt_test_contains(run.out, want));
		assert_true(hwt_test_contains(run.out, "hot_a"));
		hwt_test_run_free(&run);
		hwt_test_run(&run, "perf script -i %s -F ip 2>/dev/null | wc -l", data);
		assert_int_equal(strtoull(run.out, NULL, 10), n);
		hwt_test_run_free(&run);
	}
	free(ips);
	hwt_test_tmpdir_remove(dir);
}

/* Errors name the cause and the fix, and exit 1 (usage: 2). */
static void test_errors(void **state)
{
	char *dir = hwt_test_tmpdir(), path[512], out[512];
	const char *h = hwt_test_hwtrace();
	struct hwt_test_run run;
	struct stat st;

	(void)state;
	hwt_test_run(&run, "%s convert -i %s/missing.hwt -o %s/o.data", h, dir, dir);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "missing.hwt: no such file"));
	hwt_test_run_free(&run);
	snprintf(out, sizeof(out), "%s/o.data", dir);
	assert_int_not_equal(stat(out, &st), 0);

	snprintf(path, sizeof(path), "%s/text.hwt", dir);
	hwt_test_write_file(path, "hello, this is not a trace\n", 27);
	hwt_test_run(&run, "%s convert %s -o %s", h, path, out);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "text.hwt is not a hwtrace or perf.data recording "
					       "(unknown format at offset 0)"));
	hwt_test_run_free(&run);
	assert_int_not_equal(stat(out, &st), 0);

	/* A perf.data (our own writer's) is refused: nothing to convert. */
	{
		struct hwt_fmt_evlist *ev;
		struct hwt_fmt_perf_writer *w;
		struct perf_event_attr attr;
		uint64_t id = 7;

		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		assert_int_equal(hwt_fmt_evlist_alloc(&ev), 0);
		assert_true(hwt_fmt_evlist_add(ev, &attr, sizeof(attr), "cpu-clock", &id, 1) >= 0);
		snprintf(path, sizeof(path), "%s/perf.data", dir);
		assert_int_equal(hwt_fmt_perf_writer_open(&w, path, ev), 0);
		assert_int_equal(hwt_fmt_perf_writer_close(w), 0);
		hwt_fmt_evlist_free(ev);
	}
	hwt_test_run(&run, "%s convert %s -o %s", h, path, out);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "is perf.data already"));
	hwt_test_run_free(&run);

	/* Usage errors. */
	hwt_test_run(&run, "%s convert -i a.hwt b.hwt", h);
	assert_int_equal(run.status, 2);
	assert_true(hwt_test_contains(run.err, "give the input once"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s convert a.hwt b.hwt", h);
	assert_int_equal(run.status, 2);
	assert_true(hwt_test_contains(run.err, "unexpected argument 'b.hwt'"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s convert --bogus", h);
	assert_int_equal(run.status, 2);
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s convert --help", h);
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.out, "usage: hwtrace convert"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "cd %s && %s convert", dir, h);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "hwtrace.hwt: no such file"));
	hwt_test_run_free(&run);
	hwt_test_tmpdir_remove(dir);
}

/* Output errors, and a recording cut inside a chunk: the readable part is
 * converted (perf decodes it), the command says so and exits 1. An
 * existing output is replaced and made private. */
static void test_output_and_truncated(void **state)
{
	char *dir = hwt_test_tmpdir(), hwt[512], cut[512], out[512];
	const char *h = hwt_test_hwtrace();
	struct hwt_fmt_reader *r;
	struct hwt_fmt_session *s;
	struct hwt_test_run run;
	struct hwt_fmt_record rec;
	uint64_t n = 0, cut_at = 0, first_aux = 0;
	struct stat st;
	size_t len;
	char *bytes;

	(void)state;
	snprintf(hwt, sizeof(hwt), "%s/t.hwt", dir);
	snprintf(cut, sizeof(cut), "%s/cut.hwt", dir);
	snprintf(out, sizeof(out), "%s/o.data", dir);
	if (!have_qemu()) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	}
	/* 3000 rounds: 1.3 MB of PT, two AUX chunks. */
	hwt_test_run(&run, "%s record --pt=emulate -o %s -- %s 3000", h, hwt,
		     hwt_test_prog("conv_flow"));
	assert_int_equal(run.status, 0);
	hwt_test_run_free(&run);

	hwt_test_run(&run, "%s convert %s -o %s/no/such/dir/o.data", h, hwt, dir);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "its directory does not exist"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s convert %s -o %s", h, hwt, dir);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "is a directory"));
	hwt_test_run_free(&run);

	hwt_test_write_file(out, "old", 3);
	assert_int_equal(chmod(out, 0644), 0);
	hwt_test_run(&run, "%s convert -q %s -o %s", h, hwt, out);
	assert_int_equal(run.status, 0);
	assert_string_equal(run.err, "");
	hwt_test_run_free(&run);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true(st.st_size > 1000000);

	/* Cut the file in the middle of its last AUX chunk. */
	assert_int_equal(hwt_fmt_reader_open(&r, hwt, NULL, NULL), 0);
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(r); i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(r, i);

		if (c->type != HWT_FMT_CHUNK_AUX)
			continue;
		if (!first_aux)
			first_aux = c->raw_size;
		if (c->file_offset > cut_at)
			cut_at = c->file_offset + HWT_FMT_CHUNK_HEADER_SIZE + c->comp_size / 2;
	}
	hwt_fmt_reader_close(r);
	assert_true(first_aux > 0 && cut_at > 0);
	bytes = hwt_test_read_file(hwt, &len);
	assert_non_null(bytes);
	assert_true(cut_at < len);
	hwt_test_write_file(cut, bytes, cut_at);
	free(bytes);
	unlink(out);
	hwt_test_run(&run, "%s convert %s -o %s", h, cut, out);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "error: "));
	assert_true(hwt_test_contains(run.err, " did not end cleanly ("));
	assert_true(hwt_test_contains(run.err, "it ends inside a chunk at offset"));
	assert_true(hwt_test_contains(run.err, ": 7 records, "));
	hwt_test_run_free(&run);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(hwt_fmt_session_open(&s, out, NULL, NULL), 0);
	while (hwt_fmt_session_next(s, &rec, NULL) == 0)
		n += rec.type == PERF_RECORD_MMAP2;
	assert_true(n >= 3);
	assert_int_equal(hwt_fmt_session_naux(s), 1);
	assert_int_equal(hwt_fmt_session_aux_segment(s, 0, 0)->size, first_aux);
	hwt_fmt_session_close(s);
	if (have_perf()) {
		/* perf decodes the complete part (27.5 million instructions in
		 * all, 1 MiB of the 1.3 MB of PT kept: at least 20 million);
		 * where the trace stops inside a packet it reports the damage:
		 * a few errors (one CI-like ASan run under load saw more than
		 * 4, not reproduced in 5 reruns: the bound is 16, and the
		 * errors are printed when there are more than 4). */
		hwt_test_run(&run, "perf script -i %s --itrace=i1000000i -F ip", out);
		assert_int_equal(run.status, 0);
		assert_true(count_lines(run.out, "", NULL) >= 20);
		hwt_test_run_free(&run);
		hwt_test_run(&run, "perf script -i %s --itrace=e", out);
		assert_int_equal(run.status, 0);
		if (count_lines(run.out, "instruction trace error", NULL) > 4)
			fprintf(stderr, "perf's errors at the cut:\n%s", run.out);
		assert_true(count_lines(run.out, "instruction trace error", NULL) <= 16);
		hwt_test_run_free(&run);
	}
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_perf_decodes_known_flow),
	    cmocka_unit_test(test_perf_decodes_real_shape),
	    cmocka_unit_test(test_perf_decodes_filter),
	    cmocka_unit_test(test_perf_agrees_with_script_pt),
	    cmocka_unit_test(test_threads_and_fork),
	    cmocka_unit_test(test_per_cpu_layout),
	    cmocka_unit_test(test_readback),
	    cmocka_unit_test(test_records_at_psb),
	    cmocka_unit_test(test_samples),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_output_and_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
