/*
 * symbolize/dwarf.c - the lazy DWARF index, built with libdwarf.
 *
 * libdwarf reads the sections through our own object-access interface, so
 * that it sees the image we mapped and sections we decompressed (zlib and
 * zstd; libdwarf 20210528 knows neither SHF_COMPRESSED zstd nor our mapping).
 * At first use we list the compilation units and their address ranges
 * (sorted, for binary search). The first lookup inside a unit builds that
 * unit's index, under the object's lock, and publishes it with a release
 * store; after that lookups read it without locks:
 *
 *   - scopes: every DW_TAG_subprogram and DW_TAG_inlined_subroutine with
 *     code, with its name (linkage name preferred, through abstract_origin
 *     and specification), its parent scope and its call file/line/column;
 *   - segments: the scopes' ranges flattened into non-overlapping intervals
 *     that each name their innermost scope, so one binary search finds the
 *     whole inline chain;
 *   - rows: the line table, one row per address (the last row of several at
 *     one address wins, as in binutils and LLVM), sequences sorted.
 *
 * libdwarf's own structures (DIEs, line contexts) are freed as soon as a unit
 * is indexed, so memory grows with the units looked up, not with the size of
 * the debug information. libdwarf is not thread-safe: every call into it
 * happens under obj->lock.
 */
#include "symbolize/sym_int.h"

#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <libdwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIE_DEPTH 256   /* deeper DIE trees are malformed */
#define MAX_ORIGIN_CHAIN 8  /* abstract_origin/specification hops */

struct dw_scope {
	uint64_t lo;        /* start of the first range (binutils' arange.low) */
	const char *name;   /* linkage name if any, else DW_AT_name; in .debug_str */
	_Atomic(const char *) demangled;
	int32_t parent;     /* enclosing scope for inlined subroutines, else -1 */
	uint32_t call_file, call_line, call_column;
	bool is_inline;
	bool is_linkage;    /* name is final (binutils: linkage name or C) */
};

struct dw_seg {
	uint64_t start;
	int32_t scope;      /* -1: gap */
};

struct dw_row {
	uint64_t addr;
	uint32_t file;      /* UINT32_MAX marks the end of a sequence */
	uint32_t line;
	uint32_t column;
	uint32_t discriminator;
};

struct dw_cuidx {
	struct dw_scope *scopes;
	size_t nscopes;
	struct dw_seg *segs;
	size_t nsegs;
	struct dw_row *rows;
	size_t nrows;
	char **files;       /* indexed by DWARF file number; NULL unknown */
	size_t nfiles;
};

struct dw_cu {
	Dwarf_Off die_off;
	_Atomic(struct dw_cuidx *) idx;
	bool failed;
	bool mangled_lang;  /* not C-like: names without linkage name need the symtab */
	uint16_t version;
};

struct dw_crange {
	uint64_t lo, hi;
	uint32_t cu;
};

/* Memo of names resolved through abstract_origin/specification. */
struct dw_origin {
	Dwarf_Off off;      /* 0: empty slot */
	const char *name, *linkage;
};

struct sym_dwarf {
	Dwarf_Debug dbg;
	Dwarf_Obj_Access_Interface iface;
	Dwarf_Obj_Access_Methods methods;
	struct sym_elf *e;
	struct hwt_sym_obj *obj;
	struct dw_cu *cus;
	size_t ncus;
	struct dw_crange *ranges;
	size_t nranges;
	struct dw_origin *origins;
	size_t norigins, origin_cap;
};

/* ------------------------------------------------------------------------ */
/* Object access for libdwarf                                                */

static int section_size(struct sym_elf *e, struct sym_sec *s, uint64_t *size)
{
	const uint8_t *p = e->data + s->offset;

	if (!s->compressed) {
		*size = s->size;
		return 0;
	}
	if (s->inflated) {
		*size = s->inflated_size;
		return 0;
	}
	if (s->zdebug) {
		if (s->size < 12)
			return -HWT_EFORMAT;
		*size = 0;
		for (int i = 0; i < 8; i++)
			*size = (*size << 8) | p[4 + i];
	} else if (e->is64) {
		Elf64_Chdr ch;

		if (s->size < sizeof(ch))
			return -HWT_EFORMAT;
		memcpy(&ch, p, sizeof(ch));
		*size = ch.ch_size;
	} else {
		Elf32_Chdr ch;

		if (s->size < sizeof(ch))
			return -HWT_EFORMAT;
		memcpy(&ch, p, sizeof(ch));
		*size = ch.ch_size;
	}
	return *size > e->max_section ? -HWT_ETOOBIG : 0;
}

/* libdwarf 20210528 double-frees on some malformed .debug_rnglists and
 * .debug_loclists headers (found by our fuzzer): check every unit header
 * of those sections first, and hide a section that fails. */
static bool lists_ok(const uint8_t *p, uint64_t n)
{
	uint64_t pos = 0;

	while (pos < n) {
		uint32_t len32, cnt;
		uint64_t len, hdr;
		uint16_t ver;
		uint8_t as;

		if (n - pos < 12)
			return false;
		memcpy(&len32, p + pos, 4);
		if (len32 == 0xffffffffu) {
			if (n - pos < 20)
				return false;
			memcpy(&len, p + pos + 4, 8);
			hdr = 12;
		} else if (len32 >= 0xfffffff0u) {
			return false;
		} else {
			len = len32;
			hdr = 4;
		}
		if (len < 8 || len > n - pos - hdr)
			return false;
		memcpy(&ver, p + pos + hdr, 2);
		as = p[pos + hdr + 2];
		memcpy(&cnt, p + pos + hdr + 4, 4);
		if (ver != 5 || (as != 4 && as != 8) || p[pos + hdr + 3] != 0 ||
		    (uint64_t)cnt * (hdr == 4 ? 4 : 8) > len - 8)
			return false;
		pos += hdr + len;
	}
	return true;
}

static int acc_section_info(void *o, Dwarf_Half idx, Dwarf_Obj_Access_Section *ret, int *error)
{
	struct sym_dwarf *dw = o;
	struct sym_sec *s;
	uint64_t size = 0;

	if (idx >= dw->e->nsecs) {
		*error = DW_DLE_MDE;
		return DW_DLV_NO_ENTRY;
	}
	s = &dw->e->secs[idx];
	memset(ret, 0, sizeof(*ret));
	ret->name = s->name ? s->name : "";
	ret->type = s->type;
	ret->addr = s->addr;
	ret->link = s->link;
	ret->info = s->info;
	ret->entrysize = s->entsize;
	if (s->type != SHT_NOBITS && section_size(dw->e, s, &size) < 0) {
		/* unusable: hide it from libdwarf */
		ret->name = "";
		size = 0;
	}
	if (s->type != SHT_NOBITS && size &&
	    (!strcmp(ret->name, ".debug_rnglists") || !strcmp(ret->name, ".debug_loclists"))) {
		const uint8_t *p;
		uint64_t n;

		if (sym_elf_section_data(dw->e, s, &p, &n) < 0 || !lists_ok(p, n)) {
			ret->name = "";
			size = 0;
		}
	}
	ret->size = s->type == SHT_NOBITS ? 0 : size;
	return DW_DLV_OK;
}

static Dwarf_Endianness acc_byte_order(void *o)
{
	struct sym_dwarf *dw = o;

	return dw->e->big_endian ? DW_OBJECT_MSB : DW_OBJECT_LSB;
}

static Dwarf_Small acc_length_size(void *o)
{
	(void)o;
	return 4;
}

static Dwarf_Small acc_pointer_size(void *o)
{
	struct sym_dwarf *dw = o;

	return dw->e->is64 ? 8 : 4;
}

static Dwarf_Unsigned acc_section_count(void *o)
{
	struct sym_dwarf *dw = o;

	return dw->e->nsecs;
}

static int acc_load_section(void *o, Dwarf_Half idx, Dwarf_Small **data, int *error)
{
	struct sym_dwarf *dw = o;
	const uint8_t *p;
	uint64_t size;

	if (idx >= dw->e->nsecs) {
		*error = DW_DLE_MDE;
		return DW_DLV_NO_ENTRY;
	}
	int ret = sym_elf_section_data(dw->e, &dw->e->secs[idx], &p, &size);

	if (ret < 0 || size == 0) {
		sym_log(dw->obj, HWT_LOG_DEBUG, "%s: cannot load section %s: %s", dw->obj->path,
			dw->e->secs[idx].name, hwt_strerror(ret));
		*error = DW_DLE_MDE;
		return DW_DLV_ERROR;
	}
	*data = (Dwarf_Small *)p; /* libdwarf only reads it */
	return DW_DLV_OK;
}

/* ------------------------------------------------------------------------ */
/* Small libdwarf helpers (each frees its own error)                         */

static void drop_err(struct sym_dwarf *dw, Dwarf_Error *err)
{
	if (*err) {
		dwarf_dealloc_error(dw->dbg, *err);
		*err = NULL;
	}
}

static bool attr_udata(struct sym_dwarf *dw, Dwarf_Die die, Dwarf_Half at, uint64_t *v)
{
	Dwarf_Attribute a = NULL;
	Dwarf_Error err = NULL;
	Dwarf_Unsigned u;
	bool ok = false;

	if (dwarf_attr(die, at, &a, &err) == DW_DLV_OK) {
		Dwarf_Signed sv;

		if (dwarf_formudata(a, &u, &err) == DW_DLV_OK) {
			*v = u;
			ok = true;
		} else {
			/* DW_FORM_implicit_const (DWARF 5 abbreviation constants)
			 * is signed: libdwarf only gives it through formsdata. */
			drop_err(dw, &err);
			if (dwarf_formsdata(a, &sv, &err) == DW_DLV_OK && sv >= 0) {
				*v = (uint64_t)sv;
				ok = true;
			}
		}
		dwarf_dealloc_attribute(a);
	}
	drop_err(dw, &err);
	return ok;
}

static const char *attr_string(struct sym_dwarf *dw, Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Attribute a = NULL;
	Dwarf_Error err = NULL;
	char *s = NULL;

	if (dwarf_attr(die, at, &a, &err) == DW_DLV_OK) {
		if (dwarf_formstring(a, &s, &err) != DW_DLV_OK)
			s = NULL;
		dwarf_dealloc_attribute(a);
	}
	drop_err(dw, &err);
	return s;
}

static bool attr_ref(struct sym_dwarf *dw, Dwarf_Die die, Dwarf_Half at, Dwarf_Off *off)
{
	Dwarf_Attribute a = NULL;
	Dwarf_Error err = NULL;
	bool ok = false;

	if (dwarf_attr(die, at, &a, &err) == DW_DLV_OK) {
		ok = dwarf_global_formref(a, off, &err) == DW_DLV_OK;
		dwarf_dealloc_attribute(a);
	}
	drop_err(dw, &err);
	return ok;
}

/* Collected address ranges of one DIE. */
struct rangebuf {
	uint64_t (*r)[2];
	size_t n, cap;
};

static int range_add(struct rangebuf *rb, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return 0;
	if (rb->n == rb->cap) {
		size_t cap = rb->cap ? rb->cap * 2 : 8;
		void *nr = realloc(rb->r, cap * sizeof(*rb->r));

		if (!nr)
			return -ENOMEM;
		rb->r = nr;
		rb->cap = cap;
	}
	rb->r[rb->n][0] = lo;
	rb->r[rb->n][1] = hi;
	rb->n++;
	return 0;
}

/* Ranges of a DIE: low_pc/high_pc, or DW_AT_ranges (.debug_ranges before
 * DWARF 5 with base address cu_base, .debug_rnglists from DWARF 5). */
static int die_ranges(struct sym_dwarf *dw, Dwarf_Die die, unsigned version, uint64_t cu_base,
		      struct rangebuf *rb)
{
	Dwarf_Error err = NULL;
	Dwarf_Addr lo, hi;
	Dwarf_Half form;
	enum Dwarf_Form_Class cls;
	Dwarf_Attribute a = NULL;
	int ret = 0;

	rb->n = 0;
	if (dwarf_lowpc(die, &lo, &err) == DW_DLV_OK) {
		if (dwarf_highpc_b(die, &hi, &form, &cls, &err) == DW_DLV_OK) {
			if (cls == DW_FORM_CLASS_CONSTANT)
				hi += lo;
			drop_err(dw, &err);
			return range_add(rb, lo, hi);
		}
	}
	drop_err(dw, &err);
	if (dwarf_attr(die, DW_AT_ranges, &a, &err) != DW_DLV_OK) {
		drop_err(dw, &err);
		return 0;
	}
	if (dwarf_whatform(a, &form, &err) != DW_DLV_OK)
		goto out;
	if (version >= 5) {
		Dwarf_Unsigned val = 0, count = 0, goff;
		Dwarf_Off off;
		Dwarf_Rnglists_Head head = NULL;

		if (form == DW_FORM_rnglistx) {
			if (dwarf_formudata(a, &val, &err) != DW_DLV_OK)
				goto out;
		} else if (dwarf_global_formref(a, &off, &err) == DW_DLV_OK) {
			val = off;
		} else {
			drop_err(dw, &err);
			if (dwarf_formudata(a, &val, &err) != DW_DLV_OK)
				goto out;
		}
		if (dwarf_rnglists_get_rle_head(a, form, val, &head, &count, &goff, &err) !=
		    DW_DLV_OK)
			goto out;
		for (Dwarf_Unsigned i = 0; i < count && ret == 0; i++) {
			unsigned elen, code;
			Dwarf_Unsigned r1, r2, c1, c2;
			Dwarf_Bool noaddr = 0;

			if (dwarf_get_rnglists_entry_fields_a(head, i, &elen, &code, &r1, &r2, &noaddr,
							      &c1, &c2, &err) != DW_DLV_OK)
				break;
			if (noaddr)
				continue;
			switch (code) {
			case DW_RLE_offset_pair:
			case DW_RLE_startx_endx:
			case DW_RLE_start_end:
			case DW_RLE_startx_length:
			case DW_RLE_start_length:
				ret = range_add(rb, c1, c2);
				break;
			default:
				break;
			}
		}
		dwarf_dealloc_rnglists_head(head);
	} else {
		Dwarf_Off off, real;
		Dwarf_Ranges *rs = NULL;
		Dwarf_Signed n = 0;
		Dwarf_Unsigned bytes;
		uint64_t base = cu_base;

		if (dwarf_global_formref(a, &off, &err) != DW_DLV_OK) {
			Dwarf_Unsigned u;

			drop_err(dw, &err);
			if (dwarf_formudata(a, &u, &err) != DW_DLV_OK)
				goto out;
			off = u;
		}
		if (dwarf_get_ranges_b(dw->dbg, off, die, &real, &rs, &n, &bytes, &err) != DW_DLV_OK)
			goto out;
		for (Dwarf_Signed i = 0; i < n && ret == 0; i++) {
			if (rs[i].dwr_type == DW_RANGES_ADDRESS_SELECTION)
				base = rs[i].dwr_addr2;
			else if (rs[i].dwr_type == DW_RANGES_ENTRY)
				ret = range_add(rb, base + rs[i].dwr_addr1, base + rs[i].dwr_addr2);
			else
				break;
		}
		dwarf_ranges_dealloc(dw->dbg, rs, n);
	}
out:
	drop_err(dw, &err);
	dwarf_dealloc_attribute(a);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Unit list                                                                  */

static int cmp_crange(const void *a, const void *b)
{
	const struct dw_crange *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static bool lang_is_c_like(uint64_t lang)
{
	switch (lang) {
	case DW_LANG_C89: case DW_LANG_C: case DW_LANG_Cobol74: case DW_LANG_Cobol85:
	case DW_LANG_Fortran77: case DW_LANG_Pascal83: case DW_LANG_PLI: case DW_LANG_C99:
	case DW_LANG_UPC: case DW_LANG_C11: case DW_LANG_Mips_Assembler:
		return true;
	default:
		return false;
	}
}

static int list_units(struct sym_dwarf *dw)
{
	struct rangebuf rb = {0};
	size_t cap_cu = 0, cap_r = 0;
	int ret = 0;

	for (;;) {
		Dwarf_Unsigned hlen, abbrev_off, typeoff, next_cu;
		uint64_t lang = 0;
		Dwarf_Half version, addr_size, off_size, ext_size, unit_type;
		Dwarf_Sig8 sig;
		Dwarf_Error err = NULL;
		Dwarf_Die cu_die = NULL;
		Dwarf_Off die_off;
		Dwarf_Addr base = 0;
		struct dw_cu *cu;
		int res;

		res = dwarf_next_cu_header_d(dw->dbg, 1, &hlen, &version, &abbrev_off, &addr_size,
					     &off_size, &ext_size, &sig, &typeoff, &next_cu,
					     &unit_type, &err);
		if (res != DW_DLV_OK) {
			if (res == DW_DLV_ERROR)
				sym_log(dw->obj, HWT_LOG_WARN, "%s: malformed DWARF unit list: %s",
					dw->obj->path, dwarf_errmsg(err));
			drop_err(dw, &err);
			break;
		}
		if (dwarf_siblingof_b(dw->dbg, NULL, 1, &cu_die, &err) != DW_DLV_OK) {
			drop_err(dw, &err);
			continue;
		}
		if (unit_type == DW_UT_type || unit_type == DW_UT_split_type ||
		    dwarf_dieoffset(cu_die, &die_off, &err) != DW_DLV_OK) {
			drop_err(dw, &err);
			dwarf_dealloc_die(cu_die);
			continue;
		}
		if (dw->ncus == cap_cu) {
			size_t cap = cap_cu ? cap_cu * 2 : 64;
			void *n = realloc(dw->cus, cap * sizeof(*dw->cus));

			if (!n) {
				ret = -ENOMEM;
				dwarf_dealloc_die(cu_die);
				break;
			}
			dw->cus = n;
			cap_cu = cap;
		}
		cu = &dw->cus[dw->ncus];
		memset(cu, 0, sizeof(*cu));
		cu->die_off = die_off;
		cu->version = version;
		attr_udata(dw, cu_die, DW_AT_language, &lang);
		cu->mangled_lang = !lang_is_c_like(lang);
		if (dwarf_lowpc(cu_die, &base, &err) != DW_DLV_OK)
			base = 0;
		drop_err(dw, &err);
		ret = die_ranges(dw, cu_die, version, base, &rb);
		dwarf_dealloc_die(cu_die);
		if (ret < 0)
			break;
		for (size_t i = 0; i < rb.n; i++) {
			if (dw->nranges == cap_r) {
				size_t cap = cap_r ? cap_r * 2 : 64;
				void *n = realloc(dw->ranges, cap * sizeof(*dw->ranges));

				if (!n) {
					ret = -ENOMEM;
					break;
				}
				dw->ranges = n;
				cap_r = cap;
			}
			dw->ranges[dw->nranges].lo = rb.r[i][0];
			dw->ranges[dw->nranges].hi = rb.r[i][1];
			dw->ranges[dw->nranges].cu = (uint32_t)dw->ncus;
			dw->nranges++;
		}
		dw->ncus++;
		if (ret < 0)
			break;
	}
	free(rb.r);
	if (dw->nranges > 1)
		qsort(dw->ranges, dw->nranges, sizeof(*dw->ranges), cmp_crange);
	return ret;
}

void sym_dwarf_free(struct sym_dwarf *dw)
{
	if (!dw)
		return;
	for (size_t i = 0; i < dw->ncus; i++) {
		struct dw_cuidx *x = atomic_load(&dw->cus[i].idx);

		if (!x)
			continue;
		for (size_t s = 0; s < x->nscopes; s++) {
			const char *d = atomic_load(&x->scopes[s].demangled);
			if (d && d != x->scopes[s].name)
				free((char *)d);
		}
		for (size_t f = 0; f < x->nfiles; f++)
			free(x->files[f]);
		free(x->files);
		free(x->scopes);
		free(x->segs);
		free(x->rows);
		free(x);
	}
	free(dw->cus);
	free(dw->ranges);
	free(dw->origins);
	if (dw->dbg) {
		Dwarf_Error err = NULL;

		dwarf_object_finish(dw->dbg, &err);
	}
	free(dw);
}

static void dwarf_errhand(Dwarf_Error err, Dwarf_Ptr arg)
{
	/* Errors are returned through Dwarf_Error pointers; never abort. */
	(void)err;
	(void)arg;
}

/* Sets up libdwarf on the object's DWARF image. Called once, under lock. */
static int dwarf_open(struct hwt_sym_obj *obj, struct sym_dwarf **out)
{
	struct sym_dwarf *dw;
	Dwarf_Error err = NULL;
	int res, ret;

	dw = calloc(1, sizeof(*dw));
	if (!dw)
		return -ENOMEM;
	dw->e = obj->dwelf;
	dw->obj = obj;
	dw->methods.get_section_info = acc_section_info;
	dw->methods.get_byte_order = acc_byte_order;
	dw->methods.get_length_size = acc_length_size;
	dw->methods.get_pointer_size = acc_pointer_size;
	dw->methods.get_section_count = acc_section_count;
	dw->methods.load_section = acc_load_section;
	dw->iface.object = dw;
	dw->iface.methods = &dw->methods;
	res = dwarf_object_init_b(&dw->iface, dwarf_errhand, NULL, DW_GROUPNUMBER_ANY, &dw->dbg,
				  &err);
	if (res != DW_DLV_OK) {
		if (res == DW_DLV_ERROR) {
			sym_log(obj, HWT_LOG_WARN, "%s: cannot read DWARF: %s", obj->path,
				dwarf_errmsg(err));
			dwarf_dealloc_error(NULL, err);
		}
		dw->dbg = NULL;
		ret = -HWT_ENODEBUG;
		goto error;
	}
	ret = list_units(dw);
	if (ret < 0)
		goto error;
	*out = dw;
	return 0;
error:
	sym_dwarf_free(dw);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Unit index                                                                */

struct builder {
	struct sym_dwarf *dw;
	struct dw_cu *cu;
	uint64_t cu_base;
	struct dw_scope *scopes;
	size_t nscopes, cap_scopes;
	struct { uint64_t lo, hi; int32_t scope; uint32_t depth; } *ranges;
	size_t nranges, cap_ranges;
	struct rangebuf rb;
	int err;
};

static struct dw_origin *origin_slot(struct sym_dwarf *dw, Dwarf_Off off)
{
	size_t mask, i;

	if (dw->norigins * 2 >= dw->origin_cap) {
		size_t cap = dw->origin_cap ? dw->origin_cap * 2 : 1024;
		struct dw_origin *n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t k = 0; k < dw->origin_cap; k++) {
			if (!dw->origins[k].off)
				continue;
			i = (size_t)(dw->origins[k].off * 0x9E3779B97F4A7C15ull) & (cap - 1);
			while (n[i].off)
				i = (i + 1) & (cap - 1);
			n[i] = dw->origins[k];
		}
		free(dw->origins);
		dw->origins = n;
		dw->origin_cap = cap;
	}
	mask = dw->origin_cap - 1;
	i = (size_t)(off * 0x9E3779B97F4A7C15ull) & mask;
	while (dw->origins[i].off && dw->origins[i].off != off)
		i = (i + 1) & mask;
	return &dw->origins[i];
}

/* Names of a DIE: its own, else those of the DIEs it refers to. */
static void die_names(struct sym_dwarf *dw, Dwarf_Die die, int hops, const char **name,
		      const char **linkage)
{
	static const Dwarf_Half refs[] = {DW_AT_abstract_origin, DW_AT_specification};

	*linkage = attr_string(dw, die, DW_AT_linkage_name);
	if (!*linkage)
		*linkage = attr_string(dw, die, DW_AT_MIPS_linkage_name);
	*name = attr_string(dw, die, DW_AT_name);
	if (*linkage || hops >= MAX_ORIGIN_CHAIN)
		return;
	for (size_t r = 0; r < HWT_ARRAY_SIZE(refs); r++) {
		Dwarf_Off off;
		struct dw_origin *slot;
		const char *n = NULL, *l = NULL;

		if (!attr_ref(dw, die, refs[r], &off) || off == 0)
			continue;
		slot = origin_slot(dw, off);
		if (slot && slot->off == off) {
			n = slot->name;
			l = slot->linkage;
		} else {
			Dwarf_Die target = NULL;
			Dwarf_Error err = NULL;

			if (dwarf_offdie_b(dw->dbg, off, 1, &target, &err) == DW_DLV_OK) {
				die_names(dw, target, hops + 1, &n, &l);
				dwarf_dealloc_die(target);
			}
			drop_err(dw, &err);
			slot = origin_slot(dw, off);
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

static int add_scope(struct builder *b, Dwarf_Die die, bool is_inline, int32_t parent,
		     uint32_t depth)
{
	struct dw_scope *s;
	const char *name, *linkage;
	uint64_t v;

	if (b->nscopes == b->cap_scopes) {
		size_t cap = b->cap_scopes ? b->cap_scopes * 2 : 256;
		void *n = realloc(b->scopes, cap * sizeof(*b->scopes));

		if (!n)
			return -ENOMEM;
		b->scopes = n;
		b->cap_scopes = cap;
	}
	if (b->nscopes >= INT32_MAX)
		return -HWT_ETOOBIG;
	s = &b->scopes[b->nscopes];
	memset(s, 0, sizeof(*s));
	die_names(b->dw, die, 0, &name, &linkage);
	s->name = linkage ? linkage : name;
	s->is_linkage = linkage != NULL || !b->cu->mangled_lang;
	s->is_inline = is_inline;
	s->parent = is_inline ? parent : -1;
	s->lo = b->rb.r[0][0];
	if (is_inline) {
		if (attr_udata(b->dw, die, DW_AT_call_file, &v) && v <= UINT32_MAX)
			s->call_file = (uint32_t)v;
		if (attr_udata(b->dw, die, DW_AT_call_line, &v) && v <= UINT32_MAX)
			s->call_line = (uint32_t)v;
		if (attr_udata(b->dw, die, DW_AT_call_column, &v) && v <= UINT32_MAX)
			s->call_column = (uint32_t)v;
	}
	for (size_t i = 0; i < b->rb.n; i++) {
		if (b->nranges == b->cap_ranges) {
			size_t cap = b->cap_ranges ? b->cap_ranges * 2 : 256;
			void *n = realloc(b->ranges, cap * sizeof(*b->ranges));

			if (!n)
				return -ENOMEM;
			b->ranges = n;
			b->cap_ranges = cap;
		}
		b->ranges[b->nranges].lo = b->rb.r[i][0];
		b->ranges[b->nranges].hi = b->rb.r[i][1];
		b->ranges[b->nranges].scope = (int32_t)b->nscopes;
		b->ranges[b->nranges].depth = depth;
		b->nranges++;
	}
	b->nscopes++;
	return 0;
}

/* Walks the children of die, collecting scopes. parent is the innermost
 * enclosing function scope (-1 at unit level). */
static void walk(struct builder *b, Dwarf_Die die, int32_t parent, uint32_t depth)
{
	Dwarf_Die child = NULL;
	Dwarf_Error err = NULL;

	if (depth > MAX_DIE_DEPTH || b->err)
		return;
	if (dwarf_child(die, &child, &err) != DW_DLV_OK) {
		drop_err(b->dw, &err);
		return;
	}
	while (child && !b->err) {
		Dwarf_Half tag = 0;
		Dwarf_Die next = NULL;

		if (dwarf_tag(child, &tag, &err) != DW_DLV_OK)
			drop_err(b->dw, &err);
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point: {
			bool is_inline = tag == DW_TAG_inlined_subroutine;
			int ret = die_ranges(b->dw, child, b->cu->version, b->cu_base, &b->rb);

			if (ret < 0) {
				b->err = ret;
				break;
			}
			if (b->rb.n == 0) {
				/* An inlined subroutine without code still nests
				 * ones that have some; a declaration has none. */
				if (is_inline)
					walk(b, child, parent, depth + 1);
				break;
			}
			int32_t me = (int32_t)b->nscopes;
			ret = add_scope(b, child, is_inline, parent, depth);
			if (ret < 0) {
				b->err = ret;
				break;
			}
			walk(b, child, me, depth + 1);
			break;
		}
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_with_stmt:
		case DW_TAG_common_block:
			walk(b, child, parent, depth + 1);
			break;
		default:
			break; /* types and data hold no code */
		}
		if (dwarf_siblingof_b(b->dw->dbg, child, 1, &next, &err) != DW_DLV_OK) {
			drop_err(b->dw, &err);
			next = NULL;
		}
		dwarf_dealloc_die(child);
		child = next;
	}
}

static int cmp_range(const void *a, const void *b)
{
	const struct { uint64_t lo, hi; int32_t scope; uint32_t depth; } *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* outer first */
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->scope < y->scope ? -1 : x->scope > y->scope;
}

static int seg_push(struct dw_seg **segs, size_t *n, size_t *cap, uint64_t start, int32_t scope)
{
	if (*n && (*segs)[*n - 1].start == start) {
		(*segs)[*n - 1].scope = scope; /* empty segment: replace */
		return 0;
	}
	if (*n && (*segs)[*n - 1].scope == scope)
		return 0; /* same owner continues */
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		void *nn = realloc(*segs, c * sizeof(**segs));

		if (!nn)
			return -ENOMEM;
		*segs = nn;
		*cap = c;
	}
	(*segs)[*n].start = start;
	(*segs)[*n].scope = scope;
	(*n)++;
	return 0;
}

/* Flattens nested ranges into segments owned by their innermost scope. */
static int flatten(struct builder *b, struct dw_cuidx *x)
{
	struct { uint64_t hi; int32_t scope; } stack[MAX_DIE_DEPTH + 2];
	size_t sp = 0, cap = 0;
	int ret = 0;

	qsort(b->ranges, b->nranges, sizeof(*b->ranges), cmp_range);
	for (size_t i = 0; i < b->nranges && ret == 0; i++) {
		uint64_t lo = b->ranges[i].lo, hi = b->ranges[i].hi;

		/* close the ranges that end at or before lo */
		while (sp && stack[sp - 1].hi <= lo) {
			uint64_t end = stack[sp - 1].hi;

			sp--;
			ret = seg_push(&x->segs, &x->nsegs, &cap, end, sp ? stack[sp - 1].scope : -1);
		}
		if (sp && hi > stack[sp - 1].hi)
			hi = stack[sp - 1].hi; /* not nested: clip to the parent */
		if (hi <= lo || sp >= HWT_ARRAY_SIZE(stack))
			continue;
		ret = ret ? ret : seg_push(&x->segs, &x->nsegs, &cap, lo, b->ranges[i].scope);
		stack[sp].hi = hi;
		stack[sp].scope = b->ranges[i].scope;
		sp++;
	}
	while (sp && ret == 0) {
		uint64_t end = stack[sp - 1].hi;

		sp--;
		ret = seg_push(&x->segs, &x->nsegs, &cap, end, sp ? stack[sp - 1].scope : -1);
	}
	return ret;
}

/* Joins dir and name as binutils' concat_filename does. */
static char *join_path(const char *comp_dir, const char *dir, const char *name)
{
	const char *d1 = NULL, *d2 = NULL;
	char *out;
	size_t len;

	if (!name)
		return strdup("<unknown>");
	if (name[0] == '/')
		return strdup(name);
	if (!dir || dir[0] != '/')
		d1 = comp_dir;
	if (!d1) {
		d1 = dir;
		dir = NULL;
	}
	if (!d1)
		return strdup(name);
	d2 = dir;
	len = strlen(d1) + strlen(name) + (d2 ? strlen(d2) + 1 : 0) + 2;
	out = malloc(len);
	if (!out)
		return NULL;
	if (d2)
		snprintf(out, len, "%s/%s/%s", d1, d2, name);
	else
		snprintf(out, len, "%s/%s", d1, name);
	return out;
}

static int cmp_seq(const void *a, const void *b)
{
	const size_t *x = a, *y = b; /* [start row, end row, addr lo] */

	if (x[2] != y[2])
		return x[2] < y[2] ? -1 : 1;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int read_lines(struct builder *b, Dwarf_Die cu_die, struct dw_cuidx *x)
{
	struct sym_dwarf *dw = b->dw;
	Dwarf_Unsigned version;
	Dwarf_Small tcount;
	Dwarf_Line_Context ctx = NULL;
	Dwarf_Line *lines = NULL;
	Dwarf_Signed nlines = 0, base = 0, count = 0, end = 0, ndirs = 0;
	Dwarf_Error err = NULL;
	const char *comp_dir = NULL;
	struct dw_row *raw = NULL;
	size_t nraw = 0, (*seqs)[3] = NULL, nseqs = 0, seq_start = 0;
	int ret = 0;

	if (dwarf_srclines_b(cu_die, &version, &tcount, &ctx, &err) != DW_DLV_OK) {
		drop_err(dw, &err);
		return 0; /* a unit without a line table */
	}
	if (dwarf_srclines_from_linecontext(ctx, &lines, &nlines, &err) != DW_DLV_OK)
		goto out;
	comp_dir = attr_string(dw, cu_die, DW_AT_comp_dir);
	/* File table, indexed by DWARF file number. */
	if (dwarf_srclines_files_indexes(ctx, &base, &count, &end, &err) != DW_DLV_OK)
		goto out;
	dwarf_srclines_include_dir_count(ctx, &ndirs, &err);
	drop_err(dw, &err);
	if (end < 0 || end > 1 << 24) {
		ret = -HWT_EFORMAT;
		goto out;
	}
	x->nfiles = (size_t)end;
	x->files = calloc(x->nfiles ? x->nfiles : 1, sizeof(*x->files));
	if (!x->files) {
		ret = -ENOMEM;
		goto out;
	}
	for (Dwarf_Signed i = base; i < end; i++) {
		const char *name = NULL, *dir = NULL;
		Dwarf_Unsigned dirno = 0, mtime, flen;
		Dwarf_Form_Data16 *md5;

		if (dwarf_srclines_files_data_b(ctx, i, &name, &dirno, &mtime, &flen, &md5, &err) !=
		    DW_DLV_OK) {
			drop_err(dw, &err);
			continue;
		}
		/* Directory numbers: 0 is the unit's directory before DWARF 5 (and
		 * libdwarf numbers the include list from 1); from DWARF 5, 0 is an
		 * entry of the list. */
		if (version >= 5) {
			if ((Dwarf_Signed)dirno < ndirs &&
			    dwarf_srclines_include_dir_data(ctx, (Dwarf_Signed)dirno, &dir, &err) !=
				    DW_DLV_OK)
				dir = NULL;
		} else if (dirno > 0 && (Dwarf_Signed)dirno <= ndirs) {
			if (dwarf_srclines_include_dir_data(ctx, (Dwarf_Signed)dirno, &dir, &err) !=
			    DW_DLV_OK)
				dir = NULL;
		}
		drop_err(dw, &err);
		x->files[i] = join_path(comp_dir, dir, name);
		if (!x->files[i]) {
			ret = -ENOMEM;
			goto out;
		}
	}
	raw = malloc((size_t)(nlines ? nlines : 1) * sizeof(*raw));
	if (!raw) {
		ret = -ENOMEM;
		goto out;
	}
	for (Dwarf_Signed i = 0; i < nlines; i++) {
		Dwarf_Addr addr = 0;
		Dwarf_Unsigned lineno = 0, col = 0, fileno = 0, disc = 0, isa;
		Dwarf_Bool endseq = 0, pe, eb;
		struct dw_row r;

		if (dwarf_lineaddr(lines[i], &addr, &err) != DW_DLV_OK ||
		    dwarf_lineendsequence(lines[i], &endseq, &err) != DW_DLV_OK) {
			drop_err(dw, &err);
			continue;
		}
		dwarf_lineno(lines[i], &lineno, &err);
		drop_err(dw, &err);
		dwarf_lineoff_b(lines[i], &col, &err);
		drop_err(dw, &err);
		dwarf_line_srcfileno(lines[i], &fileno, &err);
		drop_err(dw, &err);
		if (dwarf_prologue_end_etc(lines[i], &pe, &eb, &isa, &disc, &err) != DW_DLV_OK)
			disc = 0;
		drop_err(dw, &err);
		r.addr = addr;
		r.file = endseq ? UINT32_MAX : (fileno < x->nfiles ? (uint32_t)fileno : 0);
		r.line = lineno > UINT32_MAX ? 0 : (uint32_t)lineno;
		r.column = col > UINT32_MAX ? 0 : (uint32_t)col;
		r.discriminator = disc > UINT32_MAX ? 0 : (uint32_t)disc;
		/* Several rows at one address: the last one describes it. */
		if (nraw > seq_start && raw[nraw - 1].addr == r.addr && !endseq) {
			raw[nraw - 1] = r;
			continue;
		}
		if (nraw > seq_start && r.addr < raw[nraw - 1].addr) {
			/* addresses went backwards: start a new sequence here */
			endseq = 0;
		}
		raw[nraw++] = r;
		if (endseq) {
			if (nraw - seq_start >= 2) {
				void *n = realloc(seqs, (nseqs + 1) * sizeof(*seqs));

				if (!n) {
					ret = -ENOMEM;
					goto out;
				}
				seqs = n;
				seqs[nseqs][0] = seq_start;
				seqs[nseqs][1] = nraw;
				seqs[nseqs][2] = (size_t)raw[seq_start].addr;
				nseqs++;
			}
			seq_start = nraw;
		}
	}
	/* Sorted sequences, each ending with its end marker. */
	if (nseqs > 1)
		qsort(seqs, nseqs, sizeof(*seqs), cmp_seq);
	x->rows = malloc((nraw ? nraw : 1) * sizeof(*x->rows));
	if (!x->rows) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t s = 0; s < nseqs; s++) {
		size_t len = seqs[s][1] - seqs[s][0];

		/* an end marker followed by a row at the same address: keep the row */
		if (x->nrows && x->rows[x->nrows - 1].file == UINT32_MAX &&
		    x->rows[x->nrows - 1].addr == raw[seqs[s][0]].addr)
			x->nrows--;
		memcpy(&x->rows[x->nrows], &raw[seqs[s][0]], len * sizeof(*raw));
		x->nrows += len;
	}
out:
	if (err)
		drop_err(dw, &err);
	free(raw);
	free(seqs);
	dwarf_srclines_dealloc_b(ctx);
	return ret;
}

static void free_cuidx(struct dw_cuidx *x)
{
	if (!x)
		return;
	for (size_t f = 0; f < x->nfiles; f++)
		free(x->files[f]);
	free(x->files);
	free(x->scopes);
	free(x->segs);
	free(x->rows);
	free(x);
}

/* Builds the index of one unit. Called under obj->lock. */
static int build_unit(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_cuidx **out)
{
	struct builder b = {.dw = dw, .cu = cu};
	struct dw_cuidx *x;
	Dwarf_Die cu_die = NULL;
	Dwarf_Error err = NULL;
	Dwarf_Addr base = 0;
	int ret;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	if (dwarf_offdie_b(dw->dbg, cu->die_off, 1, &cu_die, &err) != DW_DLV_OK) {
		drop_err(dw, &err);
		ret = -HWT_EFORMAT;
		goto error;
	}
	if (dwarf_lowpc(cu_die, &base, &err) == DW_DLV_OK)
		b.cu_base = base;
	drop_err(dw, &err);
	ret = read_lines(&b, cu_die, x);
	if (ret < 0)
		goto error;
	walk(&b, cu_die, -1, 0);
	if (b.err < 0) {
		ret = b.err;
		goto error;
	}
	ret = flatten(&b, x);
	if (ret < 0)
		goto error;
	x->scopes = b.scopes;
	x->nscopes = b.nscopes;
	b.scopes = NULL;
	dwarf_dealloc_die(cu_die);
	free(b.ranges);
	free(b.rb.r);
	*out = x;
	return 0;
error:
	if (cu_die)
		dwarf_dealloc_die(cu_die);
	free(b.scopes);
	free(b.ranges);
	free(b.rb.r);
	free_cuidx(x);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Lookup                                                                    */

static struct sym_dwarf *get_dwarf(struct hwt_sym_obj *obj)
{
	int state = atomic_load_explicit(&obj->dwarf_state, memory_order_acquire);

	if (state == 1)
		return obj->dw;
	if (state < 0 || !obj->dwelf)
		return NULL;
	pthread_mutex_lock(&obj->lock);
	state = atomic_load_explicit(&obj->dwarf_state, memory_order_relaxed);
	if (state == 0) {
		struct sym_dwarf *dw = NULL;

		if (dwarf_open(obj, &dw) == 0) {
			obj->dw = dw;
			state = 1;
		} else {
			state = -1;
		}
		atomic_store_explicit(&obj->dwarf_state, state, memory_order_release);
	}
	pthread_mutex_unlock(&obj->lock);
	return state == 1 ? obj->dw : NULL;
}

static struct dw_cuidx *get_unit(struct hwt_sym_obj *obj, struct sym_dwarf *dw, uint32_t i)
{
	struct dw_cu *cu = &dw->cus[i];
	struct dw_cuidx *x = atomic_load_explicit(&cu->idx, memory_order_acquire);

	if (x)
		return x;
	pthread_mutex_lock(&obj->lock);
	x = atomic_load_explicit(&cu->idx, memory_order_relaxed);
	if (!x && !cu->failed) {
		int ret = build_unit(dw, cu, &x);

		if (ret < 0) {
			cu->failed = true;
			x = NULL;
			if (!atomic_exchange(&obj->warned_dwarf, true))
				sym_log(obj, HWT_LOG_WARN,
					"%s: malformed DWARF in unit at 0x%llx (%s); using symbols",
					obj->path, (unsigned long long)cu->die_off,
					hwt_strerror(ret));
		} else {
			atomic_store_explicit(&cu->idx, x, memory_order_release);
		}
	}
	pthread_mutex_unlock(&obj->lock);
	return x;
}

/* The unit ranges containing addr: there may be more than one when units
 * overlap (discarded COMDAT code at address 0, malformed input). */
static long find_crange(const struct sym_dwarf *dw, uint64_t addr)
{
	size_t lo = 0, hi = dw->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dw->ranges[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the last range starting at or below addr that contains it */
	for (size_t i = lo; i-- > 0;) {
		if (addr < dw->ranges[i].hi)
			return (long)i;
		if (lo - i > 8)
			break;
	}
	return -1;
}

static const struct dw_row *find_row(const struct dw_cuidx *x, uint64_t addr)
{
	size_t lo = 0, hi = x->nrows;
	const struct dw_row *r;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->rows[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	r = &x->rows[lo - 1];
	if (r->file == UINT32_MAX || lo == x->nrows)
		return NULL; /* past the end of a sequence */
	return r;
}

static int32_t find_scope(const struct dw_cuidx *x, uint64_t addr)
{
	size_t lo = 0, hi = x->nsegs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? -1 : x->segs[lo - 1].scope;
}

static const char *scope_name(struct hwt_sym_obj *obj, struct dw_scope *s, uint64_t addr,
			      bool raw)
{
	const char *name = s->name;

	if (!s->is_linkage) {
		/* binutils: in a mangling language, a name that is not a
		 * linkage name (main, extern "C" functions, clones) yields to
		 * the ELF symbol that starts exactly where the function does.
		 * (binutils' very first answer for such a function is the
		 * containing symbol whatever its start; it then caches this
		 * rule, which is what it answers from then on.) */
		long i = sym_symtab_find(obj, addr, true);

		while (i > 0 && obj->syms[i].addr > s->lo)
			i--;
		if (i >= 0 && obj->syms[i].addr == s->lo)
			return sym_entry_name(&obj->syms[i], raw);
	}
	if (!name)
		return NULL;
	if (raw)
		return name;
	return sym_demangle_cached(&s->demangled, name);
}

int sym_dwarf_lookup(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags,
		     struct hwt_sym_frame *frames, unsigned max, unsigned *depth)
{
	struct sym_dwarf *dw = get_dwarf(obj);
	const struct dw_row *row = NULL;
	struct dw_cuidx *x = NULL;
	bool raw = flags & HWT_SYM_RAW;
	int32_t sc = -1;
	unsigned n = 0, d = 0;
	long r;

	*depth = 0;
	if (!dw || dw->nranges == 0)
		return 0;
	r = find_crange(dw, addr);
	if (r < 0)
		return 0;
	x = get_unit(obj, dw, dw->ranges[r].cu);
	if (!x)
		return 0;
	row = find_row(x, addr);
	sc = find_scope(x, addr);
	if (!row && sc < 0)
		return 0;
	/* Innermost frame: the function owning the address, at the row's line. */
	if (max > 0) {
		frames[0].func = sc >= 0 ? scope_name(obj, &x->scopes[sc], addr, raw) : NULL;
		frames[0].file = row ? x->files[row->file] : NULL;
		frames[0].line = row ? row->line : 0;
		frames[0].column = row ? row->column : 0;
		frames[0].discriminator = row ? row->discriminator : 0;
		n = 1;
	}
	d = 1;
	if (sc >= 0 && (flags & HWT_SYM_NO_INLINE)) {
		/* only the real function: walk out to it, keep the row */
		while (x->scopes[sc].parent >= 0 && d < MAX_DIE_DEPTH) {
			sc = x->scopes[sc].parent;
			d++;
		}
		if (max > 0)
			frames[0].func = scope_name(obj, &x->scopes[sc], addr, raw);
		*depth = 1;
		return (int)n;
	}
	/* Each inlined scope adds its caller, at the call site. */
	while (sc >= 0 && x->scopes[sc].is_inline && x->scopes[sc].parent >= 0 &&
	       d < MAX_DIE_DEPTH) {
		const struct dw_scope *in = &x->scopes[sc];
		int32_t parent = in->parent;

		if (n < max) {
			struct hwt_sym_frame *f = &frames[n++];

			f->func = scope_name(obj, &x->scopes[parent], addr, raw);
			f->file = in->call_file < x->nfiles ? x->files[in->call_file] : NULL;
			f->line = in->call_line;
			f->column = in->call_column;
			f->discriminator = 0;
		}
		d++;
		sc = parent;
	}
	*depth = d;
	return (int)n;
}
