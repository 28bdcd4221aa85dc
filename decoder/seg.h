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

#include "decoder/dec_int.h"

enum seg_kind {
	SEG_BB = 1,
	SEG_EVENT,
	SEG_GAP,
	SEG_CTX,     /* the thread/image of what follows */
};

#define SEG_F_TAKEN       (1u << 0)
#define SEG_F_PARTIAL     (1u << 1)
#define SEG_F_SPECULATIVE (1u << 2)
#define SEG_F_TRUNCATED   (1u << 3)
#define SEG_F_STATUS      (1u << 4) /* event: status update */
#define SEG_F_IP_SUPPRESSED (1u << 5)

struct seg_item {
	struct hwt_dec_bb *bb;  /* SEG_BB */
	uint64_t next_ip;       /* SEG_BB: where control went, or 0 */
	uint64_t pos;           /* stream offset (for time and records) */
	uint32_t ninsn;         /* SEG_BB: instructions run; else: index into
				 * the segment's events/gaps/ctxs */
	uint8_t kind;           /* enum seg_kind */
	uint8_t flags;          /* SEG_F_* */
	uint16_t reserved;
};

struct seg_gap {
	uint32_t kind;          /* enum hwt_dec_gap_kind */
	int err;
	const char *what;
	uint64_t ip;
	uint64_t size;
};

struct seg_ctx {
	int32_t pid, tid;
	struct hwt_dec_image *image; /* a reference */
};

struct tl_point {
	uint64_t off;           /* after this stream offset ... */
	uint64_t tsc;           /* ... the time is this */
};

struct seg {
	uint64_t start, end;    /* stream offsets: [start, end) */
	const uint8_t *buf;     /* the stream; buf + start is the PSB */
	size_t buf_len;         /* bytes of the whole stream piece */
	bool last;              /* the stream's last segment */
	bool fallback;          /* decoded by libipt after the fast engine
				 * declined */
	int err;                /* a hard error (ENOMEM, sink) */

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

	uint64_t insns;         /* instructions in BB items */
	uint64_t overflows;

	/* Where the next segment starts executing (its PSB+ FUP), when
	 * tracing is enabled there. */
	bool has_end_ip;
	uint64_t end_ip;
};

void seg_init(struct seg *s, const uint8_t *buf, size_t buf_len, uint64_t start, uint64_t end,
	      bool last);
/* Drops the log (keeps the buffers for reuse). */
void seg_reset(struct seg *s);
void seg_fini(struct seg *s);

/* Appends; return the new item (NULL: ENOMEM, also stored in s->err). */
struct seg_item *seg_add(struct seg *s, uint8_t kind);
int seg_add_event(struct seg *s, const struct hwt_dec_event *ev, uint8_t flags, uint64_t pos);
int seg_add_gap(struct seg *s, uint32_t kind, int err, const char *what, uint64_t ip,
		uint64_t size, uint64_t pos);
int seg_add_ctx(struct seg *s, const struct hwt_dec_context *ctx, uint64_t pos);

/* Builds the segment's timeline from its packets (our time model, the same
 * as libipt's: TSC, TMA+MTC, CYC calibrated by CBR or MTC). */
struct hwt_dec;
void seg_timeline(struct seg *s, const struct hwt_dec *dec);
/* The TSC at offset pos (after the timing packets ending at or before
 * it); false when no TSC is known yet. *cursor speeds up ascending
 * queries (start at 0). */
bool seg_time_at(const struct seg *s, uint64_t pos, size_t *cursor, uint64_t *tsc);

/* Finds the next segment's PSB+ FUP (s->has_end_ip, s->end_ip). */
void seg_find_end_ip(struct seg *s);

/* The last run of a segment: from ip, follow direct branches to the next
 * segment's start (s->end_ip, exclusive), or in the stream's last segment
 * (or without an end ip) up to and including the next instruction that
 * would need trace. Appends BB items at pos. Shared by both engines so
 * their segment ends agree. Returns 0 or a negative error (then a GAP item
 * has been added). */
int seg_tail(struct hwt_dec *dec, struct seg *s, const struct hwt_dec_image *img, uint64_t ip,
	     enum hwt_dec_mode mode, uint64_t pos, uint8_t flags);

/* Phase 1 engines: fill s's log. The fast engine returns -HWT_ENOTSUP when
 * it declines the segment (the log is then reset and libipt decodes it). */
int hwt_dec_seg_ipt(struct hwt_dec *dec, struct seg *s);
int hwt_dec_seg_fast(struct hwt_dec *dec, struct seg *s, void *scratch);

/* Fast-engine per-worker scratch (caches). */
int hwt_dec_fast_scratch_alloc(void **scratch);
void hwt_dec_fast_scratch_free(void *scratch);

#endif
