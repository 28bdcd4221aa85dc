/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/run.c - splitting a stream into PSB segments and running the
 * canonical engines over them, sequentially or on worker threads.
 *
 * Phase 1 (an engine filling a segment's log) runs on any thread, segments
 * in any order; phase 2 (flow.c) replays the logs strictly in stream order
 * on the calling thread, so sinks see the same records in the same order
 * however many threads decode: parallel output equals sequential output by
 * construction, and a test checks it. At most `window` segments are in
 * flight, which bounds memory however long the stream is.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/flow.h"
#include "decoder/pkt.h"
#include "decoder/seg.h"

/* Whether a PSB begins at b, as hwt_pkt_find_psb() has them: the last 16
 * bytes of a run of 02 82 (b + 18 inside the buffer). */
static inline bool psb_at(const uint8_t *b)
{
	return !memcmp(b, hwt_pkt_psb, HWT_PKT_PSB_SIZE) && !(b[16] == 0x02 && b[17] == 0x82);
}

/* Where the segment starting at the PSB at start ends: the first PSB at
 * least cfg.segment_bytes on. libipt decodes the PSBs inside as it does
 * decoding a whole stream; per-segment work (set-up, the time line, the
 * state from the segment before) is amortized over that much trace however
 * often the CPU wrote PSBs (every 256 bytes, or PSB+ after PSB+ while
 * tracing is off), and there are still plenty of segments to decode in
 * parallel.
 *
 * PSBs a few dozen bytes apart are a CPU writing PSB+ while it does not
 * trace (trace between PSBs puts them kilobytes apart): such a run counts
 * for little (a segment costs thousands of instructions, a repeated PSB+
 * a few dozen: seg.c psb_repeats()). A cut that falls inside one of at
 * least segment_bytes / 8 moves to its last PSB and on by a quarter of
 * segment_bytes, again while it falls inside one, up to 64 times
 * segment_bytes (each error in a segment makes a piece that costs as much
 * as the rest of the segment: seg.c from_walk()); with segments under
 * 1 KiB (a segment at every PSB: tests) every PSB counts. */
static size_t seg_cut(const struct hwt_dec *dec, const uint8_t *buf, size_t len, size_t start,
		      size_t skip)
{
	size_t min = dec->cfg.segment_bytes;
	size_t to = start + (min < HWT_PKT_PSB_SIZE ? HWT_PKT_PSB_SIZE : min);

	if (skip > to)
		to = skip;

	for (;;) {
		size_t p = hwt_pkt_find_psb(buf, len, to), q, d, l, n;

		if (min < 1024 || p >= len)
			return p;
		/* The next PSB, if at most 64 bytes on. */
		n = p + 64 + HWT_PKT_PSB_SIZE < len ? p + 64 + HWT_PKT_PSB_SIZE : len;
		q = hwt_pkt_find_psb(buf, n, p + HWT_PKT_PSB_SIZE);
		if (q >= n || q + HWT_PKT_PSB_SIZE + 2 > len || !psb_at(buf + q))
			return p;
		/* The run's last PSB (16 at a time, then one by one: a cut at
		 * any PSB is right, this only makes fewer segments). */
		d = q - p;
		for (l = q; l + 16 * d + HWT_PKT_PSB_SIZE + 2 <= len && psb_at(buf + l + 16 * d);
		     l += 16 * d)
			;
		for (; l + d + HWT_PKT_PSB_SIZE + 2 <= len && psb_at(buf + l + d); l += d)
			;
		if (l - p < min / 8)
			return p; /* a short run: segments' bytes are trace */
		if (l - start >= 64 * min)
			return l;
		to = l + min / 4;
	}
}

/* What a decoding thread keeps between segments. */
struct worker {
	void *fast;	      /* the fast engine's caches */
	struct seg_work work; /* block counts */
	bool replays;	      /* the replay follows each decode on this
			       * thread: a segment's counts stay in work
			       * for it (seg.h counts_work) */
};

/* Workers kept between calls (a decoder fed in pieces, or decoding on
 * several threads, does not allocate and clear its caches again each
 * time: they are keyed by block and image, valid for the decoder's
 * icache, and every segment leaves them with nothing pending). */
#define KEPT_WORKERS 16

struct hwt_dec_workers {
	size_t n, cap;
	struct worker w[];
};

static int worker_init(struct hwt_dec *dec, struct worker *w, bool replays)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_lock(&dec->workers_lock);
	if (dec->workers && dec->workers->n)
		*w = dec->workers->w[--dec->workers->n];
	pthread_mutex_unlock(&dec->workers_lock);
	if (!w->work.size)
		w->work.first = hwt_dec_ids_first(dec);
	w->replays = replays;
	w->work.runs = NULL;
	if (dec->cfg.engine == HWT_DEC_ENGINE_FAST && !w->fast) {
		int err = hwt_dec_fast_scratch_alloc(&w->fast);

		if (err < 0)
			return err;
	}
	/* Its runs keep their counts across segments (flushed at the end of
	 * each call: worker_flush()). */
	if (replays)
		w->work.runs = w->fast;
	return 0;
}

/* The runs' counts kept (worker_init()) into the profile. */
static int worker_flush(struct hwt_dec *dec, struct worker *w, int err)
{
	int ferr = hwt_dec_fast_runs_flush(dec, w->work.runs);

	w->work.runs = NULL;
	return err < 0 ? err : ferr;
}

static void worker_free(struct worker *w)
{
	hwt_dec_fast_scratch_free(w->fast);
	seg_work_fini(&w->work);
}

static void worker_fini(struct hwt_dec *dec, struct worker *w)
{
	pthread_mutex_lock(&dec->workers_lock);
	/* Room for as many as were kept at once (one without threads). */
	if (!dec->workers ||
	    (dec->workers->n == dec->workers->cap && dec->workers->cap < KEPT_WORKERS)) {
		size_t cap = dec->workers ? dec->workers->cap * 2 : 1;
		struct hwt_dec_workers *k =
		    realloc(dec->workers, sizeof(*k) + cap * sizeof(k->w[0]));

		if (k) {
			k->n = dec->workers ? k->n : 0;
			k->cap = cap;
			dec->workers = k;
		}
	}
	/* Counts left uncommitted (an error stopped the segment) are not
	 * carried into another call. */
	if (dec->workers && dec->workers->n < dec->workers->cap && !w->work.ntouched) {
		dec->workers->w[dec->workers->n++] = *w;
		w = NULL;
	}
	pthread_mutex_unlock(&dec->workers_lock);
	if (w)
		worker_free(w);
}

void hwt_dec_workers_free(struct hwt_dec *dec)
{
	if (!dec->workers)
		return;
	for (size_t i = 0; i < dec->workers->n; i++)
		worker_free(&dec->workers->w[i]);
	free(dec->workers);
	dec->workers = NULL;
}

/* The PSBs around where the fast engine declined: *cut the last one
 * inside the segment at or before it (s->start when none), *next the
 * first after it (s->end when none). PSBs are found as seg_cut finds
 * them, so the pieces are those a segment at every PSB would give. */
static void decline_psbs(const struct seg *s, uint64_t *cut, uint64_t *next)
{
	uint64_t p = hwt_pkt_find_psb(s->buf, (size_t)s->end, (size_t)s->start + HWT_PKT_PSB_SIZE);

	*cut = s->start;
	for (; p < s->end && p <= s->decline_pos;
	     p = hwt_pkt_find_psb(s->buf, (size_t)s->end, (size_t)p + HWT_PKT_PSB_SIZE))
		*cut = p;
	*next = p < s->end ? p : s->end;
}

/* Whether a piece can hand over to the next at its end: decoded without
 * error to tracing on at the next PSB+'s FUP, where a block begins (else
 * the two pieces split the block libipt decoding on runs whole), with
 * nothing in its log
 * placed at that PSB+ (what libipt places there it decides reading past
 * the piece's end: an overflow resolved by the PSB+'s FUP, its status
 * updates), which the next piece, decoded from the state this one
 * leaves, then gives as libipt decoding on across the PSB does. */
static bool hands_over(const struct seg *s)
{
	if (s->ngaps || !s->exit.known || !s->exit.enabled || s->tail_split || s->status_end)
		return false;
	for (size_t i = 0; i < s->nitems; i++) {
		if (s->items[i].pos >= s->end)
			return false;
	}
	return true;
}

/* Whether the packets from from lie up to a packet boundary at to (a PSB):
 * libipt decoding the whole stream then reads them as a piece [from, to)
 * does. On damaged trace it need not: a bad packet before to, where the
 * piece ends cleanly ("02" before the PSB's "02 82" is one packet of an
 * unknown opcode to libipt reading on, a truncated one at the piece's
 * end), or one that runs across to. */
static bool lexes_to(const struct hwt_dec *dec, const struct seg *s, uint64_t from, uint64_t to)
{
	uint64_t pos = from;

	while (pos < to) {
		struct hwt_pkt p;
		int n = hwt_pkt_decode(s->buf + pos, (size_t)(s->buf_len - pos),
				       dec->ptcfg.errata.skz84, &p);

		if (n <= 0)
			return false;
		pos += (uint64_t)n;
	}
	return pos == to;
}

/* Makes s the segment [start, end) again, decoded from entry (by the fast
 * engine: pkts; else by libipt, which needs no packet list). */
static void seg_again(struct hwt_dec *dec, struct seg *s, uint64_t start, uint64_t end, bool last,
		      const struct seg_state *entry, bool pkts)
{
	uint64_t tl_start = s->tl_start;

	seg_init(s, s->buf, s->buf_len, start, end, last);
	s->tl_start = tl_start;
	s->entry = *entry;
	s->want_pkts = pkts;
	seg_header(s, dec->ptcfg.errata.bdm70);
	seg_find_end_ip(s);
	seg_timeline(s, dec);
}

/* Phase 1 for one segment: the fast engine, or libipt when it declines.
 *
 * libipt decodes no more of a long segment than the PSB intervals it must.
 * Where the fast engine declines, at a PSB interval [cut, next), the
 * segment is cut: the fast engine's part before cut when it decodes it
 * without error to a known state, then libipt's [cut, next) decoded on
 * from that state, then the rest again (the fast engine, from the state
 * libipt leaves: s->rest_end, decoded after s is replayed). libipt
 * decoding the whole segment goes through the PSBs at cut and next in
 * the same state, so the records are the same as its. Where libipt fails
 * in [cut, next), it decodes on from cut as it does in the whole segment
 * up to where it synchronizes afresh after an error (its read-ahead may
 * take it past next; s->resync_stop), and the rest starts there from a
 * fresh sync, as libipt's own decoding on does. Either engine's libipt
 * stops at every such sync: the rest is a piece of its own (time line,
 * sideband context), so the records do not depend on which engine and
 * segmentation met that sync. */
static int decode_seg(struct hwt_dec *dec, struct seg *s, struct worker *w)
{
	uint64_t end = s->end;
	bool last = s->last;
	enum seg_ipt_how how = SEG_IPT_WHOLE;
	bool ipt_err = s->ipt_until_err;
	struct seg_tail head;
	int err;

	bool fast = dec->cfg.engine == HWT_DEC_ENGINE_FAST && w->fast;

	s->log_all = dec->want & HWT_DEC_WANT(HWT_DEC_REC_BLOCK);
	s->count_status = hwt_dec_counts_status(dec);
	s->profile = dec->cfg.flags & HWT_DEC_F_PROFILE;
	s->work = &w->work;
	/* The packet list where the fast engine decodes from the start (not
	 * when libipt's interval comes first: ipt_until). */
	s->want_pkts = fast && !s->ipt_until;
	s->resync_stop = 0;
	/* The header first: the segment before may have read it
	 * (seg_find_end_ip), and reading this one's end replaces that. */
	seg_header(s, dec->ptcfg.errata.bdm70);
	head = s->tail;
	if (!seg_end_repeats_start(s))
		seg_find_end_ip(s);
	if (s->want_pkts && hwt_dec_seg_psb_only(dec, s, &head)) {
		/* A PSB+ while tracing is off and nothing else. */
		err = 0;
		goto done;
	}
	seg_timeline(s, dec);
	if (s->want_pkts || (fast && s->ipt_until && s->end - s->start <= UINT32_MAX)) {
		struct seg_state entry = s->entry;
		uint64_t cut = s->start, next = s->ipt_until;

		if (!next) {
			err = hwt_dec_seg_fast(dec, s, w->fast);
			if (err == 0 && s->end < end) {
				/* Failed where libipt does, and ended where
				 * it synchronizes afresh (eng_fast.c's
				 * libipt_fails()): the rest from there. */
				seg_find_end_ip(s);
				s->rest_end = end;
				s->rest_last = last;
				s->rest_ipt = 0;
			}
			if (err != -HWT_ENOTSUP)
				goto done;
			seg_drop_counts(s);
			/* Declined before looking at the trace: libipt's
			 * whole. */
			next = end;
			if (s->decline_pos)
				decline_psbs(s, &cut, &next);
			ipt_err = s->decline_err;
		}
		if (cut > s->start) {
			seg_again(dec, s, s->start, cut, false, &entry, true);
			err = hwt_dec_seg_fast(dec, s, w->fast);
			if (err == 0 && hands_over(s)) {
				s->rest_end = end;
				s->rest_last = last;
				s->rest_ipt = next;
				s->rest_ipt_err = ipt_err;
				goto done;
			}
			if (err != -HWT_ENOTSUP && err < 0)
				goto done;
			seg_drop_counts(s);
			seg_again(dec, s, s->start, end, last, &entry, false);
		}
		if (ipt_err) {
			/* Declined where libipt fails: it decodes on from
			 * cut to a resync without its block cache at once
			 * (a run with it would fail first, or, where it
			 * does not, give the same log). One libipt run. */
			how = SEG_IPT_COLD;
		} else if (next < end) {
			/* libipt's PSB interval(s), the fast engine's rest
			 * when libipt decodes them without error. */
			seg_again(dec, s, s->start, next, false, &entry, false);
			s->fallback = true;
			err = hwt_dec_seg_ipt(dec, s, SEG_IPT_TRY);
			if (err == 0 && hands_over(s) && lexes_to(dec, s, cut, next)) {
				s->rest_end = end;
				s->rest_last = last;
				s->rest_ipt = 0;
				goto done;
			}
			if (err < 0)
				goto done;
			/* Where libipt fails (or its block cache made a
			 * difference), it decodes on from cut to a resync,
			 * at once without its block cache: with it, from
			 * the same state, that would fail as well. */
			if (err > 0 || s->ngaps)
				how = SEG_IPT_COLD;
			seg_drop_counts(s);
			seg_again(dec, s, s->start, end, last, &entry, false);
		}
		/* Declined: libipt decodes it (the timeline stays). */
		seg_reset(s);
		s->fallback = true;
	}
	/* Where libipt synchronizes afresh after an error, the rest is a
	 * piece of its own (its time line from there on, the hook asked
	 * there), whichever engine decodes and wherever segments begin. */
	s->resync_stop = s->start + 1;
	err = hwt_dec_seg_ipt(dec, s, how);
	if (err == 0 && s->end < end) {
		/* Stopped where libipt synchronized afresh (resync_stop). */
		seg_find_end_ip(s);
		s->rest_end = end;
		s->rest_last = last;
		s->rest_ipt = 0;
	}
done:
	if (err < 0) {
		seg_drop_counts(s);
		return err;
	}
	seg_decoded_on(s);
	if (w->replays) {
		s->counts_work = s->work;
		return 0;
	}
	return seg_commit_counts(s);
}

/* Whether the segment after s is to be joined to it: libipt decoding the
 * whole stream reads on across the PSB at s's end where the segments do
 * not hand over. On damaged trace: s ends still tracing without error,
 * but where the next segment cannot go on from (s->exit_open: its PSB+
 * lost its FUP, and the next segment would start from a fresh sync, where
 * tracing is off); or s is decoded without error to a packet its end cuts
 * short (s->cut_pkt: libipt reads that packet on into the next PSB, seed
 * 375 of test_realpt's test_damaged_vs_ptxed); or the next PSB+ holds a
 * packet libipt does not take there (s->next_bad): decoding on, it fails
 * reading that PSB+ (the gap at the PSB, what it would have delivered of
 * s's end lost), then its sync there fails too, while the segments would
 * give s's end and the next one's failed sync only (decoded on from s's
 * state, libipt's read-ahead from the PSB+ that state_prefix() writes
 * stops at its own packets or at the next PSB+, as the state has them: a
 * gap of either kind). */
static bool joins_next(const struct seg *s)
{
	return (s->exit_open || (s->cut_pkt && !s->ngaps) || s->next_bad) && !s->last &&
	       !s->rest_end && !s->err && s->end < s->buf_len;
}

/* Phase 2 for a segment: from the state the segment before left (decoded
 * again when it was decoded ahead from another start that makes a
 * difference), into the flow. Where the segment after it is to be joined
 * (joins_next()), s is decoded again up to the next cut, and the one after
 * that, ... up to limit (0: none are joined); returns 1 without replaying
 * where that takes it past limit (not final: the bytes from s on wait). */
static int replay_seg(struct hwt_dec *dec, struct seg *s, struct worker *w, uint64_t limit,
		      bool final)
{
	struct seg_state entry = dec->state;
	int err;

	if (entry.known && !seg_same_start(s, &entry, &s->entry)) {
		if (seg_passes_through(s, &entry)) {
			s->exit = seg_through(s, &entry);
		} else {
			/* Its counts were committed with its log: both go;
			 * a cut is made again. */
			seg_reset(s);
			if (s->rest_end) {
				s->end = s->rest_end;
				s->last = s->rest_last;
				s->rest_end = 0;
			}
			s->resync_stop = 0;
			s->entry = entry;
			err = decode_seg(dec, s, w);
			if (err < 0)
				return err;
		}
	}
	while (limit && joins_next(s)) {
		uint64_t end = seg_cut(dec, s->buf, s->buf_len, (size_t)s->end, 0);

		if (end > limit) {
			if (!final)
				return 1;
			end = limit;
		}
		uint64_t tl_start = s->tl_start, until = s->ipt_until;
		bool until_err = s->ipt_until_err;

		seg_init(s, s->buf, s->buf_len, s->start, end, end >= s->buf_len && final);
		/* A piece (replay_rest()): still one. */
		s->tl_start = tl_start;
		s->ipt_until = until;
		s->ipt_until_err = until_err;
		s->entry = entry;
		err = decode_seg(dec, s, w);
		if (err < 0)
			return err;
	}
	if (entry.known && !s->entry.known) {
		/* Decoded ahead from a fresh sync, the same log but for
		 * where the start's items are. */
		s->entry = entry;
		seg_decoded_on(s);
	}
	/* Decoded for good: the runs' counts since the last accept are
	 * kept (a segment decoded by another worker has none there). */
	err = hwt_dec_fast_runs_accept(dec, w->work.runs);
	if (err == 0)
		err = hwt_dec_flow_replay(dec->flow, s);
	dec->state = s->exit;
	return err;
}

/* Decodes and replays the rest of segment s, cut short, in rest (which
 * may be s), and the rest of that, and so on; a segment after it joined
 * as replay_seg() says (1: the bytes from rest's start wait). */
static int replay_rest(struct hwt_dec *dec, struct seg *s, struct worker *w, struct seg *rest,
		       uint64_t limit, bool final)
{
	int err = 0;

	while (err == 0 && s->rest_end) {
		uint64_t start = s->end, end = s->rest_end, until = s->rest_ipt;
		uint64_t tl_start = s->tl_start;
		bool last = s->rest_last;

		seg_init(rest, s->buf, s->buf_len, start, end, last);
		rest->tl_start = tl_start;
		rest->ipt_until = until;
		rest->entry = dec->state;
		err = decode_seg(dec, rest, w);
		if (err == 0)
			err = replay_seg(dec, rest, w, limit, final);
		s = rest;
	}
	return err;
}

/* The segment after s, [s->end, end), in s where it is a PSB+ while
 * tracing is off and PADs like the PSB+ after it (eng_fast.c
 * hwt_dec_seg_psb_again()), and its replay, the context the flow is in,
 * changes nothing (flow.c's shortcut): its statistics and exit state,
 * without its log or time line. A CPU writes runs of such PSB+ while it
 * does not trace: with a segment at every PSB each is a segment. more: s
 * is one such segment already (nothing replayed since: the flow is in the
 * same context). */
static bool psb_again(struct hwt_dec *dec, struct seg *s, const struct worker *w, uint64_t end,
		      bool more)
{
	if (dec->cfg.engine != HWT_DEC_ENGINE_FAST || !w->fast ||
	    (!more && !hwt_dec_flow_in_ctx(dec->flow, &dec->ctx)) ||
	    !hwt_dec_seg_psb_again(dec, s, end, more))
		return false;
	hwt_dec_flow_count(dec->flow, s);
	dec->state = s->exit;
	return true;
}

/* The run of such segments after s (with more, s is one and they are as
 * long; else s the segment before, decoded and replayed), with a segment
 * at every PSB (a CPU writes PSB+ after PSB+ while it does not trace: the
 * same bytes but for their time), counted at once: how many. */
static uint64_t psb_again_run(struct hwt_dec *dec, struct seg *s, const struct worker *w,
			      uint64_t limit, bool more)
{
	uint64_t n;

	if (dec->cfg.engine != HWT_DEC_ENGINE_FAST || !w->fast ||
	    (!more && !hwt_dec_flow_in_ctx(dec->flow, &dec->ctx)))
		return 0;
	n = hwt_dec_seg_psb_again_run(dec, s, limit, more);
	if (n) {
		hwt_dec_flow_count_psb_again(dec->flow, s, n);
		dec->state = s->exit;
	}
	return n;
}

/* Whether PADs may follow the PSB+ at s->end, read plain, up to end (the
 * PSB of the repeat there, or more PADs: seg_psb_again()'s first check of
 * what a repeat is, the one that fails after trace). */
static inline bool psb_pads_to(const struct seg *s, uint64_t end)
{
	return s->tail.at == s->end && s->next_psbend_end <= end &&
	       s->next_psbend_end < s->buf_len &&
	       (s->next_psbend_end == end || !s->buf[s->next_psbend_end]);
}

/* Whether PADs or a PSB may follow the PSB+ at s->end, read plain (a
 * repeat after it: where trace follows, the next byte is neither). */
static inline bool psb_next_may_repeat(const struct seg *s)
{
	return s->tail.at == s->end && s->next_psbend_end < s->buf_len &&
	       (!s->buf[s->next_psbend_end] || s->buf[s->next_psbend_end] == 0x02);
}

/* Decodes and replays the segments from the PSB at start up to limit (a
 * PSB, or the end) in the calling thread, in s; when not final, those
 * that end at or before limit (*stop: where the next begins). */
static int run_range(struct hwt_dec *dec, const uint8_t *buf, size_t len, uint64_t start,
		     uint64_t limit, bool final, struct worker *w, struct seg *s, size_t *stop)
{
	/* s is a PSB+ repeat (psb_again()) of this many bytes: the next
	 * segment is likely one too, as long. With a segment at every PSB its
	 * end needs no scan (seg_cut() takes the first PSB at least that far
	 * on: the one there, below). */
	uint64_t again = 0;
	int err = 0;

	while (start < limit && err == 0) {
		uint64_t end = start + again;

		/* The PSB there is seg_cut()'s: psb_again() takes it only
		 * with PADs from the PSB+ at start (which holds none: below)
		 * to it; the run of them as long at once. After another
		 * segment, the PSB after the PSB+ at start and its PADs. */
		if (dec->cfg.segment_bytes < 1024 && s->buf == buf && s->end == start &&
		    psb_next_may_repeat(s) && psb_again_run(dec, s, w, limit, again != 0)) {
			again = s->end - s->start;
			start = s->end;
			continue;
		}
		/* The PSB+ at start, where the segment before read it
		 * packet by packet to its PSBEND (seg.c end_lex(): s->tail),
		 * holds no PSB: each packet there begins with a byte no PSB
		 * has where that packet would begin. */
		end = seg_cut(dec, buf, len, (size_t)start,
			      s->buf == buf && s->tail.at == start ? s->next_psbend_end : 0);
		if (end > limit) {
			if (!final)
				break; /* its end is not in reach */
			end = limit;
		}
		if (s->buf == buf && s->end == start && end < len && psb_pads_to(s, end) &&
		    psb_again(dec, s, w, end, again != 0)) {
			again = dec->cfg.segment_bytes < 1024 ? end - start : 0;
			start = end;
			continue;
		}
		again = 0;
		seg_init(s, buf, len, start, end, end >= len && final);
		s->entry = dec->state;
		err = decode_seg(dec, s, w);
		if (err == 0)
			err = replay_seg(dec, s, w, limit, final);
		if (err > 0) {
			err = 0;
			break; /* joined past limit: it waits */
		}
		if (err == 0 && s->rest_end)
			err = replay_rest(dec, s, w, s, limit, final);
		if (err > 0) {
			err = 0;
			start = s->start;
			break; /* a rest joined past limit: it waits */
		}
		start = s->end;
	}
	*stop = (size_t)start;
	return err;
}

static int config_gap(struct hwt_dec *dec)
{
	struct hwt_dec_rec rec;

	if (dec->errata_err >= 0 || dec->errata_reported)
		return 0;
	dec->errata_reported = true;
	memset(&rec, 0, sizeof(rec));
	rec.type = HWT_DEC_REC_GAP;
	rec.pid = rec.tid = -1;
	rec.u.gap.kind = HWT_DEC_GAP_CONFIG;
	rec.u.gap.err = hwt_dec_err_from_pt(dec->errata_err);
	rec.u.gap.what = pt_errstr(pt_errcode(dec->errata_err));
	return hwt_dec_emit(dec, &rec);
}

/* Reports the bytes without a PSB noted so far. */
static int sync_gap_flush(struct hwt_dec *dec)
{
	struct hwt_dec_rec rec;
	uint64_t off = dec->nosync_pos, size = dec->nosync_size;

	if (!size)
		return 0;
	dec->nosync_size = 0;
	memset(&rec, 0, sizeof(rec));
	rec.type = HWT_DEC_REC_GAP;
	rec.pid = rec.tid = -1;
	rec.offset = off;
	rec.u.gap.kind = HWT_DEC_GAP_SYNC;
	rec.u.gap.err = -HWT_EDECODE;
	rec.u.gap.what = "no synchronization point (PSB) in these bytes";
	rec.u.gap.size = size;
	rec.u.gap.sync = true;
	dec->stats.gap_bytes += size;
	return hwt_dec_emit(dec, &rec);
}

/* Notes size bytes without a PSB at stream offset off (one gap however
 * the stream is cut). */
static int sync_gap(struct hwt_dec *dec, uint64_t off, uint64_t size)
{
	if (dec->nosync_size && dec->nosync_pos + dec->nosync_size != off) {
		int err = sync_gap_flush(dec);

		if (err < 0)
			return err;
	}
	if (!dec->nosync_size)
		dec->nosync_pos = off;
	dec->nosync_size += size;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Parallel                                                                  */

struct par {
	struct hwt_dec *dec;
	const uint8_t *buf;
	size_t len;
	size_t limit; /* decode segments starting before this */
	bool final;
	pthread_mutex_t lock;
	pthread_cond_t cv_work, cv_done;
	size_t window;
	struct seg *slots;
	uint8_t *state;	   /* per slot: 0 free, 1 claimed, 2 done */
	uint64_t next_psb; /* start of the next unclaimed segment */
	size_t claimed;	   /* segments claimed (index of the next) */
	size_t replayed;   /* segments replayed */
	bool stop;
	int err;
};

/* Claims the next segment; locked. Returns its index or -1. */
static long par_claim(struct par *p)
{
	uint64_t start, end;
	struct seg *s;
	size_t i;

	if (p->stop || p->next_psb >= p->limit || p->claimed >= p->replayed + p->window)
		return -1;
	i = p->claimed % p->window;
	if (p->state[i] != 0)
		return -1;
	start = p->next_psb;
	end = seg_cut(p->dec, p->buf, p->len, (size_t)start, 0);
	p->next_psb = end;
	s = &p->slots[i];
	seg_init(s, p->buf, p->len, start, end, end >= p->len && p->final);
	/* Decoded ahead: from a fresh sync; replay_seg() checks. */
	memset(&s->entry, 0, sizeof(s->entry));
	p->state[i] = 1;
	return (long)p->claimed++;
}

static void *par_worker(void *arg)
{
	struct par *p = arg;
	struct worker w;

	if (worker_init(p->dec, &w, false) < 0) {
		pthread_mutex_lock(&p->lock);
		p->err = -ENOMEM;
		pthread_mutex_unlock(&p->lock);
		worker_fini(p->dec, &w);
		return NULL;
	}
	pthread_mutex_lock(&p->lock);
	for (;;) {
		long idx = par_claim(p);
		struct seg *s;
		int err;

		if (idx < 0) {
			if (p->stop || p->next_psb >= p->limit)
				break;
			pthread_cond_wait(&p->cv_work, &p->lock);
			continue;
		}
		s = &p->slots[(size_t)idx % p->window];
		pthread_mutex_unlock(&p->lock);
		err = decode_seg(p->dec, s, &w);
		pthread_mutex_lock(&p->lock);
		if (err < 0)
			s->err = err;
		p->state[(size_t)idx % p->window] = 2;
		pthread_cond_broadcast(&p->cv_done);
	}
	pthread_mutex_unlock(&p->lock);
	worker_fini(p->dec, &w);
	return NULL;
}

static int run_parallel(struct hwt_dec *dec, const uint8_t *buf, size_t len, uint64_t first,
			size_t limit, bool final, size_t *stop)
{
	uint64_t reached = first; /* where the segments replayed end */
	struct par p;
	struct worker w; /* the replaying thread's, for segments decoded again */
	struct seg rest; /* ... and for the rest of a segment cut shorter */
	pthread_t *tids;
	unsigned int nthreads = dec->cfg.threads, started = 0;
	int err = 0;

	err = worker_init(dec, &w, true);
	if (err < 0) {
		worker_fini(dec, &w);
		return err;
	}

	memset(&p, 0, sizeof(p));
	p.dec = dec;
	p.buf = buf;
	p.len = len;
	p.limit = limit;
	p.final = final;
	p.window = dec->cfg.window < 2 ? 2 : dec->cfg.window;
	p.next_psb = first;
	p.slots = calloc(p.window, sizeof(*p.slots));
	p.state = calloc(p.window, 1);
	tids = calloc(nthreads, sizeof(*tids));
	memset(&rest, 0, sizeof(rest));
	if (!p.slots || !p.state || !tids) {
		free(p.slots);
		free(p.state);
		free(tids);
		worker_fini(dec, &w);
		return -ENOMEM;
	}
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cv_work, NULL);
	pthread_cond_init(&p.cv_done, NULL);
	for (unsigned int i = 0; i < nthreads; i++) {
		if (pthread_create(&tids[i], NULL, par_worker, &p) != 0)
			break;
		started++;
	}
	if (!started) {
		err = -EAGAIN;
		goto out;
	}
	/* Replay in order. */
	pthread_mutex_lock(&p.lock);
	for (;;) {
		size_t i = p.replayed % p.window;
		struct seg *s = &p.slots[i];

		if (p.replayed == p.claimed && p.next_psb >= p.limit)
			break;
		while (p.state[i] != 2)
			pthread_cond_wait(&p.cv_done, &p.lock);
		pthread_mutex_unlock(&p.lock);
		err = s->err;
		/* Joined to a segment before (replay_seg()): decoded there. */
		if (err == 0 && s->start >= reached)
			err = replay_seg(dec, s, &w, p.limit, final);
		if (err > 0) {
			/* Joined past limit: the bytes from s on wait. */
			*stop = (size_t)s->start;
			err = 0;
			p.stop = true;
		} else if (err == 0 && s->start >= reached) {
			reached = s->rest_end ? s->rest_end : s->end;
			if (s->rest_end)
				err = replay_rest(dec, s, &w, &rest, p.limit, final);
			if (err > 0) {
				/* A rest joined past limit: from it on, wait. */
				*stop = (size_t)rest.start;
				err = 0;
				p.stop = true;
			} else if (err == 0 && s->rest_end && rest.end > reached) {
				reached = rest.end; /* joined segments after it */
			}
		}
		seg_reset(s);
		pthread_mutex_lock(&p.lock);
		p.state[i] = 0;
		p.replayed++;
		if (err < 0 || p.stop) {
			p.stop = true;
			pthread_cond_broadcast(&p.cv_work);
			break;
		}
		pthread_cond_broadcast(&p.cv_work);
	}
	p.stop = true;
	pthread_cond_broadcast(&p.cv_work);
	pthread_mutex_unlock(&p.lock);
out:
	for (unsigned int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (size_t i = 0; i < p.window; i++)
		seg_fini(&p.slots[i]);
	pthread_cond_destroy(&p.cv_work);
	pthread_cond_destroy(&p.cv_done);
	pthread_mutex_destroy(&p.lock);
	seg_fini(&rest);
	free(p.slots);
	free(p.state);
	free(tids);
	err = worker_flush(dec, &w, err);
	worker_fini(dec, &w);
	return err;
}

/* Whether the 02 82 run of the PSB found at p reaches the end of buf (the
 * PSB is the run's last 16 bytes: more bytes could move it). */
static bool psb_run_open(const uint8_t *buf, size_t len, size_t p)
{
	size_t rest = len - (p + HWT_PKT_PSB_SIZE);

	return rest == 0 || (rest == 1 && buf[len - 1] == 0x02);
}

/* Where the segments that can be decoded now end: at the last PSB whose
 * PSB+ is complete (a segment's end needs the next PSB+), or len when
 * final. */
static size_t decodable_end(const uint8_t *buf, size_t len, size_t first, bool final)
{
	size_t last = first, prev = first;

	if (final)
		return len;
	for (size_t p = first; p < len; p = hwt_pkt_find_psb(buf, len, p + HWT_PKT_PSB_SIZE)) {
		prev = last;
		last = p;
	}
	/* Does buf hold what the segment before the last PSB needs of its
	 * PSB+ (seg_find_end_ip reads up to the PSBEND, another PSB or a bad
	 * packet)? */
	for (size_t off = last; off < len;) {
		struct hwt_pkt pkt;
		int n = hwt_pkt_decode(buf + off, len - off, 0, &pkt);

		if (n < 0 || (n > 0 && (pkt.type == HWT_PKT_PSBEND ||
					(pkt.type == HWT_PKT_PSB && off != last))))
			return last;
		if (n == 0)
			break;
		off += (size_t)n;
	}
	return prev;
}

int hwt_dec_run_segments(struct hwt_dec *dec, const uint8_t *buf, size_t len, bool final,
			 size_t *keep)
{
	struct seg s;
	struct worker w;
	size_t first, limit, stop;
	int err;

	if (keep)
		*keep = len;
	err = config_gap(dec);
	if (err < 0)
		return err;
	if (!len)
		return final ? sync_gap_flush(dec) : 0;
	first = hwt_pkt_find_psb(buf, len, 0);
	if (first < len && !final && psb_run_open(buf, len, first)) {
		/* The PSB's 02 82 run may go on in the next bytes, which
		 * would move the PSB: the bytes before it are a gap either
		 * way (one gap: not flushed), the rest waits. */
		if (keep)
			*keep = first;
		return first ? sync_gap(dec, dec->base_pos, first) : 0;
	}
	if (first >= len && !final) {
		/* No PSB: a gap, but a PSB may begin in the last bytes. */
		first = len > HWT_PKT_PSB_SIZE - 1 ? len - (HWT_PKT_PSB_SIZE - 1) : 0;
		if (keep)
			*keep = first;
		return first ? sync_gap(dec, dec->base_pos, first) : 0;
	}
	if (first > 0) {
		err = sync_gap(dec, dec->base_pos, first);
		if (err < 0)
			return err;
	}
	/* A PSB (or the end): the bytes before it are one gap. */
	err = sync_gap_flush(dec);
	if (err < 0 || first >= len)
		return err;
	limit = decodable_end(buf, len, first, final);
	if (dec->cfg.threads > 1) {
		if (!final) {
			/* The last segment end in reach (the workers cut
			 * up to it). */
			size_t cut = first, next;

			while ((next = seg_cut(dec, buf, len, cut, 0)) <= limit)
				cut = next;
			limit = cut;
		}
		if (keep)
			*keep = limit;
		if (limit <= first)
			return 0;
		return run_parallel(dec, buf, len, first, limit, final, keep ? keep : &stop);
	}

	err = worker_init(dec, &w, true);
	if (err < 0) {
		worker_fini(dec, &w);
		return err;
	}
	memset(&s, 0, sizeof(s));
	/* Not final: up to the last segment end in reach, cut as they are
	 * decoded (each byte scanned for PSBs once). */
	err = run_range(dec, buf, len, first, limit, final, &w, &s, &stop);
	if (keep && !final)
		*keep = stop;
	seg_fini(&s);
	err = worker_flush(dec, &w, err);
	worker_fini(dec, &w);
	return err;
}
