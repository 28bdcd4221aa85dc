/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/ring.c - a small reader of perf_event_open ring buffers: maps the
 * metadata page and 2^n data pages of an event, and hands out each whole
 * record, copying the ones that wrap around the end of the buffer into a
 * scratch area so the caller always sees contiguous bytes.
 *
 * Memory ordering (perf_event_mmap_page's protocol, as in
 * include/uapi/linux/perf_event.h):
 *   - The kernel writes records, then publishes data_head with a release
 *     barrier. We load data_head with acquire, so every record byte below
 *     head is visible to the loads that follow.
 *   - We own data_tail. Storing it with release orders all our reads of
 *     the records before the store: once the kernel sees the new tail it
 *     may overwrite that space, and our copies are already taken.
 * data_head and data_tail only grow (u64, no wrap in practice); the
 * position in the buffer is their value modulo the data size.
 */
#include "probe/probe_live_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int prb_ring_open(struct prb_ring *r, struct hwt_psys *psys, int fd, size_t pages)
{
	long psz = sysconf(_SC_PAGESIZE);
	size_t size;
	int err;

	memset(r, 0, sizeof(*r));
	if (psz <= 0 || !pages || (pages & (pages - 1)))
		return -HWT_EINVAL;
	if (hwt_mul_size(pages + 1, (size_t)psz, &size) < 0)
		return -HWT_ETOOBIG;
	err = hwt_psys_mmap(psys, fd, size, PROT_READ | PROT_WRITE, 0, &r->base);
	if (err < 0)
		return err;
	r->psys = psys;
	r->fd = fd;
	r->map_size = size;
	r->meta = r->base;
	r->data = (uint8_t *)r->base + psz;
	r->data_size = pages * (size_t)psz;
	return 0;
}

void prb_ring_close(struct prb_ring *r)
{
	if (r->base)
		hwt_psys_munmap(r->psys, r->base, r->map_size);
	free(r->scratch);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

int prb_ring_read(struct prb_ring *r, int (*fn)(void *ctx, const void *rec, size_t len), void *ctx)
{
	uint64_t head, tail;
	int err = 0, n = 0;

	if (!r->base)
		return 0;
	head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	tail = r->meta->data_tail;
	while (tail < head) {
		size_t off = (size_t)(tail % r->data_size);
		struct perf_event_header hdr;
		const uint8_t *rec;

		/* The 8-byte header itself may wrap only if the size is not a
		 * multiple of 8, which the kernel never produces; copy it
		 * byte-wise anyway. */
		for (size_t i = 0; i < sizeof(hdr); i++)
			((uint8_t *)&hdr)[i] = r->data[(off + i) % r->data_size];
		if (hdr.size < sizeof(hdr) || hdr.size > head - tail) {
			/* a corrupt size: skip what is there, never loop */
			r->bad++;
			tail = head;
			break;
		}
		if (off + hdr.size <= r->data_size) {
			rec = r->data + off;
		} else {
			size_t first = r->data_size - off;

			if (!r->scratch && !(r->scratch = malloc(65536))) {
				err = -ENOMEM;
				break;
			}
			memcpy(r->scratch, r->data + off, first);
			memcpy(r->scratch + first, r->data, hdr.size - first);
			rec = r->scratch;
		}
		if ((err = fn(ctx, rec, hdr.size)) < 0)
			break;
		tail += hdr.size;
		n++;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	return err < 0 ? err : n;
}
