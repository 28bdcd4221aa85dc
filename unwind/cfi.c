/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * unwind/cfi.c - call frame information: the CIE and FDE records of
 * .eh_frame (LSB's layout: relative CIE pointers, DW_EH_PE pointer
 * encodings, 'z' augmentation data) and .debug_frame (DWARF 2-5: CIE id ~0,
 * section-offset CIE pointers, address_size in version 4), and the
 * interpreter of their DW_CFA instructions that gives the row (the rules
 * for the CFA and each register) at one code address. Every read goes
 * through a bounds-checked cursor; a record that runs past its length or
 * its section is malformed, never trusted.
 */
#include "unwind/unw_int.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* cursor                                                                    */

static bool need(struct unw_cur *c, uint64_t n)
{
	if (c->err || (uint64_t)(c->end - c->p) < n) {
		c->err = true;
		return false;
	}
	return true;
}

uint8_t unw_u8(struct unw_cur *c)
{
	return need(c, 1) ? *c->p++ : 0;
}

uint16_t unw_u16(struct unw_cur *c)
{
	uint16_t v;

	if (!need(c, 2))
		return 0;
	v = hwt_le16(c->p);
	c->p += 2;
	return v;
}

uint32_t unw_u32(struct unw_cur *c)
{
	uint32_t v;

	if (!need(c, 4))
		return 0;
	v = hwt_le32(c->p);
	c->p += 4;
	return v;
}

uint64_t unw_u64(struct unw_cur *c)
{
	uint64_t v;

	if (!need(c, 8))
		return 0;
	v = hwt_le64(c->p);
	c->p += 8;
	return v;
}

uint64_t unw_uleb(struct unw_cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t b;

		if (!need(c, 1))
			return 0;
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
		if (shift > 70) { /* longer than any 64-bit value */
			c->err = true;
			return 0;
		}
	}
}

int64_t unw_sleb(struct unw_cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (!need(c, 1))
			return 0;
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (shift > 70 && (b & 0x80)) {
			c->err = true;
			return 0;
		}
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

void unw_skip(struct unw_cur *c, uint64_t n)
{
	if (need(c, n))
		c->p += n;
}

uint64_t unw_read_ptr(struct unw_cur *c, uint8_t enc, const uint8_t *sec_start, uint64_t sec_addr,
		      uint64_t data_base)
{
	uint64_t at = sec_addr + (uint64_t)(c->p - sec_start);
	uint64_t v;

	if (enc == UNW_PE_OMIT)
		return 0;
	switch (enc & 0x0f) {
	case UNW_PE_ABSPTR:
	case UNW_PE_UDATA8:
	case UNW_PE_SDATA8:
		v = unw_u64(c);
		break;
	case UNW_PE_ULEB:
		v = unw_uleb(c);
		break;
	case UNW_PE_UDATA2:
		v = unw_u16(c);
		break;
	case UNW_PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)unw_u16(c);
		break;
	case UNW_PE_UDATA4:
		v = unw_u32(c);
		break;
	case UNW_PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)unw_u32(c);
		break;
	case UNW_PE_SLEB:
		v = (uint64_t)unw_sleb(c);
		break;
	default:
		c->err = true;
		return 0;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case UNW_PE_PCREL:
		v += at;
		break;
	case UNW_PE_DATAREL:
		v += data_base;
		break;
	default: /* textrel, funcrel, aligned: not used on x86-64 */
		c->err = true;
		return 0;
	}
	if (enc & UNW_PE_INDIRECT) /* a pointer in process memory */
		c->err = true;
	return v;
}

/* ------------------------------------------------------------------------ */
/* CIE and FDE records                                                       */

/* Reads an entry's length; sets *body to the bytes after the CIE id field
 * start and *entry_end. Returns false at a terminator or on error. */
static bool entry_bounds(const struct unw_sec *sec, uint64_t off, struct unw_cur *c,
			 const uint8_t **entry_end, bool *is64)
{
	uint64_t len;

	if (off >= sec->size)
		return false;
	c->p = sec->data + off;
	c->end = sec->data + sec->size;
	c->err = false;
	len = unw_u32(c);
	*is64 = false;
	if (len == 0xffffffffu) {
		len = unw_u64(c);
		*is64 = true;
	}
	if (c->err || len == 0 || len > (uint64_t)(c->end - c->p))
		return false;
	*entry_end = c->p + len;
	c->end = *entry_end;
	return true;
}

static int cie_parse(const struct unw_sec *sec, uint64_t off, struct unw_cie *cie)
{
	const uint8_t *end;
	struct unw_cur c;
	const char *aug;
	uint64_t id;
	uint8_t version;
	bool is64;

	memset(cie, 0, sizeof(*cie));
	if (!entry_bounds(sec, off, &c, &end, &is64))
		return HWT_UNW_END_BAD_CFI;
	id = is64 ? unw_u64(&c) : unw_u32(&c);
	if (sec->eh ? id != 0 : id != (is64 ? ~(uint64_t)0 : 0xffffffffu))
		return HWT_UNW_END_BAD_CFI;
	version = unw_u8(&c);
	if (version != 1 && version != 3 && version != 4)
		return HWT_UNW_END_BAD_CFI;
	aug = (const char *)c.p;
	{
		const uint8_t *nul = memchr(c.p, 0, (size_t)(c.end - c.p));

		if (!nul)
			return HWT_UNW_END_BAD_CFI;
		c.p = nul + 1;
	}
	cie->addr_size = 8;
	if (version == 4) {
		cie->addr_size = unw_u8(&c);
		if (unw_u8(&c) != 0) /* segment selectors: not on x86-64 */
			return HWT_UNW_END_BAD_CFI;
		if (cie->addr_size != 4 && cie->addr_size != 8)
			return HWT_UNW_END_BAD_CFI;
	}
	if (!strcmp(aug, "eh")) /* an old GCC's EH data pointer */
		unw_skip(&c, 8);
	cie->code_align = unw_uleb(&c);
	cie->data_align = unw_sleb(&c);
	cie->ra = version == 1 ? unw_u8(&c) : (uint32_t)unw_uleb(&c);
	cie->fde_enc = UNW_PE_ABSPTR;
	cie->lsda_enc = UNW_PE_OMIT;
	if (aug[0] == 'z') {
		uint64_t alen = unw_uleb(&c);
		struct unw_cur a;
		bool stop = false;

		if (c.err || alen > (uint64_t)(c.end - c.p))
			return HWT_UNW_END_BAD_CFI;
		a.p = c.p;
		a.end = c.p + alen;
		a.err = false;
		cie->aug_z = true;
		for (const char *s = aug + 1; *s && !stop; s++) {
			switch (*s) {
			case 'L':
				cie->lsda_enc = unw_u8(&a);
				break;
			case 'R':
				cie->fde_enc = unw_u8(&a);
				break;
			case 'P': {
				uint8_t enc = unw_u8(&a);

				/* The personality routine: read past it (it
				 * may be indirect, which we never follow). */
				unw_read_ptr(&a, enc & 0x7f, sec->data, sec->addr, 0);
				break;
			}
			case 'S':
				cie->signal = true;
				break;
			case 'B': /* AArch64 BTI, G: MTE tagged frames */
			case 'G':
				break;
			default:
				/* 'z' says how long the data is: an unknown
				 * letter ends parsing, the rest is skipped. */
				stop = true;
				break;
			}
			if (a.err)
				return HWT_UNW_END_BAD_CFI;
		}
		c.p += alen;
	} else if (aug[0]) {
		/* An augmentation without 'z' (other than "eh") cannot be
		 * skipped safely. */
		if (strcmp(aug, "eh"))
			return HWT_UNW_END_BAD_CFI;
	}
	if (c.err || cie->code_align == 0)
		return HWT_UNW_END_BAD_CFI;
	cie->insns = c.p;
	cie->end = end;
	return 0;
}

int unw_fde_parse(const struct unw_sec *sec, uint64_t off, struct unw_fde *fde, uint64_t *next_off)
{
	const uint8_t *end, *idp;
	struct unw_cur c;
	uint64_t id, cie_off, range;
	bool is64;
	int err;

	if (next_off)
		*next_off = 0;
	if (!entry_bounds(sec, off, &c, &end, &is64))
		return off < sec->size && sec->size - off >= 4 && hwt_le32(sec->data + off) == 0
			   ? 1
			   : HWT_UNW_END_BAD_CFI;
	if (next_off)
		*next_off = (uint64_t)(end - sec->data);
	idp = c.p;
	id = is64 ? unw_u64(&c) : unw_u32(&c);
	if (c.err)
		return HWT_UNW_END_BAD_CFI;
	if (sec->eh) {
		if (id == 0)
			return 1; /* a CIE */
		if (id > (uint64_t)(idp - sec->data))
			return HWT_UNW_END_BAD_CFI;
		cie_off = (uint64_t)(idp - sec->data) - id;
	} else {
		if (id == (is64 ? ~(uint64_t)0 : 0xffffffffu))
			return 1;
		cie_off = id;
	}
	if ((err = cie_parse(sec, cie_off, &fde->cie)) != 0)
		return err;
	if (sec->eh) {
		fde->lo = unw_read_ptr(&c, fde->cie.fde_enc, sec->data, sec->addr, 0);
		range = unw_read_ptr(&c, fde->cie.fde_enc & 0x0f, sec->data, sec->addr, 0);
	} else if (fde->cie.addr_size == 4) {
		fde->lo = unw_u32(&c);
		range = unw_u32(&c);
	} else {
		fde->lo = unw_u64(&c);
		range = unw_u64(&c);
	}
	if (fde->cie.aug_z)
		unw_skip(&c, unw_uleb(&c));
	if (c.err || fde->lo + range < fde->lo)
		return HWT_UNW_END_BAD_CFI;
	fde->hi = fde->lo + range;
	fde->insns = c.p;
	fde->end = end;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* the DW_CFA interpreter                                                    */

/* Frames of remember_state kept at most (glibc and GCC use one or two). */
#define REMEMBER_MAX 16

enum {
	DW_CFA_advance_loc = 0x40,
	DW_CFA_offset = 0x80,
	DW_CFA_restore = 0xc0,
	DW_CFA_nop = 0x00,
	DW_CFA_set_loc = 0x01,
	DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03,
	DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05,
	DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07,
	DW_CFA_same_value = 0x08,
	DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a,
	DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e,
	DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10,
	DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12,
	DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14,
	DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_MIPS_advance_loc8 = 0x1d,
	DW_CFA_GNU_window_save = 0x2d,
	DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
};

struct interp {
	const struct unw_fde *fde;
	const struct unw_sec *sec;
	const struct unw_row *init; /* after the CIE's instructions, for restore */
	uint64_t loc, target;
	struct unw_row stack[REMEMBER_MAX];
	unsigned depth;
};

/* Sets a register's rule; registers outside the kept set are parsed and
 * dropped (vector registers: not needed to find callers). */
static void set_rule(struct unw_row *row, uint64_t reg, uint8_t kind, int64_t off)
{
	if (reg >= HWT_UNW_NREGS)
		return;
	row->reg[reg].kind = kind;
	row->reg[reg].u.off = off;
	row->reg[reg].len = 0;
}

static int set_expr(struct unw_row *row, uint64_t reg, uint8_t kind, struct unw_cur *c)
{
	uint64_t len = unw_uleb(c);
	const uint8_t *p = c->p;

	unw_skip(c, len);
	if (c->err || len > UINT16_MAX)
		return HWT_UNW_END_BAD_CFI;
	if (reg >= HWT_UNW_NREGS)
		return 0;
	row->reg[reg].kind = kind;
	row->reg[reg].len = (uint16_t)len;
	row->reg[reg].u.expr = p;
	return 0;
}

/* run()'s result when the location passed the target. */
#define RUN_STOPPED (-1)

/* Runs instructions [p, end) into row; stops once the location would pass
 * the target. Returns 0 at the end, RUN_STOPPED, or HWT_UNW_END_BAD_CFI. */
static int run(struct interp *in, const uint8_t *p, const uint8_t *end, struct unw_row *row)
{
	const struct unw_cie *cie = &in->fde->cie;
	struct unw_cur c = {p, end, false};

	while (c.p < c.end) {
		uint8_t op = unw_u8(&c);
		uint64_t reg, delta = 0;
		bool advance = false;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			delta = (uint64_t)(op & 0x3f) * cie->code_align;
			advance = true;
			break;
		case DW_CFA_offset:
			set_rule(row, op & 0x3f, UNW_OFFSET,
				 (int64_t)unw_uleb(&c) * cie->data_align);
			break;
		case DW_CFA_restore:
			if (!in->init)
				return HWT_UNW_END_BAD_CFI;
			if ((op & 0x3f) < HWT_UNW_NREGS)
				row->reg[op & 0x3f] = in->init->reg[op & 0x3f];
			break;
		default:
			switch (op) {
			case DW_CFA_nop:
				break;
			case DW_CFA_set_loc: {
				uint64_t loc =
				    unw_read_ptr(&c, cie->fde_enc, in->sec->data, in->sec->addr, 0);

				if (c.err)
					return HWT_UNW_END_BAD_CFI;
				if (loc > in->target)
					return RUN_STOPPED;
				in->loc = loc;
				break;
			}
			case DW_CFA_advance_loc1:
				delta = unw_u8(&c) * cie->code_align;
				advance = true;
				break;
			case DW_CFA_advance_loc2:
				delta = unw_u16(&c) * cie->code_align;
				advance = true;
				break;
			case DW_CFA_advance_loc4:
				delta = unw_u32(&c) * cie->code_align;
				advance = true;
				break;
			case DW_CFA_MIPS_advance_loc8:
				delta = unw_u64(&c) * cie->code_align;
				advance = true;
				break;
			case DW_CFA_offset_extended:
				reg = unw_uleb(&c);
				set_rule(row, reg, UNW_OFFSET,
					 (int64_t)unw_uleb(&c) * cie->data_align);
				break;
			case DW_CFA_offset_extended_sf:
				reg = unw_uleb(&c);
				set_rule(row, reg, UNW_OFFSET, unw_sleb(&c) * cie->data_align);
				break;
			case DW_CFA_GNU_negative_offset_extended:
				reg = unw_uleb(&c);
				set_rule(row, reg, UNW_OFFSET,
					 -(int64_t)unw_uleb(&c) * cie->data_align);
				break;
			case DW_CFA_val_offset:
				reg = unw_uleb(&c);
				set_rule(row, reg, UNW_VAL_OFFSET,
					 (int64_t)unw_uleb(&c) * cie->data_align);
				break;
			case DW_CFA_val_offset_sf:
				reg = unw_uleb(&c);
				set_rule(row, reg, UNW_VAL_OFFSET, unw_sleb(&c) * cie->data_align);
				break;
			case DW_CFA_restore_extended:
				reg = unw_uleb(&c);
				if (!in->init)
					return HWT_UNW_END_BAD_CFI;
				if (reg < HWT_UNW_NREGS)
					row->reg[reg] = in->init->reg[reg];
				break;
			case DW_CFA_undefined:
				set_rule(row, unw_uleb(&c), UNW_UNDEF, 0);
				break;
			case DW_CFA_same_value:
				set_rule(row, unw_uleb(&c), UNW_SAME, 0);
				break;
			case DW_CFA_register: {
				uint64_t r2;

				reg = unw_uleb(&c);
				r2 = unw_uleb(&c);
				if (reg < HWT_UNW_NREGS && r2 >= HWT_UNW_NREGS)
					return HWT_UNW_END_BAD_CFI;
				set_rule(row, reg, UNW_REG, 0);
				if (reg < HWT_UNW_NREGS)
					row->reg[reg].reg = (uint8_t)r2;
				break;
			}
			case DW_CFA_remember_state:
				if (in->depth == REMEMBER_MAX)
					return HWT_UNW_END_BAD_CFI;
				in->stack[in->depth++] = *row;
				break;
			case DW_CFA_restore_state:
				if (in->depth == 0)
					return HWT_UNW_END_BAD_CFI;
				*row = in->stack[--in->depth];
				break;
			case DW_CFA_def_cfa:
				reg = unw_uleb(&c);
				row->cfa.kind = UNW_CFA_REG;
				row->cfa.reg = reg < 256 ? (uint8_t)reg : 255;
				row->cfa.u.off = (int64_t)unw_uleb(&c);
				break;
			case DW_CFA_def_cfa_sf:
				reg = unw_uleb(&c);
				row->cfa.kind = UNW_CFA_REG;
				row->cfa.reg = reg < 256 ? (uint8_t)reg : 255;
				row->cfa.u.off = unw_sleb(&c) * cie->data_align;
				break;
			case DW_CFA_def_cfa_register:
				reg = unw_uleb(&c);
				if (row->cfa.kind != UNW_CFA_REG)
					return HWT_UNW_END_BAD_CFI;
				row->cfa.reg = reg < 256 ? (uint8_t)reg : 255;
				break;
			case DW_CFA_def_cfa_offset:
				if (row->cfa.kind != UNW_CFA_REG)
					return HWT_UNW_END_BAD_CFI;
				row->cfa.u.off = (int64_t)unw_uleb(&c);
				break;
			case DW_CFA_def_cfa_offset_sf:
				if (row->cfa.kind != UNW_CFA_REG)
					return HWT_UNW_END_BAD_CFI;
				row->cfa.u.off = unw_sleb(&c) * cie->data_align;
				break;
			case DW_CFA_def_cfa_expression: {
				uint64_t len = unw_uleb(&c);

				row->cfa.kind = UNW_CFA_EXPR;
				row->cfa.u.expr = c.p;
				row->cfa.len = len > UINT16_MAX ? 0 : (uint16_t)len;
				if (len > UINT16_MAX)
					return HWT_UNW_END_BAD_CFI;
				unw_skip(&c, len);
				break;
			}
			case DW_CFA_expression:
				reg = unw_uleb(&c);
				if (set_expr(row, reg, UNW_EXPR, &c))
					return HWT_UNW_END_BAD_CFI;
				break;
			case DW_CFA_val_expression:
				reg = unw_uleb(&c);
				if (set_expr(row, reg, UNW_VAL_EXPR, &c))
					return HWT_UNW_END_BAD_CFI;
				break;
			case DW_CFA_GNU_args_size:
				unw_uleb(&c);
				break;
			case DW_CFA_GNU_window_save:
				break;
			default:
				return HWT_UNW_END_BAD_CFI;
			}
		}
		if (c.err)
			return HWT_UNW_END_BAD_CFI;
		if (advance) {
			if (in->loc + delta < in->loc || in->loc + delta > in->target)
				return RUN_STOPPED;
			in->loc += delta;
		}
	}
	return c.err ? HWT_UNW_END_BAD_CFI : 0;
}

int unw_row_at(const struct unw_fde *fde, const struct unw_sec *sec, uint64_t pc,
	       struct unw_row *row)
{
	struct interp in;
	struct unw_row init;
	int err;

	if (fde->cie.ra >= HWT_UNW_NREGS)
		return HWT_UNW_END_BAD_CFI;
	memset(row, 0, sizeof(*row));
	memset(&in, 0, sizeof(in));
	in.fde = fde;
	in.sec = sec;
	in.loc = fde->lo;
	/* The CIE's instructions give the initial rules (no location moves
	 * them: an advance there would be malformed, treated as the end). */
	in.target = fde->lo;
	err = run(&in, fde->cie.insns, fde->cie.end, row);
	if (err > 0)
		return err;
	init = *row;
	in.init = &init;
	in.depth = 0;
	in.loc = fde->lo;
	in.target = pc;
	err = run(&in, fde->insns, fde->end, row);
	if (err > 0)
		return err;
	if (row->cfa.kind != UNW_CFA_REG && row->cfa.kind != UNW_CFA_EXPR)
		return HWT_UNW_END_BAD_CFI;
	row->ra = (uint8_t)fde->cie.ra;
	row->signal = fde->cie.signal;
	row->rules = 0;
	for (unsigned i = 0; i < HWT_UNW_NREGS; i++)
		if (row->reg[i].kind != UNW_SAME)
			row->rules |= 1u << i;
	return 0;
}
