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

/* Calls fn for each loadable kernel range (file offset, size, address) of
 * a kcore-format copy, until fn returns non-zero (fn NULL: only checks the
 * headers). Returns 0, -HWT_EFORMAT (not an ELF core file, or program
 * headers out of its bounds), or fn's error. */
static int kcore_each(const uint8_t *b, size_t len,
		      int (*fn)(void *ctx, uint64_t off, uint64_t size, uint64_t vaddr), void *ctx)
{
	uint64_t phoff;
	uint16_t phnum, phentsize;
	int err;

	/* Bounds before trust: the ELF header and each program header. */
	if (!b || len < 64 || memcmp(b, "\177ELF", 4) || b[4] != 2 || hwt_le16(b + 16) != 4)
		return -HWT_EFORMAT;
	phoff = hwt_le64(b + 32);
	phentsize = hwt_le16(b + 54);
	phnum = hwt_le16(b + 56);
	if (phentsize < 56 || phoff > len || (uint64_t)phnum * phentsize > len - phoff)
		return -HWT_EFORMAT;
	for (uint16_t i = 0; i < phnum; i++) {
		const uint8_t *ph = b + phoff + (uint64_t)i * phentsize;
		uint64_t off = hwt_le64(ph + 8), vaddr = hwt_le64(ph + 16),
			 size = hwt_le64(ph + 32);

		if (hwt_le32(ph) != 1 || !size || off > len || size > len - off || !(vaddr >> 63))
			continue; /* not a loadable kernel range */
		if (fn && (err = fn(ctx, off, size, vaddr)) != 0)
			return err < 0 ? err : 0; /* an error, or done */
	}
	return 0;
}

struct kcore_find {
	uint64_t addr, off;
	size_t avail;
};

static int find_range(void *ctx, uint64_t off, uint64_t size, uint64_t vaddr)
{
	struct kcore_find *f = ctx;

	if (f->addr < vaddr || f->addr - vaddr >= size)
		return 0;
	f->off = off + (f->addr - vaddr);
	f->avail = (size_t)(size - (f->addr - vaddr));
	return 1;
}

const uint8_t *hwt_pts_kcore_at(const uint8_t *kcore, size_t len, uint64_t addr, size_t *avail)
{
	struct kcore_find f = {addr, 0, 0};

	if (kcore_each(kcore, len, find_range, &f) < 0 || !f.avail)
		return NULL;
	*avail = f.avail;
	return kcore + f.off;
}

void hwt_pts_session_kernel(const struct hwt_fmt_session *s, struct hwt_pts_kernel *out)
{
	const struct hwt_fmt_meta *k = meta_bytes(s, "kernel.kcore");
	const struct hwt_fmt_meta *ks = meta_bytes(s, "kernel.kallsyms");
	const struct hwt_fmt_meta *t = hwt_fmt_session_meta_find(s, "pt.config.kernel");
	const struct hwt_fmt_evlist *ev = hwt_fmt_session_evlist(s);

	memset(out, 0, sizeof(*out));
	if (t && (t->type == HWT_FMT_META_U64 || t->type == HWT_FMT_META_I64)) {
		out->traced = t->v.u64 != 0;
	} else {
		/* perf.data: what its intel_pt event excluded */
		for (size_t i = 0; ev && i < hwt_fmt_evlist_count(ev); i++) {
			const struct hwt_fmt_event *e = hwt_fmt_evlist_event(ev, i);

			if (!strncmp(e->name, "intel_pt", 8) && !e->attr.exclude_kernel)
				out->traced = true;
		}
	}
	if (k) {
		out->kcore = k->v.bytes;
		out->kcore_len = k->len;
	}
	if (ks) {
		out->kallsyms = (const char *)ks->v.bytes;
		out->kallsyms_len = ks->len;
	}
}

struct kern_map {
	struct hwt_dec_image *img;
	const char *path;
};

static int map_range(void *ctx, uint64_t off, uint64_t size, uint64_t vaddr)
{
	struct kern_map *m = ctx;
	int err = hwt_dec_image_add_file(m->img, m->path, off, size, vaddr);

	return err == -ENOMEM ? err : 0;
}

int pts_kern_load(struct hwt_pts *pts)
{
	struct hwt_pts_kernel kern;
	struct kern_map m = {NULL, NULL};
	char path[64];
	int err;

	hwt_pts_session_kernel(pts->s, &kern);
	if (kern.kallsyms && !pts->kallsyms) {
		/* the recording's symbols, unless the caller gave a file */
		pts->kallsyms_fd = memfd_of("hwtrace-kallsyms", kern.kallsyms, kern.kallsyms_len);
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
	if (!kern.kcore)
		return 0;
	if (kcore_each(kern.kcore, kern.kcore_len, NULL, NULL) < 0)
		goto bad;
	pts->kern_fd = memfd_of("hwtrace-kcore", kern.kcore, kern.kcore_len);
	if (pts->kern_fd < 0)
		return pts->kern_fd == -ENOMEM ? -ENOMEM : 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pts->kern_fd);
	m.path = path;
	err = hwt_dec_image_alloc(&m.img, pts->ic, "kernel");
	if (err >= 0)
		err = kcore_each(kern.kcore, kern.kcore_len, map_range, &m);
	if (err < 0) {
		hwt_dec_image_put(m.img);
		return err;
	}
	pts->procs.base = m.img;
	/* an unknown process runs the same kernel */
	return hwt_dec_image_copy(pts->empty, m.img);
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

int hwt_pts_kallsyms_open(const struct hwt_fmt_session *s, struct hwt_sym_cache *cache,
			  struct hwt_sym_obj **out)
{
	const struct hwt_fmt_meta *ks = meta_bytes(s, "kernel.kallsyms");
	char path[64];
	int fd, err;

	*out = NULL;
	if (!ks)
		return -HWT_ENOSYM;
	/* symbolize/ reads a kallsyms table from a file, all of it at open */
	if ((fd = memfd_of("hwtrace-kallsyms", ks->v.bytes, ks->len)) < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = hwt_sym_obj_open_kallsyms(cache, path, out);
	close(fd);
	return err;
}
