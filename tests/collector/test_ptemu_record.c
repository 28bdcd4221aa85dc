/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_ptemu_record.c - `hwtrace record --pt=emulate` end
 * to end: the container it writes is read back through format/'s session
 * (flag, metadata, the intel_pt-like attr, sideband records parsed by the
 * shared perf record parser, one AUX stream per thread), and the AUX bytes
 * decode with libipt over the image the MMAP2 records describe, to the
 * instruction count the command printed. CLI errors are checked exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "tests/collector/ptemu_check.h"
#include "format/format.h"
#include "tests/lib/testutil.h"

static bool have_qemu(void)
{
	return system("qemu-x86_64 --version >/dev/null 2>&1") == 0;
}

/* Decodes a whole PT buffer, counting instructions; returns decode errors. */
static uint64_t decode_count(const uint8_t *pt, size_t len, struct pt_image *img,
			     const struct hwt_ptemu_terms *terms, uint64_t *insns)
{
	struct hwt_ptemu_cpu cpu;
	struct pt_config cfg;
	struct pt_insn_decoder *dec;
	uint64_t errors = 0;
	int status;

	hwt_ptemu_cpu_default(&cpu);
	hwt_ptemu_ptconfig(&cfg, terms, &cpu);
	cfg.begin = (uint8_t *)pt;
	cfg.end = (uint8_t *)pt + len;
	dec = pt_insn_alloc_decoder(&cfg);
	pt_insn_set_image(dec, img);
	*insns = 0;
	status = pt_insn_sync_forward(dec);
	for (;;) {
		struct pt_insn in;

		if (status < 0) {
			if (status == -pte_eos)
				break;
			errors++;
			status = pt_insn_sync_forward(dec);
			if (status < 0)
				break;
			continue;
		}
		while (status >= 0 && (status & pts_event_pending)) {
			struct pt_event ev;

			status = pt_insn_event(dec, &ev, sizeof(ev));
		}
		if (status < 0)
			continue;
		if (status & pts_eos)
			break;
		status = pt_insn_next(dec, &in, sizeof(in));
		if (in.iclass != ptic_error)
			(*insns)++;
	}
	pt_insn_free_decoder(dec);
	return errors;
}

static void test_record_file(void **state)
{
	struct hwt_test_run run;
	struct hwt_fmt_session *s;
	struct hwt_fmt_record rec;
	struct hwt_fmt_session_stats st;
	const struct hwt_fmt_meta *m;
	const struct hwt_fmt_event *ev;
	struct hwt_ptemu_terms terms;
	struct pt_image *img;
	char *dir = hwt_test_tmpdir(), path[512];
	unsigned long long printed = 0, total = 0;
	int counts[PERF_RECORD_MAX] = {0};
	const char *p;

	(void)state;
	if (!have_qemu()) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	}
	snprintf(path, sizeof(path), "%s/t.hwt", dir);
	hwt_test_run(&run, "%s record --pt=emulate,cyc -o %s -- %s", hwt_test_hwtrace(), path,
		     hwt_test_prog("ptemu_threads"));
	assert_int_equal(run.status, 0);
	p = strstr(run.err, "4 threads, ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "4 threads, %llu instructions", &printed), 1);
	assert_true(hwt_test_contains(run.err, "emulated"));
	hwt_test_run_free(&run);

	assert_int_equal(hwt_fmt_session_open(&s, path, NULL, NULL), 0);
	assert_true(hwt_fmt_reader_info(hwt_fmt_session_reader(s))->flags &
		    HWT_FMT_FLAG_EMULATED_PT);
	m = hwt_fmt_session_meta_find(s, HWT_META_PT_EMULATED);
	assert_non_null(m);
	assert_int_equal(m->v.u64, 1);
	m = hwt_fmt_session_meta_find(s, "pt.config.cyc");
	assert_non_null(m);
	assert_int_equal(m->v.u64, 1);
	m = hwt_fmt_session_meta_find(s, "pt.config.cpuid_0x15_ebx");
	assert_non_null(m);
	assert_int_equal(m->v.u64, 168);
	m = hwt_fmt_session_meta_find(s, HWT_META_CPU_MODEL);
	assert_non_null(m);
	assert_int_equal(m->v.u64, 85);
	assert_int_equal(hwt_fmt_evlist_count(hwt_fmt_session_evlist(s)), 1);
	ev = hwt_fmt_evlist_event(hwt_fmt_session_evlist(s), 0);
	hwt_ptemu_terms_init(&terms);
	hwt_ptemu_terms_from_config(&terms, ev->attr.config, 1);
	assert_true(terms.cyc && terms.tsc && terms.mtc);

	/* Sideband: every record parses; the image comes from MMAP2. */
	img = pt_image_alloc("record-test");
	while (hwt_fmt_session_next(s, &rec, NULL) == 0) {
		if (rec.type < PERF_RECORD_MAX)
			counts[rec.type]++;
		assert_int_equal(rec.event, 0);
		if (rec.type == PERF_RECORD_MMAP2)
			assert_true(pt_image_add_file(img, rec.u.mmap.filename, rec.u.mmap.pgoff,
						      rec.u.mmap.len, NULL, rec.u.mmap.addr) >= 0);
	}
	hwt_fmt_session_stats(s, &st);
	assert_int_equal(st.bad_records, 0);
	assert_int_equal(counts[PERF_RECORD_COMM], 1);
	assert_int_equal(counts[PERF_RECORD_FORK], 3);
	assert_int_equal(counts[PERF_RECORD_EXIT], 4);
	assert_int_equal(counts[PERF_RECORD_ITRACE_START], 4);
	assert_true(counts[PERF_RECORD_AUX] >= 4);
	assert_true(counts[PERF_RECORD_MMAP2] >= 3); /* program, ld.so, libc */

	/* Four per-thread AUX streams that decode to the printed count. */
	assert_int_equal(hwt_fmt_session_naux(s), 4);
	for (size_t i = 0; i < 4; i++) {
		const struct hwt_fmt_aux_stream *as = hwt_fmt_session_aux(s, i);
		const struct hwt_fmt_aux_segment *seg;
		uint8_t *buf;
		uint64_t insns;

		assert_int_equal(as->cpu, -1);
		assert_int_equal(as->nsegments, 1);
		seg = hwt_fmt_session_aux_segment(s, i, 0);
		buf = malloc(seg->size);
		assert_non_null(buf);
		assert_int_equal(hwt_fmt_session_aux_read(s, i, 0, 0, buf, seg->size),
				 (int64_t)seg->size);
		assert_int_equal(decode_count(buf, seg->size, img, &terms, &insns), 0);
		total += insns;
		free(buf);
	}
	assert_int_equal(total, printed);
	pt_image_free(img);
	hwt_fmt_session_close(s);
	hwt_test_tmpdir_remove(dir);
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static void test_cli_errors(void **state)
{
	struct hwt_test_run run;

	(void)state;
	hwt_test_run(&run, "%s record --pt=emulate -o /dev/null", hwt_test_hwtrace());
	assert_int_equal(run.status, 2);
	assert_string_equal(run.err, "hwtrace record: no command to record: give it after '--' "
				     "(see 'hwtrace record --help')\n");
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s record --pt=emulate,cyc,bogus=1 -- true", hwt_test_hwtrace());
	assert_int_equal(run.status, 2);
	assert_string_equal(run.err, "hwtrace record: bad PT term 'bogus=1' in --pt "
				     "(see 'hwtrace record --help')\n");
	hwt_test_run_free(&run);
	/* Any other --pt value asks for real PT (terms); this machine may
	 * have none. */
	hwt_test_run(&run, "%s record --pt=hardware -- true", hwt_test_hwtrace());
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "no Intel PT") ||
		    hwt_test_contains(run.err, "unknown intel_pt term 'hardware'"));
	hwt_test_run_free(&run);
	hwt_test_run(&run,
		     "%s record --pt=emulate -o /tmp/hwt-ptemu-unused.hwt -- "
		     "/nonexistent/prog",
		     hwt_test_hwtrace());
	/* As without --pt: one line, exit 127. */
	assert_int_equal(run.status, 127);
	assert_string_equal(run.err, "hwtrace: error: command '/nonexistent/prog' not found; check "
				     "its name, or PATH\n");
	hwt_test_run_free(&run);
	/* A failed run leaves no empty output behind. */
	{
		struct stat st;

		assert_int_equal(stat("/tmp/hwt-ptemu-unused.hwt", &st), -1);
	}
	/* A device is no output (the writer would make it private, and a
	 * failed run would remove it). */
	hwt_test_run(&run, "%s record --pt=emulate -o /dev/null -- true", hwt_test_hwtrace());
	assert_int_equal(run.status, 1);
	assert_string_equal(run.err, "hwtrace: error: '/dev/null' is not a regular file: give the "
				     "path of a trace file to write with -o\n");
	hwt_test_run_free(&run);
	{
		struct stat st;

		assert_int_equal(stat("/dev/null", &st), 0);
		assert_true(S_ISCHR(st.st_mode));
		assert_int_equal(st.st_mode & 0777, 0666);
	}
	hwt_test_run(&run, "%s record --pt=emulate -o /nonexistent-dir/x.hwt -- true",
		     hwt_test_hwtrace());
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "/nonexistent-dir/x.hwt"));
	hwt_test_run_free(&run);
	/* Address filters are checked by the kernel's rules before the
	 * command runs: one line naming the rule, no output left. */
	{
		const char *prog = hwt_test_prog("ptemu_filter");
		struct {
			const char *opts, *filter, *msg;
		} bad[] = {
		    {"--pt=emulate --filter ", "'filter nosuch @ %s'", "no symbol 'nosuch' in '"},
		    {"--pt=emulate --filter ", "'start filt_work @ %s'", "has no start filters"},
		    {"--pt=emulate,filter=", "'filter 0xffffffff81000000/0x100'",
		     "the emulator traces user space only"},
		    {"--pt=emulate --filter ",
		     "'filter filt_work @ %s,filter filt_side @ %s,filter filt_tail @ %s'",
		     "3 address filters but this CPU has 2"},
		};
		struct stat st;

		for (size_t i = 0; i < HWT_ARRAY_SIZE(bad); i++) {
			char f[1024];

			/* The same path for every %s. */
			snprintf(f, sizeof(f), "%s", bad[i].filter);
			for (char *p; (p = strstr(f, "%s"));) {
				char rest[1024];

				snprintf(rest, sizeof(rest), "%s", p + 2);
				snprintf(p, sizeof(f) - (size_t)(p - f), "%s%s", prog, rest);
			}
			hwt_test_run(&run, "%s record %s%s -o /tmp/hwt-ptemu-unused.hwt -- %s",
				     hwt_test_hwtrace(), bad[i].opts, f, prog);
			assert_int_equal(run.status, 1);
			assert_true(hwt_test_contains(run.err, bad[i].msg));
			assert_int_equal(count_char(run.err, '\n'), 1);
			hwt_test_run_free(&run);
			assert_int_equal(stat("/tmp/hwt-ptemu-unused.hwt", &st), -1);
		}
	}
}

/* SIGTERM (or Ctrl-C) to hwtrace stops the command, and the trace is
 * still written. (SIGINT is ignored by background jobs of sh -c.) */
static void test_interrupt(void **state)
{
	struct hwt_test_run run;
	struct hwt_fmt_session *s;
	char *dir = hwt_test_tmpdir(), path[512];

	(void)state;
	if (!have_qemu()) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	}
	snprintf(path, sizeof(path), "%s/int.hwt", dir);
	hwt_test_run(&run,
		     "%s record --pt=emulate -o %s -- %s long 100000000000 & p=$!; "
		     "sleep 1; kill -TERM $p; wait $p",
		     hwt_test_hwtrace(), path, hwt_test_prog("ptemu_end"));
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.err, "the command exited with status 143"));
	hwt_test_run_free(&run);
	assert_int_equal(hwt_fmt_session_open(&s, path, NULL, NULL), 0);
	assert_int_equal(hwt_fmt_session_naux(s), 1);
	assert_true(hwt_fmt_session_aux_segment(s, 0, 0)->size > 1000);
	hwt_fmt_session_close(s);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_file),
	    cmocka_unit_test(test_cli_errors),
	    cmocka_unit_test(test_interrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
