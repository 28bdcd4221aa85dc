/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/probe_live_int.h - internals of live probes: the ring-buffer
 * reader and the pieces of event setup that tests and the offline driver
 * share.
 */
#ifndef HWT_PROBE_PROBE_LIVE_INT_H
#define HWT_PROBE_PROBE_LIVE_INT_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "perfsys/perfsys.h"
#include "probe/probe_int.h"

struct prb_ring {
	struct hwt_psys *psys; /* the perf system calls (NULL: the kernel) */
	int fd;
	void *base;
	size_t map_size;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t data_size;
	uint8_t *scratch; /* 64 KiB for records that wrap (perf records are < 64 KiB) */
	uint64_t bad;	  /* records with an impossible size (skipped) */
};

/* Maps 1 + pages pages of fd (pages a power of two) through psys. 0 or
 * -errno. */
int prb_ring_open(struct prb_ring *r, struct hwt_psys *psys, int fd, size_t pages);
void prb_ring_close(struct prb_ring *r);
/* Calls fn for every record now in the buffer (contiguous bytes, valid
 * during the call), then releases them to the kernel. Returns the number
 * of records, or the first error of fn (records up to it are released). */
int prb_ring_read(struct prb_ring *r, int (*fn)(void *ctx, const void *rec, size_t len), void *ctx);

/* x86-64 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h). */
enum {
	PRB_REG_AX = 0,
	PRB_REG_CX = 2,
	PRB_REG_DX = 3,
	PRB_REG_SI = 4,
	PRB_REG_DI = 5,
	PRB_REG_R8 = 16,
	PRB_REG_R9 = 17,
};
#define PRB_REGS_MASK                                                                              \
	((1ull << PRB_REG_AX) | (1ull << PRB_REG_CX) | (1ull << PRB_REG_DX) |                      \
	 (1ull << PRB_REG_SI) | (1ull << PRB_REG_DI) | (1ull << PRB_REG_R8) |                      \
	 (1ull << PRB_REG_R9))

/* Fills hit->regs (arg0..5, retval) from a register block sampled with
 * (a subset of) PRB_REGS_MASK (values in register-number order). */
void prb_regs_to_hit(const uint8_t *regs, uint64_t mask, struct hwt_probe_hit *hit);

/* The sample types every probe event carries, so that the time of any
 * record sits at a fixed place (see live.c). */
#define PRB_SAMPLE_BASE                                                                            \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU)

/* A hit from a parsed sample record (no regs interpretation when
 * regs_intr is false: user registers). */
struct hwt_fmt_record;
void prb_hit_from_sample(const struct hwt_fmt_record *rec, bool regs_intr,
			 struct hwt_probe_hit *hit);

#endif /* HWT_PROBE_PROBE_LIVE_INT_H */
