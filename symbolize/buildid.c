/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/buildid.c - the GNU build-id of an ELF file or of a buffer of
 * notes, read with a few preads (ELF header, program headers, notes; section
 * headers only when no PT_NOTE segment has one), so that a recorder can
 * stamp every object its samples hit without mapping or indexing the files.
 * Every size read from the file is checked against the file before use.
 */
#include "symbolize/symbolize.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOTES_MAX (1u << 20) /* larger note areas are not believable */

struct elf_in {
	int fd;
	uint64_t size;
	bool is64, be;
};

static uint16_t rd16(const struct elf_in *e, const uint8_t *p)
{
	return e->be ? (uint16_t)(p[0] << 8 | p[1]) : hwt_le16(p);
}

static uint32_t rd32(const struct elf_in *e, const uint8_t *p)
{
	if (e->be)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return hwt_le32(p);
}

static uint64_t rd64(const struct elf_in *e, const uint8_t *p)
{
	if (e->be)
		return (uint64_t)rd32(e, p) << 32 | rd32(e, p + 4);
	return hwt_le64(p);
}

static int notes_find(bool be, const uint8_t *p, size_t len, uint8_t *id, size_t cap)
{
	struct elf_in e = {.be = be};
	size_t pos = 0;

	/* Elf32_Nhdr and Elf64_Nhdr are both three 32-bit words; GNU notes are
	 * 4-byte aligned in both classes. */
	while (len - pos >= 12) {
		uint32_t namesz = rd32(&e, p + pos), descsz = rd32(&e, p + pos + 4);
		uint32_t type = rd32(&e, p + pos + 8);
		uint64_t name_off = pos + 12;
		uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~3ull);
		uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~3ull);

		if (desc_off > len || descsz > len - desc_off)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_off, "GNU", 4) &&
		    descsz > 0) {
			if (descsz > cap)
				return -HWT_ETOOBIG;
			memcpy(id, p + desc_off, descsz);
			return (int)descsz;
		}
		if (next > len)
			return 0;
		pos = (size_t)next;
	}
	return 0;
}

int hwt_sym_build_id_notes(const void *notes, size_t len, uint8_t *id, size_t cap)
{
	if ((!notes && len) || !id)
		return -HWT_EINVAL;
	return notes_find(false, notes, len, id, cap);
}

static int read_at(const struct elf_in *e, uint64_t off, void *buf, size_t len)
{
	size_t got = 0;

	if (off > e->size || len > e->size - off)
		return -HWT_EFORMAT;
	while (got < len) {
		ssize_t n = pread(e->fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -HWT_EFORMAT;
		got += (size_t)n;
	}
	return 0;
}

/* Reads the notes at [off, off + len) and looks for the build-id. */
static int notes_at(const struct elf_in *e, uint64_t off, uint64_t len, uint8_t *id, size_t cap)
{
	uint8_t *buf;
	int err;

	if (len < 12 || len > NOTES_MAX)
		return 0;
	buf = malloc((size_t)len);
	if (!buf)
		return -ENOMEM;
	err = read_at(e, off, buf, (size_t)len);
	if (err == 0)
		err = notes_find(e->be, buf, (size_t)len, id, cap);
	free(buf);
	return err;
}

/* Walks a header table (program or section headers) of n entries of entsz
 * bytes at off, calling notes_at() for the entries of type want. */
static int scan_table(const struct elf_in *e, uint64_t off, uint32_t n, uint32_t entsz,
		      uint32_t want, bool sections, uint8_t *id, size_t cap)
{
	uint8_t h[64];
	size_t need = e->is64 ? (sections ? 64 : 56) : (sections ? 40 : 32);

	if (!n)
		return 0;
	if (entsz < need || entsz > 4096)
		return -HWT_EFORMAT;
	if (off > e->size || (uint64_t)n * entsz > e->size - off)
		return -HWT_EFORMAT;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t noff, nlen;
		uint32_t type;
		int err = read_at(e, off + (uint64_t)i * entsz, h, need);

		if (err)
			return err;
		type = rd32(e, h + 4 * sections);
		if (type != want)
			continue;
		if (sections) {
			noff = e->is64 ? rd64(e, h + 24) : rd32(e, h + 16);
			nlen = e->is64 ? rd64(e, h + 32) : rd32(e, h + 20);
		} else {
			noff = e->is64 ? rd64(e, h + 8) : rd32(e, h + 4);
			nlen = e->is64 ? rd64(e, h + 32) : rd32(e, h + 16);
		}
		if (noff > e->size || nlen > e->size - noff)
			continue; /* a damaged entry: try the others */
		err = notes_at(e, noff, nlen, id, cap);
		if (err != 0)
			return err;
	}
	return 0;
}

int hwt_sym_build_id_read(const char *path, uint8_t *id, size_t cap)
{
	struct elf_in e = {.fd = -1};
	uint8_t h[64];
	struct stat st;
	int err;

	if (!path || !id)
		return -HWT_EINVAL;
	e.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e.fd < 0)
		return -errno;
	if (fstat(e.fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	err = -HWT_EFORMAT;
	if (!S_ISREG(st.st_mode))
		goto out;
	e.size = (uint64_t)st.st_size;
	if (e.size < 52 || read_at(&e, 0, h, e.size < 64 ? 52 : 64) != 0)
		goto out;
	if (memcmp(h, ELFMAG, SELFMAG) != 0 ||
	    (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64) ||
	    (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB))
		goto out;
	e.is64 = h[EI_CLASS] == ELFCLASS64;
	e.be = h[EI_DATA] == ELFDATA2MSB;
	if (e.is64 && e.size < 64)
		goto out;
	if (e.is64)
		err = scan_table(&e, rd64(&e, h + 32), rd16(&e, h + 56), rd16(&e, h + 54), PT_NOTE,
				 false, id, cap);
	else
		err = scan_table(&e, rd32(&e, h + 28), rd16(&e, h + 44), rd16(&e, h + 42), PT_NOTE,
				 false, id, cap);
	if (err != 0)
		goto out;
	/* No PT_NOTE with a build-id (relocatable objects, odd links): look at
	 * the note sections. */
	if (e.is64)
		err = scan_table(&e, rd64(&e, h + 40), rd16(&e, h + 60), rd16(&e, h + 58), SHT_NOTE,
				 true, id, cap);
	else
		err = scan_table(&e, rd32(&e, h + 32), rd16(&e, h + 48), rd16(&e, h + 46), SHT_NOTE,
				 true, id, cap);
out:
	close(e.fd);
	return err;
}
