/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/symbolize.h - addresses to names: symbol + offset, the chain of
 * inlined frames, and file:line:column, for ELF objects (executables, PIE,
 * shared libraries, vmlinux, kernel modules, memory images such as the vDSO),
 * the kernel through /proc/kallsyms, and JIT code through perf-PID.map files.
 *
 * This header is the whole contract of the symbolize module.
 *
 * Model. A cache (struct hwt_sym_cache) owns every object it has opened
 * (struct hwt_sym_obj) and every string it hands out; they stay valid until
 * hwt_sym_cache_free(). An object is loaded once per cache, keyed by its
 * build-id (else path + size + mtime). Symbol tables are sorted at load;
 * DWARF is indexed lazily, one compilation unit at a time, the first time an
 * address inside it is asked for (by hwtrace's own DWARF reader; libdwarf
 * for the units it declines); after that, lookups only search prebuilt
 * arrays. Memory therefore grows with what was looked up, not with the size
 * of the debug information.
 *
 * Symbol sources, best first: DWARF (versions 2-5, from the object or from a
 * separate debug file found by build-id or .gnu_debuglink), .symtab, .dynsym.
 * Compressed debug sections (SHF_COMPRESSED with zlib or zstd, and .zdebug)
 * are decompressed when a section is first needed.
 *
 * Threads. hwt_sym_obj_open*() and every lookup may be called from any number
 * of threads at once on the same cache. A lookup in an already indexed unit
 * takes no lock and allocates nothing; the first lookup in a unit builds its
 * index under the object's lock.
 *
 * Addresses. An "object address" is what binutils addr2line takes: the
 * virtual address the object was linked at (for a PIE or a shared library,
 * usually small numbers from 0; for vmlinux and kallsyms, the kernel's
 * addresses; for a relocatable object such as a kernel module, whose
 * sections all start at 0, an offset into the first section, in section
 * order, that holds it and has an answer, as binutils does). A "runtime address" is where a process
 * saw it; convert with hwt_sym_obj_map() using the mapping's start and file offset (the
 * PERF_RECORD_MMAP2 fields), which handles PIE/ASLR bias and mappings that do
 * not start at file offset 0.
 *
 * Usage:
 *
 *   struct hwt_sym_config cfg;
 *   hwt_sym_config_init(&cfg);
 *   cfg.logger = *logger;
 *   err = hwt_sym_cache_alloc(&cfg, &cache);
 *   err = hwt_sym_obj_open(cache, "/usr/bin/app", build_id, build_id_len, &obj);
 *   err = hwt_sym_obj_map(obj, map_start, map_pgoff, ip, &addr);
 *   struct hwt_sym_frame frames[16];
 *   struct hwt_sym_info info;
 *   n = hwt_sym_lookup(obj, addr, 0, &info, frames, 16);   // frames[0] innermost
 *   ...
 *   hwt_sym_cache_free(cache);
 */
#ifndef HWT_SYMBOLIZE_SYMBOLIZE_H
#define HWT_SYMBOLIZE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"

struct hwt_sym_cache;
struct hwt_sym_obj;

/* ------------------------------------------------------------------------ */
/* Cache                                                                     */

struct hwt_sym_config {
	size_t size;		  /* sizeof(struct hwt_sym_config) */
	struct hwt_logger logger; /* diagnostics; warnings such as "no symbols"
				     are sent once per object */
	/* A directory searched first for separate debug files, both in the
	 * build-id layout (DIR/.build-id/xx/rest.debug) and by .gnu_debuglink
	 * name (DIR/NAME, DIR/<object's dir>/NAME). NULL for none. Copied. */
	const char *debug_dir;
	/* The system debug directory; default "/usr/lib/debug". NULL or "" turns
	 * the system search off (tests use this). Copied. */
	const char *system_debug_dir;
	/* Do not look for separate debug files at all. */
	bool no_debug_files;
	/* Largest section (after decompression) that is loaded; a bigger one
	 * is treated as malformed. Default 4 GiB; fuzzers lower it. */
	uint64_t max_section_size;
	/* Which DWARF reader indexes units: enum hwt_sym_dwarf_reader. The
	 * default (AUTO) is right for every use; the others exist to compare
	 * the two readers. */
	unsigned dwarf_reader;
};

/* DWARF readers. Our own reader reads .debug_info/.debug_line directly and
 * is several times faster; libdwarf reads what it declines (rare forms and
 * line opcodes), chosen per compilation unit. */
enum hwt_sym_dwarf_reader {
	HWT_SYM_DWARF_AUTO = 0,	    /* our reader, libdwarf for units it declines */
	HWT_SYM_DWARF_NATIVE = 1,   /* our reader only: declined units give no DWARF */
	HWT_SYM_DWARF_LIBDWARF = 2, /* libdwarf only */
};

/* Zeroes cfg, sets its size and the defaults. */
HWT_API void hwt_sym_config_init(struct hwt_sym_config *cfg);

/* Allocates an empty cache. cfg may be NULL for the defaults; it is copied.
 * Returns 0, -HWT_EINVAL (cfg refused by hwt_opts_copy), -ENOMEM. */
HWT_API int hwt_sym_cache_alloc(const struct hwt_sym_config *cfg, struct hwt_sym_cache **out);

/* Frees the cache, every object it opened and every string it returned.
 * Accepts NULL. No lookup may be running. */
HWT_API void hwt_sym_cache_free(struct hwt_sym_cache *cache);

/* ------------------------------------------------------------------------ */
/* Objects                                                                   */

/* Opens (or finds in the cache) the ELF file at path. When build_id is given
 * (from the recording's sideband) and the file's build-id differs, the file
 * is not the one that ran: -HWT_EVERSION is returned and nothing is opened.
 * *out is owned by the cache. Separate debug files are looked up here.
 * Returns 0, -ENOENT/-EACCES/... (cannot open), -HWT_EFORMAT (not ELF or
 * malformed headers), -HWT_EVERSION (build-id mismatch), -ENOMEM. */
HWT_API int hwt_sym_obj_open(struct hwt_sym_cache *cache, const char *path, const uint8_t *build_id,
			     size_t build_id_len, struct hwt_sym_obj **out);

/* Opens an ELF image held in memory (a copy of the vDSO from a recording).
 * name labels it in results ("[vdso]"); data is copied. Same errors as
 * hwt_sym_obj_open() except file access ones. */
HWT_API int hwt_sym_obj_open_image(struct hwt_sym_cache *cache, const char *name, const void *data,
				   size_t size, struct hwt_sym_obj **out);

/* Opens a kernel symbol table in /proc/kallsyms format ("ADDR TYPE NAME
 * [MODULE]"), e.g. "/proc/kallsyms" or a copy taken at record time. Object
 * addresses are kernel virtual addresses; module symbols carry their module
 * (struct hwt_sym_info.module). All-zero addresses (kptr_restrict) give
 * -EACCES. Returns 0, -ENOENT/-EACCES, -HWT_EFORMAT (no valid line), -ENOMEM. */
HWT_API int hwt_sym_obj_open_kallsyms(struct hwt_sym_cache *cache, const char *path,
				      struct hwt_sym_obj **out);

/* Opens a JIT symbol map (/tmp/perf-PID.map: "START SIZE NAME" in hex).
 * Object addresses are the runtime addresses in the map. Malformed lines are
 * skipped and counted in one warning. Returns as hwt_sym_obj_open_kallsyms(). */
HWT_API int hwt_sym_obj_open_perfmap(struct hwt_sym_cache *cache, const char *path,
				     struct hwt_sym_obj **out);

enum hwt_sym_obj_kind {
	HWT_SYM_OBJ_ELF = 1,	  /* a file or a memory image */
	HWT_SYM_OBJ_KALLSYMS = 2, /* kernel symbols from a kallsyms file */
	HWT_SYM_OBJ_PERFMAP = 3,  /* JIT symbols from a perf map */
};

/* Which symbol sources an object has (bits). */
enum hwt_sym_source {
	HWT_SYM_SRC_DWARF = 1u << 0,
	HWT_SYM_SRC_SYMTAB = 1u << 1,
	HWT_SYM_SRC_DYNSYM = 1u << 2,
	HWT_SYM_SRC_KALLSYMS = 1u << 3,
	HWT_SYM_SRC_PERFMAP = 1u << 4,
};

struct hwt_sym_obj_info {
	enum hwt_sym_obj_kind kind;
	const char *path;	/* as opened (name for images) */
	const char *name;	/* basename of path, for "module+offset" */
	const char *debug_path; /* separate debug file used, or NULL */
	uint8_t build_id[64];
	size_t build_id_len; /* 0: none */
	unsigned sources;    /* enum hwt_sym_source bits */
	unsigned elf_type;   /* ET_EXEC, ET_DYN, ET_REL; 0 for text tables */
	unsigned addr_bits;  /* 64 or 32 (ELFCLASS); 64 for text tables */
	size_t nsymbols;     /* entries in the symbol table used */
	/* DWARF units listed, and indexed so far by each reader (0 until the
	 * first lookup that needs DWARF). */
	size_t dwarf_units, dwarf_units_native, dwarf_units_libdwarf;
};

/* Describes obj. Strings are owned by the cache. Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_sym_obj_info(const struct hwt_sym_obj *obj, struct hwt_sym_obj_info *info);

/* Converts a runtime address seen in a mapping of obj to an object address.
 * map_start and map_pgoff are the mapping's start address and file offset
 * (PERF_RECORD_MMAP2 addr and pgoff). The file offset is located in the
 * PT_LOAD segment that contains it, so a mapping that starts at any segment
 * works. For kallsyms and perf maps the address is returned unchanged.
 * Returns 0, or -HWT_ENOSYM when the offset lies in no loadable segment. */
HWT_API int hwt_sym_obj_map(const struct hwt_sym_obj *obj, uint64_t map_start, uint64_t map_pgoff,
			    uint64_t runtime, uint64_t *addr);

/* The address and size of the ELF section called name (for addr2line -j).
 * Returns 0, -HWT_ENOSYM (no such section), -HWT_EINVAL. */
HWT_API int hwt_sym_obj_section(const struct hwt_sym_obj *obj, const char *name, uint64_t *addr,
				uint64_t *size);

/* Which file a section is read from: the object itself, or its separate
 * debug file (found by build-id or .gnu_debuglink when the object was
 * opened). */
enum hwt_sym_section_file {
	HWT_SYM_SECTION_OBJECT = 0,
	HWT_SYM_SECTION_DEBUG = 1,
};

/* The bytes of the section called name (for the unwinder: .eh_frame,
 * .eh_frame_hdr, .debug_frame), decompressed when stored compressed. *data
 * stays valid for the lifetime of the cache; *addr is the section's
 * address (object address). Thread-safe.
 * Returns 0, -HWT_ENOSYM (no such section, or no debug file),
 * -HWT_ENODEBUG (the section holds no bytes in that file: SHT_NOBITS),
 * -HWT_ETOOBIG, -HWT_ECOMPRESS/-HWT_EFORMAT (cannot be decompressed),
 * -HWT_EINVAL. */
HWT_API int hwt_sym_obj_section_data(struct hwt_sym_obj *obj, const char *name,
				     enum hwt_sym_section_file file, const uint8_t **data,
				     uint64_t *size, uint64_t *addr);

/* The file offset of an object address (for uprobes). Returns 0 or
 * -HWT_ENOSYM when addr lies in no PT_LOAD segment (or obj is not ELF). */
HWT_API int hwt_sym_obj_file_offset(const struct hwt_sym_obj *obj, uint64_t addr, uint64_t *offset);

/* ------------------------------------------------------------------------ */
/* Lookups                                                                   */

/* Lookup flags. */
enum hwt_sym_lookup_flags {
	HWT_SYM_RAW = 1u << 0,	     /* names as stored (mangled), no demangling */
	HWT_SYM_NO_INLINE = 1u << 1, /* only the outermost function, no inline chain */
	HWT_SYM_NO_LINES = 1u << 2,  /* skip DWARF entirely: symbol tables only */
	/* addr2line compatibility: with no DWARF function, take the nearest
	 * preceding symbol even past its size (binutils' rule). */
	HWT_SYM_NEAREST = 1u << 3,
	/* Only the frames are wanted: when DWARF names the function, the ELF
	 * symbol is not searched (info->symbol, sym_addr and sym_size stay
	 * 0/NULL). The frames are the same as without the flag. */
	HWT_SYM_FRAMES_ONLY = 1u << 4,
};

/* One frame. frames[0] is the innermost (the code at the address); each
 * next frame is the function it was inlined into, with the location of the
 * call; the last one is the real (out-of-line) function. Strings are owned by
 * the cache; NULL when unknown. */
struct hwt_sym_frame {
	const char *func;	/* function name (demangled unless HWT_SYM_RAW) */
	const char *file;	/* source file, as the compiler recorded it */
	uint32_t line;		/* 0 when unknown */
	uint32_t column;	/* 0 when unknown */
	uint32_t discriminator; /* DWARF discriminator of frames[0]'s row, else 0 */
};

/* What a lookup found besides the frames. */
struct hwt_sym_info {
	uint64_t addr;	    /* the object address looked up */
	const char *module; /* object basename, or the kernel module name */
	const char *symbol; /* containing symbol (demangled unless RAW), NULL */
	uint64_t sym_addr;  /* its start (object address); offset = addr - sym_addr */
	uint64_t sym_size;  /* its size, 0 when unknown */
	unsigned source;    /* enum hwt_sym_source that gave the frames */
	unsigned nframes;   /* frames written */
	unsigned depth;	    /* frames available (> nframes when truncated) */
};

/* Symbolizes one object address. Writes at most max_frames frames (0 is
 * allowed: only info; info->depth then says how many exist). Returns the
 * number of frames written (>= 1 when max_frames > 0) when anything is known, -HWT_ENOSYM when
 * nothing is (info->module and info->addr are still set, so "module+0xADDR" can be printed),
 * -HWT_EINVAL for NULL arguments. Errors inside the object's DWARF are
 * reported once through the logger and the lookup falls back to the symbol
 * tables. Thread-safe; allocates nothing once the unit is indexed. */
HWT_API int hwt_sym_lookup(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags,
			   struct hwt_sym_info *info, struct hwt_sym_frame *frames,
			   unsigned max_frames);

/* Result of one address in a batch. */
struct hwt_sym_batch_entry {
	struct hwt_sym_info info;
	int status; /* as hwt_sym_lookup()'s return value */
};

/* Symbolizes n addresses. Entry i's frames go to frames[i * frames_per_addr]
 * (frames may be NULL when frames_per_addr is 0). The answers are those of
 * hwt_sym_lookup(). Sorted input is handled in one pass: an address above
 * the previous one in the same unit walks the unit's tables forward from
 * the previous answer, and repeated addresses copy it. Returns the number
 * of addresses that found something, or -HWT_EINVAL. */
HWT_API int hwt_sym_lookup_batch(struct hwt_sym_obj *obj, const uint64_t *addrs, size_t n,
				 unsigned flags, struct hwt_sym_batch_entry *out,
				 struct hwt_sym_frame *frames, unsigned frames_per_addr);

/* The function containing an address, from the symbol tables (for the
 * decoder: millions of lookups, mostly in the same function as last time). */
struct hwt_sym_func {
	const char *name; /* demangled unless HWT_SYM_RAW; owned by the cache */
	uint64_t addr;	  /* start (object address) */
	uint64_t size;	  /* 0 when unknown */
};

/* Caller-owned memory of the last answer; zero it before first use (one per
 * thread). */
struct hwt_sym_hint {
	const struct hwt_sym_obj *obj;
	unsigned flags;
	uint64_t lo, hi; /* [lo, hi): addresses answered by func */
	struct hwt_sym_func func;
};

/* Finds the function containing addr. When addr falls inside the hint's
 * range for the same object and flags, answers from the hint without any
 * search. hint may be NULL. Returns 0, -HWT_ENOSYM, -HWT_EINVAL. Thread-safe
 * (each thread its own hint); allocates nothing. */
HWT_API int hwt_sym_func_at(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags,
			    struct hwt_sym_hint *hint, struct hwt_sym_func *out);

/* A symbol definition found by name (for probes). */
struct hwt_sym_def {
	const char *name; /* as stored (mangled); owned by the cache */
	uint64_t addr;	  /* object address */
	uint64_t size;
	uint64_t file_offset; /* for uprobes; 0 when not in a PT_LOAD segment */
	bool has_offset;      /* file_offset is valid */
};

/* Finds symbols named name: first exact matches of the stored (mangled)
 * name, else matches of the demangled name, either the whole of it or the
 * name without its parameter list ("ns::f" matches "ns::f(int)"), else
 * the versioned names of a shared library's symbol ("pthread_create"
 * matches "pthread_create@@GLIBC_2.34", the default version, before
 * "pthread_create@GLIBC_2.2.5"). Writes at
 * most max definitions, in address order. Returns the number of matches
 * (which may exceed max), 0 when none, -HWT_EINVAL. */
HWT_API int hwt_sym_find(struct hwt_sym_obj *obj, const char *name, struct hwt_sym_def *defs,
			 unsigned max);

/* Demangles a C++ or Rust symbol with libiberty (parameters included).
 * Returns a malloc'd string the caller frees, or NULL when name is not a
 * mangled name. */
HWT_API char *hwt_sym_demangle(const char *name);

/* ------------------------------------------------------------------------ */
/* Build-ids                                                                 */

/* Reads the GNU build-id (NT_GNU_BUILD_ID note) of the ELF file at path into
 * id (cap bytes; 20 for SHA-1 ids, at most 64). Only the ELF header, the
 * program or section headers and the notes are read, not the whole file.
 * Returns the id's length, 0 when the file has no build-id, or -errno
 * (cannot open/read), -HWT_EFORMAT (not ELF, or malformed headers),
 * -HWT_ETOOBIG (the id is longer than cap). */
HWT_API int hwt_sym_build_id_read(const char *path, uint8_t *id, size_t cap);

/* Finds the GNU build-id in a buffer of ELF notes (4-byte aligned, as in
 * /sys/kernel/notes or a PT_NOTE segment). Returns as hwt_sym_build_id_read(),
 * without the file errors. */
HWT_API int hwt_sym_build_id_notes(const void *notes, size_t len, uint8_t *id, size_t cap);

/* ------------------------------------------------------------------------ */
/* Address spaces: which object was mapped where, in which process, when     */

/* The process map of a recording, rebuilt from its sideband (MMAP/MMAP2,
 * COMM, FORK, EXIT), answers: in process pid at time t, which object held
 * address ip, and at which object address? It serves sample scripts and
 * reports (symbolizing IPs and call chains), the decoder (which code ran)
 * and the recorder (which objects samples hit, for their build-ids).
 *
 * The events are plain structs, not perf records, so any producer can feed
 * them; they may arrive out of time order (records of different CPUs' ring
 * buffers interleave loosely). Rules, as the kernel behaves:
 *   - a mapping is valid from its time; a later mapping that overlaps it
 *     hides it where they overlap (munmap is not recorded: a later mapping
 *     is the only end a mapping has);
 *   - an exec (COMM with exec set) starts an empty address space;
 *   - a process created by FORK (pid != ppid) sees its parent's mappings as
 *     they were at the fork, until it maps over them or execs; a thread
 *     (pid == ppid) shares its process's mappings;
 *   - pid UINT32_MAX (-1) maps kernel objects; kernel addresses (the upper
 *     half, top bit set) are looked up among those for every process, and
 *     symbolized through cfg->kallsyms;
 *   - mappings synthesized for processes that existed before recording
 *     carry time 0 and are valid from the start.
 * A lookup at a time before every mapping that contains ip (time stamps
 * of different CPUs can disagree slightly) falls back to the earliest such
 * mapping of the same address space rather than failing.
 *
 * Usage:
 *
 *   struct hwt_sym_aspace_config cfg;
 *   hwt_sym_aspace_config_init(&cfg);
 *   cfg.cache = cache;                    // lookups then open objects
 *   err = hwt_sym_aspace_alloc(&cfg, &as);
 *   ... for each sideband record: hwt_sym_aspace_mmap/comm/fork/exit() ...
 *   err = hwt_sym_aspace_lookup(as, pid, time, ip, &loc);
 *   if (err == 0 && loc.obj) hwt_sym_func_at(loc.obj, loc.addr, 0, &hint, &fn);
 *   hwt_sym_aspace_free(as);
 *
 * Threads: an address space is used by one thread at a time. Feeding and
 * opening objects allocate; a lookup of an object already opened (or with
 * no cache) allocates nothing. */
struct hwt_sym_aspace;

struct hwt_sym_aspace_config {
	size_t size;		  /* sizeof(struct hwt_sym_aspace_config) */
	struct hwt_logger logger; /* an object that cannot be opened is
				     reported once, as a warning */
	/* Lookups open the objects they hit in this cache (borrowed; it must
	 * outlive the address space). NULL: lookups give mappings only. */
	struct hwt_sym_cache *cache;
	/* Kernel symbols: a kallsyms file (e.g. "/proc/kallsyms"), opened on
	 * the first kernel lookup. NULL: kernel addresses are not symbolized.
	 * Copied. */
	const char *kallsyms;
};

/* Zeroes cfg and sets its size. */
HWT_API void hwt_sym_aspace_config_init(struct hwt_sym_aspace_config *cfg);

/* Allocates an empty address-space map. cfg may be NULL; it is copied.
 * Returns 0, -HWT_EINVAL (cfg refused by hwt_opts_copy), -ENOMEM. */
HWT_API int hwt_sym_aspace_alloc(const struct hwt_sym_aspace_config *cfg,
				 struct hwt_sym_aspace **out);

/* Frees everything (objects opened stay in the cache). Accepts NULL. */
HWT_API void hwt_sym_aspace_free(struct hwt_sym_aspace *as);

/* A mapping (PERF_RECORD_MMAP2 or MMAP fields). Strings and bytes are
 * copied. */
struct hwt_sym_mmap_event {
	uint32_t pid, tid; /* pid UINT32_MAX: a kernel mapping */
	uint64_t time;	   /* perf clock ns; 0 for synthesized ones */
	uint64_t start, len, pgoff;
	uint32_t prot;		 /* PROT_* bits; a mapping without PROT_EXEC
				    is ignored (MMAP records: pass PROT_EXEC
				    unless misc has PERF_RECORD_MISC_MMAP_DATA) */
	const char *filename;	 /* "/usr/bin/x", "[vdso]", "//anon", ... */
	const uint8_t *build_id; /* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID,
				    else NULL */
	size_t build_id_len;
};

/* A command name (PERF_RECORD_COMM); exec is PERF_RECORD_MISC_COMM_EXEC. */
struct hwt_sym_comm_event {
	uint32_t pid, tid;
	uint64_t time;
	const char *comm; /* copied */
	bool exec;
};

/* A task created or ended (PERF_RECORD_FORK / PERF_RECORD_EXIT). */
struct hwt_sym_task_event {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* Feed the address space. Each returns 0, -HWT_EINVAL (NULL arguments, an
 * empty or wrapping mapping, a NULL string), or -ENOMEM. */
HWT_API int hwt_sym_aspace_mmap(struct hwt_sym_aspace *as, const struct hwt_sym_mmap_event *ev);
HWT_API int hwt_sym_aspace_comm(struct hwt_sym_aspace *as, const struct hwt_sym_comm_event *ev);
HWT_API int hwt_sym_aspace_fork(struct hwt_sym_aspace *as, const struct hwt_sym_task_event *ev);
HWT_API int hwt_sym_aspace_exit(struct hwt_sym_aspace *as, const struct hwt_sym_task_event *ev);

/* The expected build-id of the object at path (a recording's
 * "buildid.<path>" metadata). An object whose file has another build-id is
 * not symbolized (it changed since the recording). Copied. Returns 0,
 * -HWT_EINVAL, -ENOMEM. */
HWT_API int hwt_sym_aspace_build_id(struct hwt_sym_aspace *as, const char *path, const uint8_t *id,
				    size_t len);

/* An in-memory image for mappings named name (the recording's copy of
 * "[vdso]"). data is copied. Returns 0, -HWT_EINVAL, -ENOMEM. */
HWT_API int hwt_sym_aspace_image(struct hwt_sym_aspace *as, const char *name, const void *data,
				 size_t size);

/* Where an address was. */
struct hwt_sym_loc {
	const char *path; /* the mapped object's name ("[vdso]", "//anon",
			     "[kernel.kallsyms]"); NULL when unmapped.
			     Owned by the address space. */
	uint64_t map_start, map_end, map_pgoff;
	uint64_t map_time;
	uint32_t object; /* index of the object, see hwt_sym_aspace_object() */
	bool kernel;	 /* a kernel address */
	/* The opened object (in cfg->cache), or NULL: no cache, or it could
	 * not be opened (missing, changed build-id, not ELF, anonymous). */
	struct hwt_sym_obj *obj;
	/* With obj: the object address for hwt_sym_lookup()/func_at(). Without:
	 * the file offset (ip - map_start + map_pgoff); for the kernel, ip. */
	uint64_t addr;
};

/* Looks up ip in process pid at time. Returns 0 (loc filled), -HWT_ENOSYM
 * (no mapping holds ip: loc->path is NULL, loc->addr is ip), -HWT_EINVAL. */
HWT_API int hwt_sym_aspace_lookup(struct hwt_sym_aspace *as, uint32_t pid, uint64_t time,
				  uint64_t ip, struct hwt_sym_loc *loc);

/* The command name of thread tid at time (its last COMM before, or the one
 * inherited from its creator at FORK), or NULL when none is known. Owned by
 * the address space. */
HWT_API const char *hwt_sym_aspace_comm_of(struct hwt_sym_aspace *as, uint32_t tid, uint64_t time);

/* An object (distinct mapped path) seen so far. */
struct hwt_sym_aspace_object {
	const char *path;
	const uint8_t *build_id; /* from the sideband or hwt_sym_aspace_build_id() */
	size_t build_id_len;	 /* 0: none known */
	bool kernel;		 /* the kernel or a module */
	int open_status;	 /* 0 not tried or opened, else the open error */
};

HWT_API size_t hwt_sym_aspace_nobjects(const struct hwt_sym_aspace *as);
/* Fills *out for object i (< nobjects). Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_sym_aspace_object(const struct hwt_sym_aspace *as, uint32_t i,
				  struct hwt_sym_aspace_object *out);

#endif /* HWT_SYMBOLIZE_SYMBOLIZE_H */
