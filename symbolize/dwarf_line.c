/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/dwarf_line.c - our own reader of .debug_line, versions 2 to 5:
 * the header (directories and files, DWARF 5's entry formats included) and
 * the line-number program, run through the DWARF state machine into the
 * shared row builder (dwarf.c), which keeps the last row at each address
 * and sorts the sequences as for libdwarf's rows.
 *
 * Every read is bounds-checked against the table's own length. A table
 * that is malformed anywhere gives no rows at all, as libdwarf's
 * dwarf_srclines_b() fails for the whole table. DW_LNE_define_file (DWARF
 * 2-4, never emitted by GCC or LLVM) and entry formats we cannot read
 * decline the unit (-HWT_ENOTSUP): libdwarf reads it instead.
 */
#include "symbolize/dwarf_int.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Directory and file tables of one line table header. */
struct ltab {
	const char **dirs;
	size_t ndirs;
	struct {
		const char *name;
		uint64_t dir;
	} * files;
	size_t nfiles;
};

/* Reads one DWARF 5 entry list (directories or files) described by its
 * entry format. */
static int read_entries(const struct sym_dwarf *dw, const struct dw_cu *cu, struct dw_rd *r,
			const struct dw_fctx *f, bool files, struct ltab *t)
{
	uint64_t fmt[32][2], count;
	unsigned nfmt;

	if (r->p >= r->end)
		return -HWT_EFORMAT;
	nfmt = *r->p++;
	if (nfmt > HWT_ARRAY_SIZE(fmt))
		return -HWT_ENOTSUP;
	for (unsigned i = 0; i < nfmt; i++) {
		fmt[i][0] = dw_rd_uleb(r);
		fmt[i][1] = dw_rd_uleb(r);
	}
	count = dw_rd_uleb(r);
	if (r->bad)
		return -HWT_EFORMAT;
	/* each entry takes at least a byte, unless its format is empty */
	if (count > (uint64_t)(r->end - r->p) && nfmt > 0)
		return -HWT_EFORMAT;
	if (count > (1u << 24))
		return -HWT_EFORMAT;
	if (files) {
		t->files = calloc(count ? count : 1, sizeof(*t->files));
		if (!t->files)
			return -ENOMEM;
	} else {
		t->dirs = calloc(count ? count : 1, sizeof(*t->dirs));
		if (!t->dirs)
			return -ENOMEM;
	}
	for (uint64_t e = 0; e < count; e++) {
		const char *path = NULL;
		uint64_t dir = 0;

		for (unsigned i = 0; i < nfmt; i++) {
			struct dw_fval v = {0};
			int ret;

			if (fmt[i][1] > 0xffff)
				return -HWT_ENOTSUP;
			ret = dwn_read_form(r, (unsigned)fmt[i][1], f, 0, &v);
			if (ret < 0)
				return ret;
			if (fmt[i][0] == DW_LNCT_path)
				path = dwn_string(dw, cu, &v);
			else if (fmt[i][0] == DW_LNCT_directory_index)
				dir = v.u;
		}
		if (files) {
			t->files[e].name = path;
			t->files[e].dir = dir;
		} else {
			t->dirs[e] = path;
		}
	}
	if (files)
		t->nfiles = (size_t)count;
	else
		t->ndirs = (size_t)count;
	return 0;
}

/* The include directories and file names of DWARF 2-4. */
static int read_tables_v4(struct dw_rd *r, struct ltab *t)
{
	size_t cap = 0;

	for (;;) {
		const uint8_t *nul =
		    r->p < r->end ? memchr(r->p, 0, (size_t)(r->end - r->p)) : NULL;

		if (!nul)
			return -HWT_EFORMAT;
		if (nul == r->p) {
			r->p++;
			break;
		}
		if (t->ndirs == cap) {
			size_t c = cap ? cap * 2 : 16;
			void *n = realloc(t->dirs, c * sizeof(*t->dirs));

			if (!n)
				return -ENOMEM;
			t->dirs = n;
			cap = c;
		}
		t->dirs[t->ndirs++] = (const char *)r->p;
		r->p = nul + 1;
	}
	cap = 0;
	for (;;) {
		const uint8_t *nul =
		    r->p < r->end ? memchr(r->p, 0, (size_t)(r->end - r->p)) : NULL;
		const char *name = (const char *)r->p;

		if (!nul)
			return -HWT_EFORMAT;
		if (nul == r->p) {
			r->p++;
			break;
		}
		r->p = nul + 1;
		if (t->nfiles == cap) {
			size_t c = cap ? cap * 2 : 32;
			void *n = realloc(t->files, c * sizeof(*t->files));

			if (!n)
				return -ENOMEM;
			t->files = n;
			cap = c;
		}
		t->files[t->nfiles].name = name;
		t->files[t->nfiles].dir = dw_rd_uleb(r);
		dw_rd_uleb(r); /* modification time */
		dw_rd_uleb(r); /* length */
		if (r->bad)
			return -HWT_EFORMAT;
		t->nfiles++;
	}
	return 0;
}

/* x->files from the tables, numbered as DWARF numbers them: from 1 before
 * DWARF 5 (0 stays unknown), from 0 in DWARF 5. */
static int make_files(const struct dw_cu *cu, unsigned version, const struct ltab *t,
		      struct dw_cuidx *x)
{
	size_t first = version >= 5 ? 0 : 1;

	x->nfiles = t->nfiles + first;
	x->files = calloc(x->nfiles ? x->nfiles : 1, sizeof(*x->files));
	if (!x->files)
		return -ENOMEM;
	for (size_t i = 0; i < t->nfiles; i++) {
		const char *dir = NULL;
		uint64_t d = t->files[i].dir;

		/* Directory 0 is the unit's directory before DWARF 5; from
		 * DWARF 5 it is an entry of the list. */
		if (version >= 5) {
			if (d < t->ndirs)
				dir = t->dirs[d];
		} else if (d > 0 && d <= t->ndirs) {
			dir = t->dirs[d - 1];
		}
		x->files[first + i] = dw_join_path(cu->comp_dir, dir, t->files[i].name);
		if (!x->files[first + i])
			return -ENOMEM;
	}
	return 0;
}

/* Runs the line-number program from r to its end. */
static int run_program(struct dw_rd *r, unsigned version, const uint8_t *std_len,
		       unsigned opcode_base, unsigned min_inst, unsigned max_ops, int line_base,
		       unsigned line_range, size_t nfiles, struct dw_rowbuf *rows)
{
	/* DWARF 5 says the file register starts at 1, like earlier versions;
	 * binutils (and libdwarf 20210528) start it at 0 in DWARF 5, the
	 * primary source file. GCC's tables differ when a unit's code comes
	 * first from an included file: we answer as binutils does. */
	const uint64_t file0 = version >= 5 ? 0 : 1;
	uint64_t addr = 0, file = file0, column = 0, disc = 0, op_index = 0;
	int64_t line = 1;
	int ret = 0;

#define ADVANCE(adv)                                                                               \
	do {                                                                                       \
		uint64_t adv_ = (adv);                                                             \
		if (max_ops <= 1) {                                                                \
			addr += min_inst * adv_;                                                   \
		} else {                                                                           \
			addr += min_inst * ((op_index + adv_) / max_ops);                          \
			op_index = (op_index + adv_) % max_ops;                                    \
		}                                                                                  \
	} while (0)

	/* Special opcodes, one per row in most programs: their advances
	 * precomputed (two divisions each otherwise). */
	uint32_t op_addr[256];
	int32_t op_line[256];

	for (unsigned op = opcode_base; op < 256; op++) {
		unsigned adj = op - opcode_base;

		op_addr[op] = adj / line_range;
		op_line[op] = line_base + (int)(adj % line_range);
	}
	while (r->p < r->end && ret == 0) {
		unsigned op = *r->p++;

		if (op >= opcode_base) {
			if (max_ops <= 1)
				addr += min_inst * op_addr[op];
			else
				ADVANCE(op_addr[op]);
			line += op_line[op];
			ret = dw_rows_add(rows, addr, file, nfiles, line, column, disc, false);
			disc = 0;
			continue;
		}
		switch (op) {
		case 0: {
			uint64_t len = dw_rd_uleb(r);
			const uint8_t *next;
			unsigned sub;

			if (r->bad || len == 0 || len > (uint64_t)(r->end - r->p))
				return -HWT_EFORMAT;
			next = r->p + len;
			sub = *r->p++;
			switch (sub) {
			case DW_LNE_end_sequence:
				ret =
				    dw_rows_add(rows, addr, file, nfiles, line, column, disc, true);
				addr = 0;
				file = file0;
				line = 1;
				column = 0;
				disc = 0;
				op_index = 0;
				break;
			case DW_LNE_set_address:
				if (len - 1 < 1 || len - 1 > 8)
					return -HWT_EFORMAT;
				addr = dw_rd_fixed(r, (unsigned)(len - 1));
				op_index = 0;
				break;
			case DW_LNE_define_file:
				return -HWT_ENOTSUP;
			case DW_LNE_set_discriminator:
				disc = dw_rd_uleb(r);
				break;
			default:
				break; /* vendor extensions: skipped by length */
			}
			if (r->bad || r->p > next)
				return -HWT_EFORMAT;
			r->p = next;
			break;
		}
		case DW_LNS_copy:
			ret = dw_rows_add(rows, addr, file, nfiles, line, column, disc, false);
			disc = 0;
			break;
		case DW_LNS_advance_pc:
			ADVANCE(dw_rd_uleb(r));
			break;
		case DW_LNS_advance_line:
			line += dwn_rd_sleb(r);
			break;
		case DW_LNS_set_file:
			file = dw_rd_uleb(r);
			break;
		case DW_LNS_set_column:
			column = dw_rd_uleb(r);
			break;
		case DW_LNS_negate_stmt:
		case DW_LNS_set_basic_block:
		case DW_LNS_set_prologue_end:
		case DW_LNS_set_epilogue_begin:
			break;
		case DW_LNS_const_add_pc:
			ADVANCE((255 - opcode_base) / line_range);
			break;
		case DW_LNS_fixed_advance_pc:
			addr += dw_rd_fixed(r, 2);
			op_index = 0;
			break;
		case DW_LNS_set_isa:
			dw_rd_uleb(r);
			break;
		default:
			/* an opcode newer than us: skip its operands */
			for (unsigned i = 0; i < std_len[op - 1]; i++)
				dw_rd_uleb(r);
			break;
		}
		if (r->bad)
			return -HWT_EFORMAT;
	}
#undef ADVANCE
	return ret;
}

int dwn_read_lines(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_cuidx *x)
{
	struct ltab t = {0};
	struct dw_rowbuf *rows = dw_rows_begin(dw);
	struct dw_fctx f;
	struct dw_rd r;
	const uint8_t *std_len, *prog;
	uint64_t len, hlen;
	unsigned version, min_inst, max_ops = 1, opcode_base, line_range;
	int line_base, ret;

	if (!cu->has_stmt_list || cu->stmt_list >= dw->line.n)
		return 0; /* a unit without a line table */
	if (!rows)
		return -ENOMEM;
	r = (struct dw_rd){dw->line.p + cu->stmt_list, dw->line.p + dw->line.n, dw->be, false};
	f.offset_size = 4;
	len = dw_rd_fixed(&r, 4);
	if (len == 0xffffffffu) {
		len = dw_rd_fixed(&r, 8);
		f.offset_size = 8;
	} else if (len >= 0xfffffff0u) {
		return 0;
	}
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return 0;
	r.end = r.p + len;
	version = (unsigned)dw_rd_fixed(&r, 2);
	if (version < 2 || version > 5)
		return 0;
	f.version = (uint16_t)version;
	f.addr_size = cu->addr_size;
	if (version >= 5) {
		f.addr_size = (uint8_t)dw_rd_fixed(&r, 1);
		dw_rd_fixed(&r, 1); /* segment selector size */
	}
	hlen = dw_rd_fixed(&r, f.offset_size);
	if (r.bad || hlen > (uint64_t)(r.end - r.p))
		return 0;
	prog = r.p + hlen;
	min_inst = (unsigned)dw_rd_fixed(&r, 1);
	if (version >= 4)
		max_ops = (unsigned)dw_rd_fixed(&r, 1);
	dw_rd_fixed(&r, 1); /* default_is_stmt */
	line_base = (int8_t)dw_rd_fixed(&r, 1);
	line_range = (unsigned)dw_rd_fixed(&r, 1);
	opcode_base = (unsigned)dw_rd_fixed(&r, 1);
	std_len = r.p;
	if (r.bad || line_range == 0 || opcode_base == 0 ||
	    opcode_base - 1 > (unsigned)(r.end - r.p))
		return 0;
	r.p += opcode_base - 1;
	if (version >= 5) {
		ret = read_entries(dw, cu, &r, &f, false, &t);
		if (ret == 0)
			ret = read_entries(dw, cu, &r, &f, true, &t);
	} else {
		ret = read_tables_v4(&r, &t);
	}
	if (ret == 0 && r.p > prog)
		ret = -HWT_EFORMAT;
	if (ret == 0)
		ret = make_files(cu, version, &t, x);
	if (ret == 0) {
		r.p = prog;
		ret = run_program(&r, version, std_len, opcode_base, min_inst, max_ops, line_base,
				  line_range, x->nfiles, rows);
	}
	if (ret == 0)
		ret = dw_rows_finish(dw, rows, x);
	free(t.dirs);
	free(t.files);
	if (ret == -HWT_EFORMAT) {
		/* malformed: no line information at all, as with libdwarf */
		for (size_t i = 0; i < x->nfiles; i++)
			free(x->files[i]);
		free(x->files);
		if (!x->in_arena)
			free(x->rows);
		sym_keys_fini(&x->row_addr);
		x->files = NULL;
		x->nfiles = 0;
		x->rows = NULL;
		return 0;
	}
	return ret;
}
