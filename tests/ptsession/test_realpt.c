/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/ptsession/test_realpt.c - real Intel PT recordings through the PT
 * session (third-party data in tests/data, see its README.md):
 *
 * - perf-intel-pt/: `perf record -e intel_pt//` of `echo` on Linux 4.14, in
 *   file and pipe mode, two per-CPU AUX streams with SWITCH_CPU_WIDE
 *   sideband. The traced binaries are not available, so the expected result
 *   is exactly this: every PSB segment synchronizes (as many as libipt's
 *   ptdump lists PSBs) and stops at the first instruction with a "no memory
 *   mapped" decode error; no other gap kind; every AUX byte is read; the
 *   missing objects are named; the threads come from the switch records.
 * - drpt2trace/: a tiny real hardware trace of a static hello world with its
 *   sideband. It is packed here into a .hwt (per-thread stream, the primary
 *   sideband's records with the binary's path put where the recording had
 *   it) and decoded through the session: 8 instructions, the two syscalls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptsession/ptsession.h"
#include "tests/lib/testutil.h"

struct tally {
	uint64_t gaps, nomap_gaps, other_gaps, blocks, insns, calls;
	int32_t tids[16];
	size_t ntids;
};

static int tally_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct tally *t = ctx;
	bool seen = false;

	for (size_t i = 0; i < t->ntids; i++)
		seen |= t->tids[i] == rec->tid;
	if (!seen && t->ntids < HWT_ARRAY_SIZE(t->tids))
		t->tids[t->ntids++] = rec->tid;
	switch (rec->type) {
	case HWT_DEC_REC_GAP:
		t->gaps++;
		if (rec->u.gap.kind == HWT_DEC_GAP_ERROR && rec->u.gap.what &&
		    strstr(rec->u.gap.what, "no memory mapped"))
			t->nomap_gaps++;
		else
			t->other_gaps++;
		break;
	case HWT_DEC_REC_BLOCK:
		t->blocks++;
		t->insns += rec->u.block.ninsn;
		break;
	case HWT_DEC_REC_CALL:
		t->calls++;
		break;
	default:
		break;
	}
	return 0;
}

static void decode_file(const char *path, unsigned threads, struct tally *t,
			struct hwt_pts_stats *st)
{
	struct hwt_fmt_session *s;
	struct hwt_pts *pts;
	struct hwt_pts_config cfg;
	struct hwt_dec_sink sink = {sizeof(sink), 0, tally_rec, t, NULL, NULL, NULL};
	uint64_t off = 0;

	memset(t, 0, sizeof(*t));
	assert_int_equal(hwt_fmt_session_open(&s, path, NULL, &off), 0);
	assert_true(hwt_pts_session_has_pt(s));
	hwt_pts_config_init(&cfg);
	cfg.threads = threads;
	assert_int_equal(hwt_pts_open(&pts, s, &cfg, &off), 0);
	assert_int_equal(hwt_pts_add_sink(pts, &sink), 0);
	assert_int_equal(hwt_pts_run(pts), 0);
	hwt_pts_stats(pts, st);
	hwt_pts_close(pts);
	hwt_fmt_session_close(s);
}

static unsigned psb_count(const char *dump)
{
	struct hwt_test_run r;
	unsigned n;

	hwt_test_run(&r, "zstdcat %s/perf-intel-pt/%s | grep -c '^[0-9a-f]* *psb$'",
		     hwt_test_testdata(), dump);
	assert_int_equal(r.status, 0);
	n = (unsigned)strtoul(r.out, NULL, 10);
	hwt_test_run_free(&r);
	return n;
}

static void check_perf(const char *file, const char *dump0, const char *dump3, uint64_t bytes)
{
	char path[1024];
	struct tally t, t2;
	struct hwt_pts_stats st;
	unsigned psbs;
	bool echo_thread = false;

	snprintf(path, sizeof(path), "%s/perf-intel-pt/%s", hwt_test_testdata(), file);
	if (access(path, R_OK) != 0)
		fail_msg("%s is missing (tests/data is part of the tree)", path);
	psbs = psb_count(dump0) + psb_count(dump3);
	assert_true(psbs >= 2);
	decode_file(path, 1, &t, &st);
	assert_true(st.per_cpu);
	assert_false(st.emulated);
	assert_int_equal(st.streams, 2);
	assert_int_equal(st.aux_bytes, bytes);
	assert_int_equal(st.lost_gaps, 0);
	assert_int_equal(st.read_errors, 0);
	assert_true(st.missing_objects >= 1);
	assert_int_equal(t.gaps, psbs);
	assert_int_equal(t.nomap_gaps, psbs);
	assert_int_equal(t.other_gaps, 0);
	assert_int_equal(t.insns, 0);
	for (size_t i = 0; i < t.ntids; i++)
		echo_thread |= t.tids[i] > 0;
	assert_true(echo_thread);
	/* parallel decoding: the same */
	decode_file(path, 2, &t2, &st);
	assert_int_equal(t2.gaps, t.gaps);
	assert_int_equal(t2.nomap_gaps, t.nomap_gaps);
}

static void test_perf_file(void **state)
{
	(void)state;
	check_perf("perf.data.intel_pt-4.14", "quipper-file-cpu0.pt.ptdump.zst",
		   "quipper-file-cpu3.pt.ptdump.zst", 12240 + 137728);
}

static void test_perf_pipe(void **state)
{
	struct hwt_test_run r;

	(void)state;
	check_perf("perf.data.piped.intel_pt-4.14", "quipper-piped-cpu0.pt.ptdump.zst",
		   "quipper-piped-cpu3.pt.ptdump.zst", 76400 + 68192);
	/* and from standard input, through the CLI */
	hwt_test_run(&r,
		     "%s script -i - --itrace=e < %s/perf-intel-pt/perf.data.piped.intel_pt-4.14",
		     hwt_test_hwtrace(), hwt_test_testdata());
	assert_int_equal(r.status, 0);
	assert_int_equal(strlen(r.out) > 0, 1);
	{
		unsigned lines = 0, nomap = 0;

		for (const char *p = r.out; (p = strchr(p, '\n')); p++)
			lines++;
		for (const char *p = r.out; (p = strstr(p, "decode error: no memory mapped")); p++)
			nomap++;
		assert_int_equal(lines, psb_count("quipper-piped-cpu0.pt.ptdump.zst") +
					    psb_count("quipper-piped-cpu3.pt.ptdump.zst"));
		assert_int_equal(nomap, lines);
	}
	assert_true(hwt_test_contains(r.err, "/lib64/libc-2.23.so: No such file or directory"));
	assert_true(hwt_test_contains(r.err, "2 PT stream(s) (per CPU), 144592 bytes"));
	hwt_test_run_free(&r);
}

/* --- drpt2trace ------------------------------------------------------------ */

static uint8_t *read_all(const char *path, size_t *len)
{
	char *p = hwt_test_read_file(path, len);

	assert_non_null(p);
	return (uint8_t *)p;
}

/* Packs drpt2trace's raw files into a .hwt at out. */
static void pack_drpt(const char *out)
{
	const char *td = hwt_test_testdata();
	char path[1024], hello[1024];
	uint8_t *sb, *pt;
	size_t sblen, ptlen;
	struct hwt_fmt_writer *w;
	struct perf_event_attr attr;
	uint8_t ids[16] = {0};
	size_t nids = 0;
	uint32_t tid = 0;
	int rs, as;

	snprintf(path, sizeof(path), "%s/drpt2trace/primary.sideband.pevent", td);
	sb = read_all(path, &sblen);
	snprintf(path, sizeof(path), "%s/drpt2trace/pt.bin", td);
	pt = read_all(path, &ptlen);
	snprintf(hello, sizeof(hello), "%s/drpt2trace/hello", td);

	/* The sample ids the records carry (the trailer's last u64) name the
	 * event; the trailer's tid is the traced thread. */
	for (size_t off = 0; off + 8 <= sblen; off += hwt_le16(sb + off + 6)) {
		uint16_t size = hwt_le16(sb + off + 6);
		uint64_t id;

		assert_true(size >= 8 + 32 && off + size <= sblen);
		id = hwt_le64(sb + off + size - 8);
		if (!tid)
			tid = hwt_le32(sb + off + size - 32 + 4);
		if ((nids < 1 || id != hwt_le64(ids)) && (nids < 2 || id != hwt_le64(ids + 8))) {
			assert_true(nids < 2);
			hwt_put_le64(ids + 8 * nids++, id);
		}
	}
	assert_true(tid > 0);

	assert_int_equal(hwt_fmt_writer_open(&w, out, NULL), 0);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = 8;
	attr.sample_type = 0x10086; /* TID|TIME|CPU|IDENTIFIER */
	attr.sample_id_all = 1;
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_EVENT_COUNT, 1), 0);
	assert_int_equal(hwt_fmt_writer_meta_bytes(w, "event.0.attr", &attr, sizeof(attr)), 0);
	assert_int_equal(hwt_fmt_writer_meta_str(w, "event.0.name", "intel_pt//u"), 0);
	assert_int_equal(hwt_fmt_writer_meta_bytes(w, "event.0.ids", ids, 8 * nids), 0);
	assert_int_equal(hwt_fmt_writer_meta_str(w, HWT_META_CPU_VENDOR, "GenuineIntel"), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_CPU_FAMILY, 6), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_CPU_MODEL, 85), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_CPU_STEPPING, 4), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, "pt.config.mtc_freq", 3), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, "pt.config.nom_freq", 37), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, "pt.config.cpuid_0x15_eax", 2), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, "pt.config.cpuid_0x15_ebx", 308), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, "pt.config.per_thread", 1), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_TIME_SHIFT, 31), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_TIME_MULT, 581029125), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_TIME_ZERO, 18444502336406842448ull),
			 0);
	rs = hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, -1, -1, "sideband");
	as = hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, -1, (int32_t)tid, "pt");
	assert_true(rs >= 0 && as >= 0);

	/* The records, the MMAP2 of /hello pointing at the test data (the
	 * fixed part of MMAP2 is 72 bytes with its header). */
	for (size_t off = 0; off + 8 <= sblen; off += hwt_le16(sb + off + 6)) {
		const uint8_t *r = sb + off;
		uint16_t size = hwt_le16(r + 6);

		if (hwt_le32(r) == PERF_RECORD_MMAP2 && size > 72 + 32 &&
		    !strcmp((const char *)r + 72, "/hello")) {
			size_t name = (strlen(hello) + 1 + 7) & ~(size_t)7, len = 72 + name + 32;
			uint8_t *rec = calloc(1, len);

			assert_non_null(rec);
			memcpy(rec, r, 72);
			memcpy(rec + 72, hello, strlen(hello));
			memcpy(rec + 72 + name, r + size - 32, 32);
			hwt_put_le16(rec + 6, (uint16_t)len);
			assert_int_equal(hwt_fmt_writer_records(w, (uint32_t)rs, rec, len), 0);
			free(rec);
			continue;
		}
		assert_int_equal(hwt_fmt_writer_records(w, (uint32_t)rs, r, size), 0);
	}
	assert_int_equal(hwt_fmt_writer_aux(w, (uint32_t)as, 0, pt, ptlen), 0);
	assert_int_equal(hwt_fmt_writer_close(w), 0);
	free(sb);
	free(pt);
}

static void test_drpt2trace(void **state)
{
	char *dir = hwt_test_tmpdir(), path[1024];
	struct tally t;
	struct hwt_pts_stats st;
	struct hwt_test_run r;

	(void)state;
	snprintf(path, sizeof(path), "%s/drpt2trace/pt.bin", hwt_test_testdata());
	if (access(path, R_OK) != 0) {
		hwt_test_tmpdir_remove(dir);
		fail_msg("%s is missing (tests/data is part of the tree)", path);
	}
	snprintf(path, sizeof(path), "%s/hello.hwt", dir);
	pack_drpt(path);
	decode_file(path, 1, &t, &st);
	assert_int_equal(st.dec.insns, 8);
	assert_int_equal(t.insns, 8);
	assert_int_equal(t.other_gaps + t.nomap_gaps, 0);
	assert_int_equal(st.missing_objects, 0);
	assert_int_equal(st.streams_decoded, 1);
	/* the CLI: eight instructions of _start, the two syscalls */
	hwt_test_run(&r, "%s script -q -i %s --itrace=i", hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 0);
	{
		unsigned lines = 0;

		for (const char *p = r.out; (p = strchr(p, '\n')); p++)
			lines++;
		assert_int_equal(lines, 8);
	}
	assert_true(hwt_test_contains(r.out, "insn:           401000 "));
	assert_true(hwt_test_contains(r.out, "insn:           401025 "));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_perf_file),
	    cmocka_unit_test(test_perf_pipe),
	    cmocka_unit_test(test_drpt2trace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
