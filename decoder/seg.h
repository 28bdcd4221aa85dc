/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/seg.h - a PSB segment and its decode log (internal).
 *
 * The canonical engines decode a stream one PSB segment at a time: the bytes
 * from one PSB to the next. Hardware resets its return-compression state at
 * PSB, so segments decode independently and in any order (in parallel);
 * phase 1 (an engine) writes what happened into the segment's log, phase 2
 * (flow.c) replays the logs in stream order into call stacks and records.
 *
 * Canonical form, which the fast engine and libipt's (eng_ipt.c) both
 * produce and tests compare item by item:
 *   - BB items are basic blocks of the block cache, executed in full, or
 *     partially (PARTIAL: stopped early by an event, a gap or the end of the
 *     segment); next_ip is where control went after a full block (0 when
 *     tracing stopped or is unknown); TAKEN tells a conditional's outcome.
 *   - A segment's last run ends at the next PSB's FUP address (the
 *     instructions from there belong to the next segment); the stream's last
 *     run ends at the last instruction libipt can reach without trace.
 *   - pos is libipt's decoder offset (pt_blk_get_offset) after the libipt
 *     block or event that contained the item; time comes from pos through
 *     the segment's timeline.
 */
#ifndef HWT_DECODER_SEG_H
#define HWT_DECODER_SEG_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "decoder/dec_int.h"

enum seg_kind {
	SEG_BB = 1,
	SEG_EVENT,
	SEG_GAP,
	SEG_CTX,   /* the thread/image of what follows */
	SEG_INSNS, /* instructions of blocks not logged (delta) */
};

#define SEG_F_TAKEN	    (1u << 0)
#define SEG_F_PARTIAL	    (1u << 1)
#define SEG_F_SPECULATIVE   (1u << 2)
#define SEG_F_TRUNCATED	    (1u << 3)
#define SEG_F_STATUS	    (1u << 4) /* event: status update */
#define SEG_F_IP_SUPPRESSED (1u << 5)

/* What a SEG_BB item does to a call stack, where the engine that logged
 * it says so (the fast engine's hot loop, which knows it at no cost): the
 * call tree's replay (flow.c tree_run) then reads no block for it. */
enum seg_stack {
	SEG_STACK_UNSAID = 0, /* look at the block and the flags */
	SEG_STACK_NONE,	      /* nothing: no near call or return, a call to
			       * the next instruction, or not run to its
			       * branch */
	SEG_STACK_CALL,	      /* a near call to next_ip */
	SEG_STACK_RET,	      /* a near return to next_ip */
};

/* A block is logged when phase 2 needs it: always when the sinks want
 * block records; else only when it changes a call stack or (with the
 * profile) ends at an indirect branch. The others are counted in the
 * worker's table (seg_work) and their instructions carried in the next
 * item's delta. */
struct seg_item {
	struct hwt_dec_bb *bb; /* SEG_BB */
	uint64_t next_ip;      /* SEG_BB: where control went, or 0 */
	uint64_t pos;	       /* stream offset (for time and records) */
	uint32_t ninsn;	       /* SEG_BB: instructions run; else: index into
				* the segment's events/gaps/ctxs */
	uint32_t delta;	       /* SEG_BB, SEG_INSNS: instructions since the
				* previous item, this one's included */
	uint8_t kind;	       /* enum seg_kind */
	uint8_t flags;	       /* SEG_F_* */
	uint8_t stack;	       /* SEG_BB: enum seg_stack */
	uint8_t reserved;
};

/* Per-worker block counts for the profile: dense by block id, with the
 * ids touched since the last commit. */
struct seg_cnt {
	uint64_t count, taken, pinsns;
	uint32_t partial;
	uint32_t touched;
};

struct seg_work {
	struct seg_cnt *c;
	size_t size;
	size_t first; /* c's first size (0: 1,024; hwt_dec_ids_first()) */
	uint32_t *touched;
	size_t ntouched, cap_touched;
	/* The fast engine's scratch whose runs keep their counts across
	 * segments (run.c: a worker whose decodes the replay follows), or
	 * NULL: dropping the counts drops the runs' of the segment too
	 * (hwt_dec_fast_runs_undo()). */
	void *runs;
};

struct seg_count {
	uint32_t id;
	uint64_t count, taken, partial, pinsns;
};

int seg_work_grow(struct seg_work *w, uint32_t id);
void seg_work_fini(struct seg_work *w);

struct seg_gap {
	uint32_t kind; /* enum hwt_dec_gap_kind */
	int err;
	const char *what;
	uint64_t ip;
	uint64_t size;
};

struct seg_ctx {
	int32_t pid, tid;
	struct hwt_dec_image *image; /* a reference */
	uint64_t note;		     /* hwt_dec_context.note */
	uint64_t run;		     /* hwt_dec_context.run */
};

/* A packet of the segment, decoded once (by seg_timeline) for the fast
 * engine.
 *
 * PADs in a row are one entry, size their number (up to 255: a longer run
 * is more entries). Real traces pad every PSB+ to the next PSB (dyn_test:
 * 5,569 of its 12,288 bytes in 1,015 runs): an entry a byte was most of a
 * list's entries, listed, copied for each piece and stepped over one by
 * one.
 *
 * A PSB+ that repeats the one right before it (nothing between them, the
 * same bytes but for the TSC's and TMA's values; tracing off: no FUP, no
 * MTC or CYC, one to five status updates of distinct types) is listed as
 * two entries: its PSB with ipc SEG_PSB_SAME, payload the distance back to
 * the PSB entry of the run's first PSB+ (listed in full: its packets are
 * the repeat's), aux its number of status updates; then its PSBEND (and
 * the PADs after it as one entry). Where no repeat needs to be decoded on
 * its own (s->count_status, no context hook, two or more status updates:
 * the fast engine counts them, eng_fast.c psb_run()), a run of k >= 3
 * repeats is listed as its first repeat, one entry with ipc SEG_PSB_RUN
 * for the k - 2 after it (its PSB's offset; payload: the distance back as
 * above in the low 32 bits, k - 2 in the high ones; aux as above; no
 * PSBEND or PAD entry), and its last repeat. A list never starts with
 * either. */
struct seg_pkt {
	uint64_t payload; /* as struct hwt_pkt */
	uint32_t off;	  /* from the segment's start */
	uint8_t type;	  /* enum hwt_pkt_type; 0 (BAD) ends the list
			   * at a bad packet, SEG_PKT_END at the end */
	uint8_t size;
	uint8_t ipc;
	uint8_t aux; /* TNT: bits; MODE: bits */
};

#define SEG_PSB_SAME 1
#define SEG_PSB_RUN  2

#define SEG_PKT_END 0xff

/* What a segment's PSB+ says (seg_header). */
struct seg_header {
	bool fup;	 /* an IP: tracing is on for a fresh sync */
	bool mode_ok;	 /* MODE.Exec present */
	bool tsx_ok;	 /* MODE.TSX present */
	uint8_t nstatus; /* status updates (MODE.Exec/TSX, PIP, VMCS, CBR) */
	bool spec;
	bool open; /* no PSBEND before the segment's end */
	uint8_t mode;
	uint64_t ip;
	uint64_t psbend;     /* stream offset of its PSBEND (0: none) */
	uint64_t psbend_end; /* ... and after it */
};

struct tl_point {
	uint64_t off; /* after this stream offset ... */
	uint64_t tsc; /* ... the time is this */
};

/* What a time line walk covered: the packets from start (the time line's
 * start) to end, then on to stop_end (the next PSB+'s end), collecting
 * the packets when want. */
struct tl_key {
	const uint8_t *buf;
	size_t buf_len;
	uint64_t start, end, stop_end;
	bool want;
};

/* PSBs at first, first + len, ... (n of them): the repeats of a run of
 * PSB+ (seg_pkt). */
struct psb_span {
	uint64_t first;
	uint32_t len, n;
};

/* A walk's results besides the time line and the packets: the PSBs it
 * met (those of runs of repeated PSB+ as spans) and the TMAs libipt
 * rejects (stream offsets, ascending), and where it stopped at a packet
 * that does not decode (UINT64_MAX: none). */
struct tl_marks {
	uint64_t *psbs;
	size_t npsbs, cap_psbs;
	struct psb_span *spans;
	size_t nspans, cap_spans;
	uint64_t *tmas;
	size_t ntmas, cap_tmas;
	uint64_t stop;
};

/* The time line of a whole segment, kept for its pieces and the decodes
 * of them again (seg_timeline): a piece's time line and packets are a
 * part of its segment's where the segment's walk passes through the
 * piece's PSBs. */
struct seg_walk {
	bool valid;
	struct tl_key key;
	struct tl_marks marks;
	struct tl_point *tl;
	size_t ntl, cap_tl;
	struct seg_pkt *pkts; /* off from key.start */
	size_t npkts, cap_pkts;
};

struct seg {
	uint64_t start, end;  /* stream offsets: [start, end) */
	uint64_t tl_start;    /* the time line starts here: start, or
			       * where the segment this is a piece of
			       * began (run.c) */
	const uint8_t *buf;   /* the stream; buf + start is the PSB */
	size_t buf_len;	      /* bytes of the whole stream piece */
	bool last;	      /* the stream's last segment */
	bool time_error;      /* a timing packet libipt rejects (a TMA
			       * not right after a TSC): decoding fails
			       * there, which only libipt reproduces */
	bool cut_pkt;	      /* the walk ended at a packet the segment's
			       * end cuts short (damage: it runs into the
			       * next PSB, which libipt decoding the whole
			       * stream reads as a part of it) */
	bool fallback;	      /* decoded by libipt after the fast engine
			       * declined */
	uint64_t decline_pos; /* where the fast engine declined (0: before
			       * looking at the trace, or it did not) */
	bool decline_err;     /* ... at what is an error for libipt too
			       * (a packet out of context, code it
			       * cannot read): libipt fails there */
	uint64_t ipt_until;   /* the fast engine declined before this
			       * PSB: [start, ipt_until) is libipt's
			       * (set after seg_init; run.c) */
	bool ipt_until_err;   /* ... where libipt fails (decline_err) */
	uint64_t resync_stop; /* libipt stops at the first PSB at or after
			       * this where it synchronizes again after an
			       * error: end becomes that PSB (eng_ipt.c) */
	uint64_t rest_end;    /* cut short at end: [end, rest_end) is
			       * decoded next, from the state this
			       * segment leaves (run.c) */
	bool rest_last;	      /* ... which is the stream's last */
	uint64_t rest_ipt;    /* ... with its ipt_until */
	bool rest_ipt_err;    /* ... and ipt_until_err */
	int err;	      /* a hard error (ENOMEM, sink) */
	bool sorted;	      /* the items' positions never decrease (the
			       * fast engine's log: its position only moves
			       * on); seg_decoded_on() then touches only
			       * the log's ends */

	struct seg_item *items;
	size_t nitems, cap_items;
	struct hwt_dec_event *events;
	size_t nevents, cap_events;
	struct seg_gap *gaps;
	size_t ngaps, cap_gaps;
	struct seg_ctx *ctxs;
	size_t nctxs, cap_ctxs;

	/* Timeline: TSC estimates by stream offset; no point before the
	 * first TSC. */
	struct tl_point *tl;
	size_t ntl, cap_tl;

	/* The packets, when want_pkts (for the fast engine); the last entry
	 * is SEG_PKT_END or BAD. */
	bool want_pkts;
	bool no_runs; /* no SEG_PSB_RUN entries (eng_fast.c) */
	struct seg_pkt *pkts;
	size_t npkts, cap_pkts;
	/* What the walk that made tl and pkts met; when cur_whole, they are
	 * a whole walk from the time line's start (cur) and can be kept. */
	struct tl_marks marks;
	bool cur_whole;
	struct tl_key cur;
	struct seg_walk walk; /* kept across seg_init (not seg_fini) */

	uint64_t insns; /* instructions in BB items */
	uint64_t nbbs;	/* blocks run (logged or not) */
	uint64_t overflows;

	/* Logging mode (set before phase 1). */
	bool log_all;		  /* every block (block records wanted) */
	bool count_status;	  /* no sink wants event records and no
				   * context hook: the fast engine counts
				   * PSB+ status updates inside the segment
				   * in nstatus instead of logging them (the
				   * replay counts a status event no sink
				   * wants, nothing else) */
	uint64_t nstatus;	  /* ... counted so far */
	bool status_end;	  /* ... one of them at or after the
				   * segment's end (the next PSB+'s: in the
				   * log, it would be an item placed there) */
	bool profile;		  /* count blocks */
	struct seg_work *work;	  /* the worker's counts */
	uint32_t delta;		  /* instructions not yet carried by an item */
	size_t last_logged;	  /* index of seg_bb()'s item, or SEG_NOT_LOGGED */
	struct seg_count *counts; /* committed counts of this segment */
	size_t ncounts, cap_counts;
	/* Its counts left in the worker's table instead (the replay follows
	 * on the same thread: flow.c applies them from there; run.c). */
	struct seg_work *counts_work;

	/* seg_psb_again_run()'s mask of the bits of a PSB+ it compares (all
	 * but its TSC's value and its TMA's CTC and FC), by words, for the
	 * layout key gives (its length, where its TSC and TMA begin; 0:
	 * none yet). */
	uint64_t psb_run_key;
	uint64_t psb_run_mask[16];

	/* Where the next segment starts executing (its PSB+ FUP), when
	 * tracing is enabled there; whether the last run reached it. */
	bool has_end_ip;
	bool tail_reached;
	bool tail_split; /* ... inside a block (which the next segment
			  * runs the rest of) */
	uint64_t end_ip;
	uint64_t next_psbend, next_psbend_end; /* the next PSB+'s PSBEND
						* and after it (0: none) */
	/* The next PSB+'s time as seg_find_end_ip() lexed it (end_lex), for
	 * the walk's tail (seg.c walk_tail()): valid where tail_at is the
	 * segment's end and that PSB+ has no MTC, no TMA before its TSC and
	 * at most one TSC and one TMA (its time is then its TSC's, and the
	 * time before it stays until then). */
	struct seg_tail {
		uint64_t at;	  /* the segment's end when lexed (0: none) */
		uint64_t tsc;	  /* its TSC's value */
		uint64_t tsc_end; /* where its TSC ends (0: none) */
		uint64_t cbr_end; /* where the first CBR before it ends (0) */
		bool once;	  /* its status updates of distinct types, no
				   * CBR of 0 */
		bool fup;	  /* a FUP in it */
		uint64_t tma_end; /* where its TMA ends (0: none) */
	} tail;

	/* The state the segment was decoded from (entry; not known: a fresh
	 * sync) and the state it ends in (exit; not known after an error,
	 * which makes libipt synchronize afresh at the next PSB). */
	struct seg_state entry, exit;
	/* Decoded without error to its end still tracing, where the next
	 * segment cannot go on from its state: the next PSB+ has no FUP, or
	 * the last run did not get to it (damage; run.c joins the next
	 * segment to it, as libipt decoding the whole stream reads on). */
	bool exit_open;
	/* The next PSB+ holds a packet libipt's query decoder may not take
	 * in a PSB+ (a CBR of 0, a bad packet, one that is no status update:
	 * seg_find_end_ip): libipt decoding the whole stream fails there
	 * reading it, whatever state it comes in (run.c joins the next
	 * segment to this one). */
	bool next_bad;
	struct seg_header hdr;
	/* The next PSB+ as seg_header reads it, for the segment that starts
	 * there (seg_find_end_ip reads it to its PSBEND; next_hdr_buf NULL:
	 * it did not get there). Kept across seg_init, for the same stream
	 * bytes only (seg_fini). */
	struct seg_header next_hdr;
	const uint8_t *next_hdr_buf;
	uint64_t next_hdr_at;
};

void seg_init(struct seg *s, const uint8_t *buf, size_t buf_len, uint64_t start, uint64_t end,
	      bool last);
/* Drops the log (keeps the buffers for reuse). */
void seg_reset(struct seg *s);
void seg_fini(struct seg *s);

/* Appends; return the new item (NULL: ENOMEM, also stored in s->err). */
struct seg_item *seg_add(struct seg *s, uint8_t kind);
/* Room for n more items; 0 or -ENOMEM (also in s->err). */
int seg_reserve(struct seg *s, size_t n);

/* Carries pending instructions in a SEG_INSNS item (before events, gaps,
 * context changes and at the end). */
int seg_flush_delta(struct seg *s, uint64_t pos);
/* A status update counted instead of logged (count_status): as
 * seg_add_event(), the pending instructions first. */
static inline int seg_count_status(struct seg *s, uint64_t pos)
{
	if (s->delta && seg_flush_delta(s, pos) < 0)
		return s->err;
	s->nstatus++;
	s->status_end |= pos >= s->end;
	return 0;
}
/* Moves the worker's counts into the segment (phase 1 succeeded), or drops
 * them (the engine declined). */
int seg_commit_counts(struct seg *s);
void seg_drop_counts(struct seg *s);

/* Appends a SEG_BB item with delta instructions since the previous item
 * (s->delta is then 0). Returns the item, or NULL with s->err set. */
static inline __attribute__((always_inline)) struct seg_item *
seg_append_bb(struct seg *s, struct hwt_dec_bb *bb, uint32_t ninsn, uint8_t flags, uint64_t next_ip,
	      uint64_t pos, uint32_t delta)
{
	struct seg_item *it;

	if (__builtin_expect(s->nitems == s->cap_items, 0)) {
		it = seg_add(s, SEG_BB);
		if (!it)
			return NULL;
	} else {
		it = &s->items[s->nitems++];
		it->kind = SEG_BB;
		it->stack = SEG_STACK_UNSAID;
		it->reserved = 0;
	}
	it->bb = bb;
	it->ninsn = ninsn;
	it->flags = flags;
	it->next_ip = next_ip;
	it->pos = pos;
	it->delta = delta;
	s->delta = 0;
	return it;
}

/* seg_bb()'s count of the block in the worker's profile table (with
 * s->profile). Returns 0 or -ENOMEM (also in s->err). */
static inline __attribute__((always_inline)) int
seg_bb_count(struct seg *s, const struct hwt_dec_bb *bb, uint32_t ninsn, uint8_t flags)
{
	struct seg_work *w = s->work;
	uint32_t id = bb->id;
	struct seg_cnt *c;

	if (__builtin_expect(id >= w->size, 0) && seg_work_grow(w, id) < 0)
		return s->err = -ENOMEM;
	c = &w->c[id];
	if (!(flags & SEG_F_PARTIAL)) {
		c->count++;
		c->taken += flags & SEG_F_TAKEN;
	} else {
		c->partial++;
		c->pinsns += ninsn;
	}
	if (__builtin_expect(!c->touched, 0)) {
		if (w->ntouched == w->cap_touched && seg_work_grow(w, UINT32_MAX) < 0)
			return s->err = -ENOMEM;
		c->touched = 1;
		w->touched[w->ntouched++] = id;
	}
	return 0;
}

/* A block ran: ninsn instructions (flags SEG_F_PARTIAL when it stopped
 * early). Counts it and logs it when needed; the item's position is set
 * later (the engines' snapshot rule). Returns 0 or -ENOMEM. */
#define SEG_UNPOSED    UINT64_MAX
#define SEG_NOT_LOGGED SIZE_MAX

static inline __attribute__((always_inline)) int seg_bb(struct seg *s, struct hwt_dec_bb *bb,
							uint32_t ninsn, uint8_t flags,
							uint64_t next_ip, uint64_t pos)
{
	bool full = !(flags & SEG_F_PARTIAL);
	struct seg_item *it;

	s->insns += ninsn;
	s->nbbs++;
	s->delta += ninsn;
	if (s->profile && seg_bb_count(s, bb, ninsn, flags) < 0)
		return s->err;
	s->last_logged = SEG_NOT_LOGGED;
	if (!s->log_all && !(full && ((bb->flags & HWT_DEC_BBF_LOG_STACK) ||
				      (s->profile && (bb->flags & HWT_DEC_BBF_LOG_TARGET)))))
		return 0;
	it = seg_append_bb(s, bb, ninsn, flags, next_ip, pos, s->delta);
	if (!it)
		return s->err;
	s->last_logged = s->nitems - 1;
	return 0;
}
int seg_add_event(struct seg *s, const struct hwt_dec_event *ev, uint8_t flags, uint64_t pos);
/* seg_add_event() of an enable or a disable (type, ip, at, mode and, for
 * an enable, resumed; every other field 0), the record written in place:
 * the fast engine's path for the crossings of an address filter. */
static inline __attribute__((always_inline)) int seg_add_onoff(struct seg *s, uint32_t type,
							       uint64_t ip, uint64_t at,
							       uint32_t mode, uint8_t resumed,
							       uint8_t flags, uint64_t pos)
{
	struct hwt_dec_event grown, *e;
	bool full;

	if (s->delta && seg_flush_delta(s, pos) < 0)
		return s->err;
	/* Where an array must grow, seg_add_event() copies it from a local. */
	full = __builtin_expect(s->nevents == s->cap_events || s->nitems == s->cap_items, 0);
	e = full ? &grown : &s->events[s->nevents];
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->ip = ip;
	e->at = at;
	e->mode = mode;
	e->resumed = resumed;
	if (full)
		return seg_add_event(s, e, flags, pos);
	s->items[s->nitems++] = (struct seg_item){
	    .pos = pos, .ninsn = (uint32_t)s->nevents++, .kind = SEG_EVENT, .flags = flags};
	return 0;
}
int seg_add_gap(struct seg *s, uint32_t kind, int err, const char *what, uint64_t ip, uint64_t size,
		uint64_t pos);
int seg_add_ctx(struct seg *s, const struct hwt_dec_context *ctx, uint64_t pos);

/* Builds the segment's timeline from its packets (our time model, the same
 * as libipt's: TSC, TMA+MTC, CYC calibrated by CBR or MTC), and the packet
 * list when s->want_pkts. A piece of a segment (tl_start before start)
 * takes its part of the segment's, walked once for the segment and its
 * pieces (s->walk; the bytes of s->buf must not change while s keeps it:
 * seg_fini). */
struct hwt_dec;
void seg_timeline(struct seg *s, const struct hwt_dec *dec);
/* The time line (and PSB mark) of a segment that is the PSB+ head
 * describes (the segment before's s->tail, read at this one's start) and
 * PADs, where that and the next PSB+ are plain (seg.h tail): what
 * seg_timeline() gives for it, without the walk. False where it is not
 * one (nothing changed then). */
bool seg_timeline_psb_only(struct seg *s, const struct seg_tail *head);
/* s, a segment just decoded and replayed, becomes the one after it,
 * [s->end, end), where that is its PSB+ (the one s->tail describes, read
 * plain: s->next_hdr) and PADs and the PSB+ at end repeats it (the same
 * bytes but for its TSC's and TMA's values; no FUP): its header, and the
 * next PSB+'s as seg_find_end_ip() reads it, moved on. Its log, time line
 * and states are left as they were (hwt_dec_seg_psb_again()). False where
 * it is not one (s unchanged). */
bool seg_psb_again(struct seg *s, uint64_t end);
/* s becomes the last of the run of such segments after it d bytes long
 * each (d: a PSB+ repeat's length, s being one; 0: the PSB+ at s->end and
 * the PADs after it, s the segment before, with a segment at every PSB),
 * each ending before limit: the segments seg_psb_again() would take one
 * by one at s->end + d, + 2 d, ... Returns how many (0: s unchanged). */
uint64_t seg_psb_again_run(struct seg *s, uint64_t d, uint64_t limit);
/* The same, walking the packets from tl_start every time (tests compare). */
void seg_timeline_walk(struct seg *s, const struct hwt_dec *dec);
/* The same walk with every packet through hwt_pkt_decode() (the
 * definition the common packets' lexer is tested against). */
void seg_timeline_walk_generic(struct seg *s, const struct hwt_dec *dec);
/* Whether the walk that left m met a PSB at off. */
bool seg_psb_marked(const struct tl_marks *m, uint64_t off);
/* The TSC at offset pos (after the timing packets ending at or before
 * it); false when no TSC is known yet. *cursor speeds up ascending
 * queries (start at 0). */
bool seg_time_at_slow(const struct seg *s, uint64_t pos, size_t *cursor, uint64_t *tsc);

static inline bool seg_time_at(const struct seg *s, uint64_t pos, size_t *cursor, uint64_t *tsc)
{
	size_t i = *cursor;

	/* The common case: pos in the same interval as last time. */
	if (i < s->ntl && s->tl[i].off <= pos && (i + 1 == s->ntl || s->tl[i + 1].off > pos)) {
		*tsc = s->tl[i].tsc;
		return true;
	}
	return seg_time_at_slow(s, pos, cursor, tsc);
}

/* Reads the next segment's PSB+: its FUP (s->has_end_ip, s->end_ip) and
 * its PSBEND (s->next_psbend). */
void seg_find_end_ip(struct seg *s);
/* The same where the next PSB+ repeats the one at the segment's start as
 * the segment before read it (s->tail, s->next_hdr; the same bytes but for
 * its TSC's and TMA's values): that one's header and tail moved to the
 * end, without lexing it (a trace segment between runs of PSB+ while
 * tracing is off, with a segment at every PSB). False where it is not one
 * (s unchanged: seg_find_end_ip() reads it). */
bool seg_end_repeats_start(struct seg *s);
/* The packets of s from off to its end in out (at most cap entries; the
 * last is SEG_PKT_END, or BAD at a bad packet or where cap ran out), as
 * the segment's own list would have them without its lexer's marks: for a
 * look at a PSB+ past a bad packet, where that list ends. Returns the
 * entries. */
size_t seg_pkts_from(const struct seg *s, uint64_t off, int skz84, struct seg_pkt *out, size_t cap);

/* What the PSB+ packet p says into h (a FUP: its IP, from *last_ip). */
struct hwt_pkt;
void seg_header_pkt(struct seg_header *h, const struct hwt_pkt *p, uint64_t *last_ip);
/* Reads the segment's own PSB+ into s->hdr. bdm70: libipt's BDM70
 * workaround (a FUP followed by TIP.PGE after the PSB+ is ignored when a
 * fresh sync starts there). */
void seg_header(struct seg *s, int bdm70);
/* Where the log's items at a PSB+ are, as libipt decoding the whole stream
 * has them: decoding on, it reads a PSB+ to its PSBEND before it reports
 * what comes at it (its status updates, a resumed enable, the run up to
 * its FUP). A segment's own PSB+ decoded from the state the one before
 * left (libipt from a prefix of packets, eng_ipt.c, and the fast engine
 * mirroring it) has some of that at the PSB, and the segment before puts
 * some at its end, the same offset: both go to the PSBEND, so that
 * records do not depend on where segments begin (a segment at every PSB,
 * or one every 4 KiB). A fresh sync (entry not known) reports them where
 * libipt's synchronization does. */
void seg_decoded_on(struct seg *s);
/* Whether decoding from `entry` gives the log decoding from `used` gave
 * (a segment decoded ahead from a guess is decoded again when not). */
bool seg_same_start(const struct seg *s, const struct seg_state *entry,
		    const struct seg_state *used);
/* A segment that only holds PSB+ status updates while tracing is off
 * passes the state through: its exit from entry. */
bool seg_passes_through(const struct seg *s, const struct seg_state *entry);
struct seg_state seg_through(const struct seg *s, const struct seg_state *entry);

/* The last run of a segment: from ip, follow direct branches to the next
 * segment's start (s->end_ip, exclusive), or in the stream's last segment
 * (or without an end ip) up to and including the next instruction that
 * would need trace. Appends BB items at pos. Shared by both engines so
 * their segment ends agree. Returns 0 or a negative error (then a GAP item
 * has been added). */
int seg_tail(struct hwt_dec *dec, struct seg *s, const struct hwt_dec_image *img, uint64_t ip,
	     enum hwt_dec_mode mode, uint64_t pos, uint8_t flags);

/* Phase 1 engines: fill s's log. The fast engine returns -HWT_ENOTSUP when
 * it declines the segment (the log is then reset and libipt decodes it).
 * libipt decodes with its block cache, shared by the icache's decoders,
 * and again without it where what that cache held could make a difference
 * (a gap, a block's execution mode from it), so that the log depends on
 * the segment's bytes only; SEG_IPT_TRY: only the first, returning 1 where
 * the second would follow (the log is then to be dropped); SEG_IPT_COLD:
 * only the second. (With a sideband hook always only the first: the hook
 * would see every query twice.) */
enum seg_ipt_how { SEG_IPT_WHOLE, SEG_IPT_TRY, SEG_IPT_COLD };
int hwt_dec_seg_ipt(struct hwt_dec *dec, struct seg *s, enum seg_ipt_how how);
/* Fills s->exit from the engine's final state (known and enabled: only
 * when the last run reached the next segment's start). */
void seg_set_exit(struct seg *s, bool ok, bool enabled, uint64_t ip, uint8_t mode, bool spec);
/* s->exit of a segment with nothing after its PSB+. */
void seg_exit_empty(struct seg *s);
int hwt_dec_seg_fast(struct hwt_dec *dec, struct seg *s, void *scratch);
/* A segment that is a PSB+ while tracing is off, decoded on from the
 * segment before, and nothing else, in place of its time line's walk and
 * the fast engine (head: seg_timeline_psb_only()); false where it is not
 * one (s unchanged). */
bool hwt_dec_seg_psb_only(struct hwt_dec *dec, struct seg *s, const struct seg_tail *head);
/* The segment after s, [s->end, end), where it is a PSB+ while tracing is
 * off and PADs that hwt_dec_seg_psb_only() would decode, decoded from
 * dec->state to the PSB+ at end, and that PSB+ repeats its own
 * (seg_psb_again()): s becomes it, with its exit state in s->exit and its
 * status updates in s->nstatus; its log would be the context dec->ctx at
 * its start, left out (run.c checks that its replay would change nothing
 * else: flow.c hwt_dec_flow_in_ctx()). False where it is not one (s
 * unchanged). With more, s is one such segment already (its log empty,
 * dec->state its exit): the next of a run of them, without seg_reset(). */
bool hwt_dec_seg_psb_again(struct hwt_dec *dec, struct seg *s, uint64_t end, bool more);
/* The run of them after s (seg_psb_again_run(); with more, s is one and
 * they are as long, else s is the segment before the first, decoded and
 * replayed, with a segment at every PSB): how many. */
uint64_t hwt_dec_seg_psb_again_run(struct hwt_dec *dec, struct seg *s, uint64_t limit, bool more);

/* Fast-engine per-worker scratch (caches). */
int hwt_dec_fast_scratch_alloc(void **scratch);
void hwt_dec_fast_scratch_free(void *scratch);
/* Runs' counts across segments (seg_work.runs set to the scratch): a
 * segment at every PSB would fold every run it used into per-block counts
 * at its end, for each PSB interval. Kept instead (accept: the segment is
 * decoded for good, its replay follows; a run's count joins its kept
 * one), and folded into the profile when the run is evicted and at the
 * end of each decode call (flush); a segment's own go with its other
 * counts (undo, from seg_drop_counts() and seg_reset()). NULL scratch:
 * nothing. */
int hwt_dec_fast_runs_accept(struct hwt_dec *dec, void *scratch);
void hwt_dec_fast_runs_undo(void *scratch);
int hwt_dec_fast_runs_flush(struct hwt_dec *dec, void *scratch);

#endif
