/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/elf.c - ELF images for the symbolizer: maps a file read-only (or
 * copies a memory image such as the vDSO), reads the section and program
 * headers through libelf, finds the build-id note and .gnu_debuglink, and
 * hands out section contents, decompressing SHF_COMPRESSED (zlib, zstd) and
 * old .zdebug sections on first use, and applying the relocations of the
 * debug sections of relocatable objects (kernel modules, .o files), whose
 * DWARF is otherwise all zeros where it names code and strings. Every
 * offset and size from the file is checked against the image before it is
 * used.
 */
#include "symbolize/sym_int.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

static bool in_image(const struct sym_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

void sym_elf_close(struct sym_elf *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nsecs; i++)
		free(e->secs[i].inflated);
	free(e->secs);
	free(e->segs);
	free(e->amap_start);
	free(e->amap_sec);
	if (e->mapped)
		munmap(e->data, e->size);
	else
		free(e->data);
	free(e);
}

static void read_notes(struct sym_elf *e, const uint8_t *p, uint64_t len, unsigned align)
{
	uint64_t pos = 0;

	/* Elf32_Nhdr and Elf64_Nhdr are both three 32-bit words. */
	while (len - pos >= 12) {
		uint32_t namesz, descsz, type;
		uint64_t name_off, desc_off, next;

		memcpy(&namesz, p + pos, 4);
		memcpy(&descsz, p + pos + 4, 4);
		memcpy(&type, p + pos + 8, 4);
		name_off = pos + 12;
		desc_off = name_off + (((uint64_t)namesz + align - 1) & ~(uint64_t)(align - 1));
		next = desc_off + (((uint64_t)descsz + align - 1) & ~(uint64_t)(align - 1));
		if (desc_off > len || descsz > len - desc_off)
			return;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_off, "GNU", 4) &&
		    descsz > 0 && descsz <= sizeof(e->build_id) && e->build_id_len == 0) {
			memcpy(e->build_id, p + desc_off, descsz);
			e->build_id_len = descsz;
		}
		if (next <= pos)
			return;
		pos = next;
	}
}

static int read_sections(struct sym_elf *e, Elf *elf)
{
	size_t shnum, shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrnum(elf, &shnum) != 0)
		return -HWT_EFORMAT;
	if (shnum == 0)
		return 0;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -HWT_EFORMAT;
	e->secs = calloc(shnum, sizeof(*e->secs));
	if (!e->secs)
		return -ENOMEM;
	e->nsecs = shnum;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		size_t idx = elf_ndxscn(scn);
		struct sym_sec *s;
		GElf_Shdr sh;
		const char *name;

		if (idx >= shnum || !gelf_getshdr(scn, &sh))
			return -HWT_EFORMAT;
		s = &e->secs[idx];
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		/* Names must outlive libelf's handle: keep only those that
		 * point into the image itself. */
		if (!name || name < (const char *)e->data ||
		    name >= (const char *)e->data + e->size)
			name = "";
		s->name = name;
		s->addr = sh.sh_addr;
		s->size = sh.sh_size;
		s->offset = sh.sh_offset;
		s->flags = sh.sh_flags;
		s->type = sh.sh_type;
		s->link = sh.sh_link;
		s->info = sh.sh_info;
		s->entsize = sh.sh_entsize;
		s->align = sh.sh_addralign;
		if (s->type != SHT_NOBITS && s->type != SHT_NULL &&
		    !in_image(e, s->offset, s->size)) {
			/* A truncated file: keep the section but never read it. */
			s->type = SHT_NOBITS;
		}
		if (s->flags & SHF_COMPRESSED)
			s->compressed = true;
		if (!strncmp(s->name, ".zdebug_", 8)) {
			/* Present it under its .debug_ name; decompress on use. */
			static const char *const known[] = {
			    ".debug_info",	  ".debug_abbrev",   ".debug_line",
			    ".debug_str",	  ".debug_ranges",   ".debug_aranges",
			    ".debug_line_str",	  ".debug_rnglists", ".debug_addr",
			    ".debug_str_offsets", ".debug_loc",	     ".debug_loclists",
			    ".debug_types",	  ".debug_frame",
			};
			for (size_t k = 0; k < HWT_ARRAY_SIZE(known); k++) {
				if (!strcmp(s->name + 2, known[k] + 1)) {
					s->name = known[k];
					s->zdebug = true;
					s->compressed = true;
				}
			}
		}
		if (s->type == SHT_NOTE && s->type != SHT_NOBITS)
			read_notes(e, e->data + s->offset, s->size, 4);
		if (!strcmp(s->name, ".gnu_debuglink") && s->type != SHT_NOBITS && s->size >= 8) {
			const char *n = (const char *)e->data + s->offset;
			size_t len = strnlen(n, s->size);
			uint64_t crc_off = (len + 4) & ~(uint64_t)3;

			if (len > 0 && len < s->size && crc_off + 4 <= s->size) {
				e->debuglink = n;
				memcpy(&e->debuglink_crc, e->data + s->offset + crc_off, 4);
			}
		}
		if (!strcmp(s->name, ".debug_info") && s->type != SHT_NOBITS && s->size > 0)
			e->has_debug_info = true;
		if (s->type == SHT_SYMTAB && s->size > 0)
			e->has_symtab = true;
	}
	return 0;
}

static int read_segments(struct sym_elf *e, Elf *elf)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return 0; /* ET_REL and debug files may have none */
	if (phnum == 0)
		return 0;
	e->segs = calloc(phnum, sizeof(*e->segs));
	if (!e->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -HWT_EFORMAT;
		if (ph.p_type == PT_NOTE && e->build_id_len == 0 &&
		    in_image(e, ph.p_offset, ph.p_filesz))
			read_notes(e, e->data + ph.p_offset, ph.p_filesz, ph.p_align == 8 ? 8 : 4);
		if (ph.p_type != PT_LOAD)
			continue;
		e->segs[e->nsegs].vaddr = ph.p_vaddr;
		e->segs[e->nsegs].memsz = ph.p_memsz;
		e->segs[e->nsegs].offset = ph.p_offset;
		e->segs[e->nsegs].filesz = ph.p_filesz;
		e->nsegs++;
	}
	return 0;
}

/* ET_REL: links each section to its relocation section, and places the
 * SHF_ALLOC sections one after the other as binutils' place_sections()
 * does (in section order, each aligned), so that DWARF addresses of
 * different sections, all 0-based, do not overlap. */
static void place_sections(struct sym_elf *e)
{
	uint64_t last = 0;
	size_t count = 0;

	for (size_t i = 0; i < e->nsecs; i++)
		e->secs[i].place = e->secs[i].addr;
	if (e->type != ET_REL)
		return;
	for (size_t i = 0; i < e->nsecs; i++) {
		const struct sym_sec *s = &e->secs[i];

		if ((s->type == SHT_RELA || s->type == SHT_REL) && s->info > 0 &&
		    s->info < e->nsecs && !(e->secs[s->info].flags & SHF_ALLOC))
			e->secs[s->info].relsec = (uint32_t)i;
		if (s->addr == 0 &&
		    ((s->flags & SHF_ALLOC) || (s->name && !strcmp(s->name, ".debug_info"))))
			count++;
	}
	if (count <= 1)
		return; /* binutils moves nothing then */
	for (size_t i = 0; i < e->nsecs; i++) {
		struct sym_sec *s = &e->secs[i];
		uint64_t align = s->align > 1 ? s->align : 1;

		if (s->addr != 0 || !(s->flags & SHF_ALLOC))
			continue;
		if (align & (align - 1))
			align = 1;
		last = (last + align - 1) & ~(align - 1);
		s->place = last;
		last += s->size;
	}
}

uint64_t sym_elf_dwarf_addr(const struct sym_elf *e, long sec, uint64_t addr)
{
	if (e->type != ET_REL || sec < 0 || (size_t)sec >= e->nsecs)
		return addr;
	return e->secs[sec].place + (addr - e->secs[sec].addr);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Builds e->amap, so that an address finds its section by binary search
 * instead of a scan of every section per lookup. Sections may overlap
 * (.tbss, and every section of an ET_REL object starts at 0): a piece
 * belongs to the first section in index order that covers it, which is
 * what the scan found. */
static int build_amap(struct sym_elf *e)
{
	uint64_t *pts;
	long *owner;
	size_t n = 0, m = 0;
	int ret = 0;

	pts = malloc((2 * e->nsecs + 1) * sizeof(*pts));
	if (!pts)
		return -ENOMEM;
	for (size_t i = 0; i < e->nsecs; i++) {
		const struct sym_sec *s = &e->secs[i];

		if (!(s->flags & SHF_ALLOC) || !s->size)
			continue;
		pts[n++] = s->addr;
		pts[n++] = s->size > UINT64_MAX - s->addr ? UINT64_MAX : s->addr + s->size;
	}
	if (n == 0) {
		free(pts);
		return 0;
	}
	qsort(pts, n, sizeof(*pts), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		if (m == 0 || pts[m - 1] != pts[i])
			pts[m++] = pts[i];
	}
	owner = malloc(m * sizeof(*owner));
	if (!owner) {
		free(pts);
		return -ENOMEM;
	}
	for (size_t k = 0; k < m; k++)
		owner[k] = -1;
	for (size_t i = 0; i < e->nsecs; i++) {
		const struct sym_sec *s = &e->secs[i];
		uint64_t end;
		size_t lo = 0, hi = m;

		if (!(s->flags & SHF_ALLOC) || !s->size)
			continue;
		end = s->size > UINT64_MAX - s->addr ? UINT64_MAX : s->addr + s->size;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (pts[mid] < s->addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k + 1 < m && pts[k] < end; k++) {
			if (owner[k] < 0)
				owner[k] = (long)i;
		}
	}
	e->amap_start = malloc(m * sizeof(*e->amap_start));
	e->amap_sec = malloc(m * sizeof(*e->amap_sec));
	if (!e->amap_start || !e->amap_sec) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < m; k++) {
		if (e->namap && e->amap_sec[e->namap - 1] == owner[k])
			continue;
		e->amap_start[e->namap] = pts[k];
		e->amap_sec[e->namap] = owner[k];
		e->namap++;
	}
out:
	free(owner);
	free(pts);
	return ret;
}

int sym_elf_open(const char *path, const void *data, size_t size, uint64_t max_section,
		 struct sym_elf **out)
{
	struct sym_elf *e;
	Elf *elf = NULL;
	GElf_Ehdr eh;
	int err;

	*out = NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->max_section = max_section;
	if (path) {
		struct stat st;
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			err = -errno;
			goto error;
		}
		if (fstat(fd, &st) < 0) {
			err = -errno;
			close(fd);
			goto error;
		}
		if (!S_ISREG(st.st_mode)) {
			close(fd);
			err = S_ISDIR(st.st_mode) ? -EISDIR : -HWT_EFORMAT;
			goto error;
		}
		e->size = (size_t)st.st_size;
		if (e->size < EI_NIDENT) {
			close(fd);
			err = -HWT_EFORMAT;
			goto error;
		}
		e->data = mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (e->data == MAP_FAILED) {
			e->data = NULL;
			err = -errno;
			goto error;
		}
		e->mapped = true;
	} else {
		if (size < EI_NIDENT) {
			err = -HWT_EFORMAT;
			goto error;
		}
		e->data = malloc(size);
		if (!e->data) {
			err = -ENOMEM;
			goto error;
		}
		memcpy(e->data, data, size);
		e->size = size;
	}
	if (memcmp(e->data, ELFMAG, SELFMAG) != 0) {
		err = -HWT_EFORMAT;
		goto error;
	}
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)e->data, e->size);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = -HWT_EFORMAT;
		goto error;
	}
	e->is64 = gelf_getclass(elf) == ELFCLASS64;
	e->big_endian = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	e->type = eh.e_type;
	e->machine = eh.e_machine;
	err = read_sections(e, elf);
	if (err < 0)
		goto error;
	err = read_segments(e, elf);
	if (err < 0)
		goto error;
	err = build_amap(e);
	if (err < 0)
		goto error;
	place_sections(e);
	elf_end(elf);
	*out = e;
	return 0;
error:
	if (elf)
		elf_end(elf);
	sym_elf_close(e);
	return err;
}

struct sym_sec *sym_elf_section(struct sym_elf *e, const char *name)
{
	for (size_t i = 0; e && i < e->nsecs; i++) {
		if (e->secs[i].type != SHT_NOBITS && e->secs[i].name &&
		    !strcmp(e->secs[i].name, name))
			return &e->secs[i];
	}
	return NULL;
}

static int inflate_zlib(const uint8_t *in, uint64_t in_len, uint8_t *out, uint64_t out_len)
{
	z_stream zs;
	int ret;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK)
		return -HWT_ELIB;
	/* Feed in pieces that fit zlib's uInt counters. */
	uint64_t in_pos = 0, out_pos = 0;
	do {
		uint64_t in_chunk = in_len - in_pos, out_chunk = out_len - out_pos;

		if (in_chunk > UINT32_MAX)
			in_chunk = UINT32_MAX;
		if (out_chunk > UINT32_MAX)
			out_chunk = UINT32_MAX;
		zs.next_in = (Bytef *)(in + in_pos);
		zs.avail_in = (uInt)in_chunk;
		zs.next_out = out + out_pos;
		zs.avail_out = (uInt)out_chunk;
		ret = inflate(&zs, Z_NO_FLUSH);
		in_pos += in_chunk - zs.avail_in;
		out_pos += out_chunk - zs.avail_out;
		if (ret != Z_OK && ret != Z_STREAM_END)
			break;
		if (ret == Z_OK && zs.avail_in == in_chunk && zs.avail_out == out_chunk)
			break; /* no progress */
	} while (ret != Z_STREAM_END && out_pos < out_len && in_pos < in_len);
	inflateEnd(&zs);
	if (ret != Z_STREAM_END || out_pos != out_len)
		return -HWT_EFORMAT;
	return 0;
}

static int inflate_section(struct sym_elf *e, struct sym_sec *s)
{
	const uint8_t *p = e->data + s->offset;
	uint64_t len = s->size, hdr, out_size;
	uint32_t ctype;
	int err;

	if (s->zdebug) {
		/* "ZLIB" + 8-byte big-endian uncompressed size + zlib stream */
		if (len < 12 || memcmp(p, "ZLIB", 4) != 0)
			return -HWT_EFORMAT;
		out_size = 0;
		for (int i = 0; i < 8; i++)
			out_size = (out_size << 8) | p[4 + i];
		ctype = ELFCOMPRESS_ZLIB;
		hdr = 12;
	} else if (e->is64) {
		Elf64_Chdr ch;

		if (len < sizeof(ch))
			return -HWT_EFORMAT;
		memcpy(&ch, p, sizeof(ch));
		ctype = ch.ch_type;
		out_size = ch.ch_size;
		hdr = sizeof(ch);
	} else {
		Elf32_Chdr ch;

		if (len < sizeof(ch))
			return -HWT_EFORMAT;
		memcpy(&ch, p, sizeof(ch));
		ctype = ch.ch_type;
		out_size = ch.ch_size;
		hdr = sizeof(ch);
	}
	if (e->big_endian != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
		return -HWT_ENOTSUP;
	if (out_size > e->max_section || out_size > SIZE_MAX - 1)
		return -HWT_ETOOBIG;
	/* zlib cannot expand more than about 1032:1; a larger claim is a lie
	 * that would only make us allocate. */
	if (ctype == ELFCOMPRESS_ZLIB && out_size / 1100 > len)
		return -HWT_EFORMAT;
	s->inflated = malloc(out_size ? out_size : 1);
	if (!s->inflated)
		return -ENOMEM;
	if (ctype == ELFCOMPRESS_ZLIB) {
		err = inflate_zlib(p + hdr, len - hdr, s->inflated, out_size);
	} else if (ctype == ELFCOMPRESS_ZSTD) {
		size_t r = ZSTD_decompress(s->inflated, out_size, p + hdr, len - hdr);

		err = (ZSTD_isError(r) || r != out_size) ? -HWT_EFORMAT : 0;
	} else {
		err = -HWT_ENOTSUP;
	}
	if (err < 0) {
		free(s->inflated);
		s->inflated = NULL;
		return err;
	}
	s->inflated_size = out_size;
	return 0;
}

static uint64_t get_word(const struct sym_elf *e, const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	if (e->big_endian) {
		for (unsigned i = 0; i < n; i++)
			v = (v << 8) | p[i];
	} else {
		for (unsigned i = n; i-- > 0;)
			v = (v << 8) | p[i];
	}
	return v;
}

static void put_word(const struct sym_elf *e, uint8_t *p, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned shift = e->big_endian ? 8 * (n - 1 - i) : 8 * i;

		p[i] = (uint8_t)(v >> shift);
	}
}

/* Width in bytes of an absolute relocation that debug sections use, or 0
 * for a type we leave alone (PC-relative, TLS offsets in location
 * expressions, unknown machines). */
static unsigned reloc_width(unsigned machine, unsigned type)
{
	switch (machine) {
	case EM_X86_64:
		return type == R_X86_64_64			     ? 8
		       : type == R_X86_64_32 || type == R_X86_64_32S ? 4
								     : 0;
	case EM_386:
		return type == R_386_32 ? 4 : 0;
	case EM_AARCH64:
		return type == R_AARCH64_ABS64 ? 8 : type == R_AARCH64_ABS32 ? 4 : 0;
	default:
		return 0;
	}
}

/* Applies s's relocations to buf (s's bytes): S + A, where S is the
 * symbol's value plus the placed address of its section. */
static int relocate(struct sym_elf *e, struct sym_sec *s, uint8_t *buf, uint64_t size)
{
	const struct sym_sec *rs = &e->secs[s->relsec], *ss;
	bool rela = rs->type == SHT_RELA;
	uint64_t esize = e->is64 ? (rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel))
				 : (rela ? sizeof(Elf32_Rela) : sizeof(Elf32_Rel));
	uint64_t symsize = e->is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
	const uint8_t *rp = e->data + rs->offset, *sp;

	if (rs->type == SHT_NOBITS || rs->link == 0 || rs->link >= e->nsecs)
		return 0;
	ss = &e->secs[rs->link];
	if (ss->type == SHT_NOBITS || (ss->type != SHT_SYMTAB && ss->type != SHT_DYNSYM))
		return 0;
	sp = e->data + ss->offset;
	for (uint64_t off = 0; off + esize <= rs->size; off += esize) {
		uint64_t r_offset, info, symidx, type, value;
		int64_t addend = 0;
		unsigned width, shndx;

		if (e->is64) {
			r_offset = get_word(e, rp + off, 8);
			info = get_word(e, rp + off + 8, 8);
			symidx = info >> 32;
			type = info & 0xffffffffu;
			if (rela)
				addend = (int64_t)get_word(e, rp + off + 16, 8);
		} else {
			r_offset = get_word(e, rp + off, 4);
			info = get_word(e, rp + off + 4, 4);
			symidx = info >> 8;
			type = info & 0xff;
			if (rela)
				addend = (int32_t)get_word(e, rp + off + 8, 4);
		}
		width = reloc_width(e->machine, (unsigned)type);
		if (width == 0 || r_offset > size || width > size - r_offset ||
		    symidx >= ss->size / symsize)
			continue;
		if (e->is64) {
			shndx = (unsigned)get_word(e, sp + symidx * symsize + 6, 2);
			value = get_word(e, sp + symidx * symsize + 8, 8);
		} else {
			value = get_word(e, sp + symidx * symsize + 4, 4);
			shndx = (unsigned)get_word(e, sp + symidx * symsize + 14, 2);
		}
		if (shndx != SHN_UNDEF && shndx < SHN_LORESERVE && shndx < e->nsecs)
			value += e->secs[shndx].place;
		if (!rela) /* REL: the addend is in place */
			addend = width == 8 ? (int64_t)get_word(e, buf + r_offset, 8)
					    : (int32_t)get_word(e, buf + r_offset, 4);
		put_word(e, buf + r_offset, width, value + (uint64_t)addend);
	}
	return 0;
}

/* Decompresses and/or relocates s into s->inflated. */
static int prepare_section(struct sym_elf *e, struct sym_sec *s)
{
	int err;

	if (s->compressed) {
		err = inflate_section(e, s);
		if (err < 0)
			return err;
	} else {
		if (s->size > SIZE_MAX - 1)
			return -HWT_ETOOBIG;
		s->inflated = malloc(s->size ? s->size : 1);
		if (!s->inflated)
			return -ENOMEM;
		memcpy(s->inflated, e->data + s->offset, s->size);
		s->inflated_size = s->size;
	}
	if (s->relsec)
		return relocate(e, s, s->inflated, s->inflated_size);
	return 0;
}

int sym_elf_section_data(struct sym_elf *e, struct sym_sec *s, const uint8_t **data, uint64_t *size)
{
	if (!s || s->type == SHT_NOBITS || s->type == SHT_NULL)
		return -HWT_ENODEBUG;
	if (!s->compressed && !s->relsec) {
		if (s->size > e->max_section)
			return -HWT_ETOOBIG;
		*data = e->data + s->offset;
		*size = s->size;
		return 0;
	}
	if (!s->compressed && s->size > e->max_section)
		return -HWT_ETOOBIG;
	if (!s->inflated && !s->inflate_err) {
		int err = prepare_section(e, s);

		if (err < 0) {
			free(s->inflated);
			s->inflated = NULL;
			s->inflate_err = err;
		}
	}
	if (s->inflate_err)
		return s->inflate_err;
	*data = s->inflated;
	*size = s->inflated_size;
	return 0;
}

long sym_elf_alloc_section(const struct sym_elf *e, uint64_t addr)
{
	size_t i = sym_upper_bound(e->amap_start, e->namap, addr);

	return i == 0 ? -1 : e->amap_sec[i - 1];
}
