/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptsession/pts_procs.c - processes' code images over time, the one place
 * that turns MMAP/MMAP2, COMM.EXEC and FORK records into decoder images: a
 * recording's sideband pass (pts_sb.c) and a raw trace's perf-event
 * sideband (pts_pevent.c) both build them here.
 *
 * Records arrive in time order. A change at a new time makes a new version
 * of the process's image (a copy of the last), so an image handed to a
 * decoder never changes under it; changes at the same time edit that
 * version. exec starts an empty image, fork copies the parent's latest.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptsession/pts_int.h"

int pts_grow(void *pp, size_t *cap, size_t n, size_t elem)
{
	void **p = pp;
	size_t ncap, bytes;
	void *np;

	if (n <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap < n)
		ncap = n;
	if (hwt_mul_size(ncap, elem, &bytes) < 0)
		return -ENOMEM;
	np = realloc(*p, bytes);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

void pts_procs_fini(struct pts_procs *ps)
{
	for (size_t i = 0; i < ps->nprocs; i++) {
		for (size_t k = 0; k < ps->procs[i].nvers; k++)
			hwt_dec_image_put(ps->procs[i].vers[k].img);
		free(ps->procs[i].vers);
		free(ps->procs[i].ranges);
	}
	free(ps->procs);
	hwt_dec_image_put(ps->base);
	memset(ps, 0, sizeof(*ps));
}

struct pts_proc *pts_procs_get(struct pts_procs *ps, int32_t pid)
{
	struct pts_proc *p;

	for (size_t i = ps->nprocs; i-- > 0;) {
		if (ps->procs[i].pid == pid)
			return &ps->procs[i];
	}
	if (pts_grow(&ps->procs, &ps->capprocs, ps->nprocs + 1, sizeof(*ps->procs)) < 0)
		return NULL;
	p = &ps->procs[ps->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

struct hwt_dec_image *pts_proc_edit(struct pts_procs *ps, struct pts_proc *p, uint64_t time,
				    bool empty)
{
	struct pts_ver *last = p->nvers ? &p->vers[p->nvers - 1] : NULL;
	struct hwt_dec_image *img = NULL;
	char name[32];

	if (last && last->time == time && !empty)
		return last->img;
	if (pts_grow(&p->vers, &p->capvers, p->nvers + 1, sizeof(*p->vers)) < 0)
		return NULL;
	if (ps->hex_names)
		snprintf(name, sizeof(name), "pid-%" PRIx32, (uint32_t)p->pid);
	else
		snprintf(name, sizeof(name), "pid %" PRId32, p->pid);
	if (hwt_dec_image_alloc(&img, ps->ic, name) < 0)
		return NULL;
	if (last && !empty && hwt_dec_image_copy(img, last->img) < 0) {
		hwt_dec_image_put(img);
		return NULL;
	}
	/* A new address space has the kernel mapped too. */
	if ((!last || empty) && ps->base && hwt_dec_image_copy(img, ps->base) < 0) {
		hwt_dec_image_put(img);
		return NULL;
	}
	p->vers[p->nvers].time = time;
	p->vers[p->nvers].img = img;
	p->nvers++;
	return img;
}

int pts_procs_exec(struct pts_procs *ps, int32_t pid, uint64_t time)
{
	struct pts_proc *p = pts_procs_get(ps, pid);

	if (!p)
		return -ENOMEM;
	p->gen++;
	if (p->nvers) {
		/* A new, empty address space from now on. */
		if (!pts_proc_edit(ps, p, time, true))
			return -ENOMEM;
		p->changing = true;
	}
	p->nranges = 0;
	return 0;
}

int pts_procs_fork(struct pts_procs *ps, int32_t ppid, int32_t pid, uint64_t time)
{
	struct pts_proc *parent = pts_procs_get(ps, ppid), *child;
	struct hwt_dec_image *img;

	if (!parent)
		return -ENOMEM;
	if (!parent->nvers) {
		/* Nothing to copy; a process of this pid is gone. */
		for (size_t i = 0; i < ps->nprocs; i++)
			ps->procs[i].gen += ps->procs[i].pid == pid;
		return 0;
	}
	child = pts_procs_get(ps, pid);
	if (!child)
		return -ENOMEM;
	parent = pts_procs_get(ps, ppid); /* growing may move it */
	child->gen++;
	if (child->nvers)
		child->changing = true; /* a pid reused */
	img = pts_proc_edit(ps, child, time, true);
	if (!img || hwt_dec_image_copy(img, parent->vers[parent->nvers - 1].img) < 0)
		return -ENOMEM;
	child->nranges = 0;
	if (pts_grow(&child->ranges, &child->capranges, parent->nranges, sizeof(*child->ranges)) <
	    0)
		return -ENOMEM;
	if (parent->nranges)
		memcpy(child->ranges, parent->ranges, parent->nranges * sizeof(*child->ranges));
	child->nranges = parent->nranges;
	return 0;
}

struct hwt_dec_image *pts_procs_latest(const struct pts_procs *ps, int32_t pid)
{
	for (size_t i = ps->nprocs; i-- > 0;) {
		if (ps->procs[i].pid == pid)
			return ps->procs[i].nvers ? ps->procs[i].vers[ps->procs[i].nvers - 1].img
						  : NULL;
	}
	return NULL;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct pts_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

void pts_procs_sort(struct pts_procs *ps)
{
	if (ps->nprocs)
		qsort(ps->procs, ps->nprocs, sizeof(*ps->procs), cmp_proc);
}

const struct pts_proc *pts_procs_find(const struct pts_procs *ps, int32_t pid)
{
	size_t lo = 0, hi = ps->nprocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ps->procs[mid].pid == pid)
			return &ps->procs[mid];
		if (ps->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The index of the version at time: the last at or before it; before the
 * first one (clocks of different CPUs disagree a little), the first. */
static size_t version_at(const struct pts_proc *p, uint64_t time)
{
	size_t lo = 0, hi = p->nvers;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->vers[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

struct hwt_dec_image *pts_procs_at(const struct pts_procs *ps, int32_t pid, uint64_t time)
{
	const struct pts_proc *p = pts_procs_find(ps, pid);

	if (!p || !p->nvers)
		return NULL;
	return p->vers[version_at(p, time)].img;
}

bool pts_procs_same(const struct pts_procs *ps, int32_t pid, uint64_t t0, uint64_t t1)
{
	const struct pts_proc *p = pts_procs_find(ps, pid);

	return !p || !p->nvers || version_at(p, t0) == version_at(p, t1);
}
