/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptemu_sb.c - the PT emulator's sideband and configuration: perf
 * records in the kernel's layout (MMAP2, COMM, FORK, EXIT, ITRACE_START,
 * AUX) with the sample_id_all trailer of the emulated intel_pt event, that
 * event's attr, the PT terms, and the deterministic clock's conversion to
 * perf time. Shared by the qemu plugin and the launcher.
 */
#include "collector/ptemu_int.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hwt.h"

/* perf time of the emulated TSC: ns = (tsc * MULT) >> SHIFT (2.1 GHz), the
 * perf_event_mmap_page conversion with time_zero 0. Stored in metadata. */
#define PTEMU_TIME_SHIFT 31u
#define PTEMU_TIME_MULT	 1022611261u /* round(2^31 * 10 / 21) */

uint64_t hwt_ptemu_tsc_to_ns(uint64_t tsc)
{
	uint64_t quot = tsc >> PTEMU_TIME_SHIFT;
	uint64_t rem = tsc & ((1ull << PTEMU_TIME_SHIFT) - 1);

	return quot * PTEMU_TIME_MULT + ((rem * PTEMU_TIME_MULT) >> PTEMU_TIME_SHIFT);
}

void hwt_ptemu_time_conv(uint32_t *shift, uint32_t *mult, uint64_t *zero)
{
	*shift = PTEMU_TIME_SHIFT;
	*mult = PTEMU_TIME_MULT;
	*zero = 0;
}

void hwt_ptemu_terms_init(struct hwt_ptemu_terms *terms)
{
	memset(terms, 0, sizeof(*terms));
	terms->tsc = true;
	terms->mtc = true;
	terms->mtc_period = 3;
	terms->psb_period = 3;
	terms->tsc_per_insn = 1;
}

static int parse_num(const char *s, size_t len, unsigned long max, unsigned long *out)
{
	char buf[32];
	char *end;

	if (!len || len >= sizeof(buf))
		return -HWT_EPARSE;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (buf[0] < '0' || buf[0] > '9')
		return -HWT_EPARSE;
	*out = strtoul(buf, &end, 0);
	if (*end || *out > max)
		return -HWT_EPARSE;
	return 0;
}

int hwt_ptemu_terms_parse(struct hwt_ptemu_terms *terms, const char *spec, const char **bad)
{
	const char *p = spec;

	if (!terms || !spec)
		return -HWT_EINVAL;
	while (*p) {
		const char *end = strchr(p, ',');
		const char *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		size_t nlen;
		unsigned long v = 1;
		bool *flag = NULL;
		int err = 0;

		eq = memchr(p, '=', len);
		nlen = eq ? (size_t)(eq - p) : len;
		if (len == 0) {
			err = -HWT_EPARSE;
		} else if (nlen == 3 && !strncmp(p, "tsc", 3)) {
			flag = &terms->tsc;
		} else if (nlen == 3 && !strncmp(p, "mtc", 3)) {
			flag = &terms->mtc;
		} else if (nlen == 3 && !strncmp(p, "cyc", 3)) {
			flag = &terms->cyc;
		} else if (nlen == 9 && !strncmp(p, "noretcomp", 9)) {
			flag = &terms->noretcomp;
		} else if (nlen == 10 && !strncmp(p, "mtc_period", 10) && eq) {
			err = parse_num(eq + 1, len - nlen - 1, 15, &v);
			if (!err)
				terms->mtc_period = (uint8_t)v;
		} else if (nlen == 10 && !strncmp(p, "psb_period", 10) && eq) {
			err = parse_num(eq + 1, len - nlen - 1, 15, &v);
			if (!err)
				terms->psb_period = (uint8_t)v;
		} else if (nlen == 3 && !strncmp(p, "tsx", 3)) {
			flag = &terms->tsx;
		} else if (nlen == 3 && !strncmp(p, "pip", 3)) {
			flag = &terms->pip;
		} else if (nlen == 4 && !strncmp(p, "vmcs", 4)) {
			flag = &terms->vmcs;
		} else if (nlen == 7 && !strncmp(p, "vmentry", 7)) {
			flag = &terms->vmentry;
		} else if (nlen == 4 && !strncmp(p, "real", 4)) {
			/* The shapes of the real traces in tests/data/real-pt,
			 * but for VMCS (a VMX guest: perf decodes its code
			 * only with the guest's sideband), only when asked. */
			if (eq)
				err = parse_num(eq + 1, len - nlen - 1, 1, &v);
			if (!err) {
				terms->tsx = terms->pip = v != 0;
				terms->psb_bytes = v ? 256 : 0;
				terms->psb_off = v ? 4 : 0;
			}
		} else if (nlen == 9 && !strncmp(p, "psb_bytes", 9) && eq) {
			err = parse_num(eq + 1, len - nlen - 1, 1ul << 26, &v);
			if (!err && v && v < 256)
				err = -HWT_EPARSE;
			if (!err)
				terms->psb_bytes = (uint32_t)v;
		} else if (nlen == 7 && !strncmp(p, "psb_off", 7) && eq) {
			err = parse_num(eq + 1, len - nlen - 1, 64, &v);
			if (!err)
				terms->psb_off = (uint32_t)v;
		} else if (nlen == 3 && !strncmp(p, "ovf", 3) && eq) {
			err = parse_num(eq + 1, len - nlen - 1, 1ul << 20, &v);
			if (!err)
				terms->ovf = (uint32_t)v;
		} else if (nlen == 6 && !strncmp(p, "filter", 6) && eq) {
			/* perf's filter syntax has commas of its own: the
			 * filters are the rest of the spec. */
			if (!eq[1])
				err = -HWT_EPARSE;
			if (!err) {
				terms->filter = eq + 1;
				return 0;
			}
		} else if (nlen == 12 && !strncmp(p, "tsc_per_insn", 12) && eq) {
			err = parse_num(eq + 1, len - nlen - 1, 1000000, &v);
			if (!err && v == 0)
				err = -HWT_EPARSE;
			if (!err)
				terms->tsc_per_insn = (uint32_t)v;
		} else {
			err = -HWT_EPARSE;
		}
		if (!err && flag) {
			if (eq)
				err = parse_num(eq + 1, len - nlen - 1, 1, &v);
			if (!err)
				*flag = v != 0;
		}
		if (err) {
			if (bad)
				*bad = p;
			return err;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

uint64_t hwt_ptemu_terms_config(const struct hwt_ptemu_terms *terms)
{
	/* /sys/bus/event_source/devices/intel_pt/format/: pt config:0,
	 * cyc 1, mtc 9, tsc 10, noretcomp 11, branch 13, mtc_period 14-17,
	 * psb_period 24-27. */
	uint64_t c = 1ull | (1ull << 13);

	c |= terms->cyc ? 1ull << 1 : 0;
	c |= terms->mtc ? 1ull << 9 : 0;
	c |= terms->tsc ? 1ull << 10 : 0;
	c |= terms->noretcomp ? 1ull << 11 : 0;
	c |= (uint64_t)(terms->mtc_period & 0xf) << 14;
	c |= (uint64_t)(terms->psb_period & 0xf) << 24;
	return c;
}

void hwt_ptemu_terms_from_config(struct hwt_ptemu_terms *terms, uint64_t c, uint32_t tsc_per_insn)
{
	terms->cyc = (c >> 1) & 1;
	terms->mtc = (c >> 9) & 1;
	terms->tsc = (c >> 10) & 1;
	terms->noretcomp = (c >> 11) & 1;
	terms->mtc_period = (uint8_t)((c >> 14) & 0xf);
	terms->psb_period = (uint8_t)((c >> 24) & 0xf);
	terms->tsc_per_insn = tsc_per_insn ? tsc_per_insn : 1;
}

int hwt_ptemu_shape_arg(const struct hwt_ptemu_terms *t, char *buf, size_t cap)
{
	return snprintf(buf, cap, "%u.%u.%u.%u",
			(t->tsx ? 1u : 0u) | (t->pip ? 2u : 0u) | (t->vmcs ? 4u : 0u) |
			    (t->vmentry ? 8u : 0u),
			t->psb_bytes, t->psb_off, t->ovf);
}

int hwt_ptemu_shape_parse(struct hwt_ptemu_terms *t, const char *arg)
{
	unsigned int flags, psb_bytes, psb_off, ovf;

	if (sscanf(arg, "%u.%u.%u.%u", &flags, &psb_bytes, &psb_off, &ovf) != 4 ||
	    (psb_bytes && psb_bytes < 256) || psb_off > 64)
		return -HWT_EINVAL;
	t->tsx = flags & 1;
	t->pip = (flags >> 1) & 1;
	t->vmcs = (flags >> 2) & 1;
	t->vmentry = (flags >> 3) & 1;
	t->psb_bytes = psb_bytes;
	t->psb_off = psb_off;
	t->ovf = ovf;
	return 0;
}

static uint32_t pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/intel_pt/type", "r");
	unsigned int type;

	if (!f)
		return HWT_PTEMU_PMU_TYPE;
	if (fscanf(f, "%u", &type) != 1)
		type = HWT_PTEMU_PMU_TYPE;
	fclose(f);
	return type;
}

size_t hwt_ptemu_attr(const struct hwt_ptemu_terms *terms, void *buf, size_t cap)
{
	struct perf_event_attr attr;
	size_t n = sizeof(attr) < cap ? sizeof(attr) : cap;

	memset(&attr, 0, sizeof(attr));
	attr.type = pmu_type();
	attr.size = sizeof(attr);
	attr.config = hwt_ptemu_terms_config(terms);
	attr.sample_period = 1;
	attr.sample_type = HWT_PTEMU_SAMPLE_TYPE;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.mmap = 1;
	attr.comm = 1;
	attr.task = 1;
	attr.sample_id_all = 1;
	attr.mmap2 = 1;
	attr.comm_exec = 1;
	attr.enable_on_exec = 1;
	memcpy(buf, &attr, n);
	return n;
}

void hwt_ptemu_comm(char comm[16], const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	memset(comm, 0, 16);
	strncpy(comm, base, 15);
}

/* Record assembly: header, body, then the sample_id trailer. */
struct rec {
	uint8_t *buf;
	size_t cap, len;
	bool overflow;
};

static void put(struct rec *r, const void *data, size_t len)
{
	if (r->len + len > r->cap || r->len + len > 0xffff) {
		r->overflow = true;
		return;
	}
	memcpy(r->buf + r->len, data, len);
	r->len += len;
}

static void put32(struct rec *r, uint32_t v)
{
	put(r, &v, 4);
}

static void put64(struct rec *r, uint64_t v)
{
	put(r, &v, 8);
}

static void begin(struct rec *r, void *buf, size_t cap, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = {.type = type, .misc = misc, .size = 0};

	r->buf = buf;
	r->cap = cap;
	r->len = 0;
	r->overflow = false;
	put(r, &h, sizeof(h));
}

static void put_str(struct rec *r, const char *s)
{
	size_t len = strlen(s) + 1;
	static const uint8_t zero[8];

	put(r, s, len);
	/* The kernel pads strings with NULs to a multiple of 8 bytes. */
	if (len % 8)
		put(r, zero, 8 - len % 8);
}

static int finish(struct rec *r, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct perf_event_header *h;

	/* sample_id_all trailer, in the kernel's order: TID, TIME, CPU,
	 * IDENTIFIER (the emulated CPU is CPU 0). */
	put32(r, pid);
	put32(r, tid);
	put64(r, time);
	put32(r, 0);
	put32(r, 0);
	put64(r, HWT_PTEMU_SAMPLE_ID);
	if (r->overflow)
		return -HWT_ETOOBIG;
	h = (struct perf_event_header *)r->buf;
	h->size = (uint16_t)r->len;
	return (int)r->len;
}

int hwt_ptemu_rec_mmap2(void *buf, size_t cap, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino,
			uint32_t prot, uint32_t flags, const char *file, uint64_t time)
{
	struct rec r;

	begin(&r, buf, cap, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	put32(&r, pid);
	put32(&r, tid);
	put64(&r, addr);
	put64(&r, len);
	put64(&r, pgoff);
	put32(&r, maj);
	put32(&r, min);
	put64(&r, ino);
	put64(&r, 0); /* ino_generation */
	put32(&r, prot);
	put32(&r, flags);
	put_str(&r, file);
	return finish(&r, pid, tid, time);
}

int hwt_ptemu_rec_comm(void *buf, size_t cap, uint32_t pid, uint32_t tid, const char *comm,
		       bool exec, uint64_t time)
{
	struct rec r;

	begin(&r, buf, cap, PERF_RECORD_COMM,
	      (uint16_t)(PERF_RECORD_MISC_USER | (exec ? PERF_RECORD_MISC_COMM_EXEC : 0)));
	put32(&r, pid);
	put32(&r, tid);
	put_str(&r, comm);
	return finish(&r, pid, tid, time);
}

int hwt_ptemu_rec_task(void *buf, size_t cap, uint32_t type, uint32_t pid, uint32_t ppid,
		       uint32_t tid, uint32_t ptid, uint64_t time)
{
	struct rec r;

	begin(&r, buf, cap, type, 0);
	put32(&r, pid);
	put32(&r, ppid);
	put32(&r, tid);
	put32(&r, ptid);
	put64(&r, time);
	return finish(&r, pid, tid, time);
}

int hwt_ptemu_rec_itrace_start(void *buf, size_t cap, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct rec r;

	begin(&r, buf, cap, PERF_RECORD_ITRACE_START, 0);
	put32(&r, pid);
	put32(&r, tid);
	return finish(&r, pid, tid, time);
}

int hwt_ptemu_rec_aux(void *buf, size_t cap, uint32_t pid, uint32_t tid, uint64_t offset,
		      uint64_t size, uint64_t flags, uint64_t time)
{
	struct rec r;

	begin(&r, buf, cap, PERF_RECORD_AUX, 0);
	put64(&r, offset);
	put64(&r, size);
	put64(&r, flags);
	return finish(&r, pid, tid, time);
}
