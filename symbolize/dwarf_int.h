/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/dwarf_int.h - the lazy DWARF index, shared by its parts: the
 * index and its lookups (dwarf.c), the native reader of .debug_info and its
 * range lists (dwarf_native.c), the native .debug_line reader
 * (dwarf_line.c), and the libdwarf reader kept as a fallback for units the
 * native reader declines (dwarf_lib.c). Both readers fill the same per-unit
 * index through the builder helpers declared here, so that they give the
 * same answers by construction wherever both can read a unit.
 */
#ifndef HWT_SYMBOLIZE_DWARF_INT_H
#define HWT_SYMBOLIZE_DWARF_INT_H

#include <string.h>

#include "symbolize/sym_int.h"

#define MAX_DIE_DEPTH	 256 /* deeper DIE trees are malformed */
#define MAX_ORIGIN_CHAIN 8   /* abstract_origin/specification hops */

/* A function or inlined subroutine with code. */
struct dw_scope {
	uint64_t lo;	  /* start of the first range (binutils' arange.low) */
	const char *name; /* linkage name if any, else DW_AT_name; in the image */
	_Atomic(const char *) demangled;
	int32_t parent; /* enclosing scope for inlined subroutines, else -1 */
	uint32_t call_file, call_line, call_column;
	bool is_inline;
	bool is_linkage; /* name is final (binutils: linkage name or C) */
};

/* [start, next segment's start): owned by the innermost scope (-1: gap). */
struct dw_seg {
	uint64_t start;
	int32_t scope;
};

struct dw_row {
	uint64_t addr;
	uint32_t file; /* UINT32_MAX marks the end of a sequence */
	uint32_t line;
	uint32_t column;
	uint32_t discriminator;
};

/* What a line row says about its address (row_addr[i] is the address). */
struct dw_line {
	uint32_t file; /* UINT32_MAX marks the end of a sequence */
	uint32_t line;
	uint32_t column;
	uint32_t discriminator;
};

/* Line rows in 12 bytes instead of 24: 32-bit keys relative to the unit's
 * lowest row address, values packed in 64 bits (line 24 bits, column 12,
 * file 12 with 4095 marking the end of a sequence, discriminator 16). Used
 * when every row of the unit fits, else the wide row_addr/rows. Random
 * lookups are bound by cache misses on these tables: half the bytes, more
 * of them in cache. */
#define DW_R32_END 4095u

struct dw_rows32 {
	uint64_t base;
	uint32_t *k;	  /* n keys, 64-byte aligned */
	uint64_t *v;	  /* n packed rows */
	uint32_t *bucket; /* bucket[b]: keys below (b << shift); nbucket + 1 */
	size_t n, nbucket;
	unsigned shift;
};

/* The index of one unit: built once, then read without locks. Addresses
 * are kept apart from what they map to, so that the binary searches of a
 * lookup run over dense arrays of keys. */
struct dw_cuidx {
	struct dw_scope *scopes;
	size_t nscopes;
	struct sym_keys seg_start; /* segments: [start i, start i + 1) */
	int32_t *seg_scope;	   /* ... is owned by this scope (-1: gap) */
	struct dw_rows32 r32;	   /* line rows, compact (r32.k != NULL) ... */
	struct sym_keys row_addr;  /* ... or wide: addresses, sorted sequences */
	struct dw_line *rows;
	char **files; /* indexed by DWARF file number; NULL unknown */
	size_t nfiles;
	bool in_arena; /* scopes, rows, segments: in the object's arena */
};

/* Which reader indexes a unit. */
enum dw_reader {
	DW_READER_NONE = 0,
	DW_READER_NATIVE = 1,
	DW_READER_LIBDWARF = 2,
};

/* One abbreviation's attribute: name, form, and DW_FORM_implicit_const's
 * value. */
struct dw_attrspec {
	uint16_t at, form;
	int8_t slot; /* native reader: where the value goes, -1 skipped */
	int64_t implicit;
};

/* What the DIE walk does with a tag. */
enum dw_kind {
	DW_KIND_OTHER = 0, /* types, data: skipped with their children */
	DW_KIND_FUNC = 1,  /* subprogram, inlined subroutine, entry point */
	DW_KIND_NEST = 2,  /* lexical blocks, namespaces: walked through */
};

struct dw_abbrev {
	uint64_t code;
	uint32_t first; /* index of its first dw_attrspec */
	uint32_t nattrs;
	uint16_t tag;
	uint8_t children;
	uint8_t kind;  /* enum dw_kind */
	int32_t fixed; /* size of all attributes when every form has a
			  fixed size for this unit, else -1 */
};

/* A unit's abbreviation table. */
struct dw_abbrevs {
	struct dw_abbrev *v; /* sorted by code */
	size_t n;
	struct dw_attrspec *specs;
	size_t nspecs;
	bool dense; /* v[i].code == i + 1: direct indexing */
};

struct dw_cu;

/* Sizes that decide how forms are encoded in a unit (or a line table). */
struct dw_fctx {
	uint16_t version;
	uint8_t addr_size, offset_size;
};

/* One attribute value as read (not yet interpreted). */
struct dw_fval {
	uint64_t u;	 /* constants, offsets, indexes, addresses */
	const char *str; /* DW_FORM_string: in the section, NUL-terminated */
	uint16_t form;
};

/* A bounds-checked reader: every read past end sets bad and yields 0. */
struct dw_rd {
	const uint8_t *p, *end;
	bool be, bad;
};

/* Reads one value of form. Returns 0, -HWT_EFORMAT (past the end) or
 * -HWT_ENOTSUP (a form the native reader does not handle). */
int dwn_read_form(struct dw_rd *r, unsigned form, const struct dw_fctx *f, int64_t implicit,
		  struct dw_fval *v);
uint64_t dwn_rd_uleb(struct dw_rd *r); /* the slow path of dw_rd_uleb() */
int64_t dwn_rd_sleb(struct dw_rd *r);

static inline uint64_t dw_rd_fixed(struct dw_rd *r, unsigned n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return 0;
	}
	if (!r->be && (n == 4 || n == 8)) {
		if (n == 4) {
			uint32_t w;

			memcpy(&w, r->p, 4);
			v = w;
		} else {
			memcpy(&v, r->p, 8);
		}
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		v = n == 4 ? __builtin_bswap32((uint32_t)v) : __builtin_bswap64(v);
#endif
		r->p += n;
		return v;
	}
	if (r->be) {
		for (unsigned i = 0; i < n; i++)
			v = (v << 8) | r->p[i];
	} else {
		for (unsigned i = n; i-- > 0;)
			v = (v << 8) | r->p[i];
	}
	r->p += n;
	return v;
}

static inline uint8_t dw_rd_u8(struct dw_rd *r)
{
	if (r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

static inline uint64_t dw_rd_uleb(struct dw_rd *r)
{
	/* one-byte values are by far the most common */
	if (r->p < r->end && !(*r->p & 0x80))
		return *r->p++;
	return dwn_rd_uleb(r);
}

static inline void dw_rd_skip(struct dw_rd *r, uint64_t n)
{
	if ((uint64_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return;
	}
	r->p += n;
}

/* A string attribute value (string, strp, line_strp, strx forms), or NULL. */
const char *dwn_string(const struct sym_dwarf *dw, const struct dw_cu *cu, const struct dw_fval *v);

struct dw_cu {
	uint64_t off;	  /* unit header in .debug_info */
	uint64_t end;	  /* end of the unit */
	uint64_t die_off; /* the unit DIE */
	uint64_t abbrev_off;
	uint64_t base; /* DW_AT_low_pc of the unit DIE: range lists' base */
	uint64_t stmt_list;
	uint64_t str_offsets_base, addr_base, rnglists_base;
	const char *comp_dir;
	struct dw_abbrevs *abbrevs; /* native: parsed when first needed */
	_Atomic(struct dw_cuidx *) idx;
	uint16_t version;
	uint8_t addr_size, offset_size, unit_type;
	bool has_stmt_list, has_str_offsets_base, has_addr_base, has_rnglists_base;
	bool failed;
	bool mangled_lang; /* not C-like: names without linkage name need the symtab */
	uint8_t reader;	   /* enum dw_reader that may index it (AUTO: native
			      unless its unit DIE needed libdwarf) */
	uint8_t built_by;  /* enum dw_reader that built idx */
};

struct dw_crange {
	uint64_t lo, hi;
	uint32_t cu;
};

/* Memo of names resolved through abstract_origin/specification. */
struct dw_origin {
	uint64_t off; /* 0: empty slot */
	const char *name, *linkage;
};

/* A DWARF section's bytes (mapped or decompressed; live as long as the
 * image). */
struct dw_sect {
	const uint8_t *p;
	uint64_t n;
};

struct dw_lib; /* dwarf_lib.c */

/* Memory of the unit indexes, which live as long as the object: large
 * chunks, populated when mapped (one system call instead of a page fault
 * per page, which is what dominated indexing on virtual machines), handed
 * out by a bump pointer, freed together. */
struct dw_chunk {
	struct dw_chunk *next;
	size_t size, used;
};

/* Address ranges of one DIE. */
struct dw_rangebuf {
	uint64_t (*r)[2];
	size_t n, cap;
};

struct sym_dwarf {
	struct sym_elf *e;
	struct hwt_sym_obj *obj;
	unsigned mode; /* enum hwt_sym_dwarf_reader */
	bool be;       /* big-endian image */
	struct dw_sect info, abbrev, str, line_str, line, ranges, rnglists, addr, str_offsets;
	struct dw_cu *cus; /* in .debug_info order */
	size_t ncus;
	struct dw_crange *cranges;
	size_t ncranges;
	uint64_t *crange_lo; /* cranges[i].lo, for branch-free searches */
	struct dw_origin *origins;
	size_t norigins, origin_cap;
	struct dw_lib *lib; /* libdwarf, opened when first needed */
	bool lib_failed;
	_Atomic size_t built_native, built_libdwarf;
	/* Scratch of the unit builders (under obj->lock), kept from one unit
	 * to the next so that building does not fault in fresh memory each
	 * time. */
	struct dw_rowbuf *rows_scratch;
	struct dw_brange *ranges_scratch;
	size_t ranges_cap;
	struct dw_scope *scopes_scratch;
	size_t scopes_cap;
	struct dw_rangebuf rb_scratch;
	struct dw_chunk *arena;
	size_t arena_next; /* size of the next chunk */
};

/* --- shared builder (dwarf.c) --- */

/* size bytes, 64-byte aligned, from dw's arena (under obj->lock); NULL on
 * ENOMEM. */
void *dw_arena_alloc(struct sym_dwarf *dw, size_t size);

int dw_range_add(struct dw_rangebuf *rb, uint64_t lo, uint64_t hi);

struct dw_brange {
	uint64_t lo, hi;
	int32_t scope;
	uint32_t depth;
};

/* Collects one unit's scopes and ranges. */
struct dw_builder {
	struct sym_dwarf *dw;
	struct dw_cu *cu;
	uint64_t cu_base;
	struct dw_scope *scopes;
	size_t nscopes, cap_scopes;
	struct dw_brange *ranges;
	size_t nranges, cap_ranges;
	struct dw_rangebuf rb; /* the ranges of the scope being added */
	int err;
};

/* Call-site attributes of an inlined subroutine (has_*: present). */
struct dw_callsite {
	uint64_t file, line, column;
	bool has_file, has_line, has_column;
};

/* Starts building a unit with dw's scratch buffers. */
void dw_builder_init(struct dw_builder *b, struct sym_dwarf *dw, struct dw_cu *cu);
/* Adds a scope with the ranges in b->rb. Returns 0 or -ENOMEM/-HWT_ETOOBIG. */
int dw_add_scope(struct dw_builder *b, const char *name, const char *linkage, bool is_inline,
		 int32_t parent, uint32_t depth, const struct dw_callsite *call);
/* Flattens the builder's ranges into x's segments and copies the scopes. */
int dw_builder_finish(struct dw_builder *b, struct dw_cuidx *x);
/* Gives the scratch buffers back to dw. */
void dw_builder_fini(struct dw_builder *b);

/* The origin memo slot for a DIE offset (grows the table); NULL on ENOMEM. */
struct dw_origin *dw_origin_slot(struct sym_dwarf *dw, uint64_t off);

/* Joins a line table's directory and file name as binutils'
 * concat_filename does. Returns a malloc'd string or NULL (ENOMEM). */
char *dw_join_path(const char *comp_dir, const char *dir, const char *name);

/* Line rows as the state machine emits them -> sorted sequences. */
struct dw_rowbuf {
	struct dw_row *raw;
	size_t nraw, cap;
	size_t (*seqs)[3]; /* start row, end row, first address */
	size_t nseqs, cap_seqs;
	size_t seq_start;
};

/* Appends a row (the slow cases: growth, end of sequence). */
int dw_rows_push(struct dw_rowbuf *rb, const struct dw_row *r, bool endseq);

/* Adds one row as the state machine emits it. Inline: a line table emits
 * a row every few bytes. */
static inline int dw_rows_add(struct dw_rowbuf *rb, uint64_t addr, uint64_t file, size_t nfiles,
			      int64_t line, uint64_t column, uint64_t discriminator, bool endseq)
{
	struct dw_row r;

	r.addr = addr;
	r.file = endseq ? UINT32_MAX : (file < nfiles ? (uint32_t)file : 0);
	r.line = line < 0 || line > UINT32_MAX ? 0 : (uint32_t)line;
	r.column = column > UINT32_MAX ? 0 : (uint32_t)column;
	r.discriminator = discriminator > UINT32_MAX ? 0 : (uint32_t)discriminator;
	/* Several rows at one address: the last one describes it. */
	if (rb->nraw > rb->seq_start && rb->raw[rb->nraw - 1].addr == r.addr && !endseq) {
		rb->raw[rb->nraw - 1] = r;
		return 0;
	}
	if (!endseq && rb->nraw < rb->cap) {
		rb->raw[rb->nraw++] = r;
		return 0;
	}
	return dw_rows_push(rb, &r, endseq);
}
/* The row scratch of dw, emptied (NULL: no memory). */
struct dw_rowbuf *dw_rows_begin(struct sym_dwarf *dw);
int dw_rows_finish(struct sym_dwarf *dw, struct dw_rowbuf *rb, struct dw_cuidx *x);

bool dw_lang_is_c_like(uint64_t lang);
void dw_cuidx_free(struct dw_cuidx *x);

/* --- native reader (dwarf_native.c, dwarf_line.c) --- */

/* Loads the sections the native reader needs. Returns 0, -HWT_ENODEBUG (no
 * readable .debug_info), or another error. */
int dwn_open(struct sym_dwarf *dw);
/* Lists the units and their ranges. A unit whose unit DIE the native reader
 * cannot read is marked for libdwarf (when allowed) and listed by it. */
int dwn_list_units(struct sym_dwarf *dw);
/* Builds a unit's index. -HWT_ENOTSUP: a form or opcode the native reader
 * does not handle (the caller may try libdwarf). */
int dwn_build_unit(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_cuidx *x);
/* Reads cu's line table into x->files and x->rows. */
int dwn_read_lines(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_cuidx *x);
void dwn_free(struct sym_dwarf *dw);

/* --- libdwarf reader (dwarf_lib.c); every call under obj->lock --- */

int dwl_open(struct sym_dwarf *dw);
/* Lists every unit (LIBDWARF mode). */
int dwl_list_units(struct sym_dwarf *dw);
/* The ranges and language of one unit already listed natively. */
int dwl_unit_ranges(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_rangebuf *rb);
int dwl_build_unit(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_cuidx *x);
void dwl_close(struct sym_dwarf *dw);

/* Appends cu's ranges (in rb) to dw->cranges. */
int dw_add_cranges(struct sym_dwarf *dw, uint32_t cu, const struct dw_rangebuf *rb, size_t *cap);

#endif /* HWT_SYMBOLIZE_DWARF_INT_H */
