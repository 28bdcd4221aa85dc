/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/format/fmt_testlib.h - a small perf record encoder for the format
 * tests: builds records of every type byte by byte (independently of the
 * parser under test), with an optional sample_id trailer, and a few
 * generators of realistic record streams. Include after testutil.h.
 */
#ifndef HWT_TESTS_FORMAT_FMT_TESTLIB_H
#define HWT_TESTS_FORMAT_FMT_TESTLIB_H

#include <stdint.h>
#include <string.h>

#include "common/hwt.h"
#include "format/format.h"

struct rb {
	uint8_t buf[65536 + 64];
	size_t len;
};

static inline void rb_begin(struct rb *b, uint32_t type, uint16_t misc)
{
	memset(b->buf, 0, 8);
	hwt_put_le32(b->buf, type);
	hwt_put_le16(b->buf + 4, misc);
	b->len = 8;
}

static inline void rb_u64(struct rb *b, uint64_t v)
{
	hwt_put_le64(b->buf + b->len, v);
	b->len += 8;
}

static inline void rb_u32(struct rb *b, uint32_t v)
{
	hwt_put_le32(b->buf + b->len, v);
	b->len += 4;
}

static inline void rb_u16(struct rb *b, uint16_t v)
{
	hwt_put_le16(b->buf + b->len, v);
	b->len += 2;
}

static inline void rb_bytes(struct rb *b, const void *p, size_t n)
{
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static inline void rb_pad8(struct rb *b)
{
	while (b->len % 8)
		b->buf[b->len++] = 0;
}

/* A NUL-terminated string padded to 8 bytes, as the kernel writes them. */
static inline void rb_str(struct rb *b, const char *s)
{
	rb_bytes(b, s, strlen(s) + 1);
	rb_pad8(b);
}

/* The sample_id trailer for sample_type (fields in the kernel's order). */
static inline void rb_sample_id(struct rb *b, uint64_t st, uint32_t pid, uint32_t tid,
				uint64_t time, uint64_t id, uint32_t cpu)
{
	if (st & PERF_SAMPLE_TID) {
		rb_u32(b, pid);
		rb_u32(b, tid);
	}
	if (st & PERF_SAMPLE_TIME)
		rb_u64(b, time);
	if (st & PERF_SAMPLE_ID)
		rb_u64(b, id);
	if (st & PERF_SAMPLE_STREAM_ID)
		rb_u64(b, id + 1000);
	if (st & PERF_SAMPLE_CPU) {
		rb_u32(b, cpu);
		rb_u32(b, 0);
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		rb_u64(b, id);
}

/* Sets the header size; returns the record length. */
static inline size_t rb_end(struct rb *b)
{
	hwt_put_le16(b->buf + 6, (uint16_t)b->len);
	return b->len;
}

/* A sample with IP|TID|TIME|ID|CPU|PERIOD (the layout of realistic streams
 * below, and what hwt_fmt_attr_info says for FMT_TEST_SAMPLE_TYPE). */
#define FMT_TEST_SAMPLE_TYPE                                                                       \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |  \
	 PERF_SAMPLE_PERIOD)

static inline size_t rb_sample(struct rb *b, uint64_t ip, uint32_t pid, uint32_t tid, uint64_t time,
			       uint64_t id, uint32_t cpu, uint64_t period)
{
	rb_begin(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	rb_u64(b, ip);
	rb_u32(b, pid);
	rb_u32(b, tid);
	rb_u64(b, time);
	rb_u64(b, id);
	rb_u32(b, cpu);
	rb_u32(b, 0);
	rb_u64(b, period);
	return rb_end(b);
}

static inline size_t rb_comm(struct rb *b, uint32_t pid, uint32_t tid, const char *comm,
			     uint64_t time, uint64_t id, uint32_t cpu)
{
	rb_begin(b, PERF_RECORD_COMM, 0);
	rb_u32(b, pid);
	rb_u32(b, tid);
	rb_str(b, comm);
	rb_sample_id(b, FMT_TEST_SAMPLE_TYPE, pid, tid, time, id, cpu);
	return rb_end(b);
}

static inline size_t rb_mmap2(struct rb *b, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len,
			      uint64_t pgoff, const char *file, uint64_t time, uint64_t id,
			      uint32_t cpu)
{
	rb_begin(b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	rb_u32(b, pid);
	rb_u32(b, tid);
	rb_u64(b, addr);
	rb_u64(b, len);
	rb_u64(b, pgoff);
	rb_u32(b, 8);	  /* maj */
	rb_u32(b, 1);	  /* min */
	rb_u64(b, 12345); /* ino */
	rb_u64(b, 7);	  /* ino_generation */
	rb_u32(b, 5);	  /* PROT_READ|PROT_EXEC */
	rb_u32(b, 2);	  /* MAP_PRIVATE */
	rb_str(b, file);
	rb_sample_id(b, FMT_TEST_SAMPLE_TYPE, pid, tid, time, id, cpu);
	return rb_end(b);
}

/* The attr of the realistic streams: one software event. */
static inline void fmt_test_attr(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = PERF_TYPE_SOFTWARE;
	attr->size = sizeof(*attr);
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = 100000;
	attr->sample_type = FMT_TEST_SAMPLE_TYPE;
	attr->sample_id_all = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
}

#endif
