/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/decoder/test_decode.c - the decoder against ground truth: synthetic
 * programs with known control flow (tests/lib/ptsynth.c: every instruction,
 * call, return, conditional outcome and indirect target the program ran is
 * counted while its PT trace is encoded with libipt's encoder), decoded by
 * the FAST and LIBIPT engines, sequentially and in parallel, whole and in
 * pieces; corrupt streams; call stacks starting mid-program; time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <intel-pt.h>

#include "decoder/decoder.h"
#include "tests/lib/dectest.h"
#include "tests/lib/ptsynth.h"
#include "tests/lib/testutil.h"

static size_t psb_period = 4096;

/* The line at p (up to its newline), for sscanf: on the whole text sscanf
 * would measure all the rest each time. */
static const char *one_line(const char *p)
{
	static char buf[512];
	size_t n = strcspn(p, "\n");

	snprintf(buf, sizeof(buf), "%.*s", (int)(n < sizeof(buf) ? n : sizeof(buf) - 1), p);
	return buf;
}

static void synth(struct ptsynth *w, uint64_t seed, uint64_t insns, bool biased,
		  unsigned int syscall_ppm, unsigned int irq_ppm, unsigned int ovf_ppm)
{
	struct ptsynth_config c;

	ptsynth_config_init(&c);
	c.psb_period = psb_period;
	c.seed = seed;
	c.insns = insns / DECTEST_SCALE;
	c.biased = biased;
	c.syscall_ppm = syscall_ppm;
	c.interrupt_ppm = irq_ppm;
	c.overflow_ppm = ovf_ppm;
	assert_int_equal(ptsynth_generate(&c, w), 0);
}

/* Asserts two record texts are equal; prints the first difference. */
#define assert_same_text(a, b) same_text(a, b, #a, #b, __LINE__)

static void same_text(const char *a, const char *b, const char *na, const char *nb, int line)
{
	size_t i = 0, ls = 0, n = 0;

	while (a[i] && a[i] == b[i]) {
		if (a[i] == '\n') {
			ls = i + 1;
			n++;
		}
		i++;
	}
	if (!a[i] && !b[i])
		return;
	fprintf(stderr, "line %d: %s and %s differ at record %zu:\n  %.*s\n  %.*s\n", line, na, nb,
		n, (int)(strcspn(a + ls, "\n")), a + ls, (int)(strcspn(b + ls, "\n")), b + ls);
	fail();
}

static void opts_for(struct dectest_opts *o, const struct ptsynth *w, uint32_t engine)
{
	dectest_opts_init(o);
	o->engine = engine;
	o->flags = HWT_DEC_F_PROFILE;
	o->cpuid_0x15_eax = w->cpuid_0x15_eax;
	o->cpuid_0x15_ebx = w->cpuid_0x15_ebx;
	o->mtc_freq = 3;
	if (w->cpu_family) {
		/* The trace needs its CPU's errata (BDM70 for vmentry). */
		o->cpu.vendor = HWT_DEC_CPU_INTEL;
		o->cpu.family = w->cpu_family;
		o->cpu.model = w->cpu_model;
		o->cpu.stepping = w->cpu_stepping;
	}
}

static void decode(const struct ptsynth *w, const struct dectest_opts *o, struct dectest_result *r)
{
	assert_int_equal(dectest_decode(o, w->code, w->code_size, w->base, w->pt, w->pt_len, r), 0);
	assert_int_equal(r->err, 0);
}

/* The lines of records of type a or b in text (dectest_rec_text()'s: one
 * a line, its type first). */
static char *lines_of(const char *text, unsigned int a, unsigned int b)
{
	size_t len = strlen(text);
	char *out = malloc(len + 1), *o = out;

	assert_non_null(out);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
		unsigned int type = (unsigned int)strtoul(p, NULL, 10);

		if (type == a || type == b) {
			memcpy(o, p, n);
			o += n;
		}
		p += n;
	}
	*o = '\0';
	return out;
}

/* Both engines reproduce every count of the program, and the same records.
 * (User-only tracing: interrupts and system calls are not calls.) With
 * overflows, the branch right before each overflow has its outcome
 * unrecorded (libipt stops at the OVF without giving where it went), and
 * the call stack goes on across the lost trace. */
static void check_truth(const struct ptsynth *w)
{
	/* With an address filter, frames entered outside it return as
	 * unknown frames, and depths count from where tracing began. */
	bool exact = w->truth.overflows == 0 && !w->filter_hi;
	const struct ptsynth_truth *t = &w->truth;
	struct dectest_opts o;
	struct dectest_result fast, ipt;

	opts_for(&o, w, HWT_DEC_ENGINE_FAST);
	decode(w, &o, &fast);
	opts_for(&o, w, HWT_DEC_ENGINE_LIBIPT);
	decode(w, &o, &ipt);

	assert_int_equal(fast.stats.insns, t->insns);
	assert_int_equal(fast.block_insns, t->insns);
	assert_int_equal(fast.profile_insns, t->insns);
	assert_int_equal(fast.stats.calls, t->calls);
	assert_int_equal(fast.nrec[HWT_DEC_REC_CALL], t->calls);
	/* Every return instruction, and frames unwound by returns to older
	 * frames (after returns were lost) on top. */
	assert_int_equal(fast.nrec[HWT_DEC_REC_RETURN] - fast.unwound, t->returns);
	assert_int_equal(fast.stats.returns, fast.nrec[HWT_DEC_REC_RETURN]);
	assert_int_equal(fast.stats.unwound, fast.unwound);
	assert_int_equal(fast.taken + fast.not_taken, t->cond);
	assert_int_equal(fast.stats.overflows, t->overflows);
	assert_int_equal(fast.stats.gaps, t->overflows);
	if (exact) {
		assert_int_equal(fast.taken, t->cond_to_target);
		assert_int_equal(fast.ind_targets, t->indirect);
		assert_int_equal(fast.stats.unknown_returns, 0);
		assert_int_equal(fast.unwound, 0);
		assert_int_equal(fast.max_depth, t->max_depth);
	} else if (w->truth.overflows == 0) {
		assert_int_equal(fast.taken, t->cond_to_target);
		assert_int_equal(fast.ind_targets, t->indirect);
		/* Filtered: a call that left the range returned untraced,
		 * its frame closed where tracing resumed at its return
		 * address; frames never outnumber the program's. */
		assert_true(fast.max_depth <= t->max_depth);
	} else {
		assert_true(fast.taken <= t->cond_to_target);
		assert_true(fast.ind_targets <= t->indirect);
		assert_true(t->cond_to_target - fast.taken + t->indirect - fast.ind_targets <=
			    t->overflows);
	}

	/* The fast engine decodes such traces by itself: the real shapes
	 * and overflows too. */
	assert_int_equal(fast.stats.segments_fallback, 0);
	assert_int_equal(ipt.stats.insns, t->insns);
	assert_int_equal(ipt.taken, fast.taken);
	assert_int_equal(ipt.ind_targets, fast.ind_targets);
	assert_int_equal(ipt.len, fast.len);
	assert_same_text(ipt.text, fast.text);
	assert_int_equal(ipt.profile_hash, fast.profile_hash);
	assert_int_equal(fast.stray_cpu, 0);
	assert_int_equal(ipt.stray_cpu, 0);

	/* Without block records the fast engine skips logging blocks
	 * (cached TNT runs counted as a whole): the same calls, returns,
	 * events and per-block profile. */
	{
		struct dectest_result fnb, inb;

		opts_for(&o, w, HWT_DEC_ENGINE_FAST);
		o.no_blocks = true;
		decode(w, &o, &fnb);
		opts_for(&o, w, HWT_DEC_ENGINE_LIBIPT);
		o.no_blocks = true;
		decode(w, &o, &inb);
		assert_int_equal(fnb.nrec[HWT_DEC_REC_BLOCK], 0);
		assert_int_equal(fnb.stats.insns, t->insns);
		assert_int_equal(fnb.profile_insns, t->insns);
		assert_int_equal(fnb.nrec[HWT_DEC_REC_CALL], t->calls);
		assert_int_equal(fnb.profile_hash, fast.profile_hash);
		assert_int_equal(inb.profile_hash, fast.profile_hash);
		assert_same_text(inb.text, fnb.text);
		assert_int_equal(fnb.stats.segments_fallback, 0);
		/* Their calls and returns are those of the decode with
		 * blocks (the replay's own path for runs of calls and
		 * returns against its general one), and a sink that takes
		 * runs of records gets the same records. */
		{
			char *a = lines_of(fast.text, HWT_DEC_REC_CALL, HWT_DEC_REC_RETURN);
			char *b = lines_of(fnb.text, HWT_DEC_REC_CALL, HWT_DEC_REC_RETURN);
			struct dectest_result frs;

			assert_true(strlen(a) > 0);
			assert_same_text(a, b);
			free(a);
			free(b);
			opts_for(&o, w, HWT_DEC_ENGINE_FAST);
			o.no_blocks = o.recs = true;
			decode(w, &o, &frs);
			assert_same_text(frs.text, fnb.text);
			/* Every record's cpu is 0 without HWT_DEC_RF_CPU
			 * (ASan fills new memory with 0xbe: the recs()
			 * buffer was once left so). */
			assert_int_equal(frs.stray_cpu, 0);
			assert_int_equal(fnb.stray_cpu, 0);
			assert_int_equal(inb.stray_cpu, 0);
			assert_int_equal(frs.stats.calls, fnb.stats.calls);
			assert_int_equal(frs.stats.returns, fnb.stats.returns);
			assert_int_equal(frs.profile_hash, fnb.profile_hash);
			dectest_result_free(&frs);
		}
		dectest_result_free(&fnb);
		dectest_result_free(&inb);
		/* Nor event records: the fast engine counts the PSB+ status
		 * updates instead of logging them; the same records, and
		 * every event still counted. */
		opts_for(&o, w, HWT_DEC_ENGINE_FAST);
		o.no_blocks = o.no_events = true;
		decode(w, &o, &fnb);
		opts_for(&o, w, HWT_DEC_ENGINE_LIBIPT);
		o.no_blocks = o.no_events = true;
		decode(w, &o, &inb);
		assert_int_equal(fnb.nrec[HWT_DEC_REC_EVENT], 0);
		assert_int_equal(fnb.stats.insns, t->insns);
		assert_int_equal(fnb.nrec[HWT_DEC_REC_CALL], t->calls);
		assert_int_equal(fnb.profile_hash, fast.profile_hash);
		assert_same_text(inb.text, fnb.text);
		assert_int_equal(fnb.stats.events, fast.stats.events);
		assert_int_equal(inb.stats.events, fast.stats.events);
		assert_int_equal(fnb.stats.segments_fallback, 0);
		dectest_result_free(&fnb);
		dectest_result_free(&inb);
	}
	dectest_result_free(&fast);
	dectest_result_free(&ipt);
}

static void test_synth_random(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct ptsynth w;

		synth(&w, seed, 150000, false, 0, 0, 0);
		assert_true(w.truth.calls > 1000 / DECTEST_SCALE);
		assert_true(w.truth.indirect > 100 / DECTEST_SCALE);
		check_truth(&w);
		ptsynth_free(&w);
	}
}

static void test_synth_typical(void **state)
{
	struct ptsynth w;

	(void)state;
	synth(&w, 7, 200000, true, 0, 0, 0);
	check_truth(&w);
	ptsynth_free(&w);
}

/* System calls and interrupts: tracing stops and resumes (user-only), far
 * transfers and async frames on the stack. */
static void test_synth_syscalls_interrupts(void **state)
{
	struct ptsynth w;

	(void)state;
	synth(&w, 11, 150000, false, 20000, 10000, 0);
	assert_true(w.truth.syscalls > 10 / DECTEST_SCALE);
	assert_true(w.truth.interrupts > 10 / DECTEST_SCALE);
	check_truth(&w);
	ptsynth_free(&w);
}

/* Overflows lose trace: what ran meanwhile is not decoded, the stack goes
 * on (frames may be unknown), and nothing else is lost. */
static void test_synth_overflows(void **state)
{
	struct ptsynth w;

	(void)state;
	synth(&w, 5, 150000, false, 0, 0, 3000);
	assert_true(w.truth.overflows > 3 / DECTEST_SCALE);
	assert_true(w.truth.insns_lost > 0);
	check_truth(&w);
	ptsynth_free(&w);
}

/* Parallel decoding, with a small window of segments in flight, and feeding
 * the stream in pieces give the sequential decode's records exactly; with
 * a segment at every PSB and with segments of 4 KiB (PSBs inside). */
static void check_parallel_and_pieces(const struct ptsynth *w_)
{
	const struct ptsynth w = *w_;
	uint32_t engines[] = {HWT_DEC_ENGINE_FAST, HWT_DEC_ENGINE_LIBIPT};

	for (size_t e = 0; e < 4; e++) {
		struct dectest_opts o;
		struct dectest_result seq, par, par2, pieces, again;

		opts_for(&o, &w, engines[e % 2]);
		o.segment_bytes = e < 2 ? 1 : 4096;
		decode(&w, &o, &seq);
		assert_true(seq.stats.segments > (e < 2 ? 20 / DECTEST_SCALE : 0));
		o.threads = 2;
		decode(&w, &o, &par);
		o.window = 3;
		decode(&w, &o, &par2);
		o.threads = 0;
		o.window = 0;
		o.piece = 1000;
		decode(&w, &o, &pieces);
		o.piece = 0;
		decode(&w, &o, &again);
		assert_same_text(seq.text, par.text);
		assert_same_text(seq.text, par2.text);
		assert_same_text(seq.text, pieces.text);
		assert_same_text(seq.text, again.text);
		assert_int_equal(seq.taken, par.taken);
		assert_int_equal(seq.ind_targets, par.ind_targets);
		assert_int_equal(seq.profile_insns, par.profile_insns);
		dectest_result_free(&seq);
		dectest_result_free(&par);
		dectest_result_free(&par2);
		dectest_result_free(&pieces);
		dectest_result_free(&again);
	}
}

static void test_parallel_and_pieces(void **state)
{
	struct ptsynth w;

	(void)state;
	psb_period = 1024 / DECTEST_SCALE;
	synth(&w, 3, 150000, false, 5000, 5000, 1000);
	psb_period = 4096;
	check_parallel_and_pieces(&w);
	ptsynth_free(&w);
}

/* The shapes real CPUs write (tests/data/real-pt): CBR, MODE.TSX, PIP and
 * VMCS in every PSB+, a PSB every 256 bytes, PSB+ after PSB+ while tracing
 * is off around every system call and interrupt, MODE.Exec before TIP.PGE.
 * Both engines reproduce the program's counts and the same records, whole,
 * in parallel and in pieces; with overflows too. */
static void test_synth_real_shapes(void **state)
{
	(void)state;
	for (int k = 0; k < 3; k++) {
		struct ptsynth_config c;
		struct ptsynth w;

		ptsynth_config_init(&c);
		c.seed = 13 + (uint64_t)k;
		c.insns = 120000 / DECTEST_SCALE;
		c.biased = k == 1;
		c.overflow_ppm = k == 2 ? 2000 : 0;
		ptsynth_config_real(&c);
		assert_int_equal(ptsynth_generate(&c, &w), 0);
		assert_true(w.truth.syscalls + w.truth.interrupts > 20 / DECTEST_SCALE);
		/* A PSB every 256 bytes, and psb_off more around each stay in
		 * the kernel. */
		assert_true(w.truth.psbs >= w.pt_len / 256 / 2);
		assert_true(w.truth.psbs > 4 * (w.truth.syscalls + w.truth.interrupts));
		check_truth(&w);
		check_parallel_and_pieces(&w);
		ptsynth_free(&w);
	}
}

/* An address filter on a run of functions (TIP.PGD with the first IP
 * outside at each call or return that leaves them, TIP.PGE at each that
 * comes back, nothing outside), kAFL's VM entries (PSB+ with a FUP, then
 * TIP.PGE at the same IP: erratum BDM70, decoded as a CPU with it), and
 * both with the other real shapes and with overflows: FAST and LIBIPT
 * reproduce every count of what was traced and the same records, whole,
 * in parallel and in pieces. */
static void test_synth_filter_vmentry(void **state)
{
	/* Seeds whose programs spend a good part of their run in the
	 * filtered functions (1 to 12 of 24). */
	struct {
		bool filter, vmentry, real;
		unsigned int ovf_ppm;
		uint64_t seed;
	} v[] = {
	    {true, false, false, 0, 34}, {false, true, false, 0, 35},	{false, true, true, 0, 36},
	    {true, true, true, 0, 38},	 {true, false, true, 2000, 33},
	};

	(void)state;
	for (size_t k = 0; k < HWT_ARRAY_SIZE(v); k++) {
		struct ptsynth_config c;
		struct ptsynth w;

		ptsynth_config_init(&c);
		c.seed = v[k].seed;
		c.insns = 150000 / DECTEST_SCALE;
		c.syscall_ppm = 20000;
		c.interrupt_ppm = 5000;
		c.overflow_ppm = v[k].ovf_ppm;
		c.psb_period = 256;
		if (v[k].real)
			ptsynth_config_real(&c);
		c.vmentry = v[k].vmentry;
		if (v[k].filter) {
			c.filter_first = 1;
			c.filter_funcs = 12;
		}
		assert_int_equal(ptsynth_generate(&c, &w), 0);
		fprintf(stderr,
			"filter %d vmentry %d real %d: %" PRIu64 " insns traced, %" PRIu64
			" filtered, %" PRIu64 " exits, %" PRIu64 " entries, %" PRIu64
			" kernel entries, %" PRIu64 " overflows\n",
			v[k].filter, v[k].vmentry, v[k].real, w.truth.insns, w.truth.insns_filtered,
			w.truth.filter_exits, w.truth.filter_entries,
			w.truth.syscalls + w.truth.interrupts, w.truth.overflows);
		if (v[k].filter) {
			assert_true(w.truth.filter_exits > 50 / DECTEST_SCALE);
			assert_true(w.truth.filter_entries > 50 / DECTEST_SCALE);
			assert_true(w.truth.insns_filtered > 0);
		}
		if (v[k].vmentry)
			assert_true(w.truth.syscalls + w.truth.interrupts > 10 / DECTEST_SCALE);
		check_truth(&w);
		check_parallel_and_pieces(&w);
		ptsynth_free(&w);
	}
}

/* Offset of the n-th PSB. */
static size_t nth_psb(const uint8_t *pt, size_t len, unsigned int n)
{
	static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};

	for (size_t i = 0; i + 16 <= len; i++) {
		if (!memcmp(pt + i, psb, 16) && n-- == 0)
			return i;
	}
	return len;
}

/* The offset after the PSBEND of the PSB+ at psb (ptsynth's PSB+ hold
 * TSC, TMA, CBR, MODE and FUP packets, whose payloads here hold no
 * 02 23). */
static size_t psbend_after(const uint8_t *pt, size_t len, size_t psb)
{
	for (size_t i = psb + 16; i + 2 <= len; i++) {
		if (pt[i] == 2 && pt[i + 1] == 0x23)
			return i + 2;
	}
	return len;
}

/* A trace that starts inside the program: returns from frames entered
 * before the trace are marked unknown, never invented, and the depth never
 * goes below zero. */
static void test_unknown_frames(void **state)
{
	struct ptsynth w;
	struct dectest_opts o;
	struct dectest_result r;
	size_t off;
	const char *line;
	uint64_t unknown = 0;

	(void)state;
	psb_period = 1024 / DECTEST_SCALE;
	synth(&w, 2, 100000, false, 0, 0, 0);
	psb_period = 4096;
	off = nth_psb(w.pt, w.pt_len, 3);
	assert_true(off < w.pt_len);
	opts_for(&o, &w, HWT_DEC_ENGINE_FAST);
	assert_int_equal(
	    dectest_decode(&o, w.code, w.code_size, w.base, w.pt + off, w.pt_len - off, &r), 0);
	assert_int_equal(r.err, 0);
	assert_true(r.stats.unknown_returns > 0);
	assert_true(r.stats.insns < w.truth.insns);
	/* Every unknown-frame return names no function. */
	for (line = r.text; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		unsigned int type, flags;

		assert_int_equal(sscanf(one_line(line), "%u f=%x", &type, &flags), 2);
		if (type == HWT_DEC_REC_RETURN && (flags & HWT_DEC_RF_UNKNOWN_FRAME)) {
			unknown++;
			assert_non_null(strstr(line, " fn=0 "));
		}
	}
	assert_int_equal(unknown, r.stats.unknown_returns);
	dectest_result_free(&r);
	ptsynth_free(&w);
}

/* The blocks (first and last instruction) of the records at stream
 * offsets > from, from the first block at ip on (any block when ip is 0;
 * *ip receives its address). */
static char *blocks_from(const char *text, uint64_t from, uint64_t *ip)
{
	size_t cap = strlen(text) + 1, n = 0;
	char *out = malloc(cap);

	assert_non_null(out);
	for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
		const char *o = strstr(l, " off="), *b = strstr(l, " B ");
		uint64_t off, bip, end;

		assert_int_equal(sscanf(one_line(o + 5), "%" SCNx64, &off), 1);
		if (off <= from || !b || (b - l) > (long)strcspn(l, "\n"))
			continue;
		assert_int_equal(sscanf(one_line(b + 3), "%" SCNx64 "-%" SCNx64, &bip, &end), 2);
		if (!n && *ip && bip != *ip)
			continue;
		if (!n)
			*ip = bip;
		n += (size_t)snprintf(out + n, cap - n, "%" PRIx64 "-%" PRIx64 "\n", bip, end);
	}
	out[n] = 0;
	return out;
}

/* A bad byte inside one segment: one gap, reported at the error with the
 * bytes skipped up to the next PSB, and decoding goes on from there as
 * libipt does, synchronizing afresh at that PSB: the same flow as without
 * the damage from the PSB+'s address on. */
static void test_gap_and_resync(void **state)
{
	struct ptsynth w;
	struct dectest_opts o;
	struct dectest_result good, bad;
	size_t p4, p5;
	uint8_t *copy;
	const char *g, *tail_good, *tail_bad;

	(void)state;
	psb_period = 1024 / DECTEST_SCALE;
	synth(&w, 4, 100000, false, 0, 0, 0);
	psb_period = 4096;
	p4 = nth_psb(w.pt, w.pt_len, 4);
	p5 = nth_psb(w.pt, w.pt_len, 5);
	assert_true(p5 < w.pt_len);
	copy = malloc(w.pt_len);
	assert_non_null(copy);
	memcpy(copy, w.pt, w.pt_len);
	/* 0xd9 is a reserved opcode. */
	copy[(p4 + p5) / 2] = 0xd9;
	for (int e = 0; e < 2; e++) {
		uint64_t goff, gsize;

		opts_for(&o, &w, e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST);
		decode(&w, &o, &good);
		assert_int_equal(
		    dectest_decode(&o, w.code, w.code_size, w.base, copy, w.pt_len, &bad), 0);
		assert_int_equal(bad.err, 0);
		assert_int_equal(bad.stats.gaps, 1);
		assert_true(bad.stats.insns < good.stats.insns);
		g = strstr(bad.text, " G ");
		assert_non_null(g);
		while (g > bad.text && g[-1] != '\n')
			g--;
		assert_int_equal(sscanf(one_line(strstr(g, "off=") + 4), "%" SCNx64, &goff), 1);
		assert_int_equal(sscanf(one_line(strstr(g, "size=") + 5), "%" SCNu64, &gsize), 1);
		/* Where decoding failed: at or after the bad byte (which
		 * may send it astray first), before the next PSB. */
		assert_true(goff > p4 && goff < p5);
		assert_int_equal(goff + gsize, p5);
		assert_int_equal(bad.stats.gap_bytes, gsize);
		/* From the next PSB+ on, the same flow as without the damage
		 * (records aside: the undamaged decode goes through that
		 * PSB+, and has the run up to its FUP at its PSBEND, as
		 * libipt decoding on; the damaged one starts there
		 * afresh). */
		{
			uint64_t ip = 0, from = psbend_after(w.pt, w.pt_len, p5);

			tail_bad = blocks_from(bad.text, from, &ip);
			tail_good = blocks_from(good.text, from, &ip);
		}
		assert_true(strlen(tail_good) > 1000 / DECTEST_SCALE);
		assert_same_text(tail_good, tail_bad);
		free((char *)tail_good);
		free((char *)tail_bad);
		dectest_result_free(&good);
		dectest_result_free(&bad);
	}
	free(copy);
	ptsynth_free(&w);
}

/* Damaged streams never crash, every engine agrees, and the damage shows
 * as counted gaps. */
static void test_corrupt_streams(void **state)
{
	struct ptsynth w;
	uint64_t rng = hwt_test_seed();
	uint64_t gaps = 0;

	(void)state;
	synth(&w, 9, 20000, false, 20000, 20000, 5000);
	for (int i = 0; i < 60 / DECTEST_SCALE; i++) {
		uint8_t *copy = malloc(w.pt_len);
		size_t len = w.pt_len;
		struct dectest_opts o;
		struct dectest_result fast, ipt;
		int n = 1 + (int)(hwt_test_rand(&rng) % 8);

		assert_non_null(copy);
		memcpy(copy, w.pt, len);
		for (int k = 0; k < n; k++) {
			size_t at = hwt_test_rand(&rng) % len;

			switch (hwt_test_rand(&rng) % 3) {
			case 0:
				copy[at] = (uint8_t)hwt_test_rand(&rng);
				break;
			case 1:
				copy[at] ^= (uint8_t)(1u << (hwt_test_rand(&rng) % 8));
				break;
			default:
				memset(copy + at, 0, len - at < 7 ? len - at : 7);
				break;
			}
		}
		if (i % 5 == 0)
			len -= hwt_test_rand(&rng) % (len / 2);
		opts_for(&o, &w, HWT_DEC_ENGINE_FAST);
		assert_int_equal(dectest_decode(&o, w.code, w.code_size, w.base, copy, len, &fast),
				 0);
		opts_for(&o, &w, HWT_DEC_ENGINE_LIBIPT);
		assert_int_equal(dectest_decode(&o, w.code, w.code_size, w.base, copy, len, &ipt),
				 0);
		assert_int_equal(fast.err, 0);
		assert_int_equal(ipt.err, 0);
		if (strcmp(fast.text, ipt.text)) {
			/* Keep the input for replaying. */
			char path[64];

			snprintf(path, sizeof(path), "/tmp/hwt-corrupt-%d.pt", i);
			hwt_test_write_file(path, copy, len);
			fprintf(stderr, "input kept in %s\n", path);
		}
		assert_same_text(fast.text, ipt.text);
		assert_int_equal(fast.stats.gaps, fast.nrec[HWT_DEC_REC_GAP]);
		gaps += fast.stats.gaps;
		dectest_result_free(&fast);
		dectest_result_free(&ipt);
		free(copy);
	}
	assert_true(gaps > 20 / DECTEST_SCALE);
	ptsynth_free(&w);
}

/* Time: records carry the TSC (monotonic per stream), and perf time when a
 * conversion is given (checked against the kernel formula in 128 bits). */
static void test_time(void **state)
{
	struct ptsynth w;
	struct dectest_opts o;
	struct dectest_result r;
	const char *line;
	uint64_t last = 0, timed = 0, blocks = 0;

	(void)state;
	synth(&w, 6, 50000, false, 0, 0, 0);
	opts_for(&o, &w, HWT_DEC_ENGINE_FAST);
	decode(&w, &o, &r);
	for (line = r.text; *line; line = strchr(line, '\n') + 1) {
		unsigned int type, flags;
		uint64_t tsc;
		const char *t = strstr(line, "tsc=");

		assert_int_equal(sscanf(one_line(line), "%u f=%x", &type, &flags), 2);
		assert_non_null(t);
		assert_int_equal(sscanf(one_line(t + 4), "%" SCNx64, &tsc), 1);
		if (type == HWT_DEC_REC_BLOCK)
			blocks++;
		if (flags & HWT_DEC_RF_TIME) {
			timed++;
			assert_true(tsc >= last);
			last = tsc;
		}
	}
	assert_true(blocks > 1000 / DECTEST_SCALE);
	assert_int_equal(timed,
			 r.nrec[1] + r.nrec[2] + r.nrec[3] + r.nrec[4] + r.nrec[5] + r.nrec[6]);
	assert_true(last > 0);
	dectest_result_free(&r);
	ptsynth_free(&w);

	{
		struct hwt_dec_tconv c = {true, 31, 581029125, 18444502336406842448ull};
		uint64_t rng = hwt_test_seed();

		for (int i = 0; i < 1000; i++) {
			uint64_t tsc = hwt_test_rand(&rng) >> (hwt_test_rand(&rng) % 20);
			unsigned __int128 p = (unsigned __int128)tsc * c.time_mult;
			uint64_t want = c.time_zero + (uint64_t)(p >> c.time_shift);
			uint64_t got = hwt_dec_tsc_to_perf(&c, tsc);
			uint64_t back;

			if ((uint64_t)(p >> c.time_shift >> 63) || tsc >> 62)
				continue; /* beyond 64-bit perf time */
			assert_int_equal(got, want);
			back = hwt_dec_perf_to_tsc(&c, got);
			assert_true(back <= tsc);
			assert_int_equal(hwt_dec_tsc_to_perf(&c, back), got);
			/* (perf time is modulo 2^64 from time_zero) */
			if (back)
				assert_true(hwt_dec_tsc_to_perf(&c, back - 1) - c.time_zero <
					    got - c.time_zero);
		}
		c.valid = false;
		assert_int_equal(hwt_dec_tsc_to_perf(&c, 12345), 12345);
	}
}

static void test_cpu_parse(void **state)
{
	struct hwt_dec_cpu c;

	(void)state;
	assert_int_equal(hwt_dec_cpu_parse(&c, "6/85/4"), 0);
	assert_int_equal(c.vendor, HWT_DEC_CPU_INTEL);
	assert_int_equal(c.family, 6);
	assert_int_equal(c.model, 85);
	assert_int_equal(c.stepping, 4);
	assert_int_equal(hwt_dec_cpu_parse(&c, "0x6/0x55"), 0);
	assert_int_equal(c.model, 85);
	assert_int_equal(c.stepping, 0);
	assert_int_equal(hwt_dec_cpu_parse(&c, "none"), 0);
	assert_int_equal(c.vendor, HWT_DEC_CPU_UNKNOWN);
	assert_int_equal(hwt_dec_cpu_parse(&c, "6"), -HWT_EINVAL);
	assert_int_equal(hwt_dec_cpu_parse(&c, "6/85/4/1"), -HWT_EINVAL);
	assert_int_equal(hwt_dec_cpu_parse(&c, "6/x"), -HWT_EINVAL);
	assert_int_equal(hwt_dec_cpu_parse(&c, "6/300"), -HWT_EINVAL);
	assert_int_equal(hwt_dec_cpu_parse(&c, ""), -HWT_EINVAL);
}

/* Images: sections from memory, later mappings replace overlapped parts;
 * instructions decode from them. */
static void test_image_and_insn(void **state)
{
	static const uint8_t a[] = {0xe8, 0x0b, 0x00, 0x00, 0x00, /* call +11 */
				    0x90, 0xc3};		  /* nop; ret */
	static const uint8_t b[] = {0xff, 0xe0};		  /* jmp *%rax */
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *img, *copy;
	struct hwt_dec_insn insn;
	uint8_t buf[16];
	char text[64];

	(void)state;
	assert_int_equal(hwt_dec_icache_alloc(&ic, NULL), 0);
	assert_int_equal(hwt_dec_image_alloc(&img, ic, "img"), 0);
	assert_string_equal(hwt_dec_image_name(img), "img");
	assert_int_equal(hwt_dec_image_add_mem(img, a, sizeof(a), 0x1000, "a"), 0);
	assert_int_equal(hwt_dec_image_read(img, 0x1000, buf, sizeof(buf)), (int)sizeof(a));
	assert_memory_equal(buf, a, sizeof(a));
	assert_int_equal(hwt_dec_image_read(img, 0x2000, buf, 1), -HWT_ENOSYM);
	assert_int_equal(hwt_dec_image_read(img, 0xfff, buf, 1), -HWT_ENOSYM);

	assert_int_equal(hwt_dec_insn_decode(img, 0x1000, HWT_DEC_MODE_64, &insn), 0);
	assert_int_equal(insn.size, 5);
	assert_int_equal(insn.branch, HWT_DEC_BR_CALL);
	assert_true(insn.has_target);
	assert_int_equal(insn.target, 0x1010);
	assert_true(hwt_dec_insn_format(&insn, text, sizeof(text)) > 0);
	assert_non_null(strstr(text, "call"));
	assert_int_equal(hwt_dec_insn_decode(img, 0x1006, HWT_DEC_MODE_64, &insn), 0);
	assert_int_equal(insn.branch, HWT_DEC_BR_RETURN);
	assert_int_equal(hwt_dec_insn_decode(img, 0x3000, HWT_DEC_MODE_64, &insn), -HWT_ENOSYM);

	/* A later mapping over part of the first. */
	assert_int_equal(hwt_dec_image_add_mem(img, b, sizeof(b), 0x1005, "b"), 0);
	assert_int_equal(hwt_dec_insn_decode(img, 0x1005, HWT_DEC_MODE_64, &insn), 0);
	assert_int_equal(insn.branch, HWT_DEC_BR_IND_JUMP);
	assert_int_equal(hwt_dec_image_read(img, 0x1000, buf, sizeof(buf)), 5);
	assert_int_equal(hwt_dec_image_read(img, 0x1005, buf, sizeof(buf)), 2);
	assert_memory_equal(buf, b, 2);

	/* A copy (fork) sees the same code. */
	assert_int_equal(hwt_dec_image_alloc(&copy, ic, NULL), 0);
	assert_string_equal(hwt_dec_image_name(copy), "");
	assert_int_equal(hwt_dec_image_copy(copy, img), 0);
	assert_int_equal(hwt_dec_image_read(copy, 0x1005, buf, 2), 2);
	assert_memory_equal(buf, b, 2);
	hwt_dec_image_put(copy);

	/* A file is checked at the image's first lookup after it was added
	 * (test_image_file_missing): a missing one maps nothing. */
	assert_int_equal(hwt_dec_image_add_file(img, "/nonexistent/file", 0, 16, 0x5000), 0);
	assert_int_equal(hwt_dec_image_read(img, 0x5000, buf, 1), -HWT_ENOSYM);
	assert_int_equal(hwt_dec_image_read(img, 0x1005, buf, 2), 2);
	assert_int_equal(hwt_dec_image_add_file(img, "/nonexistent/file", 0, 0, 0x5000),
			 -HWT_EINVAL);
	assert_int_equal(hwt_dec_image_add_mem(img, a, 0, 0x6000, NULL), -HWT_EINVAL);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
}

/* No code at all: every block is a gap-free error record at most, never a
 * crash, and nothing is decoded. */
static void test_no_image(void **state)
{
	struct ptsynth w;
	struct dectest_opts o;
	struct dectest_result r;

	(void)state;
	synth(&w, 1, 20000, false, 0, 0, 0);
	for (int e = 0; e < 2; e++) {
		opts_for(&o, &w, e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST);
		assert_int_equal(dectest_decode(&o, NULL, 0, w.base, w.pt, w.pt_len, &r), 0);
		assert_int_equal(r.err, 0);
		assert_int_equal(r.stats.insns, 0);
		assert_true(r.stats.gaps > 0);
		dectest_result_free(&r);
	}
	ptsynth_free(&w);
}

/* The n packets p encoded into buf (size bytes): their length. */
static size_t encode_packets(const struct pt_packet *p, size_t n, uint8_t *buf, size_t size)
{
	struct pt_config cfg;
	struct pt_encoder *enc;
	size_t len = 0;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	enc = pt_alloc_encoder(&cfg);
	assert_non_null(enc);
	for (size_t i = 0; i < n; i++) {
		int k = pt_enc_next(enc, &p[i]);

		assert_true(k > 0);
		len += (size_t)k;
	}
	pt_free_encoder(enc);
	return len;
}

/* Encodes a trace that enables tracing at ip, with the execution mode in
 * its PSB+ (64-bit; 16-bit with mode16) or not, and jumps from the
 * indirect jump there back to ip twice; returns its length. */
static size_t enable_trace_in(uint8_t *buf, size_t size, uint64_t ip, bool with_mode, bool mode16)
{
	struct pt_packet p[6];
	size_t n = 0;

	memset(p, 0, sizeof(p));
	p[n++].type = ppt_psb;
	if (with_mode) {
		p[n].type = ppt_mode;
		p[n].payload.mode.leaf = pt_mol_exec;
		p[n++].payload.mode.bits.exec.csl = !mode16;
	}
	p[n++].type = ppt_psbend;
	p[n].type = ppt_tip_pge;
	p[n].payload.ip.ipc = pt_ipc_sext_48;
	p[n++].payload.ip.ip = ip;
	for (int i = 0; i < 2; i++) {
		p[n].type = ppt_tip;
		p[n].payload.ip.ipc = pt_ipc_sext_48;
		p[n++].payload.ip.ip = ip;
	}
	return encode_packets(p, n, buf, size);
}

static size_t enable_trace(uint8_t *buf, size_t size, uint64_t ip, bool with_mode)
{
	return enable_trace_in(buf, size, ip, with_mode, false);
}

/* A sideband hook that knows nothing (the decoder keeps its context): with
 * one, a segment is not decoded again without libipt's block cache. */
static int null_hook(void *ctx, const struct hwt_dec_context_query *q, struct hwt_dec_context *out)
{
	(void)ctx;
	(void)q;
	(void)out;
	return 0;
}

/* Records depend on the trace's bytes only, not on what was decoded
 * before on the same icache: libipt 2.0.5 keeps a block cache in the
 * icache's sections and, at an enable whose execution mode it does not
 * know, ran on with blocks another decode had cached (in that decode's
 * mode) where decoding the code fails. The ground truth is the trace
 * decoded on an icache of its own; both engines, both segmentations. */
static void test_records_independent_of_history(void **state)
{
	static const uint8_t code[] = {0x90, 0xff, 0xe0}; /* nop; jmp *%rax */
	const uint64_t base = 0x400000;
	uint8_t known[64], unknown[64], known16[64];
	size_t known_len = enable_trace(known, sizeof(known), base, true);
	size_t unknown_len = enable_trace(unknown, sizeof(unknown), base, false);
	size_t known16_len = enable_trace_in(known16, sizeof(known16), base, true, true);

	(void)state;
	for (int e = 0; e < 2; e++) {
		for (int sb = 0; sb < 4; sb++) {
			struct dectest_opts o;
			struct dectest_result alone, primer, after;
			struct hwt_dec_icache *ic;
			struct hwt_dec_image *img;

			dectest_opts_init(&o);
			o.engine = e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST;
			o.segment_bytes = sb & 1 ? 4096 : 1;
			/* With a sideband hook libipt's engine is not decoded
			 * again cold: its block cache is used only in the
			 * mode it was filled in (eng_ipt.c conv_image()). */
			o.context = sb & 2 ? null_hook : NULL;
			assert_int_equal(dectest_decode(&o, code, sizeof(code), base, unknown,
							unknown_len, &alone),
					 0);
			assert_int_equal(alone.err, 0);
			/* The mode is not known: nothing decodes. */
			assert_int_equal(alone.stats.insns, 0);
			assert_true(alone.stats.gaps > 0);

			/* libipt decodes the code in a known mode first (the
			 * fast engine would not fill its block cache). */
			assert_int_equal(hwt_dec_icache_alloc(&ic, NULL), 0);
			assert_int_equal(hwt_dec_image_alloc(&img, ic, "test"), 0);
			assert_int_equal(
			    hwt_dec_image_add_mem(img, code, sizeof(code), base, "code"), 0);
			o.icache = ic;
			o.image = img;
			o.engine = HWT_DEC_ENGINE_LIBIPT;
			assert_int_equal(dectest_decode(&o, NULL, 0, 0, known, known_len, &primer),
					 0);
			assert_int_equal(primer.err, 0);
			/* At least the two runs whose jumps are traced. */
			assert_true(primer.stats.insns >= 4);
			o.engine = e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST;
			assert_int_equal(
			    dectest_decode(&o, NULL, 0, 0, unknown, unknown_len, &after), 0);
			assert_same_text(after.text, alone.text);
			dectest_result_free(&alone);
			dectest_result_free(&after);

			/* The same code in 16-bit mode after it: its blocks
			 * come in that mode, not the cache's. */
			o.icache = NULL;
			o.image = NULL;
			assert_int_equal(dectest_decode(&o, code, sizeof(code), base, known16,
							known16_len, &alone),
					 0);
			assert_int_equal(alone.err, 0);
			assert_true(alone.stats.insns >= 4);
			o.icache = ic;
			o.image = img;
			assert_int_equal(
			    dectest_decode(&o, NULL, 0, 0, known16, known16_len, &after), 0);
			assert_same_text(after.text, alone.text);
			dectest_result_free(&alone);
			dectest_result_free(&primer);
			dectest_result_free(&after);
			hwt_dec_image_put(img);
			hwt_dec_icache_free(ic);
		}
	}
}

struct log_lines {
	char text[1024];
	size_t len;
};

static void log_line(void *ctx, enum hwt_log_level level, const char *msg)
{
	struct log_lines *l = ctx;
	int n = snprintf(l->text + l->len, sizeof(l->text) - l->len, "%d %s\n", (int)level, msg);

	if (n > 0 && (size_t)n < sizeof(l->text) - l->len)
		l->len += (size_t)n;
}

/* libipt's image is made when a libipt run first needs it: a code file
 * that went away after it was added (and after the fast engine read it)
 * still decodes with the fast engine, which never needs libipt's image;
 * the LIBIPT engine fails with an error that names the file. */
static void test_image_file_gone(void **state)
{
	static const uint8_t code[] = {0x90, 0xff, 0xe0}; /* nop; jmp *%rax */
	const uint64_t base = 0x400000;
	uint8_t pt[64];
	size_t len = enable_trace(pt, sizeof(pt), base, true);
	struct log_lines lines = {{0}, 0};
	struct hwt_logger log = {log_line, &lines};
	char *dir = hwt_test_tmpdir(), path[512], want[600];
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *img;
	struct dectest_opts o;
	struct dectest_result r;

	(void)state;
	snprintf(path, sizeof(path), "%s/code.bin", dir);
	hwt_test_write_file(path, code, sizeof(code));
	assert_int_equal(hwt_dec_icache_alloc(&ic, &log), 0);
	assert_int_equal(hwt_dec_image_alloc(&img, ic, "test"), 0);
	assert_int_equal(hwt_dec_image_add_file(img, path, 0, UINT64_MAX, base), 0);
	dectest_opts_init(&o);
	o.icache = ic;
	o.image = img;
	/* Both jumps traced: two runs of nop; jmp, then the third stops at
	 * the trace's end. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(dectest_decode(&o, NULL, 0, 0, pt, len, &r), 0);
		assert_int_equal(r.err, 0);
		assert_int_equal(r.stats.insns, 4);
		assert_int_equal(r.stats.ipt_runs, 0);
		dectest_result_free(&r);
		if (i == 0)
			assert_int_equal(unlink(path), 0);
	}
	assert_int_equal(lines.len, 0);
	o.engine = HWT_DEC_ENGINE_LIBIPT;
	assert_int_equal(dectest_decode(&o, NULL, 0, 0, pt, len, &r), 0);
	assert_int_equal(r.err, -ENOENT);
	dectest_result_free(&r);
	snprintf(want, sizeof(want), "0 cannot load code at 0x400000 from %s: ", path);
	assert_non_null(strstr(lines.text, want));
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
	hwt_test_tmpdir_remove(dir);
}

/* A code file is checked when the image is first read, not when it is
 * added (a decode that reads no code stats no file): a missing file, or
 * one shorter than its offset, is added, and the first decode that needs
 * its code has gaps there, as where nothing is mapped, with one error in
 * the icache's log that names the file; both engines. hwt_dec_file_check()
 * is the check, for callers that want the error up front. */
static void test_image_file_missing(void **state)
{
	static const uint8_t code[] = {0x90, 0xff, 0xe0}; /* nop; jmp *%rax */
	const uint64_t base = 0x400000;
	uint8_t pt[64];
	size_t len = enable_trace(pt, sizeof(pt), base, true);
	char *dir = hwt_test_tmpdir(), path[512], want[700];
	uint64_t size;

	(void)state;
	snprintf(path, sizeof(path), "%s/code.bin", dir);
	size = 16;
	assert_int_equal(hwt_dec_file_check(path, 0, &size), -ENOENT);
	hwt_test_write_file(path, code, sizeof(code));
	size = UINT64_MAX;
	assert_int_equal(hwt_dec_file_check(path, 1, &size), 0);
	assert_int_equal(size, 2);
	assert_int_equal(hwt_dec_file_check(path, 3, &size), -HWT_EINVAL);
	assert_int_equal(hwt_dec_file_check(dir, 0, &size), -HWT_EINVAL);
	for (int c = 0; c < 2; c++) {
		/* c 0: no such file; c 1: the file ends before the offset */
		uint64_t offset = c ? 3 : 0;
		const char *file = c ? path : "/nonexistent/code.bin";

		snprintf(want, sizeof(want), "0 %s: cannot map it at 0x400000: %s", file,
			 c ? "not a regular file, or shorter than its offset"
			   : "No such file or directory");
		for (int e = 0; e < 2; e++) {
			struct log_lines lines = {{0}, 0};
			struct hwt_logger log = {log_line, &lines};
			struct hwt_dec_icache *ic;
			struct hwt_dec_image *img;
			struct dectest_opts o;
			struct dectest_result r;

			assert_int_equal(hwt_dec_icache_alloc(&ic, &log), 0);
			assert_int_equal(hwt_dec_image_alloc(&img, ic, "test"), 0);
			assert_int_equal(
			    hwt_dec_image_add_file(img, file, offset, UINT64_MAX, base), 0);
			assert_int_equal(lines.len, 0);
			dectest_opts_init(&o);
			o.icache = ic;
			o.image = img;
			o.engine = e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST;
			for (int i = 0; i < 2; i++) {
				assert_int_equal(dectest_decode(&o, NULL, 0, 0, pt, len, &r), 0);
				assert_int_equal(r.err, 0);
				assert_int_equal(r.stats.insns, 0);
				assert_true(r.stats.gaps > 0);
				dectest_result_free(&r);
			}
			/* one line, naming the file and the cause, for both decodes */
			assert_non_null(strstr(lines.text, want));
			assert_ptr_equal(strchr(lines.text, '\n'), lines.text + lines.len - 1);
			hwt_dec_image_put(img);
			hwt_dec_icache_free(ic);
		}
	}
	hwt_test_tmpdir_remove(dir);
}

/* A PSB+ run while tracing is off, as CPUs write one around each stay in
 * the kernel: PSB+ after PSB+ (timing packets between some), each with a
 * CBR, MODE.TSX, PIP and VMCS, changing from one to the next or not, one
 * with a MODE.Exec, one without its VMCS; then tracing goes on, and a
 * PSB+ comes while it is. Every status update is an event record, in the
 * packets' order, with the payload its packet carries; the fast engine
 * decodes it all itself (its PSB+ run path, eng_fast.c psb_run) and gives
 * libipt's records, whole and in pieces, with a segment at every PSB and
 * with 4 KiB segments (the trace is one segment then: libipt decodes the
 * whole stream), on one thread and two: all the same records, offsets and
 * times included (the block before the PSB+ while tracing is on and its
 * first status updates at its PSBEND, seg_decoded_on). */
enum { RUN_PSBS = 7, ON_CBR = 38 };
#define ON_CR3	0x3c000000ull
#define ON_VMCS 0x55555000ull

static const struct {
	uint8_t cbr;
	uint64_t cr3, vmcs;
	bool exec, no_vmcs, mtc_before;
} run_psb[RUN_PSBS] = {
    {34, 0x1fa2c000, 0x38e0ed000, false, false, false},
    {34, 0x1fa2c000, 0x38e0ed000, false, false, true},
    {36, 0x1fa2c000, 0x38e0ed000, false, false, false},
    {36, 0x2b000000, 0x38e0ed000, true, false, true},
    {36, 0x2b000000, 0x38e0ed000, false, true, false},
    {40, 0x2b000000, 0x12345000, false, false, false},
    {40, 0x2b000000, 0x12345000, false, false, false},
};

static size_t psb_run_trace(uint8_t *buf, size_t size, uint64_t ip)
{
	struct pt_packet p[128];
	size_t n = 0;

	memset(p, 0, sizeof(p));
	p[n++].type = ppt_psb;
	p[n++].type = ppt_psbend;
	for (int k = 0; k < RUN_PSBS; k++) {
		if (run_psb[k].mtc_before) {
			p[n].type = ppt_mtc;
			p[n++].payload.mtc.ctc = (uint8_t)k;
			p[n++].type = ppt_pad;
		}
		p[n++].type = ppt_psb;
		p[n].type = ppt_tsc;
		p[n++].payload.tsc.tsc = 100000 + 1000 * (uint64_t)k;
		p[n].type = ppt_cbr;
		p[n++].payload.cbr.ratio = run_psb[k].cbr;
		p[n].type = ppt_mode;
		p[n++].payload.mode.leaf = pt_mol_tsx;
		if (run_psb[k].exec) {
			p[n].type = ppt_mode;
			p[n].payload.mode.leaf = pt_mol_exec;
			p[n++].payload.mode.bits.exec.csl = 1;
		}
		p[n].type = ppt_pip;
		p[n].payload.pip.cr3 = run_psb[k].cr3;
		p[n++].payload.pip.nr = 1;
		if (!run_psb[k].no_vmcs) {
			p[n].type = ppt_vmcs;
			p[n++].payload.vmcs.base = run_psb[k].vmcs;
		}
		p[n++].type = ppt_psbend;
	}
	p[n].type = ppt_mode;
	p[n].payload.mode.leaf = pt_mol_exec;
	p[n++].payload.mode.bits.exec.csl = 1;
	p[n].type = ppt_tip_pge;
	p[n].payload.ip.ipc = pt_ipc_sext_48;
	p[n++].payload.ip.ip = ip;
	p[n].type = ppt_tip;
	p[n].payload.ip.ipc = pt_ipc_sext_48;
	p[n++].payload.ip.ip = ip;
	/* A PSB+ while tracing is on, at the jump's target (with a TSC, as
	 * hardware writes one in every PSB+ with TSCEn: a segment starting
	 * at a PSB+ without one has no time until its first timing packet,
	 * where the whole stream carries the time before; docs/decoder.md). */
	p[n++].type = ppt_psb;
	p[n].type = ppt_tsc;
	p[n++].payload.tsc.tsc = 200000;
	p[n].type = ppt_mode;
	p[n++].payload.mode.leaf = pt_mol_tsx;
	p[n].type = ppt_mode;
	p[n].payload.mode.leaf = pt_mol_exec;
	p[n++].payload.mode.bits.exec.csl = 1;
	p[n].type = ppt_fup;
	p[n].payload.ip.ipc = pt_ipc_sext_48;
	p[n++].payload.ip.ip = ip;
	p[n].type = ppt_pip;
	p[n++].payload.pip.cr3 = ON_CR3;
	p[n].type = ppt_vmcs;
	p[n++].payload.vmcs.base = ON_VMCS;
	p[n].type = ppt_cbr;
	p[n++].payload.cbr.ratio = ON_CBR;
	p[n++].type = ppt_psbend;
	p[n].type = ppt_tip;
	p[n].payload.ip.ipc = pt_ipc_sext_48;
	p[n++].payload.ip.ip = ip;
	p[n].type = ppt_tip_pgd;
	p[n++].payload.ip.ipc = pt_ipc_suppressed;
	assert_true(n <= HWT_ARRAY_SIZE(p));
	return encode_packets(p, n, buf, size);
}

static void test_psb_run_tracing_off(void **state)
{
	static const uint8_t code[] = {0x90, 0xff, 0xe0}; /* nop; jmp *%rax */
	const uint64_t base = 0x400000;
	uint8_t pt[1024];
	size_t len = psb_run_trace(pt, sizeof(pt), base);
	char want[4096];
	size_t wlen = 0;
	struct dectest_result ref;

	(void)state;
	/* The event records expected, from the packets: type and payload. */
	for (int k = 0; k < RUN_PSBS; k++) {
		wlen += (size_t)snprintf(want + wlen, sizeof(want) - wlen, "%u p=%x\n%u p=0\n",
					 HWT_DEC_EV_CBR, run_psb[k].cbr, HWT_DEC_EV_TSX);
		if (run_psb[k].exec)
			wlen += (size_t)snprintf(want + wlen, sizeof(want) - wlen, "%u p=0\n",
						 HWT_DEC_EV_EXEC_MODE);
		wlen += (size_t)snprintf(want + wlen, sizeof(want) - wlen, "%u p=%" PRIx64 "\n",
					 HWT_DEC_EV_ASYNC_PAGING, run_psb[k].cr3);
		if (!run_psb[k].no_vmcs)
			wlen +=
			    (size_t)snprintf(want + wlen, sizeof(want) - wlen, "%u p=%" PRIx64 "\n",
					     HWT_DEC_EV_ASYNC_VMCS, run_psb[k].vmcs);
		assert_true(wlen < sizeof(want));
	}
	/* Then the MODE.Exec before TIP.PGE (at the enable) and, tracing
	 * on, the PSB+'s at its FUP. */
	wlen += (size_t)snprintf(want + wlen, sizeof(want) - wlen,
				 "%u p=0\n%u p=0\n%u p=0\n%u p=%llx\n%u p=%llx\n%u p=%x\n",
				 HWT_DEC_EV_EXEC_MODE, HWT_DEC_EV_TSX, HWT_DEC_EV_EXEC_MODE,
				 HWT_DEC_EV_ASYNC_PAGING, ON_CR3, HWT_DEC_EV_ASYNC_VMCS, ON_VMCS,
				 HWT_DEC_EV_CBR, ON_CBR);
	assert_true(wlen < sizeof(want));
	memset(&ref, 0, sizeof(ref));
	for (int e = 0; e < 2; e++) {
		for (int sb = 0; sb < 4; sb++) {
			for (size_t piece = 0; piece <= 97; piece += 97) {
				struct dectest_opts o;
				struct dectest_result r;
				char got[4096], *save = NULL;
				size_t glen = 0;
				unsigned int enabled = 0, disabled = 0;

				dectest_opts_init(&o);
				o.engine = e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST;
				o.segment_bytes = sb & 1 ? 4096 : 1;
				o.threads = sb & 2 ? 2 : 1;
				o.piece = piece;
				assert_int_equal(
				    dectest_decode(&o, code, sizeof(code), base, pt, len, &r), 0);
				assert_int_equal(r.err, 0);
				assert_int_equal(r.stats.gaps, 0);
				/* Tracing on: nop, jmp three times (the PSB+
				 * between the first two jumps' targets, the
				 * last jump disables). */
				assert_int_equal(r.stats.insns, 6);
				if (!e)
					assert_int_equal(r.stats.segments_fallback, 0);
				/* The status updates, before the enable and
				 * after it. */
				for (char *l = strtok_r(r.text, "\n", &save); l;
				     l = strtok_r(NULL, "\n", &save)) {
					const char *ev = strstr(l, " E ");
					unsigned int type;
					uint64_t payload;

					if (!ev)
						continue;
					assert_int_equal(sscanf(ev,
								" E %u ip=%*x at=%*x p=%" SCNx64,
								&type, &payload),
							 2);
					if (type == HWT_DEC_EV_ENABLED ||
					    type == HWT_DEC_EV_DISABLED) {
						enabled += type == HWT_DEC_EV_ENABLED;
						disabled += type == HWT_DEC_EV_DISABLED;
						continue;
					}
					glen +=
					    (size_t)snprintf(got + glen, sizeof(got) - glen,
							     "%u p=%" PRIx64 "\n", type, payload);
					assert_true(glen < sizeof(got));
				}
				assert_int_equal(enabled, 1);
				assert_int_equal(disabled, 1);
				assert_string_equal(got, want);
				/* A sink that wants no events: the fast
				 * engine counts the status updates (not
				 * logged); the same count, the other records
				 * the same. */
				{
					struct dectest_result ne, full;

					o.no_events = true;
					assert_int_equal(dectest_decode(&o, code, sizeof(code),
									base, pt, len, &ne),
							 0);
					o.no_events = false;
					assert_int_equal(ne.err, 0);
					assert_int_equal(ne.nrec[HWT_DEC_REC_EVENT], 0);
					assert_int_equal(ne.stats.events, r.stats.events);
					assert_int_equal(ne.stats.events,
							 r.nrec[HWT_DEC_REC_EVENT]);
					assert_int_equal(ne.stats.insns, 6);
					o.engine = HWT_DEC_ENGINE_LIBIPT;
					o.no_events = true;
					assert_int_equal(dectest_decode(&o, code, sizeof(code),
									base, pt, len, &full),
							 0);
					o.no_events = false;
					o.engine = e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST;
					assert_same_text(ne.text, full.text);
					assert_int_equal(ne.stats.events, full.stats.events);
					dectest_result_free(&ne);
					dectest_result_free(&full);
				}
				dectest_result_free(&r);
				/* The same records, offsets and times included,
				 * whatever the engine, segments, threads or
				 * pieces (strtok_r cut the text: again). */
				assert_int_equal(
				    dectest_decode(&o, code, sizeof(code), base, pt, len, &r), 0);
				if (!ref.text)
					ref = r;
				else {
					assert_same_text(r.text, ref.text);
					dectest_result_free(&r);
				}
			}
		}
	}
	dectest_result_free(&ref);
}

/* Runs of repeated PSB+ listed as one entry (seg.h SEG_PSB_RUN) where
 * the fast engine meets one it decodes on its own, not by counting: here
 * PSB+ without a FUP repeated while tracing is on (no disable before
 * them), which no CPU writes; the engine decodes the segment again from
 * a list of short entries (eng_fast.c Q_RELIST), no status update wanted
 * as a record (the engine counts them). FAST gives LIBIPT's records (the
 * trace is one segment: libipt decoding the whole stream), on one thread
 * and two, whole and in pieces, and leaves it no segment. (With a
 * segment at every PSB both engines give fewer instructions and a gap:
 * libipt starting at a repeat does not know tracing is on.) */
static void test_psb_repeats_while_on(void **state)
{
	static const uint8_t code[] = {0x90, 0xff, 0xe0}; /* nop; jmp *%rax */
	const uint64_t base = 0x400000;
	struct pt_packet p[160];
	uint8_t pt[2048];
	size_t n = 0, len;
	struct dectest_result ref;

	(void)state;
	memset(p, 0, sizeof(p));
	p[n++].type = ppt_psb;
	p[n].type = ppt_mode;
	p[n].payload.mode.leaf = pt_mol_exec;
	p[n++].payload.mode.bits.exec.csl = 1;
	p[n].type = ppt_fup;
	p[n].payload.ip.ipc = pt_ipc_sext_48;
	p[n++].payload.ip.ip = base;
	p[n++].type = ppt_psbend;
	p[n].type = ppt_tip;
	p[n].payload.ip.ipc = pt_ipc_sext_48;
	p[n++].payload.ip.ip = base;
	for (int k = 0; k < 8; k++) {
		p[n++].type = ppt_psb;
		p[n].type = ppt_tsc;
		p[n++].payload.tsc.tsc = 100000 + 1000 * (uint64_t)k;
		p[n].type = ppt_mode;
		p[n++].payload.mode.leaf = pt_mol_tsx;
		p[n].type = ppt_pip;
		p[n].payload.pip.cr3 = 0x1fa2c000;
		p[n++].payload.pip.nr = 1;
		p[n].type = ppt_cbr;
		p[n++].payload.cbr.ratio = 34;
		p[n++].type = ppt_psbend;
		for (int i = 0; i < 6; i++)
			p[n++].type = ppt_pad;
	}
	p[n].type = ppt_tip;
	p[n].payload.ip.ipc = pt_ipc_sext_48;
	p[n++].payload.ip.ip = base;
	p[n].type = ppt_tip_pgd;
	p[n++].payload.ip.ipc = pt_ipc_suppressed;
	assert_true(n <= HWT_ARRAY_SIZE(p));
	len = encode_packets(p, n, pt, sizeof(pt));
	memset(&ref, 0, sizeof(ref));
	for (int e = 0; e < 2; e++) {
		for (int k = 0; k < 4; k++) {
			struct dectest_opts o;
			struct dectest_result r;

			dectest_opts_init(&o);
			o.engine = e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST;
			o.threads = k & 1 ? 2 : 1;
			o.piece = k & 2 ? 97 : 0;
			o.no_events = true;
			assert_int_equal(dectest_decode(&o, code, sizeof(code), base, pt, len, &r),
					 0);
			assert_int_equal(r.err, 0);
			assert_int_equal(r.stats.segments_fallback, 0);
			assert_int_equal(r.stats.gaps, 0);
			/* From the FUP to the TIP.PGD: nop, jmp three times. */
			assert_int_equal(r.stats.insns, 6);
			if (!ref.text) {
				ref = r;
			} else {
				assert_same_text(r.text, ref.text);
				dectest_result_free(&r);
			}
		}
	}
	dectest_result_free(&ref);
}

/* RS_CALLS nested calls of f (its je not taken each time, then taken),
 * then a compressed return (a taken TNT bit) for each and one more:
 * libipt's return stack holds the newest 64 calls, so its 65th return
 * finds it empty, an error (the fast engine's return stack must see the
 * same: a ring of 64 whose oldest entries the newest overwrote). */
#define RS_CALLS 70

/* An IP packet of type t (FUP, TIP, TIP.PGE) with the full ip. */
static void ip_packet(struct pt_packet *p, enum pt_packet_type t, uint64_t ip)
{
	p->type = t;
	p->payload.ip.ipc = pt_ipc_sext_48;
	p->payload.ip.ip = ip;
}

/* A PSB+ and tracing enabled at ip in 64-bit mode (4 packets from p, zeroed
 * by the caller): the count. */
static size_t enable64_at(struct pt_packet *p, uint64_t ip)
{
	p[0].type = ppt_psb;
	p[1].type = ppt_psbend;
	p[2].type = ppt_mode;
	p[2].payload.mode.leaf = pt_mol_exec;
	p[2].payload.mode.bits.exec.csl = 1;
	ip_packet(&p[3], ppt_tip_pge, ip);
	return 4;
}

static size_t retstack_trace(uint8_t *buf, size_t size, uint64_t ip)
{
	struct pt_packet p[64];
	size_t n = 0;
	/* The bits in order: RS_CALLS times 0 (je not taken), 1 (taken),
	 * then RS_CALLS + 1 returns. */
	unsigned int nbits = 2 * RS_CALLS + 2, done = 0;

	memset(p, 0, sizeof(p));
	n = enable64_at(p, ip);
	while (done < nbits) {
		unsigned int k = nbits - done < 6 ? nbits - done : 6;
		uint64_t bits = 0;

		/* The oldest bit is the packet's highest. */
		for (unsigned int i = 0; i < k; i++)
			bits = bits << 1 | (done + i >= RS_CALLS);
		p[n].type = ppt_tnt_8;
		p[n].payload.tnt.bit_size = (uint8_t)k;
		p[n++].payload.tnt.payload = bits;
		done += k;
	}
	assert_true(n <= HWT_ARRAY_SIZE(p));
	return encode_packets(p, n, buf, size);
}

/* Decodes pt with both engines (o.flags = flags), with a segment at every
 * PSB and with 4 KiB ones: the same records each time, on which check()
 * asserts too. */
static void decode_four_ways(const uint8_t *code, size_t code_len, uint64_t base, const uint8_t *pt,
			     size_t len, uint32_t flags,
			     void (*check)(const struct dectest_result *r))
{
	struct dectest_result ref;

	memset(&ref, 0, sizeof(ref));
	for (int e = 0; e < 2; e++) {
		for (int sb = 0; sb < 2; sb++) {
			struct dectest_opts o;
			struct dectest_result r;

			dectest_opts_init(&o);
			o.engine = e ? HWT_DEC_ENGINE_LIBIPT : HWT_DEC_ENGINE_FAST;
			o.flags = flags;
			o.segment_bytes = sb ? 4096 : 1;
			assert_int_equal(dectest_decode(&o, code, code_len, base, pt, len, &r), 0);
			assert_int_equal(r.err, 0);
			check(&r);
			if (!ref.text)
				ref = r;
			else {
				assert_same_text(r.text, ref.text);
				dectest_result_free(&r);
			}
		}
	}
	dectest_result_free(&ref);
}

static void retstack_check(const struct dectest_result *r)
{
	/* Every call, the 64 returns the stack holds, then the error at
	 * the 65th. */
	assert_int_equal(r->stats.calls, RS_CALLS);
	assert_int_equal(r->stats.returns, 64);
	assert_int_equal(r->stats.gaps, 1);
}

static void test_return_stack_overflow(void **state)
{
	/* f: je done; call f; ret; done: ret */
	static const uint8_t code[] = {0x74, 0x06, 0xe8, 0xf9, 0xff, 0xff, 0xff, 0xc3, 0xc3};
	const uint64_t base = 0x400000;
	uint8_t pt[512];
	size_t len = retstack_trace(pt, sizeof(pt), base);

	(void)state;
	decode_four_ways(code, sizeof(code), base, pt, len, 0, retstack_check);
}

/* A conditional branch taken (its TNT bit), then an asynchronous disable
 * at its target (FUP, TIP.PGD), tracing on again there (TIP.PGE) and an
 * overflow (OVF, FUP elsewhere) before any block begins: the disable
 * resolves the branch's outcome (libipt's block decoder: the taken branch
 * to its target), the overflow after it must not take it back. The shape
 * test_corrupt_streams met with HWT_SEED=1795844853566285682 (its 12th
 * stream: the fast engine logged the branch's block without next IP). */
static size_t async_off_then_ovf_trace(uint8_t *buf, size_t size, uint64_t base)
{
	struct pt_packet p[10];
	size_t n = 0;

	memset(p, 0, sizeof(p));
	n = enable64_at(p, base);
	p[n].type = ppt_tnt_8; /* je taken */
	p[n].payload.tnt.bit_size = 1;
	p[n++].payload.tnt.payload = 1;
	ip_packet(&p[n++], ppt_fup, base + 4);
	p[n++].type = ppt_tip_pgd; /* IP suppressed */
	ip_packet(&p[n++], ppt_tip_pge, base + 4);
	p[n++].type = ppt_ovf;
	ip_packet(&p[n++], ppt_fup, base + 2);
	assert_true(n <= HWT_ARRAY_SIZE(p));
	return encode_packets(p, n, buf, size);
}

static void async_off_check(const struct dectest_result *r)
{
	/* The je's block, its outcome the target. */
	assert_non_null(strstr(r->text, " B 400000-400000 n=1 nx=400004 br=1 "));
	assert_int_equal(r->stats.overflows, 1);
}

static void test_async_disable_then_overflow(void **state)
{
	/* je +2; nop; nop; nop; ret */
	static const uint8_t code[] = {0x74, 0x02, 0x90, 0x90, 0x90, 0xc3};
	const uint64_t base = 0x400000;
	uint8_t pt[256];
	size_t len = async_off_then_ovf_trace(pt, sizeof(pt), base);

	(void)state;
	decode_four_ways(code, sizeof(code), base, pt, len, HWT_DEC_F_PROFILE, async_off_check);
}

/* Every conformance trace (each CPU it names), both canonical engines:
 * identical records, and in pieces too. */

/* Decodes with the fast engine and with libipt, *flag (a sink option of o)
 * set for both, and checks that they give the same records. */
static void decode_both_without(struct dectest_opts *o, bool *flag, const uint8_t *code,
				size_t code_len, uint64_t org, const uint8_t *pt, size_t pt_len,
				struct dectest_result *fast, struct dectest_result *ipt)
{
	const uint32_t engine = o->engine;

	*flag = true;
	o->engine = HWT_DEC_ENGINE_FAST;
	assert_int_equal(dectest_decode(o, code, code_len, org, pt, pt_len, fast), 0);
	o->engine = HWT_DEC_ENGINE_LIBIPT;
	assert_int_equal(dectest_decode(o, code, code_len, org, pt, pt_len, ipt), 0);
	*flag = false;
	o->engine = engine;
	assert_same_text(fast->text, ipt->text);
}

static void test_conformance_traces_engines_agree(void **state)
{
	char path[1024], *text, *line, *save = NULL;
	unsigned int runs = 0, fallback = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/libipt-conformance/MANIFEST.tsv", hwt_test_testdata());
	text = hwt_test_read_file(path, NULL);
	if (!text)
		fail_msg("no conformance suite in %s (tests/data is part of the tree)",
			 hwt_test_testdata());
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], *f[5] = {0}, *s2 = NULL, cpus[512];
		struct dectest_opts o;
		uint8_t *code, *pt;
		size_t code_len, pt_len;
		uint64_t org;
		int k = 0;

		for (char *x = strtok_r(line, "\t", &s2); x && k < 5; x = strtok_r(NULL, "\t", &s2))
			f[k++] = x;
		assert_true(k >= 5);
		snprintf(name, sizeof(name), "%s", f[0]);
		org = strtoull(f[1] + 4, NULL, 0);
		snprintf(path, sizeof(path), "%s/libipt-conformance/gen/%s.pt", hwt_test_testdata(),
			 name);
		pt = (uint8_t *)hwt_test_read_file(path, &pt_len);
		if (!pt)
			continue; /* with sideband: test_conformance.c */
		snprintf(path, sizeof(path), "%s/libipt-conformance/gen/%s.bin",
			 hwt_test_testdata(), name);
		code = (uint8_t *)hwt_test_read_file(path, &code_len);
		assert_non_null(code);
		dectest_opts_init(&o);
		o.flags = HWT_DEC_F_PROFILE;
		{
			const char *a;

			if ((a = strstr(f[2], "--filter:addr0_cfg ")))
				o.filter.addr_cfg = strtoull(a + 19, NULL, 0);
			if ((a = strstr(f[2], "--filter:addr0_a ")))
				o.filter.addr_a[0] = strtoull(a + 17, NULL, 0);
			if ((a = strstr(f[2], "--filter:addr0_b ")))
				o.filter.addr_b[0] = strtoull(a + 17, NULL, 0);
		}
		snprintf(cpus, sizeof(cpus), "%s", f[4] + 5);
		for (char *s3 = NULL, *c = strtok_r(cpus[0] ? cpus : (char[]){"none"}, " ", &s3); c;
		     c = strtok_r(NULL, " ", &s3)) {
			struct dectest_result fast, ipt, pieces;

			assert_int_equal(hwt_dec_cpu_parse(&o.cpu, c), 0);
			o.engine = HWT_DEC_ENGINE_FAST;
			o.piece = 0;
			assert_int_equal(dectest_decode(&o, code, code_len, org, pt, pt_len, &fast),
					 0);
			o.piece = 7;
			assert_int_equal(
			    dectest_decode(&o, code, code_len, org, pt, pt_len, &pieces), 0);
			o.piece = 0;
			o.engine = HWT_DEC_ENGINE_LIBIPT;
			assert_int_equal(dectest_decode(&o, code, code_len, org, pt, pt_len, &ipt),
					 0);
			if (strcmp(fast.text, ipt.text))
				fprintf(stderr, "%s (cpu %s):\n", name, c);
			assert_same_text(fast.text, ipt.text);
			assert_same_text(fast.text, pieces.text);
			assert_int_equal(fast.profile_hash, ipt.profile_hash);
			/* Without block records (the fast engine's run cache). */
			{
				struct dectest_result fnb, inb;

				decode_both_without(&o, &o.no_blocks, code, code_len, org, pt,
						    pt_len, &fnb, &inb);
				assert_int_equal(fnb.profile_hash, fast.profile_hash);
				assert_int_equal(inb.profile_hash, fast.profile_hash);
				dectest_result_free(&fnb);
				dectest_result_free(&inb);
				/* Nor event records (the fast engine counts
				 * PSB+ status updates): the same records and
				 * events counted. */
				decode_both_without(&o, &o.no_events, code, code_len, org, pt,
						    pt_len, &fnb, &inb);
				assert_int_equal(fnb.stats.events, fast.stats.events);
				assert_int_equal(inb.stats.events, fast.stats.events);
				dectest_result_free(&fnb);
				dectest_result_free(&inb);
			}
			runs++;
			fallback += fast.stats.segments_fallback > 0;
			dectest_result_free(&fast);
			dectest_result_free(&ipt);
			dectest_result_free(&pieces);
		}
		free(code);
		free(pt);
	}
	free(text);
	fprintf(stderr, "conformance traces: %u decodes agree (%u with libipt fallback)\n", runs,
		fallback);
	assert_true(runs > 300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_synth_random),
	    cmocka_unit_test(test_synth_typical),
	    cmocka_unit_test(test_synth_syscalls_interrupts),
	    cmocka_unit_test(test_synth_overflows),
	    cmocka_unit_test(test_parallel_and_pieces),
	    cmocka_unit_test(test_synth_real_shapes),
	    cmocka_unit_test(test_synth_filter_vmentry),
	    cmocka_unit_test(test_unknown_frames),
	    cmocka_unit_test(test_gap_and_resync),
	    cmocka_unit_test(test_corrupt_streams),
	    cmocka_unit_test(test_time),
	    cmocka_unit_test(test_cpu_parse),
	    cmocka_unit_test(test_image_and_insn),
	    cmocka_unit_test(test_no_image),
	    cmocka_unit_test(test_records_independent_of_history),
	    cmocka_unit_test(test_image_file_gone),
	    cmocka_unit_test(test_image_file_missing),
	    cmocka_unit_test(test_psb_run_tracing_off),
	    cmocka_unit_test(test_psb_repeats_while_on),
	    cmocka_unit_test(test_return_stack_overflow),
	    cmocka_unit_test(test_async_disable_then_overflow),
	    cmocka_unit_test(test_conformance_traces_engines_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
