/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/eng_ipt.c - phase 1 with libipt's block decoder: one PSB segment
 * decoded by pt_blk_*, its blocks converted to the canonical log (basic
 * blocks of our block cache, seg.h), and the segment tail shared with the
 * fast engine.
 *
 * libipt's blocks follow direct jumps and calls and end at instructions that
 * need trace, at events, at section changes and at 64Ki instructions; the
 * converter splits them at every branch and joins pieces that libipt split
 * for its own reasons, so the log does not depend on how libipt cut its
 * blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/pkt.h"
#include "decoder/seg.h"

struct conv {
	struct hwt_dec *dec;
	struct seg *s;
	struct pt_block_decoder *blk;
	struct hwt_dec_context ctx;
	size_t tcur; /* timeline cursor */
	/* A basic block being run, not yet complete. */
	struct hwt_dec_bb *open;
	uint32_t open_k;
	uint8_t open_flags;
	/* The last complete block whose successor needs the next block: its
	 * item (if logged) gets next_ip and the taken flag then. */
	struct hwt_dec_bb *pending;
	size_t pending_item;
	/* Items from here on wait for their position: the one after the
	 * next decision or event. libipt sometimes ends a block after a
	 * direct call (depending on its block cache), which must not show. */
	size_t unposed;
	bool enabled;
	/* Blocks in a row that ended at a direct jump or call, the trace
	 * offset where that run began. */
	unsigned int direct_run;
	uint64_t run_pos;
	/* The stream offset before the current pt_blk_next(): where errors
	 * are placed (how far libipt read before failing depends on its
	 * block cache, which other decoders share). */
	uint64_t prepos;
	bool stopped;
	/* A gap since the last synchronization: the exit is not known. */
	bool failed;
	/* Decoding from a known state (s->entry): libipt starts at a prefix
	 * of `skew` bytes that puts it in that state, and its first `skip`
	 * events are the prefix's. */
	uint64_t skew;
	unsigned int skip;
	/* The block decoder's state, for s->exit. */
	uint8_t mode;
	bool spec;
	uint64_t dis_ip; /* libipt's resume address after a disable */
	/* Cold run: libipt reads the code through sections of its own (see
	 * hwt_dec_seg_ipt). */
	bool cold;
	const struct hwt_dec_image *cold_of;
	struct pt_image *cold_image;
	struct pt_image *image; /* the one libipt reads through now */
	/* A block came in an execution mode other than the decoder's (its
	 * mode unknown at an enable without MODE.Exec): libipt 2.0.5 took
	 * the block and its mode from its block cache, which does not check
	 * the decoder's mode; decoding the code itself it fails there. */
	bool mode_from_cache;
	/* libipt's block ran into code our decoder rejects: the rest of
	 * libipt's straight-line run there is skipped (conv_block), as far
	 * as the last skipped block's instruction class says it goes on. */
	bool rejected;
	enum pt_insn_class rejected_iclass;
};

/* libipt reads the code of a cold run through this callback: with no
 * section there is no block cache at all, and no file to open. */
static int cold_read(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip,
		     void *context)
{
	int n = hwt_dec_image_read(context, ip, buffer, size);

	(void)asid;
	return n < 0 ? -pte_nomap : n;
}

/* A pt_image that reads img's code without sections: libipt's block
 * cache, which lives in the sections, is not used. */
static struct pt_image *cold_image(struct conv *c, const struct hwt_dec_image *img)
{
	struct pt_image *pi;

	if (c->cold_of == img && c->cold_image)
		return c->cold_image;
	pt_image_free(c->cold_image);
	c->cold_image = NULL;
	c->cold_of = NULL;
	pi = pt_image_alloc(NULL);
	if (!pi)
		return NULL;
	if (pt_image_set_callback(pi, cold_read, (void *)img) < 0) {
		pt_image_free(pi);
		return NULL;
	}
	c->cold_image = pi;
	c->cold_of = img;
	return pi;
}

/* Points libipt at the code of the current context (c->ctx.image): with
 * sections (their block caches) only in the execution mode those caches
 * are filled in, the first known mode a run with them decodes in; in any
 * other, and while the mode is unknown, without (cold_image()). libipt
 * 2.0.5's cached path does not check the decoder's mode: a block another
 * decode cached in another mode would be taken as it is, where decoding
 * the code itself fails (mode unknown) or decodes it otherwise; a run
 * with a sideband hook, not decoded again cold, kept that. */
static int conv_image(struct conv *c)
{
	struct hwt_dec_icache *ic = c->dec->icache;
	struct pt_image *pi;
	bool cold = c->cold;
	int err = -ENOMEM;

	if (!c->ctx.image)
		return 0;
	if (!cold) {
		if (ic->ipt_mode == HWT_DEC_MODE_UNKNOWN)
			ic->ipt_mode = c->mode;
		cold = c->mode == HWT_DEC_MODE_UNKNOWN || c->mode != ic->ipt_mode;
	}
	pi = cold ? cold_image(c, c->ctx.image) : hwt_dec_image_ipt(c->ctx.image, &err);
	if (!pi)
		return err;
	if (pi == c->image)
		return 0;
	err = pt_blk_set_image(c->blk, pi);
	if (err < 0)
		return hwt_dec_err_from_pt(err);
	c->image = pi;
	return 0;
}

static bool needs_trace(uint8_t br)
{
	switch (br) {
	case HWT_DEC_BR_COND:
	case HWT_DEC_BR_IND_JUMP:
	case HWT_DEC_BR_IND_CALL:
	case HWT_DEC_BR_RETURN:
	case HWT_DEC_BR_FAR_CALL:
	case HWT_DEC_BR_FAR_RETURN:
	case HWT_DEC_BR_FAR_JUMP:
		return true;
	default:
		return false;
	}
}

static uint64_t direct_next(const struct hwt_dec_bb *bb)
{
	return (bb->branch == HWT_DEC_BR_JUMP || bb->branch == HWT_DEC_BR_CALL) ? bb->target
										: bb->fallthrough;
}

int seg_tail(struct hwt_dec *dec, struct seg *s, const struct hwt_dec_image *img, uint64_t ip,
	     enum hwt_dec_mode mode, uint64_t pos, uint8_t flags)
{
	int steps = 0;

	if (!img || !s->has_end_ip)
		return 0;
	for (;;) {
		struct hwt_dec_bb *bb;
		int err, k;

		if (ip == s->end_ip) {
			s->tail_reached = true;
			return 0;
		}
		/* Bounded: a straight run of direct branches is short. */
		if (++steps > 256)
			return 0;
		err = hwt_dec_bb_get(dec->icache, img, ip, mode, &bb);
		if (err < 0)
			return seg_add_gap(s, HWT_DEC_GAP_ERROR, err, "no code at the trace's end",
					   ip, 0, pos) < 0
				   ? s->err
				   : 0;
		k = hwt_dec_bb_index(bb, s->end_ip);
		if (k >= 0) {
			/* k > 0 here: ip == end_ip was checked above. */
			s->tail_reached = true;
			s->tail_split = true;
			return seg_bb(s, bb, (uint32_t)k, flags | SEG_F_PARTIAL, 0, pos);
		}
		if (needs_trace(bb->branch) ||
		    (bb->flags & (HWT_DEC_BBF_ERROR | HWT_DEC_BBF_TRUNCATED))) {
			/* The trace ends before this branch's outcome. */
			return seg_bb(s, bb, bb->ninsn, flags | SEG_F_PARTIAL, 0, pos);
		}
		ip = direct_next(bb);
		err = seg_bb(s, bb, bb->ninsn, flags, ip, pos);
		if (err < 0)
			return err;
	}
}

/* ------------------------------------------------------------------------ */

static uint64_t conv_pos(struct conv *c)
{
	uint64_t off = 0;

	if (pt_blk_get_offset(c->blk, &off) < 0)
		return c->s->end;
	return c->s->start + (off > c->skew ? off - c->skew : 0);
}

/* Where decoding failed: as ptxed reports it, the block's last
 * instruction, or for unmapped or undecodable code the instruction after
 * it. */
static uint64_t error_ip(struct conv *c, int pterr, const struct pt_block *b)
{
	struct hwt_dec_insn insn;

	if (!b->ninsn)
		return b->ip;
	if ((pterr == -pte_nomap || pterr == -pte_bad_insn) && c->ctx.image &&
	    hwt_dec_insn_decode(c->ctx.image, b->end_ip, hwt_dec_mode_from_pt(b->mode), &insn) == 0)
		return insn.has_target ? insn.target : b->end_ip + insn.size;
	return b->end_ip;
}

static void conv_snapshot(struct conv *c, uint64_t pos)
{
	struct seg *s = c->s;

	for (size_t i = c->unposed; i < s->nitems; i++) {
		if (s->items[i].pos == SEG_UNPOSED)
			s->items[i].pos = pos;
	}
	c->unposed = s->nitems;
}

static int conv_gap(struct conv *c, int pterr, uint64_t ip, uint64_t pos)
{
	conv_snapshot(c, pos);
	return seg_add_gap(c->s, HWT_DEC_GAP_ERROR, hwt_dec_err_from_pt(pterr),
			   pt_errstr(pt_errcode(pterr)), ip, c->s->end > pos ? c->s->end - pos : 0,
			   pos);
}

/* Closes a partially run block (it stopped early). */
static int conv_close_open(struct conv *c, uint64_t pos)
{
	struct hwt_dec_bb *bb = c->open;

	if (!bb)
		return 0;
	c->open = NULL;
	return seg_bb(c->s, bb, c->open_k, (uint8_t)(c->open_flags | SEG_F_PARTIAL), 0, pos);
}

static int conv_resolve(struct conv *c, uint64_t next_ip)
{
	struct hwt_dec_bb *bb = c->pending;
	bool taken;

	if (!bb)
		return 0;
	c->pending = NULL;
	taken = bb->branch == HWT_DEC_BR_COND && next_ip == bb->target && next_ip;
	if (c->pending_item != SEG_NOT_LOGGED) {
		struct seg_item *it = &c->s->items[c->pending_item];

		it->next_ip = next_ip;
		if (taken)
			it->flags |= SEG_F_TAKEN;
	}
	if (taken && c->s->profile)
		c->s->work->c[bb->id].taken++;
	return 0;
}

/* A context change (sideband) at pos, after event e (NULL at the start). */
static int conv_context(struct conv *c, uint64_t pos, bool first, const struct hwt_dec_event *e,
			uint8_t flags, const struct pt_event *ev)
{
	struct hwt_dec_context ctx;
	struct hwt_dec_context_query q;
	int err;

	if (!first && !c->dec->cfg.context)
		return 0;
	q.tsc = 0;
	q.has_tsc = false;
	if (ev) {
		/* libipt's time of the event, as libipt-sb goes by (relative
		 * time without wall-clock time). */
		q.tsc = ev->tsc;
		q.has_tsc = ev->has_tsc;
	}
	if (!q.has_tsc) /* before libipt's first timing: the PSB+'s TSC */
		q.has_tsc = seg_time_at(c->s, pos, &c->tcur, &q.tsc);
	q.event = e;
	q.ip_suppressed = flags & SEG_F_IP_SUPPRESSED;
	q.status_update = flags & SEG_F_STATUS;
	err = hwt_dec_context_at(c->dec, &q, &ctx);
	if (err < 0)
		return err;
	if (!first && !ctx.note && hwt_dec_context_same(&ctx, &c->ctx))
		return 0;
	c->ctx = ctx;
	err = conv_image(c);
	if (err < 0)
		return err;
	return seg_add_ctx(c->s, &ctx, pos);
}

static int conv_block(struct conv *c, const struct pt_block *b, uint64_t pos)
{
	enum hwt_dec_mode mode = hwt_dec_mode_from_pt(b->mode);
	uint64_t ip = b->ip;
	uint32_t n = b->ninsn;
	uint8_t flags = b->speculative ? SEG_F_SPECULATIVE : 0;
	int err;

	if (!n)
		return 0;
	if (mode != c->mode)
		c->mode_from_cache = true;
	if (c->rejected) {
		/* The run goes on without a branch or an event (libipt's
		 * block cache, which other decoders fill, cuts such runs
		 * anywhere; its own decoding would not): skip this part. */
		if (c->rejected_iclass == ptic_other) {
			c->rejected_iclass = b->iclass;
			return 0;
		}
		c->rejected = false;
	}
	err = conv_resolve(c, ip);
	if (err < 0)
		return err;
	while (n) {
		struct hwt_dec_bb *bb;
		uint32_t take;

		if (c->open &&
		    (ip != hwt_dec_bb_insn_ip(c->open, c->open_k) || c->open_flags != flags)) {
			err = conv_close_open(c, pos);
			if (err < 0)
				return err;
		}
		if (!c->open) {
			if (!c->ctx.image)
				return seg_add_gap(c->s, HWT_DEC_GAP_ERROR, -HWT_ENOSYM,
						   "no code image", ip, 0, pos);
			err = hwt_dec_bb_get(c->dec->icache, c->ctx.image, ip, mode, &bb);
			if (err < 0) {
				/* libipt's length decoder took bytes for an
				 * instruction that ours (xed's view, as
				 * ptxed prints it) does not: ptxed prints
				 * "xed decode error" there, skips the rest
				 * of the block and decodes on, and so does
				 * this (a gap of no bytes; the fast engine
				 * declines such code). The block as libipt
				 * decodes the code, up to its next branch
				 * or event: where its block cache cut the
				 * run short, the blocks that go on with it
				 * are skipped too. At the position libipt was
				 * at before the block, as a failed block's
				 * error: the code up to the block's branch
				 * ran there, and the position after it
				 * depends on where libipt's block cache cut
				 * the run (filled by earlier decodes, it may
				 * go on to the next branch needing trace and
				 * read its bits). */
				pos = c->prepos;
				c->rejected = true;
				c->rejected_iclass = b->iclass;
				conv_snapshot(c, pos);
				return seg_add_gap(c->s, HWT_DEC_GAP_ERROR, -HWT_EINTERNAL,
						   "instruction decoding disagrees with libipt", ip,
						   0, pos) < 0
					   ? c->s->err
					   : 0;
			}
			c->open = bb;
			c->open_k = 0;
			c->open_flags = flags;
		}
		bb = c->open;
		take = bb->ninsn - c->open_k;
		if (take > n)
			take = n;
		c->open_k += take;
		n -= take;
		if (c->open_k < bb->ninsn) {
			ip = hwt_dec_bb_insn_ip(bb, c->open_k);
			continue;
		}
		/* The block ran to its end. */
		c->open = NULL;
		if (needs_trace(bb->branch)) {
			if (n) {
				pos = c->prepos;
				c->stopped = true;
				return seg_add_gap(c->s, HWT_DEC_GAP_ERROR, -HWT_EINTERNAL,
						   "block structure disagrees with libipt",
						   bb->end_ip,
						   c->s->end > pos ? c->s->end - pos : 0, pos) < 0
					   ? c->s->err
					   : 1;
			}
			err = seg_bb(c->s, bb, bb->ninsn, flags, 0, SEG_UNPOSED);
			if (err < 0)
				return err;
			c->pending = bb;
			c->pending_item = c->s->last_logged;
		} else {
			ip = direct_next(bb);
			err = seg_bb(c->s, bb, bb->ninsn, flags, ip, SEG_UNPOSED);
			if (err < 0)
				return err;
		}
	}
	return 0;
}

/* Events that bind to a place in the instruction flow end a run there;
 * others (timing, power) happen beside it. */
static bool event_breaks_flow(enum pt_event_type t)
{
	switch (t) {
	case ptev_tick:
	case ptev_cbr:
	case ptev_mnt:
	case ptev_pwre:
	case ptev_pwrx:
		return false;
	default:
		return true;
	}
}

/* The block decoder's state as an event changes it (pt_blk_event). */
static void conv_track(struct conv *c, const struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_enabled:
		c->enabled = true;
		break;
	case ptev_disabled:
		/* pt_blk_set_disable_resume_ip(): after a call that needed
		 * trace, the call's next instruction; at another branch
		 * needing trace, none; else the disable's IP, reached. */
		if (c->pending)
			c->dis_ip = (c->pending->branch == HWT_DEC_BR_IND_CALL ||
				     c->pending->branch == HWT_DEC_BR_FAR_CALL)
					? c->pending->fallthrough
					: 0;
		else
			c->dis_ip = ev->ip_suppressed ? 0 : ev->variant.disabled.ip;
		c->enabled = false;
		break;
	case ptev_async_disabled:
		c->dis_ip = ev->variant.async_disabled.at;
		c->enabled = false;
		break;
	case ptev_overflow:
		c->enabled = !ev->ip_suppressed;
		c->dis_ip = 0;
		c->spec = false;
		break;
	case ptev_exec_mode:
		c->mode = (uint8_t)hwt_dec_mode_from_pt(ev->variant.exec_mode.mode);
		break;
	case ptev_tsx:
		c->spec = ev->variant.tsx.speculative;
		break;
	default:
		break;
	}
}

static int conv_event(struct conv *c, const struct pt_event *ev, uint64_t pos)
{
	struct hwt_dec_event e;
	uint8_t flags = 0;
	int err;

	if (c->skip) {
		/* The prefix's own events set the state up. */
		c->skip--;
		conv_track(c, ev);
		return ev->type == ptev_exec_mode ? conv_image(c) : 0;
	}
	c->rejected = false;

	if (ev->type == ptev_tick) {
		/* Ticks are on only for sideband (the context may change
		 * with time) or when asked for; time itself is kept by the
		 * timeline. */
		hwt_dec_event_from_pt(&e, ev);
		if (c->dec->cfg.flags & HWT_DEC_F_TICK) {
			conv_snapshot(c, pos);
			err = seg_add_event(c->s, &e, flags, pos);
			if (err < 0)
				return err;
		}
		return conv_context(c, pos, false, &e, flags, ev);
	}
	if (ev->status_update)
		flags |= SEG_F_STATUS;
	if (ev->ip_suppressed)
		flags |= SEG_F_IP_SUPPRESSED;
	conv_track(c, ev);
	if (ev->type == ptev_exec_mode) {
		err = conv_image(c);
		if (err < 0)
			return err;
	}
	if (!ev->status_update && event_breaks_flow(ev->type)) {
		err = conv_close_open(c, pos);
		if (err < 0)
			return err;
		conv_snapshot(c, pos);
		switch (ev->type) {
		case ptev_async_branch:
			err = conv_resolve(c, ev->variant.async_branch.from);
			break;
		case ptev_async_disabled:
			err = conv_resolve(c, ev->variant.async_disabled.at);
			break;
		case ptev_disabled:
			err = conv_resolve(c, ev->ip_suppressed ? 0 : ev->variant.disabled.ip);
			break;
		case ptev_exec_mode:
			err = ev->ip_suppressed ? 0 : conv_resolve(c, ev->variant.exec_mode.ip);
			break;
		case ptev_enabled:
		case ptev_overflow:
			err = conv_resolve(c, 0);
			break;
		default:
			err = 0;
			break;
		}
		if (err < 0)
			return err;
	}
	hwt_dec_event_from_pt(&e, ev);
	conv_snapshot(c, pos);
	err = seg_add_event(c->s, &e, flags, pos);
	if (err < 0)
		return err;
	return conv_context(c, pos, false, &e, flags, ev);
}

/* Out of trace with tracing on: the run from the block's start goes on to
 * where the next segment begins (seg_tail); in the stream's last segment
 * it is not followed (libipt does not either). The run is in the
 * decoder's mode: libipt decoding the whole stream walks to the next
 * PSB+'s FUP without its block cache (pt_blk_proceed_to_ip), whereas the
 * block asked for here can come from that cache in the mode of whatever
 * decode cached it (the cached path does not check the decoder's mode:
 * at an enable whose mode is unknown, as after MODE.Exec with CS.L and
 * CS.D both set, it would run on in 64-bit mode where libipt decoding
 * the whole stream fails with "unknown instruction"). */
static int conv_tail(struct conv *c, const struct pt_block *b, uint64_t pos)
{
	struct hwt_dec_bb *bb = c->open;
	int err;

	conv_snapshot(c, pos);
	err = conv_resolve(c, b->ip);
	if (err < 0)
		return err;
	if (bb && b->ip != hwt_dec_bb_insn_ip(bb, c->open_k)) {
		err = conv_close_open(c, pos);
		if (err < 0)
			return err;
		bb = NULL;
	}
	if (!c->s->has_end_ip) {
		/* Nothing follows: what ran of an open block stops here. */
		return conv_close_open(c, pos);
	}
	if (bb) {
		/* Re-run the open block from its start: the tail counts
		 * what already ran. */
		c->open = NULL;
		return seg_tail(c->dec, c->s, c->ctx.image, bb->ip, (enum hwt_dec_mode)bb->mode,
				pos, c->open_flags);
	}
	return seg_tail(c->dec, c->s, c->ctx.image, b->ip, (enum hwt_dec_mode)c->mode, pos,
			b->speculative ? SEG_F_SPECULATIVE : 0);
}

/* Where decoding stops (an error, or the end): the items waiting for a
 * position get it, a branch whose outcome never came has none, the
 * instructions not yet carried are. */
static int conv_stop(struct conv *c)
{
	uint64_t endpos = c->stopped ? c->prepos : c->blk ? conv_pos(c) : c->s->end;
	int err;

	conv_snapshot(c, endpos);
	err = conv_resolve(c, 0);
	if (err == 0)
		err = seg_flush_delta(c->s, endpos);
	return err;
}

/* After an error, libipt decoding the whole stream (ptxed) synchronizes
 * at the next PSB after where it stopped: the same here, inside the
 * segment. The last gap's size is then the bytes up to there. Returns 0
 * with libipt's status in *status, 1 when no PSB follows, or a negative
 * error. */
static int conv_resync(struct conv *c, int *status)
{
	struct seg *s = c->s;
	uint64_t off = 0;
	int err = conv_stop(c);

	c->rejected = false;
	if (err < 0)
		return err;
	*status = pt_blk_sync_forward(c->blk);
	if (*status < 0 && *status != -pte_eos && c->skew &&
	    pt_blk_get_sync_offset(c->blk, &off) == 0 && off == c->skew) {
		/* It failed at the segment's own PSB (a bad packet in its
		 * PSB+, read from the prefix's state): as ptxed, on to the
		 * next PSB (which libipt's search starts past). */
		*status = pt_blk_sync_forward(c->blk);
	}
	if (*status == -pte_eos)
		return 1;
	/* A sync that fails at a PSB (a bad packet in its PSB+) does not end
	 * decoding: ptxed synchronizes on after it, as a segment starting at
	 * that PSB does (libipt's sync offset is the PSB's even then). */
	if (pt_blk_get_sync_offset(c->blk, &off) == 0) {
		uint64_t sync = s->start + (off > c->skew ? off - c->skew : 0);

		if (s->nitems && s->items[s->nitems - 1].kind == SEG_GAP) {
			const struct seg_item *it = &s->items[s->nitems - 1];

			/* (At the gap's own offset: none; a PSB+ libipt
			 * failed to read decoding on, whose sync fails.) */
			if (sync > it->pos || (sync == it->pos && off >= c->skew))
				s->gaps[it->ninsn].size = sync - it->pos;
		}
		if (s->resync_stop && sync >= s->resync_stop && sync < s->end) {
			/* Decoding on from this fresh sync is the next
			 * segment's, which starts there as ptxed does
			 * (run.c: the fast engine takes it again). */
			s->end = sync;
			s->last = false;
			return 1;
		}
		if (*status < 0)
			return 1;
		if (c->dec->cfg.context) {
			/* Where it goes on, the sideband hook says whose
			 * trace it is, as at a segment's start (which is
			 * where a piece of a longer segment starting at
			 * this sync asks). */
			err = conv_context(c, sync, true, NULL, 0, NULL);
			if (err < 0)
				return err;
		}
	}
	c->open = NULL;
	c->pending = NULL;
	c->stopped = false;
	c->failed = false;
	c->direct_run = 0;
	c->run_pos = 0;
	c->enabled = !(*status & pts_ip_suppressed);
	c->mode = HWT_DEC_MODE_UNKNOWN;
	c->spec = false;
	c->dis_ip = 0;
	err = conv_image(c);
	return err < 0 ? err : 0;
}

/* Packets that bring libipt's block decoder into state st, as if it had
 * decoded up to here: a PSB+ with the execution mode, the transaction
 * state and, when tracing is on, a FUP at st->ip; when tracing is off but
 * a resume address is known, FUP and TIP.PGD at it (an asynchronous
 * disable there leaves it as the resume address). Returns the bytes
 * written and *nev, the events libipt reports for them; or a negative
 * libipt error. */
static int state_prefix(const struct pt_config *base, const struct seg_state *st, uint8_t *buf,
			size_t cap, unsigned int *nev)
{
	struct pt_packet pk[8];
	struct pt_config cfg = *base;
	struct pt_encoder *enc;
	size_t n = 0;
	uint64_t off = 0;
	int err = 0;

	memset(pk, 0, sizeof(pk));
	*nev = 0;
	pk[n++].type = ppt_psb;
	if (st->mode != HWT_DEC_MODE_UNKNOWN) {
		pk[n].type = ppt_mode;
		pk[n].payload.mode.leaf = pt_mol_exec;
		pk[n].payload.mode.bits.exec.csl = st->mode == HWT_DEC_MODE_64;
		pk[n++].payload.mode.bits.exec.csd = st->mode == HWT_DEC_MODE_32;
		(*nev)++;
	}
	if (st->spec) {
		pk[n].type = ppt_mode;
		pk[n].payload.mode.leaf = pt_mol_tsx;
		pk[n++].payload.mode.bits.tsx.intx = 1;
		(*nev)++;
	}
	if (st->enabled || st->ip) {
		pk[n].type = ppt_fup;
		pk[n].payload.ip.ipc = pt_ipc_full;
		pk[n++].payload.ip.ip = st->ip;
	}
	pk[n++].type = ppt_psbend;
	if (!st->enabled && st->ip) {
		pk[n].type = ppt_fup;
		pk[n].payload.ip.ipc = pt_ipc_full;
		pk[n++].payload.ip.ip = st->ip;
		pk[n].type = ppt_tip_pgd;
		pk[n++].payload.ip.ipc = pt_ipc_suppressed;
		(*nev)++;
	}
	cfg.begin = buf;
	cfg.end = buf + cap;
	enc = pt_alloc_encoder(&cfg);
	if (!enc)
		return -pte_nomem;
	for (size_t i = 0; i < n && err >= 0; i++)
		err = pt_enc_next(enc, &pk[i]);
	if (err >= 0)
		err = pt_enc_get_offset(enc, &off);
	pt_free_encoder(enc);
	return err < 0 ? err : (int)off;
}

/* Erratum SKD010 (the FUP after an OVF may be missing): libipt looks
 * ahead from an OVF without FUP for a sign that tracing is on, and a PSB+
 * with a FUP is one: it resumes there, at the FUP's IP. From a segment's
 * last OVF that look-ahead reaches the next segment: the overflow then
 * has that IP and tracing is on at the next PSB, as libipt decoding the
 * whole stream has it. */
static void skd010_at_end(struct conv *c)
{
	struct seg *s = c->s;

	if (!s->has_end_ip)
		return;
	for (size_t i = s->nitems; i-- > 0;) {
		struct seg_item *it = &s->items[i];
		struct hwt_dec_event *e;

		if (it->kind == SEG_CTX || it->kind == SEG_INSNS)
			continue;
		if (it->kind != SEG_EVENT)
			return;
		e = &s->events[it->ninsn];
		switch (e->type) {
		case HWT_DEC_EV_CBR:
		case HWT_DEC_EV_PAGING:
		case HWT_DEC_EV_VMCS:
		case HWT_DEC_EV_MNT:
		case HWT_DEC_EV_PWRE:
		case HWT_DEC_EV_PWRX:
			/* What libipt's look-ahead steps over. */
			continue;
		case HWT_DEC_EV_OVERFLOW:
			if (!(it->flags & SEG_F_IP_SUPPRESSED))
				return;
			it->flags &= (uint8_t)~SEG_F_IP_SUPPRESSED;
			e->ip = s->end_ip;
			c->enabled = true;
			c->spec = false;
			s->tail_reached = true;
			return;
		default:
			return;
		}
	}
}

/* libipt decodes segment s (cold: without its block cache); sets
 * *mode_from_cache when a block's execution mode came from that cache. */
static int seg_ipt(struct hwt_dec *dec, struct seg *s, bool cold, bool *mode_from_cache)
{
	struct pt_config cfg = dec->ptcfg;
	struct pt_block block;
	struct conv c;
	uint8_t *copy = NULL;
	bool empty = false;
	int status, err = 0;

	/* Under ic->ipt_lock (hwt_dec_seg_ipt). */
	dec->stats.ipt_runs++;

	*mode_from_cache = false;
	memset(&c, 0, sizeof(c));
	c.dec = dec;
	c.s = s;
	c.cold = cold;
	c.mode = s->entry.known ? s->entry.mode : HWT_DEC_MODE_UNKNOWN;
	c.spec = s->entry.known && s->entry.spec;
	c.dis_ip = s->entry.known ? s->entry.ip : 0;
	cfg.begin = (uint8_t *)s->buf + s->start;
	cfg.end = (uint8_t *)s->buf + s->end;
	if (s->entry.known) {
		enum { PREFIX_MAX = 64 };
		size_t len = (size_t)(s->end - s->start);
		int n;

		copy = malloc(PREFIX_MAX + len);
		if (!copy)
			return -ENOMEM;
		n = state_prefix(&dec->ptcfg, &s->entry, copy, PREFIX_MAX, &c.skip);
		if (n < 0) {
			free(copy);
			return hwt_dec_err_from_pt(n);
		}
		memcpy(copy + n, s->buf + s->start, len);
		c.skew = (uint64_t)n;
		cfg.begin = copy;
		cfg.end = copy + n + len;
	}
	/* ptxed-only flags do not apply to the canonical log. */
	memset(&cfg.flags, 0, sizeof(cfg.flags));
	if ((dec->cfg.flags & HWT_DEC_F_TICK) || dec->cfg.context)
		cfg.flags.variant.block.enable_tick_events = 1;
	/* Blocks end at direct jumps and calls, so that an endless loop of
	 * them comes back to us (the log does not depend on libipt's block
	 * boundaries). */
	if (HWT_DEC_CAN_END_ON_JUMP(&cfg)) {
		cfg.flags.variant.block.end_on_call = 1;
		cfg.flags.variant.block.end_on_jump = 1;
	}
	c.blk = pt_blk_alloc_decoder(&cfg);
	if (!c.blk) {
		free(copy);
		return -ENOMEM;
	}
	err = conv_context(&c, s->start, true, NULL, 0, NULL);
	if (err < 0)
		goto out;
	if (s->hdr.open && !s->last) {
		/* The segment's PSB+ runs into the next PSB, which libipt
		 * decoding the whole stream reads as part of it: it fails
		 * there and synchronizes afresh at that PSB (seg_header).
		 * Where it synchronizes afresh here (no state handed over:
		 * an error before), that sync fails: a sync gap. */
		c.failed = true;
		err = seg_add_gap(s, s->entry.known ? HWT_DEC_GAP_ERROR : HWT_DEC_GAP_SYNC,
				  hwt_dec_err_from_pt(-pte_bad_context), pt_errstr(pte_bad_context),
				  0, s->end - s->start, s->start);
		goto out;
	}
	memset(&block, 0, sizeof(block));
	status = pt_blk_sync_set(c.blk, 0);
	if (status == -pte_eos) {
		/* A PSB+ and nothing after it: nothing to decode. */
		empty = true;
		err = 0;
		goto out;
	}
	c.enabled = !(status & pts_ip_suppressed);
	if (status < 0) {
		err = seg_add_gap(s, HWT_DEC_GAP_SYNC, hwt_dec_err_from_pt(status),
				  pt_errstr(pt_errcode(status)), 0, s->end - s->start, s->start);
		if (err < 0)
			goto out;
		goto resync;
	}
	for (;;) {
		uint64_t pos;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_blk_event(c.blk, &ev, sizeof(ev));
			if (status < 0)
				break;
			err = conv_event(&c, &ev, conv_pos(&c));
			if (err < 0)
				goto out;
		}
		if (status < 0) {
			pos = conv_pos(&c);
			err = conv_close_open(&c, pos);
			if (err == 0)
				err = conv_gap(&c, status, error_ip(&c, status, &block), pos);
			if (err < 0)
				goto out;
			goto resync;
		}
		if (status & pts_eos) {
			if (!(status & pts_ip_suppressed) && !s->last && s->has_end_ip) {
				/* Ask for the next block only to learn where
				 * the run goes on; the tail is ours. */
				pt_blk_next(c.blk, &block, sizeof(block));
				err = conv_tail(&c, &block, conv_pos(&c));
				goto out;
			}
			if (!(status & pts_ip_suppressed) && c.pending) {
				/* Where the last branch went: the start of
				 * the block libipt would decode next. */
				pt_blk_next(c.blk, &block, sizeof(block));
				err = conv_resolve(&c, block.ip);
				if (err < 0)
					goto out;
			}
			err = conv_close_open(&c, conv_pos(&c));
			conv_snapshot(&c, conv_pos(&c));
			if (err == 0 && s->last && !(status & pts_ip_suppressed)) {
				struct hwt_dec_event e;

				memset(&e, 0, sizeof(e));
				e.type = HWT_DEC_EV_END;
				err = seg_add_event(s, &e, 0, conv_pos(&c));
			}
			goto out;
		}
		c.prepos = conv_pos(&c);
		status = pt_blk_next(c.blk, &block, sizeof(block));
		pos = conv_pos(&c);
		if (status < 0) {
			if (status == -pte_eos && block.ninsn) {
				/* The trace ended at a branch: what ran up to
				 * it counts, however libipt's block cache cut
				 * the blocks before; where it went is not
				 * known. */
				err = conv_block(&c, &block, pos);
				if (err == 0)
					err = conv_close_open(&c, pos);
				goto out;
			}
			if (status == -pte_eos) {
				err = conv_tail(&c, &block, pos);
				goto out;
			}
			pos = c.prepos;
			c.stopped = true;
			if (block.ninsn) {
				err = conv_block(&c, &block, pos);
				if (err < 0)
					goto out;
				if (err > 0)
					goto resync;
			}
			err = conv_close_open(&c, pos);
			if (err == 0)
				err = conv_gap(&c, status, error_ip(&c, status, &block), pos);
			if (err < 0)
				goto out;
			goto resync;
		}
		err = conv_block(&c, &block, pos);
		if (err < 0)
			goto out;
		if (err > 0)
			goto resync;
		if ((status & pts_event_pending) || c.pending)
			conv_snapshot(&c, pos);
		/* A run of direct jumps and calls without trace. */
		if (c.pending || (status & pts_event_pending) || !block.ninsn ||
		    (block.iclass != ptic_jump && block.iclass != ptic_call) || pos != c.run_pos) {
			c.direct_run = 0;
			c.run_pos = pos;
		} else if (++c.direct_run > HWT_DEC_MAX_DIRECT_RUN) {
			err = conv_close_open(&c, pos);
			if (err == 0)
				err = seg_add_gap(s, HWT_DEC_GAP_ERROR, -HWT_EDECODE,
						  HWT_DEC_ENDLESS_WHAT, block.end_ip,
						  s->end > pos ? s->end - pos : 0, pos);
			if (err < 0)
				goto out;
			goto resync;
		}
		continue;
	resync:
		/* A gap: decoding goes on at the next PSB, if any. */
		c.failed = true;
		err = conv_resync(&c, &status);
		if (err != 0)
			goto out;
		memset(&block, 0, sizeof(block));
	}
out:
	if (err >= 0) {
		int e2 = conv_stop(&c);

		if (e2 < 0)
			err = e2;
	}
	if (err > 0)
		err = 0;
	if (err == 0 && !empty && !c.failed && !c.enabled && dec->ptcfg.errata.skd010)
		skd010_at_end(&c);
	if (empty)
		seg_exit_empty(s);
	else
		seg_set_exit(s, err >= 0 && !c.failed && !s->err, c.enabled, c.dis_ip, c.mode,
			     c.spec);
	*mode_from_cache = c.mode_from_cache;
	pt_blk_free_decoder(c.blk);
	pt_image_free(c.cold_image);
	free(copy);
	return err < 0 ? err : s->err;
}

static int seg_ipt_once(struct hwt_dec *dec, struct seg *s, enum seg_ipt_how how)
{
	uint64_t end = s->end;
	bool last = s->last, mode_from_cache, unused;
	int err;

	if (how == SEG_IPT_COLD && !dec->cfg.context)
		return seg_ipt(dec, s, true, &unused);
	err = seg_ipt(dec, s, false, &mode_from_cache);
	/* libipt's block cache lives in the shared sections, so holds
	 * whatever was decoded before (libipt 2.0.5): on damaged trace,
	 * where libipt fails can depend on it, and at an enable whose
	 * execution mode is not known it runs on with a cached block's mode
	 * where decoding the code fails. A segment decoded so is decoded
	 * again with sections of its own, so that its records depend on
	 * its bytes only (with a sideband hook it is not: the hook would
	 * see every query twice). */
	if (err < 0 || (!s->ngaps && !mode_from_cache) || dec->cfg.context)
		return err;
	if (how == SEG_IPT_TRY)
		return 1;
	seg_drop_counts(s);
	{
		bool fallback = s->fallback;

		seg_reset(s);
		s->fallback = fallback;
		/* Stopped at a resync (resync_stop): from the start again. */
		s->end = end;
		s->last = last;
	}
	return seg_ipt(dec, s, true, &unused);
}

int hwt_dec_seg_ipt(struct hwt_dec *dec, struct seg *s, enum seg_ipt_how how)
{
	struct hwt_dec_icache *ic = dec->icache;
	int err;

	/* libipt block decoders running at once on the same sections (their
	 * shared block cache) were seen to loop forever inside pt_blk_next
	 * (libipt 2.0.5; about one run in six of a 1.2e7-instruction trace
	 * on two threads), and to fail reads of mapped code ("no memory
	 * mapped at this address": ptsession's stitching, one decoder per
	 * CPU on one icache, about one decode in 30). Every decoder of an
	 * icache, workers of one decoder or decoders of their own, therefore
	 * takes turns here (uncontended, a lock per segment costs nothing);
	 * the FAST engine's own segments still decode in parallel. */
	pthread_mutex_lock(&ic->ipt_lock);
	err = seg_ipt_once(dec, s, how);
	pthread_mutex_unlock(&ic->ipt_lock);
	return err;
}
