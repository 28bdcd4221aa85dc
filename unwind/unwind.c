/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * unwind/unwind.c - the unwinder: per-object CFI tables and the walk.
 *
 * An object's CFI is located the first time a frame lands in it: .eh_frame
 * with .eh_frame_hdr's sorted table (searched in place, nothing copied),
 * else a table built by scanning .eh_frame once; .debug_frame (from the
 * separate debug file first, else the object) is scanned the first time
 * .eh_frame has no FDE for an address. The rules computed at a code address
 * are kept in a per-object hash table keyed by the address, together with
 * "no FDE here" and "malformed here" answers, so that a return address seen
 * in an earlier sample is unwound with one lookup: a profile's samples
 * repeat a few thousand return addresses.
 *
 * The walk applies a row to the registers: the CFA from its rule, each
 * saved register from the stack copy, the caller's sp is the CFA (x86-64's
 * CIE convention), the return address column gives the caller. A register
 * that cannot be restored (saved beyond the copy) becomes unknown and only
 * ends the walk when a later rule needs it.
 */
#include "unwind/unw_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolize.h"

#define PERF_ABI_64	 2 /* PERF_SAMPLE_REGS_ABI_64 */
#define DEFAULT_MAX_ROWS 65536
#define SCAN_BACK	 16 /* FDEs looked at below a scanned table's match */

/* A scanned FDE: [lo, hi) at offset off of .eh_frame (dbg false) or
 * .debug_frame. */
struct fde_ent {
	uint64_t lo, hi;
	uint64_t off;
	bool dbg;
};

enum { ROW_EMPTY = 0, ROW_OK, ROW_END };

struct row_ent {
	uint64_t pc;
	uint8_t state; /* ROW_* */
	uint8_t end;   /* ROW_END: the hwt_unw_end reason */
	struct unw_row row;
};

struct unw_obj {
	struct hwt_sym_obj *obj;
	struct unw_sec eh, dbg;
	bool has_eh, has_dbg, dbg_scanned;
	const uint8_t *hdr_table; /* .eh_frame_hdr's (loc, fde) pairs */
	uint64_t hdr_count, hdr_addr;
	struct fde_ent *fdes; /* sorted by lo */
	size_t nfdes, fdes_cap;
	bool fdes_sorted;
	struct row_ent *rows; /* open addressing, power of two */
	size_t nrows, rows_cap;
	bool warned;
};

struct hwt_unw {
	struct hwt_unw_config cfg;
	struct unw_obj **objs; /* open addressing by object pointer */
	size_t nobjs, objs_cap;
	struct unw_obj *last;
	struct hwt_unw_stats st;
};

static const char *const end_names[HWT_UNW_END_COUNT_] = {
    [HWT_UNW_END_OUTERMOST] = "outermost",  [HWT_UNW_END_MAX] = "depth",
    [HWT_UNW_END_NO_CFI] = "no CFI",	    [HWT_UNW_END_STACK] = "stack copy",
    [HWT_UNW_END_UNMAPPED] = "unmapped",    [HWT_UNW_END_BAD_CFI] = "bad CFI",
    [HWT_UNW_END_NO_REGS] = "no registers", [HWT_UNW_END_NO_OBJECT] = "object unreadable",
};

const char *hwt_unw_end_name(enum hwt_unw_end end)
{
	return (unsigned)end < HWT_UNW_END_COUNT_ ? end_names[end] : "unknown";
}

void hwt_unw_config_init(struct hwt_unw_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->max_rows = DEFAULT_MAX_ROWS;
}

int hwt_unw_alloc(const struct hwt_unw_config *cfg, struct hwt_unw **out)
{
	struct hwt_unw_config c;
	struct hwt_unw *u;

	if (!out)
		return -HWT_EINVAL;
	*out = NULL;
	hwt_unw_config_init(&c);
	if (cfg && hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->cfg = c;
	if (!u->cfg.max_rows)
		u->cfg.max_rows = DEFAULT_MAX_ROWS;
	*out = u;
	return 0;
}

static void obj_free(struct unw_obj *o)
{
	if (!o)
		return;
	free(o->fdes);
	free(o->rows);
	free(o);
}

void hwt_unw_free(struct hwt_unw *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->objs_cap; i++)
		obj_free(u->objs[i]);
	free(u->objs);
	free(u);
}

void hwt_unw_stats(const struct hwt_unw *u, struct hwt_unw_stats *st)
{
	if (u && st)
		*st = u->st;
}

/* ------------------------------------------------------------------------ */
/* registers                                                                 */

int hwt_unw_regs_from_perf(uint64_t abi, uint64_t mask, const uint8_t *values,
			   struct hwt_unw_regs *out)
{
	/* perf's x86 register order (enum perf_event_x86_regs) to DWARF's. */
	static const int8_t dwarf_of[24] = {
	    HWT_UNW_RAX, HWT_UNW_RBX, HWT_UNW_RCX, HWT_UNW_RDX, HWT_UNW_RSI, HWT_UNW_RDI,
	    HWT_UNW_RBP, HWT_UNW_RSP, HWT_UNW_RIP, -1,		-1,	     -1,
	    -1,		 -1,	      -1,	   -1,		8,	     9,
	    10,		 11,	      12,	   13,		14,	     15,
	};
	unsigned k = 0;

	if (!out)
		return -HWT_EINVAL;
	memset(out, 0, sizeof(*out));
	if (abi != PERF_ABI_64)
		return -HWT_ENOTSUP;
	if (!values)
		return -HWT_EFORMAT;
	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(mask & (1ull << bit)))
			continue;
		if (bit < 24 && dwarf_of[bit] >= 0) {
			out->r[dwarf_of[bit]] = hwt_le64(values + 8 * k);
			out->valid |= 1u << dwarf_of[bit];
		}
		k++;
	}
	if (!(out->valid & (1u << HWT_UNW_RIP)) || !(out->valid & (1u << HWT_UNW_RSP)))
		return -HWT_EFORMAT;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* per-object tables                                                         */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static void warn_once(struct hwt_unw *u, struct unw_obj *o, const char *what)
{
	struct hwt_sym_obj_info info;

	u->st.bad_cfi++;
	if (o->warned)
		return;
	o->warned = true;
	if (hwt_sym_obj_info(o->obj, &info) < 0)
		info.path = "?";
	hwt_log(&u->cfg.logger, HWT_LOG_WARN,
		"%s: %s: stacks through it end there (marked as truncated)", info.path, what);
}

static int fde_add(struct unw_obj *o, uint64_t lo, uint64_t hi, uint64_t off, bool dbg)
{
	if (o->nfdes == o->fdes_cap) {
		size_t cap = o->fdes_cap ? o->fdes_cap * 2 : 256;
		struct fde_ent *n = realloc(o->fdes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		o->fdes = n;
		o->fdes_cap = cap;
	}
	o->fdes[o->nfdes++] = (struct fde_ent){lo, hi, off, dbg};
	o->fdes_sorted = false;
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_ent *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Lists the FDEs of a section into the object's sorted table. */
static int scan(struct hwt_unw *u, struct unw_obj *o, const struct unw_sec *sec, bool dbg)
{
	uint64_t off = 0, next;
	bool bad = false;
	int err;

	while (off < sec->size) {
		struct unw_fde fde;
		int r = unw_fde_parse(sec, off, &fde, &next);

		if (r == 0 && fde.hi > fde.lo) {
			if ((err = fde_add(o, fde.lo, fde.hi, off, dbg)) < 0)
				return err;
			u->st.fdes++;
		} else if (r > 1) {
			bad = true;
		}
		if (next <= off)
			break;
		off = next;
	}
	if (bad)
		warn_once(u, o,
			  dbg ? "malformed .debug_frame entries" : "malformed .eh_frame entries");
	if (o->nfdes) /* qsort's array may not be NULL, even for 0 entries */
		qsort(o->fdes, o->nfdes, sizeof(*o->fdes), cmp_fde);
	o->fdes_sorted = true;
	return 0;
}

/* Uses .eh_frame_hdr's table when it has the layout every linker writes:
 * version 1, entries of two datarel sdata4 values. */
static void use_hdr(struct unw_obj *o, const uint8_t *hdr, uint64_t size, uint64_t addr)
{
	struct unw_cur c = {hdr, hdr + size, false};
	uint8_t version = unw_u8(&c), ptr_enc = unw_u8(&c), count_enc = unw_u8(&c),
		table_enc = unw_u8(&c);
	uint64_t count;

	if (c.err || version != 1 || table_enc != (UNW_PE_DATAREL | UNW_PE_SDATA4))
		return;
	unw_read_ptr(&c, ptr_enc, hdr, addr, addr);
	count = unw_read_ptr(&c, count_enc, hdr, addr, addr);
	if (c.err || count > (uint64_t)(c.end - c.p) / 8)
		return;
	o->hdr_table = c.p;
	o->hdr_count = count;
	o->hdr_addr = addr;
}

static int obj_load(struct hwt_unw *u, struct unw_obj *o)
{
	const uint8_t *hdr;
	uint64_t hsize, haddr;

	if (hwt_sym_obj_section_data(o->obj, ".eh_frame", HWT_SYM_SECTION_OBJECT, &o->eh.data,
				     &o->eh.size, &o->eh.addr) == 0 &&
	    o->eh.size) {
		o->eh.eh = true;
		o->has_eh = true;
		if (hwt_sym_obj_section_data(o->obj, ".eh_frame_hdr", HWT_SYM_SECTION_OBJECT, &hdr,
					     &hsize, &haddr) == 0)
			use_hdr(o, hdr, hsize, haddr);
		if (o->hdr_table)
			u->st.fdes += o->hdr_count;
		else
			return scan(u, o, &o->eh, false);
	}
	return 0;
}

/* .debug_frame, on the first address .eh_frame does not cover. */
static int obj_load_dbg(struct hwt_unw *u, struct unw_obj *o)
{
	o->dbg_scanned = true;
	if (hwt_sym_obj_section_data(o->obj, ".debug_frame", HWT_SYM_SECTION_DEBUG, &o->dbg.data,
				     &o->dbg.size, &o->dbg.addr) < 0 &&
	    hwt_sym_obj_section_data(o->obj, ".debug_frame", HWT_SYM_SECTION_OBJECT, &o->dbg.data,
				     &o->dbg.size, &o->dbg.addr) < 0)
		return 0;
	if (!o->dbg.size)
		return 0;
	o->dbg.eh = false;
	o->has_dbg = true;
	u->st.debug_frame++;
	return scan(u, o, &o->dbg, true);
}

static int objs_grow(struct hwt_unw *u)
{
	size_t cap = u->objs_cap ? u->objs_cap * 2 : 64;
	struct unw_obj **n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < u->objs_cap; i++) {
		struct unw_obj *o = u->objs[i];
		size_t j;

		if (!o)
			continue;
		j = mix64((uint64_t)(uintptr_t)o->obj) & (cap - 1);
		while (n[j])
			j = (j + 1) & (cap - 1);
		n[j] = o;
	}
	free(u->objs);
	u->objs = n;
	u->objs_cap = cap;
	return 0;
}

static int obj_get(struct hwt_unw *u, struct hwt_sym_obj *obj, struct unw_obj **out)
{
	struct unw_obj *o;
	size_t j;
	int err;

	if (u->last && u->last->obj == obj) {
		*out = u->last;
		return 0;
	}
	if ((u->nobjs + 1) * 2 > u->objs_cap && (err = objs_grow(u)) < 0)
		return err;
	j = mix64((uint64_t)(uintptr_t)obj) & (u->objs_cap - 1);
	for (; u->objs[j]; j = (j + 1) & (u->objs_cap - 1)) {
		if (u->objs[j]->obj == obj) {
			*out = u->last = u->objs[j];
			return 0;
		}
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->obj = obj;
	if ((err = obj_load(u, o)) < 0) {
		obj_free(o);
		return err;
	}
	u->objs[j] = o;
	u->nobjs++;
	u->st.objects++;
	*out = u->last = o;
	return 0;
}

/* The FDE covering pc in the .eh_frame_hdr table. Returns 0, 1 none,
 * or HWT_UNW_END_BAD_CFI. */
static int hdr_find(struct unw_obj *o, uint64_t pc, struct unw_fde *fde)
{
	size_t lo = 0, hi = o->hdr_count;
	uint64_t fde_addr;
	int r;

	while (lo < hi) { /* first entry whose start is above pc */
		size_t mid = lo + (hi - lo) / 2;
		uint64_t start =
		    o->hdr_addr + (uint64_t)(int64_t)(int32_t)hwt_le32(o->hdr_table + mid * 8);

		if (start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 1;
	fde_addr =
	    o->hdr_addr + (uint64_t)(int64_t)(int32_t)hwt_le32(o->hdr_table + (lo - 1) * 8 + 4);
	if (fde_addr < o->eh.addr || fde_addr - o->eh.addr >= o->eh.size)
		return HWT_UNW_END_BAD_CFI;
	r = unw_fde_parse(&o->eh, fde_addr - o->eh.addr, fde, NULL);
	if (r == 1)
		return HWT_UNW_END_BAD_CFI;
	if (r)
		return r;
	return pc >= fde->lo && pc < fde->hi ? 0 : 1;
}

/* The FDE covering pc in the scanned table (of .eh_frame and/or
 * .debug_frame, dbg selects which). */
static int table_find(struct unw_obj *o, uint64_t pc, bool dbg, struct unw_fde *fde)
{
	size_t lo = 0, hi = o->nfdes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->fdes[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = 0; k < SCAN_BACK && lo > k; k++) {
		const struct fde_ent *e = &o->fdes[lo - 1 - k];

		if (e->dbg != dbg || pc < e->lo || pc >= e->hi)
			continue;
		return unw_fde_parse(dbg ? &o->dbg : &o->eh, e->off, fde, NULL)
			   ? HWT_UNW_END_BAD_CFI
			   : 0;
	}
	return 1;
}

/* Computes the row at object address pc. Returns 0, or the end reason. */
static int row_compute(struct hwt_unw *u, struct unw_obj *o, uint64_t pc, struct unw_row *row)
{
	struct unw_fde fde;
	const struct unw_sec *sec = &o->eh;
	int r = 1, err;

	if (o->hdr_table)
		r = hdr_find(o, pc, &fde);
	else if (o->has_eh)
		r = table_find(o, pc, false, &fde);
	if (r == 1) {
		if (!o->dbg_scanned && (err = obj_load_dbg(u, o)) < 0)
			return err;
		if (o->has_dbg) {
			r = table_find(o, pc, true, &fde);
			sec = &o->dbg;
		}
	}
	if (r == 1)
		return HWT_UNW_END_NO_CFI;
	if (r == 0)
		r = unw_row_at(&fde, sec, pc, row);
	if (r)
		warn_once(u, o, "malformed call frame information");
	return r;
}

static int rows_grow(struct unw_obj *o, size_t cap)
{
	struct row_ent *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < o->rows_cap; i++) {
		const struct row_ent *e = &o->rows[i];
		size_t j;

		if (e->state == ROW_EMPTY)
			continue;
		j = mix64(e->pc) & (cap - 1);
		while (n[j].state != ROW_EMPTY)
			j = (j + 1) & (cap - 1);
		n[j] = *e;
	}
	free(o->rows);
	o->rows = n;
	o->rows_cap = cap;
	return 0;
}

/* The row at pc, from the cache or computed. Returns 0 with *row pointing
 * into the cache (valid until the next call), a positive end reason, or a
 * negative error. */
static int row_get(struct hwt_unw *u, struct unw_obj *o, uint64_t pc, const struct unw_row **row)
{
	struct row_ent *e;
	size_t j;
	int r;

	if ((o->nrows + 1) * 2 > o->rows_cap) {
		if (o->rows_cap >= 2 * u->cfg.max_rows) {
			/* Full: start over rather than grow without bound. */
			memset(o->rows, 0, o->rows_cap * sizeof(*o->rows));
			o->nrows = 0;
		} else if ((r = rows_grow(o, o->rows_cap ? o->rows_cap * 2 : 256)) < 0) {
			return r;
		}
	}
	j = mix64(pc) & (o->rows_cap - 1);
	for (;; j = (j + 1) & (o->rows_cap - 1)) {
		e = &o->rows[j];
		if (e->state == ROW_EMPTY)
			break;
		if (e->pc == pc) {
			u->st.row_hits++;
			*row = &e->row;
			return e->state == ROW_OK ? 0 : e->end;
		}
	}
	u->st.rows++;
	r = row_compute(u, o, pc, &e->row);
	if (r < 0)
		return r;
	/* obj_load_dbg may not move the table: rows live in o->rows only. */
	e->pc = pc;
	e->state = r ? ROW_END : ROW_OK;
	e->end = (uint8_t)r;
	o->nrows++;
	*row = &e->row;
	return r;
}

/* ------------------------------------------------------------------------ */
/* the walk                                                                  */

static int reg_get(const struct hwt_unw_regs *regs, unsigned reg, uint64_t *v)
{
	if (reg >= HWT_UNW_NREGS)
		return HWT_UNW_END_BAD_CFI;
	if (!(regs->valid & (1u << reg)))
		return HWT_UNW_END_NO_REGS;
	*v = regs->r[reg];
	return 0;
}

/* One register of the caller from its rule. Returns 0 (valid or left
 * unknown: *ok says) or the end reason when the rule itself fails. */
static int restore(const struct unw_rule *rule, unsigned reg, uint64_t cfa,
		   const struct hwt_unw_regs *cur, const struct unw_mem *mem, uint64_t *v, bool *ok)
{
	uint64_t a;
	int r = 0;

	*ok = false;
	switch (rule->kind) {
	case UNW_SAME:
		if (!(cur->valid & (1u << reg)))
			return 0;
		*v = cur->r[reg];
		break;
	case UNW_UNDEF:
		return 0;
	case UNW_OFFSET:
		r = unw_mem_read(mem, cfa + (uint64_t)rule->u.off, 8, v);
		break;
	case UNW_VAL_OFFSET:
		*v = cfa + (uint64_t)rule->u.off;
		break;
	case UNW_REG:
		r = reg_get(cur, rule->reg, v);
		break;
	case UNW_EXPR:
		r = unw_expr_eval(rule->u.expr, rule->len, cur, mem, true, cfa, &a);
		if (!r)
			r = unw_mem_read(mem, a, 8, v);
		break;
	case UNW_VAL_EXPR:
		r = unw_expr_eval(rule->u.expr, rule->len, cur, mem, true, cfa, v);
		break;
	default:
		return HWT_UNW_END_BAD_CFI;
	}
	*ok = r == 0;
	return r;
}

/* step()'s answer when the frame has no caller (HWT_UNW_END_OUTERMOST is
 * 0, which is success). */
#define STEP_OUTERMOST 100

/* One step: the caller's registers from this frame's row. Returns 0, the
 * end reason, or STEP_OUTERMOST when there is no caller. */
static int step(const struct unw_row *row, const struct hwt_unw_regs *cur,
		const struct unw_mem *mem, struct hwt_unw_regs *next)
{
	uint64_t cfa, v;
	bool ok;
	int r;

	if (row->cfa.kind == UNW_CFA_REG) {
		if ((r = reg_get(cur, row->cfa.reg, &cfa)) != 0)
			return r;
		cfa += (uint64_t)row->cfa.u.off;
	} else if ((r = unw_expr_eval(row->cfa.u.expr, row->cfa.len, cur, mem, false, 0, &cfa)) !=
		   0) {
		return r;
	}
	if (row->reg[row->ra].kind == UNW_UNDEF)
		return STEP_OUTERMOST;
	if (row->reg[row->ra].kind == UNW_SAME)
		return HWT_UNW_END_BAD_CFI; /* no rule for the return address */
	/* Registers without a rule keep their values; the others (a few per
	 * row) are restored. */
	*next = *cur;
	for (uint32_t m = row->rules; m; m &= m - 1) {
		unsigned reg = (unsigned)__builtin_ctz(m);

		r = restore(&row->reg[reg], reg, cfa, cur, mem, &v, &ok);
		/* Only the return address must be restored; another register
		 * saved beyond the copy is just unknown from here on. */
		if (r && reg == row->ra)
			return r;
		if (ok) {
			next->r[reg] = v;
			next->valid |= 1u << reg;
		} else {
			next->valid &= ~(1u << reg);
		}
	}
	if (row->reg[HWT_UNW_RSP].kind == UNW_SAME) {
		next->r[HWT_UNW_RSP] = cfa;
		next->valid |= 1u << HWT_UNW_RSP;
	}
	if (row->ra != HWT_UNW_RIP) {
		next->r[HWT_UNW_RIP] = next->r[row->ra];
		next->valid |= 1u << HWT_UNW_RIP;
	}
	if (next->r[HWT_UNW_RIP] == 0)
		return STEP_OUTERMOST;
	/* A caller's frame lies above its callee's; only a signal frame may
	 * move to another stack. */
	if (!row->signal &&
	    (!(next->valid & (1u << HWT_UNW_RSP)) || next->r[HWT_UNW_RSP] <= cur->r[HWT_UNW_RSP]))
		return HWT_UNW_END_BAD_CFI;
	return 0;
}

int hwt_unw_walk(struct hwt_unw *u, const struct hwt_unw_regs *regs,
		 const struct hwt_unw_stack *stack, hwt_unw_find_fn find, void *ctx,
		 struct hwt_unw_frame *frames, unsigned max, struct hwt_unw_result *res)
{
	struct unw_mem mem;
	struct hwt_unw_regs cur, next;
	unsigned n = 0;
	bool exact = true;

	if (!u || !regs || !stack || !find || !res || (!frames && max))
		return -HWT_EINVAL;
	memset(res, 0, sizeof(*res));
	mem.start = stack->start;
	mem.data = stack->data;
	mem.size = stack->data ? stack->size : 0;
	if (!(regs->valid & (1u << HWT_UNW_RIP))) {
		res->end = HWT_UNW_END_NO_REGS;
		return 0;
	}
	cur = *regs;
	for (;;) {
		uint64_t ip = cur.r[HWT_UNW_RIP], pc = exact ? ip : ip - 1;
		struct hwt_unw_module mod = {NULL, 0, false};
		struct unw_obj *o;
		const struct unw_row *row;
		int r;

		if (n == max) {
			res->end = HWT_UNW_END_MAX;
			break;
		}
		frames[n].ip = ip;
		frames[n].exact = exact;
		frames[n].signal = false;
		n++;
		res->end_ip = ip;
		r = find(ctx, pc, &mod);
		if (r == -HWT_ENOSYM) {
			res->end = HWT_UNW_END_UNMAPPED;
			break;
		}
		if (r < 0)
			return r;
		if (!mod.obj) {
			res->end = mod.unreadable ? HWT_UNW_END_NO_OBJECT : HWT_UNW_END_NO_CFI;
			break;
		}
		if ((r = obj_get(u, mod.obj, &o)) < 0)
			return r;
		r = row_get(u, o, pc - mod.bias, &row);
		if (r < 0)
			return r;
		if (r == 0)
			r = step(row, &cur, &mem, &next);
		if (r == 0 && row->signal)
			frames[n - 1].signal = true;
		if (r) {
			res->end =
			    r == STEP_OUTERMOST ? HWT_UNW_END_OUTERMOST : (enum hwt_unw_end)r;
			break;
		}
		exact = row->signal;
		cur = next;
	}
	res->nframes = n;
	return (int)n;
}
