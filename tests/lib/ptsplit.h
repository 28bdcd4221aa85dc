/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/ptsplit.h - per-CPU recordings made from per-thread ones, with
 * known ground truth: the per-thread recording decodes to it. For the
 * ptsession tests and the stitching benchmark (the emulator records per
 * thread only).
 */
#ifndef HWT_TESTS_PTSPLIT_H
#define HWT_TESTS_PTSPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

/* A per-CPU copy of a per-thread recording under way: in is opened as *s
 * and written to out as *w with its metadata (pt.config.per_thread 0) and
 * its sideband records, less the AUX records (the copy writes its own),
 * plus an empty record stream *swst for switch records. The first n
 * ITRACE_START records give pid[] and start[]; *last is the latest record
 * time; *nstart how many ITRACE_STARTs were seen. Returns 0 or a negative
 * error (*s and *w are then closed). */
int ptsplit_copy(const char *in, const char *out, struct hwt_fmt_session **s,
		 struct hwt_fmt_writer **w, int *swst, uint32_t *pid, uint64_t *start, uint32_t n,
		 uint64_t *last, uint32_t *nstart);

/* Appends a SWITCH_CPU_WIDE IN record (pid's thread pid switched in on cpu
 * at time, from the idle task) to record stream swst. pid 0: the idle
 * task. Returns 0 or a negative error. */
int ptsplit_switch_in(struct hwt_fmt_writer *w, int swst, uint32_t pid, uint64_t time,
		      uint32_t cpu);

/* Rewrites the one-thread recording in (one AUX stream without holes, with
 * time conversion, as `hwtrace record --pt=emulate` writes it)
 * as a per-CPU recording out in which the thread moves: its PT is cut at
 * pieces - 1 PSBs evenly spread, piece i runs on CPU i % ncpu, each cut has
 * what the CPU writes when the thread is preempted (FUP where it stopped,
 * TIP.PGD) and, on the CPU it comes back to, when it runs again (TSC,
 * TIP.PGE where it goes on), and the switch records say who ran where (the
 * idle task meanwhile). Returns 0, or a negative error with a line in why. */
int ptsplit_write(const char *in, const char *out, unsigned int pieces, unsigned int ncpu,
		  char *why, size_t whylen);

#endif
