/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/symtab.c - ELF symbol tables (.symtab, else .dynsym) as one array
 * sorted by address, searched by binary search; lazily demangled names shared
 * by all threads; and the two containment rules callers need: "inside the
 * symbol's size" for reports, and binutils' "nearest preceding symbol in the
 * same section" for addr2line compatibility.
 */
#include "symbolize/sym_int.h"

#include <demangle.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *hwt_sym_demangle(const char *name)
{
	const char *suffix;
	char *base, *dem, *out;
	size_t blen;

	if (!name || !(name[0] == '_' && (name[1] == 'Z' || name[1] == 'R')))
		return NULL;
	/* Symbol versions ("_ZN1a1fEv@@V1") are not part of the mangled name:
	 * demangle the name and put the version back, as bfd_demangle does. */
	suffix = strchr(name, '@');
	if (!suffix)
		return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	blen = (size_t)(suffix - name);
	base = strndup(name, blen);
	if (!base)
		return NULL;
	dem = cplus_demangle(base, DMGL_PARAMS | DMGL_ANSI);
	free(base);
	if (!dem)
		return NULL;
	out = malloc(strlen(dem) + strlen(suffix) + 1);
	if (out) {
		strcpy(out, dem);
		strcat(out, suffix);
	}
	free(dem);
	return out;
}

const char *sym_demangle_cached(_Atomic(const char *) *slot, const char *raw)
{
	const char *cur = atomic_load_explicit(slot, memory_order_acquire);
	const char *expected = NULL;
	char *dem;

	if (cur)
		return cur;
	dem = hwt_sym_demangle(raw);
	if (!dem) {
		/* Not mangled (or out of memory): the raw name stands. */
		atomic_compare_exchange_strong(slot, &expected, raw);
		return atomic_load_explicit(slot, memory_order_acquire);
	}
	if (!atomic_compare_exchange_strong(slot, &expected, dem)) {
		free(dem); /* another thread won */
		return expected;
	}
	return dem;
}

const char *sym_entry_name(struct sym_entry *s, bool raw)
{
	if (raw)
		return s->name;
	return sym_demangle_cached(&s->demangled, s->name);
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Among aliases (symbols at one address) the first after sorting names the
 * address. The rule is perf's, so that reports name functions as perf
 * report does. perf first gives each zero-sized symbol the room up to the
 * next symbol (symbols__fixup_end), which among zero-sized aliases only
 * the last in table order gets, then keeps (choose_best_symbol) a sized
 * symbol over a zero-sized one, a strong one over a weak one, a global over
 * a local, the one with fewer leading underscores ("munmap" over
 * "__GI___munmap"), the longer name, and the earlier in table order. */
static int cmp_entry(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	bool xs = x->size || x->zlast, ys = y->size || y->zlast;
	size_t ux, uy, lx, ly;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (xs != ys)
		return xs ? -1 : 1;
	if (x->weak != y->weak)
		return x->weak ? 1 : -1;
	if (x->local != y->local)
		return x->local ? 1 : -1;
	ux = leading_underscores(x->name);
	uy = leading_underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_addr_index(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

int sym_keys_alloc(struct sym_keys *ks, size_t n)
{
	size_t ntop = (n + SYM_KEYS_BLOCK - 1) / SYM_KEYS_BLOCK;

	memset(ks, 0, sizeof(*ks));
	if (n == 0)
		return 0;
	if (ntop > SIZE_MAX / (SYM_KEYS_BLOCK * sizeof(*ks->k)))
		return -ENOMEM;
	ks->top = malloc(ntop * sizeof(*ks->top));
	ks->k = aligned_alloc(64, ntop * SYM_KEYS_BLOCK * sizeof(*ks->k));
	ks->bucket_cap = n / 4 + 2;
	ks->bucket = malloc(ks->bucket_cap * sizeof(*ks->bucket));
	if (!ks->top || !ks->k || !ks->bucket) {
		free(ks->top);
		free(ks->k);
		free(ks->bucket);
		memset(ks, 0, sizeof(*ks));
		return -ENOMEM;
	}
	ks->n = n;
	ks->ntop = ntop;
	return 0;
}

void sym_keys_seal(struct sym_keys *ks)
{
	uint64_t span;
	size_t want, nb, i = 0;
	unsigned shift = 0;

	ks->ntop = (ks->n + SYM_KEYS_BLOCK - 1) / SYM_KEYS_BLOCK;
	for (size_t t = 0; t < ks->ntop; t++)
		ks->top[t] = ks->k[t * SYM_KEYS_BLOCK];
	ks->nbucket = 0;
	if (!ks->bucket || ks->n < 4 * SYM_KEYS_BLOCK || ks->n > UINT32_MAX)
		return; /* few keys: the top level is enough */
	/* about four keys per slice of the address range */
	span = ks->k[ks->n - 1] - ks->k[0];
	want = ks->n / 4 < ks->bucket_cap - 1 ? ks->n / 4 : ks->bucket_cap - 1;
	while (shift < 63 && (span >> shift) >= want)
		shift++;
	nb = (size_t)(span >> shift) + 1;
	for (size_t b = 0; b < nb; b++) {
		uint64_t start = ks->k[0] + ((uint64_t)b << shift);

		while (i < ks->n && ks->k[i] < start)
			i++;
		ks->bucket[b] = (uint32_t)i;
	}
	ks->bucket[nb] = (uint32_t)ks->n;
	ks->base = ks->k[0];
	ks->shift = shift;
	ks->nbucket = nb;
}

int sym_keys_init(struct sym_keys *ks, uint64_t *keys, size_t n)
{
	int ret = sym_keys_alloc(ks, n);

	if (ret == 0 && n) {
		memcpy(ks->k, keys, n * sizeof(*keys));
		sym_keys_seal(ks);
	}
	free(keys);
	return ret;
}

void sym_keys_fini(struct sym_keys *ks)
{
	if (!ks->borrowed) {
		free(ks->k);
		free(ks->top);
		free(ks->bucket);
	}
	memset(ks, 0, sizeof(*ks));
}

void sym_symtab_sort(struct hwt_sym_obj *obj)
{
	uint64_t *keys;

	if (obj->nsyms > 1) {
		/* Which zero-sized alias perf's end fixup would give room to. */
		qsort(obj->syms, obj->nsyms, sizeof(*obj->syms), cmp_addr_index);
		for (size_t i = 0, j; i < obj->nsyms; i = j) {
			size_t last = SIZE_MAX;

			for (j = i; j < obj->nsyms && obj->syms[j].addr == obj->syms[i].addr; j++) {
				obj->syms[j].zlast = 0;
				if (!obj->syms[j].size)
					last = j;
			}
			if (last != SIZE_MAX)
				obj->syms[last].zlast = 1;
		}
		qsort(obj->syms, obj->nsyms, sizeof(*obj->syms), cmp_entry);
	}
	/* The search keys; without them (no memory) searches use syms. */
	sym_keys_fini(&obj->sym_keys);
	keys = malloc((obj->nsyms ? obj->nsyms : 1) * sizeof(*keys));
	if (!keys)
		return;
	for (size_t i = 0; i < obj->nsyms; i++)
		keys[i] = obj->syms[i].addr;
	sym_keys_init(&obj->sym_keys, keys, obj->nsyms);
}

static bool is_code_symbol(unsigned type)
{
	return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

int sym_symtab_load(struct hwt_sym_obj *obj, struct sym_elf *e, bool allow_dyn)
{
	struct sym_sec *symsec = NULL, *strsec;
	const char *strtab;
	uint64_t nsym, entsize, strsize;
	const char *file = NULL;
	enum { NOTHING, SYMBOL_SEEN, FILE_AFTER_SYMBOL } state = NOTHING;
	unsigned src = HWT_SYM_SRC_SYMTAB;

	if (e->big_endian != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
		return 0; /* foreign byte order: no symbols rather than garbage */
	for (size_t i = 0; i < e->nsecs; i++) {
		if (e->secs[i].type == SHT_SYMTAB && e->secs[i].size)
			symsec = &e->secs[i];
	}
	if (!symsec && allow_dyn) {
		for (size_t i = 0; i < e->nsecs; i++) {
			if (e->secs[i].type == SHT_DYNSYM && e->secs[i].size)
				symsec = &e->secs[i];
		}
		src = HWT_SYM_SRC_DYNSYM;
	}
	if (!symsec || symsec->compressed)
		return 0;
	if (symsec->link >= e->nsecs)
		return -HWT_EFORMAT;
	strsec = &e->secs[symsec->link];
	if (strsec->type != SHT_STRTAB || strsec->compressed || strsec->size == 0)
		return -HWT_EFORMAT;
	entsize = e->is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
	nsym = symsec->size / entsize;
	strtab = (const char *)e->data + strsec->offset;
	strsize = strsec->size;
	if (strtab[strsize - 1] != '\0') {
		/* Make every name end inside the table. */
		char *copy = malloc(strsize + 1);

		if (!copy)
			return -ENOMEM;
		memcpy(copy, strtab, strsize);
		copy[strsize] = '\0';
		free(obj->strtab_copy);
		obj->strtab_copy = copy;
		strtab = copy;
	}
	obj->syms = calloc(nsym ? nsym : 1, sizeof(*obj->syms));
	if (!obj->syms)
		return -ENOMEM;
	obj->nsyms = 0;
	for (uint64_t i = 1; i < nsym; i++) {
		const uint8_t *p = e->data + symsec->offset + i * entsize;
		uint64_t value, size;
		uint32_t name;
		uint16_t shndx;
		uint8_t info, other;
		struct sym_entry *s;

		if (e->is64) {
			Elf64_Sym sym;

			memcpy(&sym, p, sizeof(sym));
			value = sym.st_value;
			size = sym.st_size;
			name = sym.st_name;
			shndx = sym.st_shndx;
			info = sym.st_info;
			other = sym.st_other;
		} else {
			Elf32_Sym sym;

			memcpy(&sym, p, sizeof(sym));
			value = sym.st_value;
			size = sym.st_size;
			name = sym.st_name;
			shndx = sym.st_shndx;
			info = sym.st_info;
			other = sym.st_other;
		}
		if (ELF64_ST_TYPE(info) == STT_FILE) {
			file = name < strsize ? strtab + name : NULL;
			if (state == SYMBOL_SEEN)
				state = FILE_AFTER_SYMBOL;
			continue;
		}
		if (state == NOTHING)
			state = SYMBOL_SEEN;
		if (!is_code_symbol(ELF64_ST_TYPE(info)) || shndx == SHN_UNDEF ||
		    shndx >= SHN_LORESERVE || name == 0 || name >= strsize)
			continue;
		/* annobin's hidden local zero-size markers are not functions */
		if (size == 0 && ELF64_ST_BIND(info) == STB_LOCAL &&
		    ELF64_ST_TYPE(info) == STT_NOTYPE && ELF64_ST_VISIBILITY(other) == STV_HIDDEN)
			continue;
		/* a NOTYPE symbol only counts in code (executable sections) */
		if (ELF64_ST_TYPE(info) == STT_NOTYPE &&
		    (shndx >= e->nsecs || !(e->secs[shndx].flags & SHF_EXECINSTR)))
			continue;
		s = &obj->syms[obj->nsyms++];
		s->addr = value;
		s->size = size;
		s->index = (uint32_t)i;
		s->name = strtab + name;
		s->shndx = shndx;
		s->type = ELF64_ST_TYPE(info);
		s->local = ELF64_ST_BIND(info) == STB_LOCAL;
		s->weak = ELF64_ST_BIND(info) == STB_WEAK;
		/* binutils' rule for the file of a symbol-only answer */
		if (file && (s->local || state != FILE_AFTER_SYMBOL))
			s->srcfile = file;
	}
	sym_symtab_sort(obj);
	obj->sym_source = obj->nsyms ? src : 0;
	return obj->nsyms ? (int)src : 0;
}

long sym_symtab_find(const struct hwt_sym_obj *obj, uint64_t addr, bool nearest)
{
	size_t lo = 0, hi = obj->nsyms;
	long i;

	/* last entry with entry.addr <= addr */
	if (obj->sym_keys.n == obj->nsyms) {
		lo = sym_keys_upper(&obj->sym_keys, addr);
	} else {
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (obj->syms[mid].addr <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (lo == 0)
		return -1;
	i = (long)lo - 1;
	/* Among aliases at the same address the sort put the preferred one
	 * first. (Compared on the keys: the entries are much larger.) */
	if (obj->sym_keys.n == obj->nsyms) {
		while (i > 0 && obj->sym_keys.k[i - 1] == obj->sym_keys.k[i])
			i--;
	} else {
		while (i > 0 && obj->syms[i - 1].addr == obj->syms[i].addr)
			i--;
	}
	if (nearest)
		return i;
	{
		const struct sym_entry *s = &obj->syms[i];
		size_t next = (size_t)i + 1;

		if (s->size)
			return addr - s->addr < s->size ? i : -1;
		/* No size (asm labels, kallsyms): up to the next symbol. */
		while (next < obj->nsyms && obj->syms[next].addr == s->addr)
			next++;
		if (next < obj->nsyms || obj->kind != HWT_SYM_OBJ_ELF)
			return i;
		return addr == s->addr ? i : -1;
	}
}

/* ------------------------------------------------------------------------ */
/* PLT stubs: perf names each stub after the function it jumps to
 * ("clock_gettime@plt"), from the PLT relocations; without these names an
 * address in a stub would fall to the preceding symbol (often _init, which
 * has no size). */

static const struct sym_sec *find_sec(const struct sym_elf *e, const char *name, uint32_t type,
				      size_t *index)
{
	for (size_t i = 0; i < e->nsecs; i++) {
		const struct sym_sec *s = &e->secs[i];

		if (s->name && !strcmp(s->name, name) && (!type || s->type == type) &&
		    s->type != SHT_NOBITS && !s->compressed) {
			if (index)
				*index = i;
			return s;
		}
	}
	return NULL;
}

static bool sec_in_file(const struct sym_elf *e, const struct sym_sec *s)
{
	return s->offset <= e->size && s->size <= e->size - s->offset;
}

int sym_symtab_add_plt(struct hwt_sym_obj *obj, const struct sym_elf *e)
{
	const struct sym_sec *rela, *dynsym, *dynstr, *plt;
	size_t plt_index = 0, n, names_len = 0, pos = 0;
	uint64_t base, entsize;
	struct sym_entry *syms;
	char *names;

	if (!e->is64 || e->machine != EM_X86_64 ||
	    e->big_endian != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
		return 0;
	rela = find_sec(e, ".rela.plt", SHT_RELA, NULL);
	if (!rela || !sec_in_file(e, rela) || rela->link >= e->nsecs)
		return 0;
	dynsym = &e->secs[rela->link];
	if (dynsym->type != SHT_DYNSYM || !sec_in_file(e, dynsym) || dynsym->link >= e->nsecs)
		return 0;
	dynstr = &e->secs[dynsym->link];
	if (dynstr->type != SHT_STRTAB || !sec_in_file(e, dynstr) || !dynstr->size)
		return 0;
	/* With IBT, the stubs that are called are in .plt.sec, one per
	 * relocation; otherwise in .plt after its 16-byte header. */
	plt = find_sec(e, ".plt.sec", 0, &plt_index);
	base = plt ? plt->addr : 0;
	if (!plt) {
		plt = find_sec(e, ".plt", 0, &plt_index);
		if (!plt)
			return 0;
		base = plt->addr + 16;
	}
	entsize = plt->entsize ? plt->entsize : 16;
	if (entsize < 8 || entsize > 64 || base > plt->addr + plt->size)
		return 0;
	n = (size_t)(rela->size / sizeof(Elf64_Rela));
	if (n > (plt->addr + plt->size - base) / entsize)
		n = (size_t)((plt->addr + plt->size - base) / entsize);
	if (!n)
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			Elf64_Rela r;
			Elf64_Sym sym;
			uint64_t si;
			const char *name;
			size_t len;

			memcpy(&r, e->data + rela->offset + i * sizeof(r), sizeof(r));
			si = ELF64_R_SYM(r.r_info);
			if (!si || si >= dynsym->size / sizeof(sym))
				continue;
			memcpy(&sym, e->data + dynsym->offset + si * sizeof(sym), sizeof(sym));
			if (!sym.st_name || sym.st_name >= dynstr->size)
				continue;
			name = (const char *)e->data + dynstr->offset + sym.st_name;
			len = strnlen(name, dynstr->size - sym.st_name);
			if (len == dynstr->size - sym.st_name)
				continue; /* not terminated inside the table */
			if (pass == 0) {
				names_len += len + sizeof("@plt");
				continue;
			}
			memcpy(names + pos, name, len);
			memcpy(names + pos + len, "@plt", sizeof("@plt"));
			syms[obj->nsyms] = (struct sym_entry){
			    .addr = base + i * entsize,
			    .size = entsize,
			    .name = names + pos,
			    .shndx = (uint32_t)plt_index,
			    .index = UINT32_MAX,
			    .type = STT_FUNC,
			    .plt = 1,
			};
			obj->nsyms++;
			pos += len + sizeof("@plt");
		}
		if (pass == 0) {
			if (!names_len)
				return 0;
			names = malloc(names_len);
			syms = realloc(obj->syms, (obj->nsyms + n) * sizeof(*syms));
			if (!names || !syms) {
				free(names);
				if (syms)
					obj->syms = syms;
				return -ENOMEM;
			}
			obj->syms = syms;
		}
	}
	free(obj->plt_names);
	obj->plt_names = names;
	sym_symtab_sort(obj);
	return 0;
}
