/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/dwarf_lib.c - the libdwarf reader of the DWARF index: the
 * fallback for units the native reader declines (forms or line opcodes it
 * does not handle), and the whole reader when the configuration asks for
 * libdwarf (tests compare the two readers address by address).
 *
 * libdwarf reads the sections through our own object-access interface, so
 * that it sees the image we mapped and sections we decompressed (zlib and
 * zstd; libdwarf 20210528 knows neither SHF_COMPRESSED zstd nor our mapping)
 * and relocated (ET_REL). It is opened only when a unit needs it. Its own
 * structures (DIEs, line contexts) are freed as soon as a unit is indexed.
 * libdwarf is not thread-safe: every call into it happens under obj->lock.
 */
#include "symbolize/dwarf_int.h"

#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <libdwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libdwarf's handle on the image, with the access methods it calls. */
struct dw_lib {
	Dwarf_Debug dbg;
	Dwarf_Obj_Access_Interface iface;
	Dwarf_Obj_Access_Methods methods;
};

/* ------------------------------------------------------------------------ */
/* Object access for libdwarf                                                */

static int section_size(struct sym_elf *e, struct sym_sec *s, uint64_t *size)
{
	const uint8_t *p = e->data + s->offset;

	if (s->type == SHT_NULL || s->offset > e->size || s->size > e->size - s->offset)
		return -HWT_EFORMAT; /* no bytes in the image: never read them */
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
		dwarf_dealloc_error(dw->lib->dbg, *err);
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

/* Ranges of a DIE: low_pc/high_pc, or DW_AT_ranges (.debug_ranges before
 * DWARF 5 with base address cu_base, .debug_rnglists from DWARF 5). */
static int die_ranges(struct sym_dwarf *dw, Dwarf_Die die, unsigned version, uint64_t cu_base,
		      struct dw_rangebuf *rb)
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
			return dw_range_add(rb, lo, hi);
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

			if (dwarf_get_rnglists_entry_fields_a(head, i, &elen, &code, &r1, &r2,
							      &noaddr, &c1, &c2, &err) != DW_DLV_OK)
				break;
			if (noaddr)
				continue;
			switch (code) {
			case DW_RLE_offset_pair:
			case DW_RLE_startx_endx:
			case DW_RLE_start_end:
			case DW_RLE_startx_length:
			case DW_RLE_start_length:
				ret = dw_range_add(rb, c1, c2);
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
		if (dwarf_get_ranges_b(dw->lib->dbg, off, die, &real, &rs, &n, &bytes, &err) !=
		    DW_DLV_OK)
			goto out;
		for (Dwarf_Signed i = 0; i < n && ret == 0; i++) {
			if (rs[i].dwr_type == DW_RANGES_ADDRESS_SELECTION)
				base = rs[i].dwr_addr2;
			else if (rs[i].dwr_type == DW_RANGES_ENTRY)
				ret = dw_range_add(rb, base + rs[i].dwr_addr1,
						   base + rs[i].dwr_addr2);
			else
				break;
		}
		dwarf_ranges_dealloc(dw->lib->dbg, rs, n);
	}
out:
	drop_err(dw, &err);
	dwarf_dealloc_attribute(a);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Unit list                                                                  */

/* Language and ranges of a unit DIE. */
static int unit_die_info(struct sym_dwarf *dw, Dwarf_Die cu_die, struct dw_cu *cu,
			 struct dw_rangebuf *rb)
{
	Dwarf_Error err = NULL;
	Dwarf_Addr base = 0;
	uint64_t lang = 0;

	attr_udata(dw, cu_die, DW_AT_language, &lang);
	cu->mangled_lang = !dw_lang_is_c_like(lang);
	if (dwarf_lowpc(cu_die, &base, &err) != DW_DLV_OK)
		base = 0;
	drop_err(dw, &err);
	cu->base = base;
	return die_ranges(dw, cu_die, cu->version, base, rb);
}

int dwl_list_units(struct sym_dwarf *dw)
{
	struct dw_rangebuf rb = {0};
	size_t cap_cu = 0, cap_r = 0;
	int ret = 0;

	for (;;) {
		Dwarf_Unsigned hlen, abbrev_off, typeoff, next_cu;
		Dwarf_Half version, addr_size, off_size, ext_size, unit_type;
		Dwarf_Sig8 sig;
		Dwarf_Error err = NULL;
		Dwarf_Die cu_die = NULL;
		Dwarf_Off die_off;
		struct dw_cu *cu;
		int res;

		res = dwarf_next_cu_header_d(dw->lib->dbg, 1, &hlen, &version, &abbrev_off,
					     &addr_size, &off_size, &ext_size, &sig, &typeoff,
					     &next_cu, &unit_type, &err);
		if (res != DW_DLV_OK) {
			if (res == DW_DLV_ERROR)
				sym_log(dw->obj, HWT_LOG_WARN, "%s: malformed DWARF unit list: %s",
					dw->obj->path, dwarf_errmsg(err));
			drop_err(dw, &err);
			break;
		}
		if (dwarf_siblingof_b(dw->lib->dbg, NULL, 1, &cu_die, &err) != DW_DLV_OK) {
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
		cu->reader = DW_READER_LIBDWARF;
		ret = unit_die_info(dw, cu_die, cu, &rb);
		dwarf_dealloc_die(cu_die);
		if (ret == 0)
			ret = dw_add_cranges(dw, (uint32_t)dw->ncus, &rb, &cap_r);
		dw->ncus++;
		if (ret < 0)
			break;
	}
	free(rb.r);
	return ret;
}

int dwl_unit_ranges(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_rangebuf *rb)
{
	Dwarf_Die cu_die = NULL;
	Dwarf_Error err = NULL;
	int ret;

	rb->n = 0;
	ret = dwl_open(dw);
	if (ret < 0)
		return ret;
	if (dwarf_offdie_b(dw->lib->dbg, cu->die_off, 1, &cu_die, &err) != DW_DLV_OK) {
		drop_err(dw, &err);
		return -HWT_EFORMAT;
	}
	ret = unit_die_info(dw, cu_die, cu, rb);
	dwarf_dealloc_die(cu_die);
	return ret;
}

static void dwarf_errhand(Dwarf_Error err, Dwarf_Ptr arg)
{
	/* Errors are returned through Dwarf_Error pointers; never abort. */
	(void)err;
	(void)arg;
}

void dwl_close(struct sym_dwarf *dw)
{
	if (!dw->lib)
		return;
	if (dw->lib->dbg) {
		Dwarf_Error err = NULL;

		dwarf_object_finish(dw->lib->dbg, &err);
	}
	free(dw->lib);
	dw->lib = NULL;
}

/* Sets up libdwarf on the object's DWARF image, once. Under obj->lock. */
int dwl_open(struct sym_dwarf *dw)
{
	struct dw_lib *lib;
	Dwarf_Error err = NULL;
	int res;

	if (dw->lib)
		return 0;
	if (dw->lib_failed)
		return -HWT_ENODEBUG;
	lib = calloc(1, sizeof(*lib));
	if (!lib)
		return -ENOMEM;
	lib->methods.get_section_info = acc_section_info;
	lib->methods.get_byte_order = acc_byte_order;
	lib->methods.get_length_size = acc_length_size;
	lib->methods.get_pointer_size = acc_pointer_size;
	lib->methods.get_section_count = acc_section_count;
	lib->methods.load_section = acc_load_section;
	lib->iface.object = dw;
	lib->iface.methods = &lib->methods;
	res = dwarf_object_init_b(&lib->iface, dwarf_errhand, NULL, DW_GROUPNUMBER_ANY, &lib->dbg,
				  &err);
	if (res != DW_DLV_OK) {
		if (res == DW_DLV_ERROR) {
			sym_log(dw->obj, HWT_LOG_WARN, "%s: cannot read DWARF: %s", dw->obj->path,
				dwarf_errmsg(err));
			dwarf_dealloc_error(NULL, err);
		}
		free(lib);
		dw->lib_failed = true;
		return -HWT_ENODEBUG;
	}
	dw->lib = lib;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Unit index                                                                */

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
		slot = dw_origin_slot(dw, off);
		if (slot && slot->off == off) {
			n = slot->name;
			l = slot->linkage;
		} else {
			Dwarf_Die target = NULL;
			Dwarf_Error err = NULL;

			if (dwarf_offdie_b(dw->lib->dbg, off, 1, &target, &err) == DW_DLV_OK) {
				die_names(dw, target, hops + 1, &n, &l);
				dwarf_dealloc_die(target);
			}
			drop_err(dw, &err);
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

static int add_scope(struct dw_builder *b, Dwarf_Die die, bool is_inline, int32_t parent,
		     uint32_t depth)
{
	const char *name, *linkage;
	struct dw_callsite call = {0};

	die_names(b->dw, die, 0, &name, &linkage);
	if (is_inline) {
		call.has_file = attr_udata(b->dw, die, DW_AT_call_file, &call.file);
		call.has_line = attr_udata(b->dw, die, DW_AT_call_line, &call.line);
		call.has_column = attr_udata(b->dw, die, DW_AT_call_column, &call.column);
	}
	return dw_add_scope(b, name, linkage, is_inline, parent, depth, &call);
}

/* Walks the children of die, collecting scopes. parent is the innermost
 * enclosing function scope (-1 at unit level). */
static void walk(struct dw_builder *b, Dwarf_Die die, int32_t parent, uint32_t depth)
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
		if (dwarf_siblingof_b(b->dw->lib->dbg, child, 1, &next, &err) != DW_DLV_OK) {
			drop_err(b->dw, &err);
			next = NULL;
		}
		dwarf_dealloc_die(child);
		child = next;
	}
}

static int read_lines(struct dw_builder *b, Dwarf_Die cu_die, struct dw_cuidx *x)
{
	struct sym_dwarf *dw = b->dw;
	Dwarf_Unsigned version;
	Dwarf_Small tcount;
	Dwarf_Line_Context ctx = NULL;
	Dwarf_Line *lines = NULL;
	Dwarf_Signed nlines = 0, base = 0, count = 0, end = 0, ndirs = 0;
	Dwarf_Error err = NULL;
	const char *comp_dir = NULL;
	struct dw_rowbuf *rows = dw_rows_begin(dw);
	int ret = 0;

	if (!rows)
		return -ENOMEM;
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
		x->files[i] = dw_join_path(comp_dir, dir, name);
		if (!x->files[i]) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (Dwarf_Signed i = 0; i < nlines && ret == 0; i++) {
		Dwarf_Addr addr = 0;
		Dwarf_Unsigned lineno = 0, col = 0, fileno = 0, disc = 0, isa;
		Dwarf_Bool endseq = 0, pe, eb;

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
		ret = dw_rows_add(rows, addr, fileno, x->nfiles,
				  lineno > INT64_MAX ? -1 : (int64_t)lineno, col, disc, endseq);
	}
	if (ret == 0)
		ret = dw_rows_finish(dw, rows, x);
out:
	if (err)
		drop_err(dw, &err);
	dwarf_srclines_dealloc_b(ctx);
	return ret;
}

/* Builds the index of one unit with libdwarf. Called under obj->lock. */
int dwl_build_unit(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_cuidx *x)
{
	struct dw_builder b;
	Dwarf_Die cu_die = NULL;
	Dwarf_Error err = NULL;
	Dwarf_Addr base = 0;
	int ret;

	ret = dwl_open(dw);
	if (ret < 0)
		return ret;
	if (dwarf_offdie_b(dw->lib->dbg, cu->die_off, 1, &cu_die, &err) != DW_DLV_OK) {
		drop_err(dw, &err);
		return -HWT_EFORMAT;
	}
	dw_builder_init(&b, dw, cu);
	b.cu_base = 0;
	if (dwarf_lowpc(cu_die, &base, &err) == DW_DLV_OK)
		b.cu_base = base;
	drop_err(dw, &err);
	ret = read_lines(&b, cu_die, x);
	if (ret == 0) {
		walk(&b, cu_die, -1, 0);
		ret = b.err;
	}
	if (ret == 0)
		ret = dw_builder_finish(&b, x);
	dwarf_dealloc_die(cu_die);
	dw_builder_fini(&b);
	return ret;
}
