/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/decoder.c - the public decoder object: configuration, libipt
 * configuration and errata, sinks, statistics, and dispatch of a stream to
 * the selected engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/dec_int.h"
#include "decoder/flow.h"
#include "decoder/pkt.h"

void hwt_dec_config_init(struct hwt_dec_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->engine = HWT_DEC_ENGINE_FAST;
	cfg->window = 64;
	cfg->segment_bytes = 4096;
}

static int parse_num(const char **p, unsigned long *out)
{
	char *end;

	if (!**p || **p == '-' || **p == '+')
		return -HWT_EINVAL;
	errno = 0;
	*out = strtoul(*p, &end, 0);
	if (errno || end == *p)
		return -HWT_EINVAL;
	*p = end;
	return 0;
}

int hwt_dec_cpu_parse(struct hwt_dec_cpu *cpu, const char *text)
{
	unsigned long f, m, s = 0;
	const char *p = text;

	if (!cpu || !text)
		return -HWT_EINVAL;
	if (!strcmp(text, "none")) {
		memset(cpu, 0, sizeof(*cpu));
		return 0;
	}
	if (parse_num(&p, &f) < 0 || *p++ != '/' || parse_num(&p, &m) < 0)
		return -HWT_EINVAL;
	if (*p == '/') {
		p++;
		if (parse_num(&p, &s) < 0)
			return -HWT_EINVAL;
	}
	if (*p || f > UINT16_MAX || m > UINT8_MAX || s > UINT8_MAX)
		return -HWT_EINVAL;
	cpu->vendor = HWT_DEC_CPU_INTEL;
	cpu->family = (uint16_t)f;
	cpu->model = (uint8_t)m;
	cpu->stepping = (uint8_t)s;
	return 0;
}

uint64_t hwt_dec_tsc_to_perf(const struct hwt_dec_tconv *c, uint64_t tsc)
{
	if (!c || !c->valid)
		return tsc;
	return hwt_dec_tsc_perf(c, tsc);
}

uint64_t hwt_dec_perf_to_tsc(const struct hwt_dec_tconv *c, uint64_t time)
{
	uint64_t t, quot, rem;
	unsigned __int128 frac;

	if (!c || !c->valid || !c->time_mult || c->time_shift >= 64)
		return time;
	t = time - c->time_zero;
	quot = t / c->time_mult;
	rem = t % c->time_mult;
	/* Rounded up: the first TSC value at or after time. */
	frac = ((unsigned __int128)rem << c->time_shift) + c->time_mult - 1;
	return (quot << c->time_shift) + (uint64_t)(frac / c->time_mult);
}

int hwt_dec_alloc(struct hwt_dec **out, const struct hwt_dec_config *cfg,
		  struct hwt_dec_icache *icache)
{
	struct hwt_dec_config c;
	struct hwt_dec *dec;
	int err;

	if (!out || !icache)
		return -HWT_EINVAL;
	*out = NULL;
	hwt_dec_config_init(&c);
	if ((cfg && hwt_opts_copy(&c, sizeof(c), cfg) < 0) || c.engine > HWT_DEC_ENGINE_PTXED)
		return -HWT_EINVAL;
	dec = calloc(1, sizeof(*dec));
	if (!dec)
		return -ENOMEM;
	pthread_mutex_init(&dec->workers_lock, NULL);
	dec->cfg = c;
	if (!dec->cfg.window)
		dec->cfg.window = 64;
	if (!dec->cfg.segment_bytes)
		dec->cfg.segment_bytes = 4096;
	dec->icache = icache;
	dec->ctx.pid = dec->ctx.tid = -1;

	pt_config_init(&dec->ptcfg);
	dec->ptcfg.cpuid_0x15_eax = dec->cfg.cpuid_0x15_eax;
	dec->ptcfg.cpuid_0x15_ebx = dec->cfg.cpuid_0x15_ebx;
	dec->ptcfg.mtc_freq = dec->cfg.mtc_freq;
	dec->ptcfg.nom_freq = dec->cfg.nom_freq;
	dec->ptcfg.addr_filter.config.addr_cfg = dec->cfg.filter.addr_cfg;
	dec->ptcfg.addr_filter.addr0_a = dec->cfg.filter.addr_a[0];
	dec->ptcfg.addr_filter.addr0_b = dec->cfg.filter.addr_b[0];
	dec->ptcfg.addr_filter.addr1_a = dec->cfg.filter.addr_a[1];
	dec->ptcfg.addr_filter.addr1_b = dec->cfg.filter.addr_b[1];
	dec->ptcfg.addr_filter.addr2_a = dec->cfg.filter.addr_a[2];
	dec->ptcfg.addr_filter.addr2_b = dec->cfg.filter.addr_b[2];
	dec->ptcfg.addr_filter.addr3_a = dec->cfg.filter.addr_a[3];
	dec->ptcfg.addr_filter.addr3_b = dec->cfg.filter.addr_b[3];
	if (dec->cfg.flags & HWT_DEC_F_TICK)
		dec->ptcfg.flags.variant.block.enable_tick_events = 1;
	if (dec->cfg.engine == HWT_DEC_ENGINE_PTXED) {
		if (dec->cfg.flags & HWT_DEC_F_END_ON_CALL)
			dec->ptcfg.flags.variant.block.end_on_call = 1;
		if (dec->cfg.flags & HWT_DEC_F_END_ON_JUMP)
			dec->ptcfg.flags.variant.block.end_on_jump = 1;
	}
	if (dec->cfg.cpu.vendor) {
		dec->ptcfg.cpu.vendor = pcv_intel;
		dec->ptcfg.cpu.family = dec->cfg.cpu.family;
		dec->ptcfg.cpu.model = dec->cfg.cpu.model;
		dec->ptcfg.cpu.stepping = dec->cfg.cpu.stepping;
		/* An unknown CPU decodes without errata, as ptxed does; it
		 * is reported with the first records. */
		dec->errata_err = pt_cpu_errata(&dec->ptcfg.errata, &dec->ptcfg.cpu);
	}
	err = hwt_dec_flow_alloc(dec, &dec->flow);
	if (err < 0)
		goto error;
	*out = dec;
	return 0;
error:
	hwt_dec_free(dec);
	return err;
}

void hwt_dec_free(struct hwt_dec *dec)
{
	if (!dec)
		return;
	hwt_dec_flow_free(dec->flow);
	hwt_dec_image_put(dec->ctx.image);
	hwt_dec_workers_free(dec);
	pthread_mutex_destroy(&dec->workers_lock);
	free(dec->sinks);
	free(dec->carry);
	free(dec);
}

int hwt_dec_set_context(struct hwt_dec *dec, int32_t pid, int32_t tid, struct hwt_dec_image *image)
{
	if (!dec || (image && image->icache != dec->icache))
		return -HWT_EINVAL;
	hwt_dec_image_get(image);
	hwt_dec_image_put(dec->ctx.image);
	dec->ctx.pid = pid;
	dec->ctx.tid = tid;
	dec->ctx.image = image;
	return 0;
}

int hwt_dec_context_at(struct hwt_dec *dec, const struct hwt_dec_context_query *q,
		       struct hwt_dec_context *out)
{
	uint64_t note = 0;

	if (dec->cfg.context) {
		int err;

		memset(out, 0, sizeof(*out));
		err = dec->cfg.context(dec->cfg.context_ctx, q, out);
		if (err < 0)
			return err;
		if (out->image)
			return 0;
		note = out->note;
	}
	*out = dec->ctx;
	out->note = note;
	return 0;
}

int hwt_dec_context_span(struct hwt_dec *dec, uint64_t tsc_lo, uint64_t tsc_hi,
			 struct hwt_dec_context *out)
{
	int st;

	if (!dec->cfg.context || !dec->cfg.context_span)
		return 0;
	memset(out, 0, sizeof(*out));
	st = dec->cfg.context_span(dec->cfg.context_ctx, tsc_lo, tsc_hi, out);
	if (st <= 0)
		return st;
	if (out->note)
		return 0;
	if (!out->image)
		*out = dec->ctx;
	out->note = 0;
	return 1;
}

int hwt_dec_add_sink(struct hwt_dec *dec, const struct hwt_dec_sink *sink)
{
	struct hwt_dec_sink s = {0}, *p;

	if (!dec || !sink || hwt_opts_copy(&s, sizeof(s), sink) < 0 || !s.rec)
		return -HWT_EINVAL;
	sink = &s;
	p = realloc(dec->sinks, (dec->nsinks + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	dec->sinks = p;
	dec->sinks[dec->nsinks] = *sink;
	if (!dec->sinks[dec->nsinks].want)
		dec->sinks[dec->nsinks].want = HWT_DEC_WANT_ALL;
	dec->want |= dec->sinks[dec->nsinks].want;
	dec->nsinks++;
	return 0;
}

int hwt_dec_emit(struct hwt_dec *dec, struct hwt_dec_rec *rec)
{
	uint32_t bit = HWT_DEC_WANT(rec->type);

	if (rec->type == HWT_DEC_REC_GAP)
		dec->stats.gaps++;
	else if (rec->type == HWT_DEC_REC_EVENT)
		dec->stats.events++;
	if (!(dec->want & bit))
		return 0;
	if ((rec->flags & HWT_DEC_RF_TIME) && dec->cfg.tconv.valid)
		rec->time = hwt_dec_tsc_to_perf(&dec->cfg.tconv, rec->tsc);
	/* (The replay's own records leave it before they come here.) */
	if (dec->flow)
		hwt_dec_flow_leave_tree(dec->flow);
	if (dec->nsinks == 1)
		return dec->sinks[0].rec(dec->sinks[0].ctx, rec);
	for (size_t i = 0; i < dec->nsinks; i++) {
		int err;

		if (!(dec->sinks[i].want & bit))
			continue;
		err = dec->sinks[i].rec(dec->sinks[i].ctx, rec);
		if (err < 0)
			return err;
	}
	return 0;
}

enum hwt_dec_branch hwt_dec_branch_from_iclass(enum pt_insn_class iclass)
{
	switch (iclass) {
	case ptic_cond_jump:
		return HWT_DEC_BR_COND;
	case ptic_jump:
		return HWT_DEC_BR_JUMP;
	case ptic_call:
		return HWT_DEC_BR_CALL;
	case ptic_return:
		return HWT_DEC_BR_RETURN;
	case ptic_far_call:
		return HWT_DEC_BR_FAR_CALL;
	case ptic_far_return:
		return HWT_DEC_BR_FAR_RETURN;
	case ptic_far_jump:
		return HWT_DEC_BR_FAR_JUMP;
	case ptic_ptwrite:
		return HWT_DEC_BR_PTWRITE;
	case ptic_other:
		return HWT_DEC_BR_OTHER;
	default:
		return HWT_DEC_BR_NONE;
	}
}

enum hwt_dec_mode hwt_dec_mode_from_pt(enum pt_exec_mode mode)
{
	switch (mode) {
	case ptem_16bit:
		return HWT_DEC_MODE_16;
	case ptem_32bit:
		return HWT_DEC_MODE_32;
	case ptem_64bit:
		return HWT_DEC_MODE_64;
	default:
		return HWT_DEC_MODE_UNKNOWN;
	}
}

void hwt_dec_event_from_pt(struct hwt_dec_event *out, const struct pt_event *ev)
{
	memset(out, 0, sizeof(*out));
	switch (ev->type) {
	case ptev_enabled:
		out->type = HWT_DEC_EV_ENABLED;
		out->ip = ev->variant.enabled.ip;
		out->resumed = ev->variant.enabled.resumed;
		break;
	case ptev_disabled:
		out->type = HWT_DEC_EV_DISABLED;
		out->ip = ev->variant.disabled.ip;
		break;
	case ptev_async_disabled:
		out->type = HWT_DEC_EV_ASYNC_DISABLED;
		out->at = ev->variant.async_disabled.at;
		out->ip = ev->variant.async_disabled.ip;
		break;
	case ptev_async_branch:
		out->type = HWT_DEC_EV_ASYNC_BRANCH;
		out->at = ev->variant.async_branch.from;
		out->ip = ev->variant.async_branch.to;
		break;
	case ptev_paging:
		out->type = HWT_DEC_EV_PAGING;
		out->payload = ev->variant.paging.cr3;
		out->non_root = ev->variant.paging.non_root;
		break;
	case ptev_async_paging:
		out->type = HWT_DEC_EV_ASYNC_PAGING;
		out->payload = ev->variant.async_paging.cr3;
		out->non_root = ev->variant.async_paging.non_root;
		out->ip = ev->variant.async_paging.ip;
		break;
	case ptev_overflow:
		out->type = HWT_DEC_EV_OVERFLOW;
		out->ip = ev->variant.overflow.ip;
		break;
	case ptev_exec_mode:
		out->type = HWT_DEC_EV_EXEC_MODE;
		out->mode = hwt_dec_mode_from_pt(ev->variant.exec_mode.mode);
		out->ip = ev->variant.exec_mode.ip;
		break;
	case ptev_tsx:
		out->type = HWT_DEC_EV_TSX;
		out->ip = ev->variant.tsx.ip;
		out->tsx = ev->variant.tsx.aborted ? 2 : ev->variant.tsx.speculative ? 1 : 0;
		break;
	case ptev_stop:
		out->type = HWT_DEC_EV_STOP;
		break;
	case ptev_vmcs:
		out->type = HWT_DEC_EV_VMCS;
		out->payload = ev->variant.vmcs.base;
		break;
	case ptev_async_vmcs:
		out->type = HWT_DEC_EV_ASYNC_VMCS;
		out->payload = ev->variant.async_vmcs.base;
		out->ip = ev->variant.async_vmcs.ip;
		break;
	case ptev_exstop:
		out->type = HWT_DEC_EV_EXSTOP;
		out->ip = ev->variant.exstop.ip;
		break;
	case ptev_mwait:
		out->type = HWT_DEC_EV_MWAIT;
		out->ip = ev->variant.mwait.ip;
		out->mwait_hints = ev->variant.mwait.hints;
		out->mwait_ext = ev->variant.mwait.ext;
		break;
	case ptev_pwre:
		out->type = HWT_DEC_EV_PWRE;
		out->pwr_state = ev->variant.pwre.state;
		out->pwr_sub_state = ev->variant.pwre.sub_state;
		out->pwr_hw = ev->variant.pwre.hw;
		break;
	case ptev_pwrx:
		out->type = HWT_DEC_EV_PWRX;
		out->pwrx_last = ev->variant.pwrx.last;
		out->pwrx_deepest = ev->variant.pwrx.deepest;
		out->pwrx_why =
		    (uint8_t)(ev->variant.pwrx.interrupt | (ev->variant.pwrx.store << 1) |
			      (ev->variant.pwrx.autonomous << 2));
		break;
	case ptev_ptwrite:
		out->type = HWT_DEC_EV_PTWRITE;
		out->ip = ev->variant.ptwrite.ip;
		out->payload = ev->variant.ptwrite.payload;
		break;
	case ptev_tick:
		out->type = HWT_DEC_EV_TICK;
		out->ip = ev->variant.tick.ip;
		break;
	case ptev_cbr:
		out->type = HWT_DEC_EV_CBR;
		out->payload = ev->variant.cbr.ratio;
		break;
	case ptev_mnt:
		out->type = HWT_DEC_EV_MNT;
		out->payload = ev->variant.mnt.payload;
		break;
	}
}

/* Appends bytes to the carry. */
static int carry_add(struct hwt_dec *dec, const uint8_t *buf, size_t len)
{
	if (dec->carry_len + len > dec->carry_cap) {
		size_t cap = dec->carry_cap ? dec->carry_cap : 65536;
		uint8_t *p;

		while (cap < dec->carry_len + len)
			cap *= 2;
		p = realloc(dec->carry, cap);
		if (!p)
			return -ENOMEM;
		dec->carry = p;
		dec->carry_cap = cap;
	}
	if (len)
		memcpy(dec->carry + dec->carry_len, buf, len);
	dec->carry_len += len;
	return 0;
}

/* Bytes of a feed that join the carry before the rest is decoded in
 * place (run()). */
#define CARRY_JOIN (16u * 1024u)

/* Decodes the carry (and buf after it) as far as final says. */
static int run(struct hwt_dec *dec, const uint8_t *buf, size_t len, bool final)
{
	const uint8_t *work = buf;
	size_t wlen = len, keep = 0;
	int err;

	if (dec->cfg.engine != HWT_DEC_ENGINE_PTXED && dec->carry_len && !final &&
	    len > CARRY_JOIN) {
		/* A large feed after a carry (each piece of a recording's
		 * stream after the first): the carry and the feed's first
		 * bytes, then the rest from where that left off in buf
		 * itself, as if fed in two pieces, not the whole feed
		 * copied into the carry (page faults, PSB scans). */
		size_t old = dec->carry_len;

		err = carry_add(dec, buf, CARRY_JOIN);
		if (err < 0)
			return err;
		err = hwt_dec_run_segments(dec, dec->carry, dec->carry_len, false, &keep);
		if (err < 0)
			return err;
		dec->base_pos += keep;
		if (keep < old) {
			/* The carry's segment goes on: the old way. */
			memmove(dec->carry, dec->carry + keep, dec->carry_len - keep);
			dec->carry_len -= keep;
			buf += CARRY_JOIN;
			len -= CARRY_JOIN;
		} else {
			dec->carry_len = 0;
			buf += keep - old;
			len -= keep - old;
		}
		work = buf;
		wlen = len;
		keep = 0;
	}

	if (dec->cfg.engine == HWT_DEC_ENGINE_PTXED) {
		/* ptxed decodes one continuous buffer. */
		if (!final || dec->carry_len) {
			err = carry_add(dec, buf, len);
			if (err < 0 || !final)
				return err;
			work = dec->carry;
			wlen = dec->carry_len;
		}
		err = hwt_dec_run_ptxed(dec, work, wlen);
		dec->base_pos += wlen;
		dec->carry_len = 0;
		return err;
	}
	if (dec->carry_len) {
		size_t from =
		    dec->carry_len > HWT_PKT_PSB_SIZE ? dec->carry_len - HWT_PKT_PSB_SIZE : 0;
		bool in_seg = dec->carry_len >= HWT_PKT_PSB_SIZE &&
			      hwt_pkt_find_psb(dec->carry, HWT_PKT_PSB_SIZE, 0) == 0;

		err = carry_add(dec, buf, len);
		if (err < 0)
			return err;
		/* Inside a segment and no new PSB: nothing more can be
		 * decoded yet. */
		if (!final && in_seg &&
		    hwt_pkt_find_psb(dec->carry, dec->carry_len, from) >= dec->carry_len)
			return 0;
		work = dec->carry;
		wlen = dec->carry_len;
	}
	err = hwt_dec_run_segments(dec, work, wlen, final, &keep);
	if (err < 0)
		return err;
	if (final)
		keep = wlen;
	/* Keep what was not decoded. */
	if (work && work == dec->carry) {
		memmove(dec->carry, dec->carry + keep, wlen - keep);
		dec->carry_len = wlen - keep;
	} else if (wlen > keep) {
		err = carry_add(dec, work + keep, wlen - keep);
		if (err < 0)
			return err;
	}
	dec->base_pos += keep;
	return 0;
}

int hwt_dec_feed(struct hwt_dec *dec, const uint8_t *buf, size_t len)
{
	int err;

	if (!dec || (!buf && len))
		return -HWT_EINVAL;
	dec->stats.bytes += len;
	dec->stream_pos += len;
	err = run(dec, buf, len, false);
	if (err == 0)
		err = hwt_dec_flow_finish(dec->flow);
	return err;
}

int hwt_dec_finish(struct hwt_dec *dec)
{
	int err;

	if (!dec)
		return -HWT_EINVAL;
	err = run(dec, NULL, 0, true);
	if (err == 0)
		err = hwt_dec_flow_finish(dec->flow);
	return err;
}

int hwt_dec_decode(struct hwt_dec *dec, const uint8_t *buf, size_t len)
{
	int err;

	if (!dec || (!buf && len))
		return -HWT_EINVAL;
	dec->stats.bytes += len;
	dec->stream_pos += len;
	err = run(dec, buf, len, true);
	if (err == 0)
		err = hwt_dec_flow_finish(dec->flow);
	return err;
}

int hwt_dec_lost(struct hwt_dec *dec, uint64_t size)
{
	struct hwt_dec_rec rec;

	int err;

	if (!dec)
		return -HWT_EINVAL;
	/* What was given before the loss ends there. */
	err = hwt_dec_finish(dec);
	if (err < 0)
		return err;
	/* Decoding resumes at the next PSB afresh. */
	memset(&dec->state, 0, sizeof(dec->state));
	memset(&rec, 0, sizeof(rec));
	rec.type = HWT_DEC_REC_GAP;
	rec.pid = rec.tid = -1;
	rec.offset = dec->stream_pos;
	rec.u.gap.kind = HWT_DEC_GAP_LOST;
	rec.u.gap.err = -HWT_EDROPPED;
	rec.u.gap.what = "trace data lost";
	rec.u.gap.size = size;
	dec->stats.gap_bytes += size;
	hwt_dec_flow_gap(dec->flow);
	return hwt_dec_emit(dec, &rec);
}

void hwt_dec_stats(const struct hwt_dec *dec, struct hwt_dec_stats *stats)
{
	if (!stats)
		return;
	memset(stats, 0, sizeof(*stats));
	if (!dec)
		return;
	*stats = dec->stats;
	hwt_dec_flow_stats(dec->flow, stats);
}
