/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * unwind/unw_int.h - the unwind module's internals, shared by its source
 * files only: a bounds-checked byte cursor, CIE/FDE records (cfi.c), the
 * unwinding rules of a code address (a CFI table row), DWARF expressions
 * (expr.c) and the per-object tables (unwind.c).
 *
 * Internal functions that can end a walk return 0 or a positive enum
 * hwt_unw_end reason (never HWT_UNW_END_OUTERMOST, which is 0), so that
 * "the stack copy ends here" and "this CFI is broken" travel apart.
 */
#ifndef HWT_UNWIND_UNW_INT_H
#define HWT_UNWIND_UNW_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/unwind.h"

/* A cursor over bytes of a section: every read checks what remains and
 * sets err instead of reading past end. */
struct unw_cur {
	const uint8_t *p, *end;
	bool err;
};

uint8_t unw_u8(struct unw_cur *c);
uint16_t unw_u16(struct unw_cur *c);
uint32_t unw_u32(struct unw_cur *c);
uint64_t unw_u64(struct unw_cur *c);
uint64_t unw_uleb(struct unw_cur *c);
int64_t unw_sleb(struct unw_cur *c);
void unw_skip(struct unw_cur *c, uint64_t n);

/* A CFI section as loaded: its bytes and its address (for pc-relative
 * pointers). eh: .eh_frame's layout (CIE id 0, relative CIE pointers),
 * else .debug_frame's (CIE id ~0, section offsets). */
struct unw_sec {
	const uint8_t *data;
	uint64_t size, addr;
	bool eh;
};

/* DW_EH_PE pointer encodings. */
enum {
	UNW_PE_ABSPTR = 0x00,
	UNW_PE_ULEB = 0x01,
	UNW_PE_UDATA2 = 0x02,
	UNW_PE_UDATA4 = 0x03,
	UNW_PE_UDATA8 = 0x04,
	UNW_PE_SLEB = 0x09,
	UNW_PE_SDATA2 = 0x0a,
	UNW_PE_SDATA4 = 0x0b,
	UNW_PE_SDATA8 = 0x0c,
	UNW_PE_PCREL = 0x10,
	UNW_PE_DATAREL = 0x30,
	UNW_PE_INDIRECT = 0x80,
	UNW_PE_OMIT = 0xff,
};

/* Reads a pointer encoded with enc at c (which lies in a section at
 * address sec_addr whose first byte is sec_start; datarel is relative to
 * data_base). Indirect pointers cannot be read offline: err. */
uint64_t unw_read_ptr(struct unw_cur *c, uint8_t enc, const uint8_t *sec_start, uint64_t sec_addr,
		      uint64_t data_base);

struct unw_cie {
	uint64_t code_align;
	int64_t data_align;
	uint32_t ra;		    /* return address column */
	uint8_t fde_enc;	    /* 'R' (default absptr) */
	uint8_t lsda_enc;	    /* 'L' */
	uint8_t addr_size;	    /* .debug_frame v4, else 8 */
	bool aug_z;		    /* augmentation data present ('z') */
	bool signal;		    /* 'S': a signal frame */
	const uint8_t *insns, *end; /* initial instructions */
};

struct unw_fde {
	uint64_t lo, hi; /* [lo, hi) object addresses */
	struct unw_cie cie;
	const uint8_t *insns, *end;
};

/* Parses the FDE at offset off of sec (and its CIE). Returns 0, or 1 when
 * the entry is a CIE or a terminator (not an FDE), or
 * HWT_UNW_END_BAD_CFI. *next_off (may be NULL) gets the offset of the next
 * entry (0 at the end). */
int unw_fde_parse(const struct unw_sec *sec, uint64_t off, struct unw_fde *fde, uint64_t *next_off);

/* How a register (or the CFA) is recovered. */
enum unw_rule_kind {
	UNW_SAME = 0,	/* the caller's value is this frame's (no rule) */
	UNW_UNDEF,	/* not recoverable; for the RA column: no caller */
	UNW_OFFSET,	/* saved at CFA + off */
	UNW_VAL_OFFSET, /* is CFA + off */
	UNW_REG,	/* is in register reg */
	UNW_EXPR,	/* saved at the address expr computes (CFA pushed) */
	UNW_VAL_EXPR,	/* is what expr computes (CFA pushed) */
	UNW_CFA_REG,	/* CFA only: reg + off */
	UNW_CFA_EXPR,	/* CFA only: what expr computes */
};

struct unw_rule {
	uint8_t kind;
	uint8_t reg;
	uint16_t len; /* expression bytes */
	union {
		int64_t off;
		const uint8_t *expr; /* into the section's bytes */
	} u;
};

/* The rules at one code address: a row of the CFI table. */
struct unw_row {
	struct unw_rule cfa;
	struct unw_rule reg[HWT_UNW_NREGS];
	uint32_t rules; /* bit i: reg[i] has a rule other than UNW_SAME */
	uint8_t ra;	/* return address column */
	bool signal;	/* the caller's address is exact */
};

/* Runs the CIE's and the FDE's instructions up to object address pc (lo <=
 * pc < hi). Returns 0 or HWT_UNW_END_BAD_CFI. */
int unw_row_at(const struct unw_fde *fde, const struct unw_sec *sec, uint64_t pc,
	       struct unw_row *row);

/* Memory readable while unwinding: the stack copy only. */
struct unw_mem {
	uint64_t start;
	const uint8_t *data;
	size_t size;
};

/* Reads size (1, 2, 4 or 8) bytes at addr. Returns 0 or
 * HWT_UNW_END_STACK. */
int unw_mem_read(const struct unw_mem *m, uint64_t addr, unsigned size, uint64_t *v);

/* Evaluates a DWARF expression (with push pushed first when has_push).
 * Returns 0 and *out, or HWT_UNW_END_STACK, _NO_REGS, _BAD_CFI. */
int unw_expr_eval(const uint8_t *expr, size_t len, const struct hwt_unw_regs *regs,
		  const struct unw_mem *mem, bool has_push, uint64_t push, uint64_t *out);

#endif /* HWT_UNWIND_UNW_INT_H */
