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

int hwt_coll_kernel_code(const char *proc_root, char *why, size_t len)
{
	char path[4096];
	struct utsname u;
	int fd;

	snprintf(path, sizeof(path), "%s/kcore", proc_root ? proc_root : "/proc");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	if (uname(&u) == 0) {
		/* where Debian's debug packages and kernel builds put it */
		const char *const dir[] = {"/usr/lib/debug/boot/vmlinux-",
					   "/usr/lib/debug/lib/modules/", "/lib/modules/",
					   "/boot/vmlinux-"};
		const char *const tail[] = {"", "/vmlinux", "/build/vmlinux", ""};

		for (size_t i = 0; i < HWT_ARRAY_SIZE(dir); i++) {
			char v[4096];

			snprintf(v, sizeof(v), "%s%s%s", dir[i], u.release, tail[i]);
			if (access(v, R_OK) == 0)
				return 1;
		}
	}
	if (why && len)
		snprintf(why, len, "%s: %s, and no vmlinux for kernel %s", path,
			 errno == ENOENT ? "not present" : strerror(errno),
			 uname(&u) == 0 ? u.release : "?");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Capture                                                                   */

/* A whole small file (kallsyms, modules) into *out (malloc'd). Returns its
 * length or -errno. */
static int64_t slurp(const char *path, char **out)
{
	struct hwt_buf b;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return -errno;
	hwt_buf_init(&b);
	for (;;) {
		ssize_t n;

		if (hwt_buf_reserve(&b, 1 << 16) < 0) {
			close(fd);
			hwt_buf_fini(&b);
			return -ENOMEM;
		}
		n = read(fd, b.data + b.len, 1 << 16);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		b.len += (size_t)n;
	}
	close(fd);
	if (hwt_buf_append(&b, "", 1) < 0) {
		hwt_buf_fini(&b);
		return -ENOMEM;
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

static int read_phdrs(int fd, struct kseg *seg, size_t max, size_t *nseg)
{
	unsigned char eh[64];
	uint64_t phoff;
	uint16_t phentsize, phnum;

	*nseg = 0;
	if (pread(fd, eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return -HWT_EFORMAT;
	if (memcmp(eh, "\177ELF", 4) || eh[4] != 2 /* ELFCLASS64 */ || eh[5] != 1 ||
	    hwt_le16(eh + 16) != 4 /* ET_CORE */)
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
static int copy_kcore(const char *path, const struct krange *r, size_t nr, uint8_t **out,
		      size_t *len)
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
	err = read_phdrs(fd, seg, HWT_ARRAY_SIZE(seg), &nseg);
	if (err < 0) {
		close(fd);
		return err;
	}
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

int hwt_coll_kernel_capture(const char *proc_root, hwt_coll_meta_bytes_fn bytes,
			    hwt_coll_meta_str_fn str, void *ctx, char *why, size_t len)
{
	char path[4096], *kallsyms = NULL, *modules = NULL;
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
		err = copy_kcore(path, r, nr, &kcore, &klen);
		if (err < 0 && why && len)
			snprintf(why, len, "%s: %s", path,
				 err == -HWT_EFORMAT ? "not an ELF core file" : hwt_strerror(err));
	}
	if (err >= 0)
		err = bytes(ctx, "kernel.kcore", kcore, klen);
	free(kcore);
	free(kallsyms);
	free(modules);
	return err < 0 ? err : (int)(klen > INT32_MAX ? INT32_MAX : klen);
}
