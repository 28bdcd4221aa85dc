/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/decoder/test_timeline.c - the time line and packet list of a piece
 * of a segment (run.c cuts segments where the fast engine declines, and
 * decodes the pieces from the segment's time line) come from one walk of
 * the whole segment (seg_timeline); they must be what walking the packets
 * from the time line's start for that piece gives (seg_timeline_walk, the
 * definition): for every piece between two PSBs, in the order run.c asks
 * for them (the whole segment first) and in any other, on the real traces
 * and on synthetic ones with timing, and on both damaged (bytes changed and
 * put in front of PSBs, which makes packets run across a PSB and walks stop
 * at packets that do not decode). Likewise a segment's PSB+ header, read
 * by the segment before for its end and taken from there. And the walk
 * takes the common packets through its own lexer: its time lines and
 * packet lists must be those of the same walk with every packet through
 * hwt_pkt_decode() (seg_timeline_walk_generic).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/pkt.h"
#include "decoder/seg.h"
#include "tests/lib/ptsynth.h"
#include "tests/lib/testutil.h"

struct counts {
	size_t pieces;	 /* pieces compared */
	size_t timed;	 /* ... with a time line */
	size_t kept;	 /* ... decoded while the segment's walk was kept */
	size_t stopped;	 /* ... whose walk stopped at a bad packet */
	size_t restarts; /* ... whose walk started again at their PSB */
	size_t runs;	 /* ... whose packets have an entry for several
			  * repeated PSB+ (seg.h SEG_PSB_RUN) */
};

static uint64_t rnd(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return *st;
}

static void check_same(const struct seg *got, const struct seg *want, const char *what)
{
	if (got->ntl != want->ntl || got->tl_start != want->tl_start ||
	    got->time_error != want->time_error || got->want_pkts != want->want_pkts ||
	    got->err != want->err)
		fail_msg("%s [%" PRIu64 ", %" PRIu64 ") from %" PRIu64
			 ": ntl %zu/%zu tl_start %" PRIu64 "/%" PRIu64
			 " time_error %d/%d want_pkts %d/%d err %d/%d",
			 what, want->start, want->end, want->tl_start, got->ntl, want->ntl,
			 got->tl_start, want->tl_start, got->time_error, want->time_error,
			 got->want_pkts, want->want_pkts, got->err, want->err);
	for (size_t i = 0; i < want->ntl; i++) {
		if (got->tl[i].off != want->tl[i].off || got->tl[i].tsc != want->tl[i].tsc)
			fail_msg("%s [%" PRIu64 ", %" PRIu64 "): time line point %zu", what,
				 want->start, want->end, i);
	}
	if (!want->want_pkts)
		return;
	assert_int_equal(got->npkts, want->npkts);
	for (size_t i = 0; i < want->npkts; i++) {
		const struct seg_pkt *g = &got->pkts[i], *w = &want->pkts[i];

		if (g->off != w->off || g->type != w->type || g->size != w->size ||
		    g->payload != w->payload || g->ipc != w->ipc || g->aux != w->aux)
			fail_msg("%s [%" PRIu64 ", %" PRIu64 "): packet %zu at +%u: type %u/%u "
				 "size %u/%u",
				 what, want->start, want->end, i, w->off, g->type, w->type, g->size,
				 w->size);
	}
}

/* s (which may keep a walk) as the piece [a, b) of the segment whose time
 * line starts at t0, against a fresh walk. */
static void piece(const struct hwt_dec *dec, struct seg *s, const uint8_t *buf, size_t len,
		  uint64_t t0, uint64_t a, uint64_t b, bool want, bool runs, struct counts *c)
{
	struct seg ref;
	bool kept;

	memset(&ref, 0, sizeof(ref));
	seg_init(s, buf, len, a, b, b >= len);
	s->tl_start = t0;
	s->want_pkts = want;
	/* Runs of repeated PSB+ as one entry (seg.h), as the fast engine
	 * has them when it counts status updates. */
	s->count_status = runs;
	seg_find_end_ip(s);
	kept = s->walk.valid && s->walk.key.start == t0 && s->walk.key.buf == buf;
	seg_timeline(s, dec);

	seg_init(&ref, buf, len, a, b, b >= len);
	ref.tl_start = t0;
	ref.want_pkts = want;
	ref.count_status = runs;
	seg_find_end_ip(&ref);
	seg_timeline_walk(&ref, dec);
	check_same(s, &ref, want ? "packets" : "time");
	for (size_t i = 0; ref.want_pkts && i < ref.npkts; i++) {
		if (ref.pkts[i].type == HWT_PKT_PSB && ref.pkts[i].ipc == SEG_PSB_RUN) {
			c->runs++;
			break;
		}
	}
	c->pieces++;
	c->timed += ref.ntl > 0;
	c->kept += kept;
	c->stopped += ref.marks.stop < len;
	c->restarts += ref.tl_start != t0;
	seg_fini(&ref);
}

/* Every piece between PSBs of the segments of up to `span` PSBs. */
static void check_trace(const struct hwt_dec *dec, const uint8_t *buf, size_t len, size_t span,
			uint64_t seed, struct counts *c)
{
	uint64_t *psbs = NULL, st = seed | 1;
	size_t n = 0, cap = 0;
	struct seg s;

	for (size_t p = hwt_pkt_find_psb(buf, len, 0); p < len;
	     p = hwt_pkt_find_psb(buf, len, p + HWT_PKT_PSB_SIZE)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			psbs = realloc(psbs, (cap + 1) * sizeof(*psbs));
			assert_non_null(psbs);
		}
		psbs[n++] = p;
	}
	if (!n) {
		free(psbs);
		return;
	}
	psbs[n] = len;
	memset(&s, 0, sizeof(s));
	for (size_t i = 0; i < n; i += span) {
		size_t last = i + span < n ? i + span : n;
		/* The walk a seg keeps is for one way of listing. */
		bool runs = (i / span) & 1;

		/* With the packet list first, then without (run.c asks for
		 * pieces libipt decodes without it), and mixed. */
		for (int want = 1; want >= 0; want--) {
			/* As run.c: the whole segment, then pieces of it. */
			piece(dec, &s, buf, len, psbs[i], psbs[i], psbs[last], want, runs, c);
			for (size_t x = i; x < last; x++) {
				for (size_t y = x + 1; y <= last; y++)
					piece(dec, &s, buf, len, psbs[i], psbs[x], psbs[y], want,
					      runs, c);
			}
			/* Pieces in any order, first without the whole. */
			for (size_t k = 0; k < 2 * span; k++) {
				size_t x = i + (size_t)(rnd(&st) % (last - i));
				size_t y = x + 1 + (size_t)(rnd(&st) % (last - x));

				if (k == span) {
					seg_fini(&s);
					memset(&s, 0, sizeof(s));
				}
				piece(dec, &s, buf, len, psbs[i], psbs[x], psbs[y],
				      want && (rnd(&st) & 1), runs, c);
			}
		}
	}
	seg_fini(&s);
	free(psbs);
}

/* A copy of buf damaged: bytes changed here and there, and a byte that
 * starts a longer packet put in front of some PSBs (the packet then runs
 * across the PSB). */
static uint8_t *damage(const uint8_t *buf, size_t len, uint64_t seed, size_t *out_len)
{
	static const uint8_t starts[] = {0x99, 0x19, 0x59, 0x02, 0x73, 0x03, 0x1d, 0x4d};
	uint8_t *d = malloc(2 * len + 16);
	uint64_t st = seed | 1;
	size_t n = 0;

	assert_non_null(d);
	for (size_t i = 0; i < len; i++) {
		uint64_t r = rnd(&st);

		if (i + HWT_PKT_PSB_SIZE <= len && buf[i] == 0x02 && buf[i + 1] == 0x82 &&
		    (i < 2 || buf[i - 2] != 0x02 || buf[i - 1] != 0x82) && r % 3 == 0)
			d[n++] = starts[(r >> 8) % sizeof(starts)];
		d[n++] = (r >> 16) % 97 == 0 ? (uint8_t)(r >> 24) : buf[i];
	}
	*out_len = n;
	return d;
}

static void check_all(const uint8_t *buf, size_t len, size_t span, uint64_t seed, struct counts *c)
{
	static const struct {
		uint8_t mtc_freq, nom_freq;
		uint32_t eax, ebx;
		int skz84, skl168;
	} cfgs[] = {{3, 0, 0, 0, 0, 0}, {3, 24, 2, 168, 1, 1}, {0, 40, 1, 100, 0, 1}};
	struct hwt_dec *dec = calloc(1, sizeof(*dec));

	assert_non_null(dec);
	for (size_t k = 0; k < sizeof(cfgs) / sizeof(cfgs[0]); k++) {
		uint8_t *d;
		size_t dlen;

		dec->cfg.mtc_freq = cfgs[k].mtc_freq;
		dec->cfg.nom_freq = cfgs[k].nom_freq;
		dec->cfg.cpuid_0x15_eax = cfgs[k].eax;
		dec->cfg.cpuid_0x15_ebx = cfgs[k].ebx;
		dec->ptcfg.errata.skz84 = cfgs[k].skz84;
		dec->ptcfg.errata.skl168 = cfgs[k].skl168;
		check_trace(dec, buf, len, span, seed + k, c);
		d = damage(buf, len, seed + 7 * k, &dlen);
		check_trace(dec, d, dlen, span, seed + k, c);
		free(d);
	}
	free(dec);
}

static void report(const char *what, const struct counts *c)
{
	print_message("%s: %zu pieces, %zu with a time line, %zu from a kept walk, %zu stopped, "
		      "%zu started again, %zu with an entry for several PSB+\n",
		      what, c->pieces, c->timed, c->kept, c->stopped, c->restarts, c->runs);
	/* The test covers what it is about. */
	assert_true(c->kept > c->pieces / 2);
	assert_true(c->stopped > 0 && c->restarts > 0 && c->timed > 0);
}

static void test_real_traces(void **state)
{
	static const char *const names[] = {"avscript_32", "dyn_test", "icelake_tip"};
	struct counts c = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[1100];
		size_t len;
		uint8_t *pt;

		snprintf(path, sizeof(path), "%s/real-pt/%s/trace.pt", hwt_test_testdata(),
			 names[i]);
		pt = (uint8_t *)hwt_test_read_file(path, &len);
		if (!pt)
			fail_msg("%s is missing (tests/data is part of the tree)", path);
		/* avscript_32 is long: its first 24 KiB. */
		check_all(pt, len > 24576 ? 24576 : len, 6, 11 + i, &c);
		free(pt);
	}
	/* Of the real traces only dyn_test has TSCs (in its PSB+). */
	report("real traces", &c);
}

static void test_synthetic(void **state)
{
	struct counts c = {0};

	(void)state;
	for (unsigned int k = 0; k < 4; k++) {
		struct ptsynth_config cfg;
		struct ptsynth syn;

		ptsynth_config_init(&cfg);
		if (k & 1)
			ptsynth_config_real(&cfg);
		cfg.seed = 40 + k;
		cfg.insns = 20000;
		cfg.psb_period = k & 2 ? 64 : 512;
		cfg.mtc = true;
		cfg.mtc_freq = 3;
		cfg.overflow_ppm = k == 3 ? 20000 : 0;
		if (k == 3)
			cfg.psb_off = 12; /* longer runs of repeated PSB+ */
		assert_int_equal(ptsynth_generate(&cfg, &syn), 0);
		check_all(syn.pt, syn.pt_len > 32768 ? 32768 : syn.pt_len, 5, 100 + k, &c);
		ptsynth_free(&syn);
	}
	report("synthetic traces", &c);
	assert_true(c.timed > c.pieces / 2 && c.runs > 100);
}

static uint8_t *random_packets(uint64_t seed, size_t len);

static void check_hdr(const struct seg_header *got, const struct seg_header *want, uint64_t at)
{
	if (got->fup != want->fup || got->mode_ok != want->mode_ok || got->tsx_ok != want->tsx_ok ||
	    got->spec != want->spec || got->open != want->open || got->mode != want->mode ||
	    got->ip != want->ip || got->psbend != want->psbend ||
	    got->psbend_end != want->psbend_end || got->nstatus != want->nstatus)
		fail_msg("header at %" PRIu64 ": fup %d/%d ip %" PRIx64 "/%" PRIx64
			 " mode %d:%u/%d:%u tsx %d/%d psbend %" PRIu64 "/%" PRIu64
			 " open %d/%d status %u/%u",
			 at, got->fup, want->fup, got->ip, want->ip, got->mode_ok, got->mode,
			 want->mode_ok, want->mode, got->tsx_ok, want->tsx_ok, got->psbend,
			 want->psbend, got->open, want->open, got->nstatus, want->nstatus);
}

/* What seg_find_end_ip() must find (its definition, every packet through
 * hwt_pkt_decode()): the next PSB+'s first FUP's IP and its PSBEND, read
 * from the segment's end up to that PSBEND, another PSB or a packet that
 * does not decode; the end of the trace when it runs into it. */
struct end_ref {
	bool has_end_ip, psbend_seen;
	uint64_t end_ip, psbend, psbend_end;
};

static struct end_ref find_end_ref(const struct seg *s)
{
	struct end_ref r = {0};
	uint64_t off = s->end, ip = 0;
	bool fup = false;

	if (s->last || s->end + HWT_PKT_PSB_SIZE > s->buf_len)
		return r;
	while (off < s->buf_len) {
		struct hwt_pkt p;
		int n = hwt_pkt_decode(s->buf + off, (size_t)(s->buf_len - off), 0, &p);

		if (n < 0 || (n > 0 && p.type == HWT_PKT_PSB && off != s->end))
			return r;
		if (n == 0)
			break;
		if (p.type == HWT_PKT_PSBEND) {
			r.psbend_seen = true;
			r.psbend = off;
			r.psbend_end = off + (uint64_t)n;
			return r;
		}
		if (p.type == HWT_PKT_FUP && !fup) {
			fup = true;
			if (hwt_pkt_ip(&p, &ip) == 0) {
				r.has_end_ip = true;
				r.end_ip = ip;
			}
		}
		off += (uint64_t)n;
	}
	r.psbend = r.psbend_end = s->buf_len;
	return r;
}

static void check_end(const struct seg *s)
{
	struct end_ref r = find_end_ref(s);

	if (s->has_end_ip != r.has_end_ip || (r.has_end_ip && s->end_ip != r.end_ip) ||
	    s->next_psbend != r.psbend || s->next_psbend_end != r.psbend_end ||
	    (s->next_hdr_buf != NULL && !r.psbend_seen))
		fail_msg("end of [%" PRIu64 ", %" PRIu64 "): ip %d:%" PRIx64 "/%d:%" PRIx64
			 " psbend %" PRIu64 "-%" PRIu64 "/%" PRIu64 "-%" PRIu64,
			 s->start, s->end, s->has_end_ip, s->end_ip, r.has_end_ip, r.end_ip,
			 s->next_psbend, s->next_psbend_end, r.psbend, r.psbend_end);
}

/* A segment's PSB+ is read once: the segment before reads it to its PSBEND
 * for its end (seg_find_end_ip) and the segment starting there takes what
 * it says (seg_header), which must be what reading it for that segment
 * alone gives, for segments of one to three PSBs one after another as
 * run.c decodes them. */
/* seg_end_repeats_start() where it takes the next PSB+ for a repeat of the
 * one at the start: what seg_find_end_ip() reads there (the header, the
 * tail, the PSBEND, no FUP). */
static size_t repeats_checked;

static void check_repeat(struct seg *s)
{
	struct seg_header h;
	struct seg_tail t;
	uint64_t psbend, psbend_end, at;

	if (!seg_end_repeats_start(s))
		return;
	h = s->next_hdr;
	t = s->tail;
	psbend = s->next_psbend;
	psbend_end = s->next_psbend_end;
	at = s->next_hdr_at;
	seg_find_end_ip(s);
	check_hdr(&h, &s->next_hdr, s->end);
	if (s->has_end_ip || psbend != s->next_psbend || psbend_end != s->next_psbend_end ||
	    at != s->next_hdr_at || s->next_hdr_buf != s->buf || t.at != s->tail.at ||
	    t.tsc != s->tail.tsc || t.tsc_end != s->tail.tsc_end || t.cbr_end != s->tail.cbr_end ||
	    t.once != s->tail.once || t.fup != s->tail.fup || t.tma_end != s->tail.tma_end)
		fail_msg("repeat at %" PRIu64 " of the PSB+ at %" PRIu64 " not as lexed", s->end,
			 s->start);
	repeats_checked++;
}

static size_t check_headers(const uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t st = seed | 1, start = hwt_pkt_find_psb(buf, len, 0);
	size_t taken = 0;
	struct seg s;

	memset(&s, 0, sizeof(s));
	while (start < len) {
		uint64_t end = start;
		struct seg ref;
		bool cached;

		for (uint64_t k = 1 + rnd(&st) % 3; k && end < len; k--)
			end = hwt_pkt_find_psb(buf, len, (size_t)end + HWT_PKT_PSB_SIZE);
		seg_init(&s, buf, len, start, end, end >= len);
		cached = s.next_hdr_buf == buf && s.next_hdr_at == start;
		seg_header(&s, 0);
		check_repeat(&s);
		seg_find_end_ip(&s);
		check_end(&s);
		memset(&ref, 0, sizeof(ref));
		seg_init(&ref, buf, len, start, end, end >= len);
		seg_header(&ref, 0);
		check_hdr(&s.hdr, &ref.hdr, start);
		taken += cached && s.hdr.psbend_end <= end;
		seg_fini(&ref);
		start = end;
	}
	seg_fini(&s);
	return taken;
}

static void test_header_once(void **state)
{
	static const char *const names[] = {"avscript_32", "dyn_test", "icelake_tip"};
	size_t taken = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[1100];
		size_t len, dlen;
		uint8_t *pt, *d;

		snprintf(path, sizeof(path), "%s/real-pt/%s/trace.pt", hwt_test_testdata(),
			 names[i]);
		pt = (uint8_t *)hwt_test_read_file(path, &len);
		if (!pt)
			fail_msg("%s is missing (tests/data is part of the tree)", path);
		taken += check_headers(pt, len, 3 + i);
		d = damage(pt, len, 5 + i, &dlen);
		check_headers(d, dlen, 9 + i);
		free(d);
		free(pt);
	}
	for (unsigned int k = 0; k < 4; k++) {
		struct ptsynth_config cfg;
		struct ptsynth syn;
		size_t dlen;
		uint8_t *d;

		ptsynth_config_init(&cfg);
		if (k & 1)
			ptsynth_config_real(&cfg);
		cfg.seed = 60 + k;
		cfg.insns = 20000;
		cfg.psb_period = k & 2 ? 64 : 256;
		assert_int_equal(ptsynth_generate(&cfg, &syn), 0);
		taken += check_headers(syn.pt, syn.pt_len, 20 + k);
		d = damage(syn.pt, syn.pt_len, 30 + k, &dlen);
		check_headers(d, dlen, 40 + k);
		free(d);
		ptsynth_free(&syn);
	}
	for (unsigned int k = 0; k < 8; k++) {
		size_t len = 4096 + 1000 * k;
		uint8_t *b = random_packets(50 + k, len);

		check_headers(b, len, 60 + k);
		free(b);
	}
	print_message("headers taken from the segment before: %zu, repeats checked: %zu\n", taken,
		      repeats_checked);
	assert_true(taken > 1000);
	assert_true(repeats_checked > 100);
}

/* ------------------------------------------------------------------------ */
/* The walk's lexer against hwt_pkt_decode()                                 */

struct lexcounts {
	size_t segs;	    /* segments and pieces compared */
	size_t pkts;	    /* packets listed */
	size_t types[32];   /* ... by type */
	size_t stopped;	    /* walks that stopped at a bad packet */
	size_t cut;	    /* segments that end inside a packet */
	size_t time_errors; /* ... with a TMA libipt rejects */
	size_t repeats;	    /* PSB+ listed short as repeats (seg.h) */
	size_t runs;	    /* ... entries standing for several (SEG_PSB_RUN) */
};

/* The packets of the run's first PSB+ t (its PSB's entry) at the repeat's
 * offset off, each decoded there (the same type and size), into out from
 * *n, up to its PSBEND; the repeat's PSB entry p names t and its status
 * updates (aux). */
static void expand_one(const struct seg *s, const struct hwt_dec *dec, const struct seg_pkt *p,
		       const struct seg_pkt *t, uint32_t off0, struct seg_pkt *out, size_t *n)
{
	unsigned int nq = 0;

	assert_int_equal(t->type, HWT_PKT_PSB);
	assert_int_equal(t->ipc, 0);
	for (const struct seg_pkt *u = t;; u++) {
		uint32_t off = off0 + (u->off - t->off);
		struct hwt_pkt k;
		struct seg_pkt *q = &out[(*n)++];
		int sz;

		memset(&k, 0, sizeof(k));
		sz = hwt_pkt_decode(s->buf + s->start + off, (size_t)(s->end - s->start - off),
				    dec->ptcfg.errata.skz84, &k);
		if (u->type == HWT_PKT_PAD) {
			/* PADs in a row: one entry (seg.h). */
			for (unsigned int j = 0; j < u->size; j++)
				assert_int_equal(s->buf[s->start + off + j], 0);
			sz = u->size;
		}
		assert_int_equal(sz, u->size);
		assert_int_equal(k.type, u->type);
		*q = *u;
		q->off = off;
		q->payload = k.payload;
		nq += u->type >= HWT_PKT_MODE_EXEC && u->type <= HWT_PKT_CBR;
		if (u->type == HWT_PKT_PSBEND)
			break;
	}
	assert_int_equal(nq, p->aux);
}

/* s's packet list with each PSB+ listed short as a repeat of the one
 * before it (seg.h) written out in full: the packets of the run's first
 * PSB+ at the repeat's offsets (each decoded there: the same type and
 * size), then s's PSBEND; and each entry that stands for several repeats
 * (SEG_PSB_RUN) the same way, PADs up to the next PSB after each.
 * Returns the number of repeats; *runs counts the SEG_PSB_RUN entries. */
static size_t expand_repeats(struct seg *s, const struct hwt_dec *dec, size_t *runs)
{
	struct seg_pkt *out = calloc(s->npkts * 64 + 1, sizeof(*out));
	size_t n = 0, reps = 0, cap = s->npkts * 64 + 1;

	assert_non_null(out);
	for (size_t i = 0; i < s->npkts; i++) {
		const struct seg_pkt *p = &s->pkts[i], *t;

		if (p->type == HWT_PKT_PSB && p->ipc == SEG_PSB_RUN) {
			uint32_t d = (uint32_t)p->payload, cnt = (uint32_t)(p->payload >> 32), len;

			/* A short one follows, as far from the last one it
			 * stands for as the repeats are apart. */
			assert_true(cnt >= 1 && d > 0 && d <= i && i + 2 < s->npkts);
			assert_int_equal(p[1].type, HWT_PKT_PSB);
			assert_int_equal(p[1].ipc, SEG_PSB_SAME);
			assert_int_equal(p[1].payload, d + 1);
			assert_int_equal(p[1].aux, p->aux);
			assert_int_equal((p[1].off - p->off) % cnt, 0);
			len = (p[1].off - p->off) / cnt;
			t = p - d;
			/* ... and one before it, as far before it. */
			assert_int_equal(p[-1].type == HWT_PKT_PAD ? p[-3].off : p[-2].off,
					 p->off - len);
			(*runs)++;
			reps += cnt;
			if (n + cnt * 80 > cap) {
				cap = (n + cnt * 80) * 2;
				out = realloc(out, cap * sizeof(*out));
				assert_non_null(out);
			}
			for (uint32_t r = 0; r < cnt; r++) {
				uint32_t pe;

				expand_one(s, dec, p, t, p->off + r * len, out, &n);
				/* After its PSBEND, PADs up to the next one's PSB:
				 * one entry. */
				pe = out[n - 1].off + 2;
				if (pe < p->off + (r + 1) * len)
					out[n++] = (struct seg_pkt){
					    0,		 pe,
					    HWT_PKT_PAD, (uint8_t)(p->off + (r + 1) * len - pe),
					    0,		 0};
			}
			continue;
		}
		if (p->type != HWT_PKT_PSB || p->ipc != SEG_PSB_SAME) {
			out[n++] = *p;
			continue;
		}
		reps++;
		assert_true(p->payload > 0 && p->payload <= i);
		t = p - p->payload;
		expand_one(s, dec, p, t, p->off, out, &n);
		/* Its PSBEND, then its PADs in one entry. */
		assert_true(i + 1 < s->npkts);
		assert_int_equal(p[1].type, HWT_PKT_PSBEND);
		assert_int_equal(p[1].off, out[n - 1].off);
		i++;
		if (i + 1 < s->npkts && p[2].type == HWT_PKT_PAD && p[2].off == p[1].off + 2) {
			out[n++] = p[2];
			i++;
		}
	}
	free(s->pkts);
	s->pkts = out;
	s->npkts = n;
	s->cap_pkts = cap;
	return reps;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* got's PSB marks (spans written out) are ref's, which has no spans;
 * seg_psb_marked() finds each. */
static void check_psb_marks(const struct tl_marks *got, const struct tl_marks *ref)
{
	size_t n = got->npsbs;
	uint64_t *all;

	assert_int_equal(ref->nspans, 0);
	for (size_t i = 0; i < got->nspans; i++)
		n += got->spans[i].n;
	assert_int_equal(n, ref->npsbs);
	all = calloc(n + 1, sizeof(*all));
	assert_non_null(all);
	n = got->npsbs;
	if (n)
		memcpy(all, got->psbs, n * sizeof(*all));
	for (size_t i = 0; i < got->nspans; i++) {
		assert_true(!i || got->spans[i].first > got->spans[i - 1].first);
		for (uint32_t k = 0; k < got->spans[i].n; k++)
			all[n++] = got->spans[i].first + (uint64_t)k * got->spans[i].len;
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(all[i], ref->psbs[i]);
		assert_true(seg_psb_marked(got, all[i]));
		assert_false(seg_psb_marked(got, all[i] + 1));
	}
	free(all);
}

/* The walk of [a, b) from t0 with the lexer against the generic one. */
static void lex_compare(const struct hwt_dec *dec, const uint8_t *buf, size_t len, uint64_t t0,
			uint64_t a, uint64_t b, bool want, bool runs, struct lexcounts *c)
{
	struct seg got, ref;

	memset(&got, 0, sizeof(got));
	memset(&ref, 0, sizeof(ref));
	seg_init(&got, buf, len, a, b, b >= len);
	got.tl_start = t0;
	got.want_pkts = want;
	/* Runs of repeats as one entry (seg.h SEG_PSB_RUN) where the fast
	 * engine counts status updates. */
	got.count_status = runs;
	seg_find_end_ip(&got);
	seg_timeline_walk(&got, dec);
	seg_init(&ref, buf, len, a, b, b >= len);
	ref.tl_start = t0;
	ref.want_pkts = want;
	seg_find_end_ip(&ref);
	seg_timeline_walk_generic(&ref, dec);
	if (got.want_pkts)
		c->repeats += expand_repeats(&got, dec, &c->runs);
	check_same(&got, &ref, "lexer");
	assert_int_equal(got.marks.stop, ref.marks.stop);
	check_psb_marks(&got.marks, &ref.marks);
	assert_int_equal(got.marks.ntmas, ref.marks.ntmas);
	for (size_t i = 0; i < ref.marks.ntmas; i++)
		assert_int_equal(got.marks.tmas[i], ref.marks.tmas[i]);
	c->segs++;
	c->stopped += ref.marks.stop < len;
	c->time_errors += ref.time_error;
	if (ref.want_pkts) {
		c->pkts += ref.npkts;
		for (size_t i = 0; i < ref.npkts; i++)
			c->types[ref.pkts[i].type & 31]++;
		c->cut += ref.npkts && ref.pkts[ref.npkts - 1].type == HWT_PKT_BAD;
	}
	seg_fini(&got);
	seg_fini(&ref);
}

/* Segments of 1 to 4 PSBs, pieces of them, and odd cuts that do not fall
 * on a PSB (packets then run across the segment's end), in each timing
 * configuration. */
static void lex_trace(const uint8_t *buf, size_t len, uint64_t seed, struct lexcounts *c)
{
	static const struct {
		uint8_t mtc_freq, nom_freq;
		uint32_t eax, ebx;
		int skz84, skl168;
	} cfgs[] = {{3, 0, 0, 0, 0, 0}, {3, 24, 2, 168, 1, 1}, {0, 40, 1, 100, 0, 1}};
	struct hwt_dec *dec = calloc(1, sizeof(*dec));
	uint64_t st = seed | 1;

	assert_non_null(dec);
	for (size_t k = 0; k < sizeof(cfgs) / sizeof(cfgs[0]); k++) {
		uint64_t a = hwt_pkt_find_psb(buf, len, 0);

		dec->cfg.mtc_freq = cfgs[k].mtc_freq;
		dec->cfg.nom_freq = cfgs[k].nom_freq;
		dec->cfg.cpuid_0x15_eax = cfgs[k].eax;
		dec->cfg.cpuid_0x15_ebx = cfgs[k].ebx;
		dec->ptcfg.errata.skz84 = cfgs[k].skz84;
		dec->ptcfg.errata.skl168 = cfgs[k].skl168;
		while (a < len) {
			uint64_t b = a, mid;

			for (uint64_t n = 1 + rnd(&st) % 4; n && b < len; n--)
				b = hwt_pkt_find_psb(buf, len, (size_t)b + HWT_PKT_PSB_SIZE);
			lex_compare(dec, buf, len, a, a, b, true, false, c);
			lex_compare(dec, buf, len, a, a, b, true, true, c);
			lex_compare(dec, buf, len, a, a, b, false, false, c);
			/* A piece from its segment's start, and a cut inside. */
			mid = hwt_pkt_find_psb(buf, len, (size_t)a + HWT_PKT_PSB_SIZE);
			if (mid < b)
				lex_compare(dec, buf, len, a, mid, b, true, true, c);
			if (b - a > 2)
				lex_compare(dec, buf, len, a, a, a + 1 + rnd(&st) % (b - a - 1),
					    true, true, c);
			a = b;
		}
	}
	free(dec);
}

/* Random packets of every kind the lexer takes and some it leaves
 * (TNT-64, a MODE or TMA with reserved bits, IP compressions 5 and 7, a
 * CYC too long, a stray byte), PSBs among them. */
static uint8_t *random_packets(uint64_t seed, size_t len)
{
	uint8_t *b = malloc(len + 32);
	uint64_t st = seed | 1;
	size_t n = 0;

	assert_non_null(b);
	while (n < len) {
		uint64_t r = rnd(&st), r2 = rnd(&st);
		unsigned int k = (unsigned int)(r % 24);

		switch (k) {
		case 0: /* PSB */
			for (int i = 0; i < 8; i++) {
				b[n++] = 0x02;
				b[n++] = 0x82;
			}
			break;
		case 1:
			b[n++] = 0x02;
			b[n++] = 0x23;
			break;
		case 2:
		case 3: /* TNT-8 */
			b[n++] = (uint8_t)((r2 & 0xfe) | 4);
			break;
		case 4:
		case 5: { /* TIP family, any compression */
			static const uint8_t lo[] = {0x0d, 0x11, 0x01, 0x1d};

			b[n++] = (uint8_t)(lo[r2 % 4] | ((r2 >> 8) & 7) << 5);
			for (int i = 0; i < 8; i++)
				b[n++] = (uint8_t)(r2 >> (16 + 6 * i));
			n -= (r2 >> 60) % 8; /* some bytes the next packet has */
			break;
		}
		case 6:
			b[n++] = 0x00;
			break;
		case 7: /* TSC */
			b[n++] = 0x19;
			for (int i = 0; i < 7; i++)
				b[n++] = (uint8_t)(r2 >> (8 * i));
			break;
		case 8:
			b[n++] = 0x59;
			b[n++] = (uint8_t)r2;
			break;
		case 9: { /* TMA, sometimes with reserved bits */
			static const uint8_t fc_hi[] = {0, 1, 0, 1, 0, 1, 2, 3, 0x80, 0x41};

			b[n++] = 0x02;
			b[n++] = 0x73;
			b[n++] = (uint8_t)r2;
			b[n++] = (uint8_t)(r2 >> 8);
			b[n++] = (r2 >> 16) % 8 == 0 ? 1 : 0;
			b[n++] = (uint8_t)(r2 >> 24);
			b[n++] = fc_hi[(r2 >> 32) % sizeof(fc_hi)];
			break;
		}
		case 10:
			b[n++] = 0x02;
			b[n++] = 0x03;
			b[n++] = (uint8_t)((r2 >> 8) % 5 == 0 ? 0 : r2);
			b[n++] = (uint8_t)(r2 >> 16);
			break;
		case 11: /* PIP */
			b[n++] = 0x02;
			b[n++] = 0x43;
			for (int i = 0; i < 6; i++)
				b[n++] = (uint8_t)(r2 >> (8 * i));
			break;
		case 12: /* VMCS */
			b[n++] = 0x02;
			b[n++] = 0xc8;
			for (int i = 0; i < 5; i++)
				b[n++] = (uint8_t)(r2 >> (8 * i));
			break;
		case 13:
			b[n++] = 0x02;
			b[n++] = 0xf3;
			break;
		case 14: /* MODE, its upper bits sometimes set */
			b[n++] = 0x99;
			b[n++] = (uint8_t)((r2 >> 8) % 4 == 0 ? r2 : r2 & 0x23);
			break;
		case 15:
		case 16: { /* CYC of 1 to 10 bytes */
			unsigned int ext = (unsigned int)((r2 >> 56) % 10);

			b[n++] = (uint8_t)((r2 & 0xf8) | 3 | (ext ? 4 : 0));
			for (unsigned int i = 0; i < ext; i++)
				b[n++] = (uint8_t)(((r2 >> (8 + 5 * i)) & 0xfe) | (i + 1 < ext));
			break;
		}
		case 17: { /* TNT-64, its stop bit anywhere (none: a bad one) */
			unsigned int stop = (unsigned int)((r2 >> 48) % 49);
			uint64_t v = stop == 48 ? 0 : (r2 & ((1ull << stop) - 1)) | 1ull << stop;

			b[n++] = 0x02;
			b[n++] = 0xa3;
			for (int i = 0; i < 6; i++)
				b[n++] = (uint8_t)(v >> (8 * i));
			break;
		}
		case 18: /* a stray byte */
			if (r2 % 4 == 0)
				b[n++] = (uint8_t)(r2 >> 8);
			break;
		case 19: { /* PSB+ that repeat (seg.h), now and then not quite */
			static const uint8_t pip[8] = {0x02, 0x43, 0x11, 0x22,
						       0x33, 0x44, 0x55, 0x66};
			static const uint8_t vmcs[7] = {0x02, 0xc8, 0x01, 0x02, 0x03, 0x04, 0x05};
			uint8_t h[96];
			size_t hn = 0, tsc = 0, tma = 0;
			unsigned int reps = 1 + (unsigned int)((r2 >> 40) % 6);

			if (n + 7 * 78 > len)
				break;
			for (int i = 0; i < 8; i++) {
				h[hn++] = 0x02;
				h[hn++] = 0x82;
			}
			if (r2 & 1) {
				tsc = hn;
				h[hn] = 0x19;
				hn += 8;
				if (r2 & 2) {
					tma = hn;
					memcpy(h + hn, "\x02\x73\0\0\0\0\0", 7);
					hn += 7;
				}
			}
			if (r2 & 4)
				h[hn++] = 0x00;
			if (r2 & 8) {
				h[hn++] = 0x99;
				h[hn++] = (uint8_t)(0x20 | ((r2 >> 4) & 3));
			}
			if (r2 & 0x10) {
				memcpy(h + hn, pip, 8);
				hn += 8;
			}
			if (r2 & 0x20) {
				memcpy(h + hn, vmcs, 7);
				hn += 7;
			}
			if (r2 & 0x40) {
				memcpy(h + hn, "\x02\x03\x18\0", 4);
				h[hn + 2] = (r2 >> 12) % 7 ? 0x18 : 0;
				hn += 4;
			}
			if ((r2 >> 7) % 8 == 0) {
				h[hn++] = 0x59; /* an MTC */
				h[hn++] = 0x10;
			}
			if ((r2 >> 7) % 8 == 1) {
				h[hn++] = 0x99; /* a second MODE.Exec */
				h[hn++] = 0x01;
			}
			if (r2 & 0x80) {
				h[hn++] = 0x99; /* MODE.Exec */
				h[hn++] = 0x01;
			}
			h[hn++] = 0x02;
			h[hn++] = 0x23;
			/* PADs up to the next PSB, as hardware writes them. */
			for (unsigned int i = (unsigned int)((r2 >> 20) % 12); i; i--)
				h[hn++] = 0x00;
			for (unsigned int rep = 0; rep <= reps; rep++) {
				uint64_t r3 = rnd(&st);

				memcpy(b + n, h, hn);
				if (tsc)
					for (int i = 1; i < 8; i++)
						b[n + tsc + i] = (uint8_t)(r3 >> (8 * i));
				if (tma) {
					b[n + tma + 2] = (uint8_t)r3;
					b[n + tma + 3] = (uint8_t)(r3 >> 8);
					b[n + tma + 5] = (uint8_t)(r3 >> 16);
					b[n + tma + 6] = (uint8_t)((r3 >> 24) & 1);
					if (r3 % 29 == 0)
						b[n + tma + 4] = 1; /* reserved: not lexed */
				}
				if (r3 % 13 == 0)
					b[n + (r3 >> 32) % hn] ^= (uint8_t)(1u << ((r3 >> 40) % 8));
				n += hn;
				if (r3 % 11 == 0)
					b[n++] = 0x00; /* a PAD between */
			}
			break;
		}
		default: /* the common case: TNT and short TIPs */
			b[n++] = (uint8_t)((r2 & 0xfe) | 4);
			b[n++] = 0x2d;
			b[n++] = (uint8_t)(r2 >> 8);
			b[n++] = (uint8_t)(r2 >> 16);
			break;
		}
	}
	return b;
}

static void test_lexer(void **state)
{
	static const char *const names[] = {"avscript_32", "dyn_test", "icelake_tip"};
	struct lexcounts c = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[1100];
		size_t len, dlen;
		uint8_t *pt, *d;

		snprintf(path, sizeof(path), "%s/real-pt/%s/trace.pt", hwt_test_testdata(),
			 names[i]);
		pt = (uint8_t *)hwt_test_read_file(path, &len);
		if (!pt)
			fail_msg("%s is missing (tests/data is part of the tree)", path);
		lex_trace(pt, len, 70 + i, &c);
		d = damage(pt, len > 65536 ? 65536 : len, 75 + i, &dlen);
		lex_trace(d, dlen, 80 + i, &c);
		free(d);
		free(pt);
	}
	for (unsigned int k = 0; k < 4; k++) {
		struct ptsynth_config cfg;
		struct ptsynth syn;
		size_t dlen;
		uint8_t *d;

		ptsynth_config_init(&cfg);
		if (k & 1)
			ptsynth_config_real(&cfg);
		cfg.seed = 90 + k;
		cfg.insns = 20000;
		cfg.psb_period = k & 2 ? 64 : 512;
		cfg.mtc = true;
		cfg.mtc_freq = 3;
		cfg.overflow_ppm = k == 3 ? 20000 : 0;
		assert_int_equal(ptsynth_generate(&cfg, &syn), 0);
		lex_trace(syn.pt, syn.pt_len, 95 + k, &c);
		d = damage(syn.pt, syn.pt_len, 99 + k, &dlen);
		lex_trace(d, dlen, 103 + k, &c);
		free(d);
		ptsynth_free(&syn);
	}
	for (unsigned int k = 0; k < 8; k++) {
		size_t len = 4096 + 1000 * k;
		uint8_t *b = random_packets(110 + k, len);

		lex_trace(b, len, 120 + k, &c);
		free(b);
	}
	print_message("lexer: %zu walks, %zu packets, %zu stopped at a bad packet, %zu cut inside "
		      "a packet, %zu with a rejected TMA\n",
		      c.segs, c.pkts, c.stopped, c.cut, c.time_errors);
	/* Every packet the lexer takes was compared, and what it leaves. */
	{
		static const uint8_t lexed[] = {
		    HWT_PKT_PAD,    HWT_PKT_PSB,       HWT_PKT_PSBEND,	 HWT_PKT_FUP,
		    HWT_PKT_TIP,    HWT_PKT_TIP_PGE,   HWT_PKT_TIP_PGD,	 HWT_PKT_TNT_8,
		    HWT_PKT_TNT_64, HWT_PKT_MODE_EXEC, HWT_PKT_MODE_TSX, HWT_PKT_PIP,
		    HWT_PKT_VMCS,   HWT_PKT_CBR,       HWT_PKT_TSC,	 HWT_PKT_TMA,
		    HWT_PKT_MTC,    HWT_PKT_CYC,       HWT_PKT_OVF,	 HWT_PKT_INVALID};

		for (size_t i = 0; i < sizeof(lexed); i++) {
			if (c.types[lexed[i]] < 20)
				fail_msg("packet type %u listed %zu times", lexed[i],
					 c.types[lexed[i]]);
		}
	}
	print_message("lexer: %zu PSB+ listed as repeats, %zu entries for several\n", c.repeats,
		      c.runs);
	assert_true(c.stopped > 100 && c.cut > 100 && c.time_errors > 10 && c.repeats > 1000 &&
		    c.runs > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_traces),
	    cmocka_unit_test(test_synthetic),
	    cmocka_unit_test(test_header_once),
	    cmocka_unit_test(test_lexer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
