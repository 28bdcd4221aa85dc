/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_ptemu_enc.c - the PT emulator's encoder core and
 * sideband without qemu: synthetic control-flow events go in, and the
 * packets that come out (read back with libipt's packet decoder) must be
 * the ones the SDM prescribes: PSB+ contents, TNT packing and order, IP
 * compression, return compression with libipt's 64-entry stack, TIP.PGD on
 * syscalls, FUP+TIP.PGD on faults, OVF, periodic PSB+. Sideband records
 * must parse with format/'s perf record parser; terms must round-trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "collector/collector.h"
#include "collector/ptemu_int.h"
#include "format/format.h"
#include "tests/lib/testutil.h"

#include <stdlib.h>
#include <string.h>

/* A growable output for the encoder. */
struct memout {
	struct hwt_ptemu_out out;
	struct hwt_buf buf;
	uint8_t win[4096];
};

static int memout_next(struct hwt_ptemu_out *o)
{
	struct memout *m = o->ctx;
	size_t n = (size_t)(o->pos - o->begin);

	if (hwt_buf_append(&m->buf, o->begin, n) < 0)
		return -1;
	o->flushed += n;
	o->begin = o->pos = m->win;
	o->end = m->win + sizeof(m->win);
	return 0;
}

static void memout_init(struct memout *m)
{
	memset(m, 0, sizeof(*m));
	hwt_buf_init(&m->buf);
	m->out.begin = m->out.pos = m->win;
	m->out.end = m->win + sizeof(m->win);
	m->out.next = memout_next;
	m->out.ctx = m;
}

static void enc_setup(struct hwt_ptemu_enc *e, struct memout *m, const char *terms)
{
	struct hwt_ptemu_terms t;
	struct hwt_ptemu_cpu cpu;

	hwt_ptemu_terms_init(&t);
	if (terms)
		assert_int_equal(hwt_ptemu_terms_parse(&t, terms, NULL), 0);
	hwt_ptemu_cpu_default(&cpu);
	memout_init(m);
	assert_int_equal(hwt_ptemu_enc_init(e, &t, &cpu, &m->out, HWT_PTEMU_TSC0), 0);
}

/* All packets of the output. */
static size_t packets(struct hwt_ptemu_enc *e, struct memout *m, struct pt_packet *pk, size_t cap)
{
	struct pt_config cfg;
	struct pt_packet_decoder *d;
	size_t n = 0;

	assert_int_equal(hwt_ptemu_enc_flush(e), 0);
	pt_config_init(&cfg);
	cfg.begin = m->buf.data;
	cfg.end = m->buf.data + m->buf.len;
	d = pt_pkt_alloc_decoder(&cfg);
	assert_non_null(d);
	assert_true(pt_pkt_sync_set(d, 0) >= 0);
	while (n < cap) {
		int r = pt_pkt_next(d, &pk[n], sizeof(pk[n]));

		if (r == -pte_eos)
			break;
		assert_true(r > 0);
		n++;
	}
	pt_pkt_free_decoder(d);
	return n;
}

static void test_psb_tnt_tip(void **state)
{
	struct hwt_ptemu_enc e;
	struct memout m;
	struct pt_packet pk[64];
	size_t n, i = 0;

	(void)state;
	enc_setup(&e, &m, NULL);
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x401000), 0);
	hwt_ptemu_enc_retire(&e, 10);
	assert_int_equal(hwt_ptemu_enc_cond(&e, 0x401002, true), 0);
	assert_int_equal(hwt_ptemu_enc_cond(&e, 0x401004, false), 0);
	hwt_ptemu_enc_call(&e, 0x401009);
	assert_int_equal(hwt_ptemu_enc_ret(&e, 0x405000, 0x401009), 0); /* compressed */
	assert_int_equal(hwt_ptemu_enc_indirect(&e, 0x401010, 0x402000), 0);
	assert_int_equal(hwt_ptemu_enc_ret(&e, 0x402005, 0x7f0000401000), 0); /* no call */
	assert_int_equal(hwt_ptemu_enc_syscall(&e, 0x401020), 0);
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x401022), 0);
	assert_int_equal(hwt_ptemu_enc_event(&e, 0x401030, true), 0);
	n = packets(&e, &m, pk, 64);

	/* PSB+ at the start, with tracing off: no FUP. */
	assert_int_equal(pk[i++].type, ppt_psb);
	assert_int_equal(pk[i].type, ppt_tsc);
	assert_int_equal(pk[i++].payload.tsc.tsc, HWT_PTEMU_TSC0);
	assert_int_equal(pk[i].type, ppt_tma);
	assert_int_equal(pk[i].payload.tma.ctc, (HWT_PTEMU_TSC0 / 84) & 0xffff);
	assert_int_equal(pk[i++].payload.tma.fc, HWT_PTEMU_TSC0 % 84);
	assert_int_equal(pk[i].type, ppt_cbr);
	assert_int_equal(pk[i++].payload.cbr.ratio, 21);
	/* No MODE.Exec while packet generation is off (as real CPUs). */
	assert_int_equal(pk[i++].type, ppt_psbend);
	/* Tracing starts: MODE.Exec, then TIP.PGE; the first IP after PSB
	 * is whole. */
	assert_int_equal(pk[i].type, ppt_mode);
	assert_int_equal(pk[i++].payload.mode.bits.exec.csl, 1);
	assert_int_equal(pk[i].type, ppt_tip_pge);
	assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_sext_48);
	assert_int_equal(pk[i++].payload.ip.ip, 0x401000);
	/* taken, not taken, compressed return: one short TNT, oldest bit
	 * first, flushed before the TIP. */
	assert_int_equal(pk[i].type, ppt_tnt_8);
	assert_int_equal(pk[i].payload.tnt.bit_size, 3);
	assert_int_equal(pk[i++].payload.tnt.payload, 0x5); /* 1 0 1 */
	assert_int_equal(pk[i].type, ppt_tip);
	assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_update_16);
	assert_int_equal(pk[i++].payload.ip.ip, 0x2000);
	/* A return with no matching call: TIP, upper 32 bits differ. */
	assert_int_equal(pk[i].type, ppt_tip);
	assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_update_48);
	assert_int_equal(pk[i++].payload.ip.ip, 0x7f0000401000);
	/* SYSCALL: TIP.PGD with the kernel target suppressed. */
	assert_int_equal(pk[i].type, ppt_tip_pgd);
	assert_int_equal(pk[i++].payload.ip.ipc, pt_ipc_suppressed);
	/* Back in user space: MODE.Exec was sent since the PSB, so only
	 * TIP.PGE; bits 47:32 differ from the last IP. */
	assert_int_equal(pk[i].type, ppt_tip_pge);
	assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_update_48);
	assert_int_equal(pk[i++].payload.ip.ip, 0x401022);
	/* A fault: FUP at the faulting instruction, then TIP.PGD. */
	assert_int_equal(pk[i].type, ppt_fup);
	assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_update_16);
	assert_int_equal(pk[i++].payload.ip.ip, 0x1030);
	assert_int_equal(pk[i].type, ppt_tip_pgd);
	assert_int_equal(pk[i++].payload.ip.ipc, pt_ipc_suppressed);
	assert_int_equal(n, i);
	assert_int_equal(e.n.cond, 2);
	assert_int_equal(e.n.taken, 1);
	assert_int_equal(e.n.ret_comp, 1);
	assert_int_equal(e.n.ret_tip, 1);
	assert_int_equal(e.n.kernel, 2);
	hwt_ptemu_enc_fini(&e);
	hwt_buf_fini(&m.buf);
}

static void test_long_tnt(void **state)
{
	struct hwt_ptemu_enc e;
	struct memout m;
	struct pt_packet pk[16];
	uint64_t want = 0;
	size_t n;

	(void)state;
	enc_setup(&e, &m, NULL);
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x1000), 0);
	for (int i = 0; i < 50; i++) {
		assert_int_equal(hwt_ptemu_enc_cond(&e, 0x1000, i % 3 == 0), 0);
		if (i < 47)
			want = (want << 1) | (i % 3 == 0);
	}
	n = packets(&e, &m, pk, 16);
	/* PSB+ (5), MODE.Exec, PGE, a full long TNT of 47 bits, then the 3
	 * left. */
	assert_int_equal(n, 9);
	assert_int_equal(pk[7].type, ppt_tnt_64);
	assert_int_equal(pk[7].payload.tnt.bit_size, 47);
	assert_true(pk[7].payload.tnt.payload == want);
	assert_int_equal(pk[8].type, ppt_tnt_8);
	assert_int_equal(pk[8].payload.tnt.bit_size, 3);
	assert_int_equal(pk[8].payload.tnt.payload, 0x2); /* i = 47, 48, 49: 0 1 0 */
	hwt_ptemu_enc_fini(&e);
	hwt_buf_fini(&m.buf);
}

/* Counts TNT bits and TIPs of a run of calls then returns. */
static void call_ret_run(const char *terms, int depth, uint64_t *tnt_bits, uint64_t *tips)
{
	struct hwt_ptemu_enc e;
	struct memout m;
	struct pt_packet *pk = calloc(4096, sizeof(*pk));
	size_t n;

	assert_non_null(pk);
	enc_setup(&e, &m, terms);
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x1000), 0);
	for (int i = 0; i < depth; i++)
		hwt_ptemu_enc_call(&e, 0x2000 + (uint64_t)i);
	for (int i = depth - 1; i >= 0; i--)
		assert_int_equal(hwt_ptemu_enc_ret(&e, 0x9000, 0x2000 + (uint64_t)i), 0);
	n = packets(&e, &m, pk, 4096);
	*tnt_bits = 0;
	*tips = 0;
	for (size_t i = 0; i < n; i++) {
		if (pk[i].type == ppt_tnt_8 || pk[i].type == ppt_tnt_64)
			*tnt_bits += pk[i].payload.tnt.bit_size;
		if (pk[i].type == ppt_tip)
			(*tips)++;
	}
	hwt_ptemu_enc_fini(&e);
	hwt_buf_fini(&m.buf);
	free(pk);
}

static void test_retcomp(void **state)
{
	uint64_t bits, tips;

	(void)state;
	/* Up to 64 pending calls, every return is compressed. */
	call_ret_run(NULL, 64, &bits, &tips);
	assert_int_equal(bits, 64);
	assert_int_equal(tips, 0);
	/* libipt's stack keeps the last 64: returns past them are TIPs. */
	call_ret_run(NULL, 70, &bits, &tips);
	assert_int_equal(bits, 64);
	assert_int_equal(tips, 6);
	call_ret_run("noretcomp", 10, &bits, &tips);
	assert_int_equal(bits, 0);
	assert_int_equal(tips, 10);
}

static void test_psb_period_and_ovf(void **state)
{
	struct hwt_ptemu_enc e;
	struct memout m;
	struct pt_packet *pk = calloc(100000, sizeof(*pk));
	size_t n, psbs = 0, fups_in_psb = 0, ovf = 0;
	bool in_psb = false;

	(void)state;
	assert_non_null(pk);
	enc_setup(&e, &m, "psb_period=0,mtc=0");
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x1000), 0);
	for (uint64_t i = 0; i < 8000; i++) {
		hwt_ptemu_enc_retire(&e, 3);
		/* Far-apart targets: every TIP carries 6 bytes of IP. */
		assert_int_equal(
		    hwt_ptemu_enc_indirect(&e, 0x1000, 0x100000000ull * (i % 2 + 1) + i), 0);
		assert_int_equal(hwt_ptemu_enc_at(&e, 0x100000000ull * (i % 2 + 1) + i), 0);
	}
	assert_int_equal(hwt_ptemu_enc_lost(&e, 0x5000), 0);
	n = packets(&e, &m, pk, 100000);
	for (size_t i = 0; i < n; i++) {
		if (pk[i].type == ppt_psb) {
			psbs++;
			in_psb = true;
		} else if (pk[i].type == ppt_psbend) {
			in_psb = false;
		} else if (pk[i].type == ppt_fup && in_psb) {
			fups_in_psb++;
			/* IP compression restarts at PSB. */
			assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_sext_48);
		} else if (pk[i].type == ppt_ovf) {
			ovf++;
		}
	}
	/* One PSB+ per 2 KiB of output, each with the current IP. */
	assert_true(m.buf.len > 20 * 2048);
	assert_true(psbs >= m.buf.len / 2048 - 1 && psbs <= m.buf.len / 2048 + 1);
	assert_int_equal(fups_in_psb, psbs - 1);
	assert_int_equal(ovf, 1);
	assert_int_equal(e.n.psb, psbs);
	free(pk);
	hwt_ptemu_enc_fini(&e);
	hwt_buf_fini(&m.buf);
}

/* The packets of a PSB+ from index i (at the PSB) up to PSBEND, as a
 * string of letters: P PSB, T TSC, A TMA, C CBR, X MODE.TSX, E MODE.Exec,
 * F FUP, I PIP, V VMCS, Z PSBEND; returns the index after PSBEND. */
static size_t psb_shape(const struct pt_packet *pk, size_t n, size_t i, char *out, size_t cap)
{
	size_t k = 0;

	for (; i < n && k + 1 < cap; i++) {
		const struct pt_packet *p = &pk[i];
		char c = '?';

		switch (p->type) {
		case ppt_psb:
			c = 'P';
			break;
		case ppt_tsc:
			c = 'T';
			break;
		case ppt_tma:
			c = 'A';
			break;
		case ppt_cbr:
			c = 'C';
			break;
		case ppt_mode:
			c = p->payload.mode.leaf == pt_mol_tsx ? 'X' : 'E';
			break;
		case ppt_fup:
			c = 'F';
			break;
		case ppt_pip:
			c = 'I';
			break;
		case ppt_vmcs:
			c = 'V';
			break;
		case ppt_psbend:
			c = 'Z';
			break;
		default:
			break;
		}
		out[k++] = c;
		if (c == 'Z') {
			i++;
			break;
		}
	}
	out[k] = '\0';
	return i;
}

/* What the real traces show: MODE.TSX, PIP (with NR in a VMX guest) and
 * VMCS in every PSB+; a PSB every 256 bytes; PSB+ after PSB+ while packet
 * generation is off, without MODE.Exec and FUP; MODE.Exec before TIP.PGE. */
static void test_real_shapes(void **state)
{
	struct hwt_ptemu_enc e;
	struct memout m;
	struct pt_packet *pk = calloc(20000, sizeof(*pk));
	char shape[32];
	size_t n, i, on = 0, off = 0, pge = 0;

	(void)state;
	assert_non_null(pk);
	enc_setup(&e, &m, "tsx,pip,vmcs,psb_bytes=256,psb_off=2,mtc=0");
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x401000), 0);
	assert_int_equal(hwt_ptemu_enc_syscall(&e, 0x401010), 0);
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x401012), 0);
	for (uint64_t k = 0; k < 400; k++) {
		hwt_ptemu_enc_retire(&e, 3);
		assert_int_equal(hwt_ptemu_enc_indirect(&e, 0x1000, 0x100000000ull * (k % 2 + 1)),
				 0);
		assert_int_equal(hwt_ptemu_enc_at(&e, 0x100000000ull * (k % 2 + 1)), 0);
	}
	n = packets(&e, &m, pk, 20000);
	/* The first PSB+: tracing is off. */
	i = psb_shape(pk, n, 0, shape, sizeof(shape));
	assert_string_equal(shape, "PTCXIVZ");
	assert_int_equal(pk[4].payload.pip.cr3, HWT_PTEMU_CR3);
	assert_true(pk[4].payload.pip.nr);
	assert_int_equal(pk[5].payload.vmcs.base, HWT_PTEMU_VMCS);
	assert_int_equal(pk[i].type, ppt_mode);
	assert_int_equal(pk[i + 1].type, ppt_tip_pge);
	assert_int_equal(pk[i + 2].type, ppt_tip_pgd);
	/* Two PSB+ while off, then MODE.Exec and TIP.PGE. */
	i = psb_shape(pk, n, i + 3, shape, sizeof(shape));
	assert_string_equal(shape, "PTCXIVZ");
	i = psb_shape(pk, n, i, shape, sizeof(shape));
	assert_string_equal(shape, "PTCXIVZ");
	assert_int_equal(pk[i].type, ppt_mode);
	assert_int_equal(pk[i + 1].type, ppt_tip_pge);
	assert_int_equal(pk[i + 1].payload.ip.ip, 0x401012);
	/* Every PSB+ after that: tracing is on. */
	for (i = 0; i < n; i++) {
		if (pk[i].type == ppt_tip_pge)
			pge++;
		if (pk[i].type != ppt_psb)
			continue;
		psb_shape(pk, n, i, shape, sizeof(shape));
		if (!strcmp(shape, "PTCXEFIVZ"))
			on++;
		else if (!strcmp(shape, "PTCXIVZ"))
			off++;
		else
			fail_msg("PSB+ at packet %zu is %s", i, shape);
	}
	assert_int_equal(off, 3);
	assert_int_equal(pge, 2);
	assert_int_equal(on + off, e.n.psb);
	/* A PSB every 256 bytes: 400 TIPs of 7 bytes and the PSB+s. */
	assert_true(on >= m.buf.len / 256 - 4 && on <= m.buf.len / 256 + 1);
	free(pk);
	hwt_ptemu_enc_fini(&e);
	hwt_buf_fini(&m.buf);
}

/* Injected overflows (term ovf): after the packet of a branch, 16 blocks
 * are lost, then OVF and FUP (a whole IP) where tracing resumes. */
static void test_ovf_inject(void **state)
{
	struct hwt_ptemu_enc e;
	struct memout m;
	struct pt_packet *pk = calloc(200000, sizeof(*pk));
	uint64_t insns = 0, lost = 0;
	size_t n, ovf = 0;

	(void)state;
	assert_non_null(pk);
	enc_setup(&e, &m, "ovf=1,mtc=0");
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x1000), 0);
	for (uint64_t k = 0; k < 100000; k++) {
		uint64_t ip = 0x1000 + (k % 64) * 16;

		/* Blocks of 5 instructions: 4 end with a conditional branch,
		 * 1 in 5 with a direct jump (no packet). */
		hwt_ptemu_enc_retire(&e, 5);
		insns += 5;
		if (k % 5)
			assert_int_equal(hwt_ptemu_enc_cond(&e, ip + 8, k % 3 == 0), 0);
		assert_int_equal(hwt_ptemu_enc_at(&e, ip + 16), 0);
	}
	n = packets(&e, &m, pk, 200000);
	for (size_t i = 0; i < n; i++) {
		if (pk[i].type != ppt_ovf)
			continue;
		ovf++;
		assert_true(i + 1 < n);
		assert_int_equal(pk[i + 1].type, ppt_fup);
		assert_int_equal(pk[i + 1].payload.ip.ipc, pt_ipc_sext_48);
		/* The packet before the OVF is a TNT: the overflow began
		 * right after a branch that wrote one. */
		assert_true(pk[i - 1].type == ppt_tnt_8 || pk[i - 1].type == ppt_tnt_64);
	}
	lost = e.n.ovf_insns;
	assert_true(ovf >= 5);
	assert_int_equal(ovf, e.n.ovf);
	/* 16 blocks of 5 instructions each time. */
	assert_int_equal(lost, ovf * 16 * 5);
	assert_int_equal(e.n.insns, insns);
	/* About one per KiB of trace. */
	assert_true(ovf <= m.buf.len / 1024 + 1);
	free(pk);
	hwt_ptemu_enc_fini(&e);
	hwt_buf_fini(&m.buf);
}

/* Term vmentry (kAFL's VM entries, tests/data/real-pt/dyn_test): every
 * return to user space, the first included, is a PSB+ with MODE.Exec and
 * a FUP at the IP although packet generation is off (BDM70), then
 * TIP.PGE at the same IP, whole; after the psb_off runs. */
static void test_vmentry(void **state)
{
	struct hwt_ptemu_enc e;
	struct memout m;
	struct pt_packet pk[64];
	size_t n, i = 0;

	(void)state;
	enc_setup(&e, &m, "vmentry,psb_off=1,tsx");
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x401000), 0);
	hwt_ptemu_enc_retire(&e, 4);
	assert_int_equal(hwt_ptemu_enc_syscall(&e, 0x401010), 0);
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x401012), 0);
	n = packets(&e, &m, pk, 64);
	for (int k = 0; k < 2; k++) {
		uint64_t ip = k ? 0x401012 : 0x401000;

		if (k) {
			assert_int_equal(pk[i].type, ppt_tip_pgd);
			assert_int_equal(pk[i++].payload.ip.ipc, pt_ipc_suppressed);
			/* psb_off=1: one PSB+ without FUP first. */
			assert_int_equal(pk[i++].type, ppt_psb);
			while (pk[i].type != ppt_psbend) {
				assert_int_not_equal(pk[i].type, ppt_fup);
				i++;
			}
			i++;
		}
		assert_int_equal(pk[i++].type, ppt_psb);
		while (pk[i].type != ppt_fup)
			i++;
		assert_int_equal(pk[i - 1].type, ppt_mode);
		assert_int_equal(pk[i - 1].payload.mode.leaf, pt_mol_exec);
		assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_sext_48);
		assert_int_equal(pk[i++].payload.ip.ip, ip);
		assert_int_equal(pk[i++].type, ppt_psbend);
		assert_int_equal(pk[i].type, ppt_tip_pge);
		assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_sext_48);
		assert_int_equal(pk[i++].payload.ip.ip, ip);
	}
	assert_int_equal(i, n);
	assert_int_equal(e.n.psb, 3);
	hwt_buf_fini(&m.buf);
	hwt_ptemu_enc_fini(&e);
}

/* Address filters (SDM "Filtering by IP"): leaving the ranges writes
 * TIP.PGD with the first IP outside instead of the TNT bit or TIP of the
 * branch (pending TNT bits first), nothing is written outside (branches,
 * calls, system calls), entering writes TIP.PGE (MODE.Exec first after a
 * PSB+ written while off), a kernel entry inside is unchanged, and a
 * TraceStop range ends tracing with TIP.PGD and TraceStop. Instructions
 * retired outside are counted as such. */
static void test_filter_packets(void **state)
{
	struct hwt_ptemu_enc e;
	struct memout m;
	struct pt_packet pk[64];
	size_t n, i = 0;

	(void)state;
	enc_setup(&e, &m, NULL);
	assert_int_equal(hwt_ptemu_enc_enable(&e, 0x401000), 0);
	hwt_ptemu_enc_retire(&e, 3);
	assert_int_equal(hwt_ptemu_enc_cond(&e, 0x401002, true), 0);
	/* A jcc out of the range: no TNT bit for it. */
	hwt_ptemu_enc_retire(&e, 2);
	hwt_ptemu_enc_filter_exit(&e, 0x402000, false);
	assert_int_equal(hwt_ptemu_enc_cond(&e, 0x401008, true), 0);
	assert_false(e.enabled);
	/* Outside: nothing written, the calls not pushed. */
	hwt_ptemu_enc_retire(&e, 7);
	assert_int_equal(hwt_ptemu_enc_cond(&e, 0x402004, false), 0);
	hwt_ptemu_enc_call(&e, 0x402010);
	assert_int_equal(hwt_ptemu_enc_indirect(&e, 0x40200e, 0x403000), 0);
	assert_int_equal(hwt_ptemu_enc_syscall(&e, 0x403004), 0);
	assert_int_equal(hwt_ptemu_enc_ret(&e, 0x403008, 0x401010), 0);
	/* Back in by the return: TIP.PGE. */
	assert_int_equal(hwt_ptemu_enc_filter_enter(&e, 0x401010), 0);
	assert_true(e.enabled);
	/* A direct call out: pushed, TIP.PGD at the flush. */
	hwt_ptemu_enc_retire(&e, 1);
	hwt_ptemu_enc_filter_exit(&e, 0x404000, false);
	hwt_ptemu_enc_call(&e, 0x401015);
	assert_int_equal(hwt_ptemu_enc_filter_flush(&e, 0x401010), 0);
	assert_int_equal(e.rtop, 1);
	hwt_ptemu_enc_retire(&e, 4);
	assert_int_equal(hwt_ptemu_enc_filter_enter(&e, 0x401015), 0);
	/* Into a TraceStop range by an indirect jump. */
	hwt_ptemu_enc_retire(&e, 1);
	hwt_ptemu_enc_filter_exit(&e, 0x405000, true);
	assert_int_equal(hwt_ptemu_enc_indirect(&e, 0x401015, 0x405000), 0);
	assert_true(e.stopped && !e.enabled);
	assert_int_equal(hwt_ptemu_enc_filter_enter(&e, 0x401000), -HWT_EINTERNAL);
	assert_int_equal(e.n.insns, 18);
	assert_int_equal(e.n.outside, 11);
	assert_int_equal(e.n.leaves, 3);
	n = packets(&e, &m, pk, 64);

	while (i < n && pk[i].type != ppt_tip_pge)
		i++;
	assert_int_equal(pk[i++].payload.ip.ip, 0x401000);
	/* The taken jcc, flushed before the exit; no bit for the jcc out. */
	assert_int_equal(pk[i].type, ppt_tnt_8);
	assert_int_equal(pk[i++].payload.tnt.bit_size, 1);
	assert_int_equal(pk[i].type, ppt_tip_pgd);
	assert_int_equal(pk[i].payload.ip.ipc, pt_ipc_update_16);
	assert_int_equal(pk[i++].payload.ip.ip, 0x2000);
	/* Nothing while outside; MODE.Exec was sent since the PSB. */
	assert_int_equal(pk[i].type, ppt_tip_pge);
	assert_int_equal(pk[i++].payload.ip.ip, 0x1010);
	assert_int_equal(pk[i].type, ppt_tip_pgd);
	assert_int_equal(pk[i++].payload.ip.ip, 0x4000);
	assert_int_equal(pk[i].type, ppt_tip_pge);
	assert_int_equal(pk[i++].payload.ip.ip, 0x1015);
	assert_int_equal(pk[i].type, ppt_tip_pgd);
	assert_int_equal(pk[i++].payload.ip.ip, 0x5000);
	assert_int_equal(pk[i++].type, ppt_stop);
	assert_int_equal(i, n);
	hwt_buf_fini(&m.buf);
	hwt_ptemu_enc_fini(&e);
}

static void test_close_stream(void **state)
{
	struct hwt_ptemu_filehdr h;
	struct pt_packet_decoder *d;
	struct pt_packet p;
	struct pt_config cfg;
	uint8_t buf[64];
	int n;

	(void)state;
	memset(&h, 0, sizeof(h));
	h.pend_tnt = 0x3;
	h.pend_ntnt = 2;
	h.cur_ip = 0x4000001234;
	n = hwt_ptemu_close_stream(&h, buf, sizeof(buf));
	assert_true(n > 0);
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + n;
	d = pt_pkt_alloc_decoder(&cfg);
	assert_true(pt_pkt_sync_set(d, 0) >= 0);
	assert_true(pt_pkt_next(d, &p, sizeof(p)) > 0);
	assert_int_equal(p.type, ppt_tnt_8);
	assert_int_equal(p.payload.tnt.bit_size, 2);
	assert_true(pt_pkt_next(d, &p, sizeof(p)) > 0);
	assert_int_equal(p.type, ppt_fup);
	assert_int_equal(p.payload.ip.ip, 0x4000001234);
	assert_true(pt_pkt_next(d, &p, sizeof(p)) > 0);
	assert_int_equal(p.type, ppt_tip_pgd);
	assert_int_equal(pt_pkt_next(d, &p, sizeof(p)), -pte_eos);
	pt_pkt_free_decoder(d);
	/* Nothing to close when tracing was off. */
	h.in_kernel = 1;
	assert_int_equal(hwt_ptemu_close_stream(&h, buf, sizeof(buf)), 0);
}

static void test_terms(void **state)
{
	struct hwt_ptemu_terms t, u;
	const char *bad = NULL;

	(void)state;
	hwt_ptemu_terms_init(&t);
	assert_true(t.tsc && t.mtc && !t.cyc && !t.noretcomp);
	assert_int_equal(t.mtc_period, 3);
	assert_int_equal(t.psb_period, 3);
	assert_int_equal(hwt_ptemu_terms_parse(&t,
					       "cyc,noretcomp,mtc=0,mtc_period=6,psb_period=1,"
					       "tsc_per_insn=4",
					       NULL),
			 0);
	assert_true(t.cyc && t.noretcomp && !t.mtc && t.tsc);
	assert_int_equal(t.mtc_period, 6);
	assert_int_equal(t.psb_period, 1);
	assert_int_equal(t.tsc_per_insn, 4);
	/* The perf config word round-trips. */
	hwt_ptemu_terms_from_config(&u, hwt_ptemu_terms_config(&t), t.tsc_per_insn);
	assert_true(u.tsc == t.tsc && u.mtc == t.mtc && u.cyc == t.cyc &&
		    u.noretcomp == t.noretcomp && u.mtc_period == t.mtc_period &&
		    u.psb_period == t.psb_period && u.tsc_per_insn == t.tsc_per_insn);
	/* pt, cyc, tsc, noretcomp, branch; no mtc */
	assert_int_equal(hwt_ptemu_terms_config(&t) & 0x2e03, 0x2c03);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "cyc,bogus", &bad), -HWT_EPARSE);
	assert_string_equal(bad, "bogus");
	assert_int_equal(hwt_ptemu_terms_parse(&t, "mtc_period=16", &bad), -HWT_EPARSE);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "psb_period=", &bad), -HWT_EPARSE);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "tsc_per_insn=0", &bad), -HWT_EPARSE);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "tsc=2", &bad), -HWT_EPARSE);
	assert_int_equal(hwt_ptemu_terms_parse(&t, ",", &bad), -HWT_EPARSE);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "", &bad), 0);
	/* The real-shape terms; "real" sets those of tests/data/real-pt. */
	hwt_ptemu_terms_init(&t);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "real,ovf=8,vmcs", NULL), 0);
	assert_true(t.tsx && t.pip && t.vmcs);
	assert_int_equal(t.psb_bytes, 256);
	assert_int_equal(t.psb_off, 4);
	assert_int_equal(t.ovf, 8);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "psb_bytes=255", &bad), -HWT_EPARSE);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "psb_off=65", &bad), -HWT_EPARSE);
	assert_int_equal(hwt_ptemu_terms_parse(&t, "vmcs=2", &bad), -HWT_EPARSE);
	/* filter= takes the rest of the spec, commas and spaces included. */
	{
		const char *spec = "real,filter=filter main @ /bin/x,tracestop f @ /bin/x";

		assert_int_equal(hwt_ptemu_terms_parse(&t, spec, NULL), 0);
		assert_ptr_equal(t.filter, spec + 12);
		assert_int_equal(hwt_ptemu_terms_parse(&t, "filter=", &bad), -HWT_EPARSE);
	}
	{
		/* They reach the plugin through its shape= argument. */
		char arg[64];

		hwt_ptemu_terms_init(&u);
		assert_true(hwt_ptemu_shape_arg(&t, arg, sizeof(arg)) > 0);
		assert_int_equal(hwt_ptemu_shape_parse(&u, arg), 0);
		assert_true(u.tsx && u.pip && u.vmcs && u.psb_bytes == 256 && u.psb_off == 4 &&
			    u.ovf == 8 && !u.vmentry);
		t.vmentry = true;
		assert_true(hwt_ptemu_shape_arg(&t, arg, sizeof(arg)) > 0);
		assert_int_equal(hwt_ptemu_shape_parse(&u, arg), 0);
		assert_true(u.vmentry && u.tsx);
		assert_int_equal(hwt_ptemu_shape_parse(&u, "1.100.0.0"), -HWT_EINVAL);
	}
}

static void test_sideband_layout(void **state)
{
	struct hwt_ptemu_terms t;
	struct perf_event_attr attr;
	struct hwt_fmt_attr_info info;
	struct hwt_fmt_record rec;
	uint8_t buf[512];
	int n;

	(void)state;
	hwt_ptemu_terms_init(&t);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(hwt_ptemu_attr(&t, &attr, sizeof(attr)), sizeof(attr));
	assert_int_equal(attr.config, hwt_ptemu_terms_config(&t));
	assert_true(attr.sample_id_all && attr.exclude_kernel && attr.mmap2 && attr.task);
	hwt_fmt_attr_info_from_attr(&info, &attr);

	n = hwt_ptemu_rec_mmap2(buf, sizeof(buf), 10, 11, 0x400000, 0x2000, 0x1000, 8, 1, 77, 5, 2,
				"/usr/bin/prog", 12345);
	assert_true(n > 0 && n % 8 == 0);
	assert_int_equal(hwt_fmt_record_parse(&info, buf, (size_t)n, &rec), 0);
	assert_int_equal(rec.type, PERF_RECORD_MMAP2);
	assert_int_equal(rec.u.mmap.pid, 10);
	assert_int_equal(rec.u.mmap.addr, 0x400000);
	assert_int_equal(rec.u.mmap.len, 0x2000);
	assert_int_equal(rec.u.mmap.pgoff, 0x1000);
	assert_int_equal(rec.u.mmap.ino, 77);
	assert_string_equal(rec.u.mmap.filename, "/usr/bin/prog");
	assert_int_equal(rec.id.tid, 11);
	assert_int_equal(rec.id.time, 12345);
	assert_int_equal(rec.id.id, HWT_PTEMU_SAMPLE_ID);

	n = hwt_ptemu_rec_comm(buf, sizeof(buf), 10, 10, "prog", true, 5);
	assert_int_equal(hwt_fmt_record_parse(&info, buf, (size_t)n, &rec), 0);
	assert_int_equal(rec.type, PERF_RECORD_COMM);
	assert_true(rec.misc & PERF_RECORD_MISC_COMM_EXEC);
	assert_string_equal(rec.u.comm.comm, "prog");

	n = hwt_ptemu_rec_task(buf, sizeof(buf), PERF_RECORD_FORK, 20, 10, 21, 11, 6);
	assert_int_equal(hwt_fmt_record_parse(&info, buf, (size_t)n, &rec), 0);
	assert_int_equal(rec.type, PERF_RECORD_FORK);
	assert_int_equal(rec.u.fork.pid, 20);
	assert_int_equal(rec.u.fork.ppid, 10);
	assert_int_equal(rec.u.fork.ptid, 11);

	n = hwt_ptemu_rec_aux(buf, sizeof(buf), 20, 21, 4096, 100, 0, 7);
	assert_int_equal(hwt_fmt_record_parse(&info, buf, (size_t)n, &rec), 0);
	assert_int_equal(rec.type, PERF_RECORD_AUX);
	assert_int_equal(rec.u.aux.aux_offset, 4096);
	assert_int_equal(rec.u.aux.aux_size, 100);

	n = hwt_ptemu_rec_itrace_start(buf, sizeof(buf), 20, 21, 8);
	assert_int_equal(hwt_fmt_record_parse(&info, buf, (size_t)n, &rec), 0);
	assert_int_equal(rec.type, PERF_RECORD_ITRACE_START);
	assert_int_equal(rec.u.itrace_start.tid, 21);

	/* Too small a buffer is refused, never overrun. */
	assert_int_equal(hwt_ptemu_rec_mmap2(buf, 40, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, "/x", 0),
			 -HWT_ETOOBIG);
	/* The clock conversion: 2.1 GHz. */
	assert_int_equal(hwt_ptemu_tsc_to_ns(2100000000ull), 1000000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_psb_tnt_tip),	    cmocka_unit_test(test_long_tnt),
	    cmocka_unit_test(test_retcomp),	    cmocka_unit_test(test_psb_period_and_ovf),
	    cmocka_unit_test(test_close_stream),    cmocka_unit_test(test_terms),
	    cmocka_unit_test(test_sideband_layout), cmocka_unit_test(test_real_shapes),
	    cmocka_unit_test(test_ovf_inject),	    cmocka_unit_test(test_filter_packets),
	    cmocka_unit_test(test_vmentry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
