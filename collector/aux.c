/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/aux.c - what to copy out of an AUX area (Intel PT bytes), in
 * full-trace and in snapshot mode, and what the kernel's PERF_RECORD_AUX
 * flags say about loss. Pure functions over a buffer and positions, so that
 * the head/tail protocol, wrapping and snapshot overwrites are tested with
 * synthetic buffers (tests/collector/test_aux.c); record.c does the memory
 * ordering (aux_head loaded with acquire, aux_tail stored with release).
 */
#include "collector/rec_int.h"

#include <string.h>

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Splits [from, from + len) of the stream (positions mod size in the area)
 * into at most two spans. */
static void split(uint64_t size, uint64_t from, uint64_t len, uint64_t aux_offset,
		  struct hwt_coll_aux_read *out)
{
	uint64_t off = from & (size - 1), first = size - off;

	out->nspans = 0;
	if (!len)
		return;
	if (first > len)
		first = len;
	out->span[0] = (struct hwt_coll_aux_span){aux_offset, off, first};
	out->nspans = 1;
	if (first < len) {
		out->span[1] = (struct hwt_coll_aux_span){aux_offset + first, 0, len - first};
		out->nspans = 2;
	}
}

int hwt_coll_aux_full(uint64_t size, uint64_t tail, uint64_t head, struct hwt_coll_aux_read *out)
{
	uint64_t len;

	memset(out, 0, sizeof(*out));
	if (!pow2(size) || head < tail)
		return -HWT_EINVAL;
	len = head - tail;
	if (len > size) {
		/* Cannot happen with a well-behaved PMU: keep the newest. */
		out->lost = len - size;
		out->gap = true;
		tail = head - size;
		len = size;
	}
	/* In full mode the AUX offset is the kernel's own running count. */
	split(size, tail, len, tail, out);
	out->new_tail = head;
	return 0;
}

void hwt_coll_aux_snap_init(struct hwt_coll_aux_snap *st, uint64_t size)
{
	memset(st, 0, sizeof(*st));
	st->size = size;
}

static bool all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		if (p[i])
			return false;
	}
	return true;
}

/* Copies the bytes just before pos (cyclically) as the wrap reference. */
static void take_ref(struct hwt_coll_aux_snap *st, const uint8_t *buf, uint64_t pos)
{
	/* 64 bytes, or an eighth of a small area: a write that reaches them
	 * counts as a wrap, so they must be a small part of the area. */
	uint32_t n = (uint32_t)(st->size >= 8 * sizeof(st->ref) ? sizeof(st->ref) : st->size / 8);

	for (uint32_t i = 0; i < n; i++)
		st->ref[i] = buf[(pos - n + i) & (st->size - 1)];
	st->ref_len = n;
}

static bool ref_intact(const struct hwt_coll_aux_snap *st, const uint8_t *buf)
{
	for (uint32_t i = 0; i < st->ref_len; i++) {
		if (buf[(st->old - st->ref_len + i) & (st->size - 1)] != st->ref[i])
			return false;
	}
	return true;
}

int hwt_coll_aux_snapshot(struct hwt_coll_aux_snap *st, const uint8_t *buf, uint64_t head,
			  struct hwt_coll_aux_read *out)
{
	uint64_t size = st->size, len;
	bool wrapped;

	memset(out, 0, sizeof(*out));
	if (!pow2(size) || !buf || head > size)
		return -HWT_EINVAL;
	head &= size - 1;
	if (!st->taken) {
		/* Never wrapped: nothing was ever written past the head. */
		wrapped = !all_zero(buf + head, size - head);
		st->old = 0;
	} else {
		/* Data written since the last snapshot starts at old. If it
		 * reached the bytes before old, it went all the way round.
		 * (When nothing was written at all, head == old and the
		 * reference is intact.) */
		wrapped = !ref_intact(st, buf);
	}
	if (wrapped) {
		/* The whole area ends at head; what came before it is lost. */
		len = size;
		out->gap = true;
		/* The loss is unknown: at least what a full lap overwrote.
		 * Leave one area's worth of stream offsets as the gap. */
		st->stream_end += st->taken ? size : 0;
		split(size, head, len, st->stream_end, out);
	} else {
		len = (head - st->old) & (size - 1);
		split(size, st->old, len, st->stream_end, out);
	}
	st->stream_end += len;
	st->old = head;
	st->taken = true;
	take_ref(st, buf, head);
	return 0;
}

bool hwt_coll_aux_account(struct hwt_coll_aux_stats *st, uint64_t aux_offset, uint64_t aux_size,
			  uint64_t flags)
{
	bool gap = false;

	(void)aux_offset;
	st->records++;
	st->bytes += aux_size;
	if (flags & PERF_AUX_FLAG_TRUNCATED) {
		st->truncated++;
		gap = true;
	}
	if (flags & PERF_AUX_FLAG_PARTIAL) {
		st->partial++;
		gap = true;
	}
	if (flags & PERF_AUX_FLAG_COLLISION) {
		st->collision++;
		gap = true;
	}
	if (flags & PERF_AUX_FLAG_OVERWRITE)
		st->overwrite++;
	if (gap)
		st->gaps++;
	return gap;
}
