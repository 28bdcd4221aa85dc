/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/image.c - address spaces for the decoder: the image section cache
 * (icache) that every image shares, and images made of file or memory
 * sections.
 *
 * Code is always loaded as sections into libipt's image section cache, never
 * read through libipt's read-memory callback, which bypasses its block cache
 * (DESIGN.md pitfalls). Memory sections (vDSO, JIT code) are copied into a
 * memfd so libipt can map them like files. An image is our own sorted list
 * of the visible pieces of sections, for the fast engine's code reads and
 * for lookups by address; its libipt pt_image is made of those pieces when
 * a libipt run first needs it (hwt_dec_image_ipt()): adding a section to
 * libipt stat()s its file again, which was most of the cost of decoding a
 * short trace the fast engine decodes alone. For the same reason a file
 * section is checked (stat(): it exists, holds the offset, its size
 * clipped to the file) at the image's first lookup, not when it is added
 * (image_resolve()): a decode that reads no code checks no file. The check
 * opens the file and keeps it open for the load of its code (fstat() on
 * it, not stat() on the path, then pread(): a path looked up once, not
 * twice, which was an eighth of a decode of dyn_test: 11 code files of
 * 4-8 KiB, 731 instructions).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/dec_int.h"

int hwt_dec_err_from_pt(int pterr)
{
	switch (pt_errcode(pterr)) {
	case pte_ok:
		return 0;
	case pte_nomem:
		return -ENOMEM;
	case pte_invalid:
		return -HWT_EINVAL;
	case pte_internal:
		return -HWT_EINTERNAL;
	case pte_nomap:
		return -HWT_ENOSYM;
	case pte_bad_cpu:
	case pte_not_supported:
		return -HWT_ENOTSUP;
	case pte_bad_file:
		return -ENOENT;
	case pte_eos:
		return -HWT_EEOS;
	default:
		return -HWT_EDECODE;
	}
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap, bytes;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	if (hwt_mul_size(ncap, elem, &bytes) < 0)
		return -ENOMEM;
	p = realloc(*arr, bytes);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Files kept open from their check to the load of their code, in the
 * process (an image of many sections does not hold as many files open). */
#define KEPT_FDS_MAX 64

static atomic_int kept_fds;

/* Closes the file c's check kept open, if any. */
static void code_fd_close(struct hwt_dec_code *c)
{
	if (c->fd < 0)
		return;
	close(c->fd);
	c->fd = -1;
	atomic_fetch_sub(&kept_fds, 1);
}

/* Bytes of code files the icache keeps mapped (address space; pages are
 * read on use). */
#define HWT_DEC_ISCACHE_MAPPED (1ull << 30)

int hwt_dec_icache_alloc(struct hwt_dec_icache **out, const struct hwt_logger *log)
{
	struct hwt_dec_icache *ic;
	int err;

	if (!out)
		return -HWT_EINVAL;
	*out = NULL;
	ic = calloc(1, sizeof(*ic));
	if (!ic)
		return -ENOMEM;
	pthread_mutex_init(&ic->lock, NULL);
	pthread_mutex_init(&ic->ipt_lock, NULL);
	if (log)
		ic->log = *log;
	err = hwt_dec_bb_table_alloc(&ic->bbs);
	if (err < 0)
		goto error;
	*out = ic;
	return 0;
error:
	hwt_dec_icache_free(ic);
	return err;
}

void hwt_dec_ild_pool_free(struct hwt_dec_icache *icache);

void hwt_dec_icache_free(struct hwt_dec_icache *ic)
{
	if (!ic)
		return;
	hwt_dec_bb_table_free(ic->bbs);
	hwt_dec_ild_pool_free(ic);
	if (atomic_load(&ic->ipt))
		pt_iscache_free(atomic_load(&ic->ipt));
	for (size_t i = 0; i < ic->nsections; i++) {
		struct hwt_dec_code *c = ic->sections[i]->code;

		if (c->map)
			munmap(c->map, c->map_len);
		else
			free((void *)c->bytes);
		code_fd_close(c);
		free(ic->sections[i]); /* with its code and names */
	}
	free(ic->sections);
	for (size_t i = 0; i < ic->nmemfds; i++)
		close(ic->memfds[i]);
	free(ic->memfds);
	pthread_mutex_destroy(&ic->lock);
	pthread_mutex_destroy(&ic->ipt_lock);
	free(ic);
}

struct pt_image_section_cache *hwt_dec_iscache_alloc(void)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc("hwtrace");

	/* Sections stay mapped (least recently used first out past the
	 * limit): without a limit libipt maps and unmaps a file, with open,
	 * fstat and close, on every read of its code. */
	if (isc && pt_iscache_set_limit(isc, HWT_DEC_ISCACHE_MAPPED) < 0) {
		pt_iscache_free(isc);
		return NULL;
	}
	return isc;
}

/* libipt's image section cache, made the first time a libipt run or read
 * needs it (a decode the fast engine does alone makes none), or NULL. */
static struct pt_image_section_cache *icache_ipt(const struct hwt_dec_icache *cic)
{
	struct hwt_dec_icache *ic = (struct hwt_dec_icache *)cic;
	struct pt_image_section_cache *isc = atomic_load(&ic->ipt), *none = NULL;

	if (isc)
		return isc;
	isc = hwt_dec_iscache_alloc();
	if (!isc)
		return NULL;
	if (!atomic_compare_exchange_strong(&ic->ipt, &none, isc)) {
		pt_iscache_free(isc); /* another thread's came first */
		return none;
	}
	return isc;
}

/* Registers a section in the icache (libipt's cache gets it when a libipt
 * run needs it: ipt_add_piece()). Returns the section, the existing one for
 * an identical section, or NULL with *err set. */
static struct hwt_dec_section *icache_add(struct hwt_dec_icache *ic, const char *path,
					  const char *label, uint64_t offset, uint64_t size,
					  uint64_t vaddr, int *err)
{
	struct hwt_dec_section *sec = NULL;

	pthread_mutex_lock(&ic->lock);
	for (size_t i = 0; i < ic->nsections; i++) {
		struct hwt_dec_section *o = ic->sections[i];

		if (o->vaddr == vaddr && o->offset == offset && o->asked == size &&
		    !strcmp(o->path, path)) {
			sec = o;
			goto out;
		}
	}
	*err = grow((void **)&ic->sections, &ic->cap_sections, ic->nsections + 1,
		    sizeof(*ic->sections));
	if (*err < 0)
		goto out;
	/* One allocation: the section, its code and both names. */
	{
		size_t plen = strlen(path) + 1;
		size_t llen = label && strcmp(label, path) ? strlen(label) + 1 : 0;
		char *names;

		sec = calloc(1, sizeof(*sec) + sizeof(*sec->code) + plen + llen);
		if (!sec) {
			*err = -ENOMEM;
			goto out;
		}
		sec->code = (struct hwt_dec_code *)(sec + 1);
		sec->code->fd = -1;
		names = (char *)(sec->code + 1);
		sec->path = memcpy(names, path, plen);
		sec->label = llen ? memcpy(names + plen, label, llen) : sec->path;
	}
	sec->vaddr = vaddr;
	sec->size = size;
	sec->asked = size;
	sec->offset = offset;
	ic->sections[ic->nsections++] = sec;
out:
	pthread_mutex_unlock(&ic->lock);
	return sec;
}

/* Image ids are unique in the process, not only in their icache: what
 * the fast engine's scratch caches by image id (eng_fast.c keeps it for
 * the next decoder, whatever its icache) never matches another icache's
 * images. */
static atomic_uint_fast64_t next_image_id = 1;

static uint64_t new_image_id(void)
{
	return atomic_fetch_add(&next_image_id, 1);
}

int hwt_dec_image_alloc(struct hwt_dec_image **out, struct hwt_dec_icache *ic, const char *name)
{
	struct hwt_dec_image *img;

	if (!out || !ic)
		return -HWT_EINVAL;
	*out = NULL;
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	atomic_init(&img->refs, 1);
	img->icache = ic;
	img->id = new_image_id();
	img->name = strdup(name ? name : "");
	if (!img->name) {
		hwt_dec_image_put(img);
		return -ENOMEM;
	}
	*out = img;
	return 0;
}

struct hwt_dec_image *hwt_dec_image_get(struct hwt_dec_image *img)
{
	if (img)
		atomic_fetch_add(&img->refs, 1);
	return img;
}

void hwt_dec_image_put(struct hwt_dec_image *img)
{
	if (!img)
		return;
	if (atomic_fetch_sub(&img->refs, 1) != 1)
		return;
	if (img->ipt)
		pt_image_free(img->ipt);
	free(img->pending);
	free(img->pieces);
	free(img->name);
	free(img);
}

const char *hwt_dec_image_name(const struct hwt_dec_image *img)
{
	return img && img->name ? img->name : "";
}

/* Maps [lo, hi) of sec over whatever was there, as libipt does: older
 * pieces are shrunk or split. */
static int image_map(struct hwt_dec_image *img, const struct hwt_dec_section *sec, uint64_t lo,
		     uint64_t hi)
{
	struct hwt_dec_piece *out = NULL;
	size_t n = 0, cap = 0;
	int err;

	if (lo >= hi)
		return 0;
	/* Over nothing (most sections): inserted in place. */
	{
		size_t k = img->npieces;

		while (k > 0 && img->pieces[k - 1].lo >= lo)
			k--;
		if ((k == 0 || img->pieces[k - 1].hi <= lo) &&
		    (k == img->npieces || img->pieces[k].lo >= hi)) {
			err = grow((void **)&img->pieces, &img->cap_pieces, img->npieces + 1,
				   sizeof(*img->pieces));
			if (err < 0)
				return err;
			memmove(&img->pieces[k + 1], &img->pieces[k],
				(img->npieces - k) * sizeof(*img->pieces));
			img->pieces[k] = (struct hwt_dec_piece){lo, hi, sec};
			img->npieces++;
			return 0;
		}
	}
	for (size_t i = 0; i < img->npieces; i++) {
		struct hwt_dec_piece p = img->pieces[i];

		if (p.hi <= lo || p.lo >= hi) {
			err = grow((void **)&out, &cap, n + 1, sizeof(*out));
			if (err < 0)
				goto error;
			out[n++] = p;
			continue;
		}
		if (p.lo < lo) {
			err = grow((void **)&out, &cap, n + 1, sizeof(*out));
			if (err < 0)
				goto error;
			out[n++] = (struct hwt_dec_piece){p.lo, lo, p.sec};
		}
		if (p.hi > hi) {
			err = grow((void **)&out, &cap, n + 1, sizeof(*out));
			if (err < 0)
				goto error;
			out[n++] = (struct hwt_dec_piece){hi, p.hi, p.sec};
		}
	}
	err = grow((void **)&out, &cap, n + 1, sizeof(*out));
	if (err < 0)
		goto error;
	/* Insert sorted. */
	{
		size_t k = n;

		while (k > 0 && out[k - 1].lo > lo) {
			out[k] = out[k - 1];
			k--;
		}
		out[k] = (struct hwt_dec_piece){lo, hi, sec};
		n++;
	}
	free(img->pieces);
	img->pieces = out;
	img->npieces = n;
	img->cap_pieces = cap;
	return 0;
error:
	free(out);
	return err;
}

/* Adds [lo, hi) of sec to libipt's image pi through the libipt section
 * cache isc (libipt returns the existing section for an identical one).
 * Returns 0 or a negative error; ic's log names the file that failed (it
 * was stat()ed when the image was first read: it changed since). */
static int ipt_add_cached(struct pt_image *pi, struct pt_image_section_cache *isc,
			  const struct hwt_dec_icache *ic, const struct hwt_dec_section *sec,
			  uint64_t lo, uint64_t hi)
{
	uint64_t offset = sec->offset + (lo - sec->vaddr);
	struct stat st;
	int err;

	err = pt_iscache_add_file(isc, sec->path, offset, hi - lo, lo);
	if (err >= 0)
		err = pt_image_add_cached(pi, isc, err, NULL);
	if (err >= 0)
		return 0;
	/* libipt says "invalid argument" for a file that is gone. */
	err = stat(sec->path, &st) < 0 ? -errno : hwt_dec_err_from_pt(err);
	hwt_log(&ic->log, HWT_LOG_ERROR, "cannot load code at 0x%" PRIx64 " from %s: %s", lo,
		sec->label, hwt_strerror(err));
	return err;
}

/* ipt_add_cached() through the icache ic's libipt cache. */
static int ipt_add_piece(struct pt_image *pi, const struct hwt_dec_icache *ic,
			 const struct hwt_dec_section *sec, uint64_t lo, uint64_t hi)
{
	struct pt_image_section_cache *isc = icache_ipt(ic);

	return isc ? ipt_add_cached(pi, isc, ic, sec, lo, hi) : -ENOMEM;
}

/* A new libipt image of img's pieces through the libipt section cache isc
 * (NULL: its icache's, see ipt_add_piece()), or NULL with *err set. */
static struct pt_image *ipt_build(const struct hwt_dec_image *img,
				  struct pt_image_section_cache *isc, int *err)
{
	struct pt_image *pi = pt_image_alloc(img->name);

	*err = -ENOMEM;
	if (!pi)
		return NULL;
	for (size_t i = 0; i < img->npieces; i++) {
		const struct hwt_dec_piece *p = &img->pieces[i];
		int e = isc ? ipt_add_cached(pi, isc, img->icache, p->sec, p->lo, p->hi)
			    : ipt_add_piece(pi, img->icache, p->sec, p->lo, p->hi);

		if (e < 0) {
			*err = e;
			pt_image_free(pi);
			return NULL;
		}
	}
	*err = 0;
	return pi;
}

static inline int image_ready(const struct hwt_dec_image *img);

struct pt_image *hwt_dec_image_ipt(const struct hwt_dec_image *cimg, int *err)
{
	/* The libipt image is a cache of the pieces, kept in the image from
	 * the first libipt run on (made under the icache's lock: decoders
	 * of other icaches may share the image). */
	struct hwt_dec_image *img = (struct hwt_dec_image *)cimg;
	struct pt_image *pi;

	*err = image_ready(img);
	if (*err < 0)
		return NULL;
	pthread_mutex_lock(&img->icache->lock);
	if (!img->ipt)
		img->ipt = ipt_build(img, NULL, err);
	pi = img->ipt;
	pthread_mutex_unlock(&img->icache->lock);
	return pi;
}

/* hwt_dec_file_check() on the file's status st. */
static int file_check_stat(const struct stat *st, uint64_t offset, uint64_t *size)
{
	uint64_t fsize;

	if (!S_ISREG(st->st_mode))
		return -HWT_EINVAL;
	fsize = (uint64_t)st->st_size;
	if (offset >= fsize)
		return -HWT_EINVAL;
	if (*size > fsize - offset)
		*size = fsize - offset;
	return 0;
}

int hwt_dec_file_check(const char *path, uint64_t offset, uint64_t *size)
{
	struct stat st;

	if (!path || !size || !*size)
		return -HWT_EINVAL;
	if (stat(path, &st) < 0)
		return -errno;
	return file_check_stat(&st, offset, size);
}

/* hwt_dec_file_check() of sec's file through the file opened (kept in
 * sec's code for its load where it passes, up to KEPT_FDS_MAX in the
 * process); by its path where it cannot be opened (a check as before:
 * the same result and message for a file that cannot be read). Opened
 * without blocking, as stat() would not (a FIFO). */
static int section_file_check(struct hwt_dec_section *sec, uint64_t *size)
{
	struct hwt_dec_code *c = sec->code;
	struct stat st;
	int fd, err;

	if (!*size)
		return -HWT_EINVAL;
	if (atomic_fetch_add(&kept_fds, 1) >= KEPT_FDS_MAX) {
		atomic_fetch_sub(&kept_fds, 1);
		return hwt_dec_file_check(sec->path, sec->offset, size);
	}
	fd = open(sec->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		atomic_fetch_sub(&kept_fds, 1);
		return hwt_dec_file_check(sec->path, sec->offset, size);
	}
	err = fstat(fd, &st) < 0 ? -errno : file_check_stat(&st, sec->offset, size);
	c->fd = fd;
	if (err < 0)
		code_fd_close(c);
	return err;
}

/* Serializes image_resolve() (rare: once per image and change) and the
 * sections' checks. */
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;

/* Checks sec's file once (its first image's first lookup): clips its size
 * to the file. A file that cannot be mapped is named in the icache's log;
 * its addresses then have no code (the decode's gaps, as where no section
 * is). Returns 1 or the error. Under resolve_lock. */
static int section_check(const struct hwt_dec_icache *ic, struct hwt_dec_section *sec)
{
	uint64_t size = sec->asked, end;
	int err;

	if (sec->checked)
		return sec->checked;
	err = section_file_check(sec, &size);
	if (err == 0 && __builtin_add_overflow(sec->vaddr, size, &end))
		err = -HWT_EINVAL;
	if (err < 0) {
		hwt_log(&ic->log, HWT_LOG_ERROR,
			"%s: cannot map it at 0x%" PRIx64 ": %s: the trace in its code cannot "
			"be decoded (gaps); check the path",
			sec->label, sec->vaddr,
			err == -HWT_EINVAL ? "not a regular file, or shorter than its offset"
			: err > -HWT_EBASE ? strerror(-err)
					   : hwt_strerror(err));
		sec->checked = err;
		return err;
	}
	sec->size = size;
	sec->checked = 1;
	return 1;
}

/* The icache's section that sec, checked, is the same as (file, offset,
 * address and size after clipping: sections added with sizes that clip to
 * the same are one section, whose decoded blocks are shared), or sec.
 * Under resolve_lock. */
static struct hwt_dec_section *section_same(struct hwt_dec_icache *ic, struct hwt_dec_section *sec)
{
	pthread_mutex_lock(&ic->lock);
	for (size_t i = 0; i < ic->nsections; i++) {
		struct hwt_dec_section *o = ic->sections[i];

		if (o != sec && o->checked == 1 && o->vaddr == sec->vaddr &&
		    o->offset == sec->offset && o->size == sec->size &&
		    !strcmp(o->path, sec->path)) {
			sec = o;
			break;
		}
	}
	pthread_mutex_unlock(&ic->lock);
	return sec;
}

/* Maps the image's pending sections, in the order they were added.
 * Returns 0, or -ENOMEM (or libipt's error where the image's libipt
 * image was made already); a file that cannot be mapped is no error here
 * (section_check()). */
static int image_resolve(const struct hwt_dec_image *cimg)
{
	struct hwt_dec_image *img = (struct hwt_dec_image *)cimg;
	int ret = 0;

	pthread_mutex_lock(&resolve_lock);
	if (!atomic_load_explicit(&img->unresolved, memory_order_relaxed))
		goto out;
	for (size_t i = 0; i < img->npending; i++) {
		struct hwt_dec_section *sec = img->pending[i];
		int err = 0;

		if (section_check(img->icache, sec) < 0)
			continue;
		/* An equal section's code is that one's: sec's file stays
		 * open to the icache's end (another image may have it, its
		 * load may be under way: closed under code_lock only). */
		sec = section_same(img->icache, sec);
		/* A libipt image made already follows (libipt shrinks or
		 * splits what the section covers, as image_map() does). */
		if (img->ipt)
			err = ipt_add_piece(img->ipt, img->icache, sec, sec->vaddr,
					    sec->vaddr + sec->size);
		if (err == 0)
			err = image_map(img, sec, sec->vaddr, sec->vaddr + sec->size);
		if (err < 0 && ret == 0)
			ret = err;
	}
	img->npending = 0;
	atomic_store_explicit(&img->nfind, img->npieces, memory_order_release);
	atomic_store_explicit(&img->unresolved, false, memory_order_release);
out:
	pthread_mutex_unlock(&resolve_lock);
	return ret;
}

/* The image's sections are mapped (image_resolve()) before it is read. */
static inline int image_ready(const struct hwt_dec_image *img)
{
	if (__builtin_expect(atomic_load_explicit(&img->unresolved, memory_order_acquire), 0))
		return image_resolve(img);
	return 0;
}

static int image_add_section(struct hwt_dec_image *img, const char *path, const char *label,
			     uint64_t offset, uint64_t size, uint64_t vaddr)
{
	struct hwt_dec_section *sec;
	int err = 0;

	if (size == 0)
		return -HWT_EINVAL;
	sec = icache_add(img->icache, path, label, offset, size, vaddr, &err);
	if (!sec)
		return err;
	err = grow((void **)&img->pending, &img->cap_pending, img->npending + 1,
		   sizeof(*img->pending));
	if (err < 0)
		return err;
	img->pending[img->npending++] = sec;
	atomic_store_explicit(&img->nfind, 0, memory_order_relaxed);
	atomic_store_explicit(&img->unresolved, true, memory_order_relaxed);
	/* A changed image gets a new id: successor edges cached for the old
	 * one must not be used. */
	img->id = new_image_id();
	return 0;
}

int hwt_dec_image_add_file(struct hwt_dec_image *img, const char *path, uint64_t offset,
			   uint64_t size, uint64_t vaddr)
{
	if (!img || !path)
		return -HWT_EINVAL;
	return image_add_section(img, path, path, offset, size, vaddr);
}

int hwt_dec_image_add_mem(struct hwt_dec_image *img, const void *bytes, size_t size, uint64_t vaddr,
			  const char *name)
{
	struct hwt_dec_icache *ic;
	char path[64];
	const uint8_t *p = bytes;
	size_t left = size;
	int fd, err;

	if (!img || !bytes || !size)
		return -HWT_EINVAL;
	ic = img->icache;
	fd = memfd_create("hwtrace-code", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (left) {
		ssize_t w = write(fd, p, left);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			close(fd);
			return err;
		}
		p += w;
		left -= (size_t)w;
	}
	pthread_mutex_lock(&ic->lock);
	err = grow((void **)&ic->memfds, &ic->cap_memfds, ic->nmemfds + 1, sizeof(int));
	if (err == 0)
		ic->memfds[ic->nmemfds++] = fd;
	pthread_mutex_unlock(&ic->lock);
	if (err < 0) {
		close(fd);
		return err;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return image_add_section(img, path, name ? name : "[memory]", 0, size, vaddr);
}

int hwt_dec_image_copy(struct hwt_dec_image *img, const struct hwt_dec_image *src)
{
	int err;

	if (!img || !src || img->icache != src->icache)
		return -HWT_EINVAL;
	/* src's sections as they are mapped, after img's pending ones */
	err = image_ready(src);
	if (err == 0)
		err = image_ready(img);
	if (err < 0)
		return err;
	img->id = new_image_id();
	/* src's sections as they are now (split or shrunk), over img's (and
	 * into img's libipt image where it was made: libipt's pt_image_copy()
	 * adds the same pieces). */
	for (size_t i = 0; i < src->npieces; i++) {
		const struct hwt_dec_piece *p = &src->pieces[i];

		if (img->ipt)
			err = ipt_add_piece(img->ipt, img->icache, p->sec, p->lo, p->hi);
		if (err == 0)
			err = image_map(img, p->sec, p->lo, p->hi);
		if (err < 0)
			break;
	}
	atomic_store_explicit(&img->nfind, img->npieces, memory_order_release);
	return err < 0 ? err : 0;
}

/* hwt_dec_image_find() below the image's first piece, or where it had
 * none: sections may be pending (nfind is 0 until they are mapped). Out
 * of the lookup, which stays a leaf. */
static __attribute__((noinline, cold)) const struct hwt_dec_piece *
find_first(const struct hwt_dec_image *img, uint64_t vaddr)
{
	image_ready(img);
	if (!atomic_load_explicit(&img->nfind, memory_order_acquire) || vaddr < img->pieces[0].lo)
		return NULL;
	return hwt_dec_image_find(img, vaddr);
}

const struct hwt_dec_piece *hwt_dec_image_find(const struct hwt_dec_image *img, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!img)
		return NULL;
	hi = atomic_load_explicit(&img->nfind, memory_order_acquire);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct hwt_dec_piece *p = &img->pieces[mid];

		if (vaddr < p->lo)
			hi = mid;
		else if (vaddr >= p->hi)
			lo = mid + 1;
		else
			return p;
	}
	return lo ? NULL : find_first(img, vaddr);
}

/* Sections up to this size are read into memory; larger ones are
 * mapped (pages come in as the code is decoded). */
#define CODE_READ_MAX (256u << 10)

static pthread_mutex_t code_lock = PTHREAD_MUTEX_INITIALIZER;

/* Closes fd, opened for c's load or kept from its check. */
static void code_fd_done(struct hwt_dec_code *c, int fd)
{
	if (fd == c->fd)
		code_fd_close(c);
	else
		close(fd);
}

/* Reads or maps the section's bytes. Returns 0, or -1 (libipt reads it
 * then, and fails where it fails). */
static int code_load(struct hwt_dec_code *c, const struct hwt_dec_section *sec)
{
	int fd = c->fd >= 0 ? c->fd : open(sec->path, O_RDONLY | O_CLOEXEC);
	uint8_t *b;
	size_t got = 0;

	if (fd < 0)
		return -1;
	if (sec->size > CODE_READ_MAX) {
		long page = sysconf(_SC_PAGESIZE);
		uint64_t delta = page > 0 ? sec->offset % (uint64_t)page : 0;
		void *m;

		if (sec->size > SIZE_MAX - delta)
			goto fail;
		m = mmap(NULL, (size_t)(sec->size + delta), PROT_READ, MAP_PRIVATE, fd,
			 (off_t)(sec->offset - delta));
		if (m == MAP_FAILED)
			goto fail;
		code_fd_done(c, fd);
		c->map = m;
		c->map_len = (size_t)(sec->size + delta);
		c->bytes = (const uint8_t *)m + delta;
		return 0;
	}
	b = malloc((size_t)sec->size);
	if (!b)
		goto fail;
	while (got < sec->size) {
		ssize_t n = pread(fd, b + got, (size_t)sec->size - got, (off_t)(sec->offset + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* The file shrank since it was added: libipt's. */
			free(b);
			goto fail;
		}
		got += (size_t)n;
	}
	code_fd_done(c, fd);
	c->bytes = b;
	return 0;
fail:
	code_fd_done(c, fd);
	return -1;
}

/* The section's code in memory, loaded on first use; NULL where it
 * cannot be. */
static const struct hwt_dec_code *section_code(const struct hwt_dec_section *sec)
{
	struct hwt_dec_code *c = sec->code;
	int st = atomic_load_explicit(&c->state, memory_order_acquire);

	if (st == 0) {
		pthread_mutex_lock(&code_lock);
		st = atomic_load_explicit(&c->state, memory_order_relaxed);
		if (st == 0) {
			st = code_load(c, sec) == 0 ? 1 : -1;
			atomic_store_explicit(&c->state, st, memory_order_release);
		}
		pthread_mutex_unlock(&code_lock);
	}
	return st > 0 ? c : NULL;
}

size_t hwt_dec_piece_bytes(const struct hwt_dec_piece *piece, uint64_t vaddr, const uint8_t **bytes)
{
	const struct hwt_dec_code *c;

	if (vaddr < piece->lo || vaddr >= piece->hi)
		return 0;
	c = section_code(piece->sec);
	if (!c)
		return 0;
	*bytes = c->bytes + (vaddr - piece->sec->vaddr);
	return (size_t)(piece->hi - vaddr);
}

int hwt_dec_piece_read(const struct hwt_dec_icache *ic, const struct hwt_dec_piece *piece,
		       uint64_t vaddr, uint8_t *buf, size_t size)
{
	struct pt_image_section_cache *isc;
	const uint8_t *code;
	uint64_t avail;
	int n;

	if (vaddr < piece->lo || vaddr >= piece->hi)
		return -HWT_ENOSYM;
	avail = piece->hi - vaddr;
	if (size > avail)
		size = (size_t)avail;
	if (size > INT_MAX)
		size = INT_MAX;
	if (hwt_dec_piece_bytes(piece, vaddr, &code)) {
		memcpy(buf, code, size);
		return (int)size;
	}
	/* libipt's read then (its section: the existing one, or a new one
	 * that fails as the read would). */
	isc = icache_ipt(ic);
	if (!isc)
		return -ENOMEM;
	n = pt_iscache_add_file(isc, piece->sec->path, piece->sec->offset, piece->sec->size,
				piece->sec->vaddr);
	if (n >= 0)
		n = pt_iscache_read(isc, buf, size, n, vaddr);
	if (n < 0)
		return hwt_dec_err_from_pt(n);
	return n;
}

int hwt_dec_image_read(const struct hwt_dec_image *img, uint64_t vaddr, void *buf, size_t size)
{
	const struct hwt_dec_piece *p = hwt_dec_image_find(img, vaddr);

	if (!p)
		return -HWT_ENOSYM;
	return hwt_dec_piece_read(img->icache, p, vaddr, buf, size);
}

struct pt_image *hwt_dec_image_ipt_own(const struct hwt_dec_image *img,
				       struct pt_image_section_cache *isc)
{
	int err = image_ready(img);

	return err < 0 ? NULL : ipt_build(img, isc, &err);
}
