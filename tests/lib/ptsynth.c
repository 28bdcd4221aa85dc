/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/ptsynth.c - the synthetic PT workload (see ptsynth.h): program
 * layout, a simulated run, and the packets libipt's encoder writes for it.
 */
#include <errno.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ptsynth.h"

enum term {
	T_NONE,	   /* falls into the next block */
	T_COND,	   /* jcc forward */
	T_LOOP,	   /* jcc backward */
	T_CALL,	   /* call rel32 */
	T_ICALL,   /* call *%rax */
	T_IJMP,	   /* jmp *%rax to a later block */
	T_JMP,	   /* jmp rel32 forward */
	T_SYSCALL, /* syscall */
	T_RET,	   /* ret */
};

struct block {
	uint64_t addr;	    /* first instruction */
	uint64_t term_addr; /* the terminator */
	uint64_t next_addr; /* after the terminator */
	uint32_t nfill;	    /* filler instructions */
	uint8_t term;
	uint8_t prob;	 /* taken probability, percent */
	uint32_t target; /* block index (COND/LOOP/JMP) or function (CALL) */
};

struct func {
	struct block *blocks;
	uint32_t nblocks;
	uint64_t addr;
};

struct out {
	uint8_t *buf;
	size_t len, cap;
	struct pt_encoder *enc;
	uint8_t scratch[64];
	int err;
};

#define RETSTACK 64

struct frame {
	uint32_t func, block;
	uint32_t loop_block, loop_left; /* the caller's loop state */
};

struct sim {
	const struct ptsynth_config *cfg;
	struct ptsynth *res;
	struct func *funcs;
	uint32_t nfuncs;
	uint64_t rng;
	struct out out;
	uint64_t last_ip;
	uint32_t tnt_bits, tnt_n;
	uint64_t since_psb;
	/* The decoder's return-compression stack, as libipt keeps it
	 * (pt_retstack: 64 entries, the oldest dropped): the calls it decoded
	 * since the last PSB or OVF; a return is compressed when its target
	 * is on top. */
	uint64_t rs[RETSTACK + 1];
	uint8_t rs_top, rs_bottom;
	bool inside;	/* the IP is in the filter's range (or no filter) */
	bool mode_sent; /* MODE.Exec since the last PSB */
	struct frame *stack;
	size_t depth, cap;
	uint64_t tsc;
	uint64_t ctc_last_mtc;
	bool traced; /* false while an overflow drops trace */
	uint64_t lost_blocks;
	uint32_t loop_block, loop_left; /* the current function's loop */
};

static uint64_t rnd(struct sim *s)
{
	/* xorshift64* */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ull;
}

static uint32_t rnd_below(struct sim *s, uint32_t n)
{
	return n ? (uint32_t)((rnd(s) >> 32) % n) : 0;
}

void ptsynth_config_init(struct ptsynth_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	cfg->nfuncs = 24;
	cfg->insns = 100000;
	cfg->base = 0x400000;
	cfg->psb_period = 4096;
	cfg->mtc = true;
	cfg->mtc_freq = 3;
}

void ptsynth_config_real(struct ptsynth_config *cfg)
{
	cfg->cbr = cfg->tsx = cfg->pip = cfg->vmcs = true;
	cfg->psb_off = 4;
	cfg->psb_period = 256;
	if (!cfg->interrupt_ppm)
		cfg->interrupt_ppm = 5000;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

static void put(struct out *o, const struct pt_packet *p)
{
	int n;

	if (o->err)
		return;
	if (pt_enc_sync_set(o->enc, 0) < 0) {
		o->err = -EINVAL;
		return;
	}
	n = pt_enc_next(o->enc, p);
	if (n < 0) {
		o->err = -EINVAL;
		return;
	}
	if (o->len + (size_t)n > o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 1 << 16;
		uint8_t *b = realloc(o->buf, ncap);

		if (!b) {
			o->err = -ENOMEM;
			return;
		}
		o->buf = b;
		o->cap = ncap;
	}
	memcpy(o->buf + o->len, o->scratch, (size_t)n);
	o->len += (size_t)n;
}

static void put_simple(struct sim *s, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	put(&s->out, &p);
}

static void flush_tnt(struct sim *s)
{
	struct pt_packet p;

	if (!s->tnt_n)
		return;
	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = (uint8_t)s->tnt_n;
	p.payload.tnt.payload = s->tnt_bits;
	put(&s->out, &p);
	s->tnt_bits = s->tnt_n = 0;
}

static void tnt(struct sim *s, bool taken)
{
	s->tnt_bits = (s->tnt_bits << 1) | (taken ? 1u : 0u);
	if (++s->tnt_n == 6)
		flush_tnt(s);
}

/* An IP packet, compressed against the last IP as the hardware does. */
static void put_ip(struct sim *s, enum pt_packet_type type, uint64_t ip, bool suppressed)
{
	struct pt_packet p;

	flush_tnt(s);
	memset(&p, 0, sizeof(p));
	p.type = type;
	if (suppressed) {
		p.payload.ip.ipc = pt_ipc_suppressed;
	} else {
		uint64_t l = s->last_ip;

		if ((l >> 16) == (ip >> 16))
			p.payload.ip.ipc = pt_ipc_update_16;
		else if ((l >> 32) == (ip >> 32))
			p.payload.ip.ipc = pt_ipc_update_32;
		else if ((ip >> 47) == 0 || (ip >> 47) == 0x1ffff)
			p.payload.ip.ipc = pt_ipc_sext_48;
		else
			p.payload.ip.ipc = pt_ipc_full;
		p.payload.ip.ip = ip;
		s->last_ip = ip;
	}
	put(&s->out, &p);
}

static void mode_exec(struct sim *s)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	put(&s->out, &p);
}

/* PSB+ with what the configured CPU puts in it; while tracing is off (on
 * = false) without MODE.Exec and FUP, as the real traces show. */
static void psb_on(struct sim *s, uint64_t ip, bool on)
{
	struct pt_packet p;

	flush_tnt(s);
	s->since_psb = s->out.len;
	put_simple(s, ppt_psb);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tsc;
	p.payload.tsc.tsc = s->tsc;
	put(&s->out, &p);
	if (s->cfg->mtc) {
		uint64_t ctc = s->tsc / s->res->cpuid_0x15_ebx;

		memset(&p, 0, sizeof(p));
		p.type = ppt_tma;
		p.payload.tma.ctc = (uint16_t)ctc;
		p.payload.tma.fc = (uint16_t)(s->tsc % s->res->cpuid_0x15_ebx) & 0x1ff;
		put(&s->out, &p);
		s->ctc_last_mtc = ctc;
	}
	if (s->cfg->cbr) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_cbr;
		p.payload.cbr.ratio = 34;
		put(&s->out, &p);
	}
	if (s->cfg->tsx) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_mode;
		p.payload.mode.leaf = pt_mol_tsx;
		put(&s->out, &p);
	}
	s->last_ip = 0; /* PSB resets the last IP */
	s->mode_sent = on;
	if (on) {
		mode_exec(s);
		if (s->traced)
			put_ip(s, ppt_fup, ip, false);
	}
	if (s->cfg->pip) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_pip;
		p.payload.pip.cr3 = 0x1fa2c000;
		p.payload.pip.nr = s->cfg->vmcs;
		put(&s->out, &p);
	}
	if (s->cfg->vmcs) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_vmcs;
		p.payload.vmcs.base = 0x38e0ed000ull;
		put(&s->out, &p);
	}
	put_simple(s, ppt_psbend);
	s->rs_top = s->rs_bottom = 0; /* and the return compression state */
	s->res->truth.psbs++;
}

static void psb(struct sim *s, uint64_t ip)
{
	psb_on(s, ip, true);
}

/* An IP packet with the IP whole (sign-extended 48 bits). */
static void put_ip_whole(struct sim *s, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet p;

	flush_tnt(s);
	memset(&p, 0, sizeof(p));
	p.type = type;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = ip & 0xffffffffffffull;
	s->last_ip = ip;
	put(&s->out, &p);
}

/* Tracing goes on again at ip after the kernel: the PSB+ runs a CPU writes
 * meanwhile (psb_off), MODE.Exec after them, TIP.PGE. As a VM entry (kAFL,
 * tests/data/real-pt/dyn_test) the last PSB+ has MODE.Exec and a FUP at
 * ip, and TIP.PGE follows at the same ip: erratum BDM70 (the FUP should
 * not be there); the CPU's IP compression does not count it, the TIP.PGE
 * has its IP whole. */
static void resume(struct sim *s, uint64_t ip)
{
	for (unsigned int i = 0; i < s->cfg->psb_off; i++)
		psb_on(s, 0, false);
	if (s->cfg->vmentry) {
		psb_on(s, ip, true);
		put_ip_whole(s, ppt_tip_pge, ip);
		return;
	}
	if (!s->mode_sent)
		mode_exec(s);
	s->mode_sent = true;
	put_ip(s, ppt_tip_pge, ip, false);
}

static bool in_filter(const struct sim *s, uint64_t ip)
{
	return !s->cfg->filter_funcs || (ip >= s->res->filter_lo && ip < s->res->filter_hi);
}

/* Packet generation is on: not in an overflow, inside the filter. */
static bool on(const struct sim *s)
{
	return s->traced && s->inside;
}

/* n instructions ran: traced, lost to an overflow, or outside the filter. */
static void count(struct sim *s, uint64_t n)
{
	if (on(s))
		s->res->truth.insns += n;
	else if (!s->traced)
		s->res->truth.insns_lost += n;
	else
		s->res->truth.insns_filtered += n;
}

/* libipt's pt_retstack_push(). */
static void rs_push(struct sim *s, uint64_t ret)
{
	s->rs[s->rs_top] = ret;
	s->rs_top = (uint8_t)(s->rs_top == RETSTACK ? 0 : s->rs_top + 1);
	if (s->rs_top == s->rs_bottom)
		s->rs_bottom = (uint8_t)(s->rs_bottom == RETSTACK ? 0 : s->rs_bottom + 1);
}

/* Pops ret when it is on top (a compressed return). */
static bool rs_pop(struct sim *s, uint64_t ret)
{
	uint8_t top = (uint8_t)(s->rs_top ? s->rs_top - 1 : RETSTACK);

	if (s->rs_top == s->rs_bottom || s->rs[top] != ret)
		return false;
	s->rs_top = top;
	return true;
}

/* Control goes to `to`: leaving the filter's range writes TIP.PGD with
 * the first IP outside (instead of the branch's own packet, which the
 * caller then leaves out), entering it TIP.PGE with the first IP inside,
 * MODE.Exec before it when none was sent since the last PSB (nothing
 * while an overflow drops trace). */
static void cross(struct sim *s, uint64_t to)
{
	bool in = in_filter(s, to);

	if (in == s->inside)
		return;
	s->inside = in;
	if (!s->traced)
		return;
	if (!in) {
		put_ip(s, ppt_tip_pgd, to, false);
		s->res->truth.filter_exits++;
		return;
	}
	if (!s->mode_sent)
		mode_exec(s);
	s->mode_sent = true;
	put_ip(s, ppt_tip_pge, to, false);
	s->res->truth.filter_entries++;
}

/* Time passes: two TSC ticks per instruction; MTC when the CTC period
 * (ctc >> mtc_freq) changes. */
static void tick(struct sim *s, uint32_t insns)
{
	uint64_t ctc;

	s->tsc += 2ull * insns;
	if (!s->cfg->mtc)
		return;
	ctc = s->tsc / s->res->cpuid_0x15_ebx;
	if ((ctc >> s->cfg->mtc_freq) != (s->ctc_last_mtc >> s->cfg->mtc_freq) && s->traced) {
		struct pt_packet p;

		memset(&p, 0, sizeof(p));
		p.type = ppt_mtc;
		p.payload.mtc.ctc = (uint8_t)(ctc >> s->cfg->mtc_freq);
		put(&s->out, &p);
		s->ctc_last_mtc = ctc;
	}
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */

static const uint8_t fill_enc[][10] = {
    {0x90},				  /* nop */
    {0x48, 0x89, 0xc3},			  /* mov %rax,%rbx */
    {0x48, 0x83, 0xc0, 0x01},		  /* add $1,%rax */
    {0x48, 0x8d, 0x44, 0x24, 0x08},	  /* lea 8(%rsp),%rax */
    {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, /* movabs $..,%rax */
};
static const uint8_t fill_len[] = {1, 3, 4, 5, 10};

static size_t term_size(uint8_t t)
{
	switch (t) {
	case T_COND:
	case T_LOOP:
		return 6;
	case T_CALL:
	case T_JMP:
		return 5;
	case T_ICALL:
	case T_IJMP:
	case T_SYSCALL:
		return 2;
	case T_RET:
		return 1;
	default:
		return 0;
	}
}

/* Room for an instruction (16 bytes) at len in *code, of *cap bytes. The
 * bytes no instruction is written to (each function's alignment to 16,
 * the end's) are int3, as the driver's tail: the code is written to a
 * file whole (bench_decoder's recordings). On failure frees *code. */
static int code_room(uint8_t **code, size_t *cap, size_t len)
{
	uint8_t *c;

	if (len + 16 <= *cap)
		return 0;
	c = realloc(*code, *cap * 2);
	if (!c) {
		free(*code);
		return -ENOMEM;
	}
	memset(c + *cap, 0xcc, *cap);
	*code = c;
	*cap *= 2;
	return 0;
}

static int layout(struct sim *s)
{
	const struct ptsynth_config *cfg = s->cfg;
	struct ptsynth *r = s->res;
	uint32_t nf = s->nfuncs;
	size_t cap = 1 << 16, len = 0;
	uint8_t *code = malloc(cap);

	if (!code)
		return -ENOMEM;
	memset(code, 0xcc, cap);
	/* Driver at base: call F0; jmp back. */
	len = 16;
	for (uint32_t i = 0; i < nf; i++) {
		struct func *f = &s->funcs[i];
		uint32_t nb = 4 + rnd_below(s, 12);
		bool last = i + 1 == nf;

		f->blocks = calloc(nb, sizeof(*f->blocks));
		if (!f->blocks) {
			free(code);
			return -ENOMEM;
		}
		f->nblocks = nb;
		for (uint32_t b = 0; b < nb; b++) {
			struct block *bl = &f->blocks[b];
			uint32_t pick = rnd_below(s, 100);

			bl->nfill = rnd_below(s, 7);
			bl->prob = (uint8_t)(10 + rnd_below(s, 81));
			if (cfg->biased)
				bl->prob = rnd_below(s, 2) ? 98 : 2;
			if (b + 1 == nb) {
				bl->term = T_RET;
			} else if (pick < 30) {
				bl->term = T_COND;
				bl->target = b + 1 + rnd_below(s, nb - b - 1);
			} else if (pick < 40 && b > 0) {
				bl->term = T_LOOP;
				bl->target = rnd_below(s, b + 1);
				bl->prob = (uint8_t)(50 + rnd_below(s, 40));
				if (cfg->biased)
					bl->prob = (uint8_t)(2 + rnd_below(s, 31)); /* trip count */
			} else if (pick < 60 && !last) {
				bl->term = T_CALL;
				bl->target = i + 1 + rnd_below(s, nf - i - 1);
			} else if (pick < 66 && !last) {
				bl->term = T_ICALL;
			} else if (pick < 72 && b + 2 < nb) {
				bl->term = T_IJMP;
			} else if (pick < 78) {
				bl->term = T_JMP;
				bl->target = b + 1 + rnd_below(s, nb - b - 1);
			} else if (pick < 80) {
				bl->term = T_SYSCALL;
			} else {
				bl->term = T_NONE;
			}
		}
		/* Loops must not contain other loops' back edges. */
		for (uint32_t b = 0; b < nb; b++) {
			if (f->blocks[b].term != T_LOOP)
				continue;
			for (uint32_t k = f->blocks[b].target; k < b; k++) {
				if (f->blocks[k].term == T_LOOP)
					f->blocks[b].term = T_NONE;
			}
		}
	}
	/* Addresses and bytes. */
	for (uint32_t i = 0; i < nf; i++) {
		struct func *f = &s->funcs[i];

		len = (len + 15) & ~(size_t)15;
		f->addr = cfg->base + len;
		for (uint32_t b = 0; b < f->nblocks; b++) {
			struct block *bl = &f->blocks[b];

			bl->addr = cfg->base + len;
			for (uint32_t k = 0; k < bl->nfill; k++) {
				uint32_t e = rnd_below(s, 5);

				if (code_room(&code, &cap, len) < 0)
					return -ENOMEM;
				memcpy(code + len, fill_enc[e], fill_len[e]);
				len += fill_len[e];
			}
			bl->term_addr = cfg->base + len;
			len += term_size(bl->term);
			bl->next_addr = cfg->base + len;
			if (code_room(&code, &cap, len) < 0)
				return -ENOMEM;
		}
	}
	len = (len + 15) & ~(size_t)15;
	/* Terminator bytes, now that every address is known. */
	for (uint32_t i = 0; i < nf; i++) {
		struct func *f = &s->funcs[i];

		for (uint32_t b = 0; b < f->nblocks; b++) {
			struct block *bl = &f->blocks[b];
			uint8_t *p = code + (bl->term_addr - cfg->base);
			int32_t rel;

			switch (bl->term) {
			case T_COND:
			case T_LOOP:
				rel = (int32_t)(f->blocks[bl->target].addr - bl->next_addr);
				p[0] = 0x0f;
				p[1] = 0x85; /* jne */
				memcpy(p + 2, &rel, 4);
				break;
			case T_CALL:
				rel = (int32_t)(s->funcs[bl->target].addr - bl->next_addr);
				p[0] = 0xe8;
				memcpy(p + 1, &rel, 4);
				break;
			case T_JMP:
				rel = (int32_t)(f->blocks[bl->target].addr - bl->next_addr);
				p[0] = 0xe9;
				memcpy(p + 1, &rel, 4);
				break;
			case T_ICALL:
				p[0] = 0xff;
				p[1] = 0xd0;
				break;
			case T_IJMP:
				p[0] = 0xff;
				p[1] = 0xe0;
				break;
			case T_SYSCALL:
				p[0] = 0x0f;
				p[1] = 0x05;
				break;
			case T_RET:
				p[0] = 0xc3;
				break;
			default:
				break;
			}
		}
	}
	/* The driver: call F0 at base, jmp base at base + 5. */
	{
		int32_t rel = (int32_t)(s->funcs[0].addr - (cfg->base + 5));

		code[0] = 0xe8;
		memcpy(code + 1, &rel, 4);
		code[5] = 0xe9;
		rel = (int32_t)(cfg->base - (cfg->base + 10));
		memcpy(code + 6, &rel, 4);
		memset(code + 10, 0xcc, 6);
	}
	r->code = code;
	r->code_size = len;
	r->base = cfg->base;
	r->nfuncs = nf;
	r->func_addr = calloc(nf, sizeof(*r->func_addr));
	if (!r->func_addr)
		return -ENOMEM;
	for (uint32_t i = 0; i < nf; i++)
		r->func_addr[i] = s->funcs[i].addr;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Run                                                                       */

static int push(struct sim *s, uint32_t func, uint32_t block)
{
	uint32_t lb = s->loop_block, ll = s->loop_left;

	if (s->depth == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct frame *p = realloc(s->stack, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->stack = p;
		s->cap = ncap;
	}
	s->stack[s->depth++] = (struct frame){func, block, lb, ll};
	s->loop_block = UINT32_MAX;
	s->loop_left = 0;
	if (s->depth > s->res->truth.max_depth)
		s->res->truth.max_depth = s->depth;
	return 0;
}

/* An overflow begins right after a branch whose packet was written: what
 * follows is lost until the overflow resolves (lost_blocks blocks later,
 * with OVF and a FUP). A decoder (libipt) stops at the OVF right after
 * that branch, so the ground truth is exact. (Beginning an overflow
 * elsewhere leaves what ran since the last packet undecidable.) */
static bool overflow_here(struct sim *s)
{
	if (!s->cfg->overflow_ppm || !on(s) || rnd_below(s, 1000000) >= s->cfg->overflow_ppm)
		return false;
	flush_tnt(s);
	s->traced = false;
	s->lost_blocks = 1 + rnd_below(s, 64);
	return true;
}

static int run(struct sim *s)
{
	const struct ptsynth_config *cfg = s->cfg;
	struct ptsynth_truth *t = &s->res->truth;
	uint64_t executed = 0;
	uint32_t f = 0, b = 0;
	bool in_driver = true;
	int err;

	/* Start: PSB+ at the driver's call (off when the filter leaves the
	 * driver out). */
	s->traced = true;
	s->inside = in_filter(s, cfg->base);
	psb_on(s, cfg->base, s->inside);
	while (executed < cfg->insns && !s->out.err) {
		struct block *bl;
		uint64_t ip;
		uint32_t n;

		if (in_driver) {
			/* call F0 from the driver; its return comes back to
			 * the jmp, which goes back to the call. */
			ip = cfg->base;
			if (s->out.len - s->since_psb >= cfg->psb_period && on(s))
				psb(s, ip);
			err = push(s, UINT32_MAX, 0);
			if (err < 0)
				return err;
			count(s, 1);
			if (on(s)) {
				t->calls++;
				t->f0_calls++;
				rs_push(s, cfg->base + 5);
			}
			executed++;
			tick(s, 1);
			in_driver = false;
			f = 0;
			b = 0;
			cross(s, s->funcs[0].addr);
			continue;
		}
		bl = &s->funcs[f].blocks[b];
		ip = bl->addr;
		/* PSB at an instruction boundary, between blocks. */
		if (s->out.len - s->since_psb >= cfg->psb_period && on(s))
			psb(s, ip);
		/* Asynchronous happenings at the block start. */
		if (!s->traced && s->lost_blocks && s->inside && --s->lost_blocks == 0) {
			/* The overflow resolves: OVF, FUP where we are. */
			s->traced = true;
			s->rs_top = s->rs_bottom = 0;
			put_simple(s, ppt_ovf);
			s->last_ip = 0; /* OVF resets IP compression */
			put_ip(s, ppt_fup, ip, false);
			t->overflows++;
		}
		if (cfg->interrupt_ppm && on(s) && rnd_below(s, 1000000) < cfg->interrupt_ppm) {
			/* User-only tracing: the interrupt disables tracing
			 * (FUP, TIP.PGD) and the return enables it again. */
			put_ip(s, ppt_fup, ip, false);
			put_ip(s, ppt_tip_pgd, 0, true);
			tick(s, 200);
			resume(s, ip);
			t->interrupts++;
		}
		n = bl->nfill + (bl->term == T_NONE ? 0 : 1);
		executed += n;
		count(s, n);
		tick(s, n);
		switch (bl->term) {
		case T_NONE:
			b++;
			break;
		case T_COND:
		case T_LOOP: {
			bool taken;

			if (bl->term == T_LOOP && cfg->biased) {
				/* A counted loop: the back edge is taken
				 * trip - 1 times, then falls through. */
				if (s->loop_block != b) {
					s->loop_block = b;
					s->loop_left = bl->prob;
				}
				taken = --s->loop_left > 0;
				if (!taken)
					s->loop_block = UINT32_MAX;
			} else {
				taken = rnd_below(s, 100) < bl->prob;
			}

			if (on(s)) {
				tnt(s, taken);
				t->cond++;
				t->cond_taken += taken;
				t->cond_to_target +=
				    taken || s->funcs[f].blocks[bl->target].addr == bl->next_addr;
				overflow_here(s);
			}
			b = taken ? bl->target : b + 1;
			break;
		}
		case T_JMP:
			b = bl->target;
			break;
		case T_CALL:
		case T_ICALL: {
			uint32_t callee = bl->term == T_CALL
					      ? bl->target
					      : f + 1 + rnd_below(s, s->nfuncs - f - 1);
			uint64_t to = s->funcs[callee].addr;

			err = push(s, f, b + 1);
			if (err < 0)
				return err;
			if (on(s)) {
				/* A decoder decodes the call (and pushes its
				 * return address) also when it leaves the
				 * filter: then TIP.PGD is its packet. */
				t->calls++;
				rs_push(s, bl->next_addr);
				if (bl->term == T_ICALL) {
					/* Its target is in its TIP, or in the
					 * TIP.PGD when it leaves. */
					if (in_filter(s, to))
						put_ip(s, ppt_tip, to, false);
					t->indirect++;
				}
			}
			cross(s, to);
			f = callee;
			b = 0;
			break;
		}
		case T_IJMP: {
			uint32_t nb = s->funcs[f].nblocks;
			uint32_t to = b + 1 + rnd_below(s, nb - b - 1);

			if (on(s)) {
				put_ip(s, ppt_tip, s->funcs[f].blocks[to].addr, false);
				t->indirect++;
				overflow_here(s);
			}
			b = to;
			break;
		}
		case T_SYSCALL:
			if (on(s)) {
				put_ip(s, ppt_tip_pgd, 0, true);
				tick(s, 500);
				resume(s, bl->next_addr);
				t->syscalls++;
			}
			b++;
			break;
		case T_RET: {
			struct frame fr = s->stack[--s->depth];
			uint64_t to = fr.func == UINT32_MAX
					  ? cfg->base + 5
					  : s->funcs[fr.func].blocks[fr.block].addr;

			if (on(s)) {
				/* A return that leaves the filter is decoded
				 * too, with TIP.PGD for its packet; it pops
				 * nothing (a decoder pops compressed
				 * returns only). */
				t->returns++;
				if (in_filter(s, to)) {
					if (!cfg->no_retcomp && rs_pop(s, to))
						tnt(s, true);
					else
						put_ip(s, ppt_tip, to, false);
				}
			}
			cross(s, to);
			s->loop_block = fr.loop_block;
			s->loop_left = fr.loop_left;
			if (fr.func == UINT32_MAX) {
				/* Back in the driver: the jmp, then the call. */
				executed++;
				count(s, 1);
				in_driver = true;
			} else {
				f = fr.func;
				b = fr.block;
			}
			break;
		}
		}
	}
	/* Tracing stops where the next block would start: a TIP.PGD with
	 * that address lets a decoder stop exactly there. */
	if (on(s))
		put_ip(s, ppt_tip_pgd, in_driver ? cfg->base : s->funcs[f].blocks[b].addr, false);
	flush_tnt(s);
	return s->out.err;
}

int ptsynth_generate(const struct ptsynth_config *cfg, struct ptsynth *res)
{
	struct sim s;
	struct pt_config pcfg;
	int err;

	if (!cfg || !res || cfg->nfuncs < 2 || !cfg->psb_period)
		return -EINVAL;
	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	s.cfg = cfg;
	s.res = res;
	s.rng = cfg->seed ? cfg->seed : 1;
	s.nfuncs = cfg->nfuncs;
	res->cpuid_0x15_eax = 1;
	res->cpuid_0x15_ebx = 100;
	s.funcs = calloc(cfg->nfuncs, sizeof(*s.funcs));
	if (!s.funcs)
		return -ENOMEM;
	pt_config_init(&pcfg);
	pcfg.begin = s.out.scratch;
	pcfg.end = s.out.scratch + sizeof(s.out.scratch);
	s.out.enc = pt_alloc_encoder(&pcfg);
	err = s.out.enc ? layout(&s) : -ENOMEM;
	if (err == 0 && cfg->filter_funcs) {
		/* Functions are laid out in order: the range runs from the
		 * first one's entry to the end of the last one's code. */
		if (cfg->filter_first + cfg->filter_funcs > s.nfuncs) {
			err = -EINVAL;
		} else {
			const struct func *last =
			    &s.funcs[cfg->filter_first + cfg->filter_funcs - 1];

			res->filter_lo = s.funcs[cfg->filter_first].addr;
			res->filter_hi = last->blocks[last->nblocks - 1].next_addr;
		}
	}
	if (cfg->vmentry) {
		res->cpu_family = 6;
		res->cpu_model = 85;
		res->cpu_stepping = 4;
	}
	if (err == 0) {
		s.tsc = 0x100000;
		err = run(&s);
	}
	if (err == 0) {
		res->pt = s.out.buf;
		res->pt_len = s.out.len;
		s.out.buf = NULL;
	}
	for (uint32_t i = 0; i < s.nfuncs; i++)
		free(s.funcs[i].blocks);
	free(s.funcs);
	free(s.stack);
	free(s.out.buf);
	pt_free_encoder(s.out.enc);
	if (err < 0)
		ptsynth_free(res);
	return err;
}

void ptsynth_free(struct ptsynth *r)
{
	if (!r)
		return;
	free(r->code);
	free(r->pt);
	free(r->func_addr);
	memset(r, 0, sizeof(*r));
}
