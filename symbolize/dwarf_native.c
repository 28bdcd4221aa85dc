/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/dwarf_native.c - our own reader of .debug_info: unit headers,
 * abbreviation tables, the DIE tree, range lists (.debug_ranges and
 * .debug_rnglists), strings (.debug_str, .debug_line_str, strx through
 * .debug_str_offsets) and indexed addresses (.debug_addr), DWARF 2 to 5.
 *
 * It reads only what the index needs: the unit DIE, and below it the DIEs
 * that own code (subprograms, inlined subroutines, entry points, with their
 * names through abstract_origin/specification and their call sites) and the
 * scopes that nest them (lexical blocks, namespaces). Everything else is
 * skipped by its abbreviation: at once when all its forms have a fixed
 * size, through DW_AT_sibling when the producer gave one. That is most of
 * the gain over libdwarf, which allocates and frees a structure for every
 * DIE and attribute it touches.
 *
 * Every read is bounds-checked (struct dw_rd); a malformed unit stops the
 * walk and keeps what was read, as libdwarf's walk does. A form the reader
 * does not handle (DW_FORM_indirect, unknown codes) declines the whole
 * unit with -HWT_ENOTSUP, and dwarf.c gives it to libdwarf.
 */
#include "symbolize/dwarf_int.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Bytes                                                                     */

uint64_t dwn_rd_uleb(struct dw_rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end) {
		uint8_t b = *r->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

int64_t dwn_rd_sleb(struct dw_rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end) {
		uint8_t b = *r->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return (int64_t)v;
		}
	}
	r->bad = true;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Forms                                                                     */

static inline int read_form(struct dw_rd *r, unsigned form, const struct dw_fctx *f,
			    int64_t implicit, struct dw_fval *v)
{
	v->form = (uint16_t)form;
	switch (form) {
	case DW_FORM_addr:
		v->u = dw_rd_fixed(r, f->addr_size);
		break;
	case DW_FORM_data1:
	case DW_FORM_ref1:
	case DW_FORM_flag:
	case DW_FORM_strx1:
	case DW_FORM_addrx1:
		v->u = dw_rd_u8(r);
		break;
	case DW_FORM_data2:
	case DW_FORM_ref2:
	case DW_FORM_strx2:
	case DW_FORM_addrx2:
		v->u = dw_rd_fixed(r, 2);
		break;
	case DW_FORM_strx3:
	case DW_FORM_addrx3:
		v->u = dw_rd_fixed(r, 3);
		break;
	case DW_FORM_data4:
	case DW_FORM_ref4:
	case DW_FORM_strx4:
	case DW_FORM_addrx4:
	case DW_FORM_ref_sup4:
		v->u = dw_rd_fixed(r, 4);
		break;
	case DW_FORM_data8:
	case DW_FORM_ref8:
	case DW_FORM_ref_sig8:
	case DW_FORM_ref_sup8:
		v->u = dw_rd_fixed(r, 8);
		break;
	case DW_FORM_data16:
		dw_rd_skip(r, 16);
		v->u = 0;
		break;
	case DW_FORM_sdata:
		v->u = (uint64_t)dwn_rd_sleb(r);
		break;
	case DW_FORM_udata:
	case DW_FORM_ref_udata:
	case DW_FORM_strx:
	case DW_FORM_addrx:
	case DW_FORM_loclistx:
	case DW_FORM_rnglistx:
	case DW_FORM_GNU_addr_index:
	case DW_FORM_GNU_str_index:
		v->u = dw_rd_uleb(r);
		break;
	case DW_FORM_string: {
		const uint8_t *nul =
		    r->p < r->end ? memchr(r->p, 0, (size_t)(r->end - r->p)) : NULL;

		if (!nul) {
			r->bad = true;
			r->p = r->end;
			break;
		}
		v->str = (const char *)r->p;
		r->p = nul + 1;
		break;
	}
	case DW_FORM_strp:
	case DW_FORM_line_strp:
	case DW_FORM_sec_offset:
	case DW_FORM_strp_sup:
	case DW_FORM_GNU_ref_alt:
	case DW_FORM_GNU_strp_alt:
		v->u = dw_rd_fixed(r, f->offset_size);
		break;
	case DW_FORM_ref_addr:
		v->u = dw_rd_fixed(r, f->version <= 2 ? f->addr_size : f->offset_size);
		break;
	case DW_FORM_block1:
		dw_rd_skip(r, dw_rd_u8(r));
		break;
	case DW_FORM_block2:
		dw_rd_skip(r, dw_rd_fixed(r, 2));
		break;
	case DW_FORM_block4:
		dw_rd_skip(r, dw_rd_fixed(r, 4));
		break;
	case DW_FORM_block:
	case DW_FORM_exprloc:
		dw_rd_skip(r, dw_rd_uleb(r));
		break;
	case DW_FORM_flag_present:
		v->u = 1;
		break;
	case DW_FORM_implicit_const:
		v->u = (uint64_t)implicit;
		break;
	default:
		/* DW_FORM_indirect (no producer we know emits it) and codes we
		 * do not know: libdwarf reads such units. */
		return -HWT_ENOTSUP;
	}
	return r->bad ? -HWT_EFORMAT : 0;
}

int dwn_read_form(struct dw_rd *r, unsigned form, const struct dw_fctx *f, int64_t implicit,
		  struct dw_fval *v)
{
	return read_form(r, form, f, implicit, v);
}

/* Size of a form in this unit, or -1 when it varies. */
static int form_size(unsigned form, const struct dw_fctx *f)
{
	switch (form) {
	case DW_FORM_flag_present:
	case DW_FORM_implicit_const:
		return 0;
	case DW_FORM_data1:
	case DW_FORM_ref1:
	case DW_FORM_flag:
	case DW_FORM_strx1:
	case DW_FORM_addrx1:
		return 1;
	case DW_FORM_data2:
	case DW_FORM_ref2:
	case DW_FORM_strx2:
	case DW_FORM_addrx2:
		return 2;
	case DW_FORM_strx3:
	case DW_FORM_addrx3:
		return 3;
	case DW_FORM_data4:
	case DW_FORM_ref4:
	case DW_FORM_strx4:
	case DW_FORM_addrx4:
	case DW_FORM_ref_sup4:
		return 4;
	case DW_FORM_data8:
	case DW_FORM_ref8:
	case DW_FORM_ref_sig8:
	case DW_FORM_ref_sup8:
		return 8;
	case DW_FORM_data16:
		return 16;
	case DW_FORM_addr:
		return f->addr_size;
	case DW_FORM_strp:
	case DW_FORM_line_strp:
	case DW_FORM_sec_offset:
	case DW_FORM_strp_sup:
	case DW_FORM_GNU_ref_alt:
	case DW_FORM_GNU_strp_alt:
		return f->offset_size;
	case DW_FORM_ref_addr:
		return f->version <= 2 ? f->addr_size : f->offset_size;
	default:
		return -1;
	}
}

static struct dw_fctx fctx_of(const struct dw_cu *cu)
{
	struct dw_fctx f = {cu->version, cu->addr_size, cu->offset_size};

	return f;
}

/* ------------------------------------------------------------------------ */
/* Attribute values, interpreted as libdwarf's dwarf_formstring,            */
/* dwarf_lowpc/highpc, dwarf_formudata and dwarf_global_formref do          */

/* A NUL-terminated string at off in a section, or NULL. */
static const char *sect_string(const struct dw_sect *s, uint64_t off)
{
	if (!s->p || off >= s->n)
		return NULL;
	/* A section that ends with a NUL terminates every string in it: no
	 * scan (the usual case); else look for the NUL. */
	if (s->p[s->n - 1] != 0 && !memchr(s->p + off, 0, (size_t)(s->n - off)))
		return NULL;
	return (const char *)s->p + off;
}

const char *dwn_string(const struct sym_dwarf *dw, const struct dw_cu *cu, const struct dw_fval *v)
{
	switch (v->form) {
	case DW_FORM_string:
		return v->str;
	case DW_FORM_strp:
		return sect_string(&dw->str, v->u);
	case DW_FORM_line_strp:
		return sect_string(&dw->line_str, v->u);
	case DW_FORM_strx:
	case DW_FORM_strx1:
	case DW_FORM_strx2:
	case DW_FORM_strx3:
	case DW_FORM_strx4:
	case DW_FORM_GNU_str_index: {
		uint64_t pos;
		struct dw_rd r;

		if (!cu->has_str_offsets_base || v->u > dw->str_offsets.n / cu->offset_size)
			return NULL;
		pos = cu->str_offsets_base + v->u * cu->offset_size;
		if (pos < cu->str_offsets_base || pos > dw->str_offsets.n)
			return NULL;
		r = (struct dw_rd){dw->str_offsets.p + pos, dw->str_offsets.p + dw->str_offsets.n,
				   dw->be, false};
		pos = dw_rd_fixed(&r, cu->offset_size);
		return r.bad ? NULL : sect_string(&dw->str, pos);
	}
	default:
		return NULL; /* strp_sup, GNU_strp_alt: in a file we do not have */
	}
}

/* An address-class value (addr, addrx through .debug_addr). */
static bool val_addr(const struct sym_dwarf *dw, const struct dw_cu *cu, const struct dw_fval *v,
		     uint64_t *out)
{
	switch (v->form) {
	case DW_FORM_addr:
		*out = v->u;
		return true;
	case DW_FORM_addrx:
	case DW_FORM_addrx1:
	case DW_FORM_addrx2:
	case DW_FORM_addrx3:
	case DW_FORM_addrx4:
	case DW_FORM_GNU_addr_index: {
		uint64_t pos;
		struct dw_rd r;

		if (!cu->has_addr_base || v->u > dw->addr.n / cu->addr_size)
			return false;
		pos = cu->addr_base + v->u * cu->addr_size;
		if (pos < cu->addr_base || pos > dw->addr.n)
			return false;
		r = (struct dw_rd){dw->addr.p + pos, dw->addr.p + dw->addr.n, dw->be, false};
		*out = dw_rd_fixed(&r, cu->addr_size);
		return !r.bad;
	}
	default:
		return false;
	}
}

static bool val_udata(const struct dw_fval *v, uint64_t *out)
{
	switch (v->form) {
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
	case DW_FORM_udata:
		*out = v->u;
		return true;
	case DW_FORM_sdata:
	case DW_FORM_implicit_const:
		if ((int64_t)v->u < 0)
			return false;
		*out = v->u;
		return true;
	default:
		return false;
	}
}

/* A reference to a DIE, as an offset in .debug_info. */
static bool val_ref(const struct dw_cu *cu, const struct dw_fval *v, uint64_t *out)
{
	switch (v->form) {
	case DW_FORM_ref1:
	case DW_FORM_ref2:
	case DW_FORM_ref4:
	case DW_FORM_ref8:
	case DW_FORM_ref_udata:
		if (v->u >= cu->end - cu->off)
			return false;
		*out = cu->off + v->u;
		return true;
	case DW_FORM_ref_addr:
		*out = v->u;
		return true;
	default:
		return false; /* signatures and supplementary files: not resolvable */
	}
}

/* A section offset (DW_AT_stmt_list, DW_AT_*_base, DW_AT_ranges). */
static bool val_offset(const struct dw_fval *v, uint64_t *out)
{
	switch (v->form) {
	case DW_FORM_sec_offset:
	case DW_FORM_data4:
	case DW_FORM_data8:
	case DW_FORM_udata:
		*out = v->u;
		return true;
	default:
		return false;
	}
}

/* ------------------------------------------------------------------------ */
/* Abbreviations                                                             */

/* The attributes the index reads, by slot. */
enum {
	A_LOW_PC,
	A_HIGH_PC,
	A_RANGES,
	A_NAME,
	A_LINKAGE,
	A_MIPS_LINKAGE,
	A_ORIGIN,
	A_SPEC,
	A_CALL_FILE,
	A_CALL_LINE,
	A_CALL_COLUMN,
	A_SIBLING,
	A_LANG,
	A_STMT_LIST,
	A_COMP_DIR,
	A_STR_OFFSETS_BASE,
	A_ADDR_BASE,
	A_GNU_ADDR_BASE,
	A_RNGLISTS_BASE,
	A_COUNT
};

static int8_t attr_slot(uint64_t at)
{
	switch (at) {
	case DW_AT_low_pc:
		return A_LOW_PC;
	case DW_AT_high_pc:
		return A_HIGH_PC;
	case DW_AT_ranges:
		return A_RANGES;
	case DW_AT_name:
		return A_NAME;
	case DW_AT_linkage_name:
		return A_LINKAGE;
	case DW_AT_MIPS_linkage_name:
		return A_MIPS_LINKAGE;
	case DW_AT_abstract_origin:
		return A_ORIGIN;
	case DW_AT_specification:
		return A_SPEC;
	case DW_AT_call_file:
		return A_CALL_FILE;
	case DW_AT_call_line:
		return A_CALL_LINE;
	case DW_AT_call_column:
		return A_CALL_COLUMN;
	case DW_AT_sibling:
		return A_SIBLING;
	case DW_AT_language:
		return A_LANG;
	case DW_AT_stmt_list:
		return A_STMT_LIST;
	case DW_AT_comp_dir:
		return A_COMP_DIR;
	case DW_AT_str_offsets_base:
		return A_STR_OFFSETS_BASE;
	case DW_AT_addr_base:
		return A_ADDR_BASE;
	case DW_AT_GNU_addr_base:
		return A_GNU_ADDR_BASE;
	case DW_AT_rnglists_base:
		return A_RNGLISTS_BASE;
	default:
		return -1;
	}
}

static uint8_t tag_kind(uint64_t tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_entry_point:
		return DW_KIND_FUNC;
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_with_stmt:
	case DW_TAG_common_block:
		return DW_KIND_NEST;
	default:
		return DW_KIND_OTHER;
	}
}

static void abbrevs_free(struct dw_abbrevs *a)
{
	if (!a)
		return;
	free(a->v);
	free(a->specs);
	free(a);
}

static int cmp_abbrev(const void *x, const void *y)
{
	const struct dw_abbrev *a = x, *b = y;

	return a->code < b->code ? -1 : a->code > b->code;
}

/* Parses the abbreviation table of cu. */
static int abbrevs_parse(const struct sym_dwarf *dw, const struct dw_cu *cu,
			 struct dw_abbrevs **out)
{
	struct dw_fctx f = fctx_of(cu);
	struct dw_abbrevs *a;
	struct dw_rd r;
	size_t cap = 0, cap_specs = 0;
	bool sorted = true;
	int ret = -HWT_EFORMAT;

	if (cu->abbrev_off >= dw->abbrev.n)
		return -HWT_EFORMAT;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	r = (struct dw_rd){dw->abbrev.p + cu->abbrev_off, dw->abbrev.p + dw->abbrev.n, dw->be,
			   false};
	for (;;) {
		struct dw_abbrev *ab;
		uint64_t code = dwn_rd_uleb(&r);
		int fixed = 0;

		if (r.bad)
			goto error;
		if (code == 0)
			break;
		if (a->n == cap) {
			size_t c = cap ? cap * 2 : 64;
			void *n = realloc(a->v, c * sizeof(*a->v));

			if (!n) {
				ret = -ENOMEM;
				goto error;
			}
			a->v = n;
			cap = c;
		}
		ab = &a->v[a->n];
		memset(ab, 0, sizeof(*ab));
		ab->code = code;
		uint64_t tag = dwn_rd_uleb(&r);
		ab->tag = tag > 0xffff ? 0 : (uint16_t)tag;
		ab->kind = tag_kind(tag);
		ab->children = dw_rd_u8(&r) != 0;
		ab->first = (uint32_t)a->nspecs;
		for (;;) {
			uint64_t at = dwn_rd_uleb(&r), form = dwn_rd_uleb(&r);
			struct dw_attrspec *sp;
			int size;

			if (r.bad)
				goto error;
			if (at == 0 && form == 0)
				break;
			if (a->nspecs == cap_specs) {
				size_t c = cap_specs ? cap_specs * 2 : 256;
				void *n;

				if (c > UINT32_MAX)
					goto error;
				n = realloc(a->specs, c * sizeof(*a->specs));
				if (!n) {
					ret = -ENOMEM;
					goto error;
				}
				a->specs = n;
				cap_specs = c;
			}
			sp = &a->specs[a->nspecs++];
			sp->at = at > 0xffff ? 0 : (uint16_t)at;
			/* 0 is no form: an unknown code stays unknown */
			sp->form = form > 0xffff ? 0 : (uint16_t)form;
			sp->slot = attr_slot(at);
			sp->implicit = form == DW_FORM_implicit_const ? dwn_rd_sleb(&r) : 0;
			size = form_size(sp->form, &f);
			if (size < 0 || fixed < 0)
				fixed = -1;
			else
				fixed += size;
		}
		ab->nattrs = (uint32_t)(a->nspecs - ab->first);
		ab->fixed = fixed;
		if (a->n > 0 && a->v[a->n - 1].code >= code)
			sorted = false;
		a->n++;
	}
	if (!sorted)
		qsort(a->v, a->n, sizeof(*a->v), cmp_abbrev);
	a->dense = a->n > 0 && a->v[0].code == 1 && a->v[a->n - 1].code == a->n;
	*out = a;
	return 0;
error:
	abbrevs_free(a);
	return ret;
}

/* Finds one abbreviation without building the table (the unit DIE's, at
 * listing time: most units are never looked up). specs has room for max
 * attributes. Returns 0, -HWT_EFORMAT, or -HWT_ENOTSUP when it has more
 * than max (the caller parses the whole table then). */
static int abbrev_scan(const struct sym_dwarf *dw, const struct dw_cu *cu, uint64_t code,
		       struct dw_abbrev *ab, struct dw_attrspec *specs, size_t max)
{
	struct dw_fctx f = fctx_of(cu);
	struct dw_rd r = {dw->abbrev.p + cu->abbrev_off, dw->abbrev.p + dw->abbrev.n, dw->be,
			  false};

	for (;;) {
		uint64_t c = dw_rd_uleb(&r), tag;
		int fixed = 0;

		if (r.bad || c == 0)
			return -HWT_EFORMAT;
		tag = dw_rd_uleb(&r);
		memset(ab, 0, sizeof(*ab));
		ab->code = c;
		ab->tag = tag > 0xffff ? 0 : (uint16_t)tag;
		ab->kind = tag_kind(tag);
		ab->children = dw_rd_u8(&r) != 0;
		for (;;) {
			uint64_t at = dw_rd_uleb(&r), form = dw_rd_uleb(&r);
			int64_t implicit = form == DW_FORM_implicit_const ? dwn_rd_sleb(&r) : 0;
			struct dw_attrspec *sp;
			int size;

			if (r.bad)
				return -HWT_EFORMAT;
			if (at == 0 && form == 0)
				break;
			if (c != code)
				continue;
			if (ab->nattrs == max)
				return -HWT_ENOTSUP;
			sp = &specs[ab->nattrs++];
			sp->at = at > 0xffff ? 0 : (uint16_t)at;
			sp->form = form > 0xffff ? 0 : (uint16_t)form;
			sp->slot = attr_slot(at);
			sp->implicit = implicit;
			size = form_size(sp->form, &f);
			fixed = size < 0 || fixed < 0 ? -1 : fixed + size;
		}
		if (c == code) {
			ab->fixed = fixed;
			return 0;
		}
	}
}

static const struct dw_abbrev *abbrev_find(const struct dw_abbrevs *a, uint64_t code)
{
	size_t lo = 0, hi = a->n;

	if (a->dense)
		return code - 1 < a->n ? &a->v[code - 1] : NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->v[mid].code < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->n && a->v[lo].code == code ? &a->v[lo] : NULL;
}

/* The unit's abbreviations, parsed once and kept with the unit. Under lock. */
static int unit_abbrevs(struct sym_dwarf *dw, struct dw_cu *cu, const struct dw_abbrevs **out)
{
	if (!cu->abbrevs) {
		int ret = abbrevs_parse(dw, cu, &cu->abbrevs);

		if (ret < 0)
			return ret;
	}
	*out = cu->abbrevs;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* DIEs                                                                      */

struct die {
	uint32_t have; /* bit per slot */
	struct dw_fval v[A_COUNT];
};

#define HAS(d, slot) (((d)->have >> (slot)) & 1u)

/* Reads the attributes of a DIE with abbreviation ab, keeping those the
 * index uses. */
static int die_read(struct dw_rd *r, const struct dw_fctx *f, const struct dw_abbrevs *a,
		    const struct dw_abbrev *ab, struct die *d)
{
	const struct dw_attrspec *sp = a->specs + ab->first;
	struct dw_fval junk;

	d->have = 0;
	for (uint32_t i = 0; i < ab->nattrs; i++, sp++) {
		int ret;

		if (sp->slot >= 0) {
			ret = read_form(r, sp->form, f, sp->implicit, &d->v[sp->slot]);
			d->have |= 1u << sp->slot;
		} else {
			ret = read_form(r, sp->form, f, sp->implicit, &junk);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Skips the attributes of a DIE. */
static int die_skip(struct dw_rd *r, const struct dw_fctx *f, const struct dw_abbrevs *a,
		    const struct dw_abbrev *ab)
{
	const struct dw_attrspec *sp = a->specs + ab->first;
	struct dw_fval junk;

	if (ab->fixed >= 0) {
		dw_rd_skip(r, (uint64_t)ab->fixed);
		return r->bad ? -HWT_EFORMAT : 0;
	}
	for (uint32_t i = 0; i < ab->nattrs; i++, sp++) {
		int ret = read_form(r, sp->form, f, sp->implicit, &junk);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The unit containing a .debug_info offset (units are in offset order). */
static struct dw_cu *unit_at(struct sym_dwarf *dw, uint64_t off)
{
	size_t lo = 0, hi = dw->ncus;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dw->cus[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || off >= dw->cus[lo - 1].end)
		return NULL;
	return &dw->cus[lo - 1];
}

/* Reads the DIE at a .debug_info offset (the target of a reference). */
static int die_at(struct sym_dwarf *dw, uint64_t off, struct die *d, struct dw_cu **cu_out)
{
	struct dw_cu *cu = unit_at(dw, off);
	const struct dw_abbrevs *a;
	const struct dw_abbrev *ab;
	struct dw_fctx f;
	struct dw_rd r;
	int ret;

	if (!cu || off < cu->die_off)
		return -HWT_EFORMAT;
	ret = unit_abbrevs(dw, cu, &a);
	if (ret < 0)
		return ret;
	f = fctx_of(cu);
	r = (struct dw_rd){dw->info.p + off, dw->info.p + cu->end, dw->be, false};
	ab = abbrev_find(a, dwn_rd_uleb(&r));
	if (r.bad || !ab)
		return -HWT_EFORMAT;
	ret = die_read(&r, &f, a, ab, d);
	if (ret < 0)
		return ret;
	*cu_out = cu;
	return 0;
}

/* Names of a DIE: its own, else those of the DIEs it refers to (the same
 * rule, memo and hop limit as the libdwarf reader). */
static void die_names(struct sym_dwarf *dw, const struct dw_cu *cu, const struct die *d, int hops,
		      const char **name, const char **linkage)
{
	static const int refs[] = {A_ORIGIN, A_SPEC};

	*linkage = HAS(d, A_LINKAGE) ? dwn_string(dw, cu, &d->v[A_LINKAGE]) : NULL;
	if (!*linkage && HAS(d, A_MIPS_LINKAGE))
		*linkage = dwn_string(dw, cu, &d->v[A_MIPS_LINKAGE]);
	*name = HAS(d, A_NAME) ? dwn_string(dw, cu, &d->v[A_NAME]) : NULL;
	if (*linkage || hops >= MAX_ORIGIN_CHAIN)
		return;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(refs); i++) {
		struct dw_origin *slot;
		const char *n = NULL, *l = NULL;
		uint64_t off;

		if (!HAS(d, refs[i]) || !val_ref(cu, &d->v[refs[i]], &off) || off == 0)
			continue;
		slot = dw_origin_slot(dw, off);
		if (slot && slot->off == off) {
			n = slot->name;
			l = slot->linkage;
		} else {
			struct die t;
			struct dw_cu *tcu;

			if (die_at(dw, off, &t, &tcu) == 0)
				die_names(dw, tcu, &t, hops + 1, &n, &l);
			slot = dw_origin_slot(dw, off);
			if (slot && !slot->off) {
				slot->off = off;
				slot->name = n;
				slot->linkage = l;
				dw->norigins++;
			}
		}
		if (!*name)
			*name = n;
		if (l) {
			*linkage = l;
			return;
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Ranges                                                                    */

/* A DWARF 5 range list at off in .debug_rnglists. */
static int rnglist(const struct sym_dwarf *dw, const struct dw_cu *cu, uint64_t off,
		   struct dw_rangebuf *rb)
{
	uint64_t base = cu->base;
	struct dw_rd r;
	int ret = 0;

	if (off >= dw->rnglists.n)
		return 0;
	r = (struct dw_rd){dw->rnglists.p + off, dw->rnglists.p + dw->rnglists.n, dw->be, false};
	while (ret == 0 && !r.bad) {
		uint8_t code = dw_rd_u8(&r);
		struct dw_fval x = {.form = DW_FORM_addrx}, y = {.form = DW_FORM_addrx};
		uint64_t a, b, len;

		if (r.bad || code == DW_RLE_end_of_list)
			break;
		switch (code) {
		case DW_RLE_base_addressx:
			x.u = dwn_rd_uleb(&r);
			if (val_addr(dw, cu, &x, &a))
				base = a;
			break;
		case DW_RLE_startx_endx:
			x.u = dwn_rd_uleb(&r);
			y.u = dwn_rd_uleb(&r);
			if (!r.bad && val_addr(dw, cu, &x, &a) && val_addr(dw, cu, &y, &b))
				ret = dw_range_add(rb, a, b);
			break;
		case DW_RLE_startx_length:
			x.u = dwn_rd_uleb(&r);
			len = dwn_rd_uleb(&r);
			if (!r.bad && val_addr(dw, cu, &x, &a))
				ret = dw_range_add(rb, a, a + len);
			break;
		case DW_RLE_offset_pair:
			a = dwn_rd_uleb(&r);
			b = dwn_rd_uleb(&r);
			if (!r.bad)
				ret = dw_range_add(rb, base + a, base + b);
			break;
		case DW_RLE_base_address:
			base = dw_rd_fixed(&r, cu->addr_size);
			break;
		case DW_RLE_start_end:
			a = dw_rd_fixed(&r, cu->addr_size);
			b = dw_rd_fixed(&r, cu->addr_size);
			if (!r.bad)
				ret = dw_range_add(rb, a, b);
			break;
		case DW_RLE_start_length:
			a = dw_rd_fixed(&r, cu->addr_size);
			len = dwn_rd_uleb(&r);
			if (!r.bad)
				ret = dw_range_add(rb, a, a + len);
			break;
		default:
			return 0; /* unknown entry: the rest cannot be read */
		}
	}
	return ret;
}

/* A range list at off in .debug_ranges (before DWARF 5). */
static int ranges_v4(const struct sym_dwarf *dw, const struct dw_cu *cu, uint64_t off,
		     struct dw_rangebuf *rb)
{
	uint64_t base = cu->base,
		 sel = cu->addr_size == 8 ? UINT64_MAX : (1ull << (cu->addr_size * 8)) - 1;
	struct dw_rd r;
	int ret = 0;

	if (off >= dw->ranges.n)
		return 0;
	r = (struct dw_rd){dw->ranges.p + off, dw->ranges.p + dw->ranges.n, dw->be, false};
	while (ret == 0) {
		uint64_t a = dw_rd_fixed(&r, cu->addr_size), b = dw_rd_fixed(&r, cu->addr_size);

		if (r.bad || (a == 0 && b == 0))
			break;
		if (a == sel)
			base = b;
		else
			ret = dw_range_add(rb, base + a, base + b);
	}
	return ret;
}

/* Ranges of a DIE: low_pc/high_pc, else DW_AT_ranges. */
static int die_ranges(const struct sym_dwarf *dw, const struct dw_cu *cu, const struct die *d,
		      struct dw_rangebuf *rb)
{
	uint64_t lo, hi, off;

	rb->n = 0;
	if (HAS(d, A_LOW_PC) && HAS(d, A_HIGH_PC) && val_addr(dw, cu, &d->v[A_LOW_PC], &lo)) {
		const struct dw_fval *h = &d->v[A_HIGH_PC];

		if (val_addr(dw, cu, h, &hi))
			return dw_range_add(rb, lo, hi);
		switch (h->form) {
		case DW_FORM_data1:
		case DW_FORM_data2:
		case DW_FORM_data4:
		case DW_FORM_data8:
		case DW_FORM_udata:
		case DW_FORM_sdata:
		case DW_FORM_implicit_const:
			return dw_range_add(rb, lo, lo + h->u);
		default:
			break;
		}
	}
	if (!HAS(d, A_RANGES))
		return 0;
	if (cu->version >= 5 && d->v[A_RANGES].form == DW_FORM_rnglistx) {
		uint64_t pos;
		struct dw_rd r;

		/* offsets relative to DW_AT_rnglists_base, right after the
		 * table's header */
		if (!cu->has_rnglists_base || d->v[A_RANGES].u > dw->rnglists.n / cu->offset_size)
			return 0;
		pos = cu->rnglists_base + d->v[A_RANGES].u * cu->offset_size;
		if (pos < cu->rnglists_base || pos > dw->rnglists.n)
			return 0;
		r = (struct dw_rd){dw->rnglists.p + pos, dw->rnglists.p + dw->rnglists.n, dw->be,
				   false};
		off = dw_rd_fixed(&r, cu->offset_size);
		if (r.bad)
			return 0;
		return rnglist(dw, cu, cu->rnglists_base + off, rb);
	}
	if (!val_ref(cu, &d->v[A_RANGES], &off) && !val_offset(&d->v[A_RANGES], &off))
		return 0;
	if (cu->version >= 5)
		return rnglist(dw, cu, off, rb);
	return ranges_v4(dw, cu, off, rb);
}

/* ------------------------------------------------------------------------ */
/* The DIE walk                                                              */

struct walker {
	struct dw_builder *b;
	struct sym_dwarf *dw;
	struct dw_cu *cu;
	const struct dw_abbrevs *a;
	struct dw_fctx f;
	struct dw_rd r; /* over the unit */
	struct die d;	/* the DIE just read (here, not on the stack of
			   each recursion level: walks nest 256 deep) */
	int err;	/* fatal: ENOMEM, or ENOTSUP (declined) */
	bool stop;	/* malformed: keep what was read */
};

static void fail(struct walker *w, int ret)
{
	if (ret == -HWT_EFORMAT)
		w->stop = true;
	else
		w->err = ret;
}

/* Where DW_AT_sibling says the next sibling of the DIE just read starts,
 * or NULL when it has none we can trust (it must lie ahead, in the unit). */
static const uint8_t *sibling_of(const struct walker *w, const struct die *d)
{
	const struct dw_fval *v = &d->v[A_SIBLING];
	const uint8_t *to;

	if (!HAS(d, A_SIBLING) || v->form == DW_FORM_ref_addr || v->form == DW_FORM_ref_sig8 ||
	    v->u >= w->cu->end - w->cu->off)
		return NULL;
	to = w->dw->info.p + w->cu->off + v->u;
	return to > w->r.p ? to : NULL;
}

static void skip_children(struct walker *w);

/* Skips the children of the DIE just read: through its sibling link when
 * it has one, else DIE by DIE. */
static void skip_subtree(struct walker *w, const struct die *d)
{
	const uint8_t *to = sibling_of(w, d);

	if (to)
		w->r.p = to;
	else
		skip_children(w);
}

static void skip_children(struct walker *w)
{
	unsigned depth = 1;

	while (depth && !w->stop && !w->err) {
		const struct dw_abbrev *ab;
		const uint8_t *to;
		uint64_t code;
		int ret;

		if (w->r.p >= w->r.end) {
			w->stop = true;
			return;
		}
		code = dw_rd_uleb(&w->r);
		if (code == 0) {
			depth--;
			continue;
		}
		ab = abbrev_find(w->a, code);
		if (!ab) {
			w->stop = true;
			return;
		}
		if (!ab->children) {
			ret = die_skip(&w->r, &w->f, w->a, ab);
			if (ret < 0)
				fail(w, ret);
			continue;
		}
		ret = die_read(&w->r, &w->f, w->a, ab, &w->d);
		if (ret < 0) {
			fail(w, ret);
			return;
		}
		to = sibling_of(w, &w->d);
		if (to)
			w->r.p = to; /* jump over the subtree */
		else
			depth++;
	}
}

/* Walks the children of a DIE: parent is the innermost enclosing function
 * scope (-1 at unit level), depth as in the libdwarf reader. */
static void walk(struct walker *w, int32_t parent, uint32_t depth)
{
	struct die *d = &w->d;

	if (depth > MAX_DIE_DEPTH) {
		skip_children(w);
		return;
	}
	while (!w->stop && !w->err) {
		const struct dw_abbrev *ab;
		uint64_t code;
		int ret;

		if (w->r.p >= w->r.end) {
			w->stop = true;
			return;
		}
		code = dw_rd_uleb(&w->r);
		if (code == 0)
			return;
		ab = abbrev_find(w->a, code);
		if (!ab) {
			w->stop = true;
			return;
		}
		switch (ab->kind) {
		case DW_KIND_FUNC: {
			bool is_inline = ab->tag == DW_TAG_inlined_subroutine;
			const char *name, *linkage;
			struct dw_callsite call = {0};
			int32_t me;

			ret = die_read(&w->r, &w->f, w->a, ab, d);
			if (ret < 0) {
				fail(w, ret);
				return;
			}
			ret = die_ranges(w->dw, w->cu, d, &w->b->rb);
			if (ret < 0) {
				w->err = ret;
				return;
			}
			if (w->b->rb.n == 0) {
				/* An inlined subroutine without code still nests
				 * ones that have some; a declaration has none. */
				if (ab->children) {
					if (is_inline)
						walk(w, parent, depth + 1);
					else
						skip_subtree(w, d);
				}
				break;
			}
			die_names(w->dw, w->cu, d, 0, &name, &linkage);
			if (is_inline) {
				call.has_file = HAS(d, A_CALL_FILE) &&
						val_udata(&d->v[A_CALL_FILE], &call.file);
				call.has_line = HAS(d, A_CALL_LINE) &&
						val_udata(&d->v[A_CALL_LINE], &call.line);
				call.has_column = HAS(d, A_CALL_COLUMN) &&
						  val_udata(&d->v[A_CALL_COLUMN], &call.column);
			}
			me = (int32_t)w->b->nscopes;
			ret = dw_add_scope(w->b, name, linkage, is_inline, parent, depth, &call);
			if (ret < 0) {
				w->err = ret;
				return;
			}
			if (ab->children)
				walk(w, me, depth + 1);
			break;
		}
		case DW_KIND_NEST:
			ret = die_skip(&w->r, &w->f, w->a, ab);
			if (ret < 0) {
				fail(w, ret);
				return;
			}
			if (ab->children)
				walk(w, parent, depth + 1);
			break;
		default:
			/* types and data hold no code */
			if (!ab->children) {
				ret = die_skip(&w->r, &w->f, w->a, ab);
			} else {
				ret = die_read(&w->r, &w->f, w->a, ab, d);
				if (ret == 0)
					skip_subtree(w, d);
			}
			if (ret < 0) {
				fail(w, ret);
				return;
			}
			break;
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Units                                                                     */

/* Reads a unit's DIE into cu's fields and its ranges into rb. */
static int unit_die(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_rangebuf *rb)
{
	struct dw_attrspec specs[64];
	struct dw_abbrev one;
	struct dw_abbrevs scanned = {.v = &one, .n = 1, .specs = specs, .nspecs = 0};
	const struct dw_abbrevs *a = &scanned;
	const struct dw_abbrev *ab = &one;
	struct dw_fctx f = fctx_of(cu);
	struct dw_abbrevs *own = NULL;
	struct dw_rd r;
	struct die d;
	uint64_t v, code;
	int ret;

	rb->n = 0;
	r = (struct dw_rd){dw->info.p + cu->die_off, dw->info.p + cu->end, dw->be, false};
	code = dwn_rd_uleb(&r);
	if (r.bad)
		return -HWT_EFORMAT;
	ret = abbrev_scan(dw, cu, code, &one, specs, HWT_ARRAY_SIZE(specs));
	if (ret == -HWT_ENOTSUP) {
		/* a unit DIE with very many attributes: parse the table */
		ret = abbrevs_parse(dw, cu, &own);
		if (ret < 0)
			return ret;
		a = own;
		ab = abbrev_find(a, code);
		if (!ab) {
			ret = -HWT_EFORMAT;
			goto out;
		}
	} else if (ret < 0) {
		return ret;
	}
	ret = die_read(&r, &f, a, ab, &d);
	if (ret < 0)
		goto out;
	/* bases first: the other values may be indexes into those tables */
	if (HAS(&d, A_STR_OFFSETS_BASE) && val_offset(&d.v[A_STR_OFFSETS_BASE], &v)) {
		cu->str_offsets_base = v;
		cu->has_str_offsets_base = true;
	}
	if (HAS(&d, A_ADDR_BASE) && val_offset(&d.v[A_ADDR_BASE], &v)) {
		cu->addr_base = v;
		cu->has_addr_base = true;
	} else if (HAS(&d, A_GNU_ADDR_BASE) && val_offset(&d.v[A_GNU_ADDR_BASE], &v)) {
		cu->addr_base = v;
		cu->has_addr_base = true;
	}
	if (HAS(&d, A_RNGLISTS_BASE) && val_offset(&d.v[A_RNGLISTS_BASE], &v)) {
		cu->rnglists_base = v;
		cu->has_rnglists_base = true;
	}
	if (HAS(&d, A_STMT_LIST) && val_offset(&d.v[A_STMT_LIST], &v)) {
		cu->stmt_list = v;
		cu->has_stmt_list = true;
	}
	v = 0;
	if (HAS(&d, A_LANG))
		val_udata(&d.v[A_LANG], &v);
	cu->mangled_lang = !dw_lang_is_c_like(v);
	cu->comp_dir = HAS(&d, A_COMP_DIR) ? dwn_string(dw, cu, &d.v[A_COMP_DIR]) : NULL;
	cu->base = 0;
	if (HAS(&d, A_LOW_PC))
		val_addr(dw, cu, &d.v[A_LOW_PC], &cu->base);
	ret = die_ranges(dw, cu, &d, rb);
out:
	abbrevs_free(own);
	return ret;
}

/* Reads the unit header at off. Returns 0 (next set), 1 (a type unit to
 * skip), or -HWT_EFORMAT. */
static int unit_header(struct sym_dwarf *dw, uint64_t off, struct dw_cu *cu, uint64_t *next)
{
	struct dw_rd r = {dw->info.p + off, dw->info.p + dw->info.n, dw->be, false};
	uint64_t len = dw_rd_fixed(&r, 4);

	memset(cu, 0, sizeof(*cu));
	cu->off = off;
	cu->offset_size = 4;
	if (len == 0xffffffffu) {
		len = dw_rd_fixed(&r, 8);
		cu->offset_size = 8;
	} else if (len >= 0xfffffff0u) {
		return -HWT_EFORMAT;
	}
	if (r.bad || len > (uint64_t)(r.end - r.p) || len < 2)
		return -HWT_EFORMAT;
	cu->end = (uint64_t)(r.p - dw->info.p) + len;
	r.end = r.p + len;
	cu->version = (uint16_t)dw_rd_fixed(&r, 2);
	if (cu->version < 2 || cu->version > 5)
		return -HWT_EFORMAT;
	cu->unit_type = DW_UT_compile;
	if (cu->version >= 5) {
		cu->unit_type = dw_rd_u8(&r);
		cu->addr_size = dw_rd_u8(&r);
		cu->abbrev_off = dw_rd_fixed(&r, cu->offset_size);
		switch (cu->unit_type) {
		case DW_UT_compile:
		case DW_UT_partial:
			break;
		case DW_UT_skeleton:
		case DW_UT_split_compile:
			dw_rd_skip(&r, 8); /* dwo_id */
			break;
		case DW_UT_type:
		case DW_UT_split_type:
			dw_rd_skip(&r, 8 + cu->offset_size);
			break;
		default:
			return -HWT_EFORMAT;
		}
	} else {
		cu->abbrev_off = dw_rd_fixed(&r, cu->offset_size);
		cu->addr_size = dw_rd_u8(&r);
	}
	if (r.bad || (cu->addr_size != 2 && cu->addr_size != 4 && cu->addr_size != 8) ||
	    cu->abbrev_off >= dw->abbrev.n)
		return -HWT_EFORMAT;
	cu->die_off = (uint64_t)(r.p - dw->info.p);
	*next = cu->end;
	return cu->unit_type == DW_UT_type || cu->unit_type == DW_UT_split_type;
}

int dwn_list_units(struct sym_dwarf *dw)
{
	struct dw_rangebuf rb = {0};
	size_t cap_cu = 0, cap_r = 0;
	uint64_t off = 0;
	int ret = 0;

	while (off < dw->info.n) {
		struct dw_cu *cu;
		uint64_t next;

		if (dw->ncus == cap_cu) {
			size_t cap = cap_cu ? cap_cu * 2 : 64;
			void *n = realloc(dw->cus, cap * sizeof(*dw->cus));

			if (!n) {
				ret = -ENOMEM;
				break;
			}
			dw->cus = n;
			cap_cu = cap;
		}
		cu = &dw->cus[dw->ncus];
		ret = unit_header(dw, off, cu, &next);
		if (ret < 0) {
			sym_log(dw->obj, HWT_LOG_WARN,
				"%s: malformed DWARF unit list: bad unit header at 0x%llx",
				dw->obj->path, (unsigned long long)off);
			ret = 0;
			break;
		}
		off = next;
		if (ret == 1) {
			ret = 0;
			continue; /* type units hold no code */
		}
		cu->reader = DW_READER_NATIVE;
		ret = unit_die(dw, cu, &rb);
		if (ret == -HWT_ENOTSUP && dw->mode == HWT_SYM_DWARF_AUTO) {
			cu->reader = DW_READER_LIBDWARF;
			ret = dwl_unit_ranges(dw, cu, &rb);
		}
		if (ret == -ENOMEM)
			break;
		if (ret < 0) {
			/* an unreadable unit DIE: the unit cannot be used */
			ret = 0;
			continue;
		}
		ret = dw_add_cranges(dw, (uint32_t)dw->ncus, &rb, &cap_r);
		if (ret < 0)
			break;
		dw->ncus++;
	}
	free(rb.r);
	return ret;
}

int dwn_build_unit(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_cuidx *x)
{
	struct dw_builder b;
	struct walker w = {.b = &b, .dw = dw, .cu = cu};
	const struct dw_abbrev *ab;
	int ret;

	ret = unit_abbrevs(dw, cu, &w.a);
	if (ret < 0)
		return ret;
	ret = dwn_read_lines(dw, cu, x);
	if (ret < 0)
		return ret;
	dw_builder_init(&b, dw, cu);
	w.f = fctx_of(cu);
	w.r = (struct dw_rd){dw->info.p + cu->die_off, dw->info.p + cu->end, dw->be, false};
	ab = abbrev_find(w.a, dwn_rd_uleb(&w.r));
	ret = w.r.bad || !ab ? -HWT_EFORMAT : die_skip(&w.r, &w.f, w.a, ab);
	if (ret == 0 && ab->children) {
		walk(&w, -1, 0);
		ret = w.err;
	}
	if (ret == 0)
		ret = dw_builder_finish(&b, x);
	dw_builder_fini(&b);
	/* the abbreviations stay: references from other units may need them */
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Sections                                                                  */

static int load(struct sym_dwarf *dw, const char *name, struct dw_sect *out)
{
	struct sym_sec *s = sym_elf_section(dw->e, name);
	int ret;

	out->p = NULL;
	out->n = 0;
	if (!s)
		return -HWT_ENODEBUG;
	ret = sym_elf_section_data(dw->e, s, &out->p, &out->n);
	if (ret < 0) {
		sym_log(dw->obj, HWT_LOG_DEBUG, "%s: cannot load section %s: %s", dw->obj->path,
			name, hwt_strerror(ret));
		out->p = NULL;
		out->n = 0;
	}
	return ret;
}

int dwn_open(struct sym_dwarf *dw)
{
	int ret = load(dw, ".debug_info", &dw->info);

	if (ret < 0 || dw->info.n == 0) {
		if (ret != -HWT_ENODEBUG)
			sym_log(dw->obj, HWT_LOG_WARN, "%s: cannot read DWARF: %s", dw->obj->path,
				hwt_strerror(ret < 0 ? ret : -HWT_ENODEBUG));
		return -HWT_ENODEBUG;
	}
	ret = load(dw, ".debug_abbrev", &dw->abbrev);
	if (ret < 0 || dw->abbrev.n == 0)
		return -HWT_ENODEBUG;
	/* the rest is optional: a unit that needs a missing one gets less */
	load(dw, ".debug_str", &dw->str);
	load(dw, ".debug_line_str", &dw->line_str);
	load(dw, ".debug_line", &dw->line);
	load(dw, ".debug_ranges", &dw->ranges);
	load(dw, ".debug_rnglists", &dw->rnglists);
	load(dw, ".debug_addr", &dw->addr);
	load(dw, ".debug_str_offsets", &dw->str_offsets);
	return 0;
}

void dwn_free(struct sym_dwarf *dw)
{
	for (size_t i = 0; i < dw->ncus; i++) {
		abbrevs_free(dw->cus[i].abbrevs);
		dw->cus[i].abbrevs = NULL;
	}
}
