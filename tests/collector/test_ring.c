/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_ring.c - reading whole records out of a perf ring
 * buffer's data area (hwt_coll_ring_next) with synthetic buffers: runs in
 * place, the one record that wraps copied out whole, running positions far
 * beyond the area's size, random record sizes and head steps (seeded) whose
 * concatenated output must equal what was written, and the impossible
 * headers the function must refuse rather than read past.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/rec_int.h"
#include "tests/lib/testutil.h"

/* Writes a record of size bytes (type = seq, body = seq bytes) at running
 * position pos of a ring of size rsize; returns the new position. */
static uint64_t put(uint8_t *ring, uint64_t rsize, uint64_t pos, uint16_t size, uint32_t seq,
		    uint8_t *log, size_t *loglen)
{
	uint8_t rec[1024];

	hwt_put_le32(rec, seq);
	hwt_put_le16(rec + 4, 0);
	hwt_put_le16(rec + 6, size);
	for (uint16_t i = 8; i < size; i++)
		rec[i] = (uint8_t)(seq + i);
	for (uint16_t i = 0; i < size; i++)
		ring[(pos + i) & (rsize - 1)] = rec[i];
	if (log) {
		memcpy(log + *loglen, rec, size);
		*loglen += size;
	}
	return pos + size;
}

static void test_runs_and_wrap(void **state)
{
	uint8_t ring[256] = {0}, *scratch = malloc(HWT_COLL_RECORD_MAX), log[1024];
	size_t loglen = 0;
	uint64_t tail = 1000 * 256 + 200, head = tail, pos;
	const uint8_t *out;
	int64_t n;

	(void)state;
	/* 32 + 24 fit before the end (200 + 56 = 256), 40 wraps, 16 after. */
	head = put(ring, 256, head, 32, 1, log, &loglen);
	head = put(ring, 256, head, 24, 2, log, &loglen);
	pos = tail;
	n = hwt_coll_ring_next(ring, 256, &pos, head, scratch, &out);
	assert_int_equal(n, 56);
	assert_ptr_equal(out, ring + 200);
	assert_int_equal(pos, head);
	assert_int_equal(hwt_coll_ring_next(ring, 256, &pos, head, scratch, &out), 0);
	assert_null(out);

	/* Now a record that ends exactly at the end, then one that wraps. */
	tail = head; /* at offset 0 of the area */
	head = put(ring, 256, head, 248, 3, NULL, NULL);
	tail = head; /* offset 248 */
	loglen = 0;
	head = put(ring, 256, head, 40, 4, log, &loglen); /* 248..288: wraps */
	head = put(ring, 256, head, 16, 5, log, &loglen);
	pos = tail;
	n = hwt_coll_ring_next(ring, 256, &pos, head, scratch, &out);
	assert_int_equal(n, 40);
	assert_ptr_equal(out, scratch);
	assert_memory_equal(out, log, 40);
	n = hwt_coll_ring_next(ring, 256, &pos, head, scratch, &out);
	assert_int_equal(n, 16);
	assert_ptr_equal(out, ring + 32);
	assert_memory_equal(out, log + 40, 16);
	assert_int_equal(pos, head);
	free(scratch);
}

static void test_random(void **state)
{
	uint64_t seed = hwt_test_seed(), rng = seed;
	const uint64_t rsize = 1024;
	uint8_t *ring = calloc(1, rsize), *scratch = malloc(HWT_COLL_RECORD_MAX);
	uint8_t *wlog = malloc(1 << 20), *rlog = malloc(1 << 20);
	size_t wlen = 0, rlen = 0;
	uint64_t head = hwt_test_rand(&rng) % 100000 * 8, tail = head;
	uint32_t seq = 0;

	(void)state;
	for (int round = 0; round < 2000 && wlen < (1 << 20) - 4096; round++) {
		/* The producer writes while there is room (as the kernel). */
		for (;;) {
			uint16_t size = (uint16_t)(8 + 8 * (hwt_test_rand(&rng) % 40));

			if (head + size - tail > rsize || hwt_test_rand(&rng) % 4 == 0)
				break;
			head = put(ring, rsize, head, size, seq++, wlog, &wlen);
		}
		/* The consumer reads everything up to head. */
		for (;;) {
			const uint8_t *out;
			int64_t n = hwt_coll_ring_next(ring, rsize, &tail, head, scratch, &out);

			assert_true(n >= 0);
			if (!n)
				break;
			/* whole records only */
			for (int64_t off = 0; off < n; off += hwt_le16(out + off + 6))
				assert_true(hwt_le16(out + off + 6) >= 8);
			memcpy(rlog + rlen, out, (size_t)n);
			rlen += (size_t)n;
		}
	}
	if (rlen != wlen || memcmp(rlog, wlog, wlen))
		fail_msg("read stream differs from the written one (seed %llu)",
			 (unsigned long long)seed);
	assert_true(seq > 1000);
	free(ring);
	free(scratch);
	free(wlog);
	free(rlog);
}

static void test_refusals(void **state)
{
	uint8_t ring[64] = {0}, *scratch = malloc(HWT_COLL_RECORD_MAX);
	const uint8_t *out;
	uint64_t pos = 0;

	(void)state;
	/* size 0 header: the area is not a ring (or was overwritten) */
	assert_int_equal(hwt_coll_ring_next(ring, 64, &pos, 16, scratch, &out), -HWT_EFORMAT);
	/* a record that claims to end beyond head */
	hwt_put_le16(ring + 6, 32);
	assert_int_equal(hwt_coll_ring_next(ring, 64, &pos, 16, scratch, &out), -HWT_EFORMAT);
	/* ... also when it would wrap */
	pos = 56;
	hwt_put_le16(ring + 56 + 6, 48);
	assert_int_equal(hwt_coll_ring_next(ring, 64, &pos, 56 + 24, scratch, &out), -HWT_EFORMAT);
	/* more than the area between tail and head, head behind tail */
	pos = 0;
	assert_int_equal(hwt_coll_ring_next(ring, 64, &pos, 65, scratch, &out), -HWT_EINVAL);
	pos = 10;
	assert_int_equal(hwt_coll_ring_next(ring, 64, &pos, 5, scratch, &out), -HWT_EINVAL);
	/* a size that is not a power of two */
	pos = 0;
	assert_int_equal(hwt_coll_ring_next(ring, 48, &pos, 8, scratch, &out), -HWT_EINVAL);
	free(scratch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_runs_and_wrap),
	    cmocka_unit_test(test_random),
	    cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
