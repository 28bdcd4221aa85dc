/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/kcore.c - the kernel's half of an Intel PT recording: whether
 * the kernel's code can be read (a trace of kernel code only decodes with
 * it), and where from: /proc/kcore (the running text, alternatives and
 * static keys applied, as `perf record --kcore` copies it), or a vmlinux
 * with its symbols (debuginfo packages, /boot); and the capture into the
 * recording: kallsyms, the module list, and a kcore-format copy of the
 * kernel's and the modules' text.
 */
#include "collector/rec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* A vmlinux for the running kernel where Debian's debug packages and
 * kernel builds put it, into out. */
static bool find_vmlinux(char *out, size_t len)
{
	const char *const dir[] = {"/usr/lib/debug/boot/vmlinux-", "/usr/lib/debug/lib/modules/",
				   "/lib/modules/", "/boot/vmlinux-"};
	const char *const tail[] = {"", "/vmlinux", "/build/vmlinux", ""};
	struct utsname u;

	if (uname(&u) < 0)
		return false;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(dir); i++) {
		snprintf(out, len, "%s%s%s", dir[i], u.release, tail[i]);
		if (access(out, R_OK) == 0)
			return true;
	}
	return false;
}

int hwt_coll_kernel_code(const char *proc_root, char *why, size_t len)
{
	char path[4096], v[4096];
	struct utsname u;
	int fd, e;

	snprintf(path, sizeof(path), "%s/kcore", proc_root ? proc_root : "/proc");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	e = errno;
	if (find_vmlinux(v, sizeof(v)))
		return 1;
	if (why && len)
		snprintf(why, len, "%s: %s, and no vmlinux for kernel %s", path,
			 e == ENOENT ? "not present" : strerror(e),
			 uname(&u) == 0 ? u.release : "?");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Capture                                                                   */

/* A whole small file (kallsyms, modules) into *out (malloc'd, NUL-terminated).
 * Returns its length or -errno. */
static int64_t slurp(const char *path, char **out)
{
	struct hwt_buf b;
	int err;

	*out = NULL;
	hwt_buf_init(&b);
	err = hwt_buf_read_file(&b, path);
	if (err == 0)
		err = hwt_buf_append(&b, "", 1);
	if (err < 0) {
		hwt_buf_fini(&b);
		return err;
	}
	*out = (char *)b.data;
	return (int64_t)b.len - 1;
}

struct krange {
	uint64_t start, end;
};

/* The kernel's text [_stext, _etext) from kallsyms, and each module's
 * core (address and size from /proc/modules). Returns how many ranges. */
static size_t text_ranges(const char *kallsyms, const char *modules, struct krange *r, size_t max)
{
	uint64_t stext = 0, etext = 0;
	size_t n = 0;

	for (const char *p = kallsyms; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		unsigned long long a;
		char type, name[64];

		if (sscanf(p, "%llx %c %63s", &a, &type, name) != 3)
			continue;
		if (!strcmp(name, "_stext"))
			stext = a;
		else if (!strcmp(name, "_etext"))
			etext = a;
	}
	if (stext && etext > stext && n < max)
		r[n++] = (struct krange){stext, etext};
	for (const char *p = modules; p && *p && n < max;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		unsigned long long size, addr;
		char name[64];

		/* "name size refcount deps state addr" */
		if (sscanf(p, "%63s %llu %*s %*s %*s %llx", name, &size, &addr) == 3 && addr &&
		    size)
			r[n++] = (struct krange){addr, addr + size};
	}
	return n;
}

/* The ELF64 core file's program headers. */
struct kseg {
	uint64_t vaddr, offset, filesz;
};

/* The PT_LOAD segments of an ELF64 file of type etype (4: a core file
 * such as kcore; 2: an executable such as vmlinux). */
static int read_phdrs(int fd, uint16_t etype, struct kseg *seg, size_t max, size_t *nseg)
{
	unsigned char eh[64];
	uint64_t phoff;
	uint16_t phentsize, phnum;

	*nseg = 0;
	if (pread(fd, eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return -HWT_EFORMAT;
	if (memcmp(eh, "\177ELF", 4) || eh[4] != 2 /* ELFCLASS64 */ || eh[5] != 1 ||
	    hwt_le16(eh + 16) != etype)
		return -HWT_EFORMAT;
	phoff = hwt_le64(eh + 32);
	phentsize = hwt_le16(eh + 54);
	phnum = hwt_le16(eh + 56);
	if (phentsize < 56)
		return -HWT_EFORMAT;
	for (uint16_t i = 0; i < phnum && *nseg < max; i++) {
		unsigned char ph[56];

		if (pread(fd, ph, sizeof(ph), (off_t)(phoff + (uint64_t)i * phentsize)) !=
		    (ssize_t)sizeof(ph))
			return -HWT_EFORMAT;
		if (hwt_le32(ph) != 1 /* PT_LOAD */)
			continue;
		seg[*nseg].offset = hwt_le64(ph + 8);
		seg[*nseg].vaddr = hwt_le64(ph + 16);
		seg[*nseg].filesz = hwt_le64(ph + 32);
		(*nseg)++;
	}
	return 0;
}

/* A kcore-format file (ELF64 ET_CORE, one PT_LOAD per range) holding the
 * bytes of the ranges that kcore has: what `perf record --kcore` keeps in
 * its kcore_dir. Returns 0 with *out (malloc'd) and *len, or -errno. */
static int copy_kcore(const char *path, uint16_t etype, uint64_t shift, const struct krange *r,
		      size_t nr, uint8_t **out, size_t *len)
{
	struct kseg seg[512];
	struct krange part[512];
	size_t nseg, np = 0, hdr, total;
	uint8_t *b;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	err = read_phdrs(fd, etype, seg, HWT_ARRAY_SIZE(seg), &nseg);
	if (err < 0) {
		close(fd);
		return err;
	}
	/* where the running kernel has them (KASLR) */
	for (size_t k = 0; k < nseg; k++)
		seg[k].vaddr += shift;
	/* the ranges' parts that some segment holds */
	for (size_t i = 0; i < nr; i++) {
		for (size_t k = 0; k < nseg && np < HWT_ARRAY_SIZE(part); k++) {
			uint64_t lo = r[i].start > seg[k].vaddr ? r[i].start : seg[k].vaddr;
			uint64_t hi = seg[k].vaddr + seg[k].filesz;

			if (r[i].end < hi)
				hi = r[i].end;
			if (lo < hi)
				part[np++] = (struct krange){lo, hi};
		}
	}
	hdr = 64 + 56 * np;
	total = hdr;
	for (size_t i = 0; i < np; i++)
		total += (size_t)(part[i].end - part[i].start);
	if (!np || total > (256u << 20)) {
		close(fd);
		return np ? -E2BIG : -ENOENT;
	}
	b = calloc(1, total);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	memcpy(b, "\177ELF", 4);
	b[4] = 2;		  /* ELFCLASS64 */
	b[5] = 1;		  /* little endian */
	b[6] = 1;		  /* EV_CURRENT */
	hwt_put_le16(b + 16, 4);  /* ET_CORE */
	hwt_put_le16(b + 18, 62); /* EM_X86_64 */
	hwt_put_le32(b + 20, 1);
	hwt_put_le64(b + 32, 64); /* e_phoff */
	hwt_put_le16(b + 52, 64);
	hwt_put_le16(b + 54, 56);
	hwt_put_le16(b + 56, (uint16_t)np);
	for (size_t i = 0, at = hdr; i < np && !err; i++) {
		uint8_t *ph = b + 64 + 56 * i;
		uint64_t size = part[i].end - part[i].start;

		hwt_put_le32(ph, 1);		      /* PT_LOAD */
		hwt_put_le32(ph + 4, 5);	      /* PF_R | PF_X */
		hwt_put_le64(ph + 8, at);	      /* p_offset */
		hwt_put_le64(ph + 16, part[i].start); /* p_vaddr */
		hwt_put_le64(ph + 32, size);	      /* p_filesz */
		hwt_put_le64(ph + 40, size);	      /* p_memsz */
		for (size_t k = 0; k < nseg; k++) {
			if (part[i].start >= seg[k].vaddr &&
			    part[i].start < seg[k].vaddr + seg[k].filesz) {
				uint64_t from = seg[k].offset + (part[i].start - seg[k].vaddr);

				for (uint64_t got = 0; got < size;) {
					ssize_t n = pread(fd, b + at + got, (size_t)(size - got),
							  (off_t)(from + got));

					if (n <= 0) {
						err = n < 0 ? -errno : -HWT_EFORMAT;
						break;
					}
					got += (uint64_t)n;
				}
				break;
			}
		}
		at += (size_t)size;
	}
	close(fd);
	if (err < 0) {
		free(b);
		return err;
	}
	*out = b;
	*len = total;
	return 0;
}

/* The value of symbol name in the ELF64 file fd's .symtab. Returns 0 or a
 * negative error (-ESRCH: no such symbol). */
static int elf_symbol(int fd, const char *name, uint64_t *value)
{
	unsigned char eh[64], sh[64], lk[64];
	uint64_t shoff, off, size, soff, ssize;
	uint16_t shentsize, shnum;
	uint8_t *syms = NULL;
	char *str = NULL;
	int err = -ESRCH;

	if (pread(fd, eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return -HWT_EFORMAT;
	shoff = hwt_le64(eh + 40);
	shentsize = hwt_le16(eh + 58);
	shnum = hwt_le16(eh + 60);
	if (shentsize < 64)
		return -HWT_EFORMAT;
	for (uint16_t i = 0; i < shnum && err == -ESRCH; i++) {
		uint32_t link;

		if (pread(fd, sh, sizeof(sh), (off_t)(shoff + (uint64_t)i * shentsize)) !=
		    (ssize_t)sizeof(sh))
			return -HWT_EFORMAT;
		if (hwt_le32(sh + 4) != 2 /* SHT_SYMTAB */)
			continue;
		off = hwt_le64(sh + 24);
		size = hwt_le64(sh + 32);
		link = hwt_le32(sh + 40);
		if (link >= shnum ||
		    pread(fd, lk, sizeof(lk), (off_t)(shoff + (uint64_t)link * shentsize)) !=
			(ssize_t)sizeof(lk))
			return -HWT_EFORMAT;
		soff = hwt_le64(lk + 24);
		ssize = hwt_le64(lk + 32);
		if (size > (256u << 20) || ssize > (256u << 20))
			return -HWT_EFORMAT;
		syms = malloc(size ? size : 1);
		str = malloc(ssize + 1);
		if (!syms || !str) {
			err = -ENOMEM;
			break;
		}
		if (pread(fd, syms, size, (off_t)off) != (ssize_t)size ||
		    pread(fd, str, ssize, (off_t)soff) != (ssize_t)ssize) {
			err = -HWT_EFORMAT;
			break;
		}
		str[ssize] = '\0';
		for (uint64_t k = 0; k + 24 <= size; k += 24) {
			uint32_t n = hwt_le32(syms + k);

			if (n < ssize && !strcmp(str + n, name)) {
				*value = hwt_le64(syms + k + 8);
				err = 0;
				break;
			}
		}
		free(syms);
		free(str);
		syms = NULL;
		str = NULL;
	}
	free(syms);
	free(str);
	return err;
}

/* The kernel's text from a vmlinux, where the running kernel has it: the
 * shift is kallsyms' _stext less the vmlinux's (KASLR). */
static int copy_vmlinux(const char *path, const char *kallsyms, const struct krange *r, size_t nr,
			uint8_t **out, size_t *len)
{
	uint64_t stext = 0, vstext = 0;
	int fd, err;

	for (size_t i = 0; i < nr && !stext; i++)
		stext = r[i].start; /* text_ranges puts [_stext, _etext) first */
	if (!stext || !strstr(kallsyms, " _stext\n"))
		return -ESRCH;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = elf_symbol(fd, "_stext", &vstext);
	close(fd);
	if (err < 0)
		return err;
	/* only the kernel's own text: modules are not in a vmlinux */
	return copy_kcore(path, 2 /* ET_EXEC */, stext - vstext, r, 1, out, len);
}

int hwt_coll_kernel_capture(const char *proc_root, const char *vmlinux,
			    hwt_coll_meta_bytes_fn bytes, hwt_coll_meta_str_fn str, void *ctx,
			    char *why, size_t len)
{
	char path[4096], vpath[4096], *kallsyms = NULL, *modules = NULL;
	struct krange r[256];
	uint8_t *kcore = NULL;
	size_t nr, klen = 0;
	int64_t n;
	int err;

	if (why && len)
		why[0] = '\0';
	snprintf(path, sizeof(path), "%s/kallsyms", proc_root ? proc_root : "/proc");
	n = slurp(path, &kallsyms);
	if (n < 0) {
		if (why && len)
			snprintf(why, len, "%s: %s", path, strerror((int)-n));
		return (int)n;
	}
	snprintf(path, sizeof(path), "%s/modules", proc_root ? proc_root : "/proc");
	if (slurp(path, &modules) < 0)
		modules = NULL;
	err = bytes(ctx, "kernel.kallsyms", kallsyms, (size_t)n);
	if (err >= 0 && modules)
		err = str(ctx, "kernel.modules", modules);
	nr = text_ranges(kallsyms, modules, r, HWT_ARRAY_SIZE(r));
	if (err >= 0 && !nr) {
		/* kallsyms without addresses (kptr_restrict) */
		if (why && len)
			snprintf(why, len, "%s/kallsyms shows no addresses (kernel.kptr_restrict)",
				 proc_root ? proc_root : "/proc");
		err = -EACCES;
	}
	if (err >= 0) {
		snprintf(path, sizeof(path), "%s/kcore", proc_root ? proc_root : "/proc");
		err = copy_kcore(path, 4 /* ET_CORE */, 0, r, nr, &kcore, &klen);
		if (err < 0 && why && len)
			snprintf(why, len, "%s: %s", path,
				 err == -HWT_EFORMAT ? "not an ELF core file" : hwt_strerror(err));
		if ((err == -ENOENT || err == -EACCES || err == -EPERM) &&
		    (vmlinux ? snprintf(vpath, sizeof(vpath), "%s", vmlinux) > 0
			     : find_vmlinux(vpath, sizeof(vpath)))) {
			/* The text as built, not as patched at boot (alternatives,
			 * static keys): perf's fallback too. */
			int e = copy_vmlinux(vpath, kallsyms, r, nr, &kcore, &klen);

			if (e >= 0) {
				err = 0;
				if (why && len)
					snprintf(why, len, "%s", vpath);
			} else if (why && len) {
				size_t at = strlen(why);

				snprintf(why + at, len - at, "; %s: %s", vpath,
					 e == -ESRCH	     ? "no _stext symbol"
					 : e == -HWT_EFORMAT ? "not a vmlinux"
							     : hwt_strerror(e));
			}
		} else if (err >= 0 && why && len) {
			snprintf(why, len, "%s", path);
		}
	}
	if (err >= 0)
		err = bytes(ctx, "kernel.kcore", kcore, klen);
	free(kcore);
	free(kallsyms);
	free(modules);
	return err < 0 ? err : (int)(klen > INT32_MAX ? INT32_MAX : klen);
}
