/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_pevent.c - a raw trace's perf-event sideband
 * (hwt_pts_pevent, `script --pt --pevent:*`) on fuzzed streams: the first
 * byte chooses what is printed, the next 8 the sample_type of the records'
 * trailers, the rest is split into a primary and a secondary stream. The
 * decoder's context hook is then queried at rising times with the events
 * that move a context switch into place, and every note is read back.
 * Mapped files are looked up under a sysroot that does not exist.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptsession/ptsession.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t evs[] = {HWT_DEC_EV_ENABLED, HWT_DEC_EV_DISABLED,
				       HWT_DEC_EV_ASYNC_BRANCH, HWT_DEC_EV_PAGING,
				       HWT_DEC_EV_OVERFLOW};
	struct hwt_pts_pevent_config sc;
	struct hwt_dec_icache *ic = NULL;
	struct hwt_pts_pevent *pev = NULL;
	struct hwt_dec_config cfg;
	struct hwt_buf text;
	size_t half;

	if (size < 9)
		return 0;
	hwt_buf_init(&text);
	if (hwt_dec_icache_alloc(&ic, NULL) < 0 ||
	    hwt_pts_pevent_alloc(&pev, ic, data[0] & 0x7f) < 0)
		goto out;
	hwt_pts_pevent_config_init(&sc);
	memcpy(&sc.sample_type, data + 1, 8);
	sc.sysroot = "/nonexistent-hwtrace-fuzz";
	sc.kernel_start = 0xffff800000000000ull;
	data += 9;
	size -= 9;
	half = size / 2;
	if (hwt_pts_pevent_add(pev, "primary", data, half, true, &sc) < 0 ||
	    hwt_pts_pevent_add(pev, "secondary", data + half, size - half, false, &sc) < 0)
		goto out;
	hwt_dec_config_init(&cfg);
	if (hwt_pts_pevent_setup(pev, &cfg, &text) < 0 || !cfg.context)
		goto out;
	for (unsigned int i = 0; i < 64; i++) {
		struct hwt_dec_event ev = {0};
		struct hwt_dec_context_query q = {0};
		struct hwt_dec_context c = {0};

		ev.type = evs[i % (sizeof(evs) / sizeof(evs[0]))];
		ev.ip = i & 1 ? 0xffffffff81000000ull : 0x401000;
		ev.at = ev.ip;
		q.tsc = i == 63 ? UINT64_MAX : (uint64_t)i << (i % 40);
		q.has_tsc = true;
		q.event = i % 3 ? &ev : NULL;
		q.ip_suppressed = i % 5 == 0;
		if (cfg.context(cfg.context_ctx, &q, &c) < 0)
			break;
		if (c.image)
			hwt_dec_image_name(c.image);
		if (c.note && hwt_pts_pevent_note(pev, c.note, &text) < 0)
			break;
	}
out:
	hwt_pts_pevent_free(pev);
	hwt_dec_icache_free(ic);
	hwt_buf_fini(&text);
	return 0;
}
