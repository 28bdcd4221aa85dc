/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ring.c - whole records out of the data area of a perf ring
 * buffer. The kernel writes records back to back at data_head (a running
 * byte count; the position in the area is head mod size); every record is
 * 8-byte aligned and a multiple of 8 bytes long, so a header never straddles
 * the end of the area but a record's body can. This function hands out runs
 * of records that sit contiguously in place, and copies the one record that
 * wraps into a scratch buffer, so the caller never copies anything else and
 * can give each run to the writer as it is.
 *
 * Memory ordering is the caller's (record.c): data_head is loaded with
 * acquire before the records are read, data_tail stored with release after.
 */
#include "collector/rec_int.h"

#include <string.h>

int64_t hwt_coll_ring_next(const uint8_t *data, uint64_t size, uint64_t *pos, uint64_t head,
			   uint8_t *scratch, const uint8_t **out)
{
	uint64_t avail, off, contig, n = 0;

	*out = NULL;
	if (!size || (size & (size - 1)) || head - *pos > size || head < *pos)
		return -HWT_EINVAL;
	avail = head - *pos;
	if (!avail)
		return 0;
	off = *pos & (size - 1);
	contig = size - off;
	while (n + sizeof(struct perf_event_header) <= avail && n + 8 <= contig) {
		uint16_t rsize;

		memcpy(&rsize, data + off + n + 6, sizeof(rsize));
		if (rsize < sizeof(struct perf_event_header) || rsize > avail - n)
			return -HWT_EFORMAT;
		if (rsize > contig - n)
			break; /* this one wraps */
		n += rsize;
	}
	if (n) {
		*out = data + off;
		*pos += n;
		return (int64_t)n;
	}
	/* The record at off wraps around the end: its header is in place
	 * (alignment), its body continues at the start of the area. */
	{
		uint16_t rsize;

		if (contig < 8)
			return -HWT_EFORMAT; /* a header never straddles the end */
		memcpy(&rsize, data + off + 6, sizeof(rsize));
		if (rsize < sizeof(struct perf_event_header) || rsize > avail)
			return -HWT_EFORMAT;
		memcpy(scratch, data + off, (size_t)contig);
		memcpy(scratch + contig, data, (size_t)(rsize - contig));
		*out = scratch;
		*pos += rsize;
		return rsize;
	}
}
