/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/decoder/test_block.c - hwt_dec_block_insns (decoder/block.c): a
 * block record's instructions, the same whatever engine made the record.
 *
 * Ground truth: the synthetic programs of tests/lib/ptsynth.c, whose
 * instruction count is known. Each engine's block records, expanded, must
 * give that many instructions and the very same sequence of addresses: the
 * FAST and LIBIPT engines' cached basic blocks, and the PTXED engine's
 * libipt blocks, which run on across direct calls and jumps (with and
 * without ptxed's --block:end-on-call / end-on-jump).
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

#include "decoder/decoder.h"
#include "tests/lib/ptsynth.h"
#include "tests/lib/testutil.h"

/* The instruction stream, as a count and a running hash (FNV-1a over the
 * addresses), and the first addresses for a readable failure. */
struct stream {
	uint64_t n, hash, blocks, ptxed_like; /* blocks running across a
					       * direct call or jump */
	uint64_t first[64];
	uint64_t *ips;
	size_t cap;
	int err;
};

static int on_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct stream *s = ctx;
	int got;

	if (rec->type != HWT_DEC_REC_BLOCK)
		return 0;
	if (rec->u.block.ninsn > s->cap) {
		uint64_t *p = realloc(s->ips, rec->u.block.ninsn * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->ips = p;
		s->cap = rec->u.block.ninsn;
	}
	got = hwt_dec_block_insns(rec, s->ips, s->cap);
	if (got != (int)rec->u.block.ninsn || (got && s->ips[got - 1] != rec->u.block.end_ip)) {
		s->err = -HWT_EINTERNAL;
		return 0;
	}
	s->blocks++;
	for (int i = 0; i < got; i++) {
		if (s->n < HWT_ARRAY_SIZE(s->first))
			s->first[s->n] = s->ips[i];
		s->hash = (s->hash ^ s->ips[i]) * 0x100000001b3ull;
		s->n++;
		/* a jump away from the next address inside one block */
		if (i && s->ips[i] != s->ips[i - 1] + 1 && s->ips[i] < s->ips[i - 1])
			s->ptxed_like++;
	}
	return 0;
}

static void decode(const struct ptsynth *w, uint32_t engine, uint32_t flags, struct stream *s)
{
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *img;
	struct hwt_dec *dec;
	struct hwt_dec_config cfg;
	struct hwt_dec_sink sink;

	memset(s, 0, sizeof(*s));
	s->hash = 0xcbf29ce484222325ull;
	assert_int_equal(hwt_dec_icache_alloc(&ic, NULL), 0);
	assert_int_equal(hwt_dec_image_alloc(&img, ic, "synth"), 0);
	assert_int_equal(hwt_dec_image_add_mem(img, w->code, w->code_size, w->base, "code"), 0);
	hwt_dec_config_init(&cfg);
	cfg.engine = engine;
	cfg.flags = flags;
	cfg.mtc_freq = 3;
	cfg.cpuid_0x15_eax = w->cpuid_0x15_eax;
	cfg.cpuid_0x15_ebx = w->cpuid_0x15_ebx;
	assert_int_equal(hwt_dec_alloc(&dec, &cfg, ic), 0);
	assert_int_equal(hwt_dec_set_context(dec, 1, 1, img), 0);
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.want = HWT_DEC_WANT(HWT_DEC_REC_BLOCK);
	sink.rec = on_rec;
	sink.ctx = s;
	assert_int_equal(hwt_dec_add_sink(dec, &sink), 0);
	assert_int_equal(hwt_dec_decode(dec, w->pt, w->pt_len), 0);
	hwt_dec_free(dec);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
	free(s->ips);
	s->ips = NULL;
	assert_int_equal(s->err, 0);
}

static void same_stream(const struct stream *a, const struct stream *b, const char *what)
{
	if (a->n != b->n || a->hash != b->hash) {
		print_message("%s: %" PRIu64 " instructions, FAST %" PRIu64 "\n", what, b->n, a->n);
		for (size_t i = 0; i < HWT_ARRAY_SIZE(a->first) && i < a->n && i < b->n; i++) {
			if (a->first[i] != b->first[i]) {
				print_message("first difference at %zu: %#" PRIx64 " vs %#" PRIx64
					      "\n",
					      i, a->first[i], b->first[i]);
				break;
			}
		}
	}
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->hash, b->hash);
}

/* Every engine's blocks expand to the program's instructions, in order. */
static void test_every_engine_same_instructions(void **state)
{
	struct ptsynth_config cfg;
	struct ptsynth w;
	struct stream fast, ipt, ptxed, on_call, on_jump;

	(void)state;
	ptsynth_config_init(&cfg);
	cfg.seed = 16;
	cfg.insns = 200000;
	cfg.syscall_ppm = 2000;
	assert_int_equal(ptsynth_generate(&cfg, &w), 0);

	decode(&w, HWT_DEC_ENGINE_FAST, 0, &fast);
	assert_int_equal(fast.n, w.truth.insns);
	decode(&w, HWT_DEC_ENGINE_LIBIPT, 0, &ipt);
	same_stream(&fast, &ipt, "LIBIPT");
	decode(&w, HWT_DEC_ENGINE_PTXED, 0, &ptxed);
	same_stream(&fast, &ptxed, "PTXED");
	/* libipt's blocks are longer: they run on across direct branches,
	 * which a walk by instruction size alone would get wrong */
	assert_true(ptxed.blocks < fast.blocks);
	assert_true(ptxed.ptxed_like > 0);
	decode(&w, HWT_DEC_ENGINE_PTXED, HWT_DEC_F_END_ON_CALL, &on_call);
	same_stream(&fast, &on_call, "PTXED end-on-call");
	decode(&w, HWT_DEC_ENGINE_PTXED, HWT_DEC_F_END_ON_CALL | HWT_DEC_F_END_ON_JUMP, &on_jump);
	same_stream(&fast, &on_jump, "PTXED end-on-call/jump");
	assert_true(on_jump.blocks > ptxed.blocks);
	ptsynth_free(&w);
}

/* The contract's edges: a short array, not a block, unreadable code. */
static void test_edges(void **state)
{
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *img;
	struct hwt_dec_rec rec;
	/* mov eax, 1; jmp +2; (2 bytes skipped) nop; ret */
	static const uint8_t code[] = {0xb8, 0x01, 0x00, 0x00, 0x00, 0xeb,
				       0x02, 0xcc, 0xcc, 0x90, 0xc3};
	uint64_t ips[8];

	(void)state;
	assert_int_equal(hwt_dec_icache_alloc(&ic, NULL), 0);
	assert_int_equal(hwt_dec_image_alloc(&img, ic, "edges"), 0);
	assert_int_equal(hwt_dec_image_add_mem(img, code, sizeof(code), 0x1000, "code"), 0);
	memset(&rec, 0, sizeof(rec));
	rec.type = HWT_DEC_REC_BLOCK;
	rec.u.block.ip = 0x1000;
	rec.u.block.end_ip = 0x100a;
	rec.u.block.ninsn = 4;
	rec.u.block.mode = HWT_DEC_MODE_64;
	rec.u.block.image = img;
	/* a PTXED-engine block: the jump is followed */
	assert_int_equal(hwt_dec_block_insns(&rec, ips, 8), 4);
	assert_int_equal(ips[0], 0x1000);
	assert_int_equal(ips[1], 0x1005);
	assert_int_equal(ips[2], 0x1009);
	assert_int_equal(ips[3], 0x100a);
	assert_int_equal(hwt_dec_block_insns(&rec, ips, 2), 2);
	assert_int_equal(hwt_dec_block_insns(&rec, NULL, 0), 0);
	assert_int_equal(hwt_dec_block_insns(&rec, NULL, 1), -HWT_EINVAL);
	/* code that is not there: the walk stops at it */
	rec.u.block.ip = 0x2000;
	assert_int_equal(hwt_dec_block_insns(&rec, ips, 8), 1);
	assert_int_equal(ips[0], 0x2000);
	rec.type = HWT_DEC_REC_CALL;
	assert_int_equal(hwt_dec_block_insns(&rec, ips, 8), -HWT_EINVAL);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_engine_same_instructions),
	    cmocka_unit_test(test_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
