/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptsession/pts_kern.c - the kernel's code in a PT session: the
 * kcore-format copy a recording made of the kernel's and the modules'
 * text (metadata "kernel.kcore", an ELF core file with a PT_LOAD per
 * range), mapped into every process's image (the kernel is in every
 * address space), its kallsyms copy ("kernel.kallsyms") for symbols, and
 * the changes PERF_RECORD_TEXT_POKE records made to the text over time
 * (static keys, ftrace, BPF trampolines), applied from their time on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ptsession/pts_int.h"

/* Bytes into a new memfd; returns it or -errno. */
static int memfd_of(const char *name, const void *bytes, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	const uint8_t *p = bytes;

	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? -errno : -EIO;

			close(fd);
			return e;
		}
		p += n;
		len -= (size_t)n;
	}
	return fd;
}

static const struct hwt_fmt_meta *meta_bytes(const struct hwt_fmt_session *s, const char *key)
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(s, key);

	return m && m->type == HWT_FMT_META_BYTES ? m : NULL;
}

int pts_kern_load(struct hwt_pts *pts)
{
	const struct hwt_fmt_meta *k = meta_bytes(pts->s, "kernel.kcore");
	const struct hwt_fmt_meta *ks = meta_bytes(pts->s, "kernel.kallsyms");
	struct hwt_dec_image *img = NULL;
	const uint8_t *b;
	char path[64];
	uint64_t phoff;
	uint16_t phnum, phentsize;
	int err;

	if (ks && !pts->kallsyms) {
		/* the recording's symbols, unless the caller gave a file */
		pts->kallsyms_fd = memfd_of("hwtrace-kallsyms", ks->v.bytes, ks->len);
		if (pts->kallsyms_fd == -ENOMEM)
			return -ENOMEM;
		if (pts->kallsyms_fd >= 0) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", pts->kallsyms_fd);
			pts->kallsyms = strdup(path);
			if (!pts->kallsyms)
				return -ENOMEM;
			pts->cfg.kallsyms = pts->kallsyms;
		}
	}
	if (!k)
		return 0;
	b = k->v.bytes;
	/* Bounds before trust: the ELF header and each program header. */
	if (k->len < 64 || memcmp(b, "\177ELF", 4) || b[4] != 2 || hwt_le16(b + 16) != 4)
		goto bad;
	phoff = hwt_le64(b + 32);
	phentsize = hwt_le16(b + 54);
	phnum = hwt_le16(b + 56);
	if (phentsize < 56 || phoff > k->len || (uint64_t)phnum * phentsize > k->len - phoff)
		goto bad;
	pts->kern_fd = memfd_of("hwtrace-kcore", b, k->len);
	if (pts->kern_fd < 0)
		return pts->kern_fd == -ENOMEM ? -ENOMEM : 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pts->kern_fd);
	err = hwt_dec_image_alloc(&img, pts->ic, "kernel");
	for (uint16_t i = 0; i < phnum && err >= 0; i++) {
		const uint8_t *ph = b + phoff + (uint64_t)i * phentsize;
		uint64_t off = hwt_le64(ph + 8), vaddr = hwt_le64(ph + 16),
			 size = hwt_le64(ph + 32);

		if (hwt_le32(ph) != 1 || !size || off > k->len || size > k->len - off ||
		    !(vaddr >> 63))
			continue; /* not a loadable kernel range */
		err = hwt_dec_image_add_file(img, path, off, size, vaddr);
		if (err != -ENOMEM)
			err = 0;
	}
	if (err < 0) {
		hwt_dec_image_put(img);
		return err;
	}
	pts->procs.base = img;
	/* an unknown process runs the same kernel */
	return hwt_dec_image_copy(pts->empty, img);
bad:
	hwt_log(&pts->cfg.log, HWT_LOG_WARN,
		"the recording's copy of the kernel's code is damaged: kernel code is not "
		"decoded (gaps)");
	return 0;
}

int pts_kern_poke(struct hwt_pts *pts, const struct hwt_fmt_record *rec)
{
	int err;

	if (!pts->procs.base || !rec->u.text_poke.new_len)
		return 0;
	err = hwt_dec_image_add_mem(pts->procs.base, rec->u.text_poke.new_bytes,
				    rec->u.text_poke.new_len, rec->u.text_poke.addr,
				    "[kernel text_poke]");
	return err == -ENOMEM ? err : 0;
}

void pts_kern_free(struct hwt_pts *pts)
{
	if (pts->kern_fd >= 0)
		close(pts->kern_fd);
	if (pts->kallsyms_fd >= 0)
		close(pts->kallsyms_fd);
	pts->kern_fd = pts->kallsyms_fd = -1;
}
