/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptprint/ptprint.c - decoded PT records as text (see ptprint.h): perf
 * script's --itrace views and --flow, ptxed's output, and the records field
 * by field. Text is built in a buffer handed to the caller's write callback
 * every 64 KiB; a block's instructions come from hwt_dec_block_insns(), so
 * every engine prints the same flow.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptprint/ptprint.h"

#define FLUSH_AT (64u * 1024u)

struct hwt_ptp {
	struct hwt_ptp_config cfg;
	struct hwt_buf out;
	int err;	 /* the first write error: printing stops */
	uint64_t blocks; /* ptxed's [block N] numbering */
	uint64_t *ips;	 /* a block's instructions */
	size_t capips;
};

void hwt_ptp_config_init(struct hwt_ptp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

int hwt_ptp_parse_itrace(const char *letters, uint32_t *views)
{
	static const char names[] = "ibcrev";
	uint32_t v = 0;

	if (!letters || !views)
		return -HWT_EINVAL;
	for (const char *s = letters; *s; s++) {
		const char *at = strchr(names, *s);

		if (!at)
			return -HWT_EINVAL;
		v |= 1u << (at - names);
	}
	*views = v;
	return 0;
}

int hwt_ptp_alloc(struct hwt_ptp **out, const struct hwt_ptp_config *cfg)
{
	struct hwt_ptp *p;
	int err;

	if (!out)
		return -HWT_EINVAL;
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	hwt_ptp_config_init(&p->cfg);
	err = hwt_opts_copy(&p->cfg, sizeof(p->cfg), cfg);
	if (err == 0 && (!p->cfg.write || p->cfg.format > HWT_PTP_RECORDS ||
			 (p->cfg.views & ~(uint32_t)0x3f) || (p->cfg.ptxed & ~(uint32_t)0x1ff)))
		err = -HWT_EINVAL;
	if (err < 0) {
		free(p);
		return err;
	}
	hwt_buf_init(&p->out);
	*out = p;
	return 0;
}

void hwt_ptp_free(struct hwt_ptp *p)
{
	if (!p)
		return;
	hwt_buf_fini(&p->out);
	free(p->ips);
	free(p);
}

int hwt_ptp_flush(struct hwt_ptp *p)
{
	if (!p->err && p->out.len)
		p->err = p->cfg.write(p->cfg.ctx, (const char *)p->out.data, p->out.len);
	p->out.len = 0;
	return p->err;
}

/* ------------------------------------------------------------------------ */
/* Text                                                                      */

static void put(struct hwt_ptp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends formatted text; errors (out of memory) are kept in p->err. */
static void put(struct hwt_ptp *p, const char *fmt, ...)
{
	va_list ap;
	size_t room;
	int n;

	if (p->err)
		return;
	room = p->out.cap - p->out.len;
	va_start(ap, fmt);
	n = vsnprintf(room ? (char *)p->out.data + p->out.len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->err = -HWT_EINTERNAL;
		return;
	}
	if ((size_t)n >= room) {
		int err = hwt_buf_reserve(&p->out, (size_t)n + 1);

		if (err < 0) {
			p->err = err;
			return;
		}
		va_start(ap, fmt);
		vsnprintf((char *)p->out.data + p->out.len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	p->out.len += (size_t)n;
}

static void put_str(struct hwt_ptp *p, const char *s)
{
	put(p, "%s", s);
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */

static const char *mode_name(uint32_t mode)
{
	switch (mode) {
	case HWT_DEC_MODE_16:
		return "16-bit";
	case HWT_DEC_MODE_32:
		return "32-bit";
	case HWT_DEC_MODE_64:
		return "64-bit";
	default:
		return "<unknown>";
	}
}

static const char *branch_name(uint8_t br)
{
	switch (br) {
	case HWT_DEC_BR_COND:
		return "jcc";
	case HWT_DEC_BR_JUMP:
		return "jmp";
	case HWT_DEC_BR_IND_JUMP:
		return "jmp-indirect";
	case HWT_DEC_BR_CALL:
		return "call";
	case HWT_DEC_BR_IND_CALL:
		return "call-indirect";
	case HWT_DEC_BR_RETURN:
		return "ret";
	case HWT_DEC_BR_FAR_CALL:
		return "far-call";
	case HWT_DEC_BR_FAR_RETURN:
		return "far-ret";
	case HWT_DEC_BR_FAR_JUMP:
		return "far-jmp";
	default:
		return NULL;
	}
}

static const char *event_name(uint32_t type)
{
	static const char *names[] = {
	    [HWT_DEC_EV_ENABLED] = "enabled",
	    [HWT_DEC_EV_DISABLED] = "disabled",
	    [HWT_DEC_EV_ASYNC_DISABLED] = "disabled",
	    [HWT_DEC_EV_ASYNC_BRANCH] = "interrupt",
	    [HWT_DEC_EV_PAGING] = "paging",
	    [HWT_DEC_EV_ASYNC_PAGING] = "paging",
	    [HWT_DEC_EV_OVERFLOW] = "overflow",
	    [HWT_DEC_EV_EXEC_MODE] = "exec-mode",
	    [HWT_DEC_EV_TSX] = "tsx",
	    [HWT_DEC_EV_STOP] = "stopped",
	    [HWT_DEC_EV_VMCS] = "vmcs",
	    [HWT_DEC_EV_ASYNC_VMCS] = "vmcs",
	    [HWT_DEC_EV_EXSTOP] = "exstop",
	    [HWT_DEC_EV_MWAIT] = "mwait",
	    [HWT_DEC_EV_PWRE] = "pwre",
	    [HWT_DEC_EV_PWRX] = "pwrx",
	    [HWT_DEC_EV_PTWRITE] = "ptwrite",
	    [HWT_DEC_EV_TICK] = "tick",
	    [HWT_DEC_EV_CBR] = "cbr",
	    [HWT_DEC_EV_MNT] = "mnt",
	    [HWT_DEC_EV_END] = "end-of-trace",
	};

	if (type < HWT_ARRAY_SIZE(names) && names[type])
		return names[type];
	return "event";
}

static const char *gap_kind(uint32_t kind)
{
	switch (kind) {
	case HWT_DEC_GAP_ERROR:
		return "decode error";
	case HWT_DEC_GAP_SYNC:
		return "no sync";
	case HWT_DEC_GAP_OVERFLOW:
		return "overflow";
	case HWT_DEC_GAP_LOST:
		return "trace lost";
	case HWT_DEC_GAP_CONFIG:
		return "configuration";
	default:
		return "gap";
	}
}

/* ------------------------------------------------------------------------ */
/* Views (perf script's --itrace letters, --flow)                            */

/* Whether the block's branch was taken (perf's 'b' lists taken ones). */
static bool taken(const struct hwt_dec_rec *rec)
{
	if ((rec->flags & HWT_DEC_RF_PARTIAL) || !rec->u.block.ninsn)
		return false;
	switch (rec->u.block.branch) {
	case HWT_DEC_BR_COND:
		return (rec->flags & HWT_DEC_RF_TAKEN) != 0;
	case HWT_DEC_BR_JUMP:
	case HWT_DEC_BR_IND_JUMP:
	case HWT_DEC_BR_CALL:
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

/* A time column: the perf clock with a conversion, else the TSC, right
 * aligned in the same width; "?" without time. */
static void put_time(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	int width = p->cfg.ns ? 20 : 17;
	uint64_t t = rec->time;

	if (!(rec->flags & HWT_DEC_RF_TIME))
		put(p, "%*s", width, "?");
	else if (!p->cfg.tconv.valid)
		put(p, "%*" PRIu64, width, rec->tsc);
	else if (p->cfg.ns)
		put(p, "%10" PRIu64 ".%09" PRIu64, t / 1000000000u, t % 1000000000u);
	else
		put(p, "%10" PRIu64 ".%06" PRIu64, t / 1000000000u, (t % 1000000000u) / 1000u);
}

/* "COMM PID/TID TIME: " */
static void put_prefix(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	if (p->cfg.comm) {
		const char *comm = p->cfg.comm(p->cfg.ctx, rec->tid, rec->time);

		put(p, "%16s ", comm ? comm : "[unknown]");
	}
	if (rec->tid < 0)
		put(p, "%6s/%-6s ", "-", "-");
	else
		put(p, "%6" PRId32 "/%-6" PRId32 " ", rec->pid, rec->tid);
	put_time(p, rec);
	put_str(p, ": ");
}

/* "ADDR func+0xOFF (object)", or "ADDR" without a symbolizer. */
static void put_addr(struct hwt_ptp *p, const struct hwt_dec_rec *rec, uint64_t ip)
{
	struct hwt_ptp_sym sym = {0};

	put(p, "%16" PRIx64, ip);
	if (!p->cfg.symbolize)
		return;
	if (p->cfg.symbolize(p->cfg.ctx, rec->pid, rec->time, ip, &sym) == 0 && sym.function)
		put(p, " %s+0x%" PRIx64, sym.function, sym.offset);
	else
		put_str(p, " [unknown]");
	put(p, " (%s)", sym.object ? sym.object : "[unknown]");
}

/* "func (object)"; without a symbolizer or a symbol, the address. */
static void put_func(struct hwt_ptp *p, const struct hwt_dec_rec *rec, uint64_t ip)
{
	struct hwt_ptp_sym sym = {0};

	if (!p->cfg.symbolize) {
		put(p, "%016" PRIx64, ip);
		return;
	}
	if (p->cfg.symbolize(p->cfg.ctx, rec->pid, rec->time, ip, &sym) == 0 && sym.function)
		put_str(p, sym.function);
	else
		put(p, "[unknown %#" PRIx64 "]", ip);
	put(p, " (%s)", sym.object ? sym.object : "[unknown]");
}

static void put_gap(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	put(p, "%s: %s", gap_kind(rec->u.gap.kind),
	    rec->u.gap.what ? rec->u.gap.what : hwt_strerror(rec->u.gap.err));
	if (rec->u.gap.ip)
		put(p, " at %#" PRIx64, rec->u.gap.ip);
	put(p, " (offset %#" PRIx64, rec->offset);
	if (rec->u.gap.size)
		put(p, ", %" PRIu64 " bytes", rec->u.gap.size);
	put_str(p, ")\n");
}

/* A frame's duration: perf clock units with a conversion, TSC ticks
 * without; "?" when either end has no time. */
static void put_duration(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	const struct hwt_dec_tconv *tc = &p->cfg.tconv;
	uint64_t a, b, d;

	if (!(rec->flags & HWT_DEC_RF_TIME) || !rec->u.ret.call_tsc ||
	    (rec->flags & HWT_DEC_RF_UNKNOWN_FRAME) || rec->tsc < rec->u.ret.call_tsc) {
		put_str(p, "?");
		return;
	}
	if (!tc->valid) {
		put(p, "%" PRIu64 " tsc", rec->tsc - rec->u.ret.call_tsc);
		return;
	}
	a = hwt_dec_tsc_to_perf(tc, rec->u.ret.call_tsc);
	b = hwt_dec_tsc_to_perf(tc, rec->tsc);
	d = b > a ? b - a : 0;
	if (d >= 1000000000u)
		put(p, "%.3f s", (double)d / 1e9);
	else if (d >= 1000000u)
		put(p, "%.3f ms", (double)d / 1e6);
	else if (d >= 1000u)
		put(p, "%.3f us", (double)d / 1e3);
	else
		put(p, "%" PRIu64 " ns", d);
}

static int grow_ips(struct hwt_ptp *p, size_t n)
{
	uint64_t *v;

	if (n <= p->capips)
		return 0;
	v = realloc(p->ips, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->ips = v;
	p->capips = n;
	return 0;
}

static void views_block(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	if ((p->cfg.views & HWT_PTP_INSN) && rec->u.block.ninsn) {
		int n;

		if ((p->err = grow_ips(p, rec->u.block.ninsn)) < 0)
			return;
		n = hwt_dec_block_insns(rec, p->ips, rec->u.block.ninsn);
		for (int i = 0; i < n; i++) {
			put_prefix(p, rec);
			put_str(p, "insn: ");
			put_addr(p, rec, p->ips[i]);
			put_str(p, "\n");
		}
	}
	if ((p->cfg.views & HWT_PTP_BRANCH) && taken(rec)) {
		put_prefix(p, rec);
		put_str(p, "branch: ");
		put_addr(p, rec, rec->u.block.end_ip);
		put_str(p, " => ");
		if (rec->u.block.next_ip)
			put_addr(p, rec, rec->u.block.next_ip);
		else
			put(p, "%16s", "?");
		put(p, " %s\n", branch_name(rec->u.block.branch));
	}
}

static void views_rec(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	uint32_t v = p->cfg.views;

	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		views_block(p, rec);
		break;
	case HWT_DEC_REC_CALL:
		if (!(v & HWT_PTP_CALL))
			break;
		put_prefix(p, rec);
		put_str(p, (rec->flags & HWT_DEC_RF_ASYNC) ? "interrupt: " : "call: ");
		put_addr(p, rec, rec->u.call.from);
		put_str(p, " => ");
		put_addr(p, rec, rec->u.call.to);
		put_str(p, "\n");
		break;
	case HWT_DEC_REC_RETURN:
		/* An unwound frame was left without a return instruction. */
		if (!(v & HWT_PTP_RETURN) || (rec->flags & HWT_DEC_RF_UNWOUND))
			break;
		put_prefix(p, rec);
		put_str(p, "return: ");
		put_addr(p, rec, rec->u.ret.from);
		put_str(p, " => ");
		put_addr(p, rec, rec->u.ret.to);
		put_str(p, "\n");
		break;
	case HWT_DEC_REC_GAP:
		if (!(v & HWT_PTP_ERROR))
			break;
		put_prefix(p, rec);
		put_gap(p, rec);
		break;
	case HWT_DEC_REC_EVENT:
		if (!(v & HWT_PTP_EVENT) || (rec->flags & HWT_DEC_RF_STATUS))
			break;
		put_prefix(p, rec);
		put(p, "event: %s", event_name(rec->u.event.type));
		if (rec->u.event.ip && !(rec->flags & HWT_DEC_RF_IP_SUPPRESSED)) {
			put_str(p, " at ");
			put_addr(p, rec, rec->u.event.ip);
		}
		put_str(p, "\n");
		break;
	case HWT_DEC_REC_SWITCH:
		if (!(v & HWT_PTP_EVENT))
			break;
		put_prefix(p, rec);
		put(p, "switch: from %" PRId32 "/%" PRId32 "\n", rec->u.sw.prev_pid,
		    rec->u.sw.prev_tid);
		break;
	default:
		break;
	}
}

static void flow_rec(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	uint32_t depth;

	switch (rec->type) {
	case HWT_DEC_REC_CALL:
		depth = rec->depth ? rec->depth - 1 : 0;
		put_prefix(p, rec);
		put(p, "%*s-> ", (int)(2 * depth), "");
		put_func(p, rec, rec->u.call.to);
		if (rec->flags & HWT_DEC_RF_ASYNC)
			put_str(p, " [interrupt]");
		put_str(p, "\n");
		break;
	case HWT_DEC_REC_RETURN:
		put_prefix(p, rec);
		put(p, "%*s<- ", (int)(2 * rec->depth), "");
		if (rec->u.ret.func && !(rec->flags & HWT_DEC_RF_UNKNOWN_FRAME))
			put_func(p, rec, rec->u.ret.func);
		else
			put_str(p, "[frame from before the trace]");
		put_str(p, " ");
		put_duration(p, rec);
		if (!(rec->flags & HWT_DEC_RF_UNKNOWN_FRAME))
			put(p, ", %" PRIu64 " insns", rec->u.ret.insns);
		if (rec->flags & HWT_DEC_RF_UNWOUND)
			put_str(p, " [unwound]");
		put_str(p, "\n");
		break;
	case HWT_DEC_REC_GAP:
		put_prefix(p, rec);
		put_str(p, "!! ");
		put_gap(p, rec);
		break;
	default:
		/* trace events and switches, when asked (v) */
		if (rec->type == HWT_DEC_REC_EVENT || rec->type == HWT_DEC_REC_SWITCH)
			views_rec(p, rec);
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* ptxed                                                                     */

static void ptxed_event(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	const struct hwt_dec_event *ev = &rec->u.event;
	uint32_t o = p->cfg.ptxed;
	bool evip = o & HWT_PTP_X_EVENT_IP;
	bool ipok = evip && !(rec->flags & HWT_DEC_RF_IP_SUPPRESSED);

	if (ev->type == HWT_DEC_EV_END) {
		put_str(p, "[end of trace]\n");
		return;
	}
	put_str(p, "[");
	if (o & HWT_PTP_X_OFFSET)
		put(p, "%016" PRIx64 "  ", rec->offset);
	if ((o & HWT_PTP_X_EVENT_TIME) && (rec->flags & HWT_DEC_RF_TIME))
		put(p, "%016" PRIx64 "  ", rec->tsc);
	switch (ev->type) {
	case HWT_DEC_EV_ENABLED:
		put_str(p, ev->resumed ? "resumed" : "enabled");
		if (evip)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_DISABLED:
		put_str(p, "disabled");
		if (ipok)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_ASYNC_DISABLED:
		put_str(p, "disabled");
		if (evip) {
			put(p, ", at: %016" PRIx64, ev->at);
			if (!(rec->flags & HWT_DEC_RF_IP_SUPPRESSED))
				put(p, ", ip: %016" PRIx64, ev->ip);
		}
		break;
	case HWT_DEC_EV_ASYNC_BRANCH:
		put_str(p, "interrupt");
		if (evip) {
			put(p, ", from: %016" PRIx64, ev->at);
			if (!(rec->flags & HWT_DEC_RF_IP_SUPPRESSED))
				put(p, ", to: %016" PRIx64, ev->ip);
		}
		break;
	case HWT_DEC_EV_PAGING:
		put(p, "paging, cr3: %016" PRIx64 "%s", ev->payload, ev->non_root ? ", nr" : "");
		break;
	case HWT_DEC_EV_ASYNC_PAGING:
		put(p, "paging, cr3: %016" PRIx64 "%s", ev->payload, ev->non_root ? ", nr" : "");
		if (evip)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_OVERFLOW:
		put_str(p, "overflow");
		if (ipok)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_EXEC_MODE:
		put(p, "exec mode: %s", mode_name(ev->mode));
		if (ipok)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_TSX:
		put_str(p, ev->tsx == 2	  ? "aborted"
			   : ev->tsx == 1 ? "begin transaction"
					  : "committed");
		if (ipok)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_STOP:
		put_str(p, "stopped");
		break;
	case HWT_DEC_EV_VMCS:
		put(p, "vmcs, base: %016" PRIx64, ev->payload);
		break;
	case HWT_DEC_EV_ASYNC_VMCS:
		put(p, "vmcs, base: %016" PRIx64, ev->payload);
		if (evip)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_EXSTOP:
		put_str(p, "exstop");
		if (ipok)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_MWAIT:
		put(p, "mwait %" PRIx32 " %" PRIx32, ev->mwait_hints, ev->mwait_ext);
		if (ipok)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_PWRE:
		put(p, "pwre c%u.%u", (ev->pwr_state + 1u) & 0xf, (ev->pwr_sub_state + 1u) & 0xf);
		if (ev->pwr_hw)
			put_str(p, " hw");
		break;
	case HWT_DEC_EV_PWRX:
		put_str(p, "pwrx ");
		if (ev->pwrx_why & 1)
			put_str(p, "int: ");
		if (ev->pwrx_why & 2)
			put_str(p, "st: ");
		if (ev->pwrx_why & 4)
			put_str(p, "hw: ");
		put(p, "c%u (c%u)", (ev->pwrx_last + 1u) & 0xf, (ev->pwrx_deepest + 1u) & 0xf);
		break;
	case HWT_DEC_EV_PTWRITE:
		put(p, "ptwrite: %" PRIx64, ev->payload);
		if (ipok)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_TICK:
		put_str(p, "tick");
		if (ipok)
			put(p, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_CBR:
		put(p, "cbr: %" PRIx64, ev->payload);
		break;
	case HWT_DEC_EV_MNT:
		put(p, "mnt: %" PRIx64, ev->payload);
		break;
	default:
		put(p, "event %u", ev->type);
		break;
	}
	put_str(p, "]\n");
}

/* One instruction line as ptxed prints it (without the newline). */
static void ptxed_insn(struct hwt_ptp *p, const struct hwt_dec_rec *rec, uint64_t ip,
		       const struct hwt_dec_insn *insn)
{
	uint32_t o = p->cfg.ptxed;

	if (o & HWT_PTP_X_OFFSET)
		put(p, "%016" PRIx64 "  ", rec->offset);
	if (o & HWT_PTP_X_TIME)
		put(p, "%016" PRIx64 "  ", rec->tsc);
	if (rec->flags & HWT_DEC_RF_SPECULATIVE)
		put_str(p, "? ");
	put(p, "%016" PRIx64, ip);
	if (insn && !(o & HWT_PTP_X_NO_INST)) {
		char text[160];
		unsigned int i;

		if (o & HWT_PTP_X_RAW_INSN) {
			for (i = 0; i < insn->size; i++)
				put(p, " %02x", insn->raw[i]);
			for (; i < 15; i++)
				put_str(p, "   ");
		}
		if (hwt_dec_insn_format(insn, text, sizeof(text)) >= 0)
			put(p, "  %s", text);
	}
}

/* A block's instructions, one line each. A PTXED-engine block (libipt's)
 * is walked in the code as ptxed walks it, with ptxed's messages where the
 * code cannot be read or the walk does not end at the block's last
 * instruction; a cached basic block knows its instructions. */
static void ptxed_block(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	const struct hwt_dec_image *img = rec->u.block.image;
	bool walked = !rec->u.block.bb;
	uint32_t ninsn = rec->u.block.ninsn;
	int n;

	p->blocks++;
	if (p->cfg.ptxed & HWT_PTP_X_SHOW_BLOCKS) {
		put_str(p, "[block");
		if (p->cfg.ptxed & HWT_PTP_X_BLOCK_NUM)
			put(p, " %" PRIx64, p->blocks);
		put_str(p, "]\n");
	}
	if (!ninsn)
		return;
	if ((p->err = grow_ips(p, ninsn)) < 0)
		return;
	n = hwt_dec_block_insns(rec, p->ips, ninsn);
	for (int k = 0; k < n; k++) {
		struct hwt_dec_insn insn;
		int err = img ? hwt_dec_insn_decode(img, p->ips[k],
						    (enum hwt_dec_mode)rec->u.block.mode, &insn)
			      : -HWT_ENOSYM;

		/* Without the text, ptxed still decodes (to find the next
		 * instruction of a walked block). */
		ptxed_insn(p, rec, p->ips[k], err == 0 ? &insn : NULL);
		if (err < 0 && walked) {
			put_str(p, err == -HWT_ENOSYM
				       ? " [fetch error: no memory mapped at this address]\n"
				       : " [xed decode error: invalid instruction]\n");
			n = k + 1;
			break;
		}
		put_str(p, "\n");
	}
	/* The walk must end at the block's last instruction. */
	if (walked && n > 0 && p->ips[n - 1] != rec->u.block.end_ip)
		put(p, "[%" PRIx64 ", %" PRIx64 ": reconstruct error: decoder out of sync]\n",
		    rec->offset, p->ips[n - 1]);
}

static void ptxed_gap(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	const char *what = rec->u.gap.what ? rec->u.gap.what : hwt_strerror(rec->u.gap.err);

	if (rec->u.gap.kind == HWT_DEC_GAP_CONFIG) {
		put(p, "[0, 0: config error: %s]\n", what);
		return;
	}
	if (rec->u.gap.kind == HWT_DEC_GAP_LOST) {
		put(p, "[%" PRIx64 ", 0: error: trace data lost]\n", rec->offset);
		return;
	}
	if (rec->u.gap.kind == HWT_DEC_GAP_OVERFLOW)
		return; /* ptxed shows the [overflow] event */
	if (rec->flags & HWT_DEC_RF_IP_SUPPRESSED)
		put(p, "[?, %" PRIx64 ": %s: %s]\n", rec->u.gap.ip,
		    rec->u.gap.sync ? "sync error" : "error", what);
	else
		put(p, "[%" PRIx64 ", %" PRIx64 ": %s: %s]\n", rec->offset, rec->u.gap.ip,
		    rec->u.gap.sync ? "sync error" : "error", what);
}

static void ptxed_rec(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	if (p->cfg.ptxed & HWT_PTP_X_QUIET)
		return;
	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		ptxed_block(p, rec);
		break;
	case HWT_DEC_REC_EVENT:
		if (!(rec->flags & HWT_DEC_RF_STATUS))
			ptxed_event(p, rec);
		break;
	case HWT_DEC_REC_GAP:
		ptxed_gap(p, rec);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* Records, field by field                                                   */

static void records_rec(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	put(p, "%u f=%x tid=%d d=%u n=%" PRIu64 " t=%" PRIx64 " off=%" PRIx64, rec->type,
	    rec->flags, rec->tid, rec->depth, rec->insns, rec->tsc, rec->offset);
	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		put(p, " block %" PRIx64 "-%" PRIx64 " n=%u next=%" PRIx64 " br=%u m=%u\n",
		    rec->u.block.ip, rec->u.block.end_ip, rec->u.block.ninsn, rec->u.block.next_ip,
		    rec->u.block.branch, rec->u.block.mode);
		break;
	case HWT_DEC_REC_CALL:
		put(p, " call %" PRIx64 "->%" PRIx64 " ret=%" PRIx64 "\n", rec->u.call.from,
		    rec->u.call.to, rec->u.call.ret_addr);
		break;
	case HWT_DEC_REC_RETURN:
		put(p,
		    " ret %" PRIx64 "->%" PRIx64 " func=%" PRIx64 " ct=%" PRIx64 " n=%" PRIu64 "\n",
		    rec->u.ret.from, rec->u.ret.to, rec->u.ret.func, rec->u.ret.call_tsc,
		    rec->u.ret.insns);
		break;
	case HWT_DEC_REC_EVENT:
		put(p, " event %u ip=%" PRIx64 " at=%" PRIx64 " p=%" PRIx64 " m=%u r=%u\n",
		    rec->u.event.type, rec->u.event.ip, rec->u.event.at, rec->u.event.payload,
		    rec->u.event.mode, rec->u.event.resumed);
		break;
	case HWT_DEC_REC_GAP:
		put(p, " gap %u %s ip=%" PRIx64 " size=%" PRIu64 "\n", rec->u.gap.kind,
		    rec->u.gap.what ? rec->u.gap.what : hwt_strerror(rec->u.gap.err), rec->u.gap.ip,
		    rec->u.gap.size);
		break;
	case HWT_DEC_REC_SWITCH:
		put(p, " switch %d/%d\n", rec->u.sw.prev_pid, rec->u.sw.prev_tid);
		break;
	case HWT_DEC_REC_NOTE:
		put_str(p, " note\n");
		break;
	default:
		put_str(p, "\n");
		break;
	}
}

/* ------------------------------------------------------------------------ */

uint32_t hwt_ptp_want(const struct hwt_ptp *p)
{
	uint32_t v = p->cfg.views, want;

	if (p->cfg.format != HWT_PTP_VIEWS)
		return HWT_DEC_WANT_ALL;
	want = HWT_DEC_WANT(HWT_DEC_REC_GAP);
	if (p->cfg.note)
		want |= HWT_DEC_WANT(HWT_DEC_REC_NOTE);
	if (v & HWT_PTP_EVENT)
		want |= HWT_DEC_WANT(HWT_DEC_REC_EVENT) | HWT_DEC_WANT(HWT_DEC_REC_SWITCH);
	if (p->cfg.flow)
		return want | HWT_DEC_WANT(HWT_DEC_REC_CALL) | HWT_DEC_WANT(HWT_DEC_REC_RETURN);
	if (v & (HWT_PTP_INSN | HWT_PTP_BRANCH))
		want |= HWT_DEC_WANT(HWT_DEC_REC_BLOCK);
	if (v & HWT_PTP_CALL)
		want |= HWT_DEC_WANT(HWT_DEC_REC_CALL);
	if (v & HWT_PTP_RETURN)
		want |= HWT_DEC_WANT(HWT_DEC_REC_RETURN);
	return want;
}

int hwt_ptp_print(struct hwt_ptp *p, const struct hwt_dec_rec *rec)
{
	if (p->err)
		return p->err;
	switch (p->cfg.format) {
	case HWT_PTP_PTXED:
		ptxed_rec(p, rec);
		break;
	case HWT_PTP_RECORDS:
		records_rec(p, rec);
		break;
	default:
		if (p->cfg.flow)
			flow_rec(p, rec);
		else
			views_rec(p, rec);
		break;
	}
	/* The sideband's text, in its place in the flow. */
	if (rec->type == HWT_DEC_REC_NOTE && p->cfg.note && !p->err) {
		int err = p->cfg.note(p->cfg.ctx, rec->u.note.cookie, &p->out);

		if (err < 0)
			p->err = err;
	}
	if (!p->err && p->out.len >= FLUSH_AT)
		return hwt_ptp_flush(p);
	return p->err;
}

static int sink_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	return hwt_ptp_print(ctx, rec);
}

void hwt_ptp_sink(struct hwt_ptp *p, struct hwt_dec_sink *sink)
{
	memset(sink, 0, sizeof(*sink));
	sink->size = sizeof(*sink);
	sink->want = hwt_ptp_want(p);
	sink->rec = sink_rec;
	sink->ctx = p;
}
