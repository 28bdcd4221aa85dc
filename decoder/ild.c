/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/ild.c - instruction length decoding and classification, for the
 * basic-block cache and for ptxed-style instruction reconstruction: tables
 * for the common instructions of 64- and 32-bit code (cheap: building the
 * blocks of a cold decode went mostly to capstone), capstone for the rest.
 * tests/decoder/test_ild.c holds the tables equal to capstone on every
 * opcode, prefix and ModRM form they claim.
 *
 * The classes must agree with libipt's (pt_insn_class): the fast engine's
 * output is compared with libipt's on every test. libipt treats INT n, INT3,
 * INTO, INT1, SYSCALL, SYSENTER, VMCALL and far CALL as far calls; IRET,
 * SYSRET, SYSEXIT, far RET, VMLAUNCH and VMRESUME as far returns; far JMP as a
 * far jump; LOOP/LOOPcc and JrCXZ as conditional jumps. Capstone handles are
 * not safe for concurrent use, so they come from a small pool in the icache.
 *
 * Capstone is loaded on first use (dlopen), not linked: the 77,000
 * relocations of libcapstone.so.4 cost every process that links it about
 * 6 ms of CPU and 380 page faults at start, and most runs never get past
 * the tables (`hwtrace --version` took 15 ms with capstone and libpfm4
 * linked, 4 ms without them).
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/dec_int.h"

struct csh_box {
	csh handle;
	cs_insn *insn;
};

/* The capstone functions used here, from the library loaded on first use
 * (HWT_CAPSTONE_SONAME: the build's capstone, cmake/deps.cmake). */
static struct {
	cs_err (*open)(cs_arch arch, cs_mode mode, csh *handle);
	cs_err (*option)(csh handle, cs_opt_type type, size_t value);
	size_t (*disasm)(csh handle, const uint8_t *code, size_t size, uint64_t address,
			 size_t count, cs_insn **insn);
	bool (*disasm_iter)(csh handle, const uint8_t **code, size_t *size, uint64_t *address,
			    cs_insn *insn);
	cs_insn *(*malloc)(csh handle);
	void (*free)(cs_insn *insn, size_t count);
	cs_err (*close)(csh *handle);
} cs;
static int cs_status = -HWT_ELIB; /* 0 once loaded and warmed up */

/* Loads capstone, then sets up its shared tables: capstone does that on
 * its first detailed disassembly (it copies and sorts a static register
 * table for the Intel printer, without a lock), so it is done once here,
 * before handles can be used on several threads. */
static void capstone_load(void)
{
	static const uint8_t code[] = {0x90, 0x48, 0x89,
				       0xc3, 0xaa, 0xc3}; /* nop, mov, stosb, ret */
	static const char *const names[] = {"cs_open",	 "cs_option", "cs_disasm", "cs_disasm_iter",
					    "cs_malloc", "cs_free",   "cs_close"};
	void *const slots[] = {&cs.open,   &cs.option, &cs.disasm, &cs.disasm_iter,
			       &cs.malloc, &cs.free,   &cs.close};
	csh h;
	cs_insn *insn = NULL;
	size_t n;

	/* Each pointer has the type of capstone's prototype: comparing
	 * distinct pointer types does not compile, and sizeof evaluates
	 * nothing (nothing links capstone). */
	(void)sizeof(cs.open == &cs_open && cs.option == &cs_option && cs.disasm == &cs_disasm &&
		     cs.disasm_iter == &cs_disasm_iter && cs.malloc == &cs_malloc &&
		     cs.free == &cs_free && cs.close == &cs_close);
	if (hwt_dl_load(HWT_CAPSTONE_SONAME, names, slots, sizeof(names) / sizeof(names[0])) < 0)
		return;
	if (cs.open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return;
	cs.option(h, CS_OPT_DETAIL, CS_OPT_ON);
	n = cs.disasm(h, code, sizeof(code), 0x1000, 0, &insn);
	if (n)
		cs.free(insn, n);
	cs.close(&h);
	cs_status = 0;
}

/* 0, or -HWT_ELIB when capstone cannot be loaded. */
static int capstone_ready(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, capstone_load);
	return cs_status;
}

static int csh_take(struct hwt_dec_icache *ic, enum hwt_dec_mode mode, struct csh_box **out)
{
	struct csh_box *box = NULL;
	cs_mode cmode;

	if (capstone_ready() < 0)
		return -HWT_ELIB;
	pthread_mutex_lock(&ic->lock);
	if (ic->ncsh[mode])
		box = ic->csh_pool[mode][--ic->ncsh[mode]];
	pthread_mutex_unlock(&ic->lock);
	if (box) {
		*out = box;
		return 0;
	}
	switch (mode) {
	case HWT_DEC_MODE_16:
		cmode = CS_MODE_16;
		break;
	case HWT_DEC_MODE_32:
		cmode = CS_MODE_32;
		break;
	default:
		cmode = CS_MODE_64;
		break;
	}
	box = calloc(1, sizeof(*box));
	if (!box)
		return -ENOMEM;
	if (cs.open(CS_ARCH_X86, cmode, &box->handle) != CS_ERR_OK) {
		free(box);
		return -HWT_ELIB;
	}
	cs.option(box->handle, CS_OPT_DETAIL, CS_OPT_ON);
	box->insn = cs.malloc(box->handle);
	if (!box->insn) {
		cs.close(&box->handle);
		free(box);
		return -ENOMEM;
	}
	*out = box;
	return 0;
}

static void csh_give(struct hwt_dec_icache *ic, enum hwt_dec_mode mode, struct csh_box *box)
{
	bool kept = false;

	pthread_mutex_lock(&ic->lock);
	if (ic->ncsh[mode] == ic->cap_csh[mode]) {
		size_t ncap = ic->cap_csh[mode] ? ic->cap_csh[mode] * 2 : 4;
		void **p = realloc(ic->csh_pool[mode], ncap * sizeof(*p));

		if (p) {
			ic->csh_pool[mode] = p;
			ic->cap_csh[mode] = ncap;
		}
	}
	if (ic->ncsh[mode] < ic->cap_csh[mode]) {
		ic->csh_pool[mode][ic->ncsh[mode]++] = box;
		kept = true;
	}
	pthread_mutex_unlock(&ic->lock);
	if (!kept) {
		cs.free(box->insn, 1);
		cs.close(&box->handle);
		free(box);
	}
}

void hwt_dec_ild_pool_free(struct hwt_dec_icache *ic)
{
	for (int m = 0; m < 4; m++) {
		for (size_t i = 0; i < ic->ncsh[m]; i++) {
			struct csh_box *box = ic->csh_pool[m][i];

			cs.free(box->insn, 1);
			cs.close(&box->handle);
			free(box);
		}
		free(ic->csh_pool[m]);
		ic->csh_pool[m] = NULL;
		ic->ncsh[m] = ic->cap_csh[m] = 0;
	}
}

/* PTWRITE (F3 [REX.W] 0F AE /4, memory or register operand) is unknown to
 * capstone 4; libipt classifies it as ptic_ptwrite. */
static bool is_ptwrite(const uint8_t *b, size_t len)
{
	size_t i = 0;
	bool f3 = false;

	while (i < len && i < 14) {
		uint8_t c = b[i];

		if (c == 0xf3) {
			f3 = true;
			i++;
		} else if (c == 0x66 || c == 0x67 || c == 0x2e || c == 0x36 || c == 0x3e ||
			   c == 0x26 || c == 0x64 || c == 0x65) {
			i++;
		} else {
			break;
		}
	}
	if (i < len && (b[i] & 0xf0) == 0x40)
		i++;
	if (!f3 || i + 2 >= len)
		return false;
	return b[i] == 0x0f && b[i + 1] == 0xae && ((b[i + 2] >> 3) & 7) == 4;
}

/* Length of a PTWRITE at b (is_ptwrite() holds), from its ModRM/SIB and
 * displacement, or 0 when the bytes run out. */
static size_t ptwrite_size(const uint8_t *b, size_t len, enum hwt_dec_mode mode)
{
	size_t i = 0;
	bool addr16 = mode == HWT_DEC_MODE_16;
	uint8_t modrm, mod, rm;

	while (i < len &&
	       (b[i] == 0xf3 || b[i] == 0x66 || b[i] == 0x67 || b[i] == 0x2e || b[i] == 0x36 ||
		b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x64 || b[i] == 0x65)) {
		if (b[i] == 0x67)
			addr16 = mode == HWT_DEC_MODE_32;
		i++;
	}
	if (mode == HWT_DEC_MODE_64 && i < len && (b[i] & 0xf0) == 0x40)
		i++;
	i += 2; /* 0F AE */
	if (i >= len)
		return 0;
	modrm = b[i++];
	mod = modrm >> 6;
	rm = modrm & 7;
	if (mod == 3)
		return i;
	if (addr16) {
		if (mod == 0 && rm == 6)
			i += 2;
		else
			i += mod == 1 ? 1 : mod == 2 ? 2 : 0;
	} else {
		if (rm == 4) {
			if (i >= len)
				return 0;
			if (mod == 0 && (b[i] & 7) == 5)
				i += 4;
			i++;
		}
		if (mod == 0 && rm == 5)
			i += 4;
		else
			i += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	}
	return i <= len && i <= 15 ? i : 0;
}

static uint8_t classify(const cs_insn *ci, uint64_t *target)
{
	const cs_x86 *x = &ci->detail->x86;
	bool imm = x->op_count > 0 && x->operands[0].type == X86_OP_IMM;

	switch (ci->id) {
	case X86_INS_JAE:
	case X86_INS_JA:
	case X86_INS_JBE:
	case X86_INS_JB:
	case X86_INS_JCXZ:
	case X86_INS_JECXZ:
	case X86_INS_JE:
	case X86_INS_JGE:
	case X86_INS_JG:
	case X86_INS_JLE:
	case X86_INS_JL:
	case X86_INS_JNE:
	case X86_INS_JNO:
	case X86_INS_JNP:
	case X86_INS_JNS:
	case X86_INS_JO:
	case X86_INS_JP:
	case X86_INS_JRCXZ:
	case X86_INS_JS:
	case X86_INS_LOOP:
	case X86_INS_LOOPE:
	case X86_INS_LOOPNE:
		*target = imm ? (uint64_t)x->operands[0].imm : 0;
		return HWT_DEC_BR_COND;
	case X86_INS_JMP:
		if (imm) {
			*target = (uint64_t)x->operands[0].imm;
			return HWT_DEC_BR_JUMP;
		}
		return HWT_DEC_BR_IND_JUMP;
	case X86_INS_CALL:
		if (imm) {
			*target = (uint64_t)x->operands[0].imm;
			return HWT_DEC_BR_CALL;
		}
		return HWT_DEC_BR_IND_CALL;
	case X86_INS_RET:
		return HWT_DEC_BR_RETURN;
	case X86_INS_LJMP:
		return HWT_DEC_BR_FAR_JUMP;
	case X86_INS_LCALL:
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
	case X86_INS_VMCALL:
		return HWT_DEC_BR_FAR_CALL;
	case X86_INS_XBEGIN:
		/* Not a branch for libipt, but it has a displacement. */
		*target = imm ? (uint64_t)x->operands[0].imm : 0;
		return HWT_DEC_BR_NONE;
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
	case X86_INS_SYSRET:
	case X86_INS_SYSEXIT:
	case X86_INS_VMLAUNCH:
	case X86_INS_VMRESUME:
		return HWT_DEC_BR_FAR_RETURN;
	default:
		return HWT_DEC_BR_NONE;
	}
}

/* ------------------------------------------------------------------------ */
/* Table-driven length decoding                                             */

/* What the tables know of an opcode: its operands' shape and, for a
 * branch, its class. Anything else (VEX, EVEX, 0F 38/3A, undefined group
 * members and x87 forms, LOCK on anything but a read-modify-write of
 * memory, the rarer F2/F3 forms, BND branches) is capstone's to decode. */
enum {
	OP_NONE = 0, /* unknown here: capstone decides */
	OP_PLAIN,    /* no operand bytes */
	OP_M,	     /* ModRM (SIB, displacement) */
	OP_M_I8,     /* ModRM and imm8 */
	OP_M_IZ,     /* ModRM and imm16/32 */
	OP_I8,
	OP_IZ,	  /* imm16/32 */
	OP_IV,	  /* imm16/32/64 (MOV reg, imm) */
	OP_I16,	  /* RET imm16 */
	OP_ENTER, /* imm16, imm8 */
	OP_MOFFS, /* an address-size offset */
	OP_REL8,  /* rel8: Jcc, JMP, LOOP, JrCXZ */
	OP_RELZ,  /* rel32: Jcc, JMP, CALL */
	OP_GRP,	  /* ModRM.reg decides (group_op()) */
};

struct ild_op {
	uint8_t shape;
	uint8_t branch;
};

/* clang-format off */
#define P  {OP_PLAIN, HWT_DEC_BR_NONE}
#define M  {OP_M, HWT_DEC_BR_NONE}
#define MB {OP_M_I8, HWT_DEC_BR_NONE}
#define MZ {OP_M_IZ, HWT_DEC_BR_NONE}
#define B  {OP_I8, HWT_DEC_BR_NONE}
#define Z  {OP_IZ, HWT_DEC_BR_NONE}
#define G  {OP_GRP, HWT_DEC_BR_NONE}
#define X  {OP_NONE, HWT_DEC_BR_NONE}
#define JC {OP_REL8, HWT_DEC_BR_COND}

/* The one-byte map, 32- and 64-bit code (prefixes and REX are read before:
 * their rows are X here, as are the rows invalid in 64-bit code, which
 * ild_table() also declines in 32-bit code). */
static const struct ild_op map1[256] = {
    /* 00 */ M, M, M, M, B, Z, X, X, M, M, M, M, B, Z, X, X,
    /* 10 */ M, M, M, M, B, Z, X, X, M, M, M, M, B, Z, X, X,
    /* 20 */ M, M, M, M, B, Z, X, X, M, M, M, M, B, Z, X, X,
    /* 30 */ M, M, M, M, B, Z, X, X, M, M, M, M, B, Z, X, X,
    /* 40 */ X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    /* 50 */ P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P,
    /* 60 */ X, X, X, X, X, X, X, X, Z, MZ, B, MB, P, P, P, P,
    /* 70 */ JC, JC, JC, JC, JC, JC, JC, JC, JC, JC, JC, JC, JC, JC, JC, JC,
    /* 80 */ MB, MZ, X, MB, M, M, M, M, M, M, M, M, X, G, X, G,
    /* 90 */ P, P, P, P, P, P, P, P, P, P, X, X, P, P, X, X,
    /* a0 */ {OP_MOFFS, 0}, {OP_MOFFS, 0}, {OP_MOFFS, 0}, {OP_MOFFS, 0}, P, P, P, P, B, Z, P, P, P, P, P, P,
    /* b0 */ B, B, B, B, B, B, B, B,
    {OP_IV, 0}, {OP_IV, 0}, {OP_IV, 0}, {OP_IV, 0}, {OP_IV, 0}, {OP_IV, 0}, {OP_IV, 0}, {OP_IV, 0},
    /* c0 */ G, G, {OP_I16, HWT_DEC_BR_RETURN}, {OP_PLAIN, HWT_DEC_BR_RETURN}, X, X, G, G,
    {OP_ENTER, 0}, P, {OP_I16, HWT_DEC_BR_FAR_RETURN}, {OP_PLAIN, HWT_DEC_BR_FAR_RETURN},
    {OP_PLAIN, HWT_DEC_BR_FAR_CALL}, {OP_I8, HWT_DEC_BR_FAR_CALL}, X, {OP_PLAIN, HWT_DEC_BR_FAR_RETURN},
    /* d0 */ G, G, G, G, X, X, X, P, X, X, X, X, X, X, X, X,
    /* e0 */ JC, JC, JC, JC, B, B, B, B, {OP_RELZ, HWT_DEC_BR_CALL}, {OP_RELZ, HWT_DEC_BR_JUMP}, X,
    {OP_REL8, HWT_DEC_BR_JUMP}, P, P, P, P,
    /* f0 */ X, X, X, X, P, P, G, G, P, P, P, P, P, P, G, G,
};

#define JZ {OP_RELZ, HWT_DEC_BR_COND}

/* The two-byte map (0F xx), without F2/F3 prefixes. */
static const struct ild_op map2[256] = {
    /* 00 */ X, G, X, X, X, {OP_PLAIN, HWT_DEC_BR_FAR_CALL}, X, {OP_PLAIN, HWT_DEC_BR_FAR_RETURN},
    X, X, X, P, X, X, X, X,
    /* 10 */ M, M, X, X, M, M, X, X, G, X, X, X, X, X, M, M,
    /* 20 */ X, X, X, X, X, X, X, X, M, M, X, X, X, X, M, M,
    /* 30 */ X, P, X, X, {OP_PLAIN, HWT_DEC_BR_FAR_CALL}, {OP_PLAIN, HWT_DEC_BR_FAR_RETURN}, X, X,
    X, X, X, X, X, X, X, X,
    /* 40 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 50 */ X, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 60 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 70 */ MB, X, X, X, M, M, M, X, X, X, X, X, X, X, M, M,
    /* 80 */ JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ, JZ,
    /* 90 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* a0 */ P, P, P, M, MB, M, X, X, P, P, X, M, MB, M, G, M,
    /* b0 */ M, M, X, M, X, X, M, M, X, X, G, M, M, M, M, M,
    /* c0 */ M, M, MB, X, MB, MB, MB, X, P, P, P, P, P, P, P, P,
    /* d0 */ X, M, M, M, M, M, M, X, M, M, M, M, M, M, M, M,
    /* e0 */ M, M, M, M, M, M, X, M, M, M, M, M, M, M, M, M,
    /* f0 */ X, M, M, M, M, M, M, X, M, M, M, M, M, M, M, X,
};
/* clang-format on */

#undef P
#undef M
#undef MB
#undef MZ
#undef B
#undef Z
#undef G
#undef X
#undef JC
#undef JZ

/* The groups of the one-byte map, by opcode and ModRM.reg. */
static struct ild_op group_op(uint8_t op, uint8_t modrm)
{
	uint8_t reg = (modrm >> 3) & 7;
	bool mem = (modrm >> 6) != 3;
	struct ild_op none = {OP_NONE, HWT_DEC_BR_NONE};

	switch (op) {
	case 0x8d: /* LEA: a memory operand only */
		return mem ? (struct ild_op){OP_M, HWT_DEC_BR_NONE} : none;
	case 0x8f: /* POP Ev (the rest is XOP) */
		return reg == 0 ? (struct ild_op){OP_M, HWT_DEC_BR_NONE} : none;
	case 0xc0:
	case 0xc1:
		return reg != 6 ? (struct ild_op){OP_M_I8, HWT_DEC_BR_NONE} : none;
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
		return reg != 6 ? (struct ild_op){OP_M, HWT_DEC_BR_NONE} : none;
	case 0xc6:
		return reg == 0 ? (struct ild_op){OP_M_I8, HWT_DEC_BR_NONE} : none;
	case 0xc7: /* MOV Ev, Iz (C7 F8 is XBEGIN) */
		return reg == 0 ? (struct ild_op){OP_M_IZ, HWT_DEC_BR_NONE} : none;
	case 0xf6:
		return reg == 0	  ? (struct ild_op){OP_M_I8, HWT_DEC_BR_NONE}
		       : reg == 1 ? none
				  : (struct ild_op){OP_M, HWT_DEC_BR_NONE};
	case 0xf7:
		return reg == 0	  ? (struct ild_op){OP_M_IZ, HWT_DEC_BR_NONE}
		       : reg == 1 ? none
				  : (struct ild_op){OP_M, HWT_DEC_BR_NONE};
	case 0xfe:
		return reg <= 1 ? (struct ild_op){OP_M, HWT_DEC_BR_NONE} : none;
	case 0xff:
		switch (reg) {
		case 2:
			return (struct ild_op){OP_M, HWT_DEC_BR_IND_CALL};
		case 3:
			return mem ? (struct ild_op){OP_M, HWT_DEC_BR_FAR_CALL} : none;
		case 4:
			return (struct ild_op){OP_M, HWT_DEC_BR_IND_JUMP};
		case 5:
			return mem ? (struct ild_op){OP_M, HWT_DEC_BR_FAR_JUMP} : none;
		case 7:
			return none;
		default:
			return (struct ild_op){OP_M, HWT_DEC_BR_NONE};
		}
	default:
		return none;
	}
}

/* The two-byte map behind a mandatory F3 or F2 (prefix): the forms of
 * compiled code, each valid with every ModRM. */
static struct ild_op mandatory_op(uint8_t prefix, uint8_t op)
{
	struct ild_op m = {OP_M, HWT_DEC_BR_NONE}, mb = {OP_M_I8, HWT_DEC_BR_NONE};
	struct ild_op none = {OP_NONE, HWT_DEC_BR_NONE};

	switch (op) {
	case 0x10: /* MOVSS / MOVSD */
	case 0x11:
	case 0x2a: /* CVTSI2SS/SD */
	case 0x2c: /* CVTTSS/SD2SI */
	case 0x2d:
	case 0x51: /* SQRT */
	case 0x58: /* ADD, MUL, CVT, SUB, MIN, DIV, MAX */
	case 0x59:
	case 0x5a:
	case 0x5c:
	case 0x5d:
	case 0x5e:
	case 0x5f:
	case 0xe6: /* CVTDQ2PD / CVTPD2DQ */
		return m;
	case 0x70: /* PSHUFHW / PSHUFLW */
	case 0xc2: /* CMPSS / CMPSD */
		return mb;
	case 0x1e: /* ENDBR, hint NOPs (F3) */
	case 0x52: /* RSQRTSS, RCPSS, CVTTPS2DQ */
	case 0x53:
	case 0x5b:
	case 0x6f: /* MOVDQU, MOVQ */
	case 0x7e:
	case 0x7f:
	case 0xb8: /* POPCNT, TZCNT, LZCNT */
	case 0xbc:
	case 0xbd:
		return prefix == 0xf3 ? m : none;
	case 0x7c: /* HADDPS, HSUBPS */
	case 0x7d:
		return prefix == 0xf2 ? m : none;
	case 0x80: /* BND Jcc rel32 */
	case 0x81:
	case 0x82:
	case 0x83:
	case 0x84:
	case 0x85:
	case 0x86:
	case 0x87:
	case 0x88:
	case 0x89:
	case 0x8a:
	case 0x8b:
	case 0x8c:
	case 0x8d:
	case 0x8e:
	case 0x8f:
		return prefix == 0xf2 ? (struct ild_op){OP_RELZ, HWT_DEC_BR_COND} : none;
	default:
		return none;
	}
}

/* The groups of the two-byte map, by opcode and ModRM. */
static struct ild_op group2_op(uint8_t op, uint8_t modrm)
{
	uint8_t reg = (modrm >> 3) & 7;
	bool mem = (modrm >> 6) != 3;
	struct ild_op none = {OP_NONE, HWT_DEC_BR_NONE};

	switch (op) {
	case 0x01: /* VMCALL, VMLAUNCH, VMRESUME, XGETBV, RDTSCP (of group 7) */
		if (modrm == 0xc1)
			return (struct ild_op){OP_M, HWT_DEC_BR_FAR_CALL};
		if (modrm == 0xc2 || modrm == 0xc3)
			return (struct ild_op){OP_M, HWT_DEC_BR_FAR_RETURN};
		return modrm == 0xd0 || modrm == 0xf9 ? (struct ild_op){OP_M, HWT_DEC_BR_NONE}
						      : none;
	case 0x18: /* PREFETCHNTA/T0/T1/T2 (the rest are hint NOPs) */
		return mem && reg <= 3 ? (struct ild_op){OP_M, HWT_DEC_BR_NONE} : none;
	case 0xae: /* FXSAVE ... CLFLUSH; LFENCE, MFENCE, SFENCE */
		if (mem)
			return (struct ild_op){OP_M, HWT_DEC_BR_NONE};
		return modrm == 0xe8 || modrm == 0xf0 || modrm == 0xf8
			   ? (struct ild_op){OP_M, HWT_DEC_BR_NONE}
			   : none;
	case 0xba: /* BT, BTS, BTR, BTC Ev, Ib */
		return reg >= 4 ? (struct ild_op){OP_M_I8, HWT_DEC_BR_NONE} : none;
	default:
		return none;
	}
}

/* x87 (D8-DF): every memory form but the reserved ones, and the register
 * forms that are defined. */
static struct ild_op x87_op(uint8_t op, uint8_t modrm)
{
	uint8_t reg = (modrm >> 3) & 7;
	struct ild_op m = {OP_M, HWT_DEC_BR_NONE}, none = {OP_NONE, HWT_DEC_BR_NONE};
	bool ok;

	if ((modrm >> 6) != 3) {
		switch (op) {
		case 0xd9:
			return reg == 1 ? none : m;
		case 0xdb:
			return reg == 4 || reg == 6 ? none : m;
		case 0xdd:
			return reg == 5 ? none : m;
		default:
			return m;
		}
	}
	switch (op) {
	case 0xd8: /* FADD ... FDIVR ST(0), ST(i) */
		ok = true;
		break;
	case 0xd9: /* FLD, FXCH, FNOP, FCHS, FABS, FTST, FXAM, constants, F2XM1 ... FCOS */
		ok = modrm <= 0xd0 || modrm == 0xe0 || modrm == 0xe1 || modrm == 0xe4 ||
		     modrm == 0xe5 || (modrm >= 0xe8 && modrm <= 0xee) || modrm >= 0xf0;
		break;
	case 0xda: /* FCMOVB/E/BE/U, FUCOMPP */
		ok = modrm <= 0xdf || modrm == 0xe9;
		break;
	case 0xdb: /* FCMOVNB/NE/NBE/NU, FNCLEX, FNINIT, FUCOMI, FCOMI */
		ok = modrm <= 0xdf || modrm == 0xe2 || modrm == 0xe3 ||
		     (modrm >= 0xe8 && modrm <= 0xf7);
		break;
	case 0xdc: /* FADD ... FDIVR ST(i), ST(0) */
		ok = modrm <= 0xcf || modrm >= 0xe0;
		break;
	case 0xdd: /* FFREE, FST, FSTP, FUCOM, FUCOMP */
		ok = modrm <= 0xc7 || (modrm >= 0xd0 && modrm <= 0xef);
		break;
	case 0xde: /* FADDP, FMULP, FCOMPP, FSUBRP ... FDIVP */
		ok = modrm <= 0xcf || modrm == 0xd9 || modrm >= 0xe0;
		break;
	default: /* DF: FNSTSW AX, FUCOMIP, FCOMIP */
		ok = modrm == 0xe0 || (modrm >= 0xe8 && modrm <= 0xf7);
		break;
	}
	return ok ? m : none;
}

/* Whether opcode op (of the two-byte map when two) takes LOCK with a
 * memory operand (ModRM modrm): ADD ... XOR, the 80-83 group, XCHG, NOT,
 * NEG, INC, DEC, BTS/BTR/BTC, CMPXCHG and XADD. */
static bool lockable(bool two, uint8_t op, uint8_t modrm)
{
	uint8_t reg = (modrm >> 3) & 7;

	if (two)
		return op == 0xab || op == 0xb3 || op == 0xbb || op == 0xb0 || op == 0xb1 ||
		       op == 0xc0 || op == 0xc1 || (op == 0xba && reg >= 5);
	if (op <= 0x33)
		return (op & 7) <= 1;
	switch (op) {
	case 0x80:
	case 0x81:
	case 0x83:
		return reg != 7;
	case 0x86:
	case 0x87:
		return true;
	case 0xf6:
	case 0xf7:
		return reg == 2 || reg == 3;
	case 0xfe:
		return reg <= 1;
	case 0xff:
		return reg <= 1;
	default:
		return false;
	}
}

/* The little-endian displacement of w (1, 2 or 4) bytes at b,
 * sign-extended. */
static inline int64_t rel_disp(const uint8_t *b, size_t w)
{
	switch (w) {
	case 1:
		return (int8_t)b[0];
	case 2:
		return (int16_t)(uint16_t)(b[0] | b[1] << 8);
	default:
		return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				 (uint32_t)b[3] << 24);
	}
}

/* Bytes of ModRM, SIB and displacement at b (len left), or 0 when they run
 * out. */
static size_t modrm_size(const uint8_t *b, size_t len, unsigned int asize)
{
	uint8_t mod, rm;
	size_t n = 1;

	if (len < 1)
		return 0;
	mod = b[0] >> 6;
	rm = b[0] & 7;
	if (mod == 3)
		return 1;
	if (asize == 16) {
		if (mod == 0 && rm == 6)
			n += 2;
		else
			n += mod == 1 ? 1 : mod == 2 ? 2 : 0;
		return n <= len ? n : 0;
	}
	if (rm == 4) {
		if (len < 2)
			return 0;
		if (mod == 0 && (b[1] & 7) == 5)
			n += 4;
		n++;
	}
	if (mod == 0 && rm == 5)
		n += 4;
	else
		n += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	return n <= len ? n : 0;
}

int hwt_dec_ild_table(const uint8_t *b, size_t len, uint64_t ip, enum hwt_dec_mode mode,
		      struct hwt_dec_insn *insn)
{
	bool m64 = mode == HWT_DEC_MODE_64, o16 = false, a_ovr = false, rep = false, seg = false;
	bool repne = false, lock = false, rex_w = false, rex = false, two = false;
	unsigned int osize, asize;
	size_t i = 0, n, imm = 0;
	struct ild_op op;
	uint8_t c;

	if (mode != HWT_DEC_MODE_64 && mode != HWT_DEC_MODE_32)
		return 0;
	if (len > 15)
		len = 15;
	/* Legacy prefixes. */
	for (; i < len; i++) {
		c = b[i];
		if (c == 0x66)
			o16 = true;
		else if (c == 0x67)
			a_ovr = true;
		else if (c == 0xf3)
			rep = true;
		else if (c == 0xf2)
			repne = true;
		else if (c == 0xf0)
			lock = true;
		else if (c == 0x2e || c == 0x36 || c == 0x3e || c == 0x26 || c == 0x64 || c == 0x65)
			seg = true;
		else
			break;
	}
	if (i >= len)
		return 0;
	if (m64 && (b[i] & 0xf0) == 0x40) {
		rex = true;
		rex_w = b[i] & 8;
		if (++i >= len)
			return 0;
	}
	c = b[i++];
	if (c == 0x0f) {
		if (i >= len)
			return 0;
		two = true;
		c = b[i++];
		op = map2[c];
		if (rep || repne) {
			/* A mandatory F3 or F2 (scalar SSE, POPCNT, TZCNT, LZCNT,
			 * MOVDQU; F3 0F 1E: ENDBR32/64 and hint NOPs), alone and
			 * right before the opcode or its REX: capstone reads
			 * them only there. */
			if (seg || o16 || lock || (rep && repne) || i != 3u + rex)
				return 0;
			op = mandatory_op(repne ? 0xf2 : 0xf3, c);
			if (c == 0x1e && (repne || rex))
				return 0;
		} else if (seg) {
			return 0;
		}
		if (op.shape == OP_GRP) {
			if (i >= len)
				return 0;
			op = group2_op(c, b[i]);
		}
	} else {
		op = map1[c];
		/* F3: REP string operations, PAUSE and REPZ RET (the return
		 * AMD's branch predictors wanted). */
		if (rep && !((c >= 0xa4 && c <= 0xa7) || (c >= 0xaa && c <= 0xaf) ||
			     (c >= 0x6c && c <= 0x6f) || c == 0x90 || c == 0xc3))
			return 0;
		if (rep && repne)
			return 0;
		/* INC and DEC r32 (REX in 64-bit code). */
		if (!m64 && (c & 0xf0) == 0x40)
			op = (struct ild_op){OP_PLAIN, HWT_DEC_BR_NONE};
		/* Rows that are something else in 64-bit code. */
		if (!m64 && c == 0x63)
			return 0;
		if (c >= 0xd8 && c <= 0xdf) {
			if (i >= len || o16 || rep || rex)
				return 0;
			op = x87_op(c, b[i]);
		}
	}
	if (op.shape == OP_GRP) {
		if (i >= len)
			return 0;
		op = group_op(c, b[i]);
	}
	/* F2 on a near branch of the one-byte map is BND (MPX): the branch. */
	if (repne && !two &&
	    !(op.branch == HWT_DEC_BR_COND || op.branch == HWT_DEC_BR_JUMP ||
	      op.branch == HWT_DEC_BR_CALL || op.branch == HWT_DEC_BR_IND_JUMP ||
	      op.branch == HWT_DEC_BR_IND_CALL || op.branch == HWT_DEC_BR_RETURN))
		return 0;
	/* LOCK: only on the read-modify-write forms with a memory operand. */
	if (lock && (i >= len || (b[i] >> 6) == 3 || !lockable(two, c, b[i])))
		return 0;
	if (op.shape == OP_NONE)
		return 0;
	/* Size prefixes on branches, REX on relative ones: capstone's to
	 * read. */
	if (op.branch != HWT_DEC_BR_NONE && (o16 || a_ovr))
		return 0;
	if ((op.shape == OP_REL8 || op.shape == OP_RELZ) && rex)
		return 0;
	/* Two-byte opcodes valid only with 66, or in one ModRM form (capstone
	 * rejects the others; with 67 too, some of them). */
	if (two && a_ovr)
		return 0;
	if (two && i < len) {
		bool reg_form = (b[i] >> 6) == 3;

		switch (c) {
		case 0x1e:
		case 0x1f:
			if (reg_form && !(rep && c == 0x1e && (b[i] == 0xfa || b[i] == 0xfb)))
				return 0;
			break;
		case 0x6c:
		case 0x6d:
		case 0xd6:
			if (!o16)
				return 0;
			break;
		case 0xc5:
			if (!reg_form)
				return 0;
			break;
		case 0xe7:
			if (reg_form)
				return 0;
			break;
		default:
			break;
		}
	}
	osize = rex_w ? 64 : o16 ? 16 : 32;
	asize = m64 ? (a_ovr ? 32 : 64) : (a_ovr ? 16 : 32);
	switch (op.shape) {
	case OP_M:
	case OP_M_I8:
	case OP_M_IZ:
		n = modrm_size(b + i, len - i, asize);
		if (!n)
			return 0;
		i += n;
		imm = op.shape == OP_M_I8 ? 1 : op.shape == OP_M_IZ ? (osize == 16 ? 2 : 4) : 0;
		break;
	case OP_I8:
	case OP_REL8:
		imm = 1;
		break;
	case OP_IZ:
	case OP_RELZ:
		imm = osize == 16 ? 2 : 4;
		break;
	case OP_IV:
		imm = osize / 8;
		break;
	case OP_I16:
		imm = 2;
		break;
	case OP_ENTER:
		imm = 3;
		break;
	case OP_MOFFS:
		imm = asize / 8;
		break;
	default:
		break;
	}
	if (i + imm > len)
		return 0;
	memset(insn, 0, sizeof(*insn));
	insn->ip = ip;
	insn->mode = (uint8_t)mode;
	insn->size = (uint8_t)(i + imm);
	insn->branch = op.branch;
	memcpy(insn->raw, b, insn->size);
	if (op.shape == OP_REL8 || op.shape == OP_RELZ) {
		int64_t d = rel_disp(b + i, op.shape == OP_REL8 ? 1 : 4);

		/* No wrap at 4 GiB: libipt's pt_insn_next_ip() (rel_target()). */
		insn->target = ip + insn->size + (uint64_t)d;
		insn->has_target = 1;
	}
	return 1;
}

/* A relative branch's target as libipt computes it (pt_insn_next_ip()):
 * the instruction's end plus its displacement (the instruction's last 1, 2
 * or 4 bytes, sign-extended), without wrapping at the operand size as
 * 16/32-bit code would (capstone's target does): where a trace's IP is
 * beyond that size in such code (damaged or made-up trace), libipt goes on
 * there, and so must both engines. */
static void rel_target(struct hwt_dec_insn *insn)
{
	const uint8_t *b = insn->raw;
	size_t i = 0, w;

	while (i < insn->size && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 ||
				  b[i] == 0xf0 || b[i] == 0x2e || b[i] == 0x36 || b[i] == 0x3e ||
				  b[i] == 0x26 || b[i] == 0x64 || b[i] == 0x65))
		i++;
	if (i + 1 < insn->size && (b[i] == 0x0f || (b[i] == 0xc7 && b[i + 1] == 0xf8)))
		i++; /* Jcc rel16/32, XBEGIN */
	i++;
	if (i >= insn->size)
		return;
	w = insn->size - i;
	if (w != 1 && w != 2 && w != 4)
		return;
	insn->target = insn->ip + insn->size + (uint64_t)rel_disp(b + i, w);
}

int hwt_dec_ild_capstone(struct hwt_dec_icache *ic, const uint8_t *bytes, size_t len, uint64_t ip,
			 enum hwt_dec_mode mode, struct hwt_dec_insn *insn)
{
	struct csh_box *box;
	const uint8_t *code = bytes;
	size_t size = len;
	uint64_t addr = ip;
	int err;

	memset(insn, 0, sizeof(*insn));
	insn->ip = ip;
	insn->mode = (uint8_t)mode;
	if (mode == HWT_DEC_MODE_UNKNOWN)
		return -HWT_EDECODE;
	if (len > 15)
		len = 15;
	err = csh_take(ic, mode, &box);
	if (err < 0)
		return err;
	if (is_ptwrite(bytes, len)) {
		size_t n = ptwrite_size(bytes, len, mode);

		csh_give(ic, mode, box);
		if (!n)
			return -HWT_EDECODE;
		insn->size = (uint8_t)n;
		insn->branch = HWT_DEC_BR_PTWRITE;
		memcpy(insn->raw, bytes, n);
		return 0;
	}
	if (!cs.disasm_iter(box->handle, &code, &size, &addr, box->insn)) {
		csh_give(ic, mode, box);
		return -HWT_EDECODE;
	}
	insn->size = (uint8_t)box->insn->size;
	memcpy(insn->raw, bytes, insn->size);
	insn->branch = classify(box->insn, &insn->target);
	insn->has_target = insn->branch == HWT_DEC_BR_COND || insn->branch == HWT_DEC_BR_JUMP ||
			   insn->branch == HWT_DEC_BR_CALL || box->insn->id == X86_INS_XBEGIN;
	if (insn->branch == HWT_DEC_BR_NONE && is_ptwrite(bytes, len))
		insn->branch = HWT_DEC_BR_PTWRITE;
	if (insn->has_target && mode != HWT_DEC_MODE_64)
		rel_target(insn);
	csh_give(ic, mode, box);
	return 0;
}

int hwt_dec_ild(struct hwt_dec_icache *ic, const uint8_t *bytes, size_t len, uint64_t ip,
		enum hwt_dec_mode mode, struct hwt_dec_insn *insn)
{
	if (hwt_dec_ild_table(bytes, len, ip, mode, insn))
		return 0;
	return hwt_dec_ild_capstone(ic, bytes, len, ip, mode, insn);
}

int hwt_dec_insn_decode(const struct hwt_dec_image *image, uint64_t ip, enum hwt_dec_mode mode,
			struct hwt_dec_insn *insn)
{
	uint8_t buf[15];
	int n, m;

	if (!image || !insn)
		return -HWT_EINVAL;
	n = hwt_dec_image_read(image, ip, buf, sizeof(buf));
	if (n < 0)
		return n;
	/* An instruction may continue in the next section. */
	while (n < (int)sizeof(buf)) {
		m = hwt_dec_image_read(image, ip + (uint64_t)n, buf + n, sizeof(buf) - (size_t)n);
		if (m <= 0)
			break;
		n += m;
	}
	return hwt_dec_ild(image->icache, buf, (size_t)n, ip, mode, insn);
}

int hwt_dec_insn_format(const struct hwt_dec_insn *insn, char *buf, size_t size)
{
	csh handle;
	cs_insn *ci = NULL;
	cs_mode cmode;
	size_t n;
	int len;

	if (!insn || !buf || !size)
		return -HWT_EINVAL;
	switch (insn->mode) {
	case HWT_DEC_MODE_16:
		cmode = CS_MODE_16;
		break;
	case HWT_DEC_MODE_32:
		cmode = CS_MODE_32;
		break;
	default:
		cmode = CS_MODE_64;
		break;
	}
	if (capstone_ready() < 0 || cs.open(CS_ARCH_X86, cmode, &handle) != CS_ERR_OK)
		return -HWT_ELIB;
	n = cs.disasm(handle, insn->raw, insn->size, insn->ip, 1, &ci);
	if (n == 0) {
		cs.close(&handle);
		if (insn->branch == HWT_DEC_BR_PTWRITE)
			return snprintf(buf, size, "ptwrite");
		return -HWT_EDECODE;
	}
	if (ci->op_str[0])
		len = snprintf(buf, size, "%s %s", ci->mnemonic, ci->op_str);
	else
		len = snprintf(buf, size, "%s", ci->mnemonic);
	cs.free(ci, n);
	cs.close(&handle);
	return len;
}
