/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/lookup.c - the lookup entry points: one address (DWARF frames,
 * else the symbol table), a batch of addresses, the decoder's "same function
 * as last time" fast path, and symbol lookup by name for probes.
 */
#include "symbolize/sym_int.h"

#include <elf.h>
#include <string.h>

static inline bool same_addr(const struct hwt_sym_obj *obj, long a, long b)
{
	if (obj->sym_keys.n == obj->nsyms)
		return obj->sym_keys.k[a] == obj->sym_keys.k[b];
	return obj->syms[a].addr == obj->syms[b].addr;
}

/* The symbol for addr. nearest: binutils' rule, restricted to the section
 * that holds addr. */
static long find_symbol(const struct hwt_sym_obj *obj, uint64_t addr, bool nearest, long sec)
{
	long i = sym_symtab_find(obj, addr, nearest);

	if (!nearest || i < 0 || sec < 0)
		return i;
	/* addr2line knows no PLT stub names. */
	while (i >= 0 && (obj->syms[i].shndx != (uint32_t)sec || obj->syms[i].plt))
		i--;
	/* Among aliases binutils keeps the first in table order unless a
	 * later one is larger. (Addresses compared on the dense key array:
	 * the neighbouring entries are rarely aliases, and each is a cache
	 * line of its own.) */
	for (long j = i - 1; i >= 0 && j >= 0 && same_addr(obj, j, i); j--) {
		const struct sym_entry *a = &obj->syms[j], *b = &obj->syms[i];

		if (a->shndx == b->shndx &&
		    (a->size > b->size || (a->size == b->size && a->index < b->index)))
			i = j;
	}
	for (long j = i + 1; i >= 0 && (size_t)j < obj->nsyms && same_addr(obj, j, i); j++) {
		const struct sym_entry *a = &obj->syms[j], *b = &obj->syms[i];

		if (a->shndx == b->shndx &&
		    (a->size > b->size || (a->size == b->size && a->index < b->index)))
			i = j;
	}
	return i;
}

/* Symbolizes addr as an address of section sec (-1: no sections). */
static int lookup_in(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags, long sec,
		     struct hwt_sym_info *info, struct hwt_sym_frame *frames, unsigned max_frames,
		     struct sym_dwarf_cursor *cur)
{
	bool raw = flags & HWT_SYM_RAW, nearest = flags & HWT_SYM_NEAREST;
	bool rel = obj->elf && obj->elf->type == ET_REL && sec >= 0;
	unsigned depth = 0;
	long si;
	int n = 0;

	info->symbol = NULL;
	info->sym_addr = info->sym_size = 0;
	info->module = obj->name;
	if ((flags & HWT_SYM_FRAMES_ONLY) && !(flags & HWT_SYM_NO_LINES) && obj->dwelf) {
		/* DWARF first: when it names the function, the symbol table
		 * has nothing to add to the frames */
		n = sym_dwarf_lookup(obj, sym_elf_dwarf_addr(obj->dwelf, sec, addr), flags, frames,
				     max_frames, &depth, cur);
		if (n > 0 && depth > 0 && frames[0].func) {
			info->source = HWT_SYM_SRC_DWARF;
			info->nframes = (unsigned)n;
			info->depth = depth;
			return n;
		}
		flags &= ~(unsigned)HWT_SYM_FRAMES_ONLY;
	}
	/* In a relocatable object every section starts at 0: only symbols
	 * of the same section can contain addr. */
	si = find_symbol(obj, addr, nearest || rel, sec);
	if (si >= 0 && rel && !nearest && obj->syms[si].size &&
	    addr - obj->syms[si].addr >= obj->syms[si].size)
		si = -1;
	if (si >= 0) {
		struct sym_entry *s = &obj->syms[si];

		info->symbol = sym_entry_name(s, raw);
		info->sym_addr = s->addr;
		info->sym_size = s->size;
		if (s->module)
			info->module = s->module;
	}
	if (!(flags & HWT_SYM_NO_LINES) && obj->dwelf) {
		n = sym_dwarf_lookup(obj, sym_elf_dwarf_addr(obj->dwelf, sec, addr), flags, frames,
				     max_frames, &depth, cur);
		if (n < 0)
			n = 0, depth = 0;
	}
	if (depth > 0) {
		info->source = HWT_SYM_SRC_DWARF;
		if (n > 0 && !frames[0].func && info->symbol)
			frames[0].func = info->symbol;
		info->nframes = (unsigned)n;
		info->depth = depth;
		return n;
	}
	if (si < 0)
		return -HWT_ENOSYM;
	info->source = obj->sym_source;
	info->depth = 1;
	if (max_frames == 0)
		return 0;
	memset(&frames[0], 0, sizeof(frames[0]));
	frames[0].func = info->symbol;
	if (nearest)
		frames[0].file = obj->syms[si].srcfile;
	info->nframes = 1;
	return 1;
}

/* hwt_sym_lookup() with a merge-walk cursor (NULL: none). */
static int lookup(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags, struct hwt_sym_info *info,
		  struct hwt_sym_frame *frames, unsigned max_frames, struct sym_dwarf_cursor *cur)
{
	const struct sym_elf *e = obj ? obj->elf : NULL;
	long sec = -1;

	if (!obj || !info || (max_frames && !frames))
		return -HWT_EINVAL;
	memset(info, 0, sizeof(*info));
	info->addr = addr;
	info->module = obj->name;
	if (obj->kind == HWT_SYM_OBJ_ELF && sym_elf_has_alloc_sections(e)) {
		/* Only addresses inside the loaded image mean anything. */
		sec = sym_elf_alloc_section(e, addr);
		if (sec < 0)
			return -HWT_ENOSYM;
		if (e->type == ET_REL) {
			/* All sections of a relocatable object start at 0:
			 * as binutils, try each that holds addr, in section
			 * order, until one answers. */
			for (size_t i = (size_t)sec; i < e->nsecs; i++) {
				const struct sym_sec *s = &e->secs[i];
				int ret;

				if (!(s->flags & SHF_ALLOC) || addr < s->addr ||
				    addr - s->addr >= s->size)
					continue;
				ret = lookup_in(obj, addr, flags, (long)i, info, frames, max_frames,
						NULL);
				if (ret != -HWT_ENOSYM)
					return ret;
			}
			return -HWT_ENOSYM;
		}
	}
	return lookup_in(obj, addr, flags, sec, info, frames, max_frames, cur);
}

int hwt_sym_lookup(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags,
		   struct hwt_sym_info *info, struct hwt_sym_frame *frames, unsigned max_frames)
{
	return lookup(obj, addr, flags, info, frames, max_frames, NULL);
}

int hwt_sym_lookup_batch(struct hwt_sym_obj *obj, const uint64_t *addrs, size_t n, unsigned flags,
			 struct hwt_sym_batch_entry *out, struct hwt_sym_frame *frames,
			 unsigned frames_per_addr)
{
	struct sym_dwarf_cursor cur = {0};
	int found = 0;

	if (!obj || (n && (!addrs || !out)) || (frames_per_addr && !frames))
		return -HWT_EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct hwt_sym_frame *f = frames_per_addr ? frames + i * frames_per_addr : NULL;

		/* Repeated addresses (hot IPs in sorted samples) copy the last
		 * answer instead of searching again. */
		if (i > 0 && addrs[i] == addrs[i - 1]) {
			out[i] = out[i - 1];
			if (frames_per_addr)
				memcpy(f, f - frames_per_addr, frames_per_addr * sizeof(*f));
		} else {
			/* ascending addresses walk the unit's tables forward
			 * from the previous answer (a merge-walk) */
			if (i > 0 && addrs[i] < addrs[i - 1])
				cur.unit = NULL;
			out[i].status =
			    lookup(obj, addrs[i], flags, &out[i].info, f, frames_per_addr, &cur);
		}
		if (out[i].status >= 0)
			found++;
	}
	return found;
}

int hwt_sym_func_at(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags,
		    struct hwt_sym_hint *hint, struct hwt_sym_func *out)
{
	struct sym_entry *s;
	uint64_t hi;
	long i;

	if (!obj || !out)
		return -HWT_EINVAL;
	if (hint && hint->obj == obj && hint->flags == flags &&
	    addr - hint->lo < hint->hi - hint->lo) {
		*out = hint->func;
		return 0;
	}
	i = sym_symtab_find(obj, addr, false);
	if (i < 0)
		return -HWT_ENOSYM;
	s = &obj->syms[i];
	out->name = sym_entry_name(s, flags & HWT_SYM_RAW);
	out->addr = s->addr;
	out->size = s->size;
	if (!s->size && obj->kind == HWT_SYM_OBJ_KALLSYMS) {
		/* kallsyms has no sizes: a function reaches to the next symbol
		 * (what the lookup took), so views of its code know its end */
		size_t next = (size_t)i + 1;

		while (next < obj->nsyms && obj->syms[next].addr == s->addr)
			next++;
		if (next < obj->nsyms)
			out->size = obj->syms[next].addr - s->addr;
	}
	if (hint) {
		if (s->size) {
			hi = s->addr + s->size;
		} else {
			size_t next = (size_t)i + 1;

			while (next < obj->nsyms && obj->syms[next].addr == s->addr)
				next++;
			hi = next < obj->nsyms ? obj->syms[next].addr : s->addr + 1;
		}
		hint->obj = obj;
		hint->flags = flags;
		hint->lo = s->addr;
		hint->hi = hi;
		hint->func = *out;
	}
	return 0;
}

/* "ns::f(int)" matches "ns::f" and "ns::f(int)". */
static bool demangled_match(const char *dem, const char *name)
{
	size_t len = strlen(name);

	if (strncmp(dem, name, len) != 0)
		return false;
	return dem[len] == '\0' || (dem[len] == '(' && !strchr(name, '('));
}

int hwt_sym_find(struct hwt_sym_obj *obj, const char *name, struct hwt_sym_def *defs, unsigned max)
{
	unsigned found = 0;
	size_t len;

	if (!obj || !name || (max && !defs))
		return -HWT_EINVAL;
	len = strlen(name);
	/* exact, then demangled, then a versioned name of a shared library
	 * ("pthread_create@@GLIBC_2.34"): its default version (@@) first,
	 * then any (@), as the dynamic linker binds a plain name */
	for (int pass = 0; pass < 4 && found == 0; pass++) {
		for (size_t i = 0; i < obj->nsyms; i++) {
			struct sym_entry *s = &obj->syms[i];
			bool match;

			if (pass == 0)
				match = !strcmp(s->name, name);
			else if (pass == 1)
				match = demangled_match(sym_entry_name(s, false), name);
			else
				match = !strchr(name, '@') && !strncmp(s->name, name, len) &&
					s->name[len] == '@' &&
					(pass == 3 || s->name[len + 1] == '@');
			if (!match)
				continue;
			if (found < max) {
				struct hwt_sym_def *d = &defs[found];

				d->name = s->name;
				d->addr = s->addr;
				d->size = s->size;
				d->has_offset =
				    hwt_sym_obj_file_offset(obj, s->addr, &d->file_offset) == 0;
				if (!d->has_offset)
					d->file_offset = 0;
			}
			found++;
		}
	}
	return (int)(found > INT32_MAX ? INT32_MAX : found);
}
