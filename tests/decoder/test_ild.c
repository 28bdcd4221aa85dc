/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/decoder/test_ild.c - the length decoder's tables (decoder/ild.c)
 * against capstone, the decoder they stand in for: for every opcode of the
 * one- and two-byte maps, behind each prefix combination the tables read,
 * with ModRM forms of every mod, reg and r/m shape, SIB bases, operand
 * bytes that follow and cut short, in 64- and 32-bit code, and on random
 * bytes: wherever the tables decode an instruction, capstone decodes the
 * same length, branch class and target. The common instructions of
 * compiled code must be the tables' (a table that declined everything
 * would pass the rest).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/dec_int.h"

static struct hwt_dec_icache *ic;
static uint64_t claimed, compared;

/* One case: the tables' answer, when they give one, is capstone's. */
static void check(const uint8_t *b, size_t len, uint64_t ip, enum hwt_dec_mode mode)
{
	struct hwt_dec_insn t, c;
	int err;

	compared++;
	if (!hwt_dec_ild_table(b, len, ip, mode, &t))
		return;
	claimed++;
	err = hwt_dec_ild_capstone(ic, b, len, ip, mode, &c);
	if (err < 0 || t.size != c.size || t.branch != c.branch || t.has_target != c.has_target ||
	    (c.has_target && t.target != c.target)) {
		char hex[64] = "";

		for (size_t i = 0; i < len && i < 15; i++)
			snprintf(hex + 3 * i, sizeof(hex) - 3 * i, "%02x ", b[i]);
		fail_msg("%d-bit mode, bytes %s: tables size %u class %u target %" PRIx64
			 "; capstone %s size %u class %u target %" PRIx64,
			 mode == HWT_DEC_MODE_64 ? 64 : 32, hex, t.size, t.branch, t.target,
			 err < 0 ? "rejects," : "", c.size, c.branch, c.target);
	}
}

static const uint8_t prefixes[][3] = {
    {0},
    {1, 0x66},
    {1, 0x67},
    {1, 0xf3},
    {1, 0xf2},
    {1, 0xf0},
    {1, 0x2e},
    {1, 0x64},
    {1, 0x3e},
    {2, 0x66, 0x67},
    {2, 0x66, 0xf3},
    {1, 0x40},
    {1, 0x41},
    {1, 0x48},
    {1, 0x4c},
    {2, 0x66, 0x48},
    {2, 0x48, 0x66},
    {2, 0xf3, 0x48},
    {2, 0x64, 0x48},
};

/* The ModRM forms: every reg with each mod and the r/m values that change
 * the length (4: SIB, 5: disp32 or RIP-relative, 6: 16-bit disp16). */
static void modrms(uint8_t *out, size_t *n)
{
	static const uint8_t rms[] = {0, 4, 5, 6};

	*n = 0;
	for (unsigned int mod = 0; mod < 4; mod++)
		for (unsigned int reg = 0; reg < 8; reg++)
			for (size_t k = 0; k < sizeof(rms); k++)
				out[(*n)++] = (uint8_t)(mod << 6 | reg << 3 | rms[k]);
}

static void test_every_opcode(void **state)
{
	static const uint8_t sibs[] = {0x24, 0x25, 0x65};
	static const enum hwt_dec_mode modes[] = {HWT_DEC_MODE_64, HWT_DEC_MODE_32};
	uint8_t forms[128];
	size_t nforms;

	(void)state;
	modrms(forms, &nforms);
	for (size_t m = 0; m < 2; m++) {
		for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
			for (unsigned int two = 0; two < 2; two++) {
				for (unsigned int op = 0; op < 256; op++) {
					for (size_t f = 0; f < nforms; f++) {
						for (size_t s = 0; s < sizeof(sibs); s++) {
							uint8_t b[16];
							size_t n = 0;

							/* A SIB only matters with r/m 4. */
							if (s && ((forms[f] & 7) != 4 ||
								  forms[f] >> 6 == 3))
								break;
							for (unsigned int k = 0; k < prefixes[p][0];
							     k++)
								b[n++] = prefixes[p][1 + k];
							if (two)
								b[n++] = 0x0f;
							b[n++] = (uint8_t)op;
							b[n++] = forms[f];
							b[n++] = sibs[s];
							while (n < sizeof(b))
								b[n] = (uint8_t)(0x91 + 7 * n), n++;
							check(b, 15, 0x7ffff7a00000ull + op,
							      modes[m]);
							/* Cut short: the tables
							 * must not read on. */
							check(b, 1 + (op + f) % 6, 0x401000,
							      modes[m]);
						}
					}
				}
			}
		}
	}
	printf("tables: %" PRIu64 " of %" PRIu64 " cases decoded, each as capstone\n", claimed,
	       compared);
	assert_true(claimed > compared / 8);
}

static void test_random_bytes(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int i = 0; i < 400000; i++) {
		uint8_t b[15];

		for (size_t k = 0; k < sizeof(b); k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			b[k] = (uint8_t)x;
		}
		check(b, sizeof(b), 0x7ffff7a00000ull + (x & 0xffff),
		      (i & 1) ? HWT_DEC_MODE_32 : HWT_DEC_MODE_64);
	}
}

/* The common instructions of compiled code are the tables'. */
/* Opcodes whose valid forms the tables list by ModRM byte (x87's register
 * forms, the fences of 0F AE): every ModRM, behind each prefix. */
static void test_every_modrm(void **state)
{
	static const uint8_t ops[][2] = {{0, 0xd8}, {0, 0xd9}, {0, 0xda}, {0, 0xdb}, {0, 0xdc},
					 {0, 0xdd}, {0, 0xde}, {0, 0xdf}, {1, 0x18}, {1, 0xae},
					 {1, 0xba}, {1, 0xb1}, {1, 0xc1}, {0, 0x81}, {0, 0xf7},
					 {0, 0xff}, {1, 0x01}};
	static const enum hwt_dec_mode modes[] = {HWT_DEC_MODE_64, HWT_DEC_MODE_32};
	uint64_t before = claimed;

	(void)state;
	for (size_t m = 0; m < 2; m++)
		for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++)
			for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
				for (unsigned int modrm = 0; modrm < 256; modrm++) {
					uint8_t b[15];
					size_t n = 0;

					for (unsigned int k = 0; k < prefixes[p][0]; k++)
						b[n++] = prefixes[p][1 + k];
					if (ops[o][0])
						b[n++] = 0x0f;
					b[n++] = ops[o][1];
					b[n++] = (uint8_t)modrm;
					while (n < sizeof(b))
						b[n] = (uint8_t)(0x24 + 5 * n), n++;
					check(b, sizeof(b), 0x401000, modes[m]);
				}
	assert_true(claimed - before > 1000);
}

static void test_common_code(void **state)
{
	static const struct {
		uint8_t len, b[15];
		uint8_t size, branch;
	} cases[] = {
	    {4, {0xf3, 0x0f, 0x1e, 0xfa}, 4, HWT_DEC_BR_NONE},	      /* endbr64 */
	    {1, {0x55}, 1, HWT_DEC_BR_NONE},			      /* push rbp */
	    {3, {0x48, 0x89, 0xe5}, 3, HWT_DEC_BR_NONE},	      /* mov rbp, rsp */
	    {5, {0xe8, 0x10, 0, 0, 0}, 5, HWT_DEC_BR_CALL},	      /* call rel32 */
	    {2, {0x74, 0x05}, 2, HWT_DEC_BR_COND},		      /* je rel8 */
	    {6, {0x0f, 0x85, 0, 1, 0, 0}, 6, HWT_DEC_BR_COND},	      /* jne rel32 */
	    {1, {0xc3}, 1, HWT_DEC_BR_RETURN},			      /* ret */
	    {6, {0xff, 0x25, 0, 0x10, 0, 0}, 6, HWT_DEC_BR_IND_JUMP}, /* jmp [rip+x] */
	    {2, {0xff, 0xd0}, 2, HWT_DEC_BR_IND_CALL},		      /* call rax */
	    {9, {0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, 9, HWT_DEC_BR_NONE}, /* fs: */
	    {10, {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, HWT_DEC_BR_NONE},	    /* movabs */
	    {6, {0x66, 0x0f, 0x1f, 0x44, 0, 0}, 6, HWT_DEC_BR_NONE},		    /* nopw */
	    {2, {0x0f, 0x05}, 2, HWT_DEC_BR_FAR_CALL},				    /* syscall */
	    {2, {0xf3, 0xa4}, 2, HWT_DEC_BR_NONE},				    /* rep movsb */
	    {2, {0xf3, 0xc3}, 2, HWT_DEC_BR_RETURN},				    /* repz ret */
	    {5, {0xf3, 0x0f, 0x7f, 0x47, 0x10}, 5, HWT_DEC_BR_NONE},		    /* movdqu */
	    {5, {0xf2, 0x48, 0x0f, 0x2a, 0xc0}, 5, HWT_DEC_BR_NONE},		    /* cvtsi2sd */
	    {3, {0x0f, 0xae, 0xf8}, 3, HWT_DEC_BR_NONE},			    /* sfence */
	    {4, {0x0f, 0x18, 0x49, 0x80}, 4, HWT_DEC_BR_NONE},			    /* prefetcht0 */
	    {4, {0xf0, 0x0f, 0xb1, 0x17}, 4, HWT_DEC_BR_NONE}, /* lock cmpxchg */
	    {2, {0xd9, 0xee}, 2, HWT_DEC_BR_NONE},	       /* fldz */
	    {4, {0xdd, 0x5c, 0x24, 0x20}, 4, HWT_DEC_BR_NONE}, /* fstp qword */
	    {2, {0xf2, 0xc3}, 2, HWT_DEC_BR_RETURN},	       /* bnd ret */
	    {3, {0xf2, 0x75, 0x02}, 3, HWT_DEC_BR_COND},       /* bnd jne */
	    {3, {0x0f, 0x01, 0xc1}, 3, HWT_DEC_BR_FAR_CALL},   /* vmcall */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hwt_dec_insn t;

		assert_int_equal(
		    hwt_dec_ild_table(cases[i].b, cases[i].len, 0x401000, HWT_DEC_MODE_64, &t), 1);
		assert_int_equal(t.size, cases[i].size);
		assert_int_equal(t.branch, cases[i].branch);
		check(cases[i].b, cases[i].len, 0x401000, HWT_DEC_MODE_64);
	}
	/* INC and DEC r32 in 32-bit code (REX prefixes in 64-bit code). */
	for (uint8_t op = 0x40; op < 0x50; op++) {
		struct hwt_dec_insn t;
		const uint8_t b[] = {op, 0xc3};

		assert_int_equal(hwt_dec_ild_table(b, sizeof(b), 0x8048000, HWT_DEC_MODE_32, &t),
				 1);
		assert_int_equal(t.size, 1);
		check(b, sizeof(b), 0x8048000, HWT_DEC_MODE_32);
	}
}

static int setup(void **state)
{
	(void)state;
	return hwt_dec_icache_alloc(&ic, NULL) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_dec_icache_free(ic);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_opcode),
	    cmocka_unit_test(test_random_bytes),
	    cmocka_unit_test(test_every_modrm),
	    cmocka_unit_test(test_common_code),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
