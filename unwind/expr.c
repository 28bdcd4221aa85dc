/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * unwind/expr.c - the DWARF expressions CFI uses (DW_CFA_def_cfa_expression,
 * DW_CFA_expression, DW_CFA_val_expression): a stack machine over the
 * frame's registers and the stack copy. The linker's PLT entries compute
 * their CFA with one (rsp + 8, + 8 more past the push of the lazy-binding
 * stub), glibc's signal trampoline finds every register in the signal
 * frame with them. The stack depth and the number of operations are
 * bounded, so a malformed (or fuzzed) expression cannot loop or overflow.
 */
#include "unwind/unw_int.h"

#define STACK_MAX 64
#define STEPS_MAX 1024

int unw_mem_read(const struct unw_mem *m, uint64_t addr, unsigned size, uint64_t *v)
{
	uint64_t off = addr - m->start;

	if (addr < m->start || off >= m->size || m->size - off < size)
		return HWT_UNW_END_STACK;
	switch (size) {
	case 1:
		*v = m->data[off];
		break;
	case 2:
		*v = hwt_le16(m->data + off);
		break;
	case 4:
		*v = hwt_le32(m->data + off);
		break;
	case 8:
		*v = hwt_le64(m->data + off);
		break;
	default:
		return HWT_UNW_END_BAD_CFI;
	}
	return 0;
}

static int reg_value(const struct hwt_unw_regs *regs, uint64_t reg, uint64_t *v)
{
	if (reg >= HWT_UNW_NREGS)
		return HWT_UNW_END_BAD_CFI;
	if (!(regs->valid & (1u << reg)))
		return HWT_UNW_END_NO_REGS;
	*v = regs->r[reg];
	return 0;
}

int unw_expr_eval(const uint8_t *expr, size_t len, const struct hwt_unw_regs *regs,
		  const struct unw_mem *mem, bool has_push, uint64_t push, uint64_t *out)
{
	struct unw_cur c = {expr, expr + len, false};
	uint64_t st[STACK_MAX];
	unsigned sp = 0, steps = 0;
	int err;

	if (has_push)
		st[sp++] = push;
	while (c.p < c.end) {
		uint8_t op = unw_u8(&c);
		uint64_t a, b, v = 0;
		bool pushv = true;

		if (++steps > STEPS_MAX)
			return HWT_UNW_END_BAD_CFI;
			/* Binary operators: take b (top), then a. */
#define POP(x)                                                                                     \
	do {                                                                                       \
		if (sp == 0)                                                                       \
			return HWT_UNW_END_BAD_CFI;                                                \
		(x) = st[--sp];                                                                    \
	} while (0)
		if (op >= 0x30 && op <= 0x4f) { /* DW_OP_lit0..31 */
			v = op - 0x30;
		} else if (op >= 0x70 && op <= 0x8f) { /* DW_OP_breg0..31 */
			int64_t off = unw_sleb(&c);

			if ((err = reg_value(regs, op - 0x70, &v)) != 0)
				return err;
			v += (uint64_t)off;
		} else {
			switch (op) {
			case 0x03: /* addr */
				v = unw_u64(&c);
				break;
			case 0x06: /* deref */
				POP(a);
				if ((err = unw_mem_read(mem, a, 8, &v)) != 0)
					return err;
				break;
			case 0x94: { /* deref_size */
				unsigned size = unw_u8(&c);

				POP(a);
				if (size != 1 && size != 2 && size != 4 && size != 8)
					return HWT_UNW_END_BAD_CFI;
				if ((err = unw_mem_read(mem, a, size, &v)) != 0)
					return err;
				break;
			}
			case 0x08: /* const1u */
				v = unw_u8(&c);
				break;
			case 0x09: /* const1s */
				v = (uint64_t)(int64_t)(int8_t)unw_u8(&c);
				break;
			case 0x0a: /* const2u */
				v = unw_u16(&c);
				break;
			case 0x0b: /* const2s */
				v = (uint64_t)(int64_t)(int16_t)unw_u16(&c);
				break;
			case 0x0c: /* const4u */
				v = unw_u32(&c);
				break;
			case 0x0d: /* const4s */
				v = (uint64_t)(int64_t)(int32_t)unw_u32(&c);
				break;
			case 0x0e: /* const8u */
			case 0x0f: /* const8s */
				v = unw_u64(&c);
				break;
			case 0x10: /* constu */
				v = unw_uleb(&c);
				break;
			case 0x11: /* consts */
				v = (uint64_t)unw_sleb(&c);
				break;
			case 0x12: /* dup */
				if (sp == 0)
					return HWT_UNW_END_BAD_CFI;
				v = st[sp - 1];
				break;
			case 0x13: /* drop */
				POP(a);
				pushv = false;
				break;
			case 0x14: /* over */
				if (sp < 2)
					return HWT_UNW_END_BAD_CFI;
				v = st[sp - 2];
				break;
			case 0x15: { /* pick */
				unsigned i = unw_u8(&c);

				if (i >= sp)
					return HWT_UNW_END_BAD_CFI;
				v = st[sp - 1 - i];
				break;
			}
			case 0x16: /* swap */
				if (sp < 2)
					return HWT_UNW_END_BAD_CFI;
				a = st[sp - 1];
				st[sp - 1] = st[sp - 2];
				st[sp - 2] = a;
				pushv = false;
				break;
			case 0x17: /* rot */
				if (sp < 3)
					return HWT_UNW_END_BAD_CFI;
				a = st[sp - 1];
				st[sp - 1] = st[sp - 2];
				st[sp - 2] = st[sp - 3];
				st[sp - 3] = a;
				pushv = false;
				break;
			case 0x19: /* abs */
				POP(a);
				v = (int64_t)a < 0 ? -a : a;
				break;
			case 0x1f: /* neg */
				POP(a);
				v = -a;
				break;
			case 0x20: /* not */
				POP(a);
				v = ~a;
				break;
			case 0x23: /* plus_uconst */
				POP(a);
				v = a + unw_uleb(&c);
				break;
			case 0x1a: /* and */
			case 0x1b: /* div */
			case 0x1c: /* minus */
			case 0x1d: /* mod */
			case 0x1e: /* mul */
			case 0x21: /* or */
			case 0x22: /* plus */
			case 0x24: /* shl */
			case 0x25: /* shr */
			case 0x26: /* shra */
			case 0x27: /* xor */
			case 0x29: /* eq */
			case 0x2a: /* ge */
			case 0x2b: /* gt */
			case 0x2c: /* le */
			case 0x2d: /* lt */
			case 0x2e: /* ne */
				POP(b);
				POP(a);
				switch (op) {
				case 0x1a:
					v = a & b;
					break;
				case 0x1b:
					if (b == 0 || ((int64_t)a == INT64_MIN && (int64_t)b == -1))
						return HWT_UNW_END_BAD_CFI;
					v = (uint64_t)((int64_t)a / (int64_t)b);
					break;
				case 0x1c:
					v = a - b;
					break;
				case 0x1d:
					if (b == 0)
						return HWT_UNW_END_BAD_CFI;
					v = a % b;
					break;
				case 0x1e:
					v = a * b;
					break;
				case 0x21:
					v = a | b;
					break;
				case 0x22:
					v = a + b;
					break;
				case 0x24:
					v = b >= 64 ? 0 : a << b;
					break;
				case 0x25:
					v = b >= 64 ? 0 : a >> b;
					break;
				case 0x26:
					v = b >= 64 ? (uint64_t)((int64_t)a >> 63)
						    : (uint64_t)((int64_t)a >> b);
					break;
				case 0x27:
					v = a ^ b;
					break;
				case 0x29:
					v = a == b;
					break;
				case 0x2a:
					v = (int64_t)a >= (int64_t)b;
					break;
				case 0x2b:
					v = (int64_t)a > (int64_t)b;
					break;
				case 0x2c:
					v = (int64_t)a <= (int64_t)b;
					break;
				case 0x2d:
					v = (int64_t)a < (int64_t)b;
					break;
				default:
					v = a != b;
					break;
				}
				break;
			case 0x2f:   /* skip */
			case 0x28: { /* bra */
				int16_t off = (int16_t)unw_u16(&c);
				bool jump = true;

				if (op == 0x28) {
					POP(a);
					jump = a != 0;
				}
				pushv = false;
				if (c.err)
					return HWT_UNW_END_BAD_CFI;
				if (jump) {
					if (off < 0 ? (size_t)(c.p - expr) < (size_t)-off
						    : (size_t)(c.end - c.p) < (size_t)off)
						return HWT_UNW_END_BAD_CFI;
					c.p += off;
				}
				break;
			}
			case 0x92: { /* bregx */
				uint64_t reg = unw_uleb(&c);
				int64_t off = unw_sleb(&c);

				if (c.err)
					return HWT_UNW_END_BAD_CFI;
				if ((err = reg_value(regs, reg, &v)) != 0)
					return err;
				v += (uint64_t)off;
				break;
			}
			case 0x96: /* nop */
				pushv = false;
				break;
			default: /* register locations, pieces, TLS, calls: not
				    meaningful in CFI */
				return HWT_UNW_END_BAD_CFI;
			}
		}
		if (c.err)
			return HWT_UNW_END_BAD_CFI;
		if (pushv) {
			if (sp == STACK_MAX)
				return HWT_UNW_END_BAD_CFI;
			st[sp++] = v;
		}
#undef POP
	}
	if (sp == 0)
		return HWT_UNW_END_BAD_CFI;
	*out = st[sp - 1];
	return 0;
}
