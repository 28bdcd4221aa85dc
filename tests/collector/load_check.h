/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/load_check.h - the recorder under load, shared by the
 * normal-suite variant (test_record_load.c, 8 s) and the `slow` one
 * (test_record_load_slow.c, 60 s): a two-thread workload with deep call
 * chains recorded at the highest rate the kernel allows
 * (kernel.perf_event_max_sample_rate, -F max) with call graphs. No crash;
 * whatever was lost is reported, and reported alike by record's summary,
 * by the file (hwtrace info, the session) and by script; the file reads
 * back whole: every record parses, the samples counted while recording
 * are the samples in the file.
 */
#ifndef HWT_TESTS_COLLECTOR_LOAD_CHECK_H
#define HWT_TESTS_COLLECTOR_LOAD_CHECK_H

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "format/format.h"
#include "tests/lib/testutil.h"

/* "N samples of EV in S s, L lost;" from record's summary line. */
static void load_summary(const char *err, unsigned long long *samples, unsigned long long *lost)
{
	const char *p = strstr(err, "hwtrace: ");

	while (p && sscanf(p, "hwtrace: %llu samples of", samples) != 1)
		p = strstr(p + 1, "hwtrace: ");
	assert_non_null(p);
	p = strstr(p, " s, ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, " s, %llu lost;", lost), 1);
}

static void load_run(double seconds)
{
	char *dir = hwt_test_tmpdir(), file[PATH_MAX], want[128];
	struct hwt_test_run r;
	struct hwt_fmt_session *s;
	struct hwt_fmt_session_stats st;
	struct hwt_fmt_record rec;
	unsigned long long samples = 0, lost = 0, file_samples = 0, file_lost = 0;
	const struct hwt_fmt_reader *rd;
	int err;

	snprintf(file, sizeof(file), "%s/load.hwt", dir);
	hwt_test_run(&r, "%s record -F max -g -o %s -- %s %.1f 2", hwt_test_hwtrace(), file,
		     hwt_test_prog("rec_load"), seconds);
	print_message("%s", r.err);
	assert_int_equal(r.status, 0);
	load_summary(r.err, &samples, &lost);
	if (lost)
		assert_true(hwt_test_contains(r.err, "were lost (the ring buffers overflowed)"));
	hwt_test_run_free(&r);
	/* At least a thousand samples per second of the run. */
	assert_true(samples >= (unsigned long long)(1000 * seconds));

	/* The file: every record parses, the counts agree. */
	assert_int_equal(hwt_fmt_session_open(&s, file, NULL, NULL), 0);
	rd = hwt_fmt_session_reader(s);
	assert_true(hwt_fmt_reader_info(rd)->indexed);
	for (size_t i = 0; i < hwt_fmt_reader_nlost(rd); i++) {
		const struct hwt_fmt_lost *l = hwt_fmt_reader_lost(rd, i);

		if (l->kind == HWT_FMT_LOST_RECORDS || l->kind == HWT_FMT_LOST_SAMPLES)
			file_lost += l->amount;
		assert_true(l->kind != HWT_FMT_LOST_WRITER); /* the writer kept up */
	}
	while ((err = hwt_fmt_session_next(s, &rec, NULL)) == 0)
		file_samples += rec.type == PERF_RECORD_SAMPLE;
	assert_int_equal(err, -HWT_EEOS);
	hwt_fmt_session_stats(s, &st);
	assert_int_equal(st.bad_records, 0);
	assert_int_equal(st.lost_records + st.lost_samples, lost);
	hwt_fmt_session_close(s);
	print_message("load %.0f s: %llu samples, %llu lost (file: %llu samples, %llu lost)\n",
		      seconds, samples, lost, file_samples, file_lost);
	assert_int_equal(file_samples, samples);
	assert_int_equal(file_lost, lost);

	/* info and script say the same. */
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	if (lost)
		assert_true(hwt_test_contains(r.out, "records (kernel ring buffer overflow)"));
	else
		assert_true(hwt_test_contains(r.out, "lost       nothing"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script -i %s >/dev/null", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "script: %llu samples, ", samples);
	assert_true(hwt_test_contains(r.err, want));
	snprintf(want, sizeof(want), "lost while recording: %llu records", lost);
	assert_true(hwt_test_contains(r.err, want));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

#endif
