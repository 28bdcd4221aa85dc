/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/sym_int.h - the symbolize module's internal structures, shared by
 * its source files and never by other modules: ELF images (elf.c), symbol
 * tables (symtab.c, textsyms.c), separate debug files (debugfile.c), the lazy
 * DWARF index (dwarf.c) and the object cache (cache.c).
 */
#ifndef HWT_SYMBOLIZE_SYM_INT_H
#define HWT_SYMBOLIZE_SYM_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "symbolize/symbolize.h"

/* One section of an ELF image. Data is read from the mapping, or from a
 * buffer made on first use: decompressed (SHF_COMPRESSED zlib/zstd,
 * .zdebug) and, in relocatable objects (ET_REL: kernel modules, .o files),
 * with the relocations of its .rela/.rel section applied. */
struct sym_sec {
	const char *name; /* ".zdebug_x" is presented as ".debug_x" */
	uint64_t addr, size, offset, flags;
	uint32_t type, link, info;
	uint64_t entsize;
	uint64_t align;	   /* sh_addralign */
	bool compressed;   /* needs decompression before use */
	bool zdebug;	   /* old GNU .zdebug format */
	uint8_t *inflated; /* decompressed and/or relocated bytes (owned) */
	uint64_t inflated_size;
	uint32_t relsec; /* ET_REL: index of its SHT_RELA/SHT_REL section, 0 none */
	uint64_t place;	 /* ET_REL: where binutils places it (its address
			    when looking in the DWARF); else addr */
	int inflate_err; /* sticky error of a failed decompression */
};

/* Sorted 64-bit keys (addresses) searched by lookups. Random lookups are
 * bound by memory latency, not by instructions: a plain binary search
 * misses the cache at each of its deep levels, one after the other. So a
 * search first reads a bucket table over the key range (one load: the
 * first key of each of about n/4 equal address slices), then counts the few
 * keys of its slice. Without buckets (too few keys) a sparse top level
 * holding every SYM_KEYS_BLOCK-th key is searched, then one block of keys
 * (one cache line: keys live in 64-byte aligned memory). */
#define SYM_KEYS_BLOCK 8 /* one 64-byte cache line of keys */

struct sym_keys {
	uint64_t *k;   /* n keys */
	uint64_t *top; /* k[0], k[BLOCK], k[2 * BLOCK], ... */
	size_t n, ntop;
	uint32_t *bucket; /* bucket[b]: keys below base + (b << shift); nbucket + 1 */
	size_t nbucket, bucket_cap;
	uint64_t base;
	unsigned shift;
	bool borrowed; /* memory of an arena: not freed by fini */
};

/* Copies n sorted keys (keys may be NULL when n is 0) and builds the top
 * level; frees keys in every case. Returns 0 or -ENOMEM (ks is empty). */
int sym_keys_init(struct sym_keys *ks, uint64_t *keys, size_t n);
/* Or in two steps, without the copy: allocate room for n keys (ks->n = n),
 * write ks->k[0..n), then seal (builds the top level). */
int sym_keys_alloc(struct sym_keys *ks, size_t n);
void sym_keys_seal(struct sym_keys *ks);
void sym_keys_fini(struct sym_keys *ks);

/* Number of keys <= v in a sorted array. Branch-free (a conditional move),
 * so that random lookups pay no mispredicted branches. */
static inline size_t sym_upper_bound(const uint64_t *keys, size_t n, uint64_t v)
{
	const uint64_t *base = keys;

	if (n == 0)
		return 0;
	while (n > 1) {
		size_t half = n / 2;

		base = base[half] <= v ? base + half : base;
		n -= half;
	}
	return (size_t)(base - keys) + (*base <= v);
}

/* Number of keys <= v: the index just past the last key at or below v.
 * vals (may be NULL) is an array of vsize-byte values parallel to the
 * keys: once the slice is known its values are prefetched, so that their
 * cache miss overlaps the one on the keys instead of following it. */
static inline size_t sym_keys_upper_pf(const struct sym_keys *ks, uint64_t v, const void *vals,
				       size_t vsize)
{
	size_t lo, hi, cnt = 0;

	if (ks->nbucket) {
		uint64_t b;

		if (v < ks->base)
			return 0;
		b = (v - ks->base) >> ks->shift;
		if (b >= ks->nbucket)
			return ks->n;
		lo = ks->bucket[b];
		hi = ks->bucket[b + 1];
		if (vals && lo > 0)
			__builtin_prefetch((const char *)vals + (lo - 1) * vsize);
		if (hi - lo > 2 * SYM_KEYS_BLOCK)
			return lo + sym_upper_bound(ks->k + lo, hi - lo, v);
		for (size_t i = lo; i < hi; i++)
			cnt += ks->k[i] <= v;
		return lo + cnt;
	}
	{
		size_t j = sym_upper_bound(ks->top, ks->ntop, v);

		if (j == 0)
			return 0;
		lo = (j - 1) * SYM_KEYS_BLOCK; /* k[lo] == top[j - 1] <= v */
	}
	if (vals) {
		const char *p = (const char *)vals + lo * vsize;

		__builtin_prefetch(p);
		if (vsize * SYM_KEYS_BLOCK > 64)
			__builtin_prefetch(p + 64);
	}
	hi = lo + SYM_KEYS_BLOCK < ks->n ? lo + SYM_KEYS_BLOCK : ks->n;
	cnt = 1;
	for (size_t i = lo + 1; i < hi; i++)
		cnt += ks->k[i] <= v;
	return lo + cnt;
}

static inline size_t sym_keys_upper(const struct sym_keys *ks, uint64_t v)
{
	return sym_keys_upper_pf(ks, v, NULL, 0);
}

/* A PT_LOAD segment. */
struct sym_seg {
	uint64_t vaddr, memsz, offset, filesz;
};

/* An ELF image: a file mapped read-only, or a private copy of memory. */
struct sym_elf {
	uint8_t *data;
	size_t size;
	bool mapped; /* data is an mmap (else malloc'd) */
	bool is64, big_endian;
	unsigned type; /* e_type */
	unsigned machine;
	struct sym_sec *secs;
	size_t nsecs;
	struct sym_seg *segs;
	size_t nsegs;
	uint8_t build_id[64];
	size_t build_id_len;
	const char *debuglink; /* .gnu_debuglink name (in data), or NULL */
	uint32_t debuglink_crc;
	bool has_debug_info; /* has a .debug_info section with contents */
	bool has_symtab;     /* has a non-empty SHT_SYMTAB */
	/* Address -> first SHF_ALLOC section (in index order) containing it:
	 * sorted starts of disjoint pieces, each with its section or -1. */
	uint64_t *amap_start;
	long *amap_sec;
	size_t namap;
	uint64_t max_section; /* decompression limit */
};

/* A symbol of a sorted table (ELF symtab/dynsym, kallsyms, perf map). */
struct sym_entry {
	uint64_t addr, size;
	const char *name;		 /* raw; in the image or the text table */
	_Atomic(const char *) demangled; /* lazily; == name when not mangled */
	const char *srcfile;		 /* STT_FILE in force (binutils' rule) */
	const char *module;		 /* kallsyms module, or NULL */
	uint32_t shndx;
	uint32_t index; /* position in the ELF table */
	uint8_t type;
	uint8_t local;
	uint8_t weak;
	uint8_t zlast; /* zero-sized, the last of its address in table order */
	uint8_t plt;   /* synthesized NAME@plt entry (not a symbol of the file) */
};

struct sym_dwarf; /* dwarf.c */

struct hwt_sym_obj {
	struct hwt_sym_cache *cache;
	struct hwt_sym_obj *next;
	enum hwt_sym_obj_kind kind;
	char *path, *name, *debug_path;
	/* identity without build-id */
	uint64_t dev, ino, fsize;
	int64_t mtime_ns;
	uint8_t build_id[64];
	size_t build_id_len;

	struct sym_elf *elf;   /* the object itself */
	struct sym_elf *dbg;   /* separate debug file, or NULL */
	struct sym_elf *dwelf; /* the image whose DWARF we read (elf or dbg) */

	struct sym_entry *syms; /* sorted by address */
	size_t nsyms;
	struct sym_keys sym_keys; /* syms[i].addr, for searches */
	unsigned sym_source;	  /* HWT_SYM_SRC_SYMTAB, _DYNSYM, _KALLSYMS, _PERFMAP */
	char *text;		  /* kallsyms / perf map text that names point into */
	char *strtab_copy;	  /* a strtab that lacked its final NUL */
	char *plt_names;	  /* names of the synthesized NAME@plt entries */

	/* DWARF, built lazily under lock; published with release stores. */
	pthread_mutex_t lock;
	_Atomic int dwarf_state; /* 0 untried, 1 ready, -1 none or failed */
	struct sym_dwarf *dw;
	atomic_bool warned_dwarf;
};

struct hwt_sym_cache {
	struct hwt_sym_config cfg;
	char *debug_dir, *system_debug_dir;
	pthread_mutex_t lock;
	struct hwt_sym_obj *objs;
};

/* --- elf.c --- */
/* Maps path (or copies data when path is NULL) and reads headers, sections,
 * segments, build-id and debuglink. Returns 0 or a negative error. */
int sym_elf_open(const char *path, const void *data, size_t size, uint64_t max_section,
		 struct sym_elf **out);
void sym_elf_close(struct sym_elf *e);
/* Section by name, or NULL. */
struct sym_sec *sym_elf_section(struct sym_elf *e, const char *name);
/* The section's bytes, decompressed if needed (not thread-safe: callers hold
 * the object lock or are still constructing). Returns 0 or an error. */
int sym_elf_section_data(struct sym_elf *e, struct sym_sec *s, const uint8_t **data,
			 uint64_t *size);
/* Index of the SHF_ALLOC section containing addr, or -1. */
long sym_elf_alloc_section(const struct sym_elf *e, uint64_t addr);
/* The address to look up in e's DWARF for object address addr in section
 * sec (-1: none): addr itself, except in relocatable objects, whose
 * sections all start at 0 and whose DWARF is relocated against sections
 * placed one after the other (as binutils places them). */
uint64_t sym_elf_dwarf_addr(const struct sym_elf *e, long sec, uint64_t addr);
static inline bool sym_elf_has_alloc_sections(const struct sym_elf *e)
{
	return e->namap > 0;
}

/* --- symtab.c --- */
/* Loads the .symtab of e (else its .dynsym when allow_dyn) into obj's
 * sorted table. Returns the source bit used, 0 when none, or an error. */
int sym_symtab_load(struct hwt_sym_obj *obj, struct sym_elf *e, bool allow_dyn);
/* Sorts obj->syms by address and drops exact duplicates. */
void sym_symtab_sort(struct hwt_sym_obj *obj);
/* Adds NAME@plt entries for the PLT stubs of e (x86-64; as perf names
 * them), from .rela.plt and .plt.sec or .plt. Returns 0 or -ENOMEM. */
int sym_symtab_add_plt(struct hwt_sym_obj *obj, const struct sym_elf *e);
/* Index of the symbol containing addr, or -1. nearest: binutils' rule (the
 * last symbol at or below addr in the same section, whatever its size). */
long sym_symtab_find(const struct hwt_sym_obj *obj, uint64_t addr, bool nearest);
/* Name of a symbol, demangled unless raw. */
const char *sym_entry_name(struct sym_entry *s, bool raw);
/* A lazily demangled name stored in *slot (shared by all threads). */
const char *sym_demangle_cached(_Atomic(const char *) *slot, const char *raw);

/* --- textsyms.c --- */
int sym_kallsyms_load(struct hwt_sym_obj *obj, const char *path);
int sym_perfmap_load(struct hwt_sym_obj *obj, const char *path);

/* --- debugfile.c --- */
/* Finds and opens the separate debug file of obj (by build-id, then by
 * .gnu_debuglink). Returns 0 with obj->dbg set, -ENOENT when none found. */
int sym_debugfile_find(struct hwt_sym_obj *obj);
uint32_t sym_crc32(uint32_t crc, const void *buf, size_t len);

/* --- dwarf.c --- */
/* Where the last lookup of a batch landed: a lookup of a higher address in
 * the same unit range walks forward from there instead of searching (the
 * merge-walk of sorted batches). Zero it before the first use. */
struct sym_dwarf_cursor {
	const void *unit;  /* struct dw_cuidx, NULL: no position */
	uint64_t addr, hi; /* last address; no other unit range starts below hi */
	size_t row, seg;   /* keys <= addr in the unit's rows and segments */
};

/* Frames from DWARF for addr. Returns frames written (>= 1), 0 when DWARF has
 * nothing for addr, or a negative error. *depth gets the frames available.
 * cur may be NULL. */
int sym_dwarf_lookup(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags,
		     struct hwt_sym_frame *frames, unsigned max, unsigned *depth,
		     struct sym_dwarf_cursor *cur);
void sym_dwarf_free(struct sym_dwarf *dw);
/* Units listed and indexed by each reader so far. */
void sym_dwarf_stats(const struct hwt_sym_obj *obj, size_t *units, size_t *native,
		     size_t *libdwarf);

/* Logs through the cache's logger. */
void sym_log(const struct hwt_sym_obj *obj, enum hwt_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* HWT_SYMBOLIZE_SYM_INT_H */
