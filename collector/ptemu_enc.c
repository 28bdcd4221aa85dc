/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptemu_enc.c - the PT emulator's encoder core: control-flow
 * events of one thread in, the Intel PT packets a CPU tracing that thread's
 * user space (IA32_RTIT_CTL.OS=0, USER=1, BranchEn=1) would write out,
 * serialised by libipt's pt_enc_next().
 *
 * The rules followed are those of the SDM's Intel PT chapter (table
 * "Packet Generation under Different Enable Conditions") for a CPU whose
 * tracing is filtered to CPL 3:
 *   - conditional branches and compressed returns are TNT bits, buffered up
 *     to 47 and flushed as a short (<= 6 bits) or long TNT before any packet
 *     that must follow them in order;
 *   - indirect branches and uncompressed returns are TIP with the target,
 *     IP-compressed against the last IP sent (reset by PSB and OVF);
 *   - a near RET whose target is the return address of the matching CALL
 *     seen since the last PSB is compressed to one taken TNT bit unless
 *     noretcomp; the call stack model is libipt's (64 entries, oldest
 *     dropped, no entry for "call next instruction");
 *   - SYSCALL leaves the traced context: TIP.PGD with the IP suppressed (the
 *     target is at CPL 0); an exception or interrupt is FUP(source) then
 *     TIP.PGD(); the return to user space is TIP.PGE(target), preceded by
 *     MODE.Exec when none was sent since the last PSB;
 *   - PSB+ (PSB, TSC, TMA, CBR, MODE.Exec, FUP when tracing, PSBEND) starts
 *     the stream and repeats every psb_period bytes;
 *   - MTC when the crystal clock crosses a 2^mtc_period boundary, CYC before
 *     every CYC-eligible packet, from the deterministic clock (see
 *     docs/pt-emulator.md);
 *   - with address filters ("Filtering by IP"), whose crossings the owner
 *     announces: TIP.PGD with the first IP outside instead of the packet of
 *     the branch (or fall-through) that leaves, TIP.PGE with the first IP
 *     inside, nothing while outside, TIP.PGD + TraceStop into a TraceStop
 *     range.
 * Nothing here allocates after init: it runs once per basic block.
 */
#include "collector/ptemu_int.h"

#include <errno.h>
#include <string.h>

#include "common/hwt.h"

void hwt_ptemu_cpu_default(struct hwt_ptemu_cpu *cpu)
{
	memset(cpu, 0, sizeof(*cpu));
	/* Skylake-SP (Xeon Scalable), a PT-capable model with MTC, CYC and
	 * return compression, and known to libipt's errata table. */
	cpu->family = 6;
	cpu->model = 85;
	cpu->stepping = 4;
	cpu->nom_freq = 21; /* 2.1 GHz TSC */
	cpu->cbr = 21;	    /* core clock = TSC clock: 1 cycle = 1 tick */
	/* 25 MHz crystal: TSC/ART = 168/2 = 84, an integer so that MTC times
	 * are exact ticks of the emulated TSC. */
	cpu->cpuid15_eax = 2;
	cpu->cpuid15_ebx = 168;
}

void hwt_ptemu_ptconfig(struct pt_config *cfg, const struct hwt_ptemu_terms *terms,
			const struct hwt_ptemu_cpu *cpu)
{
	pt_config_init(cfg);
	cfg->cpu.vendor = pcv_intel;
	cfg->cpu.family = cpu->family;
	cfg->cpu.model = cpu->model;
	cfg->cpu.stepping = cpu->stepping;
	pt_cpu_errata(&cfg->errata, &cfg->cpu);
	cfg->cpuid_0x15_eax = cpu->cpuid15_eax;
	cfg->cpuid_0x15_ebx = cpu->cpuid15_ebx;
	cfg->nom_freq = cpu->nom_freq;
	cfg->mtc_freq = terms->mtc_period;
}

static uint64_t tsc_ratio(const struct hwt_ptemu_enc *e)
{
	return e->cpu.cpuid15_ebx / e->cpu.cpuid15_eax;
}

static uint64_t next_mtc_tsc(const struct hwt_ptemu_enc *e, uint64_t mtc)
{
	return ((mtc + 1) << e->terms.mtc_period) * tsc_ratio(e);
}

static int new_window(struct hwt_ptemu_enc *e)
{
	struct hwt_ptemu_out *out = e->out;

	if (e->enc) {
		pt_free_encoder(e->enc);
		e->enc = NULL;
	}
	if (out->end - out->pos < HWT_PTEMU_MAX_EMIT)
		return -HWT_EINTERNAL;
	e->ptcfg.begin = out->pos;
	e->ptcfg.end = out->end;
	e->enc = pt_alloc_encoder(&e->ptcfg);
	return e->enc ? 0 : -ENOMEM;
}

static int room(struct hwt_ptemu_enc *e)
{
	int err;

	if (e->out->end - e->out->pos >= HWT_PTEMU_MAX_EMIT)
		return 0;
	err = e->out->next(e->out);
	if (err < 0)
		return err;
	return new_window(e);
}

static int emit(struct hwt_ptemu_enc *e, const struct pt_packet *p)
{
	int n, err;

	/* An overflow: the CPU's internal buffers are full and packets are
	 * dropped until it resolves (term ovf). */
	if (e->ovf_left)
		return 0;
	err = room(e);
	if (err < 0)
		return err;
	n = pt_enc_next(e->enc, p);
	if (n < 0)
		return -HWT_EINTERNAL;
	e->out->pos += n;
	e->n.bytes += (uint64_t)n;
	return 0;
}

static int emit_simple(struct hwt_ptemu_enc *e, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	return emit(e, &p);
}

/* The SDM's IP compression: send only the bytes that differ from the last
 * IP; the first IP after PSB or OVF is sent whole (sign-extended 48 bits
 * when canonical). */
static int emit_ip(struct hwt_ptemu_enc *e, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet p;
	uint64_t last = e->last_ip;
	int err;

	memset(&p, 0, sizeof(p));
	p.type = type;
	if (e->have_ip && (ip >> 16) == (last >> 16)) {
		p.payload.ip.ipc = pt_ipc_update_16;
		p.payload.ip.ip = ip & 0xffffull;
	} else if (e->have_ip && (ip >> 32) == (last >> 32)) {
		p.payload.ip.ipc = pt_ipc_update_32;
		p.payload.ip.ip = ip & 0xffffffffull;
	} else if (e->have_ip && (ip >> 48) == (last >> 48)) {
		p.payload.ip.ipc = pt_ipc_update_48;
		p.payload.ip.ip = ip & 0xffffffffffffull;
	} else if ((uint64_t)((int64_t)(ip << 16) >> 16) == ip) {
		p.payload.ip.ipc = pt_ipc_sext_48;
		p.payload.ip.ip = ip & 0xffffffffffffull;
	} else {
		p.payload.ip.ipc = pt_ipc_full;
		p.payload.ip.ip = ip;
	}
	err = emit(e, &p);
	if (err < 0)
		return err;
	e->last_ip = ip;
	e->have_ip = true;
	return 0;
}

static int emit_pgd(struct hwt_ptemu_enc *e)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_tip_pgd;
	p.payload.ip.ipc = pt_ipc_suppressed;
	return emit(e, &p);
}

/* CYC: core cycles (= TSC ticks, CBR equals nom_freq) from the last CYC
 * up to `until`. */
static int emit_cyc_raw(struct hwt_ptemu_enc *e, uint64_t until)
{
	struct pt_packet p;

	if (!e->terms.cyc || until <= e->last_cyc)
		return 0;
	memset(&p, 0, sizeof(p));
	p.type = ppt_cyc;
	p.payload.cyc.value = until - e->last_cyc;
	e->last_cyc = until;
	return emit(e, &p);
}

static int emit_tnt_raw(struct hwt_ptemu_enc *e)
{
	struct pt_packet p;

	if (!e->ntnt)
		return 0;
	memset(&p, 0, sizeof(p));
	p.type = e->ntnt <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	p.payload.tnt.bit_size = (uint8_t)e->ntnt;
	p.payload.tnt.payload = e->tnt;
	e->tnt = 0;
	e->ntnt = 0;
	return emit(e, &p);
}

/* MTC when the crystal clock crossed a 2^mtc_period boundary by `until`.
 * We notice it at a block boundary, a few instructions late, so anything
 * timed is emitted up to the tick first (pending TNT with CYC to the tick),
 * and the decoder's time (the tick's, after MTC) never goes back. */
static int emit_mtc_due(struct hwt_ptemu_enc *e, uint64_t until)
{
	struct pt_packet p;
	uint64_t mtc, tick;
	int err;

	if (!e->terms.mtc || until < e->next_mtc)
		return 0;
	mtc = until / tsc_ratio(e) >> e->terms.mtc_period;
	tick = (mtc << e->terms.mtc_period) * tsc_ratio(e);
	if (e->ntnt) {
		err = emit_cyc_raw(e, tick);
		if (err >= 0)
			err = emit_tnt_raw(e);
		if (err < 0)
			return err;
	}
	err = emit_cyc_raw(e, tick);
	if (err < 0)
		return err;
	memset(&p, 0, sizeof(p));
	p.type = ppt_mtc;
	p.payload.mtc.ctc = (uint8_t)mtc;
	err = emit(e, &p);
	if (err < 0)
		return err;
	e->last_mtc = mtc;
	e->next_mtc = next_mtc_tsc(e, mtc);
	return 0;
}

/* Timing before a CYC-eligible packet: a due MTC, then CYC up to now. */
static int emit_cyc(struct hwt_ptemu_enc *e)
{
	uint64_t now = hwt_ptemu_tsc(e, e->n.insns);
	int err = emit_mtc_due(e, now);

	return err < 0 ? err : emit_cyc_raw(e, now);
}

static int flush_tnt(struct hwt_ptemu_enc *e)
{
	int err;

	if (!e->ntnt)
		return 0;
	err = emit_cyc(e);
	return err < 0 ? err : emit_tnt_raw(e);
}

static int add_tnt(struct hwt_ptemu_enc *e, bool taken)
{
	e->tnt = (e->tnt << 1) | (taken ? 1u : 0u);
	if (++e->ntnt == 47)
		return flush_tnt(e);
	return 0;
}

static void truth(struct hwt_ptemu_enc *e, enum hwt_ptemu_truth_kind kind, uint64_t ip,
		  uint64_t target)
{
	struct hwt_ptemu_truth t;

	if (!e->truth || e->ovf_left)
		return;
	t.kind = kind;
	t.ip = ip;
	t.target = target;
	e->truth(e->truth_ctx, &t);
}

static void retstack_reset(struct hwt_ptemu_enc *e)
{
	e->rtop = 0;
	e->rbottom = 0;
}

static uint64_t psb_period(const struct hwt_ptemu_enc *e)
{
	return e->terms.psb_bytes ? e->terms.psb_bytes : 2048ull << e->terms.psb_period;
}

static int emit_mode_exec(struct hwt_ptemu_enc *e)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	return emit(e, &p);
}

/* PSB+: the synchronisation point a decoder can start from, with the
 * packets a CPU puts in it: TSC, TMA, CBR, MODE.TSX (a CPU with TSX),
 * then, while packet generation is on, MODE.Exec and the FUP with the IP
 * of the next instruction; PIP (CR3) and VMCS (a VMX guest). While it is
 * off (in the kernel, for a user-only trace) there is no MODE.Exec and no
 * FUP, as the real traces in tests/data/real-pt show: the TIP.PGE that
 * follows brings its own MODE.Exec. IP compression and return compression
 * restart here. */
static int psb_plus_ex(struct hwt_ptemu_enc *e, uint64_t ip, bool on)
{
	struct pt_packet p;
	uint64_t tsc = hwt_ptemu_tsc(e, e->n.insns);
	uint64_t ctc = tsc / tsc_ratio(e);
	int err;

	err = flush_tnt(e);
	if (err < 0)
		return err;
	e->next_psb = hwt_ptemu_enc_offset(e) + psb_period(e);
	err = emit_simple(e, ppt_psb);
	if (err < 0)
		return err;
	memset(&p, 0, sizeof(p));
	if (e->terms.tsc) {
		p.type = ppt_tsc;
		p.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
		err = emit(e, &p);
		if (err < 0)
			return err;
	}
	if (e->terms.tsc && e->terms.mtc) {
		/* TMA relates the TSC to the crystal clock: CTC at the TSC and
		 * the TSC ticks since that CTC tick. */
		memset(&p, 0, sizeof(p));
		p.type = ppt_tma;
		p.payload.tma.ctc = (uint16_t)(ctc & 0xffff);
		p.payload.tma.fc = (uint16_t)(tsc - ctc * tsc_ratio(e));
		err = emit(e, &p);
		if (err < 0)
			return err;
	}
	memset(&p, 0, sizeof(p));
	p.type = ppt_cbr;
	p.payload.cbr.ratio = e->cpu.cbr;
	err = emit(e, &p);
	if (err < 0)
		return err;
	if (e->terms.tsx) {
		/* Not in a transaction: InTX = TXAbort = 0. */
		memset(&p, 0, sizeof(p));
		p.type = ppt_mode;
		p.payload.mode.leaf = pt_mol_tsx;
		err = emit(e, &p);
		if (err < 0)
			return err;
	}
	e->have_ip = false;
	e->last_ip = 0;
	retstack_reset(e);
	e->mode_sent = on;
	e->last_cyc = tsc;
	e->last_mtc = ctc >> e->terms.mtc_period;
	e->next_mtc = next_mtc_tsc(e, e->last_mtc);
	if (on) {
		err = emit_mode_exec(e);
		if (err >= 0)
			err = emit_ip(e, ppt_fup, ip);
		if (err < 0)
			return err;
	}
	if (e->terms.pip) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_pip;
		p.payload.pip.cr3 = e->cr3;
		p.payload.pip.nr = e->terms.vmcs;
		err = emit(e, &p);
		if (err < 0)
			return err;
	}
	if (e->terms.vmcs) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_vmcs;
		p.payload.vmcs.base = HWT_PTEMU_VMCS;
		err = emit(e, &p);
		if (err < 0)
			return err;
	}
	err = emit_simple(e, ppt_psbend);
	if (err < 0)
		return err;
	e->n.psb++;
	return 0;
}

static int psb_plus(struct hwt_ptemu_enc *e, uint64_t ip)
{
	return psb_plus_ex(e, ip, e->enabled);
}

int hwt_ptemu_enc_init(struct hwt_ptemu_enc *e, const struct hwt_ptemu_terms *terms,
		       const struct hwt_ptemu_cpu *cpu, struct hwt_ptemu_out *out, uint64_t tsc0)
{
	memset(e, 0, sizeof(*e));
	if (terms->mtc_period > 15 || terms->psb_period > 15 || !terms->tsc_per_insn ||
	    (terms->psb_bytes && terms->psb_bytes < 256) || terms->psb_off > 64 ||
	    !cpu->cpuid15_eax || cpu->cpuid15_ebx < cpu->cpuid15_eax)
		return -HWT_EINVAL;
	e->terms = *terms;
	e->cpu = *cpu;
	hwt_ptemu_ptconfig(&e->ptcfg, terms, cpu);
	e->out = out;
	e->tsc0 = tsc0;
	e->cr3 = HWT_PTEMU_CR3;
	e->next_ovf = terms->ovf ? terms->ovf * 1024ull : UINT64_MAX;
	return new_window(e);
}

void hwt_ptemu_enc_fini(struct hwt_ptemu_enc *e)
{
	if (!e)
		return;
	pt_free_encoder(e->enc);
	e->enc = NULL;
}

/* An injected overflow (term ovf) starts at a block boundary right after a
 * branch that wrote a packet (a TNT bit, flushed now, or a TIP: a decoder
 * then meets the OVF right after that branch and decodes nothing of what
 * was lost), and loses the trace of OVF_BLOCKS blocks;
 * then the CPU writes what SDM's "Overflow" section prescribes: OVF, and
 * FUP with the IP where tracing resumes (the first IP after OVF is sent
 * whole, the decoder's return stack starts empty). */
#define OVF_BLOCKS 16

/* Instructions the current overflow lost: those it saw retire while
 * packet generation was on (the others were untraced anyway). */
static uint64_t ovf_lost(const struct hwt_ptemu_enc *e)
{
	return (e->n.insns - e->ovf_start) - (e->n.outside - e->ovf_outside);
}

static int overflow(struct hwt_ptemu_enc *e, uint64_t ip)
{
	int err;

	if (!e->ovf_left) {
		err = flush_tnt(e);
		if (err < 0)
			return err;
		truth(e, HWT_PTEMU_T_OVF, ip, 0);
		e->ovf_left = OVF_BLOCKS;
		e->ovf_start = e->n.insns;
		e->ovf_outside = e->n.outside;
		return 0;
	}
	if (--e->ovf_left)
		return 0;
	e->n.ovf++;
	e->n.ovf_insns += ovf_lost(e);
	e->next_ovf = hwt_ptemu_enc_offset(e) + e->terms.ovf * 1024ull;
	/* What the decoder knew is gone: TNT bits held while overflowing
	 * were dropped with their packets. */
	e->tnt = 0;
	e->ntnt = 0;
	err = emit_simple(e, ppt_ovf);
	if (err < 0)
		return err;
	e->have_ip = false;
	e->last_ip = 0;
	retstack_reset(e);
	truth(e, HWT_PTEMU_T_ENABLE, 0, ip);
	return emit_ip(e, ppt_fup, ip);
}

int hwt_ptemu_enc_at(struct hwt_ptemu_enc *e, uint64_t ip)
{
	bool after_packet = e->branch_pkt;
	int err;

	e->branch_pkt = false;
	if (e->ovf_left || (after_packet && hwt_ptemu_enc_offset(e) >= e->next_ovf))
		return overflow(e, ip);
	err = emit_mtc_due(e, hwt_ptemu_tsc(e, e->n.insns));
	if (err < 0)
		return err;
	if (hwt_ptemu_enc_offset(e) >= e->next_psb)
		return psb_plus(e, ip);
	return 0;
}

/* Packet generation starts at ip: from the kernel (a return to user
 * space, the thread's start) or on entering the filter's ranges. */
static int enable(struct hwt_ptemu_enc *e, uint64_t ip, bool from_kernel)
{
	int err;

	if (e->enabled || e->stopped)
		return -HWT_EINTERNAL;
	if (!e->started) {
		/* Tracing is switched on in the kernel, before the thread
		 * first runs in user space: PSB+ without FUP (with vmentry
		 * the VM entry's own PSB+ below is the first). */
		e->started = true;
		err = from_kernel && e->terms.vmentry ? 0 : psb_plus(e, 0);
		if (err < 0)
			return err;
	} else if (!e->ovf_left && from_kernel) {
		/* Term psb_off: PSB+ after PSB+ while packet generation is
		 * off, as the real traces show in the kernel's stretches
		 * (every VM entry with TraceEn set writes one). */
		for (uint32_t i = 0; i < e->terms.psb_off; i++) {
			err = psb_plus(e, 0);
			if (err < 0)
				return err;
		}
	}
	if (from_kernel && e->terms.vmentry && !e->ovf_left) {
		/* Term vmentry: a VM entry with TraceEn set (kAFL, the
		 * real-pt trace dyn_test) writes PSB+ with MODE.Exec and a FUP
		 * at the IP (erratum BDM70: they should not be there), then
		 * TIP.PGE at the same IP. The CPU's IP compression does not
		 * count that FUP (nor does libipt, which ignores it under
		 * BDM70): the TIP.PGE has its IP whole. */
		err = psb_plus_ex(e, ip, true);
		if (err < 0)
			return err;
		e->have_ip = false;
		e->last_ip = 0;
	}
	if (!e->mode_sent) {
		err = emit_mode_exec(e);
		if (err < 0)
			return err;
		e->mode_sent = true;
	}
	err = emit_cyc(e);
	if (err < 0)
		return err;
	err = emit_ip(e, ppt_tip_pge, ip);
	if (err < 0)
		return err;
	e->enabled = true;
	truth(e, HWT_PTEMU_T_ENABLE, 0, ip);
	return hwt_ptemu_enc_at(e, ip);
}

int hwt_ptemu_enc_enable(struct hwt_ptemu_enc *e, uint64_t ip)
{
	return enable(e, ip, true);
}

int hwt_ptemu_enc_filter_enter(struct hwt_ptemu_enc *e, uint64_t ip)
{
	return enable(e, ip, false);
}

void hwt_ptemu_enc_filter_exit(struct hwt_ptemu_enc *e, uint64_t target, bool stop)
{
	e->leave = e->enabled;
	e->leave_to = target;
	e->leave_stop = stop;
}

static int trace_stop(struct hwt_ptemu_enc *e, uint64_t at)
{
	truth(e, HWT_PTEMU_T_STOP, 0, at);
	e->stopped = true;
	return emit_simple(e, ppt_stop);
}

/* The announced exit, at the branch (or instruction) at ip: TIP.PGD with
 * the first IP outside, which tells a decoder where the traced code
 * ended (libipt binds it to the branch whose target it is, or to the
 * next branch that needs trace; perf's decoder, given the filter, to a
 * branch whose target is outside). */
static int leave(struct hwt_ptemu_enc *e, uint64_t ip)
{
	int err;

	truth(e, HWT_PTEMU_T_LEAVE, ip, e->leave_to);
	e->leave = false;
	e->n.leaves++;
	err = flush_tnt(e);
	if (err >= 0)
		err = emit_cyc(e);
	if (err >= 0)
		err = emit_ip(e, ppt_tip_pgd, e->leave_to);
	e->enabled = false;
	if (err >= 0 && e->leave_stop)
		err = trace_stop(e, e->leave_to);
	return err;
}

int hwt_ptemu_enc_filter_flush(struct hwt_ptemu_enc *e, uint64_t ip)
{
	return e->leave ? leave(e, ip) : 0;
}

int hwt_ptemu_enc_trace_stop(struct hwt_ptemu_enc *e)
{
	if (e->enabled || e->stopped)
		return -HWT_EINTERNAL;
	return trace_stop(e, 0);
}

int hwt_ptemu_enc_cond(struct hwt_ptemu_enc *e, uint64_t ip, bool taken)
{
	if (!e->enabled)
		return 0;
	if (e->leave)
		return leave(e, ip);
	truth(e, HWT_PTEMU_T_COND, ip, taken);
	e->branch_pkt = true;
	e->n.cond++;
	e->n.taken += taken;
	return add_tnt(e, taken);
}

void hwt_ptemu_enc_call(struct hwt_ptemu_enc *e, uint64_t ret_ip)
{
	/* libipt's pt_retstack_push(): a ring of HWT_PTEMU_RETSTACK + 1
	 * slots, the oldest entry dropped when full. A decoder pushes the
	 * calls it decodes: those made while packet generation is on,
	 * including one that leaves the filter's ranges. */
	if (!e->enabled)
		return;
	e->ret[e->rtop] = ret_ip;
	e->rtop = (uint8_t)(e->rtop == HWT_PTEMU_RETSTACK ? 0 : e->rtop + 1);
	if (e->rtop == e->rbottom)
		e->rbottom = (uint8_t)(e->rbottom == HWT_PTEMU_RETSTACK ? 0 : e->rbottom + 1);
}

int hwt_ptemu_enc_indirect(struct hwt_ptemu_enc *e, uint64_t ip, uint64_t target)
{
	int err;

	if (!e->enabled)
		return 0;
	if (e->leave)
		return leave(e, ip);
	truth(e, HWT_PTEMU_T_INDIRECT, ip, target);
	e->branch_pkt = true;
	e->n.indirect++;
	err = flush_tnt(e);
	if (err < 0)
		return err;
	err = emit_cyc(e);
	if (err < 0)
		return err;
	return emit_ip(e, ppt_tip, target);
}

int hwt_ptemu_enc_ret(struct hwt_ptemu_enc *e, uint64_t ip, uint64_t target)
{
	int err;

	if (!e->enabled)
		return 0;
	if (e->leave)
		return leave(e, ip); /* no pop: a decoder pops compressed returns only */
	truth(e, HWT_PTEMU_T_RET, ip, target);
	e->branch_pkt = true;
	if (!e->terms.noretcomp && e->rtop != e->rbottom) {
		uint8_t top = (uint8_t)(e->rtop ? e->rtop - 1 : HWT_PTEMU_RETSTACK);

		if (e->ret[top] == target) {
			e->rtop = top;
			e->n.ret_comp++;
			return add_tnt(e, true);
		}
	}
	e->n.ret_tip++;
	err = flush_tnt(e);
	if (err < 0)
		return err;
	err = emit_cyc(e);
	if (err < 0)
		return err;
	return emit_ip(e, ppt_tip, target);
}

int hwt_ptemu_enc_syscall(struct hwt_ptemu_enc *e, uint64_t ip)
{
	int err;

	e->leave = false;
	if (!e->enabled)
		return 0;
	truth(e, HWT_PTEMU_T_SYSCALL, ip, 0);
	e->n.kernel++;
	err = flush_tnt(e);
	if (err < 0)
		return err;
	err = emit_cyc(e);
	if (err < 0)
		return err;
	e->enabled = false;
	return emit_pgd(e);
}

int hwt_ptemu_enc_event(struct hwt_ptemu_enc *e, uint64_t ip, bool fault)
{
	int err;

	e->leave = false;
	if (!e->enabled)
		return 0;
	truth(e, fault ? HWT_PTEMU_T_FAULT : HWT_PTEMU_T_ASYNC, ip, 0);
	e->n.kernel++;
	e->n.faults++;
	err = flush_tnt(e);
	if (err < 0)
		return err;
	err = emit_cyc(e);
	if (err < 0)
		return err;
	err = emit_ip(e, ppt_fup, ip);
	if (err < 0)
		return err;
	e->enabled = false;
	return emit_pgd(e);
}

int hwt_ptemu_enc_lost(struct hwt_ptemu_enc *e, uint64_t ip)
{
	int err;

	e->leave = false;
	if (!e->enabled)
		return 0;
	truth(e, HWT_PTEMU_T_LOST, ip, 0);
	e->n.kernel++;
	e->n.lost++;
	err = flush_tnt(e);
	if (err < 0)
		return err;
	err = emit_simple(e, ppt_ovf);
	if (err < 0)
		return err;
	/* After OVF the decoder knows neither the last IP nor the calls. */
	e->have_ip = false;
	e->last_ip = 0;
	retstack_reset(e);
	e->enabled = false;
	return 0;
}

int hwt_ptemu_enc_flush(struct hwt_ptemu_enc *e)
{
	int err = flush_tnt(e);

	if (e->ovf_left) {
		/* The trace ends while overflowing: what ran since is lost. */
		e->n.ovf_insns += ovf_lost(e);
		e->ovf_start = e->n.insns;
		e->ovf_outside = e->n.outside;
	}

	if (err < 0)
		return err;
	err = e->out->next(e->out);
	if (err < 0)
		return err;
	return new_window(e);
}

int hwt_ptemu_close_stream(const struct hwt_ptemu_filehdr *hdr, uint8_t *buf, size_t cap)
{
	struct pt_config cfg;
	struct pt_encoder *enc;
	struct pt_packet p;
	uint64_t off = 0;
	int err = 0;

	if (hdr->in_kernel || !hdr->cur_ip)
		return 0;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + cap;
	enc = pt_alloc_encoder(&cfg);
	if (!enc)
		return -ENOMEM;
	if (hdr->pend_ntnt) {
		memset(&p, 0, sizeof(p));
		p.type = hdr->pend_ntnt <= 6 ? ppt_tnt_8 : ppt_tnt_64;
		p.payload.tnt.bit_size = (uint8_t)hdr->pend_ntnt;
		p.payload.tnt.payload = hdr->pend_tnt;
		err = pt_enc_next(enc, &p);
	}
	if (err >= 0) {
		/* A whole IP: it does not depend on the last IP sent. */
		memset(&p, 0, sizeof(p));
		p.type = ppt_fup;
		p.payload.ip.ipc = pt_ipc_sext_48;
		p.payload.ip.ip = hdr->cur_ip & 0xffffffffffffull;
		err = pt_enc_next(enc, &p);
	}
	if (err >= 0) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_tip_pgd;
		p.payload.ip.ipc = pt_ipc_suppressed;
		err = pt_enc_next(enc, &p);
	}
	if (err >= 0)
		err = pt_enc_get_offset(enc, &off);
	pt_free_encoder(enc);
	return err < 0 ? -HWT_EINTERNAL : (int)off;
}
