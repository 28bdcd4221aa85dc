/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/losses.c - how a decoded trace's losses are said: one phrase,
 * made here, that every PT output (script, the calls table, report, flame,
 * branches) prints, so that a loss is counted the same way everywhere.
 */
#include "decoder/decoder.h"

#include <inttypes.h>
#include <stdio.h>

int hwt_dec_losses_str(uint64_t gaps, uint64_t lost_gaps, uint64_t lost_bytes, uint64_t overflows,
		       char *buf, size_t len)
{
	return snprintf(buf, len,
			"%" PRIu64 " gap%s (%" PRIu64 " from lost trace, %" PRIu64
			" bytes lost), %" PRIu64 " overflow%s",
			gaps, gaps == 1 ? "" : "s", lost_gaps, lost_bytes, overflows,
			overflows == 1 ? "" : "s");
}
