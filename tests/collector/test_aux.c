/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_aux.c - the AUX area logic without PT hardware:
 * full-trace reads (head/tail, wrap into two spans, a head too far ahead),
 * snapshot (overwrite) mode against a simulated PMU that writes a known
 * byte stream around the area (first snapshot with and without a wrap,
 * continuing snapshots, a wrap between snapshots, nothing new), and what
 * PERF_RECORD_AUX flags count as gaps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "collector/rec_int.h"
#include "tests/lib/testutil.h"

static void test_full(void **state)
{
	struct hwt_coll_aux_read rd;

	(void)state;
	assert_int_equal(hwt_coll_aux_full(64, 0, 40, &rd), 0);
	assert_int_equal(rd.nspans, 1);
	assert_int_equal(rd.span[0].aux_offset, 0);
	assert_int_equal(rd.span[0].buf_off, 0);
	assert_int_equal(rd.span[0].len, 40);
	assert_int_equal(rd.new_tail, 40);
	assert_false(rd.gap);
	/* 40..100 wraps: 24 bytes at the end, 36 at the start */
	assert_int_equal(hwt_coll_aux_full(64, 40, 100, &rd), 0);
	assert_int_equal(rd.nspans, 2);
	assert_int_equal(rd.span[0].aux_offset, 40);
	assert_int_equal(rd.span[0].buf_off, 40);
	assert_int_equal(rd.span[0].len, 24);
	assert_int_equal(rd.span[1].aux_offset, 64);
	assert_int_equal(rd.span[1].buf_off, 0);
	assert_int_equal(rd.span[1].len, 36);
	assert_int_equal(rd.new_tail, 100);
	/* running offsets far beyond the size */
	assert_int_equal(hwt_coll_aux_full(64, 64 * 1000 + 8, 64 * 1000 + 16, &rd), 0);
	assert_int_equal(rd.span[0].buf_off, 8);
	assert_int_equal(rd.span[0].aux_offset, 64 * 1000 + 8);
	/* nothing new */
	assert_int_equal(hwt_coll_aux_full(64, 100, 100, &rd), 0);
	assert_int_equal(rd.nspans, 0);
	/* a head more than the area ahead: the newest 64 bytes, the rest lost */
	assert_int_equal(hwt_coll_aux_full(64, 0, 100, &rd), 0);
	assert_true(rd.gap);
	assert_int_equal(rd.lost, 36);
	assert_int_equal(rd.span[0].aux_offset, 36);
	assert_int_equal(rd.span[0].len + (rd.nspans > 1 ? rd.span[1].len : 0), 64);
	assert_int_equal(rd.new_tail, 100);
	/* refusals */
	assert_int_equal(hwt_coll_aux_full(48, 0, 8, &rd), -HWT_EINVAL);
	assert_int_equal(hwt_coll_aux_full(64, 10, 8, &rd), -HWT_EINVAL);
}

/* A PMU writing the byte stream b(i) = i % 251 + 1 (never 0) around an
 * area, as PT does in overwrite mode. */
struct pmu {
	uint8_t *buf;
	uint64_t size, written;
};

static uint8_t b(uint64_t i)
{
	return (uint8_t)(i % 251 + 1);
}

static void run(struct pmu *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++, p->written++)
		p->buf[p->written % p->size] = b(p->written);
}

/* Takes a snapshot and checks that its bytes are the stream's bytes
 * [from, to) and that its AUX offsets are as expected. */
static void snap_check(struct hwt_coll_aux_snap *st, struct pmu *p, uint64_t from, uint64_t to,
		       uint64_t want_offset, bool want_gap)
{
	struct hwt_coll_aux_read rd;
	uint64_t k = from;

	assert_int_equal(hwt_coll_aux_snapshot(st, p->buf, p->written % p->size, &rd), 0);
	assert_int_equal(rd.gap, want_gap);
	if (from == to) {
		assert_int_equal(rd.nspans, 0);
		return;
	}
	assert_true(rd.nspans >= 1);
	assert_int_equal(rd.span[0].aux_offset, want_offset);
	for (unsigned s = 0; s < rd.nspans; s++) {
		if (s)
			assert_int_equal(rd.span[s].aux_offset,
					 rd.span[s - 1].aux_offset + rd.span[s - 1].len);
		for (uint64_t i = 0; i < rd.span[s].len; i++, k++)
			assert_int_equal(p->buf[rd.span[s].buf_off + i], b(k));
	}
	assert_int_equal(k, to);
}

static void test_snapshot(void **state)
{
	struct pmu p = {calloc(1, 1024), 1024, 0};
	struct hwt_coll_aux_snap st;

	(void)state;
	hwt_coll_aux_snap_init(&st, 1024);
	/* First snapshot, no wrap yet: [0, 400). */
	run(&p, 400);
	snap_check(&st, &p, 0, 400, 0, false);
	/* More, still within a lap: continues at offset 400. */
	run(&p, 300);
	snap_check(&st, &p, 400, 700, 400, false);
	/* Across the end of the area, but less than a lap: two spans. */
	run(&p, 500);
	snap_check(&st, &p, 700, 1200, 700, false);
	/* Nothing new. */
	snap_check(&st, &p, 1200, 1200, 0, false);
	/* Three laps: the whole area, after a gap in the offsets. */
	run(&p, 3000);
	snap_check(&st, &p, 4200 - 1024, 4200, 1200 + 1024, true);
	/* And it goes on from there. */
	run(&p, 100);
	snap_check(&st, &p, 4200, 4300, 1200 + 1024 + 1024, false);
	/* Almost a lap: the write reached the reference bytes before the last
	 * head, so it is taken as a wrap (the whole area, some of it seen
	 * already): conservative, never a silent hole. */
	run(&p, 1024 - 20);
	{
		struct hwt_coll_aux_read rd;

		assert_int_equal(hwt_coll_aux_snapshot(&st, p.buf, p.written % 1024, &rd), 0);
		assert_true(rd.gap);
		assert_int_equal(rd.span[0].len + (rd.nspans > 1 ? rd.span[1].len : 0), 1024);
	}
	free(p.buf);

	/* A first snapshot after the area already wrapped: the last lap. */
	p.buf = calloc(1, 1024);
	p.written = 0;
	hwt_coll_aux_snap_init(&st, 1024);
	run(&p, 2500);
	snap_check(&st, &p, 2500 - 1024, 2500, 0, true);
	/* head == size is read as 0 */
	{
		struct hwt_coll_aux_read rd;
		struct hwt_coll_aux_snap s2;

		hwt_coll_aux_snap_init(&s2, 1024);
		assert_int_equal(hwt_coll_aux_snapshot(&s2, p.buf, 1024, &rd), 0);
		assert_int_equal(hwt_coll_aux_snapshot(&s2, p.buf, 1025, &rd), -HWT_EINVAL);
		hwt_coll_aux_snap_init(&s2, 1000);
		assert_int_equal(hwt_coll_aux_snapshot(&s2, p.buf, 10, &rd), -HWT_EINVAL);
	}
	free(p.buf);
}

static void test_flags(void **state)
{
	struct hwt_coll_aux_stats st;

	(void)state;
	memset(&st, 0, sizeof(st));
	assert_false(hwt_coll_aux_account(&st, 0, 4096, 0));
	assert_true(hwt_coll_aux_account(&st, 4096, 100, PERF_AUX_FLAG_TRUNCATED));
	assert_true(hwt_coll_aux_account(&st, 4196, 100, PERF_AUX_FLAG_PARTIAL));
	assert_true(hwt_coll_aux_account(&st, 4296, 100, PERF_AUX_FLAG_COLLISION));
	assert_false(hwt_coll_aux_account(&st, 0, 100, PERF_AUX_FLAG_OVERWRITE));
	assert_true(hwt_coll_aux_account(&st, 0, 100,
					 PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_TRUNCATED |
					     PERF_AUX_FLAG_PARTIAL));
	assert_int_equal(st.records, 6);
	assert_int_equal(st.bytes, 4096 + 500);
	assert_int_equal(st.truncated, 2);
	assert_int_equal(st.partial, 2);
	assert_int_equal(st.collision, 1);
	assert_int_equal(st.overwrite, 2);
	assert_int_equal(st.gaps, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full),
	    cmocka_unit_test(test_snapshot),
	    cmocka_unit_test(test_flags),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
