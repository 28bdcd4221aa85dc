/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/eng_ptxed.c - the PTXED engine: libipt's block decoder run over
 * the whole stream exactly as the `ptxed` tool runs it (sync forward, drain
 * events, next block, diagnose and resync on error), so that `hwtrace script
 * --format=ptxed` reproduces ptxed's output. Blocks are libipt's blocks;
 * there are no call stacks in this mode. libipt's block boundaries depend
 * on its block cache, which lives in the shared image sections: decoders
 * sharing an icache may see different block boundaries (the instructions
 * are the same), and libipt's image reorders its sections on every read,
 * so two decoders must not share one. Each run therefore reads the code
 * through images and sections of its own, in a section cache of its own
 * that keeps them mapped, as one ptxed process does: a stitched per-CPU
 * recording, whose lanes run at once, decodes the same every time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/dec_int.h"

struct ptxed_run {
	struct hwt_dec *dec;
	struct pt_block_decoder *blk;
	struct hwt_dec_context ctx;
	uint64_t time; /* the last event's tsc (ptxed's `time`) */
	bool time_valid;
	/* libipt runs with end-on-jump/call (which the user may not have
	 * asked for) so that an endless loop of direct branches comes back to
	 * us; blocks it ended only for that are joined again (held) to give
	 * ptxed's blocks. */
	bool own_jump, own_call;
	struct pt_block held;
	uint64_t held_off;
	bool have_held;
	unsigned int direct_run;
	/* hwtrace's images and the libipt images of our own for them */
	struct own_image {
		uint64_t of; /* the image's id (a freed image's address may
			      * come back) */
		struct pt_image *ipt;
	} * own;
	size_t nown, cap_own;
	struct pt_image_section_cache *isc; /* their sections */
};

static int flush_held(struct ptxed_run *r);

/* Points the block decoder at img, read through our own libipt image. */
static int set_image(struct ptxed_run *r, const struct hwt_dec_image *img)
{
	struct pt_image *pi = NULL;
	int err;

	for (size_t i = 0; i < r->nown && !pi; i++)
		if (r->own[i].of == img->id)
			pi = r->own[i].ipt;
	if (!pi) {
		if (r->nown == r->cap_own) {
			size_t cap = r->cap_own ? 2 * r->cap_own : 4;
			struct own_image *n = realloc(r->own, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			r->own = n;
			r->cap_own = cap;
		}
		if (!r->isc && !(r->isc = hwt_dec_iscache_alloc()))
			return -ENOMEM;
		if (!(pi = hwt_dec_image_ipt_own(img, r->isc)))
			return -ENOMEM;
		r->own[r->nown].of = img->id;
		r->own[r->nown++].ipt = pi;
	}
	err = pt_blk_set_image(r->blk, pi);
	return err < 0 ? hwt_dec_err_from_pt(err) : 0;
}

static void rec_init(struct ptxed_run *r, struct hwt_dec_rec *rec, uint32_t type)
{
	memset(rec, 0, sizeof(*rec));
	rec->type = type;
	rec->pid = r->ctx.pid;
	rec->tid = r->ctx.tid;
}

static uint64_t blk_offset(struct ptxed_run *r, bool *ok)
{
	uint64_t off = 0;
	int err = pt_blk_get_offset(r->blk, &off);

	if (ok)
		*ok = err >= 0;
	return err < 0 ? 0 : off;
}

/* ptxed's diagnose_block(): the ip at which an error is reported is the
 * block's ip when it is empty, else its last instruction's, or for
 * -pte_nomap/-pte_bad_insn the instruction after it (following a direct
 * branch, as XED's next-ip does). */
static int diagnose(struct ptxed_run *r, bool sync, int status, const struct pt_block *block)
{
	struct hwt_dec_rec rec;
	uint64_t ip;
	bool ok;

	if (!block->ninsn) {
		ip = block->ip;
	} else {
		ip = block->end_ip;
		if (status == -pte_nomap || status == -pte_bad_insn) {
			struct hwt_dec_insn insn;
			int err = -1;

			if (block->truncated && block->size) {
				err = hwt_dec_ild(r->dec->icache, block->raw, block->size, ip,
						  hwt_dec_mode_from_pt(block->mode), &insn);
			} else if (r->ctx.image) {
				err = hwt_dec_insn_decode(r->ctx.image, ip,
							  hwt_dec_mode_from_pt(block->mode), &insn);
			}
			if (err == 0)
				ip = insn.has_target ? insn.target : ip + insn.size;
		}
	}
	rec_init(r, &rec, HWT_DEC_REC_GAP);
	rec.offset = blk_offset(r, &ok);
	if (!ok)
		rec.flags |= HWT_DEC_RF_IP_SUPPRESSED; /* offset unknown */
	rec.u.gap.kind = sync ? HWT_DEC_GAP_SYNC : HWT_DEC_GAP_ERROR;
	rec.u.gap.err = hwt_dec_err_from_pt(status);
	rec.u.gap.what = pt_errstr(pt_errcode(status));
	rec.u.gap.ip = ip;
	rec.u.gap.sync = sync;
	return hwt_dec_emit(r->dec, &rec);
}

/* A sideband note where the hook was asked. */
static int emit_note(struct ptxed_run *r, uint64_t note)
{
	struct hwt_dec_rec rec;

	if (!note)
		return 0;
	rec_init(r, &rec, HWT_DEC_REC_NOTE);
	rec.u.note.cookie = note;
	return hwt_dec_emit(r->dec, &rec);
}

/* Applies the context current at an event's time (sideband). */
static int apply_context(struct ptxed_run *r, const struct pt_event *ev,
			 const struct hwt_dec_event *e)
{
	struct hwt_dec_context ctx;
	struct hwt_dec_context_query q;
	int err;

	if (!r->dec->cfg.context)
		return 0;
	/* libipt-sb goes by the event's tsc even without wall-clock time. */
	q.tsc = ev->tsc;
	q.has_tsc = ev->has_tsc;
	q.event = e;
	q.ip_suppressed = ev->ip_suppressed;
	q.status_update = ev->status_update;
	err = hwt_dec_context_at(r->dec, &q, &ctx);
	if (err < 0)
		return err;
	if (ctx.image != r->ctx.image && ctx.image && (err = set_image(r, ctx.image)) < 0)
		return err;
	r->ctx = ctx;
	return emit_note(r, ctx.note);
}

/* ptxed's drain_events_block(). Returns the libipt status or a negative
 * libipt error; *serr receives a sink error. */
static int drain(struct ptxed_run *r, int status, int *serr)
{
	while (status & pts_event_pending) {
		struct pt_event ev;
		struct hwt_dec_rec rec;
		struct hwt_dec_event e;
		uint64_t off = blk_offset(r, NULL);

		*serr = flush_held(r);
		if (*serr < 0)
			return -pte_internal;
		status = pt_blk_event(r->blk, &ev, sizeof(ev));
		if (status < 0)
			return status;
		r->time = ev.tsc;
		r->time_valid = ev.has_tsc;
		rec_init(r, &rec, HWT_DEC_REC_EVENT);
		rec.offset = off;
		rec.tsc = ev.tsc;
		if (ev.has_tsc)
			rec.flags |= HWT_DEC_RF_TIME;
		if (ev.status_update)
			rec.flags |= HWT_DEC_RF_STATUS;
		if (ev.ip_suppressed)
			rec.flags |= HWT_DEC_RF_IP_SUPPRESSED;
		hwt_dec_event_from_pt(&rec.u.event, &ev);
		if (ev.type == ptev_overflow)
			r->dec->stats.overflows++;
		*serr = hwt_dec_emit(r->dec, &rec);
		if (*serr < 0)
			return -pte_internal;
		e = rec.u.event;
		if (ev.type == ptev_overflow && !ev.status_update) {
			/* Trace was lost: a gap of unknown size. */
			rec.type = HWT_DEC_REC_GAP;
			rec.flags &= ~(uint32_t)(HWT_DEC_RF_STATUS | HWT_DEC_RF_IP_SUPPRESSED);
			memset(&rec.u, 0, sizeof(rec.u));
			rec.u.gap.kind = HWT_DEC_GAP_OVERFLOW;
			rec.u.gap.what = "trace lost (overflow)";
			rec.u.gap.ip = ev.ip_suppressed ? 0 : ev.variant.overflow.ip;
			*serr = hwt_dec_emit(r->dec, &rec);
			if (*serr < 0)
				return -pte_internal;
		}
		*serr = apply_context(r, &ev, &e);
		if (*serr < 0)
			return -pte_internal;
	}
	return status;
}

static int emit_block(struct ptxed_run *r, const struct pt_block *b, uint64_t off);

/* The target of b's last instruction when it is a direct jump or call
 * that ended b only because of our flags, else 0. */
static uint64_t own_end(struct ptxed_run *r, const struct pt_block *b)
{
	struct hwt_dec_insn insn;

	if (!b->ninsn || b->truncated || !r->ctx.image ||
	    !((b->iclass == ptic_jump && r->own_jump) || (b->iclass == ptic_call && r->own_call)))
		return 0;
	if (hwt_dec_insn_decode(r->ctx.image, b->end_ip, hwt_dec_mode_from_pt(b->mode), &insn) < 0)
		return 0;
	if ((insn.branch != HWT_DEC_BR_JUMP && insn.branch != HWT_DEC_BR_CALL) || !insn.has_target)
		return 0;
	return insn.target;
}

static int flush_held(struct ptxed_run *r)
{
	if (!r->have_held)
		return 0;
	r->have_held = false;
	return emit_block(r, &r->held, r->held_off);
}

/* A block from libipt: joined to the held one when libipt would have
 * gone on (same section and mode, the held one ended at a direct branch
 * to here); held when it may go on. */
static int take_block(struct ptxed_run *r, const struct pt_block *b, uint64_t off)
{
	uint64_t target;

	if (r->have_held) {
		target = own_end(r, &r->held);
		if (target && b->ip == target && b->isid == r->held.isid &&
		    b->mode == r->held.mode && b->speculative == r->held.speculative &&
		    (uint32_t)r->held.ninsn + b->ninsn <= UINT16_MAX) {
			r->held.ninsn = (uint16_t)(r->held.ninsn + b->ninsn);
			r->held.end_ip = b->end_ip;
			r->held.iclass = b->iclass;
			r->held.truncated = b->truncated;
			r->held.size = b->size;
			memcpy(r->held.raw, b->raw, sizeof(b->raw));
			r->direct_run++;
		} else {
			int err = flush_held(r);

			if (err < 0)
				return err;
			r->held = *b;
			r->held_off = off;
			r->direct_run = 0;
		}
	} else {
		r->held = *b;
		r->held_off = off;
		r->direct_run = 0;
	}
	r->have_held = true;
	if (own_end(r, &r->held) && r->held.ninsn < UINT16_MAX)
		return 0;
	return flush_held(r);
}

static int emit_block(struct ptxed_run *r, const struct pt_block *b, uint64_t off)
{
	struct hwt_dec_rec rec;

	r->dec->stats.blocks++;
	r->dec->stats.insns += b->ninsn;
	rec_init(r, &rec, HWT_DEC_REC_BLOCK);
	rec.offset = off;
	rec.tsc = r->time;
	if (r->time_valid)
		rec.flags |= HWT_DEC_RF_TIME;
	if (b->speculative)
		rec.flags |= HWT_DEC_RF_SPECULATIVE;
	if (b->truncated)
		rec.flags |= HWT_DEC_RF_TRUNCATED;
	rec.u.block.ip = b->ip;
	rec.u.block.end_ip = b->end_ip;
	rec.u.block.ninsn = b->ninsn;
	/* libipt's iclass depends on its block cache (shared, so on what
	 * was decoded before): classify the last instruction ourselves. */
	rec.u.block.branch = (uint8_t)hwt_dec_branch_from_iclass(b->iclass);
	if (b->ninsn && !b->truncated && r->ctx.image) {
		struct hwt_dec_insn insn;

		if (hwt_dec_insn_decode(r->ctx.image, b->end_ip, hwt_dec_mode_from_pt(b->mode),
					&insn) == 0)
			rec.u.block.branch =
			    insn.branch == HWT_DEC_BR_NONE ? HWT_DEC_BR_OTHER : insn.branch;
	}
	rec.u.block.mode = (uint8_t)hwt_dec_mode_from_pt(b->mode);
	rec.u.block.image = r->ctx.image;
	if (b->truncated) {
		rec.u.block.raw = b->raw;
		rec.u.block.raw_size = b->size;
	}
	return hwt_dec_emit(r->dec, &rec);
}

int hwt_dec_run_ptxed(struct hwt_dec *dec, const uint8_t *buf, size_t len)
{
	struct ptxed_run r;
	struct pt_config cfg = dec->ptcfg;
	struct pt_block block;
	uint64_t sync = 0;
	int serr = 0, err;

	memset(&r, 0, sizeof(r));
	r.dec = dec;
	if (dec->errata_err < 0 && !dec->errata_reported) {
		struct hwt_dec_rec rec;

		dec->errata_reported = true;
		rec_init(&r, &rec, HWT_DEC_REC_GAP);
		rec.u.gap.kind = HWT_DEC_GAP_CONFIG;
		rec.u.gap.err = hwt_dec_err_from_pt(dec->errata_err);
		rec.u.gap.what = pt_errstr(pt_errcode(dec->errata_err));
		err = hwt_dec_emit(dec, &rec);
		if (err < 0)
			return err;
	}
	if (!len)
		return 0;
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	if (HWT_DEC_CAN_END_ON_JUMP(&cfg)) {
		r.own_jump = !cfg.flags.variant.block.end_on_jump;
		r.own_call = !cfg.flags.variant.block.end_on_call;
		cfg.flags.variant.block.end_on_jump = 1;
		cfg.flags.variant.block.end_on_call = 1;
	}
	r.blk = pt_blk_alloc_decoder(&cfg);
	if (!r.blk)
		return -ENOMEM;
	{
		struct hwt_dec_context_query q = {0, false, NULL, false, false};

		err = hwt_dec_context_at(dec, &q, &r.ctx);
		if (err == 0)
			err = emit_note(&r, r.ctx.note);
	}
	if (err < 0)
		goto out;
	if (r.ctx.image && (err = set_image(&r, r.ctx.image)) < 0)
		goto out;
	memset(&block, 0, sizeof(block));
	for (;;) {
		int status;

		block.ip = 0;
		block.ninsn = 0;
		status = pt_blk_sync_forward(r.blk);
		if (status < 0) {
			uint64_t new_sync;

			if (status == -pte_eos)
				break;
			err = diagnose(&r, true, status, &block);
			if (err < 0)
				goto out;
			/* No progress means we never will: stop (as ptxed). */
			if (pt_blk_get_offset(r.blk, &new_sync) < 0 || new_sync <= sync)
				break;
			sync = new_sync;
			continue;
		}
		dec->stats.segments++;
		for (;;) {
			uint64_t off;

			status = drain(&r, status, &serr);
			if (serr < 0) {
				err = serr;
				goto out;
			}
			if (status < 0)
				break;
			if (status & pts_eos) {
				err = flush_held(&r);
				if (err < 0)
					goto out;
				if (!(status & pts_ip_suppressed)) {
					struct hwt_dec_rec rec;

					rec_init(&r, &rec, HWT_DEC_REC_EVENT);
					rec.u.event.type = HWT_DEC_EV_END;
					err = hwt_dec_emit(dec, &rec);
					if (err < 0)
						goto out;
				}
				status = -pte_eos;
				break;
			}
			off = blk_offset(&r, NULL);
			status = pt_blk_next(r.blk, &block, sizeof(block));
			if (status < 0) {
				/* Some instructions may have decoded; ptxed
				 * shows the block they make. */
				if (block.ninsn) {
					err = take_block(&r, &block, off);
					if (err < 0)
						goto out;
				}
				if (r.have_held) {
					block = r.held;
					err = flush_held(&r);
					if (err < 0)
						goto out;
				}
				break;
			}
			err = take_block(&r, &block, off);
			if (err < 0)
				goto out;
			if (r.direct_run > HWT_DEC_MAX_DIRECT_RUN) {
				/* Where ptxed would never come back. */
				struct hwt_dec_rec rec;

				block = r.held;
				err = flush_held(&r);
				if (err < 0)
					goto out;
				rec_init(&r, &rec, HWT_DEC_REC_GAP);
				rec.offset = blk_offset(&r, NULL);
				rec.u.gap.kind = HWT_DEC_GAP_ERROR;
				rec.u.gap.err = -HWT_EDECODE;
				rec.u.gap.what = HWT_DEC_ENDLESS_WHAT;
				rec.u.gap.ip = block.end_ip;
				err = hwt_dec_emit(dec, &rec);
				if (err < 0)
					goto out;
				status = 0;
				break;
			}
		}
		r.direct_run = 0;
		if (status == 0)
			continue; /* resynchronize at the next PSB */
		if (status == -pte_eos)
			break;
		err = diagnose(&r, false, status, &block);
		if (err < 0)
			goto out;
	}
	err = 0;
out:
	pt_blk_free_decoder(r.blk);
	for (size_t i = 0; i < r.nown; i++)
		pt_image_free(r.own[i].ipt);
	free(r.own);
	if (r.isc)
		pt_iscache_free(r.isc);
	return err;
}
