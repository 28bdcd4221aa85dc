/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/ptprint/test_ptprint.c - the PT record printer (ptprint/): each
 * view's exact lines for records whose content is known (built here, over a
 * few instructions of real x86 code), durations in their units, ptxed's
 * block walk with its messages, the sized-config rule and write errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptprint/ptprint.h"
#include "tests/lib/testutil.h"

/* mov eax, 1; jmp +2; (2 bytes skipped) nop; ret  at 0x1000 */
static const uint8_t code[] = {0xb8, 0x01, 0x00, 0x00, 0x00, 0xeb, 0x02, 0xcc, 0xcc, 0x90, 0xc3};

struct out {
	char text[8192];
	size_t len;
	int fail; /* the write callback's error, when set */
};

static int w(void *ctx, const char *text, size_t len)
{
	struct out *o = ctx;

	if (o->fail)
		return o->fail;
	assert_true(o->len + len < sizeof(o->text));
	memcpy(o->text + o->len, text, len);
	o->len += len;
	o->text[o->len] = 0;
	return 0;
}

/* Symbols: "f" from 0x1000, in "/bin/obj"; nothing elsewhere. */
static int sym(void *ctx, int32_t pid, uint64_t time, uint64_t ip, struct hwt_ptp_sym *s)
{
	(void)ctx;
	(void)pid;
	(void)time;
	if (ip < 0x1000 || ip >= 0x2000)
		return -HWT_ENOSYM;
	s->function = "f";
	s->offset = ip - 0x1000;
	s->object = "/bin/obj";
	return 0;
}

static const char *comm(void *ctx, int32_t tid, uint64_t time)
{
	(void)ctx;
	(void)time;
	return tid == 7 ? "app" : NULL;
}

static struct hwt_ptp *printer(struct hwt_ptp_config *cfg, struct out *o)
{
	struct hwt_ptp *p;

	cfg->write = w;
	cfg->ctx = o;
	assert_int_equal(hwt_ptp_alloc(&p, cfg), 0);
	return p;
}

static void rec_init(struct hwt_dec_rec *r, uint32_t type, uint64_t ns)
{
	memset(r, 0, sizeof(*r));
	r->type = type;
	r->pid = r->tid = 7;
	r->flags = HWT_DEC_RF_TIME;
	r->time = ns;
	r->tsc = ns * 2;
}

/* A PTXED-engine block (no cached basic block): walked across the jump. */
static void block_rec(struct hwt_dec_rec *r, const struct hwt_dec_image *img)
{
	rec_init(r, HWT_DEC_REC_BLOCK, 1500000000);
	r->u.block.ip = 0x1000;
	r->u.block.end_ip = 0x100a;
	r->u.block.ninsn = 4;
	r->u.block.branch = HWT_DEC_BR_RETURN;
	r->u.block.next_ip = 0x3000;
	r->u.block.mode = HWT_DEC_MODE_64;
	r->u.block.image = img;
}

static void image(struct hwt_dec_icache **ic, struct hwt_dec_image **img)
{
	assert_int_equal(hwt_dec_icache_alloc(ic, NULL), 0);
	assert_int_equal(hwt_dec_image_alloc(img, *ic, "code"), 0);
	assert_int_equal(hwt_dec_image_add_mem(*img, code, sizeof(code), 0x1000, "code"), 0);
}

static void test_views(void **state)
{
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *img;
	struct hwt_ptp_config cfg;
	struct hwt_dec_rec r;
	struct hwt_ptp *p;
	struct out o = {0};

	(void)state;
	image(&ic, &img);
	hwt_ptp_config_init(&cfg);
	assert_int_equal(hwt_ptp_parse_itrace("ibcrev", &cfg.views), 0);
	cfg.tconv.valid = true;
	cfg.symbolize = sym;
	cfg.comm = comm;
	p = printer(&cfg, &o);
	block_rec(&r, img);
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	rec_init(&r, HWT_DEC_REC_CALL, 1500000001);
	r.u.call.from = 0x1005;
	r.u.call.to = 0x5000;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	r.flags |= HWT_DEC_RF_ASYNC;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	rec_init(&r, HWT_DEC_REC_RETURN, 1500000002);
	r.u.ret.from = 0x100a;
	r.u.ret.to = 0x1002;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	r.flags |= HWT_DEC_RF_UNWOUND; /* no return instruction ran */
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	rec_init(&r, HWT_DEC_REC_GAP, 1500000003);
	r.u.gap.kind = HWT_DEC_GAP_LOST;
	r.u.gap.err = -HWT_EDROPPED;
	r.u.gap.size = 4096;
	r.offset = 0x40;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	rec_init(&r, HWT_DEC_REC_EVENT, 1500000004);
	r.u.event.type = HWT_DEC_EV_DISABLED;
	r.u.event.ip = 0x1009;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	r.flags |= HWT_DEC_RF_STATUS; /* PSB+ status: not an event */
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	rec_init(&r, HWT_DEC_REC_SWITCH, 1500000005);
	r.flags = 0;
	r.u.sw.prev_pid = 3;
	r.u.sw.prev_tid = 4;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	assert_int_equal(hwt_ptp_flush(p), 0);
	assert_string_equal(
	    o.text,
	    "             app      7/7               1.500000: insn:             1000 f+0x0 "
	    "(/bin/obj)\n"
	    "             app      7/7               1.500000: insn:             1005 f+0x5 "
	    "(/bin/obj)\n"
	    "             app      7/7               1.500000: insn:             1009 f+0x9 "
	    "(/bin/obj)\n"
	    "             app      7/7               1.500000: insn:             100a f+0xa "
	    "(/bin/obj)\n"
	    "             app      7/7               1.500000: branch:             100a f+0xa "
	    "(/bin/obj) =>             3000 [unknown] ([unknown]) ret\n"
	    "             app      7/7               1.500000: call:             1005 f+0x5 "
	    "(/bin/obj) =>             5000 [unknown] ([unknown])\n"
	    "             app      7/7               1.500000: interrupt:             1005 f+0x5 "
	    "(/bin/obj) =>             5000 [unknown] ([unknown])\n"
	    "             app      7/7               1.500000: return:             100a f+0xa "
	    "(/bin/obj) =>             1002 f+0x2 (/bin/obj)\n"
	    "             app      7/7               1.500000: trace lost: data dropped "
	    "(offset 0x40, 4096 bytes)\n"
	    "             app      7/7               1.500000: event: disabled at             1009 "
	    "f+0x9 (/bin/obj)\n"
	    "             app      7/7                      ?: switch: from 3/4\n");
	hwt_ptp_free(p);

	/* A raw trace: no symbols, no names, TSC times in nanoseconds' width. */
	memset(&o, 0, sizeof(o));
	hwt_ptp_config_init(&cfg);
	cfg.views = HWT_PTP_INSN | HWT_PTP_BRANCH;
	cfg.ns = true;
	p = printer(&cfg, &o);
	block_rec(&r, img);
	r.tid = r.pid = -1;
	r.u.block.branch = HWT_DEC_BR_COND; /* not taken: no branch line */
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	assert_int_equal(hwt_ptp_flush(p), 0);
	assert_string_equal(o.text, "     -/-                3000000000: insn:             1000\n"
				    "     -/-                3000000000: insn:             1005\n"
				    "     -/-                3000000000: insn:             1009\n"
				    "     -/-                3000000000: insn:             100a\n");
	hwt_ptp_free(p);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
}

static void ret_rec(struct hwt_dec_rec *r, uint32_t depth, uint64_t tsc, uint64_t call_tsc)
{
	rec_init(r, HWT_DEC_REC_RETURN, 0);
	r->tsc = tsc;
	r->time = tsc;
	r->depth = depth;
	r->u.ret.func = 0x1000;
	r->u.ret.call_tsc = call_tsc;
	r->u.ret.insns = 42;
}

/* Durations in the unit that reads best; TSC ticks without a conversion. */
static void test_flow(void **state)
{
	struct hwt_ptp_config cfg;
	struct hwt_dec_rec r;
	struct hwt_ptp *p;
	struct out o = {0};

	(void)state;
	hwt_ptp_config_init(&cfg);
	cfg.flow = true;
	cfg.symbolize = sym;
	/* perf time = TSC (mult 1, shift 0, zero 0) */
	cfg.tconv.valid = true;
	cfg.tconv.time_mult = 1;
	p = printer(&cfg, &o);
	rec_init(&r, HWT_DEC_REC_CALL, 0);
	r.flags = 0;
	r.depth = 2;
	r.u.call.to = 0x1000;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	ret_rec(&r, 1, 112, 100);
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	ret_rec(&r, 0, 1500 + 100, 100);
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	ret_rec(&r, 0, 2000000 + 100, 100);
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	ret_rec(&r, 0, 3000000000ull + 100, 100);
	r.flags |= HWT_DEC_RF_UNWOUND;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	ret_rec(&r, 0, 200, 100);
	r.flags |= HWT_DEC_RF_UNKNOWN_FRAME;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	assert_int_equal(hwt_ptp_flush(p), 0);
	assert_string_equal(
	    o.text, "     7/7                      ?:   -> f (/bin/obj)\n"
		    "     7/7               0.000000:   <- f (/bin/obj) 12 ns, 42 insns\n"
		    "     7/7               0.000001: <- f (/bin/obj) 1.500 us, 42 insns\n"
		    "     7/7               0.002000: <- f (/bin/obj) 2.000 ms, 42 insns\n"
		    "     7/7               3.000000: <- f (/bin/obj) 3.000 s, 42 insns "
		    "[unwound]\n"
		    "     7/7               0.000000: <- [frame from before the trace] ?\n");
	hwt_ptp_free(p);

	memset(&o, 0, sizeof(o));
	hwt_ptp_config_init(&cfg);
	cfg.flow = true;
	p = printer(&cfg, &o);
	ret_rec(&r, 0, 112, 100);
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	assert_int_equal(hwt_ptp_flush(p), 0);
	assert_string_equal(
	    o.text, "     7/7                    112: <- 0000000000001000 12 tsc, 42 insns\n");
	hwt_ptp_free(p);
}

/* ptxed's block: the walk, its messages, the instruction text. */
static void test_ptxed(void **state)
{
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *img;
	struct hwt_ptp_config cfg;
	struct hwt_dec_rec r;
	struct hwt_ptp *p;
	struct out o = {0};

	(void)state;
	image(&ic, &img);
	hwt_ptp_config_init(&cfg);
	cfg.format = HWT_PTP_PTXED;
	cfg.ptxed = HWT_PTP_X_NO_INST;
	p = printer(&cfg, &o);
	block_rec(&r, img);
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	/* running off the code: ptxed's fetch error, then the walk did not
	 * end at the block's last instruction */
	r.u.block.ip = 0x1009;
	r.u.block.end_ip = 0x100f;
	r.u.block.ninsn = 3;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	assert_int_equal(hwt_ptp_flush(p), 0);
	assert_string_equal(
	    o.text, "0000000000001000\n0000000000001005\n0000000000001009\n000000000000100a\n"
		    "0000000000001009\n000000000000100a\n000000000000100b [fetch error: no "
		    "memory mapped at this address]\n"
		    "[0, 100b: reconstruct error: decoder out of sync]\n");
	hwt_ptp_free(p);

	memset(&o, 0, sizeof(o));
	cfg.ptxed = HWT_PTP_X_SHOW_BLOCKS;
	p = printer(&cfg, &o);
	block_rec(&r, img);
	r.u.block.ninsn = 1;
	r.u.block.end_ip = 0x1000;
	assert_int_equal(hwt_ptp_print(p, &r), 0);
	assert_int_equal(hwt_ptp_flush(p), 0);
	assert_true(hwt_test_contains(o.text, "[block]\n0000000000001000  mov"));
	hwt_ptp_free(p);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
}

/* libbpf's rule for the sized config, and a failing output. */
static void test_contract(void **state)
{
	struct {
		struct hwt_ptp_config cfg;
		uint64_t newer; /* a field of a newer hwtrace */
	} big;
	struct hwt_ptp_config cfg;
	struct hwt_ptp *p;
	struct hwt_dec_rec r;
	struct out o = {0};
	uint32_t v;

	(void)state;
	assert_int_equal(hwt_ptp_parse_itrace("ibcrev", &v), 0);
	assert_int_equal(v, 0x3f);
	assert_int_equal(hwt_ptp_parse_itrace("ix", &v), -HWT_EINVAL);
	hwt_ptp_config_init(&cfg);
	assert_int_equal(hwt_ptp_alloc(&p, &cfg), -HWT_EINVAL); /* no write callback */
	cfg.write = w;
	cfg.ctx = &o;
	cfg.views = 1u << 6;
	assert_int_equal(hwt_ptp_alloc(&p, &cfg), -HWT_EINVAL); /* unknown view */
	cfg.views = HWT_PTP_CALL;
	/* an older caller's smaller config: up to and with write */
	cfg.size = offsetof(struct hwt_ptp_config, write) + sizeof(cfg.write);
	assert_int_equal(hwt_ptp_alloc(&p, &cfg), 0);
	hwt_ptp_free(p);
	cfg.size = 4;
	assert_int_equal(hwt_ptp_alloc(&p, &cfg), -HWT_EINVAL);
	/* a newer caller's larger one: only when what we do not know is 0 */
	memset(&big, 0, sizeof(big));
	big.cfg = cfg;
	big.cfg.size = sizeof(big);
	assert_int_equal(hwt_ptp_alloc(&p, &big.cfg), 0);
	hwt_ptp_free(p);
	big.newer = 1;
	assert_int_equal(hwt_ptp_alloc(&p, &big.cfg), -HWT_EINVAL);

	cfg.size = sizeof(cfg);
	o.fail = -EPIPE;
	assert_int_equal(hwt_ptp_alloc(&p, &cfg), 0);
	rec_init(&r, HWT_DEC_REC_CALL, 1);
	assert_int_equal(hwt_ptp_print(p, &r), 0); /* buffered */
	assert_int_equal(hwt_ptp_flush(p), -EPIPE);
	assert_int_equal(hwt_ptp_print(p, &r), -EPIPE); /* stopped */
	hwt_ptp_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_views),
	    cmocka_unit_test(test_flow),
	    cmocka_unit_test(test_ptxed),
	    cmocka_unit_test(test_contract),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
