/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/seg.c - PSB segments: the decode log's storage and the timeline.
 *
 * The timeline turns a segment's timing packets into TSC estimates by
 * stream offset, with the arithmetic the SDM defines and libipt implements
 * (pt_time.c): TSC sets the time; TMA aligns the CTC (crystal clock) and
 * FastCounter to it; each MTC advances by CTC ticks times
 * CPUID.15H:EBX/EAX; CYC adds core cycles times a calibrated
 * FastCounter-per-cycle ratio (from CBR and the nominal frequency, or
 * measured between MTCs or TSCs). Timing restarts at each PSB, as in
 * libipt after synchronizing, so segments are independent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/pkt.h"
#include "decoder/seg.h"

void seg_init(struct seg *s, const uint8_t *buf, size_t buf_len, uint64_t start, uint64_t end,
	      bool last)
{
	s->buf = buf;
	s->buf_len = buf_len;
	s->start = start;
	s->tl_start = start;
	s->end = end;
	s->last = last;
	s->ipt_until = 0;
	s->ipt_until_err = false;
	s->resync_stop = 0;
	s->rest_end = 0;
	s->rest_last = false;
	s->rest_ipt = 0;
	s->rest_ipt_err = false;
	s->no_runs = false;
	seg_reset(s);
}

static void work_drop(struct seg_work *w)
{
	hwt_dec_fast_runs_undo(w->runs);
	for (size_t i = 0; i < w->ntouched; i++)
		memset(&w->c[w->touched[i]], 0, sizeof(w->c[0]));
	w->ntouched = 0;
}

void seg_reset(struct seg *s)
{
	/* Its counts left in the worker's table go with its log. */
	if (s->counts_work)
		work_drop(s->counts_work);
	for (size_t i = 0; i < s->nctxs; i++)
		hwt_dec_image_put(s->ctxs[i].image);
	s->nitems = s->nevents = s->ngaps = s->nctxs = 0;
	s->ncounts = 0;
	s->counts_work = NULL;
	s->delta = 0;
	s->last_logged = SEG_NOT_LOGGED;
	s->insns = s->overflows = s->nbbs = 0;
	s->nstatus = 0;
	s->status_end = false;
	s->fallback = false;
	s->decline_pos = 0;
	s->decline_err = false;
	s->tail_reached = false;
	s->tail_split = false;
	memset(&s->exit, 0, sizeof(s->exit));
	s->exit_open = false;
	s->err = 0;
	s->sorted = false;
}

void seg_fini(struct seg *s)
{
	seg_reset(s);
	free(s->items);
	free(s->events);
	free(s->gaps);
	free(s->ctxs);
	free(s->tl);
	free(s->pkts);
	free(s->marks.psbs);
	free(s->marks.spans);
	free(s->marks.tmas);
	free(s->walk.tl);
	free(s->walk.pkts);
	free(s->walk.marks.psbs);
	free(s->walk.marks.spans);
	free(s->walk.marks.tmas);
	free(s->counts);
	memset(s, 0, sizeof(*s));
}

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 64;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

/* Room for n + 1 elements. */
static bool grow_to(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *p;

	if (n < *cap)
		return true;
	while (ncap <= n)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

/* Room for n elements, rounded up to 512 (or half as many again as
 * there were room for), not to a power of two: the
 * walk's packet list has room for a packet a byte of its segment (4 KiB:
 * 64 KiB of list, not 128). With two such lists (the walk kept and the
 * next one) a decode of 12 KB of PT (dyn_test) grew the heap past
 * malloc's trim threshold, which gave it back at the decode's end (brk(),
 * a TLB flush) and took it again at the next (page faults). */
static bool reserve(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap = (n + 511) & ~(size_t)511;
	void *p;

	if (n <= *cap)
		return true;
	/* Grown by half at least: segments of varied sizes (avscript_32's)
	 * grew it at every larger one. */
	if (ncap < *cap + *cap / 2)
		ncap = *cap + *cap / 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

struct seg_item *seg_add(struct seg *s, uint8_t kind)
{
	struct seg_item *it;

	if (!grow((void **)&s->items, &s->cap_items, s->nitems, sizeof(*s->items))) {
		s->err = -ENOMEM;
		return NULL;
	}
	it = &s->items[s->nitems++];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	return it;
}

int seg_reserve(struct seg *s, size_t n)
{
	if (n && !grow_to((void **)&s->items, &s->cap_items, s->nitems + n - 1, sizeof(*s->items)))
		return s->err = -ENOMEM;
	return 0;
}

int seg_flush_delta(struct seg *s, uint64_t pos)
{
	struct seg_item *it;

	if (!s->delta)
		return 0;
	it = seg_add(s, SEG_INSNS);
	if (!it)
		return s->err;
	it->delta = s->delta;
	it->pos = pos;
	s->delta = 0;
	return 0;
}

int seg_work_grow(struct seg_work *w, uint32_t id)
{
	if (id == UINT32_MAX) {
		size_t ncap = w->cap_touched ? w->cap_touched * 2 : 1024;
		uint32_t *t = realloc(w->touched, ncap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		w->touched = t;
		w->cap_touched = ncap;
		return 0;
	}
	if (id < w->size)
		return 0;
	{
		size_t n = w->size ? w->size : w->first ? w->first : 1024;
		struct seg_cnt *p;

		while (n <= id)
			n *= 2;
		p = realloc(w->c, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + w->size, 0, (n - w->size) * sizeof(*p));
		w->c = p;
		w->size = n;
	}
	return 0;
}

void seg_work_fini(struct seg_work *w)
{
	if (!w)
		return;
	free(w->c);
	free(w->touched);
	memset(w, 0, sizeof(*w));
}

int seg_commit_counts(struct seg *s)
{
	struct seg_work *w = s->work;

	if (!w)
		return 0;
	for (size_t i = 0; i < w->ntouched; i++) {
		uint32_t id = w->touched[i];

		if (!grow((void **)&s->counts, &s->cap_counts, s->ncounts, sizeof(*s->counts)))
			return s->err = -ENOMEM;
		struct seg_cnt *c = &w->c[id];

		s->counts[s->ncounts++] =
		    (struct seg_count){id, c->count, c->taken, c->partial, c->pinsns};
		memset(c, 0, sizeof(*c));
	}
	w->ntouched = 0;
	return 0;
}

void seg_drop_counts(struct seg *s)
{
	if (s->work)
		work_drop(s->work);
	s->counts_work = NULL;
}

int seg_add_event(struct seg *s, const struct hwt_dec_event *ev, uint8_t flags, uint64_t pos)
{
	struct seg_item *it;

	if (s->delta && seg_flush_delta(s, pos) < 0)
		return s->err;
	if (__builtin_expect(s->nevents == s->cap_events, 0) &&
	    !grow((void **)&s->events, &s->cap_events, s->nevents, sizeof(*s->events)))
		return s->err = -ENOMEM;
	if (__builtin_expect(s->nitems == s->cap_items, 0)) {
		it = seg_add(s, SEG_EVENT);
		if (!it)
			return s->err;
	} else {
		it = &s->items[s->nitems++];
	}
	s->events[s->nevents] = *ev;
	*it = (struct seg_item){
	    .pos = pos, .ninsn = (uint32_t)s->nevents++, .kind = SEG_EVENT, .flags = flags};
	if (ev->type == HWT_DEC_EV_OVERFLOW)
		s->overflows++;
	return 0;
}

int seg_add_gap(struct seg *s, uint32_t kind, int err, const char *what, uint64_t ip, uint64_t size,
		uint64_t pos)
{
	struct seg_item *it;

	if (seg_flush_delta(s, pos) < 0)
		return s->err;
	if (!grow((void **)&s->gaps, &s->cap_gaps, s->ngaps, sizeof(*s->gaps)))
		return s->err = -ENOMEM;
	it = seg_add(s, SEG_GAP);
	if (!it)
		return s->err;
	s->gaps[s->ngaps] = (struct seg_gap){kind, err, what, ip, size};
	it->ninsn = (uint32_t)s->ngaps++;
	it->pos = pos;
	return 0;
}

int seg_add_ctx(struct seg *s, const struct hwt_dec_context *ctx, uint64_t pos)
{
	struct seg_item *it;

	if (seg_flush_delta(s, pos) < 0)
		return s->err;
	if (!grow((void **)&s->ctxs, &s->cap_ctxs, s->nctxs, sizeof(*s->ctxs)))
		return s->err = -ENOMEM;
	it = seg_add(s, SEG_CTX);
	if (!it)
		return s->err;
	s->ctxs[s->nctxs] = (struct seg_ctx){ctx->pid, ctx->tid, hwt_dec_image_get(ctx->image),
					     ctx->note, ctx->run};
	it->ninsn = (uint32_t)s->nctxs++;
	it->pos = pos;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Timeline                                                                  */

enum {
	FCR_SHR = 8, /* fixed-point shift of the FastCounter/cycle ratio */
	MTC_BITS = 8,
	TMA_CTC_BITS = 16,
	TSC_BITS = 56,
};

struct tcal {
	uint64_t fcr, min_fcr, max_fcr;
	uint64_t tsc, cyc_tsc, cyc_mtc;
	uint32_t ctc;
	bool have_mtc, check_skl168;
};

struct tstate {
	bool have_tsc, have_tma, have_mtc;
	uint64_t tsc, base, fc;
	uint32_t ctc, ctc_cyc;
	uint32_t lost_mtc, lost_cyc;
	struct tcal cal;
};

struct tctx {
	uint8_t mtc_freq, nom_freq;
	uint32_t eax, ebx;
	bool skl168;
};

static void tcal_init(struct tcal *c)
{
	memset(c, 0, sizeof(*c));
	c->min_fcr = UINT64_MAX;
}

static bool tcal_have_fcr(const struct tcal *c)
{
	return c->min_fcr <= c->max_fcr;
}

static void tcal_set_fcr(struct tcal *c, uint64_t fcr)
{
	c->fcr = fcr;
	if (fcr < c->min_fcr)
		c->min_fcr = fcr;
	if (fcr > c->max_fcr)
		c->max_fcr = fcr;
}

static bool ctc_delta(const struct tctx *x, uint32_t ctc, uint32_t last, uint32_t *delta)
{
	if (ctc < last) {
		ctc += 1u << (x->mtc_freq + MTC_BITS);
		if (ctc < last)
			return false;
	}
	*delta = ctc - last;
	return true;
}

static bool ctc_fc(const struct tctx *x, uint64_t ctc, uint64_t *fc)
{
	if (!x->eax || !x->ebx)
		return false;
	*fc = (ctc * x->ebx) / x->eax;
	return true;
}

static inline void on_tsc(struct tstate *t, const struct tctx *x, uint64_t tsc, bool header)
{
	struct tcal *c = &t->cal;

	if (header) {
		uint64_t last = c->tsc, cyc = c->cyc_tsc;

		c->tsc = tsc;
		c->cyc_tsc = 0;
		if (last && cyc && !c->have_mtc) {
			uint64_t t2 = tsc;

			if (t2 < last)
				t2 += 1ull << TSC_BITS;
			if (t2 >= last && !((t2 - last) & ~(~0ull >> FCR_SHR)))
				tcal_set_fcr(c, ((t2 - last) << FCR_SHR) / cyc);
		}
	} else {
		c->tsc = tsc;
		c->cyc_tsc = 0;
	}
	(void)x;
	t->have_tsc = true;
	t->have_tma = false;
	t->have_mtc = false;
	t->tsc = t->base = tsc;
	t->ctc = 0;
	t->fc = 0;
	t->lost_mtc = t->lost_cyc = 0;
}

static void on_cbr(struct tstate *t, const struct tctx *x, uint8_t cbr, bool header)
{
	if (!header)
		tcal_init(&t->cal);
	if (x->nom_freq && cbr)
		tcal_set_fcr(&t->cal, ((uint64_t)x->nom_freq << FCR_SHR) / cbr);
}

/* Returns false for a TMA libipt rejects (its query fails there). */
static bool on_tma(struct tstate *t, const struct tctx *x, uint32_t ctc, uint32_t fc)
{
	uint32_t mtc_hi = x->mtc_freq + MTC_BITS;

	if (!t->have_tsc || t->have_tma || t->have_mtc)
		return false;
	t->have_tma = true;
	t->base -= fc;
	t->fc += fc;
	if (mtc_hi <= TMA_CTC_BITS)
		t->have_mtc = true;
	t->ctc = t->ctc_cyc = ctc & ((1u << mtc_hi) - 1u);
	return true;
}

static void on_mtc(struct tstate *t, const struct tctx *x, uint8_t payload)
{
	struct tcal *c = &t->cal;
	uint32_t ctc = (uint32_t)payload << x->mtc_freq, delta, last;
	uint64_t fc;

	/* Calibration first, as libipt does. */
	{
		bool skl = c->check_skl168;
		uint32_t last_ctc = c->ctc;
		uint64_t cyc = c->cyc_mtc;

		c->check_skl168 = false;
		if (!c->have_mtc) {
			c->cyc_mtc = 0;
			c->ctc = ctc;
			c->have_mtc = true;
		} else if (cyc) {
			uint32_t d;
			uint64_t f;

			c->cyc_mtc = 0;
			c->ctc = ctc;
			if (ctc_delta(x, ctc, last_ctc, &d) && ctc_fc(x, d, &f) &&
			    !(f & ~(~0ull >> FCR_SHR))) {
				uint64_t fcr = (f << FCR_SHR) / cyc;
				bool skip = false;

				if (skl) {
					if ((1u << x->mtc_freq) < d)
						skip = true;
					else if (x->mtc_freq < 10 && tcal_have_fcr(c) &&
						 ((c->fcr * (cyc + 0xf00)) >> FCR_SHR) < f)
						skip = true;
				}
				if (!skip)
					tcal_set_fcr(c, fcr);
			}
		}
	}

	if (t->have_tsc && !t->have_tma)
		return;
	last = t->ctc;
	if (t->fc || t->lost_cyc || !t->have_mtc)
		t->ctc_cyc = ctc;
	{
		bool had_mtc = t->have_mtc;

		t->have_mtc = true;
		t->fc = 0;
		t->ctc = ctc;
		t->lost_cyc = 0;
		if (!had_mtc) {
			uint32_t lo, hi;

			if (!t->have_tma)
				return;
			if (last & ~0xffffu)
				return;
			lo = ctc & 0xffffu;
			hi = ctc & ~0xffffu;
			if (lo < last) {
				hi -= 1u << TMA_CTC_BITS;
				hi &= 0xffu << x->mtc_freq;
			}
			last |= hi;
		}
	}
	if (!ctc_delta(x, ctc, last, &delta)) {
		t->lost_mtc++;
		return;
	}
	if (!ctc_fc(x, delta, &fc))
		return;
	t->base += fc;
	t->tsc = t->base;
}

static void on_cyc(struct tstate *t, const struct tctx *x, uint64_t cyc)
{
	uint64_t fcr, fc;

	t->cal.cyc_mtc += cyc;
	t->cal.cyc_tsc += cyc;
	if (!tcal_have_fcr(&t->cal)) {
		t->lost_cyc++;
		return;
	}
	fcr = t->cal.fcr;
	if (!fcr) {
		t->lost_cyc++;
		return;
	}
	fc = t->fc;
	if (!fc && t->ctc != t->ctc_cyc) {
		uint32_t d;
		uint64_t f, old;

		if (!ctc_delta(x, t->ctc, t->ctc_cyc, &d) || !ctc_fc(x, d, &f))
			return;
		old = (f << FCR_SHR) / fcr;
		if (cyc < old)
			cyc = old;
		cyc -= old;
	}
	fc += (cyc * fcr) >> FCR_SHR;
	t->fc = fc;
	t->tsc = t->base + fc;
}

/* Rare: the time line grows. */
static __attribute__((noinline)) void tl_grow_push(struct seg *s, uint64_t off, uint64_t tsc)
{
	if (!grow((void **)&s->tl, &s->cap_tl, s->ntl, sizeof(*s->tl))) {
		s->err = -ENOMEM;
		return;
	}
	s->tl[s->ntl++] = (struct tl_point){off, tsc};
}

static inline __attribute__((always_inline)) void tl_push(struct seg *s, uint64_t off, uint64_t tsc)
{
	if (s->ntl) {
		struct tl_point *l = &s->tl[s->ntl - 1];

		if (l->tsc == tsc)
			return;
		if (l->off == off) {
			l->tsc = tsc;
			return;
		}
	}
	if (__builtin_expect(s->ntl == s->cap_tl, 0)) {
		tl_grow_push(s, off, tsc);
		return;
	}
	s->tl[s->ntl++] = (struct tl_point){off, tsc};
}

/* Rare: a mark list grows. */
static __attribute__((noinline)) void mark_grow(struct seg *s, uint64_t **arr, size_t *n,
						size_t *cap, uint64_t off)
{
	if (!grow((void **)arr, cap, *n, sizeof(**arr))) {
		s->err = -ENOMEM;
		return;
	}
	(*arr)[(*n)++] = off;
}

static inline __attribute__((always_inline)) void mark(struct seg *s, uint64_t **arr, size_t *n,
						       size_t *cap, uint64_t off)
{
	if (__builtin_expect(*n == *cap, 0)) {
		mark_grow(s, arr, n, cap, off);
		return;
	}
	(*arr)[(*n)++] = off;
}

/* The packet list's entry for the packet p of n bytes at off (n <= 0: it
 * does not decode). */
static void pkt_entry(const struct seg *s, struct seg_pkt *q, const struct hwt_pkt *p, int n,
		      uint64_t off)
{
	q->off = (uint32_t)(off - s->start);
	/* MWAIT: hints and extensions in one. */
	q->payload = p->type == HWT_PKT_MWAIT ? p->payload | p->payload2 << 32 : p->payload;
	q->type = n > 0 ? p->type : off >= s->end ? SEG_PKT_END : HWT_PKT_BAD;
	q->size = n > 0 ? (uint8_t)n : 0;
	q->ipc = p->ipc;
	q->aux = p->type == HWT_PKT_TNT_8 || p->type == HWT_PKT_TNT_64 ? p->tnt_bits : p->mode;
}

size_t seg_pkts_from(const struct seg *s, uint64_t off, int skz84, struct seg_pkt *out, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		struct hwt_pkt p;
		int k;

		memset(&p, 0, sizeof(p));
		k = off < s->end ? hwt_pkt_decode(s->buf + off, (size_t)(s->end - off), skz84, &p)
				 : 0;
		pkt_entry(s, &out[n++], &p, k, off);
		if (k <= 0)
			return n;
		off += (uint64_t)k;
	}
	memset(&out[n], 0, sizeof(out[n]));
	out[n].off = (uint32_t)(off - s->start);
	out[n].type = HWT_PKT_BAD;
	return n + 1;
}

/* The PAD entry right before q (the list's end) that a PAD at off adds
 * to: PADs in a row are one entry of up to 255 bytes (seg.h). */
static inline struct seg_pkt *pad_before(const struct seg *s, struct seg_pkt *q, uint64_t off)
{
	struct seg_pkt *pq = q - 1;

	if (q == s->pkts || pq->type != HWT_PKT_PAD || pq->size == UINT8_MAX ||
	    s->start + pq->off + pq->size != off)
		return NULL;
	return pq;
}

/* Little-endian 8 bytes at p (p + 8 must be inside the buffer). */
static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* 16 bytes (a GCC/clang vector: SSE2 on x86-64). */
typedef uint64_t v16 __attribute__((vector_size(16)));

static inline v16 ld16(const uint8_t *p)
{
	v16 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A PSB+ listed in full whose repeats are listed short (seg.h): what is
 * compared and what the time model takes of a repeat. */
struct psbtpl {
	uint64_t end;	     /* where a repeat starts: the last one's end
			      * (UINT64_MAX: none) */
	size_t qend;	     /* ... and its list index */
	size_t q;	     /* list index of the full one's PSB */
	v16 mask[8];	     /* bytes compared, 16 at a time from the end
			      * back (mask[0] the last 16), the first 16
			      * last (mask[nv - 1]) */
	uint64_t fcr;	     /* its CBR's core:bus ratio (has_fcr) */
	uint8_t len, nv, nq; /* bytes (to the next PSB), vectors, status
			      * updates */
	uint8_t tsc, tma;    /* offsets of its TSC and TMA (0: none) */
	uint8_t pad, npad;   /* offset and number of the PADs after its
			      * PSBEND */
	bool has_fcr;
};

/* The walk's state besides the segment. */
struct wstate {
	struct tstate t;
	struct tctx x;
	bool header; /* inside a PSB+ */
	bool runs;   /* SEG_PSB_RUN entries (seg.h) */
	struct psbtpl tpl;
};

/* The time line after a packet of type `type` ending at off, as the walk
 * has it. */
static inline __attribute__((always_inline)) void timed(struct seg *s, const struct wstate *w,
							uint8_t type, uint64_t off)
{
	if (!w->t.have_tsc)
		return;
	if (w->header && type == HWT_PKT_TSC && !s->ntl)
		/* A PSB+ tells the state at its PSB: its TSC is the time
		 * there, so that the segment's first context query (at the
		 * PSB) has one. Without it a per-CPU hook answers for "no
		 * time" (before the first switch) and the segment starts on a
		 * wrong thread. */
		tl_push(s, s->tl_start, w->t.tsc);
	else if (type == HWT_PKT_TSC || type == HWT_PKT_TMA || type == HWT_PKT_MTC ||
		 type == HWT_PKT_CYC || type == HWT_PKT_CBR || type == HWT_PKT_OVF)
		tl_push(s, off, w->t.tsc);
}

/* What the walk does with a packet at off besides listing it and the time
 * line after it: the time model, the marks, whether in a PSB+. */
static inline __attribute__((always_inline)) void
walk_packet(struct seg *s, struct wstate *w, uint8_t type, uint64_t payload, uint64_t off)
{
	switch (type) {
	case HWT_PKT_PSB:
		mark(s, &s->marks.psbs, &s->marks.npsbs, &s->marks.cap_psbs, off);
		w->header = true;
		if (w->x.skl168)
			w->t.cal.check_skl168 = true;
		break;
	case HWT_PKT_PSBEND:
		w->header = false;
		break;
	case HWT_PKT_OVF:
		w->header = false;
		w->t.cal.tsc = w->t.cal.cyc_tsc = w->t.cal.cyc_mtc = 0;
		w->t.cal.ctc = 0;
		w->t.cal.have_mtc = false;
		break;
	case HWT_PKT_TSC:
		on_tsc(&w->t, &w->x, payload, w->header);
		break;
	case HWT_PKT_CBR:
		on_cbr(&w->t, &w->x, (uint8_t)payload, w->header);
		break;
	case HWT_PKT_TMA:
		if (!on_tma(&w->t, &w->x, (uint32_t)(payload & 0xffff),
			    (uint32_t)(payload >> 16))) {
			mark(s, &s->marks.tmas, &s->marks.ntmas, &s->marks.cap_tmas, off);
			if (off >= s->start && off < s->end)
				s->time_error = true;
		}
		break;
	case HWT_PKT_MTC:
		on_mtc(&w->t, &w->x, (uint8_t)payload);
		break;
	case HWT_PKT_CYC:
		on_cyc(&w->t, &w->x, payload);
		break;
	default:
		break;
	}
}

/* The PSB+ listed from p to e - 1 (its PSBEND, then PADs up to the next
 * PSB, len bytes on from p) as the template of repeats (seg.h): tracing
 * off, at most one TSC, a TMA only after it, no MTC or CYC, 1 to 5
 * status updates of distinct types, a CBR not 0 (peek()'s bad packet).
 * Returns false where it is not one. */
static __attribute__((noinline)) bool tpl_build(struct psbtpl *t, const struct tctx *x,
						const struct seg_pkt *p, const struct seg_pkt *e,
						uint64_t len)
{
	uint8_t m[128];
	uint32_t base = p->off;
	unsigned int seen = 0, nq = 0;

	while (e > p + 1 && e[-1].type == HWT_PKT_PAD)
		e--;
	if (p->type != HWT_PKT_PSB || p->ipc || e[-1].type != HWT_PKT_PSBEND || len > sizeof(m))
		return false;
	t->pad = (uint8_t)(e[-1].off + 2 - base);
	t->npad = (uint8_t)(len - t->pad);
	memset(m, 0xff, len);
	t->tsc = t->tma = 0;
	t->has_fcr = false;
	for (const struct seg_pkt *q = p + 1; q < e - 1; q++) {
		uint32_t at = q->off - base;

		switch (q->type) {
		case HWT_PKT_PAD:
			break;
		case HWT_PKT_CBR:
			if (!q->payload)
				return false;
			/* on_cbr() in a PSB+. */
			t->has_fcr = x->nom_freq != 0;
			if (t->has_fcr)
				t->fcr = ((uint64_t)x->nom_freq << FCR_SHR) / q->payload;
			/* fall through */
		case HWT_PKT_MODE_EXEC:
		case HWT_PKT_MODE_TSX:
		case HWT_PKT_PIP:
		case HWT_PKT_VMCS:
			if (seen & (1u << q->type))
				return false;
			seen |= 1u << q->type;
			nq++;
			break;
		case HWT_PKT_TSC:
			if (t->tsc)
				return false;
			t->tsc = (uint8_t)at;
			memset(m + at + 1, 0, 7);
			break;
		case HWT_PKT_TMA:
			if (!t->tsc || t->tma)
				return false;
			t->tma = (uint8_t)at;
			/* CTC and FastCounter; the rest must stay what the
			 * lexer takes (lex_run). */
			m[at + 2] = m[at + 3] = m[at + 5] = 0;
			m[at + 6] = 0xfe;
			break;
		default:
			return false;
		}
	}
	if (!nq)
		return false;
	t->len = (uint8_t)len;
	t->nq = (uint8_t)nq;
	t->nv = (uint8_t)((len + 15) / 16);
	for (unsigned int i = 0; i < t->nv; i++)
		t->mask[i] = ld16(m + (i + 1 < t->nv ? len - 16 * (i + 1) : 0));
	return true;
}

/* Whether the PSB+ at b repeats the one len bytes before it under t's
 * mask (16 bytes at a time from the end back, then the first 16,
 * overlapping): nv vectors, a constant where the caller has one. */
static inline __attribute__((always_inline)) bool psb_same(const struct psbtpl *t, const uint8_t *b,
							   uint64_t len, unsigned int nv)
{
	const uint8_t *be = b + len - 16;
	v16 x = ((ld16(be) ^ ld16(be - len)) & t->mask[0]) |
		((ld16(b) ^ ld16(b - len)) & t->mask[nv - 1]);

	for (unsigned int k = 1; k + 1 < nv; k++)
		x |= (ld16(be - 16 * k) ^ ld16(be - 16 * k - len)) & t->mask[k];
	return !(x[0] | x[1]);
}

/* The repeats from at on, as far as stop: where they end. The time line
 * gets the point after each one's TSC (tl_push(): where the time
 * changes; a repeat's TSC comes after every earlier point). */
static inline __attribute__((always_inline)) uint64_t
psb_scan(struct seg *s, const struct psbtpl *t, uint64_t at, uint64_t stop, unsigned int nv)
{
	const uint8_t *buf = s->buf;
	uint64_t len = t->len, last = s->ntl ? s->tl[s->ntl - 1].tsc : 0;
	struct tl_point *tl = s->tl;
	size_t ntl = s->ntl, cap = s->cap_tl;

	for (; at + len <= stop && psb_same(t, buf + at, len, nv); at += len) {
		uint64_t tsc;

		if (!t->tsc)
			continue;
		tsc = ld64(buf + at + t->tsc + 1) & 0xffffffffffffffull;
		if (tsc == last)
			continue;
		last = tsc;
		if (__builtin_expect(ntl == cap, 0)) {
			s->ntl = ntl;
			tl_grow_push(s, at + t->tsc + 8, tsc);
			tl = s->tl;
			ntl = s->ntl;
			cap = s->cap_tl;
			continue;
		}
		tl[ntl++] = (struct tl_point){at + t->tsc + 8, tsc};
	}
	s->ntl = ntl;
	return at;
}

/* A repeat at `at` listed short (seg.h) at q: its PSB, its PSBEND, its
 * PADs. Returns the entry after them. */
static inline __attribute__((always_inline)) struct seg_pkt *
psb_short(const struct seg *s, const struct psbtpl *t, struct seg_pkt *q, uint64_t at)
{
	q[0] = (struct seg_pkt){(size_t)(q - s->pkts) - t->q,
				(uint32_t)(at - s->start),
				HWT_PKT_PSB,
				HWT_PKT_PSB_SIZE,
				SEG_PSB_SAME,
				t->nq};
	q[1] = (struct seg_pkt){0, (uint32_t)(at + t->pad - 2 - s->start), HWT_PKT_PSBEND, 2, 0, 0};
	q += 2;
	if (t->npad) {
		/* The PADs after it: one entry. */
		*q++ = (struct seg_pkt){
		    0, (uint32_t)(at + t->pad - s->start), HWT_PKT_PAD, t->npad, 0, 0};
	}
	return q;
}

/* The PSB+ from off on while each repeats the one before it (w->tpl.end
 * == off), listed short (seg.h) from *qp, as far as stop. Their walk: the
 * PSBs' marks (a span), the time line after each TSC; the time model as
 * the last one leaves it (each one's TSC starts it over, and CYC, which
 * would keep some of it, is not in them; right after the TSC the TMA
 * applies; the CBR's ratio is the same each time, and timed() adds no
 * point after a TMA or CBR, which leave the time where the TSC put it).
 * Returns where they end (off: none). */
static inline __attribute__((always_inline)) uint64_t
psb_repeats(struct seg *s, struct wstate *w, uint64_t off, uint64_t stop, struct seg_pkt **qp)
{
	const struct psbtpl *t = &w->tpl;
	struct seg_pkt *q = *qp;
	uint64_t at, len = t->len, n;
	struct tl_marks *m = &s->marks;

	/* The time line's first point comes from a header's TSC (timed()):
	 * the full one's made it. */
	if (t->tsc && !s->ntl)
		return off;
	/* 64 bytes apart: what CPUs write while not tracing. */
	at = t->nv == 4 ? psb_scan(s, t, off, stop, 4) : psb_scan(s, t, off, stop, t->nv);
	if (at == off)
		return off;
	n = (at - off) / len;
	if (__builtin_expect(m->nspans == m->cap_spans, 0) &&
	    !grow((void **)&m->spans, &m->cap_spans, m->nspans, sizeof(*m->spans)))
		s->err = -ENOMEM;
	else
		m->spans[m->nspans++] = (struct psb_span){off, (uint32_t)len, (uint32_t)n};
	if (w->runs && t->nq >= 2 && n >= 3) {
		/* The first and the last listed short, the rest as one
		 * entry. */
		q = psb_short(s, t, q, off);
		*q = (struct seg_pkt){((size_t)(q - s->pkts) - t->q) | (n - 2) << 32,
				      (uint32_t)(off + len - s->start),
				      HWT_PKT_PSB,
				      HWT_PKT_PSB_SIZE,
				      SEG_PSB_RUN,
				      t->nq};
		q = psb_short(s, t, q + 1, at - len);
	} else {
		for (uint64_t r = off; r < at; r += len)
			q = psb_short(s, t, q, r);
	}
	*qp = q;
	/* The time model as the last one leaves it. */
	{
		const uint8_t *b = s->buf + at - len;

		if (w->x.skl168)
			w->t.cal.check_skl168 = true;
		if (t->tsc)
			on_tsc(&w->t, &w->x, ld64(b + t->tsc + 1) & 0xffffffffffffffull, true);
		if (t->tma) {
			const uint8_t *c = b + t->tma;

			(void)on_tma(&w->t, &w->x, (uint32_t)c[2] | (uint32_t)c[3] << 8,
				     (uint32_t)c[5] | (uint32_t)c[6] << 8);
		}
		if (t->has_fcr)
			w->t.cal.fcr = t->fcr;
	}
	return at;
}

/* The lexer's classes of a packet's first byte (SDM: opcodes). */
enum {
	LEX_OTHER, /* the generic step decodes it */
	LEX_TNT,   /* TNT-8 (TNT-64: LEX_EXT) */
	LEX_IP,	   /* TIP, TIP.PGE, TIP.PGD, FUP with a valid compression */
	LEX_EXT,   /* 02: extended opcodes */
	LEX_PAD,
	LEX_TSC,
	LEX_MTC,
	LEX_MODE,
	LEX_CYC,
};

#define LEX_IPLO(c)                                                                                \
	(((c)&0x1f) == 0x0d || ((c)&0x1f) == 0x11 || ((c)&0x1f) == 0x01 || ((c)&0x1f) == 0x1d)
#define LEX_EVEN(c) ((c) > 2 ? LEX_TNT : (c) == 0 ? LEX_PAD : LEX_EXT)
#define LEX_ODD(c)                                                                                 \
	(LEX_IPLO(c) && (c) >> 5 != 5 && (c) >> 5 != 7 ? LEX_IP                                    \
	 : (c) == 0x19				       ? LEX_TSC                                   \
	 : (c) == 0x59				       ? LEX_MTC                                   \
	 : (c) == 0x99				       ? LEX_MODE                                  \
						       : LEX_OTHER)
#define LEX_CLS(c) (!((c)&1) ? LEX_EVEN(c) : ((c)&3) == 3 ? LEX_CYC : LEX_ODD(c))
#define LEX_4(c)   LEX_CLS(c), LEX_CLS((c) + 1), LEX_CLS((c) + 2), LEX_CLS((c) + 3)
#define LEX_16(c)  LEX_4(c), LEX_4((c) + 4), LEX_4((c) + 8), LEX_4((c) + 12)
#define LEX_64(c)  LEX_16(c), LEX_16((c) + 16), LEX_16((c) + 32), LEX_16((c) + 48)

static const uint8_t lexcls[256] = {LEX_64(0), LEX_64(64), LEX_64(128), LEX_64(192)};

/* The IP bytes and the payload's mask by IP compression (the lexers':
 * lex_run(), end_lex(); 0: reserved). */
static const uint8_t ipsz[8] = {0, 2, 4, 6, 6, 0, 8, 0};
static const uint64_t ipmask[8] = {
    0, 0xffffull, 0xffffffffull, 0xffffffffffffull, 0xffffffffffffull, 0, ~0ull, 0};
/* The packets a segment is mostly made of, from off (at or after the
 * segment's start) while they end at or before lim, listed when store
 * (then lim is the segment's end): what hwt_pkt_decode() and the walk's
 * generic step would give, without the call, the packet structure and the
 * type dispatch twice. Stops before anything else (a rare packet, one that
 * does not decode or runs past lim, a full packet list, fewer than 16
 * bytes left in the stream: its loads read up to 16 bytes from a packet's
 * first): the generic step takes it. Returns where it stopped. */
static inline __attribute__((always_inline)) uint64_t
lex_run(struct seg *s, struct wstate *w, uint64_t off, uint64_t lim, const bool store)
{
	static const uint8_t iptype[32] = {[0x0d] = HWT_PKT_TIP,
					   [0x11] = HWT_PKT_TIP_PGE,
					   [0x01] = HWT_PKT_TIP_PGD,
					   [0x1d] = HWT_PKT_FUP};
	const uint64_t psb = 0x8202820282028202ull;
	const uint8_t *buf = s->buf;
	uint64_t start = s->start, stop = s->buf_len - 15;
	struct seg_pkt *q = NULL;
	/* The last PSB+ listed whole by this call: its PSB's entry and
	 * where its PSBEND and the PADs right after it end (a repeat's
	 * template, tpl_build()). */
	struct seg_pkt *hq = NULL;
	uint64_t pend = 0;

	if (lim < stop)
		stop = lim;
	if (off >= stop)
		return off;
	if (store) {
		/* At most a packet a byte: room for all of them, else stop
		 * where the list is full. */
		q = s->pkts + s->npkts;
		if (stop - off > s->cap_pkts - s->npkts)
			stop = off + (s->cap_pkts - s->npkts);
	}
#define PUT(V, T, SZ, IPC, AUX)                                                                    \
	do {                                                                                       \
		if (store) {                                                                       \
			q->payload = (V);                                                          \
			q->off = (uint32_t)(off - start);                                          \
			q->type = (T);                                                             \
			q->size = (SZ);                                                            \
			q->ipc = (IPC);                                                            \
			q->aux = (AUX);                                                            \
			q++;                                                                       \
		}                                                                                  \
	} while (0)
/* A packet the walk takes for the time line (or a PSB+'s bounds). */
#define WALKED(V, T, SZ)                                                                           \
	do {                                                                                       \
		if (off + (SZ) > lim)                                                              \
			goto out;                                                                  \
		PUT(V, T, SZ, 0, 0);                                                               \
		walk_packet(s, w, T, V, off);                                                      \
		off += (SZ);                                                                       \
		timed(s, w, T, off);                                                               \
	} while (0)

	while (off < stop) {
		const uint8_t *b = buf + off;
		uint8_t c = b[0];

		switch (lexcls[c]) {
		case LEX_TNT: {
			/* TNT-8: the bits below the stop bit. */
			unsigned int bits = 31 - (unsigned int)__builtin_clz((unsigned int)c >> 1);

			PUT((c >> 1) & ~(1u << bits), HWT_PKT_TNT_8, 1, 0, (uint8_t)bits);
			off++;
			continue;
		}
		case LEX_IP: {
			/* TIP, TIP.PGE, TIP.PGD, FUP. */
			uint8_t ipc = c >> 5, size = (uint8_t)(1 + ipsz[ipc]);

			if (off + size > lim)
				goto out;
			PUT(ld64(b + 1) & ipmask[ipc], iptype[c & 0x1f], size, ipc, 0);
			off += size;
			continue;
		}
		case LEX_EXT:
			switch (b[1]) {
			case 0x82:
				if (ld64(b) != psb || ld64(b + 8) != psb)
					goto out;
				if (store) {
					struct psbtpl *t = &w->tpl;
					size_t qi = (size_t)(q - s->pkts);

					if (off != t->end || qi != t->qend) {
						t->end = UINT64_MAX;
						if (off == pend && hq &&
						    tpl_build(t, &w->x, hq, q,
							      off - start - hq->off)) {
							t->q = (size_t)(hq - s->pkts);
							t->end = off;
							t->qend = qi;
						}
					}
					if (t->end == off) {
						/* Repeats listed short (seg.h). */
						off = psb_repeats(s, w, off, stop, &q);
						if (off != t->end) {
							t->end = off;
							t->qend = (size_t)(q - s->pkts);
							continue;
						}
					}
					t->end = UINT64_MAX;
					hq = q;
				}
				WALKED(0, HWT_PKT_PSB, HWT_PKT_PSB_SIZE);
				continue;
			case 0x23:
				WALKED(0, HWT_PKT_PSBEND, 2);
				pend = off;
				continue;
			case 0xa3: {
				/* TNT-64: the bits below the stop bit. */
				uint64_t v = ld64(b + 2) & 0xffffffffffffull;
				unsigned int bits;

				if (!v || off + 8 > lim)
					goto out;
				bits = 63 - (unsigned int)__builtin_clzll(v);
				PUT(v & ~(1ull << bits), HWT_PKT_TNT_64, 8, 0, (uint8_t)bits);
				off += 8;
				continue;
			}
			case 0x03:
				WALKED(b[2], HWT_PKT_CBR, 4);
				continue;
			case 0x73:
				/* libipt rejects a reserved byte that is not zero
				 * and FastCounter bits above bit 8 (SKZ84: the
				 * generic step). */
				if (b[4] || (b[6] & 0xfe))
					goto out;
				WALKED((uint64_t)b[2] | (uint64_t)b[3] << 8 | (uint64_t)b[5] << 16 |
					   (uint64_t)b[6] << 24,
				       HWT_PKT_TMA, 7);
				continue;
			case 0x43:
				if (off + 8 > lim)
					goto out;
				PUT(ld64(b + 2) & 0xffffffffffffull, HWT_PKT_PIP, 8, 0, 0);
				off += 8;
				continue;
			case 0xc8:
				if (off + 7 > lim)
					goto out;
				PUT((ld64(b + 2) & 0xffffffffffull) << 12, HWT_PKT_VMCS, 7, 0, 0);
				off += 7;
				continue;
			case 0xf3:
				WALKED(0, HWT_PKT_OVF, 2);
				continue;
			default:
				goto out;
			}
		case LEX_PAD: {
			/* A run of PADs: one entry (seg.h), or more of the one
			 * before. */
			struct seg_pkt *pq = store ? pad_before(s, q, off) : NULL;
			uint64_t n = 1, most = pq ? UINT8_MAX - pq->size : UINT8_MAX;

			while (n < most && off + n < stop && !buf[off + n])
				n++;
			if (off == pend)
				pend += n;
			if (pq)
				pq->size = (uint8_t)(pq->size + n);
			else
				PUT(0, HWT_PKT_PAD, (uint8_t)n, 0, 0);
			off += n;
			continue;
		}
		case LEX_TSC:
			WALKED(ld64(b + 1) & 0xffffffffffffffull, HWT_PKT_TSC, 8);
			continue;
		case LEX_MTC:
			WALKED(b[1], HWT_PKT_MTC, 2);
			continue;
		case LEX_MODE:
			if (b[1] >> 5 > 1 || off + 2 > lim)
				goto out;
			PUT(0, b[1] >> 5 ? HWT_PKT_MODE_TSX : HWT_PKT_MODE_EXEC, 2, 0, b[1] & 3);
			off += 2;
			continue;
		case LEX_CYC: {
			/* CYC, as hwt_pkt_decode() takes it. */
			uint64_t v = c >> 3;
			uint8_t size = 1;

			if (c & 4) {
				unsigned int shl = 5;

				for (;;) {
					uint8_t e = b[size++];
					uint64_t x = (uint64_t)(e >> 1) << shl;

					shl += 7;
					if (shl > 64)
						goto out;
					v |= x;
					if (!(e & 1))
						break;
				}
			}
			WALKED(v, HWT_PKT_CYC, size);
			continue;
		}
		default:
			goto out;
		}
	}
#undef WALKED
#undef PUT
out:
	if (store)
		s->npkts = (size_t)(q - s->pkts);
	return off;
}

static uint64_t lex(struct seg *s, struct wstate *w, uint64_t off, uint64_t lim)
{
	if (s->buf_len < 16)
		return off;
	if (s->want_pkts && off < s->end)
		return lex_run(s, w, off, lim, true);
	return lex_run(s, w, off, lim, false);
}

/* The walk of the next PSB+ (from the segment's end to its PSBEND's end)
 * where seg_find_end_ip() found its time plain (s->tail): its PSB's mark
 * and the time line points the generic step would add. Before its TSC, a
 * CBR adds the time so far (the points after it are then no-ops); its TSC
 * is the time there (at tl_start when there is none yet: timed()); after
 * it, a TMA and CBRs add that time again (no-ops). */
static void walk_tail(struct seg *s, bool have_tsc, uint64_t tsc)
{
	mark(s, &s->marks.psbs, &s->marks.npsbs, &s->marks.cap_psbs, s->end);
	if (have_tsc && s->tail.cbr_end)
		tl_push(s, s->tail.cbr_end, tsc);
	if (s->tail.tsc_end)
		tl_push(s, s->ntl ? s->tail.tsc_end : s->tl_start, s->tail.tsc);
}

bool seg_timeline_psb_only(struct seg *s, const struct seg_tail *head)
{
	const struct seg_header *h = &s->hdr;

	if (head->at != s->start || !head->once || s->tl_start != s->start || h->open ||
	    !h->psbend_end || h->psbend_end > s->end || s->tail.at != s->end ||
	    s->next_psbend_end <= s->end)
		return false;
	for (uint64_t off = h->psbend_end; off < s->end; off++) {
		if (s->buf[off])
			return false; /* not a PAD */
	}
	/* The walk from the PSB (a fresh time state): its mark; before its
	 * TSC no time (a CBR adds none, no TMA comes before it: plain); its
	 * TSC the time at the segment's start (timed()); a TMA and CBRs after
	 * it nothing new; then the PADs and the next PSB+ (walk_tail()). */
	s->cur_whole = false;
	s->ntl = 0;
	s->npkts = 0;
	s->time_error = false;
	s->cut_pkt = false;
	s->marks.npsbs = s->marks.ntmas = s->marks.nspans = 0;
	s->marks.stop = UINT64_MAX;
	mark(s, &s->marks.psbs, &s->marks.npsbs, &s->marks.cap_psbs, s->start);
	if (head->tsc_end)
		tl_push(s, s->start, head->tsc);
	walk_tail(s, head->tsc_end != 0, head->tsc);
	return !s->err;
}

/* The walk: the packets from tl_start (or start) on; with fast, the
 * common ones through lex(). */
static void walk(struct seg *s, const struct hwt_dec *dec, bool fast)
{
	struct wstate w;
	int skz84 = dec->ptcfg.errata.skz84;
	uint64_t off = s->tl_start < s->start ? s->tl_start : s->start;
	/* The time goes on to the next PSB+'s end, for the items there
	 * (seg_decoded_on); the packets end at the segment's. */
	uint64_t end = s->next_psbend_end > s->end ? s->next_psbend_end : s->end;
	bool want = s->want_pkts;

again:
	/* The template (tpl) is read only once built: tpl.end says. */
	memset(&w.t, 0, sizeof(w.t));
	w.header = false;
	w.x = (struct tctx){dec->cfg.mtc_freq, dec->cfg.nom_freq, dec->cfg.cpuid_0x15_eax,
			    dec->cfg.cpuid_0x15_ebx, dec->ptcfg.errata.skl168};
	tcal_init(&w.t.cal);
	w.tpl.end = UINT64_MAX;
	/* Runs listed as one entry where the fast engine counts their status
	 * updates (seg.h). */
	w.runs = s->count_status && !dec->cfg.context && !s->no_runs;
	s->marks.npsbs = s->marks.ntmas = s->marks.nspans = 0;
	s->marks.stop = UINT64_MAX;
	s->ntl = 0;
	s->time_error = false;
	s->npkts = 0;
	if (want && s->end - s->start > UINT32_MAX)
		want = false; /* offsets would not fit: no fast engine */
	/* A piece of a longer segment (run.c) takes its time from where that
	 * segment began (tl_start), as libipt decoding on does. */
	s->want_pkts = want && off == s->start;
	/* Room for a packet a byte, up to 64 Ki packets (lex() lists as many
	 * as there is room for; where it stops for room, the list of repeated
	 * PSB+ would differ). */
	if (want && fast &&
	    !reserve((void **)&s->pkts, &s->cap_pkts,
		     s->end - s->start < 65536 ? (size_t)(s->end - s->start) + 1 : 65536,
		     sizeof(*s->pkts))) {
		s->err = -ENOMEM;
		s->want_pkts = want = false;
	}
	for (;;) {
		struct hwt_pkt p;
		int n;

		if (off >= s->end && s->want_pkts) {
			if (!grow((void **)&s->pkts, &s->cap_pkts, s->npkts, sizeof(*s->pkts))) {
				s->err = -ENOMEM;
			} else {
				struct seg_pkt *q = &s->pkts[s->npkts++];

				memset(q, 0, sizeof(*q));
				q->off = (uint32_t)(off - s->start);
				q->type = SEG_PKT_END;
			}
			s->want_pkts = false;
		}
		if (fast && off == s->end && off == s->tail.at && end == s->next_psbend_end) {
			walk_tail(s, w.t.have_tsc, w.t.tsc);
			break;
		}
		if (fast && off >= s->start) {
			uint64_t to = lex(s, &w, off, off < s->end ? s->end : end);

			if (to != off) {
				off = to;
				continue;
			}
		}
		memset(&p, 0, sizeof(p));
		/* Within the segment, packets end at its end. */
		n = off < s->end ? hwt_pkt_decode(s->buf + off, (size_t)(s->end - off), skz84, &p)
		    : off < end	 ? hwt_pkt_decode(s->buf + off, (size_t)(end - off), skz84, &p)
				 : 0;

		if (s->want_pkts && n == 1 && p.type == HWT_PKT_PAD &&
		    pad_before(s, s->pkts + s->npkts, off)) {
			s->pkts[s->npkts - 1].size++;
		} else if (s->want_pkts) {
			struct seg_pkt *q;

			if (!grow((void **)&s->pkts, &s->cap_pkts, s->npkts, sizeof(*s->pkts))) {
				s->err = -ENOMEM;
				s->want_pkts = want = false;
			} else {
				q = &s->pkts[s->npkts++];
				pkt_entry(s, q, &p, n, off);
			}
		}
		if (n <= 0) {
			if (off < s->start) {
				/* Stopped before the segment's PSB (damage:
				 * libipt synchronizes afresh there, its time
				 * from there on): its own time line. */
				off = s->tl_start = s->start;
				goto again;
			}
			if (off < end)
				s->marks.stop = off;
			break;
		}
		walk_packet(s, &w, p.type, p.payload, off);
		off += (uint64_t)n;
		if (off > s->start && off - (uint64_t)n < s->start) {
			/* From tl_start the packets do not meet the
			 * segment's PSB: its own time line. */
			off = s->tl_start = s->start;
			goto again;
		}
		if (off == s->start && want && !s->npkts)
			s->want_pkts = true;
		timed(s, &w, p.type, off);
	}
	s->want_pkts = want && !s->err;
}

/* After s's own walk: whether it stopped at a packet s's end cuts short
 * (seg.h cut_pkt), looked at only where it stopped inside s. */
static inline void walk_cut(struct seg *s, const struct hwt_dec *dec)
{
	uint64_t stop = s->marks.stop;
	struct hwt_pkt p;

	s->cut_pkt = false;
	if (__builtin_expect(stop < s->end, 0))
		s->cut_pkt = stop >= s->start && s->end < s->buf_len &&
			     hwt_pkt_decode(s->buf + stop, (size_t)(s->end - stop),
					    dec->ptcfg.errata.skz84, &p) == 0;
}

void seg_timeline_walk(struct seg *s, const struct hwt_dec *dec)
{
	s->cur_whole = false;
	walk(s, dec, true);
	walk_cut(s, dec);
}

void seg_timeline_walk_generic(struct seg *s, const struct hwt_dec *dec)
{
	s->cur_whole = false;
	walk(s, dec, false);
	walk_cut(s, dec);
}

/* The first of the n ascending offsets at or after off. */
static size_t lower(const uint64_t *v, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool marked(const uint64_t *v, size_t n, uint64_t off)
{
	size_t i = lower(v, n, off);

	return i < n && v[i] == off;
}

bool seg_psb_marked(const struct tl_marks *m, uint64_t off)
{
	size_t lo = 0, hi = m->nspans;

	if (marked(m->psbs, m->npsbs, off))
		return true;
	/* The last span that begins at or before off. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->spans[mid].first <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	{
		const struct psb_span *sp = &m->spans[lo - 1];
		uint64_t d = off - sp->first;

		return d / sp->len < sp->n && d % sp->len == 0;
	}
}

/* Whether the walk k holds what s's walk from its time line's start would
 * meet. */
static bool key_covers(const struct tl_key *k, const struct seg *s, bool want)
{
	return k->buf == s->buf && k->buf_len == s->buf_len && k->start == s->tl_start &&
	       (k->want || !want) && s->start >= k->start && s->end <= k->end;
}

/* Keeps s's own walk (a whole one) as the segment's, its buffers going to
 * s. */
static void keep_walk(struct seg *s)
{
	struct seg_walk *w = &s->walk;
	struct tl_marks m = w->marks;
	struct tl_point *tl = w->tl;
	struct seg_pkt *pkts = w->pkts;
	size_t cap_tl = w->cap_tl, cap_pkts = w->cap_pkts;

	w->valid = true;
	w->key = s->cur;
	w->marks = s->marks;
	w->tl = s->tl;
	w->ntl = s->ntl;
	w->cap_tl = s->cap_tl;
	w->pkts = s->pkts;
	w->npkts = s->npkts;
	w->cap_pkts = s->cap_pkts;
	s->marks = m;
	s->tl = tl;
	s->ntl = 0;
	s->cap_tl = cap_tl;
	s->pkts = pkts;
	s->npkts = 0;
	s->cap_pkts = cap_pkts;
	s->cur_whole = false;
}

/* s's time line and packets as the part of the segment's walk (s->walk)
 * that s's own walk from tl_start gives: the same packets up to s's PSB
 * when the segment's walk meets that PSB (else s's walk would start again
 * there: a packet runs across it, or the walk stops before it), and on to
 * s's end when it meets the PSB there (else a packet runs across it, which
 * s's walk does not decode) or s ends where the segment's walk does; past
 * that, to the next PSB+'s end, the same packets again. Returns false
 * where that does not hold. */
static bool from_walk(struct seg *s, const struct hwt_dec *dec, bool want)
{
	const struct seg_walk *w = &s->walk;
	const struct tl_marks *m = &w->marks;
	uint64_t a = s->start, b = s->end, t0 = w->key.start, stop = m->stop;
	uint64_t e2 = s->next_psbend_end > b ? s->next_psbend_end : b;
	struct hwt_pkt p;
	size_t n, i, j;
	int pn = 0;

	if (a != t0 && (stop < a || !seg_psb_marked(m, a)))
		return false;
	if (b < w->key.end) {
		if ((stop >= b && !seg_psb_marked(m, b)) || e2 > w->key.end)
			return false;
	} else if (e2 != w->key.stop_end) {
		return false;
	}
	memset(&p, 0, sizeof(p));
	if (stop < e2) {
		/* Where the segment's walk stopped, s's stops as well (it
		 * has no more bytes there). */
		uint64_t lim = stop < b ? b : e2;

		pn = hwt_pkt_decode(s->buf + stop, (size_t)(lim - stop), dec->ptcfg.errata.skz84,
				    &p);
		if (pn > 0)
			return false;
	}

	/* The time line up to e2. */
	for (i = 0, n = w->ntl; i < n;) {
		size_t mid = i + (n - i) / 2;

		if (w->tl[mid].off <= e2)
			i = mid + 1;
		else
			n = mid;
	}
	if (!grow_to((void **)&s->tl, &s->cap_tl, n, sizeof(*s->tl))) {
		s->err = -ENOMEM;
		return true;
	}
	if (n)
		memcpy(s->tl, w->tl, n * sizeof(*s->tl));
	s->ntl = n;
	i = lower(m->tmas, m->ntmas, a);
	s->time_error = i < m->ntmas && m->tmas[i] < b;
	s->cut_pkt = stop < b && pn == 0 && b < s->buf_len;

	/* The packets from s's PSB (none when the walk stopped before it). */
	s->npkts = 0;
	if (want && stop >= a) {
		uint64_t to = stop < b ? stop : b;
		struct seg_pkt *q;

		for (i = 0, j = w->npkts; i < j;) {
			size_t mid = i + (j - i) / 2;

			if (t0 + w->pkts[mid].off < a)
				i = mid + 1;
			else
				j = mid;
		}
		/* A repeat listed short needs the PSB+ before it (seg.h):
		 * s's own walk lists it in full; so does a PSB inside the
		 * repeats one entry stands for (the one before i), and one
		 * at s's end inside them (the one before j). Walking again
		 * resets what this changed. */
		if ((i < w->npkts && w->pkts[i].type == HWT_PKT_PSB && w->pkts[i].ipc) ||
		    (i && w->pkts[i - 1].type == HWT_PKT_PSB && w->pkts[i - 1].ipc == SEG_PSB_RUN))
			return false;
		for (size_t hi = w->npkts; j < hi;) {
			size_t mid = j + (hi - j) / 2;

			if (t0 + w->pkts[mid].off < to)
				j = mid + 1;
			else
				hi = mid;
		}
		if (j > i && w->pkts[j - 1].type == HWT_PKT_PSB &&
		    w->pkts[j - 1].ipc == SEG_PSB_RUN)
			return false;
		if (!grow_to((void **)&s->pkts, &s->cap_pkts, j - i, sizeof(*s->pkts))) {
			s->err = -ENOMEM;
			s->want_pkts = false;
			return true;
		}
		for (size_t k = i; k < j; k++) {
			q = &s->pkts[s->npkts++];
			*q = w->pkts[k];
			q->off = (uint32_t)(t0 + q->off - a);
		}
		q = &s->pkts[s->npkts++];
		if (stop < b) {
			pkt_entry(s, q, &p, pn, stop);
		} else {
			memset(q, 0, sizeof(*q));
			q->off = (uint32_t)(b - a);
			q->type = SEG_PKT_END;
		}
	}
	s->want_pkts = want && !s->err;
	return true;
}

void seg_timeline(struct seg *s, const struct hwt_dec *dec)
{
	bool want = s->want_pkts;
	uint64_t start = s->start;

	if (s->tl_start > start || (want && s->end - s->tl_start > UINT32_MAX)) {
		seg_timeline_walk(s, dec);
		return;
	}
	if (!s->walk.valid || !key_covers(&s->walk.key, s, want)) {
		if (s->cur_whole && key_covers(&s->cur, s, want)) {
			keep_walk(s);
		} else {
			/* The walk of the segment s is (a piece of), in the
			 * larger of the two packet lists: the walk kept
			 * does not cover s (one list with room for a
			 * packet a byte, not two). */
			if (s->walk.cap_pkts > s->cap_pkts) {
				struct seg_pkt *p = s->pkts;
				size_t cap = s->cap_pkts;

				s->pkts = s->walk.pkts;
				s->cap_pkts = s->walk.cap_pkts;
				s->walk.pkts = p;
				s->walk.cap_pkts = cap;
				s->walk.npkts = 0;
				s->walk.valid = false;
			}
			s->cur_whole = false;
			s->start = s->tl_start;
			walk(s, dec, true);
			s->start = start;
			s->cur = (struct tl_key){
			    s->buf,
			    s->buf_len,
			    s->tl_start,
			    s->end,
			    s->next_psbend_end > s->end ? s->next_psbend_end : s->end,
			    want};
			if (s->err)
				return;
			if (s->tl_start == start) {
				/* s's own. */
				s->cur_whole = true;
				walk_cut(s, dec);
				return;
			}
			keep_walk(s);
		}
	}
	s->cur_whole = false;
	s->want_pkts = want;
	if (!from_walk(s, dec, want))
		seg_timeline_walk(s, dec);
}

bool seg_time_at_slow(const struct seg *s, uint64_t pos, size_t *cursor, uint64_t *tsc)
{
	size_t i = *cursor;

	if (i > s->ntl)
		i = 0;
	if (i < s->ntl && s->tl[i].off > pos)
		i = 0;
	while (i < s->ntl && s->tl[i].off <= pos)
		i++;
	*cursor = i ? i - 1 : 0;
	if (!i)
		return false;
	*tsc = s->tl[i - 1].tsc;
	return true;
}

/* ------------------------------------------------------------------------ */
/* The state a segment starts in                                             */

/* Whether a TIP.PGE follows the PSB+ at off, past packets that do not
 * change the flow (libipt's check_erratum_bdm70). */
static bool pge_follows(const struct seg *s, uint64_t off)
{
	while (off < s->end) {
		struct hwt_pkt p;
		int n = hwt_pkt_decode(s->buf + off, (size_t)(s->end - off), 0, &p);

		if (n <= 0)
			return false;
		switch (p.type) {
		case HWT_PKT_TIP_PGE:
			return true;
		case HWT_PKT_PAD:
		case HWT_PKT_TSC:
		case HWT_PKT_CBR:
		case HWT_PKT_PSBEND:
		case HWT_PKT_PIP:
		case HWT_PKT_MODE_EXEC:
		case HWT_PKT_MODE_TSX:
		case HWT_PKT_VMCS:
		case HWT_PKT_TMA:
		case HWT_PKT_MTC:
		case HWT_PKT_CYC:
		case HWT_PKT_MNT:
			off += (uint64_t)n;
			continue;
		default:
			return false;
		}
	}
	return false;
}

/* seg_header_pkt(), inline for the lexers (end_lex()). */
static inline __attribute__((always_inline)) void
header_pkt(struct seg_header *h, const struct hwt_pkt *p, uint64_t *last_ip)
{
	switch (p->type) {
	case HWT_PKT_FUP:
		if (hwt_pkt_ip(p, last_ip) == 0) {
			h->fup = true;
			h->ip = *last_ip;
		}
		return;
	case HWT_PKT_MODE_EXEC: {
		bool csl = p->mode & 1, csd = p->mode & 2;

		h->mode_ok = true;
		h->mode = csl ? (csd ? HWT_DEC_MODE_UNKNOWN : HWT_DEC_MODE_64)
			      : (csd ? HWT_DEC_MODE_32 : HWT_DEC_MODE_16);
		break;
	}
	case HWT_PKT_MODE_TSX:
		h->tsx_ok = true;
		h->spec = (p->mode & 3) == 1;
		break;
	case HWT_PKT_PIP:
	case HWT_PKT_VMCS:
	case HWT_PKT_CBR:
		break;
	default:
		return;
	}
	if (h->nstatus < UINT8_MAX)
		h->nstatus++;
}

void seg_header_pkt(struct seg_header *h, const struct hwt_pkt *p, uint64_t *last_ip)
{
	header_pkt(h, p, last_ip);
}

void seg_header(struct seg *s, int bdm70)
{
	struct seg_header *h = &s->hdr;
	uint64_t off = s->start + HWT_PKT_PSB_SIZE, last_ip = 0;

	/* Read already as the segment before's next PSB+ (to its PSBEND,
	 * inside this segment; BDM70 looks past the PSBEND). */
	if (!bdm70 && s->next_hdr_buf == s->buf && s->next_hdr_at == s->start &&
	    s->next_hdr.psbend_end <= s->end) {
		*h = s->next_hdr;
		return;
	}
	memset(h, 0, sizeof(*h));
	h->mode = HWT_DEC_MODE_UNKNOWN;
	while (off < s->end) {
		struct hwt_pkt p;
		int n;

		/* A PAD (a real PSB+ holds tens): nothing to read. */
		if (!s->buf[off]) {
			off++;
			continue;
		}
		n = hwt_pkt_decode(s->buf + off, (size_t)(s->end - off), 0, &p);

		if (n == 0)
			break;
		if (n > 0 && p.type == HWT_PKT_PSBEND) {
			h->psbend = off;
			h->psbend_end = off + (uint64_t)n;
		}
		if (n < 0 || p.type == HWT_PKT_PSBEND || p.type == HWT_PKT_PSB)
			return;
		switch (p.type) {
		case HWT_PKT_FUP:
			/* With BDM70 a fresh sync ignores a FUP that a
			 * TIP.PGE follows, until one FUP has enabled
			 * tracing (pt_qry_header_fup checks only while
			 * disabled). */
			if (bdm70 && !h->fup && pge_follows(s, off + (uint64_t)n))
				break;
			seg_header_pkt(h, &p, &last_ip);
			break;
		default:
			seg_header_pkt(h, &p, &last_ip);
			break;
		}
		off += (uint64_t)n;
	}
	/* The PSB+ runs into the segment's end. At the stream's end libipt
	 * stops there (-pte_eos); before the next PSB, decoding the whole
	 * stream, it reads that PSB as part of the PSB+ and fails
	 * (-pte_bad_context). */
	h->open = true;
}

/* Whether libipt's query decoder takes packet p inside a PSB+ (its
 * header functions; a CBR of 0 its time tracking refuses). */
static bool header_ok(const struct hwt_pkt *p)
{
	switch (p->type) {
	case HWT_PKT_PAD:
	case HWT_PKT_TSC:
	case HWT_PKT_TMA:
	case HWT_PKT_MTC:
	case HWT_PKT_CYC:
	case HWT_PKT_FUP:
	case HWT_PKT_MODE_EXEC:
	case HWT_PKT_MODE_TSX:
	case HWT_PKT_PIP:
	case HWT_PKT_VMCS:
	case HWT_PKT_MNT:
	case HWT_PKT_PSBEND:
		return true;
	case HWT_PKT_CBR:
		return p->payload != 0;
	default:
		return false;
	}
}

/* seg_find_end_ip() of a packet of the next PSB+ after its PSB: its
 * header (nh, when that PSB is the one seg_header() skips) and the first
 * FUP's IP. */
static inline void end_pkt(struct seg *s, struct seg_header *nh, const struct hwt_pkt *p,
			   uint64_t *hdr_ip, bool *fup)
{
	uint64_t ip = 0;

	if (nh)
		header_pkt(nh, p, hdr_ip);
	if (p->type == HWT_PKT_FUP && !*fup) {
		*fup = true;
		if (hwt_pkt_ip(p, &ip) == 0) {
			s->has_end_ip = true;
			s->end_ip = ip;
		}
	}
}

/* seg_find_end_ip() at the next PSB+'s PSBEND at off. */
static void end_psbend(struct seg *s, struct seg_header *nh, uint64_t off)
{
	s->next_psbend = off;
	s->next_psbend_end = off + 2;
	if (nh) {
		nh->psbend = s->next_psbend;
		nh->psbend_end = s->next_psbend_end;
		s->next_hdr_buf = s->buf;
		s->next_hdr_at = s->end;
	}
}

/* Where the packets of a PSB+ after its PSB are the common ones, what
 * hwt_pkt_decode() gives for them (with 16 bytes at hand: no packet here
 * is cut short), without the call and the packet structure: a segment at
 * every PSB reads each PSB+ here first. Returns where it stopped: at
 * anything else, for the generic step; *done when the PSB+ ended (its
 * PSBEND, another PSB, a bad packet). */
static uint64_t end_lex(struct seg *s, struct seg_header *nh, uint64_t off, uint64_t *hdr_ip,
			bool *fup, bool *done)
{
	const uint8_t *buf = s->buf;
	/* Its time, for the walk's tail (s->tail): no longer plain at an
	 * MTC, a TMA before the TSC or a second TMA or TSC. */
	uint64_t tsc = 0, tsc_end = 0, cbr_end = 0, tma_end = 0;
	bool plain = true, once = true, any_fup = false;
	unsigned int seen = 0;

	while (off + 16 <= s->buf_len) {
		const uint8_t *b = buf + off;
		unsigned int sz = 0;
		uint8_t type = 0;

		switch (b[0]) {
		case 0x00: /* PAD */
			off++;
			continue;
		case 0x19: /* TSC */
			plain = plain && !tsc_end;
			tsc = ld64(b + 1) & 0xffffffffffffffull;
			off += 8;
			tsc_end = off;
			continue;
		case 0x59: /* MTC */
			plain = false;
			off += 2;
			continue;
		case 0x99: /* MODE.Exec, MODE.TSX */
			if (b[1] >> 5 > 1)
				return off;
			if (nh) {
				struct hwt_pkt p = {.type = b[1] >> 5 ? HWT_PKT_MODE_TSX
								      : HWT_PKT_MODE_EXEC,
						    .mode = b[1] & 3};

				header_pkt(nh, &p, hdr_ip);
			}
			once = once && !(seen & (1u << (HWT_PKT_MODE_EXEC + (b[1] >> 5))));
			seen |= 1u << (HWT_PKT_MODE_EXEC + (b[1] >> 5));
			off += 2;
			continue;
		case 0x02:
			switch (b[1]) {
			case 0x23:
				end_psbend(s, nh, off);
				if (plain)
					s->tail = (struct seg_tail){
					    s->end, tsc, tsc_end, cbr_end, once, any_fup, tma_end};
				*done = true;
				return off;
			case 0x82: /* a PSB (or a bad one): the PSB+ is broken */
				*done = true;
				return off;
			case 0x03:
				if (!b[2])
					return off; /* libipt refuses it */
				type = HWT_PKT_CBR;
				sz = 4;
				if (!tsc_end && !cbr_end)
					cbr_end = off + sz;
				break;
			case 0x43:
				type = HWT_PKT_PIP;
				sz = 8;
				break;
			case 0xc8:
				type = HWT_PKT_VMCS;
				sz = 7;
				break;
			case 0x73: /* TMA (one libipt rejects: the generic step) */
				if (b[4] || (b[6] & 0xfe))
					return off;
				plain = plain && tsc_end && !tma_end;
				off += 7;
				tma_end = off;
				continue;
			default:
				return off;
			}
			/* A status update. */
			once = once && !(seen & (1u << type)) && (type != HWT_PKT_CBR || b[2]);
			seen |= 1u << type;
			if (nh) {
				struct hwt_pkt p = {.type = type};

				header_pkt(nh, &p, hdr_ip);
			}
			off += sz;
			continue;
		default:
			if ((b[0] & 0x1f) == 0x1d && ipsz[b[0] >> 5]) {
				/* FUP (not a reserved compression). */
				uint8_t ipc = b[0] >> 5;
				struct hwt_pkt p = {.type = HWT_PKT_FUP,
						    .ipc = ipc,
						    .payload = ld64(b + 1) & ipmask[ipc]};

				end_pkt(s, nh, &p, hdr_ip, fup);
				any_fup = true;
				off += 1u + ipsz[ipc];
				continue;
			}
			return off;
		}
	}
	return off;
}

void seg_find_end_ip(struct seg *s)
{
	uint64_t off = s->end, hdr_ip = 0;
	struct seg_header *nh = &s->next_hdr;
	bool fup = false, done = false;

	s->has_end_ip = false;
	s->next_bad = false;
	s->next_psbend = s->next_psbend_end = 0;
	s->next_hdr_buf = NULL;
	s->tail.at = 0;
	if (s->last || s->end + HWT_PKT_PSB_SIZE > s->buf_len)
		return;
	/* The next segment's header on the way (seg_header). */
	memset(nh, 0, sizeof(*nh));
	nh->mode = HWT_DEC_MODE_UNKNOWN;
	if (!memcmp(s->buf + off, hwt_pkt_psb, HWT_PKT_PSB_SIZE)) {
		off = end_lex(s, nh, off + HWT_PKT_PSB_SIZE, &hdr_ip, &fup, &done);
		if (done)
			return;
	}
	while (off < s->buf_len) {
		struct hwt_pkt p;
		int n = hwt_pkt_decode(s->buf + off, (size_t)(s->buf_len - off), 0, &p);

		/* The PSB+ ends at PSBEND, or broken at another PSB. */
		if (n < 0 || (n > 0 && p.type == HWT_PKT_PSB && off != s->end)) {
			s->next_bad = n < 0;
			return;
		}
		if (n == 0)
			break;
		if (off != s->end && !header_ok(&p))
			s->next_bad = true;
		if (off == s->end && (p.type != HWT_PKT_PSB || n != HWT_PKT_PSB_SIZE))
			nh = NULL; /* not the PSB seg_header skips */
		if (p.type == HWT_PKT_PSBEND) {
			end_psbend(s, nh, off);
			return;
		}
		end_pkt(s, off != s->end ? nh : NULL, &p, &hdr_ip, &fup);
		off += (uint64_t)n;
	}
	/* It runs into the end of the trace (the stream's: run.c decodes a
	 * segment once the next PSB+ is complete, or at the end), where
	 * libipt decoding on stops. */
	s->next_psbend = s->next_psbend_end = s->buf_len;
}

/* Whether the PSB+ at `at` repeats the one at s->end that end_lex() read
 * plain (s->tail) to its PSBEND: the same bytes but for the values
 * end_lex() does not look at, its TSC's and its TMA's CTC and FC (a TMA
 * after the TSC: plain), so that end_lex() reads it alike. */
static bool psb_repeats_at(const struct seg *s, uint64_t at)
{
	const uint8_t *a = s->buf + s->end, *b = s->buf + at;
	size_t n = (size_t)(s->next_psbend_end - s->end);
	size_t t = s->tail.tsc_end ? (size_t)(s->tail.tsc_end - s->end) - 7 : n;
	size_t m = s->tail.tma_end ? (size_t)(s->tail.tma_end - s->end) - 7 : n;

	/* Up to the TSC's value, then to the TMA's. */
	if (memcmp(a, b, t))
		return false;
	if (t == n)
		return true;
	t += 7;
	if (m == n)
		return !memcmp(a + t, b + t, n - t);
	/* TMA: 02 73, CTC (2), 0, FC (9 bits), then the rest. */
	return !memcmp(a + t, b + t, m + 2 - t) && a[m + 4] == b[m + 4] &&
	       !((a[m + 6] ^ b[m + 6]) & 0xfe) && !memcmp(a + m + 7, b + m + 7, n - m - 7);
}

/* Whether s->tail describes the PSB+ at s->end as seg_psb_again() needs
 * it: read plain to its PSBEND, no FUP (seg_header() reads one
 * differently with BDM70), inside the buffer. */
static inline bool psb_again_ok(const struct seg *s)
{
	const struct seg_tail *t = &s->tail;
	uint64_t from = s->end;

	return !s->last && !s->rest_end && t->at == from && t->once && !t->fup &&
	       s->next_hdr_buf == s->buf && s->next_hdr_at == from && s->next_psbend_end > from;
}

/* The next PSB+ (s->next_hdr, s->tail, no FUP) is the one d bytes before
 * s->end, moved there. */
static void next_moved(struct seg *s, uint64_t d)
{
	struct seg_tail *t = &s->tail;

	s->has_end_ip = false;
	s->next_psbend += d;
	s->next_psbend_end += d;
	s->next_hdr.psbend += d;
	s->next_hdr.psbend_end += d;
	s->next_hdr_at = s->end;
	t->at = s->end;
	if (t->tsc_end) {
		t->tsc_end += d;
		t->tsc = ld64(s->buf + t->tsc_end - 7) & 0xffffffffffffffull;
	}
	if (t->cbr_end)
		t->cbr_end += d;
	if (t->tma_end)
		t->tma_end += d;
}

/* s becomes [start, end), where the PSB+ at start repeats the one at
 * s->end (seg_psb_again()'s checks passed: start is s->end for one). */
static void psb_move(struct seg *s, uint64_t start, uint64_t end)
{
	uint64_t d = end - s->end, e = start - s->end;

	s->hdr = s->next_hdr;
	s->hdr.psbend += e;
	s->hdr.psbend_end += e;
	s->cur_whole = false;
	s->start = s->tl_start = start;
	s->end = end;
	next_moved(s, d);
}

bool seg_psb_again(struct seg *s, uint64_t end)
{
	uint64_t from = s->end;

	/* end_lex() reading the PSB+ at end as far with 16 bytes at hand. */
	if (!psb_again_ok(s) || end < s->next_psbend_end ||
	    end + (s->next_psbend_end - from) + 14 > s->buf_len)
		return false;
	for (uint64_t off = s->next_psbend_end; off < end; off++) {
		if (s->buf[off])
			return false; /* not a PAD */
	}
	if (!psb_repeats_at(s, end))
		return false;
	psb_move(s, s->end, end);
	return true;
}

/* Clears the bits of mask (8-byte words of bytes from 0) at byte at. */
static inline void mask_byte(uint64_t *mask, size_t at, uint8_t bits)
{
	mask[at / 8] &= ~((uint64_t)bits << (8 * (at % 8)));
}

/* Whether the n bytes from off are PADs. */
static bool pads(const uint8_t *buf, uint64_t off, uint64_t n)
{
	uint64_t diff = 0, i = 0;

	for (; i + 8 <= n; i += 8)
		diff |= ld64(buf + off + i);
	for (; i < n; i++)
		diff |= buf[off + i];
	return !diff;
}

#define PSB_RUN_WORDS (sizeof(((struct seg *)0)->psb_run_mask) / sizeof(uint64_t))

/* s->psb_run_mask for the PSB+ s->tail describes, n bytes (under
 * 8 PSB_RUN_WORDS - 8). */
static void psb_run_mask(struct seg *s, uint64_t n)
{
	uint64_t at = s->tail.at;
	uint64_t t = s->tail.tsc_end ? s->tail.tsc_end - at - 7 : 0;
	uint64_t m = t && s->tail.tma_end ? s->tail.tma_end - at - 7 : 0;
	uint64_t key = n | t << 16 | m << 32 | 1ull << 48, *mask = s->psb_run_mask;
	size_t nw = (size_t)(n + 7) / 8;

	if (s->psb_run_key == key)
		return;
	s->psb_run_key = key;
	for (size_t i = 0; i < nw; i++)
		mask[i] = ~0ull;
	if (nw % 2)
		mask[nw] = 0;
	if (n % 8)
		mask[nw - 1] = (1ull << (8 * (n % 8))) - 1;
	if (t) {
		for (size_t i = 0; i < 7; i++)
			mask_byte(mask, t + i, 0xff); /* its value */
	}
	if (m) {
		/* TMA: 02 73, CTC (2), 0, FC (9 bits). */
		mask_byte(mask, m + 2, 0xff);
		mask_byte(mask, m + 3, 0xff);
		mask_byte(mask, m + 5, 0xff);
		mask_byte(mask, m + 6, 0x01);
	}
}

/* Whether the PSB+ at a and b (nw words) are the same under mask: two
 * words at a time (mask's word nw is 0 where nw is odd). */
static inline bool psb_masked_same(const uint64_t *mask, size_t nw, const uint8_t *a,
				   const uint8_t *b)
{
	uint64_t diff = 0;

	for (size_t i = 0; i < nw; i += 2)
		diff |= ((ld64(a + 8 * i) ^ ld64(b + 8 * i)) & mask[i]) |
			((ld64(a + 8 * i + 8) ^ ld64(b + 8 * i + 8)) & mask[i + 1]);
	return !diff;
}

uint64_t seg_psb_again_run(struct seg *s, uint64_t d, uint64_t limit)
{
	uint64_t n = s->next_psbend_end - s->end, end = s->end, k = 0;
	size_t nw = (size_t)(n + 7) / 8;

	if (!psb_again_ok(s) || nw >= PSB_RUN_WORDS)
		return 0;
	if (!d) {
		/* The PSB+ at s->end and its PADs: the next PSB, if one
		 * follows them, is the first one on (seg_cut()'s with a
		 * segment at every PSB). */
		for (d = n; end + d < limit && end + d < s->buf_len && !s->buf[end + d]; d++)
			;
	}
	/* Each of the run as long: its PSB+ (n bytes) and PADs; the first 8
	 * bytes of the PSB after them (its words, two at a time, read end
	 * before end + d + n + 16: bounds as seg_psb_again()'s, 2 more). */
	if (n > d || end + d >= limit || end + d + n + 16 > s->buf_len ||
	    !pads(s->buf, end + n, d - n) || ld64(s->buf + end) != ld64(s->buf + end + d))
		return 0;
	psb_run_mask(s, n);
	for (;;) {
		/* The PSB+ at end + d repeats the one at end (and so s's). */
		if (!psb_masked_same(s->psb_run_mask, nw, s->buf + end, s->buf + end + d))
			break;
		end += d;
		k++;
		if (end + d >= limit || end + d + n + 16 > s->buf_len ||
		    !pads(s->buf, end + n, d - n) || ld64(s->buf + end) != ld64(s->buf + end + d))
			break;
	}
	if (k)
		psb_move(s, end - d, end);
	return k;
}

bool seg_end_repeats_start(struct seg *s)
{
	uint64_t from = s->start, n = s->next_psbend_end - from, d = s->end - from;
	const uint8_t *a = s->buf + from, *b = s->buf + s->end;
	size_t nw = (size_t)(n + 7) / 8;
	const struct seg_tail *t = &s->tail;

	/* The PSB+ at the start as the segment before read it (s->tail,
	 * s->next_hdr: end_lex() to its PSBEND, plain, no FUP), inside the
	 * segment, and the one at the end as far inside the buffer with
	 * 16 bytes at hand (end_lex()'s bound; its words two at a time). */
	if (t->at != from || !t->once || t->fup || s->next_hdr_buf != s->buf ||
	    s->next_hdr_at != from || s->next_psbend_end <= from || n > d || s->last ||
	    nw >= PSB_RUN_WORDS || s->end + n + 16 > s->buf_len)
		return false;
	psb_run_mask(s, n);
	if (!psb_masked_same(s->psb_run_mask, nw, a, b))
		return false;
	/* What end_lex() gives for it: the same header and tail, moved. */
	next_moved(s, d);
	return true;
}

/* seg_decoded_on() of an item at or after the segment's end. */
static inline void decoded_on_end(const struct seg *s, struct seg_item *it, uint64_t next)
{
	/* A status update is an event query's (at PSBEND). */
	it->pos = it->kind == SEG_EVENT && (it->flags & SEG_F_STATUS) ? s->next_psbend : next;
}

void seg_decoded_on(struct seg *s)
{
	/* libipt's query decoder stays at a PSBEND while more of the PSB+'s
	 * status updates are queued than the one it fetched (pt_qry_event):
	 * the block before a PSB+ while tracing is on and its updates but the
	 * last one are at the PSBEND, as with tracing off. On, a PSB+ with one
	 * status update or none is read past (checked against libipt on the
	 * whole stream: none, CBR, PIP, MODE.Exec or MODE.TSX alone; five). */
	uint64_t first = s->entry.enabled && s->hdr.nstatus < 2 ? s->hdr.psbend_end : s->hdr.psbend;
	uint64_t next = s->exit.enabled && !(s->next_hdr_buf == s->buf &&
					     s->next_hdr_at == s->end && s->next_hdr.nstatus >= 2)
			    ? s->next_psbend_end
			    : s->next_psbend;

	if (!s->entry.known || !s->hdr.psbend)
		first = 0;
	if (!s->exit.known)
		next = 0;
	if (s->sorted && first <= s->end) {
		/* The items before first are a prefix of the log, those at
		 * or after the end a suffix (this keeps them so). */
		size_t i, k;

		for (i = 0; i < s->nitems && s->items[i].pos < first; i++)
			s->items[i].pos = first;
		for (k = s->nitems; next && k > i && s->items[k - 1].pos >= s->end; k--)
			decoded_on_end(s, &s->items[k - 1], next);
		return;
	}
	for (size_t i = 0; i < s->nitems; i++) {
		struct seg_item *it = &s->items[i];

		if (it->pos < first)
			it->pos = first;
		else if (next && it->pos >= s->end)
			decoded_on_end(s, it, next);
	}
}

/* The state a fresh sync starts in (entry not known). */
static struct seg_state seg_natural(const struct seg *s)
{
	struct seg_state st = {false, s->hdr.fup, false, HWT_DEC_MODE_UNKNOWN, 0};

	st.ip = s->hdr.fup ? s->hdr.ip : 0;
	return st;
}

/* The block decoder's state once the PSB+'s status updates are applied;
 * false when libipt rejects them (an execution mode that contradicts the
 * one it decodes in: -pte_bad_status_update). */
static bool after_header(const struct seg *s, const struct seg_state *in, struct seg_state *out)
{
	const struct seg_header *h = &s->hdr;
	struct seg_state st = in->known ? *in : seg_natural(s);

	if (in->known && st.enabled && st.mode != HWT_DEC_MODE_UNKNOWN && h->mode_ok &&
	    st.mode != h->mode)
		return false;
	if (h->mode_ok)
		st.mode = h->mode;
	if (h->tsx_ok)
		st.spec = h->spec;
	st.known = true;
	*out = st;
	return true;
}

static bool state_eq(const struct seg_state *a, const struct seg_state *b)
{
	return a->known == b->known && a->enabled == b->enabled && a->ip == b->ip &&
	       a->mode == b->mode && a->spec == b->spec;
}

bool seg_same_start(const struct seg *s, const struct seg_state *entry,
		    const struct seg_state *used)
{
	struct seg_state a, b;

	/* The same state: the same once the PSB+ is applied (a segment
	 * decoded in turn, the usual case). */
	if (state_eq(entry, used))
		return true;
	/* Where decoding failed, a fresh sync and decoding on need not fail
	 * alike even from the same state: libipt's sync reads ahead past the
	 * PSB+ and fails on what it finds there, decoding on delivers the
	 * events before it first. */
	if (s->ngaps && !state_eq(entry, used))
		return false;
	/* A PSB+ the trace ends in (no PSBEND) syncs nothing afresh, while
	 * decoding on runs the state before it to the end (a block, the
	 * trace's end while enabled): the header is not what both apply. */
	if (s->hdr.open)
		return false;
	if (!after_header(s, entry, &a) || !after_header(s, used, &b))
		return state_eq(entry, used);
	return state_eq(&a, &b);
}

bool seg_passes_through(const struct seg *s, const struct seg_state *entry)
{
	struct seg_state st;

	if (!s->exit.known || !after_header(s, &s->entry, &st) || st.enabled ||
	    !after_header(s, entry, &st) || st.enabled)
		return false;
	for (size_t i = 0; i < s->nitems; i++) {
		const struct seg_item *it = &s->items[i];

		if (it->kind == SEG_CTX)
			continue;
		if (it->kind != SEG_EVENT || !(it->flags & SEG_F_STATUS))
			return false;
	}
	return true;
}

struct seg_state seg_through(const struct seg *s, const struct seg_state *entry)
{
	struct seg_state st;

	if (!entry->known || !after_header(s, entry, &st))
		return s->exit;
	return st;
}

void seg_set_exit(struct seg *s, bool ok, bool enabled, uint64_t ip, uint8_t mode, bool spec)
{
	memset(&s->exit, 0, sizeof(s->exit));
	/* Still tracing at the next PSB: the next segment goes on from its
	 * start only if the last run got there. */
	if (!ok || (enabled && !(s->has_end_ip && s->tail_reached))) {
		s->exit_open = ok && enabled && !s->ngaps;
		return;
	}
	s->exit.known = true;
	s->exit.enabled = enabled;
	s->exit.ip = enabled ? s->end_ip : ip;
	s->exit.mode = mode;
	s->exit.spec = spec;
}

void seg_exit_empty(struct seg *s)
{
	struct seg_state st;

	memset(&s->exit, 0, sizeof(s->exit));
	if (!after_header(s, &s->entry, &st))
		return;
	if (st.enabled && !(s->has_end_ip && st.ip == s->end_ip))
		return;
	s->exit = st;
}
